//! Codec micro-benchmarks of gregor-protocol, in a worker process of their own: CRC-32 of
//! each message, MessageSet encode and decode with each codec, and each codec's compress and
//! decompress of the same set's bytes. The messages are the cluster runs' (null key, the same
//! pool of random uppercase payloads), 1,000 to a set (librdkafka's and kafka-rust's batch per
//! partition here).
//!
//! Timing: each operation is warmed up for one sample's time, then timed for `samples`
//! samples of at least `sample_ms` each (as many iterations as fit, estimated from the warm
//! up); the median sample is reported, with the fastest and slowest.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use gregor_protocol::compression;
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::{Message, MessageSet};

use crate::measure::payloads;
use crate::spec::{Codec, CodecResult, CodecSpec};

/// Nanoseconds per call of `f`: (median, min, max) over the samples.
fn time(spec: &CodecSpec, mut f: impl FnMut()) -> (f64, f64, f64) {
    let sample = Duration::from_millis(spec.sample_ms.max(1));
    // warm up, and estimate the time of one call
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < sample || calls == 0 {
        f();
        calls += 1;
    }
    let per_call = start.elapsed().as_secs_f64() / calls as f64;
    let iterations = ((sample.as_secs_f64() / per_call).ceil() as u64).max(1);
    let mut ns: Vec<f64> = (0..spec.samples.max(1))
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iterations {
                f();
            }
            t.elapsed().as_nanos() as f64 / iterations as f64
        })
        .collect();
    ns.sort_by(f64::total_cmp);
    (ns[ns.len() / 2], ns[0], ns[ns.len() - 1])
}

pub fn run(spec: &CodecSpec) -> Result<Vec<CodecResult>, String> {
    let pool = payloads(spec.message_size, 4096);
    let n = spec.messages.max(1);
    let messages: Vec<Message> =
        (0..n).map(|i| Message::new(None, Some(Bytes::copy_from_slice(&pool[i % pool.len()])))).collect();
    let payload = (n * spec.message_size) as f64 / n as f64;
    let mut out = Vec::new();
    let mut push = |op: &str, codec: Codec, (median, min, max): (f64, f64, f64), input: usize, output: usize| {
        out.push(CodecResult {
            op: op.to_owned(),
            codec,
            ns_per_msg: median / n as f64,
            min_ns: min / n as f64,
            max_ns: max / n as f64,
            payload_bytes_per_msg: payload,
            input_bytes: input,
            output_bytes: output,
        });
    };

    // CRC-32 (IEEE) over each message's magic..value, as Message v0 encode and decode compute
    // it: gregor-protocol calls crc32fast::hash
    let bodies: Vec<Bytes> = messages
        .iter()
        .map(|m| {
            let mut buf = BytesMut::with_capacity(m.encoded_len());
            m.encode(&mut buf).expect("encode");
            buf.freeze().slice(4..)
        })
        .collect();
    let body_bytes: usize = bodies.iter().map(Bytes::len).sum();
    let t = time(spec, || {
        let mut acc = 0u32;
        for b in &bodies {
            acc ^= crc32fast::hash(black_box(b));
        }
        black_box(acc);
    });
    push("crc32", Codec::None, t, body_bytes, 4 * n);

    let plain = MessageSet::from_messages(messages.iter().cloned(), gregor_protocol::Compression::None)
        .map_err(|e| format!("encode: {e}"))?;
    let options = DecodeOptions::default();
    for codec in Codec::ALL {
        let set = MessageSet::from_messages(messages.iter().cloned(), codec.gregor())
            .map_err(|e| format!("encode {}: {e}", codec.name()))?;
        let decoded = set.decode(&options).map_err(|e| format!("decode {}: {e}", codec.name()))?;
        if decoded.messages.len() != n || !decoded.messages.iter().map(|m| &m.message).eq(messages.iter()) {
            return Err(format!("{}: the set does not decode to the messages encoded", codec.name()));
        }
        let t = time(spec, || {
            black_box(MessageSet::from_messages(black_box(&messages).iter().cloned(), codec.gregor()).expect("encode"));
        });
        push("encode", codec, t, plain.len(), set.len());
        let t = time(spec, || {
            black_box(black_box(&set).decode(&options).expect("decode"));
        });
        push("decode", codec, t, set.len(), plain.len());
    }

    // the codecs alone, on the uncompressed set's bytes (what a wrapper holds)
    let raw = plain.as_bytes();
    for codec in [Codec::Snappy, Codec::Gzip, Codec::Lz4] {
        let mut compressed = Vec::new();
        compression::compress(codec.gregor(), raw, &mut compressed).map_err(|e| format!("{}: {e}", codec.name()))?;
        let mut back = Vec::new();
        compression::decompress(codec.gregor(), &compressed, raw.len(), &mut back)
            .map_err(|e| format!("{}: {e}", codec.name()))?;
        if back != raw[..] {
            return Err(format!("{}: decompress(compress(x)) != x", codec.name()));
        }
        let mut buf = Vec::with_capacity(raw.len() + 1024);
        let t = time(spec, || {
            buf.clear();
            compression::compress(codec.gregor(), black_box(raw), &mut buf).expect("compress");
            black_box(&buf);
        });
        push("compress", codec, t, raw.len(), compressed.len());
        let mut buf = Vec::with_capacity(raw.len());
        let t = time(spec, || {
            buf.clear();
            compression::decompress(codec.gregor(), black_box(&compressed), raw.len(), &mut buf).expect("decompress");
            black_box(&buf);
        });
        push("decompress", codec, t, compressed.len(), raw.len());
    }
    Ok(out)
}

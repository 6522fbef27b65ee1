//! RecordBatch v2 build and read throughput: the same 1,000 records as the message_set bench
//! (8-byte keys, 100-byte text-like values), one header each (`h1` = 2 bytes), uncompressed and
//! with every codec.
//!
//! * build = `RecordBatchBuilder::with_capacity(codec, 256 KiB)`, 1,000 `append_with_headers`,
//!   `finish` (varints, compression of the records section, CRC-32C);
//! * read = `Batches::new(..)` over the batch and every record of it (CRC-32C check,
//!   decompression, varint parsing; keys, values and headers are slices, not copies).
//!
//! Throughput is per record and per byte of key + value payload (108,000 bytes per batch).
//!
//! ```text
//! cargo bench -p gregor-protocol --bench record_batch
//! ```

use std::hint::black_box;
use std::time::Duration;

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput};
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::record::{Batches, RecordBatchBuilder};
use gregor_protocol::{Compression, Message};

const MESSAGES: usize = 1_000;
const KEY_LEN: usize = 8;
const VALUE_LEN: usize = 100;
const CODECS: [Compression; 5] =
    [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];

/// xorshift32, so the data is the same on every run.
struct Rng(u32);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        self.0
    }

    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.next() as usize % words.len()]
    }
}

/// `MESSAGES` messages: key `k0000042`, value a 100-byte event line such as
/// `{"ts":1700000123456,"user":"u48213","event":"add_to_cart","path":"/products/shoes/9917",...`
fn messages() -> Vec<Message> {
    const EVENTS: [&str; 6] = ["page_view", "add_to_cart", "checkout", "search", "login", "logout"];
    const SECTIONS: [&str; 5] = ["products", "cart", "account", "search", "help"];
    const ITEMS: [&str; 6] = ["shoes", "shirts", "bags", "hats", "socks", "coats"];
    const AGENTS: [&str; 4] = ["Mozilla/5.0", "curl/8.5", "okhttp/4.12", "Safari/17"];
    let mut rng = Rng(0x2545_f491);
    (0..MESSAGES)
        .map(|i| {
            let key = format!("k{i:07}");
            let mut value = format!(
                "{{\"ts\":{},\"user\":\"u{:05}\",\"event\":\"{}\",\"path\":\"/{}/{}/{}\",\"ua\":\"{}\",\"ms\":{}}}",
                1_700_000_000_000u64 + i as u64 * 37 + u64::from(rng.next() % 37),
                rng.next() % 100_000,
                rng.pick(&EVENTS),
                rng.pick(&SECTIONS),
                rng.pick(&ITEMS),
                rng.next() % 10_000,
                rng.pick(&AGENTS),
                rng.next() % 2_000,
            );
            while value.len() < VALUE_LEN {
                value.push(' ');
            }
            value.truncate(VALUE_LEN);
            assert_eq!(key.len(), KEY_LEN);
            Message::new(Some(Bytes::from(key)), Some(Bytes::from(value)))
        })
        .collect()
}

fn build(messages: &[Message], codec: Compression) -> Bytes {
    let mut builder = RecordBatchBuilder::with_capacity(codec, 256 * 1024);
    for (i, m) in messages.iter().enumerate() {
        let ts = 1_700_000_000_000 + i as i64;
        builder
            .append_with_headers(ts, m.key.as_deref(), m.value.as_deref(), &[("h1", Some(b"v1".as_slice()))])
            .expect("append");
    }
    builder.finish().expect("finish")
}

fn read(batch: &Bytes, options: &DecodeOptions) -> usize {
    let mut n = 0;
    for b in Batches::new(batch.clone(), options) {
        for r in b.expect("batch").records() {
            let r = r.expect("record");
            n += r.value.map_or(0, |v| v.len());
        }
    }
    n
}

fn record_batch(c: &mut Criterion) {
    let messages = messages();
    let payload = (MESSAGES * (KEY_LEN + VALUE_LEN)) as u64;
    let throughput = Throughput::ElementsAndBytes { elements: MESSAGES as u64, bytes: payload };
    let options = DecodeOptions::default();

    let batches: Vec<(Compression, Bytes)> = CODECS.iter().map(|&codec| (codec, build(&messages, codec))).collect();
    for (codec, batch) in &batches {
        assert_eq!(read(batch, &options), MESSAGES * VALUE_LEN, "{codec}: round trip");
        println!(
            "{codec:>6}: {MESSAGES} records, {payload} payload bytes -> batch of {} bytes ({:.1}% of the payload)",
            batch.len(),
            batch.len() as f64 * 100.0 / payload as f64
        );
    }

    let mut group = c.benchmark_group("record_batch/build");
    group.throughput(throughput.clone());
    for codec in CODECS {
        group.bench_with_input(BenchmarkId::from_parameter(codec), &codec, |b, &codec| {
            b.iter(|| build(black_box(&messages), codec))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("record_batch/read");
    group.throughput(throughput);
    for (codec, batch) in &batches {
        group.bench_with_input(BenchmarkId::from_parameter(codec), batch, |b, batch| {
            b.iter(|| read(black_box(batch), &options))
        });
    }
    group.finish();
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    record_batch(&mut c);
    c.final_summary();
}

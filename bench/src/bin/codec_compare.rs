//! gregor-protocol's hand-declared codec against the `kafka-protocol` crate (generated from
//! Kafka's JSON message specs), on the frames captured from a genuine Kafka 3.7.0 broker
//! (`crates/protocol/tests/data/kafka-3.7.0/`) and two larger frames made from them.
//!
//! One release-mode run measures, for both codecs on the same inputs:
//!
//! 1. speed: ns per frame to decode (a) the frame's header and body, (b) the same plus every
//!    record of every batch the frame carries, and to encode the decoded value again; and the
//!    time to build a RecordBatch from the same records;
//! 2. allocations: a counting global allocator gives allocations and bytes per operation;
//! 3. hostile input: every fixture frame mutated (a flipped bit at every bit, a truncation at
//!    every length, a 4-byte field or a 5-byte varint overwritten with a huge value at every
//!    offset), and every records blob mutated inside its batches with the CRC made right again;
//!    each mutation decoded as in (b) under `catch_unwind`, counting Ok / Err / panic, and the
//!    largest allocation a decode asked for. The allocator refuses any request over 256 MiB:
//!    Rust then aborts the process, so the hostile decodes run in child processes of this
//!    binary, and a child that dies is restarted after the mutation that killed it.
//!
//! `cargo run --release --bin codec_compare` (from `bench/`) prints Markdown
//! (benchmarks/CODEC.md). Options: `--quick` (short samples), `--no-hostile` (timings only),
//! `--only-hostile`, `--loop-records gregor|kp` (walk a 1000-record Fetch for 3 s, for perf).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};

use gregor_protocol::frame::{self as gframe, RequestHeader as GRequestHeader};
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::messages::{
    FetchRequest as GFetchRequest, FetchResponse as GFetchResponse, MetadataRequest as GMetadataRequest,
    MetadataResponse as GMetadataResponse, ProduceRequest as GProduceRequest,
};
use gregor_protocol::{Batches, Compression as GCompression, MessageSet, RecordBatchBuilder};

use kafka_protocol::messages::{
    FetchResponse as KFetchResponse, MetadataResponse as KMetadataResponse, ProduceRequest as KProduceRequest,
    RequestHeader as KRequestHeader, ResponseHeader as KResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use kafka_protocol::records::{
    Compression as KCompression, Record as KRecord, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions,
    TimestampType,
};

// ---------------------------------------------------------------------------------------------
// The counting allocator

/// Requests above this are refused (null): an unchecked length prefix shows up here instead of
/// eating the machine. Rust's default handler then aborts the process.
const ALLOC_CAP: usize = 256 << 20;

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static LARGEST: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

/// Writes `REFUSED <size>` to stderr without allocating.
fn report_refusal(size: usize) {
    let mut buf = [0u8; 40];
    let prefix = b"\nCODEC_COMPARE_REFUSED ";
    buf[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 20];
    let mut n = size;
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let d = &digits[i..];
    let mut len = prefix.len();
    buf[len..len + d.len()].copy_from_slice(d);
    len += d.len();
    buf[len] = b'\n';
    len += 1;
    // SAFETY: writing a stack buffer to fd 2
    unsafe {
        libc::write(2, buf.as_ptr().cast(), len);
    }
}

/// Counts a request of `size` bytes (replacing `freed` bytes, for a realloc); false to refuse.
fn note(size: usize, freed: usize) -> bool {
    if size > ALLOC_CAP {
        LARGEST.fetch_max(size, Relaxed);
        report_refusal(size);
        return false;
    }
    if COUNTING.load(Relaxed) {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(size as u64, Relaxed);
        LARGEST.fetch_max(size, Relaxed);
        let live = LIVE.fetch_add(size as isize - freed as isize, Relaxed) + size as isize - freed as isize;
        PEAK.fetch_max(live, Relaxed);
    }
    true
}

// SAFETY: every call is passed to `System` unchanged, or refused with null (which `GlobalAlloc`
// allows); the counters are plain atomics and nothing here allocates or unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !note(layout.size(), 0) {
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !note(layout.size(), 0) {
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Relaxed) {
            LIVE.fetch_sub(layout.size() as isize, Relaxed);
        }
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !note(new_size, layout.size()) {
            return std::ptr::null_mut();
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// What the allocator saw between `start` and `stop`.
#[derive(Debug, Clone, Copy, Default)]
struct AllocStats {
    allocs: u64,
    bytes: u64,
    largest: usize,
    peak: isize,
}

fn alloc_start() {
    ALLOCS.store(0, Relaxed);
    BYTES.store(0, Relaxed);
    LARGEST.store(0, Relaxed);
    LIVE.store(0, Relaxed);
    PEAK.store(0, Relaxed);
    COUNTING.store(true, Relaxed);
}

fn alloc_stop() -> AllocStats {
    COUNTING.store(false, Relaxed);
    AllocStats {
        allocs: ALLOCS.load(Relaxed),
        bytes: BYTES.load(Relaxed),
        largest: LARGEST.load(Relaxed),
        peak: PEAK.load(Relaxed),
    }
}

// ---------------------------------------------------------------------------------------------
// Inputs

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    ProduceRequest,
    FetchResponse,
    MetadataResponse,
}

#[derive(Debug, Clone)]
struct Frame {
    name: String,
    api: Api,
    version: i16,
    /// The frame without its 4-byte size prefix (what `split_frame` hands over).
    body: Bytes,
}

fn data_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/protocol/tests/data/kafka-3.7.0"))
}

fn read_frame(file: &str) -> Bytes {
    let raw = std::fs::read(data_dir().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut buf = BytesMut::from(&raw[..]);
    let body = gframe::split_frame(&mut buf, 16 << 20).expect("frame").expect("whole frame");
    assert!(buf.is_empty(), "{file}: one frame");
    body
}

/// The fixtures measured: librdkafka's Produce v10 requests, the Fetch responses that carry
/// records, and every Metadata v12 response.
fn fixtures() -> Vec<Frame> {
    let mut names: Vec<String> = std::fs::read_dir(data_dir())
        .expect("fixture dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut out = Vec::new();
    for file in names {
        let (api, version, name) = if let Some(n) = file.strip_suffix(".req.bin") {
            if !n.starts_with("produce_v10_produce_") {
                continue;
            }
            (Api::ProduceRequest, 10, n)
        } else if let Some(n) = file.strip_suffix(".resp.bin") {
            if n.starts_with("fetch_v16_group_") {
                (Api::FetchResponse, 16, n)
            } else if n == "fetch_v12_kp_group" {
                (Api::FetchResponse, 12, n)
            } else if n.starts_with("metadata_v12_") {
                (Api::MetadataResponse, 12, n)
            } else {
                continue;
            }
        } else {
            continue;
        };
        let suffix = if api == Api::ProduceRequest { "req" } else { "resp" };
        out.push(Frame { name: format!("{name}.{suffix}"), api, version, body: read_frame(&file) });
    }
    out
}

/// `n` records of `size`-byte values (uppercase letters), null keys, no headers, in one
/// uncompressed batch written by gregor's builder.
fn big_batch(n: usize, size: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new(GCompression::None);
    let mut x = 0x2545_f491_u32;
    let mut value = vec![0u8; size];
    for i in 0..n {
        for v in value.iter_mut() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *v = b'A' + (x % 26) as u8;
        }
        b.append(1_700_000_000_000 + i as i64, None, Some(&value)).expect("append");
    }
    b.finish().expect("finish")
}

/// Two larger frames made from fixtures: the first partition's records replaced by a batch of
/// 1000 × 100-byte records (a Produce v10 request and a Fetch v16 response).
fn synthetic(fixtures: &[Frame]) -> Vec<Frame> {
    let batch = big_batch(1000, 100);
    let mut out = Vec::new();
    let produce = fixtures.iter().find(|f| f.name == "produce_v10_produce_none.req").expect("produce_none");
    let mut body = produce.body.clone();
    let header = GRequestHeader::decode(&mut body).expect("header");
    let mut req: GProduceRequest = gframe::decode_request_body(10, body).expect("produce");
    req.topics[0].partitions[0].message_set = MessageSet::from_bytes(batch.clone());
    let mut buf = BytesMut::new();
    gframe::encode_request(&header, &req, &mut buf).expect("encode");
    out.push(Frame {
        name: "synthetic produce v10, 1000 × 100 B".into(),
        api: Api::ProduceRequest,
        version: 10,
        body: buf.freeze().slice(4..),
    });
    let fetch = fixtures.iter().find(|f| f.name == "fetch_v16_group_4.resp").expect("fetch_v16_group_4");
    let (rh, mut resp) = gframe::decode_response::<GFetchRequest>(16, fetch.body.clone()).expect("fetch");
    resp.topics[0].partitions[0].message_set = MessageSet::from_bytes(batch);
    let mut buf = BytesMut::new();
    gframe::encode_response_for::<GFetchRequest>(rh.correlation_id, 16, &resp, &mut buf).expect("encode");
    out.push(Frame {
        name: "synthetic fetch v16, 1000 × 100 B".into(),
        api: Api::FetchResponse,
        version: 16,
        body: buf.freeze().slice(4..),
    });
    out
}

// ---------------------------------------------------------------------------------------------
// The two codecs, behind the same four operations

/// What walking the records saw: both codecs must agree on it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    batches: u64,
    records: u64,
    key_bytes: u64,
    value_bytes: u64,
    headers: u64,
    offsets: i64,
}

type Res<T> = Result<T, String>;

/// An error as text (kafka-protocol's are `anyhow` errors).
fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn gregor_records(blob: &Bytes, t: &mut Tally) -> Res<()> {
    if blob.is_empty() {
        return Ok(());
    }
    let batches = Batches::new(blob.clone(), &DecodeOptions::default());
    for batch in batches {
        let batch = batch.map_err(|e| e.to_string())?;
        t.batches += 1;
        for r in batch.records() {
            let r = r.map_err(|e| e.to_string())?;
            t.records += 1;
            t.offsets = t.offsets.wrapping_add(r.offset);
            t.key_bytes += r.key.as_ref().map_or(0, |k| k.len() as u64);
            t.value_bytes += r.value.as_ref().map_or(0, |v| v.len() as u64);
            for h in r.headers.iter() {
                t.headers += 1;
                t.key_bytes += h.key.len() as u64;
                t.value_bytes += h.value.as_ref().map_or(0, |v| v.len() as u64);
            }
        }
    }
    Ok(())
}

fn kp_records(blob: &Bytes, t: &mut Tally) -> Res<()> {
    let mut buf = blob.clone();
    let sets = RecordBatchDecoder::decode_all(&mut buf).map_err(text)?;
    for set in sets {
        t.batches += 1;
        for r in &set.records {
            t.records += 1;
            t.offsets = t.offsets.wrapping_add(r.offset);
            t.key_bytes += r.key.as_ref().map_or(0, |k| k.len() as u64);
            t.value_bytes += r.value.as_ref().map_or(0, |v| v.len() as u64);
            for (k, v) in &r.headers {
                t.headers += 1;
                t.key_bytes += k.len() as u64;
                t.value_bytes += v.as_ref().map_or(0, |v| v.len() as u64);
            }
        }
    }
    Ok(())
}

/// A decoded frame of either codec, kept for the encode measurement.
enum GValue {
    Produce(GRequestHeader, Box<GProduceRequest>),
    Fetch(i32, Box<GFetchResponse>),
    Metadata(i32, Box<GMetadataResponse>),
}

enum KValue {
    Produce(KRequestHeader, Box<KProduceRequest>),
    Fetch(KResponseHeader, Box<KFetchResponse>),
    Metadata(KResponseHeader, Box<KMetadataResponse>),
}

/// gregor: header and body (the frame used exactly), and with `records` every record.
fn gregor_decode(api: Api, version: i16, frame: &Bytes, records: Option<&mut Tally>) -> Res<GValue> {
    let e = |e: gregor_protocol::Error| e.to_string();
    let value = match api {
        Api::ProduceRequest => {
            let mut body = frame.clone();
            let header = GRequestHeader::decode(&mut body).map_err(e)?;
            let req: GProduceRequest = gframe::decode_request_body(version, body).map_err(e)?;
            GValue::Produce(header, Box::new(req))
        }
        Api::FetchResponse => {
            let (h, r) = gframe::decode_response::<GFetchRequest>(version, frame.clone()).map_err(e)?;
            GValue::Fetch(h.correlation_id, Box::new(r))
        }
        Api::MetadataResponse => {
            let (h, r) = gframe::decode_response::<GMetadataRequest>(version, frame.clone()).map_err(e)?;
            GValue::Metadata(h.correlation_id, Box::new(r))
        }
    };
    if let Some(t) = records {
        match &value {
            GValue::Produce(_, req) => {
                for topic in &req.topics {
                    for p in &topic.partitions {
                        gregor_records(p.message_set.as_bytes(), t)?;
                    }
                }
            }
            GValue::Fetch(_, resp) => {
                for topic in &resp.topics {
                    for p in &topic.partitions {
                        gregor_records(p.message_set.as_bytes(), t)?;
                    }
                }
            }
            GValue::Metadata(..) => {}
        }
    }
    Ok(value)
}

/// kafka-protocol: header and body, the frame used exactly (the check gregor's
/// `decode_request_body`/`decode_response` make, added here), and with `records` every record.
fn kp_decode(api: Api, version: i16, frame: &Bytes, records: Option<&mut Tally>) -> Res<KValue> {
    let e = text;
    let mut buf = frame.clone();
    let value = match api {
        Api::ProduceRequest => {
            let h = KRequestHeader::decode(&mut buf, KProduceRequest::header_version(version)).map_err(e)?;
            KValue::Produce(h, Box::new(KProduceRequest::decode(&mut buf, version).map_err(e)?))
        }
        Api::FetchResponse => {
            let h = KResponseHeader::decode(&mut buf, KFetchResponse::header_version(version)).map_err(e)?;
            KValue::Fetch(h, Box::new(KFetchResponse::decode(&mut buf, version).map_err(e)?))
        }
        Api::MetadataResponse => {
            let h = KResponseHeader::decode(&mut buf, KMetadataResponse::header_version(version)).map_err(e)?;
            KValue::Metadata(h, Box::new(KMetadataResponse::decode(&mut buf, version).map_err(e)?))
        }
    };
    if buf.has_remaining() {
        return Err(format!("{} trailing bytes", buf.remaining()));
    }
    if let Some(t) = records {
        match &value {
            KValue::Produce(_, req) => {
                for topic in &req.topic_data {
                    for p in &topic.partition_data {
                        if let Some(r) = &p.records {
                            kp_records(r, t)?;
                        }
                    }
                }
            }
            KValue::Fetch(_, resp) => {
                for topic in &resp.responses {
                    for p in &topic.partitions {
                        if let Some(r) = &p.records {
                            kp_records(r, t)?;
                        }
                    }
                }
            }
            KValue::Metadata(..) => {}
        }
    }
    Ok(value)
}

/// gregor: the whole frame again (size prefix, header, body) into `buf`.
fn gregor_encode(version: i16, value: &GValue, buf: &mut BytesMut) -> Res<()> {
    let e = |e: gregor_protocol::Error| e.to_string();
    match value {
        GValue::Produce(h, req) => gframe::encode_request(h, req.as_ref(), buf).map_err(e),
        GValue::Fetch(c, r) => gframe::encode_response_for::<GFetchRequest>(*c, version, r, buf).map_err(e),
        GValue::Metadata(c, r) => gframe::encode_response_for::<GMetadataRequest>(*c, version, r, buf).map_err(e),
    }
}

/// kafka-protocol: the whole frame again (size prefix written here, header, body) into `buf`.
fn kp_encode(version: i16, value: &KValue, buf: &mut BytesMut) -> Res<()> {
    let e = text;
    let at = buf.len();
    buf.put_i32(0);
    match value {
        KValue::Produce(h, req) => {
            h.encode(buf, KProduceRequest::header_version(version)).map_err(e)?;
            req.encode(buf, version).map_err(e)?;
        }
        KValue::Fetch(h, r) => {
            h.encode(buf, KFetchResponse::header_version(version)).map_err(e)?;
            r.encode(buf, version).map_err(e)?;
        }
        KValue::Metadata(h, r) => {
            h.encode(buf, KMetadataResponse::header_version(version)).map_err(e)?;
            r.encode(buf, version).map_err(e)?;
        }
    }
    let len = (buf.len() - at - 4) as i32;
    buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Timing

#[derive(Clone, Copy)]
struct Timing {
    samples: usize,
    sample: Duration,
}

/// CPU time of this thread: a sample of it is not stretched when another process takes the
/// core (the machine is shared), as wall time would be.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to write to
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Calls per sample of at least `t.sample` of `f`, estimated by a warm-up of that length.
fn calibrate(t: Timing, f: &mut impl FnMut()) -> u64 {
    let start = thread_cpu_ns();
    let mut calls = 0u64;
    while thread_cpu_ns() - start < t.sample.as_nanos() as u64 || calls < 10 {
        f();
        calls += 1;
    }
    let per_call = (thread_cpu_ns() - start) as f64 / calls as f64;
    ((t.sample.as_nanos() as f64 / per_call).ceil() as u64).max(10)
}

fn sample(iterations: u64, f: &mut impl FnMut()) -> f64 {
    let s = thread_cpu_ns();
    for _ in 0..iterations {
        f();
    }
    (thread_cpu_ns() - s) as f64 / iterations as f64
}

/// Median CPU ns per call of `a` and of `b`, their samples taken in turn (a drift of the
/// machine hits both alike).
fn time_pair(t: Timing, mut a: impl FnMut(), mut b: impl FnMut()) -> (f64, f64) {
    let (na, nb) = (calibrate(t, &mut a), calibrate(t, &mut b));
    let (mut sa, mut sb) = (Vec::new(), Vec::new());
    for _ in 0..t.samples {
        sa.push(sample(na, &mut a));
        sb.push(sample(nb, &mut b));
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(sa), median(sb))
}

/// Allocations of one call of `f` (the mean of 50 calls, after one unmeasured call).
fn allocs_of(mut f: impl FnMut()) -> (f64, f64) {
    f();
    alloc_start();
    for _ in 0..50 {
        f();
    }
    let s = alloc_stop();
    (s.allocs as f64 / 50.0, s.bytes as f64 / 50.0)
}

#[derive(Default, Clone)]
struct OpResult {
    ns: f64,
    allocs: f64,
    bytes: f64,
}

/// Allocations and time of `a` (gregor) and `b` (kafka-protocol).
fn measure(t: Timing, mut a: impl FnMut(), mut b: impl FnMut()) -> [OpResult; 2] {
    let (aa, ab) = allocs_of(&mut a);
    let (ba, bb) = allocs_of(&mut b);
    let (na, nb) = time_pair(t, a, b);
    [OpResult { ns: na, allocs: aa, bytes: ab }, OpResult { ns: nb, allocs: ba, bytes: bb }]
}

struct FrameResult {
    name: String,
    size: usize,
    tally: Tally,
    same_tally: bool,
    /// [gregor, kafka-protocol] × [body, body + records, encode]
    ops: [[OpResult; 3]; 2],
    reencode_same: [bool; 2],
}

fn speed(frames: &[Frame], t: Timing) -> Vec<FrameResult> {
    let mut out = Vec::new();
    for f in frames {
        let (api, v) = (f.api, f.version);
        let mut gt = Tally::default();
        let gvalue = gregor_decode(api, v, &f.body, Some(&mut gt)).unwrap_or_else(|e| panic!("gregor {}: {e}", f.name));
        let mut kt = Tally::default();
        let kvalue = kp_decode(api, v, &f.body, Some(&mut kt)).unwrap_or_else(|e| panic!("kp {}: {e}", f.name));
        let mut whole = BytesMut::new();
        whole.put_u32(f.body.len() as u32);
        whole.extend_from_slice(&f.body);
        let mut gbuf = BytesMut::new();
        gregor_encode(v, &gvalue, &mut gbuf).expect("gregor encode");
        let mut kbuf = BytesMut::new();
        kp_encode(v, &kvalue, &mut kbuf).expect("kp encode");
        let reencode_same = [gbuf[..] == whole[..], kbuf[..] == whole[..]];

        let [g_body, k_body] = measure(
            t,
            || {
                black_box(gregor_decode(api, v, black_box(&f.body), None).is_ok());
            },
            || {
                black_box(kp_decode(api, v, black_box(&f.body), None).is_ok());
            },
        );
        let [g_all, k_all] = measure(
            t,
            || {
                let mut tally = Tally::default();
                black_box(gregor_decode(api, v, black_box(&f.body), Some(&mut tally)).is_ok());
                black_box(tally);
            },
            || {
                let mut tally = Tally::default();
                black_box(kp_decode(api, v, black_box(&f.body), Some(&mut tally)).is_ok());
                black_box(tally);
            },
        );
        let [g_enc, k_enc] = measure(
            t,
            || {
                gbuf.clear();
                gregor_encode(v, black_box(&gvalue), &mut gbuf).expect("encode");
                black_box(&gbuf);
            },
            || {
                kbuf.clear();
                kp_encode(v, black_box(&kvalue), &mut kbuf).expect("encode");
                black_box(&kbuf);
            },
        );
        eprintln!(
            "  {:<40} decode {:>8.0} / {:>8.0} ns, +records {:>8.0} / {:>8.0} ns, encode {:>8.0} / {:>8.0} ns",
            f.name, g_body.ns, k_body.ns, g_all.ns, k_all.ns, g_enc.ns, k_enc.ns
        );
        out.push(FrameResult {
            name: f.name.clone(),
            size: f.body.len() + 4,
            tally: gt,
            same_tally: gt == kt,
            ops: [[g_body, g_all, g_enc], [k_body, k_all, k_enc]],
            reencode_same,
        });
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Building a batch: RecordBatchBuilder against RecordBatchEncoder

struct BuildResult {
    what: String,
    size: [usize; 2],
    ops: [OpResult; 2],
}

fn build_batches(t: Timing) -> Vec<BuildResult> {
    let values: Vec<Vec<u8>> = {
        let b = big_batch(1000, 100);
        let mut tally_values = Vec::new();
        for batch in Batches::new(b, &DecodeOptions::default()) {
            for r in batch.expect("batch").records() {
                tally_values.push(r.expect("record").value.expect("value").to_vec());
            }
        }
        tally_values
    };
    let mut out = Vec::new();
    let shapes: [(&str, usize, bool); 2] = [
        ("3 records, 2-byte key, 12-byte value, 2 headers", 3, true),
        ("1000 records, null key, 100-byte value", 1000, false),
    ];
    for (what, n, small) in shapes {
        for (codec_name, gc, kc) in [
            ("none", GCompression::None, KCompression::None),
            ("lz4", GCompression::Lz4, KCompression::Lz4),
            ("zstd", GCompression::Zstd, KCompression::Zstd),
        ] {
            let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("k{i}").into_bytes()).collect();
            let vals: Vec<Vec<u8>> = if small {
                (0..n).map(|i| format!("value-{i:06}").into_bytes()).collect()
            } else {
                values[..n].to_vec()
            };
            let ts = 1_700_000_000_000i64;
            let hdrs: [(&str, Option<&[u8]>); 2] = [("h1", Some(b"v1")), ("codec", Some(codec_name.as_bytes()))];
            // kafka-protocol takes its own Record values: made once, outside the timing
            let krecords: Vec<KRecord> = (0..n)
                .map(|i| KRecord {
                    transactional: false,
                    control: false,
                    delete_horizon: false,
                    partition_leader_epoch: -1,
                    producer_id: -1,
                    producer_epoch: -1,
                    timestamp_type: TimestampType::Creation,
                    offset: i as i64,
                    // kafka-protocol keeps records in one batch while offset - sequence stays
                    // the same; the batch's base sequence is the first record's (-1: none)
                    sequence: i as i32 - 1,
                    timestamp: ts + i as i64,
                    key: small.then(|| Bytes::from(keys[i].clone())),
                    value: Some(Bytes::from(vals[i].clone())),
                    headers: if small {
                        hdrs.iter()
                            .map(|(k, v)| (StrBytes::from_string(k.to_string()), v.map(Bytes::copy_from_slice)))
                            .collect()
                    } else {
                        Default::default()
                    },
                })
                .collect();
            let gbuild = || {
                let mut b = RecordBatchBuilder::new(gc);
                for i in 0..n {
                    let key = small.then_some(&keys[i][..]);
                    let headers: &[(&str, Option<&[u8]>)] = if small { &hdrs } else { &[] };
                    b.append_with_headers(ts + i as i64, key, Some(&vals[i]), headers).expect("append");
                }
                b.finish().expect("finish")
            };
            let opts = RecordEncodeOptions { version: 2, compression: kc };
            let mut kbuf = BytesMut::new();
            let gsize = gbuild().len();
            RecordBatchEncoder::encode(&mut kbuf, &krecords, &opts).expect("kp encode");
            let ksize = kbuf.len();
            // both must read back as the same records
            let (mut a, mut b) = (Tally::default(), Tally::default());
            gregor_records(&gbuild(), &mut a).expect("gregor reads its batch");
            kp_records(&kbuf.clone().freeze(), &mut b).expect("kp reads its batch");
            assert_eq!(a, b, "{what} {codec_name}: the two batches hold the same records");
            let [g, k] = measure(
                t,
                || {
                    black_box(gbuild());
                },
                || {
                    kbuf.clear();
                    RecordBatchEncoder::encode(&mut kbuf, black_box(&krecords), &opts).expect("encode");
                    black_box(&kbuf);
                },
            );
            eprintln!("  build {what}, {codec_name}: {:.0} / {:.0} ns", g.ns, k.ns);
            out.push(BuildResult { what: format!("{what}, {codec_name}"), size: [gsize, ksize], ops: [g, k] });
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Hostile input

/// 0x7fffffff, 0xffffffff, 16 Mi - 1 as 4-byte fields, and a 5-byte varint of 2^32 - 1
const OVERWRITES: [&[u8]; 4] =
    [&[0x7f, 0xff, 0xff, 0xff], &[0xff, 0xff, 0xff, 0xff], &[0x00, 0xff, 0xff, 0xff], &[0xff, 0xff, 0xff, 0xff, 0x0f]];

#[derive(Debug, Clone, Copy)]
enum Mutation {
    Flip { at: usize, bit: u8 },
    Truncate { len: usize },
    Put { at: usize, value: usize },
}

impl Mutation {
    fn kind(self) -> &'static str {
        match self {
            Mutation::Flip { .. } => "bit flip",
            Mutation::Truncate { .. } => "truncation",
            Mutation::Put { .. } => "huge field",
        }
    }
}

/// One thing to mutate: a whole frame (decoded as a frame, records included), or a records blob
/// (decoded as records; the batch CRCs made right after the mutation).
#[derive(Debug, Clone)]
struct Target {
    name: String,
    api: Option<(Api, i16)>,
    bytes: Bytes,
    /// `(start, end)` of each batch, for the records targets
    batches: Vec<(usize, usize)>,
}

fn mutations_of(target: &Target) -> Vec<Mutation> {
    let len = target.bytes.len();
    let mut out = Vec::new();
    // in a records blob only the CRC-covered part of each batch (attributes onwards) is mutated
    let positions: Vec<usize> = if target.api.is_some() {
        (0..len).collect()
    } else {
        target.batches.iter().flat_map(|&(s, e)| s + 21..e).collect()
    };
    for &at in &positions {
        for bit in 0..8 {
            out.push(Mutation::Flip { at, bit });
        }
    }
    if target.api.is_some() {
        for l in 0..len {
            out.push(Mutation::Truncate { len: l });
        }
    }
    for &at in &positions {
        for (value, v) in OVERWRITES.iter().enumerate() {
            if at + v.len() <= len {
                out.push(Mutation::Put { at, value });
            }
        }
    }
    out
}

fn apply(target: &Target, m: Mutation) -> Bytes {
    let mut b = target.bytes.to_vec();
    match m {
        Mutation::Flip { at, bit } => b[at] ^= 1 << bit,
        Mutation::Truncate { len } => b.truncate(len),
        Mutation::Put { at, value } => {
            let v = OVERWRITES[value];
            b[at..at + v.len()].copy_from_slice(v);
        }
    }
    if target.api.is_none() {
        for &(s, e) in &target.batches {
            let crc = gregor_protocol::record::crc32c(&b[s + 21..e]);
            b[s + 17..s + 21].copy_from_slice(&crc.to_be_bytes());
        }
    }
    Bytes::from(b)
}

fn targets(frames: &[Frame]) -> Vec<Target> {
    let mut out: Vec<Target> = frames
        .iter()
        .map(|f| Target {
            name: f.name.clone(),
            api: Some((f.api, f.version)),
            bytes: f.body.clone(),
            batches: Vec::new(),
        })
        .collect();
    // every distinct non-empty records blob of the frames
    let mut seen: Vec<Bytes> = Vec::new();
    for f in frames {
        let blobs: Vec<Bytes> = match gregor_decode(f.api, f.version, &f.body, None) {
            Ok(GValue::Produce(_, r)) => {
                r.topics.iter().flat_map(|t| t.partitions.iter().map(|p| p.message_set.as_bytes().clone())).collect()
            }
            Ok(GValue::Fetch(_, r)) => {
                r.topics.iter().flat_map(|t| t.partitions.iter().map(|p| p.message_set.as_bytes().clone())).collect()
            }
            _ => Vec::new(),
        };
        for (i, blob) in blobs.into_iter().enumerate() {
            if blob.is_empty() || seen.contains(&blob) {
                continue;
            }
            seen.push(blob.clone());
            let mut batches = Vec::new();
            let mut at = 0;
            while at + 12 <= blob.len() {
                let len = i32::from_be_bytes(blob[at + 8..at + 12].try_into().expect("4")) as usize;
                batches.push((at, at + 12 + len));
                at += 12 + len;
            }
            out.push(Target { name: format!("{} records #{i}", f.name), api: None, bytes: blob, batches });
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ok,
    ErrBody,
    ErrRecords,
    Panic,
}

static PANIC_AT: Mutex<Option<String>> = Mutex::new(None);

/// Decodes a mutation with one codec: the frame and its records, or the records blob.
fn hostile_decode(codec: &str, target: &Target, input: &Bytes) -> Outcome {
    let mut tally = Tally::default();
    let r = catch_unwind(AssertUnwindSafe(|| match (codec, target.api) {
        ("gregor", Some((api, v))) => match gregor_decode(api, v, input, None) {
            Err(_) => Outcome::ErrBody,
            Ok(_) => match gregor_decode(api, v, input, Some(&mut tally)) {
                Ok(_) => Outcome::Ok,
                Err(_) => Outcome::ErrRecords,
            },
        },
        ("kp", Some((api, v))) => match kp_decode(api, v, input, None) {
            Err(_) => Outcome::ErrBody,
            Ok(_) => match kp_decode(api, v, input, Some(&mut tally)) {
                Ok(_) => Outcome::Ok,
                Err(_) => Outcome::ErrRecords,
            },
        },
        ("gregor", None) => match gregor_records(input, &mut tally) {
            Ok(()) => Outcome::Ok,
            Err(_) => Outcome::ErrRecords,
        },
        (_, None) => match kp_records(input, &mut tally) {
            Ok(()) => Outcome::Ok,
            Err(_) => Outcome::ErrRecords,
        },
        _ => unreachable!(),
    }));
    r.unwrap_or(Outcome::Panic)
}

/// Child: decodes mutations `start..` of the list with `codec`, one line per mutation, flushed.
fn hostile_child(codec: &str, start: usize) {
    std::panic::set_hook(Box::new(|info| {
        let mut at = PANIC_AT.lock().unwrap_or_else(|e| e.into_inner());
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let loc = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
        *at = Some(format!("{msg} at {loc}").replace(['\n', '\t'], " "));
    }));
    let frames = fixtures();
    let targets = targets(&frames);
    let list: Vec<(usize, Mutation)> =
        targets.iter().enumerate().flat_map(|(i, t)| mutations_of(t).into_iter().map(move |m| (i, m))).collect();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for (idx, &(ti, m)) in list.iter().enumerate().skip(start) {
        let input = apply(&targets[ti], m);
        alloc_start();
        let outcome = hostile_decode(codec, &targets[ti], &input);
        let s = alloc_stop();
        let panic = if outcome == Outcome::Panic {
            PANIC_AT.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default()
        } else {
            String::new()
        };
        writeln!(out, "{idx}\t{outcome:?}\t{}\t{}\t{panic}", s.largest, s.peak).expect("stdout");
        out.flush().expect("flush");
    }
    writeln!(out, "DONE").expect("stdout");
}

#[derive(Debug, Default, Clone)]
struct HostileTally {
    count: BTreeMap<&'static str, u64>,
    largest: usize,
    largest_at: String,
    over_1mib: u64,
    peak: isize,
    panics: BTreeMap<String, u64>,
    aborts: BTreeMap<String, u64>,
}

/// Runs every mutation through `codec` in children; returns a tally per (target group, kind).
fn hostile(
    codec: &str,
    groups: &[String],
    names: &[String],
    list: &[(usize, Mutation)],
) -> BTreeMap<(String, &'static str), HostileTally> {
    let exe = std::env::current_exe().expect("current exe");
    let mut tallies: BTreeMap<(String, &'static str), HostileTally> = BTreeMap::new();
    let mut next = 0usize;
    let mut restarts = 0;
    while next < list.len() {
        let mut child = Command::new(&exe)
            .args(["--hostile-child", codec, &next.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("stdout");
        let mut stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let err_reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
            s
        });
        let mut done = false;
        let mut hung = false;
        loop {
            match rx.recv_timeout(Duration::from_secs(20)) {
                Ok(line) if line == "DONE" => {
                    done = true;
                }
                Ok(line) => {
                    let mut parts = line.splitn(5, '\t');
                    let idx: usize = parts.next().and_then(|s| s.parse().ok()).expect("index");
                    let outcome = parts.next().expect("outcome").to_string();
                    let largest: usize = parts.next().and_then(|s| s.parse().ok()).expect("largest");
                    let peak: isize = parts.next().and_then(|s| s.parse().ok()).expect("peak");
                    let panic = parts.next().unwrap_or("").to_string();
                    let (ti, m) = list[idx];
                    let t = tallies.entry((groups[ti].clone(), m.kind())).or_default();
                    *t.count.entry(outcome_name(&outcome)).or_default() += 1;
                    if largest > t.largest {
                        t.largest = largest;
                        t.largest_at = format!("{}, {m:?}", names[ti]);
                    }
                    if largest > 1 << 20 {
                        t.over_1mib += 1;
                    }
                    t.peak = t.peak.max(peak);
                    if !panic.is_empty() {
                        *t.panics.entry(panic).or_default() += 1;
                    }
                    next = idx + 1;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    hung = true;
                    let _ = child.kill();
                    break;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        let status = child.wait().expect("wait");
        let _ = reader.join();
        let err = err_reader.join().unwrap_or_default();
        if done {
            break;
        }
        // the child died (or hung) on mutation `next`
        let (ti, m) = list[next];
        let t = tallies.entry((groups[ti].clone(), m.kind())).or_default();
        let refused: Option<usize> =
            err.lines().filter_map(|l| l.strip_prefix("CODEC_COMPARE_REFUSED ")).find_map(|s| s.trim().parse().ok());
        let kind = if hung { "hang" } else { "abort" };
        *t.count.entry(kind).or_default() += 1;
        let why = match refused {
            Some(size) => {
                if size > t.largest {
                    t.largest = size;
                    t.largest_at = format!("{}, {m:?}", names[ti]);
                }
                t.over_1mib += 1;
                "allocation over 256 MiB refused".to_string()
            }
            None if hung => "no answer in 20 s".to_string(),
            None => format!("{status}: {}", err.lines().last().unwrap_or("")),
        };
        *t.aborts.entry(why).or_default() += 1;
        next += 1;
        restarts += 1;
    }
    eprintln!("  {codec}: {} mutations, {restarts} child restarts", list.len());
    tallies
}

fn outcome_name(s: &str) -> &'static str {
    match s {
        "Ok" => "ok",
        "ErrBody" => "err (body)",
        "ErrRecords" => "err (records)",
        "Panic" => "panic",
        _ => "other",
    }
}

// ---------------------------------------------------------------------------------------------
// Report

fn group_of(t: &Target) -> String {
    let what = match t.api {
        Some((Api::ProduceRequest, _)) => "Produce v10 requests",
        Some((Api::FetchResponse, _)) => "Fetch v12/v16 responses",
        Some((Api::MetadataResponse, _)) => "Metadata v12 responses",
        None => "records blobs (CRC fixed)",
    };
    what.to_string()
}

fn fmt_bytes(b: usize) -> String {
    if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    } else if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else if b >= 1 << 10 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{b} B")
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() >= 4 && args[1] == "--hostile-child" {
        hostile_child(&args[2], args[3].parse().expect("start"));
        return;
    }
    if args.len() >= 3 && args[1] == "--loop-records" {
        // for a profiler: walk the records of the synthetic Fetch for 3 s with one codec
        let frames = synthetic(&fixtures());
        let f = &frames[1];
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(3) {
            let mut t = Tally::default();
            if args[2] == "gregor" {
                gregor_decode(f.api, f.version, &f.body, Some(&mut t)).expect("decode");
            } else {
                kp_decode(f.api, f.version, &f.body, Some(&mut t)).expect("decode");
            }
            black_box(t);
        }
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let skip_hostile = args.iter().any(|a| a == "--no-hostile");
    let only_hostile = args.iter().any(|a| a == "--only-hostile");
    let timing = if quick {
        Timing { samples: 3, sample: Duration::from_millis(5) }
    } else {
        Timing { samples: 15, sample: Duration::from_millis(20) }
    };

    let frames = fixtures();
    let mut timed: Vec<Frame> = frames
        .iter()
        .filter(|f| {
            f.api != Api::MetadataResponse
                || ["metadata_v12_connect_1.resp", "metadata_v12_produce_none.resp", "metadata_v12_connect_3.resp"]
                    .contains(&f.name.as_str())
        })
        .cloned()
        .collect();
    timed.extend(synthetic(&frames));

    println!("# codec_compare\n");
    println!(
        "gregor-protocol (path) vs kafka-protocol {}; {} samples of each, taken in turn, of at least {} ms of \
         thread CPU time; the median shown. Allocations: mean of 50 calls.\n",
        kafka_protocol_version(),
        timing.samples,
        timing.sample.as_millis()
    );

    if !only_hostile {
        speed_report(&timed, timing);
        partial_batch_report();
        kafka_0_8_report();
    }
    if !skip_hostile {
        hostile_report(&frames);
    }
}

/// A Fetch's records may end in part of a batch (the broker cuts at the partition's max bytes):
/// what each codec makes of two whole batches followed by half of a third.
fn partial_batch_report() {
    let batch = |base: i64| {
        let mut b = RecordBatchBuilder::new(GCompression::None).base_offset(base);
        for i in 0..3 {
            b.append(1_700_000_000_000 + i, Some(b"k"), Some(b"value")).expect("append");
        }
        b.finish().expect("finish")
    };
    let third = batch(6);
    let mut blob = BytesMut::new();
    blob.extend_from_slice(&batch(0));
    blob.extend_from_slice(&batch(3));
    blob.extend_from_slice(&third[..third.len() / 2]);
    let blob = blob.freeze();
    let show = |r: Res<()>, t: Tally| match r {
        Ok(()) => format!("Ok, {} records", t.records),
        Err(e) => format!("Err ({}), {} records", e.trim(), t.records),
    };
    let mut g = Tally::default();
    let gr = gregor_records(&blob, &mut g);
    let mut k = Tally::default();
    let kr = kp_records(&blob, &mut k);
    println!("\n## Records ending in a partial batch\n");
    println!("Two whole batches of 3 records and the first half of a third ({} bytes):\n", blob.len());
    println!("* gregor (`Batches`): {}", show(gr, g));
    println!("* kafka-protocol (`RecordBatchDecoder::decode_all`): {}", show(kr, k));
}

/// Kafka 0.8.2's own frames (captured from a 0.8.2.2 broker): a Produce v0 request and a Fetch
/// v0 response, each with its message set, decoded by both codecs.
fn kafka_0_8_report() {
    let dir = data_dir().join("../kafka-0.8.2.2");
    println!("\n## Kafka 0.8.2 frames\n");
    for (file, api) in
        [("produce_v0_gzip_set1.req.bin", Api::ProduceRequest), ("fetch_v0_gzip.resp.bin", Api::FetchResponse)]
    {
        let raw = std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let body = Bytes::from(raw).slice(4..);
        let show = |r: Res<()>, t: Tally| match r {
            Ok(()) => format!("Ok, {} records", t.records),
            Err(e) => format!("Err ({})", e.trim()),
        };
        let mut g = Tally::default();
        let gr = gregor_decode(api, 0, &body, Some(&mut g)).map(|_| ());
        let mut k = Tally::default();
        let kr = kp_decode(api, 0, &body, Some(&mut k)).map(|_| ());
        println!("* `{file}` (v0): gregor {}; kafka-protocol {}", show(gr, g), show(kr, k));
    }
}

fn speed_report(timed: &[Frame], timing: Timing) {
    eprintln!("speed and allocations (gregor / kafka-protocol):");
    let results = speed(timed, timing);
    println!("## Decode and encode, ns per frame (gregor / kafka-protocol)\n");
    println!("| frame | bytes | records | decode body | ratio | body + records | ratio | encode | ratio | re-encodes same bytes |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in &results {
        let [g, k] = &r.ops;
        let cell = |i: usize| format!("{:.0} / {:.0}", g[i].ns, k[i].ns);
        let ratio = |i: usize| format!("{:.2}", g[i].ns / k[i].ns);
        println!(
            "| {} | {} | {}{} | {} | {} | {} | {} | {} | {} | {} / {} |",
            r.name,
            r.size,
            r.tally.records,
            if r.same_tally { "" } else { " (DIFFER)" },
            cell(0),
            ratio(0),
            cell(1),
            ratio(1),
            cell(2),
            ratio(2),
            yes(r.reencode_same[0]),
            yes(r.reencode_same[1])
        );
    }
    println!("\n## Allocations per operation: count / bytes (gregor | kafka-protocol)\n");
    println!("| frame | decode body | body + records | encode |");
    println!("|---|---|---|---|");
    for r in &results {
        let [g, k] = &r.ops;
        let cell =
            |i: usize| format!("{:.0} / {:.0} \\| {:.0} / {:.0}", g[i].allocs, g[i].bytes, k[i].allocs, k[i].bytes);
        println!("| {} | {} | {} | {} |", r.name, cell(0), cell(1), cell(2));
    }

    let builds = build_batches(timing);
    println!("\n## Building a RecordBatch v2: RecordBatchBuilder / RecordBatchEncoder\n");
    println!("| records, codec | batch bytes | ns | ratio | allocs | bytes allocated |");
    println!("|---|---|---:|---:|---|---|");
    for b in &builds {
        let [g, k] = &b.ops;
        println!(
            "| {} | {} / {} | {:.0} / {:.0} | {:.2} | {:.0} / {:.0} | {:.0} / {:.0} |",
            b.what,
            b.size[0],
            b.size[1],
            g.ns,
            k.ns,
            g.ns / k.ns,
            g.allocs,
            k.allocs,
            g.bytes,
            k.bytes
        );
    }
}

fn hostile_report(frames: &[Frame]) {
    let targets = targets(frames);
    let groups: Vec<String> = targets.iter().map(group_of).collect();
    let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
    let list: Vec<(usize, Mutation)> =
        targets.iter().enumerate().flat_map(|(i, t)| mutations_of(t).into_iter().map(move |m| (i, m))).collect();
    eprintln!("hostile input: {} targets, {} mutations per codec", targets.len(), list.len());
    let mut by_codec = Vec::new();
    for codec in ["gregor", "kp"] {
        let start = Instant::now();
        let t = hostile(codec, &groups, &names, &list);
        eprintln!("  {codec}: {:.1} s", start.elapsed().as_secs_f64());
        by_codec.push((codec, t));
    }
    println!("\n## Hostile input\n");
    println!(
        "{} targets ({} frames, {} records blobs), {} mutations per codec.\n",
        targets.len(),
        targets.iter().filter(|t| t.api.is_some()).count(),
        targets.iter().filter(|t| t.api.is_none()).count(),
        list.len()
    );
    println!("| codec | inputs | mutation | n | ok | err (body) | err (records) | panic | abort | hang | largest allocation | allocations > 1 MiB | peak live bytes |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (codec, tallies) in &by_codec {
        for ((group, kind), t) in tallies {
            let c = |k: &str| t.count.get(k).copied().unwrap_or(0);
            let n: u64 = t.count.values().sum();
            println!(
                "| {} | {group} | {kind} | {n} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                if *codec == "kp" { "kafka-protocol" } else { "gregor" },
                c("ok"),
                c("err (body)"),
                c("err (records)"),
                c("panic"),
                c("abort"),
                c("hang"),
                fmt_bytes(t.largest),
                t.over_1mib,
                fmt_bytes(t.peak.max(0) as usize)
            );
        }
    }
    println!("\nPanics and aborts, by cause:\n");
    for (codec, tallies) in &by_codec {
        let mut panics: BTreeMap<&str, u64> = BTreeMap::new();
        let mut aborts: BTreeMap<&str, u64> = BTreeMap::new();
        let mut largest: Option<(&usize, &str)> = None;
        for t in tallies.values() {
            for (p, n) in &t.panics {
                *panics.entry(p).or_default() += n;
            }
            for (a, n) in &t.aborts {
                *aborts.entry(a).or_default() += n;
            }
            if largest.is_none_or(|(l, _)| t.largest > *l) {
                largest = Some((&t.largest, &t.largest_at));
            }
        }
        let name = if *codec == "kp" { "kafka-protocol" } else { "gregor" };
        if panics.is_empty() && aborts.is_empty() {
            println!("* {name}: none");
        }
        for (p, n) in panics {
            println!("* {name}: {n} × panic: {p}");
        }
        for (a, n) in aborts {
            println!("* {name}: {n} × abort: {a}");
        }
        if let Some((l, at)) = largest {
            println!("* {name}: largest allocation asked for {} (mutation {at})", fmt_bytes(*l));
        }
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// The version of kafka-protocol that bench/Cargo.lock resolves (and so this binary links).
fn kafka_protocol_version() -> &'static str {
    let lock = include_str!("../../Cargo.lock");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == "name = \"kafka-protocol\"" {
            if let Some(v) = lines.next().and_then(|l| l.strip_prefix("version = \"")) {
                return v.trim_end_matches('"');
            }
        }
    }
    "unknown"
}

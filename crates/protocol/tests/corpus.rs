//! Every decoder over every wire fixture, and over deterministic mutations of each.
//!
//! * Every `.bin` of `tests/data/kafka-0.8.2.2` (genuine broker and Java client frames),
//!   `tests/data/kafka-python` (an independent encoder) and any other folder there goes through every response decoder (each
//!   API in each of its versions), the request decoder, `split_frame`, the message sets found in
//!   it (`MessageSet::decode` and `entries()`), and `compression::decompress` with each codec.
//! * Then about 200 mutations of each (bit flips, byte overwrites, truncations, insertions,
//!   deletions, length fields set to 0x7fffffff / 0xffffffff / 0x7fff / 0xffff) made by a
//!   xorshift PRNG with a fixed seed, so a failure reproduces; the compressed values of the
//!   wrappers are mutated and decompressed on their own too, and re-wrapped with a valid CRC so
//!   that `MessageSet::decode` reaches the decompressor.
//!
//! Nothing may panic, a decode that succeeds must re-encode to exactly the bytes it read, and a
//! frame decode may not allocate more than a small multiple of the frame's size.
//!
//! The last tests put a count of 2^31-1 (and string / bytes lengths of 0x7fff / 0x7fffffff) at
//! every place a real fixture has one, inside a 100-byte frame: each must fail at once.

use std::cell::Cell;
use std::fmt::Debug;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use gregor_protocol::compression::{self, Compression};
use gregor_protocol::frame::{self, split_frame, Request, RequestHeader};
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::messages::{
    AnyRequest, ConsumerMetadataRequest, FetchRequest, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest,
    OffsetsRequest, ProduceRequest,
};
use gregor_protocol::{Encode, Error, Message, MessageAndOffset, MessageSet};

// ---------------------------------------------------------------------------------------------
// The largest single allocation made by this thread while a decode runs.

gregor_testkit::counting_allocator!(ALLOCATOR);

/// What a frame decode may allocate at once: the widest decoded element (a `String` of 24
/// bytes for a 2-byte empty string on the wire) is 12 times its smallest wire size.
fn allocation_bound(frame_len: usize) -> usize {
    16 * frame_len + 1024
}

// ---------------------------------------------------------------------------------------------
// Fixtures.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    Produce,
    Fetch,
    Offsets,
    Metadata,
    OffsetCommitV0,
    OffsetCommitV1,
    OffsetFetchV0,
    OffsetFetchV1,
    ConsumerMetadata,
}

/// Every response decoder, in every version.
const ALL_RESPONSES: [Api; 9] = [
    Api::Produce,
    Api::Fetch,
    Api::Offsets,
    Api::Metadata,
    Api::OffsetCommitV0,
    Api::OffsetCommitV1,
    Api::OffsetFetchV0,
    Api::OffsetFetchV1,
    Api::ConsumerMetadata,
];

const CODECS: [Compression; 4] = [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A request frame, size prefix included.
    Request,
    /// A response frame, size prefix included, to this API (when its name tells).
    Response(Option<Api>),
    /// A raw (decompressed inner) message set.
    InnerSet,
}

struct Fixture {
    name: String,
    kind: Kind,
    data: Vec<u8>,
}

/// The API of a response fixture, from its name; `None` for a name this test does not know (its
/// frame must then decode as some response).
fn response_api(stem: &str) -> Option<Api> {
    const PREFIXES: [(&str, Api); 11] = [
        ("java_console_producer_metadata", Api::Metadata),
        ("java_console_producer_produce", Api::Produce),
        ("consumer_metadata", Api::ConsumerMetadata),
        ("offset_commit_v0", Api::OffsetCommitV0),
        ("offset_commit_v1", Api::OffsetCommitV1),
        ("offset_fetch_v0", Api::OffsetFetchV0),
        ("offset_fetch_v1", Api::OffsetFetchV1),
        ("offsets", Api::Offsets),
        ("metadata", Api::Metadata),
        ("produce", Api::Produce),
        ("fetch", Api::Fetch),
    ];
    PREFIXES.iter().find(|(p, _)| stem.starts_with(p)).map(|(_, api)| *api)
}

/// Every `.bin` under `tests/data/*/` but the modern ones, `kafka-3.7.0/` and
/// `peers-tansu-0.6.0/` (the two folders named below must be there and full).
fn fixtures() -> Vec<Fixture> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        // modern frames (versions the 0.8.2 decoders here do not read) are replayed, and
        // mutated, by tests/modern_fixtures.rs (and tests/record_fixtures.rs)
        .filter(|p| !p.ends_with("kafka-3.7.0") && !p.ends_with("peers-tansu-0.6.0"))
        .collect();
    folders.sort();
    let mut out = Vec::new();
    for dir in folders {
        let folder = dir.file_name().and_then(|n| n.to_str()).expect("utf-8 name").to_owned();
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{folder}: {e}"))
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "bin"))
            .collect();
        paths.sort();
        let at_least = match folder.as_str() {
            "kafka-0.8.2.2" => 100,
            "kafka-python" => 40,
            _ => 0,
        };
        assert!(paths.len() >= at_least, "{folder}: only {} .bin fixtures", paths.len());
        for path in paths {
            let file = path.file_name().and_then(|n| n.to_str()).expect("utf-8 name").to_owned();
            let stem = file.trim_end_matches(".bin");
            let kind = if stem.ends_with(".req") {
                Kind::Request
            } else if stem.ends_with(".resp") {
                Kind::Response(response_api(stem))
            } else {
                assert!(stem.contains(".inner"), "unknown fixture kind: {folder}/{file}");
                Kind::InnerSet
            };
            let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.push(Fixture { name: format!("{folder}/{file}"), kind, data });
        }
    }
    for folder in ["kafka-0.8.2.2", "kafka-python"] {
        assert!(out.iter().any(|f| f.name.starts_with(&format!("{folder}/"))), "no fixture in tests/data/{folder}");
    }
    out
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------------------------
// The checks run on every input.

thread_local! {
    /// Frames that decoded on this thread, and so were checked to re-encode byte for byte.
    static ROUND_TRIPPED: Cell<usize> = const { Cell::new(0) };
}

fn options() -> DecodeOptions {
    DecodeOptions { max_decompressed_bytes: 1 << 20, ..DecodeOptions::default() }
}

/// Decodes a response frame (no size prefix); on success checks it re-encodes to the same bytes
/// and did not allocate out of proportion.
fn round_trip_response<R: Request>(version: i16, frame: &Bytes) -> Option<R::Response>
where
    R::Response: Debug,
{
    let (decoded, largest) = ALLOCATOR.largest_allocation(|| frame::decode_response::<R>(version, frame.clone()));
    assert!(
        largest <= allocation_bound(frame.len()),
        "{:?} v{version}: allocated {largest} bytes at once for a {}-byte frame {}",
        R::KEY,
        frame.len(),
        hex(frame)
    );
    let (header, body) = decoded.ok()?;
    ROUND_TRIPPED.with(|n| n.set(n.get() + 1));
    let mut out = BytesMut::new();
    frame::encode_response(header.correlation_id, version, &body, &mut out)
        .unwrap_or_else(|e| panic!("{:?} v{version}: decoded {body:?} but cannot re-encode it: {e}", R::KEY));
    assert_eq!(&out[4..], &frame[..], "{:?} v{version} does not round-trip: {}", R::KEY, hex(frame));
    Some(body)
}

/// Decodes a response of `api`; returns its message sets (those of a Fetch response) when it
/// decodes.
fn check_response(api: Api, frame: &Bytes) -> Option<Vec<MessageSet>> {
    match api {
        Api::Produce => round_trip_response::<ProduceRequest>(0, frame).map(|_| Vec::new()),
        Api::Fetch => round_trip_response::<FetchRequest>(0, frame)
            .map(|r| r.topics.into_iter().flat_map(|t| t.partitions).map(|p| p.message_set).collect()),
        Api::Offsets => round_trip_response::<OffsetsRequest>(0, frame).map(|_| Vec::new()),
        Api::Metadata => round_trip_response::<MetadataRequest>(0, frame).map(|_| Vec::new()),
        Api::OffsetCommitV0 => round_trip_response::<OffsetCommitRequest>(0, frame).map(|_| Vec::new()),
        Api::OffsetCommitV1 => round_trip_response::<OffsetCommitRequest>(1, frame).map(|_| Vec::new()),
        Api::OffsetFetchV0 => round_trip_response::<OffsetFetchRequest>(0, frame).map(|_| Vec::new()),
        Api::OffsetFetchV1 => round_trip_response::<OffsetFetchRequest>(1, frame).map(|_| Vec::new()),
        Api::ConsumerMetadata => round_trip_response::<ConsumerMetadataRequest>(0, frame).map(|_| Vec::new()),
    }
}

/// Decodes a request frame (no size prefix); on success checks it re-encodes to the same bytes
/// and returns its message sets (those of a Produce request).
fn check_request(frame: &Bytes) -> Option<Vec<MessageSet>> {
    let (decoded, largest) = ALLOCATOR.largest_allocation(|| {
        let mut body = frame.clone();
        let header = RequestHeader::decode(&mut body)?;
        let request = AnyRequest::decode(&header, body)?;
        Ok::<_, Error>((header, request))
    });
    assert!(largest <= allocation_bound(frame.len()), "request: allocated {largest} bytes at once for {}", hex(frame));
    let (header, request) = decoded.ok()?;
    ROUND_TRIPPED.with(|n| n.set(n.get() + 1));
    assert_eq!(request.api_key(), header.api_key);
    let mut out = BytesMut::new();
    header.encode(&mut out).expect("a decoded header re-encodes");
    request
        .encode(header.api_version, &mut out)
        .unwrap_or_else(|e| panic!("decoded {request:?} but cannot re-encode it: {e}"));
    assert_eq!(&out[..], &frame[..], "request does not round-trip: {}", hex(frame));
    Some(match request {
        AnyRequest::Produce(p) => p.topics.into_iter().flat_map(|t| t.partitions).map(|p| p.message_set).collect(),
        _ => Vec::new(),
    })
}

/// `MessageSet::decode` and `entries()`: whole top-level entries re-encode to the set's first
/// bytes; a successful decode holds no wrapper. Returns the compressed wrappers of the set.
fn walk_set(set: &MessageSet) -> Vec<MessageAndOffset> {
    let mut entries = set.entries();
    let mut whole = Vec::new();
    let mut failed = false;
    for entry in entries.by_ref() {
        match entry {
            Ok(e) => whole.push(e),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    let reencoded = MessageSet::encode(&whole).expect("decoded entries re-encode");
    assert!(set.as_bytes().starts_with(reencoded.as_bytes()), "entries do not re-encode: {}", hex(set.as_bytes()));
    if !failed {
        assert_eq!(reencoded.len() + entries.partial_trailing_bytes(), set.len());
    }
    let _ = format!("{set:?}");
    if let Ok(decoded) = set.decode(&options()) {
        assert!(!failed);
        assert_eq!(decoded.partial_trailing_bytes, entries.partial_trailing_bytes());
        assert!(decoded.messages.iter().all(|m| !m.message.is_wrapper()));
    }
    whole.into_iter().filter(|e| e.message.is_wrapper()).collect()
}

/// `compression::decompress`: `out` unchanged on error; on success within the limit, one byte
/// less of limit fails, and compressing the output again gives it back.
fn check_decompress(codec: Compression, input: &[u8]) {
    const PREFIX: &[u8] = b"kept";
    let mut out = PREFIX.to_vec();
    match compression::decompress(codec, input, 1 << 20, &mut out) {
        Err(_) => assert_eq!(out, PREFIX, "{codec}: out changed on error, input {}", hex(input)),
        Ok(()) => {
            let raw = &out[PREFIX.len()..];
            assert!(out.starts_with(PREFIX) && raw.len() <= 1 << 20);
            if let Some(tight) = raw.len().checked_sub(1) {
                let mut o = Vec::new();
                let res = compression::decompress(codec, input, tight, &mut o);
                assert!(
                    res.is_err() && o.is_empty(),
                    "{codec}: {} bytes within a limit of {tight}: {}",
                    raw.len(),
                    hex(input)
                );
            }
            let mut again = Vec::new();
            compression::compress(codec, raw, &mut again).expect("compress");
            let mut back = Vec::new();
            compression::decompress(codec, &again, raw.len(), &mut back).expect("own output decompresses");
            assert_eq!(back, raw, "{codec} round trip");
        }
    }
}

/// Everything over one input; returns the compressed wrappers of the message sets it holds.
fn exercise(kind: Kind, data: &[u8]) -> Vec<MessageAndOffset> {
    let mut buf = BytesMut::from(data);
    while let Ok(Some(_)) = split_frame(&mut buf, 1 << 16) {}
    for codec in CODECS {
        check_decompress(codec, data);
    }
    let mut sets = Vec::new();
    if kind == Kind::InnerSet {
        sets.push(MessageSet::from_bytes(Bytes::copy_from_slice(data)));
    } else if let Some(frame) = data.get(4..) {
        // the size prefix is ignored: a mutated one would hide the body from the decoders
        let frame = Bytes::copy_from_slice(frame);
        for api in ALL_RESPONSES {
            sets.extend(check_response(api, &frame).unwrap_or_default());
        }
        sets.extend(check_request(&frame).unwrap_or_default());
    }
    sets.iter().flat_map(walk_set).collect()
}

// ---------------------------------------------------------------------------------------------
// Mutations.

/// xorshift64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
}

/// Where a length or count of `width` bytes plausibly sits: the first place from a random start
/// holding a small positive big-endian number.
fn plausible_length(rng: &mut Rng, d: &[u8], width: usize) -> Option<usize> {
    if d.len() < width {
        return None;
    }
    let n = d.len() - width + 1;
    let start = rng.below(n);
    (0..n).map(|i| (start + i) % n).find(|&i| {
        let f = &d[i..i + width];
        (f[..width - 1].iter().all(|&b| b == 0) && f[width - 1] != 0) || (width == 4 && f[..2] == [0, 0] && f[2] != 0)
    })
}

fn mutate(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    let rounds = if rng.below(4) == 0 { 2 } else { 1 };
    for _ in 0..rounds {
        let len = d.len();
        match rng.below(9) {
            0 if len > 0 => {
                for _ in 0..=rng.below(3) {
                    let at = rng.below(len);
                    d[at] ^= 1 << rng.below(8);
                }
            }
            1 if len > 0 => {
                let at = rng.below(len);
                d[at] = [0x00, 0x01, 0x7f, 0x80, 0xff, rng.byte()][rng.below(6)];
            }
            2 => d.truncate(rng.below(len + 1)),
            3 => {
                let at = rng.below(len + 1);
                let n = 1 + rng.below(8);
                let ins: Vec<u8> = (0..n).map(|_| rng.byte()).collect();
                d.splice(at..at, ins);
            }
            4 | 5 => {
                let value = if rng.below(2) == 0 { 0x7fff_ffffu32 } else { 0xffff_ffff };
                if let Some(at) = plausible_length(rng, &d, 4) {
                    d[at..at + 4].copy_from_slice(&value.to_be_bytes());
                }
            }
            6 => {
                let value = if rng.below(2) == 0 { 0x7fffu16 } else { 0xffff };
                if let Some(at) = plausible_length(rng, &d, 2) {
                    d[at..at + 2].copy_from_slice(&value.to_be_bytes());
                }
            }
            7 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below(16.min(len - at));
                d.drain(at..at + n);
            }
            _ if len >= 4 => {
                // a length field anywhere, to a random small or huge value
                let at = rng.below(len - 3);
                let value = [0u32, 1, 0x7fff_ffff, 0xffff_ffff, 0x8000_0000, rng.next() as u32 & 0xffff][rng.below(6)];
                d[at..at + 4].copy_from_slice(&value.to_be_bytes());
            }
            _ => d.push(rng.byte()),
        }
    }
    d
}

const MUTATIONS_PER_INPUT: usize = 200;

// ---------------------------------------------------------------------------------------------

#[test]
fn fixtures_decode_with_their_decoder_and_round_trip() {
    let all = fixtures();
    let mut wrappers = 0;
    for f in &all {
        match f.kind {
            Kind::Response(Some(api)) => {
                let frame = Bytes::copy_from_slice(&f.data[4..]);
                assert!(check_response(api, &frame).is_some(), "{}: {api:?} does not decode", f.name);
            }
            Kind::Response(None) => {
                let frame = Bytes::copy_from_slice(&f.data[4..]);
                let decoders = ALL_RESPONSES.into_iter().filter(|&api| check_response(api, &frame).is_some());
                assert!(decoders.count() > 0, "{}: decodes as no response", f.name);
            }
            Kind::Request => {
                let frame = Bytes::copy_from_slice(&f.data[4..]);
                assert!(check_request(&frame).is_some(), "{}: does not decode as a request", f.name);
            }
            Kind::InnerSet => {
                let set = MessageSet::from_bytes(Bytes::copy_from_slice(&f.data));
                set.decode(&options()).unwrap_or_else(|e| panic!("{}: {e}", f.name));
            }
        }
        if f.kind != Kind::InnerSet {
            let mut buf = BytesMut::from(&f.data[..]);
            let frame = split_frame(&mut buf, 1 << 16).expect("size prefix").expect("whole frame");
            assert_eq!(frame.len() + 4, f.data.len(), "{}", f.name);
        }
        wrappers += exercise(f.kind, &f.data).len();
    }
    assert!(wrappers >= 20, "only {wrappers} compressed wrappers in the fixtures");
}

#[test]
fn mutated_fixtures_never_panic_and_decodes_round_trip() {
    let started = Instant::now();
    let all = fixtures();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut inputs = 0usize;
    let mut wrappers = Vec::new();
    for f in &all {
        wrappers.extend(exercise(f.kind, &f.data));
        for _ in 0..MUTATIONS_PER_INPUT {
            let m = mutate(&mut rng, &f.data);
            let result = std::panic::catch_unwind(|| exercise(f.kind, &m));
            assert!(result.is_ok(), "{}: mutation {} panicked", f.name, hex(&m));
            inputs += 1;
        }
    }
    // The compressed values on their own, and re-wrapped with a valid CRC so that
    // MessageSet::decode gets past the CRC check to the decompressor.
    assert!(wrappers.len() >= 20);
    for w in &wrappers {
        let codec = w.message.compression().expect("known codec");
        let value = w.message.value.clone().expect("wrapper value");
        for _ in 0..MUTATIONS_PER_INPUT {
            let m = mutate(&mut rng, &value);
            let result = std::panic::catch_unwind(|| {
                check_decompress(codec, &m);
                let rewrapped = Message { attributes: w.message.attributes, key: None, value: Some(m.clone().into()) };
                let set = MessageSet::encode(&[MessageAndOffset::new(w.offset, rewrapped)]).expect("encode");
                walk_set(&set);
            });
            assert!(result.is_ok(), "{codec} wrapper at offset {}: mutated value {} panicked", w.offset, hex(&m));
            inputs += 1;
        }
    }
    let round_tripped = ROUND_TRIPPED.with(Cell::get);
    eprintln!("{inputs} mutated inputs in {:?}; {round_tripped} frame decodes round-tripped", started.elapsed());
}

// ---------------------------------------------------------------------------------------------
// Huge counts and lengths inside a 100-byte frame.

/// A field of a wire layout.
#[derive(Debug, Clone, Copy)]
enum F {
    I16,
    I32,
    I64,
    /// `int16` length, -1 = null.
    Str,
    /// `int32` length, -1 = null.
    Bytes,
    /// `int32` count of elements laid out as the fields given.
    Arr(&'static [F]),
}

use F::{Arr, Bytes as By, Str, I16, I32, I64};

const HEADER: &[F] = &[I16, I16, I32, Str];

/// Where a length prefix sits in a reduced frame.
#[derive(Debug)]
struct Mark {
    at: usize,
    field: F,
    path: String,
}

/// Copies `input` laid out as `layout` into `out`, keeping only the first element of every array
/// (so a small frame reaches every nested array), and marks every length or count prefix.
fn reduce(layout: &[F], input: &mut &[u8], out: &mut Vec<u8>, marks: &mut Vec<Mark>, path: &str) {
    fn take<'a>(input: &mut &'a [u8], n: usize) -> &'a [u8] {
        let (head, tail) = input.split_at(n);
        *input = tail;
        head
    }
    for (i, field) in layout.iter().enumerate() {
        let path = format!("{path}/{i}");
        match *field {
            I16 => out.extend_from_slice(take(input, 2)),
            I32 => out.extend_from_slice(take(input, 4)),
            I64 => out.extend_from_slice(take(input, 8)),
            Str | By => {
                let width = if matches!(field, Str) { 2 } else { 4 };
                let raw = take(input, width);
                let len = if width == 2 {
                    i64::from(i16::from_be_bytes(raw.try_into().unwrap()))
                } else {
                    i64::from(i32::from_be_bytes(raw.try_into().unwrap()))
                };
                marks.push(Mark { at: out.len(), field: *field, path });
                out.extend_from_slice(raw);
                if len > 0 {
                    out.extend_from_slice(take(input, len as usize));
                }
            }
            Arr(element) => {
                let count = i32::from_be_bytes(take(input, 4).try_into().unwrap());
                marks.push(Mark { at: out.len(), field: *field, path: path.clone() });
                out.extend_from_slice(&count.min(1).to_be_bytes());
                for n in 0..count {
                    if n == 0 {
                        reduce(element, input, out, marks, &path);
                    } else {
                        reduce(element, input, &mut Vec::new(), &mut Vec::new(), &path);
                    }
                }
            }
        }
    }
}

fn arrays_in(layout: &[F]) -> usize {
    layout.iter().map(|f| if let Arr(e) = f { 1 + arrays_in(e) } else { 0 }).sum()
}

enum Decoder {
    Response(Api),
    Request,
}

fn try_decode(decoder: &Decoder, frame: &[u8]) -> (Result<(), Error>, usize, Duration) {
    let frame = Bytes::copy_from_slice(frame);
    let started = Instant::now();
    let (result, largest) = ALLOCATOR.largest_allocation(|| -> Result<(), Error> {
        match decoder {
            Decoder::Request => {
                let mut body = frame.clone();
                let header = RequestHeader::decode(&mut body)?;
                AnyRequest::decode(&header, body).map(drop)
            }
            Decoder::Response(api) => {
                let f = frame.clone();
                match api {
                    Api::Produce => frame::decode_response::<ProduceRequest>(0, f).map(drop),
                    Api::Fetch => frame::decode_response::<FetchRequest>(0, f).map(drop),
                    Api::Offsets => frame::decode_response::<OffsetsRequest>(0, f).map(drop),
                    Api::Metadata => frame::decode_response::<MetadataRequest>(0, f).map(drop),
                    Api::OffsetCommitV0 => frame::decode_response::<OffsetCommitRequest>(0, f).map(drop),
                    Api::OffsetCommitV1 => frame::decode_response::<OffsetCommitRequest>(1, f).map(drop),
                    Api::OffsetFetchV0 => frame::decode_response::<OffsetFetchRequest>(0, f).map(drop),
                    Api::OffsetFetchV1 => frame::decode_response::<OffsetFetchRequest>(1, f).map(drop),
                    Api::ConsumerMetadata => frame::decode_response::<ConsumerMetadataRequest>(0, f).map(drop),
                }
            }
        }
    });
    (result, largest, started.elapsed())
}

/// For every length or count prefix of the fixture's layout: the fixture reduced to one element
/// per array, cut right after that prefix set to its maximum, zero-padded to 100 bytes. Every one
/// must fail with `InvalidLength` at once, without a large allocation.
fn huge_lengths_fail_at_once(decoder: Decoder, file: &str, layout: &[F]) -> usize {
    let data = fixture(file);
    let mut input = &data[4..];
    let mut reduced = Vec::new();
    let mut marks = Vec::new();
    reduce(layout, &mut input, &mut reduced, &mut marks, "");
    assert!(input.is_empty(), "{file}: the layout leaves {} bytes", input.len());
    // the reduced frame is a valid frame
    let (ok, _, _) = try_decode(&decoder, &reduced);
    ok.unwrap_or_else(|e| panic!("{file} reduced: {e}"));
    let arrays: std::collections::BTreeSet<&str> =
        marks.iter().filter(|m| matches!(m.field, Arr(_))).map(|m| m.path.as_str()).collect();
    assert_eq!(arrays.len(), arrays_in(layout), "{file}: some array is empty in this fixture: {marks:?}");

    for mark in &marks {
        let mut frame = reduced[..mark.at].to_vec();
        let claimed: i64 = match mark.field {
            Str => {
                frame.put_i16(i16::MAX);
                i16::MAX.into()
            }
            _ => {
                frame.put_i32(i32::MAX);
                i32::MAX.into()
            }
        };
        assert!(frame.len() <= 100, "{file}: {mark:?} is past byte 100");
        frame.resize(100, 0);
        let (result, largest, took) = try_decode(&decoder, &frame);
        match result {
            Err(Error::InvalidLength { length, .. }) if length == claimed => {}
            other => panic!("{file}: {claimed} at {mark:?} gave {other:?}; frame {}", hex(&frame)),
        }
        assert!(largest <= allocation_bound(100), "{file}: {mark:?}: allocated {largest} bytes at once");
        // microseconds when it fails at once; seconds only if it walked the claimed length (the
        // bound leaves a loaded machine room)
        assert!(took < Duration::from_secs(5), "{file}: {mark:?} took {took:?}");
    }
    marks.len()
}

#[test]
fn huge_counts_in_a_100_byte_response_fail_at_once() {
    let topics = |partition: &'static [F]| -> Vec<F> { vec![I32, Arr(leak(vec![Str, Arr(partition)]))] };
    let cases: Vec<(Api, &str, Vec<F>)> = vec![
        (Api::Produce, "kafka-0.8.2.2/produce_v0_three_partitions.resp.bin", topics(&[I32, I16, I64])),
        (Api::Fetch, "kafka-0.8.2.2/fetch_v0_plain.resp.bin", topics(&[I32, I16, I64, By])),
        (Api::Offsets, "kafka-0.8.2.2/offsets_v0_latest_max10.resp.bin", topics(&[I32, I16, Arr(&[I64])])),
        (
            Api::Metadata,
            "kafka-0.8.2.2/metadata_v0_one_topic.resp.bin",
            vec![I32, Arr(&[I32, Str, I32]), Arr(&[I16, Str, Arr(&[I16, I32, I32, Arr(&[I32]), Arr(&[I32])])])],
        ),
        (Api::OffsetCommitV0, "kafka-0.8.2.2/offset_commit_v0.resp.bin", topics(&[I32, I16])),
        (Api::OffsetCommitV1, "kafka-0.8.2.2/offset_commit_v1.resp.bin", topics(&[I32, I16])),
        (Api::OffsetFetchV0, "kafka-0.8.2.2/offset_fetch_v0.resp.bin", topics(&[I32, I64, Str, I16])),
        (Api::OffsetFetchV1, "kafka-0.8.2.2/offset_fetch_v1.resp.bin", topics(&[I32, I64, Str, I16])),
        (Api::ConsumerMetadata, "kafka-0.8.2.2/consumer_metadata_v0_ready.resp.bin", vec![I32, I16, I32, Str, I32]),
    ];
    let mut checked = 0;
    for (api, file, layout) in &cases {
        checked += huge_lengths_fail_at_once(Decoder::Response(*api), file, layout);
    }
    assert!(checked >= 25, "{checked}");
}

#[test]
fn huge_counts_in_a_100_byte_request_fail_at_once() {
    let with_header = |body: &[F]| -> Vec<F> { HEADER.iter().chain(body).copied().collect() };
    let cases: Vec<(&str, Vec<F>)> = vec![
        ("kafka-0.8.2.2/produce_v0_plain_acks1.req.bin", with_header(&[I16, I32, Arr(&[Str, Arr(&[I32, By])])])),
        ("kafka-0.8.2.2/fetch_v0_plain.req.bin", with_header(&[I32, I32, I32, Arr(&[Str, Arr(&[I32, I64, I32])])])),
        ("kafka-0.8.2.2/offsets_v0_latest.req.bin", with_header(&[I32, Arr(&[Str, Arr(&[I32, I64, I32])])])),
        ("kafka-0.8.2.2/metadata_v0_one_topic.req.bin", with_header(&[Arr(&[Str])])),
        ("kafka-0.8.2.2/offset_commit_v0.req.bin", with_header(&[Str, Arr(&[Str, Arr(&[I32, I64, Str])])])),
        (
            "kafka-0.8.2.2/offset_commit_v1.req.bin",
            with_header(&[Str, I32, Str, Arr(&[Str, Arr(&[I32, I64, I64, Str])])]),
        ),
        ("kafka-0.8.2.2/offset_fetch_v1.req.bin", with_header(&[Str, Arr(&[Str, Arr(&[I32])])])),
        ("kafka-0.8.2.2/consumer_metadata_v0_ready.req.bin", with_header(&[Str])),
    ];
    let mut checked = 0;
    for (file, layout) in &cases {
        checked += huge_lengths_fail_at_once(Decoder::Request, file, layout);
    }
    assert!(checked >= 30, "{checked}");
}

fn leak(v: Vec<F>) -> &'static [F] {
    Vec::leak(v)
}

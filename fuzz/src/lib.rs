//! Helpers shared by the fuzz targets in `fuzz_targets/` ([`avro`]: those of `gregor-serde`).
//!
//! Every check here is an invariant of `gregor-protocol` that must hold for ANY input:
//! decoding never panics, a decode that succeeds re-encodes to exactly the bytes it read,
//! decompression respects its output bound and leaves `out` untouched on error.

pub mod avro;

use std::fmt::Debug;

use bytes::{BufMut, Bytes, BytesMut};
use gregor_protocol::compression::{self, Compression};
use gregor_protocol::frame::{self, Request};
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::record::{Batches, Record, RecordBatchBuilder};
use gregor_protocol::MessageSet;

/// The correlation id put in front of every fuzzed response body.
pub const CORRELATION_ID: i32 = 0x1234_5678;

/// Decompression budget used by every target (1 MiB).
pub const MAX_DECOMPRESSED: usize = 1 << 20;

/// Decode options with the fuzzing budget.
pub fn options() -> DecodeOptions {
    DecodeOptions { max_decompressed_bytes: MAX_DECOMPRESSED, ..DecodeOptions::default() }
}

/// Decodes `body` (preceded by [`CORRELATION_ID`]) as the response to `R` in `version` with
/// [`frame::decode_response`]. When that succeeds, re-encodes it with [`frame::encode_response`]
/// and asserts the bytes are identical. Also asserts versions outside `R::VERSIONS` are refused.
pub fn response<R: Request>(version: i16, body: &[u8]) -> Option<R::Response>
where
    R::Response: Debug,
{
    let mut frame = BytesMut::with_capacity(4 + body.len());
    frame.put_i32(CORRELATION_ID);
    frame.put_slice(body);
    let frame = frame.freeze();

    for bad in [R::VERSIONS.min.wrapping_sub(1), R::VERSIONS.max.wrapping_add(1)] {
        assert!(frame::decode_response::<R>(bad, frame.clone()).is_err(), "v{bad} of {:?} accepted", R::KEY);
    }

    let (header, resp) = frame::decode_response::<R>(version, frame.clone()).ok()?;
    assert_eq!(header.correlation_id, CORRELATION_ID);
    let mut out = BytesMut::new();
    frame::encode_response(header.correlation_id, version, &resp, &mut out)
        .unwrap_or_else(|e| panic!("decoded {resp:?} but re-encoding failed: {e}"));
    assert_eq!(out.len(), 4 + frame.len());
    assert_eq!(&out[..4], &(frame.len() as u32).to_be_bytes());
    assert_eq!(&out[4..], &frame[..], "{:?} v{version} did not round-trip: {resp:?}", R::KEY);
    Some(resp)
}

/// Walks a message set both ways ([`MessageSet::entries`] and [`MessageSet::decode`]) and checks
/// what can be checked for any input:
///
/// * the top-level entries read before the walk ended re-encode to a prefix of the set's bytes
///   (the whole set less the partial trailing entry when the walk did not fail);
/// * a successful decode returns no wrapper and reports the same partial trailing bytes;
/// * decoding again from the offset of a message in the middle drops exactly the messages below
///   it (and those the first decode dropped: offsets below 0).
pub fn walk_set(set: &MessageSet) {
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
    let reencoded = MessageSet::encode(&whole).expect("entries that decoded re-encode");
    assert!(set.as_bytes().starts_with(reencoded.as_bytes()), "top-level entries do not re-encode to a prefix");
    if !failed {
        assert_eq!(reencoded.len() + entries.partial_trailing_bytes(), set.len());
    }
    // Debug walks the entries too (skipped for big sets: it formats every message).
    if set.len() <= 4096 {
        let _ = format!("{set:?}");
    }

    let records = set.decode_records(&options());
    let Ok(decoded) = set.decode(&options()) else {
        assert!(records.is_err(), "decode_records succeeded where decode failed");
        return;
    };
    assert!(!failed, "decode succeeded where entries() failed");
    // the records are the messages, converted (the list sized from the entries' offsets)
    let records = records.expect("decode_records failed where decode did not");
    let converted: Vec<Record> = decoded.messages.iter().cloned().map(Record::from).collect();
    assert_eq!(records.messages, converted);
    assert_eq!((records.skipped, records.partial_trailing_bytes), (decoded.skipped, decoded.partial_trailing_bytes));
    assert_eq!(decoded.partial_trailing_bytes, entries.partial_trailing_bytes());
    for m in &decoded.messages {
        assert!(!m.message.is_wrapper(), "decode returned a wrapper at offset {}", m.offset);
    }
    if let Some(mid) = decoded.messages.get(decoded.messages.len() / 2) {
        let from = mid.offset;
        let opts = DecodeOptions { min_offset: from, ..options() };
        let again = set.decode(&opts).expect("same set decodes again");
        let below = decoded.messages.iter().filter(|m| m.offset < from).count();
        // messages at negative offsets were already skipped by the first decode (min_offset 0)
        assert_eq!(again.skipped, decoded.skipped + below);
        let kept: Vec<_> = decoded.messages.iter().filter(|m| m.offset >= from).cloned().collect();
        assert_eq!(again.messages, kept);
    }
}

/// Decompresses `input` with `codec` behind a prefix already in `out`, then checks: on error
/// `out` is unchanged; on success at most `MAX_DECOMPRESSED` bytes were appended, one byte less of
/// budget fails, and compress + decompress of the output gives it back.
pub fn decompress(codec: Compression, input: &[u8]) {
    const PREFIX: &[u8] = b"already here";
    let mut out = PREFIX.to_vec();
    match compression::decompress(codec, input, MAX_DECOMPRESSED, &mut out) {
        Err(_) => assert_eq!(out, PREFIX, "{codec}: out changed on error"),
        Ok(()) => {
            assert!(out.starts_with(PREFIX), "{codec}: prefix overwritten");
            let raw = &out[PREFIX.len()..];
            assert!(raw.len() <= MAX_DECOMPRESSED, "{codec}: {} bytes out", raw.len());
            if !raw.is_empty() {
                let mut tight = Vec::new();
                assert!(
                    compression::decompress(codec, input, raw.len() - 1, &mut tight).is_err(),
                    "{codec}: {} bytes decompressed within a limit of {}",
                    raw.len(),
                    raw.len() - 1
                );
                assert!(tight.is_empty());
            }
            let mut again = Vec::new();
            compression::compress(codec, raw, &mut again).expect("compress");
            let mut back = Vec::new();
            compression::decompress(codec, &again, raw.len(), &mut back).expect("own output decompresses");
            assert_eq!(back, raw, "{codec}: compress/decompress round trip");
        }
    }
}

/// The codec a selector byte picks, among those a message v0 may carry.
pub fn codec(selector: u8) -> Compression {
    [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4][usize::from(selector % 4)]
}

/// The codec a selector byte picks, among all five (zstd included: RecordBatch v2).
pub fn codec_any(selector: u8) -> Compression {
    [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
        [usize::from(selector % 5)]
}

/// Walks a `records` blob of any magic with [`Batches`] and checks what holds for any input:
///
/// * the batches read are consecutive slices of the blob from its start, and when the walk
///   does not fail they and the partial trailing bytes cover all of it;
/// * every record of a batch iterates without panic, a record count of a v2 batch whose
///   records all read is met exactly, and their offsets stay within the batch's
///   `base_offset + offset_delta` range when the records are its own;
/// * headers iterate to their count; `Debug` of everything.
pub fn walk_records(blob: &Bytes) {
    // with the default options, which skip entries below offset 0 (so where the batches lie is
    // only checked with none skipped), then with none skipped
    walk_records_with(blob, &options(), false);
    walk_records_with(blob, &DecodeOptions { min_offset: i64::MIN, ..options() }, true);
}

fn walk_records_with(blob: &Bytes, options: &DecodeOptions, none_skipped: bool) {
    let mut batches = Batches::new(blob.clone(), options);
    let mut at = 0;
    let mut failed = false;
    for batch in batches.by_ref() {
        let batch = match batch {
            Ok(batch) => batch,
            Err(_) => {
                failed = true;
                break;
            }
        };
        let raw = batch.raw();
        if none_skipped {
            assert!(blob[at..].starts_with(raw), "batches are consecutive slices of the blob");
        }
        at += raw.len();
        let (mut read, mut errors) = (0usize, 0usize);
        for record in batch.records() {
            match record {
                Ok(r) => {
                    read += 1;
                    assert_eq!(r.headers.iter().count(), r.headers.len());
                    let _ = format!("{r:?}");
                }
                Err(_) => errors += 1,
            }
        }
        assert!(errors <= 1, "records end after the first error");
        if batch.magic() == 2 && errors == 0 {
            assert_eq!(read, batch.header().record_count as usize, "a v2 batch yields its record count");
        }
        let _ = format!("{batch:?}");
    }
    if none_skipped {
        assert_eq!(batches.skipped_batches(), 0);
    }
    if !failed && none_skipped {
        assert_eq!(at + batches.partial_trailing_bytes(), blob.len(), "batches and partial tail cover the blob");
    }
}

/// Builds one RecordBatch v2 with `codec` from records cut out of `data` (each chunk: a
/// length byte, then a key/value/header split) and checks that it reads back exactly.
pub fn build_and_read(codec: Compression, data: &[u8]) {
    let mut builder = RecordBatchBuilder::new(codec).producer(1, 2, 3);
    let mut expected = Vec::new();
    let mut rest = data;
    let mut ts = 1_700_000_000_000i64;
    while let Some((&len, tail)) = rest.split_first() {
        let n = usize::from(len).min(tail.len());
        let (chunk, tail) = tail.split_at(n);
        rest = tail;
        let (key, value) = chunk.split_at(chunk.len() / 2);
        let key = (len & 1 == 0).then_some(key);
        let value = (len & 2 == 0).then_some(value);
        let header_key = if len & 4 == 0 { "h" } else { "" };
        let headers = [(header_key, value)];
        let headers = if len & 8 == 0 { &headers[..] } else { &[][..] };
        ts += i64::from(len) - 128;
        let before = builder.len();
        let size = builder.size_of_next(ts, key, value, headers);
        builder.append_with_headers(ts, key, value, headers).expect("append");
        assert_eq!(builder.len() - before, size, "size_of_next is exact");
        expected.push((ts, key.map(<[u8]>::to_vec), value.map(<[u8]>::to_vec), headers.len()));
    }
    let bytes = builder.finish().expect("finish");
    let batches: Vec<_> = Batches::new(bytes.clone(), &DecodeOptions::default()).collect();
    if expected.is_empty() {
        assert!(bytes.is_empty() && batches.is_empty());
        return;
    }
    assert_eq!(batches.len(), 1);
    let batch = batches.into_iter().next().expect("one").expect("our batch reads");
    let got: Vec<_> = batch
        .records()
        .map(|r| r.expect("our records read"))
        .map(|r| (r.timestamp, r.key.map(|k| k.to_vec()), r.value.map(|v| v.to_vec()), r.headers.len()))
        .collect();
    assert_eq!(got, expected, "{codec}: builder -> reader round trip");
    walk_records(&bytes);
}

/// Rewrites the CRC of every whole entry of a message set in place (`offset int64 | size int32
/// | crc uint32 | rest`), so that a fuzzed set gets past the CRC checks.
pub fn fix_crcs(set: &mut [u8]) {
    let mut at = 0;
    while set.len() - at >= 12 {
        let size = i32::from_be_bytes(set[at + 8..at + 12].try_into().expect("4 bytes"));
        let start = at + 12;
        let Ok(size) = usize::try_from(size) else { return };
        if size > set.len() - start {
            return;
        }
        let end = start + size;
        if size >= 4 {
            let crc = crc32fast::hash(&set[start + 4..end]);
            set[start..start + 4].copy_from_slice(&crc.to_be_bytes());
        }
        at = end;
    }
}

/// Bytes of a slice, for targets that need an owned [`Bytes`].
pub fn bytes(data: &[u8]) -> Bytes {
    Bytes::copy_from_slice(data)
}

/// Decodes `body` (preceded by [`CORRELATION_ID`]) as the response to `R` in `version` (any
/// version, flexible ones included). When that succeeds, the value must re-encode and decode
/// again to an equal value (not necessarily the same bytes: a flexible version may have read a
/// non-canonical varint or a bool other than 0 and 1).
pub fn response_stable<R: Request>(version: i16, body: &[u8])
where
    R::Response: Debug + PartialEq,
{
    let mut frame = BytesMut::with_capacity(4 + body.len());
    frame.put_i32(CORRELATION_ID);
    frame.put_slice(body);
    let Ok((header, resp)) = frame::decode_response::<R>(version, frame.freeze()) else { return };
    let mut out = BytesMut::new();
    frame::encode_response_for::<R>(header.correlation_id, version, &resp, &mut out)
        .unwrap_or_else(|e| panic!("decoded {resp:?} but re-encoding failed: {e}"));
    let (_, back) = frame::decode_response::<R>(version, out.freeze().slice(4..))
        .unwrap_or_else(|e| panic!("{:?} v{version}: the re-encoded {resp:?} does not decode: {e}", R::KEY));
    assert_eq!(back, resp, "{:?} v{version} is not stable", R::KEY);
}

/// `body` decoded as an `R` request in `version` (what a broker reads after the header; bytes
/// left over are allowed, as Kafka allows them): what decodes must re-encode and decode again to
/// an equal value.
pub fn request_stable<R: Request + Debug + PartialEq>(version: i16, body: &[u8]) {
    let mut input = bytes(body);
    let Ok(req) = R::decode(version, &mut input) else { return };
    let mut out = BytesMut::new();
    req.encode(version, &mut out).unwrap_or_else(|e| panic!("decoded {req:?} but re-encoding failed: {e}"));
    let back = frame::decode_request_body::<R>(version, out.freeze())
        .unwrap_or_else(|e| panic!("{:?} v{version}: the re-encoded {req:?} does not decode: {e}", R::KEY));
    assert_eq!(back, req, "{:?} v{version} is not stable", R::KEY);
}

/// The version `selector` picks of `R`'s range.
pub fn pick<R: Request>(selector: u8) -> i16 {
    let span = (R::VERSIONS.max - R::VERSIONS.min + 1) as u8;
    R::VERSIONS.min + (selector % span) as i16
}

/// Calls `$check::<R>(pick::<R>($version), $body)` (`$check` a function in scope) for the request
/// type `R` of the modern API that `$api` picks (modulo their number): the one list of the
/// `*_any` targets.
#[macro_export]
macro_rules! any_modern_api {
    ($check:ident, $api:expr, $version:expr, $body:expr) => {
        $crate::any_modern_api!(@list $check, $api, $version, $body; ProduceRequest, FetchRequest, OffsetsRequest, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest, FindCoordinatorRequest, JoinGroupRequest, HeartbeatRequest, LeaveGroupRequest, SyncGroupRequest, DescribeGroupsRequest, ListGroupsRequest, SaslHandshakeRequest, ApiVersionsRequest, CreateTopicsRequest, DeleteTopicsRequest, InitProducerIdRequest, DescribeConfigsRequest, AlterConfigsRequest, SaslAuthenticateRequest, CreatePartitionsRequest, DeleteGroupsRequest, ElectLeadersRequest, IncrementalAlterConfigsRequest, AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest, OffsetDeleteRequest, DescribeClusterRequest, DeleteRecordsRequest)
    };
    (@list $check:ident, $api:expr, $version:expr, $body:expr; $($r:ty),+) => {{
        let apis: &[fn(u8, &[u8])] = &[$(|v, b| $check::<$r>($crate::pick::<$r>(v), b)),+];
        apis[$api as usize % apis.len()]($version, $body)
    }};
}

//! Conformance against frames captured from a genuine Apache Kafka 0.8.2.2 3-broker cluster
//! (`tests/data/kafka-0.8.2.2/`, see its README.md and INDEX.md).
//!
//! For every fixture of `index.json`:
//!
//! 1. the request frame splits as exactly one frame, its header is the one recorded, its body
//!    decodes with `AnyRequest::decode` (all bytes used) and re-encodes with
//!    `frame::encode_request` to the same bytes;
//! 2. the response frame decodes with `frame::decode_response` for the request's type and
//!    version (all bytes used), carries the request's correlation id and re-encodes with
//!    `frame::encode_response` to the same bytes;
//! 3. our decoded values, rendered by the summarizer below into the format of `index.json`'s
//!    `request`/`response` summaries, equal those summaries as strings.
//!
//! Compression details in the summaries (gzip header, xerial blocks, lz4 frame header and block
//! count) are read from the compressed bytes by the small parsers of this file; the content of
//! every wrapper comes from the crate's own `compression::decompress` / `MessageSet::decode`.
//!
//! The named tests after that check specific facts the captures established.

use std::path::PathBuf;

use bytes::{Buf, Bytes, BytesMut};
use gregor_protocol::compression::{self, Compression};
use gregor_protocol::frame::{self, ApiKey, Request, RequestHeader};
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::messages::{
    AnyRequest, ConsumerMetadataRequest, ConsumerMetadataResponse, FetchRequest, FetchResponse, MetadataRequest,
    MetadataResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
    OffsetsRequest, OffsetsResponse, ProduceRequest, ProduceResponse,
};
use gregor_protocol::{Error, Message, MessageAndOffset, MessageLocation, MessageSet};
use serde_json::Value;
use xxhash_rust::xxh32::xxh32;

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

/// Frames are small; anything above this is a broken size prefix.
const MAX_FRAME: usize = 16 << 20;
/// Bound handed to the decompressors.
const MAX_DECOMPRESSED: usize = 64 << 20;

fn data_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kafka-0.8.2.2"))
}

/// One row of `index.json`.
#[derive(Debug, Clone)]
struct Fixture {
    name: String,
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    client_id: String,
    request: String,
    /// `None` where the broker sent no response (acks=0).
    response: Option<String>,
    req_bytes: usize,
    resp_bytes: Option<usize>,
}

fn index() -> Vec<Fixture> {
    let text = std::fs::read_to_string(data_dir().join("index.json")).expect("index.json");
    let json: Value = serde_json::from_str(&text).expect("index.json is JSON");
    assert_eq!(json["kafka"], "0.8.2.2");
    let rows = json["fixtures"].as_array().expect("fixtures array");
    rows.iter()
        .map(|row| {
            let s = |k: &str| row[k].as_str().unwrap_or_else(|| panic!("{k} of {row}")).to_owned();
            let i = |k: &str| row[k].as_i64().unwrap_or_else(|| panic!("{k} of {row}"));
            // An acks=0 produce has no response: null in index.json ("**no response**" in INDEX.md).
            let response = match &row["response"] {
                Value::Null => None,
                Value::String(s) if s == "**no response**" => None,
                Value::String(s) => Some(s.clone()),
                other => panic!("response {other} of {row}"),
            };
            Fixture {
                name: s("name"),
                api_key: i16::try_from(i("api_key")).unwrap(),
                api_version: i16::try_from(i("api_version")).unwrap(),
                correlation_id: i32::try_from(i("correlation_id")).unwrap(),
                client_id: s("client_id"),
                request: s("request"),
                response,
                req_bytes: usize::try_from(i("req_bytes")).unwrap(),
                resp_bytes: row["resp_bytes"].as_u64().map(|n| usize::try_from(n).unwrap()),
            }
        })
        .collect()
}

fn fixture(name: &str) -> Fixture {
    index().into_iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no fixture {name} in index.json"))
}

fn read(file: &str) -> Option<Vec<u8>> {
    match std::fs::read(data_dir().join(file)) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("{file}: {e}"),
    }
}

fn request_bytes(name: &str) -> Vec<u8> {
    read(&format!("{name}.req.bin")).unwrap_or_else(|| panic!("{name}.req.bin missing"))
}

fn response_bytes(name: &str) -> Vec<u8> {
    read(&format!("{name}.resp.bin")).unwrap_or_else(|| panic!("{name}.resp.bin missing"))
}

fn err(context: &str, e: impl std::fmt::Display) -> String {
    format!("{context}: {e}")
}

/// Takes exactly one frame (size prefix removed) out of `raw`.
fn one_frame(raw: &[u8]) -> Result<Bytes, String> {
    let mut buf = BytesMut::from(raw);
    let frame = frame::split_frame(&mut buf, MAX_FRAME)
        .map_err(|e| err("split_frame", e))?
        .ok_or("split_frame: incomplete frame")?;
    if !buf.is_empty() {
        return Err(format!("split_frame: {} bytes after the frame", buf.len()));
    }
    Ok(frame)
}

/// Point 1: split, header, body, re-encode.
fn decode_request(fx: &Fixture, raw: &[u8]) -> Result<(RequestHeader, AnyRequest), String> {
    if raw.len() != fx.req_bytes {
        return Err(format!("request is {} bytes, index.json says {}", raw.len(), fx.req_bytes));
    }
    let mut body = one_frame(raw)?;
    let header = RequestHeader::decode(&mut body).map_err(|e| err("RequestHeader::decode", e))?;
    let expected = RequestHeader {
        api_key: ApiKey::from_i16(fx.api_key),
        api_version: fx.api_version,
        correlation_id: fx.correlation_id,
        client_id: Some(fx.client_id.clone()),
        unknown_tagged_fields: Default::default(),
    };
    if header != expected {
        return Err(format!("header {header:?}, index.json says {expected:?}"));
    }
    let request = AnyRequest::decode(&header, body).map_err(|e| err("AnyRequest::decode", e))?;
    if request.api_key() != header.api_key {
        return Err(format!("decoded a {} request for a {} header", request.api_key(), header.api_key));
    }
    let mut out = BytesMut::new();
    let encoded = match &request {
        AnyRequest::Produce(r) => frame::encode_request(&header, r, &mut out),
        AnyRequest::Fetch(r) => frame::encode_request(&header, r, &mut out),
        AnyRequest::Offsets(r) => frame::encode_request(&header, r, &mut out),
        AnyRequest::Metadata(r) => frame::encode_request(&header, r, &mut out),
        AnyRequest::OffsetCommit(r) => frame::encode_request(&header, r, &mut out),
        AnyRequest::OffsetFetch(r) => frame::encode_request(&header, r, &mut out),
        AnyRequest::ConsumerMetadata(r) => frame::encode_request(&header, r, &mut out),
        other => return Err(format!("unexpected request {other:?}")),
    };
    encoded.map_err(|e| err("encode_request", e))?;
    if out[..] != raw[..] {
        return Err(format!("encode_request gives other bytes:\n  captured {}\n  ours     {}", hex(raw), hex(&out)));
    }
    Ok((header, request))
}

/// Point 2 for a request type `R`: decode, correlation id, re-encode.
fn decode_response<R: Request>(version: i16, correlation_id: i32, raw: &[u8]) -> Result<R::Response, String> {
    let frame = one_frame(raw)?;
    let (header, body) = frame::decode_response::<R>(version, frame).map_err(|e| err("decode_response", e))?;
    if header.correlation_id != correlation_id {
        return Err(format!("response correlation id {}, request's {correlation_id}", header.correlation_id));
    }
    let mut out = BytesMut::new();
    frame::encode_response(correlation_id, version, &body, &mut out).map_err(|e| err("encode_response", e))?;
    if out[..] != raw[..] {
        return Err(format!("encode_response gives other bytes:\n  captured {}\n  ours     {}", hex(raw), hex(&out)));
    }
    Ok(body)
}

/// Point 2 and the response half of point 3: decodes the response as the answer to `request`
/// and renders it.
fn response_summary(header: &RequestHeader, request: &AnyRequest, raw: &[u8]) -> Result<String, String> {
    let (v, c) = (header.api_version, header.correlation_id);
    match request {
        AnyRequest::Produce(_) => summarize_produce_response(&decode_response::<ProduceRequest>(v, c, raw)?),
        AnyRequest::Fetch(_) => summarize_fetch_response(&decode_response::<FetchRequest>(v, c, raw)?),
        AnyRequest::Offsets(_) => Ok(summarize_offsets_response(&decode_response::<OffsetsRequest>(v, c, raw)?)),
        AnyRequest::Metadata(_) => Ok(summarize_metadata_response(&decode_response::<MetadataRequest>(v, c, raw)?)),
        AnyRequest::OffsetCommit(_) => {
            Ok(summarize_offset_commit_response(&decode_response::<OffsetCommitRequest>(v, c, raw)?))
        }
        AnyRequest::OffsetFetch(_) => {
            Ok(summarize_offset_fetch_response(&decode_response::<OffsetFetchRequest>(v, c, raw)?))
        }
        AnyRequest::ConsumerMetadata(_) => {
            Ok(summarize_consumer_metadata_response(&decode_response::<ConsumerMetadataRequest>(v, c, raw)?))
        }
        other => Err(format!("unexpected request {other:?}")),
    }
}

fn expects_response(request: &AnyRequest) -> bool {
    match request {
        AnyRequest::Produce(r) => r.expects_response(),
        _ => true,
    }
}

/// Decodes a fixture's fetch request and response (both checked by the main test too).
fn fetch_fixture(name: &str) -> (FetchRequest, FetchResponse) {
    let fx = fixture(name);
    let (header, request) = decode_request(&fx, &request_bytes(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let AnyRequest::Fetch(request) = request else { panic!("{name} is not a fetch") };
    let response = decode_response::<FetchRequest>(header.api_version, header.correlation_id, &response_bytes(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    (request, response)
}

/// Decodes a fixture's produce request.
fn produce_fixture(name: &str) -> ProduceRequest {
    let fx = fixture(name);
    match decode_request(&fx, &request_bytes(name)).unwrap_or_else(|e| panic!("{name}: {e}")) {
        (_, AnyRequest::Produce(r)) => r,
        (_, other) => panic!("{name} is not a produce: {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The summarizer: our decoded values in the format of index.json
// ---------------------------------------------------------------------------------------------

/// The CamelCase names of Kafka 0.8.2's error codes (kafka.common.ErrorMapping), as INDEX.md
/// and index.json spell them.
fn error_name(code: i16) -> String {
    match code {
        -1 => "Unknown",
        0 => "NoError",
        1 => "OffsetOutOfRange",
        2 => "InvalidMessage",
        3 => "UnknownTopicOrPartition",
        4 => "InvalidFetchSize",
        5 => "LeaderNotAvailable",
        6 => "NotLeaderForPartition",
        7 => "RequestTimedOut",
        8 => "BrokerNotAvailable",
        9 => "ReplicaNotAvailable",
        10 => "MessageSizeTooLarge",
        11 => "StaleControllerEpoch",
        12 => "OffsetMetadataTooLarge",
        13 => "StaleLeaderEpoch",
        14 => "OffsetsLoadInProgress",
        15 => "ConsumerCoordinatorNotAvailable",
        16 => "NotCoordinatorForConsumer",
        17 => "InvalidTopic",
        18 => "MessageSetSizeTooLarge",
        19 => "NotEnoughReplicas",
        20 => "NotEnoughReplicasAfterAppend",
        other => return format!("UndefinedErrorCode{other}"),
    }
    .to_owned()
}

/// `err 6 NotLeaderForPartition`.
fn err_code(code: i16) -> String {
    format!("err {code} {}", error_name(code))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `'a', 'b'` (Python's repr of a list of strings, without the brackets).
fn quoted_list(items: &[String]) -> String {
    items.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ")
}

fn comma_list<T: std::fmt::Display>(items: &[T]) -> String {
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// A key or value: `null`, `"text"` for short printable ASCII, else `N bytes <first 16 in hex>...`
/// (`value=2000 bytes 78787878...`). The cut-off for text: the fixtures show 21 printable bytes
/// as text and 28 as hex; 24 separates them.
fn show_bytes(bytes: Option<&Bytes>) -> String {
    const TEXT_MAX: usize = 24;
    match bytes {
        None => "null".to_owned(),
        Some(b) if b.len() <= TEXT_MAX && b.iter().all(|c| (0x20..0x7f).contains(c)) => {
            format!("\"{}\"", std::str::from_utf8(b).expect("ascii"))
        }
        Some(b) => format!("{} bytes {}{}", b.len(), hex(&b[..b.len().min(16)]), if b.len() > 16 { "..." } else { "" }),
    }
}

/// `PARTIAL trailing message @2: 3 of 19 bytes` for the bytes of a cut entry.
fn show_partial(rest: &[u8]) -> String {
    if rest.len() < 12 {
        return format!("PARTIAL trailing message: {} bytes", rest.len());
    }
    let offset = i64::from_be_bytes(rest[..8].try_into().unwrap());
    let size = i32::from_be_bytes(rest[8..12].try_into().unwrap());
    format!("PARTIAL trailing message @{offset}: {} of {size} bytes", rest.len() - 12)
}

/// A message set, entry by entry: `@0 key="k" value="v"`, `wrapper@2 gzip [...] inner offsets
/// 0,1,2 (inner keys "a","b","c")`, `... CRC MISMATCH`, `PARTIAL trailing message ...`.
///
/// The set is walked one entry at a time with the crate's `MessageSet::entries`, so that an
/// entry whose CRC does not match can be shown and the walk can go on past it; the result is
/// cross-checked against one `entries()` walk of the whole set.
fn show_set(set: &MessageSet) -> Result<String, String> {
    let mut parts = Vec::new();
    let mut rest = set.as_bytes().clone();
    let mut walked = Vec::new();
    let mut crc_failures = 0;
    while !rest.is_empty() {
        let one = MessageSet::from_bytes(rest.clone());
        let mut entries = one.entries();
        match entries.next() {
            None => {
                if entries.partial_trailing_bytes() != rest.len() {
                    return Err(format!(
                        "{} bytes left but {} counted as partial",
                        rest.len(),
                        entries.partial_trailing_bytes()
                    ));
                }
                parts.push(show_partial(&rest));
                break;
            }
            Some(Ok(entry)) => {
                parts.push(show_entry(&entry)?);
                rest.advance(12 + entry.message.encoded_len());
                walked.push(entry);
            }
            Some(Err(Error::Crc { location, stored, computed })) => {
                // The entry iterator stops at a bad CRC; show the message it holds by decoding
                // it with the computed CRC in place of the stored one.
                crc_failures += 1;
                let size =
                    usize::try_from(i32::from_be_bytes(rest[8..12].try_into().unwrap())).map_err(|e| err("size", e))?;
                let mut fixed = rest[12..12 + size].to_vec();
                if fixed[..4] != stored.to_be_bytes() {
                    return Err(format!("Error::Crc stored {stored:#010x} is not the entry's CRC field"));
                }
                fixed[..4].copy_from_slice(&computed.to_be_bytes());
                let message =
                    Message::decode(fixed.into(), MessageLocation::default).map_err(|e| err("Message::decode", e))?;
                parts.push(format!("{} CRC MISMATCH", show_entry(&MessageAndOffset::new(location.offset, message))?));
                rest.advance(12 + size);
            }
            Some(Err(e)) => return Err(err("MessageSet::entries", e)),
        }
    }
    if crc_failures == 0 {
        let mut all = set.entries();
        let whole: Vec<MessageAndOffset> = all.by_ref().collect::<Result<_, _>>().map_err(|e| err("entries", e))?;
        if whole != walked || all.partial_trailing_bytes() != rest.len() {
            return Err("walking the whole set and walking it entry by entry disagree".to_owned());
        }
    }
    Ok(parts.join(", "))
}

/// `24 B: @0 ...` or `empty set`.
fn show_sized_set(set: &MessageSet) -> Result<String, String> {
    if set.is_empty() {
        return Ok("empty set".to_owned());
    }
    Ok(format!("{} B: {}", set.len(), show_set(set)?))
}

fn show_entry(entry: &MessageAndOffset) -> Result<String, String> {
    let m = &entry.message;
    if m.is_wrapper() {
        return show_wrapper(entry);
    }
    Ok(format!("@{} key={} value={}", entry.offset, show_bytes(m.key.as_ref()), show_bytes(m.value.as_ref())))
}

/// The top-level entries of a wrapper's decompressed inner set (decompressed by the crate).
fn inner_entries(entry: &MessageAndOffset) -> Result<Vec<MessageAndOffset>, String> {
    let codec = entry.message.compression().map_err(|e| err("codec", e))?;
    let value = entry.message.value.as_ref().ok_or("wrapper with a null value")?;
    let mut raw = Vec::new();
    compression::decompress(codec, value, MAX_DECOMPRESSED, &mut raw).map_err(|e| err("compression::decompress", e))?;
    let inner = MessageSet::from_bytes(raw.into());
    let mut entries = inner.entries();
    let list = entries.by_ref().collect::<Result<Vec<_>, _>>().map_err(|e| err("inner entries", e))?;
    if entries.partial_trailing_bytes() != 0 {
        return Err(format!("inner set ends in {} bytes of a partial entry", entries.partial_trailing_bytes()));
    }
    Ok(list)
}

fn show_wrapper(entry: &MessageAndOffset) -> Result<String, String> {
    let codec = entry.message.compression().map_err(|e| err("codec", e))?;
    let value = entry.message.value.as_ref().ok_or("wrapper with a null value")?;
    let details = match codec {
        Compression::Gzip => gzip_details(value)?,
        Compression::Snappy => xerial_details(value)?,
        Compression::Lz4 => lz4_details(value)?,
        Compression::None | Compression::Zstd => unreachable!("not a wrapper of a message v0"),
    };
    let inner = inner_entries(entry)?;
    let offsets: Vec<String> = inner.iter().map(|m| m.offset.to_string()).collect();
    let keys: Vec<String> = inner.iter().map(|m| show_bytes(m.message.key.as_ref())).collect();
    Ok(format!(
        "wrapper@{} {} [{details}] inner offsets {} (inner keys {})",
        entry.offset,
        codec.name(),
        offsets.join(","),
        keys.join(",")
    ))
}

/// `gzip header 1f8b08000000000000ff (mtime 0, OS byte 0xff)`: the fixed 10-byte member header.
fn gzip_details(v: &[u8]) -> Result<String, String> {
    if v.len() < 10 || v[..3] != [0x1f, 0x8b, 0x08] {
        return Err(format!("not a gzip member: {}", hex(&v[..v.len().min(10)])));
    }
    let mtime = u32::from_le_bytes(v[4..8].try_into().unwrap());
    Ok(format!("gzip header {} (mtime {mtime}, OS byte 0x{:02x})", hex(&v[..10]), v[9]))
}

/// The uncompressed length a raw snappy block starts with (a little-endian base-128 varint).
fn snappy_uncompressed_len(block: &[u8]) -> Result<u64, String> {
    let mut n = 0u64;
    for (i, b) in block.iter().take(5).enumerate() {
        n |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(n);
        }
    }
    Err("bad snappy length varint".to_owned())
}

/// `xerial header 82534e41505059000000000100000001 (version 1, compatible 1), 1 block(s) 88->153 B`.
fn xerial_details(v: &[u8]) -> Result<String, String> {
    if v.len() < 16 || v[..8] != *b"\x82SNAPPY\x00" {
        return Err(format!("not an xerial stream: {}", hex(&v[..v.len().min(16)])));
    }
    let be = |at: usize| i32::from_be_bytes(v[at..at + 4].try_into().unwrap());
    let mut blocks = Vec::new();
    let mut at = 16;
    while at < v.len() {
        if at + 4 > v.len() {
            return Err("xerial block length cut".to_owned());
        }
        let len = usize::try_from(be(at)).map_err(|e| err("xerial block length", e))?;
        let block = v.get(at + 4..at + 4 + len).ok_or("xerial block cut")?;
        blocks.push(format!("{len}->{} B", snappy_uncompressed_len(block)?));
        at += 4 + len;
    }
    Ok(format!(
        "xerial header {} (version {}, compatible {}), {} block(s) {}",
        hex(&v[..16]),
        be(8),
        be(12),
        blocks.len(),
        blocks.join(", ")
    ))
}

/// `lz4 frame header 04224d1860401a (FLG 0x60, BD 0x40, HC 0x1a = kafka-0.8 (xxh32 over
/// magic+descriptor)), 1 block(s)`: the header checksum is classified by computing both forms.
fn lz4_details(v: &[u8]) -> Result<String, String> {
    if v.len() < 7 || v[..4] != [0x04, 0x22, 0x4d, 0x18] {
        return Err(format!("not an lz4 frame: {}", hex(&v[..v.len().min(7)])));
    }
    let (flg, bd) = (v[4], v[5]);
    let descriptor_end = if flg & 0x08 != 0 { 14 } else { 6 };
    let hc = *v.get(descriptor_end).ok_or("lz4 header cut")?;
    let kafka08 = xxh32(&v[..descriptor_end], 0).to_le_bytes()[1];
    let standard = xxh32(&v[4..descriptor_end], 0).to_le_bytes()[1];
    let kind = if hc == kafka08 {
        "kafka-0.8 (xxh32 over magic+descriptor)"
    } else if hc == standard {
        "standard (xxh32 over descriptor only)"
    } else {
        return Err(format!("lz4 header checksum 0x{hc:02x} is neither 0x{kafka08:02x} nor 0x{standard:02x}"));
    };
    let mut blocks = 0;
    let mut at = descriptor_end + 1;
    loop {
        let word = u32::from_le_bytes(v.get(at..at + 4).ok_or("lz4 block size cut")?.try_into().unwrap());
        at += 4;
        if word == 0 {
            break;
        }
        blocks += 1;
        at += (word & 0x7fff_ffff) as usize + if flg & 0x10 != 0 { 4 } else { 0 };
    }
    Ok(format!(
        "lz4 frame header {} (FLG 0x{flg:02x}, BD 0x{bd:02x}, HC 0x{hc:02x} = {kind}), {blocks} block(s)",
        hex(&v[..=descriptor_end])
    ))
}

fn summarize_request(header: &RequestHeader, request: &AnyRequest) -> Result<String, String> {
    Ok(match request {
        AnyRequest::Produce(r) => {
            let mut parts = Vec::new();
            for t in &r.topics {
                for p in &t.partitions {
                    parts.push(format!("{}/{} {}", t.topic, p.partition, show_sized_set(&p.message_set)?));
                }
            }
            format!("acks {} timeout {}; {}", r.required_acks, r.timeout, parts.join("; "))
        }
        AnyRequest::Fetch(r) => {
            let parts: Vec<String> = r
                .topics
                .iter()
                .flat_map(|t| {
                    t.partitions.iter().map(move |p| {
                        format!("{}/{} offset {} max_bytes {}", t.topic, p.partition, p.fetch_offset, p.max_bytes)
                    })
                })
                .collect();
            format!(
                "max_wait {} min_bytes {} replica {}; {}",
                r.max_wait_time,
                r.min_bytes,
                r.replica_id,
                parts.join("; ")
            )
        }
        AnyRequest::Offsets(r) => {
            // The summary has no replica id; every capture sent -1 (annotated/*.txt).
            if r.replica_id != -1 {
                return Err(format!("replica_id {}", r.replica_id));
            }
            r.topics
                .iter()
                .flat_map(|t| {
                    t.partitions.iter().map(move |p| {
                        format!("{}/{} time {} max {}", t.topic, p.partition, p.time, p.max_number_of_offsets)
                    })
                })
                .collect::<Vec<_>>()
                .join("; ")
        }
        AnyRequest::Metadata(r) if r.wants_all_topics(0) => "topics [] (= all)".to_owned(),
        AnyRequest::Metadata(r) => {
            format!("topics [{}]", quoted_list(&r.topic_names().map(str::to_owned).collect::<Vec<_>>()))
        }
        AnyRequest::OffsetCommit(r) => {
            let v1 = header.api_version >= 1;
            let group = if v1 {
                format!("group '{}' generation {} consumer_id '{}'", r.group_id, r.group_generation_id, r.consumer_id)
            } else {
                format!("group '{}'", r.group_id)
            };
            let parts: Vec<String> = r
                .topics
                .iter()
                .flat_map(|t| {
                    t.partitions.iter().map(move |p| {
                        if v1 {
                            format!(
                                "{}/{} offset {} timestamp {} metadata '{}'",
                                t.topic,
                                p.partition,
                                p.offset,
                                p.timestamp,
                                text(&p.metadata)
                            )
                        } else {
                            format!("{}/{} offset {} metadata '{}'", t.topic, p.partition, p.offset, text(&p.metadata))
                        }
                    })
                })
                .collect();
            let parts = if parts.is_empty() { "no topics".to_owned() } else { parts.join("; ") };
            format!("{group}; {parts}")
        }
        AnyRequest::OffsetFetch(r) => {
            let topics = if r.topics.as_ref().is_none_or(Vec::is_empty) {
                "no topics".to_owned()
            } else {
                r.topics
                    .iter()
                    .flatten()
                    .map(|t| format!("{} [{}]", t.topic, comma_list(&t.partitions)))
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            format!("group '{}'; {topics}", r.group_id)
        }
        AnyRequest::ConsumerMetadata(r) => format!("group '{}'", r.key),
        other => return Err(format!("unexpected request {other:?}")),
    })
}

fn summarize_produce_response(r: &ProduceResponse) -> Result<String, String> {
    let parts: Vec<String> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| format!("{}/{} {} offset {}", t.topic, p.partition, err_code(p.error_code), p.offset))
        })
        .collect();
    Ok(parts.join("; "))
}

fn summarize_fetch_response(r: &FetchResponse) -> Result<String, String> {
    let mut parts = Vec::new();
    for t in &r.topics {
        for p in &t.partitions {
            parts.push(format!(
                "{}/{} {} hw {}; {}",
                t.topic,
                p.partition,
                err_code(p.error_code),
                p.high_watermark,
                show_sized_set(&p.message_set)?
            ));
        }
    }
    Ok(parts.join("; "))
}

fn summarize_offsets_response(r: &OffsetsResponse) -> String {
    r.topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                format!("{}/{} {} offsets [{}]", t.topic, p.partition, err_code(p.error_code), comma_list(&p.offsets))
            })
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn summarize_metadata_response(r: &MetadataResponse) -> String {
    let brokers: Vec<String> = r.brokers.iter().map(|b| format!("{}@{}:{}", b.node_id, b.host, b.port)).collect();
    let topics: Vec<String> = r
        .topics
        .iter()
        .map(|t| {
            let partitions = if t.partitions.is_empty() {
                "no partitions".to_owned()
            } else {
                // Partition errors are shown by number only.
                t.partitions
                    .iter()
                    .map(|p| {
                        format!(
                            "p{} err {} leader {} replicas [{}] isr [{}]",
                            p.partition,
                            p.error_code,
                            p.leader,
                            comma_list(&p.replicas),
                            comma_list(&p.isr)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            format!("{} {}: {partitions}", t.name(), err_code(t.error_code))
        })
        .collect();
    format!("brokers [{}]; {} topic(s): {}", brokers.join(", "), r.topics.len(), topics.join(" / "))
}

/// A nullable string as the summaries show it (null as `<null>`; Kafka 0.8.2 never sends one).
fn text(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("<null>")
}

fn summarize_offset_commit_response(r: &OffsetCommitResponse) -> String {
    r.topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| format!("{}/{} {}", t.topic, p.partition, err_code(p.error_code)))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn summarize_offset_fetch_response(r: &OffsetFetchResponse) -> String {
    if r.topics.is_empty() {
        return "no topics".to_owned();
    }
    r.topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                format!(
                    "{}/{} offset {} metadata '{}' {}",
                    t.topic,
                    p.partition,
                    p.offset,
                    text(&p.metadata),
                    err_code(p.error_code)
                )
            })
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn summarize_consumer_metadata_response(r: &ConsumerMetadataResponse) -> String {
    format!("{} coordinator {} host '{}' port {}", err_code(r.error_code), r.node_id, r.host, r.port)
}

// ---------------------------------------------------------------------------------------------
// Every fixture
// ---------------------------------------------------------------------------------------------

/// Checks one fixture; returns the number of frames checked (1 or 2) or every problem found.
fn check_fixture(fx: &Fixture) -> Result<usize, Vec<String>> {
    let mut problems = Vec::new();
    let raw = request_bytes(&fx.name);
    let (header, request) = decode_request(fx, &raw).map_err(|e| vec![format!("request: {e}")])?;
    match summarize_request(&header, &request) {
        Ok(ours) if ours == fx.request => {}
        Ok(ours) => {
            problems.push(format!("request summary differs\n    expected: {}\n    actual:   {ours}", fx.request))
        }
        Err(e) => problems.push(format!("request summary: {e}")),
    }
    let mut frames = 1;
    match (read(&format!("{}.resp.bin", fx.name)), &fx.response) {
        (None, None) => {
            if expects_response(&request) {
                problems.push("no response recorded, yet the request expects one".to_owned());
            }
            if fx.resp_bytes.is_some() {
                problems.push("index.json gives resp_bytes for a missing response".to_owned());
            }
        }
        (Some(_), None) => problems.push("a .resp.bin exists, but index.json says no response".to_owned()),
        (None, Some(_)) => problems.push(".resp.bin missing".to_owned()),
        (Some(resp), Some(expected)) => {
            frames += 1;
            if !expects_response(&request) {
                problems.push("a response was recorded for a request that expects none".to_owned());
            }
            if Some(resp.len()) != fx.resp_bytes {
                problems.push(format!("response is {} bytes, index.json says {:?}", resp.len(), fx.resp_bytes));
            }
            match response_summary(&header, &request, &resp) {
                Ok(ours) if &ours == expected => {}
                Ok(ours) => {
                    problems.push(format!("response summary differs\n    expected: {expected}\n    actual:   {ours}"))
                }
                Err(e) => problems.push(format!("response: {e}")),
            }
        }
    }
    if problems.is_empty() {
        Ok(frames)
    } else {
        Err(problems)
    }
}

#[test]
fn every_fixture_round_trips_and_matches_its_index_json_summaries() {
    let fixtures = index();
    assert_eq!(fixtures.len(), 82, "fixtures in index.json");
    let mut frames = 0;
    let mut failures = Vec::new();
    for fx in &fixtures {
        match check_fixture(fx) {
            Ok(n) => frames += n,
            Err(problems) => failures.push(format!("{}:\n  {}", fx.name, problems.join("\n  "))),
        }
    }
    assert!(failures.is_empty(), "{} of {} fixtures fail:\n{}", failures.len(), fixtures.len(), failures.join("\n"));
    let responses = fixtures.iter().filter(|f| f.response.is_some()).count();
    assert_eq!((fixtures.len(), responses), (82, 80), "request and response frames");
    assert_eq!(frames, 162, "frames compared");
}

#[test]
fn the_data_directory_holds_exactly_the_frames_of_index_json() {
    let mut expected: Vec<String> = index()
        .iter()
        .flat_map(|f| {
            let resp = f.response.as_ref().map(|_| format!("{}.resp.bin", f.name));
            std::iter::once(format!("{}.req.bin", f.name)).chain(resp)
        })
        .collect();
    let mut found: Vec<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".bin"))
        .collect();
    expected.sort();
    found.sort();
    assert_eq!(found, expected);
    assert_eq!(found.len(), 162);
}

// ---------------------------------------------------------------------------------------------
// Specific facts
// ---------------------------------------------------------------------------------------------

fn offsets(messages: &[MessageAndOffset]) -> Vec<i64> {
    messages.iter().map(|m| m.offset).collect()
}

fn keys(messages: &[MessageAndOffset]) -> Vec<String> {
    messages.iter().map(|m| String::from_utf8(m.message.key.as_ref().expect("a key").to_vec()).unwrap()).collect()
}

/// The only partition of a one-partition fetch response, with its topic.
fn only_partition(response: &FetchResponse) -> (&str, &gregor_protocol::messages::FetchResponsePartition) {
    assert_eq!(response.topics.len(), 1);
    assert_eq!(response.topics[0].partitions.len(), 1);
    (&response.topics[0].topic, &response.topics[0].partitions[0])
}

#[test]
fn a_fetch_from_inside_a_compressed_wrapper_drops_the_inner_offsets_below_it() {
    for (name, codec) in [
        ("fetch_v0_gzip_mid_set", Compression::Gzip),
        ("fetch_v0_snappy_mid_set", Compression::Snappy),
        ("fetch_v0_lz4_mid_set", Compression::Lz4),
    ] {
        let (request, response) = fetch_fixture(name);
        assert_eq!(request.topics[0].partitions[0].fetch_offset, 4, "{name}");
        let (topic, p) = only_partition(&response);
        // The broker sends the whole wrapper (offset 5) holding inner offsets 3, 4, 5.
        let top: Vec<MessageAndOffset> = p.message_set.entries().collect::<Result<_, _>>().unwrap();
        assert_eq!(offsets(&top), [5], "{name}");
        assert_eq!(top[0].message.compression().unwrap(), codec, "{name}");
        let got = p.messages(topic, 4).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(offsets(&got.messages), [4, 5], "{name}: offset 3 must be dropped");
        assert_eq!(got.skipped, 1, "{name}");
        assert_eq!(got.partial_trailing_bytes, 0, "{name}");
        assert_eq!(got.next_offset(), Some(6), "{name}");
        assert_eq!(keys(&got.messages), [format!("{topic}-k4"), format!("{topic}-k5")], "{name}");
    }
}

#[test]
fn a_fetch_cut_by_max_bytes_keeps_the_whole_messages_and_counts_the_fragment() {
    let (_, response) = fetch_fixture("fetch_v0_partial_message");
    let (topic, p) = only_partition(&response);
    assert_eq!(p.message_set.len(), 83);
    let got = p.messages(topic, 0).unwrap();
    assert_eq!(offsets(&got.messages), [0, 1]);
    assert_eq!(got.partial_trailing_bytes, 15, "offset 8 + size 4 + 3 of the 19 message bytes");
    assert_eq!(
        got.messages[0].message,
        Message::new(Some(Bytes::from_static(b"key-0")), Some(Bytes::from_static(b"hello")))
    );
    assert_eq!(got.messages[1].message, Message::new(None, Some(Bytes::from_static(b"no key"))));
    assert_eq!(got.next_offset(), Some(2));
}

#[test]
fn a_fetch_smaller_than_the_first_message_is_message_larger_than_fetch() {
    let (_, response) = fetch_fixture("fetch_v0_max_bytes_too_small");
    let (topic, p) = only_partition(&response);
    assert_eq!((p.error_code, p.high_watermark, p.message_set.len()), (0, 6, 20));
    match p.messages(topic, 0) {
        Err(Error::MessageLargerThanFetch { location, entry_size, fetched_bytes }) => {
            assert_eq!(location, MessageLocation { topic: Some("plain".into()), partition: Some(0), offset: 0 });
            // offset 8 + size 4 + the 24-byte message "key-0"/"hello"
            assert_eq!(entry_size, Some(12 + 24));
            assert_eq!(fetched_bytes, 20);
        }
        other => panic!("expected MessageLargerThanFetch, got {other:?}"),
    }
}

#[test]
fn a_produce_with_a_bad_crc_decodes_but_its_message_set_fails_the_crc_check() {
    let request = produce_fixture("produce_v0_bad_crc");
    assert_eq!((request.required_acks, request.timeout), (1, 5000));
    assert_eq!(request.topics.len(), 1);
    assert_eq!(request.topics[0].topic, "plain");
    let p = &request.topics[0].partitions[0];
    assert_eq!((p.partition, p.message_set.len()), (0, 34));
    match p.message_set.decode(&DecodeOptions::fetched("plain", 0, 0)) {
        Err(Error::Crc { location, stored, computed }) => {
            assert_eq!(location, MessageLocation { topic: Some("plain".into()), partition: Some(0), offset: 0 });
            // annotated/produce_v0_bad_crc.txt: crc 0x743f519a, computed 0x8bc0ae65
            assert_eq!((stored, computed), (0x743f_519a, 0x8bc0_ae65));
        }
        other => panic!("expected Error::Crc, got {other:?}"),
    }
    // The broker agreed: 2 InvalidMessage.
    let fx = fixture("produce_v0_bad_crc");
    let response = decode_response::<ProduceRequest>(0, fx.correlation_id, &response_bytes(&fx.name)).unwrap();
    assert_eq!(response.topics[0].partitions[0].error_code, 2);
}

#[test]
fn mixed_codecs_come_back_as_five_messages_in_one_snappy_wrapper() {
    let (_, response) = fetch_fixture("fetch_v0_mixed_codecs");
    let (topic, p) = only_partition(&response);
    let top: Vec<MessageAndOffset> = p.message_set.entries().collect::<Result<_, _>>().unwrap();
    assert_eq!(top.len(), 1);
    assert_eq!((top[0].offset, top[0].message.compression().unwrap()), (4, Compression::Snappy));
    let got = p.messages(topic, 0).unwrap();
    assert_eq!(offsets(&got.messages), [0, 1, 2, 3, 4]);
    assert_eq!(keys(&got.messages), ["m0", "m1", "m2", "m3", "m4"]);
    assert!(got.messages.iter().all(|m| !m.message.is_wrapper()));
    assert_eq!(got.messages[0].message.value.as_deref(), Some(&b"plain-in-mixed"[..]));
}

#[test]
fn an_lz4_wrapper_with_the_standard_header_checksum_still_decompresses() {
    let request = produce_fixture("produce_v0_lz4_standard_hc");
    let set = &request.topics[0].partitions[0].message_set;
    let top: Vec<MessageAndOffset> = set.entries().collect::<Result<_, _>>().unwrap();
    assert_eq!(top.len(), 1);
    let value = top[0].message.value.as_ref().unwrap();
    // HC 0x82 is the LZ4 specification's form; Kafka 0.8 writes 0x1a (and rejected this frame).
    assert_eq!(value[..7], [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82]);
    let mut raw = Vec::new();
    compression::decompress(Compression::Lz4, value, MAX_DECOMPRESSED, &mut raw).unwrap();
    assert_eq!(raw.len(), 60);
    let got = set.decode(&DecodeOptions::default()).unwrap();
    assert_eq!(offsets(&got.messages), [0]);
    assert_eq!(got.messages[0].message.key.as_deref(), Some(&b"std-k0"[..]));
    assert_eq!(got.messages[0].message.value.as_deref(), Some(&b"lz4 standard header checksum"[..]));
}

#[test]
fn every_wrapper_the_broker_stored_holds_absolute_offsets_ending_at_its_own() {
    let mut wrappers = 0;
    for fx in index().iter().filter(|f| f.api_key == 1 && f.response.is_some()) {
        let (request, response) = fetch_fixture(&fx.name);
        for t in &response.topics {
            for p in &t.partitions {
                let fetch_offset = request
                    .topics
                    .iter()
                    .find(|rt| rt.topic == t.topic)
                    .and_then(|rt| rt.partitions.iter().find(|rp| rp.partition == p.partition))
                    .map(|rp| rp.fetch_offset)
                    .unwrap_or_else(|| panic!("{}: {}/{} was not asked for", fx.name, t.topic, p.partition));
                let mut previous = None::<i64>;
                let mut expanded = Vec::new();
                for entry in p.message_set.entries() {
                    let entry = entry.unwrap_or_else(|e| panic!("{}: {e}", fx.name));
                    if !entry.message.is_wrapper() {
                        expanded.push(entry.offset);
                        previous = Some(entry.offset);
                        continue;
                    }
                    wrappers += 1;
                    let inner =
                        inner_entries(&entry).unwrap_or_else(|e| panic!("{} wrapper@{}: {e}", fx.name, entry.offset));
                    let inner_offsets = offsets(&inner);
                    let first = previous.map_or(inner_offsets[0], |o| o + 1);
                    let want: Vec<i64> = (first..=entry.offset).collect();
                    assert_eq!(
                        inner_offsets, want,
                        "{} wrapper@{}: absolute, consecutive, ending at the wrapper's offset",
                        fx.name, entry.offset
                    );
                    assert!(inner.iter().all(|m| !m.message.is_wrapper()), "{}: nested wrapper", fx.name);
                    expanded.extend(inner_offsets);
                    previous = Some(entry.offset);
                }
                // The crate's own expansion agrees, minus what lies below the fetch offset.
                if !p.message_set.is_empty() && fx.name != "fetch_v0_max_bytes_too_small" {
                    let got = p.messages(&t.topic, fetch_offset).unwrap_or_else(|e| panic!("{}: {e}", fx.name));
                    let kept: Vec<i64> = expanded.iter().copied().filter(|&o| o >= fetch_offset).collect();
                    assert_eq!(offsets(&got.messages), kept, "{}", fx.name);
                    assert_eq!(got.skipped, expanded.len() - kept.len(), "{}", fx.name);
                }
            }
        }
    }
    // gzip 2, five_partitions 2, gzip_mid 1, snappy 2, snappy_mid 1, lz4 2, lz4_mid 1, mixed 1,
    // multiblock 2, java 3.
    assert_eq!(wrappers, 17);
}

#[test]
fn produced_inner_sets_survive_our_compression_and_wrapping() {
    for (name, codec) in [
        ("produce_v0_gzip_set1", Compression::Gzip),
        ("produce_v0_snappy_set1", Compression::Snappy),
        ("produce_v0_lz4_set1", Compression::Lz4),
    ] {
        let request = produce_fixture(name);
        let set = &request.topics[0].partitions[0].message_set;
        let top: Vec<MessageAndOffset> = set.entries().collect::<Result<_, _>>().unwrap();
        assert_eq!(top.len(), 1, "{name}");
        let captured_value = top[0].message.value.as_ref().unwrap();
        let mut inner_raw = Vec::new();
        compression::decompress(codec, captured_value, MAX_DECOMPRESSED, &mut inner_raw).unwrap();
        let inner = inner_entries(&top[0]).unwrap();
        assert_eq!(offsets(&inner), [0, 1, 2], "{name}");

        // compression::compress, then back.
        let mut ours = Vec::new();
        compression::compress(codec, &inner_raw, &mut ours).unwrap();
        let mut back = Vec::new();
        compression::decompress(codec, &ours, MAX_DECOMPRESSED, &mut back).unwrap();
        assert_eq!(back, inner_raw, "{name}: compress/decompress");

        // MessageSet::wrap, then back through MessageSet::decode.
        let wrapper = MessageSet::wrap(&inner, codec).unwrap();
        assert_eq!((wrapper.offset, wrapper.message.key.as_ref()), (2, None), "{name}");
        assert_eq!(wrapper.message.compression().unwrap(), codec, "{name}");
        let mut unwrapped = Vec::new();
        compression::decompress(codec, wrapper.message.value.as_ref().unwrap(), MAX_DECOMPRESSED, &mut unwrapped)
            .unwrap();
        assert_eq!(unwrapped, inner_raw, "{name}: our wrapper holds the captured inner set byte for byte");
        let rebuilt = MessageSet::encode(&[wrapper]).unwrap();
        assert_eq!(rebuilt.decode(&DecodeOptions::default()).unwrap().messages, inner, "{name}");
        // Our compressed bytes may differ from the captured ones (another compressor), but both
        // wrappers decode to the same messages.
        assert_eq!(set.decode(&DecodeOptions::default()).unwrap().messages, inner, "{name}");
    }
}

#[test]
fn our_lz4_wrapper_starts_with_the_header_the_broker_accepted() {
    let request = produce_fixture("produce_v0_lz4_set1");
    let captured = request.topics[0].partitions[0].message_set.entries().next().unwrap().unwrap();
    let captured_value = captured.message.value.as_ref().unwrap();
    const ACCEPTED: [u8; 7] = [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x1a];
    assert_eq!(captured_value[..7], ACCEPTED, "the header of the frame the broker took (err 0)");
    let inner = inner_entries(&captured).unwrap();
    let ours = MessageSet::wrap(&inner, Compression::Lz4).unwrap();
    assert_eq!(ours.message.value.as_ref().unwrap()[..7], ACCEPTED);
    let mut direct = Vec::new();
    compression::compress(Compression::Lz4, b"anything", &mut direct).unwrap();
    assert_eq!(direct[..7], ACCEPTED);
    let details = lz4_details(ours.message.value.as_ref().unwrap()).unwrap();
    assert!(details.contains("HC 0x1a = kafka-0.8"), "{details}");
}

#[test]
fn a_message_with_null_key_and_null_value_has_kafkas_crc() {
    let mut buf = BytesMut::new();
    Message::new(None, None).encode(&mut buf).unwrap();
    assert_eq!(buf[..], [0xa7, 0xec, 0x68, 0x03, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    let back = Message::decode(buf.freeze(), MessageLocation::default).unwrap();
    assert_eq!(back, Message::new(None, None));
}

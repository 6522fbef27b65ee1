//! Cross-checks the codec against frames, message sets and compressed values written OFFLINE by
//! kafka-python 2.0.2, an independent implementation (`scripts/kafka_python_fixtures.py`;
//! fixtures and `manifest.json` in `tests/data/kafka-python/`).
//!
//! For every frame in the manifest: split it as exactly one frame, decode header and body with
//! every byte used, render our decoded value as JSON with the manifest's field names and compare
//! it field by field with the manifest's `value` (a mismatch names the file and the JSON path),
//! then re-encode and compare byte for byte. For every inner message set: our encoding of the
//! inner messages, our decompression of the wrapper and our own compressors are checked against
//! kafka-python's bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use gregor_protocol::compression::{self, Compression};
use gregor_protocol::frame::{self, ApiKey, RequestHeader};
use gregor_protocol::message::{DecodeOptions, Message, MessageAndOffset, MessageSet};
use gregor_protocol::messages::{
    AnyRequest, ConsumerMetadataRequest, ConsumerMetadataResponse, FetchPartition, FetchRequest, FetchResponse,
    FetchResponsePartition, FetchResponseTopic, FetchTopic, MetadataRequest, MetadataResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse, OffsetsPartition, OffsetsRequest, OffsetsResponse,
    OffsetsResponsePartition, OffsetsResponseTopic, OffsetsTopic, ProducePartition, ProduceRequest, ProduceResponse,
    ProduceResponsePartition, ProduceResponseTopic, ProduceTopic, TopicPartitions, DEFAULT_CONSUMER_ID,
    DEFAULT_GENERATION_ID, DEFAULT_TIMESTAMP,
};
use gregor_protocol::{Encode, Error, Request};
use serde_json::{json, Map, Value};

/// Manifest keys that are deliberately not rendered from our value, with the reason. Their
/// content is checked separately where it says something about our codec
/// (see [`check_codec_info`]).
const NOT_RENDERED: &[(&str, &str)] =
    &[("codec_info", "describes kafka-python's compressor output; checked against ours in check_codec_info")];

/// Far above any fixture; only guards against a corrupt size field.
const MAX_FRAME: usize = 16 << 20;
const MAX_DECOMPRESSED: usize = 64 << 20;

// --------------------------------------------------------------------------------------------
// Fixture access
// --------------------------------------------------------------------------------------------

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/kafka-python")
}

fn read(name: &str) -> Vec<u8> {
    let path = dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn manifest() -> Vec<Value> {
    let text = read("manifest.json");
    let v: Value = serde_json::from_slice(&text).expect("manifest.json is JSON");
    v.as_array().expect("manifest.json is a list").clone()
}

fn str_field<'a>(entry: &'a Value, key: &str) -> &'a str {
    entry[key].as_str().unwrap_or_else(|| panic!("manifest entry {entry:.200}: {key} is not a string"))
}

fn int_field(entry: &Value, key: &str) -> i64 {
    entry[key].as_i64().unwrap_or_else(|| panic!("{}: manifest {key} is not an integer", entry["file"]))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex length");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// Panics with the first differing byte when `ours` differs from `theirs`.
fn assert_same_bytes(file: &str, what: &str, ours: &[u8], theirs: &[u8]) {
    if ours == theirs {
        return;
    }
    let at = ours.iter().zip(theirs).position(|(a, b)| a != b).unwrap_or(ours.len().min(theirs.len()));
    let show = |b: &[u8]| hex(&b[at.min(b.len())..(at + 16).min(b.len())]);
    panic!(
        "{file}: {what}: {} bytes ours vs {} bytes kafka-python, first difference at byte {at}: ours {}.. vs kafka-python {}..",
        ours.len(),
        theirs.len(),
        show(ours),
        show(theirs)
    );
}

// --------------------------------------------------------------------------------------------
// Generic JSON comparison
// --------------------------------------------------------------------------------------------

/// Collects every difference between our rendering and the manifest's value, by JSON path.
fn diff(path: &str, ours: &Value, theirs: &Value, out: &mut Vec<String>) {
    match (ours, theirs) {
        (Value::Object(o), Value::Object(t)) => {
            for (k, tv) in t {
                let p = format!("{path}.{k}");
                if NOT_RENDERED.iter().any(|(n, _)| n == k) {
                    continue;
                }
                match o.get(k) {
                    Some(ov) => diff(&p, ov, tv, out),
                    None => out.push(format!("{p}: in the manifest ({tv}) but not rendered from our value")),
                }
            }
            for (k, ov) in o {
                if !t.contains_key(k) {
                    out.push(format!("{path}.{k}: rendered from our value ({ov}) but absent from the manifest"));
                }
            }
        }
        (Value::Array(o), Value::Array(t)) => {
            if o.len() != t.len() {
                out.push(format!("{path}: {} elements ours vs {} in the manifest", o.len(), t.len()));
            }
            for (i, (ov, tv)) in o.iter().zip(t).enumerate() {
                diff(&format!("{path}[{i}]"), ov, tv, out);
            }
        }
        _ if ours == theirs => {}
        _ => out.push(format!("{path}: ours {ours} vs manifest {theirs}")),
    }
}

/// The manifest value without the keys of [`NOT_RENDERED`].
fn strip(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !NOT_RENDERED.iter().any(|(n, _)| n == k))
                .map(|(k, v)| (k.clone(), strip(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip).collect()),
        other => other.clone(),
    }
}

fn assert_matches_manifest(file: &str, what: &str, ours: &Value, theirs: &Value) {
    let mut diffs = Vec::new();
    diff("value", ours, theirs, &mut diffs);
    assert!(
        diffs.is_empty(),
        "{file}: {what} differs from the kafka-python manifest at {} path(s):\n  {}",
        diffs.len(),
        diffs.join("\n  ")
    );
    assert_eq!(ours, &strip(theirs), "{file}: {what}");
}

// --------------------------------------------------------------------------------------------
// Rendering our decoded values with the manifest's field names
// --------------------------------------------------------------------------------------------

/// A compressed wrapper met while rendering a frame, in wire order.
#[derive(Debug)]
struct Wrapper {
    /// Where it is, for messages.
    location: String,
    offset: i64,
    codec: Compression,
    attributes: i8,
    /// The wrapper's value: kafka-python's compressor output.
    compressed: Bytes,
    /// Our decompression of it.
    raw: Vec<u8>,
    /// The inner entries read from `raw`.
    inner: Vec<MessageAndOffset>,
}

/// State while rendering one frame.
#[derive(Debug)]
struct Ctx {
    file: String,
    wrappers: Vec<Wrapper>,
}

impl Ctx {
    fn new(file: &str) -> Ctx {
        Ctx { file: file.to_owned(), wrappers: Vec::new() }
    }

    /// The name the fixture script gives the inner set of wrapper `k` of `total`.
    fn inner_name(&self, k: usize, total: usize) -> String {
        let stem = self.file.strip_suffix(".bin").expect("fixture names end in .bin");
        if total == 1 {
            format!("{stem}.inner.bin")
        } else {
            format!("{stem}.inner.{k}.bin")
        }
    }
}

fn opt_hex(b: Option<&Bytes>) -> Value {
    b.map_or(Value::Null, |b| Value::String(hex(b)))
}

/// One message as the manifest's MESSAGE object (without the wrapper keys).
fn render_message(file: &str, offset: i64, m: &Message) -> Map<String, Value> {
    // The CRC and magic are not fields of our Message: Message::decode verified that the stored
    // CRC is that of the bytes and that magic is 0, so re-encoding gives them back (and the frame
    // re-encoding below is compared byte for byte with the file).
    let mut buf = BytesMut::new();
    m.encode(&mut buf).unwrap_or_else(|e| panic!("{file}: encoding message at offset {offset}: {e}"));
    assert_eq!(buf.len(), m.encoded_len(), "{file}: encoded_len of message at offset {offset}");
    let crc = u32::from_be_bytes(buf[..4].try_into().expect("4 bytes"));
    let codec = m.compression().unwrap_or_else(|e| panic!("{file}: message at offset {offset}: {e}"));
    let v = json!({
        "offset": offset,
        "message_size": buf.len(),
        "crc": crc,
        "magic": buf[4] as i8,
        "attributes": m.attributes,
        "codec": codec.name(),
        "key_hex": opt_hex(m.key.as_ref()),
        "value_hex": opt_hex(m.value.as_ref()),
    });
    let Value::Object(map) = v else { unreachable!() };
    map
}

/// A message set as the manifest's MESSAGE_SET keys: `message_set_size`,
/// `partial_trailing_bytes`, `messages` (wrappers with `inner_file`, `inner_message_set_size`
/// and `inner` from our decompression).
fn render_set(set: &MessageSet, ctx: &mut Ctx, location: &str) -> Map<String, Value> {
    let file = ctx.file.clone();
    let mut entries = set.entries();
    let mut messages = Vec::new();
    // What MessageSet::decode must give: the plain messages and the inner ones, in order.
    let mut flattened = Vec::new();
    for entry in entries.by_ref() {
        let entry = entry.unwrap_or_else(|e| panic!("{file}: {location}: {e}"));
        let mut m = render_message(&file, entry.offset, &entry.message);
        let codec = entry.message.compression().expect("checked by render_message");
        if codec == Compression::None {
            flattened.push(entry.clone());
        } else {
            let where_ = format!("{location} {codec} wrapper at offset {}", entry.offset);
            let compressed = entry.message.value.clone().unwrap_or_else(|| panic!("{file}: {where_}: null value"));
            let mut raw = Vec::new();
            compression::decompress(codec, &compressed, MAX_DECOMPRESSED, &mut raw)
                .unwrap_or_else(|e| panic!("{file}: {where_}: our {codec} decompress failed: {e}"));
            let inner_set = MessageSet::from_bytes(Bytes::from(raw.clone()));
            let mut inner_entries = inner_set.entries();
            let inner: Vec<MessageAndOffset> = inner_entries
                .by_ref()
                .map(|e| e.unwrap_or_else(|e| panic!("{file}: {where_}: inner set: {e}")))
                .collect();
            assert_eq!(
                inner_entries.partial_trailing_bytes(),
                0,
                "{file}: {where_}: inner set ends in a partial entry"
            );
            let rendered: Vec<Value> =
                inner.iter().map(|e| Value::Object(render_message(&file, e.offset, &e.message))).collect();
            m.insert("inner_file".into(), json!(ctx.wrappers.len())); // an index until every wrapper is known
            m.insert("inner_message_set_size".into(), json!(raw.len()));
            m.insert("inner".into(), Value::Array(rendered));
            flattened.extend(inner.iter().cloned());
            ctx.wrappers.push(Wrapper {
                location: where_,
                offset: entry.offset,
                codec,
                attributes: entry.message.attributes,
                compressed,
                raw,
                inner,
            });
        }
        messages.push(Value::Object(m));
    }
    let partial = entries.partial_trailing_bytes();

    // The full decoder must agree with the entry walk.
    match set.decode(&DecodeOptions::default()) {
        Ok(d) => {
            assert_eq!(d.messages, flattened, "{file}: {location}: MessageSet::decode vs entries + decompress");
            assert_eq!(
                d.partial_trailing_bytes, partial,
                "{file}: {location}: DecodedMessages::partial_trailing_bytes"
            );
            assert_eq!(d.skipped, 0, "{file}: {location}");
        }
        Err(Error::MessageLargerThanFetch { fetched_bytes, .. }) if messages.is_empty() && partial == set.len() => {
            assert_eq!(fetched_bytes, set.len(), "{file}: {location}");
        }
        Err(e) => panic!("{file}: {location}: MessageSet::decode: {e}"),
    }

    let mut out = Map::new();
    out.insert("message_set_size".into(), json!(set.len()));
    out.insert("partial_trailing_bytes".into(), json!(partial));
    out.insert("messages".into(), Value::Array(messages));
    out
}

/// Replaces the wrapper indexes left by [`render_set`] with the inner file names.
fn name_inner_files(v: &mut Value, ctx: &Ctx) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Number(n)) = m.get("inner_file") {
                let k = n.as_u64().expect("index") as usize;
                m.insert("inner_file".into(), json!(ctx.inner_name(k, ctx.wrappers.len())));
            }
            m.values_mut().for_each(|v| name_inner_files(v, ctx));
        }
        Value::Array(a) => a.iter_mut().for_each(|v| name_inner_files(v, ctx)),
        _ => {}
    }
}

/// A topic-keyed array entry: a topic name and its per-partition entries.
trait TopicEntry {
    type Partition;
    fn name(&self) -> &str;
    fn partitions(&self) -> &[Self::Partition];
}

macro_rules! topic_entry {
    ($($ty:ty => $p:ty),* $(,)?) => {$(
        impl TopicEntry for $ty {
            type Partition = $p;
            fn name(&self) -> &str {
                &self.topic
            }
            fn partitions(&self) -> &[$p] {
                &self.partitions
            }
        }
    )*};
}

topic_entry! {
    ProduceTopic => ProducePartition,
    ProduceResponseTopic => ProduceResponsePartition,
    FetchTopic => FetchPartition,
    FetchResponseTopic => FetchResponsePartition,
    OffsetsTopic => OffsetsPartition,
    OffsetsResponseTopic => OffsetsResponsePartition,
}

impl<P> TopicEntry for TopicPartitions<P> {
    type Partition = P;
    fn name(&self) -> &str {
        &self.topic
    }
    fn partitions(&self) -> &[P] {
        &self.partitions
    }
}

fn topics<T: TopicEntry>(ts: &[T], mut partition: impl FnMut(&str, &T::Partition) -> Value) -> Value {
    Value::Array(
        ts.iter()
            .map(|t| {
                let partitions: Vec<Value> = t.partitions().iter().map(|p| partition(t.name(), p)).collect();
                json!({"topic": t.name(), "partitions": partitions})
            })
            .collect(),
    )
}

/// [`topics`] for topic entries of other shapes, as (name, partitions) pairs.
fn named_topics<'a, P: 'a>(
    ts: impl Iterator<Item = (&'a str, &'a [P])>,
    mut partition: impl FnMut(&str, &P) -> Value,
) -> Value {
    Value::Array(
        ts.map(|(topic, parts)| {
            let partitions: Vec<Value> = parts.iter().map(|p| partition(topic, p)).collect();
            json!({"topic": topic, "partitions": partitions})
        })
        .collect(),
    )
}

fn with_set(mut head: Value, set: Map<String, Value>) -> Value {
    head.as_object_mut().expect("object").extend(set);
    head
}

fn render_request(req: &AnyRequest, version: i16, ctx: &mut Ctx) -> Value {
    let file = ctx.file.clone();
    match req {
        AnyRequest::Produce(r) => json!({
            "required_acks": r.required_acks,
            "timeout": r.timeout,
            "topics": topics(&r.topics, |t, p| {
                let set = render_set(&p.message_set, ctx, &format!("{t}/{}", p.partition));
                with_set(json!({"partition": p.partition}), set)
            }),
        }),
        AnyRequest::Fetch(r) => json!({
            "replica_id": r.replica_id,
            "max_wait_time": r.max_wait_time,
            "min_bytes": r.min_bytes,
            "topics": topics(&r.topics, |_, p| json!({
                "partition": p.partition, "fetch_offset": p.fetch_offset, "max_bytes": p.max_bytes,
            })),
        }),
        AnyRequest::Offsets(r) => json!({
            "replica_id": r.replica_id,
            "topics": topics(&r.topics, |_, p| json!({
                "partition": p.partition, "time": p.time, "max_number_of_offsets": p.max_number_of_offsets,
            })),
        }),
        AnyRequest::Metadata(r) => json!({ "topics": r.topic_names().collect::<Vec<_>>() }),
        AnyRequest::OffsetCommit(r) => {
            let parts = named_topics(r.topics.iter().map(|t| (t.topic.as_str(), &t.partitions[..])), |t, p| {
                if version >= 1 {
                    json!({"partition": p.partition, "offset": p.offset, "timestamp": p.timestamp, "metadata": p.metadata})
                } else {
                    // v0 has no timestamp on the wire: the manifest has none, ours must be the default.
                    assert_eq!(p.timestamp, DEFAULT_TIMESTAMP, "{file}: {t}/{}: v0 timestamp", p.partition);
                    json!({"partition": p.partition, "offset": p.offset, "metadata": p.metadata})
                }
            });
            if version >= 1 {
                json!({
                    "consumer_group": r.group_id,
                    "consumer_group_generation_id": r.group_generation_id,
                    "consumer_id": r.consumer_id,
                    "topics": parts,
                })
            } else {
                // Fields v0 lacks on the wire: the manifest has none, ours must be the defaults.
                assert_eq!(r.group_generation_id, DEFAULT_GENERATION_ID, "{file}: v0 group_generation_id");
                assert_eq!(r.consumer_id, DEFAULT_CONSUMER_ID, "{file}: v0 consumer_id");
                json!({"consumer_group": r.group_id, "topics": parts})
            }
        }
        AnyRequest::OffsetFetch(r) => json!({
            "consumer_group": r.group_id,
            "topics": named_topics(r.topics.iter().flatten().map(|t| (t.topic.as_str(), &t.partitions[..])), |_, p| json!(p)),
        }),
        AnyRequest::ConsumerMetadata(r) => json!({ "consumer_group": r.key }),
        other => panic!("{file}: request {other:?} has no renderer"),
    }
}

/// Our rendering of a response body, by type.
trait Render {
    fn render(&self, version: i16, ctx: &mut Ctx) -> Value;
}

impl Render for ProduceResponse {
    fn render(&self, _: i16, _: &mut Ctx) -> Value {
        json!({"topics": topics(&self.topics, |_, p| json!({
            "partition": p.partition, "error_code": p.error_code, "offset": p.offset,
        }))})
    }
}

impl Render for FetchResponse {
    fn render(&self, _: i16, ctx: &mut Ctx) -> Value {
        json!({"topics": topics(&self.topics, |t, p| {
            let set = render_set(&p.message_set, ctx, &format!("{t}/{}", p.partition));
            with_set(
                json!({"partition": p.partition, "error_code": p.error_code, "highwater_mark_offset": p.high_watermark}),
                set,
            )
        })})
    }
}

impl Render for OffsetsResponse {
    fn render(&self, _: i16, _: &mut Ctx) -> Value {
        json!({"topics": topics(&self.topics, |_, p| json!({
            "partition": p.partition, "error_code": p.error_code, "offsets": p.offsets,
        }))})
    }
}

impl Render for MetadataResponse {
    fn render(&self, _: i16, _: &mut Ctx) -> Value {
        let brokers: Vec<Value> =
            self.brokers.iter().map(|b| json!({"node_id": b.node_id, "host": b.host, "port": b.port})).collect();
        let topics: Vec<Value> = self
            .topics
            .iter()
            .map(|t| {
                let partitions: Vec<Value> = t
                    .partitions
                    .iter()
                    .map(|p| {
                        json!({
                            "error_code": p.error_code, "partition": p.partition, "leader": p.leader,
                            "replicas": p.replicas, "isr": p.isr,
                        })
                    })
                    .collect();
                json!({"error_code": t.error_code, "topic": t.topic, "partitions": partitions})
            })
            .collect();
        json!({"brokers": brokers, "topics": topics})
    }
}

impl Render for OffsetCommitResponse {
    fn render(&self, _: i16, _: &mut Ctx) -> Value {
        let ts = self.topics.iter().map(|t| (t.topic.as_str(), &t.partitions[..]));
        json!({"topics": named_topics(ts, |_, p| json!({"partition": p.partition, "error_code": p.error_code}))})
    }
}

impl Render for OffsetFetchResponse {
    fn render(&self, _: i16, _: &mut Ctx) -> Value {
        let ts = self.topics.iter().map(|t| (t.topic.as_str(), &t.partitions[..]));
        json!({"topics": named_topics(ts, |_, p| json!({
            "partition": p.partition, "offset": p.offset, "metadata": p.metadata, "error_code": p.error_code,
        }))})
    }
}

impl Render for ConsumerMetadataResponse {
    fn render(&self, _: i16, _: &mut Ctx) -> Value {
        json!({
            "error_code": self.error_code,
            "coordinator_id": self.node_id,
            "coordinator_host": self.host,
            "coordinator_port": self.port,
        })
    }
}

// --------------------------------------------------------------------------------------------
// Decoding, comparing and re-encoding one frame
// --------------------------------------------------------------------------------------------

/// What checking a frame leaves for the inner-set checks.
#[derive(Debug)]
struct CheckedFrame {
    ctx: Ctx,
}

/// Step 1: exactly one frame, of the manifest's size.
fn split_one(file: &str, bytes: &[u8], frame_size: i64) -> Bytes {
    let mut buf = BytesMut::from(bytes);
    let frame = frame::split_frame(&mut buf, MAX_FRAME)
        .unwrap_or_else(|e| panic!("{file}: split_frame: {e}"))
        .unwrap_or_else(|| panic!("{file}: split_frame found no whole frame"));
    assert!(buf.is_empty(), "{file}: {} bytes after the frame", buf.len());
    assert_eq!(frame.len() as i64, frame_size, "{file}: frame size vs manifest frame_size");
    frame
}

fn check_request(entry: &Value, bytes: &[u8], frame: Bytes) -> CheckedFrame {
    let file = str_field(entry, "file");
    let mut rest = frame;
    let header = RequestHeader::decode(&mut rest).unwrap_or_else(|e| panic!("{file}: RequestHeader::decode: {e}"));
    let ours_header = json!({
        "api_key": header.api_key.code(),
        "api_version": header.api_version,
        "correlation_id": header.correlation_id,
        "client_id": header.client_id,
    });
    let theirs_header = json!({
        "api_key": entry["api_key"],
        "api_version": entry["api_version"],
        "correlation_id": entry["correlation_id"],
        "client_id": entry["client_id"],
    });
    assert_matches_manifest(file, "request header", &ours_header, &theirs_header);

    // AnyRequest::decode fails with TrailingBytes unless the body is used exactly.
    let req = AnyRequest::decode(&header, rest).unwrap_or_else(|e| panic!("{file}: AnyRequest::decode: {e}"));
    assert_eq!(req.api_key(), header.api_key, "{file}");

    let mut ctx = Ctx::new(file);
    let mut ours = render_request(&req, header.api_version, &mut ctx);
    name_inner_files(&mut ours, &ctx);
    assert_matches_manifest(file, "request body", &ours, &entry["value"]);

    let mut out = BytesMut::new();
    let encoded = match &req {
        AnyRequest::Produce(r) => frame::encode_request(&header, r, &mut out),
        AnyRequest::Fetch(r) => frame::encode_request(&header, r, &mut out),
        AnyRequest::Offsets(r) => frame::encode_request(&header, r, &mut out),
        AnyRequest::Metadata(r) => frame::encode_request(&header, r, &mut out),
        AnyRequest::OffsetCommit(r) => frame::encode_request(&header, r, &mut out),
        AnyRequest::OffsetFetch(r) => frame::encode_request(&header, r, &mut out),
        AnyRequest::ConsumerMetadata(r) => frame::encode_request(&header, r, &mut out),
        other => panic!("{file}: no encoder for {other:?}"),
    };
    encoded.unwrap_or_else(|e| panic!("{file}: encode_request: {e}"));
    assert_same_bytes(file, "re-encoded request frame", &out, bytes);
    CheckedFrame { ctx }
}

fn check_response_as<R: Request>(entry: &Value, bytes: &[u8], frame: Bytes) -> CheckedFrame
where
    R::Response: Render,
{
    let file = str_field(entry, "file");
    let version = int_field(entry, "api_version") as i16;
    assert_eq!(int_field(entry, "api_key") as i16, R::KEY.code(), "{file}");
    // decode_response fails with TrailingBytes unless the frame is used exactly.
    let (header, body) =
        frame::decode_response::<R>(version, frame).unwrap_or_else(|e| panic!("{file}: decode_response: {e}"));
    assert_eq!(i64::from(header.correlation_id), int_field(entry, "correlation_id"), "{file}: correlation_id");

    let mut ctx = Ctx::new(file);
    let mut ours = body.render(version, &mut ctx);
    name_inner_files(&mut ours, &ctx);
    assert_matches_manifest(file, "response body", &ours, &entry["value"]);

    let mut out = BytesMut::new();
    frame::encode_response(header.correlation_id, version, &body, &mut out)
        .unwrap_or_else(|e| panic!("{file}: encode_response: {e}"));
    assert_same_bytes(file, "re-encoded response frame", &out, bytes);
    // The body alone, through the Encode trait, is the frame minus size and correlation id.
    let body_bytes = body.to_bytes(version).unwrap_or_else(|e| panic!("{file}: to_bytes: {e}"));
    assert_same_bytes(file, "re-encoded response body", &body_bytes, &bytes[8..]);
    CheckedFrame { ctx }
}

fn check_response(entry: &Value, bytes: &[u8], frame: Bytes) -> CheckedFrame {
    let file = str_field(entry, "file");
    match ApiKey::from_i16(int_field(entry, "api_key") as i16) {
        ApiKey::Produce => check_response_as::<ProduceRequest>(entry, bytes, frame),
        ApiKey::Fetch => check_response_as::<FetchRequest>(entry, bytes, frame),
        ApiKey::Offsets => check_response_as::<OffsetsRequest>(entry, bytes, frame),
        ApiKey::Metadata => check_response_as::<MetadataRequest>(entry, bytes, frame),
        ApiKey::OffsetCommit => check_response_as::<OffsetCommitRequest>(entry, bytes, frame),
        ApiKey::OffsetFetch => check_response_as::<OffsetFetchRequest>(entry, bytes, frame),
        ApiKey::ConsumerMetadata => check_response_as::<ConsumerMetadataRequest>(entry, bytes, frame),
        other => panic!("{file}: no response type for {other}"),
    }
}

/// Steps 1 to 3 for one frame entry.
fn check_frame(entry: &Value) -> CheckedFrame {
    let file = str_field(entry, "file");
    let bytes = read(file);
    let frame = split_one(file, &bytes, int_field(entry, "frame_size"));
    match str_field(entry, "kind") {
        "request" => check_request(entry, &bytes, frame),
        "response" => check_response(entry, &bytes, frame),
        kind => panic!("{file}: kind {kind} is not a frame"),
    }
}

/// Runs `check` on every entry, so that one bad fixture does not hide the others; panics at the
/// end with every failure (each names its file).
fn each_entry<T>(entries: &[&Value], mut check: impl FnMut(&Value) -> T) -> Vec<(String, T)> {
    let mut done = Vec::new();
    let mut failures = Vec::new();
    for entry in entries {
        let file = str_field(entry, "file").to_owned();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(entry))) {
            Ok(v) => done.push((file, v)),
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_else(|| "(non-string panic)".to_owned());
                failures.push(format!("{file}:\n    {}", msg.replace('\n', "\n    ")));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} fixture(s) failed:\n{}", failures.len(), entries.len(), failures.join("\n"));
    done
}

/// Every frame of the manifest, checked, by file name.
fn check_all_frames() -> BTreeMap<String, CheckedFrame> {
    let manifest = manifest();
    let frames: Vec<&Value> =
        manifest.iter().filter(|e| matches!(e["kind"].as_str(), Some("request" | "response"))).collect();
    each_entry(&frames, check_frame).into_iter().collect()
}

// --------------------------------------------------------------------------------------------
// Inner message sets and codecs
// --------------------------------------------------------------------------------------------

/// Our compressor's block layout against what the manifest says kafka-python's emitted, where the
/// two are meant to agree (same block sizes); the exact compressed bytes are not expected to.
fn check_codec_info(file: &str, codec: Compression, info: &Value, ours: &[u8], theirs: &[u8], raw: &[u8]) {
    match codec {
        Compression::Gzip => {
            // kafka-python's trailer describes the inner set we decompressed.
            assert_eq!(
                info["trailer_crc32"].as_u64(),
                Some(u64::from(crc32fast::hash(raw))),
                "{file}: gzip trailer crc32"
            );
            assert_eq!(info["trailer_isize"].as_u64(), Some(raw.len() as u64), "{file}: gzip trailer isize");
            assert_eq!(info["header_hex"].as_str(), Some(hex(&theirs[..10]).as_str()), "{file}: gzip header");
            // Ours and kafka-python's headers agree but for XFL (byte 8): kafka-python writes 2
            // (compresslevel 9), ours 0 like Java's GZIPOutputStream. MTIME is 0 in both (the
            // fixture script pins kafka-python's clock).
            assert_same_bytes(file, "gzip header bytes 0..8", &ours[..8], &theirs[..8]);
            assert_eq!(ours[9], theirs[9], "{file}: gzip OS byte");
            assert_eq!(info["xfl"].as_u64(), Some(u64::from(theirs[8])), "{file}: gzip xfl");
            assert_eq!(ours[8], 0, "{file}: our gzip XFL");
        }
        Compression::Snappy => {
            assert_eq!(info["xerial_header_hex"].as_str(), Some(hex(&theirs[..16]).as_str()), "{file}");
            // Same 32 KiB xerial blocks: same number of blocks, same uncompressed sizes.
            let mut ours_blocks = Vec::new();
            let mut rest = &ours[16..];
            while !rest.is_empty() {
                let n = i32::from_be_bytes(rest[..4].try_into().expect("4")) as usize;
                let block = &rest[4..4 + n];
                ours_blocks.push(snap::raw::decompress_len(block).expect("our snappy block has a length"));
                rest = &rest[4 + n..];
            }
            let theirs_blocks: Vec<usize> = info["blocks"]
                .as_array()
                .expect("blocks")
                .iter()
                .map(|b| b["uncompressed_size"].as_u64().expect("size") as usize)
                .collect();
            assert_eq!(ours_blocks, theirs_blocks, "{file}: xerial block uncompressed sizes, ours vs kafka-python");
        }
        Compression::Lz4 => {
            assert_eq!(info["magic_hex"].as_str(), Some("04224d18"), "{file}");
            assert_eq!(
                info["hc"], info["hc_kafka08_over_magic_flg_bd"],
                "{file}: kafka-python wrote the Kafka 0.8 header checksum"
            );
            // Same 64 KiB independent blocks: same count, same stored-uncompressed flags.
            assert_eq!(info["block_max_size"].as_u64(), Some(64 * 1024), "{file}");
            let mut ours_blocks = Vec::new();
            let mut rest = &ours[7..];
            loop {
                let word = u32::from_le_bytes(rest[..4].try_into().expect("4"));
                rest = &rest[4..];
                if word == 0 {
                    break;
                }
                ours_blocks.push(word & 0x8000_0000 != 0);
                rest = &rest[(word & 0x7fff_ffff) as usize..];
            }
            assert!(rest.is_empty(), "{file}: bytes after our lz4 end mark");
            let theirs_blocks: Vec<bool> = info["blocks"]
                .as_array()
                .expect("blocks")
                .iter()
                .map(|b| b["uncompressed"].as_bool().expect("flag"))
                .collect();
            assert_eq!(ours_blocks, theirs_blocks, "{file}: lz4 blocks (stored uncompressed?), ours vs kafka-python");
        }
        Compression::None | Compression::Zstd => unreachable!(),
    }
}

/// Step 4 for one inner_message_set entry.
fn check_inner(entry: &Value, wrapper: &Wrapper, wrapper_json: &Value) {
    let file = str_field(entry, "file");
    let inner_bin = read(file);
    let codec = wrapper.codec;
    assert_eq!(str_field(entry, "codec"), codec.name(), "{file}: codec of {}", wrapper.location);
    assert_eq!(codec.attribute_bits(), wrapper.attributes, "{file}");
    assert_eq!(
        unhex(str_field(entry, "compressed_hex")),
        &wrapper.compressed[..],
        "{file}: compressed_hex vs our wrapper value"
    );

    // The manifest's value of the inner set, from our entry walk over the .inner.bin bytes.
    let mut ctx = Ctx::new(file);
    let ours =
        Value::Object(render_set(&MessageSet::from_bytes(Bytes::from(inner_bin.clone())), &mut ctx, "inner set"));
    assert!(ctx.wrappers.is_empty(), "{file}: a wrapper inside an inner set");
    assert_matches_manifest(file, "inner message set", &ours, &entry["value"]);

    // Decompressing the parent's wrapper with our codec gives exactly the .inner.bin bytes.
    assert_same_bytes(file, &format!("our {codec} decompression of {}", wrapper.location), &wrapper.raw, &inner_bin);
    // Our MessageSet::encode of the decoded inner messages gives exactly the same bytes.
    let set = MessageSet::encode(&wrapper.inner).unwrap_or_else(|e| panic!("{file}: MessageSet::encode: {e}"));
    assert_same_bytes(file, "our MessageSet::encode of the inner messages", set.as_bytes(), &inner_bin);

    // Our compressor round-trips through our decompressor.
    let mut ours_c = Vec::new();
    compression::compress(codec, &inner_bin, &mut ours_c)
        .unwrap_or_else(|e| panic!("{file}: our {codec} compress: {e}"));
    let mut back = Vec::new();
    compression::decompress(codec, &ours_c, inner_bin.len(), &mut back)
        .unwrap_or_else(|e| panic!("{file}: our {codec} decompress: {e}"));
    assert_same_bytes(file, &format!("{codec} round trip through our codec"), &back, &inner_bin);
    match codec {
        Compression::Lz4 => {
            assert_eq!(hex(&ours_c[..7]), "04224d1860401a", "{file}: our lz4 frame header");
            assert_same_bytes(file, "lz4 frame header (magic, FLG, BD, HC)", &ours_c[..7], &wrapper.compressed[..7]);
        }
        Compression::Snappy => assert_same_bytes(file, "xerial header", &ours_c[..16], &wrapper.compressed[..16]),
        _ => {}
    }
    check_codec_info(file, codec, &wrapper_json["codec_info"], &ours_c, &wrapper.compressed, &inner_bin);

    // MessageSet::wrap of the same inner messages: a wrapper like kafka-python's (offset = last
    // inner offset, null key, same attributes) that expands back to them.
    let wrapped = MessageSet::wrap(&wrapper.inner, codec).unwrap_or_else(|e| panic!("{file}: MessageSet::wrap: {e}"));
    assert_eq!(wrapped.offset, wrapper.inner.last().expect("inner messages").offset, "{file}: wrap offset");
    assert_eq!(wrapped.message.key, None, "{file}");
    assert_eq!(wrapped.message.attributes, wrapper.attributes, "{file}");
    let d = MessageSet::encode(&[wrapped])
        .and_then(|s| s.decode(&DecodeOptions::default()))
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(d.messages, wrapper.inner, "{file}: our wrap + decode");
}

/// The manifest object of the wrapper whose `inner_file` is `name`.
fn find_wrapper_json<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) if m.get("inner_file").and_then(Value::as_str) == Some(name) => Some(v),
        Value::Object(m) => m.values().find_map(|v| find_wrapper_json(v, name)),
        Value::Array(a) => a.iter().find_map(|v| find_wrapper_json(v, name)),
        _ => None,
    }
}

// --------------------------------------------------------------------------------------------
// Tests
// --------------------------------------------------------------------------------------------

#[test]
fn manifest_lists_every_fixture_file_once() {
    let listed: Vec<String> = manifest().iter().map(|e| str_field(e, "file").to_owned()).collect();
    let unique: BTreeSet<&String> = listed.iter().collect();
    assert_eq!(unique.len(), listed.len(), "duplicate manifest entries");
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(listed, sorted, "manifest is sorted by file");
    let on_disk: BTreeSet<String> = std::fs::read_dir(dir())
        .expect("fixture dir")
        .map(|e| e.expect("dir entry").file_name().into_string().expect("utf-8 name"))
        .filter(|n| n != "manifest.json")
        .collect();
    assert_eq!(unique.into_iter().cloned().collect::<BTreeSet<_>>(), on_disk, "manifest entries vs files on disk");
    assert!(listed.len() >= 40, "only {} fixtures", listed.len());
}

#[test]
fn every_frame_decodes_matches_the_manifest_and_re_encodes_byte_for_byte() {
    let checked = check_all_frames();
    let kinds: BTreeSet<(i16, &str)> = manifest()
        .iter()
        .filter(|e| e["kind"] != "inner_message_set")
        .map(|e| (int_field(e, "api_key") as i16, if e["kind"] == "request" { "request" } else { "response" }))
        .collect();
    // Every client API of 0.8.2, both directions.
    for key in [0, 1, 2, 3, 8, 9, 10] {
        assert!(kinds.contains(&(key, "request")), "no request fixture for api key {key}");
        assert!(kinds.contains(&(key, "response")), "no response fixture for api key {key}");
    }
    assert!(checked.len() >= 35, "only {} frames checked", checked.len());
}

#[test]
fn inner_message_sets_match_and_our_codecs_agree_with_kafka_python() {
    let frames = check_all_frames();
    let manifest = manifest();
    let by_file: BTreeMap<&str, &Value> = manifest.iter().map(|e| (str_field(e, "file"), e)).collect();
    let inners: Vec<&Value> = manifest.iter().filter(|e| e["kind"] == "inner_message_set").collect();
    let checked_inners = each_entry(&inners, |entry| {
        let file = str_field(entry, "file");
        let parent = str_field(entry, "parent");
        let checked = frames.get(parent).unwrap_or_else(|| panic!("{file}: parent {parent} is not a checked frame"));
        let total = checked.ctx.wrappers.len();
        let k = (0..total).find(|&k| checked.ctx.inner_name(k, total) == file).unwrap_or_else(|| {
            panic!("{file}: none of the {total} wrappers we decoded in {parent} has this inner file")
        });
        let wrapper_json = find_wrapper_json(&by_file[parent]["value"], file)
            .unwrap_or_else(|| panic!("{file}: no wrapper in {parent}'s manifest value names it"));
        assert_eq!(int_field(wrapper_json, "offset"), checked.ctx.wrappers[k].offset, "{file}: wrapper offset");
        check_inner(entry, &checked.ctx.wrappers[k], wrapper_json);
        checked.ctx.wrappers[k].codec.name()
    });
    let seen: BTreeSet<&str> = checked_inners.iter().map(|(f, _)| f.as_str()).collect();
    let codecs: BTreeSet<&str> = checked_inners.iter().map(|(_, c)| *c).collect();
    assert!(seen.len() >= 12, "only {} inner message sets checked", seen.len());
    // Every wrapper we met has its inner set in the manifest.
    for (parent, checked) in &frames {
        let total = checked.ctx.wrappers.len();
        for k in 0..total {
            let name = checked.ctx.inner_name(k, total);
            assert!(
                seen.contains(name.as_str()),
                "{parent}: wrapper #{k} ({}) has no {name} in the manifest",
                checked.ctx.wrappers[k].location
            );
        }
    }
    assert_eq!(codecs.into_iter().collect::<Vec<_>>(), ["gzip", "lz4", "snappy"]);
}

/// The raw bytes of the message at `index` of a message set (walking offset/size headers).
fn raw_message(set: &[u8], index: usize) -> &[u8] {
    let mut rest = set;
    for i in 0.. {
        let size = i32::from_be_bytes(rest[8..12].try_into().expect("4")) as usize;
        if i == index {
            return &rest[12..12 + size];
        }
        rest = &rest[12 + size..];
    }
    unreachable!()
}

#[test]
fn null_key_null_value_message_has_crc_a7ec6803_and_matches_message_new_none_none() {
    let file = "produce_v0_acks1.req.bin";
    let bytes = read(file);
    let mut buf = BytesMut::from(&bytes[..]);
    let mut frame = frame::split_frame(&mut buf, MAX_FRAME).unwrap().unwrap();
    let header = RequestHeader::decode(&mut frame).unwrap();
    let AnyRequest::Produce(req) = AnyRequest::decode(&header, frame).unwrap() else {
        panic!("{file}: not a produce request")
    };
    let topic = &req.topics[0];
    assert_eq!(topic.topic, "topic-a");
    let part = &topic.partitions[0];
    assert_eq!(part.partition, 0);

    let entries: Vec<MessageAndOffset> = part.message_set.entries().map(Result::unwrap).collect();
    let null = &entries[1];
    assert_eq!(null.offset, 1);
    assert_eq!(null.message, Message::new(None, None), "{file}: topic-a/0 offset 1");

    // kafka-python's 14 bytes, straight from the file.
    let theirs = raw_message(part.message_set.as_bytes(), 1);
    assert_eq!(theirs.len(), 14);
    assert_eq!(hex(&theirs[..4]), "a7ec6803", "{file}: CRC of the null-key, null-value message");
    assert_eq!(hex(theirs), "a7ec68030000ffffffffffffffff");

    let mut ours = BytesMut::new();
    Message::new(None, None).encode(&mut ours).unwrap();
    assert_eq!(&ours[..], theirs, "Message::new(None, None) vs kafka-python");
    assert_eq!(Message::new(None, None).encoded_len(), 14);
}

fn fetch_response(file: &str) -> FetchResponse {
    let bytes = read(file);
    let mut buf = BytesMut::from(&bytes[..]);
    let frame = frame::split_frame(&mut buf, MAX_FRAME).unwrap().unwrap();
    assert!(buf.is_empty());
    frame::decode_response::<FetchRequest>(0, frame).unwrap_or_else(|e| panic!("{file}: {e}")).1
}

#[test]
fn partial_fetch_responses_drop_the_cut_entry_or_report_message_larger_than_fetch() {
    let resp = fetch_response("fetch_v0_partial.resp.bin");
    let topic = &resp.topics[0];
    assert_eq!(topic.topic, "topic-a");

    // Partition 0: two whole messages, then 40 bytes of the 231-byte entry for offset 2.
    let p0 = &topic.partitions[0];
    assert_eq!(p0.partition, 0);
    let d = p0.messages("topic-a", 0).unwrap();
    assert_eq!(d.messages.iter().map(|m| m.offset).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(
        d.messages[0].message,
        Message::new(Some(Bytes::from_static(b"key-0")), Some(Bytes::from_static(b"value-0")))
    );
    assert_eq!(d.partial_trailing_bytes, 40);
    assert_eq!(d.skipped, 0);
    assert_eq!(d.next_offset(), Some(2));
    let mut entries = p0.message_set.entries();
    assert_eq!(entries.by_ref().count(), 2);
    assert_eq!(entries.partial_trailing_bytes(), 40);

    // Partition 1: only the first 1024 bytes of a 5029-byte entry at offset 0.
    let p1 = &topic.partitions[1];
    assert_eq!(p1.partition, 1);
    assert_eq!(p1.message_set.len(), 1024);
    match p1.messages("topic-a", 0) {
        Err(Error::MessageLargerThanFetch { location, entry_size, fetched_bytes }) => {
            assert_eq!(location.topic.as_deref(), Some("topic-a"));
            assert_eq!(location.partition, Some(1));
            assert_eq!(location.offset, 0);
            assert_eq!(entry_size, Some(5029));
            assert_eq!(fetched_bytes, 1024);
        }
        other => panic!("fetch_v0_partial.resp.bin partition 1: expected MessageLargerThanFetch, got {other:?}"),
    }
    let mut entries = p1.message_set.entries();
    assert_eq!(entries.by_ref().count(), 0);
    assert_eq!(entries.partial_trailing_bytes(), 1024);

    // Cut inside the 12-byte offset/size header: one message, then 7 bytes, dropped.
    let resp = fetch_response("fetch_v0_partial_header.resp.bin");
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.message_set.len(), 45);
    let d = p.messages(&resp.topics[0].topic, 0).unwrap();
    assert_eq!(d.messages.iter().map(|m| m.offset).collect::<Vec<_>>(), [0]);
    assert_eq!(d.partial_trailing_bytes, 7);
    let mut entries = p.message_set.entries();
    assert_eq!(entries.by_ref().count(), 1);
    assert_eq!(entries.partial_trailing_bytes(), 7);
}

#[test]
fn compressed_fetch_responses_read_from_offset_4_drop_inner_offset_3() {
    for codec in ["gzip", "snappy", "lz4"] {
        let file = format!("fetch_v0_{codec}.resp.bin");
        let resp = fetch_response(&file);
        let topic = &resp.topics[0];
        let p = &topic.partitions[0];
        // One wrapper at offset 5 holding absolute inner offsets 3, 4, 5.
        let top: Vec<MessageAndOffset> = p.message_set.entries().map(Result::unwrap).collect();
        assert_eq!(top.len(), 1, "{file}");
        assert_eq!(top[0].offset, 5, "{file}");
        assert_eq!(top[0].message.compression().unwrap().name(), codec, "{file}");

        let all = p.messages(&topic.topic, 0).unwrap();
        assert_eq!(all.messages.iter().map(|m| m.offset).collect::<Vec<_>>(), [3, 4, 5], "{file}");

        let d = p.messages(&topic.topic, 4).unwrap();
        assert_eq!(d.messages.iter().map(|m| m.offset).collect::<Vec<_>>(), [4, 5], "{file}");
        assert_eq!(d.messages, all.messages[1..], "{file}");
        assert_eq!(d.skipped, 1, "{file}");
        assert_eq!(d.partial_trailing_bytes, 0, "{file}");
        assert_eq!(d.next_offset(), Some(6), "{file}");
    }

    // gzip (inner 0-2), snappy (3-5), plain 6, lz4 (7-9) in one set: from offset 4, inner 0 to 3
    // are dropped, 3 from the middle of the snappy wrapper.
    let resp = fetch_response("fetch_v0_mixed_codecs.resp.bin");
    let topic = &resp.topics[0];
    let p = &topic.partitions[0];
    let all = p.messages(&topic.topic, 0).unwrap();
    assert_eq!(all.messages.iter().map(|m| m.offset).collect::<Vec<_>>(), (0..10).collect::<Vec<i64>>());
    let d = p.messages(&topic.topic, 4).unwrap();
    assert_eq!(d.messages.iter().map(|m| m.offset).collect::<Vec<_>>(), (4..10).collect::<Vec<i64>>());
    assert_eq!(d.skipped, 4);
    assert_eq!(d.next_offset(), Some(10));
}

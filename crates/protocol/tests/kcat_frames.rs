//! Request frames kcat 1.7.1 (librdkafka 2.0.2) sent in Kafka 0.8.2 mode
//! (`-X api.version.request=false -X broker.version.fallback=0.8.2`), captured by
//! `crates/testkit/tests/kcat.rs` (see `tests/data/kcat/README.md`).
//!
//! Each frame splits as exactly one frame, carries client id `rdkafka` and the expected API key
//! and version 0, decodes to the values kcat was asked to send (message sets decompressed), and
//! re-encodes with `frame::encode_request` to the same bytes.

use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use gregor_protocol::compression::Compression;
use gregor_protocol::frame::{encode_request, split_frame, ApiKey, Request, RequestHeader};
use gregor_protocol::messages::{AnyRequest, FetchRequest, MetadataRequest, OffsetsRequest, ProduceRequest};
use gregor_protocol::MessageSet;
use xxhash_rust::xxh32::xxh32;

const TOPIC: &str = "kcat-frames";

fn frame(name: &str) -> Bytes {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/kcat").join(format!("{name}.req.bin"));
    Bytes::from(std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// Splits, decodes the header and body, checks the header, and checks that re-encoding the
/// decoded values gives the file's bytes.
fn decode<R: Request + Clone>(name: &str, key: ApiKey, unwrap: fn(AnyRequest) -> Option<R>) -> R {
    let raw = frame(name);
    let mut buf = BytesMut::from(&raw[..]);
    let mut body = split_frame(&mut buf, 1 << 20).unwrap().expect("a whole frame");
    assert!(buf.is_empty(), "{name}: exactly one frame");
    let header = RequestHeader::decode(&mut body).unwrap();
    assert_eq!(header.client_id.as_deref(), Some("rdkafka"), "{name}: librdkafka's default client id");
    assert_eq!((header.api_key, header.api_version), (key, 0), "{name}");
    assert!(header.correlation_id > 0, "{name}: librdkafka counts correlation ids from 1");
    let request = unwrap(AnyRequest::decode(&header, body).unwrap()).expect("the expected request type");
    let mut again = BytesMut::new();
    encode_request(&header, &request, &mut again).unwrap();
    assert_eq!(again.freeze(), raw, "{name}: re-encodes byte for byte");
    request
}

#[test]
fn metadata_v0() {
    let r: MetadataRequest =
        decode("metadata_v0", ApiKey::Metadata, |r| if let AnyRequest::Metadata(m) = r { Some(m) } else { None });
    assert_eq!(r.topic_names().collect::<Vec<_>>(), [TOPIC]);
}

#[test]
fn offsets_v0_asks_for_the_earliest_offset() {
    let r: OffsetsRequest =
        decode("offsets_v0", ApiKey::Offsets, |r| if let AnyRequest::Offsets(o) = r { Some(o) } else { None });
    assert_eq!(r.replica_id, -1);
    assert_eq!(r.topics.len(), 1);
    assert_eq!(r.topics[0].topic, TOPIC);
    let p = &r.topics[0].partitions;
    assert_eq!(p.len(), 1);
    assert_eq!((p[0].partition, p[0].time, p[0].max_number_of_offsets), (0, -2, 1), "-o beginning: time -2");
}

#[test]
fn fetch_v0_uses_librdkafkas_defaults() {
    let r: FetchRequest =
        decode("fetch_v0", ApiKey::Fetch, |r| if let AnyRequest::Fetch(f) = r { Some(f) } else { None });
    assert_eq!((r.replica_id, r.max_wait_time, r.min_bytes), (-1, 500, 1), "fetch.wait.max.ms 500, fetch.min.bytes 1");
    assert_eq!(r.topics.len(), 1);
    assert_eq!(r.topics[0].topic, TOPIC);
    let p = &r.topics[0].partitions;
    assert_eq!(p.len(), 1);
    assert_eq!((p[0].partition, p[0].fetch_offset, p[0].max_bytes), (0, 0, 1_048_576), "fetch.message.max.bytes");
}

fn produce(codec: Compression) -> MessageSet {
    let name = format!("produce_v0_{codec}");
    let r: ProduceRequest =
        decode(&name, ApiKey::Produce, |r| if let AnyRequest::Produce(p) = r { Some(p) } else { None });
    assert_eq!((r.required_acks, r.timeout), (-1, 30_000), "{name}: acks=-1, request.timeout.ms 30000");
    assert_eq!(r.topics.len(), 1);
    assert_eq!(r.topics[0].topic, TOPIC);
    let p = &r.topics[0].partitions;
    assert_eq!((p.len(), p[0].partition), (1, 0));
    let set = p[0].message_set.clone();
    let decoded = set.decode(&Default::default()).unwrap();
    assert_eq!(decoded.partial_trailing_bytes, 0);
    let got: Vec<(i64, Option<Bytes>, Option<Bytes>)> =
        decoded.messages.iter().map(|m| (m.offset, m.message.key.clone(), m.message.value.clone())).collect();
    let want: Vec<(i64, Option<Bytes>, Option<Bytes>)> = (1..=3)
        .map(|i| (i - 1, Some(Bytes::from(format!("k{i}"))), Some(Bytes::from(format!("{codec}-{i}")))))
        .collect();
    assert_eq!(got, want, "{name}: messages k1..k3 at relative offsets 0..2");
    for m in &decoded.messages {
        assert_eq!(m.message.attributes, 0, "{name}: inner messages are uncompressed");
    }
    set
}

/// The single wrapper of a compressed produce set: offset 0, no key, the codec's attribute.
fn wrapper(set: &MessageSet, codec: Compression) -> Bytes {
    let entries: Vec<_> = set.entries().map(Result::unwrap).collect();
    assert_eq!(entries.len(), 1, "{codec}: one wrapper message");
    let w = &entries[0];
    assert_eq!(w.offset, 0, "{codec}: librdkafka writes wrapper offset 0");
    assert!(w.message.key.is_none());
    assert_eq!(w.message.compression().unwrap(), codec);
    w.message.value.clone().unwrap()
}

#[test]
fn produce_v0_none_is_three_plain_messages() {
    let set = produce(Compression::None);
    let offsets: Vec<i64> = set.entries().map(|e| e.unwrap().offset).collect();
    assert_eq!(offsets, [0, 1, 2]);
}

#[test]
fn produce_v0_gzip_is_one_gzip_wrapper() {
    let set = produce(Compression::Gzip);
    let v = wrapper(&set, Compression::Gzip);
    assert_eq!(&v[..3], [0x1f, 0x8b, 0x08], "a gzip member, deflate");
}

#[test]
fn produce_v0_snappy_is_a_raw_snappy_block_without_xerial_framing() {
    let set = produce(Compression::Snappy);
    let v = wrapper(&set, Compression::Snappy);
    // librdkafka writes one plain snappy block (varint uncompressed length first); a 0.8.2
    // broker reads it through snappy-java's fallback for input without the xerial magic
    assert_ne!(&v[..8], gregor_protocol::compression::snappy::XERIAL_MAGIC);
    // offset 8 + size 4 + crc 4 + magic 1 + attributes 1 + key 4+n + value 4+n
    let inner_len: usize = set
        .decode(&Default::default())
        .unwrap()
        .messages
        .iter()
        .map(|m| {
            8 + 4 + 4 + 1 + 1 + 4 + m.message.key.as_ref().unwrap().len() + 4 + m.message.value.as_ref().unwrap().len()
        })
        .sum();
    assert_eq!(usize::from(v[0]), inner_len, "varint length of the inner set ({inner_len} bytes)");
}

#[test]
fn produce_v0_lz4_is_the_kafka_0_8_frame() {
    let set = produce(Compression::Lz4);
    let v = wrapper(&set, Compression::Lz4);
    // magic, FLG 0x60 (version 01, independent blocks, no checksums, no size), BD 0x40 (64 KiB)
    assert_eq!(&v[..6], [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40]);
    // the header checksum over magic + descriptor (KAFKA-3160), which a 0.8.2 broker requires,
    // not the specification's over the descriptor only
    assert_eq!(v[6], (xxh32(&v[..6], 0) >> 8) as u8);
    assert_ne!(v[6], (xxh32(&v[4..6], 0) >> 8) as u8);
    assert_eq!(v[6], 0x1a);
    assert_eq!(&v[v.len() - 4..], [0, 0, 0, 0], "end mark, no content checksum");
}

//! The FakeCluster against kafka-python 2.0.2 (Debian's python3-kafka), a client gregor did not
//! write, pinned to Kafka 0.8.2 (`api_version=(0, 8, 2)`).
//!
//! Each test starts a cluster, runs `tests/python/kafka_python_client.py` (one scenario, JSON
//! lines on stdout) under `/usr/bin/python3` with a time limit, and checks what kafka-python saw
//! against what the cluster holds: its log read back through the codec, ZooKeeper's znodes, and
//! the request log (kafka-python's own requests, as the brokers decoded them).
//!
//! * produce and consume with acks 1 and all, every codec, keyed messages over 3 partitions;
//! * offsets in ZooKeeper (OffsetCommit/OffsetFetch v0), raw and through `KafkaConsumer`;
//! * offsets in Kafka (v1) through ConsumerMetadata and the coordinator, raw and through
//!   `KafkaConsumer`;
//! * one request of each kind captured into `crates/protocol/tests/data/kafka-python-live/`
//!   (written only with `GREGOR_CAPTURE_FIXTURES=1`; the files are always checked).
//!
//! Without `/usr/bin/python3` or kafka-python the tests fail, naming the apt packages, unless
//! `GREGOR_ALLOW_SKIP=1` is set outside CI: then they print why and skip.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use bytes::BytesMut;
use common::*;
use gregor_protocol::compression::lz4::{self, HeaderChecksum};
use gregor_protocol::frame::{encode_request, split_frame, ApiKey, RequestHeader};
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::messages::*;
use gregor_protocol::Compression;
use gregor_testkit::{tools, FakeCluster, LoggedRequest};
use gregor_zk::paths;
use serde_json::{json, Value};

/// Bound on one run of the script; a run normally takes about a second.
const SCRIPT_LIMIT: Duration = Duration::from_secs(45);
const CODECS: [&str; 4] = ["none", "gzip", "snappy", "lz4"];
/// Messages per topic in the produce/consume tests.
const COUNT: usize = 25;
const FIXTURE_ENV: &str = "GREGOR_CAPTURE_FIXTURES";

// --------------------------------------------------------------------------------------------
// Running kafka-python
// --------------------------------------------------------------------------------------------

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/kafka_python_client.py")
}

/// True when kafka-python can run; otherwise fails naming the apt packages, or returns false
/// when skipping is allowed (`GREGOR_ALLOW_SKIP=1`, never under CI).
async fn kafka_python_or_skip() -> bool {
    tools::kafka_python_or_skip().await.is_some()
}

/// Runs one scenario of the script and returns its JSON lines. Fails with the script's output
/// when it exits non-zero or prints something else, and kills it after [`SCRIPT_LIMIT`]
/// ([`tools::run_python`]).
async fn run_script(args: &[&str]) -> Vec<Value> {
    let what = args.join(" ");
    let run = tools::run_python(&script(), args, SCRIPT_LIMIT).await;
    let stdout = String::from_utf8_lossy(&run.stdout);
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| {
                panic!(
                    "kafka-python `{what}` printed {l:?}: {e}\n--- stdout (last lines)\n{}\n--- stderr\n{}",
                    tools::tail(&run.stdout, 4000),
                    tools::tail(&run.stderr, 16000)
                )
            })
        })
        .collect()
}

fn events<'a>(lines: &'a [Value], event: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["event"] == event).collect()
}

fn one<'a>(lines: &'a [Value], event: &str) -> &'a Value {
    match events(lines, event).as_slice() {
        [e] => e,
        other => panic!("expected one {event:?} line, got {}: {lines:#?}", other.len()),
    }
}

fn unhex(v: &Value) -> Vec<u8> {
    let s = v.as_str().unwrap_or_else(|| panic!("{v} is not a hex string"));
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("{v} is not an integer"))
}

/// `[topic, partition, error]` rows of a commit, or `[topic, partition, offset, metadata,
/// error]` rows of a fetch, as the script prints them.
fn rows(v: &Value) -> Vec<Value> {
    v["results"].as_array().unwrap_or_else(|| panic!("no results in {v}")).clone()
}

/// The requests kafka-python sent (its client ids start with "kafka-python").
fn python_requests(cluster: &FakeCluster) -> Vec<LoggedRequest> {
    cluster
        .requests()
        .into_iter()
        .filter(|r| r.header.client_id.as_deref().is_some_and(|c| c.starts_with("kafka-python")))
        .collect()
}

async fn cluster_with_python(test: &str, brokers: usize) -> Option<FakeCluster> {
    if !kafka_python_or_skip().await {
        return None;
    }
    cluster(test, brokers).await
}

/// What the script's `message(topic, i)` sends.
fn expected_message(topic: &str, i: usize) -> (Vec<u8>, Vec<u8>) {
    let key = format!("key-{i}").into_bytes();
    let mut value = format!("{topic} value {i} ").repeat(if i % 7 == 0 { 40 } else { 3 }).into_bytes();
    value.extend([0, 0xff, (i % 256) as u8]);
    (key, value)
}

/// The first 7 bytes of an LZ4 frame as Kafka 0.8 writes it (magic, FLG 0x60, BD 0x40 and the
/// KAFKA-3160 header checksum), and the same with the standard checksum a 0.8.2 broker rejects.
fn lz4_headers() -> (Vec<u8>, Vec<u8>) {
    let mut kafka08 = Vec::new();
    lz4::compress_with(b"", HeaderChecksum::Kafka08, &mut kafka08).unwrap();
    let mut standard = Vec::new();
    lz4::compress_with(b"", HeaderChecksum::Standard, &mut standard).unwrap();
    kafka08.truncate(7);
    standard.truncate(7);
    assert_ne!(kafka08, standard);
    (kafka08, standard)
}

// --------------------------------------------------------------------------------------------
// 1. Produce and consume
// --------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    partition: i32,
    offset: i64,
    key: Vec<u8>,
    value: Vec<u8>,
}

fn record(v: &Value) -> Record {
    Record {
        partition: int(&v["partition"]) as i32,
        offset: int(&v["offset"]),
        key: unhex(&v["key"]),
        value: unhex(&v["value"]),
    }
}

async fn produce_and_consume(test: &str, acks: &str) {
    let Some(c) = cluster_with_python(test, 3).await else { return };
    let topics: Vec<(String, &str)> = CODECS.iter().map(|codec| (format!("{test}-{codec}"), *codec)).collect();
    for (topic, _) in &topics {
        c.create_topic(topic, 3, 3).await.unwrap();
    }
    let count = COUNT.to_string();
    let cases: Vec<String> = topics.iter().map(|(t, codec)| format!("{t}:{acks}:{codec}")).collect();
    let bootstrap = c.bootstrap();
    let mut args = vec!["produce-consume", &bootstrap, &count];
    args.extend(cases.iter().map(String::as_str));
    let lines = run_script(&args).await;

    assert_eq!(int(&one(&lines, "done")["consumed"]), (COUNT * topics.len()) as i64, "every message read back");
    let positions = &one(&lines, "positions")["positions"];
    let (kafka08, standard) = lz4_headers();
    let log = python_requests(&c);
    for (topic, codec_name) in &topics {
        let codec: Compression = codec_name.parse().unwrap();
        let at = |what: &str| format!("{topic} (acks={acks}, {codec_name}): {what}");
        let produced: Vec<Record> =
            events(&lines, "produced").into_iter().filter(|e| e["topic"] == topic.as_str()).map(record).collect();
        let consumed: Vec<Record> =
            events(&lines, "consumed").into_iter().filter(|e| e["topic"] == topic.as_str()).map(record).collect();
        assert_eq!(produced.len(), COUNT, "{}", at("produced"));
        assert_eq!(consumed.len(), COUNT, "{}", at("consumed"));

        // what kafka-python was told it wrote: every message once, offsets 0.. per partition
        let by_key: BTreeMap<&[u8], &Record> = produced.iter().map(|r| (r.key.as_slice(), r)).collect();
        for i in 0..COUNT {
            let (key, value) = expected_message(topic, i);
            let r = by_key.get(key.as_slice()).unwrap_or_else(|| panic!("{}", at(&format!("key-{i} not produced"))));
            assert_eq!(r.value, value, "{}", at(&format!("key-{i}'s value as produced")));
        }
        let mut by_partition: BTreeMap<i32, Vec<&Record>> = BTreeMap::new();
        for r in &produced {
            by_partition.entry(r.partition).or_default().push(r);
        }
        assert_eq!(by_partition.keys().copied().collect::<Vec<_>>(), [0, 1, 2], "{}", at("keys spread"));
        let mut produced_at: BTreeMap<(i32, i64), &Record> = BTreeMap::new();
        for (p, rs) in &by_partition {
            let mut offsets: Vec<i64> = rs.iter().map(|r| r.offset).collect();
            offsets.sort();
            assert_eq!(
                offsets,
                (0..rs.len() as i64).collect::<Vec<_>>(),
                "{}",
                at(&format!("produced offsets of {p}"))
            );
            produced_at.extend(rs.iter().map(|r| ((r.partition, r.offset), *r)));
        }

        // what kafka-python read back: each partition in order from 0, the same messages
        for (p, rs) in &by_partition {
            let read: Vec<&Record> = consumed.iter().filter(|r| r.partition == *p).collect();
            let offsets: Vec<i64> = read.iter().map(|r| r.offset).collect();
            assert_eq!(
                offsets,
                (0..rs.len() as i64).collect::<Vec<_>>(),
                "{}",
                at(&format!("consumed offsets of {p}"))
            );
            for r in &read {
                assert_eq!(*r, produced_at[&(r.partition, r.offset)], "{}", at("consumed vs produced"));
            }
            assert_eq!(int(&positions[format!("{topic}/{p}")]), rs.len() as i64, "{}", at("consumer position"));

            // the same log through gregor's codec, from the leader
            assert_eq!(c.offsets(topic, *p).map(|o| o.0), Some(rs.len() as i64), "{}", at("high watermark"));
            let mut conn = Conn::open(c.broker_addr(c.leader(topic, *p).unwrap()).unwrap()).await;
            let f = conn.call(0, &fetch(topic, *p, 0, 0)).await;
            let part = &f.topics[0].partitions[0];
            assert_eq!((part.error_code, part.high_watermark), (0, rs.len() as i64), "{}", at("fetch"));
            for entry in part.message_set.entries() {
                let entry = entry.unwrap();
                assert_eq!(entry.message.compression().unwrap(), codec, "{}", at("codec kept in the log"));
            }
            let ours: Vec<Record> = part
                .messages(topic, 0)
                .unwrap()
                .messages
                .into_iter()
                .map(|m| Record {
                    partition: *p,
                    offset: m.offset,
                    key: m.message.key.unwrap().to_vec(),
                    value: m.message.value.unwrap().to_vec(),
                })
                .collect();
            assert_eq!(ours.iter().collect::<Vec<_>>(), read, "{}", at(&format!("gregor's fetch of {p}")));
        }

        // kafka-python's Produce requests: v0, the acks asked, message sets in the codec
        let mut sent = 0;
        for r in &log {
            let AnyRequest::Produce(req) = &r.request else { continue };
            for t in req.topics.iter().filter(|t| &t.topic == topic) {
                assert_eq!(r.header.api_version, 0, "{}", at("Produce version"));
                assert_eq!(req.required_acks, if acks == "all" { -1 } else { 1 }, "{}", at("required_acks"));
                for p in &t.partitions {
                    for entry in p.message_set.entries() {
                        let m = entry.unwrap().message;
                        assert_eq!(m.compression().unwrap(), codec, "{}", at("codec as sent"));
                        if codec == Compression::Lz4 {
                            let v = m.value.as_deref().unwrap();
                            assert_ne!(&v[..7], &standard[..], "{}", at("lz4 frame with the standard checksum"));
                            assert_eq!(&v[..7], &kafka08[..], "{}", at("lz4 frame header as Kafka 0.8 writes it"));
                        }
                    }
                    sent += p.message_set.decode(&DecodeOptions::default()).unwrap().messages.len();
                }
            }
        }
        assert_eq!(sent, COUNT, "{}", at("messages in Produce requests (retries=0)"));
    }

    // pinned to 0.8.2: nothing but version 0 of the four APIs a non-group client uses
    let keys: BTreeSet<i16> = log.iter().map(|r| r.header.api_key.code()).collect();
    assert!(keys.is_subset(&BTreeSet::from([0, 1, 2, 3])), "api keys {keys:?}");
    assert!(log.iter().all(|r| r.header.api_version == 0), "every request is v0");
    let offsets: Vec<&OffsetsRequest> =
        log.iter().filter_map(|r| if let AnyRequest::Offsets(o) = &r.request { Some(o) } else { None }).collect();
    assert!(
        offsets.iter().flat_map(|o| o.topics.iter().flat_map(|t| &t.partitions)).any(|p| p.time == -2),
        "seek_to_beginning asks for the earliest offset: {offsets:?}"
    );
    assert!(log.iter().all(|r| match &r.request {
        AnyRequest::Fetch(f) => f.replica_id == -1,
        _ => true,
    }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_produces_and_consumes_every_codec_with_acks_1() {
    produce_and_consume("kp-acks1", "1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_produces_and_consumes_every_codec_with_acks_all() {
    produce_and_consume("kp-acksall", "all").await;
}

// --------------------------------------------------------------------------------------------
// 2. Offsets in ZooKeeper (v0)
// --------------------------------------------------------------------------------------------

async fn znode(c: &FakeCluster, path: &str) -> Option<String> {
    c.zk().get(path).await.unwrap().map(|(data, _)| String::from_utf8(data).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_offset_commit_and_fetch_v0_use_zookeeper() {
    let Some(c) = cluster_with_python("kp-offsets-v0", 3).await else { return };
    let (group, topic) = ("kp-zk-group", "kp-zk-topic");
    c.create_topic(topic, 3, 2).await.unwrap();
    let bootstrap = c.bootstrap();

    // raw OffsetCommit v0 of 42 for partition 0, from kafka-python's low-level client
    let lines = run_script(&["offsets-v0", &bootstrap, "commit", group, topic, "42"]).await;
    assert_eq!(rows(one(&lines, "commit_v0")), [json!([topic, 0, 0])]);
    assert_eq!(znode(&c, &paths::offset(group, topic, 0)).await.as_deref(), Some("42"), "the offset is a znode");
    // an offset written as the Scala ZooKeeper consumer writes it is what v0 answers
    c.zk().set_or_create(&paths::offset(group, topic, 2), b"17").await.unwrap();

    let lines = run_script(&["offsets-v0", &bootstrap, "fetch", group, topic, "0"]).await;
    let fetches = events(&lines, "fetch_v0");
    assert_eq!(fetches.len(), 3, "every broker answers v0");
    for f in fetches {
        assert_eq!(
            rows(f),
            [json!([topic, 0, 42, "", 0]), json!([topic, 1, -1, "", 3]), json!([topic, 2, 17, "", 0])],
            "OffsetFetch v0 from broker {}: the metadata is not kept, a missing znode is 3",
            f["node"]
        );
    }

    // KafkaConsumer(api_version=(0, 8, 1)): commit() and committed() are v0 to any broker
    let lines = run_script(&["consumer-zk", &bootstrap, group, topic, "1", "7"]).await;
    let got = one(&lines, "consumer_zk");
    assert_eq!((int(&got["offset"]), got["metadata"].as_str()), (7, Some("")));
    assert_eq!(znode(&c, &paths::offset(group, topic, 1)).await.as_deref(), Some("7"));

    // gregor's codec reads the same
    let mut conn = Conn::open(c.broker_addr(1).unwrap()).await;
    let r = conn.call(0, &OffsetFetchRequest::new(group, vec![OffsetFetchTopic::new(topic, vec![0, 1, 2])])).await;
    let got: Vec<(i32, i64, Option<&str>, i16)> =
        r.topics[0].partitions.iter().map(|p| (p.partition, p.offset, p.metadata.as_deref(), p.error_code)).collect();
    assert_eq!(got, [(0, 42, Some(""), 0), (1, 7, Some(""), 0), (2, 17, Some(""), 0)]);

    let log = python_requests(&c);
    let commits: Vec<(&RequestHeader, &OffsetCommitRequest)> = log
        .iter()
        .filter_map(|r| if let AnyRequest::OffsetCommit(o) = &r.request { Some((&r.header, o)) } else { None })
        .collect();
    assert_eq!(commits.len(), 2, "{commits:?}");
    for (h, req) in &commits {
        assert_eq!((h.api_version, req.group_id.as_str()), (0, group));
        assert_eq!(req.topics[0].partitions[0].metadata.as_deref(), Some("dropped-by-v0"));
    }
    assert!(
        log.iter().all(|r| !matches!(r.header.api_key, ApiKey::ConsumerMetadata)
            && (r.header.api_key != ApiKey::OffsetFetch || r.header.api_version == 0)),
        "ZooKeeper storage needs no coordinator and only v0"
    );
    assert!(c.partitions(gregor_testkit::cluster::OFFSETS_TOPIC).is_empty(), "no __consumer_offsets for v0");
}

// --------------------------------------------------------------------------------------------
// 3. Offsets in Kafka (v1) through the coordinator
// --------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_offset_commit_and_fetch_v1_through_the_coordinator() {
    let Some(c) = cluster_with_python("kp-offsets-v1", 3).await else { return };
    let (group, topic) = ("kp-kafka-group", "kp-kafka-topic");
    c.create_topic(topic, 2, 2).await.unwrap();
    let bootstrap = c.bootstrap();

    let lines = run_script(&["offsets-v1", &bootstrap, group, topic, "42", "kp-meta"]).await;
    let found = one(&lines, "coordinator");
    let errors: Vec<i64> = found["errors"].as_array().unwrap().iter().map(int).collect();
    assert_eq!(errors.first(), Some(&15), "a fresh cluster has no __consumer_offsets yet: {errors:?}");
    assert_eq!(errors.last(), Some(&0), "{errors:?}");
    assert!(errors[..errors.len() - 1].iter().all(|e| *e == 15), "{errors:?}");
    let coordinator = int(&found["coordinator_id"]) as i32;
    let addr = c.broker_addr(coordinator).unwrap_or_else(|| panic!("coordinator {coordinator} is no broker"));
    assert_eq!((found["host"].as_str(), int(&found["port"])), (Some("127.0.0.1"), i64::from(addr.port())));
    for e in events(&lines, "commit_v1") {
        let expect = if e["coordinator"] == true { 0 } else { 16 };
        assert_eq!(rows(e), [json!([topic, 0, expect])], "OffsetCommit v1 at broker {}", e["node"]);
    }
    assert_eq!(events(&lines, "commit_v1").len(), 3);
    for e in events(&lines, "fetch_v1") {
        let expect = if e["coordinator"] == true {
            [json!([topic, 0, 42, "kp-meta", 0]), json!([topic, 1, -1, "", 0])]
        } else {
            [json!([topic, 0, -1, "", 16]), json!([topic, 1, -1, "", 16])]
        };
        assert_eq!(rows(e), expect, "OffsetFetch v1 at broker {}", e["node"]);
    }

    // KafkaConsumer(api_version=(0, 8, 2)): commit() and committed() are v1 at the coordinator
    let lines = run_script(&["consumer-kafka", &bootstrap, group, topic, "1", "9", "kc-meta"]).await;
    let got = one(&lines, "consumer_kafka");
    assert_eq!(got["before"], Value::Null, "nothing committed for partition 1 yet");
    assert_eq!((int(&got["offset"]), got["metadata"].as_str()), (9, Some("kc-meta")));
    assert_eq!(got["coordinator"], format!("coordinator-{coordinator}"), "kafka-python's name for the coordinator");

    // gregor's codec at the coordinator reads both; ZooKeeper holds neither
    let mut conn = Conn::open(addr).await;
    let cm = conn.call(0, &ConsumerMetadataRequest::group(group)).await;
    assert_eq!((cm.error_code, cm.node_id), (0, coordinator));
    let r = conn.call(1, &OffsetFetchRequest::new(group, vec![OffsetFetchTopic::new(topic, vec![0, 1])])).await;
    let got: Vec<(i64, Option<&str>, i16)> =
        r.topics[0].partitions.iter().map(|p| (p.offset, p.metadata.as_deref(), p.error_code)).collect();
    assert_eq!(got, [(42, Some("kp-meta"), 0), (9, Some("kc-meta"), 0)]);
    assert!(
        c.zk().exists(&format!("{}/{group}", paths::CONSUMERS)).await.unwrap().is_none(),
        "v1 is not ZooKeeper storage"
    );

    let log = python_requests(&c);
    let commits: Vec<(&LoggedRequest, &OffsetCommitRequest)> = log
        .iter()
        .filter_map(|r| if let AnyRequest::OffsetCommit(o) = &r.request { Some((r, o)) } else { None })
        .collect();
    assert_eq!(commits.len(), 4, "three raw commits and the consumer's");
    for (r, req) in &commits {
        assert_eq!(r.header.api_version, 1);
        assert_eq!((req.group_generation_id, req.consumer_id.as_str()), (-1, ""));
        assert_eq!(req.topics[0].partitions[0].timestamp, -1, "the broker's clock");
    }
    let (consumer_commit, _) = commits.last().unwrap();
    assert_eq!(consumer_commit.broker, coordinator, "KafkaConsumer commits at the coordinator");
    assert!(consumer_commit.header.client_id.as_deref().unwrap().starts_with("kafka-python-"));
    let asks = log.iter().filter(|r| r.header.api_key == ApiKey::ConsumerMetadata).count();
    assert!(asks > errors.len(), "the consumer asked for the coordinator too ({asks} ConsumerMetadata requests)");
    assert!(log.iter().all(|r| r.header.api_key != ApiKey::ConsumerMetadata || r.header.api_version == 0));
}

// --------------------------------------------------------------------------------------------
// 4. kafka-python's frames, captured into the protocol crate's fixtures
// --------------------------------------------------------------------------------------------

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../protocol/tests/data/kafka-python-live")
}

/// The whole frame of a logged request, as kafka-python sent it (decoding and re-encoding are
/// exact).
fn reencode(header: &RequestHeader, request: &AnyRequest) -> Vec<u8> {
    let mut buf = BytesMut::new();
    match request {
        AnyRequest::Produce(r) => encode_request(header, r, &mut buf),
        AnyRequest::Fetch(r) => encode_request(header, r, &mut buf),
        AnyRequest::Offsets(r) => encode_request(header, r, &mut buf),
        AnyRequest::Metadata(r) => encode_request(header, r, &mut buf),
        AnyRequest::OffsetCommit(r) => encode_request(header, r, &mut buf),
        AnyRequest::OffsetFetch(r) => encode_request(header, r, &mut buf),
        AnyRequest::ConsumerMetadata(r) => encode_request(header, r, &mut buf),
        other => panic!("no encoder for {other:?}"),
    }
    .unwrap_or_else(|e| panic!("re-encoding {header:?}: {e}"));
    buf.to_vec()
}

/// Splits and decodes one whole request frame.
fn decode_frame(name: &str, bytes: &[u8]) -> (RequestHeader, AnyRequest) {
    let mut buf = BytesMut::from(bytes);
    let mut frame = split_frame(&mut buf, 1 << 24).unwrap().unwrap_or_else(|| panic!("{name}: not a whole frame"));
    assert!(buf.is_empty(), "{name}: {} bytes after the frame", buf.len());
    let header = RequestHeader::decode(&mut frame).unwrap_or_else(|e| panic!("{name}: header: {e}"));
    let request = AnyRequest::decode(&header, frame).unwrap_or_else(|e| panic!("{name}: body: {e}"));
    (header, request)
}

/// What must not change between two captures: everything but the correlation id and the
/// compressed bytes (gzip stamps the time), with topics and partitions in order.
fn shape(header: &RequestHeader, request: &AnyRequest) -> Value {
    fn sorted(mut v: Vec<Value>) -> Value {
        v.sort_by_key(|x| x.to_string());
        Value::Array(v)
    }
    let body = match request {
        AnyRequest::Produce(r) => json!({
            "acks": r.required_acks, "timeout": r.timeout,
            "topics": sorted(r.topics.iter().flat_map(|t| t.partitions.iter().map(|p| {
                let codecs: Vec<&str> = p.message_set.entries()
                    .map(|e| e.unwrap().message.compression().unwrap().name()).collect();
                let messages: Vec<Value> = p.message_set.decode(&DecodeOptions::default()).unwrap().messages.iter()
                    .map(|m| json!([m.offset, m.message.attributes, m.message.key.as_deref(), m.message.value.as_deref()])).collect();
                json!([t.topic, p.partition, codecs, messages])
            })).collect()),
        }),
        AnyRequest::Fetch(r) => json!({
            "replica": r.replica_id, "max_wait": r.max_wait_time, "min_bytes": r.min_bytes,
            "topics": sorted(r.topics.iter().flat_map(|t| t.partitions.iter()
                .map(|p| json!([t.topic, p.partition, p.fetch_offset, p.max_bytes]))).collect()),
        }),
        AnyRequest::Offsets(r) => json!({
            "replica": r.replica_id,
            "topics": sorted(r.topics.iter().flat_map(|t| t.partitions.iter()
                .map(|p| json!([t.topic, p.partition, p.time, p.max_number_of_offsets]))).collect()),
        }),
        AnyRequest::Metadata(r) => json!({ "topics": sorted(r.topic_names().map(|t| json!(t)).collect()) }),
        AnyRequest::OffsetCommit(r) => json!({
            "group": r.group_id, "generation": r.group_generation_id, "consumer": r.consumer_id,
            "topics": sorted(r.topics.iter().flat_map(|t| t.partitions.iter()
                .map(|p| json!([t.topic, p.partition, p.offset, p.timestamp, p.metadata]))).collect()),
        }),
        AnyRequest::OffsetFetch(r) => json!({
            "group": r.group_id,
            "topics": sorted(r.topics.iter().flatten().flat_map(|t| t.partitions.iter().map(|p| json!([t.topic, p]))).collect()),
        }),
        AnyRequest::ConsumerMetadata(r) => json!({ "group": r.key }),
        other => panic!("unexpected {other:?}"),
    };
    json!({
        "api_key": header.api_key.code(), "api_version": header.api_version,
        "client_id": header.client_id, "body": body,
    })
}

/// The fixture files and how each is picked from the request log.
fn pick(name: &str, r: &LoggedRequest) -> bool {
    match (name, &r.request) {
        ("metadata_v0_all_topics", AnyRequest::Metadata(m)) => m.wants_all_topics(0),
        ("metadata_v0_topic", AnyRequest::Metadata(m)) => m.topic_names().eq(["kp-none"]),
        ("fetch_v0", AnyRequest::Fetch(f)) => f.topics.len() == 4,
        ("offsets_v0", AnyRequest::Offsets(_)) => true,
        ("offset_commit_v0", AnyRequest::OffsetCommit(_)) | ("offset_fetch_v0", AnyRequest::OffsetFetch(_)) => {
            r.header.api_version == 0
        }
        ("offset_commit_v1", AnyRequest::OffsetCommit(_)) | ("offset_fetch_v1", AnyRequest::OffsetFetch(_)) => {
            r.header.api_version == 1
        }
        ("consumer_metadata_v0", AnyRequest::ConsumerMetadata(_)) => true,
        (name, AnyRequest::Produce(p)) if name.starts_with("produce_v0_") => {
            let topic = format!("kp-{}", name.trim_start_matches("produce_v0_"));
            p.topics.len() == 1 && p.topics[0].topic == topic
        }
        _ => false,
    }
}

const FIXTURES: [&str; 13] = [
    "metadata_v0_all_topics",
    "metadata_v0_topic",
    "produce_v0_none",
    "produce_v0_gzip",
    "produce_v0_snappy",
    "produce_v0_lz4",
    "offsets_v0",
    "fetch_v0",
    "consumer_metadata_v0",
    "offset_commit_v1",
    "offset_fetch_v1",
    "offset_commit_v0",
    "offset_fetch_v0",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_frames_match_the_captured_fixtures() {
    let Some(c) = cluster_with_python("kp-capture", 1).await else { return };
    for codec in CODECS {
        c.create_topic(&format!("kp-{codec}"), 1, 1).await.unwrap();
    }
    let lines = run_script(&["capture", &c.bootstrap(), "kp-group"]).await;
    one(&lines, "done");
    let errors = &one(&lines, "coordinator")["errors"];
    assert_eq!(errors[0], 15, "the first ConsumerMetadata of a fresh cluster: {errors}");
    assert_eq!(rows(one(&lines, "commit_v1")), [json!(["kp-none", 0, 0])]);
    assert_eq!(rows(one(&lines, "fetch_v1")), [json!(["kp-none", 0, 3, "kp-meta", 0])]);
    assert_eq!(rows(one(&lines, "commit_v0")), [json!(["kp-gzip", 0, 0])]);
    assert_eq!(rows(one(&lines, "fetch_v0")), [json!(["kp-gzip", 0, 2, "", 0])]);

    let log = python_requests(&c);
    let write = std::env::var(FIXTURE_ENV).is_ok_and(|v| v == "1");
    let dir = fixture_dir();
    if write {
        std::fs::create_dir_all(&dir).unwrap();
    }
    for name in FIXTURES {
        let r = log.iter().find(|r| pick(name, r)).unwrap_or_else(|| {
            let seen: Vec<String> =
                log.iter().map(|r| format!("{} v{} {:?}", r.header.api_key, r.header.api_version, r.request)).collect();
            panic!("{name}: no such request from kafka-python in {seen:#?}")
        });
        let bytes = reencode(&r.header, &r.request);
        let (h, req) = decode_frame(name, &bytes);
        assert_eq!((&h, &req), (&r.header, &r.request), "{name}: decode(encode(x)) == x");
        let file = dir.join(format!("{name}.req.bin"));
        if write {
            std::fs::write(&file, &bytes).unwrap();
        }
        let kept = std::fs::read(&file)
            .unwrap_or_else(|e| panic!("{}: {e} (run with {FIXTURE_ENV}=1 to capture it)", file.display()));
        let (kh, kreq) = decode_frame(name, &kept);
        assert_eq!(reencode(&kh, &kreq), kept, "{name}: the kept frame re-encodes byte for byte");
        assert_eq!(shape(&kh, &kreq), shape(&r.header, &r.request), "{name}: kept vs what kafka-python sends now");
    }
    let on_disk: BTreeSet<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    let expected: BTreeSet<String> =
        FIXTURES.iter().map(|n| format!("{n}.req.bin")).chain(["README.md".to_owned()]).collect();
    assert_eq!(on_disk, expected, "files in {}", dir.display());
}

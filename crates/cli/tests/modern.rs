//! The `gregor` binary against the FakeCluster's modern mode (brokers of a KRaft cluster, Kafka
//! 3.7 to 4.x, no ZooKeeper), run as a child process through `--bootstrap-server` (Kafka's
//! current tools' name; `--broker-list` is the same flag):
//!
//! * `produce` with each codec (zstd included) and keys from stdin, `fetch --print-timestamp
//!   --print-headers` of every partition reading each line back exactly: contiguous offsets,
//!   input order per partition, keys on their murmur2 partition, and the CreateTime stamp the
//!   producer wrote (read from the Produce requests the brokers logged); the batches on the
//!   wire are RecordBatch v2 in that codec, at the negotiated Produce v10 and Fetch v12;
//! * headers written by another client (a raw Produce v9) printed as `key:value,...`;
//! * `offsets` latest and earliest per partition, and by time: ListOffsets v1+ answers the
//!   first offset stamped at or after it, one offset whatever `--max` says;
//! * `perf produce` counting its messages, spread round robin.
//!
//! The modern mode needs no ZooKeeper: these tests always run.

use std::collections::{BTreeMap, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

mod common;

use bytes::Bytes;
use common::{run_program, Run};
use gregor_producer::murmur2_partition;
use gregor_protocol::frame::ApiKey;
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::messages::{AnyRequest, ProducePartition, ProduceRequest, ProduceTopic};
use gregor_protocol::record::{Batches, RecordBatchBuilder};
use gregor_protocol::{Compression, MessageSet};
use gregor_testkit::wire::Conn;
use gregor_testkit::FakeCluster;

/// Runs `gregor args` with `input` on stdin.
async fn gregor(args: &[&str], input: &[u8]) -> Run {
    run_program(env!("CARGO_BIN_EXE_gregor"), args, input).await
}

/// A 3-broker modern cluster.
async fn modern() -> FakeCluster {
    FakeCluster::modern().brokers(3).start().await.expect("the modern fake starts")
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_millis() as i64
}

/// One fetched line: offset, timestamp field, headers field, key, value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fetched {
    offset: i64,
    timestamp: String,
    headers: String,
    key: String,
    value: String,
}

/// `gregor fetch` of a whole partition with every field printed.
async fn fetch_all(flag: &str, brokers: &str, topic: &str, partition: i32) -> Vec<Fetched> {
    let p = partition.to_string();
    let args = [
        "fetch",
        flag,
        brokers,
        "--topic",
        topic,
        "--partition",
        &p,
        "--offset",
        "earliest",
        "--print-offset",
        "--print-timestamp",
        "--print-headers",
        "--print-key",
    ];
    let run = gregor(&args, b"").await;
    run.ok()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.splitn(5, '\t').collect();
            let [offset, timestamp, headers, key, value] = f[..] else { panic!("five fields: {l:?}") };
            Fetched {
                offset: offset.parse().expect("an offset"),
                timestamp: timestamp.to_owned(),
                headers: headers.to_owned(),
                key: key.to_owned(),
                value: value.to_owned(),
            }
        })
        .collect()
}

/// `n` lines for `--key-separator :`: null keys (no colon), empty values and keys, colons in
/// values, non-ASCII, keys repeated so each partition holds many. Every line is unique.
fn lines(n: usize, tag: &str) -> Vec<(Option<String>, String)> {
    (0..n)
        .map(|i| match i % 6 {
            0 => (None, format!("line {i} of {tag} has no key")),
            1 => (Some(format!("solo-{i}")), String::new()),
            2 => (Some(String::new()), format!("empty key {i}")),
            3 => (Some(format!("k{}", i % 7)), format!("colons:in:the:value {i}")),
            4 => (Some(format!("k{}", i % 7)), format!("ünïcødé ✓ {i} — {tag}")),
            _ => (Some(format!("k{}", i % 7)), format!("value {i} of {tag} {}", "x".repeat(i % 40))),
        })
        .collect()
}

fn input(lines: &[(Option<String>, String)]) -> Vec<u8> {
    let text: String = lines
        .iter()
        .map(|(k, v)| match k {
            Some(k) => format!("{k}:{v}\n"),
            None => format!("{v}\n"),
        })
        .collect();
    text.into_bytes()
}

/// What the brokers received for `topic` in Produce requests: the versions used, the codec of
/// each batch, and each record's (key, value) -> CreateTime stamp.
#[derive(Debug, Default)]
struct OnTheWire {
    versions: Vec<i16>,
    codecs: Vec<Compression>,
    stamps: HashMap<(Option<Bytes>, Option<Bytes>), i64>,
}

fn on_the_wire(c: &FakeCluster, topic: &str) -> OnTheWire {
    let mut wire = OnTheWire::default();
    for r in c.requests() {
        let AnyRequest::Produce(p) = &r.request else { continue };
        for t in p.topics.iter().filter(|t| t.topic == topic) {
            wire.versions.push(r.header.api_version);
            for part in &t.partitions {
                for batch in Batches::new(part.message_set.as_bytes().clone(), &DecodeOptions::default()) {
                    let batch = batch.expect("a whole RecordBatch v2");
                    wire.codecs.push(batch.compression());
                    for record in batch.records() {
                        let record = record.expect("a whole record");
                        wire.stamps.insert((record.key, record.value), record.timestamp);
                    }
                }
            }
        }
    }
    wire.versions.sort_unstable();
    wire.versions.dedup();
    wire.codecs.sort_by_key(|c| *c as u8);
    wire.codecs.dedup();
    wire
}

/// The highest version of `api` the brokers received.
fn highest(c: &FakeCluster, api: ApiKey) -> Option<i16> {
    c.requests().iter().filter(|r| r.header.api_key == api).map(|r| r.header.api_version).max()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_with_each_codec_then_fetch_and_offsets_read_it_back_exactly() {
    let c = modern().await;
    let b = c.bootstrap();
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("modern-{codec}");
        c.create_topic(&topic, 3, 2).await.unwrap();
        let sent = lines(300, codec);
        let before = now_ms();
        let run = gregor(
            &[
                "produce",
                "--bootstrap-server",
                &b,
                "--topic",
                &topic,
                "--compression",
                codec,
                "--acks",
                "-1",
                "--key-separator",
                ":",
            ],
            &input(&sent),
        )
        .await;
        assert_eq!(run.ok(), "", "{codec}: nothing on stdout");
        let after = now_ms();

        let wire = on_the_wire(&c, &topic);
        let expected_codec = Compression::from_name(codec).expect("a codec name");
        assert_eq!(wire.codecs, [expected_codec], "{codec}: the codec of every batch on the wire");
        assert_eq!(wire.versions, [10], "{codec}: Produce v10, the fake's newest");
        assert_eq!(wire.stamps.len(), sent.len(), "{codec}: every line went out once");

        let mut counts = BTreeMap::new();
        let mut seen = vec![false; sent.len()];
        let index: HashMap<(Option<&str>, &str), usize> =
            sent.iter().enumerate().map(|(i, (k, v))| ((k.as_deref(), v.as_str()), i)).collect();
        for p in 0..3 {
            // --broker-list is kept as the same flag
            let flag = if p == 1 { "--broker-list" } else { "--bootstrap-server" };
            let fetched = fetch_all(flag, &b, &topic, p).await;
            let mut last = None;
            for (n, f) in fetched.iter().enumerate() {
                assert_eq!(f.offset, n as i64, "{codec}: offsets of partition {p} are contiguous from 0");
                assert_eq!(f.headers, "NO_HEADERS", "{codec}: {f:?}");
                let key = (f.key != "null").then_some(f.key.as_str());
                let i = *index
                    .get(&(key, f.value.as_str()))
                    .unwrap_or_else(|| panic!("{codec}: partition {p} holds {f:?}, never sent"));
                assert!(!seen[i], "{codec}: line {i} fetched twice");
                seen[i] = true;
                assert!(last < Some(i), "{codec}: partition {p} has line {i} after line {last:?}");
                last = Some(i);
                if let Some(k) = key {
                    assert_eq!(murmur2_partition(k.as_bytes(), 3) as i32, p, "{codec}: key {k:?}");
                }
                // the very stamp the producer wrote, from the time of the run
                let wire_key = (key.map(|k| Bytes::copy_from_slice(k.as_bytes())), Some(Bytes::from(f.value.clone())));
                let stamp = wire.stamps[&wire_key];
                assert_eq!(f.timestamp, format!("CreateTime:{stamp}"), "{codec}: {f:?}");
                assert!((before..=after).contains(&stamp), "{codec}: {stamp} not within {before}..={after}");
            }
            counts.insert(p, fetched.len());
        }
        let missing: Vec<usize> = (0..sent.len()).filter(|i| !seen[*i]).collect();
        assert!(missing.is_empty(), "{codec}: lines never fetched: {missing:?}");
        assert!(counts.values().all(|n| *n > 0), "{codec}: every partition got lines: {counts:?}");
        let per_partition: Vec<String> = counts.iter().map(|(p, n)| format!("partition {p}: {n}")).collect();
        assert_eq!(run.stderr, format!("300 messages sent to {topic} ({})\n", per_partition.join(", ")));

        let latest = gregor(&["offsets", "--bootstrap-server", &b, "--topic", &topic, "--time", "latest"], b"").await;
        let expected: String = counts.iter().map(|(p, n)| format!("{topic}:{p}:{n}\n")).collect();
        assert_eq!(latest.ok(), expected, "{codec}");
        let earliest = gregor(&["offsets", "--broker-list", &b, "--topic", &topic, "--time", "-2"], b"").await;
        assert_eq!(earliest.ok(), format!("{topic}:0:0\n{topic}:1:0\n{topic}:2:0\n"), "{codec}");
    }
    assert_eq!(highest(&c, ApiKey::Fetch), Some(12), "gregor's newest Fetch (the fake speaks 16)");
    assert!(highest(&c, ApiKey::Offsets).is_some_and(|v| v >= 1), "ListOffsets v1+");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_prints_the_headers_and_stamps_another_client_wrote() {
    let c = modern().await;
    c.create_topic("headers", 1, 1).await.unwrap();
    let leader = c.leader("headers", 0).expect("a leader");
    let mut batch = RecordBatchBuilder::new(Compression::Zstd);
    batch.append_with_headers(1_700_000_000_000, Some(b"k"), Some(b"v"), &[("h1", Some(b"a")), ("h2", None)]).unwrap();
    batch.append(1_700_000_000_007, None, Some(b"plain")).unwrap();
    let produce = ProduceRequest {
        required_acks: 1,
        timeout: 5000,
        topics: vec![ProduceTopic::new(
            "headers",
            vec![ProducePartition::new(0, MessageSet::from_bytes(batch.finish().unwrap()))],
        )],
        ..Default::default()
    };
    let mut conn = Conn::open(c.broker_addr(leader).expect("the leader's address")).await;
    let answer = conn.call(9, &produce).await;
    assert_eq!(answer.topics[0].partitions[0].error_code, 0, "{answer:?}");

    let fetched = fetch_all("--bootstrap-server", &c.bootstrap(), "headers", 0).await;
    let line = |offset, timestamp: &str, headers: &str, key: &str, value: &str| Fetched {
        offset,
        timestamp: timestamp.to_owned(),
        headers: headers.to_owned(),
        key: key.to_owned(),
        value: value.to_owned(),
    };
    assert_eq!(
        fetched,
        [
            line(0, "CreateTime:1700000000000", "h1:a,h2:null", "k", "v"),
            line(1, "CreateTime:1700000000007", "NO_HEADERS", "null", "plain"),
        ]
    );
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_by_time_answer_the_first_offset_at_or_after_it() {
    let c = modern().await;
    c.create_topic("times", 2, 1).await.unwrap();
    let b = c.bootstrap();
    let produce = ["produce", "--bootstrap-server", &b, "--topic", "times", "--partition", "0"];
    gregor(&produce, b"a\nb\nc\n").await.ok();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let between = now_ms().to_string();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    gregor(&produce, b"d\ne\n").await.ok();
    let later = (now_ms() + 60_000).to_string();
    let offsets = |time: String, max: &'static str| {
        let b = b.clone();
        async move {
            gregor(&["offsets", "--bootstrap-server", &b, "--topic", "times", "--time", &time, "--max", max], b"").await
        }
    };
    // ListOffsets v1+: one offset per partition, whatever --max says; a time gives the first
    // record stamped at or after it (none when every record is older)
    assert_eq!(offsets("-1".into(), "5").await.ok(), "times:0:5\ntimes:1:0\n");
    assert_eq!(offsets("earliest".into(), "5").await.ok(), "times:0:0\ntimes:1:0\n");
    assert_eq!(offsets(between, "1").await.ok(), "times:0:3\ntimes:1:\n");
    assert_eq!(offsets("0".into(), "1").await.ok(), "times:0:0\ntimes:1:\n");
    assert_eq!(offsets(later, "1").await.ok(), "times:0:\ntimes:1:\n");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn perf_produce_counts_its_messages() {
    let c = modern().await;
    c.create_topic("perf", 3, 2).await.unwrap();
    let b = c.bootstrap();
    let run = gregor(
        &["perf", "produce", "--bootstrap-server", &b, "--topic", "perf", "--messages", "300", "--message-size", "20"],
        b"",
    )
    .await;
    let text = run.ok();
    assert!(text.starts_with("produced 300 messages (0.01 MB) in "), "{text}");
    // acks=1: what was acknowledged is in the leaders' logs (the high watermark follows once
    // the followers fetch it)
    let hws: Vec<i64> = c.partitions("perf").iter().map(|p| c.offsets("perf", *p).expect("a partition").1).collect();
    let line = format!("\npartitioner round_robin: 3 partitions, p0 {}, p1 {}, p2 {}\n", hws[0], hws[1], hws[2]);
    assert!(text.contains(&line), "{text}");
    assert_eq!(hws, [100, 100, 100], "round robin");

    let j = gregor(
        &["perf", "produce", "--broker-list", &b, "--topic", "perf", "--messages", "50", "--output", "json"],
        b"",
    )
    .await
    .json();
    assert_eq!(j["messages"], 50, "{j}");
    assert_eq!(j["failed"], 0, "{j}");
    assert_eq!(j["bytes"], 50 * 100, "{j}");
    let leo: i64 = c.partitions("perf").iter().map(|p| c.offsets("perf", *p).expect("a partition").1).sum();
    assert_eq!(leo, 350);
    assert_eq!(highest(&c, ApiKey::Produce), Some(10));
    c.shutdown().await;
}

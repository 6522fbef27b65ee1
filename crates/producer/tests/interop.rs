//! Interop: what gregor's producer writes is read back intact by clients gregor did not write,
//! and gregor's murmur2 partitioner agrees with librdkafka's.
//!
//! * `kcat_reads_what_gregor_produced_with_every_codec` and
//!   `kafka_python_reads_what_gregor_produced_with_every_codec`: an [`AsyncProducer`] writes
//!   keyed and null-keyed records (ASCII, UTF-8 and binary keys and values, the empty key, a
//!   few large values) with each compression (none, gzip, snappy, lz4) to a 3-partition,
//!   replication-2 topic with acks=-1; kcat (`-C -e -o beginning`) and kafka-python's
//!   `KafkaConsumer` (assign + seek_to_beginning) read every partition and must see exactly
//!   what the delivery results promised: same partitions, offsets, keys (null stays null,
//!   empty stays empty), values, and per-partition order.
//! * `murmur2_partitions_match_librdkafka`: ~500 distinct non-null keys (ASCII, UTF-8,
//!   binary, the empty key) produced by kcat with `-X partitioner=murmur2` to a 7-partition
//!   topic; the partition kcat chose for each key must equal
//!   [`gregor_producer::murmur2_partition`] and the partition gregor's producer (with
//!   [`PartitionerKind::Murmur2`]) actually put the same key in. Null keys are not compared:
//!   librdkafka's `murmur2` hashes them like the empty key and `murmur2_random` spreads them
//!   at random, while gregor's Murmur2 round-robins them.
//!
//! kcat runs in Kafka 0.8.2 mode (`-X api.version.request=false -X
//! broker.version.fallback=0.8.2`), kafka-python with `api_version=(0, 8, 2)` under
//! `/usr/bin/python3` (`tests/python/interop_client.py`). Every child process is bounded by a
//! timeout after which it is killed and the test fails. Without kcat or kafka-python the tests
//! fail, naming the apt packages, unless `GREGOR_ALLOW_SKIP=1` is set outside CI: then they
//! print why and skip.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::Bounded;
use gregor_producer::{murmur2_partition, AsyncProducer, DeliveryFuture, PartitionerKind, Record};
use gregor_protocol::Compression;
use gregor_serde::BytesEncoder;
use gregor_testkit::support::cluster_or_skip;
use gregor_testkit::support::MessageAt;
use gregor_testkit::tools::{self, kafka_python_or_skip, kcat_or_skip, Finished, CODECS};
use gregor_testkit::FakeCluster;

// ---------------------------------------------------------------------------------------------
// external tools
// ---------------------------------------------------------------------------------------------

/// kcat's output format: lengths first (`%K`/`%S`, -1 for null), so keys and values holding
/// tabs, newlines or any byte are parsed exactly.
const KCAT_FORMAT: &str = "%p\\t%o\\t%K\\t%S\\t%k\\t%s\\n";

const KCAT_LIMIT: Duration = Duration::from_secs(30);
const PYTHON_LIMIT: Duration = Duration::from_secs(45);

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/interop_client.py")
}

/// Runs kcat (`-b <bootstrap>`, 0.8.2 mode, `args`) and fails unless it exits with 0.
async fn kcat(bin: &Path, bootstrap: &str, args: &[&str], input: Vec<u8>) -> Finished {
    tools::run_kcat(bin, bootstrap, args, input, KCAT_LIMIT).await
}

/// Runs one command of the kafka-python script and fails unless it exits with 0.
async fn kafka_python(args: &[&str]) -> Finished {
    tools::run_python(&script(), args, PYTHON_LIMIT).await
}

// ---------------------------------------------------------------------------------------------
// records and parsing
// ---------------------------------------------------------------------------------------------

/// Parses kcat's [`KCAT_FORMAT`] output byte by byte.
fn parse_kcat(out: &[u8]) -> Vec<MessageAt> {
    let mut msgs = Vec::new();
    let mut at = 0;
    let field = |at: &mut usize| -> i64 {
        let end = out[*at..].iter().position(|&b| b == b'\t').map(|i| *at + i).expect("a tab in kcat's output");
        let s = std::str::from_utf8(&out[*at..end]).expect("a number");
        *at = end + 1;
        s.parse().unwrap_or_else(|_| panic!("a number in kcat's output, not {s:?}"))
    };
    let bytes = |at: &mut usize, len: i64, then: u8| -> Option<Vec<u8>> {
        let n = usize::try_from(len).unwrap_or(0);
        let b = out[*at..*at + n].to_vec();
        assert_eq!(out[*at + n], then, "separator after {n} bytes at {}", *at);
        *at += n + 1;
        (len >= 0).then_some(b)
    };
    while at < out.len() {
        let partition = field(&mut at) as i32;
        let offset = field(&mut at);
        let klen = field(&mut at);
        let vlen = field(&mut at);
        let key = bytes(&mut at, klen, b'\t');
        let value = bytes(&mut at, vlen, b'\n');
        msgs.push(MessageAt { partition, offset, key, value });
    }
    msgs
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (s != "-").then(|| (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect())
}

/// kafka-python's `consumed`/`produced` lines, with the topic.
fn parse_python(out: &[u8], event: &str) -> Vec<(String, MessageAt)> {
    String::from_utf8(out.to_vec())
        .expect("the script prints ASCII")
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0] == event).then(|| {
                assert_eq!(f.len(), 6, "{l:?}");
                let msg = MessageAt {
                    partition: f[2].parse().unwrap(),
                    offset: f[3].parse().unwrap(),
                    key: unhex(f[4]),
                    value: unhex(f[5]),
                };
                (f[1].to_owned(), msg)
            })
        })
        .collect()
}

/// Messages per partition, in the order given.
fn by_partition(msgs: impl IntoIterator<Item = MessageAt>) -> BTreeMap<i32, Vec<MessageAt>> {
    let mut out: BTreeMap<i32, Vec<MessageAt>> = BTreeMap::new();
    for m in msgs {
        out.entry(m.partition).or_default().push(m);
    }
    out
}

/// Compares what a consumer read with what gregor's delivery results promised, partition by
/// partition, message by message.
fn assert_same(who: &str, topic: &str, expected: &BTreeMap<i32, Vec<MessageAt>>, got: &BTreeMap<i32, Vec<MessageAt>>) {
    let parts = |m: &BTreeMap<i32, Vec<MessageAt>>| m.iter().map(|(p, v)| (*p, v.len())).collect::<BTreeMap<_, _>>();
    assert_eq!(parts(got), parts(expected), "{who} on {topic}: messages per partition");
    for (p, want) in expected {
        let have = &got[p];
        for (i, (h, w)) in have.iter().zip(want).enumerate() {
            assert_eq!(h, w, "{who} on {topic}: message {i} of partition {p}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 1. what gregor produces, read by kcat and kafka-python
// ---------------------------------------------------------------------------------------------

/// Records per codec.
const PER_CODEC: usize = 300;

/// The key of record `i`: null for every 5th, else ASCII, UTF-8, binary (with tab, newline,
/// NUL) or the empty key.
fn key_of(i: usize) -> Option<Vec<u8>> {
    match i % 5 {
        0 => None,
        1 => Some(format!("user-{}", i % 7).into_bytes()),
        2 => Some(format!("ключ-{} 鍵", i % 5).into_bytes()),
        3 => Some(vec![0, 0xff, b'\t', b'\n', (i % 3) as u8, 0x80]),
        _ if i % 10 == 4 => Some(Vec::new()),
        _ => Some(format!("🔑{}", i % 4).into_bytes()),
    }
}

/// The value of record `i`: compressible text with its sequence number, UTF-8 and bytes that
/// are not UTF-8 (tab and newline too); every 50th about 15 KB; a few empty.
fn value_of(codec: &str, i: usize) -> Vec<u8> {
    if i % 97 == 50 {
        return Vec::new();
    }
    let mut v = format!("{codec}|{i:05}|").into_bytes();
    let body = format!("gregor é value {i} ");
    v.extend(body.repeat(if i % 50 == 0 { 600 } else { 4 }).into_bytes());
    v.extend([0, 0xff, (i % 256) as u8, b'\n', b'\t']);
    v
}

/// Produces [`PER_CODEC`] records per codec (topic `<prefix>-<codec>`, 3 partitions,
/// replication 2) with acks=-1, and returns, per topic, the messages per partition as the
/// delivery results placed them. Checks the delivery results are contiguous per partition,
/// in send order, and that the codec went over the wire.
async fn produce_every_codec(c: &FakeCluster, prefix: &str) -> BTreeMap<String, BTreeMap<i32, Vec<MessageAt>>> {
    let mut out = BTreeMap::new();
    for (name, codec) in CODECS {
        let topic = format!("{prefix}-{name}");
        c.create_topic(&topic, 3, 2).await.unwrap();
        let config = common::config(c)
            .request_required_acks(-1)
            .compression_codec(codec)
            .batch_num_messages(40)
            .queue_buffering_max(Duration::from_millis(20))
            .partitioner(PartitionerKind::Murmur2);
        let producer: AsyncProducer<Vec<u8>, Vec<u8>> =
            AsyncProducer::new(config.build().unwrap(), BytesEncoder, BytesEncoder).unwrap();
        let mut pending: Vec<(Option<Vec<u8>>, Vec<u8>, DeliveryFuture)> = Vec::new();
        for i in 0..PER_CODEC {
            let (key, value) = (key_of(i), value_of(name, i));
            let mut record = Record::new(topic.clone(), value.clone());
            if let Some(k) = &key {
                record = record.with_key(k.clone());
            }
            let delivery = producer.send(record).await.unwrap_or_else(|e| panic!("{topic}: send {i}: {e}"));
            pending.push((key, value, delivery));
        }
        let mut sent = Vec::new();
        for (i, (key, value, delivery)) in pending.into_iter().enumerate() {
            let md = delivery.bounded().await.unwrap_or_else(|e| panic!("{topic}: record {i} not delivered: {e}"));
            assert_eq!(*md.topic, *topic);
            sent.push(MessageAt { partition: md.partition, offset: md.offset, key, value: Some(value) });
        }
        let report = producer.close(Duration::from_secs(5)).bounded().await;
        assert!(report.is_ok(), "{topic}: close: {report:?}");

        // send order is offset order in each partition, offsets contiguous from 0
        let placed = by_partition(sent);
        for (p, msgs) in &placed {
            let offsets: Vec<i64> = msgs.iter().map(|m| m.offset).collect();
            assert_eq!(offsets, (0..msgs.len() as i64).collect::<Vec<_>>(), "{topic}/{p}: delivery offsets");
            assert_eq!(c.offsets(&topic, *p), Some((msgs.len() as i64, msgs.len() as i64)), "{topic}/{p}: hw, leo");
        }
        assert_eq!(placed.len(), 3, "{topic}: every partition got records");

        // the codec asked for is what went over the wire, in more than one wrapper
        let entries: Vec<_> = common::produced_entries(c, &topic).into_iter().flatten().collect();
        assert!(entries.len() > 3, "{topic}: {} top-level entries", entries.len());
        if codec != Compression::None {
            for e in &entries {
                assert_eq!(e.compression().unwrap(), codec, "{topic}: every wrapper uses {codec}");
            }
        }
        out.insert(topic, placed);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_reads_what_gregor_produced_with_every_codec() {
    let Some(bin) = kcat_or_skip() else { return };
    let c = cluster_or_skip!("interop-kcat-reads");
    let started = Instant::now();
    let topics = produce_every_codec(&c, "to-kcat").await;
    let produced = started.elapsed();

    // one kcat per topic, all at once
    let bootstrap = c.bootstrap();
    let mut runs = Vec::new();
    for topic in topics.keys() {
        let (bin, bootstrap, topic) = (bin.clone(), bootstrap.clone(), topic.clone());
        runs.push(tokio::spawn(async move {
            let args = ["-C", "-t", &topic, "-e", "-o", "beginning", "-f", KCAT_FORMAT];
            kcat(&bin, &bootstrap, &args, Vec::new()).await
        }));
    }
    for (run, (topic, expected)) in runs.into_iter().zip(&topics) {
        let run = run.await.unwrap();
        let got = by_partition(parse_kcat(&run.stdout));
        assert_same("kcat", topic, expected, &got);
        eprintln!("kcat read {topic}: {} messages in {:?}", got.values().map(Vec::len).sum::<usize>(), run.elapsed);
    }
    eprintln!("gregor produced {} topics in {produced:?}; total {:?}", topics.len(), started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_reads_what_gregor_produced_with_every_codec() {
    if kafka_python_or_skip().await.is_none() {
        return;
    }
    let c = cluster_or_skip!("interop-python-reads");
    let topics = produce_every_codec(&c, "to-python").await;
    let bootstrap = c.bootstrap();
    let expected = (PER_CODEC * topics.len()).to_string();
    let mut args = vec!["consume", bootstrap.as_str(), expected.as_str()];
    args.extend(topics.keys().map(String::as_str));
    let run = kafka_python(&args).await;
    let consumed = parse_python(&run.stdout, "consumed");
    assert_eq!(consumed.len(), PER_CODEC * topics.len(), "kafka-python read every message once");
    for (topic, expected) in &topics {
        let got = by_partition(consumed.iter().filter(|(t, _)| t == topic).map(|(_, m)| m.clone()));
        assert_same("kafka-python", topic, expected, &got);
    }
    // and its positions are the ends of the logs
    let text = String::from_utf8(run.stdout.clone()).unwrap();
    let positions: BTreeSet<(String, i32, i64)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("position\t"))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].to_owned(), f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    let ends: BTreeSet<(String, i32, i64)> =
        topics.iter().flat_map(|(t, parts)| parts.iter().map(move |(p, m)| (t.clone(), *p, m.len() as i64))).collect();
    assert_eq!(positions, ends, "kafka-python's positions after reading");
    eprintln!("kafka-python read {} messages in {:?}", consumed.len(), run.elapsed);
}

// ---------------------------------------------------------------------------------------------
// 2. murmur2 parity with librdkafka
// ---------------------------------------------------------------------------------------------

/// kcat's key and message delimiters for the murmur2 test: keys may hold any byte but `#`.
const KEY_DELIM: &str = "#SEP#";
const MSG_DELIM: &str = "#END#";
const M2_PARTITIONS: usize = 7;

/// ~500 distinct non-null keys: the empty key, ASCII of every length 1..=60 (all four tail
/// lengths of murmur2) and of a common shape, UTF-8, binary (NUL, newline, high bytes), and a
/// few long ones (up to 4 KB).
fn murmur2_keys() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = vec![Vec::new()];
    for i in 0..150 {
        keys.push(format!("key-{i}").into_bytes());
    }
    for len in 1..=60usize {
        let k: Vec<u8> = (0..len).map(|j| b'!' + ((j * 7 + len * 3) % 94) as u8).collect();
        keys.push(k.into_iter().map(|b| if b == b'#' { b'_' } else { b }).collect());
    }
    for i in 0..120 {
        let k = match i % 4 {
            0 => format!("ключ-{i}"),
            1 => format!("键{i}"),
            2 => format!("🔑{i}é"),
            _ => format!("{}{i}", "ü".repeat(i % 9 + 1)),
        };
        keys.push(k.into_bytes());
    }
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..170 {
        let len = (next() % 33 + 1) as usize;
        let k: Vec<u8> = (0..len).map(|_| next() as u8).map(|b| if b == b'#' { 0x80 } else { b }).collect();
        keys.push(k);
    }
    keys.push(vec![0]);
    keys.push(b"\n".to_vec());
    keys.push(vec![0xff; 4]);
    // long keys: many blocks, each tail length
    for len in [255usize, 256, 1023, 4098] {
        keys.push((0..len).map(|j| b"abcdefghijklmnopqrstuvwxyz0123456789"[(j * 5 + len) % 36]).collect());
    }
    let mut seen = HashSet::new();
    keys.retain(|k| seen.insert(k.clone()));
    keys
}

/// The partition each key's message is in, as kcat reads `topic` back (one message per key).
async fn partitions_by_key(bin: &Path, bootstrap: &str, topic: &str, expected: usize) -> BTreeMap<Vec<u8>, i32> {
    let run = kcat(bin, bootstrap, &["-C", "-t", topic, "-e", "-o", "beginning", "-f", KCAT_FORMAT], Vec::new()).await;
    let msgs = parse_kcat(&run.stdout);
    assert_eq!(msgs.len(), expected, "{topic}: messages read back");
    let mut out = BTreeMap::new();
    for m in msgs {
        let key = m.key.clone().unwrap_or_else(|| panic!("{topic}: a null key in {m:?}"));
        assert!(out.insert(key, m.partition).is_none(), "{topic}: a key twice: {m:?}");
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn murmur2_partitions_match_librdkafka() {
    let Some(bin) = kcat_or_skip() else { return };
    let c = cluster_or_skip!("interop-murmur2");
    let keys = murmur2_keys();
    assert!(keys.len() >= 480, "{} keys", keys.len());
    c.create_topic("m2-kcat", M2_PARTITIONS as i32, 1).await.unwrap();
    c.create_topic("m2-gregor", M2_PARTITIONS as i32, 1).await.unwrap();
    let bootstrap = c.bootstrap();

    // kcat places the keys with librdkafka's murmur2 partitioner
    let mut input = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        input.extend_from_slice(k);
        input.extend_from_slice(KEY_DELIM.as_bytes());
        input.extend_from_slice(format!("m2-{i}").as_bytes());
        input.extend_from_slice(MSG_DELIM.as_bytes());
    }
    let args = [
        "-P",
        "-t",
        "m2-kcat",
        "-K",
        KEY_DELIM,
        "-D",
        MSG_DELIM,
        "-X",
        "partitioner=murmur2",
        "-X",
        "topic.request.required.acks=1",
    ];
    kcat(&bin, &bootstrap, &args, input).await;
    let by_kcat = partitions_by_key(&bin, &bootstrap, "m2-kcat", keys.len()).await;

    // gregor's producer places the same keys
    let config = common::config(&c).partitioner(PartitionerKind::Murmur2);
    let producer: AsyncProducer<Vec<u8>, Vec<u8>> =
        AsyncProducer::new(config.build().unwrap(), BytesEncoder, BytesEncoder).unwrap();
    let mut pending = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let record = Record::new("m2-gregor", format!("m2-{i}").into_bytes()).with_key(k.clone());
        pending.push(producer.send(record).await.unwrap());
    }
    let mut by_gregor = BTreeMap::new();
    for (k, delivery) in keys.iter().zip(pending) {
        let md = delivery.bounded().await.unwrap_or_else(|e| panic!("key {}: {e}", hex(k)));
        by_gregor.insert(k.clone(), md.partition);
    }
    assert!(producer.close(Duration::from_secs(5)).bounded().await.is_ok());
    // and kcat finds them where gregor's delivery results say
    let read_back = partitions_by_key(&bin, &bootstrap, "m2-gregor", keys.len()).await;
    assert_eq!(read_back, by_gregor, "m2-gregor read back by kcat vs gregor's delivery results");

    let mut mismatches = Vec::new();
    for k in &keys {
        let librdkafka = by_kcat[k];
        let computed = murmur2_partition(k, M2_PARTITIONS) as i32;
        let placed = by_gregor[k];
        if librdkafka != computed || librdkafka != placed {
            mismatches.push(format!(
                "key {} ({:?}): librdkafka {librdkafka}, murmur2_partition {computed}, gregor's producer {placed}",
                hex(k),
                String::from_utf8_lossy(k)
            ));
        }
    }
    let spread: BTreeSet<i32> = by_kcat.values().copied().collect();
    assert_eq!(spread.len(), M2_PARTITIONS, "the keys cover every partition: {spread:?}");
    assert!(
        mismatches.is_empty(),
        "{} of {} keys placed differently:\n{}",
        mismatches.len(),
        keys.len(),
        mismatches.join("\n")
    );
    eprintln!("murmur2: {} keys, librdkafka and gregor agree on every one", keys.len());
}

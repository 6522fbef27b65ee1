//! Interop: what clients gregor did not write produce, the simple consumer reads intact.
//!
//! * `simple_consumer_reads_what_kcat_produced_with_every_codec`: kcat (librdkafka in Kafka
//!   0.8.2 mode: `-X api.version.request=false -X broker.version.fallback=0.8.2`) writes
//!   keyed and null-keyed messages (ASCII, UTF-8, binary and empty keys; values with newlines
//!   and bytes that are not UTF-8, a few large) with each codec (none, gzip, snappy, lz4) and
//!   acks=-1 to a 3-partition, replication-2 topic.
//! * `simple_consumer_reads_what_kafka_python_produced_with_every_codec`: the same with
//!   kafka-python 2.0.2 (`api_version=(0, 8, 2)`, the script
//!   `crates/producer/tests/python/interop_client.py` under `/usr/bin/python3`), whose delivery
//!   results name each message's partition and offset.
//!
//! The [`SimpleConsumer`] reads every partition from the earliest offset to the high
//! watermark (several partitions per fetch), and again from the middle of each partition
//! (usually inside a compressed wrapper): every message exactly once, keys (null stays null,
//! empty stays empty) and values byte for byte, offsets contiguous from 0, the order of each
//! partition the order produced. The request log shows the codec went over the wire.
//!
//! Every child process is bounded by a timeout after which it is killed and the test fails.
//! Without kcat or kafka-python the tests fail, naming the apt packages, unless
//! `GREGOR_ALLOW_SKIP=1` is set outside CI: then they print why and skip.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use gregor_protocol::messages::AnyRequest;
use gregor_protocol::Compression;
use gregor_simple_consumer::{FetchedMessage, SimpleConsumer, SimpleConsumerConfig};
use gregor_testkit::support::{self, MessageAt};
use gregor_testkit::tools::{self, kcat_or_skip, Finished, CODECS};
use gregor_testkit::FakeCluster;

// ---------------------------------------------------------------------------------------------
// external tools
// ---------------------------------------------------------------------------------------------

const KCAT_LIMIT: Duration = Duration::from_secs(30);
const PYTHON_LIMIT: Duration = Duration::from_secs(45);

/// True when kafka-python can run; otherwise fails, or returns false when skipping is allowed
/// (`GREGOR_ALLOW_SKIP=1`, never under CI). The script is part of this repository: its absence
/// always fails.
async fn kafka_python_or_skip() -> bool {
    assert!(script().is_file(), "{} is missing from the repository", script().display());
    tools::kafka_python_or_skip().await.is_some()
}

/// The kafka-python script lives with the producer's tests (it also reads what gregor's
/// producer writes); this crate only runs its `produce` command.
fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../producer/tests/python/interop_client.py")
}

// ---------------------------------------------------------------------------------------------
// the cluster and the consumer
// ---------------------------------------------------------------------------------------------

const CLIENT_ID: &str = "simple-consumer-interop";

/// A cluster of three brokers in a chroot of its own, or `None` to skip (only with
/// `GREGOR_ALLOW_SKIP=1`, never under CI).
async fn cluster(test: &str) -> Option<FakeCluster> {
    support::cluster(test).start().await
}

fn consumer(c: &FakeCluster) -> SimpleConsumer {
    let config = SimpleConsumerConfig::builder()
        .metadata_broker_list(c.bootstrap())
        .client_id(CLIENT_ID)
        .refresh_leader_backoff(Duration::from_millis(50))
        .build()
        .unwrap();
    SimpleConsumer::new(config).unwrap()
}

fn msg(partition: i32, m: &FetchedMessage) -> MessageAt {
    MessageAt {
        partition,
        offset: m.offset,
        key: m.key.as_ref().map(|b| b.to_vec()),
        value: m.value.as_ref().map(|b| b.to_vec()),
    }
}

/// Every partition of `topic` read by the simple consumer from offset 0 to its high watermark,
/// all partitions in each fetch. Checks the offsets are contiguous from 0, the high watermark is
/// the cluster's and the consumer's latest offset, and a read from the middle of each partition
/// returns exactly the rest of it.
async fn read_topic(consumer: &SimpleConsumer, c: &FakeCluster, topic: &str) -> BTreeMap<i32, Vec<MessageAt>> {
    let partitions = consumer.partitions(topic).await.unwrap();
    assert_eq!(partitions, [0, 1, 2], "{topic}: partitions");
    let mut next: BTreeMap<i32, i64> = partitions.iter().map(|p| (*p, 0)).collect();
    let mut hw: BTreeMap<i32, i64> = BTreeMap::new();
    let mut out: BTreeMap<i32, Vec<MessageAt>> = partitions.iter().map(|p| (*p, Vec::new())).collect();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let wanted: Vec<(&str, i32, i64)> =
            next.iter().filter(|(p, o)| hw.get(p).is_none_or(|h| **o < *h)).map(|(p, o)| (topic, *p, *o)).collect();
        if wanted.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "{topic}: not read to the end within 15 s: {next:?} vs {hw:?}");
        let batch = consumer.fetch(&wanted).await.unwrap();
        for (_, p, result) in batch.iter() {
            let data = result.as_ref().unwrap_or_else(|e| panic!("{topic}/{p}: {e}"));
            assert_eq!(data.fetch_offset, next[&p]);
            out.get_mut(&p).unwrap().extend(data.messages.iter().map(|m| msg(p, m)));
            next.insert(p, data.next_offset);
            hw.insert(p, data.high_watermark);
        }
    }
    for (p, msgs) in &out {
        let n = msgs.len() as i64;
        let offsets: Vec<i64> = msgs.iter().map(|m| m.offset).collect();
        assert_eq!(offsets, (0..n).collect::<Vec<_>>(), "{topic}/{p}: offsets contiguous from 0");
        assert_eq!(hw[p], n, "{topic}/{p}: high watermark");
        assert_eq!(c.offsets(topic, *p), Some((n, n)), "{topic}/{p}: the cluster's hw and leo");
        assert_eq!(consumer.latest_offset(topic, *p).await.unwrap(), n, "{topic}/{p}: latest offset");
        assert_eq!(consumer.earliest_offset(topic, *p).await.unwrap(), 0, "{topic}/{p}: earliest offset");
        // from the middle (inside a compressed wrapper, mostly): the rest, from exactly there
        let from = n / 2 + 1;
        if from < n {
            let data = consumer.fetch_partition(topic, *p, from).await.unwrap();
            let got: Vec<MessageAt> = data.messages.iter().map(|m| msg(*p, m)).collect();
            assert!(!got.is_empty(), "{topic}/{p}: nothing from {from}");
            assert_eq!(got[..], msgs[from as usize..from as usize + got.len()], "{topic}/{p}: from offset {from}");
        }
    }
    out
}

/// The top-level entries of the Produce requests for `topic`, counted by codec.
fn wire_codecs(c: &FakeCluster, topic: &str) -> BTreeMap<String, usize> {
    let mut codecs = BTreeMap::new();
    for r in c.requests() {
        let AnyRequest::Produce(p) = &r.request else { continue };
        for t in p.topics.iter().filter(|t| t.topic == topic) {
            for part in &t.partitions {
                for e in part.message_set.entries() {
                    let e = e.expect("a whole entry");
                    *codecs.entry(e.message.compression().expect("a known codec").to_string()).or_default() += 1;
                }
            }
        }
    }
    codecs
}

/// The codec was used on the wire (a client may send a batch plain when compressing would not
/// make it smaller, so plain entries are allowed next to it).
fn assert_wire_codec(c: &FakeCluster, who: &str, topic: &str, codec: Compression) {
    let codecs = wire_codecs(c, topic);
    eprintln!("{who} -> {topic}: top-level entries by codec {codecs:?}");
    assert!(codecs.contains_key(&codec.to_string()), "{who} used {codec} on {topic}: {codecs:?}");
    assert!(
        codecs.keys().all(|k| *k == codec.to_string() || *k == Compression::None.to_string()),
        "{who} on {topic}: {codecs:?}"
    );
    assert!(codecs.values().sum::<usize>() > 3, "{who} on {topic}: more than one wrapper per partition: {codecs:?}");
}

// ---------------------------------------------------------------------------------------------
// kcat
// ---------------------------------------------------------------------------------------------

const KCAT_MESSAGES: usize = 400;
/// kcat's key and message delimiters: keys and values may hold any byte but `#`.
const KEY_DELIM: &str = "#SEP#";
const MSG_DELIM: &str = "#END#";

/// The key of kcat's message `i`: null for every 4th (no key delimiter in the message), else
/// ASCII, UTF-8, binary (NUL, newline, tab, high bytes) or the empty key.
fn kcat_key(i: usize) -> Option<Vec<u8>> {
    match i % 8 {
        0 | 4 => None,
        1 | 5 => Some(format!("user-{}", i % 5).into_bytes()),
        2 => Some(format!("ключ-{} 鍵🔑", i % 3).into_bytes()),
        3 => Some(vec![0, b'\n', 0xff, b'\t', (i % 2) as u8, 0xc3]),
        6 => Some(Vec::new()),
        _ => Some(b"k".to_vec()),
    }
}

/// The value of kcat's message `i`: its codec and sequence number, compressible text with
/// UTF-8, newlines and bytes that are not UTF-8; every 40th about 10 KB.
fn kcat_value(codec: &str, i: usize) -> Vec<u8> {
    let mut v = format!("kcat|{codec}|{i:05}|").into_bytes();
    v.extend(format!("kcat é value {i}\n").repeat(if i % 40 == 0 { 500 } else { 4 }).into_bytes());
    let b = (i % 256) as u8;
    v.extend([0, 0xff, if b == b'#' { 0x80 } else { b }]);
    v
}

/// The sequence number in a value written by [`kcat_value`].
fn kcat_seq(value: &[u8]) -> usize {
    let s = String::from_utf8_lossy(&value[..value.len().min(32)]).into_owned();
    s.split('|').nth(2).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no sequence number in {s:?}"))
}

async fn kcat_produce(bin: PathBuf, bootstrap: String, topic: String, codec: &'static str) -> Finished {
    let mut input = Vec::new();
    for i in 0..KCAT_MESSAGES {
        if let Some(k) = kcat_key(i) {
            input.extend_from_slice(&k);
            input.extend_from_slice(KEY_DELIM.as_bytes());
        }
        input.extend_from_slice(&kcat_value(codec, i));
        input.extend_from_slice(MSG_DELIM.as_bytes());
    }
    let args = [
        "-P",
        "-t",
        topic.as_str(),
        "-K",
        KEY_DELIM,
        "-D",
        MSG_DELIM,
        "-z",
        codec,
        "-X",
        "topic.request.required.acks=-1",
        "-X",
        "queue.buffering.max.ms=20",
        "-X",
        "batch.num.messages=40",
    ];
    tools::run_kcat(&bin, &bootstrap, &args, input, KCAT_LIMIT).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_consumer_reads_what_kcat_produced_with_every_codec() {
    let Some(bin) = kcat_or_skip() else { return };
    let Some(c) = cluster("sc-interop-kcat").await else { return };
    let started = Instant::now();
    let mut runs = Vec::new();
    for (name, _) in CODECS {
        let topic = format!("from-kcat-{name}");
        c.create_topic(&topic, 3, 2).await.unwrap();
        runs.push(tokio::spawn(kcat_produce(bin.clone(), c.bootstrap(), topic, name)));
    }
    for run in runs {
        let run = run.await.unwrap();
        eprintln!("kcat produced in {:?}", run.elapsed);
    }
    let consumer = consumer(&c);
    for (name, codec) in CODECS {
        let topic = format!("from-kcat-{name}");
        assert_wire_codec(&c, "kcat", &topic, codec);
        let read = read_topic(&consumer, &c, &topic).await;
        let mut seen = vec![false; KCAT_MESSAGES];
        let mut key_partition: BTreeMap<Vec<u8>, i32> = BTreeMap::new();
        for (p, msgs) in &read {
            let seqs: Vec<usize> = msgs.iter().map(|m| kcat_seq(m.value.as_deref().expect("a value"))).collect();
            assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{topic}/{p}: in the order produced: {seqs:?}");
            for (m, i) in msgs.iter().zip(seqs) {
                assert!(!std::mem::replace(&mut seen[i], true), "{topic}: message {i} read twice");
                assert_eq!(m.key, kcat_key(i), "{topic}: key of message {i} ({m:?})");
                assert_eq!(m.value.as_deref(), Some(&kcat_value(name, i)[..]), "{topic}: value of message {i}");
                // librdkafka's default partitioner (consistent_random) sends null *and empty*
                // keys to random partitions; other keys always to the same one
                if let Some(k) = m.key.as_ref().filter(|k| !k.is_empty()) {
                    let first = *key_partition.entry(k.clone()).or_insert(*p);
                    assert_eq!(first, *p, "{topic}: key {k:?} in two partitions");
                }
            }
        }
        let missing: Vec<usize> = (0..KCAT_MESSAGES).filter(|i| !seen[*i]).collect();
        assert!(missing.is_empty(), "{topic}: messages never read: {missing:?}");
        eprintln!(
            "{topic}: {} messages over partitions {:?}",
            KCAT_MESSAGES,
            read.iter().map(|(p, m)| (*p, m.len())).collect::<BTreeMap<_, _>>()
        );
    }
    consumer.close().await;
    eprintln!("total {:?}", started.elapsed());
}

// ---------------------------------------------------------------------------------------------
// kafka-python
// ---------------------------------------------------------------------------------------------

const PYTHON_MESSAGES: usize = 150;

fn unhex(s: &str) -> Option<Vec<u8>> {
    (s != "-").then(|| (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_consumer_reads_what_kafka_python_produced_with_every_codec() {
    if !kafka_python_or_skip().await {
        return;
    }
    let Some(c) = cluster("sc-interop-python").await else { return };
    let bootstrap = c.bootstrap();
    let count = PYTHON_MESSAGES.to_string();
    let mut cases = Vec::new();
    for (name, _) in CODECS {
        let topic = format!("from-python-{name}");
        c.create_topic(&topic, 3, 2).await.unwrap();
        cases.push(format!("{topic}:{name}"));
    }
    let mut args = vec!["produce", bootstrap.as_str(), count.as_str()];
    args.extend(cases.iter().map(String::as_str));
    let run = tools::run_python(&script(), &args, PYTHON_LIMIT).await;
    eprintln!("kafka-python produced in {:?}", run.elapsed);

    // what kafka-python's delivery results say, per topic and partition, in offset order
    let mut produced: BTreeMap<String, BTreeMap<i32, Vec<MessageAt>>> = BTreeMap::new();
    let text = String::from_utf8(run.stdout).expect("the script prints ASCII");
    for l in text.lines().filter(|l| l.starts_with("produced\t")) {
        let f: Vec<&str> = l.split('\t').collect();
        assert_eq!(f.len(), 6, "{l:?}");
        let m = MessageAt {
            partition: f[2].parse().unwrap(),
            offset: f[3].parse().unwrap(),
            key: unhex(f[4]),
            value: unhex(f[5]),
        };
        produced.entry(f[1].to_owned()).or_default().entry(m.partition).or_default().push(m);
    }
    assert_eq!(produced.len(), CODECS.len(), "every topic produced");
    let consumer = consumer(&c);
    for (name, codec) in CODECS {
        let topic = format!("from-python-{name}");
        assert_wire_codec(&c, "kafka-python", &topic, codec);
        let expected = produced.get_mut(&topic).unwrap();
        assert_eq!(expected.values().map(Vec::len).sum::<usize>(), PYTHON_MESSAGES, "{topic}: delivery results");
        for msgs in expected.values_mut() {
            msgs.sort_by_key(|m| m.offset);
        }
        let read = read_topic(&consumer, &c, &topic).await;
        let read: BTreeMap<i32, Vec<MessageAt>> = read.into_iter().filter(|(_, m)| !m.is_empty()).collect();
        let counts =
            |m: &BTreeMap<i32, Vec<MessageAt>>| m.iter().map(|(p, v)| (*p, v.len())).collect::<BTreeMap<_, _>>();
        assert_eq!(counts(&read), counts(expected), "{topic}: messages per partition");
        for (p, want) in expected.iter() {
            for (i, (got, want)) in read[p].iter().zip(want).enumerate() {
                assert_eq!(got, want, "{topic}/{p}: message {i}");
            }
        }
    }
    consumer.close().await;
}

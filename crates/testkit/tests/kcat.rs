//! kcat (librdkafka) against the FakeCluster, in Kafka 0.8.2 mode.
//!
//! kcat is a client gregor did not write: whatever it accepts from the fake cluster is evidence
//! that the fake answers as a Kafka 0.8.2 cluster does. Every kcat runs as
//! `kcat -b <bootstrap> -X api.version.request=false -X broker.version.fallback=0.8.2 ...`, in a
//! child process (tokio::process, never blocking the runtime the brokers run on), bounded by a
//! timeout after which it is killed and the test fails.
//!
//! * metadata: `kcat -L` / `-L -J` list the brokers, leaders, replicas and ISRs;
//! * 10,000 keyed messages per codec (none, gzip, snappy, lz4) with acks=-1 into a 3-partition,
//!   replication-2 topic, all consumed back in order with contiguous offsets, also from a
//!   chosen offset (`-o 500 -p 1`, which lands inside compressed wrappers);
//! * failover: a long-running kcat producer fed through stdin while the leader of a partition
//!   is killed; every message kcat's delivery reports (`-vv`) call delivered is present;
//! * capture: kcat's request frames recorded raw by a proxy, checked against the request log
//!   re-encoded with `gregor_protocol::frame::encode_request`, and (with
//!   `GREGOR_CAPTURE_FIXTURES=1`) written to `crates/protocol/tests/data/kcat/`;
//! * TLS: the brokers serve TLS with a certificate of a CA made at test time; kcat
//!   (`-X security.protocol=ssl -X ssl.ca.location=...`, hostname checked) produces with acks=-1
//!   and consumes everything back; with another CA it gets no metadata;
//! * `kcat_throughput` (ignored): produce rate of 500,000 100-byte messages.
//!
//! Without kcat the tests fail, naming `apt-get install kcat`, unless `GREGOR_ALLOW_SKIP=1` is
//! set outside CI: then they print why and skip.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use gregor_protocol::frame::{encode_request, split_frame, ApiKey, RequestHeader};
use gregor_protocol::messages::{AnyRequest, ProduceRequest};
use gregor_protocol::{Compression, MessageSet};
use gregor_testkit::support;
use gregor_testkit::tls::{ServerTls, TestPki};
use gregor_testkit::tools::{kcat_or_skip, CODECS, KCAT_0_8_2};
use gregor_testkit::{FakeCluster, LoggedRequest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, ChildStdin, Command};
use tokio::task::JoinHandle;

// ---------------------------------------------------------------------------------------------
// kcat
// ---------------------------------------------------------------------------------------------

/// kcat pointed at one bootstrap list, in 0.8.2 mode.
#[derive(Debug, Clone)]
struct Kcat {
    bin: PathBuf,
    bootstrap: String,
}

/// What a finished kcat left.
#[derive(Debug)]
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

/// A running kcat.
struct KcatProcess {
    what: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: JoinHandle<Vec<u8>>,
    stderr: JoinHandle<Vec<u8>>,
    started: Instant,
}

fn drain(mut pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static) -> JoinHandle<Vec<u8>> {
    tokio::spawn(async move {
        let mut out = Vec::new();
        let _ = pipe.read_to_end(&mut out).await;
        out
    })
}

fn tail(s: &str, n: usize) -> &str {
    let mut at = s.len().saturating_sub(n);
    while !s.is_char_boundary(at) {
        at += 1;
    }
    &s[at..]
}

impl Kcat {
    fn new(bin: &std::path::Path, bootstrap: impl Into<String>) -> Kcat {
        Kcat { bin: bin.to_owned(), bootstrap: bootstrap.into() }
    }

    /// Starts `kcat -b <bootstrap> <0.8.2 mode> <args>` with piped stdin, stdout, stderr.
    fn spawn(&self, args: &[&str]) -> KcatProcess {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("-b").arg(&self.bootstrap).args(KCAT_0_8_2).args(args);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let what = format!("kcat -b {} {} {}", self.bootstrap, KCAT_0_8_2.join(" "), args.join(" "));
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let stdout = drain(child.stdout.take().expect("piped stdout"));
        let stderr = drain(child.stderr.take().expect("piped stderr"));
        KcatProcess { what, stdin: child.stdin.take(), child, stdout, stderr, started: Instant::now() }
    }

    /// Runs kcat with `input` on stdin (closed after it), within `limit`.
    async fn run(&self, args: &[&str], input: &[u8], limit: Duration) -> Run {
        let mut p = self.spawn(args);
        let mut stdin = p.stdin.take().expect("stdin");
        let input = input.to_vec();
        let writer = tokio::spawn(async move {
            // kcat may exit without reading everything (e.g. -L): a broken pipe is fine
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        });
        let run = p.finish(limit).await;
        writer.abort();
        run
    }

    /// Runs kcat and fails the test unless it exits with status 0.
    async fn run_ok(&self, args: &[&str], input: &[u8], limit: Duration) -> Run {
        let run = self.run(args, input, limit).await;
        assert!(
            run.status.success(),
            "kcat {} exited with {}; stderr:\n{}",
            args.join(" "),
            run.status,
            tail(&run.stderr, 4000)
        );
        run
    }
}

impl KcatProcess {
    /// Writes to kcat's stdin.
    async fn feed(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin.write_all(bytes).await.unwrap_or_else(|e| panic!("writing to {}: {e}", self.what));
        stdin.flush().await.unwrap();
    }

    /// Closes stdin and waits for the exit, killing kcat and failing after `limit`.
    async fn finish(mut self, limit: Duration) -> Run {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.shutdown().await;
        }
        let status = match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(status) => status.unwrap_or_else(|e| panic!("waiting for {}: {e}", self.what)),
            Err(_) => {
                let _ = self.child.start_kill();
                let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
                let stderr = tokio::time::timeout(Duration::from_secs(5), self.stderr).await;
                let stderr = stderr.ok().and_then(Result::ok).unwrap_or_default();
                panic!(
                    "{} did not finish within {limit:?}: killed it; stderr tail:\n{}",
                    self.what,
                    tail(&String::from_utf8_lossy(&stderr), 4000)
                );
            }
        };
        let elapsed = self.started.elapsed();
        let stdout = self.stdout.await.unwrap_or_default();
        let stderr = self.stderr.await.unwrap_or_default();
        Run {
            status,
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            elapsed,
        }
    }
}

/// A kcat and a cluster of `n` brokers in a chroot of its own, or `None` to skip (only with
/// `GREGOR_ALLOW_SKIP=1`, never under CI).
async fn setup(
    test: &str,
    n: usize,
    configure: impl FnOnce(&mut gregor_testkit::BrokerConfig),
) -> Option<(PathBuf, FakeCluster)> {
    let kcat = kcat_or_skip()?;
    let cluster = support::cluster(test).brokers(n).quick().configure(configure).start().await?;
    Some((kcat, cluster))
}

macro_rules! setup_or_skip {
    ($name:expr, $n:expr) => {
        setup_or_skip!($name, $n, |_| {})
    };
    ($name:expr, $n:expr, $configure:expr) => {
        match setup($name, $n, $configure).await {
            Some(s) => s,
            None => return,
        }
    };
}

// ---------------------------------------------------------------------------------------------
// kcat output
// ---------------------------------------------------------------------------------------------

/// One line of `-f '%p %o %k %s\n'`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Consumed {
    partition: i32,
    offset: i64,
    key: String,
    value: String,
}

const CONSUME_FORMAT: &str = "%p %o %k %s\\n";

fn parse_consumed(stdout: &str) -> Vec<Consumed> {
    stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let mut it = line.splitn(4, ' ');
            let mut next = || it.next().unwrap_or_else(|| panic!("short kcat line {line:?}"));
            let partition = next().parse().unwrap_or_else(|_| panic!("partition in {line:?}"));
            let offset = next().parse().unwrap_or_else(|_| panic!("offset in {line:?}"));
            let key = next().to_owned();
            let value = next().to_owned();
            Consumed { partition, offset, key, value }
        })
        .collect()
}

/// Consumes every partition from the beginning to the end (`-e`).
async fn consume_all(kcat: &Kcat, topic: &str) -> Vec<Consumed> {
    let run = kcat
        .run_ok(&["-C", "-t", topic, "-e", "-o", "beginning", "-f", CONSUME_FORMAT], b"", Duration::from_secs(60))
        .await;
    parse_consumed(&run.stdout)
}

/// The messages per partition, in the order kcat printed them.
fn by_partition(consumed: &[Consumed]) -> BTreeMap<i32, Vec<Consumed>> {
    let mut out: BTreeMap<i32, Vec<Consumed>> = BTreeMap::new();
    for c in consumed {
        out.entry(c.partition).or_default().push(c.clone());
    }
    out
}

/// The sequence number at the end of a key or value (`key-00042` -> 42).
fn seq_of(s: &str) -> usize {
    s.rsplit('-').next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no sequence number in {s:?}"))
}

/// What a producing kcat said about its messages with `-vv`.
#[derive(Debug, Default)]
struct DeliveryReports {
    /// `% Message delivered to partition P (offset O) on broker B`, in the order printed.
    delivered: Vec<(i32, i64, i32)>,
    /// `% Delivery failed for message: REASON`.
    failed: Vec<String>,
}

fn parse_delivery_reports(stderr: &str) -> DeliveryReports {
    let mut dr = DeliveryReports::default();
    for line in stderr.lines() {
        if let Some(rest) = line.strip_prefix("% Message delivered to partition ") {
            // "P (offset O) on broker B"
            let nums: Vec<i64> = rest
                .split(|c: char| !(c.is_ascii_digit() || c == '-'))
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap_or_else(|_| panic!("number in {line:?}")))
                .collect();
            assert_eq!(nums.len(), 3, "unexpected delivery report {line:?}");
            dr.delivered.push((nums[0] as i32, nums[1], nums[2] as i32));
        } else if let Some(reason) = line.strip_prefix("% Delivery failed for message: ") {
            dr.failed.push(reason.to_owned());
        }
    }
    dr
}

/// Lines `key-NNNNN:<prefix>-NNNNN` for kcat's `-K:`.
fn keyed_lines(range: std::ops::Range<usize>, prefix: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for i in range {
        out.extend_from_slice(format!("key-{i:05}:{prefix}-{i:05}\n").as_bytes());
    }
    out
}

// ---------------------------------------------------------------------------------------------
// 1. metadata
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_lists_brokers_leaders_replicas_and_isrs() {
    let (bin, c) = setup_or_skip!("kcat-metadata", 3);
    let assignment = BTreeMap::from([(0, vec![2, 0]), (1, vec![0, 1]), (2, vec![1, 2, 0])]);
    c.create_topic_with("assigned", assignment.clone(), BTreeMap::new()).await.unwrap();
    let kcat = Kcat::new(&bin, c.bootstrap());

    // JSON
    let run = kcat.run_ok(&["-L", "-J", "-t", "assigned"], b"", Duration::from_secs(20)).await;
    let md: serde_json::Value =
        serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| panic!("kcat -L -J: {e}: {}", run.stdout));
    let brokers: BTreeMap<i64, String> = md["brokers"]
        .as_array()
        .expect("brokers")
        .iter()
        .map(|b| (b["id"].as_i64().unwrap(), b["name"].as_str().unwrap().to_owned()))
        .collect();
    let expected: BTreeMap<i64, String> =
        c.broker_addrs().into_iter().map(|(id, a)| (i64::from(id), a.to_string())).collect();
    assert_eq!(brokers, expected, "kcat -L -J brokers: {}", run.stdout);
    let topics = md["topics"].as_array().expect("topics");
    assert_eq!(topics.len(), 1, "{}", run.stdout);
    assert_eq!(topics[0]["topic"], "assigned");
    assert!(topics[0].get("error").is_none(), "topic error: {}", run.stdout);
    let ids = |v: &serde_json::Value| -> Vec<i32> {
        v.as_array().expect("id list").iter().map(|r| r["id"].as_i64().unwrap() as i32).collect()
    };
    let partitions = topics[0]["partitions"].as_array().expect("partitions");
    assert_eq!(partitions.len(), 3);
    for p in partitions {
        let id = p["partition"].as_i64().unwrap() as i32;
        let replicas = &assignment[&id];
        assert!(p.get("error").is_none(), "partition {id} error: {p}");
        assert_eq!(p["leader"].as_i64().unwrap() as i32, replicas[0], "preferred replica leads {id}: {p}");
        assert_eq!(ids(&p["replicas"]), *replicas, "replicas of {id}");
        assert_eq!(ids(&p["isrs"]), *replicas, "ISR of {id}");
    }

    // the plain listing says the same
    let run = kcat.run_ok(&["-L", "-t", "assigned"], b"", Duration::from_secs(20)).await;
    let text = run.stdout;
    assert!(text.contains(" 3 brokers:"), "{text}");
    for (id, addr) in c.broker_addrs() {
        assert!(text.contains(&format!("  broker {id} at {addr}")), "broker {id} at {addr} in:\n{text}");
    }
    assert!(text.contains("topic \"assigned\" with 3 partitions:"), "{text}");
    for (id, replicas) in &assignment {
        let list = replicas.iter().map(i32::to_string).collect::<Vec<_>>().join(",");
        let line = format!("partition {id}, leader {}, replicas: {list}, isrs: {list}", replicas[0]);
        assert!(text.contains(&line), "{line:?} in:\n{text}");
    }

    // broker 2 dies: it leaves the broker list; partition 0 moves to 0, the next in its ISR,
    // and the partitions it replicated report ReplicaNotAvailable with the live replicas
    c.kill_broker(2).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.leader("assigned", 0) != Some(0) {
        assert!(Instant::now() < deadline, "partition 0 never moved off broker 2");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let live = Kcat::new(&bin, format!("{},{}", c.broker_addr(0).unwrap(), c.broker_addr(1).unwrap()));
    let run = live.run_ok(&["-L", "-J", "-t", "assigned"], b"", Duration::from_secs(20)).await;
    eprintln!("kcat -L -J after broker 2 died: {}", run.stdout.trim());
    let md: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let ids_now: Vec<i64> = md["brokers"].as_array().unwrap().iter().map(|b| b["id"].as_i64().unwrap()).collect();
    assert_eq!(ids_now, [0, 1]);
    let partitions = md["topics"][0]["partitions"].as_array().unwrap();
    let p0 = partitions.iter().find(|p| p["partition"] == 0).unwrap();
    assert_eq!(p0["leader"], 0, "{p0}");
    assert_eq!((ids(&p0["replicas"]), ids(&p0["isrs"])), (vec![0], vec![0]), "live replicas only: {p0}");
    assert_eq!(p0["error"], "Broker: Replica not available", "{p0}");
    let p1 = partitions.iter().find(|p| p["partition"] == 1).unwrap();
    assert_eq!((p1["leader"].as_i64(), ids(&p1["isrs"])), (Some(0), vec![0, 1]), "untouched: {p1}");
    assert!(p1.get("error").is_none(), "{p1}");
    let p2 = partitions.iter().find(|p| p["partition"] == 2).unwrap();
    assert_eq!(
        (p2["leader"].as_i64(), ids(&p2["replicas"]), ids(&p2["isrs"])),
        (Some(1), vec![1, 0], vec![1, 0]),
        "{p2}"
    );
    assert_eq!(p2["error"], "Broker: Replica not available", "{p2}");
}

// ---------------------------------------------------------------------------------------------
// 2. produce and consume with every codec
// ---------------------------------------------------------------------------------------------

const MESSAGES: usize = 10_000;

/// What kcat's produce requests for `topic` carried: top-level entries per codec, messages
/// (wrappers expanded) and the `required_acks` values.
fn produced(log: &[LoggedRequest], topic: &str) -> (BTreeMap<String, usize>, usize, BTreeSet<i16>) {
    let mut codecs = BTreeMap::new();
    let mut acks = BTreeSet::new();
    let mut messages = 0;
    for r in log {
        let AnyRequest::Produce(p) = &r.request else { continue };
        for t in p.topics.iter().filter(|t| t.topic == topic) {
            acks.insert(p.required_acks);
            for part in &t.partitions {
                for e in part.message_set.entries() {
                    let e = e.expect("a whole entry");
                    *codecs.entry(e.message.compression().expect("a known codec").to_string()).or_default() += 1;
                }
                messages += part.message_set.decode(&Default::default()).expect("decodes").messages.len();
            }
        }
    }
    (codecs, messages, acks)
}

async fn produce_and_consume_with(
    kcat: &Kcat,
    c: &FakeCluster,
    name: &str,
    codec: Compression,
) -> (Duration, Duration) {
    let topic = format!("codec-{name}");
    c.create_topic(&topic, 3, 2).await.unwrap();
    let input = keyed_lines(0..MESSAGES, &format!("{name}-value"));
    let run = kcat
        .run_ok(
            &["-P", "-t", &topic, "-K:", "-z", name, "-X", "topic.request.required.acks=-1", "-vv"],
            &input,
            Duration::from_secs(60),
        )
        .await;
    let dr = parse_delivery_reports(&run.stderr);
    assert!(dr.failed.is_empty(), "{name}: kcat reported failures: {:?}", dr.failed);
    assert_eq!(dr.delivered.len(), MESSAGES, "{name}: one delivery report per message");
    let produce_time = run.elapsed;

    // what went over the wire: the codec asked for, acks=-1, every message once
    // (librdkafka sends a batch uncompressed when compressing does not make it smaller)
    let (codecs, wire_messages, acks) = produced(&c.requests(), &topic);
    eprintln!("{name}: top-level entries of kcat's produce requests by codec: {codecs:?}");
    assert!(codecs.contains_key(&codec.to_string()), "{name}: kcat compressed: {codecs:?}");
    assert!(codecs.keys().all(|k| *k == codec.to_string() || *k == Compression::None.to_string()), "{codecs:?}");
    assert_eq!(acks, BTreeSet::from([-1]), "{name}: required_acks");
    assert_eq!(wire_messages, MESSAGES, "{name}: messages in produce requests (no retries expected)");

    let started = Instant::now();
    let consumed = consume_all(kcat, &topic).await;
    let consume_time = started.elapsed();
    assert_eq!(consumed.len(), MESSAGES, "{name}: every message consumed back");
    let mut seen = vec![false; MESSAGES];
    for (p, msgs) in by_partition(&consumed) {
        let offsets: Vec<i64> = msgs.iter().map(|m| m.offset).collect();
        assert_eq!(
            offsets,
            (0..msgs.len() as i64).collect::<Vec<_>>(),
            "{name}: offsets of partition {p} contiguous from 0"
        );
        let seqs: Vec<usize> = msgs.iter().map(|m| seq_of(&m.value)).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{name}: partition {p} in produce order");
        for m in &msgs {
            let i = seq_of(&m.value);
            assert_eq!(m.key, format!("key-{i:05}"), "{name}: key of {m:?}");
            assert_eq!(m.value, format!("{name}-value-{i:05}"));
            assert!(!std::mem::replace(&mut seen[i], true), "{name}: message {i} consumed twice");
        }
        assert_eq!(c.offsets(&topic, p), Some((msgs.len() as i64, msgs.len() as i64)), "{name}: hw and leo of {p}");
        // the delivery reports name the same offsets
        let mut reported: Vec<i64> = dr.delivered.iter().filter(|d| d.0 == p).map(|d| d.1).collect();
        reported.sort_unstable();
        assert_eq!(reported, offsets, "{name}: delivery reports of partition {p}");
    }
    assert!(seen.iter().all(|s| *s));

    // from a chosen offset: exactly the messages from there on (inside a wrapper for codecs)
    let all_p1: Vec<Consumed> = consumed.iter().filter(|m| m.partition == 1).cloned().collect();
    assert!(all_p1.len() > 600, "{name}: partition 1 holds {} messages", all_p1.len());
    let run = kcat
        .run_ok(&["-C", "-t", &topic, "-p", "1", "-o", "500", "-e", "-f", CONSUME_FORMAT], b"", Duration::from_secs(30))
        .await;
    let from_500 = parse_consumed(&run.stdout);
    assert_eq!(from_500, all_p1[500..], "{name}: -o 500 -p 1");
    (produce_time, consume_time)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_produces_and_consumes_10000_messages_with_every_codec() {
    let (bin, c) = setup_or_skip!("kcat-codecs", 3);
    let kcat = Kcat::new(&bin, c.bootstrap());
    let (none, gzip, snappy, lz4) = tokio::join!(
        produce_and_consume_with(&kcat, &c, CODECS[0].0, CODECS[0].1),
        produce_and_consume_with(&kcat, &c, CODECS[1].0, CODECS[1].1),
        produce_and_consume_with(&kcat, &c, CODECS[2].0, CODECS[2].1),
        produce_and_consume_with(&kcat, &c, CODECS[3].0, CODECS[3].1),
    );
    for (name, (p, cons)) in [("none", none), ("gzip", gzip), ("snappy", snappy), ("lz4", lz4)] {
        eprintln!("{name}: produce {MESSAGES} in {p:?}, consume in {cons:?}");
    }
    // librdkafka writes the Kafka 0.8 LZ4 frame (KAFKA-3160 header checksum) to a 0.8.2 broker
    let frames = lz4_frames(&c.requests(), "codec-lz4");
    assert!(!frames.is_empty());
    for f in &frames {
        assert_eq!(f.form, Lz4Checksum::Kafka08, "lz4 frame header {:02x?}", f.header);
    }
    eprintln!("lz4 frame headers: {:02x?}", frames.iter().map(|f| f.header.clone()).collect::<BTreeSet<_>>());
}

/// How an LZ4 frame header checksum was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lz4Checksum {
    /// Over magic and descriptor (Kafka 0.8/0.9, KAFKA-3160).
    Kafka08,
    /// Over the descriptor only (the LZ4 specification).
    Standard,
}

#[derive(Debug)]
struct Lz4Frame {
    header: Vec<u8>,
    form: Lz4Checksum,
}

fn lz4_frames(log: &[LoggedRequest], topic: &str) -> Vec<Lz4Frame> {
    let mut out = Vec::new();
    for r in log {
        let AnyRequest::Produce(p) = &r.request else { continue };
        for part in p.topics.iter().filter(|t| t.topic == topic).flat_map(|t| &t.partitions) {
            for e in part.message_set.entries() {
                let e = e.unwrap();
                if matches!(e.message.compression(), Ok(Compression::Lz4)) {
                    out.push(lz4_frame_header(e.message.value.as_deref().unwrap()));
                }
            }
        }
    }
    out
}

fn lz4_frame_header(v: &[u8]) -> Lz4Frame {
    assert_eq!(&v[..4], [0x04, 0x22, 0x4d, 0x18], "lz4 magic");
    let flg = v[4];
    let len = 2 + if flg & 0x08 != 0 { 8 } else { 0 } + if flg & 0x01 != 0 { 4 } else { 0 };
    let descriptor = &v[4..4 + len];
    let hc = v[4 + len];
    let kafka08 = (xxh32(&v[..4 + len]) >> 8) as u8;
    let standard = (xxh32(descriptor) >> 8) as u8;
    let form = if hc == kafka08 {
        Lz4Checksum::Kafka08
    } else if hc == standard {
        Lz4Checksum::Standard
    } else {
        panic!("lz4 header checksum {hc:02x} is neither form ({kafka08:02x}, {standard:02x})")
    };
    Lz4Frame { header: v[..5 + len].to_vec(), form }
}

/// xxHash32 with seed 0, for inputs under 16 bytes (an LZ4 frame header).
fn xxh32(input: &[u8]) -> u32 {
    const P1: u32 = 2_654_435_761;
    const P2: u32 = 2_246_822_519;
    const P3: u32 = 3_266_489_917;
    const P4: u32 = 668_265_263;
    const P5: u32 = 374_761_393;
    assert!(input.len() < 16);
    let mut h = P5.wrapping_add(input.len() as u32);
    let mut chunks = input.chunks_exact(4);
    for c in chunks.by_ref() {
        let k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        h = h.wrapping_add(k.wrapping_mul(P3)).rotate_left(17).wrapping_mul(P4);
    }
    for &b in chunks.remainder() {
        h = h.wrapping_add(u32::from(b).wrapping_mul(P5)).rotate_left(11).wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^ (h >> 16)
}

// ---------------------------------------------------------------------------------------------
// 3. failover
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_producer_loses_no_acknowledged_message_when_a_leader_dies() {
    // the follower must still be in the ISR when its leader is killed: a 10 s replica lag, not
    // the quick 1.5 s, so that a loaded machine's slow replication cannot drop it first
    let (bin, c) = setup_or_skip!("kcat-failover", 3, |cfg: &mut gregor_testkit::BrokerConfig| {
        cfg.replica_lag_time_max = Duration::from_secs(10)
    });
    c.create_topic("failover", 3, 2).await.unwrap();
    let kcat = Kcat::new(&bin, c.bootstrap());
    // a steady stream: 100 messages every 5 ms; the leader of failover/0 dies a third of the way
    const TOTAL: usize = 15_000;
    const CHUNK: usize = 100;
    let mut producer = kcat.spawn(&[
        "-P",
        "-t",
        "failover",
        "-K:",
        "-X",
        "topic.request.required.acks=-1",
        "-X",
        "message.send.max.retries=10",
        "-X",
        "retry.backoff.ms=200",
        // one request in flight per broker: delivery reports come in produce order
        "-X",
        "max.in.flight.requests.per.connection=1",
        "-vv",
    ]);
    let mut killed = None;
    for start in (0..TOTAL).step_by(CHUNK) {
        producer.feed(&keyed_lines(start..start + CHUNK, "failover-value")).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        if killed.is_none() && start >= TOTAL / 3 {
            // kcat is streaming: messages of failover/0 are being acknowledged
            let deadline = Instant::now() + Duration::from_secs(20);
            while c.offsets("failover", 0).unwrap().0 < 200 {
                assert!(Instant::now() < deadline, "kcat acknowledged nothing on failover/0 in 20 s");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let (victim, replicas, isr) = c.partition_info("failover", 0).unwrap();
            assert_eq!(isr.len(), 2);
            let hw = c.offsets("failover", 0).unwrap().0;
            c.kill_broker(victim).await.unwrap();
            eprintln!(
                "failover: killed broker {victim}, leader of failover/0 (hw {hw}, ISR {isr:?}), {:?} after kcat \
                 started, with {} of {TOTAL} messages fed",
                producer.started.elapsed(),
                start + CHUNK
            );
            killed = Some((victim, replicas, isr, hw, Instant::now()));
        }
    }
    let (victim, replicas, isr_before, hw_at_kill, killed_at) = killed.expect("a leader was killed");
    let run = producer.finish(Duration::from_secs(60)).await;
    let dr = parse_delivery_reports(&run.stderr);
    let other: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| !l.starts_with("% Message delivered") && !l.starts_with("% Delivery failed"))
        .collect();
    eprintln!("failover: kcat's other messages:\n{}", other.join("\n"));
    eprintln!(
        "failover: killed broker {victim} (leader of failover/0 at hw {hw_at_kill}); kcat exited {} after {:?} \
         ({:?} after the kill); {} delivered, {} failed {:?}",
        run.status,
        run.elapsed,
        killed_at.elapsed(),
        dr.delivered.len(),
        dr.failed.len(),
        dr.failed.iter().collect::<BTreeSet<_>>()
    );
    let new_leader = c.leader("failover", 0).expect("failover/0 has a live leader");
    assert_ne!(new_leader, victim);
    assert!(isr_before.contains(&new_leader), "new leader {new_leader} was in the ISR {isr_before:?}");
    assert!(replicas.contains(&new_leader));
    assert_eq!(
        dr.delivered.len() + dr.failed.len(),
        TOTAL,
        "kcat reported on every message:\n{}",
        tail(&run.stderr, 3000)
    );
    assert_eq!(run.status.success(), dr.failed.is_empty(), "kcat exits 1 exactly when a delivery failed");
    assert!(
        dr.delivered.iter().any(|d| d.0 == 0 && d.2 == new_leader),
        "some messages of partition 0 were acknowledged by the new leader"
    );

    let consumed = consume_all(&Kcat::new(&bin, c.bootstrap()), "failover").await;
    let logs = by_partition(&consumed);
    let at: BTreeMap<(i32, i64), &Consumed> = consumed.iter().map(|m| ((m.partition, m.offset), m)).collect();
    for (p, msgs) in &logs {
        let offsets: Vec<i64> = msgs.iter().map(|m| m.offset).collect();
        assert_eq!(offsets, (0..msgs.len() as i64).collect::<Vec<_>>(), "offsets of failover/{p}");
    }
    // every delivered (partition, offset) holds one of ours, and no two reports share one
    let mut reported = BTreeSet::new();
    for &(p, o, _) in &dr.delivered {
        assert!(at.contains_key(&(p, o)), "delivered failover/{p}@{o} is missing (loss)");
        assert!(reported.insert((p, o)), "failover/{p}@{o} reported twice");
    }
    let distinct: BTreeSet<usize> = consumed.iter().map(|m| seq_of(&m.value)).collect();
    let duplicates = consumed.len() - distinct.len();
    eprintln!(
        "failover: consumed {} messages, {} distinct, {duplicates} duplicates (retried after a lost ack)",
        consumed.len(),
        distinct.len()
    );
    assert!(distinct.len() >= dr.delivered.len());
    let (_, sent_on_wire, acks) = produced(&c.requests(), "failover");
    assert_eq!(acks, BTreeSet::from([-1]));
    eprintln!(
        "failover: {sent_on_wire} messages in kcat's produce requests ({} more than the {TOTAL} fed)",
        sent_on_wire as i64 - TOTAL as i64
    );
    if dr.failed.is_empty() {
        // nothing failed: every message is there, and the k-th report of a partition (kcat
        // reports in produce order with one request in flight) holds the k-th message sent to it
        assert_eq!(distinct, (0..TOTAL).collect(), "every message is present");
        let partition_of: BTreeMap<usize, i32> = consumed.iter().map(|m| (seq_of(&m.value), m.partition)).collect();
        for p in logs.keys() {
            let sent: Vec<usize> = (0..TOTAL).filter(|i| partition_of[i] == *p).collect();
            let acked: Vec<usize> =
                dr.delivered.iter().filter(|d| d.0 == *p).map(|d| seq_of(&at[&(d.0, d.1)].value)).collect();
            assert_eq!(acked, sent, "reports of failover/{p} name the messages in order");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 4. capture
// ---------------------------------------------------------------------------------------------

/// Request frames (size prefix included) a proxy saw, per connection, in order.
#[derive(Debug, Default)]
struct Recorded {
    frames: Vec<(usize, Bytes)>,
}

/// A TCP proxy that records what clients send.
struct RecordingProxy {
    recorded: Arc<Mutex<Recorded>>,
    task: JoinHandle<()>,
}

impl Drop for RecordingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RecordingProxy {
    async fn start(listener: TcpListener, target: SocketAddr) -> RecordingProxy {
        let recorded = Arc::new(Mutex::new(Recorded::default()));
        let rec = recorded.clone();
        let task = tokio::spawn(async move {
            let mut conn = 0;
            let mut tasks = tokio::task::JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                conn += 1;
                let Ok(server) = TcpStream::connect(target).await else { continue };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let rec = rec.clone();
                let id = conn;
                tasks.spawn(async move {
                    let mut buf = BytesMut::new();
                    let mut chunk = vec![0u8; 64 * 1024];
                    loop {
                        let n = match cr.read(&mut chunk).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        buf.extend_from_slice(&chunk[..n]);
                        while let Ok(Some(frame)) = split_frame(&mut buf, 1 << 30) {
                            let mut whole = BytesMut::with_capacity(4 + frame.len());
                            whole.extend_from_slice(&(frame.len() as i32).to_be_bytes());
                            whole.extend_from_slice(&frame);
                            rec.lock().unwrap().frames.push((id, whole.freeze()));
                        }
                        if sw.write_all(&chunk[..n]).await.is_err() {
                            break;
                        }
                    }
                    let _ = sw.shutdown().await;
                });
                tasks.spawn(async move {
                    let _ = tokio::io::copy(&mut sr, &mut cw).await;
                    let _ = cw.shutdown().await;
                });
            }
        });
        RecordingProxy { recorded, task }
    }

    fn frames(&self) -> Vec<(usize, Bytes)> {
        self.recorded.lock().unwrap().frames.clone()
    }
}

/// A logged request re-encoded with its logged header.
fn encode_logged(r: &LoggedRequest) -> Bytes {
    let mut buf = BytesMut::new();
    let h = &r.header;
    let result = match &r.request {
        AnyRequest::Produce(b) => encode_request(h, b, &mut buf),
        AnyRequest::Fetch(b) => encode_request(h, b, &mut buf),
        AnyRequest::Offsets(b) => encode_request(h, b, &mut buf),
        AnyRequest::Metadata(b) => encode_request(h, b, &mut buf),
        AnyRequest::OffsetCommit(b) => encode_request(h, b, &mut buf),
        AnyRequest::OffsetFetch(b) => encode_request(h, b, &mut buf),
        AnyRequest::ConsumerMetadata(b) => encode_request(h, b, &mut buf),
        other => panic!("a request kcat should not send: {other:?}"),
    };
    result.unwrap_or_else(|e| panic!("re-encoding {:?}: {e}", r.header));
    buf.freeze()
}

/// Decodes a whole request frame (size prefix included) as a broker does.
fn decode_frame(frame: &Bytes) -> (RequestHeader, AnyRequest) {
    let mut buf = BytesMut::from(&frame[..]);
    let mut body = split_frame(&mut buf, 1 << 30).unwrap().expect("one whole frame");
    assert!(buf.is_empty(), "exactly one frame");
    let header = RequestHeader::decode(&mut body).unwrap();
    let request = AnyRequest::decode(&header, body).unwrap();
    (header, request)
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../protocol/tests/data/kcat")
}

/// Kafka's topic for the capture (fixed: it is in the frames).
const CAPTURE_TOPIC: &str = "kcat-frames";

/// The single produce request for the capture topic whose messages use `codec`.
fn produce_with(log: &[LoggedRequest], codec: Compression) -> &LoggedRequest {
    let found: Vec<&LoggedRequest> = log
        .iter()
        .filter(|r| match &r.request {
            AnyRequest::Produce(ProduceRequest { topics, .. }) => topics.iter().any(|t| {
                t.topic == CAPTURE_TOPIC
                    && t.partitions.iter().any(|p| {
                        p.message_set
                            .entries()
                            .next()
                            .is_some_and(|e| e.unwrap().message.compression().unwrap() == codec)
                    })
            }),
            _ => false,
        })
        .collect();
    assert_eq!(found.len(), 1, "one {codec} produce request: {found:#?}");
    found[0]
}

fn set_of(r: &LoggedRequest) -> &MessageSet {
    let AnyRequest::Produce(p) = &r.request else { unreachable!() };
    &p.topics[0].partitions[0].message_set
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_request_frames_round_trip_and_match_the_fixtures() {
    // kcat must reach the broker through a recording proxy: the broker advertises 127.0.0.2 and
    // listens on 127.0.0.1; the proxy listens on 127.0.0.2 with the broker's port.
    let raw = std::net::TcpListener::bind((Ipv4Addr::new(127, 0, 0, 2), 0)).is_ok();
    if !raw {
        eprintln!("127.0.0.2 is not usable here: raw frames are not recorded, only re-encoded");
    }
    let (bin, c) = setup_or_skip!("kcat-capture", 1, |cfg: &mut gregor_testkit::BrokerConfig| if raw {
        cfg.host = "127.0.0.2".to_owned();
    });
    let addr = c.broker_addr(0).unwrap();
    let advertised = SocketAddr::from((Ipv4Addr::new(127, 0, 0, if raw { 2 } else { 1 }), addr.port()));
    let proxy = if raw {
        let listener = TcpListener::bind(advertised).await.expect("listen on 127.0.0.2");
        Some(RecordingProxy::start(listener, addr).await)
    } else {
        None
    };
    c.create_topic(CAPTURE_TOPIC, 1, 1).await.unwrap();
    let kcat = Kcat::new(&bin, advertised.to_string());
    kcat.run_ok(&["-L", "-t", CAPTURE_TOPIC], b"", Duration::from_secs(20)).await;
    for (name, _) in CODECS {
        let input = format!("k1:{name}-1\nk2:{name}-2\nk3:{name}-3\n");
        kcat.run_ok(
            &[
                "-P",
                "-t",
                CAPTURE_TOPIC,
                "-p",
                "0",
                "-K:",
                "-z",
                name,
                "-X",
                "topic.request.required.acks=-1",
                // the three lines go in one request
                "-X",
                "linger.ms=200",
            ],
            input.as_bytes(),
            Duration::from_secs(20),
        )
        .await;
    }
    let run = kcat
        .run_ok(
            &["-C", "-t", CAPTURE_TOPIC, "-p", "0", "-o", "beginning", "-e", "-f", CONSUME_FORMAT],
            b"",
            Duration::from_secs(20),
        )
        .await;
    let consumed = parse_consumed(&run.stdout);
    let values: Vec<&str> = consumed.iter().map(|m| m.value.as_str()).collect();
    let expected: Vec<String> = CODECS.iter().flat_map(|(n, _)| (1..=3).map(move |i| format!("{n}-{i}"))).collect();
    assert_eq!(values, expected);

    // every logged request re-encodes to the bytes kcat sent (the proxy records a frame before
    // it forwards it: give the broker a moment to log the last one, a fetch kcat left behind)
    if let Some(proxy) = &proxy {
        let deadline = Instant::now() + Duration::from_secs(5);
        while c.requests().len() < proxy.frames().len() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let log = c.requests();
    assert!(log.iter().all(|r| r.header.client_id.as_deref() == Some("rdkafka")), "kcat's client id");
    if let Some(proxy) = &proxy {
        let mut frames = proxy.frames();
        assert_eq!(frames.len(), log.len(), "the proxy saw every logged request and nothing else");
        for r in &log {
            let i = frames
                .iter()
                .position(|(_, f)| decode_frame(f) == (r.header.clone(), r.request.clone()))
                .unwrap_or_else(|| panic!("no raw frame for {:?}", r.header));
            let (_, f) = frames.remove(i);
            assert_eq!(encode_logged(r), f, "re-encoding {:?} gives kcat's bytes", r.header);
        }
    }

    // the fixtures
    let first = |key: ApiKey, pred: &dyn Fn(&AnyRequest) -> bool| -> &LoggedRequest {
        log.iter().find(|r| r.header.api_key == key && pred(&r.request)).unwrap_or_else(|| panic!("a {key} request"))
    };
    let metadata =
        first(ApiKey::Metadata, &|r| matches!(r, AnyRequest::Metadata(m) if m.topic_names().eq([CAPTURE_TOPIC])));
    let offsets = first(ApiKey::Offsets, &|_| true);
    let fetch = first(ApiKey::Fetch, &|_| true);
    let mut fixtures: Vec<(String, &LoggedRequest)> =
        vec![("metadata_v0".into(), metadata), ("offsets_v0".into(), offsets), ("fetch_v0".into(), fetch)];
    for (name, codec) in CODECS {
        let r = produce_with(&log, codec);
        let n = set_of(r).decode(&Default::default()).unwrap().messages.len();
        assert_eq!(n, 3, "the {name} produce request carries the three messages");
        fixtures.push((format!("produce_v0_{name}"), r));
    }
    eprintln!(
        "capture: {} requests{}: {:?}",
        log.len(),
        if proxy.is_some() { ", each re-encoded to the raw bytes recorded" } else { "" },
        log.iter().map(|r| format!("{}v{}", r.header.api_key, r.header.api_version)).collect::<Vec<_>>()
    );
    for (name, r) in &fixtures {
        eprintln!("capture: {name}: {:?} {:?}", r.header, r.request);
    }
    let dir = fixture_dir();
    let capture = std::env::var("GREGOR_CAPTURE_FIXTURES").is_ok_and(|v| v == "1");
    if capture {
        std::fs::create_dir_all(&dir).unwrap();
    }
    for (name, r) in &fixtures {
        assert_eq!(r.header.api_version, 0, "{name}");
        let fresh = encode_logged(r);
        let path = dir.join(format!("{name}.req.bin"));
        if capture {
            std::fs::write(&path, &fresh).unwrap();
            eprintln!("wrote {} ({} bytes)", path.display(), fresh.len());
            continue;
        }
        let saved = Bytes::from(std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; capture it with GREGOR_CAPTURE_FIXTURES=1 cargo test -p gregor-testkit --test kcat",
                path.display()
            )
        }));
        // kcat today sends what the fixture holds, up to the correlation id
        let (saved_header, saved_body) = decode_frame(&saved);
        assert_eq!(saved_header.correlation_id, i32::from_be_bytes(saved[8..12].try_into().unwrap()));
        let mut patched = BytesMut::from(&fresh[..]);
        patched[8..12].copy_from_slice(&saved_header.correlation_id.to_be_bytes());
        assert_eq!(
            (RequestHeader { correlation_id: saved_header.correlation_id, ..r.header.clone() }, &r.request),
            (saved_header, &saved_body),
            "{name}: kcat's request differs from the fixture"
        );
        assert_eq!(
            patched.freeze(),
            saved,
            "{name}: kcat's bytes differ from the fixture's (beyond the correlation id)"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 5. TLS
// ---------------------------------------------------------------------------------------------

/// The brokers serve TLS with a certificate of a CA made here: kcat (OpenSSL, an independent
/// TLS stack) told to trust that CA produces with acks=-1 and consumes everything back, hostname
/// checked (librdkafka 2.0 checks it by default); told to trust another CA it gets no metadata,
/// and the brokers count the refused handshakes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_produces_and_consumes_over_tls() {
    const N: usize = 1000;
    let Some(bin) = kcat_or_skip() else { return };
    let pki = TestPki::new("kcat");
    let dir = tempfile::tempdir().unwrap();
    let files = pki.write(dir.path()).unwrap();
    let tls = ServerTls::from_files(&files.server_certificate, &files.server_key).unwrap();
    let Some(c) = support::cluster("kcat-tls").brokers(2).quick().tls(tls).start().await else { return };
    assert!(c.is_tls());
    c.create_topic("secure", 2, 2).await.unwrap();
    let kcat = Kcat::new(&bin, c.bootstrap());
    let ca = format!("ssl.ca.location={}", files.ca.display());
    let ssl = ["-X", "security.protocol=ssl", "-X", ca.as_str(), "-X", "ssl.endpoint.identification.algorithm=https"];

    let produce = [&ssl[..], &["-P", "-t", "secure", "-K:", "-X", "topic.request.required.acks=-1", "-vv"]].concat();
    let run = kcat.run_ok(&produce, &keyed_lines(0..N, "tls-value"), Duration::from_secs(60)).await;
    let dr = parse_delivery_reports(&run.stderr);
    assert!(dr.failed.is_empty(), "kcat reported failures over TLS: {:?}", dr.failed);
    assert_eq!(dr.delivered.len(), N, "one delivery report per message");
    let consume = [&ssl[..], &["-C", "-t", "secure", "-e", "-o", "beginning", "-f", CONSUME_FORMAT]].concat();
    let run = kcat.run_ok(&consume, b"", Duration::from_secs(60)).await;
    let mut values: Vec<String> = parse_consumed(&run.stdout).into_iter().map(|m| m.value).collect();
    values.sort();
    assert_eq!(values, (0..N).map(|i| format!("tls-value-{i:05}")).collect::<Vec<_>>(), "every message back");
    assert_eq!(c.tls_handshakes_failed(), 0);

    // another CA: the brokers' certificate is refused, and no metadata comes back
    let other = TestPki::new("kcat-other");
    let other_ca = dir.path().join("other-ca.pem");
    std::fs::write(&other_ca, other.ca_pem()).unwrap();
    let other_ca = format!("ssl.ca.location={}", other_ca.display());
    let run = kcat
        .run(&["-X", "security.protocol=ssl", "-X", other_ca.as_str(), "-L", "-m", "3"], b"", Duration::from_secs(30))
        .await;
    assert!(!run.status.success(), "kcat -L with an untrusted CA succeeded: {}", run.stdout);
    assert!(
        c.tls_handshakes_failed() > 0,
        "the brokers saw the refused handshakes; kcat said:\n{}",
        tail(&run.stderr, 2000)
    );
}

// ---------------------------------------------------------------------------------------------
// 5. throughput
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a throughput figure, not a check: run in release with --ignored --nocapture"]
async fn kcat_throughput() {
    const N: usize = 500_000;
    const SIZE: usize = 100;
    let mut input = Vec::with_capacity(N * (SIZE + 1));
    for i in 0..N {
        input.extend_from_slice(format!("{i:0>width$}\n", width = SIZE).as_bytes());
    }
    for (brokers, rf) in [(1, 1), (3, 1), (3, 3)] {
        let (bin, c) = setup_or_skip!(&format!("kcat-throughput-{brokers}-{rf}"), brokers);
        c.create_topic("tp", 3, rf).await.unwrap();
        let kcat = Kcat::new(&bin, c.bootstrap());
        let run = kcat
            .run_ok(&["-P", "-t", "tp", "-X", "topic.request.required.acks=1"], &input, Duration::from_secs(600))
            .await;
        let total: i64 = (0..3).map(|p| c.offsets("tp", p).unwrap().1).sum();
        assert_eq!(total, N as i64);
        let secs = run.elapsed.as_secs_f64();
        println!(
            "kcat_throughput: {brokers} broker(s), 3 partitions, replication {rf}, acks=1: {N} x {SIZE} B in {secs:.2} s \
             = {:.0} msg/s ({:.1} MB/s)",
            N as f64 / secs,
            (N * SIZE) as f64 / secs / 1e6
        );
        c.shutdown().await;
    }
}

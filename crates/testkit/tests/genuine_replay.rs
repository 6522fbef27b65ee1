//! Replays the frames captured from a genuine Kafka 0.8.2.2 3-broker cluster
//! (`crates/protocol/tests/data/kafka-0.8.2.2/`, see its INDEX.md) against a FakeCluster built
//! like the capture's cluster, and compares every answer with the genuine one.
//!
//! * Setup "S": brokers 0, 1, 2, `offsets.topic.num.partitions=8`, the topics of index.json's
//!   `setup_topics` (explicit assignments and topic configs), created in that order.
//! * Every fixture's `.req.bin` is sent unchanged (client id and correlation id included), in
//!   capture order (the order of index.json), to the broker index.json names, with the steps of
//!   INDEX.md in between (waits for auto-created leaders and the coordinator, broker 2 killed
//!   and restarted).
//! * Each answer is decoded with `frame::decode_response::<Req>` like the `.resp.bin` and
//!   classified: identical bytes; equal after sorting (Kafka's topic/partition/broker order is a
//!   Scala hash-map order; whether the order matched is recorded separately); equal after
//!   decompression (the fake compresses with Rust's libraries, so compressed wrappers are
//!   compared decompressed, the framing around them must still match); or an accepted exception
//!   listed below with its reason and the consistency check that replaces equality.
//! * acks=0 rows: no response may come within 300 ms, and `produce_v0_acks0_error` must close
//!   the connection.
//!
//! Accepted exceptions (Kafka's random choices and one 0.8.2 metadata-cache quirk):
//!
//! * `metadata_v0_auto_create_ready`: Kafka places the auto-created topic's single replica on a
//!   random broker (the capture: broker 0). The fake's choice must be a live broker, agree with
//!   its own state, and the frame must equal the genuine one with that choice substituted.
//! * `metadata_v0_all_topics_with_offsets_topic`: the same for `auto-created`, and
//!   `__consumer_offsets`' replicas are a random Kafka placement: the fake's must be a Kafka
//!   placement too (`AdminUtils.assignReplicasToBrokers` with some start index and shift, which
//!   the genuine one is as well), leaders = first replica, ISR = replicas.
//! * `consumer_metadata_v0_ready`: the coordinator is the leader of `__consumer_offsets`
//!   partition `abs(hash("fixture-group")) % 8` = 5, random in Kafka. The fake must name the
//!   leader of its partition 5; then the v1 OffsetCommit/OffsetFetch rows, which the capture
//!   sent to the coordinator (broker 0) or to a non-coordinator (broker 1), go to the fake's
//!   coordinator / a fake non-coordinator instead (broker ids 0 and the fake coordinator
//!   swapped), so that the fake's coordinator is the broker that accepts v1 commits.
//! * `metadata_v0_after_restart`: 0.8.2 brokers learn ISR changes only from the controller's
//!   UpdateMetadata, which a leader-driven ISR expansion does not trigger (KAFKA-1367), so the
//!   genuine answer keeps the shrunk ISRs (t/1 [1], t/2 [0]) while ZooKeeper says [1, 2] and
//!   [0, 2]. The fake answers Metadata from its current ISR; it must equal the ISR the fake
//!   wrote to ZooKeeper, which must equal the genuine ZooKeeper state recorded by the capture.
//!
//! Deviations in how rows are reproduced (the rows themselves must then match):
//!
//! * `metadata_v0_empty_cluster` runs first, alone, on a cluster of its own with
//!   `BrokerConfig::empty_cluster_lists_no_brokers` (KAFKA-1867, off by default in the fake).
//! * `produce_v0_acks_all_timeout`: the capture killed broker 2 with SIGKILL and Kafka kept it in
//!   the ISR for the 6 s of its ZooKeeper session; `kill_broker` closes the session at once (like
//!   a controlled shutdown) so the ISR would shrink immediately. The row is reproduced with
//!   `pause_broker(2)` (session kept, nothing replicated), and broker 2 is killed right after it.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use common::eventually;
use gregor_protocol::frame::{self, Request};
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::messages::*;
use gregor_protocol::{Encode, MessageAndOffset, MessageSet};
use gregor_testkit::{BrokerConfig, FakeCluster};
use gregor_zk::paths;
use gregor_zk::payloads::PartitionState;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const OFFSETS_TOPIC: &str = "__consumer_offsets";
/// Port of genuine broker N: 9092 + N.
const GENUINE_PORT_BASE: i32 = 9092;
/// The capture's coordinator of `fixture-group` (INDEX.md).
const GENUINE_COORDINATOR: i32 = 0;
const GROUP: &str = "fixture-group";
/// Genuine ZooKeeper ISRs when `metadata_v0_after_restart` was answered (its notes).
const GENUINE_ZK_ISR_AFTER_RESTART: &[(&str, i32, &[i32])] = &[("t", 1, &[1, 2]), ("t", 2, &[0, 2])];
/// How long an acks=0 produce is given to (wrongly) answer.
const SILENCE: Duration = Duration::from_millis(300);
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(20);
const WAIT: Duration = Duration::from_secs(20);

fn data_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../protocol/tests/data/kafka-0.8.2.2"))
}

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Fixture {
    name: String,
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    broker: i32,
    /// The request frame, size prefix included, as captured.
    request: Bytes,
    /// The response frame without its size prefix; `None` for acks=0.
    response: Option<Bytes>,
    elapsed_ms: Option<i64>,
}

struct Index {
    fixtures: Vec<Fixture>,
    setup_topics: String,
}

fn load_index() -> Index {
    let text = std::fs::read_to_string(data_dir().join("index.json")).expect("index.json");
    let json: Value = serde_json::from_str(&text).expect("index.json is JSON");
    assert_eq!(json["kafka"], "0.8.2.2");
    let fixtures = json["fixtures"]
        .as_array()
        .expect("fixtures")
        .iter()
        .map(|row| {
            let name = row["name"].as_str().expect("name").to_owned();
            let int = |k: &str| row[k].as_i64().unwrap_or_else(|| panic!("{k} of {name}"));
            let request = Bytes::from(std::fs::read(data_dir().join(format!("{name}.req.bin"))).expect("req.bin"));
            let response = match std::fs::read(data_dir().join(format!("{name}.resp.bin"))) {
                Ok(raw) => Some(one_frame(&raw)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => panic!("{name}.resp.bin: {e}"),
            };
            assert_eq!(int("port"), GENUINE_PORT_BASE as i64 + int("broker"), "{name}: port maps to broker id");
            Fixture {
                api_key: int("api_key") as i16,
                api_version: int("api_version") as i16,
                correlation_id: int("correlation_id") as i32,
                broker: int("broker") as i32,
                request,
                response,
                elapsed_ms: row["elapsed_ms"].as_i64(),
                name,
            }
        })
        .collect();
    Index { fixtures, setup_topics: json["setup_topics"].as_str().expect("setup_topics").to_owned() }
}

fn one_frame(raw: &[u8]) -> Bytes {
    let mut buf = BytesMut::from(raw);
    let f = frame::split_frame(&mut buf, 64 << 20).expect("frame size").expect("a whole frame");
    assert!(buf.is_empty(), "one frame");
    f
}

/// A topic of setup S: name, assignment, configs.
type TopicSpec = (String, BTreeMap<i32, Vec<i32>>, BTreeMap<String, String>);

/// Parses "...--replica-assignment: t 0:1,1:2,2:0; plain 0:1; small 0:1 max.message.bytes=1024; solo 2".
fn parse_setup_topics(setup: &str) -> Vec<TopicSpec> {
    let list = setup.split("--replica-assignment:").nth(1).expect("a replica assignment list");
    list.split(';')
        .map(|item| {
            let mut words = item.split_whitespace();
            let name = words.next().expect("topic name").to_owned();
            let assignment = words
                .next()
                .expect("assignment")
                .split(',')
                .zip(0..)
                .map(|(replicas, p)| (p, replicas.split(':').map(|r| r.parse().expect("broker id")).collect()))
                .collect();
            let config = words
                .map(|kv| {
                    let (k, v) = kv.split_once('=').expect("key=value");
                    (k.to_owned(), v.to_owned())
                })
                .collect();
            (name, assignment, config)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// A raw connection: frames in and out, nothing decoded
// ---------------------------------------------------------------------------------------------

struct Wire {
    stream: TcpStream,
    buf: BytesMut,
}

enum Got {
    Frame(Bytes),
    Closed,
    Silent,
}

impl Wire {
    async fn open(addr: SocketAddr) -> Wire {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Wire { stream, buf: BytesMut::new() }
    }

    async fn send(&mut self, raw: &[u8]) {
        self.stream.write_all(raw).await.expect("write");
    }

    async fn recv(&mut self, within: Duration) -> Got {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(f) = frame::split_frame(&mut self.buf, 64 << 20).expect("frame size") {
                return Got::Frame(f);
            }
            match tokio::time::timeout_at(deadline, self.stream.read_buf(&mut self.buf)).await {
                Err(_) => return Got::Silent,
                Ok(Ok(0)) | Ok(Err(_)) => return Got::Closed,
                Ok(Ok(_)) => {}
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    IdenticalBytes,
    EqualAfterSorting,
    /// With where the compressed bytes differ.
    EqualAfterDecompression(String),
    NoResponseAsGenuine,
    Exception(String),
    Unexpected(String),
}

impl Outcome {
    fn label(&self) -> &'static str {
        match self {
            Outcome::IdenticalBytes => "identical bytes",
            Outcome::EqualAfterSorting => "equal after sorting",
            Outcome::EqualAfterDecompression(_) => "equal after decompression",
            Outcome::NoResponseAsGenuine => "no response, as genuine",
            Outcome::Exception(_) => "exception (accepted)",
            Outcome::Unexpected(_) => "UNEXPECTED DIFFERENCE",
        }
    }
}

#[derive(Debug)]
struct RowResult {
    name: String,
    sent_to: i32,
    outcome: Outcome,
    /// Whether topics/partitions/brokers came in the genuine order (None: nothing to order).
    order_matched: Option<bool>,
    note: String,
}

/// What the comparisons may consult about the fake.
struct Ctx<'a> {
    cluster: &'a FakeCluster,
    /// fake port -> genuine port (identity when the fake runs on 9092-9094).
    port_map: HashMap<i32, i32>,
    coordinator: Option<i32>,
    /// ISRs the fake wrote to ZooKeeper, read just before a row.
    zk_isr: HashMap<(String, i32), Vec<i32>>,
}

type ExceptionCheck = Option<Result<String, String>>;

/// What the comparison needs of a response type.
trait Resp: Encode + frame::Decode + Clone + PartialEq + Debug {
    /// Topics, partitions and brokers sorted.
    fn sorted(&self) -> Self;
    /// The order of topics, partitions and brokers, to tell whether it matched.
    fn order(&self) -> Vec<String>;
    /// Rewrites the fake's ports to the genuine ones.
    fn map_ports(&mut self, _map: &HashMap<i32, i32>) {}
    /// Equality with compressed wrappers compared decompressed (both sorted).
    fn equal_decompressed(&self, _other: &Self) -> bool {
        false
    }
    /// For a row equal after decompression: where the compressed bytes differ.
    fn compressed_differences(&self, _other: &Self) -> String {
        String::new()
    }
    /// An accepted exception for this row: `Some(Ok(reason))` when the fake's answer passes the
    /// row's consistency check, `Some(Err(why))` when it fails it, `None` when the row has none.
    fn exception(_name: &str, _fake: &Self, _genuine: &Self, _ctx: &Ctx<'_>) -> ExceptionCheck {
        None
    }
}

/// An entry of a topic-keyed array: a topic name and its per-partition entries.
trait TopicEntry: Clone {
    type Partition: Clone;
    fn name(&self) -> &str;
    fn partitions(&self) -> &[Self::Partition];
    fn partitions_mut(&mut self) -> &mut Vec<Self::Partition>;
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
            fn partitions_mut(&mut self) -> &mut Vec<$p> {
                &mut self.partitions
            }
        }
    )*};
}

topic_entry! {
    ProduceResponseTopic => ProduceResponsePartition,
    OffsetsResponseTopic => OffsetsResponsePartition,
    FetchResponseTopic => FetchResponsePartition,
    TopicPartitions<OffsetCommitResponsePartition> => OffsetCommitResponsePartition,
    TopicPartitions<OffsetFetchResponsePartition> => OffsetFetchResponsePartition,
}

fn sort_topics<T: TopicEntry>(topics: &[T], key: impl Fn(&T::Partition) -> i32) -> Vec<T> {
    let mut out: Vec<T> = topics
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t.partitions_mut().sort_by_key(|p| key(p));
            t
        })
        .collect();
    out.sort_by(|a, b| a.name().cmp(b.name()));
    out
}

fn topics_order<T: TopicEntry>(topics: &[T], key: impl Fn(&T::Partition) -> i32) -> Vec<String> {
    topics.iter().flat_map(|t| t.partitions().iter().map(|p| format!("{}/{}", t.name(), key(p)))).collect()
}

macro_rules! topics_resp {
    ($($ty:ty),*) => {$(
        impl Resp for $ty {
            fn sorted(&self) -> Self {
                let mut out = self.clone();
                out.topics = sort_topics(&self.topics, |p| p.partition);
                out
            }
            fn order(&self) -> Vec<String> {
                topics_order(&self.topics, |p| p.partition)
            }
        }
    )*};
}

topics_resp!(ProduceResponse, OffsetsResponse);

/// The same for the group APIs' answers, whose topic entries have a type per API.
macro_rules! group_topics_resp {
    ($($ty:ty),*) => {$(
        impl Resp for $ty {
            fn sorted(&self) -> Self {
                let mut out = self.clone();
                for t in &mut out.topics {
                    t.partitions.sort_by_key(|p| p.partition);
                }
                out.topics.sort_by(|a, b| a.topic.cmp(&b.topic));
                out
            }
            fn order(&self) -> Vec<String> {
                self.topics.iter().flat_map(|t| t.partitions.iter().map(|p| format!("{}/{}", t.topic, p.partition))).collect()
            }
        }
    )*};
}

group_topics_resp!(OffsetCommitResponse, OffsetFetchResponse);

impl Resp for FetchResponse {
    fn sorted(&self) -> Self {
        let mut out = self.clone();
        out.topics = sort_topics(&self.topics, |p| p.partition);
        out
    }
    fn order(&self) -> Vec<String> {
        topics_order(&self.topics, |p| p.partition)
    }
    fn equal_decompressed(&self, other: &Self) -> bool {
        self.topics.len() == other.topics.len()
            && self.topics.iter().zip(&other.topics).all(|(a, b)| {
                a.topic == b.topic
                    && a.partitions.len() == b.partitions.len()
                    && a.partitions.iter().zip(&b.partitions).all(|(x, y)| {
                        (x.partition, x.error_code, x.high_watermark) == (y.partition, y.error_code, y.high_watermark)
                            && canonical_set(&x.message_set) == canonical_set(&y.message_set)
                    })
            })
    }
    fn compressed_differences(&self, other: &Self) -> String {
        let sizes = |set: &MessageSet| {
            set.entries()
                .filter_map(Result::ok)
                .filter(|e| e.message.is_wrapper())
                .map(|e| e.message.value.map_or(0, |v| v.len()).to_string())
                .collect::<Vec<_>>()
                .join("+")
        };
        let mut out = Vec::new();
        for (a, b) in self.topics.iter().zip(&other.topics) {
            for (x, y) in a.partitions.iter().zip(&b.partitions) {
                if x.message_set != y.message_set {
                    out.push(format!(
                        "{}/{} wrapper values {} B (genuine {} B)",
                        a.topic,
                        x.partition,
                        sizes(&x.message_set),
                        sizes(&y.message_set)
                    ));
                }
            }
        }
        out.join(", ")
    }
}

/// A top-level entry of a message set with compressed values decompressed.
#[derive(Debug, PartialEq)]
enum Canonical {
    Message(MessageAndOffset),
    /// A wrapper: its offset, attributes and key as stored, its value decompressed and decoded.
    Wrapper {
        offset: i64,
        attributes: i8,
        key: Option<Bytes>,
        inner: Vec<MessageAndOffset>,
    },
    Partial(Bytes),
    Bad(String),
}

fn canonical_set(set: &MessageSet) -> Vec<Canonical> {
    let mut out = Vec::new();
    let mut entries = set.entries();
    for entry in entries.by_ref() {
        match entry {
            Ok(e) if e.message.is_wrapper() => {
                let one = MessageSet::encode(std::slice::from_ref(&e)).expect("re-encode one entry");
                match one.decode(&DecodeOptions::default()) {
                    Ok(d) => out.push(Canonical::Wrapper {
                        offset: e.offset,
                        attributes: e.message.attributes,
                        key: e.message.key.clone(),
                        inner: d.messages,
                    }),
                    Err(err) => out.push(Canonical::Bad(err.to_string())),
                }
            }
            Ok(e) => out.push(Canonical::Message(e)),
            Err(err) => out.push(Canonical::Bad(err.to_string())),
        }
    }
    let partial = entries.partial_trailing_bytes();
    if partial > 0 {
        out.push(Canonical::Partial(set.as_bytes().slice(set.len() - partial..)));
    }
    out
}

impl Resp for MetadataResponse {
    fn sorted(&self) -> Self {
        let mut brokers = self.brokers.clone();
        brokers.sort_by_key(|b| b.node_id);
        let mut topics: Vec<TopicMetadata> = self
            .topics
            .iter()
            .map(|t| {
                let mut t = t.clone();
                t.partitions.sort_by_key(|p| p.partition);
                t
            })
            .collect();
        topics.sort_by(|a, b| a.topic.cmp(&b.topic));
        MetadataResponse { brokers, topics, ..self.clone() }
    }
    fn order(&self) -> Vec<String> {
        let brokers = self.brokers.iter().map(|b| format!("broker {}", b.node_id));
        let parts =
            self.topics.iter().flat_map(|t| t.partitions.iter().map(move |p| format!("{}/{}", t.name(), p.partition)));
        let topics = self.topics.iter().map(|t| t.name().to_owned());
        brokers.chain(topics).chain(parts).collect()
    }
    fn map_ports(&mut self, map: &HashMap<i32, i32>) {
        for b in &mut self.brokers {
            b.port = map.get(&b.port).copied().unwrap_or(b.port);
        }
    }
    fn exception(name: &str, fake: &Self, genuine: &Self, ctx: &Ctx<'_>) -> ExceptionCheck {
        let substitute = |topics: &[&str]| -> Result<(), String> {
            let mut expected = genuine.clone();
            for t in &mut expected.topics {
                if topics.contains(&t.name()) {
                    let f =
                        fake.topics.iter().find(|f| f.topic == t.topic).ok_or(format!("fake lacks {}", t.name()))?;
                    t.partitions = f.partitions.clone();
                }
            }
            let expected = expected.sorted();
            if &expected == fake {
                Ok(())
            } else {
                Err(format!(
                    "differs beyond the random choices:\n    genuine (with the fake's choices) {expected:?}\n    fake    {fake:?}"
                ))
            }
        };
        match name {
            "metadata_v0_auto_create_ready" => {
                Some((|| {
                    let leader = check_auto_created(fake, ctx)?;
                    substitute(&["auto-created"])?;
                    Ok(format!("Kafka picks the auto-created topic's replica at random: genuine broker 0, fake broker {leader}"))
                })())
            }
            "metadata_v0_all_topics_with_offsets_topic" => Some((|| {
                let leader = check_auto_created(fake, ctx)?;
                check_offsets_topic(genuine, None).map_err(|e| format!("genuine: {e}"))?;
                let (start, shift) = check_offsets_topic(fake, Some(ctx))?;
                substitute(&["auto-created", OFFSETS_TOPIC])?;
                Ok(format!(
                    "random choices: auto-created on broker {leader} (genuine 0); __consumer_offsets is the Kafka \
                     placement with start {start}, shift {shift} (genuine: start 1, shift 0)"
                ))
            })()),
            "metadata_v0_after_restart" => Some((|| {
                let t = fake.topics.iter().find(|t| t.name() == "t").ok_or("no topic t")?;
                for (topic, p, zk_isr) in GENUINE_ZK_ISR_AFTER_RESTART {
                    let part = t.partitions.iter().find(|x| x.partition == *p).ok_or("partition missing")?;
                    let fake_zk = ctx.zk_isr.get(&((*topic).to_owned(), *p)).ok_or("no ZooKeeper state read")?;
                    if part.isr != *zk_isr || fake_zk != zk_isr {
                        return Err(format!(
                            "{topic}/{p}: fake Metadata isr {:?}, fake ZooKeeper isr {fake_zk:?}, genuine ZooKeeper isr {zk_isr:?}",
                            part.isr
                        ));
                    }
                }
                substitute(&["t"])?;
                Ok("0.8.2's metadata cache misses leader-driven ISR expansion (KAFKA-1367): genuine says t/1 isr [1], \
                    t/2 isr [0]; the fake answers the ISR it wrote to ZooKeeper ([1, 2], [0, 2]), which is what \
                    genuine ZooKeeper held"
                    .to_owned())
            })()),
            _ => None,
        }
    }
}

/// The auto-created topic: one partition on one live broker, as the fake's state says.
fn check_auto_created(fake: &MetadataResponse, ctx: &Ctx<'_>) -> Result<i32, String> {
    let t = fake.topics.iter().find(|t| t.name() == "auto-created").ok_or("no auto-created topic")?;
    let [p] = &t.partitions[..] else { return Err(format!("auto-created partitions {:?}", t.partitions)) };
    let (leader, replicas, isr) = ctx.cluster.partition_info("auto-created", 0).ok_or("fake has no auto-created/0")?;
    let ok = t.error_code == 0
        && p.error_code == 0
        && p.partition == 0
        && p.leader == leader
        && p.replicas == vec![leader]
        && replicas == vec![leader]
        && p.isr == isr
        && isr == vec![leader]
        && ctx.cluster.leader("auto-created", 0) == Some(leader);
    if ok {
        Ok(leader)
    } else {
        Err(format!("auto-created {t:?} vs fake state leader {leader} replicas {replicas:?} isr {isr:?}"))
    }
}

/// Kafka 0.8.2's `AdminUtils.assignReplicasToBrokers`.
fn kafka_placement(brokers: &[i32], partitions: usize, rf: usize, start: usize, shift: usize) -> Vec<Vec<i32>> {
    let n = brokers.len();
    let mut shift = shift;
    (0..partitions)
        .map(|p| {
            if p > 0 && p % n == 0 {
                shift += 1;
            }
            let first = (p + start) % n;
            let mut r = vec![brokers[first]];
            for j in 0..rf - 1 {
                r.push(brokers[(first + 1 + (shift + j) % (n - 1)) % n]);
            }
            r
        })
        .collect()
}

/// `__consumer_offsets`: 8 partitions of 3 replicas in a Kafka placement, leader = first
/// replica, ISR = replicas; with `ctx`, also as the fake's state says. Returns (start, shift).
fn check_offsets_topic(md: &MetadataResponse, ctx: Option<&Ctx<'_>>) -> Result<(usize, usize), String> {
    let t = md.topics.iter().find(|t| t.name() == OFFSETS_TOPIC).ok_or("no __consumer_offsets")?;
    let mut parts = t.partitions.clone();
    parts.sort_by_key(|p| p.partition);
    if t.error_code != 0 || parts.iter().map(|p| p.partition).collect::<Vec<_>>() != (0..8).collect::<Vec<_>>() {
        return Err(format!("__consumer_offsets {t:?}"));
    }
    for p in &parts {
        if p.error_code != 0 || p.replicas.len() != 3 || p.leader != p.replicas[0] || p.isr != p.replicas {
            return Err(format!("__consumer_offsets partition {p:?}"));
        }
        if let Some(ctx) = ctx {
            let (l, r, i) = ctx.cluster.partition_info(OFFSETS_TOPIC, p.partition).ok_or("no fake partition")?;
            if (l, &r, &i) != (p.leader, &p.replicas, &p.isr) {
                return Err(format!("{p:?} vs fake state {l} {r:?} {i:?}"));
            }
        }
    }
    let assignment: Vec<Vec<i32>> = parts.iter().map(|p| p.replicas.clone()).collect();
    (0..3)
        .flat_map(|s| (0..3).map(move |h| (s, h)))
        .find(|&(s, h)| kafka_placement(&[0, 1, 2], 8, 3, s, h) == assignment)
        .ok_or(format!("__consumer_offsets {assignment:?} is not a Kafka placement"))
}

impl Resp for ConsumerMetadataResponse {
    fn sorted(&self) -> Self {
        self.clone()
    }
    fn order(&self) -> Vec<String> {
        vec![]
    }
    fn map_ports(&mut self, map: &HashMap<i32, i32>) {
        self.port = map.get(&self.port).copied().unwrap_or(self.port);
    }
    fn exception(name: &str, fake: &Self, genuine: &Self, ctx: &Ctx<'_>) -> ExceptionCheck {
        if name != "consumer_metadata_v0_ready" {
            return None;
        }
        let c = ctx.coordinator?;
        let expected = ConsumerMetadataResponse { node_id: c, port: GENUINE_PORT_BASE + c, ..genuine.clone() };
        Some(if fake == &expected {
            Ok(format!(
                "Kafka's coordinator is the random leader of __consumer_offsets/{}: genuine broker {GENUINE_COORDINATOR}, \
                 fake broker {c} (the leader of the fake's partition; the v1 rows below are sent to it)",
                offsets_partition(GROUP, 8)
            ))
        } else {
            Err(format!("fake {fake:?}, expected the leader of the fake's partition: {expected:?}"))
        })
    }
}

/// Java's `String.hashCode`, abs, modulo: the `__consumer_offsets` partition of a group.
fn offsets_partition(group: &str, n: i32) -> i32 {
    let h = group.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)));
    (if h == i32::MIN { 0 } else { h.abs() }) % n
}

/// Decodes both answers for request type `R` and classifies the fake's.
fn compare<R: Request>(fx: &Fixture, fake_frame: Bytes, ctx: &Ctx<'_>) -> (Outcome, Option<bool>)
where
    R::Response: Resp,
{
    let v = fx.api_version;
    let genuine_frame = fx.response.clone().expect("a genuine response");
    let (gh, genuine) = frame::decode_response::<R>(v, genuine_frame.clone()).expect("the genuine frame decodes");
    assert_eq!(gh.correlation_id, fx.correlation_id);
    let (fh, mut fake) = match frame::decode_response::<R>(v, fake_frame) {
        Ok(d) => d,
        Err(e) => return (Outcome::Unexpected(format!("the fake's frame does not decode: {e}")), None),
    };
    if fh.correlation_id != fx.correlation_id {
        return (Outcome::Unexpected(format!("correlation id {} for {}", fh.correlation_id, fx.correlation_id)), None);
    }
    fake.map_ports(&ctx.port_map);
    let mut fake_bytes = BytesMut::new();
    frame::encode_response(fh.correlation_id, v, &fake, &mut fake_bytes).expect("re-encode");
    if fake_bytes[4..] == genuine_frame[..] {
        return (Outcome::IdenticalBytes, Some(true));
    }
    let order = Some(fake.order() == genuine.order());
    let (fs, gs) = (fake.sorted(), genuine.sorted());
    if fs == gs {
        return (Outcome::EqualAfterSorting, order);
    }
    if fs.equal_decompressed(&gs) {
        return (Outcome::EqualAfterDecompression(fs.compressed_differences(&gs)), order);
    }
    match R::Response::exception(&fx.name, &fs, &gs, ctx) {
        Some(Ok(reason)) => (Outcome::Exception(reason), order),
        Some(Err(why)) => (Outcome::Unexpected(format!("accepted-exception check failed: {why}")), order),
        None => (Outcome::Unexpected(format!("\n    genuine {gs:?}\n    fake    {fs:?}")), order),
    }
}

fn compare_any(fx: &Fixture, fake_frame: Bytes, ctx: &Ctx<'_>) -> (Outcome, Option<bool>) {
    match fx.api_key {
        0 => compare::<ProduceRequest>(fx, fake_frame, ctx),
        1 => compare::<FetchRequest>(fx, fake_frame, ctx),
        2 => compare::<OffsetsRequest>(fx, fake_frame, ctx),
        3 => compare::<MetadataRequest>(fx, fake_frame, ctx),
        8 => compare::<OffsetCommitRequest>(fx, fake_frame, ctx),
        9 => compare::<OffsetFetchRequest>(fx, fake_frame, ctx),
        10 => compare::<ConsumerMetadataRequest>(fx, fake_frame, ctx),
        k => panic!("{}: api key {k}", fx.name),
    }
}

// ---------------------------------------------------------------------------------------------
// The replay
// ---------------------------------------------------------------------------------------------

struct Replay<'a> {
    ctx: Ctx<'a>,
    conns: HashMap<i32, Wire>,
    results: Vec<RowResult>,
}

impl<'a> Replay<'a> {
    fn new(cluster: &'a FakeCluster) -> Replay<'a> {
        let port_map = cluster
            .broker_addrs()
            .into_iter()
            .map(|(id, addr)| (i32::from(addr.port()), GENUINE_PORT_BASE + id))
            .collect();
        Replay {
            ctx: Ctx { cluster, port_map, coordinator: None, zk_isr: HashMap::new() },
            conns: HashMap::new(),
            results: Vec::new(),
        }
    }

    fn cluster(&self) -> &'a FakeCluster {
        self.ctx.cluster
    }

    /// The fake broker a row goes to (see the module docs for the rerouted rows), and why.
    fn route(&self, fx: &Fixture) -> (i32, String) {
        if matches!(fx.api_key, 8 | 9) && fx.api_version == 1 {
            let c = self.ctx.coordinator.expect("the coordinator is known before v1 group requests");
            let to = if fx.broker == GENUINE_COORDINATOR {
                c
            } else if fx.broker == c {
                GENUINE_COORDINATOR
            } else {
                fx.broker
            };
            let role = if to == c { "coordinator" } else { "non-coordinator" };
            let note = if to == fx.broker { String::new() } else { format!("sent to the fake's {role} {to}") };
            return (to, note);
        }
        if fx.name == "produce_v0_internal_topic" {
            // the capture sent it to the leader of __consumer_offsets/0 (random in Kafka)
            let to = self.cluster().leader(OFFSETS_TOPIC, 0).expect("a leader of __consumer_offsets/0");
            let note = if to == fx.broker {
                String::new()
            } else {
                format!("sent to the fake's leader {to} of __consumer_offsets/0")
            };
            return (to, note);
        }
        (fx.broker, String::new())
    }

    async fn conn(&mut self, broker: i32) -> &mut Wire {
        if !self.conns.contains_key(&broker) {
            let addr = self.cluster().broker_addr(broker).expect("broker address");
            self.conns.insert(broker, Wire::open(addr).await);
        }
        self.conns.get_mut(&broker).expect("connection")
    }

    async fn row(&mut self, fx: &Fixture, mut note: String) {
        let (to, route_note) = self.route(fx);
        if !route_note.is_empty() {
            note = if note.is_empty() { route_note } else { format!("{note}; {route_note}") };
        }
        // Kafka's own ConsoleProducer used connections of its own
        let own_connection = fx.name.starts_with("java_console_producer");
        let started = Instant::now();
        let got = if own_connection {
            let mut w = Wire::open(self.cluster().broker_addr(to).expect("address")).await;
            w.send(&fx.request).await;
            w.recv(if fx.response.is_some() { RESPONSE_TIMEOUT } else { SILENCE }).await
        } else {
            let within = if fx.response.is_some() { RESPONSE_TIMEOUT } else { SILENCE };
            let w = self.conn(to).await;
            w.send(&fx.request).await;
            w.recv(within).await
        };
        let elapsed = started.elapsed();
        let (outcome, order) = match (&fx.response, got) {
            (Some(_), Got::Frame(f)) => compare_any(fx, f, &self.ctx),
            (Some(_), Got::Closed) => (Outcome::Unexpected("the fake closed the connection".into()), None),
            (Some(_), Got::Silent) => (Outcome::Unexpected("no response in time".into()), None),
            (None, Got::Frame(f)) => (Outcome::Unexpected(format!("a response where genuine sent none: {f:?}")), None),
            (None, Got::Closed) if fx.name == "produce_v0_acks0_error" => {
                note = "connection closed, as genuine".to_owned();
                (Outcome::NoResponseAsGenuine, None)
            }
            (None, Got::Closed) => (Outcome::Unexpected("the fake closed the connection".into()), None),
            (None, Got::Silent) if fx.name == "produce_v0_acks0_error" => {
                (Outcome::Unexpected("genuine closed the connection, the fake kept it open".into()), None)
            }
            (None, Got::Silent) => {
                note = format!("nothing within {} ms", SILENCE.as_millis());
                (Outcome::NoResponseAsGenuine, None)
            }
        };
        if fx.response.is_none() && matches!(outcome, Outcome::NoResponseAsGenuine) && note.contains("closed") {
            self.conns.remove(&to);
        }
        // timing rows: the fake must take as long as Kafka's purgatories do
        let outcome = match (fx.name.as_str(), fx.elapsed_ms) {
            ("fetch_v0_long_poll_empty" | "produce_v0_acks_all_timeout", Some(ms))
                if !matches!(outcome, Outcome::Unexpected(_)) =>
            {
                let floor = Duration::from_millis(ms as u64 * 95 / 100);
                note = format!(
                    "{}answered after {} ms (genuine {ms} ms)",
                    if note.is_empty() { String::new() } else { format!("{note}; ") },
                    elapsed.as_millis()
                );
                if elapsed < floor || elapsed > Duration::from_millis(ms as u64 + 2000) {
                    Outcome::Unexpected(format!("answered after {} ms, genuine after {ms} ms", elapsed.as_millis()))
                } else {
                    outcome
                }
            }
            _ => outcome,
        };
        self.results.push(RowResult { name: fx.name.clone(), sent_to: to, outcome, order_matched: order, note });
    }
}

/// Waits until every partition of `topics` has its high watermark at its leader's log end (the
/// followers have fetched everything).
async fn settle(cluster: &FakeCluster, topics: &[String]) {
    eventually("replication to settle", WAIT, async || {
        topics.iter().all(|t| {
            cluster
                .partitions(t)
                .into_iter()
                .all(|p| cluster.leader(t, p).is_none() || cluster.offsets(t, p).is_some_and(|(hw, leo)| hw == leo))
        })
    })
    .await;
}

async fn read_zk_isr(cluster: &FakeCluster, topic: &str, partition: i32) -> Vec<i32> {
    let (data, _) =
        cluster.zk().get(&paths::partition_state(topic, partition)).await.expect("zk").expect("a state znode");
    PartitionState::from_json(&data).expect("partition state").isr
}

async fn start_cluster(
    zk: String,
    ports: Option<Vec<u16>>,
    configure: impl Fn(&mut BrokerConfig),
) -> Option<FakeCluster> {
    let mut b = FakeCluster::builder(zk).brokers(3).configure(configure);
    if let Some(ports) = ports {
        b = b.ports(ports);
    }
    match b.start().await {
        Ok(c) => Some(c),
        Err(gregor_testkit::cluster::Error::Bind { .. }) => None,
        Err(e) => panic!("the fake cluster starts: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn genuine_0_8_2_2_frames_replay_against_the_fake_cluster() {
    let Some(first_chroot) = common::chroot("genuine-empty") else { return };
    gregor_testkit::init_tracing();
    let index = load_index();
    let started = Instant::now();

    // ---- metadata_v0_empty_cluster: first, alone, on a cluster of its own. A genuine 0.8.2
    // broker lists no broker while the cluster has no topic (KAFKA-1867: it learns the live
    // brokers from the controller's first UpdateMetadata, sent with the first partition); the
    // fake does that only with `empty_cluster_lists_no_brokers`, off by default.
    let empty_fx = index.fixtures.iter().find(|f| f.name == "metadata_v0_empty_cluster").expect("row");
    let empty_results = {
        let cluster = start_cluster(first_chroot, None, |c| {
            c.offsets_topic_num_partitions = 8;
            c.empty_cluster_lists_no_brokers = true;
        })
        .await
        .expect("free ports");
        let mut replay = Replay::new(&cluster);
        replay.row(empty_fx, "own cluster with empty_cluster_lists_no_brokers = true".to_owned()).await;
        let results = std::mem::take(&mut replay.results);
        drop(replay);
        cluster.shutdown().await;
        results
    };

    // ---- setup S, on 9092-9094 when they are free (else on free ports, the ports in the
    // answers mapped back to 9092 + id before comparing)
    let main_chroot = common::chroot("genuine-replay").expect("zookeeper");
    let configure = |c: &mut BrokerConfig| c.offsets_topic_num_partitions = 8;
    let (cluster, fixed_ports) = match start_cluster(main_chroot, Some(vec![9092, 9093, 9094]), configure).await {
        Some(c) => (c, true),
        None => {
            let zk = common::chroot("genuine-replay-free-ports").expect("zookeeper");
            (start_cluster(zk, None, configure).await.expect("free ports"), false)
        }
    };
    let topics = parse_setup_topics(&index.setup_topics);
    assert_eq!(topics.len(), 15, "{topics:?}");
    for (name, assignment, config) in &topics {
        cluster.create_topic_with(name, assignment.clone(), config.clone()).await.expect("create topic");
    }
    let topic_names: Vec<String> = topics.iter().map(|t| t.0.clone()).collect();

    let mut replay = Replay::new(&cluster);
    replay.results = empty_results;
    for fx in index.fixtures.iter().filter(|f| f.name != "metadata_v0_empty_cluster") {
        let mut note = String::new();
        // ---- the steps of INDEX.md between rows
        match fx.name.as_str() {
            // "the topic had a leader 0.1 s later": the capture polled until it saw one
            "metadata_v0_auto_create_ready" => cluster.wait_for_leaders("auto-created", WAIT).await.expect("leader"),
            // replication timing: Kafka's followers had fetched everything before the fetches
            "fetch_v0_plain" => settle(&cluster, &topic_names).await,
            // the capture polled ConsumerMetadata until it succeeded (613 ms)
            "consumer_metadata_v0_ready" => {
                cluster.wait_for_leaders(OFFSETS_TOPIC, WAIT).await.expect("__consumer_offsets leaders");
                let c = cluster.leader(OFFSETS_TOPIC, offsets_partition(GROUP, 8)).expect("coordinator");
                replay.ctx.coordinator = Some(c);
            }
            // genuine: broker 2 SIGKILLed, still in ZooKeeper (and the ISR) for its 6 s session.
            // kill_broker would end the session at once; pause_broker keeps it.
            "produce_v0_acks_all_timeout" => {
                cluster.pause_broker(2);
                note = "broker 2 paused (session kept) instead of SIGKILL".to_owned();
            }
            // the session of the killed broker ends: leadership of t/2 moves to 0, ISRs shrink
            "metadata_v0_broker_down" => {
                cluster.kill_broker(2).await.expect("kill broker 2");
                replay.conns.remove(&2);
                eventually("t/2 led by 0 and t/1, minisr/0 isr [1]", WAIT, async || {
                    cluster.partition_info("t", 2).is_some_and(|(l, _, isr)| l == 0 && isr == vec![0])
                        && cluster.partition_info("t", 1).is_some_and(|(_, _, isr)| isr == vec![1])
                        && cluster.partition_info("minisr", 0).is_some_and(|(_, _, isr)| isr == vec![1])
                })
                .await;
                note = "broker 2 killed after the previous row".to_owned();
            }
            // "after broker 2 was restarted and had rejoined the ISRs"
            "metadata_v0_after_restart" => {
                cluster.restart_broker(2).await.expect("restart broker 2");
                eventually("broker 2 back in the ISRs of t/1 and t/2", WAIT, async || {
                    [1, 2].iter().all(|p| cluster.partition_info("t", *p).is_some_and(|(_, _, isr)| isr.contains(&2)))
                })
                .await;
                for (t, p, _) in GENUINE_ZK_ISR_AFTER_RESTART {
                    let mut isr = read_zk_isr(&cluster, t, *p).await;
                    let deadline = Instant::now() + WAIT;
                    while !isr.contains(&2) && Instant::now() < deadline {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        isr = read_zk_isr(&cluster, t, *p).await;
                    }
                    replay.ctx.zk_isr.insert(((*t).to_owned(), *p), isr);
                }
            }
            _ => {}
        }
        replay.row(fx, note).await;
    }
    let results = std::mem::take(&mut replay.results);
    drop(replay);
    let elapsed = started.elapsed();
    cluster.shutdown().await;

    // ---- the summary
    assert_eq!(results.len(), index.fixtures.len());
    let width = results.iter().map(|r| r.name.len()).max().unwrap_or(10);
    println!();
    println!(
        "Replay of {} genuine Kafka 0.8.2.2 frames against the FakeCluster ({}, {:.1} s)",
        results.len(),
        if fixed_ports { "ports 9092-9094" } else { "free ports, mapped to 9092 + id" },
        elapsed.as_secs_f64()
    );
    println!("{:<width$}  {:>2}  {:<26}  {:<5}  note", "fixture", "to", "result", "order");
    println!("{}", "-".repeat(width + 60));
    for r in &results {
        let order = match r.order_matched {
            None => "-",
            Some(true) => "same",
            Some(false) => "DIFF",
        };
        let detail = match &r.outcome {
            Outcome::Exception(why) | Outcome::EqualAfterDecompression(why) => why.clone(),
            Outcome::Unexpected(why) => why.clone(),
            _ => String::new(),
        };
        let note = [r.note.clone(), detail].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join("; ");
        println!("{:<width$}  {:>2}  {:<26}  {:<5}  {note}", r.name, r.sent_to, r.outcome.label(), order);
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &results {
        *counts.entry(r.outcome.label()).or_default() += 1;
    }
    println!("{}", "-".repeat(width + 60));
    for (label, n) in &counts {
        println!("{label:<28} {n}");
    }
    let order_diffs = results.iter().filter(|r| r.order_matched == Some(false)).count();
    println!("{:<28} {order_diffs}", "order differed (sorted)");

    let unexpected: Vec<&RowResult> = results.iter().filter(|r| matches!(r.outcome, Outcome::Unexpected(_))).collect();
    assert!(unexpected.is_empty(), "{} unexpected difference(s): {:#?}", unexpected.len(), unexpected);
    // the exceptions are exactly the accepted ones
    let accepted = [
        "metadata_v0_auto_create_ready",
        "metadata_v0_all_topics_with_offsets_topic",
        "consumer_metadata_v0_ready",
        "metadata_v0_after_restart",
    ];
    for r in results.iter().filter(|r| matches!(r.outcome, Outcome::Exception(_))) {
        assert!(accepted.contains(&r.name.as_str()), "{} is not an accepted exception", r.name);
    }
    // the coordinator the fake named is the one that accepted the v1 commit, and a
    // non-coordinator refused it, as in the capture
    for name in
        ["offset_commit_v1", "offset_fetch_v1", "offset_commit_v1_not_coordinator", "offset_fetch_v1_not_coordinator"]
    {
        let r = results.iter().find(|r| r.name == name).expect("row");
        assert_eq!(r.outcome, Outcome::IdenticalBytes, "{name}");
    }
    assert!(elapsed < Duration::from_secs(60), "the replay took {elapsed:?}");
}

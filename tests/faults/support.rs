//! Shared by `tests/faults.rs` and `tests/outage.rs`: the profile, a seeded RNG, a verifiable
//! producer (every value carries its producer id and sequence number, every delivery result is
//! recorded), a verifiable consumer group (every delivery recorded per partition), and the
//! checks that compare both with the brokers' logs as the simple consumer reads them.

#![allow(dead_code, unreachable_pub)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gregor::consumer::{AutoOffsetReset, ConsumerConfig, ConsumerConfigBuilder, ConsumerConnector};
use gregor::producer::{AsyncProducer, DeliveryResult, ProducerConfig, Record, SendError};
use gregor::serde::{StringDecoder, StringEncoder};
use gregor::simple_consumer::{SimpleConsumer, SimpleConsumerConfig};
use gregor::zk::ZkClient;
use gregor_testkit::proxy::TcpProxy;
use gregor_testkit::zookeeper::ZooKeeperServer;
use gregor_testkit::FakeCluster;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Environment variable choosing the profile: `short` (default, what CI runs) or `long`.
pub const PROFILE_ENV: &str = "GREGOR_FAULT_PROFILE";
/// Environment variable fixing the chaos seed, to replay a run.
pub const SEED_ENV: &str = "GREGOR_FAULT_SEED";

/// How long and how hard the suites run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// CI: a couple of minutes at most, still with real kills.
    Short,
    /// Locally: at least 50 broker kills, minute-long outages.
    Long,
}

impl Profile {
    /// From [`PROFILE_ENV`]; anything but `long` is short.
    pub fn from_env() -> Profile {
        match std::env::var(PROFILE_ENV).as_deref().map(str::trim) {
            Ok("long") => Profile::Long,
            _ => Profile::Short,
        }
    }

    /// `short` or `long`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Short => "short",
            Profile::Long => "long",
        }
    }
}

/// The seed of this run: [`SEED_ENV`] when set, else the clock.
pub fn seed_from_env() -> u64 {
    if let Some(seed) = std::env::var(SEED_ENV).ok().and_then(|s| s.trim().parse().ok()) {
        return seed;
    }
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64 ^ u64::from(std::process::id()))
}

/// splitmix64: small, seeded, good enough to pick faults.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform in `lo..=hi` milliseconds.
    pub fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi.saturating_sub(lo) + 1))
    }

    /// One element of a non-empty slice.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }

    /// An index chosen with these weights.
    pub fn weighted(&mut self, weights: &[u64]) -> usize {
        let total: u64 = weights.iter().sum();
        let mut r = self.below(total);
        for (i, w) in weights.iter().enumerate() {
            if r < *w {
                return i;
            }
            r -= w;
        }
        weights.len() - 1
    }
}

/// Prints the clients' tracing to stderr when `RUST_LOG` is set (a run logs thousands of
/// retry warnings otherwise).
pub fn init_tracing_if_asked() {
    if std::env::var_os("RUST_LOG").is_some() {
        gregor_testkit::init_tracing();
    }
}

/// Locks, ignoring poisoning (a panicking reader must not hide the report).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Waiting and liveness guards come from the testkit's shared support.
pub use gregor_testkit::support::{bounded, poll_until};

/// The `/chroot` part of a ZooKeeper connect string (empty without one).
pub fn chroot_of(zookeeper: &str) -> &str {
    zookeeper.find('/').map_or("", |i| &zookeeper[i..])
}

/// Every broker live and every partition of `topic` led, with its whole replica set in sync.
pub fn healthy(cluster: &FakeCluster, topic: &str, partitions: i32) -> bool {
    (0..partitions).all(|p| {
        cluster.leader(topic, p).is_some()
            && cluster.partition_info(topic, p).is_some_and(|(_, replicas, isr)| {
                let mut r = replicas.clone();
                let mut i = isr.clone();
                r.sort_unstable();
                i.sort_unstable();
                r == i
            })
    })
}

// ---------------------------------------------------------------------------------------------
// values

/// A value of about 100 bytes naming its producer and sequence number.
pub fn value(producer: u8, seq: u64) -> String {
    let mut v = format!("p{producer}-{seq}-");
    while v.len() < 100 {
        v.push('x');
    }
    v
}

/// `(producer, seq)` of a value written by [`value`].
pub fn parse_value(v: &str) -> Option<(u8, u64)> {
    let mut it = v.split('-');
    let producer = it.next()?.strip_prefix('p')?.parse().ok()?;
    let seq = it.next()?.parse().ok()?;
    Some((producer, seq))
}

// ---------------------------------------------------------------------------------------------
// the verifiable producer

/// What became of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Accepted, no result yet.
    Pending,
    /// Acknowledged at this partition and offset.
    Acked { partition: i32, offset: i64 },
    /// Failed for good: why.
    Failed(String),
    /// `send` refused it (queue full, closed): no result will come.
    Refused { queue_full: bool },
}

/// Every record of one producer, indexed by its sequence number.
#[derive(Debug, Default)]
pub struct ProducerLedger {
    pub outcomes: Vec<Outcome>,
    /// Results for records that already had one (each record must get exactly one).
    pub extra_results: u64,
}

impl ProducerLedger {
    fn settle(&mut self, seq: u64, result: DeliveryResult) {
        let Some(slot) = self.outcomes.get_mut(seq as usize) else {
            self.extra_results += 1;
            return;
        };
        if *slot != Outcome::Pending {
            self.extra_results += 1;
            return;
        }
        *slot = match result {
            Ok(m) => Outcome::Acked { partition: m.partition, offset: m.offset },
            Err(e) => Outcome::Failed(format!("{e}: {}", e.error)),
        };
    }
}

/// Counts of a producer's ledger.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ProducerCounts {
    pub accepted: u64,
    pub acked: u64,
    pub failed: u64,
    pub pending: u64,
    pub refused: u64,
    pub extra_results: u64,
}

/// An [`AsyncProducer`] whose records are `value(id, seq)` keyed `k<seq>`, each result
/// recorded in its [`ProducerLedger`].
pub struct VerifiableProducer {
    pub id: u8,
    pub topic: String,
    pub producer: AsyncProducer<String, String>,
    pub ledger: Arc<Mutex<ProducerLedger>>,
}

impl VerifiableProducer {
    /// A producer with `config` (its ledger reserves `expected` records up front, so that the
    /// ledger itself does not reallocate while memory is measured).
    pub fn new(id: u8, topic: &str, config: ProducerConfig, expected: usize) -> VerifiableProducer {
        let producer = AsyncProducer::new(config, StringEncoder::new(), StringEncoder::new()).expect("in a runtime");
        let ledger = ProducerLedger { outcomes: Vec::with_capacity(expected), extra_results: 0 };
        VerifiableProducer { id, topic: topic.to_owned(), producer, ledger: Arc::new(Mutex::new(ledger)) }
    }

    /// Sends the next record; `false` when `send` refused it or `stop` fired first.
    pub async fn send_next(&self, stop: &mut watch::Receiver<bool>) -> bool {
        let seq = {
            let mut l = lock(&self.ledger);
            l.outcomes.push(Outcome::Pending);
            (l.outcomes.len() - 1) as u64
        };
        let ledger = Arc::clone(&self.ledger);
        let record = Record::new(self.topic.clone(), value(self.id, seq)).with_key(format!("k{seq}"));
        let send = self.producer.send_with_callback(record, move |r| lock(&ledger).settle(seq, r));
        let refused = tokio::select! {
            biased;
            r = send => match r {
                Ok(()) => return true,
                Err(e) => Outcome::Refused { queue_full: matches!(e, SendError::QueueFull { .. }) },
            },
            // the send future is dropped: the record was not queued
            _ = stop.wait_for(|s| *s) => Outcome::Refused { queue_full: false },
        };
        lock(&self.ledger).outcomes[seq as usize] = refused;
        false
    }

    /// Sends `rate` records a second (in bursts every 10 ms) until `stop`.
    pub fn spawn_sender(self: &Arc<Self>, rate: u32, mut stop: watch::Receiver<bool>) -> JoinHandle<()> {
        let me = Arc::clone(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut owed = 0f64;
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                owed += f64::from(rate) / 100.0;
                while owed >= 1.0 {
                    owed -= 1.0;
                    me.send_next(&mut stop).await;
                    if *stop.borrow() {
                        return;
                    }
                }
            }
        })
    }

    /// The counts of the ledger now.
    pub fn counts(&self) -> ProducerCounts {
        let l = lock(&self.ledger);
        let mut c = ProducerCounts { extra_results: l.extra_results, ..Default::default() };
        for o in &l.outcomes {
            match o {
                Outcome::Pending => c.pending += 1,
                Outcome::Acked { .. } => c.acked += 1,
                Outcome::Failed(_) => c.failed += 1,
                Outcome::Refused { .. } => c.refused += 1,
            }
        }
        c.accepted = c.pending + c.acked + c.failed;
        c
    }
}

// ---------------------------------------------------------------------------------------------
// the verifiable consumer group

/// One message handed to the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    pub offset: i64,
    pub producer: u8,
    pub seq: u64,
    pub member: u8,
}

/// Everything the group's streams handed out, per partition, in delivery order.
#[derive(Debug, Default)]
pub struct GroupLedger {
    pub partitions: BTreeMap<i32, Vec<Delivery>>,
    /// Errors the streams yielded (`RebalanceFailed` and others), as text.
    pub errors: Vec<String>,
    /// Values that were not written by a [`VerifiableProducer`].
    pub foreign: u64,
}

impl GroupLedger {
    /// Distinct offsets delivered per partition.
    pub fn distinct(&self) -> BTreeMap<i32, BTreeSet<i64>> {
        self.partitions.iter().map(|(p, d)| (*p, d.iter().map(|d| d.offset).collect())).collect()
    }

    /// Deliveries in all.
    pub fn total(&self) -> usize {
        self.partitions.values().map(Vec::len).sum()
    }
}

/// One member of the group: its connector, its readers, and (for the members whose session
/// can be expired) the proxy between it and ZooKeeper.
pub struct Member {
    pub id: u8,
    pub connector: ConsumerConnector,
    pub proxy: Option<TcpProxy>,
    pub session_timeout: Duration,
    pub readers: Vec<JoinHandle<()>>,
}

/// A consumer config for the group: offsets in ZooKeeper, read from the start, short backoffs.
pub fn consumer_config(zookeeper: &str, group: &str, member: u8) -> ConsumerConfigBuilder {
    ConsumerConfig::builder()
        .zookeeper_connect(zookeeper)
        .group_id(group)
        .consumer_id(format!("m{member}"))
        .client_id(format!("{group}-m{member}"))
        .auto_offset_reset(AutoOffsetReset::Smallest)
        .auto_commit_interval(Duration::from_millis(500))
        .rebalance_backoff(Duration::from_millis(500))
        .rebalance_max_retries(20)
        .socket_timeout(Duration::from_secs(5))
}

/// Starts a member with `streams` streams on `topic` in the cluster whose ZooKeeper (with its
/// chroot) is `zookeeper`, its ZooKeeper connection through a proxy
/// when `via_proxy`, recording every delivery in `ledger`. With a `gate`, the application
/// takes the next message only while the gate is open (`true`): closing it makes a slow app.
#[allow(clippy::too_many_arguments)]
pub async fn join_member(
    zookeeper: &str,
    topic: &str,
    id: u8,
    streams: usize,
    via_proxy: bool,
    config: ConsumerConfigBuilder,
    ledger: Arc<Mutex<GroupLedger>>,
    gate: Option<watch::Receiver<bool>>,
) -> Member {
    let (proxy, config) = if via_proxy {
        let server = ZooKeeperServer::shared();
        let proxy = TcpProxy::start(server.addr()).await.expect("a proxy");
        let connect = format!("{}{}", proxy.addr(), chroot_of(zookeeper));
        (Some(proxy), config.zookeeper_connect(connect))
    } else {
        (None, config)
    };
    let config = config.build().expect("a valid consumer config");
    let session_timeout = config.zookeeper_session_timeout;
    let connector = bounded("a consumer connecting", Duration::from_secs(30), ConsumerConnector::new(config))
        .await
        .expect("the consumer connects");
    let mut created = bounded(
        "a consumer's first rebalance",
        Duration::from_secs(60),
        connector.create_message_streams(HashMap::from([(topic.to_owned(), streams)]), Arc::new(StringDecoder::new())),
    )
    .await
    .expect("streams");
    let mut readers = Vec::new();
    for mut stream in created.remove(topic).expect("the topic's streams") {
        let ledger = Arc::clone(&ledger);
        let mut gate = gate.clone();
        readers.push(tokio::spawn(async move {
            loop {
                if let Some(g) = gate.as_mut() {
                    if g.wait_for(|open| *open).await.is_err() {
                        gate = None; // the gate is gone: read freely
                    }
                }
                let Some(item) = stream.next().await else { break };
                match item {
                    Ok(m) => {
                        let mut l = lock(&ledger);
                        match m.value.as_deref().and_then(parse_value) {
                            Some((producer, seq)) => l.partitions.entry(m.partition).or_default().push(Delivery {
                                offset: m.offset,
                                producer,
                                seq,
                                member: id,
                            }),
                            None => l.foreign += 1,
                        }
                    }
                    Err(e) => lock(&ledger).errors.push(format!("m{id}: {e}")),
                }
            }
        }));
    }
    Member { id, connector, proxy, session_timeout, readers }
}

/// Shuts a member down (bounded) and waits for its readers, whose streams end.
pub async fn leave(member: Member) {
    let id = member.id;
    if let Some(p) = &member.proxy {
        p.resume();
    }
    let r = bounded("a consumer's shutdown", Duration::from_secs(30), member.connector.shutdown()).await;
    if let Err(e) = r {
        eprintln!("m{id}: shutdown: {e}");
    }
    for r in member.readers {
        bounded("a stream ending after shutdown", Duration::from_secs(10), r).await.expect("a reader task");
    }
}

// ---------------------------------------------------------------------------------------------
// what ZooKeeper and the brokers hold

/// The owner thread id of each partition of `topic` in `group` (from `/consumers/G/owners`).
pub async fn owners(zk: &ZkClient, group: &str, topic: &str, partitions: i32) -> BTreeMap<i32, String> {
    let mut out = BTreeMap::new();
    for p in 0..partitions {
        if let Ok(Some((d, _))) = zk.get(&format!("/consumers/{group}/owners/{topic}/{p}")).await {
            out.insert(p, String::from_utf8_lossy(&d).into_owned());
        }
    }
    out
}

/// Checks that every partition is owned by exactly one live member: an owner znode for each,
/// naming a thread of a consumer registered under `/consumers/G/ids`, and the members' own
/// views agreeing with ZooKeeper (no partition held by two of them). `Err` says what is wrong.
pub async fn check_ownership(
    zk: &ZkClient,
    group: &str,
    topic: &str,
    partitions: i32,
    members: &[&Member],
) -> Result<BTreeMap<i32, String>, String> {
    let ids: BTreeSet<String> = zk
        .children(&format!("/consumers/{group}/ids"))
        .await
        .map_err(|e| format!("listing ids: {e}"))?
        .unwrap_or_default()
        .into_iter()
        .collect();
    let o = owners(zk, group, topic, partitions).await;
    for p in 0..partitions {
        let Some(thread) = o.get(&p) else { return Err(format!("partition {p} unowned (owners {o:?})")) };
        let consumer = thread.rsplit_once('-').map_or(thread.as_str(), |(c, _)| c);
        if !ids.contains(consumer) {
            return Err(format!("partition {p} owned by {thread}, not a registered member ({ids:?})"));
        }
    }
    let mut views: BTreeMap<i32, String> = BTreeMap::new();
    for m in members {
        for (tp, thread) in m.connector.owned_partitions() {
            if tp.topic != topic {
                continue;
            }
            if let Some(other) = views.insert(tp.partition, thread.clone()) {
                return Err(format!("partition {} held by {other} and {thread}", tp.partition));
            }
        }
    }
    if views != o {
        return Err(format!("members' views {views:?} differ from ZooKeeper's owners {o:?}"));
    }
    Ok(o)
}

/// The committed offsets of `group` on `topic` (`/consumers/G/offsets/T/P`).
pub async fn committed(zk: &ZkClient, group: &str, topic: &str, partitions: i32) -> BTreeMap<i32, i64> {
    let mut out = BTreeMap::new();
    for p in 0..partitions {
        if let Ok(Some((d, _))) = zk.get(&format!("/consumers/{group}/offsets/{topic}/{p}")).await {
            if let Ok(o) = String::from_utf8_lossy(&d).trim().parse() {
                out.insert(p, o);
            }
        }
    }
    out
}

/// One message of a log: offset, producer, sequence number (`u8::MAX` for a foreign value).
pub type LogEntry = (i64, u8, u64);

/// Every partition's log up to its high watermark, read with the simple consumer.
pub async fn read_logs(brokers: &str, topic: &str, partitions: i32) -> BTreeMap<i32, Vec<LogEntry>> {
    let config = SimpleConsumerConfig::builder()
        .metadata_broker_list(brokers)
        .client_id("fault-suite-log-reader")
        .fetch_wait_max(Duration::from_millis(10))
        .build()
        .expect("a simple consumer config");
    let simple = SimpleConsumer::new(config).expect("a simple consumer");
    let mut out = BTreeMap::new();
    for p in 0..partitions {
        let mut entries = Vec::new();
        let mut offset = 0;
        loop {
            let data =
                bounded("a simple-consumer fetch", Duration::from_secs(30), simple.fetch_partition(topic, p, offset))
                    .await
                    .unwrap_or_else(|e| panic!("reading {topic}/{p} at {offset}: {e}"));
            for m in &data.messages {
                let v = m.value.as_deref().map(String::from_utf8_lossy);
                let (producer, seq) = v.as_deref().and_then(parse_value).unwrap_or((u8::MAX, 0));
                entries.push((m.offset, producer, seq));
            }
            offset = data.next_offset;
            if offset >= data.high_watermark {
                break;
            }
        }
        out.insert(p, entries);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// the verdict

/// What the producers' ledgers and the logs say together.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ProduceVerdict {
    pub accepted: u64,
    pub acked: u64,
    pub failed: u64,
    /// Accepted but without a result.
    pub pending: u64,
    pub extra_results: u64,
    /// Acknowledged, yet in no partition's log.
    pub lost: u64,
    /// Acknowledged at an offset that holds another message (the record may be elsewhere).
    pub misplaced: u64,
    /// Log entries beyond the first of their record.
    pub duplicated: u64,
    /// First occurrences of a producer's records in a partition out of send order.
    pub reordered: u64,
    /// Failed records that the brokers stored all the same.
    pub failed_but_stored: u64,
    /// Log entries no producer of this run wrote.
    pub foreign: u64,
    /// Messages in the logs.
    pub in_logs: u64,
    /// Examples of lost records, for the report.
    pub lost_examples: Vec<String>,
}

/// Compares the producers' ledgers with the logs.
pub fn judge_produce(producers: &[&VerifiableProducer], logs: &BTreeMap<i32, Vec<LogEntry>>) -> ProduceVerdict {
    let mut v = ProduceVerdict::default();
    let mut where_: HashMap<(u8, u64), Vec<(i32, i64)>> = HashMap::new();
    for (p, entries) in logs {
        let mut last_first: HashMap<u8, u64> = HashMap::new();
        for &(offset, producer, seq) in entries {
            v.in_logs += 1;
            if producer == u8::MAX {
                v.foreign += 1;
                continue;
            }
            let seen = where_.entry((producer, seq)).or_default();
            if seen.is_empty() {
                if let Some(prev) = last_first.get(&producer) {
                    if seq < *prev {
                        v.reordered += 1;
                    }
                }
                last_first.insert(producer, seq);
            } else {
                v.duplicated += 1;
            }
            seen.push((*p, offset));
        }
    }
    for vp in producers {
        let c = vp.counts();
        v.accepted += c.accepted;
        v.acked += c.acked;
        v.failed += c.failed;
        v.pending += c.pending;
        v.extra_results += c.extra_results;
        let l = lock(&vp.ledger);
        for (seq, o) in l.outcomes.iter().enumerate() {
            let found = where_.get(&(vp.id, seq as u64));
            match o {
                Outcome::Acked { partition, offset } => match found {
                    None => {
                        v.lost += 1;
                        if v.lost_examples.len() < 10 {
                            v.lost_examples.push(format!("p{}-{seq} acked at {partition}@{offset}", vp.id));
                        }
                    }
                    Some(at) if !at.contains(&(*partition, *offset)) => v.misplaced += 1,
                    Some(_) => {}
                },
                Outcome::Failed(_) if found.is_some() => v.failed_but_stored += 1,
                _ => {}
            }
        }
    }
    v
}

/// What the group's deliveries, its commits and the logs say together.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ConsumeVerdict {
    pub deliveries: u64,
    pub distinct: u64,
    /// Deliveries beyond the first of their offset.
    pub duplicated: u64,
    /// Messages in the logs never delivered.
    pub lost: u64,
    /// First deliveries of a partition's offsets out of offset order (a gap filled later).
    pub reordered: u64,
    /// Deliveries whose message differs from the one the log holds at that offset.
    pub mismatched: u64,
    /// Offsets below a committed offset that were never delivered (commits of unprocessed
    /// messages), and committed offsets beyond the log end.
    pub committed_unprocessed: u64,
    pub committed_beyond_log: u64,
    /// Examples for the report.
    pub examples: Vec<String>,
}

/// Compares the deliveries with the logs and the committed offsets (`committed`: the highest
/// committed offset seen per partition, over the run and at the end).
pub fn judge_consume(
    group: &GroupLedger,
    logs: &BTreeMap<i32, Vec<LogEntry>>,
    committed: &BTreeMap<i32, i64>,
) -> ConsumeVerdict {
    let mut v = ConsumeVerdict::default();
    for (p, entries) in logs {
        let by_offset: HashMap<i64, (u8, u64)> = entries.iter().map(|&(o, pr, s)| (o, (pr, s))).collect();
        let empty = Vec::new();
        let deliveries = group.partitions.get(p).unwrap_or(&empty);
        let mut first: BTreeSet<i64> = BTreeSet::new();
        let mut max_first = -1;
        for d in deliveries {
            v.deliveries += 1;
            if first.insert(d.offset) {
                if d.offset < max_first {
                    v.reordered += 1;
                }
                max_first = max_first.max(d.offset);
            } else {
                v.duplicated += 1;
            }
            if by_offset.get(&d.offset) != Some(&(d.producer, d.seq)) {
                v.mismatched += 1;
                if v.examples.len() < 10 {
                    v.examples.push(format!(
                        "{p}@{}: delivered p{}-{}, log has {:?}",
                        d.offset,
                        d.producer,
                        d.seq,
                        by_offset.get(&d.offset)
                    ));
                }
            }
        }
        v.distinct += first.len() as u64;
        for &(o, _, _) in entries {
            if !first.contains(&o) {
                v.lost += 1;
                if v.examples.len() < 10 {
                    v.examples.push(format!("{p}@{o}: in the log, never delivered"));
                }
            }
        }
        let log_end = entries.last().map_or(0, |e| e.0 + 1);
        if let Some(&c) = committed.get(p) {
            if c > log_end {
                v.committed_beyond_log += 1;
                v.examples.push(format!("{p}: committed {c} beyond the log end {log_end}"));
            }
            for &(o, _, _) in entries.iter().take_while(|e| e.0 < c) {
                if !first.contains(&o) {
                    v.committed_unprocessed += 1;
                }
            }
        }
    }
    v
}

/// `VmRSS` and `VmHWM` of this process in KiB (0 when unreadable).
pub fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Seconds since `t`, for log lines.
pub fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

//! [`ConsumerConnector`]: registration, watches, rebalance, fetchers, commits.
//!
//! ```text
//!  ZooKeeper watches ──► coordinator task ──► plan (assignment.rs, pure)
//!  (ids, topics,          │  claim /owners (all or nothing), read offsets
//!   partitions,           ▼
//!   session events)   fetcher tasks ──chunks (room per stream)──► KafkaStream queues
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gregor_net::{ConnectionConfig, Pool};
use gregor_protocol::TopicPartition;
use gregor_serde::{BytesDecoder, Decoder};
use gregor_zk::{paths, SessionEvent, ZkClient};
use rand::Rng;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::assignment::ThreadId;
use crate::brokers::Brokers;
use crate::config::ConsumerConfig;
use crate::error::{self, Error, Result};
use crate::fetcher::{run_fetchers, FetchTarget};
use crate::filter::TopicFilter;
use crate::offsets::OffsetStore;
use crate::rebalance::{self, Attempt, Subscription};
use crate::registry::{Registry, ZkRegistry};
use crate::stream::{Chunk, KafkaStream, PartitionState, Prefetch, StreamQueue};

/// Lag of one owned partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionLag {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The owning thread id.
    pub owner: String,
    /// The next offset the app gets.
    pub consumed: i64,
    /// The high watermark of the last fetch (-1: none yet).
    pub high_watermark: i64,
    /// `high_watermark - consumed`, not below 0 (0 while unknown).
    pub lag: i64,
}

#[derive(Debug)]
enum Command {
    Commit(oneshot::Sender<Result<()>>),
    Shutdown(oneshot::Sender<Result<()>>),
}

#[derive(Debug, Default)]
struct Owned {
    parts: BTreeMap<TopicPartition, (ThreadId, Arc<PartitionState>)>,
}

/// Counters of what the connector went through (see [`ConsumerConnector::stats`]).
#[derive(Debug, Default)]
struct Stats {
    rebalances: AtomicU64,
    failed_rebalances: AtomicU64,
    session_expirations: AtomicU64,
}

/// A snapshot of the connector's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectorStats {
    /// Rebalances that ended with every planned partition claimed.
    pub rebalances: u64,
    /// Rebalances that gave up after `rebalance.max.retries` attempts.
    pub failed_rebalances: u64,
    /// ZooKeeper session expirations seen (each followed by re-registration and a rebalance).
    pub session_expirations: u64,
    /// Chunks (one partition's messages from one fetch) in the streams' queues, including the
    /// chunk each stream is handing out. At most `queued.max.message.chunks` per stream.
    pub queued_chunks: u64,
    /// Wire bytes of the message sets of those chunks: at most
    /// `streams x queued.max.message.chunks x fetch.message.max.bytes`.
    pub queued_bytes: u64,
    /// Chunks fetched and decoded but waiting in a fetcher for room in their stream's queue
    /// (and stuck partitions' errors waiting to be queued): at most one per owned partition.
    pub held_chunks: u64,
    /// Wire bytes of those: at most `owned partitions x fetch.message.max.bytes`.
    pub held_bytes: u64,
}

/// Kafka 0.8.2's `ZookeeperConsumerConnector`: a member of a consumer group coordinated
/// through ZooKeeper, znode- and algorithm-compatible with Java's.
#[derive(Debug)]
pub struct ConsumerConnector {
    config: ConsumerConfig,
    consumer_id: String,
    zk: ZkClient,
    brokers: Brokers,
    store: OffsetStore,
    owned: Arc<Mutex<Owned>>,
    generation: Arc<AtomicU64>,
    stats: Arc<Stats>,
    prefetch: Arc<Prefetch>,
    commands: Mutex<Option<mpsc::Sender<Command>>>,
    task: Mutex<Option<JoinHandle<()>>>,
}

/// `high_watermark - consumed`, not below 0, and 0 while either is unknown (-1).
fn lag(consumed: i64, high_watermark: i64) -> i64 {
    if high_watermark < 0 || consumed < 0 {
        0
    } else {
        (high_watermark - consumed).max(0)
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_owned()).filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "localhost".to_owned())
}

/// The consumer id: `<group>_<consumer.id>` or `<group>_<host>-<ms>-<first 8 hex of a UUID>`.
pub fn make_consumer_id(group: &str, consumer_id: Option<&str>) -> String {
    match consumer_id {
        Some(id) => format!("{group}_{id}"),
        None => format!("{group}_{}-{}-{:08x}", hostname(), now_ms(), rand::rng().random::<u32>()),
    }
}

impl ConsumerConnector {
    /// Connects to ZooKeeper and to the brokers registered there.
    ///
    /// # Errors
    ///
    /// [`Error::Zk`] when ZooKeeper cannot be reached, [`Error::Net`] when no broker is
    /// registered under `/brokers/ids`.
    pub async fn new(config: ConsumerConfig) -> Result<ConsumerConnector> {
        let zk = ZkClient::connect(&config.zookeeper_connect, config.zookeeper_session_timeout)
            .await
            .map_err(error::zk(format!("connecting to {}", config.zookeeper_connect)))?;
        let conn_config = ConnectionConfig::builder()
            .client_id(config.client_id.clone())
            .request_timeout(config.socket_timeout)
            .api_version_request(config.api_version_request)
            .broker_version_fallback(config.broker_version_fallback)
            .security(&config.security)
            .build()
            .map_err(|e| Error::InvalidSubscription(e.to_string()))?;
        let pool = Pool::new(conn_config);
        let brokers = Brokers::connect(zk.clone(), pool.clone()).await?;
        let consumer_id = make_consumer_id(&config.group_id, config.consumer_id.as_deref());
        let store = OffsetStore { config: config.clone(), zk: zk.clone(), pool, brokers: brokers.clone() };
        Ok(ConsumerConnector {
            config,
            consumer_id,
            zk,
            brokers,
            store,
            owned: Arc::default(),
            generation: Arc::new(AtomicU64::new(0)),
            stats: Arc::default(),
            prefetch: Arc::default(),
            commands: Mutex::new(None),
            task: Mutex::new(None),
        })
    }

    /// This member's consumer id.
    pub fn consumer_id(&self) -> &str {
        &self.consumer_id
    }

    /// `n` streams per topic (Java's `createMessageStreams(topicCountMap, decoder)`, for code
    /// ported from 0.8; [`ConsumerConnector::subscribe`] is the Rust way). Registers in
    /// `/consumers/G/ids`, rebalances once (waiting for it), and follows the group from then on.
    ///
    /// # Errors
    ///
    /// [`Error::StreamsAlreadyCreated`] on a second call, [`Error::InvalidSubscription`] for
    /// no topic or zero streams, [`Error::Zk`] when registering fails.
    pub async fn create_message_streams<T: Send + 'static>(
        &self,
        topic_count: HashMap<String, usize>,
        decoder: Arc<dyn Decoder<T>>,
    ) -> Result<HashMap<String, Vec<KafkaStream<T>>>> {
        self.create_message_streams_with_key_decoder(topic_count, Arc::new(BytesDecoder), decoder).await
    }

    /// As [`ConsumerConnector::create_message_streams`], with the keys decoded by
    /// `key_decoder` (Kafka's `createMessageStreams(topicCountMap, keyDecoder, valueDecoder)`).
    ///
    /// # Errors
    ///
    /// As [`ConsumerConnector::create_message_streams`].
    pub async fn create_message_streams_with_key_decoder<K: Send + 'static, T: Send + 'static>(
        &self,
        topic_count: HashMap<String, usize>,
        key_decoder: Arc<dyn Decoder<K>>,
        decoder: Arc<dyn Decoder<T>>,
    ) -> Result<HashMap<String, Vec<KafkaStream<T, K>>>> {
        let sub = Subscription::Static(topic_count.into_iter().collect());
        let mut out: HashMap<String, Vec<KafkaStream<T, K>>> = HashMap::new();
        for s in self.open_streams(sub, key_decoder, decoder).await? {
            out.entry(s.topic().unwrap_or_default().to_owned()).or_default().push(s);
        }
        Ok(out)
    }

    /// `n` streams over every topic allowed by `filter` (new topics are picked up): Java's
    /// `createMessageStreamsByFilter`; [`ConsumerConnector::subscribe_filter`] is the Rust way.
    /// See [`TopicFilter`] for the supported filter syntax.
    ///
    /// # Errors
    ///
    /// As [`ConsumerConnector::create_message_streams`].
    pub async fn create_message_streams_by_filter<T: Send + 'static>(
        &self,
        filter: TopicFilter,
        n: usize,
        decoder: Arc<dyn Decoder<T>>,
    ) -> Result<Vec<KafkaStream<T>>> {
        self.create_message_streams_by_filter_with_key_decoder(filter, n, Arc::new(BytesDecoder), decoder).await
    }

    /// As [`ConsumerConnector::create_message_streams_by_filter`], with the keys decoded by
    /// `key_decoder`.
    ///
    /// # Errors
    ///
    /// As [`ConsumerConnector::create_message_streams`]; [`Error::InvalidSubscription`] for a
    /// filter that is not a valid regex.
    pub async fn create_message_streams_by_filter_with_key_decoder<K: Send + 'static, T: Send + 'static>(
        &self,
        filter: TopicFilter,
        n: usize,
        key_decoder: Arc<dyn Decoder<K>>,
        decoder: Arc<dyn Decoder<T>>,
    ) -> Result<Vec<KafkaStream<T, K>>> {
        self.open_streams(Subscription::Filter(filter, n), key_decoder, decoder).await
    }

    /// Checks the subscription, makes its streams (topics in name order, then stream number),
    /// registers and waits for the first rebalance.
    pub(crate) async fn open_streams<K: Send + 'static, T: Send + 'static>(
        &self,
        sub: Subscription,
        key_decoder: Arc<dyn Decoder<K>>,
        decoder: Arc<dyn Decoder<T>>,
    ) -> Result<Vec<KafkaStream<T, K>>> {
        match &sub {
            Subscription::Static(m) => {
                if m.is_empty() || m.values().any(|&n| n == 0) {
                    return Err(Error::InvalidSubscription("every topic needs at least one stream".into()));
                }
            }
            Subscription::Filter(filter, n) => {
                if *n == 0 || filter.regex().is_empty() {
                    return Err(Error::InvalidSubscription("a filter needs a pattern and at least one stream".into()));
                }
                filter.validate()?;
            }
        }
        let (senders, streams) = self.make_streams(&sub, key_decoder, decoder);
        self.start(sub, senders).await?;
        Ok(streams)
    }

    fn make_streams<K: Send + 'static, T: Send + 'static>(
        &self,
        sub: &Subscription,
        key_decoder: Arc<dyn Decoder<K>>,
        decoder: Arc<dyn Decoder<T>>,
    ) -> (Senders, Vec<KafkaStream<T, K>>) {
        let cap = self.config.queued_max_message_chunks + 16;
        let mut senders = Senders::new();
        let mut streams = Vec::new();
        for (key, n) in sub.stream_keys() {
            for _ in 0..n {
                let (tx, rx) = mpsc::channel(cap);
                senders
                    .entry(key.clone())
                    .or_default()
                    .push(StreamQueue::new(tx, self.config.queued_max_message_chunks));
                let s = KafkaStream::new(
                    rx,
                    Arc::clone(&self.generation),
                    Arc::clone(&decoder),
                    Arc::clone(&key_decoder),
                    self.config.consumer_timeout,
                    matches!(sub, Subscription::Static(_)).then(|| key.clone()),
                );
                streams.push(s);
            }
        }
        (senders, streams)
    }

    async fn start(&self, sub: Subscription, senders: Senders) -> Result<()> {
        let rx = {
            let mut slot = self.commands.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_some() {
                return Err(Error::StreamsAlreadyCreated);
            }
            let (tx, rx) = mpsc::channel(8);
            *slot = Some(tx);
            rx
        };
        let coordinator = Coordinator {
            config: self.config.clone(),
            consumer_id: self.consumer_id.clone(),
            zk: self.zk.clone(),
            registry: ZkRegistry::new(self.zk.clone(), self.config.group_id.clone()),
            brokers: self.brokers.clone(),
            store: self.store.clone(),
            owned: Arc::clone(&self.owned),
            generation: Arc::clone(&self.generation),
            stats: Arc::clone(&self.stats),
            kept: BTreeMap::new(),
            conflict_watch: None,
            prefetch: Arc::clone(&self.prefetch),
            sub,
            senders,
            fetchers: Vec::new(),
            forwarders: Vec::new(),
            topic_watches: BTreeMap::new(),
            changes_tx: None,
        };
        coordinator.register().await?;
        let (first_tx, first_rx) = oneshot::channel();
        let task = tokio::spawn(coordinator.run(rx, first_tx));
        *self.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
        let _ = first_rx.await;
        Ok(())
    }

    /// Commits the consumed offset of every owned partition.
    ///
    /// Cancel safety: the commit goes on in the background if the future is dropped.
    ///
    /// # Errors
    ///
    /// [`Error::Shutdown`] after shutdown or before streams exist; the store's errors.
    pub async fn commit_offsets(&self) -> Result<()> {
        let tx = self.commands.lock().unwrap_or_else(|p| p.into_inner()).clone().ok_or(Error::Shutdown)?;
        let (reply, rx) = oneshot::channel();
        tx.send(Command::Commit(reply)).await.map_err(|_| Error::Shutdown)?;
        rx.await.map_err(|_| Error::Shutdown)?
    }

    /// Lag of every owned partition: the high watermark of the partition's last fetch minus
    /// the next offset the app gets. A partition waiting for room in its stream is still named
    /// in every fetch (with `max_bytes` 0) and probed at least every `fetch.wait.max.ms`, so its
    /// high watermark stays current while the app falls behind or stops reading.
    pub fn lag(&self) -> Vec<PartitionLag> {
        let owned = self.owned.lock().unwrap_or_else(|p| p.into_inner());
        owned
            .parts
            .iter()
            .map(|(tp, (owner, st))| {
                let consumed = st.consumed.load(Ordering::Acquire);
                let hw = st.high_watermark.load(Ordering::Acquire);
                PartitionLag {
                    topic: tp.topic.clone(),
                    partition: tp.partition,
                    owner: owner.to_string(),
                    consumed,
                    high_watermark: hw,
                    lag: lag(consumed, hw),
                }
            })
            .collect()
    }

    /// Counters: successful and failed rebalances, session expirations.
    pub fn stats(&self) -> ConnectorStats {
        ConnectorStats {
            rebalances: self.stats.rebalances.load(Ordering::Acquire),
            failed_rebalances: self.stats.failed_rebalances.load(Ordering::Acquire),
            session_expirations: self.stats.session_expirations.load(Ordering::Acquire),
            queued_chunks: self.prefetch.queued_chunks.load(Ordering::Acquire),
            queued_bytes: self.prefetch.queued_bytes.load(Ordering::Acquire),
            held_chunks: self.prefetch.held_chunks.load(Ordering::Acquire),
            held_bytes: self.prefetch.held_bytes.load(Ordering::Acquire),
        }
    }

    /// Wire bytes of fetched message sets this connector holds now: queued in its streams or
    /// waiting in its fetchers for room (see [`ConnectorStats::queued_bytes`] and
    /// [`ConnectorStats::held_bytes`]). Bounded by
    /// `(streams x queued.max.message.chunks + owned partitions) x fetch.message.max.bytes`,
    /// whatever the app's pace and the compression ratio: the sets are held as they came
    /// (compressed), and each stream decompresses the chunk it is handing out a window at a
    /// time (32 KiB of gzip or zstd output, one snappy or lz4 block) plus the message being
    /// read, never a whole expanded set. Besides these, each fetcher holds the answer to its
    /// one Fetch request in flight while it is read.
    pub fn buffered_bytes(&self) -> u64 {
        let p = &self.prefetch;
        p.queued_bytes.load(Ordering::Acquire) + p.held_bytes.load(Ordering::Acquire)
    }

    /// The partitions this member owns now, with their thread ids.
    pub fn owned_partitions(&self) -> BTreeMap<TopicPartition, String> {
        let owned = self.owned.lock().unwrap_or_else(|p| p.into_inner());
        owned.parts.iter().map(|(k, (t, _))| (k.clone(), t.to_string())).collect()
    }

    /// Stops fetching, commits (when `auto.commit.enable`), releases ownership, deregisters
    /// and ends every stream.
    ///
    /// # Errors
    ///
    /// The final commit's error (ownership is released and the registration deleted anyway).
    pub async fn shutdown(&self) -> Result<()> {
        let tx = self.commands.lock().unwrap_or_else(|p| p.into_inner()).take();
        let result = match tx {
            Some(tx) => {
                let (reply, rx) = oneshot::channel();
                if tx.send(Command::Shutdown(reply)).await.is_ok() {
                    rx.await.unwrap_or(Ok(()))
                } else {
                    Ok(())
                }
            }
            None => Ok(()),
        };
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(task) = task {
            let _ = task.await;
        }
        let _ = self.zk.close().await;
        self.brokers.pool().close().await;
        result
    }
}

type Senders = BTreeMap<String, Vec<StreamQueue>>;

struct Coordinator {
    config: ConsumerConfig,
    consumer_id: String,
    /// For the watches.
    zk: ZkClient,
    /// What a rebalance reads and writes.
    registry: ZkRegistry,
    brokers: Brokers,
    store: OffsetStore,
    owned: Arc<Mutex<Owned>>,
    generation: Arc<AtomicU64>,
    stats: Arc<Stats>,
    /// States of partitions released by a rebalance attempt or a session expiry, reused when
    /// this member claims them again (their delivered position is kept: no redelivery).
    kept: BTreeMap<TopicPartition, Arc<PartitionState>>,
    /// After giving up: a watch on the owner znode that blocked the claim.
    conflict_watch: Option<JoinHandle<()>>,
    prefetch: Arc<Prefetch>,
    sub: Subscription,
    senders: Senders,
    fetchers: Vec<JoinHandle<()>>,
    forwarders: Vec<JoinHandle<()>>,
    topic_watches: BTreeMap<String, JoinHandle<()>>,
    changes_tx: Option<mpsc::Sender<()>>,
}

impl Coordinator {
    /// Creates `/consumers/G/ids/<id>` (ephemeral).
    async fn register(&self) -> Result<()> {
        rebalance::register(&self.registry, &self.consumer_id, &self.sub.registration(now_ms())).await
    }

    fn arm_watches(&mut self, tx: &mpsc::Sender<()>) {
        for f in self.forwarders.drain(..) {
            f.abort();
        }
        for (_, f) in std::mem::take(&mut self.topic_watches) {
            f.abort();
        }
        let ids = self.zk.watch_children(&paths::consumer_ids(&self.config.group_id));
        self.forwarders.push(forward(ids, tx.clone()));
        if let Subscription::Filter(..) = self.sub {
            let topics = self.zk.watch_children(paths::BROKER_TOPICS);
            self.forwarders.push(forward(topics, tx.clone()));
        }
    }

    /// Watches `/brokers/topics/T` of every topic in the plan (its partition set).
    fn arm_topic_watches(&mut self, topics: &[String], tx: &mpsc::Sender<()>) {
        self.topic_watches.retain(|t, h| {
            let keep = topics.contains(t) && !h.is_finished();
            if !keep {
                h.abort();
            }
            keep
        });
        for t in topics {
            if !self.topic_watches.contains_key(t) {
                let w = self.zk.watch_data(&paths::topic(t));
                self.topic_watches.insert(t.clone(), forward_skip_first(w, tx.clone()));
            }
        }
    }

    async fn run(mut self, mut commands: mpsc::Receiver<Command>, first: oneshot::Sender<()>) {
        let mut events = self.zk.session_events();
        let (tx, mut changes) = mpsc::channel::<()>(1);
        self.changes_tx = Some(tx.clone());
        self.arm_watches(&tx);
        let mut first = Some(first);
        let mut expired = false;
        let mut auto_commit = tokio::time::interval(self.config.auto_commit_interval);
        auto_commit.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        auto_commit.tick().await;
        loop {
            tokio::select! {
                Some(()) = changes.recv() => {
                    if expired { continue; }
                    // later changes settle for a moment, so that members joining together cost
                    // one rebalance; the first runs at once, as Java's registration does
                    if first.is_none() {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    while changes.try_recv().is_ok() {}
                    let topics = self.synced_rebalance().await;
                    self.arm_topic_watches(&topics, &tx);
                    if let Some(f) = first.take() { let _ = f.send(()); }
                }
                ev = events.recv() => match ev {
                    Ok(SessionEvent::Expired) => {
                        tracing::warn!(consumer_id = %self.consumer_id, "zookeeper session expired: stop fetching, re-register, rebalance");
                        expired = true;
                        self.stats.session_expirations.fetch_add(1, Ordering::AcqRel);
                        self.stop_fetchers().await;
                    }
                    Ok(SessionEvent::Connected) if expired => {
                        expired = false;
                        if self.config.auto_commit_enable {
                            if let Err(e) = self.commit().await { tracing::warn!(error = %e, "commit after session expiry failed"); }
                        }
                        // the ephemeral owner znodes died with the session: ownership is re-read
                        // (claimed again) by the rebalance the re-armed ids watch triggers
                        let gone = std::mem::take(&mut self.owned.lock().unwrap_or_else(|p| p.into_inner()).parts);
                        self.kept.extend(gone.into_iter().map(|(k, (_, st))| (k, st)));
                        if let Err(e) = self.register().await {
                            tracing::error!(error = %e, "re-registration after session expiry failed");
                        }
                        self.arm_watches(&tx);
                        for (_, h) in std::mem::take(&mut self.topic_watches) { h.abort(); }
                    }
                    Ok(SessionEvent::Closed) => break,
                    _ => {}
                },
                cmd = commands.recv() => match cmd {
                    Some(Command::Commit(reply)) => { let _ = reply.send(self.commit().await); }
                    Some(Command::Shutdown(reply)) => { let _ = reply.send(self.shutdown().await); break; }
                    None => { let _ = self.shutdown().await; break; }
                },
                _ = auto_commit.tick(), if self.config.auto_commit_enable => {
                    if let Err(e) = self.commit().await { tracing::warn!(error = %e, "auto commit failed"); }
                }
            }
        }
        for f in self.forwarders.drain(..) {
            f.abort();
        }
        for (_, f) in std::mem::take(&mut self.topic_watches) {
            f.abort();
        }
        if let Some(w) = self.conflict_watch.take() {
            w.abort();
        }
    }

    async fn shutdown(&mut self) -> Result<()> {
        self.stop_fetchers().await;
        let r = if self.config.auto_commit_enable { self.commit().await } else { Ok(()) };
        self.release().await;
        let _ = self.registry.deregister(&self.consumer_id).await;
        self.senders.clear(); // ends the streams
        r
    }

    async fn commit(&self) -> Result<()> {
        let parts: Vec<(TopicPartition, Arc<PartitionState>)> = {
            let owned = self.owned.lock().unwrap_or_else(|p| p.into_inner());
            owned.parts.iter().map(|(tp, (_, s))| (tp.clone(), Arc::clone(s))).collect()
        };
        let offsets: BTreeMap<TopicPartition, i64> =
            parts.iter().filter_map(|(tp, s)| Some((tp.clone(), s.to_commit()?))).collect();
        self.store.commit(&offsets).await?;
        for (tp, s) in &parts {
            if let Some(&o) = offsets.get(tp) {
                s.committed.store(o, Ordering::Release);
            }
        }
        Ok(())
    }

    async fn stop_fetchers(&mut self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        for f in self.fetchers.drain(..) {
            f.abort();
            let _ = f.await;
        }
    }

    /// Releases every owner node; the partitions' states are kept for a later claim. Returns
    /// what was owned.
    async fn release(&mut self) -> BTreeSet<TopicPartition> {
        let parts = {
            let mut owned = self.owned.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::take(&mut owned.parts)
        };
        let released: Vec<TopicPartition> = parts.keys().cloned().collect();
        rebalance::release(&self.registry, &released).await;
        self.kept.extend(parts.into_iter().map(|(k, (_, st))| (k, st)));
        released.into_iter().collect()
    }

    /// Rebalances with `rebalance.max.retries` attempts; returns the topics of the group (to
    /// watch their partitions). Each attempt, with its backoff when it fails, runs in a span
    /// `rebalance{group, consumer_id, attempt}`.
    ///
    /// After a failed attempt it backs off `rebalance.backoff.ms` (jittered), as Java 0.8.2
    /// does, but an attempt that failed on a partition another member still owns retries as
    /// soon as that owner znode is deleted: the other member releasing it in its own rebalance
    /// is what the backoff waits for, and it usually comes within milliseconds (a member
    /// joining a group took the whole backoff, 2 s by default, to start). Such a retry does not
    /// count against `rebalance.max.retries` (each needs a release; at most
    /// [`QUICK_RETRIES`] of them).
    async fn synced_rebalance(&mut self) -> Vec<String> {
        let attempts = self.config.rebalance_max_retries.max(1);
        let mut reason = String::new();
        let mut topics = Vec::new();
        let mut conflict = None;
        let (mut attempt, mut quick) = (0, 0);
        while attempt < attempts {
            let span = tracing::info_span!(
                "rebalance",
                group = %self.config.group_id,
                consumer_id = %self.consumer_id,
                attempt
            );
            let failed = async {
                let failed = match self.rebalance().await {
                    Ok(Attempt::Claimed { topics, .. }) => return Ok(topics),
                    Ok(Attempt::Conflict { topics, conflict: c }) => {
                        let path = paths::owner(&self.config.group_id, &c.topic, c.partition);
                        let reason = format!("partition ownership conflict: {path} is held by {}", c.holder);
                        (reason, Some((topics, path)))
                    }
                    Err(e) => (rebalance::error_chain(&e), None),
                };
                tracing::warn!(reason = %failed.0, "rebalance attempt failed: backing off");
                self.stop_fetchers().await;
                self.release().await;
                let base = self.config.rebalance_backoff.as_millis() as f64;
                let jitter: f64 = rand::rng().random_range(0.5..1.5);
                let backoff = tokio::time::sleep(Duration::from_millis((base * jitter) as u64));
                tokio::pin!(backoff);
                let released = match (&failed.1, quick < QUICK_RETRIES) {
                    (Some((_, path)), true) => tokio::select! {
                        () = &mut backoff => false,
                        gone = gone(self.zk.watch_data(path)) => gone,
                    },
                    _ => false,
                };
                if released {
                    tracing::debug!("the owner znode was deleted: retrying now");
                } else {
                    // also when the watch ended early (the session closed)
                    backoff.await;
                }
                Err((failed, released))
            }
            .instrument(span)
            .await;
            match failed {
                Ok(t) => {
                    self.stats.rebalances.fetch_add(1, Ordering::AcqRel);
                    if let Some(w) = self.conflict_watch.take() {
                        w.abort();
                    }
                    return t;
                }
                Err(((r, c), released)) => {
                    reason = r;
                    if let Some((t, path)) = c {
                        topics = t;
                        conflict = Some(path);
                    }
                    if released {
                        quick += 1;
                    } else {
                        attempt += 1;
                    }
                }
            }
        }
        self.stats.failed_rebalances.fetch_add(1, Ordering::AcqRel);
        let e = Error::RebalanceFailed { group: self.config.group_id.clone(), attempts, reason: reason.clone() };
        tracing::error!(error = %e, "giving up; the watches stay armed and the next change retries");
        for s in self.senders.values().flatten() {
            let _ = s.tx.try_send(Chunk::error(Error::RebalanceFailed {
                group: self.config.group_id.clone(),
                attempts,
                reason: reason.clone(),
            }));
        }
        // beyond Kafka's watches (ids, topics, partitions): the owner znode that blocked us,
        // so its deletion (its holder gone) retries at once
        if let (Some(path), Some(tx)) = (conflict, self.changes_tx.clone()) {
            if let Some(w) = self.conflict_watch.take() {
                w.abort();
            }
            self.conflict_watch = Some(forward_when_gone(self.zk.watch_data(&path), tx));
        }
        topics
    }

    /// One attempt: release, read the group, plan, claim (all or nothing), then start
    /// fetching what was claimed from the stored offsets (or the positions kept).
    async fn rebalance(&mut self) -> Result<Attempt> {
        self.stop_fetchers().await;
        if self.config.auto_commit_enable {
            if let Err(e) = self.commit().await {
                tracing::warn!(error = %e, "commit before rebalance failed");
            }
        }
        let before = self.release().await;
        let attempt = rebalance::attempt(
            &self.registry,
            &self.consumer_id,
            self.config.partition_assignment_strategy,
            self.config.exclude_internal_topics,
        )
        .await?;
        let Attempt::Claimed { mine, .. } = &attempt else { return Ok(attempt) };
        let keys: Vec<TopicPartition> = mine.iter().map(|(k, _)| k.clone()).collect();
        let stored = self.store.fetch(&keys).await?;
        let kept: BTreeSet<TopicPartition> = self.kept.keys().cloned().collect();
        let plan = rebalance::reconcile(mine, &before, &kept, &stored, &self.sub);
        let generation = self.generation.load(Ordering::Acquire);
        let mut targets: Vec<FetchTarget> = Vec::new();
        let mut resumed = 0;
        {
            let mut owned = self.owned.lock().unwrap_or_else(|p| p.into_inner());
            for s in plan.starts {
                let (st, offset) = match self.kept.remove(&s.tp).filter(|_| s.resume) {
                    Some(st) => {
                        resumed += 1;
                        let position = st.resume(s.stored);
                        (st, position)
                    }
                    None => (Arc::new(PartitionState::new(&s.tp.topic, s.tp.partition, s.stored)), s.stored),
                };
                owned.parts.insert(s.tp, (s.thread, Arc::clone(&st)));
                let Some(queue) = self.senders.get(&s.slot.key).and_then(|v| v.get(s.slot.index)) else { continue };
                targets.push(FetchTarget::new(st, offset, queue.clone()));
            }
        }
        tracing::info!(owned = mine.len(), resumed, handed_off = plan.handed_off.len(), "rebalance done");
        if !targets.is_empty() {
            self.fetchers.push(tokio::spawn(run_fetchers(
                self.config.clone(),
                self.brokers.clone(),
                Arc::clone(&self.prefetch),
                generation,
                targets,
            )));
        }
        Ok(attempt)
    }
}

fn forward<T: Send + 'static>(mut w: gregor_zk::Watch<T>, tx: mpsc::Sender<()>) -> JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(Ok(_)) = w.next().await {
            let _ = tx.try_send(());
        }
    })
}

/// How many rebalance attempts a member may retry at once, because the owner znode it failed
/// on was deleted, before its attempts count against `rebalance.max.retries` again.
const QUICK_RETRIES: u32 = 32;

/// True once the watched znode is gone; false if the watch ends first (the session closed).
async fn gone(mut w: gregor_zk::Watch<Option<Vec<u8>>>) -> bool {
    while let Some(Ok(v)) = w.next().await {
        if v.is_none() {
            return true;
        }
    }
    false
}

/// Signals once when the watched znode is gone (at once if it already is).
fn forward_when_gone(w: gregor_zk::Watch<Option<Vec<u8>>>, tx: mpsc::Sender<()>) -> JoinHandle<()> {
    tokio::spawn(async move {
        if gone(w).await {
            let _ = tx.try_send(());
        }
    })
}

fn forward_skip_first<T: Send + PartialEq + 'static>(
    mut w: gregor_zk::Watch<T>,
    tx: mpsc::Sender<()>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut last = match w.next().await {
            Some(Ok(v)) => v,
            _ => return,
        };
        while let Some(Ok(v)) = w.next().await {
            if v != last {
                let _ = tx.try_send(());
                last = v;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_is_never_negative_and_zero_while_unknown() {
        for (consumed, hw, want) in [(5, 9, 4), (9, 9, 0), (12, 9, 0), (-1, 9, 0), (5, -1, 0), (-1, -1, 0)] {
            assert_eq!(lag(consumed, hw), want, "consumed {consumed}, high watermark {hw}");
        }
    }

    #[test]
    fn consumer_ids_are_javas() {
        assert_eq!(make_consumer_id("g", Some("a")), "g_a");
        let generated = make_consumer_id("g", None);
        // g_<host>-<ms>-<8 hex>
        let (rest, hex) = generated.rsplit_once('-').unwrap();
        let (host, ms) = rest.strip_prefix("g_").unwrap().rsplit_once('-').unwrap();
        assert!(!host.is_empty());
        assert!(ms.parse::<i64>().unwrap() > 1_400_000_000_000, "{ms}");
        assert!(hex.len() == 8 && hex.chars().all(|c| c.is_ascii_hexdigit()), "{hex}");
    }
}

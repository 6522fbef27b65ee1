//! The cluster as the client knows it: a pure [`MetadataSnapshot`] built from Metadata
//! responses, and the [`MetadataCache`] that fetches them.
//!
//! Kafka 0.8.2 quirks handled here (see DESIGN §2):
//!
//! * a cluster with no topic answers with **zero brokers** (KAFKA-1867): the known brokers are
//!   kept, it is not an error;
//! * the first Metadata for an unknown topic with auto-creation on answers topic error
//!   **5 LeaderNotAvailable** and no partitions: [`MetadataSnapshot::topic_error`] says so, and
//!   the caller refreshes again after `retry.backoff.ms`;
//! * partition error **9 ReplicaNotAvailable comes with a valid leader**: the partition is
//!   available (a replica is down, the leader is fine);
//! * leader `-1` means no leader: the partition is listed by
//!   [`MetadataSnapshot::partitions`] but not by [`MetadataSnapshot::available_partitions`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use gregor_protocol::messages::{MetadataRequest, MetadataResponse};
use gregor_protocol::ErrorCode;
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::config::{ConfigError, MetadataConfig};
use crate::connection::BrokerConnection;
use crate::error::{Error, Result};
use crate::pool::Pool;
use crate::BrokerId;

/// A broker as Metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Broker {
    /// `broker.id`.
    pub id: BrokerId,
    /// The host clients connect to (`advertised.host.name`).
    pub host: String,
    /// The port.
    pub port: i32,
}

impl Broker {
    /// `host:port` (`[host]:port` for an IPv6 literal), as a [`Pool`] keys it.
    pub fn addr(&self) -> String {
        if self.host.contains(':') && !self.host.starts_with('[') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// One partition's leader and replicas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    /// The partition id.
    pub partition: i32,
    /// The leader, `None` when the broker said -1.
    pub leader: Option<BrokerId>,
    /// Live brokers holding a replica (a 0.8.2 broker leaves dead ones out).
    pub replicas: Vec<BrokerId>,
    /// Live in-sync replicas.
    pub isr: Vec<BrokerId>,
    /// The partition's error code, if any (9 ReplicaNotAvailable still has a usable leader).
    pub error: Option<ErrorCode>,
}

impl PartitionInfo {
    /// True when the partition has a leader to send to (whatever its error code: 9 comes with
    /// a valid leader).
    pub fn is_available(&self) -> bool {
        self.leader.is_some()
    }
}

/// One topic's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    /// The topic's error code, if any (5 while an auto-created topic gets its leaders, 3 for an
    /// unknown topic).
    pub error: Option<ErrorCode>,
    /// The partitions by id, with or without a leader.
    pub partitions: BTreeMap<i32, PartitionInfo>,
    /// When this topic was last refreshed.
    pub refreshed_at: Instant,
    /// Set by [`MetadataSnapshot::invalidate`]: a leader error was seen since the refresh.
    pub stale: bool,
}

/// What the client knows of the cluster: brokers and topics, as of a moment. Pure: built and
/// updated from [`MetadataResponse`]s with the time passed in, no IO.
///
/// ```
/// use gregor_net::MetadataSnapshot;
/// use gregor_protocol::messages::*;
/// use tokio::time::Instant;
///
/// let response = MetadataResponse {
///     brokers: vec![BrokerMetadata { node_id: 1, host: "b1".into(), port: 9092, ..Default::default() }],
///     topics: vec![TopicMetadata {
///         error_code: 0,
///         topic: Some("t".into()),
///         partitions: vec![PartitionMetadata {
///             error_code: 9, // ReplicaNotAvailable, with a valid leader
///             partition: 0,
///             leader: 1,
///             replicas: vec![1],
///             isr: vec![1],
///             ..Default::default()
///         }],
///         ..Default::default()
///     }],
///     ..Default::default()
/// };
/// let snapshot = MetadataSnapshot::from_response(&response, Instant::now());
/// assert_eq!(snapshot.leader("t", 0), Some(1));
/// assert_eq!(snapshot.leader_broker("t", 0).unwrap().addr(), "b1:9092");
/// assert_eq!(snapshot.available_partitions("t"), [0]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataSnapshot {
    brokers: BTreeMap<BrokerId, Broker>,
    topics: BTreeMap<String, TopicInfo>,
    refreshed_at: Option<Instant>,
}

impl MetadataSnapshot {
    /// Knows nothing yet.
    pub fn new() -> MetadataSnapshot {
        MetadataSnapshot::default()
    }

    /// The cluster as one response describes it (received at `now`).
    pub fn from_response(response: &MetadataResponse, now: Instant) -> MetadataSnapshot {
        let mut snapshot = MetadataSnapshot::new();
        snapshot.apply(response, false, now);
        snapshot
    }

    /// Merges a response received at `now`.
    ///
    /// * Brokers: a non-empty list replaces the known one (it lists the live brokers); an
    ///   empty list (KAFKA-1867) keeps the known brokers.
    /// * Topics: each topic in the response replaces what was known of it. When `all_topics`
    ///   (the request named no topic, so the response lists them all), topics missing from the
    ///   response are forgotten.
    ///
    /// Returns true when the response listed no broker (the known ones were kept).
    pub fn apply(&mut self, response: &MetadataResponse, all_topics: bool, now: Instant) -> bool {
        let zero_brokers = response.brokers.is_empty();
        if !zero_brokers {
            self.brokers = response
                .brokers
                .iter()
                .map(|b| (b.node_id, Broker { id: b.node_id, host: b.host.clone(), port: b.port }))
                .collect();
        }
        if all_topics {
            let listed: BTreeSet<&str> = response.topics.iter().map(|t| t.name()).collect();
            self.topics.retain(|name, _| listed.contains(name.as_str()));
        }
        for topic in &response.topics {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    (
                        p.partition,
                        PartitionInfo {
                            partition: p.partition,
                            leader: p.leader(),
                            replicas: p.replicas.clone(),
                            isr: p.isr.clone(),
                            error: p.error(),
                        },
                    )
                })
                .collect();
            self.topics.insert(
                topic.name().to_owned(),
                TopicInfo { error: topic.error(), partitions, refreshed_at: now, stale: false },
            );
        }
        self.refreshed_at = Some(now);
        zero_brokers
    }

    /// Every known broker, by id.
    pub fn brokers(&self) -> impl Iterator<Item = &Broker> {
        self.brokers.values()
    }

    /// One broker.
    pub fn broker(&self, id: BrokerId) -> Option<&Broker> {
        self.brokers.get(&id)
    }

    /// The names of the known topics, sorted.
    pub fn topics(&self) -> impl Iterator<Item = &str> {
        self.topics.keys().map(String::as_str)
    }

    /// One topic's metadata.
    pub fn topic(&self, topic: &str) -> Option<&TopicInfo> {
        self.topics.get(topic)
    }

    /// The topic's error code from the last response that named it (e.g. 5 LeaderNotAvailable
    /// for a topic being auto-created: refresh again after a backoff).
    pub fn topic_error(&self, topic: &str) -> Option<ErrorCode> {
        self.topics.get(topic).and_then(|t| t.error)
    }

    /// The topic's partition ids, sorted, with or without a leader (empty for an unknown topic).
    pub fn partitions(&self, topic: &str) -> Vec<i32> {
        self.topics.get(topic).map(|t| t.partitions.keys().copied().collect()).unwrap_or_default()
    }

    /// The topic's partitions that have a leader, sorted (error 9 with a leader counts).
    pub fn available_partitions(&self, topic: &str) -> Vec<i32> {
        self.topics
            .get(topic)
            .map(|t| t.partitions.values().filter(|p| p.is_available()).map(|p| p.partition).collect())
            .unwrap_or_default()
    }

    /// One partition's metadata.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<&PartitionInfo> {
        self.topics.get(topic)?.partitions.get(&partition)
    }

    /// The partition's leader, if it has one.
    pub fn leader(&self, topic: &str, partition: i32) -> Option<BrokerId> {
        self.partition(topic, partition)?.leader
    }

    /// The partition's leader with its address, when both are known.
    pub fn leader_broker(&self, topic: &str, partition: i32) -> Option<&Broker> {
        self.brokers.get(&self.leader(topic, partition)?)
    }

    /// When the last response was applied.
    pub fn refreshed_at(&self) -> Option<Instant> {
        self.refreshed_at
    }

    /// Marks a topic stale after a leader error (NotLeaderForPartition, a dead leader's
    /// connection): [`MetadataSnapshot::needs_refresh`] and
    /// [`MetadataSnapshot::topic_needs_refresh`] say so until the next refresh names it. What is
    /// known of it is kept meanwhile.
    pub fn invalidate(&mut self, topic: &str) {
        if let Some(t) = self.topics.get_mut(topic) {
            t.stale = true;
        }
    }

    /// Topics marked by [`MetadataSnapshot::invalidate`] since they were last refreshed.
    pub fn stale_topics(&self) -> Vec<String> {
        self.topics.iter().filter(|(_, t)| t.stale).map(|(n, _)| n.clone()).collect()
    }

    /// True when nothing was ever fetched, the last refresh is `interval` old
    /// (`topic.metadata.refresh.interval.ms`), or a topic was invalidated.
    pub fn needs_refresh(&self, now: Instant, interval: Duration) -> bool {
        match self.refreshed_at {
            None => true,
            Some(at) => now.saturating_duration_since(at) >= interval || self.topics.values().any(|t| t.stale),
        }
    }

    /// True when `topic` is unknown, invalidated, carries an error, has a partition without a
    /// leader, or was refreshed `interval` ago or earlier.
    pub fn topic_needs_refresh(&self, topic: &str, now: Instant, interval: Duration) -> bool {
        match self.topics.get(topic) {
            None => true,
            Some(t) => {
                t.stale
                    || t.error.is_some()
                    || t.partitions.is_empty()
                    || t.partitions.values().any(|p| !p.is_available())
                    || now.saturating_duration_since(t.refreshed_at) >= interval
            }
        }
    }
}

/// Parses a `metadata.broker.list` (`host:port,host:port`, spaces allowed) into addresses.
///
/// # Errors
///
/// [`ConfigError::Invalid`] for an empty list or an entry without a numeric port.
pub fn parse_broker_list(list: &str) -> Result<Vec<String>, ConfigError> {
    let invalid =
        |reason: String| ConfigError::Invalid { property: "metadata.broker.list", value: list.to_owned(), reason };
    let mut addrs = Vec::new();
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (host, port) = entry.rsplit_once(':').ok_or_else(|| invalid(format!("{entry} is not host:port")))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(invalid(format!("{entry} has no host")));
        }
        if !matches!(port.parse::<u16>(), Ok(p) if p != 0) {
            return Err(invalid(format!("{entry} has no valid port (1 to 65535)")));
        }
        if !addrs.iter().any(|a| a == entry) {
            addrs.push(entry.to_owned());
        }
    }
    if addrs.is_empty() {
        return Err(invalid("no broker given".to_owned()));
    }
    Ok(addrs)
}

/// The metadata of the cluster, seeded from `metadata.broker.list` and refreshed on demand.
///
/// [`MetadataCache::refresh`] asks the broker that answered last, the bootstrap brokers, then
/// every other known broker, in turn, until one answers; the answer is merged into a [`MetadataSnapshot`] that readers get
/// without waiting ([`MetadataCache::snapshot`]). The broker addresses go to the [`Pool`], so
/// [`Pool::get`] can connect by broker id.
///
/// Cheap to clone (an `Arc`).
///
/// ```no_run
/// # async fn demo() -> Result<(), gregor_net::Error> {
/// use gregor_net::{ConnectionConfig, MetadataCache, Pool};
///
/// let cache = MetadataCache::new("k1:9092,k2:9092", Pool::new(ConnectionConfig::default()))?;
/// cache.refresh(&["events".to_owned()]).await?;
/// if let Some(leader) = cache.leader("events", 0) {
///     let conn = cache.pool().get(leader).await?;
///     # drop(conn);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct MetadataCache {
    inner: Arc<CacheInner>,
}

#[derive(Debug)]
struct CacheInner {
    bootstrap: Vec<String>,
    pool: Pool,
    config: MetadataConfig,
    snapshot: RwLock<Arc<MetadataSnapshot>>,
    /// The address that answered last, asked first next time (so a dead bootstrap broker
    /// costs one failed connect, not one per refresh).
    last_good: Mutex<Option<String>>,
}

impl MetadataCache {
    /// A cache seeded from `broker_list` (`metadata.broker.list`), connecting through `pool`,
    /// with the default [`MetadataConfig`]. Nothing is fetched until [`MetadataCache::refresh`].
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the list is empty or malformed.
    pub fn new(broker_list: &str, pool: Pool) -> Result<MetadataCache> {
        MetadataCache::with_config(broker_list, pool, MetadataConfig::default())
    }

    /// [`MetadataCache::new`] with settings.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the list is empty or malformed.
    pub fn with_config(broker_list: &str, pool: Pool, config: MetadataConfig) -> Result<MetadataCache> {
        let bootstrap = parse_broker_list(broker_list)?;
        Ok(MetadataCache {
            inner: Arc::new(CacheInner {
                bootstrap,
                pool,
                config,
                snapshot: RwLock::new(Arc::new(MetadataSnapshot::new())),
                last_good: Mutex::new(None),
            }),
        })
    }

    /// The bootstrap addresses.
    pub fn bootstrap(&self) -> &[String] {
        &self.inner.bootstrap
    }

    /// The pool the cache connects through (and feeds with broker addresses).
    pub fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    /// The cache's settings.
    pub fn config(&self) -> &MetadataConfig {
        &self.inner.config
    }

    /// What is known now (cheap: an `Arc`; later refreshes do not change it).
    pub fn snapshot(&self) -> Arc<MetadataSnapshot> {
        self.inner.snapshot.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn update<T>(&self, f: impl FnOnce(&mut MetadataSnapshot) -> T) -> T {
        let mut guard = self.inner.snapshot.write().unwrap_or_else(|p| p.into_inner());
        f(Arc::make_mut(&mut guard))
    }

    /// Addresses to ask, in order: the one that answered last, the bootstrap list, then known
    /// brokers not in it.
    fn candidates(&self) -> Vec<String> {
        let last_good = self.inner.last_good.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let known = self.snapshot().brokers().map(Broker::addr).collect::<Vec<_>>();
        let mut addrs: Vec<String> = Vec::new();
        for addr in last_good.into_iter().chain(self.inner.bootstrap.iter().cloned()).chain(known) {
            if !addrs.contains(&addr) {
                addrs.push(addr);
            }
        }
        addrs
    }

    /// Fetches Metadata v0 for `topics` (all topics when empty) from the first broker that
    /// answers, trying the one that answered last, the bootstrap list, then the known brokers; when none answers, waits
    /// `retry.backoff.ms` (doubling, with jitter) and goes round again, up to
    /// [`MetadataConfig::refresh_rounds`] times.
    ///
    /// A response counts even when it carries topic errors (see
    /// [`MetadataCache::topic_error`]: 5 LeaderNotAvailable for a topic being auto-created means
    /// "refresh again after a backoff") or no broker at all (KAFKA-1867: the known brokers are
    /// kept).
    ///
    /// Cancel safety: dropping the future leaves the cache as it was or with the response
    /// applied, never half-applied.
    ///
    /// # Errors
    ///
    /// [`Error::NoBrokerAvailable`] (with every address tried and the last error) when no
    /// broker answered in any round; the first broker's error itself, after one round, when
    /// every broker of that round refused the connection in a way no retry fixes
    /// ([`Error::is_security_refusal`]: a TLS handshake refused, SASL settings), so that a
    /// wrong CA fails at once rather than after every round.
    pub async fn refresh(&self, topics: &[String]) -> Result<()> {
        let request = if topics.is_empty() {
            MetadataRequest::all_topics()
        } else {
            MetadataRequest::for_topics(topics.iter().cloned())
        };
        let rounds = self.inner.config.refresh_rounds().max(1);
        let backoff = Backoff::new(self.inner.config.retry_backoff(), self.inner.config.retry_backoff_max());
        let mut tried: Vec<String> = Vec::new();
        let mut last = None;
        for round in 0..rounds {
            if round > 0 {
                let delay = backoff.next_delay(round - 1);
                tracing::warn!(round, ?delay, "no broker answered metadata; backing off");
                tokio::time::sleep(delay).await;
            }
            let mut refused: Option<Error> = None;
            let mut other_failures = false;
            for addr in self.candidates() {
                if !tried.contains(&addr) {
                    tried.push(addr.clone());
                }
                match self.fetch_from(&addr, &request).await {
                    Ok(response) => {
                        self.apply(&addr, &response, topics.is_empty());
                        *self.inner.last_good.lock().unwrap_or_else(|p| p.into_inner()) = Some(addr);
                        return Ok(());
                    }
                    Err(e) if e.is_security_refusal() => {
                        tracing::warn!(%addr, error = %e, "broker connection refused; trying the next broker");
                        refused.get_or_insert(e);
                    }
                    Err(e) => {
                        tracing::debug!(%addr, error = %e, "metadata request failed; trying the next broker");
                        other_failures = true;
                        last = Some(Box::new(e));
                    }
                }
            }
            match refused {
                // every broker refused: the same settings will be refused again
                Some(e) if !other_failures => return Err(e),
                Some(e) => last = Some(Box::new(e)),
                None => {}
            }
        }
        Err(Error::NoBrokerAvailable { tried, last })
    }

    async fn fetch_from(&self, addr: &str, request: &MetadataRequest) -> Result<MetadataResponse> {
        let conn = self.inner.pool.get_addr(addr).await?;
        let version = conn.client_version::<MetadataRequest>()?;
        conn.request(version, request).await
    }

    fn apply(&self, addr: &str, response: &MetadataResponse, all_topics: bool) {
        let now = Instant::now();
        let zero_brokers = self.update(|s| s.apply(response, all_topics, now));
        if zero_brokers {
            tracing::warn!(
                %addr,
                "metadata response lists no brokers (KAFKA-1867: a 0.8.2 cluster without topics); keeping the known ones"
            );
        } else {
            self.inner.pool.set_brokers(
                response
                    .brokers
                    .iter()
                    .map(|b| (b.node_id, Broker { id: b.node_id, host: b.host.clone(), port: b.port }.addr())),
            );
        }
        for topic in &response.topics {
            if let Some(code) = topic.error() {
                tracing::debug!(topic = %topic.name(), %code, "metadata: topic error");
            }
        }
        tracing::debug!(%addr, brokers = response.brokers.len(), topics = response.topics.len(), "metadata refreshed");
    }

    /// The partition's leader, if known.
    pub fn leader(&self, topic: &str, partition: i32) -> Option<BrokerId> {
        self.snapshot().leader(topic, partition)
    }

    /// The partition's leader's address, if known.
    pub fn leader_addr(&self, topic: &str, partition: i32) -> Option<String> {
        self.snapshot().leader_broker(topic, partition).map(Broker::addr)
    }

    /// The topic's partition ids, with or without a leader.
    pub fn partitions(&self, topic: &str) -> Vec<i32> {
        self.snapshot().partitions(topic)
    }

    /// The topic's partitions that have a leader.
    pub fn available_partitions(&self, topic: &str) -> Vec<i32> {
        self.snapshot().available_partitions(topic)
    }

    /// Every known broker.
    pub fn brokers(&self) -> Vec<Broker> {
        self.snapshot().brokers().cloned().collect()
    }

    /// The topic's error from the last response that named it.
    pub fn topic_error(&self, topic: &str) -> Option<ErrorCode> {
        self.snapshot().topic_error(topic)
    }

    /// When the last response was applied.
    pub fn refreshed_at(&self) -> Option<Instant> {
        self.snapshot().refreshed_at()
    }

    /// True when nothing was fetched yet, the last refresh is `interval` old, or a topic was
    /// invalidated (see [`MetadataSnapshot::needs_refresh`]). Pass
    /// [`MetadataConfig::refresh_interval`] for `topic.metadata.refresh.interval.ms`.
    pub fn needs_refresh(&self, interval: Duration) -> bool {
        self.snapshot().needs_refresh(Instant::now(), interval)
    }

    /// True when `topic` should be refreshed before use (see
    /// [`MetadataSnapshot::topic_needs_refresh`]), with the configured refresh interval.
    pub fn topic_needs_refresh(&self, topic: &str) -> bool {
        self.snapshot().topic_needs_refresh(topic, Instant::now(), self.inner.config.refresh_interval())
    }

    /// Marks `topic` stale after a leader error; the next refresh that names it clears the mark.
    pub fn invalidate(&self, topic: &str) {
        tracing::debug!(%topic, "metadata invalidated");
        self.update(|s| s.invalidate(topic));
    }

    /// The connection to the partition's leader, through the pool.
    ///
    /// # Errors
    ///
    /// [`Error::NoLeader`] when no leader is known (refresh, after a backoff), and the errors of
    /// [`Pool::get`].
    pub async fn leader_connection(&self, topic: &str, partition: i32) -> Result<BrokerConnection> {
        let leader =
            self.leader(topic, partition).ok_or_else(|| Error::NoLeader { topic: topic.to_owned(), partition })?;
        self.inner.pool.get(leader).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gregor_protocol::messages::{BrokerMetadata, PartitionMetadata, TopicMetadata};

    fn broker(id: i32) -> BrokerMetadata {
        BrokerMetadata { node_id: id, host: format!("b{id}"), port: 9092 + id, ..Default::default() }
    }

    fn part(partition: i32, error_code: i16, leader: i32, replicas: &[i32]) -> PartitionMetadata {
        PartitionMetadata {
            error_code,
            partition,
            leader,
            replicas: replicas.to_vec(),
            isr: replicas.to_vec(),
            ..Default::default()
        }
    }

    fn topic(name: &str, error_code: i16, partitions: Vec<PartitionMetadata>) -> TopicMetadata {
        TopicMetadata::new(name, error_code, partitions)
    }

    #[test]
    fn replica_not_available_with_a_leader_is_usable() {
        let r = MetadataResponse {
            brokers: vec![broker(0), broker(2)],
            // broker 1 is down: error 9, left out of replicas and isr, leader still valid
            topics: vec![topic("t", 0, vec![part(1, 9, 2, &[2]), part(0, 0, 0, &[0, 2])])],
            ..Default::default()
        };
        let s = MetadataSnapshot::from_response(&r, Instant::now());
        assert_eq!(s.partitions("t"), [0, 1]);
        assert_eq!(s.available_partitions("t"), [0, 1]);
        assert_eq!(s.leader("t", 1), Some(2));
        assert_eq!(s.partition("t", 1).unwrap().error, Some(ErrorCode::ReplicaNotAvailable));
        assert_eq!(s.leader_broker("t", 1).unwrap().addr(), "b2:9094");
        assert_eq!(s.topic_error("t"), None);
        assert_eq!(s.brokers().map(|b| b.id).collect::<Vec<_>>(), [0, 2]);
    }

    #[test]
    fn leader_minus_one_is_listed_but_not_available() {
        let r = MetadataResponse {
            brokers: vec![broker(0)],
            topics: vec![topic("t", 0, vec![part(0, 5, -1, &[]), part(1, 0, 0, &[0])])],
            ..Default::default()
        };
        let s = MetadataSnapshot::from_response(&r, Instant::now());
        assert_eq!(s.partitions("t"), [0, 1]);
        assert_eq!(s.available_partitions("t"), [1]);
        assert_eq!(s.leader("t", 0), None);
        assert_eq!(s.leader_broker("t", 0), None);
        assert!(s.topic_needs_refresh("t", Instant::now(), Duration::from_secs(600)));
    }

    #[test]
    fn zero_brokers_keeps_the_known_ones() {
        let now = Instant::now();
        let mut s = MetadataSnapshot::from_response(
            &MetadataResponse { brokers: vec![broker(0), broker(1)], topics: vec![], ..Default::default() },
            now,
        );
        // KAFKA-1867: a 0.8.2 cluster without topics lists no broker
        let kept = s.apply(
            &MetadataResponse { brokers: vec![], topics: vec![topic("new", 5, vec![])], ..Default::default() },
            false,
            now,
        );
        assert!(kept);
        assert_eq!(s.brokers().map(|b| b.id).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(s.topic_error("new"), Some(ErrorCode::LeaderNotAvailable));
        // a fresh snapshot from such a response knows no broker, and that is not an error
        let empty = MetadataSnapshot::from_response(&MetadataResponse::default(), now);
        assert_eq!(empty.brokers().count(), 0);
        assert_eq!(empty.refreshed_at(), Some(now));
    }

    #[test]
    fn leader_not_available_for_an_auto_created_topic_then_leaders() {
        let t0 = Instant::now();
        let mut s = MetadataSnapshot::from_response(
            &MetadataResponse {
                brokers: vec![broker(0)],
                topics: vec![topic("auto", 5, vec![])],
                ..Default::default()
            },
            t0,
        );
        assert_eq!(s.topic_error("auto"), Some(ErrorCode::LeaderNotAvailable));
        assert!(s.partitions("auto").is_empty());
        assert!(s.topic_needs_refresh("auto", t0, Duration::from_secs(600)));
        s.apply(
            &MetadataResponse {
                brokers: vec![broker(0)],
                topics: vec![topic("auto", 0, vec![part(0, 0, 0, &[0])])],
                ..Default::default()
            },
            false,
            t0,
        );
        assert_eq!(s.topic_error("auto"), None);
        assert_eq!(s.available_partitions("auto"), [0]);
        assert!(!s.topic_needs_refresh("auto", t0, Duration::from_secs(600)));
    }

    #[test]
    fn staleness_invalidation_and_all_topic_refreshes() {
        let t0 = Instant::now();
        let interval = Duration::from_secs(600);
        let mut s = MetadataSnapshot::new();
        assert!(s.needs_refresh(t0, interval), "never fetched");
        let r = MetadataResponse {
            brokers: vec![broker(0)],
            topics: vec![topic("a", 0, vec![part(0, 0, 0, &[0])]), topic("b", 0, vec![part(0, 0, 0, &[0])])],
            ..Default::default()
        };
        s.apply(&r, true, t0);
        assert!(!s.needs_refresh(t0 + Duration::from_secs(599), interval));
        assert!(s.needs_refresh(t0 + interval, interval));
        s.invalidate("a");
        assert!(s.needs_refresh(t0, interval));
        assert_eq!(s.stale_topics(), ["a"]);
        assert!(s.topic_needs_refresh("a", t0, interval));
        assert!(!s.topic_needs_refresh("b", t0, interval));
        assert_eq!(s.leader("a", 0), Some(0), "an invalidated topic keeps what is known");
        // a refresh naming "a" clears the mark; an all-topics refresh forgets missing topics
        s.apply(
            &MetadataResponse {
                brokers: vec![],
                topics: vec![topic("a", 0, vec![part(0, 0, 0, &[0])])],
                ..Default::default()
            },
            true,
            t0,
        );
        assert!(s.stale_topics().is_empty());
        assert_eq!(s.topics().collect::<Vec<_>>(), ["a"]);
        s.invalidate("unknown");
        assert!(s.stale_topics().is_empty());
    }

    #[test]
    fn broker_lists_parse_like_kafkas() {
        assert_eq!(parse_broker_list("a:1, b:2,,a:1").unwrap(), ["a:1", "b:2"]);
        assert_eq!(parse_broker_list("[::1]:9092").unwrap(), ["[::1]:9092"]);
        assert!(parse_broker_list("").is_err());
        assert!(parse_broker_list("a").is_err());
        assert!(parse_broker_list("a:x").is_err());
        let e = parse_broker_list(":9092").unwrap_err();
        assert_eq!(e.to_string(), "invalid value \":9092\" for metadata.broker.list: :9092 has no host");
        assert_eq!(Broker { id: 1, host: "::1".into(), port: 9 }.addr(), "[::1]:9");
    }
}

//! [`SimpleConsumer`]: partition-addressed fetches and offset lookups, sent to the leaders.

use std::collections::HashSet;
use std::sync::Arc;

use gregor_net::{Backoff, BrokerId, MetadataCache, Pool};
use gregor_protocol::messages::{EARLIEST_TIME, LATEST_TIME};
use gregor_protocol::ErrorCode;

use crate::config::{ConfigError, SimpleConsumerConfig};
use crate::driver::{drive, ensure_metadata, Target};
use crate::error::{Error, Result};
use crate::fetch::{FetchBatch, FetchOp, FetchState, PartitionData};
use crate::offsets::{LeaderLookup, OffsetsOp, OffsetsState, TimeOp};

/// Retries of the offset lookups that fill in [`Error::OffsetOutOfRange`]'s range (the leader
/// just answered, so it is there; the lookup must not hold the fetch up for long).
const RANGE_LOOKUP_RETRIES: u32 = 1;

/// The leader that answered an Offsets request, and the offsets.
type Found = (BrokerId, Vec<i64>);

/// Kafka 0.8.2's simple consumer: reads partitions at offsets the caller chooses, from their
/// leaders, with no group, no offset storage and no rebalancing.
///
/// * [`SimpleConsumer::fetch`]: many partitions, of many topics, in one call: one Fetch
///   request per leader, all leaders at once; a result per partition.
/// * [`SimpleConsumer::offsets_before`] (`getOffsetsBefore`), [`SimpleConsumer::earliest_offset`],
///   [`SimpleConsumer::latest_offset`]: where to start.
/// * [`SimpleConsumer::leader`], [`SimpleConsumer::partitions`]: what the metadata says.
/// * [`SimpleConsumer::stream`]: a [`MessageStream`](crate::MessageStream) over one partition, long
///   polling.
///
/// Leader changes are handled inside each call: on NotLeaderForPartition,
/// UnknownTopicOrPartition, LeaderNotAvailable, no leader in the metadata, or an unreachable
/// leader, the partition is retried after `refresh.leader.backoff.ms` (doubling up to
/// `refresh.leader.backoff.max.ms`) and a metadata refresh, up to `refresh.leader.max.retries`
/// times; then the error is returned. Metadata is fetched lazily, on first use of a topic.
///
/// Cheap to clone (an `Arc`); clones share connections and metadata. Must be used inside a
/// tokio runtime.
///
/// ```no_run
/// # async fn demo() -> gregor_simple_consumer::Result<()> {
/// use gregor_simple_consumer::{SimpleConsumer, SimpleConsumerConfig};
///
/// let config = SimpleConsumerConfig::builder().metadata_broker_list("k1:9092,k2:9092").build()?;
/// let consumer = SimpleConsumer::new(config)?;
/// let start = consumer.earliest_offset("events", 0).await?;
/// let batch = consumer.fetch(&[("events", 0, start), ("events", 1, 0)]).await?;
/// for data in batch.data() {
///     for m in &data.messages {
///         println!("{}/{} @{}: {:?}", data.topic, data.partition, m.offset, m.value);
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SimpleConsumer {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: SimpleConsumerConfig,
    cache: MetadataCache,
}

impl SimpleConsumer {
    /// A consumer with its own connections and metadata cache, seeded from
    /// `metadata.broker.list`. Nothing is connected until the first call.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the connection settings are rejected.
    pub fn new(config: SimpleConsumerConfig) -> Result<SimpleConsumer> {
        let pool = Pool::new(config.connection_config()?);
        let cache =
            MetadataCache::with_config(config.metadata_broker_list(), pool, config.metadata_config()).map_err(|e| {
                match e {
                    gregor_net::Error::Config(c) => Error::Config(c),
                    other => Error::Metadata { topics: Vec::new(), source: Box::new(other) },
                }
            })?;
        Ok(SimpleConsumer { inner: Arc::new(Inner { config, cache }) })
    }

    /// A consumer sharing `cache` (and its [`Pool`]) with other clients, e.g. a producer of the
    /// same application. The pool's settings apply: `client.id` and `socket.timeout.ms` of
    /// `config` are not used, and `metadata.broker.list` only by [`SimpleConsumer::config`].
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the pool's request timeout does not exceed `fetch.wait.max.ms`
    /// (long polls would time out).
    pub fn with_metadata(config: SimpleConsumerConfig, cache: MetadataCache) -> Result<SimpleConsumer> {
        let timeout = cache.pool().config().request_timeout();
        if timeout <= config.fetch_wait_max() {
            return Err(Error::Config(ConfigError::Invalid {
                property: "socket.timeout.ms",
                value: timeout.as_millis().to_string(),
                reason: format!(
                    "the shared pool's request timeout must exceed fetch.wait.max.ms ({} ms)",
                    config.fetch_wait_max().as_millis()
                ),
            }));
        }
        Ok(SimpleConsumer { inner: Arc::new(Inner { config, cache }) })
    }

    /// The consumer's settings.
    pub fn config(&self) -> &SimpleConsumerConfig {
        &self.inner.config
    }

    /// The metadata cache (and, through it, the connection pool) the consumer uses.
    pub fn metadata(&self) -> &MetadataCache {
        &self.inner.cache
    }

    /// Fetches each `(topic, partition, offset)` from its leader: one Fetch v0 request per
    /// leader (`fetch.message.max.bytes` per partition, `fetch.min.bytes`, `fetch.wait.max.ms`),
    /// all leaders at once. Returns one result per partition, in the order given.
    ///
    /// A leader gets more than one request (pipelined on its connection) only when its
    /// partitions' fetch sizes add up to more than the connection's
    /// [`max_frame_size`](gregor_net::ConnectionConfig::max_frame_size) (100 MiB by default:
    /// about 99 partitions of 1 MiB), since a larger response would be refused.
    ///
    /// A partition's messages start at its offset, also inside a compressed set (the broker
    /// returns the whole wrapper; the messages before the offset are dropped), and end before
    /// a partial message the broker cut at the fetch size. When nothing new is there, its data
    /// has no message and the call takes up to `fetch.wait.max.ms`.
    ///
    /// Per-partition errors (the call still succeeds):
    /// * [`Error::OffsetOutOfRange`] with the partition's earliest and latest offsets;
    /// * [`Error::MessageSizeTooLarge`] when the next message does not fit the fetch size
    ///   (never an empty result that would stall), unless
    ///   `fetch.message.auto.grow.max.bytes` allows fetching it again with a larger size;
    /// * after `refresh.leader.max.retries` retries: [`Error::Broker`] (the leader's code),
    ///   [`Error::Connection`], [`Error::NoLeader`];
    /// * at once: [`Error::UnknownTopic`], [`Error::UnknownPartition`], [`Error::TopicMetadata`],
    ///   [`Error::Protocol`] (corrupt messages), [`Error::Broker`] for a code retrying does not
    ///   fix, [`Error::MissingFromResponse`].
    ///
    /// Cancel safety: dropping the future abandons the requests in flight (their responses are
    /// read and dropped; the connections stay usable). Nothing is consumed: fetching is
    /// stateless.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicatePartition`] when a partition is named twice, [`Error::Metadata`] when
    /// no broker answered the first metadata lookup; nothing is fetched then.
    pub async fn fetch<T>(&self, requests: &[(T, i32, i64)]) -> Result<FetchBatch>
    where
        T: AsRef<str> + Sync,
    {
        let mut seen = HashSet::new();
        for (topic, partition, _) in requests {
            if !seen.insert((topic.as_ref(), *partition)) {
                return Err(Error::DuplicatePartition { topic: topic.as_ref().to_owned(), partition: *partition });
            }
        }
        if requests.is_empty() {
            return Ok(FetchBatch::default());
        }
        let config = &self.inner.config;
        let targets = requests
            .iter()
            .map(|(topic, partition, offset)| Target {
                topic: topic.as_ref().to_owned(),
                partition: *partition,
                state: FetchState { offset: *offset, fetch_size: config.fetch_message_max_bytes() },
            })
            .collect();
        let op = FetchOp {
            max_wait_ms: config.fetch_wait_max_ms(),
            min_bytes: config.fetch_min_bytes(),
            grow_max: config.fetch_message_auto_grow_max_bytes(),
            isolation: config.isolation_level(),
        };
        let mut results = drive(&self.inner.cache, config, &op, targets, config.refresh_leader_max_retries()).await?;
        self.fill_offset_ranges(&mut results).await;
        Ok(FetchBatch::new(
            requests
                .iter()
                .zip(results)
                .map(|((topic, partition, _), r)| (topic.as_ref().to_owned(), *partition, r))
                .collect(),
        ))
    }

    /// [`SimpleConsumer::fetch`] of one partition.
    ///
    /// Cancel safety: as [`SimpleConsumer::fetch`].
    ///
    /// # Errors
    ///
    /// The per-partition errors of [`SimpleConsumer::fetch`], and [`Error::Metadata`].
    pub async fn fetch_partition(&self, topic: &str, partition: i32, offset: i64) -> Result<PartitionData> {
        let mut batch = self.fetch(&[(topic, partition, offset)]).await?;
        batch.take(topic, partition).expect("a fetch answers every partition it was given")
    }

    /// Looks up the earliest and latest offsets of the partitions that answered
    /// OffsetOutOfRange, so the error says where to go. Failed lookups leave `None`.
    async fn fill_offset_ranges(&self, results: &mut [Result<PartitionData>]) {
        let out_of_range: Vec<(usize, String, i32)> = results
            .iter()
            .enumerate()
            .filter_map(|(i, r)| match r {
                Err(Error::OffsetOutOfRange { topic, partition, .. }) => Some((i, topic.clone(), *partition)),
                _ => None,
            })
            .collect();
        if out_of_range.is_empty() {
            return;
        }
        let targets = |time| {
            out_of_range
                .iter()
                .map(|(_, topic, partition)| Target {
                    topic: topic.clone(),
                    partition: *partition,
                    state: OffsetsState { time, max_number: 1 },
                })
                .collect::<Vec<_>>()
        };
        let (cache, config) = (&self.inner.cache, &self.inner.config);
        let op = OffsetsOp { isolation: config.isolation_level() };
        let (earliest, latest) = tokio::join!(
            drive(cache, config, &op, targets(EARLIEST_TIME), RANGE_LOOKUP_RETRIES),
            drive(cache, config, &op, targets(LATEST_TIME), RANGE_LOOKUP_RETRIES),
        );
        let first = |found: &Result<Vec<Result<Found>>>, k: usize| -> Option<i64> {
            found.as_ref().ok()?.get(k)?.as_ref().ok()?.1.first().copied()
        };
        for (k, (i, _, _)) in out_of_range.iter().enumerate() {
            if let Some(Err(Error::OffsetOutOfRange { earliest: e, latest: l, .. })) = results.get_mut(*i) {
                *e = first(&earliest, k);
                *l = first(&latest, k);
            }
        }
    }

    /// `getOffsetsBefore`: offsets of the partition for `time`, asked of its leader in the
    /// highest ListOffsets version both sides speak.
    ///
    /// `time` is [`LATEST_TIME`] (-1: the log end, the offset the next message gets),
    /// [`EARLIEST_TIME`] (-2: the oldest offset kept) or milliseconds since the epoch. What a
    /// time means, and how many offsets come back, depend on the broker:
    ///
    /// * Kafka 0.8 to 0.10.0 (ListOffsets v0): up to `max_number` offsets, newest first; for a
    ///   time the base offsets of the log segments last written before it — segment
    ///   boundaries, not the offset of a message at that time (an empty list when every
    ///   segment is newer);
    /// * Kafka 0.10.1 and later (v1+): one offset, whatever `max_number` says; for a time the
    ///   first offset whose record's timestamp is at or after it (an empty list when every
    ///   record is older), as [`SimpleConsumer::offset_for_time`] gives it.
    ///
    /// A follower answers NotLeaderForPartition and a broker without a replica
    /// UnknownTopicOrPartition: both are retried after a metadata refresh.
    ///
    /// Cancel safety: dropping the future abandons the request; nothing changes.
    ///
    /// # Errors
    ///
    /// As a partition of [`SimpleConsumer::fetch`]: [`Error::Broker`], [`Error::Connection`],
    /// [`Error::NoLeader`] after the retries; [`Error::UnknownTopic`],
    /// [`Error::UnknownPartition`], [`Error::TopicMetadata`], [`Error::Metadata`].
    pub async fn offsets_before(&self, topic: &str, partition: i32, time: i64, max_number: i32) -> Result<Vec<i64>> {
        self.offsets_from_leader(topic, partition, time, max_number).await.map(|(_, offsets)| offsets)
    }

    /// The first offset of the partition whose record's timestamp is at or after
    /// `timestamp_ms`, with that record's timestamp (ListOffsets v1+, Kafka 0.10.1 and later):
    /// where to start reading to replay from a point in time. `None` when every record is
    /// older.
    ///
    /// Cancel safety: as [`SimpleConsumer::offsets_before`].
    ///
    /// # Errors
    ///
    /// As [`SimpleConsumer::offsets_before`]; [`Error::Connection`] around
    /// `gregor_net::Error::NoCommonVersion` for a broker without ListOffsets v1 (Kafka 0.8 to
    /// 0.10.0 can only give segment offsets: [`SimpleConsumer::offsets_before`]).
    pub async fn offset_for_time(&self, topic: &str, partition: i32, timestamp_ms: i64) -> Result<Option<(i64, i64)>> {
        let config = &self.inner.config;
        let target = Target { topic: topic.to_owned(), partition, state: timestamp_ms };
        let op = TimeOp { isolation: config.isolation_level() };
        let mut results =
            drive(&self.inner.cache, config, &op, vec![target], config.refresh_leader_max_retries()).await?;
        results.pop().expect("one result per target")
    }

    async fn offsets_from_leader(
        &self,
        topic: &str,
        partition: i32,
        time: i64,
        max_number: i32,
    ) -> Result<(BrokerId, Vec<i64>)> {
        let config = &self.inner.config;
        let target = Target { topic: topic.to_owned(), partition, state: OffsetsState { time, max_number } };
        let mut results = drive(
            &self.inner.cache,
            config,
            &OffsetsOp { isolation: config.isolation_level() },
            vec![target],
            config.refresh_leader_max_retries(),
        )
        .await?;
        results.pop().expect("one result per target")
    }

    async fn one_offset(&self, topic: &str, partition: i32, time: i64) -> Result<i64> {
        let (broker, offsets) = self.offsets_from_leader(topic, partition, time, 1).await?;
        offsets.first().copied().ok_or_else(|| Error::NoOffset { topic: topic.to_owned(), partition, broker, time })
    }

    /// The oldest offset the partition still holds (`getOffsetsBefore` with -2).
    ///
    /// Cancel safety: as [`SimpleConsumer::offsets_before`].
    ///
    /// # Errors
    ///
    /// As [`SimpleConsumer::offsets_before`], and [`Error::NoOffset`] when the leader lists none.
    pub async fn earliest_offset(&self, topic: &str, partition: i32) -> Result<i64> {
        self.one_offset(topic, partition, EARLIEST_TIME).await
    }

    /// The partition's log end offset, the offset its next message gets (`getOffsetsBefore`
    /// with -1). Reading from it returns only messages produced from now on.
    ///
    /// Cancel safety: as [`SimpleConsumer::offsets_before`].
    ///
    /// # Errors
    ///
    /// As [`SimpleConsumer::offsets_before`], and [`Error::NoOffset`] when the leader lists none.
    pub async fn latest_offset(&self, topic: &str, partition: i32) -> Result<i64> {
        self.one_offset(topic, partition, LATEST_TIME).await
    }

    /// The partition's leader: its broker id and `host:port`, from the metadata (refreshed
    /// when stale; while no leader is elected, looked up again after the backoff, up to the
    /// retries).
    ///
    /// Cancel safety: dropping the future leaves the metadata cache consistent.
    ///
    /// # Errors
    ///
    /// [`Error::NoLeader`] after the retries, [`Error::UnknownTopic`],
    /// [`Error::UnknownPartition`], [`Error::TopicMetadata`], [`Error::Metadata`].
    pub async fn leader(&self, topic: &str, partition: i32) -> Result<(BrokerId, String)> {
        let config = &self.inner.config;
        let target = Target { topic: topic.to_owned(), partition, state: () };
        let mut results =
            drive(&self.inner.cache, config, &LeaderLookup, vec![target], config.refresh_leader_max_retries()).await?;
        let broker = results.pop().expect("one result per target")?;
        let addr = self.inner.cache.snapshot().broker(broker).map(gregor_net::Broker::addr);
        match addr.or_else(|| self.inner.cache.pool().broker_addr(broker)) {
            Some(addr) => Ok((broker, addr)),
            None => Err(Error::Connection {
                topic: topic.to_owned(),
                partition,
                broker,
                attempts: 1,
                source: Arc::new(gregor_net::Error::UnknownBroker { broker_id: broker }),
            }),
        }
    }

    /// The topic's partition ids, sorted, with or without a leader. A topic being auto-created
    /// (metadata error 5, no partitions yet) is looked up again after the backoff, up to the
    /// retries.
    ///
    /// Cancel safety: dropping the future leaves the metadata cache consistent.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownTopic`]; [`Error::TopicMetadata`] when the metadata still lists no
    /// partition after the retries (or at once for a code retrying does not fix);
    /// [`Error::Metadata`].
    pub async fn partitions(&self, topic: &str) -> Result<Vec<i32>> {
        let (cache, config) = (&self.inner.cache, &self.inner.config);
        ensure_metadata(cache, &[(topic, 0)]).await?;
        let backoff = Backoff::new(config.refresh_leader_backoff(), config.refresh_leader_backoff_max());
        let mut attempts = 0;
        loop {
            attempts += 1;
            let snapshot = cache.snapshot();
            let code = match snapshot.topic(topic) {
                Some(t) if t.error == Some(ErrorCode::UnknownTopicOrPartition) => {
                    return Err(Error::UnknownTopic { topic: topic.to_owned() })
                }
                Some(t) if !t.partitions.is_empty() => return Ok(t.partitions.keys().copied().collect()),
                Some(t) => t.error.unwrap_or(ErrorCode::LeaderNotAvailable),
                None => ErrorCode::LeaderNotAvailable,
            };
            if !code.is_retriable() || attempts > config.refresh_leader_max_retries() {
                return Err(Error::TopicMetadata { topic: topic.to_owned(), code, attempts });
            }
            tokio::time::sleep(backoff.next_delay(attempts - 1)).await;
            if let Err(e) = cache.refresh(&[topic.to_owned()]).await {
                tracing::warn!(error = %e, %topic, "metadata refresh failed");
            }
        }
    }

    /// Closes the consumer's connections (requests in flight fail). The consumer stays usable
    /// and reconnects on the next call; with a shared cache, the other clients' connections
    /// close too.
    ///
    /// Cancel safety: connections already closed stay closed.
    pub async fn close(&self) {
        self.inner.cache.pool().close().await;
    }
}

//! Broker settings of the FakeCluster, named after Kafka 0.8.2's `server.properties`, with
//! 0.8.2's defaults.

use std::time::Duration;

/// Kafka 0.8.2's default `message.max.bytes`.
pub const DEFAULT_MESSAGE_MAX_BYTES: usize = 1_000_012;
/// Kafka 0.8.2's default `offsets.topic.num.partitions`.
pub const DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS: i32 = 50;
/// Kafka 0.8.2's default `offsets.topic.replication.factor`.
pub const DEFAULT_OFFSETS_TOPIC_REPLICATION_FACTOR: i32 = 3;
/// Kafka 0.8.2's default `replica.lag.time.max.ms`.
pub const DEFAULT_REPLICA_LAG_TIME_MAX: Duration = Duration::from_millis(10_000);
/// Kafka 0.8.2's default `offset.metadata.max.bytes`.
pub const DEFAULT_OFFSET_METADATA_MAX_BYTES: usize = 4096;
/// The name of the topic that holds Kafka-stored consumer offsets.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Settings shared by every broker of a [`crate::FakeCluster`].
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// `auto.create.topics.enable` (default true): Metadata for an unknown topic creates it.
    pub auto_create_topics_enable: bool,
    /// `num.partitions` (default 1) for auto-created topics.
    pub num_partitions: i32,
    /// `default.replication.factor` (default 1) for auto-created topics.
    pub default_replication_factor: i32,
    /// `message.max.bytes` (default 1000012): the largest entry (offset + size + message) a
    /// broker appends; a topic's `max.message.bytes` overrides it.
    pub message_max_bytes: usize,
    /// `min.insync.replicas` (default 1) for acks=-1; a topic config overrides it.
    pub min_insync_replicas: usize,
    /// `replica.lag.time.max.ms` (default 10 s): a follower that has not caught up for this
    /// long leaves the ISR.
    pub replica_lag_time_max: Duration,
    /// `delete.topic.enable` (default false): honour `/admin/delete_topics`.
    pub delete_topic_enable: bool,
    /// `unclean.leader.election.enable` (default true, as in 0.8.2): when no replica of the ISR
    /// is alive, elect another live replica (losing what only the ISR had); false leaves the
    /// partition without a leader until an ISR replica returns.
    pub unclean_leader_election_enable: bool,
    /// `offsets.topic.num.partitions` (default 50).
    pub offsets_topic_num_partitions: i32,
    /// `offsets.topic.replication.factor` (default 3, capped to the live brokers).
    pub offsets_topic_replication_factor: i32,
    /// `offset.metadata.max.bytes` (default 4096): longer commit metadata gets error 12.
    pub offset_metadata_max_bytes: usize,
    /// `zookeeper.session.timeout.ms` (default 6 s) of each broker's session.
    pub zookeeper_session_timeout: Duration,
    /// Reproduce KAFKA-1867: while the cluster has no topic at all, Metadata lists no broker
    /// (off by default; a real 0.8.2.2 cluster does it).
    pub empty_cluster_lists_no_brokers: bool,
    /// `advertised.host.name` (default 127.0.0.1).
    pub host: String,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            auto_create_topics_enable: true,
            num_partitions: 1,
            default_replication_factor: 1,
            message_max_bytes: DEFAULT_MESSAGE_MAX_BYTES,
            min_insync_replicas: 1,
            replica_lag_time_max: DEFAULT_REPLICA_LAG_TIME_MAX,
            delete_topic_enable: false,
            unclean_leader_election_enable: true,
            offsets_topic_num_partitions: DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS,
            offsets_topic_replication_factor: DEFAULT_OFFSETS_TOPIC_REPLICATION_FACTOR,
            offset_metadata_max_bytes: DEFAULT_OFFSET_METADATA_MAX_BYTES,
            zookeeper_session_timeout: Duration::from_millis(6000),
            empty_cluster_lists_no_brokers: false,
            host: "127.0.0.1".to_owned(),
        }
    }
}

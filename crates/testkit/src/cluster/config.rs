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
    /// How fast the brokers answer: at once (the default) or like a broker under load
    /// ([`Timing::kafka_0_8_2`]).
    pub timing: Timing,
}

/// How long the fake brokers take, so that a client meets the timing of a real broker rather
/// than answers that come at once: an instant fake never lets a producer's queue or in-flight
/// requests hold what they hold in front of a broker that takes milliseconds, and so flatters
/// both its latency and its memory.
///
/// What it models, per broker: a fixed service time per request (request queue, handler
/// thread, socket write: `request_service`), a throughput cap shared by all of the broker's
/// connections for the bytes it takes in and sends out (`broker_bytes_per_sec`, the disk and
/// network a broker has), a cap per partition for log appends (`partition_append_bytes_per_sec`:
/// one partition's log is appended by one thread at a time), and for acks=-1 the time a
/// follower takes to fetch what the leader appended (`replica_fetch_delay`). A request waits
/// for its turn on each resource it uses, so requests queue behind each other as they do on a
/// busy broker; the work itself (appends, reads) happens at once and only the answer waits.
/// An answer goes out at its due time to within about 0.1 ms (one thread of the process keeps
/// the deadlines), not at the next of tokio's millisecond ticks, which added half a
/// millisecond to every answer on average and made a request's time a step function of its
/// size. `RUST_LOG=gregor_testkit::timing=trace` logs each answer's due and actual time.
/// Zero everywhere ([`Timing::instant`], the default) is the fake as it always was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timing {
    /// Time spent on every request before its answer goes out.
    pub request_service: Duration,
    /// Bytes per second one broker takes in (Produce) and sends out (Fetch), all its
    /// connections together; 0 = no limit.
    pub broker_bytes_per_sec: u64,
    /// Bytes per second one partition's log appends; 0 = no limit.
    pub partition_append_bytes_per_sec: u64,
    /// Extra time an acks=-1 Produce waits for its followers' fetch.
    pub replica_fetch_delay: Duration,
}

impl Timing {
    /// Answers at once: the fake as it always was.
    pub fn instant() -> Timing {
        Timing::default()
    }

    /// Roughly what a genuine Kafka 0.8.2.2 cluster of three brokers on one 2-core machine
    /// showed (the captures in `kafka-0.8.2.2/INDEX.md` and the measurements of issue 25):
    /// small requests answered in 1-8 ms (`request_service` 1 ms, the rest being the client's
    /// and the network's), acks=-1 answered a few milliseconds after acks=1 once followers
    /// fetch continuously (5 ms), and about 130-170 MB/s of 126-byte messages taken in by
    /// three brokers together (50 MB/s each; one partition's appends at 40 MB/s). Estimates,
    /// not a model of any one machine: change the fields to match yours.
    pub fn kafka_0_8_2() -> Timing {
        Timing {
            request_service: Duration::from_millis(1),
            broker_bytes_per_sec: 50_000_000,
            partition_append_bytes_per_sec: 40_000_000,
            replica_fetch_delay: Duration::from_millis(5),
        }
    }

    /// True when it adds no time at all.
    pub fn is_instant(&self) -> bool {
        *self == Timing::instant()
    }
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
            timing: Timing::instant(),
        }
    }
}

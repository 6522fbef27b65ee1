//! The crate's one error type.

use std::sync::Arc;

use gregor_net::BrokerId;
use gregor_protocol::{ErrorCode, TopicPartition};

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Joins numbers as `1, 2, 3` for messages.
pub(crate) fn join<T: std::fmt::Display>(items: &[T]) -> String {
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

/// Formats partitions as Kafka's tools print them (`TopicAndPartition.toString`): `[t,0], [t,1]`.
pub(crate) fn join_partitions(items: &[TopicPartition]) -> String {
    items.iter().map(|tp| format!("[{},{}]", tp.topic, tp.partition)).collect::<Vec<_>>().join(", ")
}

/// Everything that can go wrong administering a Kafka 0.8.2 cluster through ZooKeeper.
///
/// The variants carry the values involved and, where there is one, the fix: a replication factor
/// above the broker count names both numbers, a reset refused for an active group names its
/// members, a reassignment refused because another runs names the partitions still moving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Returned when ZooKeeper fails or refuses a request (unreachable, session expired, a znode
    /// holding data Kafka would not write).
    #[error("zookeeper request failed")]
    ZooKeeper(#[from] gregor_zk::Error),

    /// Returned when a request to a broker fails (connection, timeout, decode). The source is
    /// shared: one failed request fails every partition it asked about.
    #[error("{context}")]
    Net {
        /// What was asked of which broker.
        context: String,
        /// The network error.
        #[source]
        source: Arc<gregor_net::Error>,
    },

    /// Returned when a broker answers with an error code that is not retried (or still fails
    /// after the retries).
    #[error("broker answered {code} for {context}")]
    Broker {
        /// The code.
        code: ErrorCode,
        /// What it was about (request, topic, partition, broker).
        context: String,
    },

    /// Returned when a topic name breaks Kafka 0.8.2's rules (`kafka.common.Topic.validate`).
    #[error("invalid topic name {topic:?}: {reason}")]
    InvalidTopicName {
        /// The name as given.
        topic: String,
        /// The rule it breaks.
        reason: &'static str,
    },

    /// Returned when creating a topic that already exists (`/brokers/topics/T` is there).
    #[error("topic {topic:?} already exists")]
    TopicExists {
        /// The topic.
        topic: String,
    },

    /// Returned when an operation names a topic that does not exist.
    #[error("topic {topic:?} does not exist")]
    UnknownTopic {
        /// The topic.
        topic: String,
    },

    /// Returned when an operation names a partition its topic does not have.
    #[error("topic {topic:?} has no partition {partition}")]
    UnknownPartition {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },

    /// Returned when a topic is to be created with fewer than one partition.
    #[error("number of partitions must be at least 1, not {partitions}")]
    InvalidPartitionCount {
        /// The count asked for.
        partitions: i32,
    },

    /// Returned when a replication factor below 1 is asked for.
    #[error("replication factor must be at least 1, not {replication_factor}")]
    InvalidReplicationFactor {
        /// The factor asked for.
        replication_factor: i32,
    },

    /// Returned when the replication factor is larger than the number of brokers replicas can be
    /// placed on (the live brokers when creating a topic, the broker list when generating a
    /// reassignment). Start more brokers or lower the replication factor.
    #[error("replication factor {replication_factor} larger than the {brokers} available brokers")]
    ReplicationFactorTooLarge {
        /// The factor asked for.
        replication_factor: i32,
        /// How many brokers there are.
        brokers: usize,
    },

    /// Returned when an explicit replica assignment is unusable: no partition, an empty replica
    /// list, a broker listed twice for one partition, replica lists of different lengths, a
    /// malformed `0:1,1:2` string.
    #[error("invalid replica assignment: {reason}")]
    InvalidAssignment {
        /// What is wrong, with the values.
        reason: String,
    },

    /// Returned when a replica assignment names brokers that are not registered in ZooKeeper
    /// (`/brokers/ids`). Start them first, or use registered brokers.
    #[error("brokers {} in the replica assignment are not registered (live brokers: {})", join(.unknown), join(.live))]
    UnknownBrokers {
        /// The brokers not registered.
        unknown: Vec<BrokerId>,
        /// The registered brokers.
        live: Vec<BrokerId>,
    },

    /// Returned when [`add_partitions`](crate::Admin::add_partitions) is asked for a total that is
    /// not above the current count: Kafka can only add partitions.
    #[error(
        "topic {topic:?} has {current} partitions: the number of partitions can only be increased, \
         so ask for more than {current}, not {requested}"
    )]
    PartitionCountNotIncreased {
        /// The topic.
        topic: String,
        /// Its current partition count.
        current: usize,
        /// The total asked for.
        requested: i32,
    },

    /// Returned when the replica lists given for new partitions do not have the topic's
    /// replication factor.
    #[error(
        "the replica assignment for the new partitions of {topic:?} has replication factor \
         {given}, not the topic's {expected}"
    )]
    ReplicationFactorMismatch {
        /// The topic.
        topic: String,
        /// The topic's replication factor.
        expected: usize,
        /// The replica count found in the given assignment.
        given: usize,
    },

    /// Returned when a topic config property is unknown to Kafka 0.8.2 (`LogConfig`; `value` is
    /// `None`) or its value does not parse as the property's type or is out of its range. The
    /// message has the shape of every gregor configuration error: `invalid value "soon" for
    /// topic config retention.ms: ...`, `unknown topic config "retention.hours": ...`.
    #[error(
        "{}",
        match value {
            Some(v) => format!("invalid value {v:?} for topic config {property}: {reason}"),
            None => format!("unknown topic config {property:?}: {reason}"),
        }
    )]
    InvalidConfig {
        /// The property name.
        property: String,
        /// The value, if one was given.
        value: Option<String>,
        /// What is wrong, with the valid names or values.
        reason: String,
    },

    /// Returned when a partition reassignment is started while another is still in progress
    /// (`/admin/reassign_partitions` exists): verify the running one until it completes.
    #[error(
        "a partition reassignment is already in progress for {}: wait until it completes \
         (verify it) before starting another",
        join_partitions(.partitions)
    )]
    ReassignmentInProgress {
        /// The partitions still being moved.
        partitions: Vec<TopicPartition>,
    },

    /// Returned when a preferred replica election is started while another is in progress
    /// (`/admin/preferred_replica_election` exists).
    #[error(
        "a preferred replica election is already in progress for {}: wait until the controller \
         finishes it",
        join_partitions(.partitions)
    )]
    PreferredReplicaElectionInProgress {
        /// The partitions of the running election.
        partitions: Vec<TopicPartition>,
    },

    /// Returned when a reassignment plan, a topics-to-move document or a preferred replica
    /// election list is malformed or inconsistent (duplicates, empty, unknown fields' types).
    #[error("invalid {what}: {reason}")]
    InvalidPlan {
        /// Which document (`reassignment JSON`, `topics-to-move JSON`, ...).
        what: &'static str,
        /// What is wrong.
        reason: String,
    },

    /// Returned when a broker list for a reassignment is empty or repeats a broker.
    #[error("invalid broker list: {reason}")]
    InvalidBrokerList {
        /// What is wrong.
        reason: String,
    },

    /// Returned when a consumer group has no znode under `/consumers`.
    #[error("consumer group {group:?} does not exist (no /consumers/{group})")]
    UnknownGroup {
        /// The group.
        group: String,
    },

    /// Returned when offsets are to be reset for a group that still has members registered: the
    /// members would overwrite the new offsets with their own. Stop them first.
    #[error(
        "consumer group {group:?} is active ({} registered: {}): stop its consumers before \
         resetting offsets",
        members.len(), members.join(", ")
    )]
    GroupActive {
        /// The group.
        group: String,
        /// The registered consumer ids (`/consumers/G/ids`).
        members: Vec<String>,
    },

    /// Returned when a partition has no live leader, so its offsets cannot be asked for.
    #[error("{topic}/{partition} has no live leader: its offsets cannot be read")]
    NoLeader {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },

    /// Returned when a broker id is not registered in ZooKeeper, so its address is unknown.
    #[error("broker {broker} is not registered in zookeeper (/brokers/ids/{broker})")]
    BrokerNotRegistered {
        /// The broker id.
        broker: BrokerId,
    },

    /// Returned when no broker is registered at all, so none can be asked.
    #[error("no broker is registered in zookeeper (/brokers/ids is empty): is the cluster running?")]
    NoBrokers,

    /// Returned when no offset coordinator for the group could be found (ConsumerMetadata kept
    /// answering an error) within the retries.
    #[error("no offset coordinator found for consumer group {group:?} after {attempts} attempts")]
    CoordinatorNotAvailable {
        /// The group.
        group: String,
        /// Attempts made.
        attempts: u32,
        /// The last error seen.
        #[source]
        last: Option<Box<Error>>,
    },

    /// Returned when a topic could not be read through the simple consumer (audit: the audit
    /// topic).
    #[error("{context}")]
    Consumer {
        /// What was read.
        context: String,
        /// The consumer's error.
        #[source]
        source: Arc<gregor_simple_consumer::Error>,
    },

    /// Returned when an offset to reset to lies outside what the partition holds.
    #[error(
        "offset {offset} is out of range for {topic}/{partition}: the partition holds offsets \
         {earliest} to {latest}"
    )]
    OffsetOutOfRange {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The offset asked for.
        offset: i64,
        /// The earliest offset kept.
        earliest: i64,
        /// The log end offset (the next message's).
        latest: i64,
    },
}

impl Error {
    pub(crate) fn net(context: impl Into<String>, source: gregor_net::Error) -> Error {
        Error::Net { context: context.into(), source: Arc::new(source) }
    }

    pub(crate) fn plan(what: &'static str, reason: impl Into<String>) -> Error {
        Error::InvalidPlan { what, reason: reason.into() }
    }

    pub(crate) fn assignment(reason: impl Into<String>) -> Error {
        Error::InvalidAssignment { reason: reason.into() }
    }

    /// True when retrying later may succeed: a broker or coordinator not ready, a connection
    /// failure, a ZooKeeper connection loss.
    pub fn is_retriable(&self) -> bool {
        match self {
            Error::Net { source, .. } => source.is_retriable(),
            Error::Broker { code, .. } => code.is_retriable(),
            Error::ZooKeeper(e) => matches!(e, gregor_zk::Error::ConnectionLoss | gregor_zk::Error::Timeout { .. }),
            Error::NoLeader { .. } | Error::CoordinatorNotAvailable { .. } => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_values_and_the_fix() {
        let cases: Vec<(Error, &str)> = vec![
            (
                Error::ReplicationFactorTooLarge { replication_factor: 4, brokers: 3 },
                "replication factor 4 larger than the 3 available brokers",
            ),
            (Error::TopicExists { topic: "events".into() }, "topic \"events\" already exists"),
            (
                Error::UnknownBrokers { unknown: vec![7, 9], live: vec![0, 1, 2] },
                "brokers 7, 9 in the replica assignment are not registered (live brokers: 0, 1, 2)",
            ),
            (
                Error::PartitionCountNotIncreased { topic: "t".into(), current: 3, requested: 2 },
                "topic \"t\" has 3 partitions: the number of partitions can only be increased, so ask \
                 for more than 3, not 2",
            ),
            (
                Error::ReassignmentInProgress { partitions: vec![("t", 0).into(), ("t", 1).into()] },
                "a partition reassignment is already in progress for [t,0], [t,1]: wait until it \
                 completes (verify it) before starting another",
            ),
            (
                Error::PreferredReplicaElectionInProgress { partitions: vec![TopicPartition::new("a", 10)] },
                "a preferred replica election is already in progress for [a,10]: wait until the \
                 controller finishes it",
            ),
            (
                Error::GroupActive { group: "g".into(), members: vec!["g_a".into(), "g_b".into()] },
                "consumer group \"g\" is active (2 registered: g_a, g_b): stop its consumers before \
                 resetting offsets",
            ),
            (
                Error::InvalidConfig {
                    property: "retention.ms".into(),
                    value: Some("soon".into()),
                    reason: "expected a 64-bit integer".into(),
                },
                "invalid value \"soon\" for topic config retention.ms: expected a 64-bit integer",
            ),
            (
                Error::OffsetOutOfRange { topic: "t".into(), partition: 1, offset: 99, earliest: 0, latest: 10 },
                "offset 99 is out of range for t/1: the partition holds offsets 0 to 10",
            ),
        ];
        for (err, msg) in cases {
            assert_eq!(err.to_string(), msg);
            assert!(!msg.ends_with('.') && !msg.starts_with(char::is_uppercase), "{msg}");
        }
    }

    #[test]
    fn error_is_send_and_sync() {
        fn check<T: Send + Sync + 'static>() {}
        check::<Error>();
    }
}

//! The crate's one error type.

use std::sync::Arc;

use gregor_net::BrokerId;
use gregor_protocol::{ErrorCode, TopicPartition};

use crate::config::ConfigError;

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong reading partitions with the simple consumer.
///
/// A [`crate::SimpleConsumer::fetch`] reports errors per partition (inside the
/// [`crate::FetchBatch`]); the call itself fails only when nothing could be asked at all
/// ([`Error::Metadata`], [`Error::DuplicatePartition`]). Leader errors and unreachable leaders
/// are retried (metadata refresh, `refresh.leader.backoff.ms`) up to
/// `refresh.leader.max.retries` times before they are returned, with the number of attempts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Returned when the fetch offset is below the partition's earliest offset (deleted by
    /// retention) or above its latest. `earliest` and `latest` are looked up when the error is
    /// seen (`None` when that lookup failed): seek to one of them, as `auto.offset.reset` would.
    #[error("offset {offset} is out of range for {topic}/{partition}{}", range_hint(*earliest, *latest))]
    OffsetOutOfRange {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The offset asked for.
        offset: i64,
        /// The earliest offset the leader holds, if it could be looked up.
        earliest: Option<i64>,
        /// The latest offset (the next message's), if it could be looked up.
        latest: Option<i64>,
    },
    /// Returned when the message at `offset` is larger than the fetch size: the broker sent
    /// only part of it, so the partition cannot advance. Raise `fetch.message.max.bytes` to at
    /// least `needed`, or set `fetch.message.auto.grow.max.bytes`.
    #[error(
        "message at {topic}/{partition} offset {offset} needs a fetch size of {needed} bytes but \
         {fetch_size} were fetched: raise fetch.message.max.bytes (or fetch.message.auto.grow.max.bytes) \
         to at least {needed}"
    )]
    MessageSizeTooLarge {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The offset of the message (for a compressed wrapper, its last inner offset).
        offset: i64,
        /// The fetch size used (`fetch.message.max.bytes`, or the grown size).
        fetch_size: i32,
        /// The smallest fetch size that returns the whole message (its offset and size header
        /// included).
        needed: usize,
    },
    /// Returned when the metadata lists the topic with error 3 UnknownTopicOrPartition: it does
    /// not exist (and `auto.create.topics.enable` is off on the brokers).
    #[error("topic {topic} does not exist")]
    UnknownTopic {
        /// The topic.
        topic: String,
    },
    /// Returned when freshly refreshed metadata lists the topic without this partition.
    #[error("topic {topic} has no partition {partition} (it has {partition_count})")]
    UnknownPartition {
        /// The topic.
        topic: String,
        /// The partition asked for.
        partition: i32,
        /// How many partitions the topic has.
        partition_count: usize,
    },
    /// Returned when the metadata of the topic carries an error code other than 3: at once for
    /// a code retrying does not fix (17 InvalidTopic), after `refresh.leader.max.retries`
    /// lookups for one it may (5 LeaderNotAvailable while an auto-created topic gets leaders).
    #[error("the metadata of topic {topic} carries {code} after {attempts} lookup(s)")]
    TopicMetadata {
        /// The topic.
        topic: String,
        /// The topic's error code.
        code: ErrorCode,
        /// Metadata lookups made in this call.
        attempts: u32,
    },
    /// Returned when the partition's leader answered with an error code that retrying does not
    /// fix, or still answered a leader error (6 NotLeaderForPartition, 3
    /// UnknownTopicOrPartition, 5 LeaderNotAvailable...) after `refresh.leader.max.retries`
    /// retries.
    #[error("broker {broker} answered {code} for {topic}/{partition} after {attempts} attempt(s)")]
    Broker {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The broker that answered.
        broker: BrokerId,
        /// The code.
        code: ErrorCode,
        /// Requests made for the partition in this call.
        attempts: u32,
    },
    /// Returned when the partition's leader could not be reached (connect refused or timed
    /// out, connection lost, `socket.timeout.ms` passed) in `attempts` attempts, metadata
    /// refreshed between them; or at once for a request that cannot be sent or a response
    /// that cannot be decoded.
    #[error("could not read {topic}/{partition} from its leader, broker {broker}, in {attempts} attempt(s)")]
    Connection {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The leader tried last.
        broker: BrokerId,
        /// Requests made for the partition in this call.
        attempts: u32,
        /// What the network layer said (shared by the partitions of one request).
        #[source]
        source: Arc<gregor_net::Error>,
    },
    /// Returned when the metadata named no leader for the partition in `attempts` lookups: an
    /// election is running, or every replica is down.
    #[error("{topic}/{partition} had no leader in {attempts} metadata lookup(s): is every replica down?")]
    NoLeader {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// Metadata lookups made for the partition in this call.
        attempts: u32,
    },
    /// Returned when the leader answered without the partition it was asked for (a broker bug).
    #[error("broker {broker} left {topic}/{partition} out of its response")]
    MissingFromResponse {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The broker.
        broker: BrokerId,
    },
    /// Returned when fetched messages cannot be decoded (bad CRC, unknown codec, corrupt
    /// compressed data). The position does not move: skip past `offset` to go on.
    #[error("could not decode the messages fetched from {topic}/{partition} at offset {offset}")]
    Protocol {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The fetch offset.
        offset: i64,
        /// What the codec said (with the offset of the bad message).
        #[source]
        source: Box<gregor_protocol::Error>,
    },
    /// Returned when a broker listed no offset for a latest (-1) or earliest (-2) lookup, which
    /// a 0.8.2 broker always answers.
    #[error("broker {broker} returned no offset for {topic}/{partition} at time {time}")]
    NoOffset {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The broker.
        broker: BrokerId,
        /// The time asked for.
        time: i64,
    },
    /// Returned when no broker answered a Metadata request for `topics` (check
    /// `metadata.broker.list` and that the brokers run): nothing was fetched.
    #[error("could not fetch metadata for {}", topics.join(", "))]
    Metadata {
        /// The topics asked for.
        topics: Vec<String>,
        /// What the network layer said.
        #[source]
        source: Box<gregor_net::Error>,
    },
    /// Returned when one call names the same partition twice (its results could not be told
    /// apart). Nothing was fetched.
    #[error("{topic}/{partition} is named more than once in one fetch")]
    DuplicatePartition {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },
    /// Returned when a setting is invalid.
    #[error("invalid configuration")]
    Config(#[from] ConfigError),
}

fn range_hint(earliest: Option<i64>, latest: Option<i64>) -> String {
    match (earliest, latest) {
        (Some(e), Some(l)) => format!(" (valid offsets {e} to {l}): seek to one of them"),
        (Some(e), None) => format!(" (earliest offset {e})"),
        (None, Some(l)) => format!(" (latest offset {l})"),
        (None, None) => String::new(),
    }
}

impl Error {
    /// The topic the error is about, when it is about one.
    pub fn topic(&self) -> Option<&str> {
        match self {
            Error::UnknownTopic { topic } | Error::TopicMetadata { topic, .. } => Some(topic),
            other => other.partition_fields().map(|(t, _)| t),
        }
    }

    /// The topic and partition the error is about, when it is about one partition.
    pub fn topic_partition(&self) -> Option<TopicPartition> {
        self.partition_fields().map(|(topic, partition)| TopicPartition::new(topic, partition))
    }

    fn partition_fields(&self) -> Option<(&str, i32)> {
        match self {
            Error::OffsetOutOfRange { topic, partition, .. }
            | Error::MessageSizeTooLarge { topic, partition, .. }
            | Error::UnknownPartition { topic, partition, .. }
            | Error::Broker { topic, partition, .. }
            | Error::Connection { topic, partition, .. }
            | Error::NoLeader { topic, partition, .. }
            | Error::MissingFromResponse { topic, partition, .. }
            | Error::Protocol { topic, partition, .. }
            | Error::NoOffset { topic, partition, .. }
            | Error::DuplicatePartition { topic, partition } => Some((topic, *partition)),
            Error::UnknownTopic { .. } | Error::TopicMetadata { .. } | Error::Metadata { .. } | Error::Config(_) => {
                None
            }
        }
    }

    /// The broker's error code, when a broker answered with one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Broker { code, .. } | Error::TopicMetadata { code, .. } => Some(*code),
            Error::OffsetOutOfRange { .. } => Some(ErrorCode::OffsetOutOfRange),
            Error::UnknownTopic { .. } | Error::UnknownPartition { .. } => Some(ErrorCode::UnknownTopicOrPartition),
            _ => None,
        }
    }

    /// True when calling again later may succeed without changing anything: the retries of a
    /// leader change or an unreachable broker ran out ([`Error::NoLeader`],
    /// [`Error::Connection`] for a retriable network error, [`Error::Broker`] with a retriable
    /// code), or no broker answered metadata. False for errors that need the caller to act
    /// (a new offset, a larger fetch size, another topic).
    pub fn is_retriable(&self) -> bool {
        match self {
            Error::NoLeader { .. } | Error::MissingFromResponse { .. } => true,
            Error::Connection { source, .. } => source.is_retriable(),
            Error::Metadata { source, .. } => source.is_retriable(),
            Error::Broker { code, .. } | Error::TopicMetadata { code, .. } => code.is_retriable(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_carry_values_and_fixes() {
        let e = Error::OffsetOutOfRange {
            topic: "t".into(),
            partition: 2,
            offset: 100,
            earliest: Some(0),
            latest: Some(5),
        };
        assert_eq!(e.to_string(), "offset 100 is out of range for t/2 (valid offsets 0 to 5): seek to one of them");
        assert_eq!(e.code(), Some(ErrorCode::OffsetOutOfRange));
        assert_eq!(e.topic_partition(), Some(TopicPartition::new("t", 2)));
        assert!(!e.is_retriable());
        let e =
            Error::MessageSizeTooLarge { topic: "t".into(), partition: 0, offset: 1, fetch_size: 10240, needed: 50038 };
        assert_eq!(
            e.to_string(),
            "message at t/0 offset 1 needs a fetch size of 50038 bytes but 10240 were fetched: raise \
             fetch.message.max.bytes (or fetch.message.auto.grow.max.bytes) to at least 50038"
        );
        let e = Error::Broker {
            topic: "t".into(),
            partition: 0,
            broker: 1,
            code: ErrorCode::NotLeaderForPartition,
            attempts: 3,
        };
        assert!(e.to_string().starts_with("broker 1 answered NOT_LEADER_FOR_PARTITION (6): "), "{e}");
        assert!(e.to_string().ends_with(" for t/0 after 3 attempt(s)"), "{e}");
        assert!(e.is_retriable());
        let e = Error::TopicMetadata { topic: "t".into(), code: ErrorCode::InvalidTopic, attempts: 1 };
        assert!(e.to_string().starts_with("the metadata of topic t carries INVALID_TOPIC (17): "), "{e}");
        assert_eq!((e.topic(), e.topic_partition()), (Some("t"), None));
        let e = Error::UnknownPartition { topic: "t".into(), partition: 7, partition_count: 3 };
        assert_eq!(e.to_string(), "topic t has no partition 7 (it has 3)");
        assert_eq!(e.code(), Some(ErrorCode::UnknownTopicOrPartition));
        let e = Error::UnknownTopic { topic: "t".into() };
        assert_eq!(e.to_string(), "topic t does not exist");
        let e = Error::NoLeader { topic: "t".into(), partition: 1, attempts: 4 };
        assert_eq!(e.to_string(), "t/1 had no leader in 4 metadata lookup(s): is every replica down?");
        assert!(e.is_retriable());
        let e = Error::Connection {
            topic: "t".into(),
            partition: 1,
            broker: 2,
            attempts: 11,
            source: Arc::new(gregor_net::Error::UnknownBroker { broker_id: 2 }),
        };
        assert_eq!(e.to_string(), "could not read t/1 from its leader, broker 2, in 11 attempt(s)");
        assert!(e.is_retriable());
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn errors_are_send_sync_and_small() {
        fn assert<T: Send + Sync + 'static>() {}
        assert::<Error>();
        // the largest variant is Config: ConfigError::Conflict holds two names and two values
        // (96 bytes since today's property names came with it)
        assert!(std::mem::size_of::<Error>() <= 96, "{}", std::mem::size_of::<Error>());
        assert!(std::mem::size_of::<Error>() <= std::mem::size_of::<ConfigError>() + 8);
    }
}

//! The producer's errors: why a record was not delivered ([`Error`], inside a
//! [`DeliveryError`]), why a send was refused ([`SendError`], which gives the record back).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use gregor_protocol::ErrorCode;

use crate::config::ConfigError;
use crate::record::Record;
use crate::topic::Topic;

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a record was not delivered, or a producer could not be made (or an audit record could
/// not be read). Cheap to clone (every record of a failed batch gets a copy).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Returned when the partition's leader answered with an error code: either one that is
    /// not worth retrying (10 MessageSizeTooLarge, 2 InvalidMessage, 18
    /// MessageSetSizeTooLarge, 17 InvalidTopic, ...), or a retriable one that was still there
    /// after `message.send.max.retries` retries (6 NotLeaderForPartition, 7 RequestTimedOut,
    /// 19 NotEnoughReplicas, ...).
    #[error("broker {broker} answered {code}")]
    Broker {
        /// The broker that answered.
        broker: i32,
        /// The code.
        code: ErrorCode,
    },
    /// Returned when the Produce request could not be sent or got no answer (connection
    /// refused, closed, timed out after `request.timeout.ms` plus
    /// [`RESPONSE_TIMEOUT_MARGIN`](crate::RESPONSE_TIMEOUT_MARGIN)) on the last try, or the
    /// request cannot be sent at all (larger than the max frame size).
    #[error("produce request to broker {broker} failed")]
    Network {
        /// The broker.
        broker: i32,
        /// What the network layer said.
        #[source]
        source: Arc<gregor_net::Error>,
    },
    /// Returned when the broker's response did not mention the record's partition, on the
    /// last try.
    #[error("broker {broker}'s produce response does not mention {topic}/{partition}")]
    MissingFromResponse {
        /// The broker.
        broker: i32,
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
    },
    /// Returned when the record's partition had no leader through `message.send.max.retries +
    /// 1` metadata refreshes (`retry.backoff.ms` apart): an election that does not end, or
    /// every replica down.
    #[error("{topic}/{partition} had no leader through {rounds} metadata refreshes")]
    NoLeader {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The refreshes waited through.
        rounds: u32,
    },
    /// Returned when the record's topic stayed unusable through `message.send.max.retries + 1`
    /// metadata refreshes (no partition could be chosen, or the partition asked for is of a
    /// topic that is not there): the topic does not exist (and is not auto-created), has no
    /// partition with a leader, or no broker answered.
    #[error("no partition of topic {topic} is available after {rounds} metadata refreshes{}", code_suffix(.code))]
    TopicUnavailable {
        /// The topic.
        topic: String,
        /// The topic's error code in the last metadata answer (3 UnknownTopicOrPartition, 5
        /// LeaderNotAvailable), if any.
        code: Option<ErrorCode>,
        /// The refreshes waited through.
        rounds: u32,
        /// The last refresh's failure, if it failed.
        #[source]
        source: Option<Arc<gregor_net::Error>>,
    },
    /// Returned when the brokers refused the connection settings in a way no retry fixes
    /// ([`gregor_net::Error::is_security_refusal`]): the TLS handshake failed (an untrusted
    /// CA, a certificate for another name, a client certificate refused:
    /// [`gregor_net::Error::Tls`], naming the broker), or SASL authentication failed
    /// ([`gregor_net::Error::Sasl`]).
    /// The record failed after the first metadata refresh, without retries: fix the `ssl.*` /
    /// `sasl.*` settings.
    #[error("the brokers refused the connection settings (TLS or SASL); not retried")]
    Refused {
        /// The refusal, naming the broker.
        #[source]
        source: Arc<gregor_net::Error>,
    },
    /// Returned when the record names a partition the topic does not have, or a custom
    /// partitioner returned one.
    #[error("topic {topic} has no partition {partition} (it has {partitions})")]
    InvalidPartition {
        /// The topic.
        topic: String,
        /// The partition asked for.
        partition: i32,
        /// How many partitions the topic has.
        partitions: usize,
    },
    /// Returned when the batch's message set could not be encoded (compression failed, a
    /// field too long).
    #[error("could not encode the message set for {topic}/{partition}")]
    Encode {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// What the codec said.
        #[source]
        source: Arc<gregor_protocol::Error>,
    },
    /// Returned when the record was not delivered within `delivery.timeout.ms` of when the
    /// producer took it: it waited that long without being in flight (for its linger, its
    /// topic's metadata, its partition's leader, a batch ahead of it, a retry's backoff), or
    /// its request failed after that time in a way that would have been retried (`last`:
    /// that failure). A request in flight is not cut short; its answer counts.
    #[error("not delivered within delivery.timeout.ms ({} ms)", .timeout.as_millis())]
    DeliveryTimeout {
        /// The setting.
        timeout: Duration,
        /// The failure the record would have been retried after, if it was one.
        #[source]
        last: Option<Arc<Error>>,
    },
    /// Returned when the producer was closed (or its runtime shut down) before the record was
    /// delivered. When `in_flight` is true its request had been sent: the broker may have
    /// stored it.
    #[error("producer closed before the record was delivered{}", if *.in_flight { " (its request was in flight: the broker may have stored it)" } else { "" })]
    Closed {
        /// True when the record's request had been sent.
        in_flight: bool,
    },
    /// Returned when the producer's background task stopped unexpectedly (a bug: please
    /// report it).
    #[error("the producer's background task failed: {reason}")]
    Internal {
        /// What happened.
        reason: String,
    },
    /// Returned when a constructor is given an invalid configuration.
    #[error("invalid producer configuration")]
    Config(#[from] ConfigError),
    /// Returned when [`crate::AsyncProducer::new`] is called outside a tokio runtime: create
    /// it inside one, or use a [`crate::SyncProducer`].
    #[error("no tokio runtime: create the AsyncProducer inside one, or use a SyncProducer")]
    NoRuntime,
    /// Returned when [`crate::SyncProducer::new`] cannot start its runtime thread.
    #[error("could not start the sync producer's runtime")]
    Runtime(#[source] Arc<std::io::Error>),
    /// Returned when bytes read as an audit record are not one a producer with audit writes
    /// ([`AuditRecord::parse`](crate::audit::AuditRecord::parse)).
    #[error("invalid audit record: {reason}")]
    InvalidAuditRecord {
        /// What is wrong.
        reason: String,
    },
}

fn code_suffix(code: &Option<ErrorCode>) -> String {
    code.map(|c| format!(" (last answer: {c})")).unwrap_or_default()
}

impl Error {
    /// The broker's error code, for [`Error::Broker`] and [`Error::TopicUnavailable`].
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Broker { code, .. } => Some(*code),
            Error::TopicUnavailable { code, .. } => *code,
            _ => None,
        }
    }
}

/// The fate of a record that was not delivered: where it was going, how many times it was
/// sent, why it failed, and its key and value as encoded (to log, park or send again).
#[derive(Debug, Clone, thiserror::Error)]
#[error("record for {topic}{} not delivered after {attempts} attempt(s)", partition_suffix(.partition))]
pub struct DeliveryError {
    /// The record's topic.
    pub topic: Topic,
    /// Its partition, when one had been chosen.
    pub partition: Option<i32>,
    /// How many times its batch was sent (0: never).
    pub attempts: u32,
    /// Why it failed.
    #[source]
    pub error: Error,
    /// The encoded key (`None` = null key).
    pub key: Option<Bytes>,
    /// The encoded value.
    pub value: Option<Bytes>,
}

fn partition_suffix(partition: &Option<i32>) -> String {
    partition.map(|p| format!("/{p}")).unwrap_or_default()
}

/// Why a send was refused. Every variant gives the record back ([`SendError::into_record`]):
/// nothing was queued and no delivery result will follow.
pub enum SendError<K, V> {
    /// Returned when the queue held `queue.buffering.max.messages` records and
    /// `queue.enqueue.timeout.ms` ran out (at once for 0). Back off, or raise the capacity.
    QueueFull {
        /// The record.
        record: Record<K, V>,
        /// `queue.buffering.max.messages`.
        capacity: usize,
        /// How long the send waited for room.
        waited: Duration,
    },
    /// Returned when the queue held `queue.buffering.max.bytes` bytes with no room for this
    /// record and `queue.enqueue.timeout.ms` ran out (at once for 0). Back off, or raise the
    /// bound.
    QueueBytesFull {
        /// The record.
        record: Record<K, V>,
        /// `queue.buffering.max.bytes`.
        max_bytes: usize,
        /// How long the send waited for room.
        waited: Duration,
    },
    /// Returned when [`close`](crate::AsyncProducer::close) was called before the record was
    /// queued (also to sends that were waiting for room).
    Closed {
        /// The record.
        record: Record<K, V>,
    },
    /// Returned when the key or value encoder failed.
    Encode {
        /// The record.
        record: Record<K, V>,
        /// `"key"` or `"value"`.
        what: &'static str,
        /// What the encoder said.
        source: Arc<gregor_serde::Error>,
    },
    /// Returned when the record cannot be sent: an empty or over-long topic name, a negative
    /// partition.
    InvalidRecord {
        /// The record.
        record: Record<K, V>,
        /// What is wrong with it.
        reason: String,
    },
}

impl<K, V> SendError<K, V> {
    /// The record that was not sent.
    pub fn record(&self) -> &Record<K, V> {
        match self {
            SendError::QueueFull { record, .. }
            | SendError::QueueBytesFull { record, .. }
            | SendError::Closed { record }
            | SendError::Encode { record, .. }
            | SendError::InvalidRecord { record, .. } => record,
        }
    }

    /// Takes the record back.
    pub fn into_record(self) -> Record<K, V> {
        match self {
            SendError::QueueFull { record, .. }
            | SendError::QueueBytesFull { record, .. }
            | SendError::Closed { record }
            | SendError::Encode { record, .. }
            | SendError::InvalidRecord { record, .. } => record,
        }
    }

    /// True for [`SendError::QueueFull`] and [`SendError::QueueBytesFull`]: no room, whichever
    /// bound.
    pub fn is_queue_full(&self) -> bool {
        matches!(self, SendError::QueueFull { .. } | SendError::QueueBytesFull { .. })
    }
}

impl<K, V> fmt::Display for SendError<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::QueueFull { record, capacity, waited } => write!(
                f,
                "queue full ({capacity} records, queue.buffering.max.messages) after waiting {waited:?}; \
                 record for {} not sent",
                record.topic
            ),
            SendError::QueueBytesFull { record, max_bytes, waited } => write!(
                f,
                "queue full ({max_bytes} bytes, queue.buffering.max.bytes) after waiting {waited:?}; record for {} \
                 not sent",
                record.topic
            ),
            SendError::Closed { record } => write!(f, "producer is closed; record for {} not sent", record.topic),
            SendError::Encode { record, what, .. } => {
                write!(f, "could not encode the {what} of a record for {}", record.topic)
            }
            SendError::InvalidRecord { record, reason } => {
                write!(f, "invalid record for {:?}: {reason}", record.topic)
            }
        }
    }
}

impl<K, V> fmt::Debug for SendError<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, topic) = match self {
            SendError::QueueFull { record, .. } => ("QueueFull", &record.topic),
            SendError::QueueBytesFull { record, .. } => ("QueueBytesFull", &record.topic),
            SendError::Closed { record } => ("Closed", &record.topic),
            SendError::Encode { record, .. } => ("Encode", &record.topic),
            SendError::InvalidRecord { record, .. } => ("InvalidRecord", &record.topic),
        };
        write!(f, "SendError::{kind} {{ topic: {topic:?}, message: \"{self}\" }}")
    }
}

impl<K, V> std::error::Error for SendError<K, V> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SendError::Encode { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

/// Why a [`SyncProducer`](crate::SyncProducer) send failed: refused before it was queued
/// (the record is given back), or not delivered.
pub enum SyncSendError<K, V> {
    /// Returned when the record was refused before it was queued; nothing was sent.
    Send(SendError<K, V>),
    /// Returned when the record was sent but not delivered.
    Delivery(DeliveryError),
}

impl<K, V> fmt::Display for SyncSendError<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncSendError::Send(e) => fmt::Display::fmt(e, f),
            SyncSendError::Delivery(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl<K, V> fmt::Debug for SyncSendError<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncSendError::Send(e) => f.debug_tuple("Send").field(e).finish(),
            SyncSendError::Delivery(e) => f.debug_tuple("Delivery").field(e).finish(),
        }
    }
}

impl<K, V> std::error::Error for SyncSendError<K, V> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SyncSendError::Send(e) => std::error::Error::source(e),
            SyncSendError::Delivery(e) => Some(&e.error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_carry_the_values() {
        let e = DeliveryError {
            topic: "t".into(),
            partition: Some(2),
            attempts: 4,
            error: Error::Broker { broker: 1, code: ErrorCode::NotLeaderForPartition },
            key: None,
            value: None,
        };
        assert_eq!(e.to_string(), "record for t/2 not delivered after 4 attempt(s)");
        assert_eq!(
            std::error::Error::source(&e).unwrap().to_string(),
            format!("broker 1 answered {}", ErrorCode::NotLeaderForPartition)
        );
        assert_eq!(e.error.code(), Some(ErrorCode::NotLeaderForPartition));
        assert_eq!(
            Error::Closed { in_flight: true }.to_string(),
            "producer closed before the record was delivered (its request was in flight: the broker may have stored it)"
        );
        let s: SendError<(), &str> =
            SendError::QueueFull { record: Record::new("t", "v"), capacity: 10, waited: Duration::ZERO };
        assert_eq!(
            s.to_string(),
            "queue full (10 records, queue.buffering.max.messages) after waiting 0ns; record for t not sent"
        );
        assert!(s.is_queue_full());
        assert_eq!(s.into_record().value, "v");
    }

    #[test]
    fn errors_are_send_sync_and_static() {
        fn assert<T: Send + Sync + 'static>() {}
        assert::<Error>();
        assert::<DeliveryError>();
        assert::<SendError<String, Bytes>>();
    }
}

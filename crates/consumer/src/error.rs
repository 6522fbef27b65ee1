//! The crate's [`Error`].

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the high-level consumer can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Returned when the configuration is invalid.
    #[error("invalid consumer configuration")]
    Config(#[from] crate::config::ConfigError),
    /// Returned when a ZooKeeper operation fails.
    #[error("zookeeper: {context}")]
    Zk {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: gregor_zk::Error,
    },
    /// Returned when a broker request fails.
    #[error("broker request: {context}")]
    Net {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: gregor_net::Error,
    },
    /// Returned when a broker answers with an error code.
    #[error("{context}: broker error {code}")]
    Broker {
        /// What was being done.
        context: String,
        /// The code.
        code: gregor_protocol::ErrorCode,
    },
    /// Returned (as a stream item) when a fetched message set cannot be decoded, e.g. a message
    /// larger than `fetch.message.max.bytes` (the source is then
    /// [`gregor_protocol::Error::MessageLargerThanFetch`]). As in Kafka 0.8.2 the partition
    /// stays stuck at that offset — nothing is skipped or committed past it — and the error
    /// comes again each time the partition is fetched (`refresh.leader.backoff.ms` after the
    /// app has taken the previous one), while the other partitions keep
    /// flowing. It moves on when a connector with a larger `fetch.message.max.bytes` reads it,
    /// or when the message is gone from the log (offset out of range: `auto.offset.reset`).
    #[error(
        "fetching {topic}/{partition} at offset {offset} (raise fetch.message.max.bytes if the message is larger)"
    )]
    Fetch {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The fetch offset.
        offset: i64,
        /// The codec's error.
        #[source]
        source: gregor_protocol::Error,
    },
    /// Returned (as a stream item) when a rebalance gave up after `rebalance.max.retries`
    /// attempts. The watches stay armed: the next change of the group retries.
    #[error("rebalance of group {group} failed after {attempts} attempts: {reason}")]
    RebalanceFailed {
        /// The group.
        group: String,
        /// Attempts made.
        attempts: u32,
        /// The last reason.
        reason: String,
    },
    /// Returned by a stream's `next` when nothing arrived within `consumer.timeout.ms`.
    #[error("no message within consumer.timeout.ms ({timeout_ms} ms)")]
    ConsumerTimeout {
        /// The timeout.
        timeout_ms: u128,
    },
    /// Returned when a message cannot be decoded by the stream's decoder.
    #[error("decoding {topic}/{partition} at offset {offset}")]
    Decode {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The offset.
        offset: i64,
        /// The decoder's error.
        #[source]
        source: gregor_serde::Error,
    },
    /// Returned when message streams were already created on this connector (Kafka allows
    /// one call per connector).
    #[error("message streams were already created on this connector")]
    StreamsAlreadyCreated,
    /// Returned after `shutdown()`.
    #[error("the consumer connector is shut down")]
    Shutdown,
    /// Returned when the subscription is invalid (no topic, zero streams, a bad filter).
    #[error("invalid subscription: {0}")]
    InvalidSubscription(String),
}

pub(crate) fn zk(context: impl Into<String>) -> impl FnOnce(gregor_zk::Error) -> Error {
    let context = context.into();
    move |source| Error::Zk { context, source }
}

pub(crate) fn net(context: impl Into<String>) -> impl FnOnce(gregor_net::Error) -> Error {
    let context = context.into();
    move |source| Error::Net { context, source }
}

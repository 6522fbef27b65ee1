//! Kafka 0.8.2's ZooKeeper layout and a ZooKeeper client with watches as streams.
//!
//! Three parts:
//!
//! - [`paths`]: the znode paths Kafka 0.8.2 reads and writes (`/brokers/ids/N`,
//!   `/brokers/topics/T/partitions/P/state`, `/consumers/G/offsets/T/P`, ...) and Kafka's topic
//!   name rules. Pure.
//! - [`payloads`]: what those znodes hold, byte for byte as Kafka writes it (JSON with Kafka's
//!   field order, decimal offsets and epochs). Pure.
//! - [`ZkClient`]: an async ZooKeeper client on top of
//!   [zookeeper-async](https://docs.rs/zookeeper-async/5.0.0): `connect` (with Kafka's chroot
//!   handling), create/get/set/delete with `Option` for "no such node", recursive
//!   [`create_all`](ZkClient::create_all)/[`delete_all`](ZkClient::delete_all), and
//!   [`watch_children`](ZkClient::watch_children)/[`watch_data`](ZkClient::watch_data): streams
//!   of the current value ([`futures_core::Stream`]s) that re-arm ZooKeeper's one-shot watches
//!   for you and never miss a change. [`session_events`](ZkClient::session_events) reports disconnection and session
//!   expiry, which the consumer uses to re-register and rebalance as Kafka does.
//!
//! ```text
//!   paths::broker(1) ──► "/brokers/ids/1" ─┐
//!                                           ├─► ZkClient::create(path, data, Ephemeral)
//!   BrokerRegistration::new(..).to_json() ──┘
//!
//!   ZkClient::watch_children("/brokers/ids") ──► Watch: Some([..]), Some([..]), ..
//! ```
//!
//! ```no_run
//! use std::time::Duration;
//! use gregor_zk::{paths, payloads::BrokerRegistration, CreateMode, ZkClient};
//!
//! # async fn demo() -> gregor_zk::Result<()> {
//! // The chroot (/kafka) is created if missing, as a Kafka 0.8.2 broker does.
//! let zk = ZkClient::connect("127.0.0.1:2181/kafka", Duration::from_secs(6)).await?;
//!
//! let me = BrokerRegistration::new("127.0.0.1", 9092, 1_427_000_000_000);
//! zk.create_all(&paths::broker(1), &me.to_json(), CreateMode::Ephemeral).await?;
//!
//! let mut brokers = zk.watch_children(paths::BROKER_IDS);
//! while let Some(ids) = brokers.next().await {
//!     println!("live brokers: {:?}", ids?);
//! }
//! zk.close().await?;
//! # Ok(())
//! # }
//! ```

use std::borrow::Cow;

pub mod paths;
pub mod payloads;

mod client;

pub use client::{validate_connect_string, CreateMode, SessionEvent, Stat, Watch, ZkClient, MIN_SESSION_TIMEOUT};

/// zookeeper-async's error code, carried by [`Error::Zk`] for the codes without a variant of
/// their own.
pub use zookeeper_async::ZkError;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Returned when an operation needs a znode that does not exist (`set`, a versioned
    /// `delete`, `create` under a missing parent).
    #[error("znode {path} does not exist")]
    NoNode {
        /// The missing znode (for `create`, the path being created).
        path: String,
    },

    /// Returned when `create` finds the znode already there.
    #[error("znode {path} already exists")]
    NodeExists {
        /// The existing znode.
        path: String,
    },

    /// Returned when a conditional `set` or `delete` finds another version of the znode: someone
    /// else changed it since it was read.
    #[error("znode {path} is not at the expected version: it changed since it was read")]
    BadVersion {
        /// The znode.
        path: String,
    },

    /// Returned when `delete` finds children under the znode (use `delete_all`).
    #[error("znode {path} has children")]
    NotEmpty {
        /// The znode.
        path: String,
    },

    /// Returned when the ZooKeeper session expired: its ephemeral znodes and watches are gone.
    /// The client itself carries on with a new session (see [`SessionEvent::Expired`]); the
    /// owner must recreate its ephemeral znodes and watches, as Kafka does.
    #[error("zookeeper session expired: its ephemeral znodes and watches are gone")]
    SessionExpired,

    /// Returned when the connection to ZooKeeper was lost while the request was in flight: it
    /// may or may not have been applied. The client reconnects by itself.
    #[error("connection to zookeeper lost: the request may or may not have been applied")]
    ConnectionLoss,

    /// Returned when connecting, or an operation, took longer than the session timeout. For an
    /// operation the outcome is unknown, as with [`Error::ConnectionLoss`].
    #[error("timed out {what}")]
    Timeout {
        /// What timed out, with the values involved.
        what: String,
    },

    /// Returned when a `zookeeper.connect` string cannot be parsed.
    #[error("invalid zookeeper.connect {connect:?}: {reason}")]
    InvalidConnectString {
        /// The connect string as given.
        connect: String,
        /// What is wrong with it.
        reason: Cow<'static, str>,
    },

    /// Returned when a host of the connect string cannot be resolved.
    #[error("cannot resolve zookeeper host {host:?}")]
    Resolve {
        /// The `host:port` that failed.
        host: String,
        /// The resolver's error.
        #[source]
        source: std::io::Error,
    },

    /// Returned when the session timeout is below [`MIN_SESSION_TIMEOUT`], which
    /// zookeeper-async cannot keep a connection with.
    #[error(
        "session timeout of {timeout_ms} ms is below the {min_ms} ms minimum: zookeeper-async \
         rounds its read timeout (2/3 of it) down to whole seconds, so a shorter one makes it \
         reconnect in a loop"
    )]
    InvalidSessionTimeout {
        /// The session timeout asked for, in milliseconds.
        timeout_ms: u128,
        /// [`MIN_SESSION_TIMEOUT`] in milliseconds.
        min_ms: u128,
    },

    /// Returned when a znode path is malformed (see [`paths::validate_path`]).
    #[error("invalid znode path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// The rule it breaks.
        reason: &'static str,
    },

    /// Returned when a znode's data is not the JSON Kafka writes there; the source is serde's
    /// message (line, column and what was expected).
    #[error("invalid {what} JSON")]
    Json {
        /// The znode type, with its path pattern.
        what: &'static str,
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },

    /// Returned when a znode that holds a plain decimal number (an offset, the controller
    /// epoch) holds something else.
    #[error("invalid {what} {text:?}: expected a decimal integer")]
    InvalidNumber {
        /// The znode type, with its path pattern.
        what: &'static str,
        /// The data found (lossy UTF-8).
        text: String,
    },

    /// Returned when a topic name breaks Kafka 0.8.2's rules (see
    /// [`paths::validate_topic_name`]).
    #[error("invalid topic name {topic:?}: {reason}")]
    InvalidTopic {
        /// The name as given.
        topic: String,
        /// The rule it breaks.
        reason: &'static str,
    },

    /// Returned when the client was closed with [`ZkClient::close`].
    #[error("zookeeper client is closed")]
    Closed,

    /// Returned when ZooKeeper answers with an error code that has no variant of its own
    /// (`NoAuth`, `NoChildrenForEphemerals`, `BadArguments`, ...).
    #[error("zookeeper returned {code:?} for {path}")]
    Zk {
        /// The znode of the request.
        path: String,
        /// ZooKeeper's error code.
        code: ZkError,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_are_lowercase_with_values() {
        let cases: Vec<(Error, &str)> = vec![
            (Error::NoNode { path: "/brokers/ids/1".into() }, "znode /brokers/ids/1 does not exist"),
            (Error::NodeExists { path: "/controller".into() }, "znode /controller already exists"),
            (
                Error::BadVersion { path: "/a".into() },
                "znode /a is not at the expected version: it changed since it was read",
            ),
            (Error::NotEmpty { path: "/a".into() }, "znode /a has children"),
            (Error::Timeout { what: "connecting to 127.0.0.1:1".into() }, "timed out connecting to 127.0.0.1:1"),
            (
                Error::InvalidConnectString { connect: "".into(), reason: "no host".into() },
                "invalid zookeeper.connect \"\": no host",
            ),
            (
                Error::InvalidSessionTimeout { timeout_ms: 1000, min_ms: 1500 },
                "session timeout of 1000 ms is below the 1500 ms minimum: zookeeper-async rounds \
                 its read timeout (2/3 of it) down to whole seconds, so a shorter one makes it \
                 reconnect in a loop",
            ),
            (
                Error::Zk { path: "/a/b".into(), code: ZkError::NoChildrenForEphemerals },
                "zookeeper returned NoChildrenForEphemerals for /a/b",
            ),
            (Error::Closed, "zookeeper client is closed"),
        ];
        for (err, msg) in cases {
            assert_eq!(err.to_string(), msg);
            let first = msg.chars().next().unwrap();
            assert!(!first.is_uppercase() && !msg.ends_with('.'), "{msg}");
        }
    }

    #[test]
    fn public_types_are_send_and_sync() {
        fn check<T: Send + Sync + 'static>() {}
        check::<Error>();
        check::<ZkClient>();
        check::<Stat>();
        check::<SessionEvent>();
        check::<Watch<Option<Vec<String>>>>();
    }
}

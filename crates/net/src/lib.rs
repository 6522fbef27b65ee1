//! # gregor-net
//!
//! Kafka 0.8.2 networking for gregor, on tokio: pipelined broker connections, a connection
//! pool, a metadata cache seeded from `metadata.broker.list`, and backoff. The bytes are
//! [`gregor_protocol`]'s; this crate only moves them and keeps time.
//!
//! ```text
//!   MetadataCache ──refresh()──► Pool::get_addr(bootstrap / known broker) ──► Metadata v0
//!        │  pure MetadataSnapshot (brokers, topics, leaders, staleness)
//!        └─ broker addresses ──► Pool ──get(broker id)──► BrokerConnection (one per broker)
//!                                                             │ writer task ─► socket
//!                            request()/send() ── correlation ids ── reader task ◄─┘
//! ```
//!
//! * [`BrokerConnection`]: one socket, many requests in flight, responses matched by
//!   correlation id; on any failure it is *poisoned* and every waiter fails at once.
//! * [`Pool`]: one shared connection per broker, lazily opened, replaced when poisoned;
//!   different brokers connect in parallel.
//! * [`MetadataCache`] / [`MetadataSnapshot`]: the cluster as the client knows it, with
//!   0.8.2's quirks (zero brokers, LeaderNotAvailable for auto-created topics,
//!   ReplicaNotAvailable with a valid leader).
//! * [`Backoff`]: exponential, capped, jittered, pure.
//! * [`classify_fetch`]: what one partition of a Fetch response means ([`FetchClass`]: data,
//!   a message too large, corrupt, out of range, retry after a leader lookup, fail), pure;
//!   shared by both consumers.
//! * [`ConnectionConfig`], [`MetadataConfig`]: Kafka's property names and defaults.
//! * [`Security`]: `security.protocol` and the `ssl.*` / `sasl.*` properties, read once for
//!   every client ([`SecurityProperties`] beside a client's own), into TLS settings
//!   ([`TlsConfig`]) and SASL credentials ([`SaslConfig`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), gregor_net::Error> {
//! use gregor_net::{ConnectionConfig, MetadataCache, Pool};
//! use gregor_protocol::messages::{FetchPartition, FetchRequest, FetchTopic};
//!
//! let pool = Pool::new(ConnectionConfig::builder().client_id("app").build()?);
//! let cache = MetadataCache::new("127.0.0.1:9092,127.0.0.1:9093", pool)?;
//! cache.refresh(&["events".to_owned()]).await?;
//! let leader = cache.leader_connection("events", 0).await?;
//! let fetch = FetchRequest {
//!     replica_id: -1,
//!     max_wait_time: 100,
//!     min_bytes: 1,
//!     topics: vec![FetchTopic::new("events", vec![FetchPartition::new(0, 0, 1 << 20)])],
//!     ..Default::default()
//! };
//! let response = leader.request(0, &fetch).await?;
//! # drop(response);
//! # Ok(()) }
//! ```
//!
//! Tracing: spans `connection{broker_id, addr}` (the reader and writer tasks) and
//! `request{api_key, version, correlation_id}`; `debug` logs one line per request, `warn` a
//! poisoned connection or a failed metadata round, `trace` the bytes. No subscriber is
//! installed.

mod backoff;
pub mod config;
mod connection;
mod error;
mod fetch;
mod metadata;
mod pool;
pub mod sasl;
pub mod security;
pub mod tls;
pub mod versions;

pub use backoff::{Backoff, DEFAULT_JITTER};
pub use config::{ConfigError, ConnectionConfig, ConnectionConfigBuilder, MetadataConfig, MetadataConfigBuilder};
pub use connection::{BrokerConnection, CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION};
pub use error::{Error, PoisonReason, Result, BROKER_CLOSED_HINT};
pub use fetch::{classify_fetch, classify_fetch_at, classify_fetch_lazy, FetchClass, FetchRead, IsolationLevel};
pub use metadata::{parse_broker_list, Broker, MetadataCache, MetadataSnapshot, PartitionInfo, TopicInfo};
pub use pool::Pool;
pub use sasl::{SaslConfig, SaslMechanism, Secret};
pub use security::{Security, SecurityProperties, SecurityProtocol, SECURITY_PROPERTIES};
pub use tls::{TlsConfig, TlsConfigBuilder};
pub use versions::{
    client_versions, BrokerVersionFallback, BrokerVersions, NoCommonVersion, VersionSource, CLIENT_CAPS,
};

/// A broker's id (`broker.id`), as the protocol carries it (`int32`).
pub type BrokerId = i32;

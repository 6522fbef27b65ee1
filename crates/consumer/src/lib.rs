//! gregor-consumer: Kafka 0.8.2's high-level consumer, coordinated through ZooKeeper and
//! compatible with Kafka's own `ZookeeperConsumerConnector` (same znodes, same assignment
//! algorithms), so Java 0.8.2 consumers and gregor consumers can share one group.
//!
//! - [`ConsumerConfig`]: the 0.8.2 properties and defaults.
//! - [`ConsumerConnector`]: registration, rebalance, fetchers, offsets; hands out
//!   [`KafkaStream`]s (async `next().await`, or a blocking `into_iter()`).
//! - [`assignment`]: the pure rebalance planner (range, roundrobin).
//! - [`TopicFilter`]: whitelist / blacklist subscriptions (Java regexes, `,` as `|`).
//!
//! Fetching: one task per leader broker, all concurrent (`num.consumer.fetchers` is accepted
//! for compatibility but the broker count decides), a supervisor finding new leaders among the
//! brokers registered in ZooKeeper at that moment. Prefetch memory is bounded by
//! `(streams x queued.max.message.chunks + owned partitions) x fetch.message.max.bytes` (see
//! [`ConsumerConnector::buffered_bytes`]); [`ConsumerConnector::lag`] stays current while the
//! app falls behind; a message larger than `fetch.message.max.bytes` holds its partition (only)
//! with a repeated [`Error::Fetch`].

pub mod assignment;
mod brokers;
pub mod config;
mod connector;
mod error;
mod fetcher;
pub mod filter;
mod offsets;
mod rebalance;
mod registry;
mod stream;

pub use assignment::{AssignmentStrategy, ThreadId};
pub use config::{AutoOffsetReset, ConfigError, ConsumerConfig, ConsumerConfigBuilder, OffsetsStorage};
pub use connector::{make_consumer_id, ConnectorStats, ConsumerConnector, PartitionLag};
pub use error::{Error, Result};
pub use filter::TopicFilter;
pub use stream::{BlockingIter, KafkaStream, MessageAndMetadata};

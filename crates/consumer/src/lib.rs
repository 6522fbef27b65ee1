//! gregor-consumer: Kafka 0.8.2's high-level consumer, coordinated through ZooKeeper and
//! compatible with Kafka's own `ZookeeperConsumerConnector` (same znodes, same assignment
//! algorithms), so Java 0.8.2 consumers and gregor consumers can share one group.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use futures::StreamExt;
//! use gregor_consumer::{ConsumerConfig, ConsumerConnector};
//! use gregor_serde::StringDecoder;
//!
//! let config = ConsumerConfig::builder().group_id("billing").zookeeper_connect("127.0.0.1:2181").build()?;
//! let connector = ConsumerConnector::new(config).await?;
//! let streams = connector.subscribe(["orders", "refunds"]).decoder(StringDecoder::new()).start().await?;
//! // one stream per topic here: merged into one (or hand each to a task of its own)
//! let mut messages = futures::stream::select_all(streams);
//! while let Some(message) = messages.next().await {
//!     let message = message?;
//!     println!("{}/{}@{}: {:?}", message.topic, message.partition, message.offset, message.value);
//! }
//! connector.shutdown().await?; // commits (auto.commit.enable), leaves the group
//! # Ok(()) }
//! ```
//!
//! - [`ConsumerConfig`]: the 0.8.2 properties and defaults.
//! - [`ConsumerConnector`]: registration, rebalance, fetchers, offsets.
//!   [`subscribe`](ConsumerConnector::subscribe) /
//!   [`subscribe_filter`](ConsumerConnector::subscribe_filter) return a [`Subscribe`] builder
//!   (streams, decoders) whose `start()` hands out the [`KafkaStream`]s. Code ported from Java
//!   0.8 can keep its shapes: [`create_message_streams`](ConsumerConnector::create_message_streams)
//!   (a map of topic counts, `Arc<dyn Decoder>`) and
//!   [`create_message_streams_by_filter`](ConsumerConnector::create_message_streams_by_filter).
//! - [`KafkaStream`]: a [`futures_core::Stream`] of [`MessageAndMetadata`] (so `StreamExt`
//!   from futures or tokio-stream works), also `next().await` without a trait in scope, or a
//!   blocking `into_iter()`.
//! - [`assignment`]: the pure rebalance planner (range, roundrobin).
//! - [`TopicFilter`]: whitelist / blacklist subscriptions (Java regexes, `,` as `|`).
//!
//! Rebalancing: on every change of the group's members, of the topics (filter subscriptions)
//! or of a subscribed topic's partitions, the connector stops fetching, commits, releases its
//! partitions, reads the group, plans (pure), claims its part all or nothing and fetches on
//! from the stored offsets (`rebalance.max.retries` attempts, `rebalance.backoff.ms` apart; a
//! span `rebalance{group, consumer_id, attempt}` covers each).
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
mod subscribe;

pub use assignment::{AssignmentStrategy, ThreadId};
pub use config::{AutoOffsetReset, ConfigError, ConsumerConfig, ConsumerConfigBuilder, OffsetsStorage};
pub use connector::{make_consumer_id, ConnectorStats, ConsumerConnector, PartitionLag};
pub use error::{Error, Result};
pub use filter::TopicFilter;
/// A topic and partition (Kafka's `TopicAndPartition`): the key of
/// [`ConsumerConnector::owned_partitions`] and of the planner's [`assignment::Assignment`].
pub use gregor_protocol::TopicPartition;
pub use stream::{BlockingIter, KafkaStream, MessageAndMetadata};
pub use subscribe::Subscribe;

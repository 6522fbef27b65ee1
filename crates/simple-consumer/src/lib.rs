//! # gregor-simple-consumer
//!
//! Kafka 0.8.2's simple consumer for gregor: read partitions at offsets you choose, straight
//! from their leaders — no consumer group, no ZooKeeper, no offset storage. Build on it when
//! you track offsets yourself (in your own store, exactly-once pipelines, tools).
//!
//! * [`SimpleConsumer`]: [`fetch`](SimpleConsumer::fetch) many partitions of many topics in
//!   one call (one Fetch request per leader, all leaders at once, a result per partition),
//!   [`offsets_before`](SimpleConsumer::offsets_before) (`getOffsetsBefore`: latest, earliest,
//!   or a time), [`leader`](SimpleConsumer::leader), [`partitions`](SimpleConsumer::partitions).
//! * [`MessageStream`]: one partition in order from an offset, long polling, stoppable; a
//!   [`futures_core::Stream`], so `StreamExt` (futures, tokio-stream) works on it.
//! * [`SimpleConsumerConfig`]: Kafka 0.8.2's consumer properties (`fetch.message.max.bytes`,
//!   `fetch.wait.max.ms`, `refresh.leader.backoff.ms`, ...) and their defaults.
//! * [`Error`]: per partition, typed: [`Error::OffsetOutOfRange`] (with the valid range),
//!   [`Error::MessageSizeTooLarge`] (with the fetch size needed — never a silent empty
//!   result), leader errors after their retries.
//!
//! ```text
//!  fetch([(t,p,offset)..]) ─► metadata (gregor-net MetadataCache) ─► group by leader
//!        ┌───────────────────────────────────────────────────────────────┘
//!        ├─► broker 0: Fetch v0 [t/0, u/2] ─┐
//!        ├─► broker 1: Fetch v0 [t/1]      ─┼─► decode (CRC, wrappers expanded, below-offset
//!        └─► broker 2: Fetch v0 [u/0, u/1] ─┘   and partial trailing messages dropped)
//!   leader errors (6, 3, 5, unreachable) ─► backoff ─► refresh metadata ─► retry (bounded)
//! ```
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use gregor_simple_consumer::{SimpleConsumer, SimpleConsumerConfig, Error};
//!
//! let config = SimpleConsumerConfig::builder()
//!     .metadata_broker_list("127.0.0.1:9092,127.0.0.1:9093")
//!     .client_id("reader")
//!     .build()?;
//! let consumer = SimpleConsumer::new(config)?;
//!
//! // where to start, asked of the leader
//! let start = consumer.earliest_offset("events", 0).await?;
//!
//! // many partitions in one call
//! let batch = consumer.fetch(&[("events", 0, start), ("events", 1, 0), ("audit", 0, 0)]).await?;
//! for (topic, partition, result) in batch.iter() {
//!     match result {
//!         Ok(data) => println!("{topic}/{partition}: {} messages, lag {}", data.messages.len(), data.lag()),
//!         Err(Error::OffsetOutOfRange { earliest, .. }) => println!("{topic}/{partition}: reset to {earliest:?}"),
//!         Err(e) => eprintln!("{topic}/{partition}: {e}"),
//!     }
//! }
//!
//! // or one partition as a stream
//! let mut stream = consumer.stream("events", 0, start);
//! while let Some(message) = stream.next().await {
//!     let message = message?;
//!     println!("{}: {:?}", message.offset, message.value);
//!     if message.offset >= start + 10 {
//!         stream.stop();
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! Tracing: `warn` for each leader error that leads to a retry and for failed metadata
//! refreshes, `debug` for fetches grown to fit a large message; the request spans are
//! gregor-net's. No subscriber is installed.

pub mod config;
mod consumer;
mod driver;
mod error;
mod fetch;
mod offsets;
mod stream;

pub use config::{ConfigError, SimpleConsumerConfig, SimpleConsumerConfigBuilder};
pub use consumer::SimpleConsumer;
pub use error::{Error, Result};
pub use fetch::{FetchBatch, FetchedMessage, PartitionData};
pub use gregor_net::BrokerId;
pub use gregor_protocol::messages::{EARLIEST_TIME, LATEST_TIME};
pub use stream::{MessageStream, StopHandle, MIN_EMPTY_POLL_INTERVAL};

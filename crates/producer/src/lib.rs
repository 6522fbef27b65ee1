//! # gregor-producer
//!
//! Kafka 0.8.2 producers for gregor: [`AsyncProducer`] (`producer.type=async`: a bounded
//! queue, batching, a delivery result for every record) and [`SyncProducer`] (`send` blocks
//! until acknowledged), configured with Kafka 0.8.2's own property names and defaults
//! ([`ProducerConfig`]).
//!
//! ```text
//!  send(Record) ── encode key/value ── queue place (queue.buffering.max.messages,
//!       │                              queue.enqueue.timeout.ms: block / fail / wait)
//!       ▼
//!  background task ── partitioner (murmur2 / 0.8 sticky null key / round robin / custom)
//!       │                 └─ waits for metadata (MetadataCache, refreshed on errors and
//!       │                    every topic.metadata.refresh.interval.ms)
//!       ├─ Accumulator (pure, fed `now`): per-partition queues, ready by batch.num.messages,
//!       │     batch.size, queue.buffering.max.ms, a full queue, flush/close; retries at the front
//!       ├─ one Produce v0 request per broker in flight (brokers concurrently), each batch
//!       │     encoded once (compression.codec / compressed.topics)
//!       └─ outcome ─► delivery task (in order) ─► DeliveryFuture / callback / DeliveryHandler:
//!                     RecordMetadata { topic, partition, offset }
//!                     or DeliveryError { topic, partition, attempts, error, key, value }
//! ```
//!
//! * Every record accepted by `send` gets exactly one result — acknowledged, failed after the
//!   retries, or abandoned by [`AsyncProducer::close`] — through its [`DeliveryFuture`], its
//!   callback, or the [`DeliveryHandler`] it was sent with. (Kafka 0.8's async producer had
//!   no callbacks and dropped records silently when its queue was full; this one does
//!   neither.)
//! * Retries keep each partition's order: one batch per partition in flight, and a failed
//!   batch goes back to the front of its partition.
//! * `request.required.acks` defaults to **0**, as in Kafka 0.8.2: no response, unknown
//!   offsets, broker-side errors lost. Set 1 or -1 for delivery you can trust (see
//!   [`ProducerConfigBuilder::request_required_acks`]).
//! * Memory is bounded by `queue.buffering.max.messages` records (plus one encoded copy of
//!   each batch in flight), however fast the application sends.
//! * Throughput depends on where the sending task and the producer's task run: on a
//!   current-thread runtime (both on one thread) the benchmark's producer spent about 0.8 of
//!   the CPU per record it spent on the multi-thread runtime, where records cross between
//!   threads (`benchmarks/RESULTS.md`, gregor-ct vs gregor). An application that sends at very
//!   high rates gets the most from running its sending loop and the producer on the same
//!   current-thread runtime (the producer starts its task on the runtime it is created in).
//!   On the multi-thread runtime the benchmark's sending loop outruns the producer's task, so
//!   its queue of 100,000 records stays full, and glibc's per-thread malloc arenas add to that
//!   as the task moves between workers: client memory 43 MiB (1 partition) and 51 MiB
//!   (6 partitions), 36 and 39 MiB with `MALLOC_ARENA_MAX=1`.
//! * On a machine whose few cores the brokers share (a test box, a small VM), send from a task
//!   on the multi-thread runtime rather than from the thread that drives it (`block_on`, the
//!   body of `#[tokio::main]`): from there the sending loop is a third busy thread beside the
//!   runtime's two workers, and the brokers wait for a core. On 2 cores against the testkit's
//!   `kafka-0.8.2` profile, one partition with lz4, the benchmark's producer made about 8% more
//!   with its loop spawned as a task, `gregor perf produce` 14% more
//!   (`benchmarks/timing/session-27.md`); both now send from a task. Even so, each answer
//!   from a broker wakes both workers at once (the producer's task and the application
//!   refilling the queue), just when the broker wants a core to read the next request: one
//!   partition, acks=1, snappy, the same profile, 3% less than on a current-thread runtime
//!   (315 against 324 thousand records/s), and level with it when the client kept to a core
//!   of its own (`benchmarks/timing/session-32.md`). Where the cores are that few, the
//!   current-thread runtime is the better home for a producer.
//! * At the highest rates, make the [`Topic`] once and clone it into each record (its count
//!   changes on the sending thread only: a producer maps it to a small number of its own
//!   before the record leaves that thread, and results carry the producer's own copy of the
//!   name), and give results to one handler: [`AsyncProducer::send_with_static_handler`] (a
//!   handler that lives as long as the process) shares no reference count between the sending
//!   thread and the producer's tasks; [`AsyncProducer::send_with_handler`] raises and lowers
//!   its `Arc`'s.
//! * With compression, a partition's records that wait for their linger are compressed in
//!   chunks of about 16 KiB as they arrive, so little compression is left when the linger ends;
//!   the batch then travels as several wrappers, which the broker stores as one.
//! * The decisions live in pure code fed the time, tested with a fake clock: the
//!   accumulator (records in, ready batches out), the outcome of each batch (deliver, retry
//!   after `retry.backoff.ms`, fail; refresh the metadata first?) and the metadata refresh
//!   schedule. The background task only moves bytes and timers, and applies them.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use gregor_producer::{AsyncProducer, ProducerConfig, Record};
//! use gregor_serde::StringEncoder;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = ProducerConfig::from_properties([
//!     ("metadata.broker.list", "127.0.0.1:9092,127.0.0.1:9093"),
//!     ("request.required.acks", "-1"),
//!     ("queue.buffering.max.ms", "20"),
//!     ("compression.codec", "snappy"),
//! ])?;
//! let producer: AsyncProducer<String, String> =
//!     AsyncProducer::new(config, StringEncoder::new(), StringEncoder::new())?;
//!
//! // a future per record...
//! let delivery = producer.send(Record::new("events", "hello".to_owned()).with_key("user-7".to_owned())).await?;
//! let metadata = delivery.await?;
//! println!("stored at {}/{} offset {}", metadata.topic, metadata.partition, metadata.offset);
//!
//! // ...or a callback
//! producer
//!     .send_with_callback(Record::new("events", "world".to_owned()), |result| {
//!         if let Err(e) = result {
//!             eprintln!("lost: {e}");
//!         }
//!     })
//!     .await?;
//!
//! // ...or, at high rates, one handler for many records (nothing allocated per result)
//! let handler: std::sync::Arc<dyn gregor_producer::DeliveryHandler> =
//!     std::sync::Arc::new(|i: u64, result: gregor_producer::DeliveryResult| {
//!         if let Err(e) = result {
//!             eprintln!("record {i} lost: {e}");
//!         }
//!     });
//! for i in 0..1000u64 {
//!     producer.send_with_handler(Record::new("events", format!("event {i}")), &handler, i).await?;
//! }
//!
//! let report = producer.close(Duration::from_secs(5)).await;
//! for undelivered in &report.undelivered {
//!     eprintln!("not delivered: {undelivered} ({})", undelivered.error);
//! }
//! # Ok(()) }
//! ```
//!
//! Tracing: a `producer{client_id}` span around the background task; `debug` for each
//! Produce request and metadata refresh, `warn` for retries, leader changes and close
//! timeouts. No subscriber is installed.

mod accumulator;
pub mod audit;
mod blocks;
mod bounds;
mod buffers;
pub mod config;
mod crc;
mod delivery;
mod engine;
mod error;
mod growth;
mod held;
mod inbox;
mod log;
mod message;
mod observer;
mod outcome;
pub mod partitioner;
mod producer;
mod record;
mod refresh;
mod sync;
mod topic;

pub use audit::AuditConfig;
pub use config::{
    ConfigError, EnqueueTimeout, ProducerConfig, ProducerConfigBuilder, ProducerType, RESPONSE_TIMEOUT_MARGIN,
};
pub use delivery::{Callback, CloseReport, DeliveryFuture, DeliveryHandler, DeliveryResult, FlushReport};
pub use error::{DeliveryError, Error, Result, SendError, SyncSendError};
pub use partitioner::{murmur2, murmur2_partition, Partitioner, PartitionerKind};
pub use producer::AsyncProducer;
pub use record::{Header, Record, RecordMetadata};
pub use sync::SyncProducer;
pub use topic::Topic;

//! [`AsyncProducer`]: a bounded queue in front of a background task that batches, sends and
//! retries.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gregor_net::{ConnectionConfig, MetadataCache, MetadataConfig, Pool};
use gregor_protocol::Message;
use gregor_serde::Encoder;
use tokio::sync::{oneshot, Semaphore};
use tokio::time::Instant;
use tracing::Instrument;

use crate::audit::{AuditConfig, Auditor};
use crate::bounds::{held_bytes, QueueBounds};
use crate::config::{EnqueueTimeout, ProducerConfig};
use crate::delivery::{Callback, CloseReport, DeliveryFuture, DeliveryHandler, DeliveryResult, FlushReport, Slot};
use crate::engine::Engine;
use crate::error::{DeliveryError, Error, SendError};
use crate::inbox::{inbox, Command, InboxSender, Refused};
use crate::observer::Observer;
use crate::record::{Record, RecordExtra};
use crate::topic::TopicNames;

/// How long [`AsyncProducer::close`] waits past its bound for the background task's report
/// before it gives up on it (the task never blocks, so this is only a safety net).
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The application's side, shared by every clone of a producer.
struct Shared {
    config: ProducerConfig,
    inbox: InboxSender,
    permits: Arc<QueueBounds>,
    closed: AtomicBool,
}

/// The asynchronous producer (`producer.type=async`): `send` queues a record and returns at
/// once with a [`DeliveryFuture`]; a background task batches records per partition, sends a
/// Produce request per broker, retries in order, and resolves every record's future (or calls
/// its callback or handler) exactly once.
///
/// * **Queue** — `queue.buffering.max.messages` is a hard bound on the records the producer
///   holds (queued, in flight, waiting to retry); when it is reached `send` waits or fails
///   as `queue.enqueue.timeout.ms` says ([`EnqueueTimeout`]), and everything queued is sent at
///   once.
/// * **Batching** — a partition's records go when `batch.num.messages` wait for its broker, or
///   its batch holds `batch.size` bytes (when set), or its oldest has waited
///   `queue.buffering.max.ms`, or on [`flush`](AsyncProducer::flush) /
///   [`close`](AsyncProducer::close). One Produce request per broker is in flight at a time
///   (holding up to `batch.num.messages` records, any number of partitions, each partition's
///   batch at most `batch.size` bytes); different brokers are sent to concurrently.
/// * **Order** — at most one batch per partition is in flight, and a failed batch is retried
///   before anything later of its partition, so acknowledged records of a partition are in
///   the log in send order.
/// * **Retries** — NotLeaderForPartition, UnknownTopicOrPartition, LeaderNotAvailable and
///   other retriable codes, and connection failures, refresh the metadata and retry after
///   `retry.backoff.ms`, up to `message.send.max.retries` times; 7 RequestTimedOut is retried
///   too, but the leader kept the records, so the retry may store them twice. 10
///   MessageSizeTooLarge, 2 InvalidMessage and other final codes fail at once. With
///   `delivery.timeout.ms`, a record that waited that long without being in flight, or whose
///   request fails after that time, fails with [`Error::DeliveryTimeout`] instead of waiting
///   or being retried.
/// * **Encoding** — `send` encodes the key and value and then the whole message (its CRC
///   included) on the caller's task, into a buffer many records share, and drops the
///   application's key and value there, on the thread that made them; the background task
///   keeps queued records in per-partition blocks and builds each batch's message set
///   (compressed per `compression.codec` / `compressed.topics`) from them once: a retry
///   reuses the bytes.
///
/// Cheap to clone: clones share the queue and the background task. Dropping the last clone
/// never blocks: the task sends what is queued and stops once every record has its result.
/// [`close`](AsyncProducer::close) is the orderly way to stop.
pub struct AsyncProducer<K, V> {
    shared: Arc<Shared>,
    key_encoder: Arc<dyn Encoder<K>>,
    value_encoder: Arc<dyn Encoder<V>>,
}

impl<K, V> Clone for AsyncProducer<K, V> {
    fn clone(&self) -> Self {
        AsyncProducer {
            shared: self.shared.clone(),
            key_encoder: self.key_encoder.clone(),
            value_encoder: self.value_encoder.clone(),
        }
    }
}

impl<K, V> fmt::Debug for AsyncProducer<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncProducer")
            .field("client_id", &self.shared.config.client_id())
            .field("queued", &self.queued())
            .field("closed", &self.shared.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<K, V> AsyncProducer<K, V>
where
    K: Send + 'static,
    V: Send + 'static,
{
    /// A producer with `config`, encoding keys with `key_encoder` and values with
    /// `value_encoder`. Starts its background task on the current tokio runtime; connects
    /// lazily (the first record of a topic fetches its metadata).
    ///
    /// # Errors
    ///
    /// [`Error::NoRuntime`] outside a tokio runtime; [`Error::Config`] when the connection
    /// settings derived from `config` are invalid.
    pub fn new(
        config: ProducerConfig,
        key_encoder: impl Encoder<K> + 'static,
        value_encoder: impl Encoder<V> + 'static,
    ) -> Result<AsyncProducer<K, V>, Error> {
        AsyncProducer::start(config, None, key_encoder, value_encoder)
    }

    /// As [`AsyncProducer::new`], with audit on (see [`crate::audit`]): per topic and window,
    /// the records acknowledged (partition, offset ranges, fingerprints) and failed are
    /// published to `audit.topic_name()`.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for invalid audit settings ([`AuditConfig::validate`]), and the
    /// errors of [`AsyncProducer::new`].
    pub fn with_audit(
        config: ProducerConfig,
        audit: AuditConfig,
        key_encoder: impl Encoder<K> + 'static,
        value_encoder: impl Encoder<V> + 'static,
    ) -> Result<AsyncProducer<K, V>, Error> {
        AsyncProducer::start(config, Some(audit), key_encoder, value_encoder)
    }

    /// [`AsyncProducer::new`], with audit on when `audit` is given.
    pub(crate) fn start(
        config: ProducerConfig,
        audit: Option<AuditConfig>,
        key_encoder: impl Encoder<K> + 'static,
        value_encoder: impl Encoder<V> + 'static,
    ) -> Result<AsyncProducer<K, V>, Error> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        // the audit's settings are checked before anything starts
        let names = TopicNames::new();
        let observer = match audit {
            Some(audit) => Some(Box::new(Auditor::new(audit, &config, &names)?) as Box<dyn Observer>),
            None => None,
        };
        let connection = ConnectionConfig::builder()
            .client_id(config.client_id())
            .request_timeout(config.response_timeout())
            .send_buffer_bytes(Some(config.send_buffer_bytes()))
            .api_version_request(config.api_version_request())
            .broker_version_fallback(config.broker_version_fallback())
            .security(config.security())
            .build()
            .map_err(Error::Config)?;
        let metadata = MetadataConfig::builder()
            .refresh_interval(config.topic_metadata_refresh_interval().unwrap_or(Duration::MAX))
            .retry_backoff(config.retry_backoff())
            .retry_backoff_max(config.retry_backoff())
            // the producer retries refreshes itself, retry.backoff.ms apart
            .refresh_rounds(1)
            .build()
            .map_err(Error::Config)?;
        let cache = MetadataCache::with_config(config.metadata_broker_list(), Pool::new(connection), metadata)
            .map_err(|e| match e {
                gregor_net::Error::Config(c) => Error::Config(c),
                other => Error::Internal { reason: other.to_string() },
            })?;
        let permits =
            Arc::new(QueueBounds::new(config.queue_buffering_max_messages(), config.queue_buffering_max_bytes()));
        let (tx, rx) = inbox(names.clone());
        let span = tracing::debug_span!("producer", client_id = %config.client_id());
        let engine = Engine::new(config.clone(), cache, rx, permits.clone(), observer, names);
        handle.spawn(engine.run().instrument(span));
        Ok(AsyncProducer {
            shared: Arc::new(Shared { config, inbox: tx, permits, closed: AtomicBool::new(false) }),
            key_encoder: Arc::new(key_encoder),
            value_encoder: Arc::new(value_encoder),
        })
    }

    /// Queues `record` and returns a future of its delivery result.
    ///
    /// Encodes the key, takes a place in the queue, then encodes the value (taking it, so a
    /// `Bytes` or `Vec<u8>` value is handed over without a copy): with
    /// `queue.enqueue.timeout.ms` -1 it waits for one, with 0 it fails at once when the queue
    /// is full, with more it waits that long. Once this returns `Ok`, the record *will* get
    /// exactly one result, whether or not the future is awaited. Unless the timeout is 0, a
    /// send may also wait while the background task is behind (8,192 records it has not taken
    /// yet): records it has taken are held in fewer bytes.
    ///
    /// Cancel safety: dropping this future before it completes leaves the record unqueued
    /// (and it is gone: the record was moved in).
    ///
    /// # Errors
    ///
    /// [`SendError::QueueFull`], [`SendError::Closed`], [`SendError::Encode`],
    /// [`SendError::InvalidRecord`]; each gives the record back.
    pub async fn send(&self, record: Record<K, V>) -> Result<DeliveryFuture, SendError<K, V>> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(record, Slot::Future(tx)).await?;
        Ok(DeliveryFuture { rx })
    }

    /// Queues `record`; `callback` gets its delivery result, on the producer's delivery task
    /// (results come one after another, in each partition's offset order: keep it short, as
    /// the results after it wait for it; a panic in it is caught and logged).
    ///
    /// Cancel safety: as [`AsyncProducer::send`]; a record that was not queued never calls
    /// its callback.
    ///
    /// # Errors
    ///
    /// As [`AsyncProducer::send`]; the callback is not called then.
    pub async fn send_with_callback<F>(&self, record: Record<K, V>, callback: F) -> Result<(), SendError<K, V>>
    where
        F: FnOnce(DeliveryResult) + Send + 'static,
    {
        let callback: Callback = Box::new(callback);
        self.enqueue(record, Slot::callback(callback)).await
    }

    /// Queues `record`; `handler` gets its delivery result with `opaque` (an index, a
    /// sequence number, whatever identifies the record to the application), on the producer's
    /// background task. One handler serves every record: a send allocates 24 bytes for its
    /// result (the handler's count and the opaque; a callback is boxed, a future allocates a
    /// channel). [`send_with_static_handler`](AsyncProducer::send_with_static_handler)
    /// allocates nothing.
    ///
    /// ```no_run
    /// # async fn run(producer: gregor_producer::AsyncProducer<(), String>) {
    /// use std::sync::Arc;
    /// use gregor_producer::{DeliveryHandler, DeliveryResult, Record};
    ///
    /// let handler: Arc<dyn DeliveryHandler> = Arc::new(|i: u64, result: DeliveryResult| {
    ///     if let Err(e) = result {
    ///         eprintln!("record {i} failed: {e}");
    ///     }
    /// });
    /// for i in 0..1000u64 {
    ///     let record = Record::new("events", format!("event {i}"));
    ///     producer.send_with_handler(record, &handler, i).await.expect("queued");
    /// }
    /// # }
    /// ```
    ///
    /// Cancel safety: as [`AsyncProducer::send`]; a record that was not queued never reaches
    /// the handler.
    ///
    /// # Errors
    ///
    /// As [`AsyncProducer::send`]; the handler is not called then.
    pub async fn send_with_handler(
        &self,
        record: Record<K, V>,
        handler: &Arc<dyn DeliveryHandler>,
        opaque: u64,
    ) -> Result<(), SendError<K, V>> {
        self.enqueue(record, Slot::handler(handler.clone(), opaque)).await
    }

    /// As [`send_with_handler`](AsyncProducer::send_with_handler), with a handler that lives as
    /// long as the process: a `static`, or one made once and leaked with `Box::leak`. A send
    /// then changes no reference count (`send_with_handler` raises the `Arc`'s count and the
    /// delivery lowers it, for every record; on a multi-thread runtime on two threads), as
    /// librdkafka's delivery report callback is a plain function pointer.
    ///
    /// ```no_run
    /// # async fn run(producer: gregor_producer::AsyncProducer<(), String>) {
    /// use gregor_producer::{DeliveryHandler, DeliveryResult, Record, Topic};
    ///
    /// let handler: &'static dyn DeliveryHandler = Box::leak(Box::new(|i: u64, result: DeliveryResult| {
    ///     if let Err(e) = result {
    ///         eprintln!("record {i} failed: {e}");
    ///     }
    /// }));
    /// let events = Topic::new("events");
    /// for i in 0..1000u64 {
    ///     let record = Record::new(events.clone(), format!("event {i}"));
    ///     producer.send_with_static_handler(record, handler, i).await.expect("queued");
    /// }
    /// # }
    /// ```
    ///
    /// Cancel safety and errors: as [`send_with_handler`](AsyncProducer::send_with_handler).
    pub async fn send_with_static_handler(
        &self,
        record: Record<K, V>,
        handler: &'static dyn DeliveryHandler,
        opaque: u64,
    ) -> Result<(), SendError<K, V>> {
        self.enqueue(record, Slot::static_handler(handler, opaque)).await
    }

    async fn enqueue(&self, record: Record<K, V>, slot: Slot) -> Result<(), SendError<K, V>> {
        if record.topic.is_empty() || record.topic.len() > i16::MAX as usize {
            let reason = format!("a topic name has 1 to 32767 bytes, not {}", record.topic.len());
            return Err(SendError::InvalidRecord { record, reason });
        }
        if let Some(p) = record.partition.filter(|p| *p < 0) {
            return Err(SendError::InvalidRecord { record, reason: format!("partition {p} is negative") });
        }
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(SendError::Closed { record });
        }
        let key = match &record.key {
            Some(k) => match self.key_encoder.encode(k) {
                Ok(bytes) => Some(bytes),
                Err(e) => return Err(SendError::Encode { record, what: "key", source: Arc::new(e) }),
            },
            None => None,
        };
        let capacity = self.shared.config.queue_buffering_max_messages();
        let timeout = self.shared.config.queue_enqueue_timeout();
        // a send that finds room never waits for it, so it counts against the task's coop
        // budget itself: a loop of sends yields now and then and the background task keeps up
        // (on a current-thread runtime it would otherwise run only once the queue is full); how
        // often: `InboxSender::yield_due`. While the inbox is full (`inbox::MOST_QUEUED`
        // records the task has not taken), a send that may wait waits for the take, no longer
        // than `queue.enqueue.timeout.ms`: the records are held in fewer bytes once the task
        // has placed them
        if self.shared.inbox.is_full() && timeout != EnqueueTimeout::FailFast {
            match timeout {
                EnqueueTimeout::Wait(wait) => {
                    let _ = tokio::time::timeout(wait, self.shared.inbox.taken()).await;
                }
                _ => self.shared.inbox.taken().await,
            }
        } else if self.shared.inbox.yield_due() {
            tokio::task::coop::consume_budget().await;
        }
        let permit = match take(&self.shared.permits.places, 1, timeout, &self.shared.inbox).await {
            Take::Got(p) => p,
            Take::Full(waited) => return Err(SendError::QueueFull { record, capacity, waited }),
            Take::Closed => return Err(SendError::Closed { record }),
        };
        // queue.buffering.max.bytes: the record's bytes too, before its value is taken (so a
        // refusal still gives it back whole); the value is encoded by reference to weigh it
        let mut weighed = None;
        let bytes_permit = match &self.shared.permits.bytes {
            None => None,
            Some((bytes, max)) => {
                let value = match self.value_encoder.encode(&record.value) {
                    Ok(v) => v,
                    Err(e) => return Err(SendError::Encode { record, what: "value", source: Arc::new(e) }),
                };
                let need = held_bytes(key.as_ref().map_or(0, |k| k.len()), value.len(), &record.headers);
                weighed = Some(value);
                let Some(need) = u32::try_from(need).ok().filter(|n| (*n as usize) <= *max) else {
                    let reason = format!("the record weighs {need} bytes, more than queue.buffering.max.bytes ({max})");
                    return Err(SendError::InvalidRecord { record, reason });
                };
                match take(bytes, need, timeout, &self.shared.inbox).await {
                    Take::Got(p) => Some(p),
                    Take::Full(waited) => return Err(SendError::QueueBytesFull { record, max_bytes: *max, waited }),
                    Take::Closed => return Err(SendError::Closed { record }),
                }
            }
        };
        // the value last, taken (a Bytes or Vec value is handed over, not copied), once the
        // record has its place: a refusal above could still give the record back whole
        let Record { topic, key: k, value: v, partition, timestamp, headers } = record;
        let value = match weighed {
            Some(value) => value,
            None => match self.value_encoder.encode_owned(v) {
                Ok(bytes) => bytes,
                Err((value, e)) => {
                    let record = Record { topic, key: k, value, partition, timestamp, headers };
                    return Err(SendError::Encode { record, what: "value", source: Arc::new(e) });
                }
            },
        };
        let message = Message::new(key, Some(value));
        // a timestamp or headers travel boxed beside the message (nothing for a record without)
        let extra = (timestamp.is_some() || !headers.is_empty()).then(|| Box::new(RecordExtra { timestamp, headers }));
        match self.shared.inbox.send_record(topic, partition, &message, extra, slot) {
            Ok(()) => {
                // the background task gives the place (and bytes) back with the record's result
                permit.forget();
                if let Some(p) = bytes_permit {
                    p.forget();
                }
                Ok(())
            }
            // refused after the value was taken, so the record cannot be given back: its one
            // result is the error, through its future, callback or handler
            Err(refused) => {
                let (error, topic, slot) = match refused {
                    // the background task is gone (it closed its inbox after a close, or its
                    // runtime stopped)
                    Refused::Closed(topic, slot) => (Error::Closed { in_flight: false }, topic, slot),
                    // a key or value over i32::MAX bytes
                    Refused::Encode(e, topic, slot) => {
                        let error = Error::Encode {
                            topic: topic.to_string(),
                            partition: partition.unwrap_or(-1),
                            source: Arc::new(e),
                        };
                        (error, topic, slot)
                    }
                };
                let Message { key, value, .. } = message;
                let failed = DeliveryError { topic: topic.clone(), partition, attempts: 0, error, key, value };
                slot.deliver(Err(Box::new(failed)), &topic);
                Ok(())
            }
        }
    }
}

/// What waiting for room in the queue came to.
enum Take<'a> {
    Got(tokio::sync::SemaphorePermit<'a>),
    /// No room, after waiting this long (zero: fail-fast).
    Full(Duration),
    /// The producer closed.
    Closed,
}

/// `n` places (or bytes) of `sem`, as `queue.enqueue.timeout.ms` says: blocking, failing at
/// once or after a wait. Room free now is taken without the future (and its waiter
/// bookkeeping): the common case costs one compare-and-swap; only a full queue waits in line
/// (tokio gives released permits to waiters first, so free room means none is waiting). No
/// room wakes the background task for what `inbox` holds (it may be waiting for a batch's
/// worth of records that cannot come in).
async fn take<'a>(sem: &'a Semaphore, n: u32, timeout: EnqueueTimeout, inbox: &InboxSender) -> Take<'a> {
    use tokio::sync::TryAcquireError;
    match sem.try_acquire_many(n) {
        Ok(p) => return Take::Got(p),
        Err(TryAcquireError::Closed) => return Take::Closed,
        Err(TryAcquireError::NoPermits) => {}
    }
    inbox.nudge();
    let waited = match timeout {
        EnqueueTimeout::FailFast => return Take::Full(Duration::ZERO),
        EnqueueTimeout::Block => sem.acquire_many(n).await,
        EnqueueTimeout::Wait(wait) => {
            let started = Instant::now();
            match tokio::time::timeout(wait, sem.acquire_many(n)).await {
                Ok(p) => p,
                Err(_) => return Take::Full(started.elapsed()),
            }
        }
    };
    waited.map_or(Take::Closed, Take::Got)
}

impl<K, V> AsyncProducer<K, V> {
    /// The settings.
    pub fn config(&self) -> &ProducerConfig {
        &self.shared.config
    }

    /// Bytes the records held right now weigh, as `queue.buffering.max.bytes` counts them (key
    /// + value + 26 on the wire, plus headers), at most that bound; 0 when it is not set.
    pub fn queued_bytes(&self) -> usize {
        self.shared.permits.bytes_held()
    }

    /// Records held right now (queued, in flight, waiting to retry), at most
    /// `queue.buffering.max.messages`.
    pub fn queued(&self) -> usize {
        self.shared.config.queue_buffering_max_messages().saturating_sub(self.shared.permits.places.available_permits())
    }

    /// Sends everything queued now, without waiting for the linger, and waits until every
    /// record queued before this call has its result; returns those that failed. Records
    /// sent meanwhile do not delay it. Bounded by the retries: a record fails after
    /// `message.send.max.retries + 1` sends of up to `request.timeout.ms` (+1 s) each.
    ///
    /// Cancel safety: dropping the future stops the wait only; the records go on.
    pub async fn flush(&self) -> FlushReport {
        let (reply, rx) = oneshot::channel();
        if self.shared.inbox.send(Command::Flush { reply }).is_err() {
            return FlushReport::default();
        }
        rx.await.unwrap_or_default()
    }

    /// Stops the producer: refuses new records ([`SendError::Closed`], also for sends waiting
    /// for room), sends what is queued at once, and waits up to `timeout` for every record's
    /// result. Records still queued or in flight when `timeout` runs out fail with
    /// [`Error::Closed`]. Returns every record that was not delivered
    /// (each also got its error through its future or callback). Never waits much longer than
    /// `timeout`.
    ///
    /// Closing twice, or from two clones, is harmless: the later calls return an empty report
    /// at once.
    ///
    /// Cancel safety: the producer is closed at the first poll; dropping the future loses
    /// only the report.
    pub async fn close(&self, timeout: Duration) -> CloseReport {
        if self.shared.closed.swap(true, Ordering::AcqRel) {
            return CloseReport::default();
        }
        self.shared.permits.close();
        let (reply, rx) = oneshot::channel();
        let deadline = Instant::now() + timeout;
        if self.shared.inbox.send(Command::Close { deadline, reply }).is_err() {
            return CloseReport::default();
        }
        match tokio::time::timeout_at(deadline + CLOSE_GRACE, rx).await {
            Ok(Ok(report)) => report,
            _ => {
                tracing::error!("the producer's background task did not report its close");
                CloseReport::default()
            }
        }
    }

    /// True once [`close`](AsyncProducer::close) was called.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }
}

//! [`SyncProducer`]: `send` blocks until the record is acknowledged (`producer.type=sync`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use gregor_serde::Encoder;

use crate::audit::AuditConfig;
use crate::config::{EnqueueTimeout, ProducerConfig};
use crate::delivery::{CloseReport, FlushReport};
use crate::error::{Error, SyncSendError};
use crate::producer::AsyncProducer;
use crate::record::{Record, RecordMetadata};

/// The synchronous producer (`producer.type=sync`): [`send`](SyncProducer::send) returns once
/// the broker has acknowledged the record (as `request.required.acks` says) or it failed for
/// good, after the retries.
///
/// It is an [`AsyncProducer`] on a runtime thread of its own (like mini-redis' blocking
/// client), with `queue.buffering.max.ms` set to 0 (nothing waits for company) and
/// `queue.enqueue.timeout.ms` to block; every other setting applies as given. Records sent by
/// several threads at once are batched together.
///
/// **Must not be called from inside an async runtime** (its methods block the thread; from a
/// runtime worker that would stall the runtime): use the [`AsyncProducer`] there. They panic
/// when called from a runtime thread.
///
/// Dropping it never blocks: its runtime is shut down in the background, and records still
/// in flight (only possible when another thread was sending) get [`Error::Closed`].
pub struct SyncProducer<K, V> {
    producer: AsyncProducer<K, V>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl<K, V> fmt::Debug for SyncProducer<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncProducer").field("producer", &self.producer).finish()
    }
}

impl<K, V> SyncProducer<K, V>
where
    K: Send + 'static,
    V: Send + 'static,
{
    /// A producer with `config` (its linger forced to 0 and enqueue policy to block), on a
    /// runtime thread of its own.
    ///
    /// # Errors
    ///
    /// [`Error::Runtime`] when the runtime thread cannot start, and the errors of
    /// [`AsyncProducer::new`].
    pub fn new(
        config: ProducerConfig,
        key_encoder: impl Encoder<K> + 'static,
        value_encoder: impl Encoder<V> + 'static,
    ) -> Result<SyncProducer<K, V>, Error> {
        SyncProducer::start(config, None, key_encoder, value_encoder)
    }

    /// As [`SyncProducer::new`], with audit on (see [`crate::audit`] and
    /// [`AsyncProducer::with_audit`]). Audit records are sent as soon as a window ends (the
    /// linger is 0); [`SyncProducer::close`] publishes the last window.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for invalid audit settings, and the errors of [`SyncProducer::new`].
    pub fn with_audit(
        config: ProducerConfig,
        audit: AuditConfig,
        key_encoder: impl Encoder<K> + 'static,
        value_encoder: impl Encoder<V> + 'static,
    ) -> Result<SyncProducer<K, V>, Error> {
        SyncProducer::start(config, Some(audit), key_encoder, value_encoder)
    }

    /// [`SyncProducer::new`], with audit on when `audit` is given.
    fn start(
        config: ProducerConfig,
        audit: Option<AuditConfig>,
        key_encoder: impl Encoder<K> + 'static,
        value_encoder: impl Encoder<V> + 'static,
    ) -> Result<SyncProducer<K, V>, Error> {
        let config = config
            .to_builder()
            .queue_buffering_max(Duration::ZERO)
            .queue_enqueue_timeout(EnqueueTimeout::Block)
            .build()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("gregor-sync-producer")
            .enable_all()
            .build()
            .map_err(|e| Error::Runtime(Arc::new(e)))?;
        let producer = {
            let _entered = runtime.enter();
            AsyncProducer::start(config, audit, key_encoder, value_encoder)?
        };
        Ok(SyncProducer { producer, runtime: Some(runtime) })
    }

    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        assert!(
            tokio::runtime::Handle::try_current().is_err(),
            "SyncProducer called from inside an async runtime: it would block a runtime thread; use AsyncProducer"
        );
        self.runtime.as_ref().expect("present until drop").block_on(f)
    }

    /// Sends `record` and waits until it is acknowledged or has failed for good.
    ///
    /// # Errors
    ///
    /// [`SyncSendError::Send`] when it was refused (the record is in it),
    /// [`SyncSendError::Delivery`] when it was not delivered.
    ///
    /// # Panics
    ///
    /// When called from inside an async runtime.
    #[allow(clippy::result_large_err)] // the error gives the record back, or carries its bytes
    pub fn send(&self, record: Record<K, V>) -> Result<RecordMetadata, SyncSendError<K, V>> {
        self.block_on(async {
            let delivery = self.producer.send(record).await.map_err(SyncSendError::Send)?;
            delivery.await.map_err(|e| SyncSendError::Delivery(*e))
        })
    }

    /// Queues every record, then waits for all of their results, in the order given. Queued
    /// together, they share Produce requests (up to `batch.num.messages` per request) as far
    /// as the background task finds them waiting; with the linger at 0 the first may go alone.
    ///
    /// # Panics
    ///
    /// When called from inside an async runtime.
    pub fn send_batch(
        &self,
        records: impl IntoIterator<Item = Record<K, V>>,
    ) -> Vec<Result<RecordMetadata, SyncSendError<K, V>>> {
        self.block_on(async {
            let mut queued = Vec::new();
            for record in records {
                queued.push(self.producer.send(record).await);
            }
            let mut results = Vec::with_capacity(queued.len());
            for q in queued {
                results.push(match q {
                    Ok(delivery) => delivery.await.map_err(|e| SyncSendError::Delivery(*e)),
                    Err(e) => Err(SyncSendError::Send(e)),
                });
            }
            results
        })
    }

    /// Waits until every record sent so far has its result (only useful when several threads
    /// send); returns the failures.
    ///
    /// # Panics
    ///
    /// When called from inside an async runtime.
    pub fn flush(&self) -> FlushReport {
        self.block_on(self.producer.flush())
    }

    /// Closes the producer within `timeout` (see [`AsyncProducer::close`]) and stops its
    /// runtime.
    ///
    /// # Panics
    ///
    /// When called from inside an async runtime.
    pub fn close(mut self, timeout: Duration) -> CloseReport {
        let report = self.block_on(self.producer.close(timeout));
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_millis(100));
        }
        report
    }
}

impl<K, V> SyncProducer<K, V> {
    /// The settings (with the linger at 0).
    pub fn config(&self) -> &ProducerConfig {
        self.producer.config()
    }
}

impl<K, V> Drop for SyncProducer<K, V> {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

//! [`KafkaStream`]: one consumer stream, async (`next().await`) and blocking (`into_iter()`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use gregor_protocol::MessageAndOffset;
use gregor_serde::Decoder;
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use crate::error::{Error, Result};

/// What the connector knows of one owned partition (shared by its fetcher and its stream).
#[derive(Debug)]
pub(crate) struct PartitionState {
    pub(crate) topic: String,
    pub(crate) partition: i32,
    /// The next offset the app will get (what a commit writes).
    pub(crate) consumed: AtomicI64,
    /// What a commit may write: the offset of the last message handed to the app + 1, or the
    /// offset read from the store (-1: nothing delivered and nothing stored). A reset by
    /// `auto.offset.reset` moves `consumed`, never this.
    pub(crate) committable: AtomicI64,
    /// The last committed offset (-1: none yet).
    pub(crate) committed: AtomicI64,
    /// The high watermark of the last fetch (-1: unknown).
    pub(crate) high_watermark: AtomicI64,
}

impl PartitionState {
    pub(crate) fn new(topic: &str, partition: i32, offset: i64) -> PartitionState {
        PartitionState {
            topic: topic.to_owned(),
            partition,
            consumed: AtomicI64::new(offset),
            committable: AtomicI64::new(offset),
            committed: AtomicI64::new(offset),
            high_watermark: AtomicI64::new(-1),
        }
    }
}

/// What fetchers put into a stream's queue.
#[derive(Debug)]
pub(crate) enum Chunk {
    /// Messages of one partition from one fetch, holding one permit of the global
    /// `queued.max.message.chunks` semaphore until the stream has handed them all out.
    Messages {
        generation: u64,
        part: Arc<PartitionState>,
        messages: Vec<MessageAndOffset>,
        permit: OwnedSemaphorePermit,
    },
    /// An error for the app.
    Error(Error),
}

/// One message as the app sees it (`K`: the key type of the stream's key decoder; raw
/// [`Bytes`] by default).
#[derive(Debug, Clone, PartialEq)]
pub struct MessageAndMetadata<T, K = Bytes> {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset of the message.
    pub offset: i64,
    /// The key through the stream's key decoder (`None` = null key); the raw bytes when the
    /// streams were created without a key decoder.
    pub key: Option<K>,
    /// The value through the stream's decoder (`None` = null value).
    pub value: Option<T>,
}

/// One consumer stream (a thread id `<consumerId>-<n>` of Kafka's connector).
///
/// `next().await` yields messages of the partitions the rebalance gives to this stream, errors
/// the app must see (a message larger than `fetch.message.max.bytes`, a rebalance that gave
/// up), `Err(ConsumerTimeout)` when `consumer.timeout.ms` passes without a message, and `None`
/// after `shutdown()`.
pub struct KafkaStream<T, K = Bytes> {
    rx: mpsc::Receiver<Chunk>,
    current: Option<(u64, Arc<PartitionState>, VecDeque<MessageAndOffset>, OwnedSemaphorePermit)>,
    generation: Arc<AtomicU64>,
    decoder: Arc<dyn Decoder<T>>,
    key_decoder: Arc<dyn Decoder<K>>,
    timeout: Option<Duration>,
}

impl<T, K> std::fmt::Debug for KafkaStream<T, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaStream").field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

impl<T: Send + 'static, K: Send + 'static> KafkaStream<T, K> {
    pub(crate) fn new(
        rx: mpsc::Receiver<Chunk>,
        generation: Arc<AtomicU64>,
        decoder: Arc<dyn Decoder<T>>,
        key_decoder: Arc<dyn Decoder<K>>,
        timeout: Option<Duration>,
    ) -> Self {
        KafkaStream { rx, current: None, generation, decoder, key_decoder, timeout }
    }

    /// The next message, error or `None` at shutdown.
    ///
    /// Cancel safety: cancel safe (a message is taken out of the queue only when returned).
    pub async fn next(&mut self) -> Option<Result<MessageAndMetadata<T, K>>> {
        loop {
            if let Some((generation, part, messages, _)) = &mut self.current {
                if *generation != self.generation.load(Ordering::Acquire) {
                    self.current = None; // a rebalance happened: the chunk is stale
                    continue;
                }
                if let Some(m) = messages.pop_front() {
                    // atomically: a chunk of an older generation still being handed out by
                    // another stream of this member cannot deliver the same offset twice
                    if part.consumed.fetch_max(m.offset + 1, Ordering::AcqRel) > m.offset {
                        continue; // already delivered
                    }
                    part.committable.fetch_max(m.offset + 1, Ordering::AcqRel);
                    let key = match m.message.key {
                        None => None,
                        Some(k) => match self.key_decoder.decode_bytes(k) {
                            Ok(k) => Some(k),
                            Err(source) => {
                                return Some(Err(Error::Decode {
                                    topic: part.topic.clone(),
                                    partition: part.partition,
                                    offset: m.offset,
                                    source,
                                }))
                            }
                        },
                    };
                    let value = match m.message.value {
                        None => None,
                        Some(v) => match self.decoder.decode_bytes(v) {
                            Ok(v) => Some(v),
                            Err(source) => {
                                return Some(Err(Error::Decode {
                                    topic: part.topic.clone(),
                                    partition: part.partition,
                                    offset: m.offset,
                                    source,
                                }))
                            }
                        },
                    };
                    return Some(Ok(MessageAndMetadata {
                        topic: part.topic.clone(),
                        partition: part.partition,
                        offset: m.offset,
                        key,
                        value,
                    }));
                }
                self.current = None; // releases the permit
            }
            let chunk = match self.timeout {
                None => self.rx.recv().await,
                Some(t) => match tokio::time::timeout(t, self.rx.recv()).await {
                    Ok(c) => c,
                    Err(_) => return Some(Err(Error::ConsumerTimeout { timeout_ms: t.as_millis() })),
                },
            };
            match chunk? {
                Chunk::Error(e) => return Some(Err(e)),
                Chunk::Messages { generation, part, messages, permit } => {
                    self.current = Some((generation, part, messages.into(), permit));
                }
            }
        }
    }
}

/// A blocking iterator over the stream (`stream.into_iter()`), driven by a runtime of its own
/// on the calling thread; `consumer.timeout.ms` applies as in `next().await`.
///
/// # Panics
///
/// When created or iterated from inside a Tokio runtime: use `next().await` there.
impl<T: Send + 'static, K: Send + 'static> IntoIterator for KafkaStream<T, K> {
    type Item = Result<MessageAndMetadata<T, K>>;
    type IntoIter = BlockingIter<T, K>;

    fn into_iter(self) -> BlockingIter<T, K> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a current-thread runtime for the blocking iterator");
        BlockingIter { stream: self, rt }
    }
}

/// The blocking iterator of a [`KafkaStream`] (see its `IntoIterator` impl).
pub struct BlockingIter<T, K = Bytes> {
    stream: KafkaStream<T, K>,
    rt: tokio::runtime::Runtime,
}

impl<T, K> std::fmt::Debug for BlockingIter<T, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingIter").finish_non_exhaustive()
    }
}

impl<T: Send + 'static, K: Send + 'static> Iterator for BlockingIter<T, K> {
    type Item = Result<MessageAndMetadata<T, K>>;

    fn next(&mut self) -> Option<Self::Item> {
        let stream = &mut self.stream;
        self.rt.block_on(stream.next())
    }
}

//! [`KafkaStream`]: one consumer stream, a [`Stream`] (also `next().await` without a trait in
//! scope) and blocking (`into_iter()`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use gregor_protocol::record::{Headers, LazyRecords, TimestampType};
use gregor_serde::Decoder;
use tokio::sync::{mpsc, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;

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
    /// Moved on by the stream when a chunk of the partition turns out unreadable as it is
    /// decoded (a corrupt compressed body): the chunks fetched before are stale, and the
    /// fetcher fetches again from `consumed`, after `refresh.leader.backoff.ms`.
    pub(crate) epoch: AtomicU64,
    /// The offset the stream last found unreadable (-1: none), so that a partition stuck on it
    /// logs it once.
    unreadable_at: AtomicI64,
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
            epoch: AtomicU64::new(0),
            unreadable_at: AtomicI64::new(-1),
        }
    }

    /// What a commit writes now: the committable offset, unless nothing was delivered or
    /// stored (-1) or it is already committed.
    pub(crate) fn to_commit(&self) -> Option<i64> {
        let c = self.committable.load(Ordering::Acquire);
        (c >= 0 && c != self.committed.load(Ordering::Acquire)).then_some(c)
    }

    /// Takes the partition up again after a rebalance gave it back to this member, with
    /// `stored` the offset read from the store (-1: none): the committed offset becomes
    /// `stored`, and delivery goes on from what was handed out, or from `stored` if another
    /// member got further meanwhile. Returns that position (where fetching starts).
    ///
    /// Atomic against a stream still handing out a chunk of the older generation.
    pub(crate) fn resume(&self, stored: i64) -> i64 {
        self.committed.store(stored, Ordering::Release);
        self.committable.fetch_max(stored, Ordering::AcqRel);
        self.consumed.fetch_max(stored, Ordering::AcqRel).max(stored)
    }
}

/// The prefetch accounting of one connector, shared by its fetchers and its streams.
///
/// Every chunk of fetched data is counted from the moment it is fetched until the stream has
/// handed out its last message (or dropped it as stale): first as *held* (waiting in a fetcher
/// for room in its stream's queue), then as *queued* (in the queue, or the stream's current
/// chunk). Bytes are the wire bytes of the partition's message set, which
/// `fetch.message.max.bytes` bounds, and what the chunk holds: its records stay as they came
/// (compressed) until the stream decodes them, a window at a time.
#[derive(Debug, Default)]
pub(crate) struct Prefetch {
    /// Woken (all waiters) whenever a stream frees room or takes an error.
    pub(crate) room: Notify,
    pub(crate) queued_chunks: AtomicU64,
    pub(crate) queued_bytes: AtomicU64,
    pub(crate) held_chunks: AtomicU64,
    pub(crate) held_bytes: AtomicU64,
}

/// One stream's queue: the channel and its room, `queued.max.message.chunks` permits (Java's
/// `LinkedBlockingQueue(queued.max.message.chunks)` of each stream).
#[derive(Debug, Clone)]
pub(crate) struct StreamQueue {
    pub(crate) tx: mpsc::Sender<Chunk>,
    pub(crate) room: Arc<Semaphore>,
}

impl StreamQueue {
    pub(crate) fn new(tx: mpsc::Sender<Chunk>, chunks: usize) -> StreamQueue {
        StreamQueue { tx, room: Arc::new(Semaphore::new(chunks)) }
    }
}

/// What one chunk costs: counted as held, then as queued once it has a permit of its stream's
/// room. Dropping it uncounts it, releases the permit and wakes the fetchers.
#[derive(Debug)]
pub(crate) struct Charge {
    prefetch: Arc<Prefetch>,
    bytes: u64,
    permit: Option<OwnedSemaphorePermit>,
    /// A fetch error's token: the fetcher re-fetches a stuck partition once the app has taken
    /// (dropped) the error that carries it.
    token: Option<Arc<()>>,
}

impl Charge {
    /// A chunk of `bytes`, held by a fetcher.
    pub(crate) fn held(prefetch: &Arc<Prefetch>, bytes: usize, token: Option<Arc<()>>) -> Charge {
        prefetch.held_chunks.fetch_add(1, Ordering::AcqRel);
        prefetch.held_bytes.fetch_add(bytes as u64, Ordering::AcqRel);
        Charge { prefetch: Arc::clone(prefetch), bytes: bytes as u64, permit: None, token }
    }

    /// True once the chunk has its place in its stream's room.
    pub(crate) fn is_queued(&self) -> bool {
        self.permit.is_some()
    }

    /// Moves the chunk from held to queued, with the permit of its stream's room.
    pub(crate) fn queue(&mut self, permit: OwnedSemaphorePermit) {
        if self.permit.is_none() {
            let p = &self.prefetch;
            p.held_chunks.fetch_sub(1, Ordering::AcqRel);
            p.held_bytes.fetch_sub(self.bytes, Ordering::AcqRel);
            p.queued_chunks.fetch_add(1, Ordering::AcqRel);
            p.queued_bytes.fetch_add(self.bytes, Ordering::AcqRel);
        }
        self.permit = Some(permit);
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        let p = &self.prefetch;
        let (chunks, bytes) = match self.permit {
            Some(_) => (&p.queued_chunks, &p.queued_bytes),
            None => (&p.held_chunks, &p.held_bytes),
        };
        chunks.fetch_sub(1, Ordering::AcqRel);
        bytes.fetch_sub(self.bytes, Ordering::AcqRel);
        // release first, then wake: a fetcher woken now finds the room
        let freed = self.permit.take().is_some() | self.token.take().is_some();
        if freed {
            p.room.notify_waiters();
        }
    }
}

/// What fetchers put into a stream's queue.
#[derive(Debug)]
pub(crate) enum Chunk {
    /// Messages of one partition from one fetch, as they came (decoded as the stream hands
    /// them out), holding one permit of the stream's room (`queued.max.message.chunks`) until
    /// the stream has handed them all out. `epoch`: the partition's when it was fetched.
    Messages { generation: u64, epoch: u64, part: Arc<PartitionState>, messages: LazyRecords, charge: Charge },
    /// An error for the app. A fetch error (a message larger than `fetch.message.max.bytes`)
    /// carries the generation it belongs to (dropped when stale) and its charge, so that it
    /// takes a place in the queue as Java's empty chunk does, and its partition is fetched
    /// again only after the app has taken it.
    Error { error: Error, generation: Option<u64>, charge: Option<Charge> },
}

impl Chunk {
    /// An error of the connector itself (not tied to a fetch).
    pub(crate) fn error(error: Error) -> Chunk {
        Chunk::Error { error, generation: None, charge: None }
    }

    /// The chunk's charge.
    pub(crate) fn charge_mut(&mut self) -> Option<&mut Charge> {
        match self {
            Chunk::Messages { charge, .. } => Some(charge),
            Chunk::Error { charge, .. } => charge.as_mut(),
        }
    }
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
    /// Milliseconds since the epoch, as `timestamp_type` says; -1 for a message v0 (Kafka
    /// before 0.10, or a broker answering Fetch v0/v1).
    pub timestamp: i64,
    /// How the timestamp was set: by the producer (CreateTime), by the broker
    /// (LogAppendTime), or not at all (NoTimestamp, message v0).
    pub timestamp_type: TimestampType,
    /// The record's headers (RecordBatch v2, Kafka 0.11 and later; empty before).
    pub headers: Headers,
}

/// The chunk a stream is handing out.
#[derive(Debug)]
struct Current {
    generation: u64,
    epoch: u64,
    part: Arc<PartitionState>,
    messages: LazyRecords,
    /// Released (and the fetchers woken) when the chunk is dropped.
    _charge: Charge,
}

/// One consumer stream (a thread id `<consumerId>-<n>` of Kafka's connector).
///
/// A [`Stream`] of messages: read it with `StreamExt::next` (futures or
/// tokio-stream) and their combinators, or with the inherent [`KafkaStream::next`], which needs
/// no trait in scope, or block on it with `into_iter()`.
///
/// It yields messages of the partitions the rebalance gives to this stream, errors the app
/// must see (a message larger than `fetch.message.max.bytes`, repeated while its partition is
/// stuck on it: see [`Error::Fetch`]; a rebalance that gave up),
/// `Err(ConsumerTimeout)` when `consumer.timeout.ms` passes without a message, and ends
/// (`None`) after `shutdown()`. The stream stays usable after any error (Java's iterator is
/// left in a failed state by `MessageSizeTooLargeException`).
///
/// Each stream buffers at most `queued.max.message.chunks` chunks (one partition's messages
/// from one fetch, at most `fetch.message.max.bytes` on the wire each), counting the one it is
/// handing out; a stream the app does not read holds its partitions back without stalling the
/// other streams.
pub struct KafkaStream<T, K = Bytes> {
    rx: mpsc::Receiver<Chunk>,
    current: Option<Current>,
    generation: Arc<AtomicU64>,
    decoder: Arc<dyn Decoder<T>>,
    key_decoder: Arc<dyn Decoder<K>>,
    timeout: Option<Duration>,
    /// When `consumer.timeout.ms` runs out, armed while waiting for a chunk.
    deadline: Option<Pin<Box<Sleep>>>,
    /// The topic of a topic-list subscription's stream; `None` for a filter's.
    topic: Option<String>,
}

impl<T, K> std::fmt::Debug for KafkaStream<T, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaStream")
            .field("topic", &self.topic)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl<T: Send + 'static, K: Send + 'static> KafkaStream<T, K> {
    pub(crate) fn new(
        rx: mpsc::Receiver<Chunk>,
        generation: Arc<AtomicU64>,
        decoder: Arc<dyn Decoder<T>>,
        key_decoder: Arc<dyn Decoder<K>>,
        timeout: Option<Duration>,
        topic: Option<String>,
    ) -> Self {
        KafkaStream { rx, current: None, generation, decoder, key_decoder, timeout, deadline: None, topic }
    }

    /// The topic this stream reads, for a stream of a topic-list subscription; `None` for a
    /// stream of a filter subscription (its messages say their topic).
    pub fn topic(&self) -> Option<&str> {
        self.topic.as_deref()
    }

    /// The next message, error or `None` at shutdown. `consumer.timeout.ms` counts from this
    /// call.
    ///
    /// Cancel safety: cancel safe (a message is taken out of the queue only when returned).
    pub async fn next(&mut self) -> Option<Result<MessageAndMetadata<T, K>>> {
        self.deadline = None;
        std::future::poll_fn(|cx| self.poll_message(cx)).await
    }

    /// The next message of the current chunk, if any (dropping a stale chunk).
    fn take_from_current(&mut self) -> Option<Result<MessageAndMetadata<T, K>>> {
        loop {
            let Current { generation, epoch, part, messages, .. } = self.current.as_mut()?;
            if *generation != self.generation.load(Ordering::Acquire) {
                self.current = None; // a rebalance happened: the chunk is stale
                return None;
            }
            if *epoch != part.epoch.load(Ordering::Acquire) {
                self.current = None; // fetched before an unreadable chunk of its partition
                return None;
            }
            let m = match messages.next() {
                Some(Ok(m)) => m,
                Some(Err(source)) => {
                    // the records before it were handed out: the partition is fetched again
                    // from the next one (and the error comes again while it cannot be read)
                    let offset = part.consumed.load(Ordering::Acquire);
                    let error = Error::Fetch { topic: part.topic.clone(), partition: part.partition, offset, source };
                    if part.unreadable_at.swap(offset, Ordering::AcqRel) != offset {
                        tracing::error!(%error, "this partition is stuck at this offset (the others go on): the error is repeated on its stream until the message can be read");
                    }
                    part.epoch.fetch_add(1, Ordering::AcqRel);
                    self.current = None; // after the epoch: the fetchers woken see it
                    return Some(Err(error));
                }
                None => {
                    self.current = None; // releases the permit (its charge)
                    return None;
                }
            };
            // atomically: a chunk of an older generation still being handed out by another
            // stream of this member cannot deliver the same offset twice
            if part.consumed.fetch_max(m.offset + 1, Ordering::AcqRel) > m.offset {
                continue; // already delivered
            }
            part.committable.fetch_max(m.offset + 1, Ordering::AcqRel);
            let decode_error = |source| Error::Decode {
                topic: part.topic.clone(),
                partition: part.partition,
                offset: m.offset,
                source,
            };
            let key = match m.key.map(|k| self.key_decoder.decode_bytes(k)).transpose() {
                Ok(k) => k,
                Err(source) => return Some(Err(decode_error(source))),
            };
            let value = match m.value.map(|v| self.decoder.decode_bytes(v)).transpose() {
                Ok(v) => v,
                Err(source) => return Some(Err(decode_error(source))),
            };
            return Some(Ok(MessageAndMetadata {
                topic: part.topic.clone(),
                partition: part.partition,
                offset: m.offset,
                key,
                value,
                timestamp: m.timestamp,
                timestamp_type: m.timestamp_type,
                headers: m.headers,
            }));
        }
    }

    /// The stream's one poll function (behind both `next` and `Stream::poll_next`).
    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<MessageAndMetadata<T, K>>>> {
        loop {
            if let Some(item) = self.take_from_current() {
                return Poll::Ready(Some(item));
            }
            let chunk = match self.rx.poll_recv(cx) {
                Poll::Ready(chunk) => {
                    self.deadline = None;
                    chunk
                }
                Poll::Pending => {
                    let Some(timeout) = self.timeout else { return Poll::Pending };
                    let deadline = self.deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                    if deadline.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    self.deadline = None;
                    return Poll::Ready(Some(Err(Error::ConsumerTimeout { timeout_ms: timeout.as_millis() })));
                }
            };
            match chunk {
                None => return Poll::Ready(None),
                Some(Chunk::Error { error, generation, charge }) => {
                    drop(charge); // taken: frees its place and lets its partition be fetched again
                    if generation.is_some_and(|g| g != self.generation.load(Ordering::Acquire)) {
                        continue; // about a partition of an older generation
                    }
                    return Poll::Ready(Some(Err(error)));
                }
                Some(Chunk::Messages { generation, epoch, part, messages, charge }) => {
                    self.current = Some(Current { generation, epoch, part, messages, _charge: charge });
                }
            }
        }
    }
}

/// `consumer.timeout.ms` counts from the first poll that finds nothing to hand out, and again
/// after each item.
impl<T: Send + 'static, K: Send + 'static> Stream for KafkaStream<T, K> {
    type Item = Result<MessageAndMetadata<T, K>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_message(cx)
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

#[cfg(test)]
mod tests {
    use super::*;
    use gregor_protocol::message::DecodeOptions;
    use gregor_protocol::record::LazyBatches;
    use gregor_protocol::{Compression, Message, MessageAndOffset, MessageSet};

    fn counts(p: &Prefetch) -> [u64; 4] {
        [&p.held_chunks, &p.held_bytes, &p.queued_chunks, &p.queued_bytes].map(|a| a.load(Ordering::Acquire))
    }

    #[tokio::test]
    async fn a_charge_is_held_then_queued_then_frees_its_room_and_wakes_the_fetchers() {
        let prefetch = Arc::new(Prefetch::default());
        let room = Arc::new(Semaphore::new(1));
        let mut a = Charge::held(&prefetch, 100, None);
        let b = Charge::held(&prefetch, 50, None);
        assert_eq!(counts(&prefetch), [2, 150, 0, 0]);
        a.queue(Arc::clone(&room).try_acquire_owned().unwrap());
        assert!(a.is_queued() && !b.is_queued());
        assert_eq!(counts(&prefetch), [1, 50, 1, 100]);
        assert!(Arc::clone(&room).try_acquire_owned().is_err(), "one chunk of room, taken");
        let woken = prefetch.room.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        drop(a);
        tokio::time::timeout(Duration::from_secs(1), woken).await.expect("the fetchers are woken");
        assert_eq!(counts(&prefetch), [1, 50, 0, 0]);
        assert!(Arc::clone(&room).try_acquire_owned().is_ok(), "the room is free again");
        drop(b);
        assert_eq!(counts(&prefetch), [0, 0, 0, 0]);
    }

    fn stream(timeout: Option<Duration>) -> (KafkaStream<String>, mpsc::Sender<Chunk>, Arc<Prefetch>) {
        let (tx, rx) = mpsc::channel(4);
        let decoder: Arc<dyn Decoder<String>> = Arc::new(gregor_serde::StringDecoder::new());
        let s = KafkaStream::new(
            rx,
            Arc::new(AtomicU64::new(0)),
            decoder,
            Arc::new(gregor_serde::BytesDecoder),
            timeout,
            None,
        );
        (s, tx, Arc::new(Prefetch::default()))
    }

    /// Values `m<offset>` at `offsets`, compressed with `codec` (or not), as fetched.
    fn records(offsets: std::ops::Range<i64>, codec: Compression) -> LazyRecords {
        let messages: Vec<MessageAndOffset> =
            offsets.map(|o| MessageAndOffset::new(o, Message::new(None, Some(Bytes::from(format!("m{o}")))))).collect();
        let set = match codec {
            Compression::None => MessageSet::encode(&messages).unwrap(),
            codec => MessageSet::encode(&[MessageSet::wrap(&messages, codec).unwrap()]).unwrap(),
        };
        let options = DecodeOptions::default();
        let batches = LazyBatches::message_v0(set.into_bytes(), &options).collect::<Result<Vec<_>, _>>().unwrap();
        LazyRecords::new(batches, options.max_decompressed_bytes)
    }

    fn chunk(prefetch: &Arc<Prefetch>, part: &Arc<PartitionState>, offsets: std::ops::Range<i64>) -> Chunk {
        Chunk::Messages {
            generation: 0,
            epoch: part.epoch.load(Ordering::Acquire),
            part: Arc::clone(part),
            messages: records(offsets, Compression::None),
            charge: Charge::held(prefetch, 10, None),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_stream_trait_and_next_hand_out_the_same_messages_and_time_out_alike() {
        use futures::StreamExt;
        let (mut s, tx, prefetch) = stream(Some(Duration::from_millis(100)));
        let part = Arc::new(PartitionState::new("t", 0, 0));
        tx.send(chunk(&prefetch, &part, 0..3)).await.unwrap();
        let via_trait: Vec<i64> = (&mut s).take(2).map(|m| m.unwrap().offset).collect().await;
        assert_eq!(via_trait, [0, 1]);
        assert_eq!(s.next().await.unwrap().unwrap().value.as_deref(), Some("m2"));
        assert_eq!(part.consumed.load(Ordering::Acquire), 3);
        // nothing more: consumer.timeout.ms, for both
        let started = tokio::time::Instant::now();
        assert!(matches!(StreamExt::next(&mut s).await, Some(Err(Error::ConsumerTimeout { timeout_ms: 100 }))));
        assert!(matches!(s.next().await, Some(Err(Error::ConsumerTimeout { timeout_ms: 100 }))));
        assert_eq!(started.elapsed(), Duration::from_millis(200));
        // a next() given up early does not shorten the next one's timeout
        assert!(tokio::time::timeout(Duration::from_millis(60), s.next()).await.is_err());
        let again = tokio::time::Instant::now();
        assert!(matches!(s.next().await, Some(Err(Error::ConsumerTimeout { .. }))));
        assert_eq!(again.elapsed(), Duration::from_millis(100));
        // the connector's end ends the stream
        drop(tx);
        assert!(StreamExt::next(&mut s).await.is_none());
        assert_eq!(counts(&prefetch), [0, 0, 0, 0], "every chunk released");
    }

    #[tokio::test]
    async fn a_body_unreadable_when_decoded_comes_after_the_records_before_it_and_stales_the_partition() {
        let (mut s, tx, prefetch) = stream(None);
        let part = Arc::new(PartitionState::new("t", 0, 0));
        // a gzip wrapper of 0 and 1, then one at 2 whose CRC holds but whose body is no deflate
        let good = MessageSet::encode(&[MessageSet::wrap(
            &[0, 1].map(|o| MessageAndOffset::new(o, Message::new(None, Some(Bytes::from(format!("m{o}")))))),
            Compression::Gzip,
        )
        .unwrap()])
        .unwrap();
        let junk = Bytes::from_static(b"\x1f\x8b\x08\0\0\0\0\0\0\xffnot deflate at all");
        let bad = Message { attributes: Compression::Gzip.attribute_bits(), key: None, value: Some(junk) };
        let bad = MessageSet::encode(&[MessageAndOffset::new(2, bad)]).unwrap();
        let blob = Bytes::from([good.as_bytes().as_ref(), bad.as_bytes().as_ref()].concat());
        let options = DecodeOptions::default();
        let batches: Vec<_> = LazyBatches::message_v0(blob, &options).collect::<Result<_, _>>().unwrap();
        assert_eq!(batches.len(), 2, "both entries pass the checks made without decompressing");
        let messages = LazyRecords::new(batches, options.max_decompressed_bytes);
        let charge = Charge::held(&prefetch, 10, None);
        tx.send(Chunk::Messages { generation: 0, epoch: 0, part: Arc::clone(&part), messages, charge }).await.unwrap();
        // a chunk fetched after it, before the stream found the error: stale
        tx.send(chunk(&prefetch, &part, 3..5)).await.unwrap();
        assert_eq!(s.next().await.unwrap().unwrap().offset, 0);
        assert_eq!(s.next().await.unwrap().unwrap().offset, 1);
        match s.next().await {
            Some(Err(Error::Fetch { offset: 2, partition: 0, source, .. })) => {
                assert!(matches!(source, gregor_protocol::Error::Compression { .. }), "{source}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(part.epoch.load(Ordering::Acquire), 1, "the fetcher fetches again from offset 2");
        assert_eq!(part.consumed.load(Ordering::Acquire), 2);
        // what the fetcher queues after catching up is read
        tx.send(chunk(&prefetch, &part, 2..4)).await.unwrap();
        let next = s.next().await.unwrap().unwrap();
        assert_eq!((next.offset, next.value.as_deref()), (2, Some("m2")), "the stale chunk was dropped");
        drop(tx);
        assert_eq!(s.next().await.unwrap().unwrap().offset, 3);
        assert!(s.next().await.is_none());
        assert_eq!(counts(&prefetch), [0, 0, 0, 0], "every chunk released");
    }

    #[test]
    fn a_commit_writes_what_was_delivered_once() {
        let st = PartitionState::new("t", 0, -1);
        assert_eq!(st.to_commit(), None, "nothing delivered, nothing stored");
        st.committable.store(4, Ordering::Release);
        assert_eq!(st.to_commit(), Some(4));
        st.committed.store(4, Ordering::Release);
        assert_eq!(st.to_commit(), None, "already committed");
        assert_eq!(PartitionState::new("t", 0, 7).to_commit(), None, "the stored offset is committed");
    }

    #[tokio::test]
    async fn an_error_taken_drops_its_token_and_wakes_the_fetchers() {
        let prefetch = Arc::new(Prefetch::default());
        let token = Arc::new(());
        let chunk = Chunk::Error {
            error: Error::Shutdown,
            generation: Some(0),
            charge: Some(Charge::held(&prefetch, 0, Some(Arc::clone(&token)))),
        };
        assert_eq!(Arc::strong_count(&token), 2);
        let woken = prefetch.room.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        drop(chunk);
        tokio::time::timeout(Duration::from_secs(1), woken).await.expect("the fetchers are woken");
        assert_eq!(Arc::strong_count(&token), 1);
        assert_eq!(counts(&prefetch), [0, 0, 0, 0]);
    }
}

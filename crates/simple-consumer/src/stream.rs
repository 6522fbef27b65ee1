//! [`MessageStream`]: one partition, read in order from an offset, until stopped.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::consumer::SimpleConsumer;
use crate::error::Result;
use crate::fetch::{FetchedMessage, PartitionData};

/// The shortest time between two polls that found nothing, whatever `fetch.wait.max.ms` is
/// (so `fetch.wait.max.ms=0` does not spin).
pub const MIN_EMPTY_POLL_INTERVAL: Duration = Duration::from_millis(10);

// beside the stream, so the consumer's module does not name this one, which names it
impl SimpleConsumer {
    /// A [`MessageStream`] over `topic`/`partition` from `offset`: long polls of
    /// `fetch.wait.max.ms`, one message (or batch) at a time, until stopped.
    pub fn stream(&self, topic: impl Into<String>, partition: i32, offset: i64) -> MessageStream {
        MessageStream::new(self.clone(), topic.into(), partition, offset)
    }
}

/// Reads one partition in offset order from a starting offset: each poll is a
/// [`SimpleConsumer::fetch`] long poll of `fetch.wait.max.ms`, whose messages are handed out
/// one at a time ([`MessageStream::next`], or as a [`futures_core::Stream`] for `StreamExt`
/// and friends) or per fetch ([`MessageStream::next_batch`]).
/// Leader changes are handled by the fetch (metadata refresh and retry); every message is
/// returned once, in order, without gaps.
///
/// An error (say [`crate::Error::OffsetOutOfRange`], or leader retries that ran out) is
/// returned once per call and does not move the position: call again to retry,
/// [`MessageStream::seek`] elsewhere, or stop.
///
/// Stop it with [`MessageStream::stop`] or, from another task, a [`StopHandle`]: a poll in
/// flight is abandoned at once and every later call returns `None`. Dropping the stream stops
/// it too.
///
/// ```no_run
/// # async fn demo(consumer: gregor_simple_consumer::SimpleConsumer) -> gregor_simple_consumer::Result<()> {
/// let mut stream = consumer.stream("events", 0, 0);
/// let stop = stream.stop_handle();
/// tokio::spawn(async move {
///     tokio::time::sleep(std::time::Duration::from_secs(10)).await;
///     stop.stop();
/// });
/// while let Some(message) = stream.next().await {
///     let message = message?;
///     println!("{}: {:?}", message.offset, message.value);
/// }
/// # Ok(()) }
/// ```
pub struct MessageStream {
    consumer: SimpleConsumer,
    topic: String,
    partition: i32,
    position: i64,
    buffer: VecDeque<FetchedMessage>,
    high_watermark: Option<i64>,
    stop: StopHandle,
    stopped: watch::Receiver<bool>,
    /// The poll in flight, kept across cancelled calls. The mutex only makes the stream `Sync`:
    /// polls reach the future through `&mut self`, without locking.
    in_flight: Mutex<Option<PollFuture>>,
}

impl std::fmt::Debug for MessageStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let polling = self.in_flight.lock().map(|f| f.is_some()).unwrap_or(false);
        f.debug_struct("MessageStream")
            .field("topic", &self.topic)
            .field("partition", &self.partition)
            .field("position", &self.position)
            .field("buffered", &self.buffer.len())
            .field("high_watermark", &self.high_watermark)
            .field("stopped", &self.stop.is_stopped())
            .field("polling", &polling)
            .finish_non_exhaustive()
    }
}

/// One poll: the fetch's data, or `None` when the stream was stopped meanwhile.
type PollFuture = Pin<Box<dyn Future<Output = Result<Option<PartitionData>>> + Send>>;

/// Stops a [`MessageStream`] from anywhere (cheap to clone, `Send + Sync`).
#[derive(Debug, Clone)]
pub struct StopHandle {
    tx: Arc<watch::Sender<bool>>,
}

impl StopHandle {
    /// Stops the stream: a poll in flight is abandoned and the stream returns `None` from now
    /// on. Idempotent.
    pub fn stop(&self) {
        self.tx.send_replace(true);
    }

    /// True once [`StopHandle::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        *self.tx.borrow()
    }
}

impl MessageStream {
    pub(crate) fn new(consumer: SimpleConsumer, topic: String, partition: i32, offset: i64) -> MessageStream {
        let (tx, stopped) = watch::channel(false);
        MessageStream {
            consumer,
            topic,
            partition,
            position: offset,
            buffer: VecDeque::new(),
            high_watermark: None,
            stop: StopHandle { tx: Arc::new(tx) },
            stopped,
            in_flight: Mutex::new(None),
        }
    }

    /// The topic read.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The partition read.
    pub fn partition(&self) -> i32 {
        self.partition
    }

    /// The offset of the next message [`MessageStream::next`] returns (the offset to resume
    /// from, e.g. to store as the consumer's offset).
    pub fn position(&self) -> i64 {
        self.buffer.front().map_or(self.position, |m| m.offset)
    }

    /// The partition's high watermark as of the last fetch, `None` before the first.
    pub fn high_watermark(&self) -> Option<i64> {
        self.high_watermark
    }

    /// Committed messages not yet returned (high watermark minus position), `None` before the
    /// first fetch.
    pub fn lag(&self) -> Option<i64> {
        self.high_watermark.map(|hw| (hw - self.position()).max(0))
    }

    /// Goes on reading at `offset`, dropping what was fetched but not returned (and a poll in
    /// flight).
    pub fn seek(&mut self, offset: i64) {
        self.buffer.clear();
        self.position = offset;
        *self.in_flight.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Stops the stream (see [`StopHandle::stop`]).
    pub fn stop(&self) {
        self.stop.stop();
    }

    /// True once the stream was stopped.
    pub fn is_stopped(&self) -> bool {
        self.stop.is_stopped()
    }

    /// A handle that stops this stream from another task.
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// The next message; waits (long polls) until there is one. `None` once stopped.
    ///
    /// Cancel safety: cancel safe. A poll in flight is kept and taken up by the next call (or
    /// dropped by [`MessageStream::seek`]); no message is lost or skipped.
    ///
    /// # Errors
    ///
    /// `Some(Err(_))` with the errors of [`SimpleConsumer::fetch_partition`]; the position does
    /// not move.
    pub async fn next(&mut self) -> Option<Result<FetchedMessage>> {
        std::future::poll_fn(|cx| self.poll_message(cx)).await
    }

    /// Every message of the next fetch that returned any (or what is left of the last one);
    /// waits until there is at least one. `None` once stopped.
    ///
    /// Cancel safety: as [`MessageStream::next`].
    ///
    /// # Errors
    ///
    /// As [`MessageStream::next`].
    pub async fn next_batch(&mut self) -> Option<Result<Vec<FetchedMessage>>> {
        std::future::poll_fn(|cx| loop {
            if self.is_stopped() {
                return Poll::Ready(None);
            }
            if let Some(last) = self.buffer.back() {
                self.position = last.offset + 1;
                return Poll::Ready(Some(Ok(self.buffer.drain(..).collect())));
            }
            match ready!(self.poll_fetch(cx)) {
                Some(Ok(())) => {}
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => return Poll::Ready(None),
            }
        })
        .await
    }

    /// The stream's one poll function for messages (behind `next` and `Stream::poll_next`).
    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<FetchedMessage>>> {
        loop {
            if self.is_stopped() {
                return Poll::Ready(None);
            }
            if let Some(m) = self.buffer.pop_front() {
                self.position = m.offset + 1;
                return Poll::Ready(Some(Ok(m)));
            }
            match ready!(self.poll_fetch(cx)) {
                Some(Ok(())) => {}
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => return Poll::Ready(None),
            }
        }
    }

    /// Drives one fetch at the position into the buffer (starting it if none is in flight):
    /// `Some(Ok(()))` when it is done, `None` when the stream was stopped.
    fn poll_fetch(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<()>>> {
        let slot = self.in_flight.get_mut().unwrap_or_else(|p| p.into_inner());
        let fetch = slot.get_or_insert_with(|| {
            fetch_once(self.consumer.clone(), self.topic.clone(), self.partition, self.position, self.stopped.clone())
        });
        let done = ready!(fetch.as_mut().poll(cx));
        *slot = None;
        Poll::Ready(match done {
            Ok(None) => None,
            Ok(Some(data)) => {
                self.high_watermark = Some(data.high_watermark);
                let position = self.position;
                self.buffer.extend(data.messages.into_iter().filter(|m| m.offset >= position));
                Some(Ok(()))
            }
            Err(e) => Some(Err(e)),
        })
    }
}

/// One fetch at `position`; after one that brought nothing new, waits out the rest of
/// [`MIN_EMPTY_POLL_INTERVAL`] or `fetch.wait.max.ms`. `None` when stopped meanwhile.
fn fetch_once(
    consumer: SimpleConsumer,
    topic: String,
    partition: i32,
    position: i64,
    mut stopped: watch::Receiver<bool>,
) -> PollFuture {
    Box::pin(async move {
        let started = Instant::now();
        let data = tokio::select! {
            biased;
            _ = stopped.wait_for(|s| *s) => return Ok(None),
            data = consumer.fetch_partition(&topic, partition, position) => data?,
        };
        if !data.messages.iter().any(|m| m.offset >= position) {
            let pause = consumer.config().fetch_wait_max().max(MIN_EMPTY_POLL_INTERVAL);
            let rest = pause.saturating_sub(started.elapsed());
            if !rest.is_zero() {
                tokio::select! {
                    biased;
                    _ = stopped.wait_for(|s| *s) => return Ok(None),
                    _ = tokio::time::sleep(rest) => {}
                }
            }
        }
        Ok(Some(data))
    })
}

/// The messages of [`MessageStream::next`], for `StreamExt` (futures, tokio-stream) and
/// friends; ends once stopped.
impl Stream for MessageStream {
    type Item = Result<FetchedMessage>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_message(cx)
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use gregor_protocol::Compression;
    use gregor_testkit::wire::{msg, produce, Conn};
    use gregor_testkit::zookeeper::ZooKeeperServer;
    use gregor_testkit::FakeCluster;

    use super::*;
    use crate::SimpleConsumerConfig;

    async fn produce_values(cluster: &FakeCluster, topic: &str, values: &[&str]) {
        let leader = cluster.leader(topic, 0).expect("a leader");
        let mut c = Conn::open(cluster.broker_addr(leader).expect("its address")).await;
        let r =
            c.call(0, &produce(topic, 0, 1, values.iter().map(|v| msg(None, v)).collect(), Compression::None)).await;
        assert_eq!(r.topics[0].partitions[0].error_code, 0);
    }

    fn text(m: &FetchedMessage) -> String {
        String::from_utf8(m.value.as_ref().expect("a value").to_vec()).unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_message_stream_is_a_stream_and_keeps_a_poll_across_cancelled_calls() {
        let Some(zk) = ZooKeeperServer::shared_or_skip() else { return };
        gregor_testkit::init_tracing();
        let cluster = FakeCluster::builder(zk.unique_chroot("simple_stream_trait")).brokers(1).start().await.unwrap();
        cluster.create_topic("s", 1, 1).await.unwrap();
        cluster.wait_for_leaders("s", Duration::from_secs(10)).await.unwrap();
        produce_values(&cluster, "s", &["a", "b", "c"]).await;
        let config = SimpleConsumerConfig::builder()
            .metadata_broker_list(cluster.bootstrap())
            .fetch_wait_max(Duration::from_millis(200))
            .build()
            .unwrap();
        let consumer = SimpleConsumer::new(config).unwrap();

        // StreamExt combinators
        let mut stream = consumer.stream("s", 0, 1);
        let got: Vec<String> = (&mut stream).take(2).map(|m| text(&m.unwrap())).collect().await;
        assert_eq!(got, ["b", "c"]);
        assert_eq!(stream.position(), 3);

        // a call cancelled while its long poll waits: the next call takes the poll up
        let waited = tokio::time::timeout(Duration::from_millis(50), stream.next()).await;
        assert!(waited.is_err(), "nothing to read yet");
        produce_values(&cluster, "s", &["d"]).await;
        let d = tokio::time::timeout(Duration::from_secs(10), StreamExt::next(&mut stream)).await.unwrap().unwrap();
        assert_eq!((d.as_ref().unwrap().offset, text(&d.unwrap())), (3, "d".to_owned()));

        // seek drops the poll in flight; stop ends the stream for StreamExt too
        let _ = tokio::time::timeout(Duration::from_millis(50), stream.next()).await;
        stream.seek(0);
        let a = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.unwrap().unwrap().unwrap();
        assert_eq!((a.offset, text(&a)), (0, "a".to_owned()));
        stream.stop();
        assert!(StreamExt::next(&mut stream).await.is_none());
    }
}

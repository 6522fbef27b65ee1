//! [`MessageStream`]: one partition, read in order from an offset, until stopped.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::consumer::SimpleConsumer;
use crate::error::Result;
use crate::fetch::FetchedMessage;

/// The shortest time between two polls that found nothing, whatever `fetch.wait.max.ms` is
/// (so `fetch.wait.max.ms=0` does not spin).
pub const MIN_EMPTY_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// Reads one partition in offset order from a starting offset: each poll is a
/// [`SimpleConsumer::fetch`] long poll of `fetch.wait.max.ms`, whose messages are handed out
/// one at a time ([`MessageStream::next`]) or per fetch ([`MessageStream::next_batch`]).
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
#[derive(Debug)]
pub struct MessageStream {
    consumer: SimpleConsumer,
    topic: String,
    partition: i32,
    position: i64,
    buffer: VecDeque<FetchedMessage>,
    high_watermark: Option<i64>,
    stop: StopHandle,
    stopped: watch::Receiver<bool>,
}

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

enum Poll {
    Stopped,
    Polled,
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

    /// Goes on reading at `offset`, dropping what was fetched but not returned.
    pub fn seek(&mut self, offset: i64) {
        self.buffer.clear();
        self.position = offset;
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
    /// Cancel safety: cancel safe. Dropping the future abandons the poll in flight; no
    /// message is lost or skipped, the next call fetches again from the same position.
    ///
    /// # Errors
    ///
    /// `Some(Err(_))` with the errors of [`SimpleConsumer::fetch_partition`]; the position does
    /// not move.
    pub async fn next(&mut self) -> Option<Result<FetchedMessage>> {
        loop {
            if self.is_stopped() {
                return None;
            }
            if let Some(m) = self.buffer.pop_front() {
                self.position = m.offset + 1;
                return Some(Ok(m));
            }
            match self.poll().await {
                Ok(Poll::Stopped) => return None,
                Ok(Poll::Polled) => {}
                Err(e) => return Some(Err(e)),
            }
        }
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
        loop {
            if self.is_stopped() {
                return None;
            }
            if let Some(last) = self.buffer.back() {
                self.position = last.offset + 1;
                return Some(Ok(self.buffer.drain(..).collect()));
            }
            match self.poll().await {
                Ok(Poll::Stopped) => return None,
                Ok(Poll::Polled) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// One fetch at the position into the buffer; after an empty one, waits out the rest of
    /// [`MIN_EMPTY_POLL_INTERVAL`] or `fetch.wait.max.ms`.
    async fn poll(&mut self) -> Result<Poll> {
        let started = Instant::now();
        let fetch = self.consumer.fetch_partition(&self.topic, self.partition, self.position);
        let data = tokio::select! {
            biased;
            _ = self.stopped.wait_for(|s| *s) => return Ok(Poll::Stopped),
            data = fetch => data?,
        };
        self.high_watermark = Some(data.high_watermark);
        let position = self.position;
        self.buffer.extend(data.messages.into_iter().filter(|m| m.offset >= position));
        if self.buffer.is_empty() {
            let pause = self.consumer.config().fetch_wait_max().max(MIN_EMPTY_POLL_INTERVAL);
            let rest = pause.saturating_sub(started.elapsed());
            if !rest.is_zero() {
                tokio::select! {
                    biased;
                    _ = self.stopped.wait_for(|s| *s) => return Ok(Poll::Stopped),
                    _ = tokio::time::sleep(rest) => {}
                }
            }
        }
        Ok(Poll::Polled)
    }
}

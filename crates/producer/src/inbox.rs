//! The way from the application's side to the background task: a queue of commands that the
//! task takes in whole batches.
//!
//! Why not `tokio::sync::mpsc::unbounded_channel`: it allocates a block per 32 commands and
//! moves each command in and out of it with a few atomic operations. Here a send is one
//! uncontended lock and a push into a `VecDeque` that keeps its capacity; the task swaps the
//! whole deque with its own (empty) one under the lock, so it takes everything queued with one
//! lock. A wake-up is sent only when the queue goes from empty to not empty (the task, which
//! empties it on every take, is asleep or about to look). The queue holds no more than the
//! producer's records (each `send` holds a place of `queue.buffering.max.messages` first) plus
//! a few flush/close commands.
//!
//! Records are encoded here, by the sending thread, into a buffer shared by many of them
//! ([`InboxSender::send_record`]): the application's key and value are dropped at once, on
//! the thread that made them, and a small record costs no allocation of its own on its way.
//! (Measured: with the values' memory freed by tokio's workers instead, the sending thread of
//! a multi-thread runtime spent about a third of its time in the allocator.) The background
//! task copies each small record out when it queues it: into its partition's blocks
//! (`crate::arena`), or into an allocation of its own ([`detach`]) while it waits for its
//! topic's metadata; so a record that waits long (a retry, a partition without a leader) never
//! keeps a whole shared buffer alive.
//!
//! The buffer is the sending thread's own (a thread local), and the encoding (the CRC, the
//! copy) happens before the lock is taken: threads sending at once encode in parallel and
//! hold the lock only for the push. A thread's buffer starts small and grows while the thread
//! keeps sending, so a thread that sent a few records keeps little.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::BytesMut;
use gregor_protocol::{EncodedMessage, Message};
use tokio::sync::Notify;

use crate::engine::Command;
use crate::record::{Pending, Slot, TopicName};

/// Records whose message is at most this long are encoded into the shared buffer; longer ones
/// get an allocation of their own (and the background task keeps it as it is).
pub(crate) const SHARED_MAX: usize = 8 * 1024;

/// The largest shared buffer: a new one is made when a message does not fit in what is left,
/// twice the size of the last (from [`FIRST_CHUNK`]) up to this.
const CHUNK: usize = 64 * 1024;

/// A thread's first shared buffer.
const FIRST_CHUNK: usize = 4 * 1024;

thread_local! {
    /// The sending thread's shared buffer (see the module docs), and the size it was made with.
    static CHUNK_OF_THREAD: std::cell::RefCell<(Option<BytesMut>, usize)> = const { std::cell::RefCell::new((None, 0)) };
}

/// Encodes a small message (`len` bytes encoded) into the sending thread's shared buffer; into
/// an allocation of its own when the thread's locals are gone (a send from a thread-local
/// destructor).
fn encode_shared(message: &Message, len: usize) -> Result<EncodedMessage, gregor_protocol::Error> {
    let shared = CHUNK_OF_THREAD.try_with(|chunk| {
        let (chunk, size) = &mut *chunk.borrow_mut();
        match chunk {
            Some(chunk) if chunk.capacity() - chunk.len() >= len => EncodedMessage::encode_into(message, chunk),
            _ => {
                *size = if *size == 0 { FIRST_CHUNK } else { (*size * 2).min(CHUNK) }.max(len);
                EncodedMessage::encode_into(message, chunk.insert(BytesMut::with_capacity(*size)))
            }
        }
    });
    shared.unwrap_or_else(|_| EncodedMessage::encode(message))
}

/// The message in an allocation of its own when it sits in a shared buffer (see the module
/// docs); as it is otherwise.
pub(crate) fn detach(message: &EncodedMessage) -> EncodedMessage {
    if message.len() <= SHARED_MAX {
        message.detached()
    } else {
        message.clone()
    }
}

/// Why [`InboxSender::send_record`] did not queue a record.
pub(crate) enum Refused {
    /// The task closed the inbox: the record, to be dropped (which delivers its Closed).
    Closed(Pending),
    /// The message could not be encoded (a key or value over `i32::MAX` bytes): the error,
    /// and the record's topic and slot back.
    Encode(gregor_protocol::Error, Arc<str>, Slot),
}

/// After a take, a deque keeping more room than this gives it back (a burst that filled the
/// queue does not hold its memory for the producer's lifetime).
const KEEP_CAPACITY: usize = 16 * 1024;

struct State {
    commands: VecDeque<Command>,
    /// The sender is gone (every producer handle dropped).
    sender_gone: bool,
    /// The receiver closed the queue: sends fail.
    closed: bool,
    /// The last record's topic, interned (see [`TopicName`]).
    last_topic: Option<TopicName>,
}

impl State {
    /// The interned name of `topic`: the last one's is reused when the names are equal, so
    /// the process-wide table is looked up only when the topic changes.
    fn topic_name(&mut self, topic: &str) -> TopicName {
        match self.last_topic {
            Some(name) if *name == *topic => name,
            _ => *self.last_topic.insert(TopicName::intern(topic)),
        }
    }
}

struct Queue {
    state: Mutex<State>,
    wake: Notify,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, State> {
        // a panic while holding the lock leaves the state consistent (pushes and swaps only)
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A new inbox: the application side and the task side.
pub(crate) fn inbox() -> (InboxSender, InboxReceiver) {
    let queue = Arc::new(Queue {
        state: Mutex::new(State { commands: VecDeque::new(), sender_gone: false, closed: false, last_topic: None }),
        wake: Notify::new(),
    });
    (InboxSender { queue: queue.clone() }, InboxReceiver { queue })
}

/// The application side (one per producer, shared by its clones). Dropping it tells the task
/// that no more commands will come.
pub(crate) struct InboxSender {
    queue: Arc<Queue>,
}

impl InboxSender {
    /// Queues a command; gives it back when the task has closed the inbox.
    #[allow(clippy::result_large_err)] // a record, moved back on the rare refusal
    pub(crate) fn send(&self, command: Command) -> Result<(), Command> {
        let state = self.queue.lock();
        if state.closed {
            return Err(command);
        }
        self.push(state, command);
        Ok(())
    }

    /// Queues `command` under the held lock (the caller checked that the inbox is open), and
    /// wakes the task when the queue was empty.
    fn push(&self, mut state: MutexGuard<'_, State>, command: Command) {
        state.commands.push_back(command);
        let first = state.commands.len() == 1;
        drop(state);
        if first {
            self.queue.wake.notify_one();
        }
    }

    /// Encodes a record (a small one into the thread's shared buffer), then queues it.
    #[allow(clippy::result_large_err)] // the record's parts, moved back on the rare refusal
    pub(crate) fn send_record(
        &self,
        topic: Arc<str>,
        partition: Option<i32>,
        message: &Message,
        slot: Slot,
    ) -> Result<(), Refused> {
        let len = message.encoded_len();
        let encoded = if len > SHARED_MAX { EncodedMessage::encode(message) } else { encode_shared(message, len) };
        let message = match encoded {
            Ok(m) => m,
            Err(e) => return Err(Refused::Encode(e, topic, slot)),
        };
        let mut state = self.queue.lock();
        // the background task numbers the records it takes; the application's `topic` is
        // dropped here, on its own thread
        let pending = Pending { seq: 0, topic: state.topic_name(&topic), partition, message, slot: Some(slot) };
        if state.closed {
            return Err(Refused::Closed(pending));
        }
        self.push(state, Command::Record(pending));
        Ok(())
    }
}

impl Drop for InboxSender {
    fn drop(&mut self) {
        self.queue.lock().sender_gone = true;
        self.queue.wake.notify_one();
    }
}

/// The task side.
pub(crate) struct InboxReceiver {
    queue: Arc<Queue>,
}

impl InboxReceiver {
    /// Waits until commands are queued and moves all of them to the end of `into` (which
    /// should be empty: it is swapped with the queue's deque when it is); false once the
    /// sender is gone and nothing is left. Cancel safe: commands move only when it returns.
    pub(crate) async fn recv_many(&mut self, into: &mut VecDeque<Command>) -> bool {
        loop {
            {
                let mut state = self.queue.lock();
                if !state.commands.is_empty() {
                    if into.is_empty() {
                        std::mem::swap(into, &mut state.commands);
                        if state.commands.capacity() > KEEP_CAPACITY {
                            state.commands.shrink_to(KEEP_CAPACITY);
                        }
                    } else {
                        into.extend(state.commands.drain(..));
                    }
                    return true;
                }
                if state.sender_gone {
                    return false;
                }
            }
            // a send between the unlock and this wait stored its wake-up in the Notify
            self.queue.wake.notified().await;
        }
    }

    /// Takes one queued command, without waiting.
    pub(crate) fn try_recv(&mut self) -> Option<Command> {
        self.queue.lock().commands.pop_front()
    }

    /// Refuses further sends; what is queued can still be taken.
    pub(crate) fn close(&mut self) {
        self.queue.lock().closed = true;
    }
}

impl Drop for InboxReceiver {
    fn drop(&mut self) {
        // commands left behind (the task stopped) deliver Closed when dropped; do it here,
        // outside the lock, and refuse later sends
        let left = {
            let mut state = self.queue.lock();
            state.closed = true;
            std::mem::take(&mut state.commands)
        };
        drop(left);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::record::FlushReport;

    fn flush() -> (Command, tokio::sync::oneshot::Receiver<FlushReport>) {
        let (reply, rx) = tokio::sync::oneshot::channel();
        (Command::Flush { reply }, rx)
    }

    #[tokio::test]
    async fn takes_everything_queued_in_order_and_wakes_on_the_first_send() {
        let (tx, mut rx) = inbox();
        let mut got = VecDeque::new();
        let waiter = tokio::spawn(async move {
            let mut got = VecDeque::new();
            assert!(rx.recv_many(&mut got).await);
            (rx, got.len())
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut replies = Vec::new();
        for _ in 0..3 {
            let (c, r) = flush();
            replies.push(r);
            assert!(tx.send(c).is_ok());
        }
        let (mut rx, first) = tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap();
        assert!((1..=3).contains(&first), "took {first}");
        if first < 3 {
            assert!(tokio::time::timeout(Duration::from_secs(5), rx.recv_many(&mut got)).await.unwrap());
            assert_eq!(first + got.len(), 3);
        }
        drop(tx);
        got.clear();
        assert!(!tokio::time::timeout(Duration::from_secs(5), rx.recv_many(&mut got)).await.unwrap());
    }

    #[tokio::test]
    async fn a_closed_inbox_gives_commands_back_and_drops_what_is_left() {
        let (tx, mut rx) = inbox();
        let (c, mut left) = flush();
        assert!(tx.send(c).is_ok());
        rx.close();
        let (c, _) = flush();
        assert!(tx.send(c).is_err(), "a closed inbox refuses");
        assert!(rx.try_recv().is_some(), "what was queued can still be taken");
        let (c, _) = flush();
        assert!(tx.send(c).is_err());
        drop(rx);
        // the taken command was dropped above: its reply channel is closed
        assert!(left.try_recv().is_err());
    }

    #[tokio::test]
    async fn the_sender_gone_ends_the_wait() {
        let (tx, mut rx) = inbox();
        let waiter = tokio::spawn(async move {
            let mut got = VecDeque::new();
            rx.recv_many(&mut got).await
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(tx);
        assert!(!tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap());
    }

    #[tokio::test]
    async fn threads_sending_at_once_each_encode_into_their_own_buffer_in_order() {
        let (tx, mut rx) = inbox();
        let tx = Arc::new(tx);
        const THREADS: usize = 4;
        const EACH: usize = 3000;
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    let mut receivers = Vec::with_capacity(EACH);
                    for i in 0..EACH {
                        let value = format!("thread {t} record {i}");
                        let message = Message::new(None, Some(bytes::Bytes::from(value)));
                        let (future, result) = tokio::sync::oneshot::channel();
                        assert!(tx.send_record(Arc::from("t"), Some(t as i32), &message, Slot::Future(future)).is_ok());
                        receivers.push(result);
                    }
                    // a thread that sent this much grew its buffer, and no further than the largest
                    let size = CHUNK_OF_THREAD.with(|c| c.borrow().1);
                    assert_eq!(size, CHUNK);
                    receivers
                })
            })
            .collect();
        let _receivers: Vec<_> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
        let mut got = VecDeque::new();
        while got.len() < THREADS * EACH {
            assert!(rx.recv_many(&mut got).await);
        }
        let mut next = [0usize; THREADS];
        for command in got {
            let Command::Record(p) = command else { panic!("only records were sent") };
            let t = p.partition.unwrap() as usize;
            let value = p.message.to_message().value.unwrap();
            assert_eq!(
                value,
                format!("thread {t} record {}", next[t]).as_bytes(),
                "each thread's records, whole and in order"
            );
            next[t] += 1;
        }
        assert_eq!(next, [EACH; THREADS]);
        // a thread that sends one record keeps a small buffer
        std::thread::spawn(move || {
            let message = Message::new(None, Some(bytes::Bytes::from_static(b"one")));
            let (future, _result) = tokio::sync::oneshot::channel();
            assert!(tx.send_record(Arc::from("t"), None, &message, Slot::Future(future)).is_ok());
            assert_eq!(CHUNK_OF_THREAD.with(|c| c.borrow().1), FIRST_CHUNK);
        })
        .join()
        .unwrap();
    }

    #[tokio::test]
    async fn records_carry_one_interned_name_per_topic_and_the_application_keeps_no_count() {
        let (tx, mut rx) = inbox();
        let message = Message::new(None, Some(bytes::Bytes::from_static(b"v")));
        let events: Arc<str> = Arc::from("inbox-test-events");
        // three records of one topic: one Arc shared, then an Arc of its own with the same
        // name; then another topic, then the first again
        let topics = [
            events.clone(),
            events.clone(),
            Arc::from("inbox-test-events"),
            Arc::from("inbox-test-other"),
            events.clone(),
        ];
        for topic in topics {
            let (future, _result) = tokio::sync::oneshot::channel();
            assert!(tx.send_record(topic, None, &message, Slot::Future(future)).is_ok());
        }
        // the inbox dropped the application's clones: only `events` itself is left
        assert_eq!(Arc::strong_count(&events), 1);
        let mut got = VecDeque::new();
        assert!(rx.recv_many(&mut got).await);
        let names: Vec<TopicName> = got
            .iter()
            .map(|c| match c {
                Command::Record(p) => p.topic,
                _ => panic!("a record was queued"),
            })
            .collect();
        assert_eq!(
            names.iter().map(|n| n.as_str()).collect::<Vec<_>>(),
            ["inbox-test-events", "inbox-test-events", "inbox-test-events", "inbox-test-other", "inbox-test-events"]
        );
        // equal names are one allocation, so `same` compares pointers
        assert!(names[0].same(names[1]) && names[0].same(names[2]) && names[0].same(names[4]));
        assert!(!names[0].same(names[3]));
        assert!(names[0].same(TopicName::intern("inbox-test-events")));
        assert!(!TopicName::intern("inbox-test-events-2").same(names[0]));
    }
}

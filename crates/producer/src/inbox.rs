//! The way from the application's side to the background task: a queue of commands that the
//! task takes in whole batches.
//!
//! Why not `tokio::sync::mpsc::unbounded_channel`: it allocates a block per 32 commands and
//! moves each command in and out of it with a few atomic operations. Here a send is one
//! uncontended lock and a push into a `VecDeque` that keeps its capacity; the task swaps the
//! whole deque with its own (empty) one under the lock, so it takes everything queued with one
//! lock. The queue holds no more than the
//! producer's records (each `send` holds a place of `queue.buffering.max.messages` first) plus
//! a few flush/close commands.
//!
//! Wake-ups: the task says, each time it waits, how many records (and message bytes) it wants
//! before it is woken ([`Wanted`]): one while nothing of its lingers, else as many as can come
//! without making a batch ready, since it wakes at the linger's end anyway. A wake-up is sent
//! once that much is queued, at once for a command (a flush, a close, a large record), for a
//! record of a topic not seen before (its metadata is to be asked for) and when a sender waits
//! for room in the queue ([`InboxSender::nudge`]); one wake-up per take at most. Why: waking the
//! task at the first record after each take woke it every hundred-odd records at 3 M msg/s on a
//! multi-thread runtime (7,000 wake-ups per million records, each a write to the runtime's
//! eventfd and a worker unparked); the task took a few records each time
//! (`benchmarks/timing/session-29.md`).
//!
//! The inbox holds at most [`MOST_QUEUED`] records between two takes: the one that fills it
//! wakes the task whatever it waits for, and a send then waits for the take
//! ([`InboxSender::taken`]) before it queues its record.
//!
//! Records are encoded here, by the sending thread ([`InboxSender::send_record`]): the
//! application's key and value are dropped at once, on the thread that made them, and a small
//! record costs no allocation of its own on its way. (Measured: with the values' memory freed
//! by tokio's workers instead, the sending thread of a multi-thread runtime spent about a
//! third of its time in the allocator.) The encoding (the CRC, the copy) happens in the
//! sending thread's scratch buffer before the lock is taken, so threads sending at once encode
//! in parallel; under the lock the message is copied to the end of the inbox's byte stream.
//! While the producer's rounds go out as RecordBatch v2, which has no CRC per message
//! (`crate::crc`), there is no CRC to compute: the message is encoded under the lock straight
//! into the stream, one copy of its key and value where the scratch buffer took two. Either
//! way the record itself is queued without it (a `Packed` record: topic, partition, length,
//! slot). The stream is made of blocks (4 KiB, doubling up to 64 KiB; a free block of the
//! producer's pool when there is one, and each filled one goes back to it: `crate::buffers`);
//! the task takes the blocks with the records, and [`Incoming::next`] gives each record its
//! message as a slice of its block. So the sending thread touches no reference count per
//! record: a record holding a handle on a shared buffer cost a count raised by the sending
//! thread and lowered by the task's, whose cache line moved between cores twice per record on
//! a multi-thread runtime.
//!
//! The background task copies each small record out when it queues it: to the end of its
//! partition's log (`crate::log`), or to its topic's held blocks (`crate::held`) while it waits
//! for its topic's metadata; so a record that waits long (a retry, a partition without a
//! leader, a topic being created) never keeps a whole block of the stream alive.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::{Bytes, BytesMut};
use gregor_protocol::{EncodedMessage, Message};
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;

use crate::buffers::Blocks;
use crate::crc::Crcs;
use crate::delivery::{CloseReport, FlushReport, Pending, Slot};
use crate::growth::reserve_one;
use crate::message::SHARED_MAX;
use crate::record::RecordExtra;
use crate::topic::{Topic, TopicId, TopicMap, TopicNames};

/// The largest block of the byte stream: a new block is made when a message does not fit in
/// what is left, twice the size of the last (from [`FIRST_BLOCK`]) up to this.
const BLOCK: usize = 64 * 1024;

/// The stream's first block.
const FIRST_BLOCK: usize = 4 * 1024;

/// A send spends a unit of the sending task's coop budget once in this many sends while the
/// background task has not been woken ([`InboxSender::yield_due`]).
const SENDS_PER_UNIT: u32 = 16;

thread_local! {
    /// The sends of this thread, counted for [`SENDS_PER_UNIT`].
    static SENDS: Cell<u32> = const { Cell::new(0) };
    /// Where the sending thread encodes a small message before it takes the lock (emptied
    /// for each send; as large as the largest small message the thread sent).
    static SCRATCH: std::cell::RefCell<BytesMut> = std::cell::RefCell::new(BytesMut::new());
}

/// What the application side sends to the engine.
pub(crate) enum Command {
    Record(Pending),
    Flush { reply: oneshot::Sender<FlushReport> },
    Close { deadline: Instant, reply: oneshot::Sender<CloseReport> },
}

/// Why [`InboxSender::send_record`] did not queue a record; the record's topic and slot come
/// back, for its one result.
pub(crate) enum Refused {
    /// The task closed the inbox.
    Closed(Topic, Slot),
    /// The message could not be encoded (a key or value over `i32::MAX` bytes).
    Encode(gregor_protocol::Error, Topic, Slot),
}

/// After a take, a deque keeping more room than this gives it back (a burst that filled the
/// queue does not hold its memory for the producer's lifetime): 4,096 places of 40 bytes.
/// With a full queue on a broker that takes milliseconds, the records that come while the task
/// is busy (a response's results, a round's compression) pile up here in bursts of thousands;
/// the inbox's two deques (the one being filled, the one the task took) each kept up to
/// 16,384 places (640 KiB) after their largest burst, resident beside everything else at the
/// client's peak. Keeping 4,096: snappy at a queue of 100,000, 158 -> 148.5 bytes above the
/// fixed part per message held (12 runs each), at 1,000,000 153 -> 143, none unchanged
/// (`benchmarks/timing/session-25.md`). Keeping 1,024 saved as much but cost system CPU (the
/// deques growing again): a third more per message at 1,000,000.
const KEEP_CAPACITY: usize = 4096;

/// The most records the inbox holds before a sender waits for the task to take them
/// ([`InboxSender::is_full`]). A record costs more here (its message as the sending thread
/// encoded it, and a 40-byte place) than once the task has copied it to its partition's log;
/// on a multi-thread runtime the sending loop goes on on one worker while the task is busy or
/// not running on the other, and without a bound up to two-fifths of a queue of 100,000 sat
/// here at a time (`benchmarks/timing/session-50.md` §4).
const MOST_QUEUED: usize = 8192;

/// What the task waits for before it is woken ([`InboxReceiver::recv_many`]): this many
/// records queued, or this many bytes of small records' messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wanted {
    pub(crate) records: usize,
    pub(crate) bytes: usize,
}

impl Wanted {
    /// The first record.
    pub(crate) const ANY: Wanted = Wanted { records: 1, bytes: 1 };
}

/// A small record in the inbox: its message is the next `len` bytes of the byte stream.
struct Packed {
    topic: TopicId,
    partition: Option<i32>,
    len: u32,
    slot: Slot,
}

/// A queued command. Boxed, so the queue's slots are the size of a packed record (40 bytes:
/// its topic is a number, its slot 16 bytes) whatever a command's size: flushes, closes and
/// large records are the rare ones.
enum Queued {
    Command(Box<Command>),
    Packed(Packed),
}

/// The inbox's byte stream: the messages of the packed records, one after the other.
#[derive(Default)]
struct Stream {
    /// Blocks filled since the last take.
    full: Vec<Bytes>,
    /// The block being filled (its spare capacity is the room left).
    block: BytesMut,
    /// The size of its allocation (0: none made yet).
    had: usize,
    /// The size of the next block (0: none made yet).
    next: usize,
    /// Bytes pushed since the last take.
    pushed: usize,
    /// The producer's pool (`crate::buffers`): a new block is a free one of it when there is
    /// one, and a block filled goes to it, to be used again (by the stream, a log or a
    /// compressed set) once the task has copied its records out.
    blocks: Blocks,
}

impl Stream {
    fn push(&mut self, message: &[u8]) {
        self.room(message.len());
        self.block.extend_from_slice(message);
        self.pushed += message.len();
    }

    /// Encodes `message` (`len` bytes) at the end of the stream, without its CRC
    /// (`crate::crc`): the one copy of its key and value on the sending thread.
    fn push_without_crc(&mut self, message: &Message, len: usize) -> Result<(), gregor_protocol::Error> {
        self.room(len);
        // nothing is written when the message cannot be encoded
        message.encode_without_crc(&mut self.block)?;
        self.pushed += len;
        Ok(())
    }

    /// Makes room for `len` more bytes in the block being filled: a new block when they do not
    /// fit.
    fn room(&mut self, len: usize) {
        if self.block.capacity() - self.block.len() < len {
            if !self.block.is_empty() {
                self.full.push(self.block.split().freeze());
            }
            let size = if self.next == 0 { FIRST_BLOCK } else { self.next };
            self.next = (size * 2).min(BLOCK);
            let size = size.max(len);
            let (block, had) = self.blocks.take(size);
            let filled = std::mem::replace(&mut self.block, block);
            let had = std::mem::replace(&mut self.had, had);
            if had > 0 {
                self.blocks.spend(filled, had);
            }
        }
    }

    /// Moves every byte pushed so far to the end of `into` (the block's spare room stays).
    fn take(&mut self, into: &mut VecDeque<Bytes>) {
        self.pushed = 0;
        into.extend(self.full.drain(..));
        if !self.block.is_empty() {
            into.push_back(self.block.split().freeze());
        }
    }
}

struct State {
    queued: VecDeque<Queued>,
    stream: Stream,
    /// The records' topics, as the producer's numbers.
    topics: TopicMap,
    /// The sender is gone (every producer handle dropped).
    sender_gone: bool,
    /// The receiver closed the queue: sends fail.
    closed: bool,
    /// What the task waits for (or last waited for).
    wanted: Wanted,
    /// A wake-up was sent since the last take, and whether the inbox is full. Written under
    /// the lock only; the senders also read them without the lock ([`InboxSender::yield_due`],
    /// [`InboxSender::is_full`]), through the queue's `Arc`.
    flags: Arc<Padded<Flags>>,
}

#[derive(Default)]
struct Flags {
    woken: AtomicBool,
    /// [`MOST_QUEUED`] records are queued since the last take (the task has been woken): a
    /// sender waits for the take.
    full: AtomicBool,
}

impl State {
    /// Queues `queued`; true when the task is to be woken (once the lock is let go): it was
    /// not since the last take and `urgent`, or the task has what it waits for.
    fn enqueue(&mut self, queued: Queued, urgent: bool) -> bool {
        reserve_one(&mut self.queued, usize::MAX);
        self.queued.push_back(queued);
        let full = self.queued.len() >= MOST_QUEUED;
        if full {
            self.flags.full.store(true, Ordering::Relaxed);
        }
        self.wake_if(urgent || full)
    }

    /// True (once per take) when `urgent` or the task has what it waits for.
    fn wake_if(&mut self, urgent: bool) -> bool {
        let wake = !self.is_woken() && (urgent || self.has_wanted());
        if wake {
            self.flags.woken.store(true, Ordering::Relaxed);
        }
        wake
    }

    fn is_woken(&self) -> bool {
        self.flags.woken.load(Ordering::Relaxed)
    }

    /// Lets the senders waiting for a take go on; true when any may be waiting (the caller
    /// wakes them once the lock is let go).
    fn unfill(&mut self) -> bool {
        self.flags.full.swap(false, Ordering::Relaxed)
    }

    fn has_wanted(&self) -> bool {
        self.queued.len() >= self.wanted.records || self.stream.pushed >= self.wanted.bytes
    }

    /// Moves everything queued to the end of `into`; true when senders may be waiting for it
    /// (the caller wakes them, [`Queue::taken`], once the lock is let go).
    #[must_use]
    fn take(&mut self, into: &mut Incoming) -> bool {
        self.flags.woken.store(false, Ordering::Relaxed);
        if into.queued.is_empty() {
            std::mem::swap(&mut into.queued, &mut self.queued);
            if self.queued.capacity() > KEEP_CAPACITY {
                self.queued.shrink_to(KEEP_CAPACITY);
            }
        } else {
            into.queued.extend(self.queued.drain(..));
        }
        self.stream.take(&mut into.stream);
        self.unfill()
    }
}

/// What the task took from the inbox, in the order it was sent: [`Incoming::next_raw`] gives
/// a packed record with its message's bytes, still in the stream's block;
/// [`Incoming::next`] makes it a [`Command::Record`] whose message shares the block. Dropping
/// it drops what is left the second way (each record delivers its Closed).
#[derive(Default)]
pub(crate) struct Incoming {
    queued: VecDeque<Queued>,
    /// The blocks of the stream; the packed records' messages, in the records' order (a
    /// message never spans two blocks).
    stream: VecDeque<Bytes>,
    /// Where the next message starts in the front block.
    at: usize,
}

/// A packed record as [`Incoming::next_raw`] gives it.
pub(crate) struct PackedRecord {
    pub(crate) topic: TopicId,
    pub(crate) partition: Option<i32>,
    pub(crate) slot: Slot,
}

/// What [`Incoming::next_raw`] gives.
pub(crate) enum Next<'a> {
    Command(Command),
    /// A small record and its message's bytes (laid out by `Message::encode`).
    Record(PackedRecord, &'a [u8]),
}

impl Incoming {
    pub(crate) fn is_empty(&self) -> bool {
        self.queued.is_empty()
    }

    /// The next command, or small record with its message's bytes.
    pub(crate) fn next_raw(&mut self) -> Option<Next<'_>> {
        match self.queued.pop_front()? {
            Queued::Command(command) => Some(Next::Command(*command)),
            Queued::Packed(Packed { topic, partition, len, slot }) => {
                let len = len as usize;
                if self.stream.front().is_some_and(|front| self.at + len > front.len()) {
                    // the front block is used up: the message is at the start of the next one
                    self.stream.pop_front();
                    self.at = 0;
                }
                let front = self.stream.front().expect("the stream holds every packed record's message");
                let bytes = &front[self.at..self.at + len];
                self.at += len;
                Some(Next::Record(PackedRecord { topic, partition, slot }, bytes))
            }
        }
    }

    /// The next command.
    pub(crate) fn next(&mut self) -> Option<Command> {
        match self.next_raw()? {
            Next::Command(command) => Some(command),
            Next::Record(PackedRecord { topic, partition, slot }, bytes) => {
                let message = EncodedMessage::from_bytes(Bytes::copy_from_slice(bytes))
                    .expect("the stream holds what Message::encode wrote");
                Some(Command::Record(Pending::new(topic, partition, message, Some(slot), None)))
            }
        }
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        while let Some(command) = self.next() {
            drop(command);
        }
    }
}

struct Queue {
    state: Mutex<State>,
    wake: Padded<Notify>,
    /// The state's flags.
    flags: Arc<Padded<Flags>>,
    /// Senders waiting for a take of a full inbox.
    taken: Notify,
    /// Whether the sending threads compute their messages' CRCs (`crate::crc`).
    crcs: Arc<Crcs>,
    /// The pool the stream's blocks come from and go back to (the state's stream has it).
    blocks: Blocks,
}

/// Its own cache lines (two 64-byte lines: adjacent-line prefetch pairs them): the task
/// writes the wake-up's state when it waits, the sending thread the queue's on every send.
#[repr(align(128))]
struct Padded<T>(T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, State> {
        // a panic while holding the lock leaves the state consistent (pushes and swaps only)
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A new inbox: the application side and the task side; the records' topics are registered in
/// `names`.
pub(crate) fn inbox(names: Arc<TopicNames>) -> (InboxSender, InboxReceiver) {
    let blocks = Blocks::default();
    let flags = Arc::new(Padded(Flags::default()));
    let queue = Arc::new(Queue {
        state: Mutex::new(State {
            queued: VecDeque::new(),
            stream: Stream { blocks: blocks.clone(), ..Stream::default() },
            topics: TopicMap::new(names),
            sender_gone: false,
            closed: false,
            wanted: Wanted::ANY,
            flags: flags.clone(),
        }),
        wake: Padded(Notify::new()),
        flags,
        taken: Notify::new(),
        crcs: Arc::new(Crcs::default()),
        blocks,
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
        self.push(state, Queued::Command(Box::new(command)));
        Ok(())
    }

    /// Queues a command under the held lock (the caller checked that the inbox is open), and
    /// wakes the task.
    fn push(&self, mut state: MutexGuard<'_, State>, queued: Queued) {
        let wake = state.enqueue(queued, true);
        drop(state);
        if wake {
            self.queue.wake.notify_one();
        }
    }

    /// Whether the next send spends a unit of its task's coop budget (tokio's: a task that
    /// has spent it yields at its next await). Every send does while the background task has
    /// been woken and has not taken what is queued yet: on a current-thread runtime it runs
    /// only once the sending task yields, and on a multi-thread one it waits in the sending
    /// worker's LIFO slot, which no other worker takes from. Otherwise one send in
    /// [`SENDS_PER_UNIT`] does, so a loop of sends still yields to the runtime's timers, I/O
    /// and other tasks now and then.
    ///
    /// Why not every send, as until session 45: a task that runs out of budget yields, and
    /// its worker polls the I/O driver (`epoll_wait`) before it runs the task again, and on
    /// a multi-thread runtime wakes another worker to look for work. With a full queue in
    /// front of slow brokers the sending task yielded every 128 records while the background
    /// task had nothing to do with them, and those yields were most of the producer's
    /// context switches and thread wake-ups (`benchmarks/timing/session-45.md`).
    pub(crate) fn yield_due(&self) -> bool {
        if self.queue.flags.woken.load(Ordering::Relaxed) {
            return true;
        }
        SENDS
            .try_with(|sends| {
                let n = sends.get().wrapping_add(1);
                sends.set(n);
                n % SENDS_PER_UNIT == 0
            })
            .unwrap_or(true)
    }

    /// Whether the inbox holds [`MOST_QUEUED`] records the task has not taken yet: the next
    /// send waits for the take first ([`InboxSender::taken`]).
    pub(crate) fn is_full(&self) -> bool {
        self.queue.flags.full.load(Ordering::Relaxed)
    }

    /// Waits until the task has taken what is queued (or closed the inbox), when the inbox is
    /// full. Cancel safe.
    pub(crate) async fn taken(&self) {
        loop {
            let taken = self.queue.taken.notified();
            tokio::pin!(taken);
            // registered before the check: a take after it wakes this wait (the take clears
            // the flag before it notifies; the Notify's lock orders the two for this check)
            taken.as_mut().enable();
            if !self.queue.flags.full.load(Ordering::Relaxed) {
                return;
            }
            taken.await;
        }
    }

    /// Wakes the task whatever it waits for, when anything is queued: a sender is about to wait
    /// for room in the queue, which only the records' results give back.
    pub(crate) fn nudge(&self) {
        let mut state = self.queue.lock();
        let wake = !state.queued.is_empty() && state.wake_if(true);
        drop(state);
        if wake {
            self.queue.wake.notify_one();
        }
    }

    /// Encodes a record and queues it. A small one is encoded into the thread's scratch
    /// buffer before the lock is taken, and copied into the inbox's byte stream under it; a
    /// large one into an allocation of its own. Under the lock its topic becomes the
    /// producer's number for the name, and the `Topic` is let go on this thread.
    #[allow(clippy::result_large_err)] // the record's parts, moved back on the rare refusal
    pub(crate) fn send_record(
        &self,
        topic: Topic,
        partition: Option<i32>,
        message: &Message,
        extra: Option<Box<RecordExtra>>,
        slot: Slot,
    ) -> Result<(), Refused> {
        let len = message.encoded_len();
        let mut slot = Some(slot);
        // a record with a timestamp or headers goes whole (its extra is an allocation anyway)
        if len <= SHARED_MAX && extra.is_none() {
            // under the lock: the message's bytes in the stream, then its record
            let queue = |mut state: MutexGuard<'_, State>, slot: &mut Option<Slot>| {
                let slot = slot.take().expect("a record has one slot");
                // a topic not seen before wakes the task (its metadata is to be asked for)
                let (topic, new) = state.topics.id_new(&topic);
                state.enqueue(Queued::Packed(Packed { topic, partition, len: len as u32, slot }), new)
            };
            // `Ok(Ok(Some(wake)))`: queued; `Ok(Ok(None))`: the inbox is closed, or the
            // scratch buffer is in use (a send from within a send on this thread: a waker that
            // sends); `Err`: the thread's locals are gone (a send from a thread-local
            // destructor). All but the first go the way of a large record below.
            let packed = if self.queue.crcs.skip_at_send() {
                // no CRC to compute: encoded straight into the stream, under the lock (as the
                // copy from the scratch buffer would be), with no scratch copy
                let mut state = self.queue.lock();
                if state.closed {
                    Ok(Ok(None))
                } else {
                    match state.stream.push_without_crc(message, len) {
                        Ok(()) => Ok(Ok(Some(queue(state, &mut slot)))),
                        Err(e) => Ok(Err(e)),
                    }
                }
            } else {
                SCRATCH.try_with(|scratch| {
                    let Ok(mut scratch) = scratch.try_borrow_mut() else { return Ok(None) };
                    scratch.clear();
                    message.encode(&mut scratch)?;
                    let mut state = self.queue.lock();
                    if state.closed {
                        return Ok(None);
                    }
                    state.stream.push(&scratch);
                    Ok(Some(queue(state, &mut slot)))
                })
            };
            match packed {
                Ok(Ok(Some(wake))) => {
                    // the wake-up outside the lock and the scratch buffer
                    if wake {
                        self.queue.wake.notify_one();
                    }
                    return Ok(());
                }
                Ok(Err(e)) => return Err(Refused::Encode(e, topic, slot.take().expect("not queued"))),
                Ok(Ok(None)) | Err(_) => {}
            }
        }
        let slot = slot.take().expect("not queued");
        let encoded = if self.queue.crcs.skip_at_send() {
            // without its CRC (`crate::crc`): for a megabyte's value, a megabyte not read
            let mut buf = BytesMut::new();
            message
                .encode_without_crc(&mut buf)
                .map(|()| EncodedMessage::from_bytes(buf.freeze()).expect("encode_without_crc lays out one message"))
        } else {
            EncodedMessage::encode(message)
        };
        let message = match encoded {
            Ok(m) => m,
            Err(e) => return Err(Refused::Encode(e, topic, slot)),
        };
        let mut state = self.queue.lock();
        if state.closed {
            drop(state);
            return Err(Refused::Closed(topic, slot));
        }
        // the background task numbers the records it takes
        let pending = Pending::new(state.topics.id(&topic), partition, message, Some(slot), extra.map(|e| *e));
        self.push(state, Queued::Command(Box::new(Command::Record(pending))));
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
    /// Whether the sending threads compute their messages' CRCs, for the engine to say
    /// (`crate::crc`).
    pub(crate) fn crcs(&self) -> Arc<Crcs> {
        self.queue.crcs.clone()
    }

    /// The pool the stream's blocks come from and go back to, for the producer's logs and
    /// compressed sets (`crate::buffers`).
    pub(crate) fn blocks(&self) -> Blocks {
        self.queue.blocks.clone()
    }

    /// Waits until what the task wants is queued (or a command, a record of a new topic, a
    /// sender waiting for room: see the module docs) and moves everything queued to the end of
    /// `into`; false once the sender is gone and nothing is left. Cancel safe: commands move
    /// only when it returns.
    pub(crate) async fn recv_many(&mut self, into: &mut Incoming, wanted: Wanted) -> bool {
        loop {
            {
                let mut state = self.queue.lock();
                state.wanted = wanted;
                if !state.queued.is_empty() && (state.is_woken() || state.sender_gone || state.has_wanted()) {
                    let taken = state.take(into);
                    drop(state);
                    if taken {
                        self.queue.taken.notify_waiters();
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

    /// Moves every queued command to the end of `into`, without waiting.
    pub(crate) fn try_recv_all(&mut self, into: &mut Incoming) {
        let taken = self.queue.lock().take(into);
        if taken {
            self.queue.taken.notify_waiters();
        }
    }

    /// Refuses further sends; what is queued can still be taken.
    pub(crate) fn close(&mut self) {
        let mut state = self.queue.lock();
        state.closed = true;
        // a sender waiting for a take goes on, to be refused
        let full = state.unfill();
        drop(state);
        if full {
            self.queue.taken.notify_waiters();
        }
    }
}

impl Drop for InboxReceiver {
    fn drop(&mut self) {
        // commands left behind (the task stopped) deliver Closed when dropped; do it here,
        // outside the lock, and refuse later sends
        let mut left = Incoming::default();
        {
            let mut state = self.queue.lock();
            state.closed = true;
            // a sender waiting for a take goes on, to be refused
            let _ = state.take(&mut left);
        }
        self.queue.taken.notify_waiters();
        drop(left);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::delivery::DeliveryResult;

    fn flush() -> (Command, tokio::sync::oneshot::Receiver<FlushReport>) {
        let (reply, rx) = tokio::sync::oneshot::channel();
        (Command::Flush { reply }, rx)
    }

    fn all(incoming: &mut Incoming) -> Vec<Command> {
        std::iter::from_fn(|| incoming.next()).collect()
    }

    fn value(command: &Command) -> Vec<u8> {
        let Command::Record(p) = command else { panic!("a record was queued") };
        p.message().to_message().value.unwrap().to_vec()
    }

    fn record(tx: &InboxSender, value: &[u8]) -> tokio::sync::oneshot::Receiver<DeliveryResult> {
        let message = Message::new(None, Some(bytes::Bytes::copy_from_slice(value)));
        let (future, result) = tokio::sync::oneshot::channel();
        assert!(tx.send_record(Topic::new("t"), None, &message, None, Slot::Future(future)).is_ok());
        result
    }

    #[test]
    fn a_queued_record_takes_a_slot_of_40_bytes() {
        assert_eq!(std::mem::size_of::<Queued>(), 40);
        // and as the engine queues it, its bytes in its partition's log
        assert_eq!(std::mem::size_of::<Pending>(), 24);
        assert_eq!(std::mem::size_of::<Option<Slot>>(), 16);
    }

    #[test]
    fn a_burst_taken_leaves_the_inbox_at_most_keep_capacity_places() {
        let (tx, mut rx) = inbox(TopicNames::new());
        let burst = 3 * KEEP_CAPACITY;
        for i in 0..burst {
            record(&tx, format!("{i}").as_bytes());
        }
        assert!(tx.queue.lock().queued.capacity() >= burst);
        let mut got = Incoming::default();
        rx.try_recv_all(&mut got);
        assert_eq!(all(&mut got).len(), burst);
        // the task's deque took the burst; the one the inbox has now was the task's (empty)
        assert!(got.queued.capacity() >= burst);
        // the next take swaps them back: the burst's deque gives back all but KEEP_CAPACITY
        record(&tx, b"next");
        rx.try_recv_all(&mut got);
        assert_eq!(all(&mut got).iter().map(value).collect::<Vec<_>>(), [b"next".to_vec()]);
        let kept = tx.queue.lock().queued.capacity();
        assert!(kept <= KEEP_CAPACITY, "the inbox kept {kept} places after a burst of {burst}");
        assert!(got.queued.capacity() <= KEEP_CAPACITY);
    }

    /// A task waiting in `rx` for `wanted`; gives back what it took.
    fn waiter(mut rx: InboxReceiver, wanted: Wanted) -> tokio::task::JoinHandle<(InboxReceiver, bool, Vec<Vec<u8>>)> {
        tokio::spawn(async move {
            let mut got = Incoming::default();
            let received = rx.recv_many(&mut got, wanted).await;
            let values = all(&mut got).iter().filter(|c| matches!(c, Command::Record(_))).map(value).collect();
            (rx, received, values)
        })
    }

    /// True when `task` is still waiting after a while (the wake-up did not come).
    async fn still_waiting<T>(task: &tokio::task::JoinHandle<T>) -> bool {
        tokio::time::sleep(Duration::from_millis(50)).await;
        !task.is_finished()
    }

    async fn finished<T>(task: tokio::task::JoinHandle<T>) -> T {
        tokio::time::timeout(Duration::from_secs(5), task).await.expect("woken").unwrap()
    }

    const THREE: Wanted = Wanted { records: 3, bytes: usize::MAX };

    #[tokio::test]
    async fn a_task_waiting_for_a_batchs_worth_is_woken_when_it_is_queued_not_before() {
        let (tx, rx) = inbox(TopicNames::new());
        // the first record of a topic wakes the task whatever it wants (metadata to ask for)
        let task = waiter(rx, THREE);
        record(&tx, b"0");
        let (rx, received, values) = finished(task).await;
        assert!(received);
        assert_eq!(values, [b"0".to_vec()]);
        // then the topic's records wake it at the third
        let task = waiter(rx, THREE);
        record(&tx, b"1");
        record(&tx, b"2");
        assert!(still_waiting(&task).await, "woken before its third record");
        record(&tx, b"3");
        let (rx, _, values) = finished(task).await;
        assert_eq!(values, [b"1".to_vec(), b"2".to_vec(), b"3".to_vec()]);
        // by bytes: one message's bytes and one more wake it at the second
        let one = Message::new(None, Some(bytes::Bytes::from_static(b"four"))).encoded_len();
        let task = waiter(rx, Wanted { records: 1000, bytes: one + 1 });
        record(&tx, b"four");
        assert!(still_waiting(&task).await, "woken before the bytes it wants");
        record(&tx, b"five");
        let (_, _, values) = finished(task).await;
        assert_eq!(values, [b"four".to_vec(), b"five".to_vec()]);
    }

    /// A send spends coop budget while the task has been woken and has not taken, and
    /// otherwise once in `SENDS_PER_UNIT` sends of the thread.
    #[test]
    fn sends_yield_while_the_task_is_woken_and_now_and_then_otherwise() {
        let (tx, mut rx) = inbox(TopicNames::new());
        let mut got = Incoming::default();
        // nothing sent: the task has not been woken
        let due = (0..SENDS_PER_UNIT * 4).filter(|_| tx.yield_due()).count();
        assert_eq!(due, 4, "one send in {SENDS_PER_UNIT}");
        // the first record of a topic wakes the task: every send yields until it takes
        record(&tx, b"new topic");
        assert!((0..SENDS_PER_UNIT * 2).all(|_| tx.yield_due()));
        rx.try_recv_all(&mut got);
        let due = (0..SENDS_PER_UNIT * 4).filter(|_| tx.yield_due()).count();
        assert_eq!(due, 4, "taken: one send in {SENDS_PER_UNIT} again");
        // a record of a known topic the task does not wait for does not wake it
        tx.queue.lock().wanted = THREE;
        record(&tx, b"1");
        assert_eq!((0..SENDS_PER_UNIT).filter(|_| tx.yield_due()).count(), 1);
        record(&tx, b"2");
        record(&tx, b"3");
        assert!(tx.yield_due(), "the third record woke it");
        rx.try_recv_all(&mut got);
        assert_eq!(all(&mut got).len(), 4);
        assert_eq!((0..SENDS_PER_UNIT).filter(|_| tx.yield_due()).count(), 1);
    }

    #[tokio::test]
    async fn a_command_a_nudge_or_the_senders_going_wake_the_task_at_once() {
        let (tx, rx) = inbox(TopicNames::new());
        record(&tx, b"known");
        let mut first = Incoming::default();
        let mut rx = rx;
        rx.try_recv_all(&mut first);
        // a flush, behind a record, whatever the task wants
        let task = waiter(rx, THREE);
        record(&tx, b"a");
        let (c, _reply) = flush();
        assert!(tx.send(c).is_ok());
        let (rx, _, values) = finished(task).await;
        assert_eq!(values, [b"a".to_vec()]);
        // a nudge (a sender waiting for room) with a record queued; none without
        let task = waiter(rx, THREE);
        tx.nudge();
        assert!(still_waiting(&task).await, "a nudge with nothing queued woke the task");
        record(&tx, b"b");
        assert!(still_waiting(&task).await);
        tx.nudge();
        let (rx, _, values) = finished(task).await;
        assert_eq!(values, [b"b".to_vec()]);
        // the sender's going: what is queued is taken, then the end
        let task = waiter(rx, THREE);
        record(&tx, b"c");
        assert!(still_waiting(&task).await);
        drop(tx);
        let (rx, received, values) = finished(task).await;
        assert!(received);
        assert_eq!(values, [b"c".to_vec()]);
        let (_, received, _) = finished(waiter(rx, THREE)).await;
        assert!(!received, "nothing left and no sender");
    }

    const ALL: Wanted = Wanted { records: usize::MAX, bytes: usize::MAX };

    /// `MOST_QUEUED` records queued wake the task whatever it waits for, and hold the senders
    /// until it takes them (or closes the inbox).
    #[tokio::test]
    async fn a_full_inbox_wakes_the_task_and_holds_the_senders_until_it_takes() {
        let (tx, mut rx) = inbox(TopicNames::new());
        let tx = Arc::new(tx);
        let mut got = Incoming::default();
        record(&tx, b"known");
        rx.try_recv_all(&mut got);
        assert_eq!(all(&mut got).len(), 1);
        // one short of full: the task waiting for more is not woken, and a sender goes on
        tx.queue.lock().wanted = ALL;
        let task = waiter(rx, ALL);
        for i in 0..MOST_QUEUED - 1 {
            record(&tx, format!("{i}").as_bytes());
        }
        assert!(!tx.is_full());
        assert!(still_waiting(&task).await, "woken before the inbox was full");
        tokio::time::timeout(Duration::from_secs(5), tx.taken()).await.expect("not full: no wait");
        // full: woken, and it takes them all
        record(&tx, b"last");
        let (mut rx, received, values) = finished(task).await;
        assert!(received);
        assert_eq!(values.len(), MOST_QUEUED);
        assert_eq!(values.last().unwrap(), b"last");
        assert!(!tx.is_full(), "taken");
        // a sender waits for the take, and only that long
        for i in 0..MOST_QUEUED {
            record(&tx, format!("{i}").as_bytes());
        }
        assert!(tx.is_full());
        let sender = tokio::spawn({
            let tx = tx.clone();
            async move { tx.taken().await }
        });
        assert!(still_waiting(&sender).await, "a sender went on while the inbox was full");
        rx.try_recv_all(&mut got);
        finished(sender).await;
        assert_eq!(all(&mut got).len(), MOST_QUEUED);
        // and a close lets it go on (to be refused)
        for i in 0..MOST_QUEUED {
            record(&tx, format!("{i}").as_bytes());
        }
        let sender = tokio::spawn({
            let tx = tx.clone();
            async move { tx.taken().await }
        });
        assert!(still_waiting(&sender).await);
        rx.close();
        finished(sender).await;
        assert!(!tx.is_full());
    }

    #[tokio::test]
    async fn takes_everything_queued_in_order_and_wakes_on_the_first_send() {
        let (tx, mut rx) = inbox(TopicNames::new());
        let mut got = Incoming::default();
        let waiter = tokio::spawn(async move {
            let mut got = Incoming::default();
            assert!(rx.recv_many(&mut got, Wanted::ANY).await);
            (rx, all(&mut got).len())
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
            assert!(tokio::time::timeout(Duration::from_secs(5), rx.recv_many(&mut got, Wanted::ANY)).await.unwrap());
            assert_eq!(first + all(&mut got).len(), 3);
        }
        drop(tx);
        assert!(!tokio::time::timeout(Duration::from_secs(5), rx.recv_many(&mut got, Wanted::ANY)).await.unwrap());
    }

    #[tokio::test]
    async fn a_closed_inbox_gives_commands_back_and_drops_what_is_left() {
        let (tx, mut rx) = inbox(TopicNames::new());
        let (c, mut left) = flush();
        assert!(tx.send(c).is_ok());
        rx.close();
        let (c, _) = flush();
        assert!(tx.send(c).is_err(), "a closed inbox refuses");
        let message = Message::new(None, Some(bytes::Bytes::from_static(b"late")));
        // encoded with its CRC, and without (crate::crc)
        for record_batch in [false, true] {
            rx.crcs().round_in(record_batch);
            let (future, _result) = tokio::sync::oneshot::channel();
            match tx.send_record(Topic::new("t"), None, &message, None, Slot::Future(future)) {
                Err(Refused::Closed(topic, Slot::Future(_))) => assert_eq!(topic, "t", "the record's parts come back"),
                _ => panic!("a closed inbox refuses records"),
            }
        }
        let mut got = Incoming::default();
        rx.try_recv_all(&mut got);
        assert!(got.next().is_some(), "what was queued can still be taken");
        let (c, _) = flush();
        assert!(tx.send(c).is_err());
        drop(rx);
        // the taken command was dropped above: its reply channel is closed
        assert!(left.try_recv().is_err());
    }

    #[tokio::test]
    async fn the_sender_gone_ends_the_wait() {
        let (tx, mut rx) = inbox(TopicNames::new());
        let waiter = tokio::spawn(async move {
            let mut got = Incoming::default();
            rx.recv_many(&mut got, Wanted::ANY).await
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(tx);
        assert!(!tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap());
    }

    #[tokio::test]
    async fn small_and_large_records_and_commands_keep_their_order_across_blocks() {
        keep_their_order_across_blocks(false).await;
    }

    /// The same with the producer's rounds going out as RecordBatch v2: the records are encoded
    /// without their CRC (`crate::crc`), the small ones straight into the stream.
    #[tokio::test]
    async fn records_sent_without_their_crc_keep_their_order_across_blocks() {
        keep_their_order_across_blocks(true).await;
    }

    async fn keep_their_order_across_blocks(without_crc: bool) {
        let (tx, mut rx) = inbox(TopicNames::new());
        if without_crc {
            rx.crcs().round_in(true);
        }
        let mut expected = Vec::new();
        let mut results = Vec::new();
        // 300-byte values fill the 4 KiB first block after 13 records and the blocks after it
        // (8, 16 ... 64 KiB); a large value and flushes go in between
        for i in 0..2000usize {
            if i % 500 == 250 {
                let big = vec![b'x'; SHARED_MAX + 1];
                results.push(record(&tx, &big));
                expected.push(Some(big));
            }
            if i % 300 == 7 {
                let (c, _r) = flush();
                assert!(tx.send(c).is_ok());
                expected.push(None);
            }
            let v = format!("{i:0>300}").into_bytes();
            results.push(record(&tx, &v));
            expected.push(Some(v));
        }
        let mut got = Incoming::default();
        assert!(rx.recv_many(&mut got, Wanted::ANY).await);
        let blocks: Vec<usize> = got.stream.iter().map(Bytes::len).collect();
        assert_eq!(got.at, 0);
        assert!(blocks.len() > 5, "several blocks: {blocks:?}");
        assert!(blocks[0] <= FIRST_BLOCK && blocks.iter().all(|&b| b <= BLOCK), "{blocks:?}");
        let got = all(&mut got);
        assert_eq!(got.len(), expected.len());
        for (command, expected) in got.iter().zip(&expected) {
            match expected {
                Some(v) => {
                    assert_eq!(&value(command), v);
                    let Command::Record(p) = command else { unreachable!("a record's value was read") };
                    let crc = crc32fast::hash(&p.message().as_bytes()[4..]);
                    assert_eq!(p.message().crc(), if without_crc { 0 } else { crc });
                }
                None => assert!(matches!(command, Command::Flush { .. })),
            }
        }
        // each record kept its slot: dropping it undelivered delivers Closed, with its value
        drop(got);
        for (mut r, v) in results.into_iter().zip(expected.into_iter().flatten()) {
            let error = r.try_recv().expect("a result").expect_err("dropped undelivered");
            assert!(matches!(error.error, crate::Error::Closed { .. }));
            assert_eq!(error.value.as_deref(), Some(&v[..]));
        }
    }

    /// The stream's filled blocks go to the producer's pool, and its new blocks are free ones
    /// from it once the task has copied the records out.
    #[tokio::test]
    async fn the_streams_blocks_come_from_the_pool_and_go_back_to_it() {
        let (tx, mut rx) = inbox(TopicNames::new());
        let blocks = rx.blocks();
        // 1,000-byte values: 4, 8 ... 64 KiB blocks, then 64 KiB ones
        let send = |n: usize| (0..n).map(|i| record(&tx, &format!("{i:0>1000}").into_bytes())).collect::<Vec<_>>();
        let mut results = send(400);
        let mut got = Incoming::default();
        assert!(rx.recv_many(&mut got, Wanted::ANY).await);
        let first: Vec<*const u8> = got.stream.iter().map(|b| b.as_ptr()).collect();
        assert!(first.len() >= 6, "{} blocks", first.len());
        assert_eq!(blocks.len(), first.len() - 1, "every block filled is in the pool; the last one is being filled");
        // records still in the task's hands: none of their blocks is free, new ones are made
        results.extend(send(70));
        assert!(blocks.free(FIRST_BLOCK).is_none(), "the taken records hold their blocks");
        // copied out and dropped: the next block is a 64 KiB one of theirs
        let taken = all(&mut got);
        assert_eq!(taken.len(), 400);
        drop(taken);
        let mut more = Incoming::default();
        assert!(rx.recv_many(&mut more, Wanted::ANY).await);
        drop(all(&mut more));
        results.extend(send(70));
        let mut last = Incoming::default();
        assert!(rx.recv_many(&mut last, Wanted::ANY).await);
        let reused: Vec<*const u8> = last.stream.iter().map(|b| b.as_ptr()).collect();
        assert!(reused.iter().any(|p| first.contains(p)), "a block of the first take again: {reused:?} {first:?}");
        assert_eq!(all(&mut last).len(), 70);
        drop(results);
    }

    #[tokio::test]
    async fn records_left_in_the_inbox_or_the_taken_batch_deliver_closed_with_their_value() {
        let (tx, mut rx) = inbox(TopicNames::new());
        let first = record(&tx, b"taken, not processed");
        let mut got = Incoming::default();
        assert!(rx.recv_many(&mut got, Wanted::ANY).await);
        let second = record(&tx, b"left in the inbox");
        let big = vec![b'x'; SHARED_MAX + 1];
        let third = record(&tx, &big);
        drop(got);
        drop(rx);
        for (mut r, v) in [(first, &b"taken, not processed"[..]), (second, b"left in the inbox"), (third, &big)] {
            let error = r.try_recv().expect("a result").expect_err("never sent");
            assert!(matches!(error.error, crate::Error::Closed { .. }));
            assert_eq!(error.value.as_deref(), Some(v));
            // the record carried its topic as the producer's number; its error has the name
            assert_eq!(error.topic, "t");
        }
    }

    #[tokio::test]
    async fn a_send_that_cannot_use_the_scratch_buffer_takes_an_allocation_of_its_own() {
        let (tx, mut rx) = inbox(TopicNames::new());
        let tx = Arc::new(tx);
        // the buffer in use (a send from within a send on this thread)
        let inner = SCRATCH.with(|scratch| {
            let _in_use = scratch.borrow_mut();
            record(&tx, b"inner")
        });
        let outer = record(&tx, b"outer");
        // a send from a thread-local destructor that runs after the buffer's: destructors run
        // in the reverse order of the locals' first use
        struct SendOnDrop(Arc<InboxSender>);
        impl Drop for SendOnDrop {
            fn drop(&mut self) {
                drop(record(&self.0, b"from a destructor"));
            }
        }
        thread_local! {
            static SENDER: std::cell::RefCell<Option<SendOnDrop>> = const { std::cell::RefCell::new(None) };
        }
        let sender = tx.clone();
        std::thread::spawn(move || {
            SENDER.with(|s| *s.borrow_mut() = Some(SendOnDrop(sender.clone())));
            drop(record(&sender, b"after the destructor's local"));
        })
        .join()
        .unwrap();
        let mut got = Incoming::default();
        assert!(rx.recv_many(&mut got, Wanted::ANY).await);
        assert!(matches!(got.queued[0], Queued::Command(_)), "the inner send took its own allocation");
        assert!(matches!(got.queued[1], Queued::Packed(_)));
        assert!(matches!(got.queued[2], Queued::Packed(_)));
        assert!(matches!(got.queued[3], Queued::Command(_)), "the buffer was gone: an allocation of its own");
        let values: Vec<Vec<u8>> = all(&mut got).iter().map(value).collect();
        assert_eq!(values, [&b"inner"[..], b"outer", b"after the destructor's local", b"from a destructor"]);
        drop((inner, outer));
    }

    #[tokio::test]
    async fn threads_sending_at_once_each_keep_their_order() {
        let (tx, mut rx) = inbox(TopicNames::new());
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
                        assert!(tx
                            .send_record(Topic::new("t"), Some(t as i32), &message, None, Slot::Future(future))
                            .is_ok());
                        receivers.push(result);
                    }
                    // the scratch buffer holds one message at a time
                    assert!(SCRATCH.with(|s| s.borrow().capacity()) < 1024);
                    receivers
                })
            })
            .collect();
        let _receivers: Vec<_> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
        let mut got = Vec::new();
        let mut incoming = Incoming::default();
        while got.len() < THREADS * EACH {
            assert!(rx.recv_many(&mut incoming, Wanted::ANY).await);
            got.extend(all(&mut incoming));
        }
        let mut next = [0usize; THREADS];
        for command in got {
            let Command::Record(p) = command else { panic!("only records were sent") };
            let t = p.partition().unwrap() as usize;
            let value = p.message().to_message().value.unwrap();
            assert_eq!(
                value,
                format!("thread {t} record {}", next[t]).as_bytes(),
                "each thread's records, whole and in order"
            );
            next[t] += 1;
        }
        assert_eq!(next, [EACH; THREADS]);
    }
}

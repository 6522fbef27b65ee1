//! A record's way to its result: [`Pending`] (a record on its way, with its [`Slot`]) and the
//! places a result goes ([`DeliveryFuture`], [`Callback`], [`DeliveryHandler`]); the reports
//! of a flush and a close.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use gregor_protocol::{EncodedMessage, Message};
use tokio::sync::oneshot;

use crate::blocks::{Pack, Packed, Queued};
use crate::error::{DeliveryError, Error};
use crate::record::RecordMetadata;
use crate::topic::{Topic, TopicId};

/// The result of a record: where it went, or why it did not. The error is boxed: it carries
/// the record's key and value and is the rare case, so a result moves through the producer
/// and to the application in 32 bytes rather than 160.
pub type DeliveryResult = Result<RecordMetadata, Box<DeliveryError>>;

/// Resolves to the record's [`DeliveryResult`] once the producer is done with it: acknowledged,
/// failed for good, or abandoned by `close`. Every record gets exactly one result, even when
/// the producer is dropped or its runtime shuts down (then an [`Error::Closed`]).
///
/// Dropping the future does not cancel the record; its result is then discarded. Cancel safe.
#[derive(Debug)]
#[must_use = "the delivery result says whether the record reached the broker"]
pub struct DeliveryFuture {
    pub(crate) rx: oneshot::Receiver<DeliveryResult>,
}

impl Future for DeliveryFuture {
    type Output = DeliveryResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx).poll(cx).map(|r| {
            r.unwrap_or_else(|_| {
                // unreachable in practice: a record that is dropped delivers Closed first
                Err(Box::new(DeliveryError {
                    topic: Topic::unknown(),
                    partition: None,
                    attempts: 0,
                    error: Error::Closed { in_flight: false },
                    key: None,
                    value: None,
                }))
            })
        })
    }
}

/// A callback given a record's result, on the producer's delivery task: keep it short (the
/// results after it wait for it; the sending does not). It runs on a tokio worker: wrap a
/// blocking call in `tokio::task::block_in_place`, or it holds up that worker's other tasks.
pub type Callback = Box<dyn FnOnce(DeliveryResult) + Send + 'static>;

/// Receives the results of records sent with
/// [`send_with_handler`](crate::AsyncProducer::send_with_handler), each with the `opaque` value
/// given to that send — librdkafka's delivery report callback and `msg_opaque`.
///
/// One handler serves many records: a send clones the `Arc` (no allocation per record, where
/// a boxed callback costs one). Called on the producer's delivery task, one result after
/// another in each partition's offset order: keep it short (the results after it wait for it;
/// the sending does not), and wrap a blocking call in `tokio::task::block_in_place`; a panic
/// in it is caught and logged.
///
/// Closures `Fn(u64, DeliveryResult)` are handlers:
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use gregor_producer::DeliveryHandler;
///
/// let delivered = Arc::new(AtomicU64::new(0));
/// let d = delivered.clone();
/// let handler: Arc<dyn DeliveryHandler> = Arc::new(move |_opaque: u64, result: gregor_producer::DeliveryResult| {
///     if result.is_ok() {
///         d.fetch_add(1, Ordering::Relaxed);
///     }
/// });
/// # let _ = handler;
/// ```
pub trait DeliveryHandler: Send + Sync + 'static {
    /// The result of the record sent with `opaque`.
    fn on_delivery(&self, opaque: u64, result: DeliveryResult);
}

impl<F> DeliveryHandler for F
where
    F: Fn(u64, DeliveryResult) + Send + Sync + 'static,
{
    fn on_delivery(&self, opaque: u64, result: DeliveryResult) {
        self(opaque, result)
    }
}

/// Where a record's result goes: 16 bytes, as every queued record has one. A static handler is
/// named by its place in the process's table of them ([`StaticHandlers`]); a callback's box
/// and an `Arc` handler with its opaque are boxed once more (a callback allocates anyway; an
/// `Arc` handler costs a 24-byte allocation per record, where a static one costs none).
pub(crate) enum Slot {
    Future(oneshot::Sender<DeliveryResult>),
    Callback(Box<Callback>),
    Handler(Box<(Arc<dyn DeliveryHandler>, u64)>),
    /// A handler of [`StaticHandlers`] by its index, and the record's opaque.
    StaticHandler(u32, u64),
}

impl Slot {
    /// The slot of a record whose result goes to `callback`.
    pub(crate) fn callback(callback: Callback) -> Slot {
        Slot::Callback(Box::new(callback))
    }

    /// The slot of a record whose result goes to `handler` with `opaque`.
    pub(crate) fn handler(handler: Arc<dyn DeliveryHandler>, opaque: u64) -> Slot {
        Slot::Handler(Box::new((handler, opaque)))
    }

    /// The slot of a record whose result goes to the static `handler` with `opaque`: by its
    /// index in the process's table, or (past the table's [`STATIC_HANDLERS`] handlers) as an
    /// `Arc` handler forwarding to it.
    pub(crate) fn static_handler(handler: &'static dyn DeliveryHandler, opaque: u64) -> Slot {
        match StaticHandlers::index_of(handler) {
            Some(index) => Slot::StaticHandler(index, opaque),
            None => Slot::handler(Arc::new(Forward(handler)), opaque),
        }
    }
}

/// How many distinct static handlers a process's table holds.
const STATIC_HANDLERS: usize = 256;

/// The static handlers records were sent with, by index: a record names its handler with 4
/// bytes instead of a 16-byte reference. Filled once per handler, never emptied (the handlers
/// live as long as the process anyway); read without a lock.
pub(crate) struct StaticHandlers;

static TABLE: [std::sync::OnceLock<&'static dyn DeliveryHandler>; STATIC_HANDLERS] =
    [const { std::sync::OnceLock::new() }; STATIC_HANDLERS];

/// How many entries of [`TABLE`] are taken; held while one is added.
static TAKEN: std::sync::Mutex<usize> = std::sync::Mutex::new(0);

thread_local! {
    /// The handler this thread sent with last, and its index.
    static LAST: std::cell::Cell<Option<(&'static dyn DeliveryHandler, u32)>> = const { std::cell::Cell::new(None) };
}

impl StaticHandlers {
    /// `handler`'s index, added to the table the first time; `None` when the table is full.
    fn index_of(handler: &'static dyn DeliveryHandler) -> Option<u32> {
        // the same object and vtable (two zero-sized handlers may share an address)
        let same = |a: &'static dyn DeliveryHandler| std::ptr::eq(a, handler);
        if let Some((last, index)) = LAST.get() {
            if same(last) {
                return Some(index);
            }
        }
        let mut taken = TAKEN.lock().unwrap_or_else(|p| p.into_inner());
        let found = (0..*taken).find(|&i| TABLE[i].get().is_some_and(|h| same(*h)));
        let index = match found {
            Some(i) => i,
            None if *taken < STATIC_HANDLERS => {
                let _ = TABLE[*taken].set(handler);
                *taken += 1;
                *taken - 1
            }
            None => return None,
        };
        let index = index as u32;
        LAST.set(Some((handler, index)));
        Some(index)
    }

    /// The handler at `index`.
    fn get(index: u32) -> Option<&'static dyn DeliveryHandler> {
        TABLE.get(index as usize).and_then(|h| h.get().copied())
    }
}

/// A static handler past the table's size, as an `Arc` handler.
struct Forward(&'static dyn DeliveryHandler);

impl DeliveryHandler for Forward {
    fn on_delivery(&self, opaque: u64, result: DeliveryResult) {
        self.0.on_delivery(opaque, result);
    }
}

/// A record on its way: encoded, with its delivery slot. Dropping it undelivered delivers
/// [`Error::Closed`], so every record gets one result.
///
/// 24 bytes: a queued record sent with a static handler is this and its message's bytes in its
/// partition's log (see `crate::log`), and while it waits in its partition's queue only 8 of
/// them (packed, see `crate::blocks`); one sent with a future, a callback or an `Arc` handler
/// keeps its slot in a 16-byte box. A record that carries more keeps it in a box ([`Full`]):
/// a topic number and a message of its own while it is not in a log (on its way in, held for
/// metadata, failed), the partition the application asked for, a timestamp or headers.
pub(crate) struct Pending {
    /// Order of arrival at the background task (set there).
    pub(crate) seq: u64,
    what: What,
}

/// What a [`Pending`] holds besides its number.
enum What {
    /// Nothing but its result's place: a static handler's index and the record's opaque.
    Static(u32, u64),
    /// Nothing at all (a record of the observer's, queued).
    Bare,
    /// Nothing but its result's place, a future, a callback or an `Arc` handler (16 bytes
    /// boxed).
    Slot(Box<Slot>),
    /// Anything else.
    Full(Box<Full>),
}

/// A [`Pending`] that holds more than a static handler's place.
struct Full {
    slot: Option<Slot>,
    /// Its topic, as its producer numbers it (see `crate::topic`), on its way in (a queued
    /// record's is its partition's).
    topic: Option<TopicId>,
    /// The partition the application asked for.
    partition: Option<i32>,
    /// Its message, while its bytes are not in a log or batch (on its way in, held for
    /// metadata, or failed); the placeholder otherwise.
    message: EncodedMessage,
    /// A timestamp or headers the application gave (RecordBatch v2 only).
    extra: Option<crate::record::RecordExtra>,
}

/// The message of a record whose bytes are elsewhere (see `crate::message::placeholder`).
static PLACEHOLDER: std::sync::LazyLock<EncodedMessage> = std::sync::LazyLock::new(crate::message::placeholder);

impl Pending {
    /// A record of `topic` (numbered 0: the background task numbers it).
    pub(crate) fn new(
        topic: TopicId,
        partition: Option<i32>,
        message: EncodedMessage,
        slot: Option<Slot>,
        extra: Option<crate::record::RecordExtra>,
    ) -> Pending {
        let full = Full { slot, topic: Some(topic), partition, message, extra };
        Pending { seq: 0, what: What::Full(Box::new(full)) }
    }

    /// A record whose message is elsewhere (in the inbox's block), with no partition asked for
    /// (its topic is its caller's business): boxed only for a slot other than a static
    /// handler's.
    pub(crate) fn bare(seq: u64, slot: Option<Slot>) -> Pending {
        let what = match slot {
            Some(Slot::StaticHandler(index, opaque)) => What::Static(index, opaque),
            None => What::Bare,
            Some(slot) => What::Slot(Box::new(slot)),
        };
        Pending { seq, what }
    }

    fn full(&self) -> Option<&Full> {
        match &self.what {
            What::Full(full) => Some(full),
            _ => None,
        }
    }

    /// Its box, made when it has none (its slot moved into it).
    fn full_mut(&mut self) -> &mut Full {
        if !matches!(self.what, What::Full(_)) {
            let slot = self.take_slot();
            self.what = What::Full(Box::new(Full::of(slot)));
        }
        match &mut self.what {
            What::Full(full) => full,
            _ => unreachable!("made above"),
        }
    }

    /// True while its result has a place to go (the observer's own records have none).
    pub(crate) fn has_slot(&self) -> bool {
        match &self.what {
            What::Static(..) | What::Slot(_) => true,
            What::Bare => false,
            What::Full(full) => full.slot.is_some(),
        }
    }

    /// Takes its result's place.
    fn take_slot(&mut self) -> Option<Slot> {
        match std::mem::replace(&mut self.what, What::Bare) {
            What::Static(index, opaque) => Some(Slot::StaticHandler(index, opaque)),
            What::Bare => None,
            What::Slot(slot) => Some(*slot),
            What::Full(mut full) => {
                let slot = full.slot.take();
                self.what = What::Full(full);
                slot
            }
        }
    }

    /// Its topic, as its producer numbers it, while it is on its way in, held or failed (a
    /// queued record's topic is its partition's).
    pub(crate) fn topic(&self) -> Option<TopicId> {
        self.full().and_then(|f| f.topic)
    }

    /// The partition the application asked for.
    pub(crate) fn partition(&self) -> Option<i32> {
        self.full().and_then(|f| f.partition)
    }

    /// Its message: the placeholder while its bytes are in a log or batch.
    pub(crate) fn message(&self) -> &EncodedMessage {
        self.full().map_or(&PLACEHOLDER, |f| &f.message)
    }

    /// Gives it its topic's number (it is no longer one of its partition's queued records).
    pub(crate) fn set_topic(&mut self, topic: TopicId) {
        self.full_mut().topic = Some(topic);
    }

    /// Gives it its message (its bytes are no longer in a log or batch).
    pub(crate) fn set_message(&mut self, message: EncodedMessage) {
        self.full_mut().message = message;
    }

    /// Its timestamp or headers, if the application gave any.
    pub(crate) fn extra(&self) -> Option<&crate::record::RecordExtra> {
        self.full().and_then(|f| f.extra.as_ref())
    }

    /// Its bytes went to its partition's log as a RecordBatch v2 record, its timestamp and
    /// headers with them: it keeps only its slot, in the smallest form that holds it.
    pub(crate) fn shed_all(&mut self) {
        if let What::Full(full) = &mut self.what {
            full.extra = None;
        }
        self.shed();
    }

    /// Its bytes went to its partition's log: it keeps only what the log does not hold (its
    /// slot, its timestamp and headers), in the smallest form that holds them.
    pub(crate) fn shed(&mut self) {
        let What::Full(full) = &mut self.what else { return };
        full.topic = None;
        full.partition = None;
        full.message = PLACEHOLDER.clone();
        if full.extra.is_none() {
            self.what = match full.slot.take() {
                Some(Slot::StaticHandler(index, opaque)) => What::Static(index, opaque),
                Some(slot) => What::Slot(Box::new(slot)),
                None => What::Bare,
            };
        }
    }
}

/// The handler index a packed record without a slot (an observer's own) carries.
const NO_HANDLER: u32 = u32::MAX;

/// A queued record sent with a static handler (or an observer's own) is kept in 8 bytes
/// rather than 24 while it waits in its partition's queue (see `crate::blocks`).
impl Pack for Pending {
    fn pack(mut self) -> Result<Packed, Pending> {
        let (handler, opaque) = match self.what {
            What::Static(index, opaque) => (index, opaque),
            What::Bare => (NO_HANDLER, 0),
            _ => return Err(self),
        };
        // its slot is in the packed form now: dropping the rest delivers nothing
        self.what = What::Bare;
        Ok(Packed { seq: self.seq, handler, opaque })
    }

    fn unpack(packed: Packed) -> Pending {
        let what = match packed.handler {
            NO_HANDLER => What::Bare,
            index => What::Static(index, packed.opaque),
        };
        Pending { seq: packed.seq, what }
    }
}

impl<'a> Queued<'a, Pending> {
    /// The record's order of arrival at the background task.
    pub(crate) fn seq(&self) -> u64 {
        match self {
            Queued::Kept(p) => p.seq,
            Queued::Packed(p) => p.seq,
        }
    }

    /// Its message: the placeholder while its bytes are in a log or batch (as a packed
    /// record's always are).
    pub(crate) fn message(&self) -> &'a EncodedMessage {
        match *self {
            Queued::Kept(p) => p.message(),
            Queued::Packed(_) => &PLACEHOLDER,
        }
    }

    /// True when it has a result to give (see [`Pending::has_slot`]).
    pub(crate) fn has_slot(&self) -> bool {
        match self {
            Queued::Kept(p) => p.has_slot(),
            Queued::Packed(p) => p.handler != NO_HANDLER,
        }
    }

    /// Its timestamp or headers, if the application gave any (a packed record has none).
    pub(crate) fn extra(&self) -> Option<&'a crate::record::RecordExtra> {
        match *self {
            Queued::Kept(p) => p.extra(),
            Queued::Packed(_) => None,
        }
    }
}

impl Full {
    /// A box holding `slot` and nothing else.
    fn of(slot: Option<Slot>) -> Full {
        Full { slot, topic: None, partition: None, message: PLACEHOLDER.clone(), extra: None }
    }
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("seq", &self.seq)
            .field("topic", &self.topic())
            .field("partition", &self.partition())
            .finish_non_exhaustive()
    }
}

impl Pending {
    /// A delivery error for this record of `topic`.
    pub(crate) fn error(
        &self,
        topic: Topic,
        partition: Option<i32>,
        attempts: u32,
        error: Error,
    ) -> Box<DeliveryError> {
        let Message { key, value, .. } = self.message().to_message();
        Box::new(DeliveryError { topic, partition: partition.or(self.partition()), attempts, error, key, value })
    }

    /// Hands the result to the future, callback or handler (a panicking callback is caught
    /// and logged with `topic`, so it cannot take the producer down).
    pub(crate) fn deliver(&mut self, result: DeliveryResult, topic: &str) {
        if let Some(slot) = self.take_slot() {
            slot.deliver(result, topic);
        }
    }
}

impl Slot {
    /// Hands `result` (of a record of `topic`) to the future, callback or handler.
    pub(crate) fn deliver(self, result: DeliveryResult, topic: &str) {
        match self {
            Slot::Future(tx) => {
                let _ = tx.send(result);
            }
            Slot::Callback(callback) => {
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| callback(result)));
                if outcome.is_err() {
                    tracing::error!(topic, "a delivery callback panicked");
                }
            }
            Slot::Handler(handler) => call_handler(&*handler.0, handler.1, result, topic),
            Slot::StaticHandler(index, opaque) => match StaticHandlers::get(index) {
                Some(handler) => call_handler(handler, opaque, result, topic),
                None => tracing::error!(topic, index, "a record named a static handler not in the table"),
            },
        }
    }
}

fn call_handler(handler: &dyn DeliveryHandler, opaque: u64, result: DeliveryResult, topic: &str) {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler.on_delivery(opaque, result)));
    if outcome.is_err() {
        tracing::error!(topic, opaque, "a delivery handler panicked");
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.has_slot() {
            // the rare path: the name read from the producer's names (which outlive its records)
            let topic = self.topic().and_then(|id| id.name()).map_or_else(Topic::unknown, Topic::from);
            let error = self.error(topic.clone(), None, 0, Error::Closed { in_flight: false });
            self.deliver(Err(error), &topic);
        }
    }
}

/// What [`flush`](crate::AsyncProducer::flush) found: the records queued before it that failed
/// (the others were delivered).
#[derive(Debug, Clone, Default)]
pub struct FlushReport {
    /// Every record that was queued before the flush and not delivered, in the order their
    /// results came.
    pub failed: Vec<DeliveryError>,
}

impl FlushReport {
    /// True when every record was delivered.
    pub fn is_ok(&self) -> bool {
        self.failed.is_empty()
    }
}

/// What [`close`](crate::AsyncProducer::close) could not deliver.
#[derive(Debug, Clone, Default)]
pub struct CloseReport {
    /// Every record held when `close` was called (or sent during it) that was not delivered:
    /// failed within the bound, or still queued or in flight when it ran out
    /// ([`Error::Closed`]).
    pub undelivered: Vec<DeliveryError>,
}

impl CloseReport {
    /// True when everything was delivered.
    pub fn is_ok(&self) -> bool {
        self.undelivered.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;
    use crate::record::RecordMetadata;

    /// Two handlers of no size: they may share an address, never an index.
    struct First;
    struct Second;

    static FIRST_GOT: AtomicU64 = AtomicU64::new(0);
    static SECOND_GOT: AtomicU64 = AtomicU64::new(0);

    impl DeliveryHandler for First {
        fn on_delivery(&self, opaque: u64, _: DeliveryResult) {
            FIRST_GOT.fetch_add(opaque, Ordering::Relaxed);
        }
    }

    impl DeliveryHandler for Second {
        fn on_delivery(&self, opaque: u64, _: DeliveryResult) {
            SECOND_GOT.fetch_add(opaque, Ordering::Relaxed);
        }
    }

    static FIRST: First = First;
    static SECOND: Second = Second;

    fn ok() -> DeliveryResult {
        Ok(RecordMetadata { topic: Topic::from("t"), partition: 0, offset: 0 })
    }

    #[test]
    fn a_static_handler_is_named_by_its_index_and_gets_its_own_results() {
        assert_eq!(std::mem::size_of::<Slot>(), 16);
        let (a, b) = (Slot::static_handler(&FIRST, 1), Slot::static_handler(&SECOND, 10));
        let (Slot::StaticHandler(i, 1), Slot::StaticHandler(j, 10)) = (&a, &b) else { panic!("by index") };
        assert_ne!(i, j, "distinct handlers, distinct indexes");
        let Slot::StaticHandler(again, 2) = Slot::static_handler(&FIRST, 2) else { panic!("by index") };
        assert_eq!(again, *i, "the same handler, the same index");
        a.deliver(ok(), "t");
        b.deliver(ok(), "t");
        assert_eq!((FIRST_GOT.load(Ordering::Relaxed), SECOND_GOT.load(Ordering::Relaxed)), (1, 10));
    }
}

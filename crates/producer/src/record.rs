//! Records in, delivery results out.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use gregor_protocol::{EncodedMessage, Message};
use tokio::sync::oneshot;

use crate::error::{DeliveryError, Error};

/// A record to send: a value, an optional key, a topic, and optionally the partition.
///
/// The topic is a [`Topic`], an interned name: `Record::new("events", v)` looks the name up
/// (without a lock when the thread's last record had the same topic), and an application can
/// make the `Topic` once and pass copies of it.
///
/// ```
/// use gregor_producer::Record;
///
/// let r = Record::new("events", "hello").with_key("user-7");
/// assert_eq!(r.key, Some("user-7"));
/// let pinned = Record::<(), _>::new("events", "to p2").with_partition(2);
/// assert_eq!(pinned.partition, Some(2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<K, V> {
    /// The topic.
    pub topic: Topic,
    /// The key: placed by the partitioner, stored with the message; `None` is the null key.
    pub key: Option<K>,
    /// The value.
    pub value: V,
    /// An explicit partition, overriding the partitioner.
    pub partition: Option<i32>,
}

impl<K, V> Record<K, V> {
    /// A record without key or explicit partition.
    pub fn new(topic: impl Into<Topic>, value: V) -> Record<K, V> {
        Record { topic: topic.into(), key: None, value, partition: None }
    }

    /// The same record with a key.
    pub fn with_key(mut self, key: K) -> Record<K, V> {
        self.key = Some(key);
        self
    }

    /// The same record sent to `partition`, whatever the partitioner says.
    pub fn with_partition(mut self, partition: i32) -> Record<K, V> {
        self.partition = Some(partition);
        self
    }
}

/// Where a delivered record went.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecordMetadata {
    /// The topic.
    pub topic: Topic,
    /// The partition.
    pub partition: i32,
    /// The record's offset in the partition; -1 with `request.required.acks=0` (the broker
    /// does not answer, so the offset is unknown and "delivered" means written to the socket).
    pub offset: i64,
}

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
                    topic: Topic::new(""),
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

/// Where a record's result goes.
pub(crate) enum Slot {
    Future(oneshot::Sender<DeliveryResult>),
    Callback(Callback),
    Handler(Arc<dyn DeliveryHandler>, u64),
    StaticHandler(&'static dyn DeliveryHandler, u64),
}

/// A topic name, interned: a `Copy` handle to one process-wide copy of the name, which
/// records and results carry without a reference count or an allocation.
///
/// (A record holding an `Arc<str>` had its count raised when the application cloned it and
/// lowered when the producer was done with it, and each result raised and lowered another:
/// four atomic operations per record, and on a multi-thread runtime its counter's cache line
/// moved between cores.) Each distinct name is allocated the first time the process sees it
/// and kept for the life of the process, as a Kafka client keeps the metadata of every topic
/// it sent to; equal names are the same pointer, so comparing two `Topic`s compares pointers.
///
/// Make one with [`Topic::new`] (or `Topic::from`, or let [`Record::new`] take a `&str` or a
/// `String`). Making one looks the name up: a thread's last name is kept, so a thread sending
/// to one topic takes no lock, but an application sending to many does better to make each
/// `Topic` once and reuse it. It derefs to `str`; hashing and ordering are those of the name.
///
/// ```
/// use gregor_producer::{Record, Topic};
///
/// let events = Topic::new("events");
/// assert_eq!(events, Topic::from(String::from("events")));
/// assert_eq!(events, "events");
/// assert!(events.starts_with("ev"));
/// let r: Record<(), &str> = Record::new(events, "hello");
/// assert_eq!(r.topic.as_str(), "events");
/// ```
#[derive(Clone, Copy)]
pub struct Topic(&'static str);

impl Topic {
    /// The interned name `name` (allocated the first time the process sees it).
    pub fn new(name: &str) -> Topic {
        thread_local! {
            static LAST: std::cell::Cell<Option<Topic>> = const { std::cell::Cell::new(None) };
        }
        // a thread's last name, without the process-wide lock; `try_with` fails only in a
        // thread-local destructor, which then takes the lock
        let cached = LAST.try_with(|last| last.get().filter(|t| t.0 == name)).ok().flatten();
        if let Some(topic) = cached {
            return topic;
        }
        let topic = Topic::intern(name);
        let _ = LAST.try_with(|last| last.set(Some(topic)));
        topic
    }

    fn intern(name: &str) -> Topic {
        static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
        // a panic under the lock leaves the set as it was (an insert is all that happens)
        let mut names = NAMES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let names = names.get_or_insert_with(HashSet::new);
        if let Some(known) = names.get(name) {
            return Topic(known);
        }
        let own: &'static str = Box::leak(Box::from(name));
        names.insert(own);
        Topic(own)
    }

    /// The name.
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::ops::Deref for Topic {
    type Target = str;

    fn deref(&self) -> &str {
        self.0
    }
}

impl AsRef<str> for Topic {
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl std::borrow::Borrow<str> for Topic {
    fn borrow(&self) -> &str {
        self.0
    }
}

impl PartialEq for Topic {
    /// Equal names are the same pointer.
    fn eq(&self, other: &Topic) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Topic {}

impl PartialEq<str> for Topic {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Topic {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for Topic {
    fn eq(&self, other: &String) -> bool {
        self.0 == other.as_str()
    }
}

impl std::hash::Hash for Topic {
    /// The name's hash (as `str`'s, which `Borrow<str>` needs).
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}

impl PartialOrd for Topic {
    fn partial_cmp(&self, other: &Topic) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Topic {
    /// By name.
    fn cmp(&self, other: &Topic) -> std::cmp::Ordering {
        self.0.cmp(other.0)
    }
}

impl From<&str> for Topic {
    fn from(name: &str) -> Topic {
        Topic::new(name)
    }
}

impl From<&String> for Topic {
    fn from(name: &String) -> Topic {
        Topic::new(name)
    }
}

impl From<String> for Topic {
    fn from(name: String) -> Topic {
        Topic::new(&name)
    }
}

impl From<Arc<str>> for Topic {
    fn from(name: Arc<str>) -> Topic {
        Topic::new(&name)
    }
}

impl From<Box<str>> for Topic {
    fn from(name: Box<str>) -> Topic {
        Topic::new(&name)
    }
}

impl From<Topic> for Arc<str> {
    fn from(topic: Topic) -> Arc<str> {
        Arc::from(topic.0)
    }
}

impl From<Topic> for String {
    fn from(topic: Topic) -> String {
        topic.0.to_owned()
    }
}

impl std::fmt::Display for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::fmt::Debug for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.0, f)
    }
}

/// A record on its way: encoded, with its delivery slot. Dropping it undelivered delivers
/// [`Error::Closed`], so every record gets one result.
pub(crate) struct Pending {
    /// Order of arrival at the background task (set there).
    pub(crate) seq: u64,
    pub(crate) topic: Topic,
    /// The partition the application asked for.
    pub(crate) partition: Option<i32>,
    pub(crate) message: EncodedMessage,
    pub(crate) slot: Option<Slot>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("seq", &self.seq)
            .field("topic", &self.topic)
            .field("partition", &self.partition)
            .finish_non_exhaustive()
    }
}

impl Pending {
    /// A delivery error for this record.
    pub(crate) fn error(&self, partition: Option<i32>, attempts: u32, error: Error) -> Box<DeliveryError> {
        let Message { key, value, .. } = self.message.to_message();
        Box::new(DeliveryError {
            topic: self.topic,
            partition: partition.or(self.partition),
            attempts,
            error,
            key,
            value,
        })
    }

    /// Hands the result to the future or the callback (a panicking callback is caught and
    /// logged, so it cannot take the producer down).
    pub(crate) fn deliver(&mut self, result: DeliveryResult) {
        if let Some(slot) = self.slot.take() {
            slot.deliver(result, &self.topic);
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
            Slot::Handler(handler, opaque) => call_handler(&*handler, opaque, result, topic),
            Slot::StaticHandler(handler, opaque) => call_handler(handler, opaque, result, topic),
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
        if self.slot.is_some() {
            let error = self.error(None, 0, Error::Closed { in_flight: false });
            self.deliver(Err(error));
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
    use super::*;

    #[test]
    fn equal_topic_names_are_one_pointer_whatever_they_were_made_from() {
        let events = Topic::new("record-test-events");
        let made = [
            Topic::from(String::from("record-test-events")),
            Topic::from(&String::from("record-test-events")),
            Topic::from(Arc::<str>::from("record-test-events")),
            Topic::from(Box::<str>::from("record-test-events")),
            // another name in between: the thread's last name is no longer this one
            {
                let _ = Topic::new("record-test-other");
                Topic::new("record-test-events")
            },
            std::thread::spawn(|| Topic::new("record-test-events")).join().unwrap(),
        ];
        for t in made {
            assert!(std::ptr::eq(t.as_str(), events.as_str()));
            assert_eq!(t, events);
        }
        let other = Topic::new("record-test-other");
        assert_ne!(other, events);
        assert!(!std::ptr::eq(other.as_str(), events.as_str()));
        assert_eq!(events, "record-test-events");
        assert_eq!(events.to_string(), "record-test-events");
        assert_eq!(format!("{events:?}"), "\"record-test-events\"");
    }

    #[test]
    fn a_topic_hashes_and_orders_as_its_name() {
        let set: HashSet<Topic> = [Topic::new("record-test-b"), Topic::new("record-test-a")].into_iter().collect();
        // Borrow<str>: looked up by the name
        assert!(set.contains("record-test-a"));
        assert!(!set.contains("record-test-c"));
        let mut sorted = [Topic::new("record-test-b"), Topic::new("record-test-c"), Topic::new("record-test-a")];
        sorted.sort();
        assert_eq!(
            sorted.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
            ["record-test-a", "record-test-b", "record-test-c"]
        );
    }

    #[test]
    fn a_record_takes_its_topic_as_a_name_or_a_topic() {
        let r: Record<(), &str> = Record::new("record-test-r", "v");
        let t = Topic::new("record-test-r");
        assert_eq!(r.topic, t);
        assert_eq!(Record::<(), &str>::new(t, "v"), r);
    }
}

//! The record accumulator: a pure state machine fed `now`. Records in, ready batches out.
//!
//! ```text
//!  hold(topic)  ──► held per topic (no partition yet: waiting for metadata)
//!                      │ take_held ─► the caller partitions them ─► append
//!  append(tp)   ──► per topic-partition queue: [retry batch?] [record record record ...]
//!                      │ leader known, not in flight, not backing off
//!  drain(now)   ──► one Round per broker that is ready and has no round in flight:
//!                      batches of at most batch.num.messages records in all
//!  done(batch) / retry(batch, not_before) / round_done(broker) ◄── the outcome of a round
//!                      (decided by crate::outcome)
//! ```
//!
//! Rules (each has a unit test below, and a proptest checks them under any interleaving):
//!
//! * **Ready** — a broker's partitions are sent when, for that broker: `batch.num.messages`
//!   records wait; or, with `batch.size`, a partition has a batch closed (the next record did
//!   not fit it); or one partition's oldest record has waited `queue.buffering.max.ms`; or a
//!   retry's backoff has passed; or the accumulator holds `queue.buffering.max.messages`
//!   records (full: everything is sent at once, to a broker with fewer than two rounds in
//!   flight); or a flush or close is running. A broker's round made ready by the linger alone
//!   waits until none of its rounds is in flight: a broker serves a connection's requests one
//!   at a time, so the records wait here, where later ones join them, rather than behind the
//!   first round in the broker's socket buffer ([`LINGERED_ROUNDS_AHEAD`]).
//! * **Rounds per broker** — at most `max_in_flight` (1 by default) rounds per broker in
//!   flight, each holding at most `batch.num.messages` records; the brokers are independent,
//!   so rounds to different brokers overlap.
//! * **Order per partition** — at most `max_in_flight` batches of a partition are in flight
//!   (one per round). A failed batch goes back to the *front* of its partition (ahead of later
//!   failed ones, by batch id) with its attempt count and a not-before time (`retry.backoff.ms`
//!   on: whether and when to retry is `crate::outcome`'s decision, the retry budget included),
//!   and the partition sends nothing new until its failed batches are
//!   sent again; each is sent alone (never merged with later records), as it was encoded. With
//!   `max_in_flight` 1 the log therefore holds a partition's records in send order; with more,
//!   a retried batch may land after a later batch that was already in flight.
//! * **Leaders** — a partition without a leader keeps its records until one is known; after
//!   `message.send.max.retries + 1` metadata rounds without one, its records are released as
//!   failed ([`Accumulator::end_metadata_round`]). The same bound applies to records held
//!   for a topic whose metadata never comes.
//! * **Batches of RecordBatch v2** — a partition whose leader takes RecordBatch v2
//!   ([`Accumulator::set_record_batches`]) has its records written as such as they are appended,
//!   its batches cut as they come (at `batch.num.messages` records), and a round takes such a
//!   batch whole or leaves it for the next round; Message v0 batches are cut where a round's
//!   count ends.
//! * **Batch bytes** — with `batch.size`, a record that does not fit its partition's open
//!   batch (its bytes as sent, uncompressed: Message v0 entries, or a RecordBatch v2's header
//!   and records) closes it and begins the next, in either format; one larger than the bound
//!   goes alone. A round takes at most one batch per partition, so no batch of more than one
//!   record is over the bound.
//! * **Delivery timeout** — with `delivery.timeout.ms`, [`Accumulator::expire`] takes out
//!   what waited that long and is not in flight: held records, batches waiting to be sent
//!   again, and queued records of a partition with no batch in flight or waiting (a
//!   RecordBatch v2 run whole).
//! * **Capacity** — [`Accumulator::len`] counts every record from `append`/`hold` until it is
//!   handed back by `done` or a release, in flight included.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use gregor_protocol::{EncodedMessage, MessageSet};
use tokio::time::Instant;

use crate::blocks::{Blocks, Pack, Queued};
use crate::held::{Held, HeldRecords};
use crate::log::{self, Appender, Log, RecordAppender, Spent, Stamps};

/// A broker id.
pub(crate) type BrokerId = i32;

/// Counts a record just queued (its bytes: what the log took in since `before`) towards its
/// partition's next chunk, and lists the partition once it has `chunk_bytes`.
fn count_loose<T>(
    q: &mut PartitionQueue<T>,
    before: usize,
    chunk_bytes: usize,
    tp: &PartitionKey,
    due: &mut Vec<PartitionKey>,
) {
    let added = q.log.used().saturating_sub(before);
    q.loose += 1;
    let was = q.loose_bytes;
    q.loose_bytes += if added == 0 { LARGE_WEIGHT } else { added };
    if was < chunk_bytes && q.loose_bytes >= chunk_bytes {
        due.push(tp.clone());
    }
}

/// The producer's queue key: a topic and one of its partitions (the public name of a
/// topic-partition is `gregor_protocol::TopicPartition`; this key shares its topic allocation).
/// Equality and order are the topic name's and the partition's; two keys sharing one topic
/// allocation compare without reading the names.
#[derive(Debug, Clone)]
pub(crate) struct PartitionKey {
    /// The topic (shared, so a key costs a reference count, not a copy).
    pub(crate) topic: Arc<str>,
    /// The partition.
    pub(crate) partition: i32,
}

impl PartitionKey {
    /// `topic`/`partition`.
    #[cfg(test)]
    pub(crate) fn new(topic: impl Into<Arc<str>>, partition: i32) -> PartitionKey {
        PartitionKey { topic: topic.into(), partition }
    }
}

impl PartialEq for PartitionKey {
    fn eq(&self, other: &Self) -> bool {
        self.partition == other.partition && (Arc::ptr_eq(&self.topic, &other.topic) || self.topic == other.topic)
    }
}

impl Eq for PartitionKey {}

impl std::hash::Hash for PartitionKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // the name's hash, as equality compares names
        (*self.topic).hash(state);
        self.partition.hash(state);
    }
}

impl PartialOrd for PartitionKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PartitionKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let topics = if Arc::ptr_eq(&self.topic, &other.topic) {
            std::cmp::Ordering::Equal
        } else {
            self.topic.cmp(&other.topic)
        };
        topics.then(self.partition.cmp(&other.partition))
    }
}

impl std::fmt::Display for PartitionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.topic, self.partition)
    }
}

/// The settings the accumulator obeys (from [`crate::ProducerConfig`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AccumulatorConfig {
    /// `batch.num.messages`: the most records per round, and the count that makes a broker
    /// ready.
    pub(crate) batch_num_messages: usize,
    /// `queue.buffering.max.ms`: how long a record waits for company.
    pub(crate) linger: Duration,
    /// `queue.buffering.max.messages`: at this many records everything is ready.
    pub(crate) capacity: usize,
    /// `message.send.max.retries`: a partition (or a topic) waits at most this plus one
    /// metadata rounds for a leader (a batch's sends are counted by `crate::outcome`).
    pub(crate) max_retries: u32,
    /// `max.in.flight.requests.per.connection`: rounds in flight per broker, and batches in
    /// flight per partition. 1 (the default) keeps every partition's order through retries;
    /// more pipelines requests, and a retried batch may then land after a later one.
    pub(crate) max_in_flight: usize,
    /// Eager compression: once a partition has taken in this many bytes since its last chunk
    /// (as its log counts them; a record appended without bytes, in the tests, counts as
    /// [`LARGE_WEIGHT`]), [`Accumulator::take_due_chunks`] lists it, and
    /// [`Accumulator::take_loose`] gives its records since then. 0: never.
    pub(crate) chunk_bytes: usize,
    /// `batch.size`: the most bytes of a partition's batch, uncompressed, as it is sent (its
    /// Message v0 entries; a RecordBatch v2's header and records); a record that does not fit
    /// its partition's open batch begins the next, and one larger than this goes alone. A
    /// partition with a batch so closed makes its broker ready. `None`: no bound.
    pub(crate) batch_bytes: Option<usize>,
    /// `delivery.timeout.ms`: a record not in flight this long after it arrived is taken out
    /// by [`Accumulator::expire`], to be failed. `None`: never.
    pub(crate) delivery_timeout: Option<Duration>,
}

/// A full accumulator sends a broker's queued records at once only while fewer than this many
/// of its rounds are in flight: one being served and one waiting behind it keep the broker
/// busy, and the records that come meanwhile make the next round. Sending at once whatever
/// was queued up to `max_in_flight` rounds cut a full queue into ever smaller requests: at a
/// queue of 2,000 on 6 partitions and 3 brokers, 127 records per Produce request (librdkafka:
/// 333) and twice librdkafka's system CPU.
const FULL_ROUNDS_AHEAD: usize = 2;

/// A round made ready by its records' linger alone (not by their number, a retry, a flush or a
/// full queue) goes to a broker only while fewer than this many of its rounds are in flight:
/// none. A broker serves one connection's requests one at a time (Kafka mutes a connection
/// from a request until its response is sent, the fake does the same), so a second round
/// would only wait in the broker's socket buffer behind the first; waiting in the accumulator
/// instead, the records that come meanwhile join it, and the broker serves one request where
/// it would have served several. It costs those records the network's round trip between the
/// first round's answer and the next round's arrival. `max_in_flight` still pipelines full
/// rounds. At a linger of 0, 6 partitions, acks=-1, snappy, 437,778 msg/s, 5 in flight: p99
/// 606 -> 475 us on an instant fake, 48.3 -> 16.6 ms on one with Kafka 0.8.2's timing (an
/// acks=-1 request takes 6 ms there: small rounds pipelined five deep queued behind each other
/// and the broker fell behind).
const LINGERED_ROUNDS_AHEAD: usize = 1;

/// A record is stamped with the arrival of the run it joins when it came within the linger
/// divided by this of the run's first record: its linger may then end up to that much early
/// (at a linger of 10 ms, 625 µs), never late. Why: with a full queue the engine takes records
/// in as places free up, a few per clock reading, and a run per reading cost 24 bytes for
/// every one or two records held (12 bytes per message at a queue of 100,000, heaptrack). At
/// a linger of zero every record is ready at once, whatever its stamp: one run takes them all.
const STAMP_SHARE: u32 = 16;

/// What a record appended without bytes in the log (the tests') counts towards
/// [`AccumulatorConfig::chunk_bytes`].
pub(crate) const LARGE_WEIGHT: usize = 8 * 1024;

/// Records of one partition sent together: one entry of a Produce request.
#[derive(Debug)]
pub(crate) struct Batch<T> {
    /// Unique within the accumulator.
    pub(crate) id: u64,
    /// Where it goes.
    pub(crate) tp: PartitionKey,
    /// The records, in order, those packed in their partition's queue still packed (8 bytes
    /// each, see `crate::blocks`).
    pub(crate) records: Blocks<T>,
    /// How many times it has been sent, counting the send it was drained for.
    pub(crate) attempts: u32,
    /// Its records' bytes as its partition's log gave them (uncompressed Message v0 entries,
    /// offsets 0 to n-1; `None` when they came without bytes, as in the tests): what the
    /// caller builds the set it sends from, and reads a record's message from (for its
    /// error, or the observer). Kept until its results, so a record holds no bytes of its own.
    pub(crate) plain: Option<MessageSet>,
    /// Its records' bytes as RecordBatch v2 records, when its partition's leader took them as
    /// it was cut (instead of `plain`): its round finishes the batch from them.
    pub(crate) run: Option<RecordRun>,
    /// The encoded message set, kept by the caller across retries so a batch is encoded once.
    pub(crate) encoded: Option<MessageSet>,
    /// What its records weigh in `queue.buffering.max.bytes` (the caller's business).
    pub(crate) held: usize,
    /// With `enable.idempotence`: the producer-id generation it was numbered for and its first
    /// record's sequence, given when it is first built (the caller's business).
    pub(crate) sequence: Option<(u64, i32)>,
    /// When its oldest record arrived: its `delivery.timeout.ms` runs from there.
    pub(crate) created: Instant,
}

impl<T> Batch<T> {
    /// Its records' bytes as uncompressed Message v0 entries: its `plain` set, or, for a batch
    /// built for a round (which keeps only the set it sent), read back from `encoded`.
    pub(crate) fn plain_or_sent(&self) -> Option<MessageSet> {
        self.plain
            .clone()
            .or_else(|| self.encoded.as_ref().and_then(log::plain_of))
            .or_else(|| self.run.as_ref().and_then(RecordRun::plain))
    }
}

/// The batches to send to one broker in one Produce request.
#[derive(Debug)]
pub(crate) struct Round<T> {
    /// The leader of every batch's partition.
    pub(crate) broker: BrokerId,
    /// At most one batch per partition.
    pub(crate) batches: Vec<Batch<T>>,
}

/// A record handed back without being sent (again): it ran out of metadata rounds, its
/// partition was removed, or the accumulator was emptied.
#[derive(Debug)]
pub(crate) struct Released<T> {
    /// The record's topic.
    pub(crate) topic: Arc<str>,
    /// Its partition, when it had been given one.
    pub(crate) partition: Option<i32>,
    /// How many times it was sent.
    pub(crate) attempts: u32,
    /// The record.
    pub(crate) record: T,
    /// Its message, when its bytes were in its partition's log or its batch (`None`: it kept
    /// them itself).
    pub(crate) message: Option<EncodedMessage>,
}

/// What [`Accumulator::expire`] takes out: what was not in flight `delivery.timeout.ms` after
/// it arrived.
#[derive(Debug)]
pub(crate) struct Expired<T> {
    /// Records never sent: held for their topic's metadata, or queued.
    pub(crate) released: Vec<Released<T>>,
    /// Batches that were waiting to be sent again, handed back as in flight: each goes to
    /// [`Accumulator::done`] (through the caller's failure path), as a failed round's would.
    pub(crate) batches: Vec<Batch<T>>,
}

#[derive(Debug)]
struct Retry<T> {
    batch: Batch<T>,
    not_before: Instant,
}

#[derive(Debug)]
struct PartitionQueue<T> {
    leader: Option<BrokerId>,
    queued: Blocks<T>,
    /// When the queued records arrived, as runs (the first arrival of a run and how many
    /// records in a row it stands for), oldest first; the counts add up to `queued.len()`.
    /// A run takes the records arriving within [`STAMP_SHARE`] of the linger after its first
    /// (see [`PartitionQueue::push`]): 24 bytes per run instead of per record.
    stamps: VecDeque<(Instant, usize)>,
    /// Failed batches waiting to be sent again, oldest first (by batch id).
    retry: VecDeque<Retry<T>>,
    /// Batches in flight.
    in_flight: usize,
    leaderless_rounds: u32,
    /// The queued records' bytes, one entry each, in order ([`Accumulator::try_append_with`]);
    /// its blocks are let go whenever the queue is emptied.
    log: Log,
    /// The last `loose` queued records came after the last chunk ([`Accumulator::take_loose`]),
    /// with about `loose_bytes` bytes.
    loose: usize,
    loose_bytes: usize,
    /// Its leader takes RecordBatch v2 ([`Accumulator::set_record_batches`]): its records are
    /// appended as such to `records` (see [`Appender`]), in runs cut as they come, and a round
    /// takes a run whole.
    whole: bool,
    /// The closed runs at the queue's front, oldest first (they add up to `closed` records);
    /// the records after them are the open run. A run is of one kind: whole (appended while
    /// `whole`, cut at `batch.num.messages`) or not (Message v0 entries, cut anywhere); a
    /// change of kind closes the open run.
    runs: VecDeque<Run>,
    closed: usize,
    /// The open run's kind and, for a whole one with bytes, its timestamps.
    open_whole: bool,
    open_stamps: Option<Stamps>,
    /// The open run's bytes (as its log took them in), for `batch.size`.
    open_bytes: usize,
    /// The RecordBatch v2 records of its whole runs, in order ([`Log::push_record`]).
    records: Log,
}

/// A closed run of a partition's queued records (see [`PartitionQueue::runs`]).
#[derive(Debug, Clone, Copy)]
struct Run {
    count: usize,
    whole: bool,
    /// A whole run's timestamps, when its records came with bytes.
    stamps: Option<Stamps>,
}

/// A batch's RecordBatch v2 records as its partition's log gave them (its records section in
/// parts, offset deltas 0 to `count - 1`), to be finished (header, CRC, codec) by its round.
#[derive(Debug, Clone)]
pub(crate) struct RecordRun {
    pub(crate) parts: Vec<bytes::Bytes>,
    pub(crate) count: usize,
    pub(crate) stamps: Stamps,
}

impl RecordRun {
    /// Its bytes in all.
    pub(crate) fn len(&self) -> usize {
        self.parts.iter().map(bytes::Bytes::len).sum()
    }

    /// The batch as its round sends it: `codec`, and `producer` (id, epoch, first sequence)
    /// when idempotent.
    ///
    /// # Errors
    ///
    /// The codec's.
    pub(crate) fn finish(
        &self,
        codec: gregor_protocol::Compression,
        producer: Option<(i64, i16, i32)>,
    ) -> Result<MessageSet, gregor_protocol::Error> {
        self.finish_with(codec, producer, MessageSet::copied)
    }

    /// [`RecordRun::finish`], a compressed batch kept by `keep` (in the producer's blocks:
    /// `crate::buffers`).
    ///
    /// # Errors
    ///
    /// The codec's.
    pub(crate) fn finish_with(
        &self,
        codec: gregor_protocol::Compression,
        producer: Option<(i64, i16, i32)>,
        keep: impl FnOnce(&[u8]) -> MessageSet,
    ) -> Result<MessageSet, gregor_protocol::Error> {
        let summary = gregor_protocol::record::RecordsSummary {
            count: i32::try_from(self.count).unwrap_or(i32::MAX),
            base_timestamp: self.stamps.first,
            max_timestamp: self.stamps.max,
            producer,
        };
        gregor_protocol::record::finish_records_with(&self.parts, summary, codec, keep)
    }

    /// Its records read back (offsets from 0; keys and values slices of its parts, each of
    /// whole records as the log's blocks hold them).
    pub(crate) fn records(&self) -> impl Iterator<Item = Result<gregor_protocol::Record, gregor_protocol::Error>> + '_ {
        let first = self.stamps.first;
        self.parts.iter().flat_map(move |part| gregor_protocol::record::section_records(part.clone(), first))
    }

    /// Its records as uncompressed Message v0 entries (keys and values; what a failure or the
    /// observer reads); `None` when they cannot be read.
    pub(crate) fn plain(&self) -> Option<MessageSet> {
        let messages: Result<Vec<_>, _> =
            self.records().map(|r| r.map(|r| gregor_protocol::Message::new(r.key, r.value))).collect();
        MessageSet::from_messages(messages.ok()?, gregor_protocol::Compression::None).ok()
    }
}

impl<T: Pack> PartitionQueue<T> {
    fn new(leader: Option<BrokerId>) -> Self {
        PartitionQueue {
            leader,
            queued: Blocks::default(),
            stamps: VecDeque::new(),
            retry: VecDeque::new(),
            in_flight: 0,
            leaderless_rounds: 0,
            log: Log::default(),
            loose: 0,
            loose_bytes: 0,
            whole: false,
            runs: VecDeque::new(),
            closed: 0,
            open_whole: false,
            open_stamps: None,
            open_bytes: 0,
            records: Log::default(),
        }
    }

    /// Records in the open run.
    fn open(&self) -> usize {
        self.queued.len() - self.closed
    }

    /// Closes the open run (when it has records).
    fn close_open(&mut self) {
        let stamps = self.open_stamps.take();
        self.close_open_with(stamps);
    }

    /// Closes the open run (when it has records), with `stamps` as its timestamps.
    fn close_open_with(&mut self, stamps: Option<Stamps>) {
        let count = self.open();
        if count > 0 {
            self.runs.push_back(Run { count, whole: self.open_whole, stamps });
            self.closed += count;
        }
        self.open_bytes = 0;
    }

    /// The bytes the open run may still take under `batch.size` (`usize::MAX` without a bound
    /// or while it is empty: a record always fits an empty run).
    fn room(&self, batch_bytes: Option<usize>) -> usize {
        match batch_bytes {
            Some(most) if self.open() > 0 => {
                let header = if self.open_whole { gregor_protocol::record::BATCH_HEADER_SIZE } else { 0 };
                most.saturating_sub(header + self.open_bytes)
            }
            _ => usize::MAX,
        }
    }

    /// Before a record is appended: a run of the other kind is closed, and the open run takes
    /// the queue's kind.
    fn begin_append(&mut self) {
        if self.open_whole != self.whole {
            self.close_open();
            self.open_whole = self.whole;
        }
    }

    /// Queues a record that arrived at `enqueued_at`; it joins the last run of arrivals when
    /// it came at most `share` after that run's first (not before it: a record that waited
    /// for its topic's metadata comes with its own earlier arrival, and starts a run).
    /// A whole open run is closed when it reaches `bound` records (call after
    /// [`PartitionQueue::begin_append`]).
    fn push(&mut self, record: T, enqueued_at: Instant, share: Duration, bound: usize) {
        self.queued.push_back(record);
        match self.stamps.back_mut() {
            Some((at, n)) if enqueued_at >= *at && enqueued_at.duration_since(*at) <= share => *n += 1,
            _ => self.stamps.push_back((enqueued_at, 1)),
        }
        if self.open_whole && self.open() >= bound {
            self.close_open();
        }
    }

    /// How many records its next batch from the queue takes, at most `budget` (the request's
    /// records left; at least 1): its first run (the open one when none is closed) whole when
    /// it is a whole one, and `None` when that does not fit the budget; of other records as
    /// many as the budget takes, up to the next run.
    fn next_take(&self, budget: usize) -> Option<usize> {
        let (count, whole) = match self.runs.front() {
            Some(run) => (run.count, run.whole),
            None => (self.open(), self.open_whole),
        };
        if whole {
            (count <= budget).then_some(count)
        } else {
            Some(budget.min(count))
        }
    }

    /// [`PartitionQueue::room`] as the inbox counts what comes (`crate::inbox`: each record's
    /// Message v0, 12 bytes less than its entry here), so the engine is woken once the record
    /// that closes the open run may have come: for a Message v0 run, the entries of the run's
    /// average size that still fit and one more, less their entry headers; a RecordBatch v2
    /// run's records are smaller than their messages, so its room as it is.
    fn wake_room(&self, batch_bytes: Option<usize>) -> usize {
        let room = self.room(batch_bytes);
        if room == usize::MAX || self.open_whole {
            return room;
        }
        let entry = (self.open_bytes / self.open().max(1)).max(1);
        (room / entry + 1).saturating_mul(entry.saturating_sub(log::ENTRY_HEADER))
    }

    /// When the oldest queued record arrived.
    fn oldest(&self) -> Option<Instant> {
        self.stamps.front().map(|(at, _)| *at)
    }

    /// Takes the `n` oldest queued records (`n` at most [`PartitionQueue::next_take`] gives:
    /// within the first run, all of it when it is whole) and their bytes: Message v0 entries,
    /// or a whole run's RecordBatch v2 records.
    fn take(&mut self, n: usize, spent: &mut Spent) -> (Blocks<T>, Option<MessageSet>, Option<RecordRun>) {
        let records = self.queued.split_front(n);
        // a take from the open run (none closed before it) leaves what is left of its bytes
        let from_open = self.runs.is_empty();
        let (whole, stamps) = match self.runs.front_mut() {
            Some(run) => {
                debug_assert!(n <= run.count && (!run.whole || n == run.count), "a take within its run");
                let kind = (run.whole, run.stamps);
                run.count -= n.min(run.count);
                self.closed -= n.min(self.closed);
                if run.count == 0 {
                    self.runs.pop_front();
                }
                kind
            }
            None => {
                let kind = (self.open_whole, self.open_stamps);
                if self.open() == 0 {
                    self.open_stamps = None;
                }
                kind
            }
        };
        let (plain, run) = match (whole, stamps) {
            (true, Some(stamps)) => {
                let parts = self.records.take_records(n, spent);
                (None, Some(RecordRun { parts, count: n, stamps }))
            }
            (true, None) => (None, None),
            (false, _) => (self.log.take(n, spent), None),
        };
        if from_open {
            // what is left of the open run keeps its bytes
            let taken = match (&plain, &run) {
                (Some(set), _) => set.len(),
                (_, Some(run)) => run.len(),
                _ => 0,
            };
            self.open_bytes = if self.open() == 0 { 0 } else { self.open_bytes.saturating_sub(taken) };
        }
        if self.loose > self.queued.len() {
            // the batch took loose records: what is left of them stays loose
            self.loose_bytes = self.loose_bytes * self.queued.len() / self.loose;
            self.loose = self.queued.len();
        }
        let mut left = n;
        while left > 0 {
            let Some(front) = self.stamps.front_mut() else { break };
            if front.1 <= left {
                left -= front.1;
                self.stamps.pop_front();
            } else {
                front.1 -= left;
                left = 0;
            }
        }
        debug_assert_eq!(self.stamps.iter().map(|(_, n)| n).sum::<usize>(), self.queued.len());
        if self.queued.is_empty() {
            self.log.release(spent);
            self.records.release(spent);
        }
        (records, plain, run)
    }

    /// Takes every queued record, run by run, with its bytes.
    fn take_all(&mut self, spent: &mut Spent) -> Vec<(Blocks<T>, Option<MessageSet>, Option<RecordRun>)> {
        let mut all = Vec::new();
        while !self.queued.is_empty() {
            let n = self.next_take(usize::MAX).unwrap_or(self.queued.len());
            all.push(self.take(n, spent));
        }
        all
    }

    fn has_data(&self) -> bool {
        !self.retry.is_empty() || !self.queued.is_empty()
    }

    /// Records that would go in the next batch (the retry batch, else the queue).
    fn pending(&self) -> usize {
        match self.retry.front() {
            Some(r) => r.batch.records.len(),
            None => self.queued.len(),
        }
    }

    /// True when the next batch may be sent now (ignoring the triggers).
    fn sendable(&self, now: Instant) -> bool {
        match self.retry.front() {
            Some(r) => r.not_before <= now,
            None => !self.queued.is_empty(),
        }
    }
}

/// What a broker's sendable partitions hold, to tell whether a round goes to it
/// ([`Accumulator::drain`]).
#[derive(Debug, Default, Clone, Copy)]
struct Readiness {
    /// Records in their next batches.
    count: usize,
    /// One of them is a batch to retry.
    retry: bool,
    /// One of them has a record that waited out the linger.
    lingered: bool,
    /// One of them has a closed batch while batches are bounded by bytes (`batch.size`).
    full: bool,
}

/// The accumulator; see the [module docs](self). `T` is a record with whatever it carries
/// (its encoded message and delivery slot, in the producer).
#[derive(Debug)]
pub(crate) struct Accumulator<T> {
    config: AccumulatorConfig,
    partitions: BTreeMap<PartitionKey, PartitionQueue<T>>,
    held: BTreeMap<Arc<str>, Held<T>>,
    /// Rounds in flight per broker.
    busy: BTreeMap<BrokerId, usize>,
    /// The partition each broker's last round started after (round-robin fairness).
    cursor: BTreeMap<BrokerId, PartitionKey>,
    len: usize,
    in_flight_records: usize,
    flushing: bool,
    next_batch_id: u64,
    /// Partitions whose loose records reached `chunk_bytes`.
    due_chunks: Vec<PartitionKey>,
    /// How long after a run of arrivals began a record still joins it ([`STAMP_SHARE`]).
    stamp_share: Duration,
    /// The partitions' logs' spent blocks.
    spent: Spent,
    /// The brokers known to take RecordBatch v2 ([`Accumulator::set_record_batches`]).
    record_batches: BTreeSet<BrokerId>,
    /// With `delivery.timeout.ms`: at most the earliest arrival of a record not in flight
    /// (`None`: none held), so [`Accumulator::expire`] walks the queues only once something
    /// may be due. Lowered by every arrival and retry, made exact by each walk.
    earliest: Option<Instant>,
}

impl<T: Pack> Accumulator<T> {
    /// An empty accumulator.
    pub(crate) fn new(config: AccumulatorConfig) -> Accumulator<T> {
        let config = AccumulatorConfig {
            batch_num_messages: config.batch_num_messages.max(1),
            capacity: config.capacity.max(1),
            max_in_flight: config.max_in_flight.max(1),
            ..config
        };
        Accumulator {
            config,
            partitions: BTreeMap::new(),
            held: BTreeMap::new(),
            busy: BTreeMap::new(),
            cursor: BTreeMap::new(),
            len: 0,
            in_flight_records: 0,
            flushing: false,
            next_batch_id: 0,
            due_chunks: Vec::new(),
            stamp_share: if config.linger.is_zero() { Duration::MAX } else { config.linger / STAMP_SHARE },
            spent: Spent::default(),
            record_batches: BTreeSet::new(),
            earliest: None,
        }
    }

    /// Keeps the logs' spent blocks in `blocks`, the producer's pool (`crate::buffers`), and
    /// takes their new ones from it; before anything is queued.
    pub(crate) fn keep_blocks_in(&mut self, blocks: crate::buffers::Blocks) {
        debug_assert!(self.is_empty(), "blocks moved to another pool with records queued");
        self.spent = Spent::new(blocks);
    }

    /// The settings.
    #[cfg(test)]
    pub(crate) fn config(&self) -> &AccumulatorConfig {
        &self.config
    }

    /// Every record the accumulator is responsible for: held, queued, waiting to be retried or
    /// in flight.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// True when it holds no record.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Records in flight (drained, not yet back through `done` or `retry`).
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight_records
    }

    /// True at `capacity` records: everything queued is ready at once.
    pub(crate) fn is_full(&self) -> bool {
        self.len >= self.config.capacity
    }

    /// While flushing, every partition is ready at once (the linger is skipped; retry
    /// backoffs still apply).
    pub(crate) fn set_flushing(&mut self, flushing: bool) {
        self.flushing = flushing;
    }

    /// True when the partition has a queue (it was appended to or given a leader).
    #[cfg(test)]
    pub(crate) fn knows(&self, tp: &PartitionKey) -> bool {
        self.partitions.contains_key(tp)
    }

    /// Every partition with a queue.
    pub(crate) fn partitions(&self) -> Vec<PartitionKey> {
        self.partitions.keys().cloned().collect()
    }

    /// The partition's leader as last set.
    pub(crate) fn leader(&self, tp: &PartitionKey) -> Option<BrokerId> {
        self.partitions.get(tp).and_then(|q| q.leader)
    }

    /// Sets (or clears, after a leader error) the partition's leader.
    pub(crate) fn set_leader(&mut self, tp: &PartitionKey, leader: Option<BrokerId>) {
        let q = match self.partitions.get_mut(tp) {
            Some(q) => q,
            None => self.partitions.entry(tp.clone()).or_insert_with(|| PartitionQueue::new(None)),
        };
        q.leader = leader;
        q.whole = leader.is_some_and(|b| self.record_batches.contains(&b));
        if leader.is_some() {
            q.leaderless_rounds = 0;
        }
    }

    /// Says whether `broker` takes RecordBatch v2 (speaks Produce v3 or later, as the caller
    /// learns from its connection). The partitions it leads then have their batches cut as
    /// records are appended, at `batch.num.messages` records, and a round takes a batch whole
    /// or leaves it for the next round: a v2 record's offset and timestamp are deltas from its
    /// batch's first, so its bytes can be final only once its batch is known
    /// (`docs/record-path.md`, step 2). Records queued before (Message v0) make batches of
    /// their own, never shared with the records that come after. Message v0 sets carry no
    /// deltas: their batches are cut when a round takes them, at what is left of its
    /// `batch.num.messages`.
    pub(crate) fn set_record_batches(&mut self, broker: BrokerId, takes: bool) {
        let changed = if takes { self.record_batches.insert(broker) } else { self.record_batches.remove(&broker) };
        if changed {
            for q in self.partitions.values_mut().filter(|q| q.leader == Some(broker)) {
                q.whole = takes;
            }
        }
    }

    /// [`Accumulator::append_with`] without moving the record's bytes (tests).
    #[cfg(test)]
    pub(crate) fn append(&mut self, tp: &PartitionKey, record: T, enqueued_at: Instant) {
        self.append_with(tp, record, enqueued_at, |_, _| {});
    }

    /// Queues a record for a partition (its leader unknown until [`Accumulator::set_leader`]),
    /// letting `prepare` append the record's bytes to the partition's [`Log`] first.
    /// `enqueued_at` starts its linger.
    pub(crate) fn append_with(
        &mut self,
        tp: &PartitionKey,
        record: T,
        enqueued_at: Instant,
        prepare: impl FnOnce(&mut T, &mut Appender<'_>),
    ) {
        if !self.partitions.contains_key(tp) {
            self.partitions.insert(tp.clone(), PartitionQueue::new(None));
        }
        if self.try_append_with(tp, record, enqueued_at, prepare).is_err() {
            unreachable!("the partition's queue is there");
        }
    }

    /// Queues a record for a partition that has a queue (it was appended to or given a
    /// leader), letting `prepare` append the record's bytes to the partition's [`Log`]
    /// first; gives it back otherwise. One lookup where "has it a queue?" then "append" take
    /// two.
    ///
    /// # Errors
    ///
    /// The record, untouched, when the partition has no queue.
    pub(crate) fn try_append_with(
        &mut self,
        tp: &PartitionKey,
        mut record: T,
        enqueued_at: Instant,
        prepare: impl FnOnce(&mut T, &mut Appender<'_>),
    ) -> Result<(), T> {
        match self.partitions.get_mut(tp) {
            Some(q) => {
                q.begin_append();
                let before = q.log.used();
                let before_records = q.records.used();
                let room = q.room(self.config.batch_bytes);
                let v2 = q.open_whole.then(|| RecordAppender {
                    records: &mut q.records,
                    offset_delta: i32::try_from(q.queued.len() - q.closed).unwrap_or(i32::MAX),
                    stamps: &mut q.open_stamps,
                    room,
                    began: None,
                });
                let mut appender = Appender { log: &mut q.log, spent: &mut self.spent, room, began: false, v2 };
                prepare(&mut record, &mut appender);
                let began = match appender.v2 {
                    Some(RecordAppender { began: Some(stamps), .. }) => Some(stamps),
                    _ => appender.began.then_some(None),
                };
                if let Some(stamps) = began {
                    // the open batch is full (batch.size): the record is the next one's first
                    q.close_open_with(stamps);
                }
                q.open_bytes += (q.log.used() - before) + (q.records.used() - before_records);
                q.push(record, enqueued_at, self.stamp_share, self.config.batch_num_messages);
                self.len += 1;
                lower_earliest(&mut self.earliest, self.config.delivery_timeout, enqueued_at);
                if self.config.chunk_bytes > 0 {
                    count_loose(q, before, self.config.chunk_bytes, tp, &mut self.due_chunks);
                }
                Ok(())
            }
            None => Err(record),
        }
    }

    /// The partitions whose records since their last chunk reached
    /// [`AccumulatorConfig::chunk_bytes`], each once, in the order they did.
    pub(crate) fn take_due_chunks(&mut self) -> Vec<PartitionKey> {
        std::mem::take(&mut self.due_chunks)
    }

    /// The partition's queued records since its last chunk, oldest first (they are the next
    /// chunk: the count starts again), and, when `copy`, a copy of their bytes as one
    /// uncompressed set (`None` when they came without bytes); `None` when there are none.
    #[allow(clippy::type_complexity)]
    pub(crate) fn take_loose(
        &mut self,
        tp: &PartitionKey,
        copy: bool,
    ) -> Option<(Vec<Queued<'_, T>>, Option<MessageSet>)> {
        let q = self.partitions.get_mut(tp)?;
        let n = q.loose.min(q.queued.len());
        q.loose = 0;
        q.loose_bytes = 0;
        if n == 0 || q.records.len() > 0 {
            // a chunk is a Message v0 wrapper: none while RecordBatch v2 records are queued
            return None;
        }
        let plain = if copy && q.log.len() == q.queued.len() { q.log.tail(n) } else { None };
        Some((q.queued.newest(n), plain))
    }

    /// The partition's queued records, oldest first (not those in flight or waiting to be
    /// retried); `None` when it has no queue.
    pub(crate) fn queued(&self, tp: &PartitionKey) -> Option<impl DoubleEndedIterator<Item = Queued<'_, T>> + Clone> {
        self.partitions.get(tp).map(|q| q.queued.iter())
    }

    /// How many records the partition has queued (not those in flight or waiting to be
    /// retried).
    pub(crate) fn queued_len(&self, tp: &PartitionKey) -> usize {
        self.partitions.get(tp).map_or(0, |q| q.queued.len())
    }

    /// The partition's batches in flight (0 when it has no queue).
    pub(crate) fn batches_in_flight(&self, tp: &PartitionKey) -> usize {
        self.partitions.get(tp).map_or(0, |q| q.in_flight)
    }

    /// Holds a record that has no partition yet (its topic's metadata is unknown) and keeps
    /// its message itself.
    pub(crate) fn hold(&mut self, topic: &Arc<str>, record: T, enqueued_at: Instant) {
        self.hold_with(topic, record, enqueued_at, None);
    }

    /// Holds a record that has no partition yet, its message's bytes (`message`, at most
    /// `u32::MAX` of them) kept with the topic's held records (see `crate::held`).
    pub(crate) fn hold_bytes(&mut self, topic: &Arc<str>, record: T, enqueued_at: Instant, message: &[u8]) {
        self.hold_with(topic, record, enqueued_at, Some(message));
    }

    fn hold_with(&mut self, topic: &Arc<str>, record: T, enqueued_at: Instant, message: Option<&[u8]>) {
        let held = match self.held.get_mut(topic) {
            Some(h) => h,
            None => self.held.entry(topic.clone()).or_insert_with(Held::new),
        };
        held.push(record, enqueued_at, message);
        self.len += 1;
        lower_earliest(&mut self.earliest, self.config.delivery_timeout, enqueued_at);
    }

    /// True when records of `topic` are held (a later record of the topic must be held behind
    /// them, or it could overtake them into their partition).
    pub(crate) fn has_held(&self, topic: &str) -> bool {
        self.held.get(topic).is_some_and(|h| !h.is_empty())
    }

    /// Topics with held records.
    pub(crate) fn held_topics(&self) -> Vec<Arc<str>> {
        self.held.iter().filter(|(_, h)| !h.is_empty()).map(|(t, _)| t.clone()).collect()
    }

    /// Takes the records held for `topic`, oldest first, with their enqueue times and the
    /// bytes of the messages held for them, to be partitioned and appended (or held again) by
    /// the caller; the topic's round count stays.
    pub(crate) fn take_held(&mut self, topic: &str) -> HeldRecords<T> {
        let Some(held) = self.held.get_mut(topic) else { return Held::new().take() };
        let records = held.take();
        self.len -= records.len();
        records
    }

    /// True when some record waits for metadata: held for its topic, or queued for a
    /// partition without a leader.
    pub(crate) fn waiting_for_metadata(&self) -> bool {
        self.held.values().any(|h| !h.is_empty())
            || self.partitions.values().any(|q| q.leader.is_none() && q.has_data())
    }

    /// The rounds to send now: for each broker without a round in flight whose partitions are
    /// ready, one round of at most `batch.num.messages` records (see the module docs).
    pub(crate) fn drain(&mut self, now: Instant) -> Vec<Round<T>> {
        // first what each broker's sendable partitions hold, without a key copied or looked
        // up (most calls find no broker ready: a topic of many partitions made this walk
        // the costliest part of an engine step)
        let mut ready: BTreeMap<BrokerId, Readiness> = BTreeMap::new();
        for q in self.partitions.values() {
            let Some(broker) = q.leader else { continue };
            if !self.may_send(q, broker, now) {
                continue;
            }
            let r = ready.entry(broker).or_default();
            r.count += q.pending();
            r.retry |= !q.retry.is_empty();
            r.lingered |= q.oldest().is_some_and(|at| at + self.config.linger <= now);
            r.full |= self.config.batch_bytes.is_some() && q.closed > 0;
        }
        ready.retain(|broker, r| {
            self.urgent(*broker)
                || r.count >= self.config.batch_num_messages
                || r.full
                || r.retry
                || (r.lingered && self.lingered_may_go(*broker))
        });
        if ready.is_empty() {
            return Vec::new();
        }
        let mut by_broker: BTreeMap<BrokerId, Vec<PartitionKey>> = BTreeMap::new();
        for (tp, q) in &self.partitions {
            let Some(broker) = q.leader else { continue };
            if ready.contains_key(&broker) && self.may_send(q, broker, now) {
                by_broker.entry(broker).or_default().push(tp.clone());
            }
        }
        let mut rounds = Vec::new();
        for (broker, tps) in by_broker {
            // start after the partition the last round of this broker started at
            let start = self.cursor.get(&broker).map_or(0, |c| tps.iter().position(|tp| tp > c).unwrap_or(0));
            let mut budget = self.config.batch_num_messages;
            let mut batches = Vec::new();
            for tp in tps[start..].iter().chain(&tps[..start]) {
                if budget == 0 {
                    break;
                }
                let q = self.partitions.get_mut(tp).expect("listed above");
                if let Some(retry) = q.retry.pop_front() {
                    if retry.batch.records.len() > budget && !batches.is_empty() {
                        q.retry.push_front(retry);
                        continue;
                    }
                    let mut batch = retry.batch;
                    batch.attempts += 1;
                    budget = budget.saturating_sub(batch.records.len());
                    q.in_flight += 1;
                    self.in_flight_records += batch.records.len();
                    batches.push(batch);
                } else {
                    let Some(n) = q.next_take(budget) else {
                        // a whole run that does not fit what is left of the request: the next
                        // round's (it fits an empty one)
                        continue;
                    };
                    let created = q.oldest().unwrap_or(now);
                    let (records, plain, run) = q.take(n, &mut self.spent);
                    budget -= n;
                    q.in_flight += 1;
                    self.in_flight_records += n;
                    let id = self.next_batch_id;
                    self.next_batch_id += 1;
                    batches.push(Batch {
                        id,
                        tp: tp.clone(),
                        records,
                        attempts: 1,
                        plain,
                        run,
                        encoded: None,
                        held: 0,
                        sequence: None,
                        created,
                    });
                }
            }
            if let Some(first) = batches.first() {
                self.cursor.insert(broker, first.tp.clone());
                *self.busy.entry(broker).or_default() += 1;
                rounds.push(Round { broker, batches });
            }
        }
        rounds
    }

    /// When [`Accumulator::drain`] may next have something to send, if nothing else happens
    /// (a linger ending, a retry backoff passing); `None` when only an outside event (a
    /// record, a leader, a round's outcome) can change that. And whether queued records wait
    /// for a round's outcome (their partition or broker has as many rounds in flight as they
    /// may go behind): the caller hears of that outcome anyway, as it would of a timer. One
    /// walk for both. Call it after `drain`.
    pub(crate) fn wakeup(&self, now: Instant) -> (Option<Instant>, bool) {
        let mut next: Option<Instant> = None;
        let mut behind_a_round = false;
        for q in self.partitions.values() {
            let Some(broker) = q.leader else { continue };
            if q.in_flight >= self.config.max_in_flight || self.broker_full(broker) {
                behind_a_round |= q.has_data();
                continue;
            }
            let at = match (q.retry.front(), q.oldest()) {
                (Some(r), _) => r.not_before,
                (None, Some(at)) if self.urgent(broker) => now.max(at),
                // only a round's outcome lets its lingered records go
                (None, Some(_)) if !self.lingered_may_go(broker) => {
                    behind_a_round = true;
                    continue;
                }
                (None, Some(at)) => at + self.config.linger,
                (None, None) => continue,
            };
            next = Some(next.map_or(at, |n| n.min(at)));
        }
        (next, behind_a_round)
    }

    /// How many more records, and bytes of them, may be appended before anything becomes ready
    /// by their number or size (as [`Accumulator::drain`] and
    /// [`Accumulator::take_due_chunks`] count): records before a broker's partitions hold
    /// `batch.num.messages` or the accumulator fills, bytes before a partition takes in
    /// `chunk_bytes` or fills its open batch's `batch.size` (`usize::MAX` without either);
    /// each at least 1. Any record may go to any
    /// broker and partition, so the fullest counts.
    ///
    /// A broker with `max_in_flight` rounds in flight is left out of the records' count: what
    /// comes for it can make no round before one of its rounds has its outcome, which wakes the
    /// engine anyway. So is the accumulator filling, when every broker it holds records for is
    /// such a broker. (With a full queue in front of slow brokers, each record handed over
    /// otherwise woke the engine to take it and do nothing more.)
    pub(crate) fn room(&self) -> (usize, usize) {
        let mut by_broker: BTreeMap<BrokerId, usize> = BTreeMap::new();
        let mut loose_bytes = 0;
        let mut batch_room = usize::MAX;
        // some partition's leader could take a round now (or no partition is known yet)
        let mut may_take = self.partitions.is_empty();
        for q in self.partitions.values() {
            loose_bytes = loose_bytes.max(q.loose_bytes);
            batch_room = batch_room.min(q.wake_room(self.config.batch_bytes));
            match q.leader {
                Some(broker) if self.broker_full(broker) => {}
                Some(broker) => {
                    may_take = true;
                    *by_broker.entry(broker).or_default() += q.pending();
                }
                // waits for its leader (a metadata answer wakes the engine)
                None => {}
            }
        }
        let most = by_broker.values().copied().max().unwrap_or(0);
        let fill = if may_take { self.config.capacity.saturating_sub(self.len()) } else { usize::MAX };
        let records = (self.config.batch_num_messages.saturating_sub(most)).min(fill).max(1);
        let bytes = match self.config.chunk_bytes {
            0 => usize::MAX,
            chunk => chunk.saturating_sub(loose_bytes),
        };
        (records, bytes.min(batch_room).max(1))
    }

    /// The round to `broker` is over (call before handing back its batches): the broker may
    /// get another round.
    pub(crate) fn round_done(&mut self, broker: BrokerId) {
        if let Some(n) = self.busy.get_mut(&broker) {
            *n -= 1;
            if *n == 0 {
                self.busy.remove(&broker);
            }
        }
    }

    /// True when the broker's queued records go now, whatever their number and linger: a
    /// flush or close is running, or the accumulator is full and fewer than
    /// [`FULL_ROUNDS_AHEAD`] of the broker's rounds are in flight.
    fn urgent(&self, broker: BrokerId) -> bool {
        self.flushing || (self.is_full() && self.busy.get(&broker).is_none_or(|n| *n < FULL_ROUNDS_AHEAD))
    }

    /// True when a round made ready by its records' linger alone may go to the broker now
    /// (see [`LINGERED_ROUNDS_AHEAD`]).
    fn lingered_may_go(&self, broker: BrokerId) -> bool {
        self.busy.get(&broker).is_none_or(|n| *n < LINGERED_ROUNDS_AHEAD)
    }

    /// True when the partition, led by `broker`, may send its next batch now (a round may
    /// take it).
    fn may_send(&self, q: &PartitionQueue<T>, broker: BrokerId, now: Instant) -> bool {
        q.in_flight < self.config.max_in_flight && !self.broker_full(broker) && q.sendable(now)
    }

    /// True when the broker has `max_in_flight` rounds in flight.
    fn broker_full(&self, broker: BrokerId) -> bool {
        self.busy.get(&broker).is_some_and(|n| *n >= self.config.max_in_flight)
    }

    /// A batch is finished — delivered, or failed for good: its partition may send again.
    /// Returns its records, which the accumulator no longer counts.
    pub(crate) fn done(&mut self, batch: Batch<T>) -> Vec<T> {
        if let Some(q) = self.partitions.get_mut(&batch.tp) {
            q.in_flight = q.in_flight.saturating_sub(1);
            // its queued records no longer wait for a batch in flight to expire
            if let Some(at) = q.oldest() {
                lower_earliest(&mut self.earliest, self.config.delivery_timeout, at);
            }
        }
        self.len -= batch.records.len();
        self.in_flight_records -= batch.records.len();
        // its set goes when this returns (its records are taken out)
        self.spent.batch_gone();
        if self.len == 0 {
            // nothing queued or in flight: an idle producer keeps no blocks in its pool, its
            // logs' or its compressed sets' (this batch's go with it)
            self.spent.clear();
            self.earliest = None;
        }
        batch.records.into_vec()
    }

    /// A batch failed in a way worth retrying (see `crate::outcome`, which also keeps the
    /// retry budget): it goes back to the front of its partition, to be sent again alone not
    /// before `not_before`; the partition sends nothing else until then.
    pub(crate) fn retry(&mut self, batch: Batch<T>, not_before: Instant) {
        let n = batch.records.len();
        let q = match self.partitions.get_mut(&batch.tp) {
            Some(q) => q,
            None => self.partitions.entry(batch.tp.clone()).or_insert_with(|| PartitionQueue::new(None)),
        };
        q.in_flight = q.in_flight.saturating_sub(1);
        // before any later batch of the partition waiting to be retried
        let at = q.retry.iter().position(|r| r.batch.id > batch.id).unwrap_or(q.retry.len());
        let created = batch.created;
        q.retry.insert(at, Retry { batch, not_before });
        lower_earliest(&mut self.earliest, self.config.delivery_timeout, created);
        self.in_flight_records -= n;
        // the round that sent it may have let go of the rest of its bytes
        self.spent.batch_gone();
    }

    /// A metadata round (a refresh of `topics`, successful or not) is over and the caller has
    /// set the leaders it learnt and partitioned what it could: every partition of those
    /// topics still without a leader, and every topic still holding records, counts one more
    /// round; past `message.send.max.retries + 1` rounds their records are released, to be
    /// failed.
    pub(crate) fn end_metadata_round(&mut self, topics: &[Arc<str>]) -> Vec<Released<T>> {
        self.end_round(topics, self.config.max_retries)
    }

    /// A metadata round failed in a way no further round can fix (the brokers refused the
    /// connection settings): every record of `topics` waiting for metadata is released now, to
    /// be failed.
    pub(crate) fn give_up_metadata(&mut self, topics: &[Arc<str>]) -> Vec<Released<T>> {
        self.end_round(topics, 0)
    }

    /// [`Accumulator::end_metadata_round`], releasing past `max` rounds.
    fn end_round(&mut self, topics: &[Arc<str>], max: u32) -> Vec<Released<T>> {
        let mut released = Vec::new();
        for (tp, q) in self.partitions.iter_mut() {
            if !topics.contains(&tp.topic) {
                continue;
            }
            if q.leader.is_some() || q.in_flight > 0 || !q.has_data() {
                q.leaderless_rounds = 0;
                continue;
            }
            q.leaderless_rounds += 1;
            if q.leaderless_rounds > max {
                q.leaderless_rounds = 0;
                self.len -= release_queue(tp, q, &mut released);
                self.spent.batch_gone();
            }
        }
        for topic in topics {
            let Some(held) = self.held.get_mut(topic) else { continue };
            if held.is_empty() {
                self.held.remove(topic);
                continue;
            }
            held.rounds += 1;
            if held.rounds > max {
                let mut held = self.held.remove(topic).expect("present");
                self.len -= held.len();
                release_held(topic, held.take(), &mut released);
            }
        }
        released
    }

    /// Removes a partition's records that are not in flight (the partition does not exist);
    /// a batch in flight comes back through `done`/`retry` as usual.
    pub(crate) fn remove_partition(&mut self, tp: &PartitionKey) -> Vec<Released<T>> {
        let mut released = Vec::new();
        if let Some(q) = self.partitions.get_mut(tp) {
            self.len -= release_queue(tp, q, &mut released);
            self.spent.batch_gone();
            if q.in_flight == 0 {
                self.partitions.remove(tp);
            }
        }
        released
    }

    /// Takes out what is past `delivery.timeout.ms` and not in flight: held records that
    /// arrived that long before `now`; a partition's batches waiting to be sent again whose
    /// oldest record did; its queued records that did, from the front, unless a batch of the
    /// partition is in flight or waits to be sent again (they wait for its outcome: results
    /// stay in order) — a RecordBatch v2 run whole once its first did (its records are written
    /// as one batch, as Java expires a batch), Message v0 records one by one (by their arrival
    /// runs: a record may go up to a sixteenth of the linger early, as its linger may end).
    /// Nothing without the setting.
    pub(crate) fn expire(&mut self, now: Instant) -> Expired<T> {
        let mut expired = Expired { released: Vec::new(), batches: Vec::new() };
        let Some(cutoff) = self.config.delivery_timeout.and_then(|t| now.checked_sub(t)) else { return expired };
        if self.earliest.is_none_or(|at| at > cutoff) {
            return expired;
        }
        let mut earliest: Option<Instant> = None;
        let mut lower = |at: Option<Instant>| {
            if let Some(at) = at {
                earliest = Some(earliest.map_or(at, |e| e.min(at)));
            }
        };
        for (topic, held) in self.held.iter_mut() {
            if held.any_at_or_before(cutoff) {
                let gone = held.take_at_or_before(cutoff);
                self.len -= gone.len();
                expired.released.extend(gone.into_iter().map(|(record, message)| Released {
                    topic: topic.clone(),
                    partition: None,
                    attempts: 0,
                    record,
                    message: message.map(held_message),
                }));
            }
            lower(held.earliest());
        }
        for (tp, q) in self.partitions.iter_mut() {
            // queued records behind a batch in flight wait for its outcome, so a partition's
            // results stay in order (it comes within request.timeout.ms)
            let behind_a_batch = q.in_flight > 0;
            while q.retry.front().is_some_and(|r| r.batch.created <= cutoff) {
                let batch = q.retry.pop_front().expect("looked at").batch;
                q.in_flight += 1;
                self.in_flight_records += batch.records.len();
                expired.batches.push(batch);
            }
            if behind_a_batch {
                lower(q.retry.front().map(|r| r.batch.created));
                continue;
            }
            // queued records behind a batch still to be sent again wait for it
            while q.retry.is_empty() && q.oldest().is_some_and(|at| at <= cutoff) {
                let due: usize = q.stamps.iter().take_while(|(at, _)| *at <= cutoff).map(|(_, n)| n).sum();
                let (count, whole) = match q.runs.front() {
                    Some(run) => (run.count, run.whole),
                    None => (q.open(), q.open_whole),
                };
                let n = if whole { count } else { due.min(count) };
                let (records, plain, run) = q.take(n, &mut self.spent);
                let plain = plain.or_else(|| run.and_then(|run| run.plain()));
                self.len -= release_records(tp, records, plain, 0, &mut expired.released);
                self.spent.batch_gone();
            }
            lower(q.retry.front().map(|r| r.batch.created).or_else(|| q.oldest()));
        }
        self.earliest = earliest;
        expired
    }

    /// When [`Accumulator::expire`] may next have something to take out, if nothing else
    /// happens (`None` without `delivery.timeout.ms` or with nothing held): at most the
    /// earliest arrival of a record not in flight, plus the timeout (early after a batch went,
    /// until the next walk).
    pub(crate) fn next_expiry(&self) -> Option<Instant> {
        Some(self.earliest? + self.config.delivery_timeout?)
    }

    /// Empties the accumulator of everything not in flight (on close): held records, retry
    /// batches and queued records, in order per partition.
    pub(crate) fn drain_all(&mut self) -> Vec<Released<T>> {
        let mut released = Vec::new();
        for (topic, mut held) in std::mem::take(&mut self.held) {
            self.len -= held.len();
            release_held(&topic, held.take(), &mut released);
        }
        for (tp, q) in self.partitions.iter_mut() {
            self.len -= release_queue(tp, q, &mut released);
        }
        released
    }
}

/// Lowers `earliest` (see [`Accumulator::earliest`]) to `at` (a record's or a batch to
/// retry's oldest arrival), with a delivery timeout.
fn lower_earliest(earliest: &mut Option<Instant>, delivery_timeout: Option<Duration>, at: Instant) {
    if delivery_timeout.is_some() {
        *earliest = Some(earliest.map_or(at, |e| e.min(at)));
    }
}

/// Hands back a topic's held records, each with its message when it was held for it.
fn release_held<T>(topic: &Arc<str>, records: HeldRecords<T>, out: &mut Vec<Released<T>>) {
    out.extend(records.map(|(record, _, message)| Released {
        topic: topic.clone(),
        partition: None,
        attempts: 0,
        record,
        // copied: a failed record's message may outlive the blocks' other records
        message: message.map(|m| held_message(Bytes::copy_from_slice(&m))),
    }));
}

/// A held record's message, from the bytes `send` encoded.
fn held_message(bytes: Bytes) -> EncodedMessage {
    EncodedMessage::from_bytes(bytes).expect("a record is held with the message send encoded")
}

/// Moves a partition's retry batch and queued records to `out`, each with its message when
/// its bytes were in the log or its batch; returns how many.
fn release_queue<T: Pack>(tp: &PartitionKey, q: &mut PartitionQueue<T>, out: &mut Vec<Released<T>>) -> usize {
    let mut n = 0;
    for retry in q.retry.drain(..) {
        let plain = retry.batch.plain_or_sent();
        n += release_records(tp, retry.batch.records, plain, retry.batch.attempts, out);
    }
    // the queue's blocks are let go with it
    for (records, plain, run) in q.take_all(&mut Spent::default()) {
        let plain = plain.or_else(|| run.and_then(|run| run.plain()));
        n += release_records(tp, records, plain, 0, out);
    }
    n
}

/// Moves a partition's `records` to `out`, each with its message read from `plain` (their
/// bytes as Message v0 entries, when there are); returns how many.
fn release_records<T: Pack>(
    tp: &PartitionKey,
    records: Blocks<T>,
    plain: Option<MessageSet>,
    attempts: u32,
    out: &mut Vec<Released<T>>,
) -> usize {
    let before = out.len();
    let mut messages = plain.iter().flat_map(log::messages);
    out.extend(records.into_vec().into_iter().map(|record| Released {
        topic: tp.topic.clone(),
        partition: Some(tp.partition),
        attempts,
        record,
        message: messages.next(),
    }));
    out.len() - before
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{self, Action, Answer, RetryPolicy};

    const MS: Duration = Duration::from_millis(1);

    /// `retry.backoff.ms` in these tests.
    const BACKOFF: Duration = Duration::from_millis(50);

    fn config() -> AccumulatorConfig {
        AccumulatorConfig {
            batch_num_messages: 3,
            linger: 100 * MS,
            capacity: 10,
            max_retries: 2,
            max_in_flight: 1,
            chunk_bytes: 0,
            batch_bytes: None,
            delivery_timeout: None,
        }
    }

    fn tp(p: i32) -> PartitionKey {
        PartitionKey::new("t", p)
    }

    impl<T: Pack> Accumulator<T> {
        /// [`Accumulator::wakeup`]'s first part.
        fn next_wakeup(&self, now: Instant) -> Option<Instant> {
            self.wakeup(now).0
        }

        /// [`Accumulator::wakeup`]'s second part.
        fn waits_for_a_round(&self) -> bool {
            self.wakeup(Instant::now()).1
        }
    }

    fn acc(config: AccumulatorConfig) -> Accumulator<u32> {
        let mut a = Accumulator::new(config);
        for p in 0..3 {
            a.set_leader(&tp(p), Some(p % 2)); // p0, p2 on broker 0; p1 on broker 1
        }
        a
    }

    /// (broker, [(partition, records, attempts)]) of each round.
    type Shape = Vec<(i32, Vec<(i32, Vec<u32>, u32)>)>;

    fn shape(rounds: &[Round<u32>]) -> Shape {
        rounds
            .iter()
            .map(|r| {
                let batches = r
                    .batches
                    .iter()
                    .map(|b| (b.tp.partition, b.records.iter().map(|q| q.record()).collect(), b.attempts));
                (r.broker, batches.collect())
            })
            .collect()
    }

    fn finish(a: &mut Accumulator<u32>, rounds: Vec<Round<u32>>) -> Vec<u32> {
        let mut out = Vec::new();
        for r in rounds {
            a.round_done(r.broker);
            for b in r.batches {
                out.extend(a.done(b));
            }
        }
        out
    }

    #[test]
    fn linger_makes_a_partition_ready() {
        let t0 = Instant::now();
        let mut a = acc(config());
        a.append(&tp(0), 1, t0);
        a.append(&tp(0), 2, t0 + 10 * MS);
        assert!(a.drain(t0 + 99 * MS).is_empty(), "not before the oldest record's linger");
        assert_eq!(a.next_wakeup(t0), Some(t0 + 100 * MS));
        let rounds = a.drain(t0 + 100 * MS);
        assert_eq!(shape(&rounds), [(0, vec![(0, vec![1, 2], 1)])]);
        assert_eq!((a.len(), a.in_flight()), (2, 2));
        assert_eq!(finish(&mut a, rounds), [1, 2]);
        assert!(a.is_empty());
        assert_eq!(a.next_wakeup(t0), None);
    }

    /// `room` is what may still come before a broker has a batch's worth (the fullest broker
    /// counts: any record may go there) or the queue is full, and before a partition takes in
    /// a chunk's bytes: as many more make a round ready, one fewer does not.
    #[test]
    fn room_is_what_can_come_before_anything_is_ready_by_count_or_size() {
        let t0 = Instant::now();
        let mut a = acc(config());
        assert_eq!(a.room(), (3, usize::MAX), "empty: a batch's worth; no chunks");
        a.append(&tp(1), 101, t0);
        a.append(&tp(0), 1, t0);
        a.append(&tp(2), 2, t0);
        assert_eq!(a.room(), (1, usize::MAX), "broker 0 holds 2 of 3 (p0 and p2)");
        assert!(a.drain(t0).is_empty());
        a.append(&tp(0), 3, t0);
        assert_eq!(shape(&a.drain(t0)).len(), 1, "the room's one more made broker 0 ready");
        assert_eq!(a.room(), (2, usize::MAX), "broker 1 now the fullest, 1 of 3");
        a.append(&tp(0), 4, t0);
        a.append(&tp(2), 5, t0);
        assert_eq!(a.room(), (2, usize::MAX), "broker 0's round is in flight (max 1): its records make nothing ready");
        // the queue's bound: 4 places, 3 taken
        let mut a = acc(AccumulatorConfig { batch_num_messages: 100, capacity: 4, ..config() });
        for r in 0..3 {
            a.append(&tp(r % 2), r as u32, t0);
        }
        assert_eq!(a.room(), (1, usize::MAX));
        a.append(&tp(0), 3, t0);
        assert!(a.is_full());
        assert_eq!(a.room(), (1, usize::MAX), "at least one");
        // a full queue whose every broker has its rounds in flight: only an outcome makes room
        let mut a = Accumulator::new(AccumulatorConfig { batch_num_messages: 2, capacity: 4, ..config() });
        a.set_leader(&tp(0), Some(0));
        a.set_leader(&tp(2), Some(0));
        a.append(&tp(0), 0, t0);
        a.append(&tp(2), 1, t0);
        assert_eq!(shape(&a.drain(t0)).len(), 1);
        a.append(&tp(0), 2, t0);
        a.append(&tp(2), 3, t0);
        assert!(a.is_full());
        assert_eq!(a.room(), (2, usize::MAX), "broker 0 is busy: neither its records nor the fill count");
        a.set_leader(&tp(1), Some(1));
        assert_eq!(a.room(), (1, usize::MAX), "broker 1 could take a round: the fill counts");
        // chunks: the partition with the most loose bytes counts
        let mut a =
            acc(AccumulatorConfig { chunk_bytes: 3 * LARGE_WEIGHT, capacity: 100, batch_num_messages: 50, ..config() });
        a.append(&tp(0), 1, t0);
        a.append(&tp(1), 2, t0);
        a.append(&tp(1), 3, t0);
        assert_eq!(a.room(), (48, LARGE_WEIGHT));
        assert!(a.take_due_chunks().is_empty());
        a.append(&tp(1), 4, t0);
        assert_eq!(a.take_due_chunks(), [tp(1)]);
    }

    /// With `chunk_bytes`, a partition is listed once its records since its last chunk reach
    /// it (here every record counts as [`LARGE_WEIGHT`]: the test's records have no bytes in
    /// the log), and `take_loose` gives those records; a batch that takes some of them
    /// leaves the rest loose.
    #[test]
    fn partitions_are_listed_for_a_chunk_once_their_loose_records_reach_the_size() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig {
            chunk_bytes: 3 * LARGE_WEIGHT,
            capacity: 100,
            batch_num_messages: 4,
            linger: Duration::ZERO,
            ..config()
        });
        for r in 1..=2 {
            a.append(&tp(0), r, t0);
            a.append(&tp(1), 100 + r, t0);
        }
        assert!(a.take_due_chunks().is_empty(), "two records are not enough");
        a.append(&tp(0), 3, t0);
        a.append(&tp(0), 4, t0);
        assert_eq!(a.take_due_chunks(), [tp(0)], "listed once, at the third record");
        assert_eq!(
            a.take_loose(&tp(0), true).unwrap().0.into_iter().map(|r| r.record()).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
        assert!(a.take_loose(&tp(0), true).is_none(), "the count starts again");
        for r in 5..=6 {
            a.append(&tp(0), r, t0);
        }
        assert!(a.take_due_chunks().is_empty());
        // the batches take every record but 5 and 6: those stay loose, p1's are gone
        let rounds = a.drain(t0);
        assert_eq!(shape(&rounds), [(0, vec![(0, vec![1, 2, 3, 4], 1)]), (1, vec![(1, vec![101, 102], 1)])]);
        finish(&mut a, rounds);
        a.append(&tp(0), 7, t0);
        a.append(&tp(1), 103, t0);
        assert_eq!(a.take_due_chunks(), [tp(0)]);
        assert_eq!(
            a.take_loose(&tp(0), true).unwrap().0.into_iter().map(|r| r.record()).collect::<Vec<_>>(),
            [5, 6, 7]
        );
        assert_eq!(a.take_loose(&tp(1), true).unwrap().0.into_iter().map(|r| r.record()).collect::<Vec<_>>(), [103]);
        // without chunk_bytes nothing is counted
        let mut plain = acc(config());
        for r in 1..=9 {
            plain.append(&tp(0), r, t0);
        }
        assert!(plain.take_due_chunks().is_empty() && plain.take_loose(&tp(0), true).is_none());
    }

    /// max_in_flight 2: a partition pipelines two batches (two rounds to its broker), a third
    /// waits; failed batches are retried oldest first, before anything new of the partition.
    #[test]
    fn max_in_flight_pipelines_batches_and_retries_the_oldest_first() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { max_in_flight: 2, capacity: 100, ..config() });
        for r in 1..=9 {
            a.append(&tp(0), r, t0);
        }
        let first = a.drain(t0);
        let second = a.drain(t0);
        assert_eq!(shape(&first), [(0, vec![(0, vec![1, 2, 3], 1)])]);
        assert_eq!(shape(&second), [(0, vec![(0, vec![4, 5, 6], 1)])]);
        assert!(a.drain(t0).is_empty(), "two in flight: the third batch waits");
        assert_eq!(a.in_flight(), 6);
        // both fail, the later one first: the earlier is still retried first
        let (mut first, mut second) = (first, second);
        let b2 = second.remove(0).batches.remove(0);
        let b1 = first.remove(0).batches.remove(0);
        a.round_done(0);
        a.retry(b2, t0 + BACKOFF);
        a.round_done(0);
        a.retry(b1, t0 + BACKOFF);
        assert!(a.drain(t0 + 49 * MS).is_empty(), "retries wait retry.backoff.ms, new records wait behind them");
        let r1 = a.drain(t0 + 50 * MS);
        let r2 = a.drain(t0 + 50 * MS);
        assert_eq!(shape(&r1), [(0, vec![(0, vec![1, 2, 3], 2)])]);
        assert_eq!(shape(&r2), [(0, vec![(0, vec![4, 5, 6], 2)])]);
        assert_eq!(finish(&mut a, r1), [1, 2, 3]);
        let r3 = a.drain(t0 + 50 * MS);
        assert_eq!(shape(&r3), [(0, vec![(0, vec![7, 8, 9], 1)])], "new records once the retries went");
        assert_eq!(finish(&mut a, r2), [4, 5, 6]);
        assert_eq!(finish(&mut a, r3), [7, 8, 9]);
        assert!(a.is_empty());
    }

    /// Arrival times are kept in runs: after a partial drain the linger runs from the new
    /// oldest record's arrival, also when a run is split; a queue that grew in a burst gives
    /// its room back.
    #[test]
    fn the_linger_follows_the_oldest_record_left_after_a_partial_drain() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { capacity: 100_000, batch_num_messages: 3, ..config() });
        for r in 1..=4 {
            a.append(&tp(0), r, t0);
        }
        a.append(&tp(0), 5, t0 + 40 * MS);
        // 3 of the first run go (batch.num.messages), one of its records stays
        let rounds = a.drain(t0);
        assert_eq!(shape(&rounds), [(0, vec![(0, vec![1, 2, 3], 1)])]);
        finish(&mut a, rounds);
        assert_eq!(a.next_wakeup(t0), Some(t0 + 100 * MS), "record 4 arrived at t0");
        let rounds = a.drain(t0 + 100 * MS);
        // 4 and 5 (ready as record 4 lingered long enough)
        assert_eq!(shape(&rounds), [(0, vec![(0, vec![4, 5], 1)])]);
        finish(&mut a, rounds);
        a.append(&tp(0), 6, t0 + 200 * MS);
        assert_eq!(a.next_wakeup(t0 + 200 * MS), Some(t0 + 300 * MS), "a fresh run after the queue emptied");
        // a burst, then the queue drained to a few records: the room is given back
        let mut a = acc(AccumulatorConfig { capacity: 100_000, batch_num_messages: 19_990, ..config() });
        for r in 0..20_000 {
            a.append(&tp(0), r, t0);
        }
        let big = a.partitions[&tp(0)].queued.capacity();
        assert!((20_000..20_000 + crate::blocks::BLOCK).contains(&big), "{big}: a block more than the records at most");
        let rounds = a.drain(t0);
        assert_eq!(rounds[0].batches[0].records.len(), 19_990);
        let q = &a.partitions[&tp(0)];
        assert_eq!((q.queued.len(), q.stamps.iter().map(|s| s.1).sum::<usize>()), (10, 10));
        assert!(q.queued.capacity() < big / 4, "{} of {big}", q.queued.capacity());
    }

    /// Records arriving within a sixteenth of the linger after a run's first join that run:
    /// a queue filled a record at a time keeps a few runs, not one per record; a record's
    /// linger ends at most that much early, never late; at a linger of zero one run.
    #[test]
    fn arrivals_close_together_share_a_stamp_and_the_linger_ends_at_most_a_sixteenth_early() {
        let t0 = Instant::now();
        let us = Duration::from_micros(1);
        let mut a = acc(AccumulatorConfig { capacity: 100_000, batch_num_messages: 100_000, ..config() });
        // linger 100 ms: a run takes what comes within 6.25 ms of its first record
        for i in 0..6_250u32 {
            a.append(&tp(0), i, t0 + i * us);
        }
        a.append(&tp(0), 6_250, t0 + 6_250 * us);
        a.append(&tp(0), 6_251, t0 + 6_251 * us);
        let runs: Vec<usize> = a.partitions[&tp(0)].stamps.iter().map(|s| s.1).collect();
        assert_eq!(runs, [6_251, 1], "the first run up to 6.25 ms after it, then a new one");
        // the whole first run lingers from t0; record 6,251 from its own arrival
        assert!(a.drain(t0 + 100 * MS - us).is_empty());
        let rounds = a.drain(t0 + 100 * MS);
        assert_eq!(rounds[0].batches[0].records.len(), 6_252, "the partition is ready: all of it goes");
        let mut z =
            acc(AccumulatorConfig { capacity: 100_000, linger: Duration::ZERO, batch_num_messages: 1_000, ..config() });
        for i in 0..500u32 {
            z.append(&tp(0), i, t0 + i * MS);
        }
        assert_eq!(z.partitions[&tp(0)].stamps.len(), 1, "linger 0: every record is ready, one run");
        // an arrival before the last run's (a record that waited for metadata) is not made later
        let mut b = acc(AccumulatorConfig { capacity: 100_000, batch_num_messages: 100_000, ..config() });
        b.append(&tp(0), 1, t0 + 50 * MS);
        b.append(&tp(0), 2, t0);
        let runs: Vec<(Instant, usize)> = b.partitions[&tp(0)].stamps.iter().copied().collect();
        assert_eq!(runs, [(t0 + 50 * MS, 1), (t0, 1)]);
    }

    /// A message whose entry takes a log block of its own (blocks are at most 64 KiB).
    fn block_sized_message() -> EncodedMessage {
        EncodedMessage::encode(&gregor_protocol::Message::new(None, Some(vec![7u8; 40_000].into()))).unwrap()
    }

    /// A batch across log blocks is sent as the blocks' bytes, one part each, not a copy.
    #[test]
    fn a_batch_across_log_blocks_is_their_bytes_in_parts() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { capacity: 100, batch_num_messages: 3, ..config() });
        let message = block_sized_message();
        for r in 0..3 {
            // an entry to a block
            a.append_with(&tp(0), r, t0, |_, log| log.push(message.as_bytes()));
        }
        let rounds = a.drain(t0);
        assert_eq!(shape(&rounds), [(0, vec![(0, vec![0, 1, 2], 1)])]);
        let set = rounds[0].batches[0].plain.clone().expect("its bytes");
        assert_eq!(set.parts().len(), 3, "three entries in three blocks: three parts");
        let read: Vec<_> = crate::log::messages(&set).collect();
        assert!(read.len() == 3 && read.iter().all(|m| *m == message), "{} messages read back", read.len());
        assert_eq!(finish(&mut a, rounds), [0, 1, 2]);
        assert!(a.is_empty());
    }

    /// Appends record `r` of `tp` with its bytes, as the engine does: value "v{r}", stamped
    /// `1000 + r` when it goes as RecordBatch v2.
    fn append_bytes(a: &mut Accumulator<u32>, p: i32, r: u32) {
        append_bytes_at(a, p, r, Instant::now());
    }

    /// The values and timestamps of a RecordBatch v2 (or Message v0) set, read as a consumer
    /// reads it, every CRC checked.
    fn read_set(set: &MessageSet) -> Vec<(String, i64)> {
        use gregor_protocol::message::DecodeOptions;
        let batches = gregor_protocol::Batches::new(set.as_bytes().clone(), &DecodeOptions::default());
        batches
            .flat_map(|b| b.unwrap().records().map(|r| r.unwrap()).collect::<Vec<_>>())
            .map(|r| (String::from_utf8(r.value.unwrap().to_vec()).unwrap(), r.timestamp))
            .collect()
    }

    /// A leader that takes RecordBatch v2: its partitions' records are written as such as they
    /// come, a batch's offsets and timestamps from its first record; what was queued before
    /// stays Message v0, a batch of its own; both read back for a release.
    #[test]
    fn record_batch_records_are_written_as_they_come_and_finished_by_the_round() {
        let mut a = acc(AccumulatorConfig { linger: Duration::ZERO, capacity: 100, ..config() });
        append_bytes(&mut a, 0, 1);
        a.set_record_batches(0, true);
        for r in 2..=5 {
            append_bytes(&mut a, 0, r);
        }
        let now = Instant::now() + 200 * MS;
        let first = a.drain(now);
        let batch = &first[0].batches[0];
        assert_eq!(batch.records.iter().map(|q| q.record()).collect::<Vec<_>>(), [1]);
        assert!(batch.run.is_none());
        assert_eq!(read_set(batch.plain.as_ref().unwrap()), [("v1".to_string(), -1)]);
        finish(&mut a, first);
        let second = a.drain(now);
        let batch = &second[0].batches[0];
        assert_eq!(batch.records.iter().map(|q| q.record()).collect::<Vec<_>>(), [2, 3, 4]);
        assert!(batch.plain.is_none(), "no Message v0 beside the records");
        let run = batch.run.as_ref().unwrap();
        assert_eq!(run.stamps, Stamps { first: 1002, max: 1004 });
        let values = [("v2".to_string(), 1002), ("v3".to_string(), 1003), ("v4".to_string(), 1004)];
        for codec in [gregor_protocol::Compression::None, gregor_protocol::Compression::Lz4] {
            assert_eq!(read_set(&run.finish(codec, None).unwrap()), values);
        }
        let plain = batch.plain_or_sent().unwrap();
        assert_eq!(log::messages(&plain).count(), 3, "read back as Message v0 for a failure");
        finish(&mut a, second);
        // 5 is the open batch's first: its offset delta and timestamp delta start again
        append_bytes(&mut a, 0, 6);
        let released = a.drain_all();
        assert_eq!(released.iter().map(|r| r.record).collect::<Vec<_>>(), [5, 6]);
        let values: Vec<_> = released
            .iter()
            .map(|r| EncodedMessage::view_of(r.message.as_ref().unwrap().as_bytes()).unwrap().value.unwrap().to_vec())
            .collect();
        assert_eq!(values, [b"v5".to_vec(), b"v6".to_vec()], "released with their values");
        assert!(a.is_empty());
    }

    /// With `batch.size`, a partition's Message v0 batch holds at most that many bytes of
    /// entries: the record that does not fit begins the next batch, and a partition with a
    /// batch so closed is sent before its linger ends; the open batch's rest waits for it.
    #[test]
    fn batch_size_bounds_a_message_v0_batch_and_a_full_one_goes_at_once() {
        // "v1".."v9": each entry 12 + 14 + 2 bytes
        let entry = 28;
        let mut a = acc(AccumulatorConfig { capacity: 100, batch_num_messages: 50, ..config() });
        a.config.batch_bytes = Some(3 * entry + 10);
        let t0 = Instant::now();
        for r in 1..=3 {
            append_bytes(&mut a, 0, r);
        }
        assert!(a.drain(t0).is_empty(), "three entries fit: the batch stays open for its linger");
        // 10 bytes left: the next record closes the batch, and the engine is woken once its
        // message (16 bytes as the inbox counts it) has come
        assert_eq!(a.room().1, 16);
        append_bytes(&mut a, 0, 4);
        append_bytes(&mut a, 0, 5);
        let rounds = a.drain(t0);
        assert_eq!(shape(&rounds), [(0, vec![(0, vec![1, 2, 3], 1)])], "the full batch, not its linger's");
        assert_eq!(rounds[0].batches[0].plain.as_ref().unwrap().len(), 3 * entry);
        assert_eq!(finish(&mut a, rounds), [1, 2, 3]);
        assert!(a.drain(t0 + 50 * MS).is_empty(), "4 and 5 are an open batch: they wait for their linger");
        let rounds = a.drain(t0 + 200 * MS);
        assert_eq!(shape(&rounds), [(0, vec![(0, vec![4, 5], 1)])]);
        finish(&mut a, rounds);
        assert!(a.is_empty());
    }

    /// A record larger than `batch.size` goes in a batch of its own; `batch.size` 0 sends every
    /// record alone, a batch per partition per round.
    #[test]
    fn a_record_over_batch_size_goes_alone_and_batch_size_zero_sends_each_alone() {
        let mut a = acc(AccumulatorConfig { capacity: 100, batch_num_messages: 50, ..config() });
        a.config.batch_bytes = Some(0);
        let t0 = Instant::now();
        for r in 1..=3 {
            append_bytes(&mut a, 0, r);
        }
        append_bytes(&mut a, 2, 4);
        // (partition, records) of each batch, and whether it went before the linger ended
        let mut sent = Vec::new();
        while !a.is_empty() {
            let mut rounds = a.drain(t0);
            let early = !rounds.is_empty();
            if !early {
                rounds = a.drain(t0 + 200 * MS);
            }
            for batch in rounds.iter().flat_map(|r| &r.batches) {
                sent.push((batch.tp.partition, batch.records.iter().map(|q| q.record()).collect::<Vec<_>>(), early));
            }
            finish(&mut a, rounds);
        }
        // p2's 4 went with p0's first (its broker was ready); only p0's last waited
        assert_eq!(sent, [(0, vec![1], true), (2, vec![4], true), (0, vec![2], true), (0, vec![3], false)]);
    }

    /// A RecordBatch v2 batch under `batch.size` counts its 61-byte header and its records; the
    /// record that does not fit is the next batch's first: offset delta 0, its own timestamp
    /// the next batch's base.
    #[test]
    fn batch_size_bounds_a_record_batch_with_its_header() {
        // "v1".."v9" without a key, timestamp deltas under 64: 9 bytes each
        let record = gregor_protocol::record::size_of_record(1, 1, None, Some(b"v2"), &[]);
        assert_eq!(record, 9);
        let mut a = acc(AccumulatorConfig { capacity: 100, batch_num_messages: 50, ..config() });
        a.config.batch_bytes = Some(gregor_protocol::record::BATCH_HEADER_SIZE + 3 * record);
        a.set_record_batches(0, true);
        for r in 1..=5 {
            append_bytes(&mut a, 0, r);
        }
        let t0 = Instant::now();
        let rounds = a.drain(t0);
        assert_eq!(shape(&rounds), [(0, vec![(0, vec![1, 2, 3], 1)])]);
        let run = rounds[0].batches[0].run.clone().unwrap();
        assert_eq!(run.len(), 3 * record);
        let set = run.finish(gregor_protocol::Compression::None, None).unwrap();
        assert_eq!(set.len(), gregor_protocol::record::BATCH_HEADER_SIZE + 3 * record, "batch.size exactly");
        finish(&mut a, rounds);
        let rounds = a.drain(t0 + 200 * MS);
        let run = rounds[0].batches[0].run.clone().unwrap();
        assert_eq!(run.stamps, Stamps { first: 1004, max: 1005 }, "4 is the second batch's first");
        let set = run.finish(gregor_protocol::Compression::None, None).unwrap();
        assert_eq!(read_set(&set), [("v4".to_string(), 1004), ("v5".to_string(), 1005)]);
        let batch = gregor_protocol::Batches::new(set.as_bytes().clone(), &Default::default()).next().unwrap().unwrap();
        let offsets: Vec<_> = batch.records().map(|r| r.unwrap().offset).collect();
        assert_eq!(offsets, [0, 1], "offset deltas from the batch's first");
        finish(&mut a, rounds);
        assert!(a.is_empty());
    }

    /// A round that takes part of an open Message v0 batch (its count ends there) leaves the
    /// rest with its bytes: later records fill it up to `batch.size`, not fewer.
    #[test]
    fn the_rest_of_a_batch_cut_by_a_rounds_count_keeps_its_bytes() {
        let entry = 28;
        let mut a = acc(AccumulatorConfig { capacity: 100, batch_num_messages: 3, ..config() });
        a.config.batch_bytes = Some(5 * entry);
        let t0 = Instant::now();
        for r in 1..=4 {
            append_bytes(&mut a, 0, r);
        }
        let rounds = a.drain(t0);
        assert_eq!(shape(&rounds), [(0, vec![(0, vec![1, 2, 3], 1)])], "the count's cut");
        finish(&mut a, rounds);
        // 4 is queued, one entry of its batch: 5 to 8 fill it to five entries
        for r in 5..=8 {
            append_bytes(&mut a, 0, r);
        }
        let mut sets = Vec::new();
        while !a.is_empty() {
            let rounds = a.drain(t0 + 200 * MS);
            for b in rounds.iter().flat_map(|r| &r.batches) {
                sets.push((b.records.iter().map(|q| q.record()).collect::<Vec<_>>(), b.plain.as_ref().unwrap().len()));
            }
            finish(&mut a, rounds);
        }
        // had 4's batch kept the bytes of the three taken, 6 would have begun a new one: [4, 5]
        assert_eq!(sets, [(vec![4, 5, 6], 3 * entry), (vec![7, 8], 2 * entry)]);
    }

    /// Appends record `r` of `tp` with its bytes, arrived at `at` (as [`append_bytes`]).
    fn append_bytes_at(a: &mut Accumulator<u32>, p: i32, r: u32, at: Instant) {
        let value = format!("v{r}");
        let message =
            EncodedMessage::encode(&gregor_protocol::Message::new(None, Some(value.clone().into_bytes().into())))
                .unwrap();
        a.append_with(&tp(p), r, at, |_, log| match log.v2.as_mut() {
            Some(records) => records.push(log.spent, 1000 + i64::from(r), None, Some(value.as_bytes()), &[]).unwrap(),
            None => log.push(message.as_bytes()),
        });
    }

    /// Holds record `r` for topic `u` with its message's bytes (value `v{r}`) kept for it.
    fn hold_bytes_at(a: &mut Accumulator<u32>, r: u32, at: Instant) {
        let value = format!("v{r}").into_bytes();
        let message = EncodedMessage::encode(&gregor_protocol::Message::new(None, Some(value.into()))).unwrap();
        a.hold_bytes(&Arc::from("u"), r, at, message.as_bytes());
    }

    fn released_values(released: &[Released<u32>]) -> Vec<(u32, Option<Vec<u8>>)> {
        released
            .iter()
            .map(|r| {
                let value =
                    r.message.as_ref().map(|m| EncodedMessage::view_of(m.as_bytes()).unwrap().value.unwrap().to_vec());
                (r.record, value)
            })
            .collect()
    }

    /// `delivery.timeout.ms`: held records and queued Message v0 records that arrived that long
    /// ago are taken out (with their bytes), the younger stay; `next_expiry` says when the next
    /// is due. Nothing without the setting.
    #[test]
    fn expire_takes_out_what_waited_past_the_delivery_timeout() {
        let t0 = Instant::now();
        // arrivals 20 ms apart (over the linger's sixteenth) make arrival runs of their own
        let filled = |delivery_timeout| {
            let mut a = acc(AccumulatorConfig {
                capacity: 100,
                batch_num_messages: 50,
                linger: 10 * MS,
                delivery_timeout,
                ..config()
            });
            for (r, at) in [(1, 0), (2, 20), (3, 40)] {
                append_bytes_at(&mut a, 0, r, t0 + at * MS);
            }
            a.hold(&Arc::from("u"), 9, t0 + 10 * MS);
            hold_bytes_at(&mut a, 8, t0 + 10 * MS);
            hold_bytes_at(&mut a, 7, t0 + 30 * MS);
            a
        };
        let mut a = filled(None);
        assert!(a.expire(t0 + 10 * 1000 * MS).released.is_empty() && a.next_expiry().is_none(), "no setting: none");
        let mut a = filled(Some(100 * MS));
        assert_eq!(a.next_expiry(), Some(t0 + 100 * MS));
        let expired = a.expire(t0 + 115 * MS);
        assert!(expired.batches.is_empty());
        // a held record that kept its message, one whose message was held for it, the first queued
        assert_eq!(
            released_values(&expired.released),
            [(9, None), (8, Some(b"v8".to_vec())), (1, Some(b"v1".to_vec()))]
        );
        assert_eq!(a.len(), 3);
        assert_eq!(a.next_expiry(), Some(t0 + 120 * MS));
        let expired = a.expire(t0 + 125 * MS);
        assert_eq!(released_values(&expired.released), [(2, Some(b"v2".to_vec()))]);
        // the younger held record stays held, its bytes with it
        let held: Vec<_> = a.take_held("u").map(|(r, _, m)| (r, m.map(|m| m.len()))).collect();
        assert_eq!(held, [(7, Some(16))]);
        // 3 is left, and goes as usual
        let rounds = a.drain(t0 + 125 * MS);
        assert_eq!(shape(&rounds), [(0, vec![(0, vec![3], 1)])]);
        assert_eq!(finish(&mut a, rounds), [3]);
        assert!(a.is_empty() && a.next_expiry().is_none());
    }

    /// A RecordBatch v2 run is taken out whole once its first record is past the timeout (its
    /// records are one batch's); the next run stays.
    #[test]
    fn a_record_batch_run_expires_whole() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig {
            capacity: 100,
            batch_num_messages: 2,
            linger: 10 * MS,
            delivery_timeout: Some(100 * MS),
            ..config()
        });
        a.set_record_batches(0, true);
        // runs of two: [1, 2] [3, 4]
        for (r, at) in [(1, 0), (2, 50), (3, 60), (4, 70)] {
            append_bytes_at(&mut a, 0, r, t0 + at * MS);
        }
        let expired = a.expire(t0 + 100 * MS);
        assert_eq!(released_values(&expired.released), [(1, Some(b"v1".to_vec())), (2, Some(b"v2".to_vec()))]);
        assert_eq!(a.next_expiry(), Some(t0 + 160 * MS));
        let rounds = a.drain(t0 + 100 * MS);
        let run = rounds[0].batches[0].run.clone().unwrap();
        assert_eq!(
            read_set(&run.finish(gregor_protocol::Compression::None, None).unwrap()),
            [("v3".to_string(), 1003), ("v4".to_string(), 1004)]
        );
        assert_eq!(finish(&mut a, rounds), [3, 4]);
    }

    /// A batch waiting to be sent again expires by its oldest record's arrival, handed back as
    /// in flight (its `done` balances the counts); records queued behind a batch that has not
    /// expired stay behind it.
    #[test]
    fn a_batch_waiting_for_its_retry_expires_by_its_oldest_record() {
        let t0 = Instant::now();
        let mut a = expiring_at_100_ms();
        append_bytes_at(&mut a, 0, 1, t0);
        let mut rounds = a.drain(t0);
        let batch = rounds[0].batches.pop().unwrap();
        assert_eq!(batch.created, t0);
        a.round_done(0);
        append_bytes_at(&mut a, 0, 2, t0 + 50 * MS);
        a.retry(batch, t0 + 500 * MS);
        assert_eq!(a.next_expiry(), Some(t0 + 100 * MS), "the batch to retry is the oldest");
        let expired = a.expire(t0 + 120 * MS);
        assert!(expired.released.is_empty(), "2 had not waited 100 ms");
        assert_eq!(expired.batches.len(), 1);
        assert_eq!(a.in_flight(), 1, "handed back as in flight");
        assert_eq!(a.done(expired.batches.into_iter().next().unwrap()), [1]);
        assert_eq!((a.len(), a.in_flight()), (1, 0));
        // behind a retry that has not expired, a queued record waits for it
        let mut rounds = a.drain(t0 + 120 * MS);
        let batch = rounds[0].batches.pop().unwrap();
        a.round_done(0);
        append_bytes_at(&mut a, 0, 3, t0 + 130 * MS);
        a.retry(batch, t0 + 500 * MS);
        // 2 arrived at 50 ms: its batch expires at 150 ms, then 3 (130 ms) at 230 ms
        assert!(a.expire(t0 + 140 * MS).batches.is_empty());
        let expired = a.expire(t0 + 150 * MS);
        assert_eq!(expired.batches.len(), 1);
        assert!(expired.released.is_empty());
        for b in expired.batches {
            a.done(b);
        }
        assert_eq!(a.next_expiry(), Some(t0 + 230 * MS));
    }

    /// An accumulator with a delivery timeout of 100 ms and no linger.
    fn expiring_at_100_ms() -> Accumulator<u32> {
        acc(AccumulatorConfig { capacity: 100, linger: Duration::ZERO, delivery_timeout: Some(100 * MS), ..config() })
    }

    /// Records queued behind a batch of their partition in flight wait for its outcome before
    /// they expire (results stay in order per partition); then they go at once.
    #[test]
    fn queued_records_expire_only_after_the_batch_in_flight_ahead_of_them() {
        let t0 = Instant::now();
        let mut a = expiring_at_100_ms();
        append_bytes_at(&mut a, 0, 1, t0);
        let rounds = a.drain(t0);
        append_bytes_at(&mut a, 0, 2, t0 + 10 * MS);
        assert!(a.expire(t0 + 500 * MS).released.is_empty(), "2 waits for 1's outcome");
        a.round_done(0);
        for batch in rounds.into_iter().flat_map(|r| r.batches) {
            a.done(batch);
        }
        assert!(a.next_expiry().is_some_and(|at| at <= t0 + 500 * MS), "due at once");
        assert_eq!(released_values(&a.expire(t0 + 500 * MS).released), [(2, Some(b"v2".to_vec()))]);
        assert!(a.is_empty());
    }

    /// Four records of two partitions of broker 0, an entry to a block, drained (their blocks
    /// spent); then a fifth for partition 1 while their batches are in flight (none of the
    /// spent blocks is free: a new one). The accumulator, the rounds in flight, the message.
    fn four_spent_blocks_in_flight() -> (Accumulator<u32>, Vec<Round<u32>>, EncodedMessage) {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { capacity: 100, batch_num_messages: 4, ..config() });
        let message = block_sized_message();
        for (p, r) in [(0, 0), (0, 1), (2, 2), (2, 3)] {
            a.append_with(&tp(p), r, t0, |_, log| log.push(message.as_bytes()));
        }
        let rounds = a.drain(t0);
        assert_eq!(a.spent.len(), 4, "every block's entries taken: spent");
        a.append_with(&tp(1), 4, t0, |_, log| log.push(message.as_bytes()));
        assert_eq!(a.spent.len(), 4, "held by the batches in flight: not used again yet");
        (a, rounds, message)
    }

    #[test]
    fn blocks_of_finished_batches_are_used_again_by_any_partition() {
        let (mut a, rounds, message) = four_spent_blocks_in_flight();
        assert_eq!(finish(&mut a, rounds), [0, 1, 2, 3]);
        // the batches are gone (through `done`): the next blocks are spent ones (a
        // partition's first block fits its first entry, its next ones are 64 KiB)
        for r in 5..8 {
            a.append_with(&tp(1), r, Instant::now(), |_, log| log.push(message.as_bytes()));
        }
        assert_eq!(a.spent.len(), 2, "the two spent blocks of 64 KiB used again");
    }

    /// Spent log blocks are kept for any partition's next ones while the producer holds
    /// records, and let go once it holds none.
    #[test]
    fn spent_blocks_are_kept_while_records_are_held_and_go_once_none_are() {
        let (mut a, rounds, _) = four_spent_blocks_in_flight();
        assert_eq!(finish(&mut a, rounds), [0, 1, 2, 3]);
        assert_eq!(a.spent.len(), 4, "a record is still held");
        let rounds = a.drain(Instant::now() + 200 * MS);
        assert_eq!(finish(&mut a, rounds), [4]);
        assert!(a.is_empty());
        assert_eq!(a.spent.len(), 0, "nothing held: the blocks go");
    }

    #[test]
    fn batch_num_messages_per_broker_makes_it_ready_at_once() {
        let t0 = Instant::now();
        let mut a = acc(config());
        a.append(&tp(0), 1, t0);
        a.append(&tp(2), 2, t0);
        assert!(a.drain(t0).is_empty());
        a.append(&tp(1), 3, t0); // another broker: does not count for broker 0
        assert!(a.drain(t0).is_empty());
        a.append(&tp(2), 4, t0);
        let rounds = a.drain(t0);
        assert_eq!(shape(&rounds), [(0, vec![(0, vec![1], 1), (2, vec![2, 4], 1)])]);
        // broker 1 still lingers
        assert_eq!(a.next_wakeup(t0), Some(t0 + 100 * MS));
    }

    #[test]
    fn a_round_holds_at_most_batch_num_messages() {
        let t0 = Instant::now();
        let mut a = acc(config());
        for r in 1..=5 {
            a.append(&tp(0), r, t0);
        }
        let rounds = a.drain(t0);
        assert_eq!(shape(&rounds), [(0, vec![(0, vec![1, 2, 3], 1)])]);
        assert!(a.drain(t0 + 200 * MS).is_empty(), "one round per broker, one batch per partition in flight");
        assert_eq!(a.next_wakeup(t0), None);
        finish(&mut a, rounds);
        assert_eq!(shape(&a.drain(t0 + 100 * MS)), [(0, vec![(0, vec![4, 5], 1)])]);
    }

    #[test]
    fn a_full_accumulator_sends_everything_at_once() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { capacity: 4, batch_num_messages: 4, linger: 10_000 * MS, ..config() });
        for r in 1..=3 {
            a.append(&tp(0), r, t0);
        }
        assert!(a.drain(t0).is_empty());
        a.append(&tp(1), 4, t0);
        assert!(a.is_full());
        let rounds = a.drain(t0);
        assert_eq!(shape(&rounds), [(0, vec![(0, vec![1, 2, 3], 1)]), (1, vec![(1, vec![4], 1)])]);
        // in flight still counts: while full, what arrives goes at once
        let _ = finish(&mut a, rounds);
        assert!(!a.is_full());
    }

    /// Full, a broker with two rounds in flight gets no third at once: its records wait for a
    /// round to come back (their linger does not send them while a round is in flight), and
    /// then go as one round, not cut into one round per arrival.
    #[test]
    fn a_full_accumulator_keeps_two_rounds_ahead_per_broker_not_more() {
        let t0 = Instant::now();
        let config = AccumulatorConfig { capacity: 6, batch_num_messages: 100, max_in_flight: 5, ..config() };
        let mut a = acc(config);
        for r in 1..=6 {
            a.append(&tp(0), r, t0);
        }
        assert!(a.is_full());
        let first = a.drain(t0);
        assert_eq!(shape(&first), [(0, vec![(0, vec![1, 2, 3, 4, 5, 6], 1)])]);
        // still full (in flight counts): records one at a time
        a.append(&tp(0), 7, t0);
        let second = a.drain(t0);
        assert_eq!(shape(&second), [(0, vec![(0, vec![7], 1)])], "one round behind the first");
        a.append(&tp(0), 8, t0);
        a.append(&tp(0), 9, t0);
        assert!(a.drain(t0).is_empty(), "two rounds ahead: the rest waits");
        assert_eq!(a.next_wakeup(t0), None, "for a round's outcome");
        assert!(a.drain(t0 + config.linger).is_empty(), "lingered, with rounds in flight");
        // a round comes back: the waiting records go together
        let mut first = first;
        a.round_done(0);
        for batch in first.pop().unwrap().batches {
            a.done(batch);
        }
        assert!(!a.is_full());
        for r in 10..=12 {
            a.append(&tp(0), r, t0);
        }
        assert!(a.is_full(), "full again, one round in flight");
        assert_eq!(shape(&a.drain(t0)), [(0, vec![(0, vec![8, 9, 10, 11, 12], 1)])]);
        assert_eq!(finish(&mut a, second), [7]);
    }

    /// With rounds pipelined (max_in_flight 5), records ready by their linger alone wait while
    /// their broker has a round in flight, and then go together; a full batch, another broker,
    /// and a flush do not wait.
    #[test]
    fn lingered_records_wait_for_their_brokers_round_in_flight_then_go_together() {
        let t0 = Instant::now();
        let config = AccumulatorConfig {
            linger: Duration::ZERO,
            batch_num_messages: 4,
            capacity: 100,
            max_in_flight: 5,
            ..config()
        };
        let mut a = acc(config);
        a.append(&tp(0), 1, t0);
        assert!(!a.waits_for_a_round(), "nothing in flight");
        let first = a.drain(t0);
        assert_eq!(shape(&first), [(0, vec![(0, vec![1], 1)])]);
        assert!(!a.waits_for_a_round(), "nothing queued");
        // broker 0 has a round in flight: p0's and p2's lingered records wait, p1's go
        a.append(&tp(0), 2, t0);
        a.append(&tp(2), 3, t0);
        a.append(&tp(1), 4, t0);
        assert_eq!(shape(&a.drain(t0 + MS)), [(1, vec![(1, vec![4], 1)])]);
        assert!(a.drain(t0 + 10 * MS).is_empty(), "lingered long enough, but broker 0 is busy");
        assert!(a.waits_for_a_round());
        assert_eq!(a.next_wakeup(t0 + 10 * MS), None, "only the round's outcome lets them go");
        // a full batch's worth pipelines behind the round in flight
        a.append(&tp(0), 5, t0);
        a.append(&tp(2), 6, t0);
        let full = a.drain(t0 + 10 * MS);
        assert_eq!(shape(&full), [(0, vec![(2, vec![3, 6], 1), (0, vec![2, 5], 1)])], "round-robin: p2 first");
        // both rounds come back: what came meanwhile goes as one round
        a.append(&tp(0), 7, t0);
        a.append(&tp(2), 8, t0);
        assert_eq!(finish(&mut a, first), [1]);
        assert!(a.drain(t0 + 10 * MS).is_empty(), "one round still in flight");
        assert_eq!(finish(&mut a, full), [3, 6, 2, 5]);
        assert_eq!(a.next_wakeup(t0 + 10 * MS), Some(t0), "due since it came");
        assert_eq!(shape(&a.drain(t0 + 10 * MS)), [(0, vec![(0, vec![7], 1), (2, vec![8], 1)])]);
        // a flush does not wait
        a.append(&tp(0), 9, t0);
        assert!(a.waits_for_a_round(), "record 9 waits for the round of 7 and 8");
        assert!(a.drain(t0 + 10 * MS).is_empty());
        a.set_flushing(true);
        assert_eq!(shape(&a.drain(t0 + 10 * MS)), [(0, vec![(0, vec![9], 1)])]);
    }

    #[test]
    fn flushing_skips_the_linger() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { linger: 10_000 * MS, ..config() });
        a.append(&tp(1), 1, t0);
        assert!(a.drain(t0).is_empty());
        a.set_flushing(true);
        assert_eq!(a.next_wakeup(t0), Some(t0));
        assert_eq!(shape(&a.drain(t0)), [(1, vec![(1, vec![1], 1)])]);
    }

    #[test]
    fn brokers_are_independent_and_one_round_each() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { linger: Duration::ZERO, ..config() });
        a.append(&tp(0), 1, t0);
        a.append(&tp(1), 2, t0);
        let rounds = a.drain(t0);
        assert_eq!(rounds.len(), 2);
        a.append(&tp(2), 3, t0); // broker 0 is busy with p0's round
        a.append(&tp(1), 4, t0); // p1 in flight
        assert!(a.drain(t0).is_empty());
        let mut rounds = rounds.into_iter();
        let r0 = rounds.next().unwrap();
        a.round_done(r0.broker);
        for b in r0.batches {
            a.done(b);
        }
        assert_eq!(shape(&a.drain(t0)), [(0, vec![(2, vec![3], 1)])]);
    }

    #[test]
    fn retries_go_first_alone_after_the_backoff_and_block_the_partition() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { linger: Duration::ZERO, ..config() });
        a.append(&tp(0), 1, t0);
        a.append(&tp(0), 2, t0);
        let mut rounds = a.drain(t0);
        a.append(&tp(0), 3, t0);
        let round = rounds.pop().unwrap();
        a.round_done(round.broker);
        let batch = round.batches.into_iter().next().unwrap();
        let t1 = t0 + 5 * MS;
        a.retry(batch, t1 + BACKOFF);
        a.set_flushing(true);
        assert!(a.drain(t1 + 49 * MS).is_empty(), "the retry waits its backoff and 3 waits behind it");
        assert_eq!(a.next_wakeup(t1), Some(t1 + 50 * MS));
        let rounds = a.drain(t1 + 50 * MS);
        assert_eq!(shape(&rounds), [(0, vec![(0, vec![1, 2], 2)])], "alone, not merged with 3");
        assert_eq!(finish(&mut a, rounds), [1, 2]);
        assert_eq!(shape(&a.drain(t1 + 50 * MS)), [(0, vec![(0, vec![3], 1)])]);
    }

    /// The retry budget is `crate::outcome`'s: driven by it, a batch is sent
    /// `message.send.max.retries + 1` times, then handed back to be failed.
    #[test]
    fn retries_run_out_after_max_retries_plus_one_sends() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { linger: Duration::ZERO, ..config() });
        let policy = RetryPolicy {
            max_retries: a.config().max_retries,
            backoff: BACKOFF,
            idempotent: false,
            delivery_timeout: None,
        };
        a.append(&tp(0), 1, t0);
        let mut now = t0;
        for attempt in 1..=3 {
            let round = a.drain(now).pop().expect("sent");
            a.round_done(round.broker);
            let batch = round.batches.into_iter().next().unwrap();
            assert_eq!(batch.attempts, attempt);
            match outcome::classify(Answer::Missing, batch.attempts, batch.created, policy, now).action {
                Action::Retry { not_before } => {
                    assert!(attempt <= 2);
                    assert!(a.drain(not_before - MS).is_empty(), "not before the backoff");
                    a.retry(batch, not_before);
                    now = not_before;
                }
                action => {
                    assert_eq!(action, Action::Fail { out_of_retries: true });
                    assert_eq!(attempt, 3, "max_retries 2: three sends");
                    assert_eq!(a.done(batch), [1]);
                }
            }
        }
        assert!(a.is_empty());
    }

    #[test]
    fn without_a_leader_records_wait_then_expire_after_the_rounds() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { linger: Duration::ZERO, ..config() });
        a.set_leader(&tp(0), None);
        a.append(&tp(0), 1, t0);
        assert!(a.waiting_for_metadata());
        assert!(a.drain(t0).is_empty());
        assert_eq!(a.next_wakeup(t0), None);
        let topics = vec![Arc::<str>::from("t")];
        assert!(a.end_metadata_round(&topics).is_empty());
        assert!(a.end_metadata_round(&topics).is_empty());
        // a round of another topic does not count
        assert!(a.end_metadata_round(&[Arc::<str>::from("u")]).is_empty());
        // a leader resets the count
        a.set_leader(&tp(0), Some(0));
        a.set_leader(&tp(0), None);
        assert!(a.end_metadata_round(&topics).is_empty());
        assert!(a.end_metadata_round(&topics).is_empty());
        let released = a.end_metadata_round(&topics);
        assert_eq!(released.iter().map(|r| (r.record, r.partition, r.attempts)).collect::<Vec<_>>(), [(1, Some(0), 0)]);
        assert!(a.is_empty());
        // a leader arriving in time sends them
        a.append(&tp(0), 2, t0);
        a.set_leader(&tp(0), Some(1));
        assert_eq!(shape(&a.drain(t0)), [(1, vec![(0, vec![2], 1)])]);
    }

    #[test]
    fn held_records_wait_for_their_topic_and_expire_after_the_rounds() {
        let t0 = Instant::now();
        let mut a: Accumulator<u32> = Accumulator::new(config());
        let two = EncodedMessage::encode(&gregor_protocol::Message::new(None, Some(b"two"[..].into()))).unwrap();
        a.hold(&"new".into(), 1, t0);
        a.hold_bytes(&"new".into(), 2, t0, two.as_bytes());
        assert!(a.has_held("new") && a.waiting_for_metadata());
        assert_eq!(a.held_topics(), [Arc::<str>::from("new")]);
        assert_eq!(a.len(), 2);
        let topics = vec![Arc::<str>::from("new")];
        assert!(a.end_metadata_round(&topics).is_empty());
        // partitioned: taken, appended elsewhere
        let taken: Vec<_> = a.take_held("new").collect();
        let records = taken.iter().map(|(r, _, m)| (*r, m.clone())).collect::<Vec<_>>();
        assert_eq!(records, [(1, None), (2, Some(Bytes::copy_from_slice(two.as_bytes())))]);
        assert_eq!(a.len(), 0);
        for (r, at, m) in taken {
            // still no partition: held again, the round count kept
            match m {
                Some(m) => a.hold_bytes(&"new".into(), r, at, &m),
                None => a.hold(&"new".into(), r, at),
            }
        }
        assert!(a.end_metadata_round(&topics).is_empty());
        let released = a.end_metadata_round(&topics);
        assert_eq!(released.iter().map(|r| (r.record, r.partition)).collect::<Vec<_>>(), [(1, None), (2, None)]);
        // the one whose message was held for it gets it back, to be failed with
        assert!(released[0].message.is_none());
        assert_eq!(released[1].message.as_ref().map(|m| m.as_bytes()), Some(two.as_bytes()));
        assert!(a.is_empty() && !a.has_held("new"));
    }

    #[test]
    fn drain_all_and_remove_partition_release_what_is_not_in_flight() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { linger: Duration::ZERO, ..config() });
        a.append(&tp(0), 1, t0);
        let in_flight = a.drain(t0);
        a.append(&tp(0), 2, t0);
        a.append(&tp(1), 3, t0);
        a.hold(&"u".into(), 4, t0);
        hold_bytes_at(&mut a, 5, t0);
        let released = a.remove_partition(&tp(1));
        assert_eq!(released.iter().map(|r| r.record).collect::<Vec<_>>(), [3]);
        assert!(!a.knows(&tp(1)));
        let released = a.drain_all();
        assert_eq!(released.iter().map(|r| r.record).collect::<Vec<_>>(), [4, 5, 2]);
        assert_eq!(released_values(&released[..2]), [(4, None), (5, Some(b"v5".to_vec()))]);
        assert_eq!((a.len(), a.in_flight()), (1, 1), "the batch in flight is still counted");
        assert_eq!(finish(&mut a, in_flight), [1]);
        assert!(a.is_empty());
    }

    #[test]
    fn rounds_rotate_over_a_brokers_partitions() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { batch_num_messages: 2, linger: Duration::ZERO, ..config() });
        for r in [1, 2, 3, 4] {
            a.append(&tp(0), r, t0);
        }
        for r in [5, 6] {
            a.append(&tp(2), r, t0);
        }
        let first = a.drain(t0);
        assert_eq!(shape(&first), [(0, vec![(0, vec![1, 2], 1)])]);
        finish(&mut a, first);
        let second = a.drain(t0);
        assert_eq!(shape(&second), [(0, vec![(2, vec![5, 6], 1)])], "p2 is not starved by p0");
        finish(&mut a, second);
        assert_eq!(shape(&a.drain(t0)), [(0, vec![(0, vec![3, 4], 1)])]);
    }

    #[test]
    fn a_message_set_batch_is_cut_where_the_round_ends() {
        // broker 0 (p0, p2) speaks Message v0: a round takes what its budget of 3 leaves
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { linger: Duration::ZERO, ..config() });
        for r in [1, 2] {
            a.append(&tp(0), r, t0);
        }
        for r in [3, 4] {
            a.append(&tp(2), r, t0);
        }
        let first = a.drain(t0);
        assert_eq!(shape(&first), [(0, vec![(0, vec![1, 2], 1), (2, vec![3], 1)])]);
        finish(&mut a, first);
        assert_eq!(shape(&a.drain(t0)), [(0, vec![(2, vec![4], 1)])]);
    }

    #[test]
    fn a_record_batch_is_cut_as_records_come_and_a_round_takes_it_whole() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { linger: Duration::ZERO, ..config() });
        a.set_record_batches(0, true);
        for r in [1, 2] {
            a.append(&tp(0), r, t0);
        }
        for r in [3, 4] {
            a.append(&tp(2), r, t0);
        }
        // p2's two do not fit the one place p0 leaves: they wait for the next round, whole
        let first = a.drain(t0);
        assert_eq!(shape(&first), [(0, vec![(0, vec![1, 2], 1)])]);
        finish(&mut a, first);
        let second = a.drain(t0);
        assert_eq!(shape(&second), [(0, vec![(2, vec![3, 4], 1)])]);
        finish(&mut a, second);

        // cut at batch.num.messages as they come: 3, 3, then the open 1, a round each
        let mut a = acc(AccumulatorConfig { linger: Duration::ZERO, capacity: 100, ..config() });
        a.set_record_batches(0, true);
        for r in 1..=7 {
            a.append(&tp(0), r, t0);
        }
        let mut batches = Vec::new();
        while !a.is_empty() {
            let rounds = a.drain(t0);
            batches.extend(shape(&rounds).into_iter().flat_map(|(_, b)| b).map(|(_, records, _)| records));
            finish(&mut a, rounds);
        }
        assert_eq!(batches, [vec![1, 2, 3], vec![4, 5, 6], vec![7]]);
    }

    #[test]
    fn a_broker_found_to_take_record_batches_cuts_what_comes_after_what_its_partitions_held() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { batch_num_messages: 4, capacity: 100, ..config() });
        // queued before it is known: Message v0, cut where a round's count ends
        for r in 1..=6 {
            a.append(&tp(0), r, t0);
        }
        a.set_record_batches(0, true);
        let first = a.drain(t0);
        assert_eq!(shape(&first), [(0, vec![(0, vec![1, 2, 3, 4], 1)])]);
        // what comes now starts a batch of its own (never with records of the other kind),
        // cut at 4 as it comes
        for r in 7..=10 {
            a.append(&tp(0), r, t0);
        }
        finish(&mut a, first);
        let second = a.drain(t0);
        assert_eq!(shape(&second), [(0, vec![(0, vec![5, 6], 1)])]);
        finish(&mut a, second);
        let third = a.drain(t0);
        assert_eq!(shape(&third), [(0, vec![(0, vec![7, 8, 9, 10], 1)])]);
        finish(&mut a, third);
        // the round starts at p2 (the rotation); p0's open batch of three does not fit the
        // two places p2's two leave
        for r in 11..=12 {
            a.append(&tp(2), r, t0);
        }
        a.append(&tp(0), 13, t0);
        for r in 14..=15 {
            a.append(&tp(0), r, t0);
        }
        let fourth = a.drain(t0 + 100 * MS);
        assert_eq!(shape(&fourth), [(0, vec![(2, vec![11, 12], 1)])]);
        finish(&mut a, fourth);
        assert_eq!(shape(&a.drain(t0 + 100 * MS)), [(0, vec![(0, vec![13, 14, 15], 1)])]);
    }

    #[test]
    fn a_leader_that_takes_message_sets_cuts_at_the_round_again() {
        let t0 = Instant::now();
        let mut a = acc(AccumulatorConfig { linger: Duration::ZERO, capacity: 100, ..config() });
        a.set_record_batches(0, true);
        for r in [1, 2] {
            a.append(&tp(2), r, t0);
        }
        for r in [3, 4] {
            a.append(&tp(0), r, t0);
        }
        // p0 moves to broker 1, a Message v0 broker; p2 stays whole on broker 0
        a.set_leader(&tp(0), Some(1));
        a.set_leader(&tp(2), Some(0));
        a.append(&tp(1), 5, t0);
        a.append(&tp(1), 6, t0);
        let rounds = a.drain(t0);
        assert_eq!(
            shape(&rounds),
            [(0, vec![(2, vec![1, 2], 1)]), (1, vec![(0, vec![3, 4], 1), (1, vec![5], 1)])],
            "on broker 1 p1 is cut where the round's 3 end"
        );
        finish(&mut a, rounds);
        // broker 0 no longer takes record batches: p2 is cut at the round too
        a.set_record_batches(0, false);
        for r in [7, 8] {
            a.append(&tp(0), r, t0);
        }
        a.set_leader(&tp(0), Some(0));
        for r in [9, 10] {
            a.append(&tp(2), r, t0);
        }
        let rounds = a.drain(t0);
        assert_eq!(
            shape(&rounds),
            [(0, vec![(0, vec![7, 8], 1), (2, vec![9], 1)]), (1, vec![(1, vec![6], 1)])],
            "p2 is cut where broker 0's round ends"
        );
    }
}

#[cfg(test)]
mod proptests {
    //! Any interleaving of appends, clock ticks, drains, acks, retriable and fatal failures and
    //! leader changes keeps per-partition order and gives every record exactly one outcome.

    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;
    use crate::outcome::{self, Action, Answer, RetryPolicy};

    /// What a retriable failure does with a batch (as the engine does it).
    const POLICY: RetryPolicy =
        RetryPolicy { max_retries: 2, backoff: Duration::from_millis(30), idempotent: false, delivery_timeout: None };

    #[derive(Debug, Clone)]
    enum Op {
        Append(i32),
        Hold,
        Partition,
        Tick(u64),
        Drain,
        Ack(usize),
        FailRetriable(usize),
        FailFatal(usize),
        Leader(i32, Option<i32>),
        RecordBatches(i32, bool),
        MetadataRound,
        Flush(bool),
        Expire,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0..3i32).prop_map(Op::Append),
            1 => Just(Op::Hold),
            1 => Just(Op::Partition),
            2 => (0..80u64).prop_map(Op::Tick),
            3 => Just(Op::Drain),
            3 => (0..4usize).prop_map(Op::Ack),
            2 => (0..4usize).prop_map(Op::FailRetriable),
            1 => (0..4usize).prop_map(Op::FailFatal),
            1 => (0..3i32, prop::option::of(0..2i32)).prop_map(|(p, l)| Op::Leader(p, l)),
            1 => (0..2i32, any::<bool>()).prop_map(|(b, takes)| Op::RecordBatches(b, takes)),
            1 => Just(Op::MetadataRound),
            1 => any::<bool>().prop_map(Op::Flush),
            1 => Just(Op::Expire),
        ]
    }

    /// A record: (partition it was appended to, or -1 while held; its sequence number).
    type Rec = u64;

    struct Model {
        acc: Accumulator<Rec>,
        now: Instant,
        next: u64,
        appended: HashMap<i32, Vec<Rec>>,
        partition_of: HashMap<Rec, i32>,
        in_flight: Vec<Round<Rec>>,
        outcomes: HashMap<Rec, bool>,
        acked: HashMap<i32, Vec<Rec>>,
    }

    impl Model {
        fn outcome(&mut self, r: Rec, ok: bool) {
            assert!(self.outcomes.insert(r, ok).is_none(), "record {r} got two outcomes");
        }

        /// Appends record `r` with a value of `r % 40` bytes, as Message v0 or as a RecordBatch
        /// v2 record (as its partition takes it).
        fn append(&mut self, p: i32, r: Rec) {
            let value = vec![b'x'; (r % 40) as usize];
            let message = EncodedMessage::encode(&gregor_protocol::Message::new(None, Some(value.clone().into())))
                .expect("a small message");
            let stamp = i64::try_from(r).expect("a small number");
            self.acc.append_with(&PartitionKey::new("t", p), r, self.now, |_, log| match log.v2.as_mut() {
                Some(records) => records.push(log.spent, stamp, None, Some(&value), &[]).expect("a small record"),
                None => log.push(message.as_bytes()),
            });
            self.appended.entry(p).or_default().push(r);
            self.partition_of.insert(r, p);
        }

        fn check_in_flight(&self) {
            let mut seen = std::collections::HashSet::new();
            let mut brokers = std::collections::HashSet::new();
            for round in &self.in_flight {
                assert!(brokers.insert(round.broker), "two rounds to broker {}", round.broker);
                let records: usize = round.batches.iter().map(|b| b.records.len()).sum();
                assert!(records <= self.acc.config().batch_num_messages, "a round of {records} records");
                for b in &round.batches {
                    assert!(seen.insert(b.tp.clone()), "two batches of {} in flight", b.tp);
                    assert!(b.records.len() <= self.acc.config().batch_num_messages);
                    // batch.size: a batch's bytes as sent, uncompressed, unless it is one record
                    let bytes = match (&b.plain, &b.run) {
                        (Some(set), _) => set.len(),
                        (_, Some(run)) => gregor_protocol::record::BATCH_HEADER_SIZE + run.len(),
                        _ => panic!("a batch of {} without its bytes", b.tp),
                    };
                    if let Some(most) = self.acc.config().batch_bytes {
                        assert!(b.records.len() == 1 || bytes <= most, "a batch of {bytes} bytes over {most}");
                    }
                }
            }
        }

        fn settle(&mut self, round_index: usize, how: u8) {
            if self.in_flight.is_empty() {
                return;
            }
            let round = self.in_flight.remove(round_index % self.in_flight.len());
            self.acc.round_done(round.broker);
            for batch in round.batches {
                match how {
                    0 => {
                        let p = batch.tp.partition;
                        for r in self.acc.done(batch) {
                            self.acked.entry(p).or_default().push(r);
                            self.outcome(r, true);
                        }
                    }
                    1 => match outcome::classify(Answer::Missing, batch.attempts, batch.created, POLICY, self.now)
                        .action
                    {
                        Action::Retry { not_before } => self.acc.retry(batch, not_before),
                        _ => {
                            for r in self.acc.done(batch) {
                                self.outcome(r, false);
                            }
                        }
                    },
                    _ => {
                        for r in self.acc.done(batch) {
                            self.outcome(r, false);
                        }
                    }
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn order_kept_and_every_record_settled_once(
            ops in prop::collection::vec(op(), 0..200),
            batch_bytes in prop::option::of(0usize..300),
            delivery_timeout in prop::option::of((1u64..200).prop_map(Duration::from_millis)),
        ) {
            let config = AccumulatorConfig {
                batch_num_messages: 3,
                linger: Duration::from_millis(40),
                capacity: 12,
                max_retries: 2,
                max_in_flight: 1,
                chunk_bytes: 0,
                batch_bytes,
                delivery_timeout,
            };
            let mut m = Model {
                acc: Accumulator::new(config),
                now: Instant::now(),
                next: 0,
                appended: HashMap::new(),
                partition_of: HashMap::new(),
                in_flight: Vec::new(),
                outcomes: HashMap::new(),
                acked: HashMap::new(),
            };
            for p in 0..3 {
                m.acc.set_leader(&PartitionKey::new("t", p), Some(p % 2));
            }
            for op in ops {
                match op {
                    Op::Append(p) => {
                        let r = m.next;
                        m.next += 1;
                        // records of a partition follow the held ones, as the producer does
                        if m.acc.has_held("t") {
                            m.acc.hold(&"t".into(), r, m.now);
                        } else {
                            m.append(p, r);
                        }
                    }
                    Op::Hold => {
                        let r = m.next;
                        m.next += 1;
                        m.acc.hold(&"t".into(), r, m.now);
                    }
                    Op::Partition => {
                        for (r, _, _) in m.acc.take_held("t") {
                            m.append((r % 3) as i32, r);
                        }
                    }
                    Op::Tick(ms) => m.now += Duration::from_millis(ms),
                    Op::Drain => {
                        let rounds = m.acc.drain(m.now);
                        m.in_flight.extend(rounds);
                        m.check_in_flight();
                    }
                    Op::Ack(i) => m.settle(i, 0),
                    Op::FailRetriable(i) => m.settle(i, 1),
                    Op::FailFatal(i) => m.settle(i, 2),
                    Op::Leader(p, l) => m.acc.set_leader(&PartitionKey::new("t", p), l),
                    Op::RecordBatches(b, takes) => m.acc.set_record_batches(b, takes),
                    Op::MetadataRound => {
                        for r in m.acc.end_metadata_round(&[Arc::<str>::from("t")]) {
                            m.outcome(r.record, false);
                        }
                    }
                    Op::Flush(f) => m.acc.set_flushing(f),
                    Op::Expire => {
                        let expired = m.acc.expire(m.now);
                        for r in expired.released {
                            m.outcome(r.record, false);
                        }
                        for b in expired.batches {
                            for r in m.acc.done(b) {
                                m.outcome(r, false);
                            }
                        }
                        // nothing left that is not in flight is past its time
                        prop_assert!(m.acc.next_expiry().is_none_or(|at| at > m.now));
                    }
                }
                let in_flight: usize = m.in_flight.iter().flat_map(|r| &r.batches).map(|b| b.records.len()).sum();
                prop_assert_eq!(m.acc.in_flight(), in_flight);
                prop_assert_eq!(m.acc.len() + m.outcomes.len(), m.next as usize, "every record is counted or settled");
            }
            // let the cluster heal: leaders everywhere, acks for everything, time passing
            for (r, _, _) in m.acc.take_held("t") {
                m.append((r % 3) as i32, r);
            }
            for p in 0..3 {
                m.acc.set_leader(&PartitionKey::new("t", p), Some(p % 2));
            }
            let mut guard = 0;
            while !m.acc.is_empty() {
                guard += 1;
                prop_assert!(guard < 10_000, "the accumulator never emptied");
                while !m.in_flight.is_empty() {
                    m.settle(0, 0);
                }
                m.now += Duration::from_millis(50);
                let rounds = m.acc.drain(m.now);
                m.in_flight.extend(rounds);
                m.check_in_flight();
            }
            prop_assert_eq!(m.outcomes.len() as u64, m.next, "every record settled exactly once");
            // acknowledged records of each partition are in append order
            for (p, acked) in &m.acked {
                let order: Vec<Rec> = m.appended[p].iter().copied().filter(|r| m.outcomes[r]).collect();
                prop_assert_eq!(acked, &order, "partition {}", p);
                for r in acked {
                    prop_assert_eq!(m.partition_of[r], *p);
                }
            }
        }
    }
}

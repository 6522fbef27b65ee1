//! The background task of an [`AsyncProducer`](crate::AsyncProducer): it owns the
//! accumulator, the partitioner, the metadata cache and the pool, and moves bytes and timers.
//! Decisions are the accumulator's; this file routes records, turns rounds into Produce
//! requests, and turns responses into outcomes.
//!
//! ```text
//!  inbox (records, flush, close) ──► route: partition ──► Accumulator ──drain(now)──► rounds
//!       ▲                                  ▲                                  │ one task per round
//!  metadata refresh task ──► leaders ──────┘        outcome ◄── Produce v0 ◄──┘ (pool, per broker)
//!                                                      │
//!                          done ──► delivery task: permit back to the queue, then
//!                                   DeliveryFuture / callback / handler (in order)
//!                          retry ──► front of its partition, after retry.backoff.ms
//! ```

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use gregor_net::{MetadataCache, MetadataSnapshot};
use gregor_protocol::messages::{ProducePartition, ProduceRequest, ProduceResponse, TopicPartitions};
use gregor_protocol::{Compression, EncodedMessage, ErrorCode, MessageSet};
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::task::{Id, JoinError, JoinSet};
use tokio::time::Instant;
use tracing::Instrument;

use crate::accumulator::{Accumulator, AccumulatorConfig, Batch, Released, Round, TopicPartition};
use crate::arena::Arena;
use crate::config::ProducerConfig;
use crate::delivery::{CloseReport, DeliveryResult, FlushReport, Pending};
use crate::error::{DeliveryError, Error};
use crate::inbox::{Command, InboxReceiver, Incoming, Next, PackedRecord};
use crate::message::{detach, own_copy, placeholder};
use crate::partitioner::{Choice, PartitionerState};
use crate::record::RecordMetadata;
use crate::topic::Topic;

/// Most inbox messages handled in one go before the engine looks at its timers again.
const INBOX_BURST: usize = 4096;

/// On a current-thread runtime, a round whose compression costs at least this much (bytes of
/// messages for snappy and lz4, 16 times the bytes for gzip: about 40 us of CPU) is built on
/// tokio's blocking pool: in place it would stall every other task meanwhile, the
/// application's too (a 1,000-message gzip set takes ~2.6 ms). On a multi-thread runtime it is
/// built in place: the other workers keep the other tasks going, and offloading measured no
/// faster there, with more CPU per message (snappy, 1 partition: 0.99-1.11 -> 1.18-1.20 s per
/// million) and more memory (gzip: +10-14 MiB).
const OFFLOAD_COMPRESSION: usize = 32 * 1024;

/// Eager compression: a partition of a compressed topic gets its records compressed in chunks
/// of about this many bytes as they arrive, off the engine's task, rather than all at once
/// when its batch is sent. A batch is then sent as the wrappers of its chunks and of its last
/// records (a message set may hold several wrappers; a 0.8.2 broker writes them as one), and
/// the compression left when the linger ends is that of the last few records: records of a
/// partition that sends a batch every linger wait that much less, where all the round's
/// compression was done after the linger (a gzip round of 420 records: about 0.8 ms), on a
/// multi-thread runtime on the workers that also read the responses.
const CHUNK_BYTES: usize = 16 * 1024;

enum Completion {
    Produce {
        round: u64,
        /// Per batch of the round, in order: the set encoded by the round's task (`None`: the
        /// batch came encoded, a retry), or why it could not be (that batch was not sent).
        encoded: Vec<Option<Result<MessageSet, gregor_protocol::Error>>>,
        result: Result<Option<ProduceResponse>, gregor_net::Error>,
    },
    Metadata {
        result: Result<(), gregor_net::Error>,
    },
}

/// A batch as its round's task gets it: the set itself (a retry); or its messages laid out
/// uncompressed (by the engine: one copy of each message's bytes, where handing the task a
/// handle per message cost two reference count changes per record), to send as they are or
/// to compress with the codec; or why they could not be laid out.
enum SetSource {
    Encoded(MessageSet),
    Plain(MessageSet, Compression),
    /// Wrappers of chunks (see [`CHUNK_BYTES`]), the first of them maybe still compressing,
    /// then the batch's other records (uncompressed, if any), compressed with the codec.
    Chunked(Vec<ChunkSet>, Option<MessageSet>, Compression),
    Failed(gregor_protocol::Error),
}

/// A chunk's wrapper: compressed, or being compressed.
enum ChunkSet {
    Done(Result<MessageSet, gregor_protocol::Error>),
    Running(tokio::task::JoinHandle<Result<MessageSet, gregor_protocol::Error>>),
}

/// Records of a partition's queue compressed ahead of their batch: the records with sequence
/// numbers `first` to `last`, `records` of them in a row.
struct Chunk {
    first: u64,
    last: u64,
    records: usize,
    set: ChunkSet,
}

enum TaskKind {
    Round(u64),
    Metadata,
}

struct InFlight {
    broker: i32,
    batches: Vec<Batch<Pending>>,
}

struct FlushWaiter {
    /// Records with a lower `seq` were queued before the flush.
    below: u64,
    remaining: usize,
    failed: Vec<DeliveryError>,
    reply: oneshot::Sender<FlushReport>,
}

struct Closing {
    deadline: Instant,
    reply: Option<oneshot::Sender<CloseReport>>,
    undelivered: Vec<DeliveryError>,
}

#[derive(Default)]
struct TopicParts {
    all: Vec<i32>,
    available: Vec<i32>,
    error: Option<ErrorCode>,
}

/// Metadata refresh bookkeeping.
struct Refresh {
    /// The topics being refreshed right now.
    in_flight: Option<Vec<Arc<str>>>,
    /// A refresh is wanted, not before this.
    wanted: Option<Instant>,
    /// When the periodic refresh is due (`topic.metadata.refresh.interval.ms`).
    periodic: Option<Instant>,
    /// The last refresh's failure.
    last_error: Option<Arc<gregor_net::Error>>,
}

pub(crate) struct Engine {
    config: ProducerConfig,
    acc: Accumulator<Pending>,
    partitioner: PartitionerState,
    cache: MetadataCache,
    snapshot: Arc<MetadataSnapshot>,
    parts: HashMap<String, TopicParts>,
    topics: BTreeSet<Arc<str>>,
    /// The last record's topic, and a key of the engine's own allocation of it (an element of
    /// `topics`) whose partition [`Engine::on_packed`] sets: a record of the last topic is
    /// queued without a reference count raised and lowered.
    last_topic: Option<(Topic, TopicPartition)>,
    inbox: InboxReceiver,
    /// Commands taken from the inbox, not yet handled.
    incoming: Incoming,
    /// See `crate::message::placeholder`.
    placeholder: EncodedMessage,
    inbox_open: bool,
    permits: Arc<Semaphore>,
    /// Where results go: the delivery task (see [`deliver_loop`]) once `run` started it;
    /// handed out right here before that (the hand-driven tests).
    deliveries: Option<mpsc::UnboundedSender<Delivery>>,
    tasks: JoinSet<Completion>,
    task_kinds: HashMap<Id, TaskKind>,
    rounds: HashMap<u64, InFlight>,
    /// Per broker: resolves once its latest round is queued on the connection.
    queue_order: HashMap<i32, oneshot::Receiver<()>>,
    /// On a current-thread runtime, the rounds that may compress on the blocking pool at once
    /// (see [`OFFLOAD_COMPRESSION`]): one per core besides the runtime's.
    compressing: Option<Arc<Semaphore>>,
    /// The chunks compressed ahead of their batches, oldest first, per partition.
    chunks: HashMap<TopicPartition, std::collections::VecDeque<Chunk>>,
    /// Partitions due a chunk that waited for their batch in flight (their loose records
    /// kept, so the chunk still begins where the next batch will).
    chunks_waiting: Vec<TopicPartition>,
    /// Brokers whose last round carried a whole batch (`batch.num.messages` records): their
    /// partitions are sent as fast as batches fill, not at their linger, and make no chunks.
    full_rounds: HashSet<i32>,
    next_round: u64,
    next_seq: u64,
    refresh: Refresh,
    flushes: Vec<FlushWaiter>,
    closing: Option<Closing>,
    done: bool,
    /// Audit (crates/producer/src/audit.rs): `Some` when the producer publishes audit records.
    pub(crate) audit: Option<crate::audit::Auditor>,
}

impl Engine {
    pub(crate) fn new(
        config: ProducerConfig,
        cache: MetadataCache,
        inbox: InboxReceiver,
        permits: Arc<Semaphore>,
    ) -> Engine {
        let acc = Accumulator::new(AccumulatorConfig {
            batch_num_messages: config.batch_num_messages(),
            linger: config.queue_buffering_max(),
            capacity: config.queue_buffering_max_messages(),
            retry_backoff: config.retry_backoff(),
            max_retries: config.message_send_max_retries(),
            max_in_flight: config.max_in_flight(),
            chunk_bytes: if config.compression_codec() == Compression::None { 0 } else { CHUNK_BYTES },
        });
        Engine {
            partitioner: PartitionerState::new(config.partitioner().clone()),
            snapshot: cache.snapshot(),
            config,
            acc,
            cache,
            parts: HashMap::new(),
            topics: BTreeSet::new(),
            last_topic: None,
            inbox,
            incoming: Incoming::default(),
            placeholder: placeholder(),
            inbox_open: true,
            permits,
            deliveries: None,
            tasks: JoinSet::new(),
            task_kinds: HashMap::new(),
            rounds: HashMap::new(),
            queue_order: HashMap::new(),
            compressing: tokio::runtime::Handle::try_current()
                .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread)
                .then(|| {
                    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
                    Arc::new(Semaphore::new(cores.saturating_sub(1).max(1)))
                }),
            chunks: HashMap::new(),
            chunks_waiting: Vec::new(),
            full_rounds: HashSet::new(),
            next_round: 0,
            next_seq: 0,
            refresh: Refresh { in_flight: None, wanted: None, periodic: None, last_error: None },
            flushes: Vec::new(),
            closing: None,
            done: false,
            audit: None,
        }
    }

    /// Runs until closed, or until every handle is dropped and every record has its result.
    pub(crate) async fn run(mut self) {
        let (deliveries, rx) = mpsc::unbounded_channel();
        tokio::spawn(deliver_loop(rx, self.permits.clone()).in_current_span());
        self.deliveries = Some(deliveries);
        loop {
            let mut now = Instant::now();
            if !self.incoming.is_empty() {
                // one clock reading for the burst: it stamps the records' arrival (their linger
                // starts here) and orders the timers
                let mut incoming = std::mem::take(&mut self.incoming);
                for _ in 0..INBOX_BURST {
                    match incoming.next_raw() {
                        None => break,
                        Some(Next::Command(command)) => self.on_command(command, now),
                        Some(Next::Record(record, message)) => self.on_packed(record, message, now),
                    }
                }
                self.incoming = incoming;
                now = Instant::now();
            }
            self.step(now);
            if self.done {
                break;
            }
            let wake = self.next_wakeup(now);
            let more = !self.incoming.is_empty();
            tokio::select! {
                biased;
                Some(joined) = self.tasks.join_next_with_id(), if !self.tasks.is_empty() => self.on_joined(joined),
                received = self.inbox.recv_many(&mut self.incoming), if self.inbox_open && !more => {
                    if !received {
                        tracing::debug!(queued = self.acc.len(), "every producer handle dropped; sending what is queued");
                        self.inbox_open = false;
                    }
                }
                () = std::future::ready(()), if more => {}
                () = sleep_until(wake) => {}
            }
        }
        self.tasks.abort_all();
        tracing::debug!("producer stopped");
    }

    /// Everything that does not wait: deadlines, refreshes, draining, finished flushes.
    fn step(&mut self, now: Instant) {
        if self.closing.as_ref().is_some_and(|c| now >= c.deadline) {
            self.abandon_everything();
        }
        if let Some(at) = self.refresh.periodic {
            if now >= at {
                self.refresh.periodic = None;
                self.want_refresh(now);
            }
        }
        self.keep_metadata_coming(now);
        self.maybe_refresh(now);
        // audit (crates/producer/src/audit.rs): the audit records that are due join the queue; a
        // closing (or dropped) producer's last window goes once nothing else is held
        let last = (self.closing.is_some() || !self.inbox_open) && self.acc.is_empty() && self.rounds.is_empty();
        let due = self.audit.as_mut().map(|a| a.step(now, last)).unwrap_or_default();
        for pending in due {
            self.on_command(Command::Record(pending), now);
        }
        self.acc.set_flushing(!self.flushes.is_empty() || self.closing.is_some() || !self.inbox_open);
        self.start_chunks();
        for round in self.acc.drain(now + self.timer_slack()) {
            self.send_round(round);
        }
        self.finish_flushes();
        self.finish_close();
        if !self.inbox_open
            && self.closing.is_none()
            && self.incoming.is_empty()
            && self.acc.is_empty()
            && self.rounds.is_empty()
        {
            self.done = true;
        }
    }

    /// tokio's timers fire on whole milliseconds, at or after their deadline (on average half
    /// a millisecond late, up to a whole one): a linger or backoff ending within this much of
    /// now counts as ended, and the wait for the next one ends this much early, so batches go
    /// at their linger rather than after it. A quarter of the linger at most, so a short
    /// linger keeps most of its batching.
    fn timer_slack(&self) -> Duration {
        (self.config.queue_buffering_max() / 4).min(Duration::from_millis(1))
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        // the accumulator's times are matched against now + slack in `step`
        let slack = self.timer_slack();
        let mut next = self.acc.next_wakeup(now + slack).map(|at| at.checked_sub(slack).unwrap_or(at));
        let mut consider = |at: Option<Instant>| {
            if let Some(at) = at {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        };
        if self.refresh.in_flight.is_none() {
            consider(self.refresh.wanted);
        }
        consider(self.refresh.periodic);
        consider(self.closing.as_ref().map(|c| c.deadline));
        consider(self.audit.as_ref().and_then(|a| a.next_wakeup())); // audit (audit.rs)
        next
    }

    fn on_command(&mut self, command: Command, now: Instant) {
        match command {
            Command::Record(mut pending) => {
                pending.seq = self.next_seq;
                self.next_seq += 1;
                // its linger starts when the task takes it
                self.route(pending, now, now);
            }
            Command::Flush { reply } => {
                if self.acc.is_empty() {
                    // after the results handed out before it
                    self.hand_out(Delivery::Flush(reply, FlushReport::default()));
                } else {
                    self.flushes.push(FlushWaiter {
                        below: self.next_seq,
                        remaining: self.acc.len(),
                        failed: Vec::new(),
                        reply,
                    });
                }
            }
            Command::Close { deadline, reply } => {
                tracing::debug!(queued = self.acc.len(), "closing the producer");
                match &mut self.closing {
                    // a second close: answered empty-handed, the first one reports
                    Some(_) => self.hand_out(Delivery::Close(reply, CloseReport::default())),
                    None => self.closing = Some(Closing { deadline, reply: Some(reply), undelivered: Vec::new() }),
                }
            }
        }
    }

    /// The engine's own allocation of the topic `name` (learning the topic, and asking for
    /// its metadata, the first time): the queues' keys, whose counts only this task changes;
    /// the last topic seen is checked first, by pointer.
    fn own_topic(&mut self, name: Topic, now: Instant) -> Arc<str> {
        if let Some((last, tp)) = &self.last_topic {
            if *last == name {
                return tp.topic.clone();
            }
        }
        let own = match self.topics.get(&*name) {
            Some(known) => known.clone(),
            None => {
                let own: Arc<str> = Arc::from(&*name);
                self.topics.insert(own.clone());
                self.want_refresh(now);
                own
            }
        };
        self.last_topic = Some((name, TopicPartition { topic: own.clone(), partition: 0 }));
        own
    }

    /// A small record from the inbox, its message's bytes still in the inbox's block: placed
    /// as [`Engine::route`] places a record, its message copied once, from the block into its
    /// partition's arena (or into an allocation of its own, when it waits or fails).
    fn on_packed(&mut self, record: PackedRecord, message: &[u8], now: Instant) {
        let PackedRecord { topic: name, partition, slot } = record;
        let mut pending =
            Pending { seq: self.next_seq, topic: name, partition, message: self.placeholder.clone(), slot: Some(slot) };
        self.next_seq += 1;
        if !matches!(&self.last_topic, Some((last, _)) if *last == name) {
            // learns the topic (a new one: its metadata asked for) and makes it the last one
            self.own_topic(name, now);
        }
        let placement = self.place(&name, partition, || EncodedMessage::key_of(message), now);
        if let (Placement::Partition(p), Some((_, tp))) = (placement, &mut self.last_topic) {
            // the common case: the partition has a queue (see `put`); the key is the last
            // topic's, its partition set. Its linger starts when the task takes it.
            tp.partition = p;
            let into_arena = |r: &mut Pending, arena: &mut Arena| into_arena(r, arena, Some(message));
            match self.acc.try_append_with(tp, pending, now, into_arena) {
                Ok(()) => return,
                Err(back) => pending = back,
            }
        }
        let topic = self.own_topic(name, now);
        self.put(topic, pending, placement, Some(message), now);
    }

    /// Puts a record in its partition's queue, or holds it until its topic's metadata comes.
    fn route(&mut self, pending: Pending, enqueued_at: Instant, now: Instant) {
        let topic = self.own_topic(pending.topic, now);
        let placement = self.place(&topic, pending.partition, || pending.message.key(), now);
        self.put(topic, pending, placement, None, enqueued_at);
    }

    /// Where a record of `topic` goes: its own partition, the partitioner's choice (given the
    /// key `key` reads), or nowhere yet.
    fn place<'k>(
        &mut self,
        topic: &str,
        partition: Option<i32>,
        key: impl FnOnce() -> Option<&'k [u8]>,
        now: Instant,
    ) -> Placement {
        if let Some(p) = partition {
            return Placement::Partition(p);
        }
        if self.acc.has_held(topic) {
            // behind the records already waiting, or it could overtake them
            return Placement::Hold;
        }
        let parts = self.parts.get(topic);
        let (all, available) = parts.map_or((&[][..], &[][..]), |p| (&p.all[..], &p.available[..]));
        match self.partitioner.choose(topic, key(), all, available, &mut || rand::random::<u32>() as usize) {
            Choice::Partition(p) => Placement::Partition(p),
            Choice::Wait => {
                if self.refresh.in_flight.is_none() && self.refresh.wanted.is_none() {
                    self.want_refresh(now + self.config.retry_backoff());
                }
                Placement::Hold
            }
            Choice::Invalid(p) => Placement::Invalid(p),
        }
    }

    /// Puts a placed record where it goes. `raw`: its message's bytes while they are still in
    /// the inbox's block (its `message` is then a placeholder, replaced here).
    fn put(
        &mut self,
        topic: Arc<str>,
        mut pending: Pending,
        placement: Placement,
        raw: Option<&[u8]>,
        enqueued_at: Instant,
    ) {
        let partition = match placement {
            Placement::Partition(p) => p,
            Placement::Hold => {
                pending.message = match raw {
                    Some(raw) => own_copy(raw),
                    None => detach(&pending.message),
                };
                self.acc.hold(&topic, pending, enqueued_at);
                return;
            }
            Placement::Invalid(p) => {
                if let Some(raw) = raw {
                    pending.message = own_copy(raw);
                }
                let partitions = self.parts.get(&*topic).map_or(0, |parts| parts.all.len());
                let error = Error::InvalidPartition { topic: topic.to_string(), partition: p, partitions };
                self.fail(pending, Some(p), 0, error);
                return;
            }
        };
        let tp = TopicPartition { topic, partition };
        // the common case: the partition has a queue, so it was checked when the queue was made
        // (and a refresh that finds it gone removes the queue)
        let into_arena = |p: &mut Pending, arena: &mut Arena| into_arena(p, arena, raw);
        let Err(mut pending) = self.acc.try_append_with(&tp, pending, enqueued_at, into_arena) else { return };
        if let Some(parts) = self.parts.get(&*tp.topic) {
            if parts.error.is_none() && !parts.all.is_empty() && !parts.all.contains(&partition) {
                if let Some(raw) = raw {
                    pending.message = own_copy(raw);
                }
                let error =
                    Error::InvalidPartition { topic: tp.topic.to_string(), partition, partitions: parts.all.len() };
                self.fail(pending, Some(partition), 0, error);
                return;
            }
        }
        self.acc.set_leader(&tp, self.snapshot.leader(&tp.topic, partition));
        self.acc.append_with(&tp, pending, enqueued_at, into_arena);
    }

    /// The liveness rule of metadata: while a record waits for metadata (held for its topic's
    /// partitions, or queued for a partition without a leader), a refresh is running or
    /// wanted. Only a refresh's end counts the metadata rounds that release such records, so
    /// without one they would wait for the periodic refresh (10 minutes by default, or never).
    /// Checked here, once per turn of the loop, rather than on every path that can leave a
    /// record waiting (a record for a known topic whose partition has no leader, a leader
    /// cleared by an error, a refresh that taught nothing new ...).
    fn keep_metadata_coming(&mut self, now: Instant) {
        if self.refresh.in_flight.is_some() || self.refresh.wanted.is_some() || !self.acc.waiting_for_metadata() {
            return;
        }
        tracing::debug!(
            backoff = ?self.config.retry_backoff(),
            "records wait for metadata and no refresh is coming; asking for one"
        );
        self.want_refresh(now + self.config.retry_backoff());
    }

    fn want_refresh(&mut self, at: Instant) {
        self.refresh.wanted = Some(self.refresh.wanted.map_or(at, |w| w.min(at)));
    }

    fn maybe_refresh(&mut self, now: Instant) {
        if self.topics.is_empty() {
            // nothing to ask about (and no timer to spin on)
            self.refresh.wanted = None;
            return;
        }
        let due = self.refresh.wanted.is_some_and(|at| at <= now);
        if !due || self.refresh.in_flight.is_some() {
            return;
        }
        self.refresh.wanted = None;
        let topics: Vec<Arc<str>> = self.topics.iter().cloned().collect();
        let names: Vec<String> = topics.iter().map(|t| t.to_string()).collect();
        self.refresh.in_flight = Some(topics);
        let cache = self.cache.clone();
        tracing::debug!(topics = names.len(), "refreshing metadata");
        let handle = self.tasks.spawn(async move { Completion::Metadata { result: cache.refresh(&names).await } });
        self.task_kinds.insert(handle.id(), TaskKind::Metadata);
    }

    fn on_joined(&mut self, joined: Result<(Id, Completion), JoinError>) {
        match joined {
            Ok((id, completion)) => {
                self.task_kinds.remove(&id);
                match completion {
                    Completion::Produce { round, encoded, result } => self.on_produce(round, encoded, result),
                    Completion::Metadata { result } => self.on_metadata(result),
                }
            }
            Err(e) => {
                let reason = if e.is_panic() { "a request task panicked" } else { "a request task was cancelled" };
                match self.task_kinds.remove(&e.id()) {
                    Some(TaskKind::Round(round)) => {
                        if let Some(in_flight) = self.rounds.remove(&round) {
                            self.acc.round_done(in_flight.broker);
                            for batch in in_flight.batches {
                                self.fail_batch(batch, Error::Internal { reason: reason.to_owned() });
                            }
                        }
                    }
                    Some(TaskKind::Metadata) => {
                        self.on_metadata(Err(gregor_net::Error::NoBrokerAvailable { tried: Vec::new(), last: None }))
                    }
                    None => {}
                }
            }
        }
    }

    fn on_metadata(&mut self, result: Result<(), gregor_net::Error>) {
        let now = Instant::now();
        // still "in flight" while its outcome is applied: records routed again below and held
        // once more then ask for no refresh of their own; the end of this function decides
        let topics = self.refresh.in_flight.clone().unwrap_or_default();
        match result {
            Ok(()) => {
                self.refresh.last_error = None;
                self.snapshot = self.cache.snapshot();
                self.parts = self
                    .snapshot
                    .topics()
                    .map(|t| {
                        let parts = TopicParts {
                            all: self.snapshot.partitions(t),
                            available: self.snapshot.available_partitions(t),
                            error: self.snapshot.topic_error(t),
                        };
                        (t.to_owned(), parts)
                    })
                    .collect();
                // as 0.8 clears sendPartitionPerTopicCache on every refresh
                self.partitioner.reset_sticky();
                for tp in self.acc.partitions() {
                    if !topics.contains(&tp.topic) {
                        continue;
                    }
                    let missing = self
                        .parts
                        .get(&*tp.topic)
                        .filter(|p| p.error.is_none() && !p.all.is_empty() && !p.all.contains(&tp.partition))
                        .map(|p| p.all.len());
                    match missing {
                        Some(partitions) => {
                            self.chunks.remove(&tp);
                            for r in self.acc.remove_partition(&tp) {
                                let error = Error::InvalidPartition {
                                    topic: tp.topic.to_string(),
                                    partition: tp.partition,
                                    partitions,
                                };
                                self.fail(r.record, r.partition, r.attempts, error);
                            }
                        }
                        None => {
                            let leader = self.snapshot.leader(&tp.topic, tp.partition);
                            if leader != self.acc.leader(&tp) {
                                tracing::debug!(%tp, ?leader, "leader");
                            }
                            self.acc.set_leader(&tp, leader);
                        }
                    }
                }
                for topic in self.acc.held_topics() {
                    if topics.contains(&topic) {
                        for (pending, enqueued_at) in self.acc.take_held(&topic) {
                            self.route(pending, enqueued_at, now);
                        }
                    }
                }
                if let Some(interval) = self.config.topic_metadata_refresh_interval() {
                    if !interval.is_zero() {
                        self.refresh.periodic = Some(now + interval);
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "metadata refresh failed; records wait for the next one");
                self.refresh.last_error = Some(Arc::new(e));
                // a failed periodic refresh keeps the period (it is due again an interval on)
                if self.refresh.periodic.is_none() {
                    if let Some(interval) = self.config.topic_metadata_refresh_interval() {
                        if !interval.is_zero() {
                            self.refresh.periodic = Some(now + interval);
                        }
                    }
                }
            }
        }
        let rounds = self.config.message_send_max_retries() + 1;
        for r in self.acc.end_metadata_round(&topics) {
            let topic_known = self.parts.get(&*r.topic).is_some_and(|p| !p.all.is_empty());
            let error = match r.partition {
                Some(partition) if topic_known => Error::NoLeader { topic: r.topic.to_string(), partition, rounds },
                _ => Error::TopicUnavailable {
                    topic: r.topic.to_string(),
                    code: self.parts.get(&*r.topic).and_then(|p| p.error),
                    rounds,
                    source: self.refresh.last_error.clone(),
                },
            };
            self.fail_released(r, error);
        }
        self.refresh.in_flight = None;
        if self.acc.waiting_for_metadata() {
            self.want_refresh(now + self.config.retry_backoff());
        }
    }

    /// Starts compressing the records of every partition that took in [`CHUNK_BYTES`] since
    /// its last chunk, while it waits for its linger: on a multi-thread runtime on a task of
    /// its own; on a current-thread one gzip on the blocking pool (a 16 KiB chunk takes about
    /// 0.2 ms), snappy and lz4 in place (about 10 us).
    fn start_chunks(&mut self) {
        let mut due = self.acc.take_due_chunks();
        if !self.chunks_waiting.is_empty() {
            due.append(&mut self.chunks_waiting);
            due.sort_unstable();
            due.dedup();
        }
        for tp in due {
            let codec = self.config.compression_for(&tp.topic);
            // only while the partition waits for its linger: one whose broker's last round was
            // a whole batch, or with a batch's worth queued (or records still coming in faster
            // than the task takes them) is sending as fast as it may, its batches compressed
            // whole on the rounds' tasks (chunks there only cost: a chunk cut by a batch's end
            // is compressed twice, they hold memory, and on a current-thread runtime they
            // are compressed on its thread, where a round's go to the blocking pool; gzip, 6
            // partitions, current-thread: 523k -> 474k msg/s, 40 -> 75 MiB; lz4, with chunks
            // made after whole batches: 2.82-3.03 M against 3.14-3.48 M msg/s); those records
            // are let go for chunking
            let busy = !self.incoming.is_empty()
                || self.acc.leader(&tp).is_some_and(|b| self.full_rounds.contains(&b))
                || self.acc.queued(&tp).is_some_and(|q| q.len() >= self.config.batch_num_messages());
            if !busy && codec != Compression::None && self.acc.batches_in_flight(&tp) > 0 {
                // its next batch waits for this one: the chunk waits too, its records kept
                // (letting them go would leave the partition's later chunks out of line with
                // its next batch, compressed for nothing: at 464k msg/s with snappy, 6.2 of
                // 10.1 thousand chunks were on a multi-thread runtime, 9.2 of 11.7 thousand on
                // a current-thread one)
                self.chunks_waiting.push(tp);
                continue;
            }
            let Some(records) = self.acc.take_loose(&tp) else { continue };
            if codec == Compression::None || busy {
                continue;
            }
            let (Some(first), Some(last)) = (records.clone().next(), records.clone().next_back()) else { continue };
            let (first, last, count) = (first.seq, last.seq, records.len());
            let set = match MessageSet::from_encoded(records.map(|p| &p.message), Compression::None) {
                Ok(plain) => match (&self.compressing, tokio::runtime::Handle::try_current()) {
                    // current-thread: gzip on the blocking pool, within the rounds' budget of
                    // threads (more threads there cost: the pool then hands each job to a cold
                    // one, and each keeps an allocator arena of its own)
                    (Some(compressing), Ok(_)) if codec == Compression::Gzip => {
                        let compressing = compressing.clone();
                        ChunkSet::Running(tokio::spawn(offload(compressing, move || plain.compress(codec))))
                    }
                    // multi-thread: on the workers, as the rounds' sets are built
                    (None, Ok(_)) => ChunkSet::Running(tokio::spawn(async move { plain.compress(codec) })),
                    _ => ChunkSet::Done(plain.compress(codec)),
                },
                Err(e) => ChunkSet::Done(Err(e)),
            };
            self.chunks.entry(tp).or_default().push_back(Chunk { first, last, records: count, set });
        }
    }

    /// The chunks that begin `records` (a fresh batch of `tp`), in order, and how many records
    /// they cover. Chunks of later records stay; the others are stale (their records went
    /// another way, or only some of them are in this batch) and are dropped.
    fn take_chunks(&mut self, tp: &TopicPartition, records: &[Pending]) -> (Vec<ChunkSet>, usize) {
        let Some(chunks) = self.chunks.get_mut(tp) else { return (Vec::new(), 0) };
        let mut sets = Vec::new();
        let mut covered = 0;
        while let Some(c) = chunks.front() {
            let fits = covered + c.records <= records.len()
                && records[covered].seq == c.first
                && records[covered + c.records - 1].seq == c.last;
            if fits {
                covered += c.records;
                sets.push(chunks.pop_front().expect("looked at").set);
                continue;
            }
            // a chunk whose first record is still queued begins after this batch; one whose
            // first record is in it was cut by its end; one whose first record is neither is of
            // records that went another way (a record held for metadata can come back with an
            // older number, so the tests are membership, not order)
            let in_batch = records[covered..].iter().any(|p| p.seq == c.first);
            if !in_batch && self.acc.queued(tp).is_some_and(|mut q| q.any(|p| p.seq == c.first)) {
                break;
            }
            if let ChunkSet::Running(task) = chunks.pop_front().expect("looked at").set {
                task.abort();
            }
        }
        if chunks.is_empty() {
            self.chunks.remove(tp);
        }
        (sets, covered)
    }

    /// Sends the round's batches to the broker in one Produce request, on a task of its own.
    /// That task also builds the message sets (and compresses them): on a multi-thread runtime
    /// the sets of different rounds are built on other workers while this task goes on routing
    /// records. A set is built once per batch: the task hands it back (see `on_produce`), and
    /// a retry sends those bytes again.
    fn send_round(&mut self, round: Round<Pending>) {
        let broker = round.broker;
        let mut sources = Vec::with_capacity(round.batches.len());
        let mut records = 0;
        // what compressing this round costs, in snappy/lz4 bytes (gzip at level 6 takes about
        // 17 times as long per byte: 126 KB of messages in 2.6 ms against 0.13-0.15 ms in the
        // codec benchmarks)
        let mut to_compress = 0;
        for batch in &round.batches {
            records += batch.records.len();
            let source = match &batch.encoded {
                Some(set) => SetSource::Encoded(set.clone()),
                None => {
                    let codec = self.config.compression_for(&batch.tp.topic);
                    let (chunks, covered) = if codec == Compression::None {
                        (Vec::new(), 0)
                    } else {
                        self.take_chunks(&batch.tp, &batch.records)
                    };
                    let rest = &batch.records[covered..];
                    let plain = if rest.is_empty() {
                        Ok(None)
                    } else {
                        MessageSet::from_encoded(rest.iter().map(|p| &p.message), Compression::None).map(Some)
                    };
                    match plain {
                        Ok(plain) => {
                            let len = plain.as_ref().map_or(0, MessageSet::len);
                            to_compress += match codec {
                                Compression::None => 0,
                                Compression::Gzip => 16 * len,
                                _ => len,
                            };
                            match plain {
                                Some(plain) if chunks.is_empty() => SetSource::Plain(plain, codec),
                                plain => SetSource::Chunked(chunks, plain, codec),
                            }
                        }
                        Err(e) => SetSource::Failed(e),
                    }
                }
            };
            sources.push((batch.tp.clone(), source));
        }
        if records >= self.config.batch_num_messages() {
            self.full_rounds.insert(broker);
        } else {
            self.full_rounds.remove(&broker);
        }
        let batches = round.batches;
        let acks = self.config.request_required_acks();
        let timeout = self.config.request_timeout().as_millis().min(i32::MAX as u128) as i32;
        let id = self.next_round;
        self.next_round += 1;
        tracing::debug!(broker, batches = batches.len(), records, "produce");
        self.rounds.insert(id, InFlight { broker, batches });
        let pool = self.cache.pool().clone();
        // rounds to one broker reach its connection in the order they were made (with
        // max.in.flight above 1 several are in flight): each waits until the previous one is
        // queued (or gone), and says so by dropping `queued` once it is queued itself
        let (queued, queued_rx) = oneshot::channel::<()>();
        let previous = self.queue_order.insert(broker, queued_rx);
        let compressing = self.compressing.clone().filter(|_| to_compress >= OFFLOAD_COMPRESSION);
        let handle = self.tasks.spawn(async move {
            let mut sources = sources;
            for (_, source) in &mut sources {
                if let SetSource::Chunked(chunks, _, _) = source {
                    for chunk in chunks.iter_mut() {
                        if let ChunkSet::Running(task) = chunk {
                            *chunk = ChunkSet::Done(joined(task.await).await);
                        }
                    }
                }
            }
            let (request, encoded) = if let Some(compressing) = compressing {
                // milliseconds of CPU for a large gzip set: not on the runtime's only thread
                offload(compressing, move || produce_request(acks, timeout, sources)).await
            } else {
                produce_request(acks, timeout, sources)
            };
            let result = async {
                if request.topics.is_empty() {
                    // nothing could be encoded: nothing to send
                    return Ok(None);
                }
                let conn = pool.get(broker).await?;
                if let Some(previous) = previous {
                    let _ = previous.await;
                }
                if acks == 0 {
                    let sent = conn.send(0, &request).await.map(|()| None);
                    drop(queued);
                    sent
                } else {
                    let response = conn.request_queued(0, &request).await;
                    drop(queued);
                    response?.await.map(Some)
                }
            }
            .await;
            Completion::Produce { round: id, encoded, result }
        });
        self.task_kinds.insert(handle.id(), TaskKind::Round(id));
    }

    fn on_produce(
        &mut self,
        round: u64,
        encoded: Vec<Option<Result<MessageSet, gregor_protocol::Error>>>,
        result: Result<Option<ProduceResponse>, gregor_net::Error>,
    ) {
        let Some(mut in_flight) = self.rounds.remove(&round) else { return };
        let broker = in_flight.broker;
        self.acc.round_done(broker);
        let now = Instant::now();
        // the sets the task built stay with their batches (a retry sends them as they are);
        // a batch that could not be encoded was not sent, and fails here
        let mut sent = Vec::with_capacity(in_flight.batches.len());
        for (mut batch, set) in in_flight.batches.into_iter().zip(encoded) {
            match set {
                None => sent.push(batch),
                Some(Ok(set)) => {
                    batch.encoded = Some(set);
                    sent.push(batch);
                }
                Some(Err(e)) => {
                    let error = Error::Encode {
                        topic: batch.tp.topic.to_string(),
                        partition: batch.tp.partition,
                        source: Arc::new(e),
                    };
                    self.fail_batch(batch, error);
                }
            }
        }
        in_flight.batches = sent;
        if in_flight.batches.is_empty() {
            return;
        }
        match result {
            Ok(None) => {
                for batch in in_flight.batches {
                    self.succeed(batch, -1);
                }
            }
            Ok(Some(response)) => {
                for batch in in_flight.batches {
                    let answer = response
                        .topics
                        .iter()
                        .filter(|t| *t.topic == *batch.tp.topic)
                        .flat_map(|t| &t.partitions)
                        .find(|p| p.partition == batch.tp.partition);
                    match answer {
                        None => {
                            let error = Error::MissingFromResponse {
                                broker,
                                topic: batch.tp.topic.to_string(),
                                partition: batch.tp.partition,
                            };
                            self.want_refresh(now);
                            self.retry_or_fail(batch, error, now);
                        }
                        Some(p) => match p.error() {
                            None => {
                                let offset = p.offset;
                                self.succeed(batch, offset);
                            }
                            Some(code) => {
                                let error = Error::Broker { broker, code };
                                if code.is_retriable() {
                                    if code.needs_metadata_refresh() {
                                        // wait for the refresh before sending it again
                                        self.acc.set_leader(&batch.tp, None);
                                        self.cache.invalidate(&batch.tp.topic);
                                        self.want_refresh(now);
                                    }
                                    if matches!(
                                        code,
                                        ErrorCode::RequestTimedOut | ErrorCode::NotEnoughReplicasAfterAppend
                                    ) {
                                        tracing::warn!(
                                            tp = %batch.tp,
                                            %code,
                                            "the leader kept the records, so the retry may store them twice"
                                        );
                                    }
                                    self.retry_or_fail(batch, error, now);
                                } else {
                                    self.fail_batch(batch, error);
                                }
                            }
                        },
                    }
                }
            }
            Err(e) => {
                let retriable = e.is_retriable();
                if e.needs_metadata_refresh() {
                    self.want_refresh(now);
                }
                let error = Error::Network { broker, source: Arc::new(e) };
                for batch in in_flight.batches {
                    if retriable {
                        self.retry_or_fail(batch, error.clone(), now);
                    } else {
                        self.fail_batch(batch, error.clone());
                    }
                }
            }
        }
        if self.config.topic_metadata_refresh_interval() == Some(Duration::ZERO) {
            self.want_refresh(now);
        }
    }

    fn retry_or_fail(&mut self, batch: Batch<Pending>, error: Error, now: Instant) {
        let (tp, attempts) = (batch.tp.clone(), batch.attempts);
        match self.acc.retry(batch, now) {
            Ok(()) => tracing::warn!(%tp, attempts, error = %error, "produce failed; retrying after retry.backoff.ms"),
            Err(batch) => {
                tracing::warn!(%tp, attempts, error = %error, "produce failed; out of retries");
                self.fail_batch(batch, error);
            }
        }
    }

    /// A batch's records are delivered. With no flush waiting and no audit, nothing is
    /// counted per record here: the whole batch goes to the delivery task as it is.
    fn succeed(&mut self, batch: Batch<Pending>, base_offset: i64) {
        let tp = batch.tp.clone();
        let records = self.acc.done(batch);
        if self.flushes.is_empty() && self.audit.is_none() {
            self.hand_out(Delivery::Acked { tp, base_offset, records });
            return;
        }
        let mut results = Vec::with_capacity(records.len());
        for (i, pending) in records.into_iter().enumerate() {
            let result = Ok(acked(pending.topic, tp.partition, base_offset, i));
            if self.account(&pending, &result) {
                results.push((pending, result));
            }
        }
        self.hand_out(Delivery::Results(results));
    }

    fn fail_batch(&mut self, batch: Batch<Pending>, error: Error) {
        let (partition, attempts) = (batch.tp.partition, batch.attempts);
        for pending in self.acc.done(batch) {
            self.fail(pending, Some(partition), attempts, error.clone());
        }
    }

    fn fail_released(&mut self, released: Released<Pending>, error: Error) {
        self.fail(released.record, released.partition, released.attempts, error);
    }

    fn fail(&mut self, pending: Pending, partition: Option<i32>, attempts: u32, error: Error) {
        let e = pending.error(partition, attempts, error);
        self.finish(pending, Err(e));
    }

    /// A record's one result: counted for flushes and close, then handed out (its queue place
    /// given back, then its future or callback).
    fn finish(&mut self, pending: Pending, result: DeliveryResult) {
        if self.account(&pending, &result) {
            self.hand_out(Delivery::Results(vec![(pending, result)]));
        }
    }

    /// Results, flush and close reports leave in the order they were decided: through the
    /// delivery task when it runs, here otherwise.
    fn hand_out(&self, delivery: Delivery) {
        match &self.deliveries {
            Some(tx) => {
                if let Err(mpsc::error::SendError(delivery)) = tx.send(delivery) {
                    // the delivery task is gone (its runtime is shutting down): here, then
                    deliver_now(delivery, &self.permits);
                }
            }
            None => deliver_now(delivery, &self.permits),
        }
    }

    /// Counts a record's result for flushes, close and the audit; false for a record that
    /// takes no queue place and gets no delivery (the auditor's own).
    fn account(&mut self, pending: &Pending, result: &DeliveryResult) -> bool {
        // audit (crates/producer/src/audit.rs): count the result; the auditor's own records
        // count for flushes only: no queue place, no report, no delivery slot
        if let Some(audit) = &mut self.audit {
            if audit.observe(pending, result) {
                for flush in &mut self.flushes {
                    if pending.seq < flush.below {
                        flush.remaining = flush.remaining.saturating_sub(1);
                    }
                }
                return false;
            }
        }
        for flush in &mut self.flushes {
            if pending.seq < flush.below {
                flush.remaining = flush.remaining.saturating_sub(1);
                if let Err(e) = result {
                    flush.failed.push(DeliveryError::clone(e));
                }
            }
        }
        if let (Some(closing), Err(e)) = (&mut self.closing, result) {
            closing.undelivered.push(DeliveryError::clone(e));
        }
        true
    }

    fn finish_flushes(&mut self) {
        if self.flushes.iter().all(|f| f.remaining > 0) {
            return;
        }
        let (finished, waiting): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.flushes).into_iter().partition(|f| f.remaining == 0);
        self.flushes = waiting;
        for f in finished {
            self.hand_out(Delivery::Flush(f.reply, FlushReport { failed: f.failed }));
        }
    }

    /// The close bound ran out: every record still held fails with [`Error::Closed`].
    fn abandon_everything(&mut self) {
        let rounds: Vec<InFlight> = self.rounds.drain().map(|(_, r)| r).collect();
        tracing::warn!(records = self.acc.len(), "close timed out; failing what is left");
        self.tasks.abort_all();
        self.task_kinds.clear();
        // its refresh was aborted too and will report nothing
        self.refresh.in_flight = None;
        for round in rounds {
            self.acc.round_done(round.broker);
            for batch in round.batches {
                self.fail_batch(batch, Error::Closed { in_flight: true });
            }
        }
        for r in self.acc.drain_all() {
            self.fail_released(r, Error::Closed { in_flight: false });
        }
    }

    fn finish_close(&mut self) {
        let Some(closing) = &self.closing else { return };
        if !self.incoming.is_empty() || !self.acc.is_empty() || !self.rounds.is_empty() || closing.reply.is_none() {
            return;
        }
        // records sent while the close command was on its way
        self.inbox.close();
        let mut late = Incoming::default();
        self.inbox.try_recv_all(&mut late);
        while let Some(command) = late.next() {
            match command {
                Command::Record(mut pending) => {
                    pending.seq = self.next_seq;
                    self.next_seq += 1;
                    self.fail(pending, None, 0, Error::Closed { in_flight: false });
                }
                Command::Flush { reply } => self.hand_out(Delivery::Flush(reply, FlushReport::default())),
                Command::Close { reply, .. } => self.hand_out(Delivery::Close(reply, CloseReport::default())),
            }
        }
        for f in std::mem::take(&mut self.flushes) {
            self.hand_out(Delivery::Flush(f.reply, FlushReport { failed: f.failed }));
        }
        let closing = self.closing.as_mut().expect("checked above");
        let report = CloseReport { undelivered: std::mem::take(&mut closing.undelivered) };
        if let Some(reply) = closing.reply.take() {
            tracing::debug!(undelivered = report.undelivered.len(), "producer closed");
            self.hand_out(Delivery::Close(reply, report));
        }
        self.inbox_open = false;
        self.done = true;
    }
}

/// What the engine hands to the delivery task, in the order it decided it.
enum Delivery {
    /// A batch acknowledged, none of its records counted yet: offsets from `base_offset`
    /// (-1: unknown, acks=0).
    Acked { tp: TopicPartition, base_offset: i64, records: Vec<Pending> },
    /// Results already counted for flushes and close.
    Results(Vec<(Pending, DeliveryResult)>),
    /// A flush's report: after the results of every record queued before it.
    Flush(oneshot::Sender<FlushReport>, FlushReport),
    /// A close's report: after every result.
    Close(oneshot::Sender<CloseReport>, CloseReport),
}

/// The delivery task: calls the records' futures, callbacks and handlers off the engine's
/// task, in the engine's order (so a partition's results come in offset order, and a flush
/// or close reports after them). On a multi-thread runtime the application's callbacks then
/// run on another worker while the engine goes on routing records and building requests (as
/// librdkafka serves delivery reports outside its broker threads). Ends when the engine is
/// gone and everything is handed out.
async fn deliver_loop(mut rx: mpsc::UnboundedReceiver<Delivery>, permits: Arc<Semaphore>) {
    let mut buf = Vec::with_capacity(64);
    while rx.recv_many(&mut buf, 64).await > 0 {
        for delivery in buf.drain(..) {
            deliver_now(delivery, &permits);
        }
    }
}

/// The metadata of the `i`th record of a batch acknowledged at `base_offset` (-1: unknown,
/// acks=0).
fn acked(topic: Topic, partition: i32, base_offset: i64, i: usize) -> RecordMetadata {
    let offset = if base_offset >= 0 { base_offset + i as i64 } else { -1 };
    RecordMetadata { topic, partition, offset }
}

/// One delivery: queue places back first (one semaphore update per batch, and an application
/// that sends again from a callback finds room), then each record its result. Every record
/// with a delivery slot holds a place (the auditor's own have neither).
fn deliver_now(delivery: Delivery, permits: &Semaphore) {
    match delivery {
        Delivery::Acked { tp, base_offset, records } => {
            permits.add_permits(records.iter().filter(|p| p.slot.is_some()).count());
            for (i, mut pending) in records.into_iter().enumerate() {
                let topic = pending.topic;
                pending.deliver(Ok(acked(topic, tp.partition, base_offset, i)));
            }
        }
        Delivery::Results(results) => {
            permits.add_permits(results.iter().filter(|(p, _)| p.slot.is_some()).count());
            for (mut pending, result) in results {
                pending.deliver(result);
            }
        }
        Delivery::Flush(reply, report) => {
            let _ = reply.send(report);
        }
        Delivery::Close(reply, report) => {
            let _ = reply.send(report);
        }
    }
}

/// The Produce request of a round (run by the round's task): each batch's set, built from its
/// messages unless it came built, under its topic; and per batch what was built here, to
/// hand back to the engine.
fn produce_request(
    acks: i16,
    timeout: i32,
    sources: Vec<(TopicPartition, SetSource)>,
) -> (ProduceRequest, Vec<Option<Result<MessageSet, gregor_protocol::Error>>>) {
    let mut topics: Vec<TopicPartitions<ProducePartition>> = Vec::new();
    let mut encoded = Vec::with_capacity(sources.len());
    for (tp, source) in sources {
        // a set built here goes back to the batch (a retry sends it as it is); one that came
        // built does not
        let (built, fresh) = match source {
            SetSource::Encoded(set) => (Ok(set), false),
            SetSource::Plain(plain, codec) => (plain.compress(codec), true),
            SetSource::Chunked(chunks, rest, codec) => (join_chunks(chunks, rest, codec), true),
            SetSource::Failed(e) => (Err(e), true),
        };
        let set = match built {
            Ok(set) => {
                encoded.push(fresh.then(|| Ok(set.clone())));
                set
            }
            Err(e) => {
                encoded.push(Some(Err(e)));
                continue;
            }
        };
        let entry = ProducePartition { partition: tp.partition, message_set: set };
        match topics.iter_mut().find(|t| *t.topic == *tp.topic) {
            Some(t) => t.partitions.push(entry),
            None => topics.push(TopicPartitions::new(tp.topic.to_string(), vec![entry])),
        }
    }
    (ProduceRequest { required_acks: acks, timeout, topics }, encoded)
}

/// Runs `work` on tokio's blocking pool once one of `permits` is free (held until it is
/// done).
async fn offload<R: Send + 'static>(permits: Arc<Semaphore>, work: impl FnOnce() -> R + Send + 'static) -> R {
    let Ok(permit) = permits.acquire_owned().await else { unreachable!("never closed") };
    let work = move || {
        let done = work();
        drop(permit);
        done
    };
    joined(tokio::task::spawn_blocking(work).await).await
}

/// A finished task's output; its panic goes on. A task the runtime cancelled (it is shutting
/// down, and drops the waiting task with the engine) leaves the waiting one pending.
async fn joined<R>(result: Result<R, JoinError>) -> R {
    match result {
        Ok(done) => done,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => std::future::pending().await,
    }
}

/// One message set of a batch's chunks' wrappers and, after them, the wrapper of its other
/// records (`rest`, compressed here with `codec`).
fn join_chunks(
    chunks: Vec<ChunkSet>,
    rest: Option<MessageSet>,
    codec: Compression,
) -> Result<MessageSet, gregor_protocol::Error> {
    let mut sets = Vec::with_capacity(chunks.len() + 1);
    for chunk in chunks {
        match chunk {
            ChunkSet::Done(set) => sets.push(set?),
            ChunkSet::Running(_) => unreachable!("the round's task waited for every chunk"),
        }
    }
    if let Some(rest) = rest {
        sets.push(rest.compress(codec)?);
    }
    let mut joined = bytes::BytesMut::with_capacity(sets.iter().map(MessageSet::len).sum());
    for set in &sets {
        joined.extend_from_slice(set.as_bytes());
    }
    Ok(MessageSet::from_bytes(joined.freeze()))
}

/// Moves a record's message into its partition's arena: from `raw`, its bytes in the inbox's
/// block, when given; else from its own message.
fn into_arena(pending: &mut Pending, arena: &mut Arena, raw: Option<&[u8]>) {
    pending.message = match raw {
        Some(raw) => arena.copy_slice(raw).expect("the inbox holds what Message::encode wrote"),
        None => arena.copy(&pending.message),
    };
}

/// Where [`Engine::place`] puts a record.
#[derive(Clone, Copy)]
enum Placement {
    Partition(i32),
    /// Its topic's partitions are not known yet, or records of the topic wait for them.
    Hold,
    /// The partitioner chose a partition the topic does not have.
    Invalid(i32),
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    //! The engine's metadata scheduling, driven by hand: no broker, no IO (a refresh task is
    //! spawned but never polled; its outcome is fed to `on_metadata` directly), so the
    //! decisions are checked deterministically.

    use gregor_net::{ConnectionConfig, Pool};
    use gregor_protocol::Message;

    use super::*;
    use crate::delivery::Slot;

    fn engine() -> Engine {
        engine_with(Compression::None)
    }

    fn engine_with(codec: Compression) -> Engine {
        let config = ProducerConfig::builder()
            .metadata_broker_list("127.0.0.1:1")
            .message_send_max_retries(2)
            .retry_backoff(Duration::from_millis(30))
            .compression_codec(codec)
            .build()
            .unwrap();
        let cache = MetadataCache::new(config.metadata_broker_list(), Pool::new(ConnectionConfig::default())).unwrap();
        let (_tx, rx) = crate::inbox::inbox();
        let permits = Arc::new(Semaphore::new(config.queue_buffering_max_messages()));
        Engine::new(config, cache, rx, permits)
    }

    fn send(e: &mut Engine, partition: Option<i32>) -> oneshot::Receiver<DeliveryResult> {
        let (tx, rx) = oneshot::channel();
        let pending = Pending {
            seq: 0,
            topic: Topic::new("t"),
            partition,
            message: gregor_protocol::EncodedMessage::encode(&Message::new(
                None,
                Some(bytes::Bytes::from_static(b"v")),
            ))
            .unwrap(),
            slot: Some(Slot::Future(tx)),
        };
        e.on_command(Command::Record(pending), Instant::now());
        rx
    }

    fn refresh_coming(e: &Engine) -> bool {
        e.refresh.in_flight.is_some() || e.refresh.wanted.is_some()
    }

    /// How the refreshes end in [`run_refreshes`].
    #[derive(Clone, Copy)]
    enum Outcome {
        /// The cluster answers (and knows nothing of the topic).
        Answered,
        /// No broker answers.
        NoBroker,
    }
    use Outcome::{Answered, NoBroker};

    /// Runs the engine's steps, ending every refresh it starts as `outcome` says, until no
    /// refresh is coming (at most 10); returns how many ran.
    fn run_refreshes(e: &mut Engine, outcome: Outcome) -> usize {
        let mut refreshes = 0;
        let mut now = Instant::now();
        e.step(now);
        while refreshes < 10 {
            if e.refresh.in_flight.is_some() {
                refreshes += 1;
                e.on_metadata(match outcome {
                    Answered => Ok(()),
                    NoBroker => Err(gregor_net::Error::NoBrokerAvailable { tried: Vec::new(), last: None }),
                });
            } else if let Some(at) = e.refresh.wanted {
                now = now.max(at);
            } else {
                break;
            }
            e.step(now);
        }
        refreshes
    }

    fn failed(rx: &mut oneshot::Receiver<DeliveryResult>) -> Error {
        rx.try_recv().expect("the record has its result").expect_err("it failed").error
    }

    /// Regression (the CI hang of `a_topic_that_does_not_exist_fails_after_the_metadata_rounds`):
    /// a record of a topic the engine already knew, queued for a partition without a leader,
    /// asked for no refresh, so it waited for the periodic one (10 minutes).
    #[tokio::test]
    async fn a_record_for_a_known_topic_without_a_leader_gets_its_rounds() {
        let mut e = engine();
        let mut first = send(&mut e, Some(0));
        assert_eq!(run_refreshes(&mut e, NoBroker), 3);
        assert!(matches!(failed(&mut first), Error::TopicUnavailable { rounds: 3, .. }));
        assert!(!refresh_coming(&e), "nothing waits: no refresh");

        let mut second = send(&mut e, Some(0));
        e.step(Instant::now());
        assert!(refresh_coming(&e), "a record waits for a leader: a refresh must be coming");
        assert_eq!(run_refreshes(&mut e, NoBroker), 3);
        assert!(matches!(failed(&mut second), Error::TopicUnavailable { rounds: 3, .. }));
        assert!(e.acc.is_empty());
    }

    /// The same for a record held for its topic's partitions, after successful refreshes that
    /// do not know the topic; and the last of them leaves no spare refresh behind (the spare
    /// one hid the bug above whenever the next record came before it ran).
    #[tokio::test]
    async fn held_records_get_their_rounds_and_leave_no_spare_refresh() {
        let mut e = engine();
        let mut first = send(&mut e, None);
        assert_eq!(run_refreshes(&mut e, Answered), 3);
        assert!(matches!(failed(&mut first), Error::TopicUnavailable { rounds: 3, .. }));
        assert!(!refresh_coming(&e), "a spare refresh after the records failed");

        let mut second = send(&mut e, None);
        e.step(Instant::now());
        assert!(refresh_coming(&e));
        assert_eq!(run_refreshes(&mut e, Answered), 3);
        assert!(matches!(failed(&mut second), Error::TopicUnavailable { rounds: 3, .. }));
        let mut third = send(&mut e, Some(0));
        assert_eq!(run_refreshes(&mut e, NoBroker), 3);
        assert!(matches!(failed(&mut third), Error::TopicUnavailable { rounds: 3, .. }));
    }

    /// A flush waiting for such a record is answered once the record fails.
    #[tokio::test]
    async fn a_flush_behind_a_record_without_a_leader_ends() {
        let mut e = engine();
        let mut first = send(&mut e, Some(0));
        run_refreshes(&mut e, NoBroker);
        failed(&mut first);
        let mut second = send(&mut e, Some(0));
        let (reply, mut flushed) = oneshot::channel();
        e.on_command(Command::Flush { reply }, Instant::now());
        assert_eq!(run_refreshes(&mut e, NoBroker), 3);
        assert!(matches!(failed(&mut second), Error::TopicUnavailable { .. }));
        assert_eq!(flushed.try_recv().expect("the flush is answered").failed.len(), 1);
    }

    fn pending(seq: u64, value: &str) -> Pending {
        Pending {
            seq,
            topic: Topic::new("t"),
            partition: Some(0),
            message: gregor_protocol::EncodedMessage::encode(&Message::new(
                None,
                Some(bytes::Bytes::copy_from_slice(value.as_bytes())),
            ))
            .unwrap(),
            slot: None,
        }
    }

    fn chunk(first: u64, last: u64, tag: u8) -> Chunk {
        let set = ChunkSet::Done(Ok(MessageSet::from_bytes(bytes::Bytes::from(vec![tag]))));
        Chunk { first, last, records: (last - first + 1) as usize, set }
    }

    fn tags(sets: &[ChunkSet]) -> Vec<u8> {
        sets.iter()
            .map(|s| match s {
                ChunkSet::Done(Ok(set)) => set.as_bytes()[0],
                _ => panic!("a done chunk"),
            })
            .collect()
    }

    /// A chunk stands for exactly the records it was made of, in a row at the start of the
    /// batch: one of records that went another way, or cut by the batch's end, is dropped;
    /// one of records still queued waits for their batch.
    #[tokio::test]
    async fn chunks_go_only_with_the_records_they_were_made_of() {
        let mut e = engine();
        let tp = TopicPartition::new("t", 0);
        // queued after the first batch: records 5 to 9
        for seq in 5..10 {
            e.acc.append(&tp, pending(seq, "v"), Instant::now());
        }
        let chunks = [chunk(100, 101, 9), chunk(0, 2, 1), chunk(3, 5, 2), chunk(6, 8, 3)];
        e.chunks.insert(tp.clone(), chunks.into_iter().collect());
        // a batch of records 0 to 4: the chunk of records gone another way is dropped, 0-2
        // goes, 3-5 is cut by the batch's end (dropped), 6-8 is of queued records (kept)
        let batch: Vec<Pending> = (0..5).map(|seq| pending(seq, "v")).collect();
        let (sets, covered) = e.take_chunks(&tp, &batch);
        assert_eq!((tags(&sets), covered), (vec![1], 3));
        assert_eq!(e.chunks[&tp].iter().map(|c| c.first).collect::<Vec<_>>(), [6]);
        // a batch of records 5 to 9: 6-8 does not begin it, so it goes with none
        let batch: Vec<Pending> = (5..10).map(|seq| pending(seq, "v")).collect();
        let (sets, covered) = e.take_chunks(&tp, &batch);
        assert_eq!((sets.len(), covered), (0, 0));
        assert!(!e.chunks.contains_key(&tp), "nothing left for the partition");
    }

    /// A partition due a chunk while its batch is in flight keeps its loose records until the
    /// batch is done, so the chunk still begins its next batch (before, those records were let
    /// go and the partition's later chunks, out of line with the batch, were dropped).
    #[tokio::test]
    async fn a_chunk_due_while_its_batch_is_in_flight_waits_and_begins_the_next_batch() {
        let mut e = engine_with(Compression::Snappy);
        let tp = TopicPartition::new("t", 0);
        let now = Instant::now();
        e.acc.set_leader(&tp, Some(1));
        let drain = |e: &mut Engine| {
            e.acc.set_flushing(true);
            let mut rounds = e.acc.drain(now);
            e.acc.set_flushing(false);
            assert_eq!(rounds.len(), 1);
            rounds.pop().unwrap()
        };
        e.acc.append(&tp, pending(0, "in flight"), now);
        let in_flight = drain(&mut e);
        // records not in the arena count as large: two make a chunk's worth
        for seq in 1..3 {
            e.acc.append(&tp, pending(seq, "v"), now);
        }
        e.start_chunks();
        assert!(!e.chunks.contains_key(&tp), "no chunk while the batch is in flight");
        assert_eq!(e.chunks_waiting, std::slice::from_ref(&tp));
        e.acc.append(&tp, pending(3, "v"), now);
        e.start_chunks();
        assert!(!e.chunks.contains_key(&tp), "still in flight");
        e.acc.round_done(1);
        for batch in in_flight.batches {
            e.acc.done(batch);
        }
        e.start_chunks();
        assert!(e.chunks_waiting.is_empty());
        let made: Vec<_> = e.chunks[&tp].iter().map(|c| (c.first, c.last, c.records)).collect();
        assert_eq!(made, [(1, 3, 3)], "one chunk of every record since the batch");
        let mut next = drain(&mut e);
        let (sets, covered) = e.take_chunks(&tp, &next.batches.pop().unwrap().records);
        assert_eq!((sets.len(), covered), (1, 3), "the chunk is the next batch's");
        // a broker whose last round was a whole batch is sent to as fast as batches fill: its
        // partitions make no chunks, in flight or not, and their loose records are let go
        e.full_rounds.insert(1);
        for seq in 4..6 {
            e.acc.append(&tp, pending(seq, "v"), now);
        }
        e.start_chunks();
        assert!(!e.chunks.contains_key(&tp) && e.chunks_waiting.is_empty());
        assert!(e.acc.take_loose(&tp).is_none(), "let go");
    }

    /// The chunks' wrappers and the other records' one make one set whose messages are the
    /// batch's, in order.
    #[test]
    fn a_chunked_batch_is_one_set_of_its_messages_in_order() {
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let records: Vec<Pending> = (0..7).map(|i| pending(i, &format!("value {i}"))).collect();
            let wrap = |r: &[Pending]| {
                MessageSet::from_encoded(r.iter().map(|p| &p.message), Compression::None).unwrap().compress(codec)
            };
            let chunks = vec![ChunkSet::Done(wrap(&records[..3])), ChunkSet::Done(wrap(&records[3..5]))];
            let rest = MessageSet::from_encoded(records[5..].iter().map(|p| &p.message), Compression::None).unwrap();
            let set = join_chunks(chunks, Some(rest), codec).unwrap();
            let top: Vec<_> = set.entries().map(|e| e.unwrap().message).collect();
            assert_eq!(top.len(), 3, "{codec:?}: three wrappers");
            assert!(top.iter().all(|m| m.compression().unwrap() == codec));
            let decoded = set.decode(&gregor_protocol::message::DecodeOptions::default()).unwrap();
            let values: Vec<_> = decoded.messages.iter().map(|m| m.message.value.clone().unwrap()).collect();
            let expected: Vec<_> = (0..7).map(|i| bytes::Bytes::from(format!("value {i}"))).collect();
            assert_eq!(values, expected, "{codec:?}");
        }
        // a chunk that failed fails the batch
        let failed = ChunkSet::Done(Err(gregor_protocol::Error::UnexpectedNull { field: "test" }));
        assert!(join_chunks(vec![failed], None, Compression::Gzip).is_err());
    }
}

//! Produce requests: a round (one broker's batches) becomes one Produce request on a task of
//! its own, in the highest version the broker and gregor both speak, which also builds (and
//! compresses) the batches' message sets or record batches (see `format`); its outcome is
//! turned into results, retries and metadata refreshes.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::stream::FuturesUnordered;

use gregor_protocol::frame::ApiKey;
use gregor_protocol::messages::{ProducePartition, ProduceRequest, ProduceResponse, ProduceTopic};
use gregor_protocol::record::MAGIC_V2;
use gregor_protocol::{Compression, MessageSet};
use tokio::sync::{oneshot, Semaphore};
use tokio::time::Instant;

use super::blocking::{joined, offload};
use super::chunks::{join_chunks, ChunkSet};
use super::format::{magic_of, to_message_set, to_record_batch, FIRST_RECORD_BATCH_VERSION};
use super::idempotence::{producer_id, Idempotence};
use super::{Completion, Engine, TaskKind};
use crate::accumulator::{Batch, PartitionKey, RecordRun, Round};
use crate::bounds::held_by_batch;
use crate::buffers::Blocks;
use crate::crc::Crcs;
use crate::delivery::Pending;
use crate::error::Error;
use crate::outcome::{self, Action, Answer, MetadataAction, RetryPolicy, Verdict};
use crate::record::RecordExtra;

/// On a current-thread runtime, a round whose compression costs at least this much (bytes of
/// messages for snappy and lz4, 16 times the bytes for gzip, 5 times for zstd: about 40 us of
/// CPU) is built on
/// tokio's blocking pool: in place it would stall every other task meanwhile, the
/// application's too (a 1,000-message gzip set takes ~2.6 ms). On a multi-thread runtime it is
/// built in place: the other workers keep the other tasks going, and offloading measured no
/// faster there, with more CPU per message (snappy, 1 partition: 0.99-1.11 -> 1.18-1.20 s per
/// million) and more memory (gzip: +10-14 MiB).
const OFFLOAD_COMPRESSION: usize = 32 * 1024;

/// A round whose compression costs less than this (as [`OFFLOAD_COMPRESSION`] counts it) may
/// be built by the engine's own task and queued at once (see `Engine::send_round_now`): about
/// as much CPU as handing it to a task of its own and back costs in wake-ups.
const DIRECT_COMPRESSION: usize = 32 * 1024;

/// A batch as its round's task gets it: the set itself (a retry); or its messages laid out
/// uncompressed (by the engine: one copy of each message's bytes, where handing the task a
/// handle per message cost two reference count changes per record), to send as they are or
/// to compress with the codec; or why they could not be laid out.
enum SetSource {
    Encoded(MessageSet, Compression),
    Plain(MessageSet, Compression),
    /// RecordBatch v2 records written as they came, to finish as one batch.
    Records(RecordRun, Compression),
    /// Wrappers of chunks (see [`CHUNK_BYTES`](super::chunks::CHUNK_BYTES)), the first of
    /// them maybe still compressing, then the batch's other records (uncompressed, if any),
    /// compressed with the codec.
    Chunked(Vec<ChunkSet>, Option<MessageSet>, Compression),
    Failed(gregor_protocol::Error),
}

/// A round in flight: its broker and its batches.
pub(super) struct InFlight {
    pub(super) broker: i32,
    batches: Vec<Batch<Pending>>,
    /// When it was handed to its task or its connection (for the trace of its round trip).
    sent: Instant,
    /// Per batch, the bytes of a batch built for this round (see [`Kept`]).
    kept: Vec<Option<Kept>>,
}

impl InFlight {
    /// Its batches, each with its bytes back: its uncompressed set when its round's task did
    /// not build the set it sends, else that set as its encoded one (its records read back
    /// from it when they fail: `crate::log::plain_of`).
    pub(super) fn into_batches(self) -> Vec<Batch<Pending>> {
        let mut batches = self.batches;
        for (batch, kept) in batches.iter_mut().zip(self.kept) {
            match kept.map(Kept::take) {
                Some(BatchBytes::Plain(plain)) => batch.plain = Some(plain),
                Some(BatchBytes::Records(run)) => batch.run = Some(run),
                Some(BatchBytes::Built(set)) if batch.encoded.is_none() => batch.encoded = Some(set),
                _ => {}
            }
        }
        batches
    }
}

/// The bytes of a batch whose set its round builds, shared by the round in flight and its
/// task: the batch's uncompressed set until the task has built the set it sends from it, then
/// that set (which the request holds anyway). A batch in flight so holds its records once, not
/// uncompressed beside compressed (or beside a RecordBatch v2 laid out from them): with a full
/// queue on a broker that takes milliseconds, the records in flight are a large share of those
/// held.
#[derive(Clone)]
struct Kept(Arc<std::sync::Mutex<BatchBytes>>);

enum BatchBytes {
    Plain(MessageSet),
    Records(RecordRun),
    Built(MessageSet),
}

impl Kept {
    /// `plain` kept for a batch the round builds now.
    fn new(plain: MessageSet) -> Kept {
        Kept(Arc::new(std::sync::Mutex::new(BatchBytes::Plain(plain))))
    }

    /// A batch's RecordBatch v2 records kept for the round that finishes them.
    fn records(run: RecordRun) -> Kept {
        Kept(Arc::new(std::sync::Mutex::new(BatchBytes::Records(run))))
    }

    fn take(self) -> BatchBytes {
        let mut bytes = self.0.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::replace(&mut *bytes, BatchBytes::Built(MessageSet::new()))
    }

    /// The sets `produce_request` built, each in place of its batch's uncompressed set.
    fn built(kept: &[Option<Kept>], encoded: &[Option<Result<MessageSet, gregor_protocol::Error>>]) {
        for (kept, set) in kept.iter().zip(encoded) {
            if let (Some(kept), Some(Ok(set))) = (kept, set) {
                *kept.0.lock().unwrap_or_else(|p| p.into_inner()) = BatchBytes::Built(set.clone());
            }
        }
    }
}

/// The rounds in flight and what orders them.
pub(super) struct Rounds {
    pub(super) in_flight: HashMap<u64, InFlight>,
    /// Per broker: resolves once its latest round is queued on the connection.
    pub(super) queue_order: HashMap<i32, oneshot::Receiver<()>>,
    /// On a current-thread runtime, the rounds that may compress on the blocking pool at once
    /// (see [`OFFLOAD_COMPRESSION`]): one per core besides the runtime's.
    pub(super) compressing: Option<Arc<Semaphore>>,
    /// On a multi-thread runtime, a round with at least [`OFFLOAD_COMPRESSION`] to compress
    /// yields once before it starts. Spawned by the engine, its task is in the engine's
    /// worker's LIFO slot and would run next, ahead of the application's sends and the
    /// deliveries queued on that worker. A yielded task is set aside until its worker has
    /// nothing else queued or makes its periodic check of the I/O driver (every 61 polls, in
    /// tokio 1.54), so the compression runs after that work, and the other workers can steal
    /// the work meanwhile. Measured in `benchmarks/timing/session-42.md`.
    pub(super) yield_first: bool,
    /// Brokers whose last round carried a whole batch (`batch.num.messages` records): their
    /// partitions are sent as fast as batches fill, not at their linger, and make no chunks.
    pub(super) full: HashSet<i32>,
    /// The next round's id.
    pub(super) next_id: u64,
    /// `enable.idempotence`: the producer-id generation and the partitions' numbering.
    pub(super) idem: Option<Idempotence>,
    /// The responses of rounds queued by the engine itself (see `Engine::send_round_now`),
    /// polled by its run loop.
    pub(super) responses: FuturesUnordered<Pin<Box<dyn Future<Output = Completion> + Send>>>,
    /// The blocks compressed sets are kept in, the logs' spent ones (`crate::buffers`).
    pub(super) sets: Blocks,
    /// Told each round's format; says whether a Message v0 set may lack CRCs (`crate::crc`).
    pub(super) crcs: Arc<Crcs>,
}

impl Rounds {
    pub(super) fn new(idempotent: bool, crcs: Arc<Crcs>, sets: Blocks) -> Rounds {
        let flavor = tokio::runtime::Handle::try_current().ok().map(|h| h.runtime_flavor());
        Rounds {
            in_flight: HashMap::new(),
            queue_order: HashMap::new(),
            compressing: (flavor == Some(tokio::runtime::RuntimeFlavor::CurrentThread)).then(|| {
                let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
                Arc::new(Semaphore::new(cores.saturating_sub(1).max(1)))
            }),
            yield_first: flavor == Some(tokio::runtime::RuntimeFlavor::MultiThread),
            full: HashSet::new(),
            next_id: 0,
            idem: idempotent.then(Idempotence::default),
            responses: FuturesUnordered::new(),
            sets,
            crcs,
        }
    }
}

impl Engine {
    /// Sends the round's batches to the broker in one Produce request, on a task of its own.
    /// That task also builds the message sets (and compresses them): on a multi-thread runtime
    /// the rounds the engine starts in one step can be built on other workers while this task
    /// goes on routing records. A lone round mostly is not: tokio puts a task spawned on a
    /// worker in that worker's LIFO slot, which other workers do not steal from, and it leaves
    /// the slot for the stealable queue only when a task scheduled after it takes the slot;
    /// otherwise it runs after the engine on the engine's worker (seen in
    /// `benchmarks/timing/session-41.md`). One with much to compress therefore yields first
    /// (`Rounds::yield_first`). A set is built once per batch: the task hands it
    /// back (see `on_produce`), and a retry sends those bytes again.
    pub(super) fn send_round(&mut self, mut round: Round<Pending>) {
        let broker = round.broker;
        // the broker's partitions' records are written as RecordBatch v2 as they come once it
        // is known to take them (its connection open, its versions known); while its
        // connection is not at hand, as they were
        if let Some(takes) = self.leader_format(broker) {
            self.acc.set_record_batches(broker, takes);
        }
        let mut sources = Vec::with_capacity(round.batches.len());
        // enable.idempotence: each batch built now has its place in its partition's numbering
        // (given once; a batch numbered under an older producer id and never built is
        // numbered anew); the round's task gets the producer id of this generation
        let mut sequences = Vec::with_capacity(round.batches.len());
        let idempotent = self.rounds.idem.as_ref().map(|i| (Arc::clone(&i.ids), i.generation));
        if let Some(idem) = self.rounds.idem.as_mut() {
            for batch in &mut round.batches {
                if batch.encoded.is_none() {
                    let current = batch.sequence.filter(|&(generation, _)| generation == idem.generation);
                    let place = current.unwrap_or_else(|| idem.number(&batch.tp, batch.records.len()));
                    batch.sequence = Some(place);
                    sequences.push(Some(place.1));
                } else {
                    sequences.push(None);
                }
            }
        } else {
            sequences.resize(round.batches.len(), None);
        }
        // the timestamps and headers the application gave, by record index in its batch (for
        // the batches built now)
        let extras: Vec<Vec<(usize, RecordExtra)>> = round
            .batches
            .iter()
            .map(|batch| match batch.encoded {
                Some(_) => Vec::new(),
                None => batch
                    .records
                    .iter()
                    .enumerate()
                    .filter_map(|(i, p)| p.extra().map(|extra| (i, extra.clone())))
                    .collect(),
            })
            .collect();
        let mut records = 0;
        // what compressing this round costs, in snappy/lz4 bytes (gzip at level 6 takes about
        // 17 times as long per byte: 126 KB of messages in 2.6 ms against 0.13-0.15 ms in the
        // codec benchmarks; zstd at level 3 about 5 times: 0.65-0.70 ms, session 38)
        let mut to_compress = 0;
        for batch in &round.batches {
            records += batch.records.len();
            let codec = self.config.compression_for(&batch.tp.topic);
            let source = match (&batch.encoded, &batch.run) {
                (Some(set), _) => SetSource::Encoded(set.clone(), codec),
                (None, Some(run)) => {
                    to_compress += compression_cost(codec, run.len());
                    SetSource::Records(run.clone(), codec)
                }
                (None, None) => {
                    let (chunks, covered) = if codec == Compression::None {
                        (Vec::new(), 0)
                    } else {
                        self.take_chunks(&batch.tp, &batch.records)
                    };
                    let plain = match &batch.plain {
                        _ if covered == batch.records.len() => Ok(None),
                        // the log's bytes, as they are
                        Some(plain) if covered == 0 => Ok(Some(plain.clone())),
                        // the records after the chunks, numbered from 0 (a copy: compressed next)
                        Some(plain) => {
                            let messages: Vec<_> = crate::log::messages(plain).skip(covered).collect();
                            MessageSet::from_encoded(&messages, Compression::None).map(Some)
                        }
                        // records that kept their own bytes (appended without the log: tests)
                        None => {
                            let rest = batch.records.iter().skip(covered);
                            MessageSet::from_encoded(rest.map(|p| p.message()), Compression::None).map(Some)
                        }
                    };
                    match plain {
                        Ok(plain) => {
                            let len = plain.as_ref().map_or(0, MessageSet::len);
                            to_compress += compression_cost(codec, len);
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
            self.rounds.full.insert(broker);
        } else {
            self.rounds.full.remove(&broker);
        }
        if self.out.permits.bytes.is_some() {
            // what the batches built now weigh in queue.buffering.max.bytes, given back with
            // their results
            for batch in round.batches.iter_mut().filter(|b| b.encoded.is_none()) {
                batch.held = held_by_batch(batch);
            }
        }
        let mut batches = round.batches;
        // the batches built now give their uncompressed sets to the round (see `Kept`)
        let kept: Vec<Option<Kept>> = batches
            .iter_mut()
            .zip(&sources)
            .map(|(batch, (_, source))| match source {
                SetSource::Plain(..) | SetSource::Chunked(..) => batch.plain.take().map(Kept::new),
                SetSource::Records(..) => batch.run.take().map(Kept::records),
                SetSource::Encoded(..) | SetSource::Failed(_) => None,
            })
            .collect();
        let acks = self.config.request_required_acks();
        let timeout = self.config.request_timeout().as_millis().min(i32::MAX as u128) as i32;
        let id = self.rounds.next_id;
        self.rounds.next_id += 1;
        tracing::debug!(broker, round = id, batches = batches.len(), records, "produce");
        self.rounds.in_flight.insert(id, InFlight { broker, batches, kept: kept.clone(), sent: Instant::now() });
        let pool = self.meta.cache.pool().clone();
        let sources =
            match self.send_round_now(id, broker, acks, timeout, sources, &kept, &sequences, &extras, to_compress) {
                Ok(()) => return,
                Err(sources) => sources,
            };
        // rounds to one broker reach its connection in the order they were made (with
        // max.in.flight above 1 several are in flight): each waits until the previous one is
        // queued (or gone), and says so by dropping `queued` once it is queued itself
        let (queued, queued_rx) = oneshot::channel::<()>();
        let previous = self.rounds.queue_order.insert(broker, queued_rx);
        let compressing = self.rounds.compressing.clone().filter(|_| to_compress >= OFFLOAD_COMPRESSION);
        let sets = self.rounds.sets.clone();
        let crcs = self.rounds.crcs.clone();
        // see `Rounds::yield_first`
        let yield_first = self.rounds.yield_first && to_compress >= OFFLOAD_COMPRESSION;
        let handle = self.tasks.spawn(async move {
            if yield_first {
                tokio::task::yield_now().await;
            }
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
            // the broker's versions decide the records' format: the connection first
            let unbuilt = || sources.iter().map(|_| None).collect();
            let conn = match pool.get(broker).await {
                Ok(conn) => conn,
                Err(e) => return Completion::Produce { round: id, encoded: unbuilt(), result: Err(e) },
            };
            // producer ids and sequences come with RecordBatch v2 (Produce v3, Kafka 0.11)
            let version = if idempotent.is_some() {
                let top = gregor_net::client_versions(ApiKey::Produce).map_or(FIRST_RECORD_BATCH_VERSION, |r| r.max);
                conn.version_for::<ProduceRequest>(FIRST_RECORD_BATCH_VERSION..=top)
            } else {
                conn.client_version::<ProduceRequest>()
            };
            let version = match version {
                Ok(version) => version,
                Err(e) => return Completion::Produce { round: id, encoded: unbuilt(), result: Err(e) },
            };
            let producer = match &idempotent {
                Some((ids, generation)) => match producer_id(ids, &conn, *generation).await {
                    Ok(producer) => Some(producer),
                    Err(e) => return Completion::Produce { round: id, encoded: unbuilt(), result: Err(e) },
                },
                None => None,
            };
            let format = Format::of(version);
            crcs.round_in(matches!(format, Format::RecordBatch { .. }));
            let fill = crcs.may_be_missing();
            let (request, encoded) = if let Some(compressing) = compressing {
                // milliseconds of CPU for a large gzip set: not on the runtime's only thread
                offload(compressing, move || {
                    produce_request((acks, timeout), sources, format, producer, &sequences, &extras, &sets, fill)
                })
                .await
            } else {
                produce_request((acks, timeout), sources, format, producer, &sequences, &extras, &sets, fill)
            };
            Kept::built(&kept, &encoded);
            let result = async {
                if request.topics.is_empty() {
                    // nothing could be encoded: nothing to send
                    return Ok(None);
                }
                if let Some(previous) = previous {
                    let _ = previous.await;
                }
                if acks == 0 {
                    let sent = conn.send(version, &request).await.map(|()| None);
                    drop(queued);
                    sent
                } else {
                    queue_then_wait(&conn, version, &request, queued).await
                }
            }
            .await;
            Completion::Produce { round: id, encoded, result }
        });
        self.task_kinds.insert(handle.id(), TaskKind::Round(id));
    }

    /// The round's request built and queued on its broker's connection now, by the engine's
    /// task, when nothing has to wait for it: the connection is open, the broker's versions
    /// known, the round before it queued, no chunk still compressing, little to compress
    /// ([`DIRECT_COMPRESSION`]), acks above 0 and no producer id to ask for. Its response then
    /// wakes the engine itself: at `queue.buffering.max.ms=0` a record's way from `send` to its
    /// result crosses two tasks fewer (the round's task, started and then joined). Gives the
    /// sources back when the round has to go through a task of its own.
    #[allow(clippy::too_many_arguments)]
    fn send_round_now(
        &mut self,
        id: u64,
        broker: i32,
        acks: i16,
        timeout: i32,
        sources: Vec<(PartitionKey, SetSource)>,
        kept: &[Option<Kept>],
        sequences: &[Option<i32>],
        extras: &[Vec<(usize, RecordExtra)>],
        to_compress: usize,
    ) -> Result<(), Vec<(PartitionKey, SetSource)>> {
        // the broker's previous round queued: its signal is forgotten here (a oneshot
        // receiver that has answered must not be polled again)
        let previous_queued = match self.rounds.queue_order.get_mut(&broker).map(oneshot::Receiver::try_recv) {
            None => true,
            Some(Err(oneshot::error::TryRecvError::Empty)) => false,
            Some(_) => {
                self.rounds.queue_order.remove(&broker);
                true
            }
        };
        let waits = !previous_queued
            || acks == 0
            || self.rounds.idem.is_some()
            || to_compress >= DIRECT_COMPRESSION
            || sources.iter().any(|(_, source)| matches!(source, SetSource::Chunked(..)));
        if waits {
            return Err(sources);
        }
        let pool = self.meta.cache.pool();
        let Some(conn) = pool.broker_addr(broker).and_then(|addr| pool.cached(&addr)) else {
            return Err(sources);
        };
        let Ok(version) = conn.client_version::<ProduceRequest>() else {
            return Err(sources);
        };
        let format = Format::of(version);
        self.rounds.crcs.round_in(matches!(format, Format::RecordBatch { .. }));
        let fill = self.rounds.crcs.may_be_missing();
        let (request, encoded) =
            produce_request((acks, timeout), sources, format, None, sequences, extras, &self.rounds.sets, fill);
        Kept::built(kept, &encoded);
        if request.topics.is_empty() {
            // nothing could be encoded: nothing to send
            let done = Completion::Produce { round: id, encoded, result: Ok(None) };
            self.rounds.responses.push(Box::pin(std::future::ready(done)));
            return Ok(());
        }
        match conn.try_request_queued(version, &request) {
            Ok(Some(response)) => {
                self.rounds.responses.push(Box::pin(async move {
                    Completion::Produce { round: id, encoded, result: response.await.map(Some) }
                }));
            }
            Ok(None) => {
                // the connection's slots are taken (by requests of others): queued by a task,
                // which the next round to this broker waits for
                let (queued, queued_rx) = oneshot::channel::<()>();
                self.rounds.queue_order.insert(broker, queued_rx);
                let handle = self.tasks.spawn(async move {
                    let result = queue_then_wait(&conn, version, &request, queued).await;
                    Completion::Produce { round: id, encoded, result }
                });
                self.task_kinds.insert(handle.id(), TaskKind::Round(id));
            }
            Err(e) => {
                let done = Completion::Produce { round: id, encoded, result: Err(e) };
                self.rounds.responses.push(Box::pin(std::future::ready(done)));
            }
        }
        Ok(())
    }

    pub(super) fn on_produce(
        &mut self,
        round: u64,
        encoded: Vec<Option<Result<MessageSet, gregor_protocol::Error>>>,
        result: Result<Option<ProduceResponse>, gregor_net::Error>,
        now: Instant,
    ) {
        let Some(in_flight) = self.rounds.in_flight.remove(&round) else { return };
        let broker = in_flight.broker;
        // RUST_LOG=gregor_producer::engine::rounds=trace: each round's way there and back, as
        // the engine sees it (its task or connection, the broker, the response's wake-up)
        tracing::trace!(
            broker,
            round,
            ok = result.is_ok(),
            round_trip_us = now.saturating_duration_since(in_flight.sent).as_micros() as u64,
            "produce answered"
        );
        self.acc.round_done(broker);
        // the sets the task built stay with their batches (a retry sends them as they are);
        // a batch that could not be encoded was not sent, and fails here
        let batches = in_flight.into_batches();
        let mut sent = Vec::with_capacity(batches.len());
        for (mut batch, set) in batches.into_iter().zip(encoded) {
            match set {
                None => sent.push(batch),
                Some(Ok(set)) => {
                    batch.encoded = Some(set);
                    sent.push(batch);
                }
                Some(Err(e)) => {
                    self.forget_numbering(&batch);
                    let error = Error::Encode {
                        topic: batch.tp.topic.to_string(),
                        partition: batch.tp.partition,
                        source: Arc::new(e),
                    };
                    self.fail_batch(batch, error);
                }
            }
        }
        if sent.is_empty() {
            return;
        }
        // what became of each batch (see crate::outcome), and the error it fails or retries with
        let (response, failure) = match result {
            Ok(response) => (response, None),
            Err(e) => {
                let answer = Answer::Failed { retriable: e.is_retriable(), stale_metadata: e.needs_metadata_refresh() };
                (None, Some((answer, Error::Network { broker, source: Arc::new(e) })))
            }
        };
        let policy = RetryPolicy {
            max_retries: self.config.message_send_max_retries(),
            backoff: self.config.retry_backoff(),
            idempotent: self.rounds.idem.is_some(),
            delivery_timeout: self.config.delivery_timeout(),
        };
        for batch in sent {
            let (answer, error) = match (&response, &failure) {
                (_, Some((answer, error))) => (*answer, Some(error.clone())),
                (None, None) => (Answer::Written, None),
                (Some(response), None) => {
                    let entry = response
                        .topics
                        .iter()
                        .filter(|t| *t.topic == *batch.tp.topic)
                        .flat_map(|t| &t.partitions)
                        .find(|p| p.partition == batch.tp.partition);
                    match entry {
                        None => {
                            let error = Error::MissingFromResponse {
                                broker,
                                topic: batch.tp.topic.to_string(),
                                partition: batch.tp.partition,
                            };
                            (Answer::Missing, Some(error))
                        }
                        Some(p) => {
                            let code = p.error();
                            (
                                Answer::Partition { code, base_offset: p.offset },
                                code.map(|code| Error::Broker { broker, code }),
                            )
                        }
                    }
                }
            };
            let verdict = outcome::classify(answer, batch.attempts, batch.created, policy, now);
            self.apply(batch, verdict, error, now);
        }
        self.meta.schedule.after_request(now);
    }

    /// A numbered batch that fails leaves a gap (or an unknown) in its partition's numbering:
    /// the next batches go under a new producer id (see `idempotence`). A batch of an older
    /// generation changes nothing.
    pub(super) fn forget_numbering(&mut self, batch: &Batch<Pending>) {
        if let (Some(idem), Some((generation, _))) = (self.rounds.idem.as_mut(), batch.sequence) {
            if generation == idem.generation {
                idem.reset();
            }
        }
    }

    /// Does what `verdict` says with `batch`; `error`: why it failed, when it did.
    fn apply(&mut self, batch: Batch<Pending>, verdict: Verdict, error: Option<Error>, now: Instant) {
        match verdict.metadata {
            MetadataAction::Keep => {}
            MetadataAction::Refresh => self.meta.schedule.want(now),
            MetadataAction::ForgetLeader => {
                // the batch waits for the refresh before it is sent again
                self.acc.set_leader(&batch.tp, None);
                self.meta.cache.invalidate(&batch.tp.topic);
                self.meta.schedule.want(now);
            }
        }
        let error =
            || error.unwrap_or_else(|| Error::Internal { reason: "a failed batch without an error".to_owned() });
        match verdict.action {
            Action::Deliver { base_offset } => self.succeed(batch, base_offset),
            Action::Retry { not_before } => {
                let (tp, attempts, error) = (&batch.tp, batch.attempts, error());
                if verdict.may_duplicate {
                    tracing::warn!(%tp, %error, "the leader kept the records, so the retry may store them twice");
                }
                tracing::warn!(%tp, attempts, %error, "produce failed; retrying after retry.backoff.ms");
                self.acc.retry(batch, not_before);
            }
            Action::Fail { out_of_retries } => {
                self.forget_numbering(&batch);
                let error = error();
                if out_of_retries {
                    tracing::warn!(tp = %batch.tp, attempts = batch.attempts, %error, "produce failed; out of retries");
                }
                self.fail_batch(batch, error);
            }
            Action::Expire { timeout } => {
                self.forget_numbering(&batch);
                let last = error();
                tracing::warn!(tp = %batch.tp, attempts = batch.attempts, error = %last, "produce failed after delivery.timeout.ms; not retried");
                self.fail_batch(batch, Error::DeliveryTimeout { timeout, last: Some(Arc::new(last)) });
            }
        }
    }
}

/// What compressing `len` bytes with `codec` costs, in snappy/lz4 bytes (see
/// [`OFFLOAD_COMPRESSION`]).
fn compression_cost(codec: Compression, len: usize) -> usize {
    match codec {
        Compression::None => 0,
        Compression::Gzip => 16 * len,
        Compression::Zstd => 5 * len,
        Compression::Snappy | Compression::Lz4 => len,
    }
}

/// The first Produce version that carries zstd batches (Kafka 2.1).
const ZSTD_VERSION: i16 = 7;

impl Format {
    /// The Produce version of the request.
    fn version(self) -> i16 {
        match self {
            Format::MessageSet { version } | Format::RecordBatch { version, .. } => version,
        }
    }
}

/// The records' format in a round's request (see `format`).
#[derive(Debug, Clone, Copy)]
enum Format {
    /// Message v0 sets (Produce v0-v2), in `version`.
    MessageSet { version: i16 },
    /// One RecordBatch v2 per partition in Produce `version` (v3+), its records stamped
    /// `timestamp` unless they carry their own.
    RecordBatch { version: i16, timestamp: i64 },
}

impl Format {
    /// The records' format in Produce `version`, stamped now.
    fn of(version: i16) -> Format {
        if version >= FIRST_RECORD_BATCH_VERSION {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            Format::RecordBatch { version, timestamp: now.map_or(0, |d| d.as_millis() as i64) }
        } else {
            Format::MessageSet { version }
        }
    }
}

/// Queues a round's `request` on `conn`, says so by dropping `queued` (the next round to the
/// broker waits for that), then waits for its response.
async fn queue_then_wait(
    conn: &gregor_net::BrokerConnection,
    version: i16,
    request: &ProduceRequest,
    queued: oneshot::Sender<()>,
) -> Result<Option<ProduceResponse>, gregor_net::Error> {
    let response = conn.request_queued(version, request).await;
    drop(queued);
    response?.await.map(Some)
}

/// The Produce request of a round (run by the round's task): each batch's set, built in
/// `format` from its messages unless it came built (converted when it came built in the other
/// format), under its topic; and per batch what was built here, to hand back to the engine.
/// With `fill`, messages that go out as Message v0 get the CRCs `send` may have left out
/// (`crate::crc`).
#[allow(clippy::too_many_arguments)] // the round's parts, each its own
fn produce_request(
    (acks, timeout): (i16, i32),
    sources: Vec<(PartitionKey, SetSource)>,
    format: Format,
    producer: Option<(i64, i16)>,
    sequences: &[Option<i32>],
    extras: &[Vec<(usize, RecordExtra)>],
    sets: &Blocks,
    fill: bool,
) -> (ProduceRequest, Vec<Option<Result<MessageSet, gregor_protocol::Error>>>) {
    let with_crcs = |set: MessageSet| if fill { crate::crc::with_crcs(&set) } else { set };
    let mut topics: Vec<ProduceTopic> = Vec::new();
    let mut encoded = Vec::with_capacity(sources.len());
    for (((tp, source), sequence), extras) in sources.into_iter().zip(sequences).zip(extras) {
        // an idempotent batch built now: the producer id and its first sequence
        let numbered = producer.zip(*sequence).map(|((id, epoch), base)| (id, epoch, base));
        // a set built here goes back to the batch (a retry sends it as it is); one that came
        // built does not
        // the records' own (laid out at round time), and, for a leader before Kafka 0.11 only,
        // those a RecordBatch v2 run's records carry in the run
        let headers = extras.iter().map(|(_, extra)| extra.headers.len()).sum::<usize>()
            + match (&source, format) {
                (SetSource::Records(run, _), Format::MessageSet { .. }) => run_headers(run),
                _ => 0,
            };
        let (built, fresh) = match (source, format) {
            (SetSource::Failed(e), _) => (Err(e), true),
            // zstd comes with Produce v7 (Kafka 2.1): a batch for an older leader cannot be
            // written as asked
            (
                SetSource::Plain(_, Compression::Zstd)
                | SetSource::Records(_, Compression::Zstd)
                | SetSource::Chunked(_, _, Compression::Zstd)
                | SetSource::Encoded(_, Compression::Zstd),
                format,
            ) if format.version() < ZSTD_VERSION => {
                let error = gregor_protocol::Error::FieldNotInVersion {
                    api: ApiKey::Produce,
                    version: format.version(),
                    field: "zstd compression",
                    value: format!("compression.codec=zstd; Kafka 2.1+ (Produce v{ZSTD_VERSION}) takes it"),
                };
                (Err(error), true)
            }
            // Message v0 has no headers: the batch cannot be written as asked
            (_, Format::MessageSet { version }) if headers > 0 => {
                let error = gregor_protocol::Error::FieldNotInVersion {
                    api: ApiKey::Produce,
                    version,
                    field: "record headers",
                    value: format!("{headers} headers in the batch; Kafka 0.11+ takes them"),
                };
                (Err(error), true)
            }
            (SetSource::Encoded(set, codec), Format::MessageSet { .. }) => match magic_of(&set) {
                Some(MAGIC_V2) => (to_message_set(&set, codec), true),
                _ => (Ok(set), false),
            },
            (SetSource::Encoded(set, codec), Format::RecordBatch { timestamp, .. }) => match magic_of(&set) {
                Some(MAGIC_V2) => (Ok(set), false),
                _ => (to_record_batch(&set, codec, timestamp, numbered, extras), true),
            },
            (SetSource::Plain(plain, codec), Format::MessageSet { .. }) => {
                (with_crcs(plain).compress_with(codec, |bytes| sets.keep(bytes)), true)
            }
            (SetSource::Plain(plain, codec), Format::RecordBatch { timestamp, .. }) => {
                (to_record_batch(&plain, codec, timestamp, numbered, extras), true)
            }
            // written as RecordBatch v2 records as they came: the header (and codec) only
            (SetSource::Records(run, codec), Format::RecordBatch { .. }) => {
                (run.finish_with(codec, numbered, |bytes| sets.keep(bytes)), true)
            }
            // its leader moved to a broker before Kafka 0.11
            (SetSource::Records(run, codec), Format::MessageSet { .. }) => {
                (run.finish(Compression::None, None).and_then(|set| to_message_set(&set, codec)), true)
            }
            // the rest compressed into a Message v0 wrapper, and read back from it for a
            // RecordBatch: its CRCs are checked there
            (SetSource::Chunked(chunks, rest, codec), Format::MessageSet { .. }) => {
                (join_chunks(chunks, rest.map(with_crcs), codec), true)
            }
            (SetSource::Chunked(chunks, rest, codec), Format::RecordBatch { timestamp, .. }) => {
                // chunks made before the leader's versions were known: read back, laid out anew
                let built = join_chunks(chunks, rest.map(with_crcs), codec);
                (built.and_then(|set| to_record_batch(&set, codec, timestamp, numbered, extras)), true)
            }
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
        let entry = ProducePartition::new(tp.partition, set);
        match topics.iter_mut().find(|t| *t.topic == *tp.topic) {
            Some(t) => t.partitions.push(entry),
            None => topics.push(ProduceTopic::new(tp.topic.to_string(), vec![entry])),
        }
    }
    (ProduceRequest { required_acks: acks, timeout, topics, ..Default::default() }, encoded)
}

/// The headers of a RecordBatch v2 run's records (read back: only for a run whose leader moved
/// to a broker before Kafka 0.11).
fn run_headers(run: &crate::accumulator::RecordRun) -> usize {
    run.records().filter_map(Result::ok).map(|r| r.headers.len()).sum()
}

#[cfg(test)]
mod tests {
    use gregor_protocol::message::DecodeOptions;

    use super::*;
    use crate::crc::tests::set;

    /// The values of each partition's set in `request`, read as a consumer reads them (every
    /// CRC checked), or the reader's error.
    fn read(request: &ProduceRequest) -> Vec<Result<Vec<String>, gregor_protocol::Error>> {
        let sets = request.topics.iter().flat_map(|t| &t.partitions).map(|p| &p.message_set);
        sets.map(|set| {
            let mut values = Vec::new();
            for batch in gregor_protocol::Batches::new(set.as_bytes().clone(), &DecodeOptions::default()) {
                for record in batch?.records() {
                    values.push(String::from_utf8(record?.value.unwrap().to_vec()).unwrap());
                }
            }
            Ok(values)
        })
        .collect()
    }

    /// Batches of messages `send` left without their CRC, in every way a set reaches a round:
    /// the log's set to send as it is or to compress, the rest after chunks.
    fn sources() -> Vec<(PartitionKey, SetSource)> {
        let values = ["a", "bb", "ccc", "dddd"];
        let open = || set(&values, &[0, 2, 3]);
        vec![
            (PartitionKey::new("t", 0), SetSource::Plain(open(), Compression::None)),
            (PartitionKey::new("t", 1), SetSource::Plain(open(), Compression::Snappy)),
            (PartitionKey::new("t", 2), SetSource::Chunked(Vec::new(), Some(open()), Compression::Lz4)),
        ]
    }

    /// The round's request, and per batch whether it could be built.
    fn round(format: Format, fill: bool) -> (ProduceRequest, Vec<bool>) {
        let extras = vec![Vec::new(); 3];
        let (request, encoded) =
            produce_request((1, 1000), sources(), format, None, &[None; 3], &extras, &Blocks::default(), fill);
        (request, encoded.iter().map(|e| e.as_ref().is_none_or(Result::is_ok)).collect())
    }

    #[test]
    fn messages_without_their_crc_get_it_when_they_go_out_as_message_v0() {
        let values: Vec<String> = ["a", "bb", "ccc", "dddd"].map(String::from).to_vec();
        for version in [0, 2] {
            let (request, built) = round(Format::MessageSet { version }, true);
            assert_eq!(built, [true; 3]);
            for read in read(&request) {
                assert_eq!(read.unwrap(), values);
            }
        }
        // without `fill` they would have gone out as they were, and been refused
        let (unfilled, _) = round(Format::MessageSet { version: 2 }, false);
        assert!(read(&unfilled)[0].as_ref().is_err_and(|e| matches!(e, gregor_protocol::Error::Crc { stored: 0, .. })));
        // a RecordBatch has no CRC per record: the log's set is laid out as it is; the rest
        // after chunks is compressed as Message v0 first, and read back from it (its CRCs
        // checked)
        let (request, built) = round(Format::RecordBatch { version: 3, timestamp: 1 }, true);
        assert_eq!(built, [true; 3]);
        assert!(read(&request).into_iter().all(|read| read.unwrap() == values));
        let (_, built) = round(Format::RecordBatch { version: 3, timestamp: 1 }, false);
        assert_eq!(built, [true, true, false]);
    }

    /// A batch written as RecordBatch v2 records as they came: finished as one batch (header,
    /// codec, the idempotent producer's numbering) for a leader that takes them; laid out as
    /// Message v0 for one that moved to a broker before Kafka 0.11; refused in zstd before
    /// Produce v7.
    #[test]
    fn records_written_as_they_came_are_finished_or_converted_for_the_leader() {
        use crate::accumulator::RecordRun;
        use crate::log::Stamps;
        use gregor_protocol::record::write_record;

        let values = ["a", "bb", "ccc"];
        let mut buf = bytes::BytesMut::new();
        for (i, v) in values.iter().enumerate() {
            write_record(&mut buf, i as i32, i as i64, None, Some(v.as_bytes()), &[]).unwrap();
        }
        let section = buf.freeze();
        // cut between the first and second record, as two log blocks would hold them
        let first = gregor_protocol::record::record_size_at(&section).unwrap();
        let run = RecordRun {
            parts: vec![section.slice(..first), section.slice(first..)],
            count: 3,
            stamps: Stamps { first: 500, max: 502 },
        };
        let sources = |codec| vec![(PartitionKey::new("t", 0), SetSource::Records(run.clone(), codec))];
        let build = |format, codec, producer| {
            produce_request(
                (1, 1000),
                sources(codec),
                format,
                producer,
                &[Some(7)],
                &[Vec::new()],
                &Blocks::default(),
                false,
            )
        };
        let want: Vec<String> = values.map(String::from).to_vec();
        for codec in [Compression::None, Compression::Snappy, Compression::Gzip] {
            let (request, encoded) = build(Format::RecordBatch { version: 3, timestamp: 1 }, codec, Some((9, 2)));
            assert!(encoded[0].as_ref().is_some_and(Result::is_ok), "built once, kept for a retry");
            assert_eq!(read(&request)[0].as_ref().unwrap(), &want, "{codec:?}");
            let set = &request.topics[0].partitions[0].message_set;
            let batch = gregor_protocol::Batches::new(set.as_bytes().clone(), &DecodeOptions::default())
                .next()
                .unwrap()
                .unwrap();
            let header = *batch.header();
            assert_eq!((header.producer_id, header.producer_epoch, header.base_sequence), (9, 2, 7));
            assert_eq!((header.base_timestamp, header.max_timestamp, header.record_count), (500, 502, 3));
            assert_eq!(header.compression().unwrap(), codec);

            let (request, _) = build(Format::MessageSet { version: 2 }, codec, None);
            assert_eq!(read(&request)[0].as_ref().unwrap(), &want, "as Message v0, {codec:?}");
            let set = &request.topics[0].partitions[0].message_set;
            assert_eq!(set.as_bytes()[16], 0, "magic 0");
        }
        let (request, encoded) = build(Format::RecordBatch { version: 6, timestamp: 1 }, Compression::Zstd, None);
        assert!(request.topics.is_empty());
        assert!(matches!(encoded[0], Some(Err(gregor_protocol::Error::FieldNotInVersion { .. }))));

        // a record's headers are in the run (its record keeps none): refused as Message v0,
        // finished as a RecordBatch
        let mut buf = bytes::BytesMut::new();
        write_record(&mut buf, 0, 0, None, Some(b"h"), &[("trace", Some(&b"abc"[..]))]).unwrap();
        write_record(&mut buf, 1, 0, None, Some(b"i"), &[]).unwrap();
        let run = RecordRun { parts: vec![buf.freeze()], count: 2, stamps: Stamps { first: 500, max: 500 } };
        let with_headers = |format| {
            let sources = vec![(PartitionKey::new("t", 0), SetSource::Records(run.clone(), Compression::None))];
            produce_request((1, 1000), sources, format, None, &[None], &[Vec::new()], &Blocks::default(), false)
        };
        let (request, encoded) = with_headers(Format::MessageSet { version: 2 });
        assert!(request.topics.is_empty());
        let Some(Err(e)) = &encoded[0] else { panic!("{encoded:?}") };
        assert!(e.to_string().contains("record headers (set to 1 headers in the batch"), "{e}");
        let (request, encoded) = with_headers(Format::RecordBatch { version: 3, timestamp: 1 });
        assert!(encoded[0].as_ref().is_some_and(Result::is_ok));
        let set = &request.topics[0].partitions[0].message_set;
        let batch =
            gregor_protocol::Batches::new(set.as_bytes().clone(), &DecodeOptions::default()).next().unwrap().unwrap();
        let headers: Vec<usize> = batch.records().map(|r| r.unwrap().headers.len()).collect();
        assert_eq!(headers, [1, 0]);
    }
}

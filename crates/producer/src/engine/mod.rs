//! The background task of an [`AsyncProducer`](crate::AsyncProducer): it owns the
//! accumulator, the partitioner, the metadata cache and the pool, and moves bytes and timers.
//! Decisions are made by pure code fed the time (the accumulator: batching, readiness, order);
//! the engine routes records, turns rounds into Produce requests and responses into outcomes.
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
//!
//! One file per concern, each with the part of the engine's state it owns:
//!
//! * this file: the run loop (inbox, task completions, timers) and the step that does
//!   everything that does not wait;
//! * `route`: records in: their topic, partition and queue ([`route::Inbound`]);
//! * `metadata`: what the engine knows of the cluster and when it asks again
//!   ([`metadata::Metadata`]);
//! * `rounds`: Produce requests, one task per round, and their outcomes ([`rounds::Rounds`]);
//!   `chunks`: a partition's records compressed ahead of their batch ([`chunks::Chunks`]);
//!   `blocking`: work on tokio's blocking pool, for both;
//! * `delivery`: results out, in order, through the delivery task; flushes and close
//!   ([`delivery::Outbox`]); `read_back`: on a current-thread runtime, a failed compressed
//!   batch's records read back on the blocking pool, the results decided after it held behind
//!   it ([`read_back::ReadBacks`]).

mod blocking;
mod chunks;
mod delivery;
mod format;
mod idempotence;
mod metadata;
mod read_back;
mod rounds;
mod route;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use gregor_net::MetadataCache;
use gregor_protocol::messages::ProduceResponse;
use gregor_protocol::{Compression, MessageSet};
use tokio::sync::mpsc;
use tokio::task::{Id, JoinError, JoinSet};
use tokio::time::Instant;
use tracing::Instrument;

use crate::accumulator::{Accumulator, AccumulatorConfig};
use crate::bounds::QueueBounds;
use crate::config::ProducerConfig;
use crate::delivery::{CloseReport, FlushReport, Pending};
use crate::error::Error;
use crate::inbox::{Command, InboxReceiver, Next, Wanted};
use crate::observer::Observer;
use crate::partitioner::PartitionerState;
use crate::topic::TopicNames;

use chunks::{Chunks, CHUNK_BYTES};
use delivery::{deliver_loop, Closing, Delivery, FlushWaiter, Outbox};
use metadata::Metadata;
use read_back::ReadBacks;
use rounds::Rounds;
use route::Inbound;

/// Most inbox messages handled in one go before the engine looks at its timers again.
const INBOX_BURST: usize = 4096;

/// What a task of the engine's hands back.
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
    /// A failed batch's records read back (`None`: its set could not be read).
    ReadBack {
        id: u64,
        plain: Option<MessageSet>,
    },
}

/// What a task of the engine's was doing (to tell, when it failed, what failed with it).
enum TaskKind {
    Round(u64),
    Metadata,
    ReadBack(u64),
}

/// The background task's state: the accumulator and the partitioner, and one part per concern
/// (see the module docs).
pub(crate) struct Engine {
    config: ProducerConfig,
    acc: Accumulator<Pending>,
    partitioner: PartitionerState,
    /// Records and commands coming in.
    input: Inbound,
    /// What the engine knows of the cluster.
    meta: Metadata,
    /// Produce requests in flight.
    rounds: Rounds,
    /// Records compressed ahead of their batches.
    chunks: Chunks,
    /// Results, flushes and close on their way out.
    out: Outbox,
    /// Failed batches whose records are read back off the runtime's thread, and the results
    /// waiting behind them.
    read_backs: ReadBacks,
    tasks: JoinSet<Completion>,
    task_kinds: HashMap<Id, TaskKind>,
    /// Everything is done: the run loop ends.
    done: bool,
    /// The producer's topic names: declared last, so it outlives every record above (a
    /// record dropped undelivered reads its topic's name).
    names: Arc<TopicNames>,
}

impl Engine {
    /// An engine for a producer with `config`, taking records from `inbox`, giving places in
    /// the queue back to `permits` as records get their results; `observer` watches the
    /// results and sends records of its own (the audit); `names`: the producer's topic names.
    pub(crate) fn new(
        config: ProducerConfig,
        cache: MetadataCache,
        inbox: InboxReceiver,
        permits: Arc<QueueBounds>,
        observer: Option<Box<dyn Observer>>,
        names: Arc<TopicNames>,
    ) -> Engine {
        let mut acc = Accumulator::new(AccumulatorConfig {
            batch_num_messages: config.batch_num_messages(),
            linger: config.queue_buffering_max(),
            capacity: config.queue_buffering_max_messages(),
            max_retries: config.message_send_max_retries(),
            max_in_flight: config.max_in_flight(),
            // chunks are Message v0 wrappers: none for zstd, which only RecordBatch v2 carries
            chunk_bytes: if matches!(config.compression_codec(), Compression::None | Compression::Zstd) {
                0
            } else {
                CHUNK_BYTES
            },
            batch_bytes: config.batch_size(),
            delivery_timeout: config.delivery_timeout(),
        });
        let idempotent = config.enable_idempotence();
        let crcs = inbox.crcs();
        // one pool of blocks for the inbox's stream, the logs and the compressed sets
        let sets = inbox.blocks();
        acc.keep_blocks_in(sets.clone());
        Engine {
            partitioner: PartitionerState::new(config.partitioner().clone()),
            meta: Metadata::new(cache, &config),
            config,
            acc,
            input: Inbound::new(inbox),
            rounds: Rounds::new(idempotent, crcs, sets),
            chunks: Chunks::default(),
            out: Outbox::new(permits, observer),
            read_backs: ReadBacks::default(),
            tasks: JoinSet::new(),
            task_kinds: HashMap::new(),
            done: false,
            names,
        }
    }

    /// Runs until closed, or until every handle is dropped and every record has its result.
    pub(crate) async fn run(mut self) {
        let (deliveries, rx) = mpsc::unbounded_channel();
        tokio::spawn(deliver_loop(rx, self.out.permits.clone(), self.names.clone()).in_current_span());
        self.out.deliveries = Some(deliveries);
        loop {
            let mut now = Instant::now();
            if self.input.waited_since.is_some() && self.input.incoming.is_empty() && self.input.open {
                // the engine waited for a batch's worth of records and woke for something else
                // (a linger's end, a response): what came meanwhile is placed before draining
                self.input.inbox.try_recv_all(&mut self.input.incoming);
            }
            if !self.input.incoming.is_empty() {
                // one clock reading for the burst: it stamps the records' arrival (their linger
                // starts here) and orders the timers; records that came during a wait for a
                // batch's worth are stamped with the wait's start, before they came (their
                // linger may end early, never late)
                let stamp = self.input.waited_since.unwrap_or(now);
                let mut incoming = std::mem::take(&mut self.input.incoming);
                for _ in 0..INBOX_BURST {
                    match incoming.next_raw() {
                        None => break,
                        Some(Next::Command(command)) => self.on_command(command, stamp),
                        Some(Next::Record(record, message)) => self.on_packed(record, message, stamp),
                    }
                }
                self.input.incoming = incoming;
                now = Instant::now();
            }
            if self.input.incoming.is_empty() {
                self.input.waited_since = None;
            }
            self.step(now);
            if self.done {
                break;
            }
            let (wake, lingering) = self.next_wakeup(now);
            let more = !self.input.incoming.is_empty();
            // (the inbox is not waited on while taken records are left)
            let wanted = if more { Wanted::ANY } else { self.wanted(lingering) };
            if wanted != Wanted::ANY {
                self.input.waited_since = Some(now);
            }
            tokio::select! {
                biased;
                Some(joined) = self.tasks.join_next_with_id(), if !self.tasks.is_empty() => self.on_joined(joined, Instant::now()),
                Some(completion) = self.rounds.responses.next(), if !self.rounds.responses.is_empty() => {
                    self.on_completion(completion, Instant::now())
                }
                received = self.input.inbox.recv_many(&mut self.input.incoming, wanted), if self.input.open && !more => {
                    if !received {
                        tracing::debug!(queued = self.acc.len(), "every producer handle dropped; sending what is queued");
                        self.input.open = false;
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
        // (once: the batches' read-backs it starts are let finish)
        if self.out.closing.as_ref().is_some_and(|c| now >= c.deadline)
            && !(self.acc.is_empty() && self.rounds.in_flight.is_empty())
        {
            self.abandon_everything();
        }
        self.poll_refresh(now);
        // the observer's records that are due join the queue; a closing (or dropped) producer's
        // observer says its last once nothing else is held
        let last = (self.out.closing.is_some() || !self.input.open)
            && self.acc.is_empty()
            && self.rounds.in_flight.is_empty()
            && self.read_backs.is_empty();
        let due = self.out.observer.as_mut().map(|o| o.on_tick(now, last)).unwrap_or_default();
        for pending in due {
            self.on_command(Command::Record(pending), now);
        }
        self.acc.set_flushing(!self.out.flushes.is_empty() || self.out.closing.is_some() || !self.input.open);
        self.expire(now);
        self.start_chunks();
        for round in self.acc.drain(now + self.timer_slack()) {
            self.send_round(round);
        }
        self.finish_flushes();
        self.finish_close();
        if !self.input.open
            && self.out.closing.is_none()
            && self.input.incoming.is_empty()
            && self.acc.is_empty()
            && self.rounds.in_flight.is_empty()
            && self.read_backs.is_empty()
        {
            self.done = true;
        }
    }

    /// Fails what waited past `delivery.timeout.ms` and is not in flight
    /// ([`Accumulator::expire`]): records never sent with their messages, batches waiting to be
    /// sent again as a failed round's (their numbering forgotten, as for any numbered batch
    /// that fails for good).
    fn expire(&mut self, now: Instant) {
        let Some(timeout) = self.config.delivery_timeout() else { return };
        let expired = self.acc.expire(now);
        let error = || Error::DeliveryTimeout { timeout, last: None };
        for released in expired.released {
            self.fail_released(released, error());
        }
        for batch in expired.batches {
            self.forget_numbering(&batch);
            self.fail_batch(batch, error());
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

    /// When the engine is next to look at its timers, and whether it will look at the
    /// accumulator again within a linger from `now` whatever comes: its next wake-up (a
    /// linger's end, a retry's backoff) is that soon, or queued records wait for a round's
    /// outcome (which wakes the engine).
    fn next_wakeup(&self, now: Instant) -> (Option<Instant>, bool) {
        // the accumulator's times are matched against now + slack in `step`
        let slack = self.timer_slack();
        let (at, behind_a_round) = self.acc.wakeup(now + slack);
        let mut next = at.map(|at| at.checked_sub(slack).unwrap_or(at));
        // a record coming from now on lingers past this wake-up (a retry's backoff may end later)
        let lingering = next.is_some_and(|at| at <= now + self.config.queue_buffering_max())
            || (behind_a_round && !self.rounds.in_flight.is_empty());
        let mut consider = |at: Option<Instant>| {
            if let Some(at) = at {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        };
        consider(self.meta.schedule.next_wakeup());
        consider(self.acc.next_expiry());
        consider(self.out.closing.as_ref().map(|c| c.deadline));
        consider(self.out.observer.as_ref().and_then(|o| o.next_wakeup()));
        (next, lingering)
    }

    /// What the engine waits for in the inbox before it is woken: the first record, unless
    /// the accumulator's timer ends within a linger or its records wait for a round's outcome
    /// (`lingering`: the engine wakes then anyway, and what comes meanwhile would linger
    /// longer): then as many records (and bytes, for compression's chunks) as can come
    /// without making anything ready before that ([`Accumulator::room`]). Always the first while a flush or close
    /// runs, and with a linger of zero.
    fn wanted(&self, lingering: bool) -> Wanted {
        if !lingering
            || !self.input.open
            || self.out.closing.is_some()
            || !self.out.flushes.is_empty()
            || self.config.queue_buffering_max().is_zero()
        {
            return Wanted::ANY;
        }
        let (records, bytes) = self.acc.room();
        Wanted { records, bytes }
    }

    fn on_command(&mut self, command: Command, now: Instant) {
        match command {
            Command::Record(mut pending) => {
                pending.seq = self.input.next_seq;
                self.input.next_seq += 1;
                // its linger starts when the task takes it
                self.route(pending, now, now);
            }
            Command::Flush { reply } => {
                if self.acc.is_empty() && self.read_backs.is_empty() {
                    // after the results handed out before it
                    self.hand_out(Delivery::Flush(reply, FlushReport::default()));
                } else {
                    self.out.flushes.push(FlushWaiter {
                        below: self.input.next_seq,
                        remaining: self.acc.len() + self.read_backs.records(),
                        failed: Vec::new(),
                        reply,
                    });
                }
            }
            Command::Close { deadline, reply } => {
                tracing::debug!(queued = self.acc.len(), "closing the producer");
                match &mut self.out.closing {
                    // a second close: answered empty-handed, the first one reports
                    Some(_) => self.hand_out(Delivery::Close(reply, CloseReport::default())),
                    None => self.out.closing = Some(Closing { deadline, reply: Some(reply), undelivered: Vec::new() }),
                }
            }
        }
    }

    /// A request of the engine's ended at `now`.
    fn on_completion(&mut self, completion: Completion, now: Instant) {
        match completion {
            Completion::Produce { round, encoded, result } => self.on_produce(round, encoded, result, now),
            Completion::Metadata { result } => self.on_metadata(result, now),
            Completion::ReadBack { id, plain } => self.on_read_back(id, plain),
        }
    }

    /// A task of the engine's ended at `now`.
    fn on_joined(&mut self, joined: Result<(Id, Completion), JoinError>, now: Instant) {
        match joined {
            Ok((id, completion)) => {
                self.task_kinds.remove(&id);
                self.on_completion(completion, now);
            }
            Err(e) => {
                let reason = if e.is_panic() { "a request task panicked" } else { "a request task was cancelled" };
                match self.task_kinds.remove(&e.id()) {
                    Some(TaskKind::Round(round)) => {
                        if let Some(in_flight) = self.rounds.in_flight.remove(&round) {
                            self.acc.round_done(in_flight.broker);
                            for batch in in_flight.into_batches() {
                                self.fail_batch(batch, Error::Internal { reason: reason.to_owned() });
                            }
                        }
                    }
                    Some(TaskKind::Metadata) => {
                        let failed = gregor_net::Error::NoBrokerAvailable { tried: Vec::new(), last: None };
                        self.on_metadata(Err(failed), now)
                    }
                    Some(TaskKind::ReadBack(id)) => self.read_back_now(id),
                    None => {}
                }
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
pub(super) mod testing {
    //! An engine driven by hand in the tests: no broker, no IO.

    use gregor_net::{ConnectionConfig, Pool};
    use gregor_protocol::{EncodedMessage, Message};

    use super::*;
    use crate::topic::TopicId;

    /// An engine of a producer of 2 retries, 30 ms apart, compressing with `codec`.
    pub(crate) fn engine_with(codec: Compression) -> Engine {
        engine_observed(codec, None)
    }

    /// [`engine_with`], with `observer`.
    pub(crate) fn engine_observed(codec: Compression, observer: Option<Box<dyn Observer>>) -> Engine {
        let config = ProducerConfig::builder()
            .metadata_broker_list("127.0.0.1:1")
            .message_send_max_retries(2)
            .retry_backoff(Duration::from_millis(30))
            .compression_codec(codec)
            .build()
            .unwrap();
        engine_configured(config, observer)
    }

    /// An engine with `config` and `observer` (its brokers never asked).
    pub(crate) fn engine_configured(config: ProducerConfig, observer: Option<Box<dyn Observer>>) -> Engine {
        let cache = MetadataCache::new(config.metadata_broker_list(), Pool::new(ConnectionConfig::default())).unwrap();
        let names = TopicNames::new();
        let (_tx, rx) = crate::inbox::inbox(names.clone());
        let permits =
            Arc::new(QueueBounds::new(config.queue_buffering_max_messages(), config.queue_buffering_max_bytes()));
        Engine::new(config, cache, rx, permits, observer, names)
    }

    /// A record (of a topic never read: it has no slot) numbered `seq`, partition 0, with
    /// `value`.
    pub(crate) fn pending(seq: u64, value: &str) -> Pending {
        let message =
            EncodedMessage::encode(&Message::new(None, Some(bytes::Bytes::copy_from_slice(value.as_bytes())))).unwrap();
        let mut pending = Pending::new(TopicId::UNREGISTERED, Some(0), message, None, None);
        pending.seq = seq;
        pending
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{engine_configured, pending};
    use super::*;
    use crate::accumulator::PartitionKey;

    /// The engine waits in its inbox for more than the first record only while the
    /// accumulator's next wake-up comes within a linger: a retry's longer backoff does not
    /// hold back records that came meanwhile.
    #[test]
    fn the_engine_waits_for_a_batchs_worth_only_while_its_timer_ends_within_a_linger() {
        let linger = Duration::from_millis(10);
        let config = ProducerConfig::builder()
            .metadata_broker_list("127.0.0.1:1")
            .queue_buffering_max(linger)
            .batch_num_messages(100)
            .retry_backoff(Duration::from_secs(1))
            .build()
            .unwrap();
        let mut e = engine_configured(config, None);
        let now = Instant::now();
        let wanted = |e: &Engine, now| e.wanted(e.next_wakeup(now).1);
        assert_eq!(wanted(&e, now), Wanted::ANY, "nothing queued");
        let tp = PartitionKey::new("t", 0);
        e.acc.set_leader(&tp, Some(1));
        e.acc.append(&tp, pending(0, "a"), now);
        assert_eq!(wanted(&e, now), Wanted { records: 99, bytes: usize::MAX }, "one record lingers");
        let mut rounds = e.acc.drain(now + linger);
        let batch = rounds.pop().unwrap().batches.pop().unwrap();
        e.acc.round_done(1);
        e.acc.retry(batch, now + linger + Duration::from_secs(1));
        assert_eq!(wanted(&e, now + linger), Wanted::ANY, "a retry's backoff ends after a linger");
        assert_ne!(wanted(&e, now + Duration::from_secs(1)), Wanted::ANY, "and then within one");
    }
}

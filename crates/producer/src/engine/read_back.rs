//! A failed batch's records read back off the runtime's thread. A compressed batch in flight
//! keeps only the set it sent (`rounds::Kept`); when it fails, each record's error carries its
//! key and value, read back from that set (`crate::log::plain_of`: decompressed, laid out
//! again). On a current-thread runtime a large set's read-back would hold the only thread (an
//! 8 MB gzip round: 41 ms in a release build here, a fifth of its compression), so it runs on
//! tokio's blocking pool as the compression did, and the results decided after it wait behind
//! it: the application sees them in the order they were decided, as if it had run in place.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use gregor_protocol::MessageSet;
use tokio::sync::Semaphore;

use super::blocking::offload;
use super::delivery::Delivery;
use super::{Completion, Engine, TaskKind};
use crate::accumulator::Batch;
use crate::delivery::Pending;
use crate::error::Error;
use crate::topic::Topic;

/// A set of at least this many bytes is read back on the blocking pool (on a current-thread
/// runtime): about 30 us of snappy's decompression and laying out again, 0.2 ms of gzip's
/// (an 8 MB round of hard-to-compress text here, release build: 6.9 and 41 ms).
const OFFLOAD_READ_BACK: usize = 32 * 1024;

/// A failed batch waiting for its records' keys and values.
struct ReadBack {
    records: Vec<Pending>,
    /// The set they are read back from (kept to read them in place if the task is lost).
    set: MessageSet,
    topic: Topic,
    partition: i32,
    attempts: u32,
    error: Error,
}

/// A place in the order results leave in: a read-back's, or results decided after one.
enum Held {
    ReadBack(u64),
    Ready(Vec<Delivery>),
}

/// The read-backs running and the results behind them.
#[derive(Default)]
pub(super) struct ReadBacks {
    running: HashMap<u64, ReadBack>,
    next_id: u64,
    /// Oldest first; empty when no read-back is running.
    held: VecDeque<Held>,
    /// The read-back whose failures are being decided (they take its place in `held`).
    filling: Option<(u64, Vec<Delivery>)>,
}

impl ReadBacks {
    /// No read-back runs.
    pub(super) fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// How many records wait for their read-back (their results are still to come).
    pub(super) fn records(&self) -> usize {
        self.running.values().map(|r| r.records.len()).sum()
    }

    /// Keeps `delivery` in its place when a read-back decided before it still runs; gives
    /// it back otherwise (to hand out at once).
    pub(super) fn hold(&mut self, delivery: Delivery) -> Option<Delivery> {
        if let Some((_, filled)) = &mut self.filling {
            filled.push(delivery);
            return None;
        }
        match self.held.back_mut() {
            None => Some(delivery),
            Some(Held::Ready(ready)) => {
                ready.push(delivery);
                None
            }
            Some(Held::ReadBack(_)) => {
                self.held.push_back(Held::Ready(vec![delivery]));
                None
            }
        }
    }

    /// The results now free to leave, in order: those before the oldest read-back still
    /// running.
    fn released(&mut self) -> Vec<Delivery> {
        let mut out = Vec::new();
        while let Some(Held::Ready(_)) = self.held.front() {
            if let Some(Held::Ready(ready)) = self.held.pop_front() {
                out.extend(ready);
            }
        }
        out
    }
}

impl Engine {
    /// The set to read `batch`'s records back from off the runtime's thread: on a
    /// current-thread runtime, a set of at least [`OFFLOAD_READ_BACK`] bytes that is not
    /// plain (compressed, or RecordBatch v2) it keeps instead of its records' own bytes.
    pub(super) fn read_back_offloaded(&self, batch: &Batch<Pending>) -> Option<(MessageSet, Arc<Semaphore>)> {
        let permits = self.rounds.compressing.as_ref()?;
        if batch.plain.is_some() {
            return None;
        }
        let set = batch.encoded.as_ref()?;
        (set.len() >= OFFLOAD_READ_BACK && !crate::log::is_plain(set)).then(|| (set.clone(), permits.clone()))
    }

    /// Fails `batch` with `error` once its records are read back from `set` on the blocking
    /// pool (`permits`: the compressions' and read-backs' share of it).
    pub(super) fn fail_batch_later(
        &mut self,
        batch: Batch<Pending>,
        (set, permits): (MessageSet, Arc<Semaphore>),
        error: Error,
    ) {
        let (topic, partition, attempts) = (self.result_topic(&batch.tp.topic), batch.tp.partition, batch.attempts);
        let records = self.acc.done(batch);
        self.idle_sets();
        let id = self.read_backs.next_id;
        self.read_backs.next_id += 1;
        let read = set.clone();
        let handle = self.tasks.spawn(async move {
            let plain = offload(permits, move || crate::log::plain_of(&read)).await;
            Completion::ReadBack { id, plain }
        });
        self.task_kinds.insert(handle.id(), TaskKind::ReadBack(id));
        self.read_backs.running.insert(id, ReadBack { records, set, topic, partition, attempts, error });
        self.read_backs.held.push_back(Held::ReadBack(id));
    }

    /// Read-back `id` is done (`plain`: its records' bytes, when the set could be read):
    /// its records fail, in its place in the order results leave in, and the results held
    /// behind it go when nothing older still runs.
    pub(super) fn on_read_back(&mut self, id: u64, plain: Option<MessageSet>) {
        let Some(read) = self.read_backs.running.remove(&id) else { return };
        let mut records = read.records;
        super::delivery::restore_messages(&mut records, plain);
        self.read_backs.filling = Some((id, Vec::new()));
        for pending in records {
            self.fail(pending, read.topic.clone(), Some(read.partition), read.attempts, read.error.clone());
        }
        let (_, filled) = self.read_backs.filling.take().expect("set above");
        if let Some(place) = self.read_backs.held.iter_mut().find(|h| matches!(h, Held::ReadBack(i) if *i == id)) {
            *place = Held::Ready(filled);
        }
        for delivery in self.read_backs.released() {
            self.hand_out_now(delivery);
        }
    }

    /// Read-back `id` done here, in place (its task was lost).
    pub(super) fn read_back_now(&mut self, id: u64) {
        let plain = self.read_backs.running.get(&id).and_then(|r| crate::log::plain_of(&r.set));
        self.on_read_back(id, plain);
    }

    /// Every read-back still running done here, in place, oldest first (the tasks are
    /// aborted, or the engine is dropped).
    pub(super) fn read_back_in_place(&mut self) {
        let mut ids: Vec<u64> = self.read_backs.running.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            self.read_back_now(id);
        }
    }
}

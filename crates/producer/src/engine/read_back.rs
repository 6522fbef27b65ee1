//! A failed batch's records read back off the runtime's thread. A compressed batch in flight
//! keeps only the set it sent (`rounds::Kept`); when it fails, each record's error carries its
//! key and value, read back from that set (`crate::log::plain_of`: decompressed, laid out
//! again). On a current-thread runtime a large set's read-back would hold the only thread (an
//! 8 MB gzip round: 41 ms in a release build here, a fifth of its compression), so it runs on
//! tokio's blocking pool as the compression did, and the results decided after it wait behind
//! it: the application sees them in the order they were decided, as if it had run in place.

use std::collections::VecDeque;
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
    id: u64,
    records: Vec<Pending>,
    /// The set they are read back from (kept to read them in place if the task is lost).
    set: MessageSet,
    topic: Topic,
    partition: i32,
    attempts: u32,
    error: Error,
}

/// A place in the order results leave in: a read-back running, or results decided after one.
enum Held {
    ReadBack(Box<ReadBack>),
    Ready(Vec<Delivery>),
}

/// The read-backs running, each in its place among the results held behind them.
#[derive(Default)]
pub(super) struct ReadBacks {
    /// Oldest first; empty when no read-back runs, else a read-back is first.
    held: VecDeque<Held>,
    next_id: u64,
    /// The failures of the read-back being finished (they take its place in `held`).
    filling: Option<Vec<Delivery>>,
}

impl ReadBacks {
    /// No read-back runs.
    pub(super) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    fn running(&self) -> impl Iterator<Item = &ReadBack> {
        self.held.iter().filter_map(|h| match h {
            Held::ReadBack(read) => Some(&**read),
            Held::Ready(_) => None,
        })
    }

    /// How many records wait for their read-back (their results are still to come).
    pub(super) fn records(&self) -> usize {
        self.running().map(|r| r.records.len()).sum()
    }

    /// Keeps `delivery` in its place when a read-back decided before it still runs; gives
    /// it back otherwise (to hand out at once).
    pub(super) fn hold(&mut self, delivery: Delivery) -> Option<Delivery> {
        if let Some(filled) = &mut self.filling {
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

    /// Read-back `id`, taken out of its place (left empty for its failures), if it runs.
    fn take(&mut self, id: u64) -> Option<(usize, ReadBack)> {
        let i = self.held.iter().position(|h| matches!(h, Held::ReadBack(r) if r.id == id))?;
        match std::mem::replace(&mut self.held[i], Held::Ready(Vec::new())) {
            Held::ReadBack(read) => Some((i, *read)),
            Held::Ready(_) => None,
        }
    }

    /// The read-back that was at place `i` decided `filled` (its records' failures), which
    /// take its place: the results now free to leave, in order (those before the oldest
    /// read-back still running).
    fn finished(&mut self, i: usize, filled: Vec<Delivery>) -> Vec<Delivery> {
        self.held[i] = Held::Ready(filled);
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
        let id = self.read_backs.next_id;
        self.read_backs.next_id += 1;
        let read = set.clone();
        let handle = self.tasks.spawn(async move {
            let plain = offload(permits, move || crate::log::plain_of(&read)).await;
            Completion::ReadBack { id, plain }
        });
        self.task_kinds.insert(handle.id(), TaskKind::ReadBack(id));
        let read = ReadBack { id, records, set, topic, partition, attempts, error };
        self.read_backs.held.push_back(Held::ReadBack(Box::new(read)));
    }

    /// Read-back `id` is done (`plain`: its records' bytes, when the set could be read):
    /// its records fail, in its place in the order results leave in, and the results held
    /// behind it go when nothing older still runs.
    pub(super) fn on_read_back(&mut self, id: u64, plain: Option<MessageSet>) {
        if let Some((i, read)) = self.read_backs.take(id) {
            self.finish_read_back(i, read, plain);
        }
    }

    /// The read-back that was at place `i` is done: its records fail (`plain`: their bytes).
    fn finish_read_back(&mut self, i: usize, read: ReadBack, plain: Option<MessageSet>) {
        self.read_backs.filling = Some(Vec::new());
        self.fail_records(read.records, plain, &read.topic, read.partition, read.attempts, &read.error);
        let filled = self.read_backs.filling.take().unwrap_or_default();
        for delivery in self.read_backs.finished(i, filled) {
            self.hand_out_now(delivery);
        }
    }

    /// Read-back `id` done here, in place (its task was lost).
    pub(super) fn read_back_now(&mut self, id: u64) {
        if let Some((i, read)) = self.read_backs.take(id) {
            let plain = crate::log::plain_of(&read.set);
            self.finish_read_back(i, read, plain);
        }
    }

    /// Every read-back still running done here, in place, oldest first (the tasks are
    /// aborted, or the engine is dropped).
    pub(super) fn read_back_in_place(&mut self) {
        let ids: Vec<u64> = self.read_backs.running().map(|r| r.id).collect();
        for id in ids {
            self.read_back_now(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testing::pending;
    use crate::record::RecordMetadata;

    /// A result of the record numbered `seq`.
    fn result(seq: u64) -> Delivery {
        let meta = RecordMetadata { topic: Topic::unknown(), partition: 0, offset: seq as i64 };
        Delivery::Results(vec![(pending(seq, "v"), Ok(meta))])
    }

    fn seqs(deliveries: Vec<Delivery>) -> Vec<u64> {
        let mut out = Vec::new();
        for delivery in deliveries {
            if let Delivery::Results(results) = delivery {
                out.extend(results.iter().map(|(p, _)| p.seq));
            }
        }
        out
    }

    /// A read-back numbered `id` of no records.
    fn running(id: u64) -> Held {
        let error = Error::Closed { in_flight: true };
        let (set, topic) = (MessageSet::new(), Topic::unknown());
        Held::ReadBack(Box::new(ReadBack { id, records: Vec::new(), set, topic, partition: 0, attempts: 1, error }))
    }

    /// Read-back `id` finished with `filled`: what leaves.
    fn finish(r: &mut ReadBacks, id: u64, filled: Vec<Delivery>) -> Vec<u64> {
        let (i, _) = r.take(id).expect("running");
        seqs(r.finished(i, filled))
    }

    #[test]
    fn results_decided_after_a_read_back_leave_after_its_failures_in_order() {
        let mut r = ReadBacks::default();
        assert_eq!(seqs(r.hold(result(1)).into_iter().collect()), [1], "nothing running: out at once");
        r.held.push_back(running(0));
        assert!(r.hold(result(2)).is_none());
        assert!(r.hold(result(3)).is_none());
        r.held.push_back(running(1));
        assert!(r.hold(result(4)).is_none());
        // the younger one finishes first: everything still waits for the older one
        assert!(finish(&mut r, 1, vec![result(40), result(41)]).is_empty());
        assert!(r.hold(result(5)).is_none());
        assert_eq!(finish(&mut r, 0, vec![result(10)]), [10, 2, 3, 40, 41, 4, 5]);
        assert!(r.is_empty());
        assert_eq!(seqs(r.hold(result(6)).into_iter().collect()), [6], "none running again");
    }

    #[test]
    fn a_read_back_being_finished_takes_what_is_handed_out_meanwhile() {
        let mut r = ReadBacks::default();
        r.held.push_back(running(0));
        let (i, _) = r.take(0).unwrap();
        r.filling = Some(Vec::new());
        assert!(r.hold(result(1)).is_none());
        let filled = r.filling.take().unwrap();
        assert_eq!(seqs(r.finished(i, filled)), [1]);
    }
}

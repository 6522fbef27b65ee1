//! A topic's records held for its metadata (no partition yet), in arrival order.
//!
//! A record whose message came as bytes (a small record, straight from the inbox's block)
//! leaves them here, one entry after another in blocks the topic's held records share, and
//! keeps only its delivery slot; one that holds its message itself (a large record, one with
//! headers or a timestamp) keeps it, and its entry is empty.
//!
//! Why: a topic's first records wait for its metadata, and while a broker answers
//! LeaderNotAvailable for a topic it has just created (or no broker answers at all) a whole
//! queue of them can wait. Each held record used to keep a box naming its topic and an
//! allocation of its own for its message: a 100-byte record held 281 bytes of heap, now 161,
//! where a queued one holds 139 (`tests/queued_memory.rs`, 100,000 records). `gregor perf
//! produce` to a new topic with a queue of 400,000 peaked at 150.8 MB of heap, now 73.8
//! (`benchmarks/timing/session-47.md`).

use std::collections::VecDeque;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::time::Instant;

/// The first block's size; each next one doubles, up to [`MAX_BLOCK`].
const MIN_BLOCK: usize = 4 * 1024;
const MAX_BLOCK: usize = 64 * 1024;

/// An entry's length field: its message's length (0: the record keeps its message itself; a
/// message is never empty), then the message. An entry never spans two blocks.
const LEN: usize = 4;

/// Records per chunk of [`Held`]'s records: a chunk goes as soon as its records are taken
/// through, where one deque of them all (doubled to 524,288 places for 400,000 records, 21 MB)
/// stayed whole until the last was through, beside the logs they had gone to.
const CHUNK: usize = 1024;

/// The records held for one topic.
#[derive(Debug)]
pub(crate) struct Held<T> {
    /// The records with their arrivals, in chunks of at most [`CHUNK`].
    records: Vec<Vec<(T, Instant)>>,
    len: usize,
    /// Every record's entry, in the records' order; the last block is the one written.
    blocks: Vec<BytesMut>,
    /// Metadata rounds the topic's records have waited (the accumulator's business).
    pub(crate) rounds: u32,
}

impl<T> Held<T> {
    pub(crate) fn new() -> Held<T> {
        Held { records: Vec::new(), len: 0, blocks: Vec::new(), rounds: 0 }
    }

    /// Holds `record`, which arrived `at`; `message`: its message's bytes, kept here for it
    /// (at most `u32::MAX` bytes: the producer's small records), or `None` when it keeps its
    /// message itself.
    pub(crate) fn push(&mut self, record: T, at: Instant, message: Option<&[u8]>) {
        let bytes = message.unwrap_or_default();
        let need = LEN + bytes.len();
        let fits = self.blocks.last().is_some_and(|b| b.capacity() - b.len() >= need);
        if !fits {
            let next = self.blocks.last().map_or(MIN_BLOCK, |b| (b.capacity() * 2).min(MAX_BLOCK));
            self.blocks.push(BytesMut::with_capacity(next.max(need)));
        }
        let block = self.blocks.last_mut().expect("one was just made if none fit");
        debug_assert!(u32::try_from(bytes.len()).is_ok(), "a held message over 4 GiB");
        block.put_u32(bytes.len() as u32);
        block.put_slice(bytes);
        if self.records.last().is_none_or(|c| c.len() >= CHUNK) {
            self.records.push(Vec::new());
        }
        self.records.last_mut().expect("one was just made if none had room").push((record, at));
        self.len += 1;
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The arrivals of the records held.
    fn arrivals(&self) -> impl Iterator<Item = Instant> + '_ {
        self.records.iter().flatten().map(|(_, at)| *at)
    }

    /// The earliest arrival of a record held.
    pub(crate) fn earliest(&self) -> Option<Instant> {
        self.arrivals().min()
    }

    /// True when a record held arrived at `cutoff` or before.
    pub(crate) fn any_at_or_before(&self, cutoff: Instant) -> bool {
        self.arrivals().any(|at| at <= cutoff)
    }

    /// Takes every record held, oldest first; the round count stays.
    pub(crate) fn take(&mut self) -> HeldRecords<T> {
        let blocks = std::mem::take(&mut self.blocks).into_iter().map(BytesMut::freeze).collect();
        let records = std::mem::take(&mut self.records).into_iter().map(Vec::into_iter).collect();
        HeldRecords { records, len: std::mem::take(&mut self.len), blocks }
    }

    /// Takes the records that arrived at `cutoff` or before, oldest first, with their messages
    /// (copied: they leave the blocks); the others stay, in their order.
    pub(crate) fn take_at_or_before(&mut self, cutoff: Instant) -> Vec<(T, Option<Bytes>)> {
        let mut gone = Vec::new();
        for (record, at, message) in self.take() {
            if at <= cutoff {
                gone.push((record, message.map(|m| Bytes::copy_from_slice(&m))));
            } else {
                self.push(record, at, message.as_deref());
            }
        }
        gone
    }
}

/// Records taken from [`Held`], oldest first: each with its arrival and its message's bytes
/// when they were held for it (a slice of a block, which goes once its records are through).
#[derive(Debug)]
pub(crate) struct HeldRecords<T> {
    /// The chunks left, each let go once through.
    records: VecDeque<std::vec::IntoIter<(T, Instant)>>,
    /// Records left.
    len: usize,
    blocks: VecDeque<Bytes>,
}

impl<T> HeldRecords<T> {
    /// The next record's entry.
    fn next_message(&mut self) -> Option<Bytes> {
        while self.blocks.front().is_some_and(|b| b.is_empty()) {
            self.blocks.pop_front();
        }
        let block = self.blocks.front_mut()?;
        let len = block.get_u32() as usize;
        (len > 0).then(|| block.split_to(len))
    }
}

impl<T> Iterator for HeldRecords<T> {
    type Item = (T, Instant, Option<Bytes>);

    fn next(&mut self) -> Option<Self::Item> {
        let (record, at) = loop {
            let chunk = self.records.front_mut()?;
            match chunk.next() {
                Some(next) => break next,
                None => drop(self.records.pop_front()),
            }
        };
        self.len -= 1;
        Some((record, at, self.next_message()))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len, Some(self.len))
    }
}

impl<T> ExactSizeIterator for HeldRecords<T> {}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A message of `n` bytes, each `i`'s low byte.
    fn message(i: usize, n: usize) -> Vec<u8> {
        vec![i as u8; n]
    }

    #[test]
    fn records_come_back_in_order_with_their_messages_across_blocks() {
        let t0 = Instant::now();
        let mut held = Held::new();
        // 2,000 entries of 4 to 1,004 bytes fill blocks of 4, 8, 16, 32 and then 64 KiB
        let sizes = |i: usize| match i % 7 {
            0 => None,
            3 => Some(1_000),
            _ => Some(114),
        };
        for i in 0..2_000 {
            let m = sizes(i).map(|n| message(i, n));
            held.push(i, t0 + Duration::from_millis(i as u64), m.as_deref());
        }
        assert_eq!((held.len(), held.records.len()), (2_000, 2), "in chunks of 1,024");
        assert!(held.blocks.iter().all(|b| b.len() <= b.capacity()));
        assert_eq!(held.blocks[..4].iter().map(|b| b.capacity()).collect::<Vec<_>>(), [4096, 8192, 16384, 32768]);
        let taken = held.take();
        assert!(held.is_empty() && held.blocks.is_empty());
        assert_eq!(taken.len(), 2_000);
        let mut n = 0;
        for (i, (record, at, m)) in taken.enumerate() {
            assert_eq!((record, at), (i, t0 + Duration::from_millis(i as u64)));
            assert_eq!(m.as_deref(), sizes(i).map(|n| message(i, n)).as_deref(), "record {i}");
            n += 1;
        }
        assert_eq!(n, 2_000);
    }

    #[test]
    fn a_message_larger_than_a_block_gets_a_block_of_its_own() {
        let t0 = Instant::now();
        let mut held = Held::new();
        held.push(1, t0, Some(&message(1, 10)));
        held.push(2, t0, Some(&message(2, 100_000)));
        held.push(3, t0, Some(&message(3, 10)));
        let back: Vec<_> = held.take().map(|(r, _, m)| (r, m.map(|m| m.len()))).collect();
        assert_eq!(back, [(1, Some(10)), (2, Some(100_000)), (3, Some(10))]);
    }

    #[test]
    fn the_records_at_or_before_a_cutoff_leave_and_the_rest_stay_in_order() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut held = Held::new();
        // arrivals out of order, as a record held again after a take can be
        for (r, ms) in [(1, 10), (2, 30), (3, 5), (4, 40), (5, 20)] {
            held.push(r, at(ms), (r != 4).then(|| message(r, 50)).as_deref());
        }
        held.rounds = 2;
        assert!(held.any_at_or_before(at(5)) && !held.any_at_or_before(at(4)));
        assert_eq!(held.earliest(), Some(at(5)));
        let gone = held.take_at_or_before(at(20));
        assert_eq!(
            gone.iter().map(|(r, m)| (*r, m.clone())).collect::<Vec<_>>(),
            [
                (1, Some(Bytes::from(message(1, 50)))),
                (3, Some(Bytes::from(message(3, 50)))),
                (5, Some(Bytes::from(message(5, 50)))),
            ]
        );
        assert_eq!((held.len(), held.rounds, held.earliest()), (2, 2, Some(at(30))));
        let left: Vec<_> = held.take().map(|(r, _, m)| (r, m)).collect();
        assert_eq!(left, [(2, Some(Bytes::from(message(2, 50)))), (4, None)]);
    }
}

//! The blocks a producer keeps its bytes in: its inbox's stream (`crate::inbox`), its
//! partitions' logs (`crate::log::Spent`) and its compressed sets, one pool for all three.
//!
//! Why one pool: a compressed set was an allocation of its own (about a batch: 254 KiB for
//! 2,000 records of 100 bytes), sized in steps of an eighth of a power of two so that sets of
//! about the same size could take turns in a few. With a full queue and snappy, a record in
//! flight was held compressed in such a set while the log block it had been queued in stayed
//! spent and free beside it, and each set held the rest of its step unused: 1.1-1.6 MB more
//! than uncompressed at a queue of 100,000 (`benchmarks/timing/session-49.md` §2). Here a set is
//! copied into blocks of the logs' size ([`BLOCK`]), the spent ones first, in parts one after the
//! other; the next set goes on in the last one's block. So the blocks a batch leaves when it is
//! compressed hold its set, and every block, a log's or a set's, is used again by either once
//! what was made of it is gone.
//!
//! The inbox's stream takes its blocks from the pool too, and gives each one back once filled:
//! free again once the background task has copied its records out to their logs. Its blocks
//! had been allocated by the sending thread and freed by the task's; on a multi-thread runtime
//! each worker's allocator arena then kept free blocks of its own
//! (`benchmarks/timing/session-53.md`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::BytesMut;
use gregor_protocol::MessageSet;

/// The size of a block a set is copied into: a busy partition's log block
/// (`crate::log`'s largest).
pub(crate) const BLOCK: usize = 64 * 1024;

/// Blocks kept, free or still held by batches in flight (32 MiB of [`BLOCK`]s); beyond, the
/// oldest is let go (a batch holding it keeps it alive until its result).
const KEEP: usize = 512;

/// A set begins in a block with at least this much room (or room for all of it): its headers
/// are in its first part, where the round reads its format (`crate::engine::format`).
const FIRST_PART: usize = 1024;

/// The pool's blocks: those kept to be used again once nothing made of them is alive, oldest
/// first (the part of each after what was handed out, empty and sharing the allocation, and
/// the allocation's size), and the one the last set ended in.
#[derive(Debug, Default)]
struct Pool {
    kept: VecDeque<(BytesMut, usize)>,
    /// The block the last set ended in, with the room after it, and its allocation's size.
    open: Option<(BytesMut, usize)>,
}

impl Pool {
    /// Keeps `rest`, the remainder of an allocation of `had` bytes; beyond [`KEEP`] kept, the
    /// oldest is let go (what is made of it keeps it alive; it is not used again).
    fn push(&mut self, rest: BytesMut, had: usize) {
        self.kept.push_back((rest, had));
        if self.kept.len() > KEEP {
            self.kept.pop_front();
        }
    }

    /// The oldest kept block free again that holds `n` bytes, whole (taken out); the look
    /// ends there, and every other stays.
    fn first_free(&mut self, n: usize) -> Option<(BytesMut, usize)> {
        // `try_reclaim` succeeds when this holds the only handle left: nothing made of the
        // allocation is alive
        let at = self.kept.iter_mut().position(|(buffer, had)| *had >= n && buffer.try_reclaim(*had))?;
        self.kept.remove(at)
    }
}

/// A new block of `n` bytes (empty) and its size, for when the pool has no free one.
pub(crate) fn new_block(n: usize) -> (BytesMut, usize) {
    (BytesMut::with_capacity(n), n)
}

/// A producer's pool of blocks, shared by its inbox (on the sending threads), its logs (on its
/// task) and its rounds (which build and compress their sets on theirs).
#[derive(Debug, Clone, Default)]
pub(crate) struct Blocks(Arc<Mutex<Pool>>);

impl Blocks {
    fn lock(&self) -> MutexGuard<'_, Pool> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `rest`, the empty remainder of a block of `had` bytes whose bytes were all handed
    /// out, to be used again once nothing made of it is alive.
    pub(crate) fn spend(&self, rest: BytesMut, had: usize) {
        self.lock().push(rest, had);
    }

    /// The oldest kept block free again of at least `n` bytes, whole (taken out).
    pub(crate) fn free(&self, n: usize) -> Option<(BytesMut, usize)> {
        self.lock().first_free(n)
    }

    /// [`Blocks::free`], else a new block of `n` bytes.
    pub(crate) fn take(&self, n: usize) -> (BytesMut, usize) {
        self.free(n).unwrap_or_else(|| new_block(n))
    }

    /// A set of `bytes` (a compressed set as its codec wrote it) copied into the pool's blocks:
    /// the room left in the block the last set ended in, then blocks free again, else new ones;
    /// one part per block.
    pub(crate) fn keep(&self, bytes: &[u8]) -> MessageSet {
        let mut pool = self.lock();
        let mut parts = Vec::with_capacity(bytes.len() / BLOCK + 2);
        let mut rest = bytes;
        while !rest.is_empty() {
            let needed = if parts.is_empty() { FIRST_PART.min(rest.len()) } else { 1 };
            let (mut block, had) = match pool.open.take() {
                Some((block, had)) if block.capacity() >= needed => (block, had),
                full => {
                    if let Some((block, had)) = full {
                        pool.push(block, had);
                    }
                    pool.first_free(BLOCK).unwrap_or_else(|| new_block(BLOCK))
                }
            };
            let n = rest.len().min(block.capacity());
            block.extend_from_slice(&rest[..n]);
            parts.push(block.split().freeze());
            rest = &rest[n..];
            pool.open = Some((block, had));
        }
        MessageSet::from_parts(parts)
    }

    /// Lets every kept block go (each set or batch still alive keeps its own): for an idle
    /// producer.
    pub(crate) fn clear(&self) {
        *self.lock() = Pool::default();
    }

    /// How many blocks are kept (free or not), the open one aside.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().kept.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
    }

    #[test]
    fn a_set_is_copied_into_blocks_one_after_the_other() {
        let blocks = Blocks::default();
        let a = bytes(150_000, 1);
        let set = blocks.keep(&a);
        assert_eq!(set.as_bytes().as_ref(), a.as_slice());
        let lens: Vec<_> = set.parts().iter().map(bytes::Bytes::len).collect();
        assert_eq!(lens, [BLOCK, BLOCK, 150_000 - 2 * BLOCK], "one part per block");
        // the next set goes on in the last one's block
        let b = bytes(1000, 2);
        let next = blocks.keep(&b);
        assert_eq!(next.parts().len(), 1);
        assert_eq!(next.parts()[0].as_ptr(), set.parts()[2].as_ptr().wrapping_add(set.parts()[2].len()));
        // a set that would begin with less than FIRST_PART of room begins in another block
        let fill = BLOCK - (150_000 - 2 * BLOCK) - 1000 - (FIRST_PART - 1);
        let filler = blocks.keep(&bytes(fill, 3));
        assert_eq!(filler.parts().len(), 1);
        let c = blocks.keep(&bytes(FIRST_PART, 4));
        assert_eq!(c.parts().len(), 1, "its first part holds FIRST_PART bytes");
        assert_eq!(blocks.len(), 3, "two of the first set's blocks and the filled one");
        assert_eq!(c.as_bytes().as_ref(), bytes(FIRST_PART, 4).as_slice());
        assert_eq!(next.as_bytes().as_ref(), b.as_slice());
        assert_eq!(set.as_bytes().as_ref(), a.as_slice(), "untouched by the sets after it");
    }

    #[test]
    fn a_block_is_used_again_once_what_was_made_of_it_is_gone() {
        let blocks = Blocks::default();
        // a log's block, spent while a batch holds its bytes
        let mut log_block = BytesMut::with_capacity(BLOCK);
        log_block.extend_from_slice(&bytes(BLOCK, 5));
        let batch = log_block.split().freeze();
        let at = batch.as_ptr();
        blocks.spend(log_block, BLOCK);
        let first = blocks.keep(&bytes(BLOCK, 6));
        assert_ne!(first.parts()[0].as_ptr(), at, "the batch is alive: a new block");
        drop(batch);
        // the set's block is full; the next set takes the log's block, free again
        let second = blocks.keep(&bytes(100, 7));
        assert_eq!(second.parts()[0].as_ptr(), at);
        // and a log takes a set's block once the set is gone
        let first_at = first.parts()[0].as_ptr();
        assert!(blocks.free(BLOCK).is_none(), "the first set is alive");
        drop(first);
        let (block, had) = blocks.free(BLOCK).expect("the first set's block");
        assert_eq!((block.as_ptr(), had, block.capacity()), (first_at, BLOCK, BLOCK));
        assert_eq!(second.as_bytes().as_ref(), bytes(100, 7).as_slice());
        blocks.clear();
        assert_eq!(blocks.len(), 0);
    }

    #[test]
    fn at_most_keep_blocks_are_kept() {
        let blocks = Blocks::default();
        let alive: Vec<_> = (0..KEEP + 5).map(|i| blocks.keep(&bytes(BLOCK, i as u8))).collect();
        // each set fills its block; the last one is still open
        assert_eq!(blocks.len(), KEEP);
        drop(alive);
        assert!(blocks.free(BLOCK).is_some());
        assert_eq!(blocks.len(), KEEP - 1);
    }
}

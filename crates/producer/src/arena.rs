//! Where a partition's queued records keep their bytes: blocks that many records share, so a
//! record costs no allocation of its own and its memory goes back with its batch's.
//!
//! Each partition has its own blocks, so records that wait long (a retry, a partition
//! without a leader) keep only their own partition's blocks alive. A block is sized after the
//! partition's last batch (1 KiB to 64 KiB): a busy partition fills big blocks, a quiet one
//! holds little. When a partition's queue is drained the arena lets its blocks go (the records
//! in flight keep them alive until their results), so an idle partition holds nothing.
//!
//! While the queue is not drained, a full block is kept (its empty remainder, which shares the
//! allocation) and used again once every record in it is gone: the oldest kept block is
//! checked when a new one is needed. Why: with a full queue, blocks were allocated on the
//! worker thread that ran the background task at that moment and freed on the one that
//! delivered their records; on a multi-thread runtime each worker's allocator arena then kept
//! its own peak of blocks. Reused blocks stay with the partition.

use std::collections::VecDeque;

use bytes::BytesMut;
use gregor_protocol::EncodedMessage;

use crate::message::SHARED_MAX;

const MIN_BLOCK: usize = 1024;
const MAX_BLOCK: usize = 64 * 1024;

/// Free full blocks an arena keeps for its next blocks, besides the one it takes.
const KEEP_FREE: usize = 32;

/// One partition's blocks (see the module docs).
#[derive(Debug)]
pub(crate) struct Arena {
    /// The spare room of the current block.
    block: BytesMut,
    /// Bytes copied in since the last [`Arena::release`].
    used: usize,
    /// The size of the next block.
    next: usize,
    /// The size of the current block's allocation (0: none).
    size: usize,
    /// Full blocks whose records may still be alive, oldest first: the empty remainder of
    /// each, and its allocation's size.
    full: VecDeque<(BytesMut, usize)>,
}

impl Default for Arena {
    fn default() -> Self {
        Arena { block: BytesMut::new(), used: 0, next: MIN_BLOCK, size: 0, full: VecDeque::new() }
    }
}

impl Arena {
    /// The message, copied into the current block (a new block when it does not fit); a large
    /// message, which has an allocation of its own already, is kept as it is.
    pub(crate) fn copy(&mut self, message: &EncodedMessage) -> EncodedMessage {
        if message.len() > SHARED_MAX {
            return message.clone();
        }
        self.room(message.len());
        message.copy_into(&mut self.block)
    }

    /// A small message's bytes (a record's, from the inbox's stream) copied into the current
    /// block; `None` when they are not one message.
    pub(crate) fn copy_slice(&mut self, bytes: &[u8]) -> Option<EncodedMessage> {
        self.room(bytes.len());
        EncodedMessage::copy_from_slice_into(bytes, &mut self.block)
    }

    /// Makes room for `len` more bytes in the current block.
    fn room(&mut self, len: usize) {
        if self.block.capacity() < len {
            // grows with what the partition takes in while a batch builds up
            let size = self.next.max(self.used.next_power_of_two()).clamp(MIN_BLOCK, MAX_BLOCK).max(len);
            self.new_block(size);
        }
        self.used += len;
    }

    /// Bytes copied in since the last [`Arena::release`].
    pub(crate) fn used(&self) -> usize {
        self.used
    }

    /// The partition's queue was emptied: the blocks are let go (records still holding them
    /// keep them alive), and the next one is sized after what this batch used.
    pub(crate) fn release(&mut self) {
        self.next = self.used.next_power_of_two().clamp(MIN_BLOCK, MAX_BLOCK);
        self.used = 0;
        self.block = BytesMut::new();
        self.size = 0;
        self.full = VecDeque::new();
    }

    /// Makes a block of at least `size` bytes current: the oldest full one when none of its
    /// records is left, else a new allocation. Of the other oldest blocks found free, up to
    /// [`KEEP_FREE`] stay for the next blocks and the rest are let go, and so are blocks
    /// smaller than `size` (the batches grew): what the arena keeps follows the blocks its
    /// records use (after a burst, or a stall that kept the oldest block alive while later ones
    /// were delivered, the blocks freed meanwhile are not held for as long as the queue stays
    /// busy), while the blocks a delivery frees at once are used again.
    fn new_block(&mut self, size: usize) {
        let mut free = 0;
        while let Some((block, had)) = self.full.get_mut(free) {
            if *had < size {
                // too small for the batches now: never used again
                self.full.remove(free);
                continue;
            }
            // `try_reclaim` succeeds when the arena holds the only handle left: the whole
            // allocation is free again
            if !block.try_reclaim(*had) {
                break;
            }
            free += 1;
            if free > 1 + KEEP_FREE {
                self.full.remove(free - 1);
                free -= 1;
            }
        }
        let reused = if free > 0 { self.full.pop_front() } else { None };
        let (block, had) = reused.unwrap_or_else(|| (BytesMut::with_capacity(size), size));
        let previous = std::mem::replace(&mut self.block, block);
        if self.size > 0 {
            self.full.push_back((previous, self.size));
        }
        self.size = had;
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use gregor_protocol::Message;

    use super::*;

    fn message(len: usize) -> EncodedMessage {
        EncodedMessage::encode(&Message::new(None, Some(Bytes::from(vec![b'x'; len])))).unwrap()
    }

    #[test]
    fn records_share_blocks_sized_after_the_last_batch() {
        let mut arena = Arena::default();
        let m = message(100);
        let copies: Vec<EncodedMessage> = (0..100).map(|_| arena.copy(&m)).collect();
        assert!(copies.iter().all(|c| *c == m));
        // consecutive copies sit next to each other in one block
        let (a, b) = (copies[0].as_bytes().as_ptr() as usize, copies[1].as_bytes().as_ptr() as usize);
        assert_eq!(b - a, m.len());
        arena.release();
        assert_eq!(arena.next, (100 * m.len()).next_power_of_two());
        // a quiet partition's next block is small again
        arena.copy(&m);
        arena.release();
        assert_eq!(arena.next, MIN_BLOCK);
        assert_eq!(arena.block.capacity(), 0, "released: the arena holds no block");
        assert!(arena.full.is_empty());
    }

    #[test]
    fn a_full_block_is_used_again_once_its_records_are_gone() {
        // a busy partition's blocks: all of the largest size
        let mut arena = Arena { next: MAX_BLOCK, ..Arena::default() };
        let m = message(8000); // 8,026 bytes: 8 to a block
        let first: Vec<EncodedMessage> = (0..8).map(|_| arena.copy(&m)).collect();
        let first_block = first[0].as_bytes().as_ptr();
        // the 9th starts a second block; the first is kept, its records still alive
        let second = arena.copy(&m);
        assert_ne!(second.as_bytes().as_ptr(), first_block);
        assert_eq!(arena.full.len(), 1);
        let more: Vec<EncodedMessage> = (0..7).map(|_| arena.copy(&m)).collect();
        drop(first);
        // the third block is the first one again: its records were delivered
        let third = arena.copy(&m);
        assert_eq!(third.as_bytes().as_ptr(), first_block);
        assert_eq!(third, m);
        // while a record of the second block lives, the fourth block is a new one
        let rest: Vec<EncodedMessage> = (0..8).map(|_| arena.copy(&m)).collect();
        let fourth = rest.last().unwrap().as_bytes().as_ptr();
        assert_ne!(fourth, second.as_bytes().as_ptr());
        assert_ne!(fourth, first_block);
        // every copy kept its bytes
        assert!(more.iter().chain(&rest).all(|c| *c == m) && second == m);
        // a burst held many blocks; once their records are gone, the next block is the oldest
        // of them, KEEP_FREE more stay free for the next ones and the rest are let go
        let blocks = KEEP_FREE + 6;
        let mut arena = Arena { next: MAX_BLOCK, ..Arena::default() };
        let burst: Vec<EncodedMessage> = (0..8 * blocks).map(|_| arena.copy(&m)).collect();
        assert_eq!(arena.full.len(), blocks - 1, "the full blocks kept, the last one current");
        let starts: Vec<*const u8> = burst.iter().step_by(8).map(|c| c.as_bytes().as_ptr()).collect();
        drop(burst);
        let next: Vec<EncodedMessage> = (0..8 * 2 + 1).map(|_| arena.copy(&m)).collect();
        assert_eq!(next[0].as_bytes().as_ptr(), starts[0]);
        assert_eq!(next[8].as_bytes().as_ptr(), starts[1]);
        assert_eq!(next[16].as_bytes().as_ptr(), starts[2]);
        // blocks 4 to KEEP_FREE + 1 and the burst's last one (free), then the two just filled
        assert_eq!(arena.full.len(), KEEP_FREE + 1);
        assert_eq!(arena.full[0].0.as_ptr(), starts[3]);
        assert_eq!(arena.full[KEEP_FREE - 2].0.as_ptr(), starts[blocks - 1]);
        drop(next);
        // a block still in use stops the search: the oldest is in use, a new block is made
        let mut arena = Arena { next: MAX_BLOCK, ..Arena::default() };
        let first: Vec<EncodedMessage> = (0..8).map(|_| arena.copy(&m)).collect();
        let later: Vec<EncodedMessage> = (0..8 * 3).map(|_| arena.copy(&m)).collect();
        drop(later);
        let _one_more: Vec<EncodedMessage> = (0..8).map(|_| arena.copy(&m)).collect();
        assert_eq!(arena.full.len(), 4, "nothing reclaimed behind a block in use");
        drop(first);
    }

    #[test]
    fn a_large_message_keeps_its_own_allocation() {
        let mut arena = Arena::default();
        let big = message(SHARED_MAX + 1);
        let copy = arena.copy(&big);
        assert_eq!(copy.as_bytes().as_ptr(), big.as_bytes().as_ptr());
        assert_eq!(arena.used, 0);
    }
}

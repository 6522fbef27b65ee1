//! Where a partition's queued records keep their bytes: blocks that many records share, so a
//! record costs no allocation of its own and its memory goes back with its batch's.
//!
//! Each partition has its own blocks, so records that wait long (a retry, a partition
//! without a leader) keep only their own partition's blocks alive. A block is sized after the
//! partition's last batch (1 KiB to 64 KiB): a busy partition fills big blocks, a quiet one
//! holds little. When a partition's queue is drained the arena lets its block go (the records
//! in flight keep it alive until their results), so an idle partition holds nothing.

use bytes::BytesMut;
use gregor_protocol::EncodedMessage;

use crate::inbox::SHARED_MAX;

const MIN_BLOCK: usize = 1024;
const MAX_BLOCK: usize = 64 * 1024;

/// One partition's blocks (see the module docs).
#[derive(Debug)]
pub struct Arena {
    /// The spare room of the current block.
    block: BytesMut,
    /// Bytes copied in since the last [`Arena::release`].
    used: usize,
    /// The size of the next block.
    next: usize,
}

impl Default for Arena {
    fn default() -> Self {
        Arena { block: BytesMut::new(), used: 0, next: MIN_BLOCK }
    }
}

impl Arena {
    /// The message, copied into the current block (a new block when it does not fit); a large
    /// message, which has an allocation of its own already, is kept as it is.
    pub fn copy(&mut self, message: &EncodedMessage) -> EncodedMessage {
        let len = message.len();
        if len > SHARED_MAX {
            return message.clone();
        }
        if self.block.capacity() < len {
            // grows with what the partition takes in while a batch builds up
            let size = self.next.max(self.used.next_power_of_two()).clamp(MIN_BLOCK, MAX_BLOCK).max(len);
            self.block = BytesMut::with_capacity(size);
        }
        self.used += len;
        message.copy_into(&mut self.block)
    }

    /// The partition's queue was emptied: the current block is let go (records still holding
    /// it keep it alive), and the next one is sized after what this batch used.
    pub fn release(&mut self) {
        self.next = self.used.next_power_of_two().clamp(MIN_BLOCK, MAX_BLOCK);
        self.used = 0;
        self.block = BytesMut::new();
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

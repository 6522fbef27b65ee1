//! A queue of a partition's records in blocks of [`BLOCK`] records: it holds at most one block
//! more than its records, however long it grew. A `VecDeque` grows by half its size (or
//! doubles) and keeps the room of its peak: with a full queue of a million records, a
//! partition's queue held up to 40% more slots than records, each the size of a record.

use std::collections::VecDeque;

/// Records per block.
pub(crate) const BLOCK: usize = 1024;

/// The queue (see the module docs).
#[derive(Debug)]
pub(crate) struct Blocks<T> {
    /// Oldest first; every block but the last is full, or partly taken at its front.
    blocks: VecDeque<VecDeque<T>>,
    len: usize,
}

impl<T> Default for Blocks<T> {
    fn default() -> Self {
        Blocks { blocks: VecDeque::new(), len: 0 }
    }
}

impl<T> Blocks<T> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn push_back(&mut self, record: T) {
        match self.blocks.back_mut() {
            Some(block) if block.len() < BLOCK && block.capacity() > block.len() => block.push_back(record),
            _ => {
                let mut block = VecDeque::with_capacity(BLOCK);
                block.push_back(record);
                self.blocks.push_back(block);
            }
        }
        self.len += 1;
    }

    /// Takes the `n` oldest records (at most all of them).
    pub(crate) fn take_front(&mut self, n: usize) -> Vec<T> {
        let n = n.min(self.len);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let block = self.blocks.front_mut().expect("records are in blocks");
            let k = (n - out.len()).min(block.len());
            out.extend(block.drain(..k));
            if block.is_empty() {
                self.blocks.pop_front();
            }
        }
        self.len -= n;
        out
    }

    /// The records, oldest first.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + Clone {
        self.blocks.iter().flatten()
    }

    /// The `n` newest records (at most all of them), oldest first.
    pub(crate) fn newest(&self, n: usize) -> Vec<&T> {
        let n = n.min(self.len);
        let mut out: Vec<&T> = self.iter().rev().take(n).collect();
        out.reverse();
        out
    }

    /// Room for records the queue holds now (its blocks' slots).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.blocks.iter().map(VecDeque::capacity).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_keep_their_order_and_the_room_follows_them() {
        let mut q = Blocks::default();
        for i in 0..(3 * BLOCK + 5) {
            q.push_back(i);
        }
        assert_eq!(q.len(), 3 * BLOCK + 5);
        assert!(q.capacity() < 4 * BLOCK + BLOCK / 2, "{}", q.capacity());
        assert_eq!(q.newest(3).into_iter().copied().collect::<Vec<_>>(), [3 * BLOCK + 2, 3 * BLOCK + 3, 3 * BLOCK + 4]);
        let first = q.take_front(BLOCK + 7);
        assert!(first.iter().copied().eq(0..BLOCK + 7));
        assert!(q.iter().copied().eq(BLOCK + 7..3 * BLOCK + 5));
        // the blocks taken whole are gone
        assert!(q.capacity() < 3 * BLOCK + BLOCK / 2, "{}", q.capacity());
        for i in 3 * BLOCK + 5..3 * BLOCK + 10 {
            q.push_back(i);
        }
        let rest = q.take_front(usize::MAX);
        assert!(rest.iter().copied().eq(BLOCK + 7..3 * BLOCK + 10));
        assert!(q.is_empty() && q.capacity() == 0 && q.newest(2).is_empty());
    }
}

//! The buffers a producer's compressed sets are written into, shared by its rounds and used
//! again once the batch that held one is gone.
//!
//! Why: a compressed set was an allocation of its exact size (about a batch: 126 KB for 1,000
//! records of 100 bytes), made on whichever thread built the round and freed with the batch's
//! result on another. With a full queue the sets in flight are a third of what is held, and
//! glibc kept their freed memory scattered between the blocks of the partitions' logs (the
//! same churn the logs' blocks had before they were kept: `crate::log`). Here the sets in
//! flight take turns in a few allocations, sized in steps of an eighth of a power of two so
//! that sets of about the same size fit each other's.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::BytesMut;

/// Buffers kept, in flight or free: the batches a producer has in flight for 8 partitions at
/// the default `max.in.flight.requests.per.connection` (5).
const KEEP: usize = 40;

/// Buffers free again kept besides the one taken.
const SPARE: usize = 1;

/// Allocations kept to be used again once nothing made of them is alive, oldest first: the
/// part of each after what was handed out (empty, sharing the allocation) and its size. The
/// one mechanism behind [`SetBuffers`] and the logs' spent blocks (`crate::log::Spent`).
#[derive(Debug, Default)]
pub(crate) struct Kept(VecDeque<(BytesMut, usize)>);

impl Kept {
    /// Keeps `rest`, the remainder of an allocation of `had` bytes; beyond `keep` kept, the
    /// oldest is let go (what is made of it keeps it alive; it is not used again).
    pub(crate) fn push(&mut self, rest: BytesMut, had: usize, keep: usize) {
        self.0.push_back((rest, had));
        if self.0.len() > keep {
            self.0.pop_front();
        }
    }

    /// The oldest kept allocation free again that holds `n` bytes, whole (taken out); of the
    /// others found free, `spare` stay and the rest are let go.
    pub(crate) fn free(&mut self, n: usize, spare: usize) -> Option<(BytesMut, usize)> {
        let mut taken = None;
        let mut free = 0;
        self.0.retain_mut(|(buffer, had)| {
            // `try_reclaim` succeeds when this holds the only handle left: nothing made of
            // the allocation is alive
            if !buffer.try_reclaim(*had) {
                return true;
            }
            if taken.is_none() && *had >= n {
                taken = Some((std::mem::take(buffer), *had));
                return false;
            }
            free += 1;
            free <= spare
        });
        taken
    }

    /// The oldest kept allocation free again that holds `n` bytes, whole (taken out); the
    /// look ends there, and every other stays.
    pub(crate) fn first_free(&mut self, n: usize) -> Option<(BytesMut, usize)> {
        let at = self.0.iter_mut().position(|(buffer, had)| *had >= n && buffer.try_reclaim(*had))?;
        self.0.remove(at)
    }

    /// How many allocations are kept (free or not).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// Shared by a producer's rounds (cloned into each round's task).
#[derive(Debug, Clone, Default)]
pub(crate) struct SetBuffers(Arc<Mutex<Kept>>);

impl SetBuffers {
    /// An empty buffer with room for exactly `n` bytes (a set of that size): part of a kept
    /// allocation whose set is gone and that is large enough, else of a new one.
    pub(crate) fn take(&self, n: usize) -> BytesMut {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (mut buffer, had) = kept.free(n, SPARE).unwrap_or_else(|| {
            let step = (n.next_power_of_two() / 8).max(4096);
            let size = n.div_ceil(step).max(1) * step;
            (BytesMut::with_capacity(size), size)
        });
        // the set is the allocation's first `n` bytes; the rest stays here, to tell when the
        // set is gone
        let rest = buffer.split_off(n);
        kept.push(rest, had, KEEP);
        buffer
    }

    /// Lets every kept allocation go (each set still alive keeps its own): for an idle
    /// producer.
    pub(crate) fn clear(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Kept::default();
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_allocation_is_used_again_once_its_set_is_gone() {
        let buffers = SetBuffers::default();
        let mut a = buffers.take(100_000);
        assert_eq!((a.len(), a.capacity()), (0, 100_000), "room for exactly the set");
        a.extend_from_slice(&[1; 100_000]);
        let a = a.freeze();
        let at = a.as_ptr();
        let mut b = buffers.take(90_000);
        b.extend_from_slice(&[2; 90_000]);
        let b = b.freeze();
        assert_ne!(b.as_ptr(), at, "the first set is alive: another allocation");
        drop(a);
        let mut c = buffers.take(101_000);
        assert_eq!(c.as_ptr(), at as *mut u8, "the first set's allocation again (sizes rounded up)");
        c.extend_from_slice(&[3; 101_000]);
        assert!(b.iter().all(|x| *x == 2), "the second set is untouched");
        let c = c.freeze();
        assert!(c.iter().all(|x| *x == 3));
        assert_eq!(buffers.len(), 2);
        // a set larger than any kept allocation: a new one
        drop((b, c));
        let d = buffers.take(300_000);
        assert!(d.capacity() == 300_000 && buffers.len() == 2, "{} kept", buffers.len());
        buffers.clear();
        assert_eq!(buffers.len(), 0);
        drop(d);
    }

    #[test]
    fn at_most_keep_allocations_are_kept() {
        let buffers = SetBuffers::default();
        let alive: Vec<_> = (0..KEEP + 5).map(|_| buffers.take(5000).freeze()).collect();
        assert_eq!(buffers.len(), KEEP);
        drop(alive);
        // all free again: one is taken, one spare stays beside it
        let _next = buffers.take(5000);
        assert_eq!(buffers.len(), SPARE + 1);
    }
}

//! How the producer's inbox grows: see [`reserve_one`] (a partition's queue is in blocks,
//! `crate::blocks`).

use std::collections::VecDeque;

/// Queues longer than this grow by half their size rather than double (see [`reserve_one`]).
const GENTLE_ABOVE: usize = 4096;

/// Makes room for one more element in `q` when it is full: past [`GENTLE_ABOVE`] elements it
/// grows by half its size (no further than `limit` elements while it is shorter) instead of
/// `VecDeque`'s doubling. A queue that fills keeps every slot it reached in use (a ring moves
/// through all of them), so its memory was the next power of two above its peak: with a full
/// producer queue, 131,072 slots of 96 bytes for a partition that peaked at 95,000 records.
#[inline]
pub(crate) fn reserve_one<T>(q: &mut VecDeque<T>, limit: usize) {
    if q.len() == q.capacity() && q.capacity() >= GENTLE_ABOVE {
        let half = q.capacity() / 2;
        let more = match limit.saturating_sub(q.len()) {
            0 => half,
            room => half.min(room),
        };
        q.reserve_exact(more);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_queue_grows_by_half_and_stops_at_the_limit() {
        let grow = |n: usize, limit: usize| {
            let mut q = VecDeque::new();
            for i in 0..n {
                reserve_one(&mut q, limit);
                q.push_back(i);
            }
            q.capacity()
        };
        // VecDeque alone: the next power of two (4096 first, as before)
        assert_eq!(grow(4000, usize::MAX), 4096);
        // then 6144, 9216, 13824, 20736 ... rather than 32768
        assert_eq!(grow(20_000, usize::MAX), 20_736);
        // 69984, then the limit rather than 104976 (or 131072)
        assert_eq!(grow(100_000, 100_000), 100_000);
        // past the limit (records over it) it keeps growing by half
        assert_eq!(grow(100_001, 100_000), 150_000);
        // records taken off the front and put on the back of a full ring keep their order
        let mut q: VecDeque<usize> = (0..4096).collect();
        q.rotate_left(1000);
        reserve_one(&mut q, usize::MAX);
        q.push_back(4096);
        assert!(q.iter().copied().eq((1000..4096).chain(0..1000).chain([4096])));
    }
}

//! What the producing commands (`produce`, `perf produce`) count from their one delivery
//! handler: messages per partition, without a lock for the usual partition ids.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Partition ids counted without a lock (0 up to this); higher ids are counted under one.
const LOCK_FREE: usize = 1024;

/// Messages per partition, added to from any thread.
#[derive(Debug)]
pub(crate) struct PartitionCounts {
    low: Vec<AtomicU64>,
    high: Mutex<BTreeMap<i32, u64>>,
}

impl Default for PartitionCounts {
    fn default() -> Self {
        PartitionCounts { low: (0..LOCK_FREE).map(|_| AtomicU64::new(0)).collect(), high: Mutex::default() }
    }
}

impl PartitionCounts {
    /// One more message for `partition`.
    pub(crate) fn add(&self, partition: i32) {
        match usize::try_from(partition).ok().and_then(|p| self.low.get(p)) {
            Some(n) => {
                n.fetch_add(1, Ordering::Relaxed);
            }
            None => *lock(&self.high).entry(partition).or_default() += 1,
        }
    }

    /// The partitions counted so far, with their counts.
    pub(crate) fn totals(&self) -> BTreeMap<i32, u64> {
        let mut all = lock(&self.high).clone();
        for (p, n) in self.low.iter().enumerate() {
            let n = n.load(Ordering::Relaxed);
            if n > 0 {
                all.insert(p as i32, n);
            }
        }
        all
    }
}

/// The guard of `m`, also after a panic while it was held (what it guards are counts).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_counted_with_and_without_the_lock() {
        let counts = PartitionCounts::default();
        for p in [0, 7, 7, 5000, -1, 1023, 1024] {
            counts.add(p);
        }
        assert_eq!(counts.totals(), BTreeMap::from([(-1, 1), (0, 1), (7, 2), (1023, 1), (1024, 1), (5000, 1)]));
    }
}

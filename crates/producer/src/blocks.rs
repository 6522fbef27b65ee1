//! A queue of a partition's records in blocks of at most [`BLOCK`] records: it holds at most
//! one block more than its records, however long it grew. A `VecDeque` grows by half its size
//! (or doubles) and keeps the room of its peak: with a full queue of a million records, a
//! partition's queue held up to 40% more slots than records, each the size of a record.
//!
//! A record that is no more than a number, a static handler's index and an opaque (what a
//! `send_with_static_handler` record is once its bytes are in its partition's log) is kept
//! packed ([`Pack`]): its number and opaque as 32-bit offsets from its block's first ones, the
//! handler once per block, 8 bytes a record instead of the record's 24. An opaque further than
//! 32 bits from the block's first widens the block's opaques to 64 bits (12 bytes a record);
//! a number further, or another handler, starts a block. Other records are kept as they are.

use std::collections::VecDeque;
use std::ops::Range;

/// Records per block.
pub(crate) const BLOCK: usize = 1024;

/// A block of records kept as they are takes packable records after it while it has fewer than
/// this many, so records of both kinds in turn make blocks of this size, not of one record.
const KEPT_RUN: usize = 64;

/// A record that can be kept in fewer bytes while it waits.
pub(crate) trait Pack: Sized {
    /// Its packed form, or itself when it holds more.
    fn pack(self) -> Result<Packed, Self>;
    /// The record a packed form stands for.
    fn unpack(packed: Packed) -> Self;
}

/// A record reduced to its number, a handler's index and an opaque (see [`Pack`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Packed {
    pub(crate) seq: u64,
    pub(crate) handler: u32,
    pub(crate) opaque: u64,
}

/// A queued record as the queue shows it: the record itself, or its packed form.
#[derive(Debug)]
pub(crate) enum Queued<'a, T> {
    Kept(&'a T),
    Packed(Packed),
}

impl<T> Clone for Queued<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Queued<'_, T> {}

#[cfg(test)]
impl<T: Pack + Clone> Queued<'_, T> {
    /// The record (a copy).
    pub(crate) fn record(&self) -> T {
        match self {
            Queued::Kept(r) => (*r).clone(),
            Queued::Packed(p) => T::unpack(*p),
        }
    }
}

/// The queue (see the module docs).
pub(crate) struct Blocks<T> {
    /// Oldest first; every block but the last is full, or partly taken at its front.
    blocks: VecDeque<Block<T>>,
    len: usize,
}

enum Block<T> {
    Kept(VecDeque<T>),
    Packed(PackedBlock<T>),
}

/// Packed records (see the module docs).
struct PackedBlock<T> {
    /// The first record's number, handler and opaque.
    seq: u64,
    handler: u32,
    opaque: u64,
    /// Records taken from the front.
    front: usize,
    /// Each record's number less the first's.
    seqs: Vec<u32>,
    opaques: Opaques,
    /// Makes a record of a packed one: a block dropped with records in it drops them as
    /// records (a record may have a result to give).
    unpack: fn(Packed) -> T,
}

/// Each record's opaque less the first's (wrapping).
enum Opaques {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl<T> Default for Blocks<T> {
    fn default() -> Self {
        Blocks { blocks: VecDeque::new(), len: 0 }
    }
}

impl<T> std::fmt::Debug for Blocks<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blocks").field("len", &self.len).field("blocks", &self.blocks.len()).finish()
    }
}

impl<T> PackedBlock<T> {
    fn new(first: Packed, unpack: fn(Packed) -> T) -> Self {
        let (seq, handler, opaque) = (first.seq, first.handler, first.opaque);
        PackedBlock { seq, handler, opaque, front: 0, seqs: vec![0], opaques: Opaques::Narrow(vec![0]), unpack }
    }

    fn len(&self) -> usize {
        self.seqs.len() - self.front
    }

    /// Adds `p` when it fits: the block's handler, a number at most 2^32 - 1 past the first's,
    /// room left.
    fn try_push(&mut self, p: Packed) -> bool {
        if p.handler != self.handler || self.seqs.len() >= BLOCK {
            return false;
        }
        let Some(seq) = p.seq.checked_sub(self.seq).and_then(|d| u32::try_from(d).ok()) else {
            return false;
        };
        let opaque = p.opaque.wrapping_sub(self.opaque);
        match (&mut self.opaques, u32::try_from(opaque)) {
            (Opaques::Narrow(v), Ok(narrow)) => v.push(narrow),
            (Opaques::Narrow(v), Err(_)) => {
                let mut wide = Vec::with_capacity(v.capacity());
                wide.extend(v.iter().map(|&o| u64::from(o)));
                wide.push(opaque);
                self.opaques = Opaques::Wide(wide);
            }
            (Opaques::Wide(v), _) => v.push(opaque),
        }
        self.seqs.push(seq);
        true
    }

    /// The record at `i` (counted from the block's first, taken or not).
    fn get(&self, i: usize) -> Packed {
        let opaque = match &self.opaques {
            Opaques::Narrow(v) => u64::from(v[i]),
            Opaques::Wide(v) => v[i],
        };
        Packed {
            seq: self.seq + u64::from(self.seqs[i]),
            handler: self.handler,
            opaque: self.opaque.wrapping_add(opaque),
        }
    }

    /// Moves its `k` oldest records (at most its length) to a block of their own: their
    /// offsets copied, the same first number, handler and opaque.
    fn split_front(&mut self, k: usize) -> PackedBlock<T> {
        let (from, to) = (self.front, self.front + k);
        let opaques = match &self.opaques {
            Opaques::Narrow(v) => Opaques::Narrow(v[from..to].to_vec()),
            Opaques::Wide(v) => Opaques::Wide(v[from..to].to_vec()),
        };
        self.front = to;
        PackedBlock {
            seq: self.seq,
            handler: self.handler,
            opaque: self.opaque,
            front: 0,
            seqs: self.seqs[from..to].to_vec(),
            opaques,
            unpack: self.unpack,
        }
    }

    /// Takes the `k` oldest records (at most its length) into `out`.
    fn take(&mut self, k: usize, out: &mut Vec<T>) {
        let (from, to) = (self.front, self.front + k);
        out.extend((from..to).map(|i| (self.unpack)(self.get(i))));
        self.front = to;
    }
}

impl<T> Drop for PackedBlock<T> {
    fn drop(&mut self) {
        for i in self.front..self.seqs.len() {
            drop((self.unpack)(self.get(i)));
        }
    }
}

impl<T> Block<T> {
    fn len(&self) -> usize {
        match self {
            Block::Kept(b) => b.len(),
            Block::Packed(b) => b.len(),
        }
    }

    fn iter(&self) -> BlockIter<'_, T> {
        match self {
            Block::Kept(b) => BlockIter::Kept(b.iter()),
            Block::Packed(b) => BlockIter::Packed(b, b.front..b.seqs.len()),
        }
    }
}

/// The records of one block, oldest first.
enum BlockIter<'a, T> {
    Kept(std::collections::vec_deque::Iter<'a, T>),
    Packed(&'a PackedBlock<T>, Range<usize>),
}

impl<T> Clone for BlockIter<'_, T> {
    fn clone(&self) -> Self {
        match self {
            BlockIter::Kept(i) => BlockIter::Kept(i.clone()),
            BlockIter::Packed(b, r) => BlockIter::Packed(b, r.clone()),
        }
    }
}

impl<'a, T> Iterator for BlockIter<'a, T> {
    type Item = Queued<'a, T>;

    fn next(&mut self) -> Option<Queued<'a, T>> {
        match self {
            BlockIter::Kept(i) => i.next().map(Queued::Kept),
            BlockIter::Packed(b, r) => r.next().map(|i| Queued::Packed(b.get(i))),
        }
    }
}

impl<T> DoubleEndedIterator for BlockIter<'_, T> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            BlockIter::Kept(i) => i.next_back().map(Queued::Kept),
            BlockIter::Packed(b, r) => r.next_back().map(|i| Queued::Packed(b.get(i))),
        }
    }
}

impl<T> Blocks<T> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The records, oldest first.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = Queued<'_, T>> + Clone {
        self.blocks.iter().flat_map(Block::iter)
    }

    /// The `n` newest records (at most all of them), oldest first.
    pub(crate) fn newest(&self, n: usize) -> Vec<Queued<'_, T>> {
        let n = n.min(self.len);
        let mut out: Vec<_> = self.iter().rev().take(n).collect();
        out.reverse();
        out
    }

    /// Takes the `n` oldest records (at most all of them).
    pub(crate) fn take_front(&mut self, n: usize) -> Vec<T> {
        let n = n.min(self.len);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let block = self.blocks.front_mut().expect("records are in blocks");
            let k = (n - out.len()).min(block.len());
            match block {
                Block::Kept(b) => out.extend(b.drain(..k)),
                Block::Packed(b) => b.take(k, &mut out),
            }
            if block.len() == 0 {
                self.blocks.pop_front();
            }
        }
        self.len -= n;
        out
    }

    /// Moves the `n` oldest records (at most all of them) to a queue of their own, the packed
    /// ones staying packed (a batch in flight holds its records in 8 bytes each, as its
    /// partition's queue did): whole blocks move as they are, a block cut in two gives a copy
    /// of its taken records' offsets. Records are not pushed onto the queue it returns.
    pub(crate) fn split_front(&mut self, n: usize) -> Blocks<T> {
        let n = n.min(self.len);
        let mut out = Blocks { blocks: VecDeque::new(), len: n };
        let mut left = n;
        while left > 0 {
            let block = self.blocks.front_mut().expect("records are in blocks");
            if block.len() <= left {
                left -= block.len();
                out.blocks.push_back(self.blocks.pop_front().expect("looked at"));
                continue;
            }
            out.blocks.push_back(match block {
                Block::Kept(b) => Block::Kept(b.drain(..left).collect()),
                Block::Packed(b) => Block::Packed(b.split_front(left)),
            });
            left = 0;
        }
        self.len -= n;
        out
    }

    /// The record `i` places from the oldest.
    pub(crate) fn get(&self, mut i: usize) -> Option<Queued<'_, T>> {
        for block in &self.blocks {
            if i < block.len() {
                return match block {
                    Block::Kept(b) => b.get(i).map(Queued::Kept),
                    Block::Packed(b) => Some(Queued::Packed(b.get(b.front + i))),
                };
            }
            i -= block.len();
        }
        None
    }

    /// Every record, oldest first, the packed ones made records again.
    pub(crate) fn into_vec(mut self) -> Vec<T> {
        let n = self.len;
        self.take_front(n)
    }

    /// Room for records the queue holds now (its blocks' slots).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        let room = |b: &Block<T>| match b {
            Block::Kept(b) => b.capacity(),
            Block::Packed(b) => b.seqs.capacity(),
        };
        self.blocks.iter().map(room).sum()
    }

    /// Bytes the blocks' records take (their slots, not the blocks' own few bytes).
    #[cfg(test)]
    fn bytes(&self) -> usize {
        let bytes = |b: &Block<T>| match b {
            Block::Kept(b) => b.capacity() * std::mem::size_of::<T>(),
            Block::Packed(b) => {
                b.seqs.capacity() * 4
                    + match &b.opaques {
                        Opaques::Narrow(v) => v.capacity() * 4,
                        Opaques::Wide(v) => v.capacity() * 8,
                    }
            }
        };
        self.blocks.iter().map(bytes).sum()
    }
}

impl<T: Pack> Blocks<T> {
    pub(crate) fn push_back(&mut self, record: T) {
        self.len += 1;
        let record = match self.blocks.back_mut() {
            Some(Block::Kept(b)) if b.len() < KEPT_RUN => return b.push_back(record),
            Some(Block::Kept(b)) if b.len() < BLOCK => match record.pack() {
                Ok(p) => p,
                Err(record) => return b.push_back(record),
            },
            Some(Block::Packed(b)) => match record.pack() {
                Ok(p) if b.try_push(p) => return,
                Ok(p) => p,
                Err(record) => return self.blocks.push_back(Block::Kept(VecDeque::from([record]))),
            },
            _ => match record.pack() {
                Ok(p) => p,
                Err(record) => return self.blocks.push_back(Block::Kept(VecDeque::from([record]))),
            },
        };
        self.blocks.push_back(Block::Packed(PackedBlock::new(record, T::unpack)));
    }
}

impl<T: Pack> FromIterator<T> for Blocks<T> {
    fn from_iter<I: IntoIterator<Item = T>>(records: I) -> Self {
        let mut blocks = Blocks::default();
        for record in records {
            blocks.push_back(record);
        }
        blocks
    }
}

/// Test records: a `u32` is kept as it is, a `u64` packs (its value as its number and opaque).
#[cfg(test)]
mod test_records {
    use super::{Pack, Packed};

    impl Pack for u32 {
        fn pack(self) -> Result<Packed, u32> {
            Err(self)
        }

        fn unpack(packed: Packed) -> u32 {
            packed.seq as u32
        }
    }

    impl Pack for u64 {
        fn pack(self) -> Result<Packed, u64> {
            Ok(Packed { seq: self, handler: 0, opaque: self })
        }

        fn unpack(packed: Packed) -> u64 {
            packed.seq
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn records_keep_their_order_and_the_room_follows_them() {
        let mut q = Blocks::default();
        for i in 0..(3 * BLOCK as u32 + 5) {
            q.push_back(i);
        }
        let n = |q: &Blocks<u32>| q.iter().map(|r| r.record()).collect::<Vec<_>>();
        assert!(q.iter().all(|r| matches!(r, Queued::Kept(_))), "u32s are kept");
        assert_eq!(q.len(), 3 * BLOCK + 5);
        assert!(q.capacity() < 4 * BLOCK + BLOCK / 2, "{}", q.capacity());
        let newest: Vec<_> = q.newest(3).into_iter().map(|r| r.record()).collect();
        let b = BLOCK as u32;
        assert_eq!(newest, [3 * b + 2, 3 * b + 3, 3 * b + 4]);
        let first = q.take_front(BLOCK + 7);
        assert!(first.iter().copied().eq(0..b + 7));
        assert!(n(&q).into_iter().eq(b + 7..3 * b + 5));
        // the blocks taken whole are gone
        assert!(q.capacity() < 3 * BLOCK + BLOCK / 2, "{}", q.capacity());
        for i in 3 * b + 5..3 * b + 10 {
            q.push_back(i);
        }
        let rest = q.take_front(usize::MAX);
        assert!(rest.iter().copied().eq(b + 7..3 * b + 10));
        assert!(q.is_empty() && q.capacity() == 0 && q.newest(2).is_empty());
    }

    /// Packed records cost 8 bytes each (12 when their opaques spread past 32 bits) and come
    /// back as they went in, in order, across blocks, widened blocks and new handlers.
    #[test]
    fn packed_records_come_back_as_they_went_in_in_fewer_bytes() {
        let mut q: Blocks<u64> = Blocks::default();
        for i in 0..10 * BLOCK as u64 {
            q.push_back(i * 7);
        }
        let packed_bytes = q.bytes();
        assert!(packed_bytes <= 10 * BLOCK * 8 + 2 * 8, "{packed_bytes} bytes for {} records", 10 * BLOCK);
        let seen: Vec<u64> = q
            .iter()
            .map(|r| match r {
                Queued::Packed(p) => {
                    assert_eq!(p.seq, p.opaque);
                    p.seq
                }
                Queued::Kept(_) => panic!("u64s pack"),
            })
            .collect();
        assert!(seen.iter().copied().eq((0..10 * BLOCK as u64).map(|i| i * 7)));
        assert!(q.take_front(5).into_iter().eq([0, 7, 14, 21, 28]));
        assert!(q
            .newest(2)
            .iter()
            .map(|r| if let Queued::Packed(p) = r { p.seq } else { 0 })
            .eq([(10 * BLOCK as u64 - 2) * 7, (10 * BLOCK as u64 - 1) * 7]));
        assert!(q.take_front(usize::MAX).into_iter().eq((5..10 * BLOCK as u64).map(|i| i * 7)));
        assert!(q.is_empty() && q.capacity() == 0);

        // numbers or opaques far apart, going back, at the edges of the ranges
        let odd = [5, 5 + u32::MAX as u64, 6 + u32::MAX as u64, 3, u64::MAX, 0, 1 << 40, (1 << 40) + 1];
        let mut q: Blocks<Wide> = Blocks::default();
        for (i, &o) in odd.iter().enumerate() {
            q.push_back(Wide(Packed { seq: o, handler: (i / 4) as u32, opaque: o.wrapping_mul(3) }));
        }
        assert_eq!(q.len(), odd.len());
        let back: Vec<Packed> = q.take_front(usize::MAX).into_iter().map(|w| w.0).collect();
        let expected: Vec<Packed> = odd
            .iter()
            .enumerate()
            .map(|(i, &o)| Packed { seq: o, handler: (i / 4) as u32, opaque: o.wrapping_mul(3) })
            .collect();
        assert_eq!(back, expected);
    }

    /// Records of both kinds in turn: order kept, and blocks of tens of records, not of one.
    #[test]
    fn kept_and_packed_records_in_turn_keep_their_order_in_few_blocks() {
        let mut q: Blocks<Either> = Blocks::default();
        let records: Vec<Either> =
            (0..5000u64).map(|i| if i % 3 == 0 { Either::Kept(i) } else { Either::Packs(i) }).collect();
        for r in &records {
            q.push_back(r.clone());
        }
        assert!(q.blocks.len() <= 5000 / KEPT_RUN * 2 + 2, "{} blocks", q.blocks.len());
        // a run of packable records after a few kept ones is packed once the kept block has
        // KEPT_RUN records
        for i in 5000..5000 + 3 * BLOCK as u64 {
            q.push_back(Either::Packs(i));
        }
        let packed = q.iter().filter(|r| matches!(r, Queued::Packed(_))).count();
        assert!(packed >= 3 * BLOCK - KEPT_RUN, "{packed}");
        let back = q.take_front(usize::MAX);
        let want: Vec<u64> = (0..5000 + 3 * BLOCK as u64).collect();
        assert_eq!(back.iter().map(Either::n).collect::<Vec<_>>(), want);
    }

    /// A batch split off the front keeps its records packed, in order, whatever blocks the cut
    /// falls in; the queue goes on after it; `get` finds every record of both.
    #[test]
    fn split_off_records_stay_packed_and_in_order() {
        let mut q: Blocks<Either> = Blocks::default();
        let n = 4 * BLOCK as u64 + 100;
        for i in 0..n {
            // a run of kept records inside the packed ones
            q.push_back(if (1500..1530).contains(&i) { Either::Kept(i) } else { Either::Packs(i) });
        }
        let mut start = 0u64;
        let packed_total = q.iter().filter(|r| matches!(r, Queued::Packed(_))).count();
        for take in [1000, 1, 600, 1024, 2, usize::MAX] {
            let before = q.len();
            let kinds = |q: &Blocks<Either>, k: usize| -> Vec<bool> {
                q.iter().take(k).map(|r| matches!(r, Queued::Packed(_))).collect()
            };
            let k = take.min(before);
            let packed_before = kinds(&q, k);
            let batch = q.split_front(take);
            assert_eq!((batch.len(), q.len()), (k, before - k));
            assert_eq!(kinds(&batch, k), packed_before, "split at {start}+{k}: packed as they were");
            for (j, i) in (start..start + k as u64).enumerate() {
                assert_eq!(batch.get(j).map(|r| r.record().n()), Some(i));
            }
            assert!(batch.get(k).is_none());
            assert_eq!(q.get(0).map(|r| r.record().n()), (start + (k as u64) < n).then_some(start + k as u64));
            let back: Vec<u64> = batch.into_vec().iter().map(Either::n).collect();
            assert!(back.into_iter().eq(start..start + k as u64));
            start += k as u64;
        }
        assert_eq!(start, n);
        assert_eq!(packed_total, n as usize - KEPT_RUN, "only the kept run and those after it in its block are kept");
        assert!(q.is_empty() && q.split_front(3).is_empty());
        // a split block's records take their own 8 bytes each, not a copy of the whole block
        let mut q: Blocks<u64> = (0..BLOCK as u64).collect();
        let batch = q.split_front(10);
        assert_eq!(batch.bytes(), 10 * 8);
    }

    /// A queue dropped with packed records in it drops each as a record.
    #[test]
    fn a_dropped_queue_drops_its_packed_records_as_records() {
        static DROPPED: AtomicUsize = AtomicUsize::new(0);
        struct Counted(u64);
        impl Drop for Counted {
            fn drop(&mut self) {
                DROPPED.fetch_add(1, Ordering::SeqCst);
            }
        }
        impl Pack for Counted {
            fn pack(self) -> Result<Packed, Counted> {
                let p = Packed { seq: self.0, handler: 0, opaque: 0 };
                std::mem::forget(self);
                Ok(p)
            }
            fn unpack(packed: Packed) -> Counted {
                Counted(packed.seq)
            }
        }
        let mut q = Blocks::default();
        for i in 0..(BLOCK as u64 + 10) {
            q.push_back(Counted(i));
        }
        drop(q.take_front(10));
        assert_eq!(DROPPED.load(Ordering::SeqCst), 10);
        drop(q);
        assert_eq!(DROPPED.load(Ordering::SeqCst), BLOCK + 10, "every record dropped once");
    }

    /// A record packed as it is given.
    #[derive(Debug)]
    struct Wide(Packed);

    impl Pack for Wide {
        fn pack(self) -> Result<Packed, Wide> {
            Ok(self.0)
        }
        fn unpack(packed: Packed) -> Wide {
            Wide(packed)
        }
    }

    #[derive(Debug, Clone)]
    enum Either {
        Kept(u64),
        Packs(u64),
    }

    impl Either {
        fn n(&self) -> u64 {
            match self {
                Either::Kept(n) | Either::Packs(n) => *n,
            }
        }
    }

    impl Pack for Either {
        fn pack(self) -> Result<Packed, Either> {
            match self {
                Either::Packs(n) => Ok(Packed { seq: n, handler: 1, opaque: n }),
                kept => Err(kept),
            }
        }
        fn unpack(packed: Packed) -> Either {
            Either::Packs(packed.seq)
        }
    }
}

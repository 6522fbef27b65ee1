//! A partition's queued records as the bytes they are sent as: each record's message is copied
//! once, when its partition is known, to the end of the partition's log as a message set entry
//! (offset, size, message); a batch is then the log's first entries, taken as one
//! [`MessageSet`] made of the blocks' own bytes, one part per block it spans
//! ([`MessageSet::from_parts`]; the request frame writes each part as it is, and a codec reads
//! them where they are). A queued record keeps no handle on its bytes (a `Bytes` is 32 bytes, a
//! quarter of a 100-byte record's wire size), and a batch in flight holds its records' bytes
//! once: in the blocks it keeps alive, never in a copy.
//!
//! The log is made of blocks that records share, so a record costs no allocation of its own.
//! A block is sized after the partition's last batch (1 KiB to 64 KiB): a busy partition fills
//! big blocks, a quiet one holds little. An entry never spans two blocks.
//!
//! A block whose entries were all taken is spent ([`Spent`]: one pool for a producer's logs,
//! its inbox's stream and its compressed sets, `crate::buffers`) and used again, by any of
//! them, once every batch made of it is gone; the logs of an idle
//! producer (nothing queued or in flight) keep none. Why kept: with a full queue, blocks were
//! allocated on the worker thread that ran the background task at that moment and freed on
//! the one that delivered their records; on a multi-thread runtime each worker's allocator
//! arena then kept its own peak of blocks. Why shared: the partitions take turns at holding
//! the most, and a list per partition kept each one's own peak.

use std::collections::VecDeque;

use bytes::{BufMut, Bytes, BytesMut};
use gregor_protocol::{EncodedMessage, MessageSet};

use crate::buffers::{new_block, Blocks, BLOCK};

/// Bytes before each message in a set: its offset (8) and size (4).
pub(crate) const ENTRY_HEADER: usize = 12;

const MIN_BLOCK: usize = 1024;
const MAX_BLOCK: usize = BLOCK;

/// Blocks of a producer's logs whose entries were all taken, oldest first, shared by the
/// partitions, in the pool its inbox's stream and compressed sets use too
/// (`crate::buffers`): the empty remainder of each (sharing its allocation) and its
/// allocation's size. One is used again, by any partition, set or the stream, once every
/// batch made of it is gone.
///
/// Shared rather than one list per partition: the partitions' queues take turns at being
/// longest, and each partition's list kept blocks for its own longest (the sum of the
/// partitions' peaks, where a shared list keeps the peak of their sum). Free blocks are kept
/// until the producer is idle (at most what its busiest moment used): letting the extra ones
/// go to the allocator and taking new ones again cost more memory than it saved (a shared
/// list keeping at most 32 free blocks held 207 bytes per message at a queue of 100,000
/// where this holds 145; `benchmarks/timing/memory.md`).
///
/// A block is free again when the last batch holding a part of it is dropped, which the
/// blocks cannot see; looking means trying the kept blocks one by one. So the list is looked
/// at only while a block may be free: after a batch is gone ([`Spent::batch_gone`], which
/// whoever lets batches go calls) or one was spent free, until a look finds none; a look ends
/// at the first free block that fits. Without that, a
/// topic of many partitions (small blocks, more of them in flight than are kept) tried all
/// 512 kept blocks for each new one and found none free: 13% of the producer's time for a
/// 1,000-partition topic (`benchmarks/timing/session-34.md`).
#[derive(Debug, Default)]
pub(crate) struct Spent {
    blocks: Blocks,
    /// False once a look found no free block, until a batch is gone or a free block spent.
    may_be_free: bool,
}

impl Spent {
    fn push(&mut self, mut bytes: BytesMut, had: usize) {
        // free already when every batch made of it is gone (its entries taken long ago)
        if bytes.try_reclaim(had) {
            self.may_be_free = true;
        }
        self.blocks.spend(bytes, had);
    }

    /// The oldest block free again of at least `size` bytes, whole (every other stays), else
    /// a new one.
    fn take(&mut self, size: usize) -> (BytesMut, usize) {
        if !self.may_be_free {
            return new_block(size);
        }
        let taken = self.blocks.free(size);
        // after one found, the next look may find another; after none, only a batch gone can
        // free one (free blocks too small for this stay, for smaller ones after that)
        self.may_be_free = taken.is_some();
        taken.unwrap_or_else(|| new_block(size))
    }

    /// A batch was let go: blocks it held may be free again.
    pub(crate) fn batch_gone(&mut self) {
        self.may_be_free = true;
    }

    /// Spent blocks kept in `blocks`, a pool shared with the producer's inbox and compressed
    /// sets (`crate::buffers`).
    pub(crate) fn new(blocks: Blocks) -> Spent {
        Spent { blocks, may_be_free: false }
    }

    /// Lets every kept block go, the sets' too (each batch still alive keeps its own): for an
    /// idle producer.
    pub(crate) fn clear(&mut self) {
        self.blocks.clear();
        self.may_be_free = false;
    }

    /// How many blocks are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.blocks.len()
    }
}

/// A log and the producer's spent blocks, to append a record's bytes to its partition: as a
/// Message v0 entry ([`Appender::push`]), or, while its partition's leader takes them, as a
/// RecordBatch v2 record of its partition's open batch ([`Appender::v2`],
/// [`RecordAppender::push`]).
pub(crate) struct Appender<'a> {
    pub(crate) log: &'a mut Log,
    pub(crate) spent: &'a mut Spent,
    /// The bytes its partition's open batch may still take (`batch.size`; `usize::MAX`: no
    /// bound, or the open batch is empty): an entry that needs more begins the next batch.
    pub(crate) room: usize,
    /// The entry began the next batch (see `room`).
    pub(crate) began: bool,
    /// Where the record goes instead while its partition's leader takes RecordBatch v2.
    pub(crate) v2: Option<RecordAppender<'a>>,
}

/// The open batch of a partition whose leader takes RecordBatch v2: its records' log, the
/// next record's offset delta (its index in the batch) and the batch's timestamps so far.
pub(crate) struct RecordAppender<'a> {
    pub(crate) records: &'a mut Log,
    pub(crate) offset_delta: i32,
    pub(crate) stamps: &'a mut Option<Stamps>,
    /// The bytes the open batch may still take (`batch.size` less its header and records;
    /// `usize::MAX`: no bound, or the batch is empty): a record that needs more begins the
    /// next batch, its offset delta 0 and its timestamp the next batch's first.
    pub(crate) room: usize,
    /// When the record began the next batch: the timestamps of the batch it closed.
    pub(crate) began: Option<Option<Stamps>>,
}

/// The timestamps of a batch of RecordBatch v2 records: its first record's (its records'
/// deltas are from it) and the greatest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamps {
    pub(crate) first: i64,
    pub(crate) max: i64,
}

impl Appender<'_> {
    /// See [`Log::push`].
    pub(crate) fn push(&mut self, message: &[u8]) {
        if ENTRY_HEADER + message.len() > self.room {
            self.began = true;
        }
        self.log.push(message, self.spent);
    }
}

impl RecordAppender<'_> {
    /// Appends the record as RecordBatch v2 to its partition's open batch: its offset delta
    /// its index there, its timestamp a delta from the batch's first.
    ///
    /// # Errors
    ///
    /// A key, value or header over `i32::MAX` bytes; nothing is appended.
    pub(crate) fn push(
        &mut self,
        spent: &mut Spent,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[gregor_protocol::record::HeaderRef<'_>],
    ) -> Result<(), gregor_protocol::Error> {
        use gregor_protocol::record::{max_size_of_record, size_of_record, write_record};

        let mut first = self.stamps.map_or(timestamp, |s| s.first);
        if self.room != usize::MAX
            && self.began.is_none()
            && size_of_record(self.offset_delta, timestamp.wrapping_sub(first), key, value, headers) > self.room
        {
            // the open batch is full: this record is the next one's first
            self.began = Some(self.stamps.take());
            self.offset_delta = 0;
            first = timestamp;
        }
        let delta = timestamp.wrapping_sub(first);
        let most = max_size_of_record(key, value, headers);
        let offset_delta = self.offset_delta;
        self.records.push_record(most, spent, |buf| write_record(buf, offset_delta, delta, key, value, headers))?;
        *self.stamps = Some(match *self.stamps {
            Some(s) => Stamps { first: s.first, max: s.max.max(timestamp) },
            None => Stamps { first: timestamp, max: timestamp },
        });
        Ok(())
    }
}

/// A block of a [`Log`].
#[derive(Debug)]
struct Block {
    /// The entries not taken yet, and the room after them.
    bytes: BytesMut,
    /// How many entries.
    count: usize,
    /// The size of its allocation.
    had: usize,
}

/// One partition's queued records' bytes (see the module docs).
#[derive(Debug)]
pub(crate) struct Log {
    /// Blocks holding entries, oldest first; the last is the one appended to.
    blocks: VecDeque<Block>,
    /// Entries in all blocks.
    entries: usize,
    /// Bytes appended since the last [`Log::release`].
    used: usize,
    /// The size of the next block.
    next: usize,
}

impl Default for Log {
    fn default() -> Self {
        Log { blocks: VecDeque::new(), entries: 0, used: 0, next: MIN_BLOCK }
    }
}

impl Log {
    /// Appends `message` (one Message v0, as `Message::encode` lays it out) as an entry.
    pub(crate) fn push(&mut self, message: &[u8], spent: &mut Spent) {
        let len = ENTRY_HEADER + message.len();
        let block = self.room_for(len, spent);
        block.bytes.put_i64(0);
        block.bytes.put_i32(i32::try_from(message.len()).expect("a message encoded is under i32::MAX bytes"));
        block.bytes.extend_from_slice(message);
        block.count += 1;
        self.entries += 1;
        self.used += len;
    }

    /// Appends a RecordBatch v2 record of at most `len` bytes, which `write` writes and
    /// counts (its length first, as `gregor_protocol::record::write_record` writes it; no entry
    /// header): the log of a partition whose leader takes RecordBatch v2. A log holds entries
    /// of one kind.
    ///
    /// # Errors
    ///
    /// `write`'s, which must then have written nothing; nothing is appended.
    pub(crate) fn push_record<E>(
        &mut self,
        len: usize,
        spent: &mut Spent,
        write: impl FnOnce(&mut BytesMut) -> Result<usize, E>,
    ) -> Result<(), E> {
        let block = self.room_for(len, spent);
        let before = block.bytes.len();
        let written = match write(&mut block.bytes) {
            Ok(written) => written,
            Err(e) => {
                debug_assert_eq!(block.bytes.len(), before, "a record not written left nothing");
                return Err(e);
            }
        };
        debug_assert!(written == block.bytes.len() - before && written <= len, "the record's size as told");
        block.count += 1;
        self.entries += 1;
        self.used += written;
        Ok(())
    }

    /// The block to append `len` bytes to (a new one when the last has no room).
    fn room_for(&mut self, len: usize, spent: &mut Spent) -> &mut Block {
        let room = self.blocks.back().map_or(0, |b| b.bytes.capacity() - b.bytes.len());
        if room < len {
            // grows with what the partition takes in while a batch builds up
            let size = self.next.max(self.used.next_power_of_two()).clamp(MIN_BLOCK, MAX_BLOCK).max(len);
            if self.blocks.back().is_some_and(|b| b.count == 0) {
                // every entry of the last block was taken: it is spent
                let Block { bytes, had, .. } = self.blocks.pop_back().expect("the last");
                spent.push(bytes, had);
            }
            let (bytes, had) = spent.take(size);
            self.blocks.push_back(Block { bytes, count: 0, had });
        }
        self.blocks.back_mut().expect("a block with room")
    }

    /// Entries in the log.
    pub(crate) fn len(&self) -> usize {
        self.entries
    }

    /// Bytes appended since the last [`Log::release`].
    pub(crate) fn used(&self) -> usize {
        self.used
    }

    /// The first `n` entries (at most the log's) as one uncompressed set, offsets 0 to n-1,
    /// made of the log's own bytes: one part per block they lie in (a batch across blocks is
    /// sent as its blocks' slices, not copied into one buffer); `None` for none.
    pub(crate) fn take(&mut self, n: usize, spent: &mut Spent) -> Option<MessageSet> {
        let n = n.min(self.entries);
        if n == 0 {
            return None;
        }
        self.entries -= n;
        let mut parts = Vec::new();
        let mut left = n;
        let mut first = 0;
        while left > 0 {
            let block = self.blocks.front_mut().expect("entries are in blocks");
            let k = left.min(block.count);
            let end = number(&mut block.bytes, first, k);
            parts.push(block.bytes.split_to(end).freeze());
            block.count -= k;
            left -= k;
            first += k;
            self.pop_spent(spent);
        }
        Some(MessageSet::from_parts(parts))
    }

    /// The first `n` records (at most the log's) appended by [`Log::push_record`], as their
    /// bytes: one part per block they lie in, the log's own (no copy).
    pub(crate) fn take_records(&mut self, n: usize, spent: &mut Spent) -> Vec<Bytes> {
        let n = n.min(self.entries);
        self.entries -= n;
        let mut parts = Vec::new();
        let mut left = n;
        while left > 0 {
            let block = self.blocks.front_mut().expect("entries are in blocks");
            let k = left.min(block.count);
            let mut end = 0;
            for _ in 0..k {
                // the log's own records: each one's length was written with it
                end += gregor_protocol::record::record_size_at(&block.bytes[end..]).unwrap_or(block.bytes.len() - end);
            }
            parts.push(block.bytes.split_to(end).freeze());
            block.count -= k;
            left -= k;
            self.pop_spent(spent);
        }
        parts
    }

    /// Moves the front block to the spent ones when all its entries were taken and it is not
    /// the block appended to.
    fn pop_spent(&mut self, spent: &mut Spent) {
        if self.blocks.len() > 1 && self.blocks.front().is_some_and(|b| b.count == 0) {
            let Block { bytes, had, .. } = self.blocks.pop_front().expect("the front");
            spent.push(bytes, had);
        }
    }

    /// A copy of the last `n` entries (at most the log's) as one uncompressed set, offsets 0
    /// to n-1; `None` for none. The log keeps them.
    pub(crate) fn tail(&self, n: usize) -> Option<MessageSet> {
        let n = n.min(self.entries);
        if n == 0 {
            return None;
        }
        // the block holding the first of them, and how many of its entries come before it
        let mut skip = self.entries - n;
        let mut at = 0;
        while skip >= self.blocks[at].count {
            skip -= self.blocks[at].count;
            at += 1;
        }
        let mut set = BytesMut::new();
        let mut index: i64 = 0;
        for block in self.blocks.iter().skip(at) {
            let block = &block.bytes;
            let mut pos = 0;
            while pos < block.len() {
                let size = entry_size(block, pos);
                if skip > 0 {
                    skip -= 1;
                } else {
                    set.put_i64(index);
                    set.extend_from_slice(&block[pos + 8..pos + ENTRY_HEADER + size]);
                    index += 1;
                }
                pos += ENTRY_HEADER + size;
            }
        }
        Some(MessageSet::from_bytes(set.freeze()))
    }

    /// The partition's queue was emptied: its blocks are spent (batches still holding them
    /// keep them alive), and its next one is sized after what this batch used.
    pub(crate) fn release(&mut self, spent: &mut Spent) {
        debug_assert_eq!(self.entries, 0, "released with entries left");
        self.next = self.used.next_power_of_two().clamp(MIN_BLOCK, MAX_BLOCK);
        self.used = 0;
        self.entries = 0;
        for Block { bytes, had, .. } in std::mem::take(&mut self.blocks) {
            spent.push(bytes, had);
        }
    }
}

/// The size of the message of the entry at `pos` of `block` (laid out by [`Log::push`]).
fn entry_size(block: &[u8], pos: usize) -> usize {
    let size = i32::from_be_bytes(block[pos + 8..pos + ENTRY_HEADER].try_into().expect("4 bytes"));
    size as usize
}

/// Numbers the `k` entries at the start of `block` `first` to `first + k - 1`; returns where
/// they end.
fn number(block: &mut BytesMut, first: usize, k: usize) -> usize {
    let mut pos = 0;
    for i in 0..k {
        let size = entry_size(block, pos);
        block[pos..pos + 8].copy_from_slice(&((first + i) as i64).to_be_bytes());
        pos += ENTRY_HEADER + size;
    }
    pos
}

/// The messages of an uncompressed set of Message v0 entries (as [`Log::take`] makes them),
/// sharing its bytes, one at a time (nothing collected: a batch's weight and its records'
/// messages are read on the producer's task); stops at anything else.
pub(crate) fn messages(set: &MessageSet) -> impl Iterator<Item = EncodedMessage> + '_ {
    entries(set).map_while(|entry| entry.and_then(|(part, at)| EncodedMessage::from_bytes(part.slice(at))))
}

/// Where each entry's message lies in a set laid out as [`Log::take`] makes it (each part of
/// whole entries): its part and range, read in place; `None` for an entry whose size does not
/// fit its part, and nothing after it.
pub(crate) fn entries(set: &MessageSet) -> impl Iterator<Item = Option<(&Bytes, std::ops::Range<usize>)>> + '_ {
    let mut parts = set.parts().iter();
    let mut bytes = parts.next();
    let mut pos = 0;
    let mut broken = false;
    std::iter::from_fn(move || loop {
        if broken {
            return None;
        }
        let part = bytes?;
        if pos == part.len() {
            // a part of whole entries read: the next one
            (bytes, pos) = (parts.next(), 0);
            continue;
        }
        let size = part
            .get(pos + 8..pos + ENTRY_HEADER)
            .and_then(|header| usize::try_from(i32::from_be_bytes(header.try_into().expect("4 bytes"))).ok());
        let end = size.and_then(|size| (pos + ENTRY_HEADER).checked_add(size)).filter(|end| *end <= part.len());
        let Some(end) = end else {
            broken = true;
            return Some(None);
        };
        let at = pos + ENTRY_HEADER..end;
        pos = end;
        return Some(Some((part, at)));
    })
}

/// The uncompressed set of Message v0 entries (as [`Log::take`] makes them) holding the records
/// of an encoded set: a compressed message set, or a RecordBatch v2, as a batch is sent. A
/// compressed batch in flight keeps only its encoded bytes; its records' keys and values are
/// read back from them for a failure or the observer. Timestamps and headers are not kept
/// (a record's error carries its key and value). `None` when the set cannot be read.
pub(crate) fn plain_of(encoded: &MessageSet) -> Option<MessageSet> {
    encoded.parts().first()?;
    if is_plain(encoded) {
        return Some(encoded.clone());
    }
    MessageSet::from_messages(records_of(encoded).ok()?, gregor_protocol::Compression::None).ok()
}

/// `encoded` starts with uncompressed Message v0/v1 entries (attributes' codec bits 0): it
/// is its own plain set, and [`plain_of`] reads nothing back.
pub(crate) fn is_plain(encoded: &MessageSet) -> bool {
    let Some(bytes) = encoded.parts().first() else { return false };
    let (magic, attributes) = (bytes.get(16).copied(), bytes.get(17).copied());
    matches!(magic, Some(0 | 1)) && attributes.is_some_and(|a| a & 0x07 == 0)
}

/// The buffers to read `set`'s entries from, each of whole entries: its parts for uncompressed
/// Message v0/v1 entries (the log cuts a set between entries); its bytes joined for a
/// compressed set in parts (one wrapper across the blocks it was kept in: `crate::buffers`) or
/// a RecordBatch v2 in parts (its header, then its records where they lie, cut anywhere
/// between records, or compressed across blocks).
pub(crate) fn readable(set: &MessageSet) -> Vec<Bytes> {
    match set.parts() {
        [_, _, ..] if !is_plain(set) => vec![set.as_bytes().clone()],
        parts => parts.to_vec(),
    }
}

/// Every record of `set` (Message v0/v1 entries with their wrappers expanded, or RecordBatch
/// v2 batches) as a Message v0 of its key and value, in order.
///
/// # Errors
///
/// The codec's: a set that cannot be read.
pub(crate) fn records_of(set: &MessageSet) -> Result<Vec<gregor_protocol::Message>, gregor_protocol::Error> {
    use gregor_protocol::message::DecodeOptions;
    use gregor_protocol::record::Batches;

    let mut messages = Vec::new();
    for batch in readable(set).into_iter().flat_map(|part| Batches::new(part, &DecodeOptions::default())) {
        for record in batch?.records() {
            let record = record?;
            messages.push(gregor_protocol::Message::new(record.key, record.value));
        }
    }
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use gregor_protocol::Message;

    use super::*;

    fn message(len: usize, tag: u8) -> EncodedMessage {
        EncodedMessage::encode(&Message::new(None, Some(Bytes::from(vec![tag; len])))).unwrap()
    }

    /// What `MessageSet::from_encoded` makes of `messages`: the bytes a batch must have.
    fn expected(messages: &[EncodedMessage]) -> Bytes {
        MessageSet::from_encoded(messages, gregor_protocol::Compression::None).unwrap().into_bytes()
    }

    #[test]
    fn a_batch_is_its_records_entries_numbered_from_zero_without_a_copy_in_one_block() {
        let mut log = Log::default();
        let mut spent = Spent::default();
        let ms: Vec<EncodedMessage> = (0..10).map(|i| message(20, i)).collect();
        for m in &ms {
            log.push(m.as_bytes(), &mut spent);
        }
        assert_eq!(log.len(), 10);
        let block = log.blocks[0].bytes.as_ptr();
        let first = log.take(4, &mut spent).unwrap();
        assert_eq!(first.as_bytes(), &expected(&ms[..4]));
        assert_eq!(first.as_bytes().as_ptr(), block, "the log's own bytes");
        let second = log.take(6, &mut spent).unwrap();
        assert_eq!(second.as_bytes(), &expected(&ms[4..]), "numbered from 0 again");
        assert_eq!(messages(&second).collect::<Vec<_>>(), ms[4..]);
        assert_eq!(log.len(), 0);
        assert!(log.take(1, &mut spent).is_none());
        log.release(&mut spent);
        assert_eq!(log.next, MIN_BLOCK.max((10 * (ENTRY_HEADER + ms[0].len())).next_power_of_two()));
        assert!(log.blocks.is_empty(), "released: the log holds no block");
        assert_eq!(spent.len(), 1, "its block is spent");
        // another partition's log takes it once its batches are gone
        let mut other = Log::default();
        other.push(ms[0].as_bytes(), &mut spent);
        assert_ne!(other.blocks[0].bytes.as_ptr(), block, "its batches are alive");
        drop((first, second));
        spent.batch_gone();
        let mut third = Log::default();
        third.push(ms[0].as_bytes(), &mut spent);
        assert_eq!(third.blocks[0].bytes.as_ptr(), block, "free again: used by another log");
    }

    #[test]
    fn a_batch_across_blocks_is_their_bytes_in_parts_and_the_tail_a_copy_of_the_last_entries() {
        let mut log = Log { next: MIN_BLOCK, ..Log::default() };
        let mut spent = Spent::default();
        // 412 bytes each: two to a 1 KiB block
        let ms: Vec<EncodedMessage> = (0..7).map(|i| message(386, i)).collect();
        for m in &ms {
            log.push(m.as_bytes(), &mut spent);
        }
        assert!(log.blocks.len() >= 3, "{} blocks", log.blocks.len());
        assert_eq!(log.tail(3).unwrap().as_bytes(), &expected(&ms[4..]));
        assert_eq!(log.tail(7).unwrap().as_bytes(), &expected(&ms));
        assert_eq!(log.len(), 7, "the tail is a copy");
        let blocks: Vec<_> = log.blocks.iter().map(|b| b.bytes.as_ptr()).collect();
        let batch = log.take(5, &mut spent).unwrap();
        let parts: Vec<_> = batch.parts().iter().map(|p| p.as_ptr()).collect();
        assert_eq!(parts, blocks[..3], "the blocks' own bytes, one part each");
        assert_eq!(batch.as_bytes(), &expected(&ms[..5]));
        assert_eq!(batch.len(), batch.as_bytes().len());
        assert_eq!(log.tail(2).unwrap().as_bytes(), &expected(&ms[5..]));
        assert_eq!(log.take(9, &mut spent).unwrap().as_bytes(), &expected(&ms[5..]), "at most what it holds");
    }

    #[test]
    fn records_are_appended_in_blocks_and_taken_as_their_bytes_in_parts() {
        use gregor_protocol::record::write_record;

        let mut log = Log { next: MIN_BLOCK, ..Log::default() };
        let mut spent = Spent::default();
        let value = |i: u8| vec![i; 400];
        let mut expected = BytesMut::new();
        for i in 0..7u8 {
            let v = value(i);
            let len = gregor_protocol::record::size_of_record(i32::from(i), 0, None, Some(&v), &[]);
            log.push_record(len, &mut spent, |buf| write_record(buf, i32::from(i), 0, None, Some(&v), &[])).unwrap();
            write_record(&mut expected, i32::from(i), 0, None, Some(&v), &[]).unwrap();
        }
        assert_eq!(log.len(), 7);
        assert!(log.blocks.len() >= 3, "{} blocks", log.blocks.len());
        let blocks: Vec<_> = log.blocks.iter().map(|b| b.bytes.as_ptr()).collect();
        let parts = log.take_records(5, &mut spent);
        assert_eq!(
            parts.iter().map(|p| p.as_ptr()).collect::<Vec<_>>(),
            blocks[..parts.len()],
            "the blocks' own bytes"
        );
        let joined: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        let rest: Vec<u8> = log.take_records(9, &mut spent).iter().flat_map(|p| p.iter().copied()).collect();
        assert_eq!([joined, rest].concat(), expected.to_vec(), "all of them, in order, at most what it holds");
        assert_eq!(log.len(), 0);
        // a record not written is not appended
        let refused: Result<(), &str> = log.push_record(10, &mut spent, |_| Err("no"));
        assert!(refused.is_err());
        assert_eq!((log.len(), log.used()), (0, expected.len()), "its bytes not counted");
    }

    #[test]
    fn a_spent_block_is_used_again_once_its_batches_are_gone() {
        let mut log = Log { next: MAX_BLOCK, ..Log::default() };
        let mut spent = Spent::default();
        let m = message(8000, b'x'); // 8,026 bytes: 8 to a block
        for _ in 0..8 {
            log.push(m.as_bytes(), &mut spent);
        }
        let first_block = log.blocks[0].bytes.as_ptr();
        log.push(m.as_bytes(), &mut spent); // the 9th starts a second block
        let batch = log.take(8, &mut spent).unwrap();
        assert_eq!(batch.as_bytes().as_ptr(), first_block);
        assert_eq!(spent.len(), 1, "the first block is spent, its batch alive");
        for _ in 0..7 {
            log.push(m.as_bytes(), &mut spent);
        }
        // a third block while the first block's batch lives: a new one
        log.push(m.as_bytes(), &mut spent);
        assert_ne!(log.blocks.back().unwrap().bytes.as_ptr(), first_block);
        drop(batch);
        spent.batch_gone();
        let _second = log.take(8, &mut spent).unwrap();
        for _ in 0..8 {
            log.push(m.as_bytes(), &mut spent);
        }
        // the fourth block is the first one again: its batch is gone
        assert_eq!(log.blocks.back().unwrap().bytes.as_ptr(), first_block);
        assert_eq!(log.len(), 9);
        let all = log.take(9, &mut spent).unwrap();
        assert_eq!(messages(&all).collect::<Vec<_>>(), vec![m; 9]);
    }

    /// A batch across blocks keeps each of them alive (not a copy): they are used again only
    /// once it is gone.
    #[test]
    fn blocks_a_batch_spans_are_used_again_once_the_batch_is_gone() {
        let mut log = Log { next: MAX_BLOCK, ..Log::default() };
        let mut spent = Spent::default();
        let m = message(30_000, 1); // 30,026 bytes each: two to a block
        for _ in 0..6 {
            log.push(m.as_bytes(), &mut spent);
        }
        let blocks: Vec<_> = log.blocks.iter().map(|b| b.bytes.as_ptr()).collect();
        let first = log.take(3, &mut spent).unwrap();
        assert_eq!(first.parts().iter().map(|p| p.as_ptr()).collect::<Vec<_>>(), blocks[..2]);
        assert_eq!(messages(&first).collect::<Vec<_>>(), vec![m.clone(); 3]);
        assert_eq!(spent.len(), 1, "the first block is spent");
        let second = log.take(3, &mut spent).unwrap();
        assert_eq!(second.parts().len(), 2);
        for _ in 0..2 {
            log.push(m.as_bytes(), &mut spent);
        }
        assert!(!blocks.contains(&log.blocks.back().unwrap().bytes.as_ptr()), "the first batch lives: a new block");
        drop(first);
        spent.batch_gone();
        for _ in 0..2 {
            log.push(m.as_bytes(), &mut spent);
        }
        assert_eq!(log.blocks.back().unwrap().bytes.as_ptr(), blocks[0], "the first block again");
        assert_eq!(messages(&second).collect::<Vec<_>>(), vec![m.clone(); 3], "the second is untouched");
        let rest = log.len();
        assert_eq!(messages(&log.take(rest, &mut spent).unwrap()).collect::<Vec<_>>(), vec![m; 4]);
        log.release(&mut spent);
    }

    #[test]
    fn a_block_spent_after_its_batches_are_gone_is_used_again_at_once() {
        let mut log = Log { next: MAX_BLOCK, ..Log::default() };
        let mut spent = Spent::default();
        let m = message(30_000, 1); // 30,026 bytes each: two to a block, every block 64 KiB
        log.push(m.as_bytes(), &mut spent);
        log.push(m.as_bytes(), &mut spent);
        let block = log.blocks[0].bytes.as_ptr();
        // its entries taken and their batch gone, but the block is still the one appended to
        drop(log.take(2, &mut spent).unwrap());
        // the third needs a new block: the emptied one is spent free and taken again
        log.push(m.as_bytes(), &mut spent);
        assert_eq!(spent.len(), 0);
        assert_eq!(log.blocks.back().unwrap().bytes.as_ptr(), block, "the same allocation");
    }

    #[test]
    fn a_look_that_found_no_free_block_is_not_repeated_until_a_batch_is_gone() {
        let mut log = Log { next: MAX_BLOCK, ..Log::default() };
        let mut spent = Spent::default();
        let m = message(30_000, 1); // 30,026 bytes each: two to a block, every block 64 KiB
        for _ in 0..4 {
            log.push(m.as_bytes(), &mut spent);
        }
        let first = log.blocks[0].bytes.as_ptr();
        let batch = log.take(2, &mut spent).unwrap();
        assert_eq!(spent.len(), 1, "the first block is spent, its batch alive");
        log.push(m.as_bytes(), &mut spent); // a look: none free, a new block
        drop(batch);
        log.push(m.as_bytes(), &mut spent);
        log.push(m.as_bytes(), &mut spent); // nobody said a batch went: no look, a new block
        assert_ne!(log.blocks.back().unwrap().bytes.as_ptr(), first);
        spent.batch_gone();
        log.push(m.as_bytes(), &mut spent);
        log.push(m.as_bytes(), &mut spent); // a look: the first block is free
        assert_eq!(log.blocks.back().unwrap().bytes.as_ptr(), first);
    }

    #[test]
    fn a_block_a_batch_emptied_is_spent_when_the_next_entry_needs_a_new_one() {
        let mut log = Log::default();
        let mut spent = Spent::default();
        let m = message(386, 1); // 412 bytes each: two to a 1 KiB block
        log.push(m.as_bytes(), &mut spent);
        log.push(m.as_bytes(), &mut spent);
        let first = log.take(2, &mut spent).unwrap();
        log.push(m.as_bytes(), &mut spent);
        assert_eq!((log.blocks.len(), spent.len()), (1, 1), "the emptied block is spent");
        let second = log.take(1, &mut spent).unwrap();
        assert_eq!(second.as_bytes().as_ptr(), log.blocks[0].bytes.as_ptr().wrapping_sub(second.len()));
        assert_eq!(messages(&first).collect::<Vec<_>>(), vec![m.clone(), m.clone()]);
        assert_eq!(messages(&second).collect::<Vec<_>>(), vec![m]);
    }

    #[test]
    fn messages_stop_at_anything_that_is_not_an_entry() {
        let ms: Vec<EncodedMessage> = (0..3).map(|i| message(5, i)).collect();
        let set = expected(&ms);
        assert_eq!(messages(&MessageSet::from_bytes(set.slice(..set.len() - 1))).collect::<Vec<_>>(), ms[..2]);
        let mut negative = set.to_vec();
        negative[8..12].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(messages(&MessageSet::from_bytes(negative.into())).next().is_none());
    }

    /// What a batch in flight sent (compressed, a RecordBatch v2, or plain) gives back the
    /// records it was built from, keys and values as they were.
    #[test]
    fn plain_of_reads_the_records_back_from_any_set_a_batch_is_sent_as() {
        use gregor_protocol::record::RecordBatchBuilder;
        use gregor_protocol::Compression;

        let ms: Vec<EncodedMessage> = (0..5)
            .map(|i| {
                let key = (i % 2 == 0).then(|| Bytes::from(format!("k{i}")));
                EncodedMessage::encode(&Message::new(key, Some(Bytes::from(vec![b'a' + i; 30])))).unwrap()
            })
            .collect();
        let plain = MessageSet::from_encoded(&ms, Compression::None).unwrap();
        let same = plain_of(&plain).unwrap();
        assert_eq!(same.as_bytes().as_ptr(), plain.as_bytes().as_ptr(), "a plain set is its own, not a copy");
        let bytes = plain.as_bytes();
        let cut = 12 + ms[0].len() + 12 + ms[1].len();
        let in_parts = MessageSet::from_parts([bytes.slice(..cut), bytes.slice(cut..)]);
        assert_eq!(plain_of(&in_parts).unwrap().parts().len(), 2, "a plain set in parts is its own too");
        assert_eq!(messages(&in_parts).collect::<Vec<_>>(), ms, "read across its parts");
        assert_eq!(records_of(&in_parts).unwrap(), records_of(&plain).unwrap());
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let back = plain_of(&plain.compress(codec).unwrap()).unwrap();
            assert_eq!(back.as_bytes(), plain.as_bytes(), "{codec:?}");
        }
        // kept in a producer's blocks, a wrapper across two of them (values that do not
        // compress, so that it is larger than the room left in the first block)
        let noise: Vec<EncodedMessage> = (0..60u32)
            .map(|i| {
                let value: Vec<u8> =
                    (0..100u32).map(|j| ((i * 100 + j).wrapping_mul(2_654_435_761) >> 24) as u8).collect();
                EncodedMessage::encode(&Message::new(None, Some(Bytes::from(value)))).unwrap()
            })
            .collect();
        let noisy = MessageSet::from_encoded(&noise, Compression::None).unwrap();
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let blocks = crate::buffers::Blocks::default();
            let _filler = blocks.keep(&vec![0; crate::buffers::BLOCK - 2048]);
            let kept = noisy.compress_with(codec, |bytes| blocks.keep(bytes)).unwrap();
            assert_eq!(kept.parts().len(), 2, "{codec:?}: {} bytes", kept.len());
            assert_eq!(plain_of(&kept).unwrap().as_bytes(), noisy.as_bytes(), "{codec:?} across blocks");
        }
        for codec in [Compression::None, Compression::Snappy, Compression::Zstd] {
            let mut builder = RecordBatchBuilder::new(codec);
            for m in &ms {
                let m = m.to_message();
                builder.append(1_700_000_000_000, m.key.as_deref(), m.value.as_deref()).unwrap();
            }
            let v2 = MessageSet::from_bytes(builder.finish().unwrap());
            assert_eq!(messages(&plain_of(&v2).unwrap()).collect::<Vec<_>>(), ms, "v2 {codec:?}");
        }
        // a wrapper whose payload was damaged (its CRC no longer matches)
        let mut damaged = plain.compress(Compression::Snappy).unwrap().into_bytes().to_vec();
        let last = damaged.len() - 1;
        damaged[last] ^= 0xff;
        assert!(plain_of(&MessageSet::from_bytes(Bytes::from(damaged))).is_none(), "unreadable");
    }
}

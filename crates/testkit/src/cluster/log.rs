//! One replica's log of one partition, and the broker's append path — pure code.
//!
//! Kafka 0.8.2's append (`Log.append`, `ByteBufferMessageSet.validateMessagesAndAssignOffsets`):
//! each top-level entry is checked against `max.message.bytes` (offset + size + message) and
//! its CRC; a partial trailing entry is dropped; an uncompressed set gets offsets written in
//! place; a set holding any compressed wrapper is expanded and recompressed as ONE wrapper of
//! the last codec seen, whose offset is the last absolute inner offset.

use std::time::SystemTime;

use bytes::{BufMut, Bytes, BytesMut};
use gregor_protocol::message::{DecodeOptions, ENTRY_HEADER_SIZE};
use gregor_protocol::{compression, Compression, ErrorCode, Message, MessageAndOffset, MessageSet, MessageView};

/// A top-level entry of copied bytes: its first and last offset, and where it starts.
pub(crate) type EntrySpan = (i64, i64, usize);

/// A top-level entry's place in the log.
#[derive(Debug, Clone, Copy)]
struct Entry {
    first_offset: i64,
    last_offset: i64,
    pos: usize,
}

/// A log's entries in order, in chunks of [`INDEX_CHUNK`] that never move: one growing `Vec`
/// copied the whole index at every doubling (an uncompressed set has an entry per message: 24
/// MiB for a million), into fresh memory, under the cluster's lock. Measured with a temporary
/// build: single appends of 250 KB taking 35-118 ms, each with about 6,200 page faults (24 MiB),
/// and the replicator's step up to 149 ms with 12,558; every client's produce latency stalled
/// for 100-300 ms meanwhile.
#[derive(Debug, Default)]
struct Index {
    /// Every chunk but the last holds exactly `INDEX_CHUNK` entries.
    chunks: Vec<Vec<Entry>>,
}

const INDEX_CHUNK: usize = 16 * 1024;

impl Index {
    fn len(&self) -> usize {
        self.chunks.last().map_or(0, |c| (self.chunks.len() - 1) * INDEX_CHUNK + c.len())
    }

    fn push(&mut self, e: Entry) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < INDEX_CHUNK => c.push(e),
            _ => {
                let mut c = Vec::with_capacity(INDEX_CHUNK);
                c.push(e);
                self.chunks.push(c);
            }
        }
    }

    fn get(&self, i: usize) -> Option<&Entry> {
        self.chunks.get(i / INDEX_CHUNK)?.get(i % INDEX_CHUNK)
    }

    /// The number of leading entries with `last_offset < offset` (offsets ascend).
    fn before(&self, offset: i64) -> usize {
        let whole = self.chunks.partition_point(|c| c.last().is_some_and(|e| e.last_offset < offset));
        match self.chunks.get(whole) {
            // the chunks before it are full
            Some(c) => whole * INDEX_CHUNK + c.partition_point(|e| e.last_offset < offset),
            None => self.len(),
        }
    }

    fn iter_from(&self, i: usize) -> impl Iterator<Item = &Entry> {
        let (chunk, at) = (i / INDEX_CHUNK, i % INDEX_CHUNK);
        self.chunks
            .iter()
            .skip(chunk)
            .enumerate()
            .flat_map(move |(k, c)| c[if k == 0 { at.min(c.len()) } else { 0 }..].iter())
    }

    fn truncate(&mut self, n: usize) {
        if n >= self.len() {
            return;
        }
        self.chunks.truncate(n.div_ceil(INDEX_CHUNK));
        if let Some(c) = self.chunks.last_mut() {
            c.truncate(n - (n.div_ceil(INDEX_CHUNK) - 1) * INDEX_CHUNK);
        }
    }
}

/// A replica's log: the entries' bytes back to back, as a segment file holds them.
#[derive(Debug)]
pub(crate) struct PartitionLog {
    data: Segments,
    index: Index,
    leo: i64,
    /// Time of the last append (a 0.8 segment's mtime, used by Offsets with a time).
    pub(crate) modified: SystemTime,
}

/// A message set ready to append: entries with their final offsets.
#[derive(Debug)]
pub(crate) struct ValidatedSet {
    bytes: Bytes,
    entries: Vec<(i64, i64, usize)>,
    /// Number of messages (inner messages counted one by one).
    pub(crate) count: i64,
}

impl ValidatedSet {
    /// A set of `count` records in `bytes`, whose top-level entries are (first offset, last
    /// offset, position in `bytes`).
    pub(crate) fn new(bytes: Bytes, entries: Vec<(i64, i64, usize)>, count: i64) -> ValidatedSet {
        ValidatedSet { bytes, entries, count }
    }

    /// The bytes to append.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> &Bytes {
        &self.bytes
    }
}

/// A log's bytes in segments that never move: appending never copies what is already there
/// (one growing `Vec` copied the whole log at every doubling, tens of milliseconds for a
/// 100 MB log, under the cluster's lock). Segments grow from 64 KiB to 4 MiB.
#[derive(Debug, Default)]
struct Segments {
    /// (position of the first byte, bytes), in order; only the last one is appended to.
    segments: Vec<(usize, Vec<u8>)>,
    len: usize,
}

const FIRST_SEGMENT: usize = 64 * 1024;
const MAX_SEGMENT: usize = 4 * 1024 * 1024;

/// Segment buffers of dropped logs (a deleted topic, a truncated follower), kept for the next
/// logs, up to [`POOL_BYTES`] in all. A fresh buffer's pages are mapped and zeroed by the kernel
/// as the log first writes them: a page fault per 4 KiB, which perf put at about a fifth of
/// the cluster's CPU in a benchmark that deletes every run's topic. A reused buffer's pages
/// are in place already.
static POOL: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
const POOL_BYTES: usize = 512 * 1024 * 1024;

/// A buffer of `size` bytes' capacity, from the pool when it has one.
fn segment(size: usize) -> Vec<u8> {
    let mut pool = POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match pool.iter().rposition(|b| b.capacity() == size) {
        Some(i) => pool.swap_remove(i),
        None => Vec::with_capacity(size),
    }
}

/// Gives dropped segment buffers to the pool, as far as it has room.
fn recycle(buffers: impl Iterator<Item = Vec<u8>>) {
    let mut freed = Vec::new();
    let mut pool = POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut held: usize = pool.iter().map(Vec::capacity).sum();
    for mut b in buffers {
        if b.capacity() < FIRST_SEGMENT || held + b.capacity() > POOL_BYTES {
            freed.push(b);
            continue;
        }
        held += b.capacity();
        b.clear();
        pool.push(b);
    }
    // the rest go back to the allocator once the pool is unlocked (a log taking a segment
    // from it does so under the cluster's lock)
    drop(pool);
    drop(freed);
}

impl Drop for Segments {
    fn drop(&mut self) {
        recycle(self.segments.drain(..).map(|(_, b)| b));
    }
}

impl Segments {
    fn len(&self) -> usize {
        self.len
    }

    fn extend(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let full = self.segments.last().is_none_or(|(_, s)| s.len() == s.capacity());
            if full {
                let size = self.segments.last().map_or(FIRST_SEGMENT, |(_, s)| (s.capacity() * 2).min(MAX_SEGMENT));
                self.segments.push((self.len, segment(size)));
            }
            let (_, last) = self.segments.last_mut().expect("pushed above");
            let n = (last.capacity() - last.len()).min(bytes.len());
            last.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            self.len += n;
        }
    }

    /// A copy of the bytes at positions `from..to` (within the length).
    fn copy(&self, from: usize, to: usize) -> Bytes {
        let to = to.min(self.len);
        if from >= to {
            return Bytes::new();
        }
        let mut out = BytesMut::with_capacity(to - from);
        let mut i = self.segments.partition_point(|(start, _)| *start <= from).saturating_sub(1);
        let mut pos = from;
        while pos < to {
            let (start, segment) = &self.segments[i];
            let at = pos - start;
            let n = (segment.len() - at).min(to - pos);
            out.extend_from_slice(&segment[at..at + n]);
            pos += n;
            i += 1;
        }
        out.freeze()
    }

    /// Keeps the first `len` bytes.
    fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        let keep = self.segments.partition_point(|(start, _)| *start < len);
        recycle(self.segments.drain(keep..).map(|(_, b)| b));
        if let Some((start, last)) = self.segments.last_mut() {
            last.truncate(len - *start);
        }
        self.len = len;
    }
}

impl PartitionLog {
    pub(crate) fn new() -> PartitionLog {
        PartitionLog { data: Segments::default(), index: Index::default(), leo: 0, modified: SystemTime::now() }
    }

    /// Log end offset: the offset the next message gets.
    pub(crate) fn leo(&self) -> i64 {
        self.leo
    }

    /// Appends a validated set; returns the first offset it got.
    pub(crate) fn append(&mut self, set: &ValidatedSet) -> i64 {
        let base = self.data.len();
        let first = self.leo;
        self.data.extend(&set.bytes);
        for &(f, l, pos) in &set.entries {
            self.index.push(Entry { first_offset: f, last_offset: l, pos: base + pos });
        }
        self.leo += set.count;
        self.modified = SystemTime::now();
        first
    }

    /// Copies the entries at and after `from` (a follower's fetch); returns bytes, their
    /// entries and the new log end offset they reach.
    pub(crate) fn entries_from(&self, from: i64) -> Option<(Bytes, Vec<EntrySpan>, i64)> {
        let start = self.index.before(from);
        let first = self.index.get(start)?;
        let bytes = self.data.copy(first.pos, self.data.len());
        let entries = self.index.iter_from(start).map(|e| (e.first_offset, e.last_offset, e.pos - first.pos)).collect();
        Some((bytes, entries, self.leo))
    }

    /// Appends what [`PartitionLog::entries_from`] returned from the leader.
    pub(crate) fn append_replicated(&mut self, bytes: &[u8], entries: &[EntrySpan], leo: i64) {
        let base = self.data.len();
        self.data.extend(bytes);
        for &(f, l, pos) in entries {
            self.index.push(Entry { first_offset: f, last_offset: l, pos: base + pos });
        }
        self.leo = leo;
        self.modified = SystemTime::now();
    }

    /// Drops everything at and above `offset` (a restarted follower truncates to its high
    /// watermark before fetching again). Whole entries only.
    pub(crate) fn truncate_to(&mut self, offset: i64) {
        let keep = self.index.before(offset);
        if let Some(e) = self.index.get(keep) {
            self.data.truncate(e.pos);
            self.leo = e.first_offset;
        }
        self.index.truncate(keep);
    }

    /// Reads for a consumer: the bytes from the entry holding `offset`, no further than the
    /// entries below `visible_end` (the high watermark), cut at `max_bytes` exactly as Kafka
    /// cuts a segment read (the set may end in a partial entry).
    pub(crate) fn read(&self, offset: i64, max_bytes: usize, visible_end: i64) -> Bytes {
        let start = self.index.before(offset);
        let end = self.index.before(visible_end);
        let Some(first) = self.index.get(start).filter(|_| start < end) else {
            return Bytes::new();
        };
        let from = first.pos;
        let to = self.index.get(end).map_or(self.data.len(), |e| e.pos);
        let to = to.min(from + max_bytes);
        self.data.copy(from, to)
    }

    /// As [`PartitionLog::read`], but a first entry larger than `max_bytes` comes whole (Fetch
    /// v3+, KIP-74: a consumer always gets at least one batch, so it can make progress).
    pub(crate) fn read_at_least_one(&self, offset: i64, max_bytes: usize, visible_end: i64) -> Bytes {
        let start = self.index.before(offset);
        let first_size = match (self.index.get(start), self.index.get(start + 1)) {
            (Some(a), Some(b)) => b.pos - a.pos,
            (Some(a), None) => self.data.len() - a.pos,
            _ => 0,
        };
        self.read(offset, max_bytes.max(first_size), visible_end)
    }

    /// Offsets before a time, as 0.8.2's `Log.getOffsetsBefore` computes them with this log as
    /// one segment based at 0: -1 = latest, -2 = earliest, else segment boundaries last modified
    /// at or before the time; newest first, at most `max`.
    pub(crate) fn offsets_before(&self, time: i64, max: usize) -> Vec<i64> {
        // (offset, last modified ms) per segment, plus the log end if the active segment is
        // not empty
        let mtime = self.modified.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        let mut points = vec![(0i64, mtime)];
        if self.leo > 0 {
            let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
            points.push((self.leo, now));
        }
        let start = match time {
            -1 => points.len() as i64 - 1,
            -2 => 0,
            t => points.iter().rposition(|p| p.1 <= t).map_or(-1, |i| i as i64),
        };
        let mut out = Vec::new();
        let mut i = start;
        while i >= 0 && out.len() < max {
            out.push(points[i as usize].0);
            i -= 1;
        }
        out
    }
}

/// Validates a produced set and assigns offsets from `next_offset`, as the leader's append does.
///
/// Errors are the codes Kafka answers: 10 MessageSizeTooLarge for an entry (offset + size +
/// message) over `max_message_bytes`, 2 InvalidMessage for a CRC or format error.
/// The deflate level of the gzip wrappers the fake writes when it recompresses a set. A real
/// 0.8.2 broker uses Java's default, 6; the fake uses the fastest level so that its CPU does
/// not cap what clients can send on a small machine (a 2-core benchmark run spent as much CPU
/// in the fake's level-6 recompression as in the producing client). Clients see the same
/// messages and offsets in a valid gzip member of the same layout; only its size differs
/// (larger by about a third for 100-byte text records).
const RECOMPRESS_GZIP_LEVEL: u32 = 1;

pub(crate) fn validate_and_assign(
    set: &MessageSet,
    next_offset: i64,
    max_message_bytes: usize,
) -> Result<ValidatedSet, ErrorCode> {
    let raw = set.as_bytes();
    // where each entry's size field starts and its message ends in `raw`; checked in place
    // (CRC, magic, layout), so an uncompressed set costs no handle per message
    let mut spans: Vec<(usize, usize)> = Vec::new();
    // the wrappers among them: (index in `spans`, codec, value)
    let mut wrappers: Vec<(usize, Compression, Option<&[u8]>)> = Vec::new();
    let mut pos = 0;
    let mut codec = Compression::None;
    while raw.len() - pos >= ENTRY_HEADER_SIZE {
        let size = i32::from_be_bytes(raw[pos + 8..pos + 12].try_into().expect("4 bytes"));
        if size < 0 {
            return Err(ErrorCode::InvalidMessage);
        }
        let size = size as usize;
        if raw.len() - pos - ENTRY_HEADER_SIZE < size {
            break; // a partial trailing entry: dropped, as 0.8.2 does
        }
        if ENTRY_HEADER_SIZE + size > max_message_bytes {
            return Err(ErrorCode::MessageSizeTooLarge);
        }
        let message =
            MessageView::parse(&raw[pos + ENTRY_HEADER_SIZE..pos + ENTRY_HEADER_SIZE + size], Default::default)
                .map_err(|_| ErrorCode::InvalidMessage)?;
        let c = message.compression().map_err(|_| ErrorCode::InvalidMessage)?;
        if c != Compression::None {
            codec = c;
            wrappers.push((spans.len(), c, message.value));
        }
        spans.push((pos + 8, pos + ENTRY_HEADER_SIZE + size));
        pos += ENTRY_HEADER_SIZE + size;
    }
    let mut out = BytesMut::new();
    let mut entries = Vec::new();
    if codec == Compression::None {
        // offsets written in place, as 0.8.2 does: each entry's size and message bytes are
        // kept as they came (their CRC was checked above)
        out.reserve(pos);
        for (i, (from, to)) in spans.iter().enumerate() {
            let offset = next_offset + i as i64;
            let at = out.len();
            out.put_i64(offset);
            out.put_slice(&raw[*from..*to]);
            entries.push((offset, offset, at));
        }
        return Ok(ValidatedSet { bytes: out.freeze(), entries, count: spans.len() as i64 });
    }
    // a compressed set: every wrapper decompressed into one buffer of inner entries, each
    // checked in place (CRC, layout, no nested wrapper) and given its absolute offset where it
    // lies; an uncompressed message among the wrappers joins them as it is. Then the buffer is
    // compressed once more, as one wrapper of the last codec seen. (The inner messages are
    // not decoded and re-encoded: their bytes, and so their CRCs, do not change.)
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        let (inner, compressed) = &mut *scratch;
        inner.clear();
        compressed.clear();
        let mut starts: Vec<usize> = Vec::new();
        let mut budget = DecodeOptions::default().max_decompressed_bytes;
        let mut wrappers = wrappers.iter().peekable();
        for (i, &(from, to)) in spans.iter().enumerate() {
            let Some(&(_, codec, value)) = wrappers.next_if(|w| w.0 == i) else {
                starts.push(inner.len());
                inner.extend_from_slice(&raw[from - 8..to]);
                continue;
            };
            let value = value.ok_or(ErrorCode::InvalidMessage)?;
            // 0.8.2 decompresses in `assignOffsets`; an IOException there (a stream it cannot
            // read, such as an LZ4 frame with the standard header checksum) becomes a
            // KafkaException, answered -1 Unknown
            if codec == Compression::Lz4 && !kafka08_lz4_header(value) {
                return Err(ErrorCode::UnknownServerError);
            }
            let start = inner.len();
            compression::decompress(codec, value, budget, inner).map_err(|_| ErrorCode::UnknownServerError)?;
            budget -= inner.len() - start;
            let mut at = start;
            while inner.len() - at >= ENTRY_HEADER_SIZE {
                let size = i32::from_be_bytes(inner[at + 8..at + 12].try_into().expect("4 bytes"));
                let end = usize::try_from(size)
                    .ok()
                    .and_then(|size| (at + ENTRY_HEADER_SIZE).checked_add(size))
                    .filter(|end| *end <= inner.len())
                    .ok_or(ErrorCode::InvalidMessage)?;
                let message = MessageView::parse(&inner[at + ENTRY_HEADER_SIZE..end], Default::default)
                    .map_err(|_| ErrorCode::InvalidMessage)?;
                if message.is_wrapper() {
                    return Err(ErrorCode::InvalidMessage);
                }
                starts.push(at);
                at = end;
            }
            if at != inner.len() {
                // a wrapper's inner set ending in part of a message
                return Err(ErrorCode::InvalidMessage);
            }
        }
        let count = starts.len() as i64;
        if count == 0 {
            return Err(ErrorCode::InvalidMessage);
        }
        for (i, at) in starts.iter().enumerate() {
            inner[*at..*at + 8].copy_from_slice(&(next_offset + i as i64).to_be_bytes());
        }
        let compressed_now = match codec {
            Compression::Gzip => compression::gzip::compress_level(inner, RECOMPRESS_GZIP_LEVEL, compressed),
            _ => compression::compress(codec, inner, compressed),
        };
        compressed_now.map_err(|_| ErrorCode::InvalidMessage)?;
        let wrapper =
            Message { attributes: codec.attribute_bits(), key: None, value: Some(Bytes::copy_from_slice(compressed)) };
        if ENTRY_HEADER_SIZE + wrapper.encoded_len() > max_message_bytes {
            return Err(ErrorCode::MessageSizeTooLarge);
        }
        let last = next_offset + count - 1;
        let bytes = MessageSet::encode(&[MessageAndOffset::new(last, wrapper)])
            .map_err(|_| ErrorCode::InvalidMessage)?
            .into_bytes();
        entries.push((next_offset, last, 0));
        if inner.capacity() > SCRATCH_KEEP {
            *inner = Vec::new();
        }
        if compressed.capacity() > SCRATCH_KEEP {
            *compressed = Vec::new();
        }
        Ok(ValidatedSet { bytes, entries, count })
    })
}

/// Bytes a cluster thread keeps in its scratch buffers between compressed sets.
const SCRATCH_KEEP: usize = 4 << 20;

thread_local! {
    /// A compressed set's inner entries and their recompressed form, reused from set to set
    /// (two fresh buffers per set cost page faults: the kernel zeroing and mapping pages that
    /// the allocator had given back).
    static SCRATCH: std::cell::RefCell<(Vec<u8>, Vec<u8>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Whether an LZ4 frame starts as Kafka 0.8.2's `KafkaLZ4BlockInputStream` requires: the
/// magic, FLG, BD and a header checksum byte computed over magic + FLG + BD (KAFKA-3160), not
/// over FLG + BD as the LZ4 specification (and modern libraries) do.
fn kafka08_lz4_header(frame: &[u8]) -> bool {
    frame.len() >= 7 && frame[..4] == [0x04, 0x22, 0x4d, 0x18] && frame[6] == xxh32_short(&frame[..6]).to_le_bytes()[1]
}

/// xxHash32 with seed 0 of an input shorter than 16 bytes.
fn xxh32_short(input: &[u8]) -> u32 {
    const P1: u32 = 2_654_435_761;
    const P2: u32 = 2_246_822_519;
    const P3: u32 = 3_266_489_917;
    const P4: u32 = 668_265_263;
    const P5: u32 = 374_761_393;
    debug_assert!(input.len() < 16);
    let mut h = P5.wrapping_add(input.len() as u32);
    let mut words = input.chunks_exact(4);
    for w in &mut words {
        let k = u32::from_le_bytes(w.try_into().expect("4 bytes"));
        h = h.wrapping_add(k.wrapping_mul(P3)).rotate_left(17).wrapping_mul(P4);
    }
    for &b in words.remainder() {
        h = h.wrapping_add(u32::from(b).wrapping_mul(P5)).rotate_left(11).wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(v: &str) -> Message {
        Message::new(None, Some(Bytes::copy_from_slice(v.as_bytes())))
    }

    /// Segments behave as one `Vec<u8>` under appends of every size, copies across segment
    /// boundaries and truncations (a seeded xorshift drives it; the model is a plain Vec).
    /// The chunked index answers as one `Vec` of the same entries would, across chunk
    /// boundaries: lookups, reads from an entry on, and truncation.
    #[test]
    fn the_index_behaves_as_one_vec() {
        let mut index = Index::default();
        let mut vec = Vec::new();
        // entries of 1 to 3 offsets, so offsets and positions differ
        let mut offset = 0i64;
        for i in 0..(2 * INDEX_CHUNK + 100) {
            let n = 1 + (i % 3) as i64;
            let e = Entry { first_offset: offset, last_offset: offset + n - 1, pos: i * 10 };
            offset += n;
            index.push(Entry { ..e });
            vec.push(e);
        }
        let check = |index: &Index, vec: &Vec<Entry>| {
            assert_eq!(index.len(), vec.len());
            let last = vec.last().map_or(0, |e| e.last_offset + 2);
            for o in (0..last).step_by(97).chain([INDEX_CHUNK as i64 * 2 - 1, INDEX_CHUNK as i64 * 2, last]) {
                let at = vec.partition_point(|e| e.last_offset < o);
                assert_eq!(index.before(o), at, "before({o})");
                assert_eq!(index.get(at).map(|e| e.pos), vec.get(at).map(|e| e.pos));
                let from: Vec<usize> = index.iter_from(at).map(|e| e.pos).collect();
                let want: Vec<usize> = vec[at..].iter().map(|e| e.pos).collect();
                assert_eq!(from, want, "iter_from({at})");
            }
        };
        check(&index, &vec);
        for n in [2 * INDEX_CHUNK + 50, 2 * INDEX_CHUNK, INDEX_CHUNK + 1, INDEX_CHUNK, 7, 0] {
            index.truncate(n);
            vec.truncate(n);
            check(&index, &vec);
        }
        index.push(Entry { first_offset: 0, last_offset: 0, pos: 0 });
        assert_eq!((index.len(), index.before(1)), (1, 1));
    }

    #[test]
    fn segments_behave_as_one_vec() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut segments = Segments::default();
        let mut model: Vec<u8> = Vec::new();
        for round in 0..400 {
            match next(10) {
                0 if !model.is_empty() => {
                    let len = next(model.len() + 1);
                    segments.truncate(len);
                    model.truncate(len);
                }
                _ => {
                    // mostly small appends, sometimes one larger than a whole segment
                    let n = if next(20) == 0 { MAX_SEGMENT + next(100_000) } else { next(200_000) };
                    let bytes: Vec<u8> = (0..n).map(|i| (i + round) as u8).collect();
                    segments.extend(&bytes);
                    model.extend_from_slice(&bytes);
                }
            }
            assert_eq!(segments.len(), model.len());
            for _ in 0..4 {
                let from = next(model.len() + 1);
                let to = from + next(model.len() - from + 1);
                assert!(segments.copy(from, to) == model[from..to], "round {round}: {from}..{to}");
            }
        }
        assert!(segments.segments.iter().all(|(_, s)| s.capacity() <= MAX_SEGMENT.max(s.len())));
    }

    #[test]
    fn plain_sets_get_offsets_in_place_and_reads_cut_at_max_bytes() {
        let mut log = PartitionLog::new();
        let set = MessageSet::from_messages(vec![msg("a"), msg("b"), msg("c")], Compression::None).unwrap();
        let v = validate_and_assign(&set, log.leo(), 1000).unwrap();
        assert_eq!(log.append(&v), 0);
        let v = validate_and_assign(&set, log.leo(), 1000).unwrap();
        assert_eq!(log.append(&v), 3);
        assert_eq!(log.leo(), 6);
        let all = MessageSet::from_bytes(log.read(2, 1 << 20, 6)).decode(&DecodeOptions::default()).unwrap();
        assert_eq!(all.messages.iter().map(|m| m.offset).collect::<Vec<_>>(), vec![2, 3, 4, 5]);
        let cut = log.read(0, 40, 6);
        assert_eq!(cut.len(), 40);
        let hw_bound = MessageSet::from_bytes(log.read(0, 1 << 20, 4)).decode(&DecodeOptions::default()).unwrap();
        assert_eq!(hw_bound.messages.len(), 4);
        assert!(log.read(6, 100, 6).is_empty());
    }

    #[test]
    fn mixed_sets_become_one_wrapper_of_the_last_codec_with_absolute_offsets() {
        let gz = MessageSet::wrap(
            &[MessageAndOffset::new(0, msg("g1")), MessageAndOffset::new(1, msg("g2"))],
            Compression::Gzip,
        )
        .unwrap();
        let sn = MessageSet::wrap(&[MessageAndOffset::new(0, msg("s1"))], Compression::Snappy).unwrap();
        let set = MessageSet::encode(&[MessageAndOffset::new(0, msg("p")), gz, sn]).unwrap();
        let mut log = PartitionLog::new();
        log.append(
            &validate_and_assign(&MessageSet::from_messages(vec![msg("x")], Compression::None).unwrap(), 0, 1000)
                .unwrap(),
        );
        let v = validate_and_assign(&set, log.leo(), 10_000).unwrap();
        assert_eq!(v.count, 4);
        assert_eq!(log.append(&v), 1);
        let read = MessageSet::from_bytes(log.read(1, 1 << 20, 5));
        let top: Vec<_> = read.entries().map(Result::unwrap).collect();
        assert_eq!(top.len(), 1);
        assert_eq!(top[0].offset, 4);
        assert_eq!(top[0].message.compression().unwrap(), Compression::Snappy);
        let inner = read.decode(&DecodeOptions::default()).unwrap();
        assert_eq!(inner.messages.iter().map(|m| m.offset).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    }

    #[test]
    fn dropped_segments_are_reused() {
        // a size no log asks for, so that tests running alongside do not take the buffer
        let size = 3 * FIRST_SEGMENT;
        let mut b = segment(size);
        b.extend_from_slice(b"old bytes");
        let at = b.as_ptr();
        recycle(std::iter::once(b));
        let again = segment(size);
        assert_eq!((again.as_ptr(), again.len(), again.capacity()), (at, 0, size));
        // a small buffer is not kept
        let small = Vec::with_capacity(FIRST_SEGMENT - 1);
        let small_at = small.as_ptr();
        recycle(std::iter::once(small));
        assert!(POOL.lock().unwrap().iter().all(|b| b.as_ptr() != small_at));
    }

    #[test]
    fn compressed_sets_keep_every_message_and_get_absolute_offsets_for_every_codec() {
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            for n in [1usize, 2, 7, 300] {
                // keys, null values and empty values among them
                let messages: Vec<Message> = (0..n)
                    .map(|i| match i % 3 {
                        0 => Message::new(
                            Some(Bytes::from(format!("k{i}"))),
                            Some(Bytes::from(format!("v{i}").repeat(i % 5))),
                        ),
                        1 => Message::new(None, None),
                        _ => msg(&format!("value {i}")),
                    })
                    .collect();
                let set = MessageSet::from_messages(messages.clone(), codec).unwrap();
                let v = validate_and_assign(&set, 1000, 1 << 20).unwrap();
                assert_eq!(v.count, n as i64);
                assert_eq!(v.entries, vec![(1000, 1000 + n as i64 - 1, 0)]);
                let out = MessageSet::from_bytes(v.bytes.clone());
                let top: Vec<_> = out.entries().map(Result::unwrap).collect();
                assert_eq!(top.len(), 1, "{codec} n={n}");
                assert_eq!(top[0].offset, 1000 + n as i64 - 1);
                assert_eq!(top[0].message.compression().unwrap(), codec);
                let inner = out.decode(&DecodeOptions::default()).unwrap();
                assert_eq!(
                    inner.messages.iter().map(|m| m.offset).collect::<Vec<_>>(),
                    (1000..1000 + n as i64).collect::<Vec<_>>()
                );
                assert_eq!(
                    inner.messages.into_iter().map(|m| m.message).collect::<Vec<_>>(),
                    messages,
                    "{codec} n={n}"
                );
            }
        }
    }

    #[test]
    fn broken_compressed_sets_get_kafkas_codes() {
        let wrap = |inner: &[u8], codec: Compression| {
            let mut compressed = Vec::new();
            compression::compress(codec, inner, &mut compressed).unwrap();
            let wrapper = Message { attributes: codec.attribute_bits(), key: None, value: Some(compressed.into()) };
            MessageSet::encode(&[MessageAndOffset::new(0, wrapper)]).unwrap()
        };
        let plain = MessageSet::from_messages(vec![msg("a"), msg("b")], Compression::None).unwrap();
        let raw = plain.as_bytes().to_vec();
        // intact, through the same path
        assert_eq!(validate_and_assign(&wrap(&raw, Compression::Snappy), 0, 1 << 20).unwrap().count, 2);
        // an inner message with a bad CRC
        let mut bad_crc = raw.clone();
        let last = bad_crc.len() - 1;
        bad_crc[last] ^= 1;
        assert_eq!(
            validate_and_assign(&wrap(&bad_crc, Compression::Snappy), 0, 1 << 20).unwrap_err(),
            ErrorCode::InvalidMessage
        );
        // an inner set ending in part of a message
        let cut = &raw[..raw.len() - 2];
        assert_eq!(
            validate_and_assign(&wrap(cut, Compression::Gzip), 0, 1 << 20).unwrap_err(),
            ErrorCode::InvalidMessage
        );
        // an inner size field pointing past the end
        let mut long = raw.clone();
        long[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(
            validate_and_assign(&wrap(&long, Compression::Gzip), 0, 1 << 20).unwrap_err(),
            ErrorCode::InvalidMessage
        );
        let mut negative = raw.clone();
        negative[8..12].copy_from_slice(&(-5i32).to_be_bytes());
        assert_eq!(
            validate_and_assign(&wrap(&negative, Compression::Lz4), 0, 1 << 20).unwrap_err(),
            ErrorCode::InvalidMessage
        );
        // a wrapper inside a wrapper
        let nested = wrap(&raw, Compression::Gzip);
        assert_eq!(
            validate_and_assign(&wrap(nested.as_bytes(), Compression::Snappy), 0, 1 << 20).unwrap_err(),
            ErrorCode::InvalidMessage
        );
        // no inner message at all
        assert_eq!(
            validate_and_assign(&wrap(&[], Compression::Snappy), 0, 1 << 20).unwrap_err(),
            ErrorCode::InvalidMessage
        );
        // a compressed stream that does not decompress: 0.8.2 answers Unknown
        let garbage = Message {
            attributes: Compression::Gzip.attribute_bits(),
            key: None,
            value: Some(Bytes::from_static(b"not gzip")),
        };
        let set = MessageSet::encode(&[MessageAndOffset::new(0, garbage)]).unwrap();
        assert_eq!(validate_and_assign(&set, 0, 1 << 20).unwrap_err(), ErrorCode::UnknownServerError);
        // an entry over the limit
        let big = MessageSet::from_messages((0..50).map(|i| msg(&format!("{i:>200}"))), Compression::Lz4).unwrap();
        assert!(big.len() < 2000);
        assert_eq!(validate_and_assign(&big, 0, big.len() - 1).unwrap_err(), ErrorCode::MessageSizeTooLarge);
    }

    #[test]
    fn too_large_and_corrupt_entries_get_kafkas_codes() {
        let set = MessageSet::from_messages(vec![msg(&"x".repeat(2000))], Compression::None).unwrap();
        assert_eq!(validate_and_assign(&set, 0, 1024).unwrap_err(), ErrorCode::MessageSizeTooLarge);
        let mut bad = set.as_bytes().to_vec();
        bad[12] ^= 0xff;
        assert_eq!(
            validate_and_assign(&MessageSet::from_bytes(bad.into()), 0, 1 << 20).unwrap_err(),
            ErrorCode::InvalidMessage
        );
    }

    #[test]
    fn lz4_frames_need_kafka_0_8s_header_checksum() {
        assert!(kafka08_lz4_header(&[0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x1a]));
        assert!(!kafka08_lz4_header(&[0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82]), "the standard checksum");
        assert_eq!(xxh32_short(&[0x60, 0x40]).to_le_bytes()[1], 0x82);
        assert_eq!(xxh32_short(b""), 0x02cc_5d05);
        let mut wrapper = MessageSet::wrap(&[MessageAndOffset::new(0, msg("a"))], Compression::Lz4).unwrap();
        let set = MessageSet::encode(std::slice::from_ref(&wrapper)).unwrap();
        assert_eq!(validate_and_assign(&set, 0, 1000).unwrap().count, 1);
        let mut value = wrapper.message.value.unwrap().to_vec();
        value[6] = 0x82; // the standard checksum, which 0.8.2 rejects
        wrapper.message.value = Some(value.into());
        let set = MessageSet::encode(&[wrapper]).unwrap();
        assert_eq!(validate_and_assign(&set, 0, 1000).unwrap_err(), ErrorCode::UnknownServerError);
    }

    #[test]
    fn partial_trailing_entry_is_dropped() {
        let set = MessageSet::from_messages(vec![msg("a"), msg("b")], Compression::None).unwrap();
        let cut = MessageSet::from_bytes(set.as_bytes().slice(..set.len() - 3));
        assert_eq!(validate_and_assign(&cut, 0, 1000).unwrap().count, 1);
    }

    #[test]
    fn offsets_before_follow_0_8_2() {
        let mut log = PartitionLog::new();
        assert_eq!(log.offsets_before(-1, 10), vec![0]);
        let set = MessageSet::from_messages((0..6).map(|i| msg(&i.to_string())), Compression::None).unwrap();
        log.append(&validate_and_assign(&set, 0, 1000).unwrap());
        assert_eq!(log.offsets_before(-1, 1), vec![6]);
        assert_eq!(log.offsets_before(-1, 10), vec![6, 0]);
        assert_eq!(log.offsets_before(-2, 1), vec![0]);
        assert_eq!(log.offsets_before(1000, 10), Vec::<i64>::new());
        assert_eq!(log.offsets_before(4_102_444_800_000, 10), vec![6, 0]);
    }

    #[test]
    fn followers_copy_entries_and_truncate() {
        let mut leader = PartitionLog::new();
        let set = MessageSet::from_messages(vec![msg("a"), msg("b")], Compression::Gzip).unwrap();
        leader.append(&validate_and_assign(&set, 0, 1000).unwrap());
        leader.append(&validate_and_assign(&set, 2, 1000).unwrap());
        let mut f = PartitionLog::new();
        let (b, e, leo) = leader.entries_from(0).unwrap();
        f.append_replicated(&b, &e, leo);
        assert_eq!(f.leo(), 4);
        assert_eq!(f.read(0, 1 << 20, 4), leader.read(0, 1 << 20, 4));
        f.truncate_to(2);
        assert_eq!(f.leo(), 2);
        let (b, e, leo) = leader.entries_from(2).unwrap();
        f.append_replicated(&b, &e, leo);
        assert_eq!(f.read(0, 1 << 20, 4), leader.read(0, 1 << 20, 4));
        assert!(leader.entries_from(4).is_none());
    }
}

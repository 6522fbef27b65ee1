//! Fetched records read lazily: the entries of a fetched blob checked as they came (sizes,
//! magic, CRC, codec) and kept compressed, their records decoded only as they are iterated,
//! through a streaming decompressor, so that a reader holds the wire bytes and a window of
//! their expansion, never a whole expanded wrapper or batch (the high-level consumer's
//! chunks).
//!
//! ```text
//!  LazyBatches (blob -> LazyBatch per entry: header, CRC checked, body still compressed;
//!               uncompressed messages v0/v1 in a row: one LazyBatch, a run, read again
//!               as iterated)
//!      └─ LazyRecords (the batches of a chunk, one budget) ──► StreamedRecords per batch
//!            └─ Decompressor::read_into(window) a step at a time; each record split off
//!               the window (key and value slices of it), the window refilled when read
//! ```
//!
//! The records, offsets and errors are the whole-set readers' ([`super::Batches`] for any
//! magic, [`crate::MessageSet::decode`] for the Message v0 of a Fetch v0/v1 answer) for every
//! input they accept; what differs is when an error inside a compressed body shows: after the
//! records before it, where the whole-set readers give it before any record. What is checked
//! without decompressing is checked up front, by [`LazyBatches`].
//!
//! Bounds: all the output of one [`LazyRecords`] counts against `max_decompressed_bytes`, as
//! for the whole-set readers; the window holds at most one step of output (32 KiB for gzip
//! and zstd, one block for snappy's xerial framing and lz4) plus the record being read, whose
//! bytes are allocated as they are decompressed, never from its length prefix. A compressed
//! message v1 wrapper is decompressed twice, in the same window: once to learn its last inner
//! offset, which its relative offsets need (Kafka's own reader holds every inner record for
//! it).

use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};

use super::batch::{BatchHeader, ATTRIBUTES_AT, BATCH_HEADER_SIZE, LENGTH_AT, LOG_OVERHEAD, MAGIC_AT};
use super::reader::{v2_record, Inner};
use super::{Headers, Record, TimestampType};
use crate::compression::stream::Decompressor;
use crate::compression::Compression;
use crate::error::{Error, MessageLocation, Result};
use crate::message::{DecodeOptions, LegacyHead, LegacyMessage, ENTRY_HEADER_SIZE, MAGIC_V1, MESSAGE_V0_OVERHEAD};
use crate::schema::varint;

/// Bytes up to and including the magic of any entry.
const HEADER_SIZE_UP_TO_MAGIC: usize = MAGIC_AT + 1;

/// The fewest bytes a v2 record takes (see [`super::Batches`]).
const MIN_RECORD_SIZE: usize = 7;

/// What a window buffer is first allocated with: the output of a decompression step lands in
/// it and the records read from it are slices of it (a new one is taken when the records of
/// the last one are still held).
pub const WINDOW_CAPACITY: usize = 64 * 1024;

/// Iterator over the entries of a fetched `records` blob, checked but not decompressed: each
/// a [`LazyBatch`], whose records [`LazyRecords`] decode through a streaming decompressor as
/// they are iterated.
///
/// [`LazyBatches::new`] reads any magic as [`super::Batches`] does (entries ending below
/// `min_offset` skipped before their CRC is checked); [`LazyBatches::message_v0`] reads a
/// Fetch v0/v1 answer as [`crate::MessageSet::decode`] does (Message v0 only, every entry's
/// CRC checked, wrappers kept whatever their offset). A partial entry at the end is dropped and counted; after an error the
/// iteration ends.
///
/// Uncompressed messages v0/v1 in a row (same magic and attributes, offsets rising) come as
/// one batch, a *run*: its header has the first and last offsets, the count, the first and
/// largest timestamps; its bytes are the entries as they came, each checked, and its records
/// are read from them again as they are iterated. So a chunk of small messages costs one
/// batch, not one per message (the per-message batches took more memory than the messages).
#[derive(Debug)]
pub struct LazyBatches {
    rest: Bytes,
    options: Arc<DecodeOptions>,
    v0: bool,
    partial: usize,
    whole: usize,
    failed: bool,
    /// The run of uncompressed messages being gathered.
    run: Option<Run>,
    /// What comes after a run that had to be handed out first.
    held: Option<Result<LazyBatch>>,
}

/// What one step of the walk met.
enum Stepped {
    /// The end of the blob (or of its whole entries).
    End,
    /// An entry below `min_offset`, passed over.
    Skipped,
    /// An uncompressed message, now in [`LazyBatches::run`].
    Plain,
    /// Any other entry.
    Batch(LazyBatch),
}

/// Uncompressed messages v0/v1 in a row, gathered into one batch (see [`LazyBatches`]).
#[derive(Debug)]
struct Run {
    /// The blob from the run's first entry on (the run is its first `len` bytes).
    start: Bytes,
    len: usize,
    first: i64,
    last: i64,
    count: i32,
    magic: i8,
    attributes: i8,
    crc: u32,
    first_timestamp: i64,
    max_timestamp: i64,
}

impl Run {
    /// True if the message at `offset` can follow in this run.
    fn takes(&self, offset: i64, head: &LegacyHead) -> bool {
        self.magic == head.magic
            && self.attributes == head.attributes
            && offset > self.last
            && self.count < i32::MAX
            && i32::try_from(offset - self.first).is_ok()
    }

    fn finish(mut self, options: &Arc<DecodeOptions>) -> LazyBatch {
        self.start.truncate(self.len);
        let header = BatchHeader {
            base_offset: self.first,
            batch_length: i32::try_from(self.len - LOG_OVERHEAD).unwrap_or(i32::MAX),
            partition_leader_epoch: super::batch::NO_PARTITION_LEADER_EPOCH,
            magic: self.magic,
            crc: self.crc,
            attributes: i16::from(self.attributes as u8),
            last_offset_delta: (self.last - self.first) as i32,
            base_timestamp: self.first_timestamp,
            max_timestamp: self.max_timestamp,
            producer_id: super::batch::NO_PRODUCER_ID,
            producer_epoch: super::batch::NO_PRODUCER_EPOCH,
            base_sequence: super::batch::NO_SEQUENCE,
            record_count: self.count,
        };
        LazyBatch { header, raw: self.start, body: Body::Run, options: Arc::clone(options) }
    }
}

impl LazyBatches {
    /// The entries of `records` of any magic (a Fetch v2+ answer).
    pub fn new(records: Bytes, options: &DecodeOptions) -> LazyBatches {
        LazyBatches {
            rest: records,
            options: Arc::new(options.clone()),
            v0: false,
            partial: 0,
            whole: 0,
            failed: false,
            run: None,
            held: None,
        }
    }

    /// The entries of a Fetch v0/v1 answer: Message v0 only, read as
    /// [`crate::MessageSet::decode`] reads them (a wrapper is kept whatever its own offset, its
    /// inner messages below `min_offset` left out as they are read).
    pub fn message_v0(records: Bytes, options: &DecodeOptions) -> LazyBatches {
        LazyBatches { v0: true, ..LazyBatches::new(records, options) }
    }

    /// Bytes of the partial entry the blob ended with (0 if none, or not reached yet).
    pub fn partial_trailing_bytes(&self) -> usize {
        self.partial
    }

    /// Whole entries met so far, skipped ones included.
    pub fn whole_batches(&self) -> usize {
        self.whole
    }

    fn location(&self, offset: i64) -> MessageLocation {
        self.options.location(offset)
    }

    fn malformed(&self, offset: i64, reason: String) -> Error {
        Error::MalformedMessage { location: self.location(offset), reason }
    }

    fn step(&mut self) -> Result<Stepped> {
        if self.rest.is_empty() {
            return Ok(Stepped::End);
        }
        let least = if self.v0 { ENTRY_HEADER_SIZE } else { HEADER_SIZE_UP_TO_MAGIC };
        if self.rest.len() < least {
            self.partial = self.rest.len();
            self.rest.clear();
            return Ok(Stepped::End);
        }
        let offset = i64::from_be_bytes(self.rest[..8].try_into().expect("8 bytes"));
        let size = i32::from_be_bytes(self.rest[LENGTH_AT..LENGTH_AT + 4].try_into().expect("4 bytes"));
        let size = match usize::try_from(size) {
            Ok(n) if self.v0 || n >= MESSAGE_V0_OVERHEAD => n,
            _ if self.v0 => return Err(self.malformed(offset, format!("negative message size {size}"))),
            _ => {
                let reason = format!("entry size {size} is below the smallest message ({MESSAGE_V0_OVERHEAD} bytes)");
                return Err(self.malformed(offset, reason));
            }
        };
        if self.rest.len() - LOG_OVERHEAD < size {
            self.partial = self.rest.len();
            self.rest.clear();
            return Ok(Stepped::End);
        }
        let n = LOG_OVERHEAD + size;
        self.whole += 1;
        let magics: &[i8] = if self.v0 {
            &[0]
        } else {
            match self.rest[MAGIC_AT] as i8 {
                // a wrapper's offset is its last inner message's
                0 | 1 if offset < self.options.min_offset => {
                    self.rest.advance(n);
                    return Ok(Stepped::Skipped);
                }
                0 | 1 => &[0, 1],
                2 => {
                    let raw = self.rest.split_to(n);
                    return self.v2(offset, raw);
                }
                magic => return Err(Error::UnsupportedMagic { location: self.location(offset), magic }),
            }
        };
        let head = LegacyHead::read(&self.rest[LOG_OVERHEAD..n], || self.location(offset), magics, true)?;
        if !head.is_wrapper() {
            // (a wrapper is read whatever its own offset, as MessageSet::decode does: its
            // inner messages below min_offset are left out as they are read)
            if offset < self.options.min_offset {
                self.rest.advance(n);
                return Ok(Stepped::Skipped);
            }
            self.plain(offset, n, &head);
            return Ok(Stepped::Plain);
        }
        let raw = self.rest.split_to(n);
        let message = head.message(&raw.slice(LOG_OVERHEAD..));
        self.legacy(offset, raw, message).map(Stepped::Batch)
    }

    /// Adds the uncompressed message of `n` bytes at the front of the blob to the run (a run
    /// it cannot join is finished and held, and a new one begins).
    fn plain(&mut self, offset: i64, n: usize, head: &LegacyHead) {
        if !self.run.as_ref().is_some_and(|run| run.takes(offset, head)) {
            if let Some(run) = self.run.take() {
                self.held = Some(Ok(run.finish(&self.options)));
            }
            self.run = Some(Run {
                start: self.rest.clone(),
                len: 0,
                first: offset,
                last: offset,
                count: 0,
                magic: head.magic,
                attributes: head.attributes,
                crc: head.crc,
                first_timestamp: head.timestamp,
                max_timestamp: head.timestamp,
            });
        }
        let run = self.run.as_mut().expect("a run was just begun");
        run.len += n;
        run.last = offset;
        run.count += 1;
        run.max_timestamp = run.max_timestamp.max(head.timestamp);
        self.rest.advance(n);
    }

    fn v2(&mut self, offset: i64, raw: Bytes) -> Result<Stepped> {
        let Some(head) = raw.first_chunk::<BATCH_HEADER_SIZE>() else {
            let reason = format!("a batch of {} bytes is shorter than its {BATCH_HEADER_SIZE}-byte header", raw.len());
            return Err(self.malformed(offset, reason));
        };
        let header = BatchHeader::parse(head);
        if header.last_offset() < self.options.min_offset {
            return Ok(Stepped::Skipped);
        }
        let computed = super::crc32c(&raw[ATTRIBUTES_AT..]);
        if computed != header.crc {
            return Err(Error::Crc { location: self.location(offset), stored: header.crc, computed });
        }
        if header.record_count < 0 {
            return Err(self.malformed(offset, format!("negative record count {}", header.record_count)));
        }
        let codec = header.compression().map_err(|_| Error::UnknownCodec {
            location: self.location(offset),
            bits: (header.attributes & 0x07) as i8,
        })?;
        let records = raw.slice(BATCH_HEADER_SIZE..);
        // as the whole-set reader (which checks it once the records are decompressed)
        if codec == Compression::None && header.record_count as usize > records.len() / MIN_RECORD_SIZE {
            let reason = format!("{} records cannot fit in {} bytes", header.record_count, records.len());
            return Err(self.malformed(offset, reason));
        }
        let body = Body::V2 { codec, records };
        Ok(Stepped::Batch(LazyBatch { header, raw, body, options: Arc::clone(&self.options) }))
    }

    /// A compressed message v0/v1 (a wrapper).
    fn legacy(&self, offset: i64, raw: Bytes, message: LegacyMessage) -> Result<LazyBatch> {
        let codec = Compression::from_attributes(message.attributes)
            .map_err(|_| Error::UnknownCodec { location: self.location(offset), bits: message.attributes & 0x07 })?;
        let header = BatchHeader::of_legacy(offset, raw.len(), &message);
        let Some(value) = message.value else {
            return Err(self.malformed(offset, format!("{codec} wrapper has a null value")));
        };
        let log_append_time = (message.magic >= MAGIC_V1 && header.timestamp_type() == TimestampType::LogAppendTime)
            .then_some(message.timestamp);
        let body = Body::Wrapper { codec, value, magic: message.magic, log_append_time, empty_ok: self.v0 };
        Ok(LazyBatch { header, raw, body, options: Arc::clone(&self.options) })
    }

    fn end_run(&mut self) -> Option<LazyBatch> {
        self.run.take().map(|run| run.finish(&self.options))
    }
}

impl Iterator for LazyBatches {
    type Item = Result<LazyBatch>;

    fn next(&mut self) -> Option<Result<LazyBatch>> {
        if let Some(held) = self.held.take() {
            return Some(held);
        }
        if self.failed {
            return None;
        }
        loop {
            let after_run = match self.step() {
                Ok(Stepped::End) => return self.end_run().map(Ok),
                Ok(Stepped::Plain) => None,
                Ok(Stepped::Skipped) => self.end_run().map(Ok), // the run's bytes end here
                Ok(Stepped::Batch(batch)) => match self.end_run() {
                    Some(run) => {
                        self.held = Some(Ok(batch));
                        Some(Ok(run))
                    }
                    None => return Some(Ok(batch)),
                },
                Err(e) => {
                    self.failed = true;
                    self.rest.clear();
                    match self.end_run() {
                        Some(run) => {
                            self.held = Some(Err(e));
                            Some(Ok(run))
                        }
                        None => return Some(Err(e)),
                    }
                }
            };
            // a run ended (by another entry, or by a message it could not take)
            if let Some(out) = after_run.or_else(|| self.held.take()) {
                return Some(out);
            }
        }
    }
}

/// What a lazy batch's records are read from.
#[derive(Debug, Clone)]
enum Body {
    /// A v2 batch's records section, compressed with `codec` (or not).
    V2 { codec: Compression, records: Bytes },
    /// Uncompressed messages v0/v1 in a row: the batch's raw bytes are their entries, checked
    /// (see [`LazyBatches`]).
    Run,
    /// A compressed message v0/v1: its value is the compressed inner set.
    Wrapper {
        codec: Compression,
        value: Bytes,
        magic: i8,
        log_append_time: Option<i64>,
        /// An empty inner set is no error (Kafka 0.8.2's reading, [`LazyBatches::message_v0`]).
        empty_ok: bool,
    },
}

/// One entry of a fetched blob, checked but not decompressed, or a run of uncompressed
/// messages (see [`LazyBatches`]).
///
/// For a compressed message v0/v1 the header knows the wrapper's offset only, which is its
/// last inner message's: `base_offset` and `last_offset()` are it, `next_offset()` the one
/// after (what Kafka's fetchers fetch next).
#[derive(Debug, Clone)]
pub struct LazyBatch {
    header: BatchHeader,
    raw: Bytes,
    body: Body,
    options: Arc<DecodeOptions>,
}

impl LazyBatch {
    /// The header fields (synthesized for a message v0/v1, see the type's docs).
    pub fn header(&self) -> &BatchHeader {
        &self.header
    }

    /// The offset after the batch.
    pub fn next_offset(&self) -> i64 {
        self.header.next_offset()
    }

    /// True for a batch of control records (transaction markers).
    pub fn is_control(&self) -> bool {
        self.header.is_control()
    }

    /// True for a batch of a transaction.
    pub fn is_transactional(&self) -> bool {
        self.header.is_transactional()
    }

    /// The entry's bytes as they came (offset and length included), compressed if it was; a
    /// run's (see [`LazyBatches`]): all its entries'.
    pub fn raw(&self) -> &Bytes {
        &self.raw
    }

    /// The records, decoded as they are iterated; those below the reader's `min_offset` are
    /// skipped. At most `max_decompressed` bytes may be decompressed.
    pub fn into_records(self, max_decompressed: usize) -> StreamedRecords {
        let location = self.header.base_offset;
        let source = match &self.body {
            Body::V2 { codec: Compression::None, records } => {
                Source::Plain { rest: records.clone(), left: self.header.record_count }
            }
            Body::V2 { codec, records } => Source::V2 {
                window: Window::new(*codec, records.clone(), max_decompressed, location),
                left: self.header.record_count,
            },
            Body::Run => Source::Run { at: 0, left: self.header.record_count },
            Body::Wrapper { codec, value, magic, log_append_time, empty_ok } => Source::Inner {
                window: Window::new(*codec, value.clone(), max_decompressed, location),
                inner: Inner { base: 0, magic: *magic, log_append_time: *log_append_time },
                scanned: *magic < MAGIC_V1,
                count: usize::from(*empty_ok),
            },
        };
        StreamedRecords { batch: self, source, index: 0, failed: false }
    }
}

/// The decompressed side of a batch being read: a decompressor and the window of its output
/// not read yet.
#[derive(Debug)]
struct Window {
    decompressor: Decompressor,
    codec: Compression,
    buf: BytesMut,
    eof: bool,
    /// The entry's offset, for errors.
    offset: i64,
}

impl Window {
    fn new(codec: Compression, input: Bytes, max_output: usize, offset: i64) -> Window {
        Window {
            decompressor: Decompressor::new(codec, input, max_output),
            codec,
            buf: BytesMut::new(),
            eof: false,
            offset,
        }
    }

    /// Decompresses until `n` bytes are buffered or the value ends; true if they are.
    fn fill(&mut self, n: usize, options: &DecodeOptions) -> Result<bool> {
        while self.buf.len() < n && !self.eof {
            if self.buf.capacity() == 0 {
                self.buf = BytesMut::with_capacity(WINDOW_CAPACITY);
            }
            let more = self.decompressor.read_into(&mut self.buf).map_err(|source| Error::Compression {
                location: options.location(self.offset),
                codec: self.codec,
                source,
            })?;
            self.eof = !more;
        }
        Ok(self.buf.len() >= n)
    }

    /// Drops `n` bytes, decompressing as needed; false if the value ended first.
    fn skip(&mut self, mut n: usize, options: &DecodeOptions) -> Result<bool> {
        loop {
            let k = n.min(self.buf.len());
            self.buf.advance(k);
            n -= k;
            if n == 0 {
                return Ok(true);
            }
            if !self.fill(1, options)? {
                return Ok(false);
            }
        }
    }
}

#[derive(Debug)]
enum Source {
    /// The next entry of a run at `at` of its raw bytes, `left` of them to read.
    Run {
        at: usize,
        left: i32,
    },
    Plain {
        rest: Bytes,
        left: i32,
    },
    V2 {
        window: Window,
        left: i32,
    },
    Inner {
        window: Window,
        inner: Inner,
        scanned: bool,
        count: usize,
    },
}

/// Iterator over the records of a [`LazyBatch`], decoded as it goes. Ends after the first
/// error.
#[derive(Debug)]
pub struct StreamedRecords {
    batch: LazyBatch,
    source: Source,
    index: usize,
    failed: bool,
}

impl StreamedRecords {
    /// Bytes decompressed so far.
    pub fn decompressed_bytes(&self) -> usize {
        match &self.source {
            Source::V2 { window, .. } | Source::Inner { window, .. } => window.decompressor.produced(),
            _ => 0,
        }
    }

    /// Bytes of decompressed output this reader holds now: its window's allocation and the
    /// decompressor's own (not the records handed out, nor the codecs' internal state).
    pub fn buffered_bytes(&self) -> usize {
        match &self.source {
            Source::V2 { window, .. } | Source::Inner { window, .. } => {
                window.buf.capacity() + window.decompressor.held_bytes()
            }
            _ => 0,
        }
    }

    fn next_any(&mut self) -> Option<Result<Record>> {
        let index = self.index;
        self.index += 1;
        let batch = &self.batch;
        let options = &*batch.options;
        let malformed = |reason: &dyn std::fmt::Display| Error::MalformedMessage {
            location: options.location(batch.header.base_offset),
            reason: format!("record {index} of the batch: {reason}"),
        };
        match &mut self.source {
            Source::Run { at, left } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                Some(run_record(&batch.raw, at, &batch.header, options).map_err(|reason| malformed(&reason)))
            }
            Source::Plain { rest, left } => {
                if *left == 0 {
                    if rest.is_empty() {
                        return None;
                    }
                    let reason =
                        format!("{} bytes after the last of {} records", rest.len(), batch.header.record_count);
                    return Some(Err(malformed(&reason)));
                }
                *left -= 1;
                let len = match varint::get_i32(rest, "record length") {
                    Ok(len) => len,
                    Err(e) => return Some(Err(malformed(&e))),
                };
                let body = match usize::try_from(len) {
                    Ok(n) if n <= rest.len() => rest.split_to(n),
                    _ => return Some(Err(malformed(&format!("length {len} with {} bytes left", rest.len())))),
                };
                Some(v2_record(&batch.header, body).map_err(|reason| malformed(&reason)))
            }
            Source::V2 { window, left } => {
                let result = v2_next(window, left, &batch.header, options);
                match result {
                    Ok(None) => None,
                    Ok(Some(body)) => Some(v2_record(&batch.header, body).map_err(|reason| malformed(&reason))),
                    Err(Err(e)) => Some(Err(e)),
                    Err(Ok(reason)) => Some(Err(malformed(&reason))),
                }
            }
            Source::Inner { window, inner, scanned, count } => {
                if !*scanned {
                    *scanned = true;
                    match scan_wrapper(batch, window) {
                        Ok(base) => inner.base = base,
                        Err(e) => return Some(Err(e)),
                    }
                }
                let (at, codec) = (window.offset, window.codec);
                let wrapper = |reason: String| Error::MalformedMessage {
                    location: options.location(at),
                    reason: format!("{codec} wrapper: {reason}"),
                };
                match inner_entry(window, options) {
                    Ok(Some((offset, bytes))) => {
                        *count += 1;
                        let inner = *inner;
                        Some(inner.record(offset, bytes, options, |reason| malformed(&reason)))
                    }
                    Ok(None) if *count == 0 => Some(Err(wrapper("no inner messages".to_owned()))),
                    Ok(None) => None,
                    Err(Ok(reason)) => Some(Err(wrapper(reason))),
                    Err(Err(e)) => Some(Err(e)),
                }
            }
        }
    }
}

/// The message at `*at` of a run's `raw` bytes, `*at` moved past it. Its entry was checked
/// when the run was gathered (CRC included), so an error here means bytes that changed.
fn run_record(
    raw: &Bytes,
    at: &mut usize,
    header: &BatchHeader,
    options: &DecodeOptions,
) -> std::result::Result<Record, String> {
    let Some(entry) = raw.get(*at..).and_then(|rest| rest.first_chunk::<LOG_OVERHEAD>()) else {
        return Err(format!("entry at byte {} of {} cut short", *at, raw.len()));
    };
    let offset = i64::from_be_bytes(entry[..8].try_into().expect("8 bytes"));
    let size = u32::from_be_bytes(entry[8..].try_into().expect("4 bytes")) as usize;
    let from = *at + LOG_OVERHEAD;
    let Some(bytes) = raw.get(from..from.saturating_add(size)) else {
        return Err(format!("entry of {size} bytes at byte {} of {} cut short", *at, raw.len()));
    };
    let message =
        LegacyHead::read(bytes, || options.location(offset), &[header.magic], false).map_err(|e| e.to_string())?;
    *at = from + size;
    let slice = |r: Option<(usize, usize)>| r.map(|(a, b)| raw.slice(from + a..from + b));
    Ok(Record {
        offset,
        timestamp: message.timestamp,
        // every message of a run has the run's magic and attributes
        timestamp_type: header.timestamp_type(),
        key: slice(message.key),
        value: slice(message.value),
        headers: Headers::default(),
    })
}

/// A failure while reading from a window: the reason a record or entry is malformed (`Ok`)
/// or an error of its own (`Err`: decompression).
type Failure = std::result::Result<String, Error>;

/// The body of the next v2 record of a compressed records section.
fn v2_next(
    window: &mut Window,
    left: &mut i32,
    header: &BatchHeader,
    options: &DecodeOptions,
) -> std::result::Result<Option<Bytes>, Failure> {
    if *left == 0 {
        if !window.fill(1, options).map_err(Err)? {
            return Ok(None);
        }
        let after = window.buf.len();
        return Err(Ok(format!("{after} bytes after the last of {} records", header.record_count)));
    }
    *left -= 1;
    window.fill(5, options).map_err(Err)?;
    let (len, used) = match varint_i32(&window.buf) {
        Some(v) => v,
        None => {
            // the exact error of the whole-set reader
            let mut head = Bytes::copy_from_slice(&window.buf[..window.buf.len().min(5)]);
            let e = varint::get_i32(&mut head, "record length").err();
            return Err(Ok(e.map_or_else(|| "record length".to_owned(), |e| e.to_string())));
        }
    };
    let n = match usize::try_from(len) {
        Ok(n) if window.fill(used + n, options).map_err(Err)? => n,
        _ => return Err(Ok(format!("length {len} with {} bytes left", window.buf.len() - used))),
    };
    window.buf.advance(used);
    Ok(Some(window.buf.split_to(n).freeze()))
}

/// A zig-zag varint of at most 5 bytes and 32 bits at the front of `buf`, and its length;
/// `None` for anything else (too short, too long, too wide).
fn varint_i32(buf: &[u8]) -> Option<(i32, usize)> {
    let mut v: u32 = 0;
    for (i, &b) in buf.iter().take(5).enumerate() {
        if i == 4 && b > 0x0f {
            return None;
        }
        v |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((((v >> 1) as i32) ^ -((v & 1) as i32), i + 1));
        }
    }
    None
}

/// The next inner entry of a wrapper's set: its stored offset and message bytes.
fn inner_entry(window: &mut Window, options: &DecodeOptions) -> std::result::Result<Option<(i64, Bytes)>, Failure> {
    let Some((offset, size)) = inner_header(window, options)? else { return Ok(None) };
    if !window.fill(ENTRY_HEADER_SIZE + size, options).map_err(Err)? {
        let left = window.buf.len() - ENTRY_HEADER_SIZE;
        return Err(Ok(format!("inner message size {size} with {left} bytes left")));
    }
    window.buf.advance(ENTRY_HEADER_SIZE);
    Ok(Some((offset, window.buf.split_to(size).freeze())))
}

/// The offset and size of the next inner entry, still in the window; `None` at the end.
fn inner_header(window: &mut Window, options: &DecodeOptions) -> std::result::Result<Option<(i64, usize)>, Failure> {
    if !window.fill(ENTRY_HEADER_SIZE, options).map_err(Err)? {
        if window.buf.is_empty() {
            return Ok(None);
        }
        return Err(Ok(format!("the inner set ends in {} bytes of a partial message", window.buf.len())));
    }
    let offset = i64::from_be_bytes(window.buf[..8].try_into().expect("8 bytes"));
    let size = i32::from_be_bytes(window.buf[8..12].try_into().expect("4 bytes"));
    match usize::try_from(size) {
        Ok(n) => Ok(Some((offset, n))),
        Err(_) => {
            let left = window.buf.len() - ENTRY_HEADER_SIZE;
            Err(Ok(format!("inner message size {size} with {left} bytes left")))
        }
    }
}

/// A message v1 wrapper's base: its offset less its last inner (relative) offset, found by a
/// first pass over the inner set that keeps nothing (0 when the wrapper is below its last
/// inner offset, as Kafka's reader does; see [`super::Batches`]).
fn scan_wrapper(batch: &LazyBatch, window: &Window) -> Result<i64> {
    let Body::Wrapper { codec, value, empty_ok, .. } = &batch.body else { unreachable!("a wrapper") };
    let options = &batch.options;
    // the same bound as the pass that reads
    let mut scan = Window::new(*codec, value.clone(), window.decompressor.max_output(), window.offset);
    let wrapper = |reason: String| Error::MalformedMessage {
        location: options.location(window.offset),
        reason: format!("{codec} wrapper: {reason}"),
    };
    let mut last = None;
    loop {
        let entry = match inner_header(&mut scan, options) {
            Ok(entry) => entry,
            Err(Ok(reason)) => return Err(wrapper(reason)),
            Err(Err(e)) => return Err(e),
        };
        let Some((offset, size)) = entry else { break };
        if !scan.skip(ENTRY_HEADER_SIZE + size, options)? {
            let left = scan.buf.len();
            return Err(wrapper(format!("inner message size {size} with {left} bytes left")));
        }
        last = Some(offset);
    }
    let Some(last) = last else {
        return if *empty_ok { Ok(0) } else { Err(wrapper("no inner messages".to_owned())) };
    };
    Ok(match window.offset.checked_sub(last) {
        Some(base) if base >= 0 => base,
        _ => 0,
    })
}

impl Iterator for StreamedRecords {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Result<Record>> {
        if self.failed {
            return None;
        }
        loop {
            match self.next_any()? {
                Ok(record) if record.offset < self.batch.options.min_offset => {}
                Ok(record) => return Some(Ok(record)),
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// The records of a list of lazy batches (one fetched chunk), decoded as they are iterated,
/// all their decompression within one `max_decompressed_bytes` budget. Ends after the first
/// error.
#[derive(Debug)]
pub struct LazyRecords {
    batches: std::vec::IntoIter<LazyBatch>,
    /// The batch being read (boxed: a chunk waits in queues, small, until it is read).
    current: Option<Box<StreamedRecords>>,
    budget: usize,
    failed: bool,
}

impl LazyRecords {
    /// The records of `batches`, with at most `max_decompressed_bytes` decompressed in all.
    pub fn new(batches: Vec<LazyBatch>, max_decompressed_bytes: usize) -> LazyRecords {
        LazyRecords { batches: batches.into_iter(), current: None, budget: max_decompressed_bytes, failed: false }
    }

    /// Bytes of decompressed output held now (see [`StreamedRecords::buffered_bytes`]).
    pub fn buffered_bytes(&self) -> usize {
        self.current.as_deref().map_or(0, StreamedRecords::buffered_bytes)
    }
}

impl Iterator for LazyRecords {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Result<Record>> {
        if self.failed {
            return None;
        }
        loop {
            if let Some(current) = &mut self.current {
                match current.next() {
                    Some(Ok(record)) => return Some(Ok(record)),
                    Some(Err(e)) => {
                        self.failed = true;
                        self.current = None;
                        return Some(Err(e));
                    }
                    None => {
                        self.budget -= current.decompressed_bytes();
                        self.current = None;
                    }
                }
            }
            let batch = self.batches.next()?;
            self.current = Some(Box::new(batch.into_records(self.budget)));
        }
    }
}

//! Reading a fetched `records` blob of any magic, batch by batch and record by record.

use std::sync::Arc;

use bytes::{Buf, Bytes};

use super::batch::{BatchHeader, ATTRIBUTES_AT, BATCH_HEADER_SIZE, CRC_AT, LENGTH_AT, LOG_OVERHEAD, MAGIC_AT};
use super::{read_field, Headers, Record, TimestampType};
use crate::compression::{self, Compression};
use crate::error::{Error, MessageLocation, Result};
use crate::message::{DecodeOptions, LegacyMessage, MAGIC_V1, MESSAGE_V0_OVERHEAD};
use crate::schema::varint;

/// Bytes up to and including the magic of any entry (batch or message): where the magic is
/// known and a reader can tell what follows.
const HEADER_SIZE_UP_TO_MAGIC: usize = MAGIC_AT + 1;

/// The fewest bytes a v2 record takes: a 1-byte length, attributes, and 1-byte timestamp
/// delta, offset delta, key length, value length and header count.
const MIN_RECORD_SIZE: usize = 7;

/// Iterator over the batches of a `records` blob of any magic: RecordBatch v2, and message
/// v0/v1 entries (each top-level message one batch, a compressed wrapper a batch of its inner
/// messages). See the [module docs](super).
///
/// * A batch whose last offset is below `options.min_offset` is skipped before its CRC is
///   checked or anything is decompressed ([`Batches::skipped_batches`]); records below it in
///   a batch that straddles it are skipped by [`Batch::records`].
/// * Every batch's CRC is checked (CRC-32C for v2, the message's CRC-32 below).
/// * A compressed batch is decompressed when it is yielded; all batches of one blob together
///   may decompress to at most `options.max_decompressed_bytes`.
/// * A partial entry at the end is dropped ([`Batches::partial_trailing_bytes`]); after an
///   error the iteration ends.
#[derive(Debug)]
pub struct Batches {
    rest: Bytes,
    options: Arc<DecodeOptions>,
    budget: usize,
    partial: usize,
    whole: usize,
    skipped: usize,
    failed: bool,
}

/// What one step of the walk found.
enum Step {
    Batch(Batch),
    Skipped,
}

impl Batches {
    /// The batches of `records` (as a Fetch response carries them), read with `options`
    /// (topic and partition for errors, the fetch offset, the decompression bound).
    pub fn new(records: Bytes, options: &DecodeOptions) -> Batches {
        Batches {
            rest: records,
            budget: options.max_decompressed_bytes,
            options: Arc::new(options.clone()),
            partial: 0,
            whole: 0,
            skipped: 0,
            failed: false,
        }
    }

    /// Bytes of the partial entry the blob ended with (0 if none, or not reached yet).
    pub fn partial_trailing_bytes(&self) -> usize {
        self.partial
    }

    /// Whole entries met so far, skipped ones included.
    pub fn whole_batches(&self) -> usize {
        self.whole
    }

    /// Batches skipped so far because they end below `min_offset`.
    pub fn skipped_batches(&self) -> usize {
        self.skipped
    }

    fn location(&self, offset: i64) -> MessageLocation {
        self.options.location(offset)
    }

    fn step(&mut self) -> Result<Option<Step>> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        if self.rest.len() < HEADER_SIZE_UP_TO_MAGIC {
            self.partial = self.rest.len();
            self.rest.clear();
            return Ok(None);
        }
        let offset = i64::from_be_bytes(self.rest[..8].try_into().expect("8 bytes"));
        let size = i32::from_be_bytes(self.rest[LENGTH_AT..LENGTH_AT + 4].try_into().expect("4 bytes"));
        let size = match usize::try_from(size) {
            Ok(n) if n >= MESSAGE_V0_OVERHEAD => n,
            _ => {
                return Err(Error::MalformedMessage {
                    location: self.location(offset),
                    reason: format!("entry size {size} is below the smallest message ({MESSAGE_V0_OVERHEAD} bytes)"),
                })
            }
        };
        if self.rest.len() - LOG_OVERHEAD < size {
            self.partial = self.rest.len();
            self.rest.clear();
            return Ok(None);
        }
        let magic = self.rest[MAGIC_AT] as i8;
        let raw = self.rest.split_to(LOG_OVERHEAD + size);
        self.whole += 1;
        match magic {
            0 | 1 => self.legacy(offset, raw),
            2 => self.v2(offset, raw),
            _ => Err(Error::UnsupportedMagic { location: self.location(offset), magic }),
        }
    }

    /// Decompresses `input` within what is left of the blob's budget.
    fn decompress(&mut self, codec: Compression, input: &[u8], offset: i64) -> Result<Bytes> {
        let mut out = Vec::new();
        compression::decompress(codec, input, self.budget, &mut out).map_err(|source| Error::Compression {
            location: self.location(offset),
            codec,
            source,
        })?;
        self.budget -= out.len();
        Ok(out.into())
    }

    fn malformed(&self, offset: i64, reason: String) -> Error {
        Error::MalformedMessage { location: self.location(offset), reason }
    }

    fn v2(&mut self, offset: i64, raw: Bytes) -> Result<Option<Step>> {
        let Some(head) = raw.first_chunk::<BATCH_HEADER_SIZE>() else {
            let reason = format!("a batch of {} bytes is shorter than its {BATCH_HEADER_SIZE}-byte header", raw.len());
            return Err(self.malformed(offset, reason));
        };
        let header = BatchHeader::parse(head);
        if header.last_offset() < self.options.min_offset {
            self.skipped += 1;
            return Ok(Some(Step::Skipped));
        }
        let computed = super::crc32c(&raw[ATTRIBUTES_AT..]);
        if computed != header.crc {
            return Err(Error::Crc { location: self.location(offset), stored: header.crc, computed });
        }
        debug_assert_eq!(CRC_AT + 4, ATTRIBUTES_AT);
        let count = usize::try_from(header.record_count)
            .map_err(|_| self.malformed(offset, format!("negative record count {}", header.record_count)))?;
        let codec = header.compression().map_err(|_| Error::UnknownCodec {
            location: self.location(offset),
            bits: (header.attributes & 0x07) as i8,
        })?;
        let mut records = raw.slice(BATCH_HEADER_SIZE..);
        if codec != Compression::None {
            records = self.decompress(codec, &records, offset)?;
        }
        if count > records.len() / MIN_RECORD_SIZE {
            let reason = format!("{count} records cannot fit in {} bytes", records.len());
            return Err(self.malformed(offset, reason));
        }
        Ok(Some(Step::Batch(Batch { header, raw, body: Body::V2 { records }, options: self.options.clone() })))
    }

    fn legacy(&mut self, offset: i64, raw: Bytes) -> Result<Option<Step>> {
        // a wrapper's offset is its last inner message's
        if offset < self.options.min_offset {
            self.skipped += 1;
            return Ok(Some(Step::Skipped));
        }
        let message = LegacyMessage::parse(raw.slice(LOG_OVERHEAD..), || self.location(offset), &[0, 1])?;
        let codec = Compression::from_attributes(message.attributes)
            .map_err(|_| Error::UnknownCodec { location: self.location(offset), bits: message.attributes & 0x07 })?;
        let mut header = BatchHeader::of_legacy(offset, raw.len(), &message);
        if codec == Compression::None {
            let body = Body::Message { key: message.key, value: message.value };
            return Ok(Some(Step::Batch(Batch { header, raw, body, options: self.options.clone() })));
        }
        let Some(compressed) = message.value.as_deref() else {
            return Err(self.malformed(offset, format!("{codec} wrapper has a null value")));
        };
        let inner = self.decompress(codec, compressed, offset)?;
        let scan = scan_inner(&inner).map_err(|reason| self.malformed(offset, format!("{codec} wrapper: {reason}")))?;
        // v1 inner offsets are relative, the wrapper's offset is the last one's (KIP-31); a
        // wrapper below its last inner offset (kafka-python's producer writes offset 0) keeps
        // the inner offsets as they are, as Kafka's reader does
        let base = match offset.checked_sub(scan.last) {
            Some(base) if message.magic >= MAGIC_V1 && base >= 0 => base,
            _ => 0,
        };
        let (first, last) = (base.wrapping_add(scan.first), base.wrapping_add(scan.last));
        header.base_offset = first;
        header.last_offset_delta = i32::try_from(last.wrapping_sub(first)).unwrap_or(i32::MAX);
        header.record_count = i32::try_from(scan.count).unwrap_or(i32::MAX);
        let log_append_time = (message.magic >= MAGIC_V1 && header.timestamp_type() == TimestampType::LogAppendTime)
            .then_some(message.timestamp);
        let body = Body::Wrapper { inner, base, magic: message.magic, log_append_time };
        Ok(Some(Step::Batch(Batch { header, raw, body, options: self.options.clone() })))
    }
}

impl Iterator for Batches {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Result<Batch>> {
        if self.failed {
            return None;
        }
        loop {
            match self.step() {
                Ok(None) => return None,
                Ok(Some(Step::Skipped)) => {}
                Ok(Some(Step::Batch(batch))) => return Some(Ok(batch)),
                Err(e) => {
                    self.failed = true;
                    self.rest.clear();
                    return Some(Err(e));
                }
            }
        }
    }
}

/// What a wrapper's inner set holds: entry count, first and last (stored) offsets.
struct InnerScan {
    count: usize,
    first: i64,
    last: i64,
}

/// Walks the entry headers of a decompressed inner set: every entry whole, at least one.
fn scan_inner(inner: &[u8]) -> std::result::Result<InnerScan, String> {
    let (mut at, mut count, mut first, mut last) = (0, 0, 0, 0);
    while at < inner.len() {
        let rest = &inner[at..];
        let Some(head) = rest.first_chunk::<LOG_OVERHEAD>() else {
            return Err(format!("the inner set ends in {} bytes of a partial message", rest.len()));
        };
        let offset = i64::from_be_bytes(head[..8].try_into().expect("8 bytes"));
        let size = i32::from_be_bytes(head[8..].try_into().expect("4 bytes"));
        match usize::try_from(size) {
            Ok(n) if n <= rest.len() - LOG_OVERHEAD => at += LOG_OVERHEAD + n,
            _ => return Err(format!("inner message size {size} with {} bytes left", rest.len() - LOG_OVERHEAD)),
        }
        if count == 0 {
            first = offset;
        }
        last = offset;
        count += 1;
    }
    if count == 0 {
        return Err("no inner messages".to_owned());
    }
    Ok(InnerScan { count, first, last })
}

/// What a batch's records are read from.
#[derive(Debug, Clone)]
enum Body {
    /// The (decompressed) records section of a v2 batch.
    V2 { records: Bytes },
    /// One uncompressed message v0/v1.
    Message { key: Option<Bytes>, value: Option<Bytes> },
    /// The decompressed inner set of a wrapper.
    Wrapper {
        inner: Bytes,
        /// Added to each inner offset (0 for magic 0, whose inner offsets are absolute).
        base: i64,
        magic: i8,
        /// The wrapper's timestamp when it is LogAppendTime (it overrides the inner ones).
        log_append_time: Option<i64>,
    },
}

/// One batch of a blob: a RecordBatch v2, or one top-level message v0/v1 (see [`Batches`]).
#[derive(Debug, Clone)]
pub struct Batch {
    header: BatchHeader,
    raw: Bytes,
    body: Body,
    options: Arc<DecodeOptions>,
}

impl Batch {
    /// The header fields (synthesized as Kafka does for a message v0/v1).
    pub fn header(&self) -> &BatchHeader {
        &self.header
    }

    /// 0, 1 or 2.
    pub fn magic(&self) -> i8 {
        self.header.magic
    }

    /// Offset of the first record.
    pub fn base_offset(&self) -> i64 {
        self.header.base_offset
    }

    /// Offset of the last record.
    pub fn last_offset(&self) -> i64 {
        self.header.last_offset()
    }

    /// The offset after the batch.
    pub fn next_offset(&self) -> i64 {
        self.header.next_offset()
    }

    /// The codec the batch came compressed with.
    pub fn compression(&self) -> Compression {
        // checked when the batch was read
        self.header.compression().unwrap_or_default()
    }

    /// True for a batch of control records (transaction markers): a consumer does not hand
    /// them to the application; [`super::ControlRecord::parse`] reads their keys.
    pub fn is_control(&self) -> bool {
        self.header.is_control()
    }

    /// True for a batch of a transaction.
    pub fn is_transactional(&self) -> bool {
        self.header.is_transactional()
    }

    /// The batch's bytes as they came (offset and length included), compressed if it was.
    pub fn raw(&self) -> &Bytes {
        &self.raw
    }

    /// The records, read one by one; those below the reader's `min_offset` are skipped.
    pub fn records(&self) -> Records<'_> {
        let cursor = match &self.body {
            Body::V2 { records } => Cursor::V2 { rest: records.clone(), left: self.header.record_count.max(0) },
            Body::Message { .. } => Cursor::One { done: false },
            Body::Wrapper { inner, .. } => Cursor::Inner { rest: inner.clone() },
        };
        Records { batch: self, cursor, index: 0, failed: false }
    }

    fn malformed(&self, index: usize, reason: impl std::fmt::Display) -> Error {
        Error::MalformedMessage {
            location: self.options.location(self.header.base_offset),
            reason: format!("record {index} of the batch: {reason}"),
        }
    }

    fn v2_record(&self, rest: &mut Bytes, index: usize) -> Result<Record> {
        let len = varint::get_i32(rest, "record length").map_err(|e| self.malformed(index, e))?;
        let body = match usize::try_from(len) {
            Ok(n) if n <= rest.len() => rest.split_to(n),
            _ => return Err(self.malformed(index, format!("length {len} with {} bytes left", rest.len()))),
        };
        v2_record(&self.header, body).map_err(|reason| self.malformed(index, reason))
    }

    fn inner_record(&self, rest: &mut Bytes, index: usize) -> Result<Record> {
        let Body::Wrapper { base, magic, log_append_time, .. } = &self.body else {
            unreachable!("inner records come from a wrapper");
        };
        // the entry headers were checked by scan_inner
        let offset = rest.get_i64();
        let size = rest.get_i32() as usize;
        let inner = Inner { base: *base, magic: *magic, log_append_time: *log_append_time };
        inner.record(offset, rest.split_to(size), &self.options, |reason| self.malformed(index, reason))
    }
}

/// The body of one v2 record (after its length) as a record of the batch `h`; the reason it
/// is malformed otherwise. Shared with the streaming reader ([`super::lazy`]).
pub(super) fn v2_record(h: &BatchHeader, mut body: Bytes) -> std::result::Result<Record, String> {
    let (offset_delta, timestamp_delta, key, value, headers) = (|| {
        if !body.has_remaining() {
            return Err(Error::Truncated { field: "record attributes", needed: 1, remaining: 0 });
        }
        body.advance(1); // attributes: unused
        let timestamp_delta = varint::get_i64(&mut body, "timestamp delta")?;
        let offset_delta = varint::get_i32(&mut body, "offset delta")?;
        let key = read_field(&mut body, "key")?;
        let value = read_field(&mut body, "value")?;
        let count = varint::get_i32(&mut body, "header count")?;
        let headers = Headers::read(&mut body, count)?;
        Ok((offset_delta, timestamp_delta, key, value, headers))
    })()
    .map_err(|e| e.to_string())?;
    if !body.is_empty() {
        return Err(format!("{} bytes left after the headers", body.len()));
    }
    let (timestamp, timestamp_type) = match h.timestamp_type() {
        TimestampType::LogAppendTime => (h.max_timestamp, TimestampType::LogAppendTime),
        kind => (h.base_timestamp.wrapping_add(timestamp_delta), kind),
    };
    Ok(Record {
        offset: h.base_offset.wrapping_add(i64::from(offset_delta)),
        timestamp,
        timestamp_type,
        key,
        value,
        headers,
    })
}

/// How the inner messages of a message v0/v1 wrapper read. Shared with the streaming reader.
#[derive(Debug, Clone, Copy)]
pub(super) struct Inner {
    /// Added to each inner offset (0 for magic 0, whose inner offsets are absolute).
    pub(super) base: i64,
    pub(super) magic: i8,
    /// The wrapper's timestamp when it is LogAppendTime (it overrides the inner ones).
    pub(super) log_append_time: Option<i64>,
}

impl Inner {
    /// The inner message at (stored) `offset` filling `bytes` as a record; `malformed(reason)`
    /// makes the error for an inner message of another magic than the wrapper's.
    pub(super) fn record(
        self,
        offset: i64,
        bytes: Bytes,
        options: &DecodeOptions,
        malformed: impl FnOnce(String) -> Error,
    ) -> Result<Record> {
        let Inner { base, magic, log_append_time } = self;
        let location = || options.location(base.wrapping_add(offset));
        let m = LegacyMessage::parse(bytes, location, &[0, 1])?;
        if m.attributes & Compression::ATTRIBUTE_MASK != 0 {
            return Err(Error::NestedCompression { location: location() });
        }
        if m.magic != magic {
            let reason = format!("inner message of magic {} in a magic {magic} wrapper", m.magic);
            return Err(malformed(reason));
        }
        let (timestamp, timestamp_type) = match (log_append_time, m.magic) {
            (Some(ts), _) => (ts, TimestampType::LogAppendTime),
            (None, 0) => (-1, TimestampType::NoTimestamp),
            (None, _) => (m.timestamp, TimestampType::from_attributes(i16::from(m.attributes))),
        };
        Ok(Record {
            offset: base.wrapping_add(offset),
            timestamp,
            timestamp_type,
            key: m.key,
            value: m.value,
            headers: Headers::default(),
        })
    }
}

#[derive(Debug)]
enum Cursor {
    V2 { rest: Bytes, left: i32 },
    One { done: bool },
    Inner { rest: Bytes },
}

/// Iterator over the records of a [`Batch`]. Ends after the first error.
#[derive(Debug)]
pub struct Records<'a> {
    batch: &'a Batch,
    cursor: Cursor,
    index: usize,
    failed: bool,
}

impl Records<'_> {
    fn next_any(&mut self) -> Option<Result<Record>> {
        let batch = self.batch;
        let index = self.index;
        self.index += 1;
        match &mut self.cursor {
            Cursor::V2 { rest, left } => {
                if *left == 0 {
                    if rest.is_empty() {
                        return None;
                    }
                    let reason =
                        format!("{} bytes after the last of {} records", rest.len(), batch.header.record_count);
                    return Some(Err(batch.malformed(index, reason)));
                }
                *left -= 1;
                Some(batch.v2_record(rest, index))
            }
            Cursor::One { done } => {
                if std::mem::replace(done, true) {
                    return None;
                }
                let Body::Message { key, value } = &batch.body else { unreachable!("one message") };
                let h = &batch.header;
                Some(Ok(Record {
                    offset: h.base_offset,
                    timestamp: h.base_timestamp,
                    timestamp_type: h.timestamp_type(),
                    key: key.clone(),
                    value: value.clone(),
                    headers: Headers::default(),
                }))
            }
            Cursor::Inner { rest } => {
                if rest.is_empty() {
                    return None;
                }
                Some(batch.inner_record(rest, index))
            }
        }
    }
}

impl Iterator for Records<'_> {
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

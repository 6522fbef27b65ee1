//! Writing a RecordBatch v2 one record at a time.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::batch::{
    BatchHeader, ATTRIBUTES_AT, ATTRIBUTE_CONTROL, ATTRIBUTE_LOG_APPEND_TIME, ATTRIBUTE_TRANSACTIONAL,
    BATCH_HEADER_SIZE, CRC_AT, LOG_OVERHEAD, MAGIC_V2, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
    NO_SEQUENCE, NO_TIMESTAMP,
};
use crate::compression::{self, Compression};
use crate::error::{Error, MessageLocation, Result};
use crate::schema::varint;

/// A header as the builder takes it: its key (a string in Kafka) and its value (`None` =
/// null).
pub type HeaderRef<'a> = (&'a str, Option<&'a [u8]>);

/// Bytes a varint-length field takes: the length and the bytes (-1 alone for null).
fn field_size(len: Option<usize>) -> usize {
    match len {
        None => 1,
        Some(n) => varint::len_i32(i32::try_from(n).unwrap_or(i32::MAX)) + n,
    }
}

/// The encoded size of a record, length prefix included: what appending it adds to the
/// uncompressed batch. `offset_delta` and `timestamp_delta` are its offset and timestamp less
/// the batch's base offset and base (first) timestamp.
pub fn size_of_record(
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[HeaderRef<'_>],
) -> usize {
    let body = body_size(offset_delta, timestamp_delta, key, value, headers);
    varint::len_i32(i32::try_from(body).unwrap_or(i32::MAX)) + body
}

fn body_size(
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[HeaderRef<'_>],
) -> usize {
    let headers_size: usize =
        headers.iter().map(|(k, v)| field_size(Some(k.len())) + field_size(v.map(<[u8]>::len))).sum();
    1 + varint::len_i64(timestamp_delta)
        + varint::len_i32(offset_delta)
        + field_size(key.map(<[u8]>::len))
        + field_size(value.map(<[u8]>::len))
        + varint::len_i32(i32::try_from(headers.len()).unwrap_or(i32::MAX))
        + headers_size
}

/// Builds one RecordBatch v2 in a buffer it owns: each [`append`](Self::append) writes the
/// record in its final form (varints in place, key, value and headers copied once), and
/// [`finish`](Self::finish) compresses the records section when a codec is set and writes
/// the header and its CRC-32C. Offsets are deltas from base offset 0, as producers write
/// them (the broker assigns the real ones); the base timestamp is the first record's.
///
/// Appending allocates nothing while the buffer has room: size it with
/// [`RecordBatchBuilder::with_capacity`] (the producer's `batch.size`) and check
/// [`RecordBatchBuilder::size_of_next`] against the room left to keep a batch within a limit.
///
/// ```
/// use gregor_protocol::record::{Batches, RecordBatchBuilder};
/// use gregor_protocol::message::DecodeOptions;
/// use gregor_protocol::Compression;
///
/// let mut batch = RecordBatchBuilder::with_capacity(Compression::Lz4, 16 * 1024);
/// batch.append(1_700_000_000_000, Some(b"k"), Some(b"v"))?;
/// batch.append_with_headers(1_700_000_000_001, None, Some(b"w"), &[("trace", Some(b"42"))])?;
/// let bytes = batch.finish()?;
///
/// let read = Batches::new(bytes, &DecodeOptions::default()).next().unwrap()?;
/// let records: Vec<_> = read.records().collect::<Result<_, _>>()?;
/// assert_eq!(records[1].offset, 1);
/// assert_eq!(records[1].headers.iter().next().unwrap().key_str(), Some("trace"));
/// # Ok::<(), gregor_protocol::Error>(())
/// ```
#[derive(Debug)]
pub struct RecordBatchBuilder {
    buf: BytesMut,
    codec: Compression,
    flags: i16,
    base_offset: i64,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    count: i32,
}

impl RecordBatchBuilder {
    /// A builder for a batch compressed with `codec` (none: stored as is).
    pub fn new(codec: Compression) -> RecordBatchBuilder {
        RecordBatchBuilder::with_capacity(codec, 0)
    }

    /// A builder whose buffer has room for `capacity` bytes of batch (header included) before
    /// it grows.
    pub fn with_capacity(codec: Compression, capacity: usize) -> RecordBatchBuilder {
        let mut buf = BytesMut::with_capacity(capacity.max(BATCH_HEADER_SIZE));
        buf.put_bytes(0, BATCH_HEADER_SIZE);
        RecordBatchBuilder {
            buf,
            codec,
            flags: 0,
            base_offset: 0,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            base_timestamp: NO_TIMESTAMP,
            max_timestamp: NO_TIMESTAMP,
            count: 0,
        }
    }

    /// Marks the batch as an idempotent (or transactional) producer's: its id, epoch and the
    /// sequence number of the first record.
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        (self.producer_id, self.producer_epoch, self.base_sequence) = (producer_id, producer_epoch, base_sequence);
        self
    }

    /// The partition leader epoch written (-1 by default, as Java's producer; librdkafka
    /// writes 0; the broker overwrites it).
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// The base offset written (0 by default, as producers write it).
    pub fn base_offset(mut self, base_offset: i64) -> Self {
        self.base_offset = base_offset;
        self
    }

    /// Sets the transactional bit (4).
    pub fn transactional(mut self, on: bool) -> Self {
        self.set_flag(ATTRIBUTE_TRANSACTIONAL, on);
        self
    }

    /// Sets the control bit (5): the records are control records
    /// ([`super::ControlRecord`]).
    pub fn control(mut self, on: bool) -> Self {
        self.set_flag(ATTRIBUTE_CONTROL, on);
        self
    }

    /// Sets the LogAppendTime bit (3), as a broker writes it for a topic with
    /// `message.timestamp.type=LogAppendTime`.
    pub fn log_append_time(mut self, on: bool) -> Self {
        self.set_flag(ATTRIBUTE_LOG_APPEND_TIME, on);
        self
    }

    fn set_flag(&mut self, bit: i16, on: bool) {
        if on {
            self.flags |= bit;
        } else {
            self.flags &= !bit;
        }
    }

    /// Records appended so far.
    pub fn record_count(&self) -> usize {
        self.count as usize
    }

    /// True before the first record.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes of the batch so far, uncompressed (header included).
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Bytes the buffer holds before it must grow.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// The codec the batch will be compressed with.
    pub fn compression(&self) -> Compression {
        self.codec
    }

    /// What appending this record would add to [`len`](Self::len).
    pub fn size_of_next(
        &self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[HeaderRef<'_>],
    ) -> usize {
        let base = if self.count == 0 { timestamp } else { self.base_timestamp };
        size_of_record(self.count, timestamp.wrapping_sub(base), key, value, headers)
    }

    /// Appends a record without headers; returns its offset delta.
    ///
    /// # Errors
    ///
    /// As [`append_with_headers`](Self::append_with_headers).
    pub fn append(&mut self, timestamp: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Result<i32> {
        self.append_with_headers(timestamp, key, value, &[])
    }

    /// Appends a record; returns its offset delta (0 for the first). The first record's
    /// timestamp becomes the batch's base timestamp.
    ///
    /// # Errors
    ///
    /// [`Error::TooLong`] for a key, value, header or record over `i32::MAX` bytes, or a
    /// batch of `i32::MAX` records; the builder is left as it was.
    pub fn append_with_headers(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[HeaderRef<'_>],
    ) -> Result<i32> {
        let offset_delta = self.count;
        if offset_delta == i32::MAX {
            return Err(Error::TooLong { field: "record count", length: self.count as usize, max: i32::MAX as usize });
        }
        let base_timestamp = if self.count == 0 { timestamp } else { self.base_timestamp };
        write_record(&mut self.buf, offset_delta, timestamp.wrapping_sub(base_timestamp), key, value, headers)?;

        if self.count == 0 {
            self.base_timestamp = timestamp;
            self.max_timestamp = timestamp;
        } else {
            self.max_timestamp = self.max_timestamp.max(timestamp);
        }
        self.count += 1;
        Ok(offset_delta)
    }

    /// Finishes the batch: the records section compressed with the codec, the header written
    /// (length, last offset delta, timestamps, producer fields, record count) and the CRC-32C
    /// over attributes..end. An empty builder gives no bytes (Kafka writes no empty batch).
    ///
    /// # Errors
    ///
    /// [`Error::Compression`] when the codec fails; [`Error::TooLong`] for a batch over
    /// `i32::MAX` bytes.
    pub fn finish(mut self) -> Result<Bytes> {
        if self.count == 0 {
            return Ok(Bytes::new());
        }
        if self.codec != Compression::None {
            let records = &self.buf[BATCH_HEADER_SIZE..];
            let mut packed = Vec::with_capacity(records.len() / 2 + 64);
            compression::compress_for_magic(self.codec, MAGIC_V2, records, &mut packed).map_err(|source| {
                Error::Compression {
                    location: MessageLocation { offset: self.base_offset, ..MessageLocation::default() },
                    codec: self.codec,
                    source,
                }
            })?;
            self.buf.truncate(BATCH_HEADER_SIZE);
            self.buf.extend_from_slice(&packed);
        }
        let length = self.buf.len() - LOG_OVERHEAD;
        let header = BatchHeader {
            base_offset: self.base_offset,
            batch_length: i32::try_from(length).map_err(|_| Error::TooLong {
                field: "batch_length",
                length,
                max: i32::MAX as usize,
            })?,
            partition_leader_epoch: self.partition_leader_epoch,
            magic: MAGIC_V2,
            crc: 0,
            attributes: self.flags | i16::from(self.codec.attribute_bits()),
            last_offset_delta: self.count - 1,
            base_timestamp: self.base_timestamp,
            max_timestamp: self.max_timestamp,
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            base_sequence: self.base_sequence,
            record_count: self.count,
        };
        header.write(&mut self.buf[..BATCH_HEADER_SIZE]);
        let crc = super::crc32c(&self.buf[ATTRIBUTES_AT..]);
        self.buf[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        Ok(self.buf.freeze())
    }
}

/// At most how many bytes [`write_record`] writes for these fields, whatever the deltas (every
/// varint at its widest): for a writer that makes room before it writes, without sizing the
/// record twice.
pub fn max_size_of_record(key: Option<&[u8]>, value: Option<&[u8]>, headers: &[HeaderRef<'_>]) -> usize {
    let field = |b: Option<&[u8]>| 5 + b.map_or(0, <[u8]>::len);
    let headers: usize = headers.iter().map(|(k, v)| field(Some(k.as_bytes())) + field(*v)).sum();
    // length, attributes, timestamp delta, offset delta, key, value, header count, headers
    5 + 1 + 10 + 5 + field(key) + field(value) + 5 + headers
}

/// Writes one record of a RecordBatch v2's records section, its length first, at the end of
/// `buf`, as [`RecordBatchBuilder::append_with_headers`] does: for a writer that keeps the
/// section itself (a producer writing each record where its partition's batch is, cut ahead:
/// see [`finish_records`]). `offset_delta` and `timestamp_delta` are from the batch's first
/// record. Returns how many bytes it wrote ([`size_of_record`]).
///
/// # Errors
///
/// [`Error::TooLong`] for a key, value, header or record over `i32::MAX` bytes; `buf` is left
/// as it was.
pub fn write_record(
    buf: &mut BytesMut,
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[HeaderRef<'_>],
) -> Result<usize> {
    let too_long = |field, length| Error::TooLong { field, length, max: i32::MAX as usize };
    let len_of = |field, b: Option<&[u8]>| match b {
        None => Ok(-1),
        Some(b) => i32::try_from(b.len()).map_err(|_| too_long(field, b.len())),
    };
    let key_len = len_of("key", key)?;
    let value_len = len_of("value", value)?;
    let header_count = i32::try_from(headers.len()).map_err(|_| too_long("headers", headers.len()))?;
    for (k, v) in headers {
        len_of("header key", Some(k.as_bytes()))?;
        len_of("header value", *v)?;
    }
    let body = body_size(offset_delta, timestamp_delta, key, value, headers);
    let body_len = i32::try_from(body).map_err(|_| too_long("record", body))?;
    let size = varint::len_i32(body_len) + body;
    buf.reserve(size);
    varint::put_i32(buf, body_len);
    buf.put_u8(0); // attributes: unused
    varint::put_i64(buf, timestamp_delta);
    varint::put_i32(buf, offset_delta);
    put_field(buf, key_len, key);
    put_field(buf, value_len, value);
    varint::put_i32(buf, header_count);
    for (k, v) in headers {
        put_field(buf, k.len() as i32, Some(k.as_bytes()));
        put_field(buf, v.map_or(-1, |v| v.len() as i32), *v);
    }
    Ok(size)
}

/// The size of the record at the start of `section` (a records section as [`write_record`]
/// writes it), its length prefix included; `None` when its length cannot be read or runs past
/// the end.
pub fn record_size_at(section: &[u8]) -> Option<usize> {
    record_len_at(section).map(|(prefix, body)| prefix + body)
}

/// The length prefix's size and the body's of the record at the start of `section`, the
/// whole of it within `section`.
fn record_len_at(section: &[u8]) -> Option<(usize, usize)> {
    let mut raw: u32 = 0;
    for (i, &byte) in section.iter().take(5).enumerate() {
        raw |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            let body = usize::try_from(((raw >> 1) as i32) ^ -((raw & 1) as i32)).ok()?;
            return ((i + 1).checked_add(body)? <= section.len()).then_some((i + 1, body));
        }
    }
    None
}

/// The records of a records section as [`write_record`] writes them (no batch header, no
/// CRC: a writer reading back its own section), their offsets from 0 and timestamps from
/// `base_timestamp`; keys, values and headers are slices of `section`. Stops after the first
/// error (a record cut short or malformed).
pub fn section_records(section: Bytes, base_timestamp: i64) -> impl Iterator<Item = Result<super::Record>> {
    let header = BatchHeader {
        base_offset: 0,
        batch_length: 0,
        partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
        magic: MAGIC_V2,
        crc: 0,
        attributes: 0,
        last_offset_delta: 0,
        base_timestamp,
        max_timestamp: base_timestamp,
        producer_id: NO_PRODUCER_ID,
        producer_epoch: NO_PRODUCER_EPOCH,
        base_sequence: NO_SEQUENCE,
        record_count: 0,
    };
    let mut rest = section;
    let mut failed = false;
    std::iter::from_fn(move || {
        if rest.is_empty() || failed {
            return None;
        }
        let malformed = |reason: String| Error::MalformedMessage { location: MessageLocation::default(), reason };
        let Some((prefix, body)) = record_len_at(&rest) else {
            failed = true;
            return Some(Err(malformed(format!("a record's length runs past the section's {} bytes", rest.len()))));
        };
        let mut record = rest.split_to(prefix + body);
        record.advance(prefix);
        let read = super::reader::v2_record(&header, record).map_err(malformed);
        failed = read.is_err();
        Some(read)
    })
}

/// What [`finish_records`] writes in a batch's header beside the records: how many, their
/// first and greatest timestamps, and for an idempotent producer its id, epoch and the first
/// record's sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordsSummary {
    /// Records in the section (at least 1).
    pub count: i32,
    /// The first record's timestamp (the one the deltas are from).
    pub base_timestamp: i64,
    /// The greatest of them.
    pub max_timestamp: i64,
    /// (producer id, epoch, base sequence), or none.
    pub producer: Option<(i64, i16, i32)>,
}

/// A RecordBatch v2 of a records section written by [`write_record`] (offset deltas 0 to
/// `count - 1`), given in parts (where they lie: a producer's log blocks): uncompressed, the
/// header followed by the parts themselves, no copy (`MessageSet::from_parts`); with a codec,
/// the header and the section compressed from the parts, in one allocation of their size. The
/// same bytes as a [`RecordBatchBuilder`] given those records.
///
/// # Errors
///
/// [`Error::Compression`] when the codec fails; [`Error::TooLong`] for a batch over
/// `i32::MAX` bytes. The parts are taken as they are (not read).
pub fn finish_records(parts: &[Bytes], summary: RecordsSummary, codec: Compression) -> Result<crate::MessageSet> {
    finish_records_with(parts, summary, codec, crate::MessageSet::copied)
}

/// [`finish_records`], a compressed batch's bytes handed to `keep`, which copies them where
/// the caller keeps its sets (a producer's blocks, in parts) and returns them as a set. The
/// codec writes into this thread's scratch buffer, and the batch is then one copy of exactly
/// its size: a buffer the codec grew as it wrote would be held in flight at its capacity,
/// whatever the batch compressed to.
///
/// # Errors
///
/// As [`finish_records`].
pub fn finish_records_with(
    parts: &[Bytes],
    summary: RecordsSummary,
    codec: Compression,
    keep: impl FnOnce(&[u8]) -> crate::MessageSet,
) -> Result<crate::MessageSet> {
    let (producer_id, producer_epoch, base_sequence) =
        summary.producer.unwrap_or((NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE));
    let header = |length: usize| -> Result<BatchHeader> {
        Ok(BatchHeader {
            base_offset: 0,
            batch_length: i32::try_from(length - LOG_OVERHEAD).map_err(|_| Error::TooLong {
                field: "batch_length",
                length: length - LOG_OVERHEAD,
                max: i32::MAX as usize,
            })?,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            magic: MAGIC_V2,
            crc: 0,
            attributes: i16::from(codec.attribute_bits()),
            last_offset_delta: summary.count - 1,
            base_timestamp: summary.base_timestamp,
            max_timestamp: summary.max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            record_count: summary.count,
        })
    };
    if codec != Compression::None {
        let slices: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
        return compression::with_scratch(|out| {
            out.resize(BATCH_HEADER_SIZE, 0);
            compression::compress_parts_for_magic(codec, MAGIC_V2, &slices, out)
                .map_err(|source| Error::Compression { location: MessageLocation::default(), codec, source })?;
            header(out.len())?.write(&mut out[..BATCH_HEADER_SIZE]);
            let crc = crc32c::crc32c(&out[ATTRIBUTES_AT..]);
            out[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
            Ok(keep(out))
        });
    }
    let length = BATCH_HEADER_SIZE + parts.iter().map(Bytes::len).sum::<usize>();
    let mut head = BytesMut::with_capacity(BATCH_HEADER_SIZE);
    head.put_bytes(0, BATCH_HEADER_SIZE);
    header(length)?.write(&mut head[..]);
    let crc = parts.iter().fold(crc32c::crc32c(&head[ATTRIBUTES_AT..]), |crc, part| crc32c::crc32c_append(crc, part));
    head[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    let mut all = Vec::with_capacity(parts.len() + 1);
    all.push(head.freeze());
    all.extend_from_slice(parts);
    Ok(crate::MessageSet::from_parts(all))
}

fn put_field(buf: &mut BytesMut, len: i32, bytes: Option<&[u8]>) {
    varint::put_i32(buf, len);
    if let Some(bytes) = bytes {
        buf.extend_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records as a producer keeps them: (timestamp, key, value, headers).
    type Rec = (i64, Option<&'static [u8]>, Option<&'static [u8]>, Vec<HeaderRef<'static>>);

    fn records() -> Vec<Rec> {
        vec![
            (1_700_000_000_100, Some(b"k0"), Some(b"first value"), vec![]),
            (1_700_000_000_090, None, Some(b"earlier, not first"), vec![("h", Some(b"1")), ("n", None)]),
            (1_700_000_000_250, Some(b""), None, vec![]),
            (1_700_000_000_250, Some(b"k3"), Some(&[7u8; 300]), vec![]),
        ]
    }

    /// The records written one after the other by `write_record`, cut into parts at `cuts`
    /// (record indexes), as a producer's log blocks hold them.
    fn section(records: &[Rec], cuts: &[usize]) -> Vec<Bytes> {
        let base = records[0].0;
        let mut parts = Vec::new();
        let mut buf = BytesMut::new();
        for (i, (ts, key, value, headers)) in records.iter().enumerate() {
            if cuts.contains(&i) && !buf.is_empty() {
                parts.push(buf.split().freeze());
            }
            let before = buf.len();
            let n = write_record(&mut buf, i as i32, ts - base, *key, *value, headers).unwrap();
            assert_eq!(n, buf.len() - before);
            assert_eq!(n, size_of_record(i as i32, ts - base, *key, *value, headers));
            assert!(n <= max_size_of_record(*key, *value, headers));
        }
        parts.push(buf.freeze());
        parts
    }

    #[test]
    fn records_written_ahead_and_finished_in_parts_are_the_builders_batch() {
        let records = records();
        for codec in [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
            for producer in [None, Some((42, 3, 1000))] {
                let mut builder = RecordBatchBuilder::new(codec);
                if let Some((id, epoch, sequence)) = producer {
                    builder = builder.producer(id, epoch, sequence);
                }
                for (ts, key, value, headers) in &records {
                    builder.append_with_headers(*ts, *key, *value, headers).unwrap();
                }
                let expected = builder.finish().unwrap();
                for cuts in [&[][..], &[1], &[1, 2, 3]] {
                    let parts = section(&records, cuts);
                    let summary = RecordsSummary {
                        count: 4,
                        base_timestamp: 1_700_000_000_100,
                        max_timestamp: 1_700_000_000_250,
                        producer,
                    };
                    let set = finish_records(&parts, summary, codec).unwrap();
                    assert_eq!(set.as_bytes(), &expected, "{codec:?} {producer:?} cut at {cuts:?}");
                    if codec == Compression::None {
                        assert_eq!(set.parts().len(), parts.len() + 1, "the header, then the parts as they are");
                        assert_eq!(set.parts()[1].as_ptr(), parts[0].as_ptr());
                    }
                }
            }
        }
    }

    #[test]
    fn a_compressed_batch_is_kept_once_whole_by_the_caller() {
        // records that compress (the same value again and again), enough for several snappy
        // and lz4 blocks
        let value = vec![b'x'; 1000];
        let mut buf = BytesMut::new();
        for i in 0..300 {
            write_record(&mut buf, i, 0, None, Some(&value), &[]).unwrap();
        }
        let parts = [buf.freeze()];
        let summary = RecordsSummary { count: 300, base_timestamp: 0, max_timestamp: 0, producer: None };
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
            let mut builder = RecordBatchBuilder::new(codec);
            for _ in 0..300 {
                builder.append_with_headers(0, None, Some(&value), &[]).unwrap();
            }
            let expected = builder.finish().unwrap();
            let mut asked = Vec::new();
            let set = finish_records_with(&parts, summary, codec, |bytes| {
                asked.push(bytes.len());
                crate::MessageSet::copied(bytes)
            })
            .unwrap();
            assert_eq!(set.as_bytes(), &expected, "{codec:?}: the builder's batch");
            assert_eq!(asked, [set.len()], "{codec:?}: kept once, the batch's whole size");
            assert_eq!(set.parts().len(), 1, "{codec:?}: the header and the compressed records together");
            assert!(set.len() < parts[0].len() / 4, "{codec:?}: compressed ({} bytes)", set.len());
        }
        // uncompressed, the parts go out as they are: no buffer asked for
        let set = finish_records_with(&parts, summary, Compression::None, |_| panic!("no buffer")).unwrap();
        assert_eq!(set.parts()[1].as_ptr(), parts[0].as_ptr());
    }

    #[test]
    fn no_record_is_larger_than_its_most() {
        for (_, key, value, headers) in records() {
            for (offset_delta, timestamp_delta) in [(0, 0), (i32::MAX, i64::MIN), (i32::MIN, i64::MAX), (-1, -1)] {
                let size = size_of_record(offset_delta, timestamp_delta, key, value, &headers);
                assert!(size <= max_size_of_record(key, value, &headers), "{offset_delta} {timestamp_delta}");
            }
        }
    }

    #[test]
    fn a_section_reads_back_as_its_records() {
        let records = records();
        let section = section(&records, &[])[0].clone();
        let read: Vec<_> = section_records(section.clone(), 1_700_000_000_100).map(Result::unwrap).collect();
        assert_eq!(read.len(), 4);
        for (i, (r, (ts, key, value, headers))) in read.iter().zip(&records).enumerate() {
            assert_eq!(r.offset, i as i64);
            assert_eq!(r.timestamp, *ts);
            assert_eq!(r.key.as_deref(), *key);
            assert_eq!(r.value.as_deref(), *value);
            assert_eq!(r.headers.len(), headers.len());
        }
        let cut = section.slice(..section.len() - 1);
        let read: Vec<_> = section_records(cut, 0).collect();
        assert_eq!(read.len(), 4);
        assert!(read[3].is_err(), "the last, cut short: an error, then nothing");
    }

    #[test]
    fn a_records_size_is_read_from_its_length_and_never_past_the_end() {
        let parts = section(&records(), &[]);
        let section = &parts[0][..];
        let mut at = 0;
        let mut sizes = Vec::new();
        while at < section.len() {
            let size = record_size_at(&section[at..]).unwrap();
            sizes.push(size);
            at += size;
        }
        assert_eq!(at, section.len());
        assert_eq!(sizes.len(), 4);
        assert_eq!(record_size_at(&section[..sizes[0] - 1]), None, "cut short");
        assert_eq!(record_size_at(&[]), None);
        assert_eq!(record_size_at(&[0x01]), None, "a negative length");
        assert_eq!(record_size_at(&[0xff; 5]), None, "no end to the varint in 5 bytes");
    }
}

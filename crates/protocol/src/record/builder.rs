//! Writing a RecordBatch v2 one record at a time.

use bytes::{BufMut, Bytes, BytesMut};

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
        let too_long = |field, length| Error::TooLong { field, length, max: i32::MAX as usize };
        let offset_delta = self.count;
        if offset_delta == i32::MAX {
            return Err(too_long("record count", self.count as usize));
        }
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
        let base_timestamp = if self.count == 0 { timestamp } else { self.base_timestamp };
        let timestamp_delta = timestamp.wrapping_sub(base_timestamp);
        let body = body_size(offset_delta, timestamp_delta, key, value, headers);
        let body_len = i32::try_from(body).map_err(|_| too_long("record", body))?;

        let buf = &mut self.buf;
        buf.reserve(varint::len_i32(body_len) + body);
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

fn put_field(buf: &mut BytesMut, len: i32, bytes: Option<&[u8]>) {
    varint::put_i32(buf, len);
    if let Some(bytes) = bytes {
        buf.extend_from_slice(bytes);
    }
}

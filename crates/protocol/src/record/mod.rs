//! Records as modern Kafka stores and sends them: RecordBatch v2 (magic 2, Kafka 0.11 and
//! later), read side by side with the MessageSet entries of magic 0 and 1 that a log written
//! by older clients still holds.
//!
//! ```text
//! RecordBatch v2 (61-byte header, then the records; CRC-32C covers attributes..end)
//!   base_offset int64 | batch_length int32 (bytes after this field) | partition_leader_epoch int32
//!   magic int8 = 2 | crc uint32 | attributes int16 | last_offset_delta int32
//!   base_timestamp int64 | max_timestamp int64 | producer_id int64 | producer_epoch int16
//!   base_sequence int32 | record_count int32 | records (compressed as one block with a codec)
//!   attributes: bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd), bit 3 timestamp type
//!   (1 = LogAppendTime), bit 4 transactional, bit 5 control, bit 6 delete horizon set
//!
//! Record (varint = zig-zag, as Protocol Buffers' sint32/sint64)
//!   length varint | attributes int8 (unused) | timestamp_delta varlong | offset_delta varint
//!   key_length varint (-1 = null) | key | value_length varint (-1 = null) | value
//!   header_count varint | [key_length varint | key (UTF-8) | value_length varint (-1 = null) | value]
//!
//! Control record (in a batch with the control bit): key = version int16 | type int16
//!   (0 abort, 1 commit), value = the marker (version int16 | coordinator_epoch int32)
//! ```
//!
//! Reading: [`Batches`] walks a fetched `records` blob of any magic (the magic is byte 16 of
//! every entry, batch or message) and yields a [`Batch`] per RecordBatch v2 and per top-level
//! message v0/v1 (a compressed wrapper is one batch of its inner messages, as Kafka models
//! it). Each batch's CRC is checked, a compressed one is decompressed within a byte budget,
//! and its [`Record`]s are read lazily, their keys, values and headers slices of the blob (no
//! copy for an uncompressed batch). A partial batch at the end of the blob (the broker cuts at
//! the fetch size) is dropped and counted, not an error.
//!
//! Writing: [`RecordBatchBuilder`] appends one record at a time straight into the buffer of
//! its batch (no allocation per record once the buffer has room) and finishes the batch:
//! compression of the records section, the header and the CRC-32C.
//!
//! Facts from the Kafka 3.7.0 captures (`tests/data/kafka-3.7.0`): librdkafka 2.16 writes
//! partition leader epoch 0 (Java writes -1), producer id/epoch/base sequence -1 when not
//! idempotent, base timestamp = the first record's timestamp; its snappy batches are one raw
//! snappy block without xerial framing, its lz4 frames carry the standard header checksum
//! (0x82 for FLG 0x60 BD 0x40); the broker (compression.type=producer) returns the producer's
//! batches byte for byte in Fetch responses.

mod batch;
mod builder;
mod lazy;
mod reader;

use std::fmt;

use bytes::Bytes;

pub use batch::{
    BatchHeader, ATTRIBUTE_CODEC_MASK, ATTRIBUTE_CONTROL, ATTRIBUTE_DELETE_HORIZON, ATTRIBUTE_LOG_APPEND_TIME,
    ATTRIBUTE_TRANSACTIONAL, BATCH_HEADER_SIZE, MAGIC_V2, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
    NO_SEQUENCE, NO_TIMESTAMP,
};
pub use builder::{
    finish_records, finish_records_with, max_size_of_record, record_size_at, section_records, size_of_record,
    write_record, HeaderRef, RecordBatchBuilder, RecordsSummary,
};
pub use lazy::{LazyBatch, LazyBatches, LazyRecords, StreamedRecords, WINDOW_CAPACITY};
pub use reader::{Batch, Batches, Records};

pub use crate::message::TimestampType;

use crate::error::{Error, Result};
use crate::schema::varint;

/// The CRC-32C (Castagnoli) of `bytes`, as RecordBatch v2 stores it: the `crc32c` crate, with
/// the SSE 4.2 / ARMv8 CRC instructions where the CPU has them (about 11 GB/s here, against
/// 0.2 GB/s for a table-driven software CRC), and a software fallback elsewhere.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// One record read from a batch. Key, value and headers share the bytes they were read from.
#[derive(Clone, PartialEq, Eq)]
pub struct Record {
    /// The record's offset in its partition.
    pub offset: i64,
    /// Milliseconds since the epoch (-1 for a message v0); see `timestamp_type`.
    pub timestamp: i64,
    /// How the timestamp was set.
    pub timestamp_type: TimestampType,
    /// The key; `None` is a null key.
    pub key: Option<Bytes>,
    /// The value; `None` is a null value (a tombstone in a compacted topic).
    pub value: Option<Bytes>,
    /// The headers (always empty below magic 2).
    pub headers: Headers,
}

impl crate::message::MessageSet {
    /// [`MessageSet::decode`](crate::message::MessageSet::decode), each message made a
    /// [`Record`] as it is read (timestamp -1, no headers): one list of the records, sized
    /// once from the entries' offsets, where decoding and then converting made two (the second
    /// a copy of every message into fresh memory: 5% of a one-partition snappy reader's CPU,
    /// and its page faults) and grew the first as it filled.
    ///
    /// # Errors
    ///
    /// As [`MessageSet::decode`](crate::message::MessageSet::decode).
    pub fn decode_records(
        &self,
        options: &crate::message::DecodeOptions,
    ) -> crate::Result<crate::message::DecodedMessages<Record>> {
        self.decode_as(options, self.offsets_spanned(options.min_offset))
    }
}

impl crate::message::DecodedMessages<Record> {
    /// The offset to fetch next: one past the last record, or `None` when none was read.
    pub fn next_offset(&self) -> Option<i64> {
        self.messages.last().map(|m| m.offset + 1)
    }
}

impl From<crate::message::MessageAndOffset> for Record {
    /// A Message v0 as a record: timestamp -1 (`NoTimestamp`), no headers.
    fn from(m: crate::message::MessageAndOffset) -> Record {
        Record {
            offset: m.offset,
            timestamp: NO_TIMESTAMP,
            timestamp_type: TimestampType::NoTimestamp,
            key: m.message.key,
            value: m.message.value,
            headers: Headers::default(),
        }
    }
}

impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Record")
            .field("offset", &self.offset)
            .field("timestamp", &self.timestamp)
            .field("timestamp_type", &self.timestamp_type)
            .field("key", &self.key.as_deref().map(String::from_utf8_lossy))
            .field("value", &self.value.as_deref().map(String::from_utf8_lossy))
            .field("headers", &self.headers)
            .finish()
    }
}

/// A record's headers as they were read: the bytes after the header count, checked when the
/// record was read, and walked again (without allocating) by [`Headers::iter`].
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Headers {
    bytes: Bytes,
    count: usize,
}

impl Headers {
    /// How many headers.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The headers in order.
    pub fn iter(&self) -> HeaderIter {
        HeaderIter { rest: self.bytes.clone(), left: self.count }
    }

    /// Reads `count` headers off the front of `body`, checking each, and returns them with
    /// the bytes they took.
    pub(crate) fn read(body: &mut Bytes, count: i32) -> Result<Headers> {
        // a header takes at least 2 bytes (two 1-byte lengths): no count can be honest above
        // half the bytes that remain
        let count = match usize::try_from(count) {
            Ok(n) if n <= body.len() / 2 => n,
            _ => {
                return Err(Error::InvalidLength { field: "header count", length: count.into(), remaining: body.len() })
            }
        };
        let mut rest = body.clone();
        for _ in 0..count {
            read_header(&mut rest)?;
        }
        let taken = body.len() - rest.len();
        let bytes = body.split_to(taken);
        Ok(Headers { bytes, count })
    }
}

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl IntoIterator for &Headers {
    type Item = Header;
    type IntoIter = HeaderIter;

    fn into_iter(self) -> HeaderIter {
        self.iter()
    }
}

/// One record header. Kafka's header keys are strings: [`Header::key_str`] reads it as UTF-8.
#[derive(Clone, PartialEq, Eq)]
pub struct Header {
    /// The key's bytes.
    pub key: Bytes,
    /// The value; `None` is null.
    pub value: Option<Bytes>,
}

impl Header {
    /// The key as a string; `None` when it is not UTF-8.
    pub fn key_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.key).ok()
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}={:?}", String::from_utf8_lossy(&self.key), self.value.as_deref().map(String::from_utf8_lossy))
    }
}

/// Iterator over [`Headers`].
#[derive(Debug, Clone)]
pub struct HeaderIter {
    rest: Bytes,
    left: usize,
}

impl Iterator for HeaderIter {
    type Item = Header;

    fn next(&mut self) -> Option<Header> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // checked when the record was read
        read_header(&mut self.rest).ok()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for HeaderIter {}

fn read_header(rest: &mut Bytes) -> Result<Header> {
    let key = match read_field(rest, "header key")? {
        Some(key) => key,
        None => return Err(Error::UnexpectedNull { field: "header key" }),
    };
    let value = read_field(rest, "header value")?;
    Ok(Header { key, value })
}

/// A varint-length field (-1 = null) off the front of `rest`, as a slice of it.
pub(crate) fn read_field(rest: &mut Bytes, field: &'static str) -> Result<Option<Bytes>> {
    let len = varint::get_i32(rest, field)?;
    match usize::try_from(len) {
        Ok(n) if n <= rest.len() => Ok(Some(rest.split_to(n))),
        _ if len == -1 => Ok(None),
        _ => Err(Error::InvalidLength { field, length: len.into(), remaining: rest.len() }),
    }
}

/// What a control record (in a batch with the control bit) says: its key's version and type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ControlRecord {
    /// The key's version (0).
    pub version: i16,
    /// What it marks.
    pub kind: ControlRecordType,
}

/// The type of a control record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    /// Type 0: the transaction before it in this partition was aborted.
    Abort,
    /// Type 1: the transaction before it in this partition was committed.
    Commit,
    /// Another type (KRaft's leader change, snapshot markers and later ones).
    Other(i16),
}

impl ControlRecordType {
    /// The type's number on the wire.
    pub const fn code(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::Other(code) => code,
        }
    }

    /// The type numbered `code`.
    pub const fn from_code(code: i16) -> ControlRecordType {
        match code {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            other => ControlRecordType::Other(other),
        }
    }
}

impl ControlRecord {
    /// Reads a control record's key (`version int16 | type int16`; bytes after them, from a
    /// later version, are ignored as Kafka does).
    ///
    /// # Errors
    ///
    /// [`Error::UnexpectedNull`] for a null key, [`Error::Truncated`] under 4 bytes,
    /// [`Error::InvalidLength`] for a negative version.
    pub fn parse(key: Option<&[u8]>) -> Result<ControlRecord> {
        let key = key.ok_or(Error::UnexpectedNull { field: "control record key" })?;
        let Some(&[v0, v1, t0, t1]) = key.first_chunk::<4>() else {
            return Err(Error::Truncated { field: "control record key", needed: 4, remaining: key.len() });
        };
        let version = i16::from_be_bytes([v0, v1]);
        if version < 0 {
            return Err(Error::InvalidLength { field: "control record version", length: version.into(), remaining: 2 });
        }
        Ok(ControlRecord { version, kind: ControlRecordType::from_code(i16::from_be_bytes([t0, t1])) })
    }

    /// The key bytes (version 0).
    pub fn key(kind: ControlRecordType) -> [u8; 4] {
        let mut key = [0u8; 4];
        key[2..].copy_from_slice(&kind.code().to_be_bytes());
        key
    }

    /// The value of a transaction marker (abort or commit): version 0 and the transaction
    /// coordinator's epoch.
    pub fn end_txn_marker_value(coordinator_epoch: i32) -> [u8; 6] {
        let mut value = [0u8; 6];
        value[2..].copy_from_slice(&coordinator_epoch.to_be_bytes());
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_decode_as_the_messages_do_converted() {
        use crate::message::{DecodeOptions, Message, MessageAndOffset, MessageSet};
        use crate::Compression;
        let messages: Vec<MessageAndOffset> = (0..5)
            .map(|i| {
                let value = Bytes::from(format!("v{i}"));
                MessageAndOffset::new(10 + i, Message::new(Some(Bytes::from_static(b"k")), Some(value)))
            })
            .collect();
        let wrapped = MessageSet::wrap(&messages[2..], Compression::Gzip).unwrap();
        let set = MessageSet::encode(&[messages[0].clone(), messages[1].clone(), wrapped.clone()]).unwrap();
        // from offset 11, and cut one byte short of its end: a skipped message, a partial tail
        let cut = MessageSet::from_bytes(set.as_bytes().slice(..set.len() - 1));
        let whole = MessageSet::encode(&messages[..2]).unwrap();
        for set in [set, cut, whole, MessageSet::new()] {
            let options = DecodeOptions::fetched("t", 0, 11);
            let (messages, records) = (set.decode(&options).unwrap(), set.decode_records(&options).unwrap());
            assert_eq!(records.messages, messages.messages.iter().cloned().map(Record::from).collect::<Vec<_>>());
            assert_eq!(
                (records.skipped, records.partial_trailing_bytes),
                (messages.skipped, messages.partial_trailing_bytes)
            );
            assert_eq!(records.next_offset(), messages.next_offset());
        }
        // the list is sized from the offsets of the whole entries (the wrapper's is its last
        // inner message's), held to a quarter of the bytes
        let set = MessageSet::encode(&[messages[0].clone(), messages[1].clone(), wrapped.clone()]).unwrap();
        assert_eq!((set.offsets_spanned(11), set.offsets_spanned(14), set.offsets_spanned(15)), (4, 1, 0));
        let cut = MessageSet::from_bytes(set.as_bytes().slice(..set.len() - 1));
        assert_eq!(cut.offsets_spanned(10), 2);
        let mut lying = set.as_bytes().to_vec();
        let last_entry = set.len() - MessageSet::encode(std::slice::from_ref(&wrapped)).unwrap().len();
        lying[last_entry..last_entry + 8].copy_from_slice(&i64::MAX.to_be_bytes());
        assert_eq!(MessageSet::from_bytes(Bytes::from(lying.clone())).offsets_spanned(10), lying.len() / 4);
        lying[last_entry..last_entry + 8].copy_from_slice(&i64::MIN.to_be_bytes());
        assert_eq!(MessageSet::from_bytes(Bytes::from(lying)).offsets_spanned(10), 0);
        let only = MessageSet::encode(&messages[..1]).unwrap();
        let cut = MessageSet::from_bytes(only.as_bytes().slice(..only.len() - 1));
        assert!(matches!(
            cut.decode_records(&DecodeOptions::default()),
            Err(crate::Error::MessageLargerThanFetch { .. })
        ));
    }

    #[test]
    fn crc32c_known_vectors() {
        // RFC 3720 (iSCSI) B.4 and the "check" value of CRC-32C
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62a8_ab43);
        let ascending: Vec<u8> = (0..32).collect();
        assert_eq!(crc32c(&ascending), 0x46dd_794e);
        let descending: Vec<u8> = (0..32).rev().collect();
        assert_eq!(crc32c(&descending), 0x113f_db5c);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn control_record_keys() {
        for (kind, code) in
            [(ControlRecordType::Abort, 0), (ControlRecordType::Commit, 1), (ControlRecordType::Other(3), 3)]
        {
            let key = ControlRecord::key(kind);
            assert_eq!(key, [0, 0, 0, code as u8]);
            assert_eq!(ControlRecord::parse(Some(&key)).unwrap(), ControlRecord { version: 0, kind });
        }
        assert_eq!(ControlRecord::parse(Some(&[0, 1, 0, 1, 9, 9])).unwrap().version, 1);
        assert!(ControlRecord::parse(None).is_err());
        assert!(ControlRecord::parse(Some(&[0, 0, 1])).is_err());
        assert!(ControlRecord::parse(Some(&[0xff, 0xff, 0, 0])).is_err());
        assert_eq!(ControlRecord::end_txn_marker_value(5), [0, 0, 0, 0, 0, 5]);
    }

    #[test]
    fn hostile_header_counts_are_refused_before_reading() {
        let mut body = Bytes::from_static(&[0, 0, 0, 0]);
        assert!(Headers::read(&mut body, 3).is_err());
        assert!(Headers::read(&mut body, -1).is_err());
        let h = Headers::read(&mut body, 2).unwrap();
        assert_eq!(h.len(), 2);
        assert!(body.is_empty());
        let all: Vec<Header> = h.iter().collect();
        assert_eq!(all[0], Header { key: Bytes::new(), value: Some(Bytes::new()) });
        // a null header key
        assert!(Headers::read(&mut Bytes::from_static(&[1, 0]), 1).is_err());
    }
}

//! The 61-byte header of a RecordBatch v2.

use crate::compression::{Compression, CompressionError};

use super::TimestampType;

/// The magic of a RecordBatch.
pub const MAGIC_V2: i8 = 2;
/// Bytes of a RecordBatch v2 header, up to and including the record count.
pub const BATCH_HEADER_SIZE: usize = 61;
/// Attribute bits 0-2: the codec.
pub const ATTRIBUTE_CODEC_MASK: i16 = 0x07;
/// Attribute bit 3: the timestamps are the broker's (LogAppendTime).
pub const ATTRIBUTE_LOG_APPEND_TIME: i16 = 0x08;
/// Attribute bit 4: the batch belongs to a transaction.
pub const ATTRIBUTE_TRANSACTIONAL: i16 = 0x10;
/// Attribute bit 5: the batch holds control records (transaction markers).
pub const ATTRIBUTE_CONTROL: i16 = 0x20;
/// Attribute bit 6: the base timestamp is the delete horizon set by log compaction.
pub const ATTRIBUTE_DELETE_HORIZON: i16 = 0x40;
/// Producer id of a batch written without idempotence.
pub const NO_PRODUCER_ID: i64 = -1;
/// Producer epoch of a batch written without idempotence.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// Base sequence of a batch written without idempotence.
pub const NO_SEQUENCE: i32 = -1;
/// Partition leader epoch Java's producer writes (the broker sets it).
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
/// The timestamp of a batch or record that has none.
pub const NO_TIMESTAMP: i64 = -1;

// offsets of the fields in the header
pub(crate) const LENGTH_AT: usize = 8;
pub(crate) const MAGIC_AT: usize = 16;
pub(crate) const CRC_AT: usize = 17;
pub(crate) const ATTRIBUTES_AT: usize = 21;
/// Bytes before the batch length's count starts (base offset and the length itself).
pub(crate) const LOG_OVERHEAD: usize = 12;

/// The header fields of a RecordBatch v2 (see the module docs for the layout). For a message
/// v0/v1 read as a batch, the same fields as Kafka gives them: the message's magic, CRC,
/// attributes and timestamp, its offset (or its inner messages' first and last), producer
/// fields -1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BatchHeader {
    /// Offset of the first record (producers write 0; the broker assigns it).
    pub base_offset: i64,
    /// Bytes of the batch after this field (for a message v0/v1: the message's size).
    pub batch_length: i32,
    /// The leader epoch of the broker that appended it (set by the broker).
    pub partition_leader_epoch: i32,
    /// 2 (0 or 1 for a message).
    pub magic: i8,
    /// CRC-32C of the attributes to the end (for a message v0/v1: its CRC-32).
    pub crc: u32,
    /// Codec, timestamp type, transactional, control and delete-horizon bits.
    pub attributes: i16,
    /// Offset of the last record minus `base_offset`.
    pub last_offset_delta: i32,
    /// Timestamp of the first record (or the delete horizon, see
    /// [`BatchHeader::delete_horizon_ms`]).
    pub base_timestamp: i64,
    /// The largest record timestamp (or the append time with LogAppendTime).
    pub max_timestamp: i64,
    /// The idempotent or transactional producer's id; -1 without.
    pub producer_id: i64,
    /// Its epoch; -1 without.
    pub producer_epoch: i16,
    /// Sequence number of the first record; -1 without.
    pub base_sequence: i32,
    /// How many records follow.
    pub record_count: i32,
}

impl BatchHeader {
    /// The header a Message v0/v1 read as a batch of one gets: at `offset`, `len` bytes with
    /// its offset and size, its magic, CRC, attributes and timestamp, no producer.
    pub(crate) fn of_legacy(offset: i64, len: usize, message: &crate::message::LegacyMessage) -> BatchHeader {
        BatchHeader {
            base_offset: offset,
            batch_length: (len - LOG_OVERHEAD) as i32,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            magic: message.magic,
            crc: message.crc,
            attributes: i16::from(message.attributes as u8),
            last_offset_delta: 0,
            base_timestamp: message.timestamp,
            max_timestamp: message.timestamp,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            record_count: 1,
        }
    }

    /// Reads the header fields from the first [`BATCH_HEADER_SIZE`] bytes of a batch.
    pub(crate) fn parse(h: &[u8; BATCH_HEADER_SIZE]) -> BatchHeader {
        let i64_at = |at: usize| i64::from_be_bytes(h[at..at + 8].try_into().expect("8 bytes"));
        let i32_at = |at: usize| i32::from_be_bytes(h[at..at + 4].try_into().expect("4 bytes"));
        let i16_at = |at: usize| i16::from_be_bytes(h[at..at + 2].try_into().expect("2 bytes"));
        BatchHeader {
            base_offset: i64_at(0),
            batch_length: i32_at(LENGTH_AT),
            partition_leader_epoch: i32_at(12),
            magic: h[MAGIC_AT] as i8,
            crc: i32_at(CRC_AT) as u32,
            attributes: i16_at(ATTRIBUTES_AT),
            last_offset_delta: i32_at(23),
            base_timestamp: i64_at(27),
            max_timestamp: i64_at(35),
            producer_id: i64_at(43),
            producer_epoch: i16_at(51),
            base_sequence: i32_at(53),
            record_count: i32_at(57),
        }
    }

    /// The records the whole RecordBatch v2 batches of a fetched `blob` say they hold, to size
    /// the list they are decoded into. The counts come from the broker unchecked, so the sum
    /// is held to a quarter of the bytes (records of 100-byte values would have to compress
    /// more than 25-fold for more to be needed, and then the list grows as it fills); a batch
    /// of another magic, and a partial trailing one, count nothing.
    pub fn claimed_record_count(blob: &[u8]) -> usize {
        let mut rest = blob;
        let mut claimed = 0usize;
        while let Some(head) = rest.first_chunk::<BATCH_HEADER_SIZE>() {
            let header = BatchHeader::parse(head);
            let Some(size) = usize::try_from(header.batch_length).ok().and_then(|l| l.checked_add(LOG_OVERHEAD)) else {
                break;
            };
            let Some(next) = rest.get(size..) else { break };
            if header.magic == MAGIC_V2 {
                claimed = claimed.saturating_add(usize::try_from(header.record_count).unwrap_or(0));
            }
            rest = next;
        }
        claimed.min(blob.len() / 4)
    }

    /// Writes the header fields into the first [`BATCH_HEADER_SIZE`] bytes of `h`.
    pub(crate) fn write(&self, h: &mut [u8]) {
        h[..8].copy_from_slice(&self.base_offset.to_be_bytes());
        h[8..12].copy_from_slice(&self.batch_length.to_be_bytes());
        h[12..16].copy_from_slice(&self.partition_leader_epoch.to_be_bytes());
        h[16] = self.magic as u8;
        h[17..21].copy_from_slice(&self.crc.to_be_bytes());
        h[21..23].copy_from_slice(&self.attributes.to_be_bytes());
        h[23..27].copy_from_slice(&self.last_offset_delta.to_be_bytes());
        h[27..35].copy_from_slice(&self.base_timestamp.to_be_bytes());
        h[35..43].copy_from_slice(&self.max_timestamp.to_be_bytes());
        h[43..51].copy_from_slice(&self.producer_id.to_be_bytes());
        h[51..53].copy_from_slice(&self.producer_epoch.to_be_bytes());
        h[53..57].copy_from_slice(&self.base_sequence.to_be_bytes());
        h[57..61].copy_from_slice(&self.record_count.to_be_bytes());
    }

    /// The codec of the records.
    ///
    /// # Errors
    ///
    /// [`CompressionError::UnknownCodec`] for codec bits 5 to 7 (4 to 7 below magic 2).
    pub fn compression(&self) -> Result<Compression, CompressionError> {
        if self.magic >= MAGIC_V2 {
            Compression::from_batch_attributes(self.attributes)
        } else {
            Compression::from_attributes(self.attributes as i8)
        }
    }

    /// How the timestamps were set: [`TimestampType::NoTimestamp`] for magic 0, bit 3 for the
    /// others.
    pub fn timestamp_type(&self) -> TimestampType {
        if self.magic == 0 {
            TimestampType::NoTimestamp
        } else {
            TimestampType::from_attributes(self.attributes)
        }
    }

    /// True when the batch belongs to a transaction (bit 4; magic 2 only).
    pub fn is_transactional(&self) -> bool {
        self.magic >= MAGIC_V2 && self.attributes & ATTRIBUTE_TRANSACTIONAL != 0
    }

    /// True when the batch holds control records (bit 5; magic 2 only).
    pub fn is_control(&self) -> bool {
        self.magic >= MAGIC_V2 && self.attributes & ATTRIBUTE_CONTROL != 0
    }

    /// The delete horizon compaction set (the base timestamp when bit 6 is set).
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        (self.magic >= MAGIC_V2 && self.attributes & ATTRIBUTE_DELETE_HORIZON != 0).then_some(self.base_timestamp)
    }

    /// Offset of the last record (`base_offset + last_offset_delta`).
    pub fn last_offset(&self) -> i64 {
        self.base_offset.wrapping_add(i64::from(self.last_offset_delta))
    }

    /// The offset after the batch: where a fetch goes on.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// True for a batch of an idempotent or transactional producer.
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_reads_its_bits() {
        let h = BatchHeader {
            base_offset: 42,
            batch_length: 100,
            partition_leader_epoch: 3,
            magic: 2,
            crc: 0xdead_beef,
            attributes: 4 | ATTRIBUTE_LOG_APPEND_TIME | ATTRIBUTE_TRANSACTIONAL | ATTRIBUTE_CONTROL,
            last_offset_delta: 9,
            base_timestamp: 1_700_000_000_000,
            max_timestamp: 1_700_000_000_009,
            producer_id: 7,
            producer_epoch: 1,
            base_sequence: 30,
            record_count: 10,
        };
        let mut bytes = [0u8; BATCH_HEADER_SIZE];
        h.write(&mut bytes);
        assert_eq!(BatchHeader::parse(&bytes), h);
        assert_eq!(h.compression().unwrap(), Compression::Zstd);
        assert_eq!(h.timestamp_type(), TimestampType::LogAppendTime);
        assert!(h.is_transactional() && h.is_control() && h.has_producer_id());
        assert_eq!(h.delete_horizon_ms(), None);
        assert_eq!((h.last_offset(), h.next_offset()), (51, 52));
        let horizon = BatchHeader { attributes: ATTRIBUTE_DELETE_HORIZON, ..h };
        assert_eq!(horizon.delete_horizon_ms(), Some(1_700_000_000_000));
        assert_eq!(horizon.timestamp_type(), TimestampType::CreateTime);
        // a message v1 has no transactional/control bits and no zstd
        let v1 = BatchHeader { magic: 1, ..h };
        assert!(!v1.is_transactional() && !v1.is_control());
        assert!(v1.compression().is_err());
        assert_eq!(BatchHeader { magic: 0, ..h }.timestamp_type(), TimestampType::NoTimestamp);
    }
}

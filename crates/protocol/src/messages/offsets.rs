//! API key 2 — Offsets (`getOffsetsBefore`, later ListOffsets). Versions: v0 (Kafka 0.8.2).
//!
//! ```text
//! OffsetsRequest v0  => replica_id int32,
//!                       [topic string, [partition int32, time int64, max_number_of_offsets int32]]
//! OffsetsResponse v0 => [topic string, [partition int32, error_code int16, [offset int64]]]
//! ```
//!
//! `time` -1 asks for the log end offset ([`LATEST_TIME`]), -2 for the earliest
//! ([`EARLIEST_TIME`]); a millisecond time returns segment base offsets (newest first), not
//! exact ones. Only the partition's leader answers; a follower answers 6, a broker with no
//! replica 3, both with an empty offset array.
//! Guide: <https://cwiki.apache.org/confluence/display/KAFKA/A+Guide+To+The+Kafka+Protocol#AGuideToTheKafkaProtocol-OffsetAPI>

use bytes::{BufMut, Bytes, BytesMut};

use super::{decode_topics, encode_topics, PartitionEntry, TopicPartitions};
use crate::error::Result;
use crate::error_code::ErrorCode;
use crate::frame::{check_version, ApiKey, Decode, Encode, Request, VersionRange};
use crate::wire;

/// `time` that asks for the log end offset (the offset the next message will get).
pub const LATEST_TIME: i64 = -1;
/// `time` that asks for the earliest offset still kept.
pub const EARLIEST_TIME: i64 = -2;

/// Offsets request (v0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetsRequest {
    /// v0+. -1 for a client ([`super::CONSUMER_REPLICA_ID`]).
    pub replica_id: i32,
    /// v0+. What to look up.
    pub topics: Vec<OffsetsTopic>,
}

/// The partitions to look up of one topic.
pub type OffsetsTopic = TopicPartitions<OffsetsPartition>;

/// One partition to look up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetsPartition {
    /// v0+. Partition id.
    pub partition: i32,
    /// v0+. [`LATEST_TIME`], [`EARLIEST_TIME`] or a time in ms since the epoch.
    pub time: i64,
    /// v0+. Most offsets to return.
    pub max_number_of_offsets: i32,
}

impl PartitionEntry for OffsetsPartition {
    const MIN_SIZE: usize = 4 + 8 + 4;

    fn encode_entry(&self, _version: i16, buf: &mut BytesMut) -> Result<()> {
        buf.put_i32(self.partition);
        buf.put_i64(self.time);
        buf.put_i32(self.max_number_of_offsets);
        Ok(())
    }

    fn decode_entry(_version: i16, buf: &mut Bytes) -> Result<Self> {
        Ok(OffsetsPartition {
            partition: wire::get_i32(buf, "partition")?,
            time: wire::get_i64(buf, "time")?,
            max_number_of_offsets: wire::get_i32(buf, "max_number_of_offsets")?,
        })
    }
}

impl Request for OffsetsRequest {
    const KEY: ApiKey = ApiKey::Offsets;
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 0 };
    type Response = OffsetsResponse;
}

impl Encode for OffsetsRequest {
    fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        check_version::<Self>(version)?;
        buf.put_i32(self.replica_id);
        encode_topics(&self.topics, version, buf)
    }
}

impl Decode for OffsetsRequest {
    fn decode(version: i16, buf: &mut Bytes) -> Result<Self> {
        check_version::<Self>(version)?;
        Ok(OffsetsRequest { replica_id: wire::get_i32(buf, "replica_id")?, topics: decode_topics(version, buf)? })
    }
}

/// Offsets response (v0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetsResponse {
    /// v0+. Offsets per topic and partition, in the broker's order.
    pub topics: Vec<OffsetsResponseTopic>,
}

super::topics_body!(OffsetsResponse, OffsetsRequest);

/// The offsets of one topic.
pub type OffsetsResponseTopic = TopicPartitions<OffsetsResponsePartition>;

/// The offsets of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetsResponsePartition {
    /// v0+. Partition id.
    pub partition: i32,
    /// v0+. 0, or an [`ErrorCode`].
    pub error_code: i16,
    /// v0+. Offsets, newest first; empty on error.
    pub offsets: Vec<i64>,
}

impl OffsetsResponsePartition {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

impl PartitionEntry for OffsetsResponsePartition {
    const MIN_SIZE: usize = 4 + 2 + 4;

    fn encode_entry(&self, _version: i16, buf: &mut BytesMut) -> Result<()> {
        buf.put_i32(self.partition);
        buf.put_i16(self.error_code);
        wire::put_array(buf, "offsets", &self.offsets, |buf, o| {
            buf.put_i64(*o);
            Ok(())
        })
    }

    fn decode_entry(_version: i16, buf: &mut Bytes) -> Result<Self> {
        Ok(OffsetsResponsePartition {
            partition: wire::get_i32(buf, "partition")?,
            error_code: wire::get_i16(buf, "error_code")?,
            offsets: wire::get_array(buf, "offsets", 8, |buf| wire::get_i64(buf, "offset"))?,
        })
    }
}

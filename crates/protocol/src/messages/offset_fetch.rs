//! API key 9 — OffsetFetch. Versions: v0 (reads ZooKeeper) and v1 (reads `__consumer_offsets`
//! through the coordinator) of Kafka 0.8.2; both have the same layout.
//!
//! ```text
//! OffsetFetchRequest v0, v1  => group_id string, [topic string, [partition int32]]
//! OffsetFetchResponse v0, v1 => [topic string, [partition int32, offset int64,
//!                                                metadata string, error_code int16]]
//! ```
//!
//! A never-committed partition answers offset -1 with error 3 in v0, error 0 in v1.
//! Guide: <https://cwiki.apache.org/confluence/display/KAFKA/A+Guide+To+The+Kafka+Protocol#AGuideToTheKafkaProtocol-OffsetFetchRequest>

use bytes::{BufMut, Bytes, BytesMut};

use super::{decode_topics, encode_topics, PartitionEntry, TopicPartitions};
use crate::error::Result;
use crate::error_code::ErrorCode;
use crate::frame::{check_version, ApiKey, Decode, Encode, Request, VersionRange};
use crate::wire;

/// OffsetFetch request (v0, v1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchRequest {
    /// v0+. Consumer group.
    pub group_id: String,
    /// v0+. Partitions whose offsets are wanted.
    pub topics: Vec<OffsetFetchTopic>,
}

/// The partitions of one topic whose offsets are wanted.
pub type OffsetFetchTopic = TopicPartitions<i32>;

impl PartitionEntry for i32 {
    const MIN_SIZE: usize = 4;

    fn encode_entry(&self, _version: i16, buf: &mut BytesMut) -> Result<()> {
        buf.put_i32(*self);
        Ok(())
    }

    fn decode_entry(_version: i16, buf: &mut Bytes) -> Result<Self> {
        wire::get_i32(buf, "partition")
    }
}

impl Request for OffsetFetchRequest {
    const KEY: ApiKey = ApiKey::OffsetFetch;
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 1 };
    type Response = OffsetFetchResponse;
}

impl Encode for OffsetFetchRequest {
    fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        check_version::<Self>(version)?;
        wire::put_string(buf, "group_id", &self.group_id)?;
        encode_topics(&self.topics, version, buf)
    }
}

impl Decode for OffsetFetchRequest {
    fn decode(version: i16, buf: &mut Bytes) -> Result<Self> {
        check_version::<Self>(version)?;
        Ok(OffsetFetchRequest { group_id: wire::get_string(buf, "group_id")?, topics: decode_topics(version, buf)? })
    }
}

/// OffsetFetch response (v0, v1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchResponse {
    /// v0+. Offsets per topic and partition.
    pub topics: Vec<OffsetFetchResponseTopic>,
}

super::topics_body!(OffsetFetchResponse, OffsetFetchRequest);

/// The offsets of one topic.
pub type OffsetFetchResponseTopic = TopicPartitions<OffsetFetchResponsePartition>;

/// One partition's committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchResponsePartition {
    /// v0+. Partition id.
    pub partition: i32,
    /// v0+. The committed offset, -1 for none.
    pub offset: i64,
    /// v0+. The committed metadata ("" in v0).
    pub metadata: String,
    /// v0+. 0, or an [`ErrorCode`].
    pub error_code: i16,
}

impl OffsetFetchResponsePartition {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

impl PartitionEntry for OffsetFetchResponsePartition {
    const MIN_SIZE: usize = 4 + 8 + 2 + 2;

    fn encode_entry(&self, _version: i16, buf: &mut BytesMut) -> Result<()> {
        buf.put_i32(self.partition);
        buf.put_i64(self.offset);
        wire::put_string(buf, "metadata", &self.metadata)?;
        buf.put_i16(self.error_code);
        Ok(())
    }

    fn decode_entry(_version: i16, buf: &mut Bytes) -> Result<Self> {
        Ok(OffsetFetchResponsePartition {
            partition: wire::get_i32(buf, "partition")?,
            offset: wire::get_i64(buf, "offset")?,
            metadata: wire::get_string(buf, "metadata")?,
            error_code: wire::get_i16(buf, "error_code")?,
        })
    }
}

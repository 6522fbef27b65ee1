//! API key 8 — OffsetCommit. Versions: v0 (offsets stored in ZooKeeper) and v1 (stored in
//! Kafka's `__consumer_offsets`, through the group's coordinator) of Kafka 0.8.2.
//!
//! ```text
//! OffsetCommitRequest v0  => group_id string,
//!                            [topic string, [partition int32, offset int64, metadata string]]
//! OffsetCommitRequest v1  => group_id string, group_generation_id int32, consumer_id string,
//!                            [topic string, [partition int32, offset int64, timestamp int64,
//!                                            metadata string]]
//! OffsetCommitResponse v0, v1 => [topic string, [partition int32, error_code int16]]
//! ```
//!
//! v0 keeps only the offset (the metadata is dropped, OffsetFetch v0 answers ""); v1 keeps the
//! metadata and must go to the coordinator (others answer 16).
//! Guide: <https://cwiki.apache.org/confluence/display/KAFKA/A+Guide+To+The+Kafka+Protocol#AGuideToTheKafkaProtocol-OffsetCommitRequest>

use bytes::{BufMut, Bytes, BytesMut};

use super::{decode_topics, encode_topics, PartitionEntry, TopicPartitions};
use crate::error::{Error, Result};
use crate::error_code::ErrorCode;
use crate::frame::{check_version, ApiKey, Decode, Encode, Request, VersionRange};
use crate::wire;

/// `group_generation_id` that v0 implies (and v1 sends when not in a managed group).
pub const DEFAULT_GENERATION_ID: i32 = -1;
/// `consumer_id` that v0 implies.
pub const DEFAULT_CONSUMER_ID: &str = "";
/// Per-partition `timestamp` that v0 implies; in v1, -1 asks the broker to use its own time.
pub const DEFAULT_TIMESTAMP: i64 = -1;

/// OffsetCommit request (v0, v1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitRequest {
    /// v0+. Consumer group.
    pub group_id: String,
    /// v1+. Generation of the group ([`DEFAULT_GENERATION_ID`] in v0).
    pub group_generation_id: i32,
    /// v1+. Member id ([`DEFAULT_CONSUMER_ID`] in v0).
    pub consumer_id: String,
    /// v0+. Offsets per topic and partition.
    pub topics: Vec<OffsetCommitTopic>,
}

/// The offsets to commit of one topic.
pub type OffsetCommitTopic = TopicPartitions<OffsetCommitPartition>;

/// One partition's offset to commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitPartition {
    /// v0+. Partition id.
    pub partition: i32,
    /// v0+. The next offset to read.
    pub offset: i64,
    /// v1+. Commit time in ms; -1 = the broker's time ([`DEFAULT_TIMESTAMP`] in v0).
    pub timestamp: i64,
    /// v0+. Free-form metadata (dropped by v0's ZooKeeper storage).
    pub metadata: String,
}

impl PartitionEntry for OffsetCommitPartition {
    const MIN_SIZE: usize = 4 + 8 + 2;

    fn encode_entry(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        buf.put_i32(self.partition);
        buf.put_i64(self.offset);
        if version >= 1 {
            buf.put_i64(self.timestamp);
        } else if self.timestamp != DEFAULT_TIMESTAMP {
            return Err(not_in_v0("timestamp", self.timestamp.to_string()));
        }
        wire::put_string(buf, "metadata", &self.metadata)
    }

    fn decode_entry(version: i16, buf: &mut Bytes) -> Result<Self> {
        let partition = wire::get_i32(buf, "partition")?;
        let offset = wire::get_i64(buf, "offset")?;
        let timestamp = if version >= 1 { wire::get_i64(buf, "timestamp")? } else { DEFAULT_TIMESTAMP };
        Ok(OffsetCommitPartition { partition, offset, timestamp, metadata: wire::get_string(buf, "metadata")? })
    }
}

fn not_in_v0(field: &'static str, value: String) -> Error {
    Error::FieldNotInVersion { api: ApiKey::OffsetCommit, version: 0, field, value }
}

impl Request for OffsetCommitRequest {
    const KEY: ApiKey = ApiKey::OffsetCommit;
    const VERSIONS: VersionRange = VersionRange { min: 0, max: 1 };
    type Response = OffsetCommitResponse;
}

impl Encode for OffsetCommitRequest {
    fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        check_version::<Self>(version)?;
        wire::put_string(buf, "group_id", &self.group_id)?;
        if version >= 1 {
            buf.put_i32(self.group_generation_id);
            wire::put_string(buf, "consumer_id", &self.consumer_id)?;
        } else if self.group_generation_id != DEFAULT_GENERATION_ID {
            return Err(not_in_v0("group_generation_id", self.group_generation_id.to_string()));
        } else if self.consumer_id != DEFAULT_CONSUMER_ID {
            return Err(not_in_v0("consumer_id", format!("{:?}", self.consumer_id)));
        }
        encode_topics(&self.topics, version, buf)
    }
}

impl Decode for OffsetCommitRequest {
    fn decode(version: i16, buf: &mut Bytes) -> Result<Self> {
        check_version::<Self>(version)?;
        let group_id = wire::get_string(buf, "group_id")?;
        let (group_generation_id, consumer_id) = if version >= 1 {
            (wire::get_i32(buf, "group_generation_id")?, wire::get_string(buf, "consumer_id")?)
        } else {
            (DEFAULT_GENERATION_ID, DEFAULT_CONSUMER_ID.to_owned())
        };
        Ok(OffsetCommitRequest { group_id, group_generation_id, consumer_id, topics: decode_topics(version, buf)? })
    }
}

/// OffsetCommit response (v0, v1: the same layout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitResponse {
    /// v0+. Results per topic and partition.
    pub topics: Vec<OffsetCommitResponseTopic>,
}

super::topics_body!(OffsetCommitResponse, OffsetCommitRequest);

/// The results of one topic.
pub type OffsetCommitResponseTopic = TopicPartitions<OffsetCommitResponsePartition>;

/// The result of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetCommitResponsePartition {
    /// v0+. Partition id.
    pub partition: i32,
    /// v0+. 0, or an [`ErrorCode`].
    pub error_code: i16,
}

impl OffsetCommitResponsePartition {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

impl PartitionEntry for OffsetCommitResponsePartition {
    const MIN_SIZE: usize = 4 + 2;

    fn encode_entry(&self, _version: i16, buf: &mut BytesMut) -> Result<()> {
        buf.put_i32(self.partition);
        buf.put_i16(self.error_code);
        Ok(())
    }

    fn decode_entry(_version: i16, buf: &mut Bytes) -> Result<Self> {
        Ok(OffsetCommitResponsePartition {
            partition: wire::get_i32(buf, "partition")?,
            error_code: wire::get_i16(buf, "error_code")?,
        })
    }
}

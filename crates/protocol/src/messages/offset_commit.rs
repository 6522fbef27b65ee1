//! API key 8 — OffsetCommit. Versions: v0-v9 (v8+ flexible). v0 stores offsets in ZooKeeper,
//! v1+ in Kafka's `__consumer_offsets` through the group's coordinator.
//!
//! ```text
//! OffsetCommitRequest v0  => group_id string,
//!                            [topic string, [partition int32, offset int64, metadata string]]
//! OffsetCommitRequest v1  => group_id, group_generation_id int32, consumer_id string,
//!                            [topic, [partition, offset, timestamp int64, metadata]]
//! OffsetCommitRequest v2-v4 => group_id, group_generation_id, consumer_id, retention_time_ms int64,
//!                            [topic, [partition, offset, metadata]]
//! OffsetCommitRequest v5  => group_id, group_generation_id, consumer_id, [topic, [partition, offset, metadata]]
//! OffsetCommitRequest v6  => ... [topic, [partition, offset, leader_epoch int32, metadata]]
//! OffsetCommitRequest v7+ => group_id, group_generation_id, consumer_id, group_instance_id nullable string,
//!                            [topic, [partition, offset, leader_epoch, metadata]]   (v8+: compact, tags)
//! OffsetCommitResponse v0-v2 => [topic string, [partition int32, error_code int16]]
//! OffsetCommitResponse v3+   => throttle_time_ms int32, [topic, [partition, error_code]]
//! ```
//!
//! v0 keeps only the offset (the metadata is dropped, OffsetFetch v0 answers ""); v1+ keeps the
//! metadata and must go to the coordinator (others answer 16). Kafka names the generation
//! `GenerationIdOrMemberEpoch` (a member epoch with KIP-848's protocol, v9+) and the consumer id
//! `MemberId`; the 0.8.2 names are kept here.
//!
//! Kafka 3.7.0 (`tests/data/kafka-3.7.0`): librdkafka commits with v9, kafka-python with v8, both
//! with leader epoch 0 and metadata "" (not null). The broker answers topics in neither request
//! nor sorted order: match results by topic and partition. A commit with a generation and
//! member unknown to an Empty group answers 25 UNKNOWN_MEMBER_ID for every partition.
//! Guide: <https://cwiki.apache.org/confluence/display/KAFKA/A+Guide+To+The+Kafka+Protocol#AGuideToTheKafkaProtocol-OffsetCommitRequest>

use crate::api_key::ApiKey;
use crate::error_code::ErrorCode;
use crate::message;

/// `group_generation_id` that v0 implies (and v1+ sends when not in a managed group).
pub const DEFAULT_GENERATION_ID: i32 = -1;
/// `consumer_id` that v0 implies.
pub const DEFAULT_CONSUMER_ID: &str = "";
/// Per-partition `timestamp` that v0 and v2+ imply; in v1, -1 asks the broker to use its own time.
pub const DEFAULT_TIMESTAMP: i64 = -1;

message! {
    /// OffsetCommit request.
    pub struct OffsetCommitRequest {
        /// v0+. Consumer group.
        group_id: String [0],
        /// v1+. Generation of the group, or the member epoch (KIP-848) ([`DEFAULT_GENERATION_ID`]
        /// in v0). Kafka: `GenerationIdOrMemberEpoch`.
        group_generation_id: i32 [1] = DEFAULT_GENERATION_ID,
        /// v1+. Member id ([`DEFAULT_CONSUMER_ID`] in v0). Kafka: `MemberId`.
        consumer_id: String [1],
        /// v7+. The static member's instance id, or null.
        group_instance_id: Option<String> [7],
        /// v2-v4. How long to keep the offsets in ms; -1 = the broker's `offsets.retention.minutes`.
        retention_time_ms: i64 [2, 4] = -1,
        /// v0+. Offsets per topic and partition.
        topics: Vec<OffsetCommitTopic> [0],
    }
}

message! {
    /// The offsets to commit of one topic.
    pub struct OffsetCommitTopic {
        /// v0+. Topic name.
        topic: String [0],
        /// v0+. Per-partition offsets.
        partitions: Vec<OffsetCommitPartition> [0],
    }
}

message! {
    /// One partition's offset to commit.
    pub struct OffsetCommitPartition {
        /// v0+. Partition id.
        partition: i32 [0],
        /// v0+. The next offset to read.
        offset: i64 [0],
        /// v6+. The leader epoch of the last record consumed, -1 when unknown.
        leader_epoch: i32 [6] = -1,
        /// v1 only. Commit time in ms; -1 = the broker's time ([`DEFAULT_TIMESTAMP`] elsewhere).
        timestamp: i64 [1, 1] = DEFAULT_TIMESTAMP,
        /// v0+. Free-form metadata, or null (dropped by v0's ZooKeeper storage).
        metadata: Option<String> [0],
    }
}

message! {
    /// OffsetCommit response.
    pub struct OffsetCommitResponse {
        /// v3+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [3],
        /// v0+. Results per topic and partition.
        topics: Vec<OffsetCommitResponseTopic> [0],
    }
}

message! {
    /// The results of one topic.
    pub struct OffsetCommitResponseTopic {
        /// v0+. Topic name.
        topic: String [0],
        /// v0+. Per-partition results.
        partitions: Vec<OffsetCommitResponsePartition> [0],
    }
}

message! {
    /// The result of one partition.
    pub struct OffsetCommitResponsePartition {
        /// v0+. Partition id.
        partition: i32 [0],
        /// v0+. 0, or an [`ErrorCode`].
        error_code: i16 [0],
    }
}

crate::top_level!(request OffsetCommitRequest: ApiKey::OffsetCommit, versions 0..=9, flexible Some(8), response OffsetCommitResponse);
crate::top_level!(response OffsetCommitResponse for OffsetCommitRequest);

impl OffsetCommitTopic {
    /// A topic with its partitions' offsets.
    pub fn new(topic: impl Into<String>, partitions: Vec<OffsetCommitPartition>) -> Self {
        OffsetCommitTopic { topic: topic.into(), partitions, ..Default::default() }
    }
}

impl OffsetCommitPartition {
    /// The offset of `partition` with metadata `metadata` and every other field at its default
    /// (no timestamp, no leader epoch): what every version can carry.
    pub fn new(partition: i32, offset: i64, metadata: impl Into<String>) -> Self {
        OffsetCommitPartition { partition, offset, metadata: Some(metadata.into()), ..Default::default() }
    }
}

impl OffsetCommitResponseTopic {
    /// A topic with its partitions' results.
    pub fn new(topic: impl Into<String>, partitions: Vec<OffsetCommitResponsePartition>) -> Self {
        OffsetCommitResponseTopic { topic: topic.into(), partitions, ..Default::default() }
    }
}

impl OffsetCommitResponsePartition {
    /// The result of `partition`.
    pub fn new(partition: i32, error_code: i16) -> Self {
        OffsetCommitResponsePartition { partition, error_code, ..Default::default() }
    }

    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

//! API key 9 — OffsetFetch. Versions: v0-v9 (v6+ flexible, v8+ batched by group). v0 reads
//! ZooKeeper, v1+ `__consumer_offsets` through the coordinator.
//!
//! ```text
//! OffsetFetchRequest v0-v1  => group_id string, [topic string, [partition int32]]
//! OffsetFetchRequest v2-v6  => group_id, [topic, [partition]] (null array: every topic)
//! OffsetFetchRequest v7     => group_id, [topic, [partition]], require_stable bool
//! OffsetFetchRequest v8+    => [group_id, (v9+ member_id nullable string, member_epoch int32),
//!                               [topic, [partition]] (nullable), tags], require_stable, tags
//! OffsetFetchResponse v0-v1 => [topic string, [partition int32, offset int64, metadata string,
//!                                               error_code int16]]
//! OffsetFetchResponse v2-v7 => (v3+ throttle_time_ms int32), [topic, [partition, offset,
//!                              (v5+ leader_epoch int32), metadata, error_code]], error_code int16
//! OffsetFetchResponse v8+   => throttle_time_ms, [group_id, [topic, [partition, offset,
//!                              leader_epoch, metadata, error_code, tags], tags], error_code, tags], tags
//! ```
//!
//! A never-committed partition answers offset -1 with error 3 in v0, error 0 in v1+.
//!
//! Kafka 3.7.0 (`tests/data/kafka-3.7.0`): librdkafka asks with v9, kafka-python with v8 (one
//! group each). A never-committed partition answers offset -1, leader epoch -1, metadata "" and
//! error 0; librdkafka's AdminClient asks for every topic of a group with a null topic array
//! (member id null, member epoch -1).
//! Guide: <https://cwiki.apache.org/confluence/display/KAFKA/A+Guide+To+The+Kafka+Protocol#AGuideToTheKafkaProtocol-OffsetFetchRequest>

use crate::api_key::ApiKey;
use crate::error_code::ErrorCode;
use crate::message;

message! {
    /// OffsetFetch request.
    pub struct OffsetFetchRequest {
        /// v0-v7. Consumer group.
        group_id: String [0, 7],
        /// v0-v7. Partitions whose offsets are wanted; null (v2+) for every partition the group
        /// has committed.
        topics: Option<Vec<OffsetFetchTopic>> [0, 7] null [2, 7],
        /// v8+. Groups whose offsets are wanted.
        groups: Vec<OffsetFetchGroup> [8],
        /// v7+. True to have the broker answer 88 UNSTABLE_OFFSET_COMMIT for partitions with a
        /// pending transactional commit rather than their last stable offset.
        require_stable: bool [7],
    }
}

message! {
    /// One group whose offsets are wanted (v8+).
    pub struct OffsetFetchGroup {
        /// v8+. Consumer group.
        group_id: String [8],
        /// v9+. The member id with KIP-848's protocol, else null.
        member_id: Option<String> [9],
        /// v9+. The member epoch with KIP-848's protocol, else -1.
        member_epoch: i32 [9] = -1,
        /// v8+. Partitions whose offsets are wanted, or null for every one the group committed.
        topics: Option<Vec<OffsetFetchTopic>> [8],
    }
}

message! {
    /// The partitions of one topic whose offsets are wanted.
    pub struct OffsetFetchTopic {
        /// v0+. Topic name.
        topic: String [0],
        /// v0+. Partition ids. Kafka: `PartitionIndexes`.
        partitions: Vec<i32> [0],
    }
}

message! {
    /// OffsetFetch response.
    pub struct OffsetFetchResponse {
        /// v3+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [3],
        /// v0-v7. Offsets per topic and partition.
        topics: Vec<OffsetFetchResponseTopic> [0, 7],
        /// v2-v7. 0, or an [`ErrorCode`] for the whole group (e.g. 16 not the coordinator).
        error_code: i16 [2, 7],
        /// v8+. Offsets per group.
        groups: Vec<OffsetFetchResponseGroup> [8],
    }
}

message! {
    /// The offsets of one group (v8+).
    pub struct OffsetFetchResponseGroup {
        /// v8+. Consumer group.
        group_id: String [8],
        /// v8+. Offsets per topic and partition.
        topics: Vec<OffsetFetchResponseTopic> [8],
        /// v8+. 0, or an [`ErrorCode`] for the whole group.
        error_code: i16 [8],
    }
}

message! {
    /// The offsets of one topic.
    pub struct OffsetFetchResponseTopic {
        /// v0+. Topic name.
        topic: String [0],
        /// v0+. Per-partition offsets.
        partitions: Vec<OffsetFetchResponsePartition> [0],
    }
}

message! {
    /// One partition's committed offset.
    pub struct OffsetFetchResponsePartition {
        /// v0+. Partition id.
        partition: i32 [0],
        /// v0+. The committed offset, -1 for none.
        offset: i64 [0],
        /// v5+. The leader epoch committed with the offset, -1 when unknown.
        leader_epoch: i32 [5] = -1,
        /// v0+. The committed metadata ("" in v0), or null.
        metadata: Option<String> [0],
        /// v0+. 0, or an [`ErrorCode`].
        error_code: i16 [0],
    }
}

crate::top_level!(request OffsetFetchRequest: ApiKey::OffsetFetch, versions 0..=9, flexible Some(6), response OffsetFetchResponse);
crate::top_level!(response OffsetFetchResponse for OffsetFetchRequest);

impl OffsetFetchRequest {
    /// A v0-v7 request for the offsets of `topics` committed by `group_id`.
    pub fn new(group_id: impl Into<String>, topics: Vec<OffsetFetchTopic>) -> Self {
        OffsetFetchRequest { group_id: group_id.into(), topics: Some(topics), ..Default::default() }
    }
}

impl OffsetFetchTopic {
    /// A topic with the partitions whose offsets are wanted.
    pub fn new(topic: impl Into<String>, partitions: Vec<i32>) -> Self {
        OffsetFetchTopic { topic: topic.into(), partitions, ..Default::default() }
    }
}

impl OffsetFetchResponse {
    /// The group-level error of a v2+ answer, if any (v2-v7: `error_code`; v8+: the first
    /// group's).
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
            .or_else(|| self.groups.iter().find_map(|g| ErrorCode::from_i16(g.error_code)))
    }
}

impl OffsetFetchResponseTopic {
    /// A topic with its partitions' offsets.
    pub fn new(topic: impl Into<String>, partitions: Vec<OffsetFetchResponsePartition>) -> Self {
        OffsetFetchResponseTopic { topic: topic.into(), partitions, ..Default::default() }
    }
}

impl OffsetFetchResponsePartition {
    /// The offset of `partition` with `metadata` and `error_code`, no leader epoch: what every
    /// version can carry.
    pub fn new(partition: i32, offset: i64, metadata: impl Into<String>, error_code: i16) -> Self {
        OffsetFetchResponsePartition {
            partition,
            offset,
            metadata: Some(metadata.into()),
            error_code,
            ..Default::default()
        }
    }

    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

//! API key 2 — ListOffsets (Offsets, `getOffsetsBefore`, in Kafka 0.8). Versions: v0-v10 (v6+
//! flexible).
//!
//! ```text
//! OffsetsRequest v0   => replica_id int32,
//!                        [topic string, [partition int32, time int64, max_number_of_offsets int32]]
//! OffsetsRequest v7   => replica_id int32, isolation_level int8,
//!                        [topic, [partition, current_leader_epoch int32, time int64, tags], tags], tags
//! OffsetsRequest v10  => ... as v7, then timeout_ms int32, tags
//! OffsetsResponse v0  => [topic string, [partition int32, error_code int16, [offset int64]]]
//! OffsetsResponse v7  => throttle_time_ms int32,
//!                        [topic, [partition, error_code, timestamp int64, offset int64,
//!                                 leader_epoch int32, tags], tags], tags
//! ```
//!
//! v0 returns up to `max_number_of_offsets` segment base offsets (newest first); v1 and later
//! return one offset and its timestamp. `time` -1 asks for the log end offset
//! ([`LATEST_TIME`]), -2 for the earliest ([`EARLIEST_TIME`]); later brokers know -3 (the
//! offset of the largest timestamp, v7+), -4 (the local log start with tiered storage, v8+) and
//! -5 (the last tiered offset, v9+). Only the partition's leader answers; a follower answers 6,
//! a broker with no replica 3, both with no offset (an empty array in v0, -1 later).
//!
//! Observed on Kafka 3.7.0 (v7, v8): the earliest offset is answered with timestamp -1 and the
//! leader epoch; librdkafka sends its current leader epoch, kafka-python -1.
//! Guide: <https://cwiki.apache.org/confluence/display/KAFKA/A+Guide+To+The+Kafka+Protocol#AGuideToTheKafkaProtocol-OffsetAPI>

use crate::api_key::ApiKey;
use crate::error_code::ErrorCode;
use crate::message;

/// `time` that asks for the log end offset (the offset the next message will get).
pub const LATEST_TIME: i64 = -1;
/// `time` that asks for the earliest offset still kept.
pub const EARLIEST_TIME: i64 = -2;
/// `time` that asks for the offset of the message with the largest timestamp (v7+).
pub const MAX_TIMESTAMP: i64 = -3;

/// Kafka's name for the API since 0.10.1.
pub type ListOffsetsRequest = OffsetsRequest;
/// Kafka's name for the API since 0.10.1.
pub type ListOffsetsResponse = OffsetsResponse;

message! {
    /// ListOffsets request: offsets by time.
    pub struct OffsetsRequest {
        /// v0+. -1 for a client ([`super::CONSUMER_REPLICA_ID`]); a broker id for a follower.
        replica_id: i32 [0] = -1,
        /// v2+. 0 = read uncommitted, 1 = read committed (offsets up to the last stable one).
        isolation_level: i8 [2],
        /// v0+. What to look up.
        topics: Vec<OffsetsTopic> [0],
        /// v10+. How long the broker may wait for offsets kept in remote storage, in ms.
        timeout_ms: i32 [10],
    }
}

message! {
    /// The partitions to look up of one topic.
    pub struct OffsetsTopic {
        /// v0+. Topic name.
        topic: String [0],
        /// v0+. The partitions.
        partitions: Vec<OffsetsPartition> [0],
    }
}

impl OffsetsTopic {
    /// A topic with its partitions.
    pub fn new(topic: impl Into<String>, partitions: Vec<OffsetsPartition>) -> Self {
        OffsetsTopic { topic: topic.into(), partitions, ..Default::default() }
    }
}

message! {
    /// One partition to look up.
    pub struct OffsetsPartition {
        /// v0+. Partition id.
        partition: i32 [0],
        /// v4+. The epoch of the leader the client knows, -1 for none (fences a stale leader).
        current_leader_epoch: i32 [4] = -1,
        /// v0+. [`LATEST_TIME`], [`EARLIEST_TIME`], [`MAX_TIMESTAMP`] or a time in ms since the
        /// epoch.
        time: i64 [0],
        /// v0 only. Most offsets to return (1 in later versions, which return one).
        max_number_of_offsets: i32 [0, 0] = 1,
    }
}

impl OffsetsPartition {
    /// A partition at `time`, asking for one offset.
    pub fn new(partition: i32, time: i64) -> Self {
        OffsetsPartition { partition, time, ..Default::default() }
    }
}

crate::top_level!(request OffsetsRequest: ApiKey::Offsets, versions 0..=10, flexible Some(6), response OffsetsResponse);
crate::top_level!(response OffsetsResponse for OffsetsRequest);

message! {
    /// ListOffsets response.
    pub struct OffsetsResponse {
        /// v2+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [2],
        /// v0+. Offsets per topic and partition, in the broker's order.
        topics: Vec<OffsetsResponseTopic> [0],
    }
}

message! {
    /// The offsets of one topic.
    pub struct OffsetsResponseTopic {
        /// v0+. Topic name.
        topic: String [0],
        /// v0+. The partitions.
        partitions: Vec<OffsetsResponsePartition> [0],
    }
}

impl OffsetsResponseTopic {
    /// A topic with its partitions.
    pub fn new(topic: impl Into<String>, partitions: Vec<OffsetsResponsePartition>) -> Self {
        OffsetsResponseTopic { topic: topic.into(), partitions, ..Default::default() }
    }
}

message! {
    /// The offsets of one partition.
    pub struct OffsetsResponsePartition {
        /// v0+. Partition id.
        partition: i32 [0],
        /// v0+. 0, or an [`ErrorCode`].
        error_code: i16 [0],
        /// v0 only. Offsets, newest first; empty on error.
        offsets: Vec<i64> [0, 0],
        /// v1+. The timestamp of the offset found, -1 for none (or for -1 and -2 lookups).
        timestamp: i64 [1] = -1,
        /// v1+. The offset found, -1 for none.
        offset: i64 [1] = -1,
        /// v4+. The leader epoch of the offset found, -1 when unknown.
        leader_epoch: i32 [4] = -1,
    }
}

impl OffsetsResponsePartition {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }

    /// The offset found, in any version: the first (newest) of v0's array, or v1's offset;
    /// `None` when there is none.
    pub fn first_offset(&self) -> Option<i64> {
        self.offsets.first().copied().or((self.offset >= 0).then_some(self.offset))
    }
}

//! API key 47 — OffsetDelete (Kafka 2.4+, KIP-496). Versions: v0 (classic).
//!
//! ```text
//! OffsetDeleteRequest v0  => group_id, [name, [partition_index int32]]
//! OffsetDeleteResponse v0 => error_code int16, throttle_time_ms int32,
//!                            [name, [partition_index int32, error_code int16]]
//! ```
//!
//! Deletes a group's committed offsets for some partitions; a partition the group still
//! consumes answers 86 GROUP_SUBSCRIBED_TO_TOPIC. Sent to the group's coordinator. (A flexible
//! v1, with request header v3, is in the works upstream and not stable: not implemented.)
//!
//! No frame of this API was captured; the tests check hand-built frames (`tests/admin_apis.rs`).

use crate::api_key::ApiKey;
use crate::message;

message! {
    /// OffsetDelete request: the committed offsets of a group to delete.
    pub struct OffsetDeleteRequest {
        /// v0+. Group id.
        group_id: String [0],
        /// v0+. The partitions, by topic.
        topics: Vec<OffsetDeleteRequestTopic> [0],
    }
}

message! {
    /// The partitions of one topic.
    pub struct OffsetDeleteRequestTopic {
        /// v0+. Topic name.
        name: String [0],
        /// v0+. The partitions.
        partitions: Vec<OffsetDeleteRequestPartition> [0],
    }
}

message! {
    /// One partition.
    pub struct OffsetDeleteRequestPartition {
        /// v0+. Partition index.
        partition_index: i32 [0],
    }
}

message! {
    /// OffsetDelete response.
    pub struct OffsetDeleteResponse {
        /// v0+. 0, or an error for the whole group (16 NOT_COORDINATOR, 69 GROUP_ID_NOT_FOUND, ...).
        error_code: i16 [0],
        /// v0+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [0],
        /// v0+. The results, by topic.
        topics: Vec<OffsetDeleteResponseTopic> [0],
    }
}

message! {
    /// The results of one topic.
    pub struct OffsetDeleteResponseTopic {
        /// v0+. Topic name.
        name: String [0],
        /// v0+. One result per partition.
        partitions: Vec<OffsetDeleteResponsePartition> [0],
    }
}

message! {
    /// The result of one partition.
    pub struct OffsetDeleteResponsePartition {
        /// v0+. Partition index.
        partition_index: i32 [0],
        /// v0+. 0, or why the offset was not deleted.
        error_code: i16 [0],
    }
}

crate::top_level!(request OffsetDeleteRequest: ApiKey::OffsetDelete, versions 0..=0, flexible None, response OffsetDeleteResponse);
crate::top_level!(response OffsetDeleteResponse for OffsetDeleteRequest);

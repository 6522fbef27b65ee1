//! API key 46 — ListPartitionReassignments (Kafka 2.4+, KIP-455). Versions: v0 (flexible).
//!
//! ```text
//! ListPartitionReassignmentsRequest v0  => timeout_ms int32,
//!                                          [name, [partition_index int32], tags] nullable, tags
//! ListPartitionReassignmentsResponse v0 => throttle_time_ms int32, error_code int16,
//!                                          error_message nullable,
//!                                          [name, [partition_index int32, [replica int32],
//!                                                  [adding_replica int32],
//!                                                  [removing_replica int32], tags], tags], tags
//! ```
//!
//! Lists the partition moves under way (started with AlterPartitionReassignments, API 45), for
//! the partitions named or, with null topics, for all.
//!
//! No frame of this API was captured; the tests check hand-built frames (`tests/admin_apis.rs`).

use crate::api_key::ApiKey;
use crate::message;

message! {
    /// ListPartitionReassignments request.
    pub struct ListPartitionReassignmentsRequest {
        /// v0+. How long the broker may wait, in ms.
        timeout_ms: i32 [0] = 60_000,
        /// v0+. The partitions to list, by topic, or null for every move under way.
        topics: Option<Vec<ListPartitionReassignmentsTopics>> [0],
    }
}

message! {
    /// The partitions of one topic to list.
    pub struct ListPartitionReassignmentsTopics {
        /// v0+. Topic name.
        name: String [0],
        /// v0+. Partition indexes.
        partition_indexes: Vec<i32> [0],
    }
}

message! {
    /// ListPartitionReassignments response.
    pub struct ListPartitionReassignmentsResponse {
        /// v0+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [0],
        /// v0+. 0, or an error for the whole request.
        error_code: i16 [0],
        /// v0+. The error's text, null on success.
        error_message: Option<String> [0],
        /// v0+. The moves under way, by topic.
        topics: Vec<OngoingTopicReassignment> [0],
    }
}

message! {
    /// The moves under way in one topic.
    pub struct OngoingTopicReassignment {
        /// v0+. Topic name.
        name: String [0],
        /// v0+. One entry per partition being moved.
        partitions: Vec<OngoingPartitionReassignment> [0],
    }
}

message! {
    /// A partition being moved.
    pub struct OngoingPartitionReassignment {
        /// v0+. Partition index.
        partition_index: i32 [0],
        /// v0+. Its current replicas (old and new during the move).
        replicas: Vec<i32> [0],
        /// v0+. The replicas being added.
        adding_replicas: Vec<i32> [0],
        /// v0+. The replicas being removed.
        removing_replicas: Vec<i32> [0],
    }
}

crate::top_level!(request ListPartitionReassignmentsRequest: ApiKey::ListPartitionReassignments, versions 0..=0, flexible Some(0), response ListPartitionReassignmentsResponse);
crate::top_level!(response ListPartitionReassignmentsResponse for ListPartitionReassignmentsRequest);

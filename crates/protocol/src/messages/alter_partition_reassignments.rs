//! API key 45 — AlterPartitionReassignments (Kafka 2.4+, KIP-455). Versions: v0-v1 (all
//! flexible).
//!
//! ```text
//! AlterPartitionReassignmentsRequest v1  => timeout_ms int32, allow_replication_factor_change bool,
//!                                           [name, [partition_index int32,
//!                                                   [replica int32] nullable, tags], tags], tags
//! AlterPartitionReassignmentsResponse v1 => throttle_time_ms int32,
//!                                           allow_replication_factor_change bool,
//!                                           error_code int16, error_message nullable,
//!                                           [name, [partition_index int32, error_code int16,
//!                                                   error_message nullable, tags], tags], tags
//! ```
//!
//! Starts moving partitions to new replica sets (or, with null replicas, cancels a pending
//! move); ListPartitionReassignments (API 46) shows the moves under way. v1 (Kafka 4.1,
//! KIP-860) can forbid a move that changes a partition's replication factor, and echoes that
//! choice in its answer.
//!
//! No frame of this API was captured; the tests check hand-built frames (`tests/admin_apis.rs`).

use crate::api_key::ApiKey;
use crate::message;

message! {
    /// AlterPartitionReassignments request: new replica sets for some partitions.
    pub struct AlterPartitionReassignmentsRequest {
        /// v0+. How long the broker may wait, in ms.
        timeout_ms: i32 [0] = 60_000,
        /// v1+. False to refuse a move that changes a partition's replication factor.
        allow_replication_factor_change: bool [1] = true,
        /// v0+. The partitions to move, by topic.
        topics: Vec<ReassignableTopic> [0],
    }
}

message! {
    /// The partitions of one topic to move.
    pub struct ReassignableTopic {
        /// v0+. Topic name.
        name: String [0],
        /// v0+. The partitions.
        partitions: Vec<ReassignablePartition> [0],
    }
}

message! {
    /// One partition to move.
    pub struct ReassignablePartition {
        /// v0+. Partition index.
        partition_index: i32 [0],
        /// v0+. Its new replicas, or null to cancel a pending move.
        replicas: Option<Vec<i32>> [0],
    }
}

message! {
    /// AlterPartitionReassignments response.
    pub struct AlterPartitionReassignmentsResponse {
        /// v0+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [0],
        /// v1+. Whether the request allowed replication factor changes.
        allow_replication_factor_change: bool [1] = true,
        /// v0+. 0, or an error for the whole request.
        error_code: i16 [0],
        /// v0+. The error's text, null on success.
        error_message: Option<String> [0],
        /// v0+. The results, by topic.
        responses: Vec<ReassignableTopicResponse> [0],
    }
}

message! {
    /// The results of one topic.
    pub struct ReassignableTopicResponse {
        /// v0+. Topic name.
        name: String [0],
        /// v0+. One result per partition.
        partitions: Vec<ReassignablePartitionResponse> [0],
    }
}

message! {
    /// The result of one partition.
    pub struct ReassignablePartitionResponse {
        /// v0+. Partition index.
        partition_index: i32 [0],
        /// v0+. 0, or why the partition is not being moved.
        error_code: i16 [0],
        /// v0+. The error's text, null on success.
        error_message: Option<String> [0],
    }
}

crate::top_level!(request AlterPartitionReassignmentsRequest: ApiKey::AlterPartitionReassignments, versions 0..=1, flexible Some(0), response AlterPartitionReassignmentsResponse);
crate::top_level!(response AlterPartitionReassignmentsResponse for AlterPartitionReassignmentsRequest);

//! API key 21 — DeleteRecords (Kafka 0.11+, KIP-107). Versions: v0-v2 (v2 flexible).
//!
//! ```text
//! DeleteRecordsRequest v2  => [name, [partition_index int32, offset int64, tags], tags],
//!                             timeout_ms int32, tags
//! DeleteRecordsResponse v2 => throttle_time_ms int32,
//!                             [name, [partition_index int32, low_watermark int64,
//!                                     error_code int16, tags], tags], tags
//! ```
//!
//! Moves each partition's log start offset up to `offset` (-1: the high watermark), deleting
//! the records before it; the answer gives the new low watermark. Sent to each partition's
//! leader. v1 is v0 with the response sent before throttling.
//!
//! No frame of this API was captured; the tests check hand-built frames (`tests/admin_apis.rs`).

use crate::api_key::ApiKey;
use crate::message;

message! {
    /// DeleteRecords request: the offsets to delete records up to.
    pub struct DeleteRecordsRequest {
        /// v0+. The partitions, by topic.
        topics: Vec<DeleteRecordsTopic> [0],
        /// v0+. How long the broker may wait for the deletions, in ms.
        timeout_ms: i32 [0],
    }
}

message! {
    /// The partitions of one topic.
    pub struct DeleteRecordsTopic {
        /// v0+. Topic name.
        name: String [0],
        /// v0+. The partitions.
        partitions: Vec<DeleteRecordsPartition> [0],
    }
}

message! {
    /// One partition and the offset to delete up to.
    pub struct DeleteRecordsPartition {
        /// v0+. Partition index.
        partition_index: i32 [0],
        /// v0+. Records before this offset are deleted (-1: up to the high watermark).
        offset: i64 [0],
    }
}

message! {
    /// DeleteRecords response.
    pub struct DeleteRecordsResponse {
        /// v0+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [0],
        /// v0+. The results, by topic.
        topics: Vec<DeleteRecordsTopicResult> [0],
    }
}

message! {
    /// The results of one topic.
    pub struct DeleteRecordsTopicResult {
        /// v0+. Topic name.
        name: String [0],
        /// v0+. One result per partition.
        partitions: Vec<DeleteRecordsPartitionResult> [0],
    }
}

message! {
    /// The result of one partition.
    pub struct DeleteRecordsPartitionResult {
        /// v0+. Partition index.
        partition_index: i32 [0],
        /// v0+. The partition's new low watermark (log start offset).
        low_watermark: i64 [0],
        /// v0+. 0, or why nothing was deleted.
        error_code: i16 [0],
    }
}

crate::top_level!(request DeleteRecordsRequest: ApiKey::DeleteRecords, versions 0..=2, flexible Some(2), response DeleteRecordsResponse);
crate::top_level!(response DeleteRecordsResponse for DeleteRecordsRequest);

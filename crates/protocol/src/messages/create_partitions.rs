//! API key 37 — CreatePartitions (Kafka 1.0+, KIP-195). Versions: v0-v3 (v2+ flexible).
//!
//! ```text
//! CreatePartitionsRequest v3  => [name, count int32, [[broker_id int32], tags] nullable, tags],
//!                                timeout_ms int32, validate_only bool, tags
//! CreatePartitionsResponse v3 => throttle_time_ms int32,
//!                                [name, error_code int16, error_message nullable, tags], tags
//! ```
//!
//! Raises a topic's partition count to `count` (it never lowers it). v1 is v0 with the response
//! sent before throttling; v3 may answer 89 THROTTLING_QUOTA_EXCEEDED.
//!
//! Seen from Kafka 3.7.0 (`create_partitions_v2_admin`): librdkafka 2.16.0 sends v2, flexible
//! (request header v2, response header v1), with a null assignment (broker placement); a
//! success answers error 0 and a null message.

use crate::api_key::ApiKey;
use crate::message;

message! {
    /// CreatePartitions request: new partition counts for some topics.
    pub struct CreatePartitionsRequest {
        /// v0+. The topics.
        topics: Vec<CreatePartitionsTopic> [0],
        /// v0+. How long the broker may wait for the partitions to be created, in ms.
        timeout_ms: i32 [0],
        /// v0+. True to check the request without creating anything.
        validate_only: bool [0],
    }
}

message! {
    /// A topic and its new partition count.
    pub struct CreatePartitionsTopic {
        /// v0+. Topic name.
        name: String [0],
        /// v0+. The new partition count (the total, not the number to add).
        count: i32 [0],
        /// v0+. The replicas of each new partition, or null to let the broker place them.
        assignments: Option<Vec<CreatePartitionsAssignment>> [0],
    }
}

message! {
    /// The replicas of one new partition.
    pub struct CreatePartitionsAssignment {
        /// v0+. The brokers to hold its replicas, preferred leader first.
        broker_ids: Vec<i32> [0],
    }
}

message! {
    /// CreatePartitions response.
    pub struct CreatePartitionsResponse {
        /// v0+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [0],
        /// v0+. One result per topic.
        results: Vec<CreatePartitionsTopicResult> [0],
    }
}

message! {
    /// The result for one topic.
    pub struct CreatePartitionsTopicResult {
        /// v0+. Topic name.
        name: String [0],
        /// v0+. 0, or why the partitions were not created.
        error_code: i16 [0],
        /// v0+. The error's text, null on success.
        error_message: Option<String> [0],
    }
}

crate::top_level!(request CreatePartitionsRequest: ApiKey::CreatePartitions, versions 0..=3, flexible Some(2), response CreatePartitionsResponse);
crate::top_level!(response CreatePartitionsResponse for CreatePartitionsRequest);

//! API key 43 — ElectLeaders (Kafka 2.2+, KIP-183 / KIP-460; ElectPreferredLeaders before
//! Kafka 2.4). Versions: v0-v2 (v2 flexible).
//!
//! ```text
//! ElectLeadersRequest v2  => election_type int8, [topic, [partition_id int32], tags] nullable,
//!                            timeout_ms int32, tags
//! ElectLeadersResponse v2 => throttle_time_ms int32, error_code int16,
//!                            [topic, [partition_id int32, error_code int16,
//!                                     error_message nullable, tags], tags], tags
//! ```
//!
//! Elects a leader for each named partition (null: every partition): the preferred replica
//! (election type 0, the only kind in v0) or, v1+, the first live replica when no in-sync one
//! is left (type 1, unclean). A partition whose preferred replica already leads answers 84
//! ELECTION_NOT_NEEDED.
//!
//! No frame of this API was captured; the tests check hand-built frames (`tests/admin_apis.rs`).

use crate::api_key::ApiKey;
use crate::message;

message! {
    /// ElectLeaders request: the partitions whose leader to elect.
    pub struct ElectLeadersRequest {
        /// v1+. 0 preferred replica, 1 unclean (first live replica).
        election_type: i8 [1],
        /// v0+. The partitions, by topic, or null for every partition.
        topic_partitions: Option<Vec<ElectLeadersTopic>> [0],
        /// v0+. How long the broker may wait for the elections, in ms.
        timeout_ms: i32 [0] = 60_000,
    }
}

message! {
    /// The partitions of one topic whose leader to elect.
    pub struct ElectLeadersTopic {
        /// v0+. Topic name.
        topic: String [0],
        /// v0+. Partition indexes.
        partitions: Vec<i32> [0],
    }
}

message! {
    /// ElectLeaders response.
    pub struct ElectLeadersResponse {
        /// v0+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [0],
        /// v1+. 0, or an error for the whole request (31 CLUSTER_AUTHORIZATION_FAILED, ...).
        error_code: i16 [1],
        /// v0+. The results, by topic (empty when the caller may not elect and asked for all).
        replica_election_results: Vec<ReplicaElectionResult> [0],
    }
}

message! {
    /// The election results of one topic.
    pub struct ReplicaElectionResult {
        /// v0+. Topic name.
        topic: String [0],
        /// v0+. One result per partition.
        partition_result: Vec<ElectLeadersPartitionResult> [0],
    }
}

message! {
    /// The election result of one partition.
    pub struct ElectLeadersPartitionResult {
        /// v0+. Partition index.
        partition_id: i32 [0],
        /// v0+. 0, or why no leader was elected (84 ELECTION_NOT_NEEDED, ...).
        error_code: i16 [0],
        /// v0+. The error's text, null on success.
        error_message: Option<String> [0],
    }
}

crate::top_level!(request ElectLeadersRequest: ApiKey::ElectLeaders, versions 0..=2, flexible Some(2), response ElectLeadersResponse);
crate::top_level!(response ElectLeadersResponse for ElectLeadersRequest);

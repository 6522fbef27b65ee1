//! API key 10 — FindCoordinator (ConsumerMetadata in Kafka 0.8.2, GroupCoordinator in 0.9-0.10).
//! Versions: v0-v4 (v3+ flexible, v4 batched).
//!
//! ```text
//! FindCoordinatorRequest v0     => key string                         (0.8.2: group_id)
//! FindCoordinatorRequest v1-v3  => key string, key_type int8
//! FindCoordinatorRequest v4     => key_type int8, [coordinator_keys compact_string], tags
//! FindCoordinatorResponse v0    => error_code int16, node_id int32, host string, port int32
//! FindCoordinatorResponse v1-v3 => throttle_time_ms int32, error_code int16,
//!                                  error_message nullable string, node_id int32, host string, port int32
//! FindCoordinatorResponse v4    => throttle_time_ms int32, [key, node_id, host, port, error_code,
//!                                  error_message, tags], tags
//! ```
//!
//! v0 is Kafka 0.8.2's ConsumerMetadata, byte for byte ([`ConsumerMetadataRequest`] and
//! [`ConsumerMetadataResponse`] name the same types): the first request for a cluster makes the
//! broker create `__consumer_offsets`, and until it has leaders the answer is 15 with node -1,
//! host "" and port -1; retry with backoff.
//!
//! Kafka 3.7.0 (`tests/data/kafka-3.7.0`): librdkafka asks with v2, kafka-python with v4. A v2
//! success carries the error message "NONE", a v4 one "" (not null); while `__consumer_offsets`
//! is created the answer is 15 COORDINATOR_NOT_AVAILABLE ("The coordinator is not available.")
//! with node -1, host "" and port -1, as in 0.8.2. Hosts are the advertised listener.

use crate::api_key::ApiKey;
use crate::error_code::ErrorCode;
use crate::message;

/// `key_type` of a consumer group's coordinator (the only kind before v1).
pub const COORDINATOR_KEY_TYPE_GROUP: i8 = 0;
/// `key_type` of a transactional producer's coordinator (v1+).
pub const COORDINATOR_KEY_TYPE_TRANSACTION: i8 = 1;

message! {
    /// FindCoordinator request: which broker coordinates a group (or a transactional id).
    pub struct FindCoordinatorRequest {
        /// v0-v3. The group id (or, with `key_type` 1, the transactional id). Kafka 0.8.2 calls
        /// it `group_id`.
        key: String [0, 3],
        /// v1+. What `key` names: [`COORDINATOR_KEY_TYPE_GROUP`] or
        /// [`COORDINATOR_KEY_TYPE_TRANSACTION`].
        key_type: i8 [1],
        /// v4+. The keys to look up in one request, all of `key_type`.
        coordinator_keys: Vec<String> [4],
    }
}

message! {
    /// FindCoordinator response.
    pub struct FindCoordinatorResponse {
        /// v1+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [1],
        /// v0-v3. 0, or an [`ErrorCode`] (15 while the offsets topic is being created).
        error_code: i16 [0, 3],
        /// v1-v3. The error's text, or null ("NONE" on success from Kafka 3.7.0).
        error_message: Option<String> [1, 3],
        /// v0-v3. The coordinator's broker id, -1 on error.
        node_id: i32 [0, 3],
        /// v0-v3. The coordinator's host, "" on error.
        host: String [0, 3],
        /// v0-v3. The coordinator's port, -1 on error.
        port: i32 [0, 3],
        /// v4+. One answer per requested key.
        coordinators: Vec<Coordinator> [4],
    }
}

message! {
    /// The coordinator of one key (v4+).
    pub struct Coordinator {
        /// v4+. The key looked up.
        key: String [4],
        /// v4+. The coordinator's broker id, -1 on error.
        node_id: i32 [4],
        /// v4+. The coordinator's host, "" on error.
        host: String [4],
        /// v4+. The coordinator's port, -1 on error.
        port: i32 [4],
        /// v4+. 0, or an [`ErrorCode`].
        error_code: i16 [4],
        /// v4+. The error's text, or null ("" on success from Kafka 3.7.0).
        error_message: Option<String> [4],
    }
}

crate::top_level!(request FindCoordinatorRequest: ApiKey::ConsumerMetadata, versions 0..=4, flexible Some(3), response FindCoordinatorResponse);
crate::top_level!(response FindCoordinatorResponse for FindCoordinatorRequest);

/// Kafka 0.8.2's name for FindCoordinator v0's request.
pub type ConsumerMetadataRequest = FindCoordinatorRequest;
/// Kafka 0.8.2's name for FindCoordinator v0's response.
pub type ConsumerMetadataResponse = FindCoordinatorResponse;

impl FindCoordinatorRequest {
    /// A request for the coordinator of consumer group `group_id` in v0-v3 (`key`); for v4 put
    /// the group in `coordinator_keys` instead.
    pub fn group(group_id: impl Into<String>) -> Self {
        FindCoordinatorRequest { key: group_id.into(), ..Default::default() }
    }
}

impl FindCoordinatorResponse {
    /// The error of a v0-v3 answer, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

impl Coordinator {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

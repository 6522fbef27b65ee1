//! API key 12 — Heartbeat (Kafka 0.9+). Versions: v0-v4 (v4 flexible).
//!
//! ```text
//! HeartbeatRequest v0-v2  => group_id string, generation_id int32, member_id string
//! HeartbeatRequest v3+    => group_id, generation_id, member_id, group_instance_id nullable string
//! HeartbeatResponse v0    => error_code int16
//! HeartbeatResponse v1+   => throttle_time_ms int32, error_code           (v4: compact, tags)
//! ```
//!
//! A member heartbeats every `heartbeat.interval.ms`; 27 REBALANCE_IN_PROGRESS tells it to join
//! again, 22 ILLEGAL_GENERATION or 25 UNKNOWN_MEMBER_ID that it was dropped.
//!
//! Kafka 3.7.0 (`tests/data/kafka-3.7.0`): librdkafka heartbeats with v3 (classic), answered
//! throttle 0, error 0.

use crate::api_key::ApiKey;
use crate::error_code::ErrorCode;
use crate::message;

message! {
    /// Heartbeat request.
    pub struct HeartbeatRequest {
        /// v0+. The group.
        group_id: String [0],
        /// v0+. The generation the member joined.
        generation_id: i32 [0],
        /// v0+. The member's id.
        member_id: String [0],
        /// v3+. The static member's instance id, or null.
        group_instance_id: Option<String> [3],
    }
}

message! {
    /// Heartbeat response.
    pub struct HeartbeatResponse {
        /// v1+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [1],
        /// v0+. 0, or an [`ErrorCode`].
        error_code: i16 [0],
    }
}

crate::top_level!(request HeartbeatRequest: ApiKey::Heartbeat, versions 0..=4, flexible Some(4), response HeartbeatResponse);
crate::top_level!(response HeartbeatResponse for HeartbeatRequest);

impl HeartbeatResponse {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

//! API key 14 — SyncGroup (Kafka 0.9+). Versions: v0-v5 (v4+ flexible).
//!
//! ```text
//! SyncGroupRequest v0-v2  => group_id string, generation_id int32, member_id string,
//!                            [member_id string, assignment bytes]
//! SyncGroupRequest v3+    => group_id, generation_id, member_id, group_instance_id nullable string,
//!                            (v5+ protocol_type, protocol_name nullable strings),
//!                            [member_id, assignment]                     (v4+: compact, tags)
//! SyncGroupResponse v0    => error_code int16, assignment bytes
//! SyncGroupResponse v1+   => throttle_time_ms int32, error_code,
//!                            (v5+ protocol_type, protocol_name nullable strings), assignment
//! ```
//!
//! After a join, the leader sends every member's assignment, the others an empty list; each
//! member gets its own assignment back (for the "consumer" protocol type, a
//! [`ConsumerProtocolAssignment`](super::ConsumerProtocolAssignment)).
//!
//! Kafka 3.7.0 (`tests/data/kafka-3.7.0`): librdkafka syncs with v3 (classic), kafka-python with
//! v5 (flexible, protocol type "consumer" and name "range" both ways).

use bytes::Bytes;

use crate::api_key::ApiKey;
use crate::error_code::ErrorCode;
use crate::message;

message! {
    /// SyncGroup request.
    pub struct SyncGroupRequest {
        /// v0+. The group.
        group_id: String [0],
        /// v0+. The generation the member joined.
        generation_id: i32 [0],
        /// v0+. The member's id.
        member_id: String [0],
        /// v3+. The static member's instance id, or null.
        group_instance_id: Option<String> [3],
        /// v5+. The group's protocol type, or null.
        protocol_type: Option<String> [5],
        /// v5+. The group's chosen protocol, or null.
        protocol_name: Option<String> [5],
        /// v0+. Each member's assignment (sent by the leader only).
        assignments: Vec<SyncGroupRequestAssignment> [0],
    }
}

message! {
    /// One member's assignment, as the leader computed it.
    pub struct SyncGroupRequestAssignment {
        /// v0+. The member's id.
        member_id: String [0],
        /// v0+. The member's assignment.
        assignment: Bytes [0],
    }
}

message! {
    /// SyncGroup response.
    pub struct SyncGroupResponse {
        /// v1+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [1],
        /// v0+. 0, or an [`ErrorCode`].
        error_code: i16 [0],
        /// v5+. The group's protocol type, or null.
        protocol_type: Option<String> [5],
        /// v5+. The group's chosen protocol, or null.
        protocol_name: Option<String> [5],
        /// v0+. This member's assignment.
        assignment: Bytes [0],
    }
}

crate::top_level!(request SyncGroupRequest: ApiKey::SyncGroup, versions 0..=5, flexible Some(4), response SyncGroupResponse);
crate::top_level!(response SyncGroupResponse for SyncGroupRequest);

impl SyncGroupResponse {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

//! API key 13 — LeaveGroup (Kafka 0.9+). Versions: v0-v5 (v4+ flexible, v3+ batched).
//!
//! ```text
//! LeaveGroupRequest v0-v2  => group_id string, member_id string
//! LeaveGroupRequest v3+    => group_id, [member_id string, group_instance_id nullable string,
//!                             (v5+ reason nullable string)]               (v4+: compact, tags)
//! LeaveGroupResponse v0    => error_code int16
//! LeaveGroupResponse v1-v2 => throttle_time_ms int32, error_code
//! LeaveGroupResponse v3+   => throttle_time_ms, error_code,
//!                             [member_id, group_instance_id nullable string, error_code]
//! ```
//!
//! Kafka 3.7.0 (`tests/data/kafka-3.7.0`): librdkafka leaves with v1 (one member id),
//! kafka-python with v5 (one member, instance id and reason null); both answered error 0 (v5 also
//! per member).

use crate::api_key::ApiKey;
use crate::error_code::ErrorCode;
use crate::message;

message! {
    /// LeaveGroup request.
    pub struct LeaveGroupRequest {
        /// v0+. The group to leave.
        group_id: String [0],
        /// v0-v2. The leaving member's id.
        member_id: String [0, 2],
        /// v3+. The leaving members.
        members: Vec<MemberIdentity> [3],
    }
}

message! {
    /// A leaving member (v3+).
    pub struct MemberIdentity {
        /// v3+. The member's id.
        member_id: String [3],
        /// v3+. The static member's instance id, or null.
        group_instance_id: Option<String> [3],
        /// v5+. Why the member leaves, or null.
        reason: Option<String> [5],
    }
}

message! {
    /// LeaveGroup response.
    pub struct LeaveGroupResponse {
        /// v1+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [1],
        /// v0+. 0, or an [`ErrorCode`] for the whole request.
        error_code: i16 [0],
        /// v3+. The result per leaving member.
        members: Vec<MemberResponse> [3],
    }
}

message! {
    /// The result of one leaving member (v3+).
    pub struct MemberResponse {
        /// v3+. The member's id.
        member_id: String [3],
        /// v3+. The static member's instance id, or null.
        group_instance_id: Option<String> [3],
        /// v3+. 0, or an [`ErrorCode`].
        error_code: i16 [3],
    }
}

crate::top_level!(request LeaveGroupRequest: ApiKey::LeaveGroup, versions 0..=5, flexible Some(4), response LeaveGroupResponse);
crate::top_level!(response LeaveGroupResponse for LeaveGroupRequest);

impl LeaveGroupResponse {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

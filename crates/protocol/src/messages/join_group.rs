//! API key 11 — JoinGroup (Kafka 0.9+). Versions: v0-v9 (v6+ flexible).
//!
//! ```text
//! JoinGroupRequest v0   => group_id string, session_timeout_ms int32, member_id string,
//!                          protocol_type string, [name string, metadata bytes]
//! JoinGroupRequest v1-4 => group_id, session_timeout_ms, rebalance_timeout_ms int32, member_id,
//!                          protocol_type, [name, metadata]
//! JoinGroupRequest v5+  => ..., member_id, group_instance_id nullable string, protocol_type,
//!                          [name, metadata], (v8+ reason nullable string)      (v6+: compact, tags)
//! JoinGroupResponse v0-1 => error_code int16, generation_id int32, protocol_name string,
//!                           leader string, member_id string, [member_id string, metadata bytes]
//! JoinGroupResponse v2+  => throttle_time_ms int32, error_code, generation_id,
//!                           (v7+ protocol_type nullable string), protocol_name (nullable v7+),
//!                           leader, (v9+ skip_assignment bool), member_id,
//!                           [member_id, (v5+ group_instance_id nullable string), metadata]
//! ```
//!
//! A member joins with an empty member id; from v4 the coordinator answers 79
//! MEMBER_ID_REQUIRED with the id it assigned (generation -1) and the member joins again with
//! it. The leader's answer lists every member with its protocol metadata (for the "consumer"
//! protocol type, a [`ConsumerProtocolSubscription`](super::ConsumerProtocolSubscription)); the
//! others get an empty list.
//!
//! Kafka 3.7.0 (`tests/data/kafka-3.7.0`): librdkafka joins with v5 (classic), kafka-python with
//! v7 (flexible), both offering the "range" and "roundrobin" protocols with the same metadata.
//! The first join answered 79 MEMBER_ID_REQUIRED (or 16 NOT_COORDINATOR while the offsets topic
//! was being created), the second generation 1 with the member as leader.

use bytes::Bytes;

use crate::api_key::ApiKey;
use crate::error_code::ErrorCode;
use crate::message;

message! {
    /// JoinGroup request.
    pub struct JoinGroupRequest {
        /// v0+. The group to join.
        group_id: String [0],
        /// v0+. The coordinator drops a member it has not heard from for this long, in ms.
        session_timeout_ms: i32 [0],
        /// v1+. How long the coordinator waits for members to rejoin during a rebalance, in ms
        /// (-1: `session_timeout_ms`, what v0 implies).
        rebalance_timeout_ms: i32 [1] = -1,
        /// v0+. The member id the coordinator assigned, "" on the first join.
        member_id: String [0],
        /// v5+. The static member's instance id (`group.instance.id`), or null.
        group_instance_id: Option<String> [5],
        /// v0+. The kind of protocols offered ("consumer" for consumer groups).
        protocol_type: String [0],
        /// v0+. The protocols the member speaks, preferred first.
        protocols: Vec<JoinGroupRequestProtocol> [0],
        /// v8+. Why the member (re)joins, or null.
        reason: Option<String> [8],
    }
}

message! {
    /// A protocol the member offers, with its metadata.
    pub struct JoinGroupRequestProtocol {
        /// v0+. Protocol name (an assignor: "range", "roundrobin", ...).
        name: String [0],
        /// v0+. The member's metadata for this protocol.
        metadata: Bytes [0],
    }
}

message! {
    /// JoinGroup response.
    pub struct JoinGroupResponse {
        /// v2+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [2],
        /// v0+. 0, or an [`ErrorCode`] (79 MEMBER_ID_REQUIRED: join again with `member_id`).
        error_code: i16 [0],
        /// v0+. The group's generation, -1 on error.
        generation_id: i32 [0] = -1,
        /// v7+. The group's protocol type, or null.
        protocol_type: Option<String> [7],
        /// v0+. The protocol the coordinator chose (null allowed from v7 on).
        protocol_name: Option<String> [0] null [7],
        /// v0+. The leader's member id.
        leader: String [0],
        /// v9+. True when the leader must not compute an assignment (the broker does).
        skip_assignment: bool [9],
        /// v0+. This member's id.
        member_id: String [0],
        /// v0+. Every member with its metadata (the leader's answer only; empty for others).
        members: Vec<JoinGroupResponseMember> [0],
    }
}

message! {
    /// A member of the group, as the leader learns it.
    pub struct JoinGroupResponseMember {
        /// v0+. The member's id.
        member_id: String [0],
        /// v5+. The member's static instance id, or null.
        group_instance_id: Option<String> [5],
        /// v0+. The member's metadata for the chosen protocol.
        metadata: Bytes [0],
    }
}

crate::top_level!(request JoinGroupRequest: ApiKey::JoinGroup, versions 0..=9, flexible Some(6), response JoinGroupResponse);
crate::top_level!(response JoinGroupResponse for JoinGroupRequest);

impl JoinGroupResponse {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

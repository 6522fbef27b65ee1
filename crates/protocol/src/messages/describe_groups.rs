//! API key 15 — DescribeGroups (Kafka 0.9+). Versions: v0-v6 (v5+ flexible).
//!
//! ```text
//! DescribeGroupsRequest v0-v2  => [groups string]
//! DescribeGroupsRequest v3+    => [groups], include_authorized_operations bool  (v5+: compact, tags)
//! DescribeGroupsResponse v0    => [error_code int16, group_id string, group_state string,
//!                                  protocol_type string, protocol_data string,
//!                                  [member_id, client_id, client_host string,
//!                                   member_metadata bytes, member_assignment bytes]]
//! DescribeGroupsResponse v1+   => throttle_time_ms int32, [error_code, (v6+ error_message nullable
//!                                  string), group_id, group_state, protocol_type, protocol_data,
//!                                  [member_id, (v4+ group_instance_id nullable string), client_id,
//!                                   client_host, member_metadata, member_assignment],
//!                                  (v3+ authorized_operations int32)]
//! ```
//!
//! Kafka 3.7.0 (`tests/data/kafka-3.7.0`): librdkafka's AdminClient describes with v5; a group
//! whose members left answers state "Empty", protocol type "consumer", protocol data "", no
//! members and authorized operations -2147483648 (not asked for).

use bytes::Bytes;

use crate::api_key::ApiKey;
use crate::error_code::ErrorCode;
use crate::message;

/// `authorized_operations` when they were not asked for (`i32::MIN`).
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

message! {
    /// DescribeGroups request.
    pub struct DescribeGroupsRequest {
        /// v0+. The groups to describe.
        groups: Vec<String> [0],
        /// v3+. True to have each group's authorized operations in the answer.
        include_authorized_operations: bool [3],
    }
}

message! {
    /// DescribeGroups response.
    pub struct DescribeGroupsResponse {
        /// v1+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [1],
        /// v0+. One description per requested group.
        groups: Vec<DescribedGroup> [0],
    }
}

message! {
    /// One group's description.
    pub struct DescribedGroup {
        /// v0+. 0, or an [`ErrorCode`].
        error_code: i16 [0],
        /// v6+. The error's text, or null.
        error_message: Option<String> [6],
        /// v0+. The group.
        group_id: String [0],
        /// v0+. The group's state ("Stable", "Empty", "Dead", ...), or "".
        group_state: String [0],
        /// v0+. The group's protocol type, or "".
        protocol_type: String [0],
        /// v0+. The chosen protocol (filled in when the group is Stable), or "".
        protocol_data: String [0],
        /// v0+. The members (none when the group is Dead).
        members: Vec<DescribedGroupMember> [0],
        /// v3+. A bit field of the operations the caller may perform on the group,
        /// [`AUTHORIZED_OPERATIONS_OMITTED`] when not asked for.
        authorized_operations: i32 [3] = AUTHORIZED_OPERATIONS_OMITTED,
    }
}

message! {
    /// One member of a described group.
    pub struct DescribedGroupMember {
        /// v0+. The member's id.
        member_id: String [0],
        /// v4+. The static member's instance id, or null.
        group_instance_id: Option<String> [4],
        /// v0+. The client id of the member's last join.
        client_id: String [0],
        /// v0+. The member's host.
        client_host: String [0],
        /// v0+. The member's metadata for the chosen protocol (when Stable).
        member_metadata: Bytes [0],
        /// v0+. The member's assignment (when Stable).
        member_assignment: Bytes [0],
    }
}

crate::top_level!(request DescribeGroupsRequest: ApiKey::DescribeGroups, versions 0..=6, flexible Some(5), response DescribeGroupsResponse);
crate::top_level!(response DescribeGroupsResponse for DescribeGroupsRequest);

impl DescribedGroup {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

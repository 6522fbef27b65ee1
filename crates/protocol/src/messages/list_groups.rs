//! API key 16 — ListGroups (Kafka 0.9+). Versions: v0-v5 (v3+ flexible).
//!
//! ```text
//! ListGroupsRequest v0-v3  => (empty)                                       (v3: tags)
//! ListGroupsRequest v4+    => [states_filter compact_string], (v5+ [types_filter compact_string]), tags
//! ListGroupsResponse v0    => error_code int16, [group_id string, protocol_type string]
//! ListGroupsResponse v1+   => throttle_time_ms int32, error_code,
//!                             [group_id, protocol_type, (v4+ group_state), (v5+ group_type)]
//! ```
//!
//! Each broker lists the groups it coordinates: ask every broker for the whole cluster.
//!
//! Kafka 3.7.0 (`tests/data/kafka-3.7.0`): librdkafka's AdminClient lists with v4 and an empty
//! states filter (every state); the answer names each group with protocol type "consumer" and
//! its state.

use crate::api_key::ApiKey;
use crate::error_code::ErrorCode;
use crate::message;

message! {
    /// ListGroups request.
    pub struct ListGroupsRequest {
        /// v4+. Only groups in these states ("Stable", "Empty", ...); empty for every state.
        states_filter: Vec<String> [4],
        /// v5+. Only groups of these types ("classic", "consumer", ...); empty for every type.
        types_filter: Vec<String> [5],
    }
}

message! {
    /// ListGroups response.
    pub struct ListGroupsResponse {
        /// v1+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [1],
        /// v0+. 0, or an [`ErrorCode`].
        error_code: i16 [0],
        /// v0+. The groups this broker coordinates.
        groups: Vec<ListedGroup> [0],
    }
}

message! {
    /// One listed group.
    pub struct ListedGroup {
        /// v0+. The group.
        group_id: String [0],
        /// v0+. The group's protocol type ("consumer", or "" for a group that only commits).
        protocol_type: String [0],
        /// v4+. The group's state.
        group_state: String [4],
        /// v5+. The group's type ("classic", "consumer", ...).
        group_type: String [5],
    }
}

crate::top_level!(request ListGroupsRequest: ApiKey::ListGroups, versions 0..=5, flexible Some(3), response ListGroupsResponse);
crate::top_level!(response ListGroupsResponse for ListGroupsRequest);

impl ListGroupsResponse {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

//! API key 42 — DeleteGroups (Kafka 1.1+). Versions: v0-v3 (v2+ flexible).
//!
//! ```text
//! DeleteGroupsRequest v3  => [group_name], tags
//! DeleteGroupsResponse v3 => throttle_time_ms int32, [group_id, error_code int16,
//!                            error_message nullable, tags], tags
//! ```
//!
//! Deletes empty consumer groups and their committed offsets (a group with members answers 68
//! NON_EMPTY_GROUP). v1 is v0 with the response sent before throttling; v3 answers carry an
//! error message per group. Sent to each group's coordinator.
//!
//! No frame of this API was captured; the tests check hand-built frames (`tests/admin_apis.rs`).

use crate::api_key::ApiKey;
use crate::message;

message! {
    /// DeleteGroups request: the groups to delete.
    pub struct DeleteGroupsRequest {
        /// v0+. The group ids.
        groups_names: Vec<String> [0],
    }
}

message! {
    /// DeleteGroups response.
    pub struct DeleteGroupsResponse {
        /// v0+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [0],
        /// v0+. One result per group.
        results: Vec<DeletableGroupResult> [0],
    }
}

message! {
    /// The result of deleting one group.
    pub struct DeletableGroupResult {
        /// v0+. Group id.
        group_id: String [0],
        /// v0+. 0, or why the group was not deleted.
        error_code: i16 [0],
        /// v3+. The error's text, null on success.
        error_message: Option<String> [3],
    }
}

crate::top_level!(request DeleteGroupsRequest: ApiKey::DeleteGroups, versions 0..=3, flexible Some(2), response DeleteGroupsResponse);
crate::top_level!(response DeleteGroupsResponse for DeleteGroupsRequest);

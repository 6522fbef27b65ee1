//! API key 20 — DeleteTopics (Kafka 0.10.1+). Versions: v0-v6 (v4+ flexible).
//!
//! ```text
//! DeleteTopicsRequest v0-v5 => [topic_name], timeout_ms int32 (v4+: tags)
//! DeleteTopicsRequest v6    => [name nullable, topic_id uuid, tags], timeout_ms int32, tags
//! DeleteTopicsResponse v6   => throttle_time_ms int32,
//!                              [name nullable, topic_id uuid, error_code int16,
//!                               error_message nullable, tags], tags
//! ```
//!
//! v1 answers carry a throttle time; v3 may answer 73 TOPIC_DELETION_DISABLED; v5 answers carry
//! an error message and may be 89 THROTTLING_QUOTA_EXCEEDED; v6 names topics by name or id
//! (`topics` replaces `topic_names`) and answers with both.
//!
//! Seen from Kafka 3.7.0 (`delete_topics_v4_admin`): librdkafka 2.16.0 sends v4, flexible
//! (request header v2, response header v1); a deleted topic answers error 0.

use crate::api_key::ApiKey;
use crate::message;
use crate::schema::Uuid;

message! {
    /// DeleteTopics request: the topics to delete.
    pub struct DeleteTopicsRequest {
        /// v6+. The topics, each by name or by id.
        topics: Vec<DeleteTopicState> [6],
        /// v0-v5. The names of the topics.
        topic_names: Vec<String> [0, 5],
        /// v0+. How long the broker may wait for the deletions, in ms.
        timeout_ms: i32 [0],
    }
}

message! {
    /// A topic to delete, by name or by id.
    pub struct DeleteTopicState {
        /// v6+. Topic name, or null to name it by id.
        name: Option<String> [6],
        /// v6+. Topic id, or zero to name it by name.
        topic_id: Uuid [6],
    }
}

message! {
    /// DeleteTopics response.
    pub struct DeleteTopicsResponse {
        /// v1+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [1],
        /// v0+. One result per topic.
        responses: Vec<DeletableTopicResult> [0],
    }
}

message! {
    /// The result of deleting one topic.
    pub struct DeletableTopicResult {
        /// v0+. Topic name (v6+: null when the topic was named by an unknown id).
        name: Option<String> [0] null [6],
        /// v6+. Topic id.
        topic_id: Uuid [6],
        /// v0+. 0, or why the topic was not deleted.
        error_code: i16 [0],
        /// v5+. The error's text, null on success.
        error_message: Option<String> [5],
    }
}

crate::top_level!(request DeleteTopicsRequest: ApiKey::DeleteTopics, versions 0..=6, flexible Some(4), response DeleteTopicsResponse);
crate::top_level!(response DeleteTopicsResponse for DeleteTopicsRequest);

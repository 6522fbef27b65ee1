//! API key 19 — CreateTopics (Kafka 0.10.1+). Versions: v0-v7 (v5+ flexible).
//!
//! ```text
//! CreateTopicsRequest v7  => [name, num_partitions int32, replication_factor int16,
//!                             [partition_index int32, [broker_id int32], tags],
//!                             [name, value nullable, tags], tags],
//!                            timeout_ms int32, validate_only bool, tags
//! CreateTopicsResponse v7 => throttle_time_ms int32,
//!                            [name, topic_id uuid, error_code int16, error_message nullable,
//!                             num_partitions int32, replication_factor int16,
//!                             [name, value nullable, read_only bool, config_source int8,
//!                              is_sensitive bool, tags] nullable,
//!                             tags (0: topic_config_error_code)],
//!                            tags
//! ```
//!
//! v1 adds `validate_only`; v1 answers carry an error message, v2 a throttle time; v4 lets
//! `num_partitions` / `replication_factor` be -1 (broker defaults) without an assignment; v5
//! (flexible) answers with the created topic's partition count, replication factor and
//! configs; v6 may answer THROTTLING_QUOTA_EXCEEDED (89); v7 answers with the topic id.
//!
//! Seen from Kafka 3.7.0 (`create_topics_v4_admin_*`): librdkafka 2.16.0 sends v4, which is
//! *not* flexible (request header v1, response header v0). Creating an existing topic answers
//! 36 TOPIC_ALREADY_EXISTS with the message `Topic 'adm' already exists.`; a success carries a
//! null message.

use crate::api_key::ApiKey;
use crate::message;
use crate::schema::Uuid;

message! {
    /// CreateTopics request: the topics to create.
    pub struct CreateTopicsRequest {
        /// v0+. The topics, each with its partition count or manual assignment, and configs.
        topics: Vec<CreatableTopic> [0],
        /// v0+. How long the broker may wait for the topics to be created, in ms.
        timeout_ms: i32 [0] = 60_000,
        /// v1+. True to check the request without creating anything.
        validate_only: bool [1],
    }
}

message! {
    /// A topic to create.
    pub struct CreatableTopic {
        /// v0+. Topic name.
        name: String [0],
        /// v0+. Partition count, or -1 with a manual assignment (v4+: or for the broker's
        /// default).
        num_partitions: i32 [0],
        /// v0+. Replication factor, or -1 with a manual assignment (v4+: or for the broker's
        /// default).
        replication_factor: i16 [0],
        /// v0+. A manual replica assignment per partition; empty for automatic placement.
        assignments: Vec<CreatableReplicaAssignment> [0],
        /// v0+. Topic configs to set (`retention.ms`, ...).
        configs: Vec<CreatableTopicConfig> [0],
    }
}

message! {
    /// The replicas of one partition of a topic to create.
    pub struct CreatableReplicaAssignment {
        /// v0+. Partition index.
        partition_index: i32 [0],
        /// v0+. The brokers to hold its replicas, preferred leader first.
        broker_ids: Vec<i32> [0],
    }
}

message! {
    /// A config to set on a topic to create.
    pub struct CreatableTopicConfig {
        /// v0+. Config name.
        name: String [0],
        /// v0+. Its value (null: no value).
        value: Option<String> [0],
    }
}

message! {
    /// CreateTopics response.
    pub struct CreateTopicsResponse {
        /// v2+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [2],
        /// v0+. One result per topic.
        topics: Vec<CreatableTopicResult> [0],
    }
}

message! {
    /// The result of creating one topic.
    pub struct CreatableTopicResult {
        /// v0+. Topic name.
        name: String [0],
        /// v7+. The new topic's id (zero when it was not created).
        topic_id: Uuid [7],
        /// v0+. 0, or why the topic was not created (36 TOPIC_ALREADY_EXISTS, ...).
        error_code: i16 [0],
        /// v1+. The error's text, null on success.
        error_message: Option<String> [1],
        /// v5+. The topic's partition count, -1 when unknown.
        num_partitions: i32 [5] = -1,
        /// v5+. The topic's replication factor, -1 when unknown.
        replication_factor: i16 [5] = -1,
        /// v5+. The topic's configs (null when they are not returned, e.g. not authorized).
        configs: Option<Vec<CreatableTopicConfigs>> [5] = Some(Vec::new()),
    }
    tagged {
        /// v5+. Why `configs` is missing, when it is (e.g. 29 TOPIC_AUTHORIZATION_FAILED).
        0 => topic_config_error_code: i16 [5],
    }
}

message! {
    /// A config of a created topic.
    pub struct CreatableTopicConfigs {
        /// v5+. Config name.
        name: String [5],
        /// v5+. Its value (null for a sensitive config).
        value: Option<String> [5],
        /// v5+. True when the config cannot be changed.
        read_only: bool [5],
        /// v5+. Where the value comes from (1 topic, 4 static broker, 5 default, ...), -1 unknown.
        config_source: i8 [5] = -1,
        /// v5+. True for a sensitive config (password, ...).
        is_sensitive: bool [5],
    }
}

crate::top_level!(request CreateTopicsRequest: ApiKey::CreateTopics, versions 0..=7, flexible Some(5), response CreateTopicsResponse);
crate::top_level!(response CreateTopicsResponse for CreateTopicsRequest);

//! API key 33 — AlterConfigs (Kafka 0.11+). Versions: v0-v2 (v2 flexible).
//!
//! ```text
//! AlterConfigsRequest v2  => [resource_type int8, resource_name, [name, value nullable, tags], tags],
//!                            validate_only bool, tags
//! AlterConfigsResponse v2 => throttle_time_ms int32,
//!                            [error_code int16, error_message nullable, resource_type int8,
//!                             resource_name, tags], tags
//! ```
//!
//! Replaces the whole dynamic config of each resource: a config left out goes back to its
//! default (IncrementalAlterConfigs, API 44, changes one config at a time). v1 is v0 with the
//! response sent before throttling.
//!
//! Seen from Kafka 3.7.0 (`alter_configs_v2_admin`): librdkafka 2.16.0 sends v2, flexible
//! (request header v2, response header v1); a success answers error 0 with a null message.

use crate::api_key::ApiKey;
use crate::message;

message! {
    /// AlterConfigs request: the full set of dynamic configs of some resources.
    pub struct AlterConfigsRequest {
        /// v0+. The resources and their new configs.
        resources: Vec<AlterConfigsResource> [0],
        /// v0+. True to check the request without changing anything.
        validate_only: bool [0],
    }
}

message! {
    /// A resource and its new configs.
    pub struct AlterConfigsResource {
        /// v0+. Resource type (2 topic, 4 broker, 8 broker logger).
        resource_type: i8 [0],
        /// v0+. Resource name.
        resource_name: String [0],
        /// v0+. The configs to set.
        configs: Vec<AlterableConfig> [0],
    }
}

message! {
    /// A config to set.
    pub struct AlterableConfig {
        /// v0+. Config name.
        name: String [0],
        /// v0+. Its new value.
        value: Option<String> [0],
    }
}

message! {
    /// AlterConfigs response.
    pub struct AlterConfigsResponse {
        /// v0+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [0],
        /// v0+. One result per resource.
        responses: Vec<AlterConfigsResourceResponse> [0],
    }
}

message! {
    /// The result of altering one resource.
    pub struct AlterConfigsResourceResponse {
        /// v0+. 0, or why the configs were not changed.
        error_code: i16 [0],
        /// v0+. The error's text, null on success.
        error_message: Option<String> [0],
        /// v0+. Resource type.
        resource_type: i8 [0],
        /// v0+. Resource name.
        resource_name: String [0],
    }
}

crate::top_level!(request AlterConfigsRequest: ApiKey::AlterConfigs, versions 0..=2, flexible Some(2), response AlterConfigsResponse);
crate::top_level!(response AlterConfigsResponse for AlterConfigsRequest);

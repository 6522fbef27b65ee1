//! API key 44 — IncrementalAlterConfigs (Kafka 2.3+, KIP-339). Versions: v0-v1 (v1 flexible).
//!
//! ```text
//! IncrementalAlterConfigsRequest v1  => [resource_type int8, resource_name,
//!                                        [name, config_operation int8, value nullable, tags], tags],
//!                                       validate_only bool, tags
//! IncrementalAlterConfigsResponse v1 => throttle_time_ms int32,
//!                                       [error_code int16, error_message nullable,
//!                                        resource_type int8, resource_name, tags], tags
//! ```
//!
//! Changes the named configs only, each by an operation: 0 set, 1 delete (back to the
//! default; the value is ignored, null by convention), 2 append to a list, 3 subtract from a
//! list.
//!
//! Seen from Kafka 3.7.0 (`incremental_alter_configs_v1_admin`): librdkafka 2.16.0 sends v1,
//! flexible (request header v2, response header v1): `cleanup.policy` set to `compact` and
//! `retention.ms` deleted with a null value, answered with error 0 and a null message.

use crate::api_key::ApiKey;
use crate::message;

message! {
    /// IncrementalAlterConfigs request: config changes, one operation per config.
    pub struct IncrementalAlterConfigsRequest {
        /// v0+. The resources and their changes.
        resources: Vec<IncrementalAlterConfigsResource> [0],
        /// v0+. True to check the request without changing anything.
        validate_only: bool [0],
    }
}

message! {
    /// A resource and the changes to its configs.
    pub struct IncrementalAlterConfigsResource {
        /// v0+. Resource type (2 topic, 4 broker, 8 broker logger, ...).
        resource_type: i8 [0],
        /// v0+. Resource name.
        resource_name: String [0],
        /// v0+. The changes.
        configs: Vec<IncrementalAlterableConfig> [0],
    }
}

message! {
    /// A change to one config.
    pub struct IncrementalAlterableConfig {
        /// v0+. Config name.
        name: String [0],
        /// v0+. The operation: 0 set, 1 delete, 2 append, 3 subtract.
        config_operation: i8 [0],
        /// v0+. The value to set, append or subtract (null for delete).
        value: Option<String> [0],
    }
}

message! {
    /// IncrementalAlterConfigs response.
    pub struct IncrementalAlterConfigsResponse {
        /// v0+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [0],
        /// v0+. One result per resource.
        responses: Vec<IncrementalAlterConfigsResourceResponse> [0],
    }
}

message! {
    /// The result of changing one resource's configs.
    pub struct IncrementalAlterConfigsResourceResponse {
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

crate::top_level!(request IncrementalAlterConfigsRequest: ApiKey::IncrementalAlterConfigs, versions 0..=1, flexible Some(1), response IncrementalAlterConfigsResponse);
crate::top_level!(response IncrementalAlterConfigsResponse for IncrementalAlterConfigsRequest);

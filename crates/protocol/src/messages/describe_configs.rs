//! API key 32 — DescribeConfigs (Kafka 0.11+). Versions: v0-v4 (v4 flexible).
//!
//! ```text
//! DescribeConfigsRequest v4  => [resource_type int8, resource_name, [configuration_key] nullable, tags],
//!                               include_synonyms bool, include_documentation bool, tags
//! DescribeConfigsResponse v4 => throttle_time_ms int32,
//!                               [error_code int16, error_message nullable, resource_type int8,
//!                                resource_name,
//!                                [name, value nullable, read_only bool, config_source int8,
//!                                 is_sensitive bool, [name, value nullable, source int8, tags],
//!                                 config_type int8, documentation nullable, tags], tags],
//!                               tags
//! ```
//!
//! Resource types: 2 topic, 4 broker, 8 broker logger (16 client metrics, 32 group in later
//! brokers). v0 answers say per config whether it is a default (`is_default`); v1+ say where its
//! value comes from (`config_source`: 1 dynamic topic, 2 dynamic broker, 3 dynamic default
//! broker, 4 static broker, 5 default, 6 dynamic broker logger, ...) and may list its synonyms
//! (the same setting at other levels, highest precedence first) when `include_synonyms` asks;
//! v3 adds each config's type and, on request, its documentation.
//!
//! Seen from Kafka 3.7.0 (`describe_configs_v1_admin`): librdkafka 2.16.0 sends v1 (classic
//! headers), all keys (null `configuration_keys`) with synonyms. The answer lists 31 configs of
//! topic `adm`, each with `config_source` and its synonyms (`segment.bytes` has two, both named
//! `log.segment.bytes`, from sources 4 and 5; some have none); its error message is an empty
//! string, not null.

use crate::api_key::ApiKey;
use crate::message;

message! {
    /// DescribeConfigs request: the resources whose configs to describe.
    pub struct DescribeConfigsRequest {
        /// v0+. The resources.
        resources: Vec<DescribeConfigsResource> [0],
        /// v1+. True to list each config's synonyms.
        include_synonyms: bool [1],
        /// v3+. True to return each config's documentation.
        include_documentation: bool [3],
    }
}

message! {
    /// A resource whose configs to describe.
    pub struct DescribeConfigsResource {
        /// v0+. Resource type (2 topic, 4 broker, 8 broker logger).
        resource_type: i8 [0],
        /// v0+. Resource name (a topic name, a broker id).
        resource_name: String [0],
        /// v0+. The config names to describe, or null for all of them.
        configuration_keys: Option<Vec<String>> [0],
    }
}

message! {
    /// DescribeConfigs response.
    pub struct DescribeConfigsResponse {
        /// v0+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [0],
        /// v0+. One result per resource.
        results: Vec<DescribeConfigsResult> [0],
    }
}

message! {
    /// The configs of one resource.
    pub struct DescribeConfigsResult {
        /// v0+. 0, or why the resource could not be described.
        error_code: i16 [0],
        /// v0+. The error's text (null or empty on success).
        error_message: Option<String> [0],
        /// v0+. Resource type.
        resource_type: i8 [0],
        /// v0+. Resource name.
        resource_name: String [0],
        /// v0+. The configs.
        configs: Vec<DescribeConfigsResourceResult> [0],
    }
}

message! {
    /// One config of a resource.
    pub struct DescribeConfigsResourceResult {
        /// v0+. Config name.
        name: String [0],
        /// v0+. Its value (null for a sensitive config).
        value: Option<String> [0],
        /// v0+. True when the config cannot be changed.
        read_only: bool [0],
        /// v0 only. True when the value is the default.
        is_default: bool [0, 0],
        /// v1+. Where the value comes from (see the module doc), -1 when unknown.
        config_source: i8 [1] = -1,
        /// v0+. True for a sensitive config (password, ...).
        is_sensitive: bool [0],
        /// v1+. The same setting at other levels, highest precedence first (when asked for).
        synonyms: Vec<DescribeConfigsSynonym> [1],
        /// v3+. The value's type (1 boolean, 2 string, 3 int, 4 short, 5 long, 6 double,
        /// 7 list, 8 class, 9 password), 0 when unknown.
        config_type: i8 [3],
        /// v3+. The config's documentation (when asked for).
        documentation: Option<String> [3],
    }
}

message! {
    /// A synonym of a config: the same setting at another level.
    pub struct DescribeConfigsSynonym {
        /// v1+. Its name at that level (`log.segment.bytes` for `segment.bytes`).
        name: String [1],
        /// v1+. Its value there.
        value: Option<String> [1],
        /// v1+. The level (a `config_source`).
        source: i8 [1],
    }
}

crate::top_level!(request DescribeConfigsRequest: ApiKey::DescribeConfigs, versions 0..=4, flexible Some(4), response DescribeConfigsResponse);
crate::top_level!(response DescribeConfigsResponse for DescribeConfigsRequest);

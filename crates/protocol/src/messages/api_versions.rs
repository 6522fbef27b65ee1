//! API key 18 — ApiVersions (KIP-35, Kafka 0.10+). Versions: v0-v4 (v3+ flexible; v4, Kafka 3.9+,
//! has v3's layout and only allows a supported feature's min version to be 0).
//!
//! ```text
//! ApiVersionsRequest v3  => client_software_name compact_string, client_software_version compact_string, tags
//! ApiVersionsResponse v3 => error_code int16, [api_key int16, min_version int16, max_version int16, tags],
//!                           throttle_time_ms int32, tags (0: supported_features, 1: finalized_features_epoch,
//!                           2: finalized_features, 3: zk_migration_ready)
//! ```
//!
//! The response header is always v0 (no tagged fields), even for v3: a client reads it before it
//! knows which versions the broker speaks. A broker that does not know the requested version
//! answers error 35 (UNSUPPORTED_VERSION) with a v0 body naming the ApiVersions versions it has,
//! and the client retries with the highest of those; a Kafka 0.8 broker closes the connection.

use crate::api_key::ApiKey;
use crate::message;

message! {
    /// ApiVersions request: which versions of which APIs the broker speaks.
    pub struct ApiVersionsRequest {
        /// v3+. The client's software name (`[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`).
        client_software_name: String [3],
        /// v3+. The client's software version.
        client_software_version: String [3],
    }
}

message! {
    /// ApiVersions response.
    pub struct ApiVersionsResponse {
        /// v0+. 0, or an error code (35 UNSUPPORTED_VERSION: this body is v0, retry lower).
        error_code: i16 [0],
        /// v0+. The versions of each API the broker speaks.
        api_keys: Vec<ApiVersion> [0],
        /// v1+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [1],
    }
    tagged {
        /// v3+. Features the broker supports.
        0 => supported_features: Vec<SupportedFeatureKey> [3],
        /// v3+. The epoch of the finalized features, -1 when unknown.
        1 => finalized_features_epoch: i64 [3] = -1,
        /// v3+. Features finalized for the cluster.
        2 => finalized_features: Vec<FinalizedFeatureKey> [3],
        /// v3+. True when a ZooKeeper-mode controller is ready to migrate to KRaft.
        3 => zk_migration_ready: bool [3],
    }
}

message! {
    /// The versions of one API.
    pub struct ApiVersion {
        /// v0+. The API key.
        api_key: i16 [0],
        /// v0+. Lowest version.
        min_version: i16 [0],
        /// v0+. Highest version.
        max_version: i16 [0],
    }
}

message! {
    /// A feature the broker supports.
    pub struct SupportedFeatureKey {
        /// v3+. Feature name.
        name: String [3],
        /// v3+. Lowest version.
        min_version: i16 [3],
        /// v3+. Highest version.
        max_version: i16 [3],
    }
}

message! {
    /// A feature finalized for the cluster.
    pub struct FinalizedFeatureKey {
        /// v3+. Feature name.
        name: String [3],
        /// v3+. Highest finalized level.
        max_version_level: i16 [3],
        /// v3+. Lowest finalized level.
        min_version_level: i16 [3],
    }
}

crate::top_level!(request ApiVersionsRequest: ApiKey::ApiVersions, versions 0..=4, flexible Some(3), response ApiVersionsResponse);

impl crate::Encode for ApiVersionsResponse {
    /// Writes the response to a request sent in `version`; one with error 35
    /// (UNSUPPORTED_VERSION) as a v0 body whatever the version, as a broker sends it and as
    /// [`Decode`](crate::Decode) reads it (its fields of later versions are not written).
    fn encode(&self, version: i16, buf: &mut bytes::BytesMut) -> crate::Result<()> {
        crate::api::check_version::<ApiVersionsRequest>(version)?;
        let version = if self.error_code == UNSUPPORTED_VERSION { 0 } else { version };
        let ctx = crate::schema::ctx_of::<ApiVersionsRequest>(version)?;
        crate::schema::Wire::put(self, ctx, "ApiVersionsResponse", buf)
    }
}

impl crate::Decode for ApiVersionsResponse {
    /// Reads the response to a request sent in `version`. A broker that does not know that
    /// version answers error 35 (UNSUPPORTED_VERSION) in a v0 body whatever was asked, so a
    /// body starting with error 35 is read as v0 (as Kafka's own clients do).
    fn decode(version: i16, buf: &mut bytes::Bytes) -> crate::Result<Self> {
        let unsupported = buf.get(..2) == Some(&UNSUPPORTED_VERSION.to_be_bytes()[..]);
        let version = if unsupported { 0 } else { version };
        let ctx = crate::schema::ctx_of::<ApiVersionsRequest>(version)?;
        crate::schema::Wire::get(ctx, "ApiVersionsResponse", buf)
    }
}

/// Error 35, UNSUPPORTED_VERSION: the broker does not know the requested ApiVersions version.
const UNSUPPORTED_VERSION: i16 = 35;

impl ApiVersionsResponse {
    /// An answer without error listing `(api key, min version, max version)` of each API, in
    /// the order given (what a broker, a fake or a test sends).
    pub fn listing(ranges: impl IntoIterator<Item = (i16, i16, i16)>) -> ApiVersionsResponse {
        let api_keys = ranges
            .into_iter()
            .map(|(api_key, min_version, max_version)| ApiVersion {
                api_key,
                min_version,
                max_version,
                ..Default::default()
            })
            .collect();
        ApiVersionsResponse { api_keys, ..Default::default() }
    }

    /// The versions the broker speaks of `api`, if it speaks it.
    pub fn versions_of(&self, api: ApiKey) -> Option<(i16, i16)> {
        self.api_keys.iter().find(|k| k.api_key == api.code()).map(|k| (k.min_version, k.max_version))
    }
}

//! API key 60 — DescribeCluster (Kafka 2.8+, KIP-700). Versions: v0-v2 (all flexible).
//!
//! ```text
//! DescribeClusterRequest v2  => include_cluster_authorized_operations bool, endpoint_type int8,
//!                               include_fenced_brokers bool, tags
//! DescribeClusterResponse v2 => throttle_time_ms int32, error_code int16, error_message nullable,
//!                               endpoint_type int8, cluster_id, controller_id int32,
//!                               [broker_id int32, host, port int32, rack nullable,
//!                                is_fenced bool, tags],
//!                               cluster_authorized_operations int32, tags
//! ```
//!
//! The cluster id, the controller and the brokers, without the topic metadata a Metadata
//! request carries. v1 (KIP-919) can describe the controllers instead of the brokers (endpoint
//! type 2; a broker asked for controllers answers MISMATCHED_ENDPOINT_TYPE); v2 (KIP-1073)
//! can include fenced brokers, flagged as such. Authorized operations are a bit field (bit n
//! for ACL operation n), -2147483648 when not requested.
//!
//! No frame of this API was captured; the tests check hand-built frames (`tests/admin_apis.rs`).

use crate::api_key::ApiKey;
use crate::message;

message! {
    /// DescribeCluster request.
    pub struct DescribeClusterRequest {
        /// v0+. True to get the operations the caller may perform on the cluster.
        include_cluster_authorized_operations: bool [0],
        /// v1+. What to describe: 1 brokers, 2 controllers.
        endpoint_type: i8 [1] = 1,
        /// v2+. True to include fenced brokers.
        include_fenced_brokers: bool [2],
    }
}

message! {
    /// DescribeCluster response.
    pub struct DescribeClusterResponse {
        /// v0+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [0],
        /// v0+. 0, or an error for the whole request.
        error_code: i16 [0],
        /// v0+. The error's text, null on success.
        error_message: Option<String> [0],
        /// v1+. What was described: 1 brokers, 2 controllers.
        endpoint_type: i8 [1] = 1,
        /// v0+. The cluster id.
        cluster_id: String [0],
        /// v0+. The controller's id (a random live broker's when a broker cannot tell), -1
        /// when unknown.
        controller_id: i32 [0] = -1,
        /// v0+. The brokers (or controllers).
        brokers: Vec<DescribeClusterBroker> [0],
        /// v0+. The operations the caller may perform on the cluster (bit field), -2147483648
        /// when not requested.
        cluster_authorized_operations: i32 [0] = i32::MIN,
    }
}

message! {
    /// A broker (or controller) of the cluster.
    pub struct DescribeClusterBroker {
        /// v0+. Node id.
        broker_id: i32 [0],
        /// v0+. Host name.
        host: String [0],
        /// v0+. Port.
        port: i32 [0],
        /// v0+. Rack, null when none is set.
        rack: Option<String> [0],
        /// v2+. True for a fenced broker.
        is_fenced: bool [2],
    }
}

crate::top_level!(request DescribeClusterRequest: ApiKey::DescribeCluster, versions 0..=2, flexible Some(0), response DescribeClusterResponse);
crate::top_level!(response DescribeClusterResponse for DescribeClusterRequest);

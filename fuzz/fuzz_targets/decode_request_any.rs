//! Bytes after a request header, decoded as the request of one of the modern APIs in one of its
//! versions, flexible ones included, as a broker (the FakeCluster's modern mode) reads them: the
//! first byte picks the API, the second the version (modulo its range). A decode that succeeds
//! must re-encode and decode again to an equal value (gregor_protocol_fuzz::request_stable).
#![no_main]

use gregor_protocol::frame::Request;
use gregor_protocol::messages::*;
use libfuzzer_sys::fuzz_target;

/// The version `selector` picks of `R`'s range.
fn pick<R: Request>(selector: u8) -> i16 {
    let span = (R::VERSIONS.max - R::VERSIONS.min + 1) as u8;
    R::VERSIONS.min + (selector % span) as i16
}

macro_rules! any {
    ($api:expr, $version:expr, $body:expr, $($r:ty),+ $(,)?) => {{
        let apis: &[fn(u8, &[u8])] = &[$(|v, b| gregor_protocol_fuzz::request_stable::<$r>(pick::<$r>(v), b)),+];
        apis[$api as usize % apis.len()]($version, $body)
    }};
}

fuzz_target!(|data: &[u8]| {
    let [api, version, body @ ..] = data else { return };
    any!(
        *api,
        *version,
        body,
        ProduceRequest,
        FetchRequest,
        OffsetsRequest,
        MetadataRequest,
        OffsetCommitRequest,
        OffsetFetchRequest,
        FindCoordinatorRequest,
        JoinGroupRequest,
        HeartbeatRequest,
        LeaveGroupRequest,
        SyncGroupRequest,
        DescribeGroupsRequest,
        ListGroupsRequest,
        SaslHandshakeRequest,
        ApiVersionsRequest,
        CreateTopicsRequest,
        DeleteTopicsRequest,
        InitProducerIdRequest,
        DescribeConfigsRequest,
        AlterConfigsRequest,
        SaslAuthenticateRequest,
        CreatePartitionsRequest,
        DeleteGroupsRequest,
        ElectLeadersRequest,
        IncrementalAlterConfigsRequest,
        AlterPartitionReassignmentsRequest,
        ListPartitionReassignmentsRequest,
        OffsetDeleteRequest,
        DescribeClusterRequest,
        DeleteRecordsRequest,
    );
});

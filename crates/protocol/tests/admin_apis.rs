//! The admin APIs: round trips at every version, golden frames built by hand from Kafka's
//! message specs, and the version checks.
//!
//! CreateTopics, DeleteTopics, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and
//! CreatePartitions are also checked against captured frames (`tests/modern_fixtures.rs`); the
//! APIs of KRaft-era administration (DeleteGroups, ElectLeaders, AlterPartitionReassignments,
//! ListPartitionReassignments, DescribeCluster, DeleteRecords, OffsetDelete) were not captured,
//! so their golden frames here are derived from the specs byte by byte.

use std::fmt::Debug;

use bytes::{Bytes, BytesMut};
use gregor_protocol::frame::{self, ApiKey, Request, RequestHeader};
use gregor_protocol::messages::*;
use gregor_protocol::schema::Uuid;
use gregor_protocol::{Decode, Encode, Error};

/// Encodes `value` in `version`, decodes it back (all bytes used) and requires the same value
/// and, written again, the same bytes.
fn round_trip<T: Encode + Decode + PartialEq + Debug>(value: &T, version: i16) -> Bytes {
    let bytes = value.to_bytes(version).unwrap_or_else(|e| panic!("v{version} encode: {e}"));
    let mut rest = bytes.clone();
    let back = T::decode(version, &mut rest).unwrap_or_else(|e| panic!("v{version} decode: {e}"));
    assert!(rest.is_empty(), "v{version}: {} bytes left", rest.len());
    assert_eq!(&back, value, "v{version}");
    assert_eq!(back.to_bytes(version).unwrap(), bytes, "v{version} re-encode");
    bytes
}

/// Requires `bytes` to decode as `want` in `version`, all bytes used, and `want` to encode to
/// exactly `bytes`; then requires every shorter prefix to fail to decode (without a panic).
fn golden<T: Encode + Decode + PartialEq + Debug>(version: i16, bytes: &[u8], want: &T) {
    let mut buf = Bytes::copy_from_slice(bytes);
    let got = T::decode(version, &mut buf).unwrap_or_else(|e| panic!("v{version} decode: {e}"));
    assert!(buf.is_empty(), "v{version}: {} bytes left", buf.len());
    assert_eq!(&got, want, "v{version} decode");
    assert_eq!(&want.to_bytes(version).unwrap()[..], bytes, "v{version} encode");
    for cut in 0..bytes.len() {
        let mut short = Bytes::copy_from_slice(&bytes[..cut]);
        assert!(T::decode(version, &mut short).is_err(), "v{version}: a {cut}-byte prefix decoded");
    }
}

/// Round trips a request and its response at every version of `R`.
fn every_version<R: Request + PartialEq + Debug>(request: impl Fn(i16) -> R, response: impl Fn(i16) -> R::Response)
where
    R::Response: PartialEq + Debug,
{
    for v in R::VERSIONS.min..=R::VERSIONS.max {
        round_trip(&request(v), v);
        round_trip(&response(v), v);
    }
}

const TIMEOUT: [u8; 4] = [0x00, 0x00, 0xea, 0x60]; // 60000
const NULL_INT32: [u8; 4] = [0xff; 4];

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn topic_id() -> Uuid {
    Uuid([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16])
}

// ---- versions and headers ----------------------------------------------------------------

#[test]
fn the_new_keys_are_named_and_their_versions_known() {
    let keys = [
        (21, ApiKey::DeleteRecords, (0, 2), Some(2)),
        (42, ApiKey::DeleteGroups, (0, 3), Some(2)),
        (43, ApiKey::ElectLeaders, (0, 2), Some(2)),
        (45, ApiKey::AlterPartitionReassignments, (0, 1), Some(0)),
        (46, ApiKey::ListPartitionReassignments, (0, 0), Some(0)),
        (47, ApiKey::OffsetDelete, (0, 0), None),
        (60, ApiKey::DescribeCluster, (0, 2), Some(0)),
        (19, ApiKey::CreateTopics, (0, 7), Some(5)),
        (20, ApiKey::DeleteTopics, (0, 6), Some(4)),
        (32, ApiKey::DescribeConfigs, (0, 4), Some(4)),
        (33, ApiKey::AlterConfigs, (0, 2), Some(2)),
        (37, ApiKey::CreatePartitions, (0, 3), Some(2)),
        (44, ApiKey::IncrementalAlterConfigs, (0, 1), Some(1)),
    ];
    for (code, key, (min, max), flexible) in keys {
        assert_eq!(ApiKey::from_i16(code), key);
        assert_eq!(key.code(), code);
        let range = key.versions().unwrap();
        assert_eq!((range.min, range.max), (min, max), "{key}");
        assert_eq!(key.flexible_from(), flexible, "{key}");
        assert!(key.check_version(max + 1).is_err());
    }
    assert_eq!(ApiKey::DescribeCluster.to_string(), "DescribeCluster");
}

#[test]
fn a_flexible_request_frame_has_header_v2_and_its_answer_header_v1() {
    let header = RequestHeader {
        api_key: ApiKey::DescribeCluster,
        api_version: 2,
        correlation_id: 7,
        client_id: Some("c".into()),
        unknown_tagged_fields: Default::default(),
    };
    let request = DescribeClusterRequest { include_fenced_brokers: true, ..Default::default() };
    let mut buf = BytesMut::new();
    frame::encode_request(&header, &request, &mut buf).unwrap();
    let want = cat(&[
        &[0, 0, 0, 16],            // size
        &[0x00, 0x3c],             // api key 60
        &[0x00, 0x02],             // version 2
        &[0, 0, 0, 7],             // correlation id
        &[0x00, 0x01, b'c'],       // client id: a classic string, even in header v2
        &[0x00],                   // header tags
        &[0x00, 0x01, 0x01, 0x00], // include ops false, endpoint type 1, include fenced true, tags
    ]);
    assert_eq!(&buf[..], &want[..]);

    let response = cat(&[
        &[0, 0, 0, 7], // correlation id
        &[0x00],       // response header v1 tags
        &[0, 0, 0, 0, 0, 0, 0x00, 0x01],
        &[0x02, b'x'],
        &[0xff, 0xff, 0xff, 0xff],
        &[0x01],
        &[0x80, 0, 0, 0],
        &[0x00],
    ]);
    let (rh, body) = frame::decode_response::<DescribeClusterRequest>(2, Bytes::from(response.clone())).unwrap();
    assert_eq!(rh.correlation_id, 7);
    assert_eq!(body.cluster_id, "x");
    assert_eq!(body.controller_id, -1);
    let mut again = BytesMut::new();
    frame::encode_response_for::<DescribeClusterRequest>(7, 2, &body, &mut again).unwrap();
    assert_eq!(&again[4..], &response[..]);
}

#[test]
fn a_classic_request_frame_has_header_v1_and_its_answer_header_v0() {
    let header = RequestHeader {
        api_key: ApiKey::OffsetDelete,
        api_version: 0,
        correlation_id: 9,
        client_id: Some("c".into()),
        unknown_tagged_fields: Default::default(),
    };
    let request = OffsetDeleteRequest { group_id: "g".into(), ..Default::default() };
    let mut buf = BytesMut::new();
    frame::encode_request(&header, &request, &mut buf).unwrap();
    let want = cat(&[
        &[0, 0, 0, 18],
        &[0x00, 0x2f, 0x00, 0x00],
        &[0, 0, 0, 9],
        &[0x00, 0x01, b'c'],
        &[0x00, 0x01, b'g'],
        &[0, 0, 0, 0],
    ]);
    assert_eq!(&buf[..], &want[..]);
    let response = cat(&[&[0, 0, 0, 9], &[0x00, 0x45], &[0, 0, 0, 0], &[0, 0, 0, 0]]);
    let (_, body) = frame::decode_response::<OffsetDeleteRequest>(0, Bytes::from(response)).unwrap();
    assert_eq!(body.error_code, 69);
}

// ---- DeleteGroups (42) -----------------------------------------------------------------------

fn delete_groups_request(_v: i16) -> DeleteGroupsRequest {
    DeleteGroupsRequest { groups_names: vec!["g1".into(), "g2".into()], ..Default::default() }
}

fn delete_groups_response(v: i16) -> DeleteGroupsResponse {
    DeleteGroupsResponse {
        throttle_time_ms: 5,
        results: vec![
            DeletableGroupResult { group_id: "g1".into(), error_code: 0, ..Default::default() },
            DeletableGroupResult {
                group_id: "g2".into(),
                error_code: 68,
                error_message: (v >= 3).then(|| "The group is not empty.".into()),
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

#[test]
fn delete_groups_round_trips_at_every_version() {
    every_version(delete_groups_request, delete_groups_response);
}

#[test]
fn delete_groups_golden_frames() {
    let request = DeleteGroupsRequest { groups_names: vec!["g1".into()], ..Default::default() };
    // v0/v1: int32 count, int16-length strings
    golden(0, &[0, 0, 0, 1, 0, 2, b'g', b'1'], &request);
    // v2: compact array (count + 1), compact string (length + 1), tags
    golden(2, &[0x02, 0x03, b'g', b'1', 0x00], &request);

    let response = DeleteGroupsResponse {
        throttle_time_ms: 0,
        results: vec![DeletableGroupResult {
            group_id: "g1".into(),
            error_code: 68,
            error_message: Some("no".into()),
            ..Default::default()
        }],
        ..Default::default()
    };
    let v3 = cat(&[
        &[0, 0, 0, 0],       // throttle_time_ms
        &[0x02],             // one result
        &[0x03, b'g', b'1'], // group_id
        &[0x00, 0x44],       // error_code 68 NON_EMPTY_GROUP
        &[0x03, b'n', b'o'], // error_message (v3+)
        &[0x00],             // result tags
        &[0x00],             // response tags
    ]);
    golden(3, &v3, &response);
    // v2 has no error message: setting one is an error, not a silent drop
    let err = response.encode(2, &mut BytesMut::new()).unwrap_err();
    assert!(matches!(err, Error::FieldNotInVersion { field: "error_message", version: 2, .. }), "{err}");
}

// ---- ElectLeaders (43) -----------------------------------------------------------------------

fn elect_leaders_request(v: i16) -> ElectLeadersRequest {
    ElectLeadersRequest {
        election_type: if v >= 1 { 1 } else { 0 },
        topic_partitions: Some(vec![ElectLeadersTopic {
            topic: "t".into(),
            partitions: vec![0, 1, 2],
            ..Default::default()
        }]),
        timeout_ms: 30_000,
        ..Default::default()
    }
}

fn elect_leaders_response(v: i16) -> ElectLeadersResponse {
    ElectLeadersResponse {
        throttle_time_ms: 1,
        error_code: 0,
        replica_election_results: vec![ReplicaElectionResult {
            topic: "t".into(),
            partition_result: vec![
                ElectLeadersPartitionResult { partition_id: 0, error_code: 0, ..Default::default() },
                ElectLeadersPartitionResult {
                    partition_id: 1,
                    error_code: 84,
                    error_message: Some(format!("v{v}: leader is already the preferred replica")),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn elect_leaders_round_trips_at_every_version() {
    every_version(elect_leaders_request, elect_leaders_response);
    // null partitions: every partition
    for v in 0..=2 {
        round_trip(&ElectLeadersRequest { topic_partitions: None, ..Default::default() }, v);
    }
}

#[test]
fn elect_leaders_golden_frames() {
    // v0: null topic partitions (all), timeout; no election type
    let all = ElectLeadersRequest { topic_partitions: None, ..Default::default() };
    golden(0, &cat(&[&NULL_INT32, &TIMEOUT]), &all);
    // v2: election type 1 (unclean), partitions 0 and 1 of topic t
    let request = ElectLeadersRequest {
        election_type: 1,
        topic_partitions: Some(vec![ElectLeadersTopic {
            topic: "t".into(),
            partitions: vec![0, 1],
            ..Default::default()
        }]),
        ..Default::default()
    };
    let v2 = cat(&[
        &[0x01],                         // election_type
        &[0x02],                         // one topic
        &[0x02, b't'],                   // topic
        &[0x03, 0, 0, 0, 0, 0, 0, 0, 1], // partitions [0, 1]
        &[0x00],                         // topic tags
        &TIMEOUT,
        &[0x00], // request tags
    ]);
    golden(2, &v2, &request);
    // v1 classic: the same in int32/int16 lengths
    let v1 = cat(&[&[0x01], &[0, 0, 0, 1], &[0, 1, b't'], &[0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1], &TIMEOUT]);
    golden(1, &v1, &request);
    let err = request.encode(0, &mut BytesMut::new()).unwrap_err();
    assert!(matches!(err, Error::FieldNotInVersion { field: "election_type", version: 0, .. }), "{err}");

    let response = ElectLeadersResponse {
        replica_election_results: vec![ReplicaElectionResult {
            topic: "t".into(),
            partition_result: vec![ElectLeadersPartitionResult {
                partition_id: 0,
                error_code: 84,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let v2 = cat(&[
        &[0, 0, 0, 0],       // throttle_time_ms
        &[0, 0],             // error_code (v1+)
        &[0x02],             // one topic
        &[0x02, b't'],       // topic
        &[0x02],             // one partition
        &[0, 0, 0, 0],       // partition_id
        &[0x00, 0x54],       // error_code 84 ELECTION_NOT_NEEDED
        &[0x00],             // error_message null
        &[0x00, 0x00, 0x00], // partition, topic and response tags
    ]);
    golden(2, &v2, &response);
}

// ---- AlterPartitionReassignments (45) --------------------------------------------------------

fn alter_reassignments_request(v: i16) -> AlterPartitionReassignmentsRequest {
    AlterPartitionReassignmentsRequest {
        timeout_ms: 10_000,
        allow_replication_factor_change: v < 1,
        topics: vec![ReassignableTopic {
            name: "t".into(),
            partitions: vec![
                ReassignablePartition { partition_index: 0, replicas: Some(vec![1, 2, 3]), ..Default::default() },
                ReassignablePartition { partition_index: 1, replicas: None, ..Default::default() },
            ],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn alter_reassignments_response(v: i16) -> AlterPartitionReassignmentsResponse {
    AlterPartitionReassignmentsResponse {
        throttle_time_ms: 2,
        allow_replication_factor_change: v < 1,
        error_code: 0,
        error_message: None,
        responses: vec![ReassignableTopicResponse {
            name: "t".into(),
            partitions: vec![ReassignablePartitionResponse {
                partition_index: 1,
                error_code: 85,
                error_message: Some("No reassignment in progress".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn alter_partition_reassignments_round_trips_at_every_version() {
    every_version(alter_reassignments_request, alter_reassignments_response);
}

#[test]
fn alter_partition_reassignments_golden_frames() {
    let mut request = AlterPartitionReassignmentsRequest {
        topics: vec![ReassignableTopic {
            name: "t".into(),
            partitions: vec![
                ReassignablePartition { partition_index: 0, replicas: Some(vec![1, 2]), ..Default::default() },
                ReassignablePartition { partition_index: 1, replicas: None, ..Default::default() },
            ],
            ..Default::default()
        }],
        ..Default::default()
    };
    let topics = cat(&[
        &[0x02],                                           // one topic
        &[0x02, b't'],                                     // name
        &[0x03],                                           // two partitions
        &[0, 0, 0, 0, 0x03, 0, 0, 0, 1, 0, 0, 0, 2, 0x00], // 0 -> [1, 2], tags
        &[0, 0, 0, 1, 0x00, 0x00],                         // 1 -> null (cancel), tags
        &[0x00],                                           // topic tags
    ]);
    // v0: timeout, topics, tags (every version is flexible)
    golden(0, &cat(&[&TIMEOUT, &topics, &[0x00]]), &request);
    // v1: allow_replication_factor_change after the timeout
    request.allow_replication_factor_change = false;
    golden(1, &cat(&[&TIMEOUT, &[0x00], &topics, &[0x00]]), &request);
    // v0 cannot say "false": an error, not a silent drop
    let err = request.encode(0, &mut BytesMut::new()).unwrap_err();
    assert!(matches!(err, Error::FieldNotInVersion { field: "allow_replication_factor_change", .. }), "{err}");

    let response = AlterPartitionReassignmentsResponse {
        responses: vec![ReassignableTopicResponse {
            name: "t".into(),
            partitions: vec![ReassignablePartitionResponse { partition_index: 0, ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let v1 = cat(&[
        &[0, 0, 0, 0],                                           // throttle_time_ms
        &[0x01],                                                 // allow_replication_factor_change (default true)
        &[0, 0],                                                 // error_code
        &[0x00],                                                 // error_message null
        &[0x02, 0x02, b't', 0x02, 0, 0, 0, 0, 0, 0, 0x00, 0x00], // t: partition 0, error 0, null message, tags
        &[0x00, 0x00],                                           // topic and response tags
    ]);
    golden(1, &v1, &response);
}

// ---- ListPartitionReassignments (46) ---------------------------------------------------------

#[test]
fn list_partition_reassignments_round_trips_and_golden_frames() {
    let request = ListPartitionReassignmentsRequest {
        timeout_ms: 30_000,
        topics: Some(vec![ListPartitionReassignmentsTopics {
            name: "t".into(),
            partition_indexes: vec![0, 3],
            ..Default::default()
        }]),
        ..Default::default()
    };
    round_trip(&request, 0);
    let all = ListPartitionReassignmentsRequest::default();
    golden(0, &cat(&[&TIMEOUT, &[0x00], &[0x00]]), &all); // null topics: every move, tags
    golden(0, &cat(&[&[0, 0, 0x75, 0x30], &[0x02, 0x02, b't', 0x03, 0, 0, 0, 0, 0, 0, 0, 3, 0x00], &[0x00]]), &request);

    let response = ListPartitionReassignmentsResponse {
        topics: vec![OngoingTopicReassignment {
            name: "t".into(),
            partitions: vec![OngoingPartitionReassignment {
                partition_index: 0,
                replicas: vec![1, 2, 3],
                adding_replicas: vec![3],
                removing_replicas: vec![1],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    round_trip(&response, 0);
    let v0 = cat(&[
        &[0, 0, 0, 0, 0, 0, 0x00],                   // throttle_time_ms, error_code, null error_message
        &[0x02, 0x02, b't', 0x02],                   // one topic "t", one partition
        &[0, 0, 0, 0],                               // partition_index
        &[0x04, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3], // replicas
        &[0x02, 0, 0, 0, 3],                         // adding_replicas
        &[0x02, 0, 0, 0, 1],                         // removing_replicas
        &[0x00, 0x00, 0x00],                         // partition, topic and response tags
    ]);
    golden(0, &v0, &response);
}

// ---- DescribeCluster (60) --------------------------------------------------------------------

fn describe_cluster_request(v: i16) -> DescribeClusterRequest {
    DescribeClusterRequest {
        include_cluster_authorized_operations: true,
        endpoint_type: if v >= 1 { 2 } else { 1 },
        include_fenced_brokers: v >= 2,
        ..Default::default()
    }
}

fn describe_cluster_response(v: i16) -> DescribeClusterResponse {
    DescribeClusterResponse {
        throttle_time_ms: 0,
        error_code: 0,
        error_message: None,
        endpoint_type: if v >= 1 { 2 } else { 1 },
        cluster_id: "5L6g3nShT-eMCtK--X86sw".into(),
        controller_id: 1,
        brokers: vec![
            DescribeClusterBroker {
                broker_id: 1,
                host: "b1".into(),
                port: 9092,
                rack: Some("r1".into()),
                ..Default::default()
            },
            DescribeClusterBroker {
                broker_id: 2,
                host: "b2".into(),
                port: 9092,
                rack: None,
                is_fenced: v >= 2,
                ..Default::default()
            },
        ],
        cluster_authorized_operations: 0b1_1111_1000,
        ..Default::default()
    }
}

#[test]
fn describe_cluster_round_trips_at_every_version() {
    every_version(describe_cluster_request, describe_cluster_response);
}

#[test]
fn describe_cluster_golden_frames_keep_unknown_tags() {
    // v0: include_cluster_authorized_operations, tags
    golden(
        0,
        &[0x01, 0x00],
        &DescribeClusterRequest { include_cluster_authorized_operations: true, ..Default::default() },
    );
    // v1 adds endpoint_type, v2 include_fenced_brokers
    golden(1, &[0x00, 0x02, 0x00], &DescribeClusterRequest { endpoint_type: 2, ..Default::default() });
    golden(
        2,
        &[0x00, 0x01, 0x01, 0x00],
        &DescribeClusterRequest { include_fenced_brokers: true, ..Default::default() },
    );
    let err = DescribeClusterRequest { include_fenced_brokers: true, ..Default::default() }
        .encode(1, &mut BytesMut::new())
        .unwrap_err();
    assert!(matches!(err, Error::FieldNotInVersion { field: "include_fenced_brokers", version: 1, .. }), "{err}");

    // v2, a fenced broker whose tag section carries a tag this crate does not know (7: 0xab)
    let mut broker =
        DescribeClusterBroker { broker_id: 1, host: "h".into(), port: 9092, is_fenced: true, ..Default::default() };
    broker.unknown_tagged_fields.push(7, Bytes::from_static(&[0xab]));
    let response = DescribeClusterResponse {
        cluster_id: "abc".into(),
        controller_id: 1,
        brokers: vec![broker],
        ..Default::default()
    };
    let v2 = cat(&[
        &[0, 0, 0, 0],             // throttle_time_ms
        &[0, 0],                   // error_code
        &[0x00],                   // error_message null
        &[0x01],                   // endpoint_type 1 (brokers)
        &[0x04, b'a', b'b', b'c'], // cluster_id
        &[0, 0, 0, 1],             // controller_id
        &[0x02],                   // one broker
        &[0, 0, 0, 1],             // broker_id
        &[0x02, b'h'],             // host
        &[0, 0, 0x23, 0x84],       // port 9092
        &[0x00],                   // rack null
        &[0x01],                   // is_fenced (v2+)
        &[0x01, 0x07, 0x01, 0xab], // broker tags: one field, tag 7, 1 byte
        &[0x80, 0, 0, 0],          // cluster_authorized_operations: not requested
        &[0x00],                   // response tags
    ]);
    golden(2, &v2, &response);
}

// ---- DeleteRecords (21) ----------------------------------------------------------------------

fn delete_records_request(_v: i16) -> DeleteRecordsRequest {
    DeleteRecordsRequest {
        topics: vec![DeleteRecordsTopic {
            name: "t".into(),
            partitions: vec![
                DeleteRecordsPartition { partition_index: 0, offset: 42, ..Default::default() },
                DeleteRecordsPartition { partition_index: 1, offset: -1, ..Default::default() },
            ],
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    }
}

fn delete_records_response(_v: i16) -> DeleteRecordsResponse {
    DeleteRecordsResponse {
        throttle_time_ms: 3,
        topics: vec![DeleteRecordsTopicResult {
            name: "t".into(),
            partitions: vec![
                DeleteRecordsPartitionResult {
                    partition_index: 0,
                    low_watermark: 42,
                    error_code: 0,
                    ..Default::default()
                },
                DeleteRecordsPartitionResult {
                    partition_index: 1,
                    low_watermark: -1,
                    error_code: 6,
                    ..Default::default()
                },
            ],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn delete_records_round_trips_at_every_version() {
    every_version(delete_records_request, delete_records_response);
}

#[test]
fn delete_records_golden_frames() {
    let request = DeleteRecordsRequest {
        topics: vec![DeleteRecordsTopic {
            name: "t".into(),
            partitions: vec![DeleteRecordsPartition { partition_index: 0, offset: 5, ..Default::default() }],
            ..Default::default()
        }],
        timeout_ms: 60_000,
        ..Default::default()
    };
    let v0 = cat(&[&[0, 0, 0, 1], &[0, 1, b't'], &[0, 0, 0, 1], &[0, 0, 0, 0], &[0, 0, 0, 0, 0, 0, 0, 5], &TIMEOUT]);
    golden(0, &v0, &request);
    golden(1, &v0, &request);
    let v2 =
        cat(&[&[0x02, 0x02, b't', 0x02], &[0, 0, 0, 0], &[0, 0, 0, 0, 0, 0, 0, 5], &[0x00, 0x00], &TIMEOUT, &[0x00]]);
    golden(2, &v2, &request);

    let response = DeleteRecordsResponse {
        topics: vec![DeleteRecordsTopicResult {
            name: "t".into(),
            partitions: vec![DeleteRecordsPartitionResult {
                partition_index: 0,
                low_watermark: 5,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let v2 = cat(&[
        &[0, 0, 0, 0],             // throttle_time_ms
        &[0x02, 0x02, b't', 0x02], // one topic "t", one partition
        &[0, 0, 0, 0],             // partition_index
        &[0, 0, 0, 0, 0, 0, 0, 5], // low_watermark
        &[0, 0],                   // error_code
        &[0x00, 0x00, 0x00],       // partition, topic and response tags
    ]);
    golden(2, &v2, &response);
}

// ---- OffsetDelete (47) -----------------------------------------------------------------------

#[test]
fn offset_delete_round_trips_and_golden_frames() {
    let request = OffsetDeleteRequest {
        group_id: "g".into(),
        topics: vec![OffsetDeleteRequestTopic {
            name: "t".into(),
            partitions: vec![OffsetDeleteRequestPartition { partition_index: 0, ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    round_trip(&request, 0);
    golden(0, &cat(&[&[0, 1, b'g'], &[0, 0, 0, 1], &[0, 1, b't'], &[0, 0, 0, 1], &[0, 0, 0, 0]]), &request);

    let response = OffsetDeleteResponse {
        error_code: 0,
        throttle_time_ms: 0,
        topics: vec![OffsetDeleteResponseTopic {
            name: "t".into(),
            partitions: vec![OffsetDeleteResponsePartition {
                partition_index: 0,
                error_code: 86,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    round_trip(&response, 0);
    // error_code comes before throttle_time_ms in this API
    let v0 = cat(&[&[0, 0], &[0, 0, 0, 0], &[0, 0, 0, 1], &[0, 1, b't'], &[0, 0, 0, 1], &[0, 0, 0, 0], &[0x00, 0x56]]);
    golden(0, &v0, &response);
    assert!(matches!(OffsetDeleteRequest::decode(1, &mut Bytes::new()), Err(Error::UnsupportedVersion { .. })));
}

// ---- the captured APIs, at the versions the captures lack --------------------------------------

fn create_topics_request(v: i16) -> CreateTopicsRequest {
    CreateTopicsRequest {
        topics: vec![
            CreatableTopic {
                name: "a".into(),
                num_partitions: if v >= 4 { -1 } else { 3 },
                replication_factor: if v >= 4 { -1 } else { 1 },
                configs: vec![
                    CreatableTopicConfig {
                        name: "cleanup.policy".into(),
                        value: Some("compact".into()),
                        ..Default::default()
                    },
                    CreatableTopicConfig { name: "retention.ms".into(), value: None, ..Default::default() },
                ],
                ..Default::default()
            },
            CreatableTopic {
                name: "b".into(),
                num_partitions: -1,
                replication_factor: -1,
                assignments: vec![
                    CreatableReplicaAssignment { partition_index: 0, broker_ids: vec![1, 2], ..Default::default() },
                    CreatableReplicaAssignment { partition_index: 1, broker_ids: vec![2, 1], ..Default::default() },
                ],
                ..Default::default()
            },
        ],
        timeout_ms: 15_000,
        validate_only: v >= 1,
        ..Default::default()
    }
}

fn create_topics_response(v: i16) -> CreateTopicsResponse {
    let mut ok = CreatableTopicResult { name: "a".into(), ..Default::default() };
    let mut failed = CreatableTopicResult { name: "b".into(), error_code: 36, ..Default::default() };
    if v >= 1 {
        failed.error_message = Some("Topic 'b' already exists.".into());
    }
    if v >= 5 {
        ok.num_partitions = 3;
        ok.replication_factor = 1;
        ok.configs = Some(vec![CreatableTopicConfigs {
            name: "cleanup.policy".into(),
            value: Some("compact".into()),
            config_source: 1,
            ..Default::default()
        }]);
        failed.configs = None;
        failed.topic_config_error_code = 29;
    }
    if v >= 7 {
        ok.topic_id = topic_id();
    }
    CreateTopicsResponse {
        throttle_time_ms: if v >= 2 { 4 } else { 0 },
        topics: vec![ok, failed],
        ..Default::default()
    }
}

fn delete_topics_request(v: i16) -> DeleteTopicsRequest {
    if v >= 6 {
        DeleteTopicsRequest {
            topics: vec![
                DeleteTopicState { name: Some("a".into()), ..Default::default() },
                DeleteTopicState { name: None, topic_id: topic_id(), ..Default::default() },
            ],
            timeout_ms: 30_000,
            ..Default::default()
        }
    } else {
        DeleteTopicsRequest { topic_names: vec!["a".into(), "b".into()], timeout_ms: 30_000, ..Default::default() }
    }
}

fn delete_topics_response(v: i16) -> DeleteTopicsResponse {
    DeleteTopicsResponse {
        throttle_time_ms: if v >= 1 { 1 } else { 0 },
        responses: vec![
            DeletableTopicResult {
                name: Some("a".into()),
                topic_id: if v >= 6 { topic_id() } else { Uuid::ZERO },
                ..Default::default()
            },
            DeletableTopicResult {
                name: if v >= 6 { None } else { Some("b".into()) },
                error_code: 3,
                error_message: (v >= 5).then(|| "unknown".into()),
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

fn describe_configs_request(v: i16) -> DescribeConfigsRequest {
    DescribeConfigsRequest {
        resources: vec![
            DescribeConfigsResource {
                resource_type: 2,
                resource_name: "t".into(),
                configuration_keys: None,
                ..Default::default()
            },
            DescribeConfigsResource {
                resource_type: 4,
                resource_name: "1".into(),
                configuration_keys: Some(vec!["log.retention.ms".into()]),
                ..Default::default()
            },
        ],
        include_synonyms: v >= 1,
        include_documentation: v >= 3,
        ..Default::default()
    }
}

fn describe_configs_response(v: i16) -> DescribeConfigsResponse {
    let mut config = DescribeConfigsResourceResult {
        name: "retention.ms".into(),
        value: Some("3600000".into()),
        is_default: v == 0,
        ..Default::default()
    };
    if v >= 1 {
        config.config_source = 1;
        config.synonyms = vec![DescribeConfigsSynonym {
            name: "retention.ms".into(),
            value: Some("3600000".into()),
            source: 1,
            ..Default::default()
        }];
    }
    if v >= 3 {
        config.config_type = 5;
        config.documentation = Some("How long to keep a log segment.".into());
    }
    let secret = DescribeConfigsResourceResult {
        name: "ssl.key.password".into(),
        value: None,
        is_sensitive: true,
        read_only: true,
        ..Default::default()
    };
    let secret = DescribeConfigsResourceResult { config_source: if v >= 1 { 4 } else { -1 }, ..secret };
    DescribeConfigsResponse {
        throttle_time_ms: 0,
        results: vec![DescribeConfigsResult {
            error_message: None,
            resource_type: 2,
            resource_name: "t".into(),
            configs: vec![config, secret],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn captured_admin_apis_round_trip_at_every_version() {
    every_version(create_topics_request, create_topics_response);
    every_version(delete_topics_request, delete_topics_response);
    every_version(describe_configs_request, describe_configs_response);
    every_version(
        |_| AlterConfigsRequest {
            resources: vec![AlterConfigsResource {
                resource_type: 2,
                resource_name: "t".into(),
                configs: vec![AlterableConfig {
                    name: "retention.ms".into(),
                    value: Some("1".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            validate_only: true,
            ..Default::default()
        },
        |_| AlterConfigsResponse {
            throttle_time_ms: 0,
            responses: vec![AlterConfigsResourceResponse {
                error_code: 40,
                error_message: Some("bad".into()),
                resource_type: 2,
                resource_name: "t".into(),
                ..Default::default()
            }],
            ..Default::default()
        },
    );
    every_version(
        |_| IncrementalAlterConfigsRequest {
            resources: vec![IncrementalAlterConfigsResource {
                resource_type: 4,
                resource_name: "".into(),
                configs: vec![
                    IncrementalAlterableConfig {
                        name: "a".into(),
                        config_operation: 2,
                        value: Some("x".into()),
                        ..Default::default()
                    },
                    IncrementalAlterableConfig {
                        name: "b".into(),
                        config_operation: 1,
                        value: None,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }],
            ..Default::default()
        },
        |_| IncrementalAlterConfigsResponse {
            responses: vec![IncrementalAlterConfigsResourceResponse { resource_type: 4, ..Default::default() }],
            ..Default::default()
        },
    );
    every_version(
        |_| CreatePartitionsRequest {
            topics: vec![
                CreatePartitionsTopic { name: "a".into(), count: 6, assignments: None, ..Default::default() },
                CreatePartitionsTopic {
                    name: "b".into(),
                    count: 2,
                    assignments: Some(vec![CreatePartitionsAssignment {
                        broker_ids: vec![1, 2],
                        ..Default::default()
                    }]),
                    ..Default::default()
                },
            ],
            timeout_ms: 60_000,
            validate_only: false,
            ..Default::default()
        },
        |_| CreatePartitionsResponse {
            results: vec![CreatePartitionsTopicResult {
                name: "a".into(),
                error_code: 37,
                error_message: Some("Topic already has 6 partitions.".into()),
                ..Default::default()
            }],
            ..Default::default()
        },
    );
}

#[test]
fn create_topics_v7_golden_frame_carries_the_topic_id_and_the_tagged_config_error() {
    let result = CreatableTopicResult {
        name: "t".into(),
        topic_id: topic_id(),
        num_partitions: 1,
        replication_factor: 1,
        configs: None,
        topic_config_error_code: 29,
        ..Default::default()
    };
    let response = CreateTopicsResponse { topics: vec![result], ..Default::default() };
    let v7 = cat(&[
        &[0, 0, 0, 0],                                            // throttle_time_ms
        &[0x02],                                                  // one topic
        &[0x02, b't'],                                            // name
        &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], // topic_id (v7+)
        &[0, 0],                                                  // error_code
        &[0x00],                                                  // error_message null
        &[0, 0, 0, 1],                                            // num_partitions (v5+)
        &[0, 1],                                                  // replication_factor (v5+)
        &[0x00],                                                  // configs null (v5+)
        &[0x01, 0x00, 0x02, 0x00, 0x1d], // tags: one field, tag 0, 2 bytes: topic_config_error_code 29
        &[0x00],                         // response tags
    ]);
    golden(7, &v7, &response);
    // v5 and v6: the same without the topic id
    let v5 = [&v7[..7], &v7[23..]].concat();
    let v5_response = CreateTopicsResponse {
        topics: vec![CreatableTopicResult { topic_id: Uuid::ZERO, ..response.topics[0].clone() }],
        ..Default::default()
    };
    golden(5, &v5, &v5_response);
    golden(6, &v5, &v5_response);
    // a topic id in v6 would be lost: an error
    let err = response.encode(6, &mut BytesMut::new()).unwrap_err();
    assert!(matches!(err, Error::FieldNotInVersion { field: "topic_id", version: 6, .. }), "{err}");
    // the tag is not written when the value is its default
    let plain = CreateTopicsResponse {
        topics: vec![CreatableTopicResult { topic_config_error_code: 0, ..v5_response.topics[0].clone() }],
        ..Default::default()
    };
    let bytes = plain.to_bytes(5).unwrap();
    assert_eq!(&bytes[bytes.len() - 2..], &[0x00, 0x00]);
    assert_eq!(bytes.len(), v5.len() - 4);
}

#[test]
fn delete_topics_v6_names_topics_by_id_and_a_null_name_is_refused_before_v6() {
    // v6: [name nullable, topic_id], timeout, tags
    let request = DeleteTopicsRequest {
        topics: vec![DeleteTopicState { name: None, topic_id: topic_id(), ..Default::default() }],
        timeout_ms: 60_000,
        ..Default::default()
    };
    let v6 =
        cat(&[&[0x02, 0x00], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], &[0x00], &TIMEOUT, &[0x00]]);
    golden(6, &v6, &request);
    let err = request.encode(5, &mut BytesMut::new()).unwrap_err();
    assert!(matches!(err, Error::FieldNotInVersion { field: "topics", version: 5, .. }), "{err}");
    let names = DeleteTopicsRequest { topic_names: vec!["a".into()], ..Default::default() };
    let err = names.encode(6, &mut BytesMut::new()).unwrap_err();
    assert!(matches!(err, Error::FieldNotInVersion { field: "topic_names", version: 6, .. }), "{err}");

    // a result's name may be null from v6 on only
    let response = DeleteTopicsResponse {
        responses: vec![DeletableTopicResult { name: None, error_code: 100, ..Default::default() }],
        ..Default::default()
    };
    round_trip(&response, 6);
    let err = response.encode(5, &mut BytesMut::new()).unwrap_err();
    assert!(matches!(err, Error::UnexpectedNull { field: "name" }), "{err}");
    // v5 flexible, classic-looking v3: a null name on the wire is refused when decoding too
    let mut v3 = Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0, 100]);
    assert!(matches!(DeleteTopicsResponse::decode(3, &mut v3), Err(Error::UnexpectedNull { field: "name" })));
}

#[test]
fn describe_configs_v0_has_is_default_and_v4_is_flexible() {
    let config = DescribeConfigsResourceResult {
        name: "a".into(),
        value: Some("b".into()),
        is_default: true,
        ..Default::default()
    };
    let response = DescribeConfigsResponse {
        results: vec![DescribeConfigsResult {
            resource_type: 2,
            resource_name: "t".into(),
            configs: vec![config.clone()],
            ..Default::default()
        }],
        ..Default::default()
    };
    let v0 = cat(&[
        &[0, 0, 0, 0],    // throttle_time_ms
        &[0, 0, 0, 1],    // one result
        &[0, 0],          // error_code
        &NULL_INT32[..2], // error_message null
        &[0x02],          // resource_type
        &[0, 1, b't'],    // resource_name
        &[0, 0, 0, 1],    // one config
        &[0, 1, b'a'],    // name
        &[0, 1, b'b'],    // value
        &[0x00],          // read_only
        &[0x01],          // is_default (v0 only)
        &[0x00],          // is_sensitive
    ]);
    golden(0, &v0, &response);
    let err = response.encode(1, &mut BytesMut::new()).unwrap_err();
    assert!(matches!(err, Error::FieldNotInVersion { field: "is_default", version: 1, .. }), "{err}");

    let response = DescribeConfigsResponse {
        results: vec![DescribeConfigsResult {
            resource_type: 2,
            resource_name: "t".into(),
            configs: vec![DescribeConfigsResourceResult {
                is_default: false,
                config_source: 5,
                config_type: 3,
                ..config
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let v4 = cat(&[
        &[0, 0, 0, 0],       // throttle_time_ms
        &[0x02],             // one result
        &[0, 0],             // error_code
        &[0x00],             // error_message null
        &[0x02],             // resource_type
        &[0x02, b't'],       // resource_name
        &[0x02],             // one config
        &[0x02, b'a'],       // name
        &[0x02, b'b'],       // value
        &[0x00],             // read_only
        &[0x05],             // config_source (v1+)
        &[0x00],             // is_sensitive
        &[0x01],             // no synonyms (v1+)
        &[0x03],             // config_type (v3+)
        &[0x00],             // documentation null (v3+)
        &[0x00, 0x00, 0x00], // config, result and response tags
    ]);
    golden(4, &v4, &response);
}

// ---- hostile input ---------------------------------------------------------------------------

/// A small deterministic generator (xorshift64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Decodes mutations of `bytes` (bytes changed, lengths set to huge or negative values, bytes
/// cut or added) at every version in `versions`: each must give a value or an error, never a
/// panic, and a value must encode again.
fn survives_mutations<T: Encode + Decode>(bytes: &[u8], versions: std::ops::RangeInclusive<i16>, rng: &mut Rng) {
    for _ in 0..300 {
        let mut d = bytes.to_vec();
        for _ in 0..1 + rng.below(3) {
            match rng.below(5) {
                0 if !d.is_empty() => {
                    let at = rng.below(d.len());
                    d[at] = rng.next() as u8;
                }
                1 if d.len() >= 4 => {
                    let at = rng.below(d.len() - 3);
                    let value = [0u32, 0x7fff_ffff, 0xffff_ffff, 0x8000_0000, 0xffff_fff0][rng.below(5)];
                    d[at..at + 4].copy_from_slice(&value.to_be_bytes());
                }
                2 if !d.is_empty() => {
                    // a compact length of 2^32 - 2 as a varint
                    let at = rng.below(d.len());
                    d.splice(at..at + 1, [0xff, 0xff, 0xff, 0xff, 0x0f]);
                }
                3 => d.truncate(rng.below(d.len() + 1)),
                _ => d.push(rng.next() as u8),
            }
        }
        for v in versions.clone() {
            if let Ok(value) = T::decode(v, &mut Bytes::from(d.clone())) {
                let _ = value.to_bytes(v);
            }
        }
    }
}

#[test]
fn mutated_admin_frames_fail_cleanly() {
    fn each<R: Request>(request: impl Fn(i16) -> R, response: impl Fn(i16) -> R::Response, rng: &mut Rng) {
        let versions = R::VERSIONS.min..=R::VERSIONS.max;
        for v in versions.clone() {
            survives_mutations::<R>(&request(v).to_bytes(v).unwrap(), versions.clone(), rng);
            survives_mutations::<R::Response>(&response(v).to_bytes(v).unwrap(), versions.clone(), rng);
        }
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    each(delete_groups_request, delete_groups_response, &mut rng);
    each(elect_leaders_request, elect_leaders_response, &mut rng);
    each(alter_reassignments_request, alter_reassignments_response, &mut rng);
    each(describe_cluster_request, describe_cluster_response, &mut rng);
    each(delete_records_request, delete_records_response, &mut rng);
    each(create_topics_request, create_topics_response, &mut rng);
    each(delete_topics_request, delete_topics_response, &mut rng);
    each(describe_configs_request, describe_configs_response, &mut rng);
    each(
        |_| ListPartitionReassignmentsRequest {
            topics: Some(vec![ListPartitionReassignmentsTopics {
                name: "t".into(),
                partition_indexes: vec![1],
                ..Default::default()
            }]),
            ..Default::default()
        },
        |_| ListPartitionReassignmentsResponse {
            topics: vec![OngoingTopicReassignment {
                name: "t".into(),
                partitions: vec![OngoingPartitionReassignment { replicas: vec![1, 2], ..Default::default() }],
                ..Default::default()
            }],
            ..Default::default()
        },
        &mut rng,
    );
    each(
        |_| OffsetDeleteRequest {
            group_id: "g".into(),
            topics: vec![OffsetDeleteRequestTopic {
                name: "t".into(),
                partitions: vec![OffsetDeleteRequestPartition::default()],
                ..Default::default()
            }],
            ..Default::default()
        },
        |_| OffsetDeleteResponse::default(),
        &mut rng,
    );
}

//! The group, producer-id and SASL APIs beyond what the Kafka 3.7.0 captures replay byte for byte
//! (tests/modern_fixtures.rs): the consumer protocol's subscriptions and assignments inside the
//! captured JoinGroup/SyncGroup frames, the versions and fields no capture has (golden bytes
//! written from Kafka's message specs), SASL round trips, and hostile input.

use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use gregor_protocol::frame::{self, ApiKey, Request, RequestHeader};
use gregor_protocol::messages::*;
use gregor_protocol::schema::RedactedBytes;
use gregor_protocol::{Decode, Encode, Error};
use serde_json::Value;

fn data_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kafka-3.7.0"))
}

/// The request body and the response frame (size prefix removed) of fixture `name`.
fn fixture(name: &str) -> (RequestHeader, Bytes, Bytes) {
    let read = |suffix: &str| Bytes::from(std::fs::read(data_dir().join(format!("{name}.{suffix}.bin"))).unwrap());
    let mut request = read("req").slice(4..);
    let header = RequestHeader::decode(&mut request).unwrap();
    (header, request, read("resp").slice(4..))
}

/// The fixtures of `api`, by name, from index.json.
fn fixtures_of(api: ApiKey) -> Vec<String> {
    let index: Value = serde_json::from_str(&std::fs::read_to_string(data_dir().join("index.json")).unwrap()).unwrap();
    index["fixtures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["api_key"].as_i64() == Some(i64::from(api.code())))
        .map(|row| row["name"].as_str().unwrap().to_string())
        .collect()
}

/// `decoded/NAME.json`: both frames as Kafka's own specs read them.
fn decoded(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(data_dir().join(format!("decoded/{name}.json"))).unwrap()).unwrap()
}

fn unhex(s: &str) -> Bytes {
    assert!(s.len() % 2 == 0, "{s}");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect::<Vec<u8>>().into()
}

/// Decodes `bytes` in `version`, all of them, and checks they re-encode identically.
fn golden<T: Encode + Decode + PartialEq + std::fmt::Debug>(value: &T, version: i16, bytes: &[u8]) {
    let mut buf = BytesMut::new();
    value.encode(version, &mut buf).unwrap_or_else(|e| panic!("v{version}: {e}"));
    assert_eq!(&buf[..], bytes, "v{version} encodes differently");
    let mut input = Bytes::copy_from_slice(bytes);
    let back = T::decode(version, &mut input).unwrap_or_else(|e| panic!("v{version}: {e}"));
    assert!(input.is_empty(), "v{version}: {} bytes left", input.len());
    assert_eq!(&back, value);
}

/// Decodes a subscription or assignment, checks it uses every byte and re-encodes identically.
fn consumer_protocol<T: std::fmt::Debug>(
    bytes: &Bytes,
    decode: fn(&mut Bytes) -> gregor_protocol::Result<(i16, T)>,
    encode: fn(&T, i16) -> gregor_protocol::Result<Bytes>,
) -> (i16, T) {
    let mut input = bytes.clone();
    let (version, value) = decode(&mut input).unwrap_or_else(|e| panic!("{e}: {bytes:?}"));
    assert!(input.is_empty(), "{} bytes after {value:?}", input.len());
    assert_eq!(encode(&value, version).unwrap(), bytes, "{value:?} re-encodes differently");
    (version, value)
}

fn subscription(bytes: &Bytes) -> (i16, ConsumerProtocolSubscription) {
    consumer_protocol(bytes, ConsumerProtocolSubscription::decode, ConsumerProtocolSubscription::to_bytes)
}

fn assignment(bytes: &Bytes) -> (i16, ConsumerProtocolAssignment) {
    consumer_protocol(bytes, ConsumerProtocolAssignment::decode, ConsumerProtocolAssignment::to_bytes)
}

/// The topics a group's members subscribed to in each scenario (INDEX.md).
fn subscribed(name: &str) -> Vec<&'static str> {
    if name.contains("kp_group") {
        vec!["kp"]
    } else {
        vec!["c-gzip", "c-lz4", "c-none", "c-snappy", "c-zstd", "empty", "idem"]
    }
}

// ---------------------------------------------------------------------------------------------
// the consumer protocol inside the captures
// ---------------------------------------------------------------------------------------------

#[test]
fn every_captured_join_group_carries_consumer_subscriptions_of_the_subscribed_topics() {
    let names = fixtures_of(ApiKey::JoinGroup);
    assert_eq!(names.len(), 5);
    let mut subscriptions = 0;
    for name in &names {
        let (header, body, response) = fixture(name);
        let v = header.api_version;
        let json = decoded(name);
        let request: JoinGroupRequest = frame::decode_request_body(v, body).unwrap();
        assert_eq!(request.protocol_type, CONSUMER_PROTOCOL_TYPE, "{name}");
        let names: Vec<&str> = request.protocols.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["range", "roundrobin"], "{name}");
        let (_, response) = frame::decode_response::<JoinGroupRequest>(v, response).unwrap();
        // the metadata as Kafka's specs read them, then as the consumer protocol
        let kafka = &json["request"]["body"]["Protocols"];
        let member = json["response"]["body"]["Members"].as_array().unwrap();
        assert_eq!(response.members.len(), member.len(), "{name}");
        let offered = request.protocols.iter().map(|p| &p.metadata);
        let answered = response.members.iter().map(|m| &m.metadata);
        let theirs = kafka.as_array().unwrap().iter().chain(member).map(|p| unhex(p["Metadata"].as_str().unwrap()));
        for (ours, theirs) in offered.chain(answered).zip(theirs) {
            assert_eq!(ours, &theirs, "{name}");
            let (version, s) = subscription(ours);
            assert_eq!(s.topics, subscribed(name), "{name}");
            assert!(s.owned_partitions.is_empty(), "{name}");
            if header.client_id.as_deref() == Some("rdkafka") {
                // librdkafka 2.16: v3, empty user data, generation -1, rack ""
                assert_eq!(version, 3, "{name}");
                assert_eq!(
                    (s.user_data.as_deref(), s.generation_id, s.rack_id.as_deref()),
                    (Some(&b""[..]), -1, Some(""))
                );
            } else {
                // kafka-python 3.0.12: v0, empty user data
                assert_eq!((version, s.user_data.as_deref()), (0, Some(&b""[..])), "{name}");
            }
            subscriptions += 1;
        }
    }
    assert_eq!(subscriptions, 13, "10 offered (2 per join) and 3 in the leader's answers");
}

#[test]
fn every_captured_sync_group_carries_consumer_assignments_of_the_subscribed_topics() {
    let names = fixtures_of(ApiKey::SyncGroup);
    assert_eq!(names.len(), 3);
    for name in &names {
        let (header, body, response) = fixture(name);
        let v = header.api_version;
        let json = decoded(name);
        let request: SyncGroupRequest = frame::decode_request_body(v, body).unwrap();
        let (_, response) = frame::decode_response::<SyncGroupRequest>(v, response).unwrap();
        assert_eq!(request.assignments.len(), 1, "{name}: one member, the leader");
        assert_eq!(request.assignments[0].member_id, request.member_id, "{name}");
        assert_eq!(request.assignments[0].assignment, response.assignment, "{name}: the member gets its own back");
        let theirs = unhex(json["response"]["body"]["Assignment"].as_str().unwrap());
        assert_eq!(response.assignment, theirs, "{name}");

        let (version, a) = assignment(&response.assignment);
        assert_eq!(version, 0, "{name}: both clients assign with v0");
        assert_eq!(a.user_data.as_deref(), Some(&b""[..]), "{name}");
        let mut topics: Vec<&str> = a.assigned_partitions.iter().map(|t| t.topic.as_str()).collect();
        topics.sort_unstable();
        if name == "sync_group_v5_kp_group_1" {
            // generation 1 of kafka-python's group: its metadata did not know topic kp yet
            assert!(topics.is_empty(), "{name}: {a:?}");
        } else {
            assert_eq!(topics, subscribed(name), "{name}");
            // every topic of these scenarios has one partition
            assert!(a.assigned_partitions.iter().all(|t| t.partitions == [0]), "{name}: {a:?}");
        }
    }
}

#[test]
fn consumer_protocol_versions_and_fields() {
    let s = ConsumerProtocolSubscription {
        topics: vec!["t".into()],
        user_data: None,
        owned_partitions: vec![ConsumerProtocolTopicPartitions::new("t", vec![1, 2])],
        generation_id: 7,
        rack_id: Some("r1".into()),
        ..Default::default()
    };
    #[rustfmt::skip]
    let v3: &[u8] = &[
        0x00, 0x03, // version 3
        0x00, 0x00, 0x00, 0x01, 0x00, 0x01, b't', // topics ["t"]
        0xff, 0xff, 0xff, 0xff, // user_data null
        0x00, 0x00, 0x00, 0x01, 0x00, 0x01, b't', 0x00, 0x00, 0x00, 0x02, 0, 0, 0, 1, 0, 0, 0, 2, // owned t [1, 2]
        0x00, 0x00, 0x00, 0x07, // generation_id 7
        0x00, 0x02, b'r', b'1', // rack_id "r1"
    ];
    assert_eq!(s.to_bytes(3).unwrap(), v3);
    assert_eq!(subscription(&Bytes::from_static(v3)).1, s);
    // v1 has no generation nor rack: refused, not dropped
    let err = s.to_bytes(1).unwrap_err();
    assert!(matches!(err, Error::FieldNotInVersion { field: "generation_id", version: 1, .. }), "{err}");
    let v1 = ConsumerProtocolSubscription { generation_id: -1, rack_id: None, ..s.clone() };
    assert_eq!(&v1.to_bytes(1).unwrap()[..], &[&[0u8, 1][..], &v3[2..v3.len() - 8]].concat()[..]);

    // a newer version is read as v3, its further fields left for the caller (Kafka does the same)
    let mut v4 = BytesMut::from(v3);
    v4[1] = 4;
    v4.extend_from_slice(&[0xde, 0xad]);
    let mut input = v4.freeze();
    let (version, read) = ConsumerProtocolSubscription::decode(&mut input).unwrap();
    assert_eq!((version, read), (4, s));
    assert_eq!(&input[..], &[0xde, 0xad]);
    // a negative version is refused, and so is writing one this crate does not know
    let err = ConsumerProtocolSubscription::decode(&mut Bytes::from_static(&[0xff, 0xff, 0, 0])).unwrap_err();
    assert!(matches!(err, Error::UnsupportedVersion { version: -1, .. }), "{err}");
    assert!(ConsumerProtocolAssignment::default().to_bytes(4).is_err());

    let a = ConsumerProtocolAssignment {
        assigned_partitions: vec![ConsumerProtocolTopicPartitions::new("t", vec![0])],
        user_data: Some(Bytes::from_static(b"u")),
        ..Default::default()
    };
    #[rustfmt::skip]
    let a1: &[u8] = &[
        0x00, 0x01, // version 1 (the same layout in every version)
        0x00, 0x00, 0x00, 0x01, 0x00, 0x01, b't', 0x00, 0x00, 0x00, 0x01, 0, 0, 0, 0, // t [0]
        0x00, 0x00, 0x00, 0x01, b'u', // user_data "u"
    ];
    assert_eq!(assignment(&Bytes::from_static(a1)), (1, a));
    // a count larger than the bytes can hold fails before allocating
    let err =
        ConsumerProtocolAssignment::decode(&mut Bytes::from_static(&[0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0])).unwrap_err();
    assert!(matches!(err, Error::InvalidLength { field: "assigned_partitions", .. }), "{err}");
}

// ---------------------------------------------------------------------------------------------
// versions and fields the captures lack
// ---------------------------------------------------------------------------------------------

#[test]
fn join_group_v0_and_the_flexible_v9() {
    let request = JoinGroupRequest {
        group_id: "g".into(),
        session_timeout_ms: 10_000,
        member_id: String::new(),
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: Bytes::from_static(&[0, 0]),
            ..Default::default()
        }],
        ..Default::default()
    };
    #[rustfmt::skip]
    let v0: &[u8] = &[
        0x00, 0x01, b'g', // group_id
        0x00, 0x00, 0x27, 0x10, // session_timeout_ms 10000
        0x00, 0x00, // member_id ""
        0x00, 0x08, b'c', b'o', b'n', b's', b'u', b'm', b'e', b'r', // protocol_type
        0x00, 0x00, 0x00, 0x01, 0x00, 0x05, b'r', b'a', b'n', b'g', b'e', 0x00, 0x00, 0x00, 0x02, 0, 0, // range
    ];
    golden(&request, 0, v0);
    // rebalance_timeout_ms is v1+: the default (-1) is fine in v0, another value is refused
    let with_rebalance = JoinGroupRequest { rebalance_timeout_ms: 300_000, ..request.clone() };
    assert!(matches!(
        with_rebalance.to_bytes(0),
        Err(Error::FieldNotInVersion { field: "rebalance_timeout_ms", version: 0, .. })
    ));

    let v9 = JoinGroupRequest { rebalance_timeout_ms: 300_000, reason: Some("r".into()), ..request };
    #[rustfmt::skip]
    let v9_bytes: &[u8] = &[
        0x02, b'g', // group_id (compact)
        0x00, 0x00, 0x27, 0x10, // session_timeout_ms
        0x00, 0x04, 0x93, 0xe0, // rebalance_timeout_ms 300000
        0x01, // member_id ""
        0x00, // group_instance_id null
        0x09, b'c', b'o', b'n', b's', b'u', b'm', b'e', b'r', // protocol_type
        0x02, 0x06, b'r', b'a', b'n', b'g', b'e', 0x03, 0, 0, 0x00, // [range, metadata 00 00, tags]
        0x02, b'r', // reason "r"
        0x00, // tags
    ];
    golden(&v9, 9, v9_bytes);

    let response = JoinGroupResponse {
        throttle_time_ms: 0,
        error_code: 0,
        generation_id: 3,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        leader: "m".into(),
        skip_assignment: true,
        member_id: "m".into(),
        members: vec![],
        ..Default::default()
    };
    #[rustfmt::skip]
    let v9_response: &[u8] = &[
        0, 0, 0, 0, // throttle_time_ms
        0, 0, // error_code
        0, 0, 0, 3, // generation_id
        0x09, b'c', b'o', b'n', b's', b'u', b'm', b'e', b'r', // protocol_type
        0x06, b'r', b'a', b'n', b'g', b'e', // protocol_name
        0x02, b'm', // leader
        0x01, // skip_assignment
        0x02, b'm', // member_id
        0x01, // members []
        0x00, // tags
    ];
    golden(&response, 9, v9_response);
    assert!(matches!(response.to_bytes(8), Err(Error::FieldNotInVersion { field: "skip_assignment", .. })));
    // protocol_name may be null from v7 on only
    let no_protocol =
        JoinGroupResponse { protocol_type: None, protocol_name: None, skip_assignment: false, ..response };
    assert!(no_protocol.to_bytes(7).is_ok());
    assert!(matches!(no_protocol.to_bytes(6), Err(Error::UnexpectedNull { field: "protocol_name" })));
}

#[test]
fn leave_group_before_and_after_batching() {
    let v0 = LeaveGroupRequest { group_id: "g".into(), member_id: "m".into(), ..Default::default() };
    golden(&v0, 0, &[0x00, 0x01, b'g', 0x00, 0x01, b'm']);
    assert!(matches!(v0.to_bytes(3), Err(Error::FieldNotInVersion { field: "member_id", version: 3, .. })));

    let v3 = LeaveGroupRequest {
        group_id: "g".into(),
        members: vec![MemberIdentity {
            member_id: "m".into(),
            group_instance_id: Some("i".into()),
            ..Default::default()
        }],
        ..Default::default()
    };
    golden(&v3, 3, &[0x00, 0x01, b'g', 0, 0, 0, 1, 0x00, 0x01, b'm', 0x00, 0x01, b'i']);
    let response = LeaveGroupResponse {
        throttle_time_ms: 5,
        error_code: 0,
        members: vec![MemberResponse { member_id: "m".into(), error_code: 25, ..Default::default() }],
        ..Default::default()
    };
    golden(&response, 3, &[0, 0, 0, 5, 0, 0, 0, 0, 0, 1, 0x00, 0x01, b'm', 0xff, 0xff, 0x00, 0x19]);
    let v0_response = LeaveGroupResponse { error_code: 25, ..Default::default() };
    golden(&v0_response, 0, &[0x00, 0x19]);
}

#[test]
fn heartbeat_and_sync_group_v0() {
    let heartbeat =
        HeartbeatRequest { group_id: "g".into(), generation_id: 2, member_id: "m".into(), ..Default::default() };
    golden(&heartbeat, 0, &[0x00, 0x01, b'g', 0, 0, 0, 2, 0x00, 0x01, b'm']);
    golden(&heartbeat, 4, &[0x02, b'g', 0, 0, 0, 2, 0x02, b'm', 0x00, 0x00]);
    golden(&HeartbeatResponse { error_code: 27, ..Default::default() }, 0, &[0x00, 0x1b]);
    assert_eq!(HeartbeatResponse { error_code: 27, ..Default::default() }.error().map(|e| e.code()), Some(27));

    let sync = SyncGroupRequest {
        group_id: "g".into(),
        generation_id: 1,
        member_id: "m".into(),
        assignments: vec![SyncGroupRequestAssignment {
            member_id: "m".into(),
            assignment: Bytes::from_static(&[0, 0]),
            ..Default::default()
        }],
        ..Default::default()
    };
    golden(&sync, 0, &[0x00, 0x01, b'g', 0, 0, 0, 1, 0x00, 0x01, b'm', 0, 0, 0, 1, 0x00, 0x01, b'm', 0, 0, 0, 2, 0, 0]);
    golden(
        &SyncGroupResponse { error_code: 0, assignment: Bytes::new(), ..Default::default() },
        0,
        &[0, 0, 0, 0, 0, 0],
    );
}

#[test]
fn describe_groups_v0_and_v6_and_list_groups_v0_and_v5() {
    let request = DescribeGroupsRequest { groups: vec!["g".into()], ..Default::default() };
    golden(&request, 0, &[0, 0, 0, 1, 0x00, 0x01, b'g']);
    golden(
        &DescribeGroupsRequest { include_authorized_operations: true, ..request },
        6,
        &[0x02, 0x02, b'g', 0x01, 0x00],
    );

    let dead = DescribedGroup {
        error_code: 69,
        error_message: Some("gone".into()),
        group_id: "g".into(),
        group_state: "Dead".into(),
        ..Default::default()
    };
    #[rustfmt::skip]
    let v6: &[u8] = &[
        0, 0, 0, 0, // throttle_time_ms
        0x02, // groups: 1
        0x00, 0x45, // error_code 69 (GROUP_ID_NOT_FOUND)
        0x05, b'g', b'o', b'n', b'e', // error_message
        0x02, b'g', 0x05, b'D', b'e', b'a', b'd', 0x01, 0x01, // group_id, state, protocol type "", data ""
        0x01, // members []
        0x80, 0x00, 0x00, 0x00, // authorized_operations omitted
        0x00, 0x00, // tags (group, response)
    ];
    golden(&DescribeGroupsResponse { groups: vec![dead.clone()], ..Default::default() }, 6, v6);
    assert!(matches!(
        DescribeGroupsResponse { groups: vec![dead], ..Default::default() }.to_bytes(5),
        Err(Error::FieldNotInVersion { field: "error_message", .. })
    ));
    let member = DescribedGroupMember {
        member_id: "m".into(),
        client_id: "c".into(),
        client_host: "/h".into(),
        member_metadata: Bytes::from_static(&[0]),
        member_assignment: Bytes::new(),
        ..Default::default()
    };
    let stable = DescribedGroup {
        group_id: "g".into(),
        group_state: "Stable".into(),
        protocol_type: "consumer".into(),
        protocol_data: "range".into(),
        members: vec![member],
        ..Default::default()
    };
    let v0 = DescribeGroupsResponse { groups: vec![stable], ..Default::default() }.to_bytes(0).unwrap();
    assert_eq!(DescribeGroupsResponse::decode(0, &mut v0.clone()).unwrap().to_bytes(0).unwrap(), v0);

    golden(&ListGroupsRequest::default(), 0, &[]);
    golden(&ListGroupsRequest::default(), 3, &[0x00]);
    let filtered = ListGroupsRequest {
        states_filter: vec!["Stable".into()],
        types_filter: vec!["classic".into()],
        ..Default::default()
    };
    golden(
        &filtered,
        5,
        &[0x02, 0x07, b'S', b't', b'a', b'b', b'l', b'e', 0x02, 0x08, b'c', b'l', b'a', b's', b's', b'i', b'c', 0x00],
    );
    assert!(matches!(filtered.to_bytes(4), Err(Error::FieldNotInVersion { field: "types_filter", .. })));
    let listed = ListGroupsResponse {
        groups: vec![ListedGroup { group_id: "g".into(), protocol_type: "consumer".into(), ..Default::default() }],
        ..Default::default()
    };
    golden(
        &listed,
        0,
        &[0, 0, 0, 0, 0, 1, 0x00, 0x01, b'g', 0x00, 0x08, b'c', b'o', b'n', b's', b'u', b'm', b'e', b'r'],
    );
}

#[test]
fn find_coordinator_v1_for_a_transactional_id_and_v4_batched() {
    let request =
        FindCoordinatorRequest { key: "tx".into(), key_type: COORDINATOR_KEY_TYPE_TRANSACTION, ..Default::default() };
    golden(&request, 1, &[0x00, 0x02, b't', b'x', 0x01]);
    // v0 knows only groups
    assert!(matches!(request.to_bytes(0), Err(Error::FieldNotInVersion { field: "key_type", version: 0, .. })));
    // v4 carries keys in an array: `key` must be left empty
    assert!(matches!(request.to_bytes(4), Err(Error::FieldNotInVersion { field: "key", version: 4, .. })));
    let batched = FindCoordinatorRequest { coordinator_keys: vec!["a".into(), "b".into()], ..Default::default() };
    golden(&batched, 4, &[0x00, 0x03, 0x02, b'a', 0x02, b'b', 0x00]);

    let v1 = FindCoordinatorResponse {
        throttle_time_ms: 0,
        error_code: 15,
        error_message: None,
        node_id: -1,
        host: String::new(),
        port: -1,
        ..Default::default()
    };
    golden(&v1, 1, &[0, 0, 0, 0, 0x00, 0x0f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff]);
    // the v0 layout is 0.8.2's ConsumerMetadata answer: no throttle time, no message
    golden(&v1, 0, &[0x00, 0x0f, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff]);
}

#[test]
fn offset_commit_fields_by_version() {
    let partition = OffsetCommitPartition { leader_epoch: 4, ..OffsetCommitPartition::new(0, 10, "m") };
    let request = OffsetCommitRequest {
        group_id: "g".into(),
        group_generation_id: 2,
        consumer_id: "c".into(),
        retention_time_ms: 60_000,
        topics: vec![OffsetCommitTopic::new("t", vec![OffsetCommitPartition::new(0, 10, "m")])],
        ..Default::default()
    };
    #[rustfmt::skip]
    let v2: &[u8] = &[
        0x00, 0x01, b'g', 0, 0, 0, 2, 0x00, 0x01, b'c', // group, generation, member
        0, 0, 0, 0, 0, 0, 0xea, 0x60, // retention_time_ms 60000
        0, 0, 0, 1, 0x00, 0x01, b't', 0, 0, 0, 1, // [t, [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0x00, 0x01, b'm', // 0, 10, "m" (no timestamp from v2 on)
    ];
    golden(&request, 2, v2);
    // v5 dropped the retention time; v6 added the leader epoch; v1 alone has the timestamp
    assert!(matches!(request.to_bytes(5), Err(Error::FieldNotInVersion { field: "retention_time_ms", .. })));
    let v6 = OffsetCommitRequest {
        retention_time_ms: -1,
        topics: vec![OffsetCommitTopic::new("t", vec![partition.clone()])],
        ..request.clone()
    };
    assert!(matches!(v6.to_bytes(5), Err(Error::FieldNotInVersion { field: "leader_epoch", .. })));
    let bytes = v6.to_bytes(6).unwrap();
    assert_eq!(&bytes[bytes.len() - 7..], &[0, 0, 0, 4, 0x00, 0x01, b'm'], "leader epoch before metadata");
    let stamped = OffsetCommitPartition { timestamp: 1, ..OffsetCommitPartition::new(0, 10, "m") };
    let stamped = OffsetCommitRequest { topics: vec![OffsetCommitTopic::new("t", vec![stamped])], ..v6 };
    assert!(stamped.to_bytes(1).is_ok());
    assert!(matches!(stamped.to_bytes(2), Err(Error::FieldNotInVersion { field: "timestamp", .. })));
    // null metadata, which every version allows
    let null = OffsetCommitPartition { metadata: None, ..OffsetCommitPartition::new(0, 1, "") };
    let null = OffsetCommitRequest { topics: vec![OffsetCommitTopic::new("t", vec![null])], ..Default::default() };
    let v0 = null.to_bytes(0).unwrap();
    assert_eq!(&v0[v0.len() - 2..], &[0xff, 0xff]);
    assert_eq!(OffsetCommitRequest::decode(0, &mut v0.clone()).unwrap(), null);

    let response = OffsetCommitResponse {
        throttle_time_ms: 7,
        topics: vec![OffsetCommitResponseTopic::new("t", vec![OffsetCommitResponsePartition::new(0, 25)])],
        ..Default::default()
    };
    golden(&response, 3, &[0, 0, 0, 7, 0, 0, 0, 1, 0x00, 0x01, b't', 0, 0, 0, 1, 0, 0, 0, 0, 0x00, 0x19]);
    assert!(matches!(response.to_bytes(2), Err(Error::FieldNotInVersion { field: "throttle_time_ms", .. })));
}

#[test]
fn offset_fetch_every_topic_and_the_group_batched_form() {
    // v2+: a null topic array asks for every partition the group committed
    let all = OffsetFetchRequest { group_id: "g".into(), topics: None, ..Default::default() };
    golden(&all, 2, &[0x00, 0x01, b'g', 0xff, 0xff, 0xff, 0xff]);
    golden(&all, 6, &[0x02, b'g', 0x00, 0x00]);
    assert!(matches!(all.to_bytes(1), Err(Error::UnexpectedNull { field: "topics" })));
    let stable = OffsetFetchRequest { require_stable: true, ..all.clone() };
    golden(&stable, 7, &[0x02, b'g', 0x00, 0x01, 0x00]);
    // v8+: groups instead of group_id/topics; the v0-v7 fields must be left at their defaults
    assert!(matches!(all.to_bytes(8), Err(Error::FieldNotInVersion { field: "group_id", version: 8, .. })));
    let batched = OffsetFetchRequest {
        groups: vec![
            OffsetFetchGroup { group_id: "a".into(), topics: None, ..Default::default() },
            OffsetFetchGroup {
                group_id: "b".into(),
                topics: Some(vec![OffsetFetchTopic::new("t", vec![0, 1])]),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    #[rustfmt::skip]
    let v8: &[u8] = &[
        0x03, // groups: 2
        0x02, b'a', 0x00, 0x00, // a, topics null, tags
        0x02, b'b', 0x02, 0x02, b't', 0x03, 0, 0, 0, 0, 0, 0, 0, 1, 0x00, 0x00, // b, [t, [0, 1], tags], tags
        0x00, // require_stable
        0x00, // tags
    ];
    golden(&batched, 8, v8);
    assert!(batched.to_bytes(9).unwrap().len() > v8.len(), "v9 adds member id and epoch to every group");

    let response = OffsetFetchResponse {
        throttle_time_ms: 0,
        topics: vec![OffsetFetchResponseTopic::new("t", vec![OffsetFetchResponsePartition::new(0, -1, "", 0)])],
        error_code: 16,
        ..Default::default()
    };
    let v2 = response.to_bytes(2).unwrap();
    assert_eq!(&v2[v2.len() - 2..], &[0x00, 0x10], "the group-level error comes last");
    assert_eq!(OffsetFetchResponse::decode(2, &mut v2.clone()).unwrap().error().map(|e| e.code()), Some(16));
    let v5 = OffsetFetchResponse { throttle_time_ms: 1, ..response }.to_bytes(5).unwrap();
    assert_eq!(v5.len(), v2.len() + 4 + 4, "throttle time (v3+) and leader epoch (v5+)");
}

#[test]
fn init_producer_id_classic_and_flexible() {
    let idempotent = InitProducerIdRequest { transactional_id: None, transaction_timeout_ms: 0, ..Default::default() };
    golden(&idempotent, 0, &[0xff, 0xff, 0, 0, 0, 0]);
    golden(&idempotent, 2, &[0x00, 0, 0, 0, 0, 0x00]);
    let resume = InitProducerIdRequest {
        transactional_id: Some("tx".into()),
        transaction_timeout_ms: 60_000,
        producer_id: 5,
        producer_epoch: 1,
        ..Default::default()
    };
    golden(&resume, 3, &[0x03, b't', b'x', 0, 0, 0xea, 0x60, 0, 0, 0, 0, 0, 0, 0, 5, 0, 1, 0x00]);
    assert!(matches!(resume.to_bytes(2), Err(Error::FieldNotInVersion { field: "producer_id", .. })));
    let response = InitProducerIdResponse { error_code: 0, producer_id: 7, producer_epoch: 2, ..Default::default() };
    golden(&response, 1, &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 2]);
    assert_eq!(InitProducerIdResponse::default().producer_id, -1);
}

// ---------------------------------------------------------------------------------------------
// SASL
// ---------------------------------------------------------------------------------------------

#[test]
fn sasl_handshake_round_trips_in_both_versions() {
    let request = SaslHandshakeRequest { mechanism: "PLAIN".into(), ..Default::default() };
    let response = SaslHandshakeResponse {
        error_code: 33,
        mechanisms: vec!["SCRAM-SHA-256".into(), "GSSAPI".into()],
        ..Default::default()
    };
    for v in 0..=1 {
        golden(&request, v, &[0x00, 0x05, b'P', b'L', b'A', b'I', b'N']);
        let bytes = response.to_bytes(v).unwrap();
        assert_eq!(&bytes[..6], &[0x00, 0x21, 0, 0, 0, 2]);
        golden(&response, v, &bytes);
    }
    assert_eq!(SaslHandshakeRequest::FLEXIBLE_FROM, None);
    assert_eq!(ApiKey::SaslHandshake.versions().map(|r| (r.min, r.max)), Some((0, 1)));
    assert!(request.to_bytes(2).is_err());
}

#[test]
fn sasl_authenticate_round_trips_and_frames() {
    let token = Bytes::from_static(b"\0user\0pass");
    let request = SaslAuthenticateRequest { auth_bytes: RedactedBytes(token.clone()), ..Default::default() };
    // PLAIN's token holds the password: Debug shows its length only
    assert!(!format!("{request:?}").contains("pass"), "{request:?}");
    golden(&request, 0, &[&[0u8, 0, 0, 10][..], &token[..]].concat());
    golden(&request, 2, &[&[11u8][..], &token[..], &[0]].concat());

    let failed = SaslAuthenticateResponse {
        error_code: 58,
        error_message: Some("bad".into()),
        auth_bytes: RedactedBytes::default(),
        ..Default::default()
    };
    golden(&failed, 0, &[0x00, 0x3a, 0x00, 0x03, b'b', b'a', b'd', 0, 0, 0, 0]);
    let ok = SaslAuthenticateResponse {
        auth_bytes: RedactedBytes(Bytes::from_static(b"s")),
        session_lifetime_ms: 3_600_000,
        ..Default::default()
    };
    golden(&ok, 1, &[0, 0, 0xff, 0xff, 0, 0, 0, 1, b's', 0, 0, 0, 0, 0, 0x36, 0xee, 0x80]);
    golden(&ok, 2, &[0, 0, 0x00, 0x02, b's', 0, 0, 0, 0, 0, 0x36, 0xee, 0x80, 0x00]);
    assert!(matches!(ok.to_bytes(0), Err(Error::FieldNotInVersion { field: "session_lifetime_ms", .. })));

    // v2 is flexible: request header v2, response header v1
    let header = RequestHeader {
        api_key: ApiKey::SaslAuthenticate,
        api_version: 2,
        correlation_id: 4,
        client_id: Some("c".into()),
        unknown_tagged_fields: Default::default(),
    };
    let mut frame_bytes = BytesMut::new();
    frame::encode_request(&header, &request, &mut frame_bytes).unwrap();
    assert_eq!(&frame_bytes[4..15], &[0, 36, 0, 2, 0, 0, 0, 4, 0, 1, b'c']);
    assert_eq!(frame_bytes[15], 0x00, "the header's tagged fields");
    let mut body = frame::split_frame(&mut frame_bytes, 1 << 20).unwrap().unwrap();
    assert_eq!(RequestHeader::decode(&mut body).unwrap(), header);
    assert_eq!(frame::decode_request_body::<SaslAuthenticateRequest>(2, body).unwrap(), request);
    let mut out = BytesMut::new();
    frame::encode_response_for::<SaslAuthenticateRequest>(4, 2, &ok, &mut out).unwrap();
    let frame = frame::split_frame(&mut out, 1 << 20).unwrap().unwrap();
    assert_eq!(&frame[..5], &[0, 0, 0, 4, 0x00]);
    assert_eq!(frame::decode_response::<SaslAuthenticateRequest>(2, frame).unwrap().1, ok);
}

// ---------------------------------------------------------------------------------------------
// hostile input
// ---------------------------------------------------------------------------------------------

#[test]
fn array_counts_are_bounded_by_the_classic_layout() {
    // an OffsetCommit v0 answer claiming 3 topics in 12 bytes: a topic takes at least 6 bytes in
    // v0 (a string length and an array count), so the count is refused before any allocation
    let mut body = Bytes::from_static(&[0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let err = OffsetCommitResponse::decode(0, &mut body).unwrap_err();
    assert!(matches!(err, Error::InvalidLength { field: "topics", length: 3, .. }), "{err}");
    // two fit
    let mut body = Bytes::from_static(&[0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(OffsetCommitResponse::decode(0, &mut body).unwrap().topics.len(), 2);
}

/// A small deterministic generator (xorshift).
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

fn mutate(rng: &mut Rng, data: &[u8]) -> Bytes {
    let mut d = data.to_vec();
    for _ in 0..1 + rng.below(3) {
        match rng.below(4) {
            0 if !d.is_empty() => {
                let at = rng.below(d.len());
                d[at] = rng.next() as u8;
            }
            1 if !d.is_empty() => d.truncate(rng.below(d.len())),
            2 if d.len() >= 4 => {
                let at = rng.below(d.len() - 3);
                let v = [0u32, 1, 0x7fff_ffff, 0xffff_ffff, 0x8000_0000][rng.below(5)];
                d[at..at + 4].copy_from_slice(&v.to_be_bytes());
            }
            _ => d.push(rng.next() as u8),
        }
    }
    d.into()
}

fn decodes_without_panic<R: Request + std::fmt::Debug>(version: i16, request: &Bytes, response: &Bytes)
where
    R::Response: std::fmt::Debug,
{
    let _ = frame::decode_request_body::<R>(version, request.clone());
    let _ = frame::decode_response::<R>(version, response.clone());
}

#[test]
fn mutated_captures_of_these_apis_never_panic() {
    let apis = [
        ApiKey::OffsetCommit,
        ApiKey::OffsetFetch,
        ApiKey::ConsumerMetadata,
        ApiKey::JoinGroup,
        ApiKey::Heartbeat,
        ApiKey::LeaveGroup,
        ApiKey::SyncGroup,
        ApiKey::DescribeGroups,
        ApiKey::ListGroups,
        ApiKey::InitProducerId,
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut inputs = 0;
    for api in apis {
        for name in fixtures_of(api) {
            let (header, body, response) = fixture(&name);
            let v = header.api_version;
            for _ in 0..300 {
                let (req, resp) = (mutate(&mut rng, &body), mutate(&mut rng, &response));
                match api {
                    ApiKey::OffsetCommit => decodes_without_panic::<OffsetCommitRequest>(v, &req, &resp),
                    ApiKey::OffsetFetch => decodes_without_panic::<OffsetFetchRequest>(v, &req, &resp),
                    ApiKey::ConsumerMetadata => decodes_without_panic::<FindCoordinatorRequest>(v, &req, &resp),
                    ApiKey::JoinGroup => decodes_without_panic::<JoinGroupRequest>(v, &req, &resp),
                    ApiKey::Heartbeat => decodes_without_panic::<HeartbeatRequest>(v, &req, &resp),
                    ApiKey::LeaveGroup => decodes_without_panic::<LeaveGroupRequest>(v, &req, &resp),
                    ApiKey::SyncGroup => decodes_without_panic::<SyncGroupRequest>(v, &req, &resp),
                    ApiKey::DescribeGroups => decodes_without_panic::<DescribeGroupsRequest>(v, &req, &resp),
                    ApiKey::ListGroups => decodes_without_panic::<ListGroupsRequest>(v, &req, &resp),
                    _ => decodes_without_panic::<InitProducerIdRequest>(v, &req, &resp),
                }
                // and the consumer protocol inside
                let _ = ConsumerProtocolSubscription::decode(&mut req.clone());
                let _ = ConsumerProtocolAssignment::decode(&mut resp.clone());
                inputs += 1;
            }
        }
    }
    assert_eq!(inputs, 32 * 300);
}

//! Produce, Fetch, ListOffsets and Metadata against frames of a genuine Kafka 3.7.0 broker
//! (`tests/data/kafka-3.7.0`): what the decoded values say (the byte-for-byte replay of every
//! frame is `tests/modern_fixtures.rs`), the zero-copy records, and the frames a request in parts
//! writes.

use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use gregor_protocol::frame::{self, encode_request, encode_request_frame, Request, RequestHeader};
use gregor_protocol::messages::*;
use gregor_protocol::schema::Uuid;
use gregor_protocol::{Decode, Encode, Error, MessageSet};

/// The request header and body, and the response frame (size prefixes removed) of a fixture.
fn fixture(name: &str) -> (RequestHeader, Bytes, Bytes) {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kafka-3.7.0"));
    let read = |suffix: &str| Bytes::from(std::fs::read(dir.join(format!("{name}.{suffix}.bin"))).unwrap()).slice(4..);
    let mut request = read("req");
    let header = RequestHeader::decode(&mut request).unwrap();
    (header, request, read("resp"))
}

fn request<R: Request>(name: &str) -> (i16, R) {
    let (header, mut body, _) = fixture(name);
    (header.api_version, R::decode(header.api_version, &mut body).unwrap())
}

fn response<R: Request>(name: &str) -> R::Response {
    let (header, _, frame) = fixture(name);
    frame::decode_response::<R>(header.api_version, frame).unwrap().1
}

#[test]
fn librdkafka_fetches_v16_by_topic_id_without_a_session() {
    let (version, r) = request::<FetchRequest>("fetch_v16_group_1");
    assert_eq!(version, 16);
    assert_eq!((r.max_wait_time, r.min_bytes, r.max_bytes), (200, 1, 52_428_800));
    assert_eq!((r.isolation_level, r.session_id, r.session_epoch), (READ_COMMITTED, 0, -1));
    let id = Uuid::parse("409n2_OuQ-y-Y3BL3e3lCw").unwrap();
    assert_eq!((r.topics[0].topic.as_str(), r.topics[0].topic_id), ("", id));
    let p = &r.topics[0].partitions[0];
    assert_eq!((p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch, p.max_bytes), (0, 0, -1, 1 << 20));
    assert_eq!((r.replica_id, r.replica_state.replica_id), (-1, -1), "v15+ has no replica_id field");

    let (_, _, frame) = fixture("fetch_v16_group_1");
    let (_, resp) = frame::decode_response::<FetchRequest>(16, frame.clone()).unwrap();
    assert_eq!(resp.topics[0].topic_id, id);
    let p = &resp.topics[0].partitions[0];
    assert_eq!((p.high_watermark, p.last_stable_offset, p.log_start_offset), (6, 6, 0));
    assert_eq!((p.aborted_transactions.as_deref(), p.preferred_read_replica), (Some(&[][..]), -1));
    // the records are a slice of the frame, not a copy
    let records = p.message_set.as_bytes();
    assert!(!records.is_empty());
    let at = records.as_ptr() as usize - frame.as_ptr() as usize;
    assert!(at + records.len() <= frame.len());
    assert_eq!(&frame[at..at + records.len()], &records[..]);
}

#[test]
fn kafka_python_fetches_v12_by_name_and_opens_a_session() {
    let (_, r) = request::<FetchRequest>("fetch_v12_kp_group");
    assert_eq!((r.topics[0].topic.as_str(), r.topics[0].topic_id), ("kp", Uuid::ZERO));
    assert_eq!((r.isolation_level, r.session_id, r.session_epoch), (READ_UNCOMMITTED, 0, 0));
    let resp = response::<FetchRequest>("fetch_v12_kp_group");
    assert_ne!(resp.session_id, 0, "the broker opened a session");
    let p = &resp.topics[0].partitions[0];
    assert_eq!((p.high_watermark, p.aborted_transactions.clone()), (3, None));
}

#[test]
fn an_offset_out_of_range_answers_minus_one_and_null_aborted_transactions() {
    let resp = response::<FetchRequest>("fetch_v16_err_out_of_range_1");
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.error(), Some(gregor_protocol::ErrorCode::OffsetOutOfRange));
    assert_eq!((p.high_watermark, p.last_stable_offset, p.log_start_offset), (-1, -1, -1));
    assert_eq!((p.aborted_transactions.clone(), p.message_set.len()), (None, 0));
}

#[test]
fn list_offsets_v7_and_v8_answer_one_offset_with_its_epoch() {
    for name in ["list_offsets_v7_group_1", "list_offsets_v8_kp_group"] {
        let (version, r) = request::<OffsetsRequest>(name);
        let p = &r.topics[0].partitions[0];
        assert_eq!((r.replica_id, p.time, p.max_number_of_offsets), (CONSUMER_REPLICA_ID, EARLIEST_TIME, 1), "{name}");
        let want_epoch = if version == 7 { 0 } else { -1 };
        assert_eq!(p.current_leader_epoch, want_epoch, "{name}: librdkafka sends its epoch, kafka-python -1");
        let resp = response::<OffsetsRequest>(name);
        let p = &resp.topics[0].partitions[0];
        assert_eq!((p.timestamp, p.offset, p.leader_epoch, p.first_offset()), (-1, 0, 0, Some(0)), "{name}");
        assert!(p.offsets.is_empty(), "{name}: v1+ has no offset array");
    }
    // v0's array and max_number_of_offsets do not exist from v1 on
    let many = OffsetsRequest {
        topics: vec![OffsetsTopic::new(
            "t",
            vec![OffsetsPartition { max_number_of_offsets: 10, ..OffsetsPartition::new(0, LATEST_TIME) }],
        )],
        ..Default::default()
    };
    assert!(matches!(many.encode(1, &mut BytesMut::new()), Err(Error::FieldNotInVersion { .. })));
    many.encode(0, &mut BytesMut::new()).unwrap();
}

#[test]
fn metadata_v12_names_topics_by_name_with_the_zero_id_and_answers_their_ids() {
    let (_, r) = request::<MetadataRequest>("metadata_v12_produce_none");
    assert_eq!(r.topics, Some(vec![MetadataRequestTopic::named("c-none")]));
    assert!(r.allow_auto_topic_creation);
    let resp = response::<MetadataRequest>("metadata_v12_produce_none");
    assert_eq!(resp.cluster_id.as_deref(), Some("sSob_9MvQgcwqbOPoYqKUQ"));
    assert_eq!((resp.controller_id, resp.brokers[0].rack.clone()), (1, None));
    let t = &resp.topics[0];
    assert_eq!((t.name(), t.topic_id), ("c-none", Uuid::parse("IdX_4VjbT4ehRsUVr22m8g").unwrap()));
    assert_eq!((t.is_internal, t.topic_authorized_operations), (false, AUTHORIZED_OPERATIONS_OMITTED));
    assert_eq!((t.partitions[0].leader_epoch, t.partitions[0].offline_replicas.len()), (0, 0));

    // null asks for every topic, empty for none
    let (_, all) = request::<MetadataRequest>("metadata_v12_connect_3");
    assert!(all.topics.is_none() && all.wants_all_topics(12));
    let (_, none) = request::<MetadataRequest>("metadata_v12_connect_1");
    assert_eq!(none.topics, Some(vec![]));
    assert!(!none.wants_all_topics(12));
    assert!(response::<MetadataRequest>("metadata_v12_connect_1").topics.is_empty());

    let resp = response::<MetadataRequest>("metadata_v12_err_unknown_topic_1");
    assert_eq!((resp.topics[0].error_code, resp.topics[0].topic_id), (3, Uuid::ZERO));
}

#[test]
fn produce_v9_and_v10_carry_one_record_batch_and_answer_the_log_start_offset() {
    for name in ["produce_v10_produce_none", "produce_v9_kp_produce"] {
        let (header, mut body, _) = fixture(name);
        let r = ProduceRequest::decode(header.api_version, &mut body).unwrap();
        assert_eq!((r.transactional_id.clone(), r.required_acks, r.timeout), (None, -1, 30_000), "{name}");
        let records = r.topics[0].partitions[0].message_set.as_bytes();
        assert_eq!(records[16], 2, "{name}: RecordBatch magic 2");
        // in parts, the same bytes as in one buffer
        let mut whole = BytesMut::new();
        encode_request(&header, &r, &mut whole).unwrap();
        assert_eq!(encode_request_frame(&header, &r, 0).unwrap().to_bytes(), whole.freeze(), "{name}");

        let resp = response::<ProduceRequest>(name);
        let p = &resp.topics[0].partitions[0];
        assert_eq!((p.error_code, p.log_append_time_ms, p.log_start_offset), (0, -1, 0), "{name}");
        assert_eq!((p.record_errors.len(), p.error_message.clone()), (0, None), "{name}");
        assert!(resp.node_endpoints.is_empty() && p.current_leader == LeaderIdAndEpoch::default(), "{name}");
    }
    let resp = response::<ProduceRequest>("produce_v10_err_produce_unknown_partition");
    let p = &resp.topics[0].partitions[0];
    assert_eq!((p.partition, p.error_code, p.offset, p.log_start_offset), (7, 3, -1, -1));
}

#[test]
fn a_large_record_batch_is_shared_in_flexible_versions_too() {
    let batch = Bytes::from(vec![5u8; 4000]);
    let r = ProduceRequest {
        required_acks: 1,
        timeout: 100,
        topics: vec![ProduceTopic::new("t", vec![ProducePartition::new(0, MessageSet::from_bytes(batch.clone()))])],
        ..Default::default()
    };
    for version in [3, 9, 12] {
        let header = RequestHeader {
            api_key: ProduceRequest::KEY,
            api_version: version,
            correlation_id: 1,
            client_id: None,
            unknown_tagged_fields: Default::default(),
        };
        let frame = encode_request_frame(&header, &r, 0).unwrap();
        assert!(frame.tail.iter().any(|p| p.as_ptr() == batch.as_ptr()), "v{version}: the batch is not copied");
        let mut whole = BytesMut::new();
        encode_request(&header, &r, &mut whole).unwrap();
        assert_eq!(frame.to_bytes(), whole.freeze(), "v{version}");
    }
}

#[test]
fn a_count_is_bounded_by_the_smallest_entry_of_the_version() {
    // Fetch v0 response: 5 topics claimed in 20 bytes (a v0 topic takes at least 6) fails before
    // allocating; the same count is within bounds of a flexible (v12) body
    let mut v0 = BytesMut::new();
    v0.extend_from_slice(&5i32.to_be_bytes());
    v0.extend_from_slice(&[0; 16]);
    let err = FetchResponse::decode(0, &mut v0.freeze()).unwrap_err();
    assert!(matches!(err, Error::InvalidLength { field: "topics", length: 5, .. }), "{err}");
    // Metadata v0 response: brokers take at least 10 bytes each
    let mut md = BytesMut::new();
    md.extend_from_slice(&3i32.to_be_bytes());
    md.extend_from_slice(&[0; 25]);
    let err = MetadataResponse::decode(0, &mut md.freeze()).unwrap_err();
    assert!(matches!(err, Error::InvalidLength { field: "brokers", length: 3, .. }), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Every version round-trips a value with every field it carries set (and an unknown tag in the
// flexible ones).

fn round_trip<T: Encode + Decode + PartialEq + std::fmt::Debug>(value: &T, version: i16) {
    let mut buf = BytesMut::new();
    value.encode(version, &mut buf).unwrap_or_else(|e| panic!("v{version}: {e}"));
    let bytes = buf.freeze();
    let mut read = bytes.clone();
    let back = T::decode(version, &mut read).unwrap_or_else(|e| panic!("v{version}: {e}"));
    assert!(read.is_empty(), "v{version}: {} bytes left", read.len());
    assert_eq!(&back, value, "v{version}");
    let mut again = BytesMut::new();
    back.encode(version, &mut again).unwrap();
    assert_eq!(again.freeze(), bytes, "v{version}");
    let mut cut = bytes.slice(..bytes.len() - 1);
    assert!(T::decode(version, &mut cut).is_err(), "v{version}: decodes without its last byte");
}

fn if_in<T>(version: i16, from: i16, value: T, otherwise: T) -> T {
    if version >= from {
        value
    } else {
        otherwise
    }
}

fn unknown_tag(version: i16, flexible_from: i16) -> gregor_protocol::schema::TaggedFields {
    let mut tags = gregor_protocol::schema::TaggedFields::default();
    if version >= flexible_from {
        tags.push(99, Bytes::from_static(b"\x01\x02"));
    }
    tags
}

fn set(byte: u8) -> MessageSet {
    MessageSet::from_bytes(Bytes::from(vec![byte; 40]))
}

fn fetch_request(v: i16) -> FetchRequest {
    let by_id = v >= 13;
    let name = |n: &str| if by_id { String::new() } else { n.to_owned() };
    let id = |b: u8| if by_id { Uuid([b; 16]) } else { Uuid::ZERO };
    FetchRequest {
        cluster_id: if_in(v, 12, Some("cluster".into()), None),
        replica_id: if v <= 14 { 3 } else { -1 },
        replica_state: if_in(
            v,
            15,
            ReplicaState { replica_id: 3, replica_epoch: 77, ..Default::default() },
            Default::default(),
        ),
        max_wait_time: 500,
        min_bytes: 1,
        max_bytes: if_in(v, 3, 1000, i32::MAX),
        isolation_level: if_in(v, 4, READ_COMMITTED, READ_UNCOMMITTED),
        session_id: if_in(v, 7, 42, 0),
        session_epoch: if_in(v, 7, 3, -1),
        topics: vec![FetchTopic {
            topic: name("t"),
            topic_id: id(1),
            partitions: vec![FetchPartition {
                partition: 2,
                current_leader_epoch: if_in(v, 9, 5, -1),
                fetch_offset: 100,
                last_fetched_epoch: if_in(v, 12, 4, -1),
                log_start_offset: if_in(v, 5, 7, -1),
                max_bytes: 1 << 20,
                replica_directory_id: if_in(v, 17, Uuid([2; 16]), Uuid::ZERO),
                unknown_tagged_fields: unknown_tag(v, 12),
            }],
            unknown_tagged_fields: unknown_tag(v, 12),
        }],
        forgotten_topics_data: if_in(
            v,
            7,
            vec![ForgottenTopic { topic: name("gone"), topic_id: id(3), partitions: vec![1, 2], ..Default::default() }],
            vec![],
        ),
        rack_id: if_in(v, 11, "rack-a".into(), String::new()),
        unknown_tagged_fields: unknown_tag(v, 12),
    }
}

fn fetch_response(v: i16) -> FetchResponse {
    let by_id = v >= 13;
    FetchResponse {
        throttle_time_ms: if_in(v, 1, 9, 0),
        error_code: 0,
        session_id: if_in(v, 7, 42, 0),
        topics: vec![FetchResponseTopic {
            topic: if by_id { String::new() } else { "t".into() },
            topic_id: if by_id { Uuid([1; 16]) } else { Uuid::ZERO },
            partitions: vec![
                FetchResponsePartition {
                    partition: 2,
                    error_code: 0,
                    high_watermark: 10,
                    last_stable_offset: if_in(v, 4, 8, -1),
                    log_start_offset: if_in(v, 5, 1, -1),
                    aborted_transactions: if_in(
                        v,
                        4,
                        Some(vec![AbortedTransaction { producer_id: 5, first_offset: 6, ..Default::default() }]),
                        None,
                    ),
                    preferred_read_replica: if_in(v, 11, 2, -1),
                    message_set: set(1),
                    diverging_epoch: if_in(
                        v,
                        12,
                        EpochEndOffset { epoch: 3, end_offset: 9, ..Default::default() },
                        Default::default(),
                    ),
                    current_leader: if_in(
                        v,
                        12,
                        LeaderIdAndEpoch { leader_id: 1, leader_epoch: 4, ..Default::default() },
                        Default::default(),
                    ),
                    snapshot_id: if_in(
                        v,
                        12,
                        SnapshotId { end_offset: 2, epoch: 1, ..Default::default() },
                        Default::default(),
                    ),
                    unknown_tagged_fields: unknown_tag(v, 12),
                },
                FetchResponsePartition::new(3, 1, -1, MessageSet::new()),
            ],
            unknown_tagged_fields: unknown_tag(v, 12),
        }],
        node_endpoints: if_in(
            v,
            16,
            vec![NodeEndpoint {
                node_id: 1,
                host: "h".into(),
                port: 9092,
                rack: Some("r".into()),
                ..Default::default()
            }],
            vec![],
        ),
        unknown_tagged_fields: unknown_tag(v, 12),
    }
}

fn produce_request(v: i16) -> ProduceRequest {
    ProduceRequest {
        transactional_id: if_in(v, 3, Some("tx".into()), None),
        required_acks: -1,
        timeout: 1500,
        topics: vec![ProduceTopic {
            topic: "t".into(),
            partitions: vec![ProducePartition {
                unknown_tagged_fields: unknown_tag(v, 9),
                ..ProducePartition::new(0, set(2))
            }],
            unknown_tagged_fields: unknown_tag(v, 9),
        }],
        unknown_tagged_fields: unknown_tag(v, 9),
    }
}

fn produce_response(v: i16) -> ProduceResponse {
    ProduceResponse {
        topics: vec![ProduceResponseTopic {
            topic: "t".into(),
            partitions: vec![ProduceResponsePartition {
                partition: 0,
                error_code: 0,
                offset: 42,
                log_append_time_ms: if_in(v, 2, 1_700_000_000_000, -1),
                log_start_offset: if_in(v, 5, 3, -1),
                record_errors: if_in(
                    v,
                    8,
                    vec![RecordError {
                        batch_index: 1,
                        batch_index_error_message: Some("bad".into()),
                        ..Default::default()
                    }],
                    vec![],
                ),
                error_message: if_in(v, 8, Some("why".into()), None),
                current_leader: if_in(
                    v,
                    10,
                    LeaderIdAndEpoch { leader_id: 2, leader_epoch: 7, ..Default::default() },
                    Default::default(),
                ),
                unknown_tagged_fields: unknown_tag(v, 9),
            }],
            unknown_tagged_fields: unknown_tag(v, 9),
        }],
        throttle_time_ms: if_in(v, 1, 5, 0),
        node_endpoints: if_in(
            v,
            10,
            vec![NodeEndpoint { node_id: 2, host: "h2".into(), port: 1, ..Default::default() }],
            vec![],
        ),
        unknown_tagged_fields: unknown_tag(v, 9),
    }
}

fn offsets_request(v: i16) -> OffsetsRequest {
    OffsetsRequest {
        replica_id: -1,
        isolation_level: if_in(v, 2, READ_COMMITTED, READ_UNCOMMITTED),
        topics: vec![OffsetsTopic {
            topic: "t".into(),
            partitions: vec![OffsetsPartition {
                partition: 1,
                current_leader_epoch: if_in(v, 4, 6, -1),
                time: EARLIEST_TIME,
                max_number_of_offsets: if v == 0 { 5 } else { 1 },
                unknown_tagged_fields: unknown_tag(v, 6),
            }],
            unknown_tagged_fields: unknown_tag(v, 6),
        }],
        timeout_ms: if_in(v, 10, 30_000, 0),
        unknown_tagged_fields: unknown_tag(v, 6),
    }
}

fn offsets_response(v: i16) -> OffsetsResponse {
    OffsetsResponse {
        throttle_time_ms: if_in(v, 2, 4, 0),
        topics: vec![OffsetsResponseTopic {
            topic: "t".into(),
            partitions: vec![OffsetsResponsePartition {
                partition: 1,
                error_code: 0,
                offsets: if v == 0 { vec![9, 0] } else { vec![] },
                timestamp: if_in(v, 1, 1_700_000_000_000, -1),
                offset: if_in(v, 1, 9, -1),
                leader_epoch: if_in(v, 4, 2, -1),
                unknown_tagged_fields: unknown_tag(v, 6),
            }],
            unknown_tagged_fields: unknown_tag(v, 6),
        }],
        unknown_tagged_fields: unknown_tag(v, 6),
    }
}

fn metadata_request(v: i16) -> MetadataRequest {
    MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            topic_id: if_in(v, 10, Uuid([4; 16]), Uuid::ZERO),
            topic: Some("t".into()),
            unknown_tagged_fields: unknown_tag(v, 9),
        }]),
        allow_auto_topic_creation: if_in(v, 4, false, true),
        include_cluster_authorized_operations: (8..=10).contains(&v),
        include_topic_authorized_operations: v >= 8,
        unknown_tagged_fields: unknown_tag(v, 9),
    }
}

fn metadata_response(v: i16) -> MetadataResponse {
    MetadataResponse {
        throttle_time_ms: if_in(v, 3, 1, 0),
        brokers: vec![BrokerMetadata {
            node_id: 1,
            host: "h".into(),
            port: 9092,
            rack: if_in(v, 1, Some("r".into()), None),
            unknown_tagged_fields: unknown_tag(v, 9),
        }],
        cluster_id: if_in(v, 2, Some("c".into()), None),
        controller_id: if_in(v, 1, 1, -1),
        topics: vec![TopicMetadata {
            error_code: 0,
            topic: Some("t".into()),
            topic_id: if_in(v, 10, Uuid([4; 16]), Uuid::ZERO),
            is_internal: v >= 1,
            partitions: vec![PartitionMetadata {
                error_code: 0,
                partition: 0,
                leader: 1,
                leader_epoch: if_in(v, 7, 3, -1),
                replicas: vec![1, 2],
                isr: vec![1],
                offline_replicas: if_in(v, 5, vec![2], vec![]),
                unknown_tagged_fields: unknown_tag(v, 9),
            }],
            topic_authorized_operations: if_in(v, 8, 0b1010, AUTHORIZED_OPERATIONS_OMITTED),
            unknown_tagged_fields: unknown_tag(v, 9),
        }],
        cluster_authorized_operations: if (8..=10).contains(&v) { 0b110 } else { AUTHORIZED_OPERATIONS_OMITTED },
        error_code: 0,
        unknown_tagged_fields: unknown_tag(v, 9),
    }
}

#[test]
fn every_version_round_trips_every_field_it_carries() {
    for v in 0..=FetchRequest::VERSIONS.max {
        round_trip(&fetch_request(v), v);
        round_trip(&fetch_response(v), v);
    }
    for v in 0..=ProduceRequest::VERSIONS.max {
        round_trip(&produce_request(v), v);
        round_trip(&produce_response(v), v);
    }
    for v in 0..=OffsetsRequest::VERSIONS.max {
        round_trip(&offsets_request(v), v);
        round_trip(&offsets_response(v), v);
    }
    for v in 0..=MetadataRequest::VERSIONS.max {
        round_trip(&metadata_request(v), v);
        round_trip(&metadata_response(v), v);
    }
}

#[test]
fn a_field_a_version_lacks_is_an_error_not_a_drop() {
    // the values of the next version, written one version too early
    let cases: Vec<(i16, Result<Bytes, Error>)> = vec![
        (3, fetch_request(3).to_bytes(2)),
        (13, fetch_request(13).to_bytes(12)),
        (15, fetch_request(15).to_bytes(14)),
        (17, fetch_request(17).to_bytes(16)),
        (4, fetch_response(4).to_bytes(3)),
        (16, fetch_response(16).to_bytes(15)),
        (3, produce_request(3).to_bytes(2)),
        (8, produce_response(8).to_bytes(7)),
        (10, produce_response(10).to_bytes(9)),
        (10, offsets_request(10).to_bytes(9)),
        (10, metadata_request(10).to_bytes(9)),
        (5, metadata_response(5).to_bytes(4)),
    ];
    for (from, result) in cases {
        assert!(matches!(result, Err(Error::FieldNotInVersion { .. })), "v{from} value in v{}: {result:?}", from - 1);
    }
}

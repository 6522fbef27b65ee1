//! Conformance against frames captured from a genuine Apache Kafka 3.7.0 broker (KRaft) talking
//! to confluent-kafka (librdkafka 2.16.0) and kafka-python 3.0.12
//! (`tests/data/kafka-3.7.0/`, see its README.md and INDEX.md).
//!
//! For every fixture of `index.json`:
//!
//! 1. the request frame splits as exactly one frame; its header (v1, or v2 for a flexible
//!    version) decodes to the recorded key, version, correlation id and client id; the body
//!    decodes with the API's request type (all bytes used) and `frame::encode_request` writes
//!    the same bytes again;
//! 2. the response frame decodes with `frame::decode_response` for the request's type and
//!    version (header v0, or v1 for a flexible version other than ApiVersions; all bytes used)
//!    and `frame::encode_response_for` writes the same bytes again.
//!
//! Two kinds of frame are special, as INDEX.md records: an ApiVersions request above v3 (the
//! broker answered it with a v0 body and error 35), whose body is read as v3 and whose answer as
//! v0; and librdkafka's "all topics" Metadata v12 request with 3 bytes after its body, which
//! decodes with those bytes reported and re-encodes without them.

use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use gregor_protocol::frame::{self, ApiKey, Request, RequestHeader};
use gregor_protocol::messages::*;
use gregor_protocol::{Decode, Encode, Error};
use serde_json::Value;

fn data_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kafka-3.7.0"))
}

/// Frames between independent clients and tansu 0.6.0 (`tests/capture_peer_frames.rs`).
fn peers_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/peers-tansu-0.6.0"))
}

struct Fixture {
    name: String,
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    client_id: String,
    request: Bytes,
    response: Bytes,
}

fn fixtures() -> Vec<Fixture> {
    fixtures_in(&data_dir())
}

fn fixtures_in(dir: &std::path::Path) -> Vec<Fixture> {
    let index: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).unwrap()).unwrap();
    index["fixtures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let read = |key: &str| Bytes::from(std::fs::read(dir.join(row[key].as_str().unwrap())).unwrap());
            Fixture {
                name: row["name"].as_str().unwrap().to_string(),
                api_key: row["api_key"].as_i64().unwrap() as i16,
                api_version: row["api_version"].as_i64().unwrap() as i16,
                correlation_id: row["correlation_id"].as_i64().unwrap() as i32,
                client_id: row["client_id"].as_str().unwrap().to_string(),
                request: read("request_file"),
                response: read("response_file"),
            }
        })
        .collect()
}

/// The body of a size-prefixed frame, which must be exactly one frame.
fn body_of(frame: &Bytes) -> Result<Bytes, String> {
    let mut buf = BytesMut::from(&frame[..]);
    let body = frame::split_frame(&mut buf, 16 << 20).map_err(|e| e.to_string())?.ok_or("incomplete frame")?;
    if !buf.is_empty() {
        return Err(format!("{} bytes after the frame", buf.len()));
    }
    Ok(body)
}

/// What checking one fixture found: `Ok(trailing request bytes)` or a failure. With `exact`
/// the response must re-encode byte for byte; without, a response that re-encodes to other
/// bytes must decode from them to the same value (a broker that writes tagged fields holding
/// their defaults, which Kafka and gregor leave out, cannot be reproduced byte for byte).
fn check<R>(fx: &Fixture, exact: bool) -> Result<usize, String>
where
    R: Request + std::fmt::Debug,
    R::Response: std::fmt::Debug + PartialEq,
{
    // ApiVersions above v3: the broker did not know the version and answered in v0
    let (body_version, response_version) = versions_of::<R>(fx);

    let mut body = body_of(&fx.request)?;
    let header = RequestHeader::decode(&mut body).map_err(|e| format!("request header: {e}"))?;
    let want = (ApiKey::from_i16(fx.api_key), fx.api_version, fx.correlation_id, Some(fx.client_id.clone()));
    let got = (header.api_key, header.api_version, header.correlation_id, header.client_id.clone());
    if got != want {
        return Err(format!("request header {got:?}, index says {want:?}"));
    }
    let request = R::decode(body_version, &mut body).map_err(|e| format!("request body: {e}"))?;
    let trailing = body.len();
    let mut again = BytesMut::new();
    if body_version == fx.api_version {
        frame::encode_request(&header, &request, &mut again).map_err(|e| format!("request re-encode: {e}"))?;
        // the size prefix counts the trailing bytes too: compare what follows it
        if again[4..] != fx.request[4..fx.request.len() - trailing] {
            return Err(format!(
                "request re-encodes differently\n  want {}\n  got  {}",
                hex(&fx.request[..fx.request.len() - trailing]),
                hex(&again)
            ));
        }
    }

    let frame = body_of(&fx.response)?;
    let (rh, response) = frame::decode_response::<R>(response_version, frame.clone())
        .map_err(|e| format!("response (v{response_version}): {e}"))?;
    if rh.correlation_id != fx.correlation_id {
        return Err(format!("response correlation id {}", rh.correlation_id));
    }
    let mut again = BytesMut::new();
    frame::encode_response_for::<R>(rh.correlation_id, response_version, &response, &mut again)
        .map_err(|e| format!("response re-encode: {e}"))?;
    if again[..] != fx.response[..] {
        let same_value = !exact
            && frame::decode_response::<R>(response_version, again.clone().freeze().slice(4..))
                .is_ok_and(|(_, back)| back == response);
        if !same_value {
            return Err(format!(
                "response re-encodes differently\n  want {}\n  got  {}",
                hex(&fx.response),
                hex(&again)
            ));
        }
    }
    Ok(trailing)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The versions a fixture's request body and response body are read in. A broker that does not
/// know the ApiVersions version asked answers error 35 in a v0 body; a request past the codec's
/// ApiVersions (the capture's v9, a v3 body under a v9 header) is read as v3.
fn versions_of<R: Request>(fx: &Fixture) -> (i16, i16) {
    if R::KEY != ApiKey::ApiVersions {
        return (fx.api_version, fx.api_version);
    }
    // after the size prefix and the correlation id: the error code
    let error_35 = fx.response.get(8..10) == Some(&35i16.to_be_bytes()[..]);
    let body = if fx.api_version > R::VERSIONS.max { 3 } else { fx.api_version };
    (body, if error_35 { 0 } else { fx.api_version })
}

/// Checks a fixture with the request type of its API; `None` for an API without one here.
fn check_any(fx: &Fixture, exact: bool) -> Option<Result<usize, String>> {
    Some(match ApiKey::from_i16(fx.api_key) {
        ApiKey::ApiVersions => check::<ApiVersionsRequest>(fx, exact),
        ApiKey::CreateTopics => check::<CreateTopicsRequest>(fx, exact),
        ApiKey::DeleteTopics => check::<DeleteTopicsRequest>(fx, exact),
        ApiKey::DescribeConfigs => check::<DescribeConfigsRequest>(fx, exact),
        ApiKey::AlterConfigs => check::<AlterConfigsRequest>(fx, exact),
        ApiKey::IncrementalAlterConfigs => check::<IncrementalAlterConfigsRequest>(fx, exact),
        ApiKey::CreatePartitions => check::<CreatePartitionsRequest>(fx, exact),
        ApiKey::OffsetCommit => check::<OffsetCommitRequest>(fx, exact),
        ApiKey::OffsetFetch => check::<OffsetFetchRequest>(fx, exact),
        ApiKey::ConsumerMetadata => check::<FindCoordinatorRequest>(fx, exact),
        ApiKey::JoinGroup => check::<JoinGroupRequest>(fx, exact),
        ApiKey::Heartbeat => check::<HeartbeatRequest>(fx, exact),
        ApiKey::LeaveGroup => check::<LeaveGroupRequest>(fx, exact),
        ApiKey::SyncGroup => check::<SyncGroupRequest>(fx, exact),
        ApiKey::DescribeGroups => check::<DescribeGroupsRequest>(fx, exact),
        ApiKey::ListGroups => check::<ListGroupsRequest>(fx, exact),
        ApiKey::InitProducerId => check::<InitProducerIdRequest>(fx, exact),
        ApiKey::Produce => check::<ProduceRequest>(fx, exact),
        ApiKey::Fetch => check::<FetchRequest>(fx, exact),
        ApiKey::Offsets => check::<OffsetsRequest>(fx, exact),
        ApiKey::Metadata => check::<MetadataRequest>(fx, exact),
        _ => return None,
    })
}

#[test]
fn every_captured_frame_decodes_and_re_encodes_byte_for_byte() {
    let all = fixtures();
    assert_eq!(all.len(), 101, "fixtures in index.json");
    let mut failures = Vec::new();
    let mut missing = Vec::new();
    let mut passed = 0;
    for fx in &all {
        match check_any(fx, true) {
            None => missing.push(fx.name.clone()),
            Some(Err(e)) => failures.push(format!("{}: {e}", fx.name)),
            Some(Ok(trailing)) => {
                // only librdkafka's all-topics Metadata request carries bytes after its body
                let expected = if fx.name == "metadata_v12_connect_3" { 3 } else { 0 };
                if trailing == expected {
                    passed += 1;
                } else {
                    failures.push(format!("{}: {trailing} bytes after the request body", fx.name));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} fixtures fail:\n{}", failures.len(), failures.join("\n"));
    // APIs are added one by one; this floor only rises, and ends at all 101
    assert!(passed >= 101, "{passed} fixtures pass; not yet implemented: {missing:?}");
}

/// Frames two independent parties exchanged — confluent-kafka and kafka-python with tansu, a
/// broker gregor did not write — decode, and re-encode byte for byte; tansu's ApiVersions and
/// Fetch v16 answers write tagged fields that hold their defaults (ApiVersions' feature tags,
/// Fetch's empty node endpoints), which Kafka and gregor leave out: those re-encode shorter and
/// must decode to the same value. GetTelemetrySubscriptions (API 71), which tansu offers and
/// librdkafka uses, is left out of the capture: gregor does not speak it.
#[test]
fn every_frame_between_peers_and_tansu_decodes_and_re_encodes_byte_for_byte() {
    let all = fixtures_in(&peers_dir());
    assert!(all.len() >= 30, "{} fixtures in index.json", all.len());
    let mut failures = Vec::new();
    let mut apis = std::collections::BTreeSet::new();
    for fx in &all {
        match check_any(fx, false) {
            None => failures.push(format!("{}: no request type for API {}", fx.name, fx.api_key)),
            Some(Err(e)) => failures.push(format!("{}: {e}", fx.name)),
            Some(Ok(0)) => {
                apis.insert(fx.api_key);
            }
            Some(Ok(trailing)) => failures.push(format!("{}: {trailing} bytes after the request body", fx.name)),
        }
    }
    assert!(failures.is_empty(), "{} fixtures fail:\n{}", failures.len(), failures.join("\n"));
    // Produce, Fetch, ListOffsets, Metadata, FindCoordinator, ApiVersions, CreateTopics,
    // InitProducerId at least
    for api in [0, 1, 2, 3, 10, 18, 19, 22] {
        assert!(apis.contains(&api), "API {api} captured: {apis:?}");
    }
}

#[test]
fn api_versions_v3_answer_names_the_brokers_versions_and_features() {
    let fx = fixtures().into_iter().find(|f| f.name == "api_versions_v3_connect_1").unwrap();
    let (_, r) = frame::decode_response::<ApiVersionsRequest>(3, body_of(&fx.response).unwrap()).unwrap();
    assert_eq!(r.error_code, 0);
    assert_eq!(r.api_keys.len(), 57);
    assert_eq!(r.versions_of(ApiKey::Produce), Some((0, 10)));
    assert_eq!(r.versions_of(ApiKey::Fetch), Some((0, 16)));
    assert_eq!(r.versions_of(ApiKey::Other(74)), Some((0, 0)));
    assert_eq!(r.supported_features.len(), 1);
    assert_eq!(r.supported_features[0].name, "metadata.version");
    assert_eq!((r.supported_features[0].min_version, r.supported_features[0].max_version), (1, 19));
    assert_eq!(r.finalized_features_epoch, 30);
    assert_eq!(r.finalized_features[0].max_version_level, 19);
    assert!(r.unknown_tagged_fields.is_empty());
}

#[test]
fn an_unknown_api_versions_version_is_answered_in_v0_with_error_35() {
    let fx = fixtures().into_iter().find(|f| f.name == "api_versions_v4_kp_produce").unwrap();
    let (_, r) = frame::decode_response::<ApiVersionsRequest>(0, body_of(&fx.response).unwrap()).unwrap();
    assert_eq!(r.error_code, 35);
    assert_eq!(r.versions_of(ApiKey::ApiVersions), Some((0, 3)));
    assert_eq!(r.api_keys.len(), 1);
}

#[test]
fn an_error_35_answer_reads_as_v0_whatever_version_was_asked() {
    let fx = fixtures().into_iter().find(|f| f.name == "api_versions_v9_err_apiversions_unsupported").unwrap();
    let (_, r) = frame::decode_response::<ApiVersionsRequest>(3, body_of(&fx.response).unwrap()).unwrap();
    assert_eq!((r.error_code, r.versions_of(ApiKey::ApiVersions)), (35, Some((0, 3))));
}

#[test]
fn an_error_35_answer_encodes_as_v0_whatever_version_was_asked() {
    // as a broker writes it, and as it reads back: the genuine bytes, encoded for the v3 request
    let fx = fixtures().into_iter().find(|f| f.name == "api_versions_v9_err_apiversions_unsupported").unwrap();
    let body = body_of(&fx.response).unwrap();
    let (header, r) = frame::decode_response::<ApiVersionsRequest>(3, body.clone()).unwrap();
    let mut out = BytesMut::new();
    frame::encode_response_for::<ApiVersionsRequest>(header.correlation_id, 3, &r, &mut out).unwrap();
    assert_eq!(hex(&out[4..]), hex(&body));
    let (_, back) = frame::decode_response::<ApiVersionsRequest>(3, out.freeze().slice(4..)).unwrap();
    assert_eq!(back, r);
}

#[test]
fn hostile_compact_lengths_fail_before_allocating() {
    // ApiVersions v3 response body: error 0, then an array count of 2^32-2 in a 10-byte body
    let mut body = Bytes::from_static(&[0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0]);
    let err = ApiVersionsResponse::decode(3, &mut body).unwrap_err();
    assert!(matches!(err, Error::InvalidLength { field: "api_keys", .. }), "{err}");
    // a compact string longer than the input
    let mut body = Bytes::from_static(&[0x7f, b'a', 0]);
    let err = ApiVersionsRequest::decode(3, &mut body).unwrap_err();
    assert!(matches!(err, Error::InvalidLength { field: "client_software_name", .. }), "{err}");
}

#[test]
fn a_field_the_version_lacks_is_an_error_not_a_silent_drop() {
    let request = ApiVersionsRequest { client_software_name: "gregor".into(), ..Default::default() };
    let err = request.encode(2, &mut BytesMut::new()).unwrap_err();
    assert!(matches!(err, Error::FieldNotInVersion { field: "client_software_name", version: 2, .. }), "{err}");
    let mut buf = BytesMut::new();
    ApiVersionsRequest::default().encode(2, &mut buf).unwrap();
    assert!(buf.is_empty(), "v0-v2 requests have no body");
}

/// The request body and the response body of a fixture, decoded with `R` at its version.
fn bodies_of<R: Request>(name: &str) -> (R, R::Response) {
    let fx = fixtures().into_iter().find(|f| f.name == name).unwrap();
    let mut body = body_of(&fx.request).unwrap();
    let header = RequestHeader::decode(&mut body).unwrap();
    assert_eq!(header.api_key, R::KEY);
    let request = frame::decode_request_body::<R>(fx.api_version, body).unwrap();
    let (_, response) = frame::decode_response::<R>(fx.api_version, body_of(&fx.response).unwrap()).unwrap();
    (request, response)
}

#[test]
fn admin_versions_librdkafka_sends_are_flexible_or_classic_per_api() {
    // what the captured headers show (v2/v1 for a flexible version, v1/v0 otherwise)
    assert!(!ApiKey::CreateTopics.is_flexible(4), "CreateTopics is flexible from v5");
    assert!(ApiKey::DeleteTopics.is_flexible(4));
    assert!(!ApiKey::DescribeConfigs.is_flexible(1), "DescribeConfigs is flexible from v4");
    assert!(ApiKey::AlterConfigs.is_flexible(2));
    assert!(ApiKey::IncrementalAlterConfigs.is_flexible(1));
    assert!(ApiKey::CreatePartitions.is_flexible(2));
    assert!(ApiKey::CreatePartitions.response_header_is_flexible(2));
}

#[test]
fn create_topics_v4_answers_an_existing_topic_with_error_36_and_its_message() {
    let (request, response) = bodies_of::<CreateTopicsRequest>("create_topics_v4_admin_1");
    assert_eq!((request.timeout_ms, request.validate_only), (60_000, false));
    let topic = &request.topics[0];
    assert_eq!((topic.name.as_str(), topic.num_partitions, topic.replication_factor), ("adm", 2, 1));
    assert!(topic.assignments.is_empty());
    assert_eq!(topic.configs[0].name, "retention.ms");
    assert_eq!(topic.configs[0].value.as_deref(), Some("3600000"));
    assert_eq!(response.topics[0].error_code, 0);
    assert_eq!(response.topics[0].error_message, None);

    let (request, response) = bodies_of::<CreateTopicsRequest>("create_topics_v4_admin_2");
    assert!(request.topics[0].configs.is_empty());
    assert_eq!(response.throttle_time_ms, 0);
    let result = &response.topics[0];
    assert_eq!((result.name.as_str(), result.error_code), ("adm", 36));
    assert_eq!(result.error_message.as_deref(), Some("Topic 'adm' already exists."));
    // v4 carries none of the v5+ fields: they keep their defaults
    assert_eq!((result.num_partitions, result.replication_factor), (-1, -1));
    assert_eq!(result.configs, Some(Vec::new()));
}

#[test]
fn delete_topics_v4_names_topics_by_name() {
    let (request, response) = bodies_of::<DeleteTopicsRequest>("delete_topics_v4_admin");
    assert_eq!(request.topic_names, vec!["adm".to_string()]);
    assert!(request.topics.is_empty());
    assert_eq!(request.timeout_ms, 60_000);
    assert_eq!(response.responses.len(), 1);
    assert_eq!(response.responses[0].name.as_deref(), Some("adm"));
    assert_eq!(response.responses[0].error_code, 0);
}

#[test]
fn describe_configs_v1_answers_every_config_with_its_source_and_synonyms() {
    let (request, response) = bodies_of::<DescribeConfigsRequest>("describe_configs_v1_admin");
    assert!(request.include_synonyms);
    let resource = &request.resources[0];
    assert_eq!((resource.resource_type, resource.resource_name.as_str()), (2, "adm"));
    assert_eq!(resource.configuration_keys, None, "null: every key");

    let result = &response.results[0];
    assert_eq!((result.error_code, result.error_message.as_deref()), (0, Some("")));
    assert_eq!((result.resource_type, result.resource_name.as_str()), (2, "adm"));
    assert_eq!(result.configs.len(), 31);
    let config = |name: &str| result.configs.iter().find(|c| c.name == name).unwrap();
    // set when the topic was created: a topic-level source (1)
    let retention = config("retention.ms");
    assert_eq!((retention.value.as_deref(), retention.config_source), (Some("3600000"), 1));
    // a static broker setting (4) over the default (5): two synonyms, highest precedence first
    let segment = config("segment.bytes");
    assert_eq!(segment.config_source, 4);
    let synonyms: Vec<(&str, Option<&str>, i8)> =
        segment.synonyms.iter().map(|s| (s.name.as_str(), s.value.as_deref(), s.source)).collect();
    assert_eq!(synonyms, [("log.segment.bytes", Some("1073741824"), 4), ("log.segment.bytes", Some("1073741824"), 5)]);
    assert!(config("segment.jitter.ms").synonyms.is_empty());
    assert_eq!(result.configs.iter().filter(|c| c.synonyms.is_empty()).count(), 6);
    assert!(result.configs.iter().all(|c| !c.read_only && !c.is_sensitive && !c.is_default));
    // v3+ fields keep their defaults in v1
    assert!(result.configs.iter().all(|c| c.config_type == 0 && c.documentation.is_none()));
}

#[test]
fn alter_configs_v2_sets_the_whole_config_of_a_topic() {
    let (request, response) = bodies_of::<AlterConfigsRequest>("alter_configs_v2_admin");
    assert!(!request.validate_only);
    let resource = &request.resources[0];
    assert_eq!((resource.resource_type, resource.resource_name.as_str()), (2, "adm"));
    assert_eq!(resource.configs.len(), 1);
    assert_eq!(
        (resource.configs[0].name.as_str(), resource.configs[0].value.as_deref()),
        ("retention.ms", Some("7200000"))
    );
    let answer = &response.responses[0];
    assert_eq!((answer.error_code, answer.error_message.as_deref()), (0, None));
    assert_eq!((answer.resource_type, answer.resource_name.as_str()), (2, "adm"));
    assert!(answer.unknown_tagged_fields.is_empty());
}

#[test]
fn incremental_alter_configs_v1_sets_one_config_and_deletes_another() {
    let (request, response) = bodies_of::<IncrementalAlterConfigsRequest>("incremental_alter_configs_v1_admin");
    let changes: Vec<(&str, i8, Option<&str>)> = request.resources[0]
        .configs
        .iter()
        .map(|c| (c.name.as_str(), c.config_operation, c.value.as_deref()))
        .collect();
    assert_eq!(changes, [("cleanup.policy", 0, Some("compact")), ("retention.ms", 1, None)]);
    let answer = &response.responses[0];
    assert_eq!((answer.error_code, answer.error_message.as_deref(), answer.resource_name.as_str()), (0, None, "adm"));
}

#[test]
fn create_partitions_v2_raises_the_count_with_broker_placement() {
    let (request, response) = bodies_of::<CreatePartitionsRequest>("create_partitions_v2_admin");
    let topic = &request.topics[0];
    assert_eq!((topic.name.as_str(), topic.count, topic.assignments.as_ref()), ("adm", 4, None));
    assert_eq!((request.timeout_ms, request.validate_only), (60_000, false));
    let result = &response.results[0];
    assert_eq!((result.name.as_str(), result.error_code, result.error_message.as_deref()), ("adm", 0, None));
}

/// A tiny deterministic generator (xorshift64*), so the sweep below is the same every run.
struct Sweep(u64);

impl Sweep {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The captured frame `frame` (size prefix included) with byte `at` (past the prefix) made
/// `value`.
fn mutated(frame: &Bytes, at: usize, value: u8) -> Bytes {
    let mut b = frame[4..].to_vec();
    b[at] = value;
    Bytes::from(b)
}

/// Hostile input for one fixture's API: mutated copies of its request and response bodies must
/// decode without a panic, and whatever decodes must re-encode and decode again to the same
/// value. Returns how many of the mutants decoded.
fn mutate<R>(fx: &Fixture, sweep: &mut Sweep) -> usize
where
    R: Request + std::fmt::Debug + PartialEq,
    R::Response: std::fmt::Debug + PartialEq,
{
    let (body_version, response_version) = versions_of::<R>(fx);
    let mut decoded = 0;
    let positions = |len: usize, sweep: &mut Sweep| -> Vec<(usize, u8)> {
        let mut at: Vec<(usize, u8)> = (0..len.min(48)).flat_map(|i| [(i, 0x00), (i, 0xff), (i, 0x80)]).collect();
        at.extend((0..120).map(|_| ((sweep.next() % len as u64) as usize, sweep.next() as u8)));
        at
    };
    let request = &fx.request;
    for (at, value) in positions(request.len() - 4, sweep) {
        let mut body = mutated(request, at, value);
        let Ok(header) = RequestHeader::decode(&mut body) else { continue };
        let Ok(r) = R::decode(body_version, &mut body) else { continue };
        decoded += 1;
        let mut again = BytesMut::new();
        r.encode(body_version, &mut again).unwrap_or_else(|e| panic!("{}: {header:?} {r:?} re-encodes: {e}", fx.name));
        let back =
            R::decode(body_version, &mut again.freeze()).unwrap_or_else(|e| panic!("{}: decodes again: {e}", fx.name));
        assert_eq!(back, r, "{}: request byte {at} = {value:#04x} is not stable", fx.name);
    }
    for (at, value) in positions(fx.response.len() - 4, sweep) {
        let Ok((header, r)) = frame::decode_response::<R>(response_version, mutated(&fx.response, at, value)) else {
            continue;
        };
        decoded += 1;
        let mut again = BytesMut::new();
        frame::encode_response_for::<R>(header.correlation_id, response_version, &r, &mut again)
            .unwrap_or_else(|e| panic!("{}: response {r:?} re-encodes: {e}", fx.name));
        let (_, back) = frame::decode_response::<R>(response_version, again.freeze().slice(4..))
            .unwrap_or_else(|e| panic!("{}: response decodes again: {e}", fx.name));
        assert_eq!(back, r, "{}: response byte {at} = {value:#04x} is not stable", fx.name);
    }
    decoded
}

/// No panic on wire input, and no value that changes on a round trip: each of the 101 genuine
/// frames, requests and responses, with bytes changed (the first 48 set to 0x00, 0xff and 0x80,
/// and 120 seeded random bytes), through the decoders of its API and version.
#[test]
fn mutated_frames_decode_without_panicking_and_what_decodes_is_stable() {
    let mut sweep = Sweep(0x9e37_79b9_7f4a_7c15);
    let (mut tried, mut decoded) = (0, 0);
    // the genuine broker's frames and those between the independent peers and tansu
    let all: Vec<Fixture> = fixtures().into_iter().chain(fixtures_in(&peers_dir())).collect();
    for fx in &all {
        let n = match ApiKey::from_i16(fx.api_key) {
            ApiKey::ApiVersions => mutate::<ApiVersionsRequest>(fx, &mut sweep),
            ApiKey::CreateTopics => mutate::<CreateTopicsRequest>(fx, &mut sweep),
            ApiKey::DeleteTopics => mutate::<DeleteTopicsRequest>(fx, &mut sweep),
            ApiKey::DescribeConfigs => mutate::<DescribeConfigsRequest>(fx, &mut sweep),
            ApiKey::AlterConfigs => mutate::<AlterConfigsRequest>(fx, &mut sweep),
            ApiKey::IncrementalAlterConfigs => mutate::<IncrementalAlterConfigsRequest>(fx, &mut sweep),
            ApiKey::CreatePartitions => mutate::<CreatePartitionsRequest>(fx, &mut sweep),
            ApiKey::OffsetCommit => mutate::<OffsetCommitRequest>(fx, &mut sweep),
            ApiKey::OffsetFetch => mutate::<OffsetFetchRequest>(fx, &mut sweep),
            ApiKey::ConsumerMetadata => mutate::<FindCoordinatorRequest>(fx, &mut sweep),
            ApiKey::JoinGroup => mutate::<JoinGroupRequest>(fx, &mut sweep),
            ApiKey::Heartbeat => mutate::<HeartbeatRequest>(fx, &mut sweep),
            ApiKey::LeaveGroup => mutate::<LeaveGroupRequest>(fx, &mut sweep),
            ApiKey::SyncGroup => mutate::<SyncGroupRequest>(fx, &mut sweep),
            ApiKey::DescribeGroups => mutate::<DescribeGroupsRequest>(fx, &mut sweep),
            ApiKey::ListGroups => mutate::<ListGroupsRequest>(fx, &mut sweep),
            ApiKey::InitProducerId => mutate::<InitProducerIdRequest>(fx, &mut sweep),
            ApiKey::Produce => mutate::<ProduceRequest>(fx, &mut sweep),
            ApiKey::Fetch => mutate::<FetchRequest>(fx, &mut sweep),
            ApiKey::Offsets => mutate::<OffsetsRequest>(fx, &mut sweep),
            ApiKey::Metadata => mutate::<MetadataRequest>(fx, &mut sweep),
            other => panic!("{}: no decoder for {other}", fx.name),
        };
        tried += 2 * (3 * 48 + 120);
        decoded += n;
    }
    // most single-byte changes still decode (a value changed, not a length): the sweep reaches
    // the decoders' success paths, not only their first length check
    assert!(decoded > tried / 4, "{decoded} of about {tried} mutants decoded");
}

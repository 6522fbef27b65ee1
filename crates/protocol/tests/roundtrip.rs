//! Property tests: every request and response body of every version round-trips through
//! encode/decode using every byte; message sets (plain and compressed wrappers) decode to exactly
//! the messages at or above the fetch offset; truncated or random input fails without panicking.
//!
//! Failures are persisted to `proptest-regressions/roundtrip.txt` (relative to the crate), which
//! is meant to be committed.

use std::fmt::Debug;

use bytes::{Bytes, BytesMut};
use gregor_protocol::frame::{
    decode_response, encode_request, encode_response, encode_response_for, split_frame, ApiKey, RequestHeader,
};
use gregor_protocol::message::{DecodeOptions, DecodedMessages, ENTRY_HEADER_SIZE};
use gregor_protocol::messages::*;
use gregor_protocol::{Compression, Decode, Encode, Error, Message, MessageAndOffset, MessageSet, Request};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

// ---------------------------------------------------------------------------------------------
// strategies
// ---------------------------------------------------------------------------------------------

/// Any string of up to 20 characters (multi-byte ones included).
fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z0-9._-]{0,20}",
        1 => ".{0,20}",
    ]
}

fn nullable_string() -> impl Strategy<Value = Option<String>> {
    option::of(string())
}

/// A topic-keyed array of a modern body, each entry made by `make` (the type's `new`).
fn topics_of<P: Debug + Clone, T: Debug>(
    partition: impl Strategy<Value = P>,
    make: fn(String, Vec<P>) -> T,
) -> impl Strategy<Value = Vec<T>> {
    vec((string(), vec(partition, 0..4)).prop_map(move |(topic, partitions)| make(topic, partitions)), 0..4)
}

fn payload() -> impl Strategy<Value = Option<Bytes>> {
    option::of(prop_oneof![
        3 => vec(any::<u8>(), 0..24).prop_map(Bytes::from),
        // compressible: one byte repeated
        1 => (any::<u8>(), 0usize..300).prop_map(|(b, n)| Bytes::from(vec![b; n])),
    ])
}

/// An uncompressed message: codec bits 0, the other attribute bits arbitrary (v0 keeps them).
fn message() -> impl Strategy<Value = Message> {
    (any::<i8>(), payload(), payload()).prop_map(|(attributes, key, value)| Message {
        attributes: attributes & !Compression::ATTRIBUTE_MASK,
        key,
        value,
    })
}

fn codec() -> impl Strategy<Value = Compression> {
    prop_oneof![Just(Compression::Gzip), Just(Compression::Snappy), Just(Compression::Lz4)]
}

/// One top-level entry of a set: a plain message or a compressed wrapper of 1 to 4 messages.
/// Each message comes with the gap (1 to 3) between its offset and the previous one.
#[derive(Debug, Clone)]
enum Group {
    Plain(i64, Message),
    Wrapped(Compression, Vec<(i64, Message)>),
}

fn group() -> impl Strategy<Value = Group> {
    prop_oneof![
        3 => (1i64..4, message()).prop_map(|(gap, m)| Group::Plain(gap, m)),
        1 => (codec(), vec((1i64..4, message()), 1..5)).prop_map(|(c, ms)| Group::Wrapped(c, ms)),
    ]
}

/// An encoded set and what it holds.
#[derive(Debug, Clone)]
struct BuiltSet {
    set: MessageSet,
    /// Per top-level entry: the byte offset where it ends and the messages it decodes to.
    entries: Vec<(usize, Vec<MessageAndOffset>)>,
}

impl BuiltSet {
    fn messages(&self) -> impl Iterator<Item = &MessageAndOffset> {
        self.entries.iter().flat_map(|(_, ms)| ms)
    }

    fn first_offset(&self) -> Option<i64> {
        self.messages().next().map(|m| m.offset)
    }

    fn last_offset(&self) -> Option<i64> {
        self.messages().last().map(|m| m.offset)
    }
}

fn build(base: i64, groups: &[Group]) -> BuiltSet {
    let mut offset = base;
    let mut top = Vec::new();
    let mut expanded = Vec::new();
    for g in groups {
        match g {
            Group::Plain(gap, m) => {
                offset += gap;
                let entry = MessageAndOffset::new(offset, m.clone());
                top.push(entry.clone());
                expanded.push(vec![entry]);
            }
            Group::Wrapped(codec, ms) => {
                let inner: Vec<_> = ms
                    .iter()
                    .map(|(gap, m)| {
                        offset += gap;
                        MessageAndOffset::new(offset, m.clone())
                    })
                    .collect();
                top.push(MessageSet::wrap(&inner, *codec).expect("wrap"));
                expanded.push(inner);
            }
        }
    }
    let set = MessageSet::encode(&top).expect("encode");
    let mut end = 0;
    let entries = top
        .iter()
        .zip(expanded)
        .map(|(t, ms)| {
            end += ENTRY_HEADER_SIZE + t.message.encoded_len();
            (end, ms)
        })
        .collect();
    assert_eq!(end, set.len());
    BuiltSet { set, entries }
}

fn built_set() -> impl Strategy<Value = BuiltSet> {
    (0i64..1 << 40, vec(group(), 0..6)).prop_map(|(base, groups)| build(base, &groups))
}

/// A message set as it may sit in a Produce or Fetch body: a real one, or any bytes at all (the
/// body codec carries a set's bytes without reading them).
fn message_set() -> impl Strategy<Value = MessageSet> {
    prop_oneof![
        4 => built_set().prop_map(|b| b.set),
        1 => vec(any::<u8>(), 0..64).prop_map(|v| MessageSet::from_bytes(v.into())),
    ]
}

fn produce_request() -> impl Strategy<Value = ProduceRequest> {
    let partition = (any::<i32>(), message_set())
        .prop_map(|(partition, message_set)| ProducePartition::new(partition, message_set));
    (any::<i16>(), any::<i32>(), topics_of(partition, ProduceTopic::new)).prop_map(
        |(required_acks, timeout, topics)| ProduceRequest { required_acks, timeout, topics, ..Default::default() },
    )
}

fn produce_response() -> impl Strategy<Value = ProduceResponse> {
    let partition = (any::<i32>(), any::<i16>(), any::<i64>())
        .prop_map(|(partition, error_code, offset)| ProduceResponsePartition::new(partition, error_code, offset));
    topics_of(partition, ProduceResponseTopic::new).prop_map(|topics| ProduceResponse { topics, ..Default::default() })
}

fn fetch_request() -> impl Strategy<Value = FetchRequest> {
    let partition = (any::<i32>(), any::<i64>(), any::<i32>())
        .prop_map(|(partition, fetch_offset, max_bytes)| FetchPartition::new(partition, fetch_offset, max_bytes));
    (any::<i32>(), any::<i32>(), any::<i32>(), topics_of(partition, FetchTopic::new)).prop_map(
        |(replica_id, max_wait_time, min_bytes, topics)| FetchRequest {
            replica_id,
            max_wait_time,
            min_bytes,
            topics,
            ..Default::default()
        },
    )
}

fn fetch_response() -> impl Strategy<Value = FetchResponse> {
    let partition = (any::<i32>(), any::<i16>(), any::<i64>(), message_set()).prop_map(
        |(partition, error_code, high_watermark, message_set)| {
            FetchResponsePartition::new(partition, error_code, high_watermark, message_set)
        },
    );
    topics_of(partition, FetchResponseTopic::new).prop_map(|topics| FetchResponse { topics, ..Default::default() })
}

fn offsets_request() -> impl Strategy<Value = OffsetsRequest> {
    let partition = (any::<i32>(), prop_oneof![Just(LATEST_TIME), Just(EARLIEST_TIME), any::<i64>()], any::<i32>())
        .prop_map(|(partition, time, max_number_of_offsets)| OffsetsPartition {
            partition,
            time,
            max_number_of_offsets,
            ..Default::default()
        });
    (any::<i32>(), topics_of(partition, OffsetsTopic::new)).prop_map(|(replica_id, topics)| OffsetsRequest {
        replica_id,
        topics,
        ..Default::default()
    })
}

fn offsets_response() -> impl Strategy<Value = OffsetsResponse> {
    let partition =
        (any::<i32>(), any::<i16>(), vec(any::<i64>(), 0..4)).prop_map(|(partition, error_code, offsets)| {
            OffsetsResponsePartition { partition, error_code, offsets, ..Default::default() }
        });
    topics_of(partition, OffsetsResponseTopic::new).prop_map(|topics| OffsetsResponse { topics, ..Default::default() })
}

fn metadata_request() -> impl Strategy<Value = MetadataRequest> {
    // v0 has no null array: every topic is an empty one
    vec(string(), 0..4).prop_map(|topics| MetadataRequest {
        topics: Some(topics.into_iter().map(MetadataRequestTopic::named).collect()),
        ..Default::default()
    })
}

fn metadata_response() -> impl Strategy<Value = MetadataResponse> {
    let broker = (any::<i32>(), string(), any::<i32>()).prop_map(|(node_id, host, port)| BrokerMetadata {
        node_id,
        host,
        port,
        ..Default::default()
    });
    let partition = (any::<i16>(), any::<i32>(), any::<i32>(), vec(any::<i32>(), 0..4), vec(any::<i32>(), 0..4))
        .prop_map(|(error_code, partition, leader, replicas, isr)| PartitionMetadata {
            error_code,
            partition,
            leader,
            replicas,
            isr,
            ..Default::default()
        });
    let topic = (any::<i16>(), string(), vec(partition, 0..4))
        .prop_map(|(error_code, topic, partitions)| TopicMetadata::new(topic, error_code, partitions));
    (vec(broker, 0..4), vec(topic, 0..4)).prop_map(|(brokers, topics)| MetadataResponse {
        brokers,
        topics,
        ..Default::default()
    })
}

/// `value` in the versions `lo..=hi` that carry a field, its default elsewhere.
fn only<T: Debug + Clone + 'static>(
    version: i16,
    lo: i16,
    hi: i16,
    value: impl Strategy<Value = T> + 'static,
    default: T,
) -> BoxedStrategy<T> {
    if (lo..=hi).contains(&version) {
        value.boxed()
    } else {
        Just(default).boxed()
    }
}

/// An OffsetCommit request with only values `version` can carry (the other fields at their
/// defaults).
fn offset_commit_request(version: i16) -> impl Strategy<Value = OffsetCommitRequest> {
    let v = version;
    let partition = (
        any::<i32>(),
        any::<i64>(),
        only(v, 6, i16::MAX, any::<i32>(), -1),
        only(v, 1, 1, any::<i64>(), DEFAULT_TIMESTAMP),
        nullable_string(),
    )
        .prop_map(|(partition, offset, leader_epoch, timestamp, metadata)| OffsetCommitPartition {
            partition,
            offset,
            leader_epoch,
            timestamp,
            metadata,
            ..Default::default()
        });
    let topic = (string(), vec(partition, 0..4)).prop_map(|(t, ps)| OffsetCommitTopic::new(t, ps));
    (
        string(),
        only(v, 1, i16::MAX, any::<i32>(), DEFAULT_GENERATION_ID),
        only(v, 1, i16::MAX, string(), DEFAULT_CONSUMER_ID.to_owned()),
        only(v, 7, i16::MAX, nullable_string(), None),
        only(v, 2, 4, any::<i64>(), -1),
        vec(topic, 0..4),
    )
        .prop_map(|(group_id, group_generation_id, consumer_id, group_instance_id, retention_time_ms, topics)| {
            OffsetCommitRequest {
                group_id,
                group_generation_id,
                consumer_id,
                group_instance_id,
                retention_time_ms,
                topics,
                ..Default::default()
            }
        })
}

fn offset_commit_response(version: i16) -> impl Strategy<Value = OffsetCommitResponse> {
    let partition = (any::<i32>(), any::<i16>()).prop_map(|(p, e)| OffsetCommitResponsePartition::new(p, e));
    let topic = (string(), vec(partition, 0..4)).prop_map(|(t, ps)| OffsetCommitResponseTopic::new(t, ps));
    (only(version, 3, i16::MAX, any::<i32>(), 0), vec(topic, 0..4))
        .prop_map(|(throttle_time_ms, topics)| OffsetCommitResponse { throttle_time_ms, topics, ..Default::default() })
}

fn offset_fetch_topics() -> impl Strategy<Value = Vec<OffsetFetchTopic>> {
    vec((string(), vec(any::<i32>(), 0..4)).prop_map(|(t, ps)| OffsetFetchTopic::new(t, ps)), 0..4)
}

/// An OffsetFetch request with only values `version` can carry.
fn offset_fetch_request(version: i16) -> BoxedStrategy<OffsetFetchRequest> {
    let v = version;
    let require_stable = only(v, 7, i16::MAX, any::<bool>(), false);
    if v <= 7 {
        let topics = if v >= 2 {
            option::of(offset_fetch_topics()).boxed()
        } else {
            offset_fetch_topics().prop_map(Some).boxed()
        };
        (string(), topics, require_stable)
            .prop_map(|(group_id, topics, require_stable)| OffsetFetchRequest {
                group_id,
                topics,
                require_stable,
                ..Default::default()
            })
            .boxed()
    } else {
        let group = (
            string(),
            only(v, 9, i16::MAX, nullable_string(), None),
            only(v, 9, i16::MAX, any::<i32>(), -1),
            option::of(offset_fetch_topics()),
        )
            .prop_map(|(group_id, member_id, member_epoch, topics)| OffsetFetchGroup {
                group_id,
                member_id,
                member_epoch,
                topics,
                ..Default::default()
            });
        (vec(group, 0..3), require_stable)
            .prop_map(|(groups, require_stable)| OffsetFetchRequest { groups, require_stable, ..Default::default() })
            .boxed()
    }
}

/// An OffsetFetch response with only values `version` can carry.
fn offset_fetch_response(version: i16) -> BoxedStrategy<OffsetFetchResponse> {
    let v = version;
    let partition =
        (any::<i32>(), any::<i64>(), only(v, 5, i16::MAX, any::<i32>(), -1), nullable_string(), any::<i16>()).prop_map(
            |(partition, offset, leader_epoch, metadata, error_code)| OffsetFetchResponsePartition {
                partition,
                offset,
                leader_epoch,
                metadata,
                error_code,
                ..Default::default()
            },
        );
    let topics = vec((string(), vec(partition, 0..4)).prop_map(|(t, ps)| OffsetFetchResponseTopic::new(t, ps)), 0..4);
    let throttle = only(v, 3, i16::MAX, any::<i32>(), 0);
    if v <= 7 {
        (throttle, topics, only(v, 2, 7, any::<i16>(), 0))
            .prop_map(|(throttle_time_ms, topics, error_code)| OffsetFetchResponse {
                throttle_time_ms,
                topics,
                error_code,
                ..Default::default()
            })
            .boxed()
    } else {
        let group = (string(), topics, any::<i16>()).prop_map(|(group_id, topics, error_code)| {
            OffsetFetchResponseGroup { group_id, topics, error_code, ..Default::default() }
        });
        (throttle, vec(group, 0..3))
            .prop_map(|(throttle_time_ms, groups)| OffsetFetchResponse {
                throttle_time_ms,
                groups,
                ..Default::default()
            })
            .boxed()
    }
}

/// A FindCoordinator (ConsumerMetadata) request with only values `version` can carry.
fn consumer_metadata_request(version: i16) -> impl Strategy<Value = ConsumerMetadataRequest> {
    let v = version;
    (
        only(v, 0, 3, string(), String::new()),
        only(v, 1, i16::MAX, any::<i8>(), 0),
        only(v, 4, i16::MAX, vec(string(), 0..4), vec![]),
    )
        .prop_map(|(key, key_type, coordinator_keys)| FindCoordinatorRequest {
            key,
            key_type,
            coordinator_keys,
            ..Default::default()
        })
}

/// A FindCoordinator (ConsumerMetadata) response with only values `version` can carry.
fn consumer_metadata_response(version: i16) -> impl Strategy<Value = ConsumerMetadataResponse> {
    let v = version;
    let coordinator = (string(), any::<i32>(), string(), any::<i32>(), any::<i16>(), nullable_string()).prop_map(
        |(key, node_id, host, port, error_code, error_message)| Coordinator {
            key,
            node_id,
            host,
            port,
            error_code,
            error_message,
            ..Default::default()
        },
    );
    (
        only(v, 1, i16::MAX, any::<i32>(), 0),
        only(v, 0, 3, any::<i16>(), 0),
        only(v, 1, 3, nullable_string(), None),
        only(v, 0, 3, (any::<i32>(), string(), any::<i32>()), (0, String::new(), 0)),
        only(v, 4, i16::MAX, vec(coordinator, 0..3), vec![]),
    )
        .prop_map(|(throttle_time_ms, error_code, error_message, (node_id, host, port), coordinators)| {
            FindCoordinatorResponse {
                throttle_time_ms,
                error_code,
                error_message,
                node_id,
                host,
                port,
                coordinators,
                ..Default::default()
            }
        })
}

// ---------------------------------------------------------------------------------------------
// checks
// ---------------------------------------------------------------------------------------------

/// 256 cases per property, unless `PROPTEST_CASES` asks for another number (for a long run).
fn config() -> ProptestConfig {
    let default = ProptestConfig::default();
    ProptestConfig {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() { default.cases } else { 256 },
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("proptest-regressions/roundtrip.txt"))),
        ..default
    }
}

/// Encode then decode gives the value back, with every byte used, and re-encodes identically.
fn roundtrip<T: Encode + Decode + PartialEq + Debug>(value: &T, version: i16) -> Result<Bytes, TestCaseError> {
    let bytes = value.to_bytes(version).map_err(|e| TestCaseError::fail(format!("encode v{version}: {e}")))?;
    let mut buf = bytes.clone();
    let decoded = T::decode(version, &mut buf).map_err(|e| TestCaseError::fail(format!("decode v{version}: {e}")))?;
    prop_assert_eq!(&decoded, value);
    prop_assert!(buf.is_empty(), "{} bytes left after decoding v{}", buf.len(), version);
    prop_assert_eq!(decoded.to_bytes(version).unwrap(), bytes.clone());
    // Cut by one byte, the body no longer decodes.
    let mut cut = bytes.slice(..bytes.len() - 1);
    prop_assert!(T::decode(version, &mut cut).is_err(), "v{} decoded without its last byte", version);
    Ok(bytes)
}

/// The request travels in a whole frame (size, header, body) and comes back through
/// `split_frame`, `RequestHeader::decode` and `AnyRequest::decode`.
fn request_frame_roundtrip<R: Request + Clone + PartialEq + Debug>(
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: Option<String>,
    wrap: fn(R) -> AnyRequest,
) -> Result<(), TestCaseError> {
    let header = RequestHeader {
        api_key: R::KEY,
        api_version: version,
        correlation_id,
        client_id,
        unknown_tagged_fields: Default::default(),
    };
    let mut stream = BytesMut::new();
    encode_request(&header, request, &mut stream).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut frame = split_frame(&mut stream, usize::MAX).unwrap().expect("a whole frame");
    prop_assert!(stream.is_empty());
    let got = RequestHeader::decode(&mut frame).unwrap();
    prop_assert_eq!(&got, &header);
    let body = AnyRequest::decode(&got, frame).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(body, wrap(request.clone()));
    Ok(())
}

/// The response travels in a whole frame and comes back through `decode_response`.
fn response_frame_roundtrip<R: Request>(
    response: &R::Response,
    version: i16,
    correlation_id: i32,
) -> Result<(), TestCaseError>
where
    R::Response: PartialEq + Debug,
{
    let mut stream = BytesMut::new();
    encode_response_for::<R>(correlation_id, version, response, &mut stream)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let frame = split_frame(&mut stream, usize::MAX).unwrap().expect("a whole frame");
    let (header, body) = decode_response::<R>(version, frame).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(header.correlation_id, correlation_id);
    prop_assert_eq!(&body, response);
    Ok(())
}

/// Decodes `bytes` as `T` in `version`; when that succeeds, re-encoding must give back exactly the
/// bytes that were consumed (the codec is canonical). Must never panic.
fn decode_any<T: Encode + Decode + Debug>(version: i16, bytes: &Bytes) -> Option<T> {
    let mut buf = bytes.clone();
    let value = T::decode(version, &mut buf).ok()?;
    let used = bytes.len() - buf.len();
    let again = value
        .to_bytes(version)
        .unwrap_or_else(|e| panic!("re-encoding {value:?} (decoded from {bytes:?}) failed: {e}"));
    assert_eq!(again, bytes.slice(..used), "{value:?} re-encodes differently from what it was decoded from");
    Some(value)
}

/// Reads a set every way the crate offers: must never panic.
///
/// The decompression budget is 1 MiB rather than the default 256 MiB: a raw snappy block's
/// varint length claim is checked only against the budget, so a 6-byte hostile value makes the
/// decoder allocate and zero the whole budget before failing (see the report on the snappy
/// decoder), which at 256 MiB would make these properties slow and memory-hungry.
fn read_set(set: &MessageSet) {
    let _ = set.decode(&DecodeOptions { max_decompressed_bytes: 1 << 20, ..DecodeOptions::default() });
    let _ = set.decode(&DecodeOptions { max_decompressed_bytes: 1 << 12, ..DecodeOptions::fetched("t", 0, i64::MAX) });
    for entry in set.entries() {
        let _ = entry;
    }
    let _ = format!("{set:?}");
}

/// Decodes `bytes` as every body type in every version (plus some that do not exist), and as a
/// response frame of every API: must never panic.
fn decode_everything(bytes: &Bytes) {
    for version in [-1i16, 0, 1, 2] {
        if let Some(p) = decode_any::<ProduceRequest>(version, bytes) {
            p.topics.iter().flat_map(|t| &t.partitions).for_each(|p| read_set(&p.message_set));
        }
        decode_any::<ProduceResponse>(version, bytes);
        decode_any::<FetchRequest>(version, bytes);
        if let Some(f) = decode_any::<FetchResponse>(version, bytes) {
            for t in &f.topics {
                for p in &t.partitions {
                    let _ = p.messages(&t.topic, 0);
                    read_set(&p.message_set);
                }
            }
        }
        decode_any::<OffsetsRequest>(version, bytes);
        decode_any::<OffsetsResponse>(version, bytes);
        decode_any::<MetadataRequest>(version, bytes);
        decode_any::<MetadataResponse>(version, bytes);
        decode_any::<OffsetCommitRequest>(version, bytes);
        decode_any::<OffsetCommitResponse>(version, bytes);
        decode_any::<OffsetFetchRequest>(version, bytes);
        decode_any::<OffsetFetchResponse>(version, bytes);
        decode_any::<ConsumerMetadataRequest>(version, bytes);
        decode_any::<ConsumerMetadataResponse>(version, bytes);

        let _ = decode_response::<ProduceRequest>(version, bytes.clone());
        let _ = decode_response::<FetchRequest>(version, bytes.clone());
        let _ = decode_response::<OffsetsRequest>(version, bytes.clone());
        let _ = decode_response::<MetadataRequest>(version, bytes.clone());
        let _ = decode_response::<OffsetCommitRequest>(version, bytes.clone());
        let _ = decode_response::<OffsetFetchRequest>(version, bytes.clone());
        let _ = decode_response::<ConsumerMetadataRequest>(version, bytes.clone());

        for key in 0..=11 {
            let header = RequestHeader {
                api_key: ApiKey::from_i16(key),
                api_version: version,
                correlation_id: 0,
                client_id: None,
                unknown_tagged_fields: Default::default(),
            };
            let _ = AnyRequest::decode(&header, bytes.clone());
        }
    }
    let mut header_and_body = bytes.clone();
    if let Ok(header) = RequestHeader::decode(&mut header_and_body) {
        let _ = AnyRequest::decode(&header, header_and_body);
    }
    let _ = split_frame(&mut BytesMut::from(&bytes[..]), 1 << 20);
}

// ---------------------------------------------------------------------------------------------
// properties
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    // ---- body round trips, every API and version --------------------------------------------

    #[test]
    fn produce_v0_request(req in produce_request(), corr in any::<i32>(), client in nullable_string()) {
        roundtrip(&req, 0)?;
        request_frame_roundtrip(&req, 0, corr, client, AnyRequest::Produce)?;
    }

    #[test]
    fn produce_v0_response(resp in produce_response(), corr in any::<i32>()) {
        roundtrip(&resp, 0)?;
        response_frame_roundtrip::<ProduceRequest>(&resp, 0, corr)?;
    }

    #[test]
    fn fetch_v0_request(req in fetch_request(), corr in any::<i32>(), client in nullable_string()) {
        roundtrip(&req, 0)?;
        request_frame_roundtrip(&req, 0, corr, client, AnyRequest::Fetch)?;
    }

    #[test]
    fn fetch_v0_response(resp in fetch_response(), corr in any::<i32>()) {
        roundtrip(&resp, 0)?;
        response_frame_roundtrip::<FetchRequest>(&resp, 0, corr)?;
    }

    #[test]
    fn offsets_v0_request(req in offsets_request(), corr in any::<i32>(), client in nullable_string()) {
        roundtrip(&req, 0)?;
        request_frame_roundtrip(&req, 0, corr, client, AnyRequest::Offsets)?;
    }

    #[test]
    fn offsets_v0_response(resp in offsets_response(), corr in any::<i32>()) {
        roundtrip(&resp, 0)?;
        response_frame_roundtrip::<OffsetsRequest>(&resp, 0, corr)?;
    }

    #[test]
    fn metadata_v0_request(req in metadata_request(), corr in any::<i32>(), client in nullable_string()) {
        roundtrip(&req, 0)?;
        request_frame_roundtrip(&req, 0, corr, client, AnyRequest::Metadata)?;
    }

    #[test]
    fn metadata_v0_response(resp in metadata_response(), corr in any::<i32>()) {
        roundtrip(&resp, 0)?;
        response_frame_roundtrip::<MetadataRequest>(&resp, 0, corr)?;
    }

    #[test]
    fn offset_commit_v0_request(req in offset_commit_request(0), corr in any::<i32>(), client in nullable_string()) {
        roundtrip(&req, 0)?;
        request_frame_roundtrip(&req, 0, corr, client, AnyRequest::OffsetCommit)?;
    }

    #[test]
    fn offset_commit_v1_request(req in offset_commit_request(1), corr in any::<i32>(), client in nullable_string()) {
        roundtrip(&req, 1)?;
        request_frame_roundtrip(&req, 1, corr, client, AnyRequest::OffsetCommit)?;
    }

    #[test]
    fn offset_commit_v0_refuses_what_only_v1_carries(req in offset_commit_request(1)) {
        let representable = req.group_generation_id == DEFAULT_GENERATION_ID
            && req.consumer_id == DEFAULT_CONSUMER_ID
            && req.topics.iter().flat_map(|t| &t.partitions).all(|p| p.timestamp == DEFAULT_TIMESTAMP);
        match req.to_bytes(0) {
            Ok(_) => prop_assert!(representable),
            Err(Error::FieldNotInVersion { api: ApiKey::OffsetCommit, version: 0, .. }) => prop_assert!(!representable),
            Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e}"))),
        }
    }

    #[test]
    fn offset_commit_v0_and_v1_response(resp in offset_commit_response(0), corr in any::<i32>()) {
        let v0 = roundtrip(&resp, 0)?;
        let v1 = roundtrip(&resp, 1)?;
        prop_assert_eq!(v0, v1);
        response_frame_roundtrip::<OffsetCommitRequest>(&resp, 0, corr)?;
        response_frame_roundtrip::<OffsetCommitRequest>(&resp, 1, corr)?;
    }

    #[test]
    fn offset_fetch_v0_and_v1_request(req in offset_fetch_request(0), corr in any::<i32>(), client in nullable_string()) {
        let v0 = roundtrip(&req, 0)?;
        let v1 = roundtrip(&req, 1)?;
        prop_assert_eq!(v0, v1);
        request_frame_roundtrip(&req, 0, corr, client.clone(), AnyRequest::OffsetFetch)?;
        request_frame_roundtrip(&req, 1, corr, client, AnyRequest::OffsetFetch)?;
    }

    #[test]
    fn offset_fetch_v0_and_v1_response(resp in offset_fetch_response(0), corr in any::<i32>()) {
        let v0 = roundtrip(&resp, 0)?;
        let v1 = roundtrip(&resp, 1)?;
        prop_assert_eq!(v0, v1);
        response_frame_roundtrip::<OffsetFetchRequest>(&resp, 0, corr)?;
        response_frame_roundtrip::<OffsetFetchRequest>(&resp, 1, corr)?;
    }

    #[test]
    fn consumer_metadata_v0_request(req in consumer_metadata_request(0), corr in any::<i32>(), client in nullable_string()) {
        roundtrip(&req, 0)?;
        request_frame_roundtrip(&req, 0, corr, client, AnyRequest::ConsumerMetadata)?;
    }

    #[test]
    fn consumer_metadata_v0_response(resp in consumer_metadata_response(0), corr in any::<i32>()) {
        roundtrip(&resp, 0)?;
        response_frame_roundtrip::<ConsumerMetadataRequest>(&resp, 0, corr)?;
    }

    // ---- the modern versions of the group APIs ----------------------------------------------

    #[test]
    fn offset_commit_every_version(
        (v, req, resp) in (0i16..=9).prop_flat_map(|v| (Just(v), offset_commit_request(v), offset_commit_response(v))),
        corr in any::<i32>(),
        client in nullable_string(),
    ) {
        roundtrip(&req, v)?;
        roundtrip(&resp, v)?;
        request_frame_roundtrip(&req, v, corr, client, AnyRequest::OffsetCommit)?;
        response_frame_roundtrip::<OffsetCommitRequest>(&resp, v, corr)?;
    }

    #[test]
    fn offset_fetch_every_version(
        (v, req, resp) in (0i16..=9).prop_flat_map(|v| (Just(v), offset_fetch_request(v), offset_fetch_response(v))),
        corr in any::<i32>(),
        client in nullable_string(),
    ) {
        roundtrip(&req, v)?;
        roundtrip(&resp, v)?;
        request_frame_roundtrip(&req, v, corr, client, AnyRequest::OffsetFetch)?;
        response_frame_roundtrip::<OffsetFetchRequest>(&resp, v, corr)?;
    }

    #[test]
    fn find_coordinator_every_version(
        (v, req, resp) in (0i16..=4).prop_flat_map(|v| (Just(v), consumer_metadata_request(v), consumer_metadata_response(v))),
        corr in any::<i32>(),
        client in nullable_string(),
    ) {
        roundtrip(&req, v)?;
        roundtrip(&resp, v)?;
        request_frame_roundtrip(&req, v, corr, client, AnyRequest::ConsumerMetadata)?;
        response_frame_roundtrip::<FindCoordinatorRequest>(&resp, v, corr)?;
    }

    // ---- message sets -----------------------------------------------------------------------

    #[test]
    fn message_set_decodes_exactly_the_messages_at_or_above_min_offset(built in built_set(), pick in any::<prop::sample::Index>()) {
        // min_offset anywhere from a little below the first offset to a little past the last.
        let lo = built.first_offset().unwrap_or(0) - 2;
        let hi = built.last_offset().unwrap_or(0) + 2;
        let min_offset = lo + pick.index((hi - lo + 1) as usize) as i64;
        let decoded = built.set.decode(&DecodeOptions::fetched("t", 0, min_offset)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let expected: Vec<MessageAndOffset> = built.messages().filter(|m| m.offset >= min_offset).cloned().collect();
        prop_assert_eq!(&decoded.messages, &expected);
        prop_assert_eq!(decoded.skipped, built.messages().count() - expected.len());
        prop_assert_eq!(decoded.partial_trailing_bytes, 0);
        prop_assert_eq!(decoded.next_offset(), expected.last().map(|m| m.offset + 1));
        // Top-level entries: one per plain message or wrapper, wrappers still compressed.
        prop_assert_eq!(built.set.entries().count(), built.entries.len());
        // Offsets come out ascending.
        prop_assert!(decoded.messages.windows(2).all(|w| w[0].offset < w[1].offset));
    }

    #[test]
    fn message_set_cut_anywhere_keeps_the_whole_entries(built in built_set(), pick in any::<prop::sample::Index>()) {
        let cut = pick.index(built.set.len() + 1);
        let part = MessageSet::from_bytes(built.set.as_bytes().slice(..cut));
        let whole: Vec<_> = built.entries.iter().take_while(|(end, _)| *end <= cut).collect();
        let result = part.decode(&DecodeOptions::default());
        match whole.last() {
            None if cut == 0 => prop_assert_eq!(result.unwrap(), DecodedMessages::default()),
            None => prop_assert!(matches!(result, Err(Error::MessageLargerThanFetch { fetched_bytes, .. }) if fetched_bytes == cut), "{:?}", result),
            Some((end, _)) => {
                let decoded = result.map_err(|e| TestCaseError::fail(e.to_string()))?;
                let expected: Vec<MessageAndOffset> = whole.iter().flat_map(|(_, ms)| ms.iter().cloned()).collect();
                prop_assert_eq!(decoded.messages, expected);
                prop_assert_eq!(decoded.partial_trailing_bytes, cut - end);
            }
        }
    }

    #[test]
    fn every_truncation_of_a_fetch_response_frame_fails(resp in fetch_response(), corr in any::<i32>(), cuts in vec(any::<prop::sample::Index>(), 8)) {
        let mut stream = BytesMut::new();
        encode_response(corr, 0, &resp, &mut stream).unwrap();
        let frame = split_frame(&mut stream, usize::MAX).unwrap().unwrap();
        let lens = cuts.iter().map(|i| i.index(frame.len())).chain([0, frame.len() - 1]);
        for len in lens {
            let cut = frame.slice(..len);
            prop_assert!(decode_response::<FetchRequest>(0, cut.clone()).is_err(), "frame cut to {} of {} bytes decoded", len, frame.len());
            if len >= 4 {
                let mut body = cut.slice(4..);
                prop_assert!(FetchResponse::decode(0, &mut body).is_err(), "body cut to {} bytes decoded", len - 4);
            }
        }
    }

    // ---- hostile input ----------------------------------------------------------------------

    #[test]
    fn random_bytes_never_panic_any_decoder(bytes in vec(any::<u8>(), 0..512)) {
        let bytes = Bytes::from(bytes);
        decode_everything(&bytes);
        read_set(&MessageSet::from_bytes(bytes));
    }

    #[test]
    fn random_bytes_after_a_plausible_prefix_never_panic(prefix in prop_oneof![
        // a response body with one topic "t" and one partition (Fetch-shaped)
        Just(vec![0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1]),
        // a set entry header: offset 0, size 14..40
        (14u8..40).prop_map(|n| vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, n]),
        Just(vec![]),
    ], rest in vec(any::<u8>(), 0..256)) {
        let bytes: Bytes = [prefix, rest].concat().into();
        decode_everything(&bytes);
        read_set(&MessageSet::from_bytes(bytes));
    }

    #[test]
    fn wrappers_with_garbage_values_never_panic(
        attributes in any::<i8>(),
        value in option::of(vec(any::<u8>(), 0..256)),
        offset in any::<i64>(),
    ) {
        // A message with a correct CRC, so decoding gets as far as the codec.
        let wrapper = Message { attributes, key: None, value: value.map(Bytes::from) };
        let set = MessageSet::encode(&[MessageAndOffset::new(offset, wrapper)]).unwrap();
        read_set(&set);
    }

    #[test]
    fn corrupted_compressed_wrappers_fail_or_decode_without_panic(
        codec in codec(),
        inner in vec(message(), 1..5),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in option::of(any::<prop::sample::Index>()),
    ) {
        let inner: Vec<_> = inner.into_iter().zip(0..).map(|(m, o)| MessageAndOffset::new(o, m)).collect();
        let wrapper = MessageSet::wrap(&inner, codec).unwrap();
        let mut value = wrapper.message.value.clone().unwrap().to_vec();
        for (at, byte) in edits {
            let i = at.index(value.len());
            value[i] ^= byte;
        }
        if let Some(cut) = cut {
            value.truncate(cut.index(value.len() + 1));
        }
        let corrupted = Message { value: Some(value.into()), ..wrapper.message };
        let set = MessageSet::encode(&[MessageAndOffset::new(wrapper.offset, corrupted)]).unwrap();
        read_set(&set);
    }
}

//! The FakeCluster's modern mode answering requests captured from independent clients talking to
//! a genuine Kafka 3.7.0 broker (gregor-protocol's `tests/data/kafka-3.7.0`, see its INDEX.md).
//!
//! Every captured request of an API the modern mode serves (ApiVersions, Metadata, Produce,
//! Fetch, ListOffsets, CreateTopics, InitProducerId, DeleteTopics, DescribeConfigs,
//! AlterConfigs, IncrementalAlterConfigs, CreatePartitions) is sent, in capture order, to a fresh fake
//! set up as the genuine broker was (node 1, the same topics), and the fake's answer is compared
//! field by field with the genuine one. What differs by nature is set aside: random ids (topic
//! ids, which requests naming topics by id are rewritten for; the cluster id; fetch session
//! ids), the broker's port, topics the genuine broker had and the fake does not serve
//! (`__consumer_offsets`), and for ApiVersions the APIs the fake does not serve (each API it
//! does serve must have the genuine maximum). One capture is not replayed: the genuine broker's
//! first InitProducerId answer was the transient 14 COORDINATOR_LOAD_IN_PROGRESS of a broker
//! just started (librdkafka retried; the retry is replayed).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use gregor_protocol::frame::{self, ApiKey, Request, RequestHeader};
use gregor_protocol::messages::*;
use gregor_protocol::schema::Uuid;
use gregor_protocol::Decode;
use gregor_testkit::FakeCluster;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn fixture(name: &str) -> Bytes {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../protocol/tests/data/kafka-3.7.0"));
    Bytes::from(std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}")))
}

/// Sends a captured request frame as it is and returns the answer's frame (without its size),
/// or `None` when the broker closed the connection.
async fn ask(socket: &mut TcpStream, request: &[u8]) -> Option<Bytes> {
    socket.write_all(request).await.unwrap();
    let mut size = [0u8; 4];
    tokio::time::timeout(Duration::from_secs(10), socket.read_exact(&mut size)).await.unwrap().ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    socket.read_exact(&mut body).await.ok()?;
    Some(Bytes::from(body))
}

/// One captured exchange.
struct Fixture {
    name: String,
    api_key: i16,
    request: Bytes,
    /// The genuine answer, without its size prefix.
    response: Bytes,
}

fn fixtures() -> Vec<Fixture> {
    let index: serde_json::Value = serde_json::from_slice(&fixture("index.json")).unwrap();
    index["fixtures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let mut response = fixture(row["response_file"].as_str().unwrap());
            let _ = response.split_to(4);
            Fixture {
                name: row["name"].as_str().unwrap().to_owned(),
                api_key: row["api_key"].as_i64().unwrap() as i16,
                request: fixture(row["request_file"].as_str().unwrap()),
                response,
            }
        })
        .collect()
}

/// The body of a captured request (after its header).
fn body_of(request: &Bytes) -> (RequestHeader, Bytes) {
    let mut buf = BytesMut::from(&request[..]);
    let mut body = frame::split_frame(&mut buf, 1 << 24).unwrap().unwrap();
    let header = RequestHeader::decode(&mut body).unwrap();
    (header, body)
}

fn decode_answer<R: Request>(version: i16, frame: Bytes) -> R::Response
where
    R::Response: std::fmt::Debug,
{
    frame::decode_response::<R>(version, frame).unwrap().1
}

/// The fake's and the genuine answer, decoded, as Debug text to compare.
fn pair<R: Request>(v: i16, ours: Bytes, theirs: Bytes) -> (String, String)
where
    R::Response: std::fmt::Debug,
{
    (format!("{:?}", decode_answer::<R>(v, ours)), format!("{:?}", decode_answer::<R>(v, theirs)))
}

/// Topic names by the genuine broker's topic ids, from every captured Metadata answer.
fn genuine_topic_names(all: &[Fixture]) -> HashMap<Uuid, String> {
    let mut names = HashMap::new();
    for fx in all.iter().filter(|f| f.api_key == ApiKey::Metadata.code()) {
        let (header, _) = body_of(&fx.request);
        let answer = decode_answer::<MetadataRequest>(header.api_version, fx.response.clone());
        for t in answer.topics {
            if let Some(name) = t.topic {
                names.insert(t.topic_id, name);
            }
        }
    }
    names
}

fn normalize_metadata(mut m: MetadataResponse) -> String {
    for b in &mut m.brokers {
        b.port = 0;
    }
    m.cluster_id = m.cluster_id.map(|_| String::new());
    m.topics.retain(|t| t.topic.as_deref() != Some("__consumer_offsets"));
    for t in &mut m.topics {
        t.topic_id = Uuid::ZERO;
        t.partitions.sort_by_key(|p| p.partition);
    }
    m.topics.sort_by(|a, b| a.topic.cmp(&b.topic));
    format!("{m:?}")
}

fn normalize_fetch(mut f: FetchResponse, names: &HashMap<Uuid, String>) -> String {
    f.session_id = 0;
    // the records, byte for byte (their Debug form does not show them)
    let mut records = String::new();
    for t in &mut f.topics {
        if !t.topic_id.is_zero() {
            t.topic = names.get(&t.topic_id).cloned().unwrap_or_default();
        }
        t.topic_id = Uuid::ZERO;
        for p in &t.partitions {
            records.push_str(&format!(" {}/{}: {:02x?}", t.topic, p.partition, &p.message_set.as_bytes()[..]));
        }
    }
    format!("{f:?}{records}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_served_capture_is_answered_as_the_genuine_broker_did() {
    let all = fixtures();
    let genuine_names = genuine_topic_names(&all);
    let cluster = FakeCluster::modern().brokers(1).first_broker_id(1).start().await.unwrap();
    // the topics the capture's start-up script created
    cluster.create_topic("t", 3, 1).await.unwrap();
    for topic in ["c-none", "c-gzip", "c-snappy", "c-lz4", "c-zstd", "idem", "empty", "kp"] {
        cluster.create_topic(topic, 1, 1).await.unwrap();
    }
    let mut socket = TcpStream::connect(cluster.broker_addr(1).unwrap()).await.unwrap();
    // the APIs the fake advertises are the ones replayed
    let served: Vec<i16> = {
        let request = fixture("api_versions_v3_connect_1.req.bin");
        let answer = ask(&mut socket, &request).await.expect("an ApiVersions answer");
        decode_answer::<ApiVersionsRequest>(3, answer).api_keys.iter().map(|a| a.api_key).collect()
    };
    for api in [0, 1, 2, 3, 18, 19, 20, 22, 32, 33, 37, 44] {
        assert!(served.contains(&api), "API {api} served: {served:?}");
    }
    let mut replayed = Vec::new();
    let mut failures = Vec::new();
    // member ids the fake gave out in place of the genuine broker's (same length: the client id
    // and a UUID), swapped into later requests and back in the fake's answers
    let mut member_ids: Vec<(String, String)> = Vec::new();
    let swap = |bytes: &[u8], ids: &[(String, String)]| -> Vec<u8> {
        let mut out = bytes.to_vec();
        for (genuine, ours) in ids {
            let (g, o) = (genuine.as_bytes(), ours.as_bytes());
            let mut i = 0;
            while i + g.len() <= out.len() {
                if &out[i..i + g.len()] == g {
                    out[i..i + g.len()].copy_from_slice(o);
                    i += g.len();
                } else {
                    i += 1;
                }
            }
        }
        out
    };
    for fx in all.iter().filter(|f| served.contains(&f.api_key)) {
        if fx.name == "init_producer_id_v4_produce_idempotent_1" {
            continue;
        }
        let (header, body) = body_of(&fx.request);
        let v = header.api_version;
        // requests naming topics by id name the fake's ids instead
        let request = match header.api_key {
            ApiKey::Fetch if v >= 13 => {
                let mut req = FetchRequest::decode(v, &mut body.clone()).unwrap();
                for t in &mut req.topics {
                    let name = &genuine_names[&t.topic_id];
                    t.topic_id = cluster.topic_id(name).unwrap_or_else(|| panic!("{}: no topic {name}", fx.name));
                }
                let mut out = BytesMut::new();
                frame::encode_request(&header, &req, &mut out).unwrap();
                out.freeze()
            }
            _ => Bytes::from(swap(&fx.request, &member_ids)),
        };
        let Some(answer) = ask(&mut socket, &request).await else {
            failures.push(format!("{}: the fake closed the connection", fx.name));
            socket = TcpStream::connect(cluster.broker_addr(1).unwrap()).await.unwrap();
            continue;
        };
        let genuine = fx.response.clone();
        let (ours, theirs) = match header.api_key {
            ApiKey::ApiVersions if v > 3 => (format!("{answer:?}"), format!("{genuine:?}")),
            ApiKey::ApiVersions => {
                let ours = decode_answer::<ApiVersionsRequest>(v, answer);
                let theirs = decode_answer::<ApiVersionsRequest>(v, genuine);
                for a in &ours.api_keys {
                    let g = theirs.api_keys.iter().find(|g| g.api_key == a.api_key);
                    let ok = g.is_some_and(|g| g.max_version == a.max_version && g.min_version <= a.min_version);
                    if !ok {
                        failures.push(format!(
                            "{}: API {} {}-{} vs genuine {g:?}",
                            fx.name, a.api_key, a.min_version, a.max_version
                        ));
                    }
                }
                (
                    format!("{:?}", (ours.error_code, &ours.supported_features, &ours.finalized_features)),
                    format!("{:?}", (theirs.error_code, &theirs.supported_features, &theirs.finalized_features)),
                )
            }
            ApiKey::Metadata => (
                normalize_metadata(decode_answer::<MetadataRequest>(v, answer)),
                normalize_metadata(decode_answer::<MetadataRequest>(v, genuine)),
            ),
            ApiKey::Fetch => {
                let ours_names: HashMap<Uuid, String> =
                    ["t", "c-none", "c-gzip", "c-snappy", "c-lz4", "c-zstd", "idem", "empty", "kp"]
                        .iter()
                        .filter_map(|n| cluster.topic_id(n).map(|id| (id, n.to_string())))
                        .collect();
                (
                    normalize_fetch(decode_answer::<FetchRequest>(v, answer), &ours_names),
                    normalize_fetch(decode_answer::<FetchRequest>(v, genuine), &genuine_names),
                )
            }
            ApiKey::Produce => pair::<ProduceRequest>(v, answer, genuine),
            ApiKey::Offsets => pair::<OffsetsRequest>(v, answer, genuine),
            ApiKey::CreateTopics => {
                let clear = |mut r: CreateTopicsResponse| {
                    for t in &mut r.topics {
                        t.topic_id = Uuid::ZERO;
                    }
                    format!("{r:?}")
                };
                (
                    clear(decode_answer::<CreateTopicsRequest>(v, answer)),
                    clear(decode_answer::<CreateTopicsRequest>(v, genuine)),
                )
            }
            ApiKey::InitProducerId => pair::<InitProducerIdRequest>(v, answer, genuine),
            ApiKey::ConsumerMetadata => {
                let clear = |mut r: FindCoordinatorResponse| {
                    r.port = 0;
                    for c in &mut r.coordinators {
                        c.port = 0;
                    }
                    format!("{r:?}")
                };
                (
                    clear(decode_answer::<FindCoordinatorRequest>(v, answer)),
                    clear(decode_answer::<FindCoordinatorRequest>(v, genuine)),
                )
            }
            ApiKey::JoinGroup => {
                let ours = decode_answer::<JoinGroupRequest>(v, answer);
                let theirs = decode_answer::<JoinGroupRequest>(v, genuine);
                if ours.member_id != theirs.member_id && ours.member_id.len() == theirs.member_id.len() {
                    member_ids.push((theirs.member_id.clone(), ours.member_id.clone()));
                }
                (format!("{ours:?}"), format!("{theirs:?}"))
            }
            ApiKey::SyncGroup => pair::<SyncGroupRequest>(v, answer, genuine),
            ApiKey::Heartbeat => pair::<HeartbeatRequest>(v, answer, genuine),
            ApiKey::LeaveGroup => pair::<LeaveGroupRequest>(v, answer, genuine),
            ApiKey::OffsetCommit => {
                // the broker answers topics in its own order (INDEX.md): compared sorted
                let sorted = |mut r: OffsetCommitResponse| {
                    r.topics.sort_by(|a, b| a.topic.cmp(&b.topic));
                    format!("{r:?}")
                };
                (
                    sorted(decode_answer::<OffsetCommitRequest>(v, answer)),
                    sorted(decode_answer::<OffsetCommitRequest>(v, genuine)),
                )
            }
            ApiKey::OffsetFetch => {
                let sorted = |mut r: OffsetFetchResponse| {
                    r.topics.sort_by(|a, b| a.topic.cmp(&b.topic));
                    for g in &mut r.groups {
                        g.topics.sort_by(|a, b| a.topic.cmp(&b.topic));
                    }
                    format!("{r:?}")
                };
                (
                    sorted(decode_answer::<OffsetFetchRequest>(v, answer)),
                    sorted(decode_answer::<OffsetFetchRequest>(v, genuine)),
                )
            }
            ApiKey::DescribeGroups => pair::<DescribeGroupsRequest>(v, answer, genuine),
            ApiKey::ListGroups => pair::<ListGroupsRequest>(v, answer, genuine),
            ApiKey::DeleteTopics => {
                // v6+ answers name each topic's id, random per run
                let clear = |mut r: DeleteTopicsResponse| {
                    for t in &mut r.responses {
                        t.topic_id = Uuid::ZERO;
                    }
                    format!("{r:?}")
                };
                (
                    clear(decode_answer::<DeleteTopicsRequest>(v, answer)),
                    clear(decode_answer::<DeleteTopicsRequest>(v, genuine)),
                )
            }
            ApiKey::DescribeConfigs => pair::<DescribeConfigsRequest>(v, answer, genuine),
            ApiKey::AlterConfigs => pair::<AlterConfigsRequest>(v, answer, genuine),
            ApiKey::IncrementalAlterConfigs => pair::<IncrementalAlterConfigsRequest>(v, answer, genuine),
            ApiKey::CreatePartitions => pair::<CreatePartitionsRequest>(v, answer, genuine),
            other => panic!("{}: {other:?} is not served", fx.name),
        };
        // the fake's member ids read as the genuine broker's
        let mut ours = ours;
        for (genuine, fake) in &member_ids {
            ours = ours.replace(fake.as_str(), genuine);
        }
        if ours != theirs {
            failures.push(format!("{}:\n  fake:    {ours}\n  genuine: {theirs}", fx.name));
        }
        replayed.push(fx.name.clone());
    }
    // every capture of the APIs served: the data path's, the group coordinator's and the admin APIs'
    assert!(replayed.len() >= 100, "replayed {}: {replayed:?}", replayed.len());
    for api in [
        "join_group",
        "sync_group",
        "heartbeat",
        "leave_group",
        "offset_commit",
        "offset_fetch",
        "find_coordinator",
        "describe_groups",
        "list_groups",
    ] {
        assert!(replayed.iter().any(|n| n.starts_with(api)), "{api} replayed: {replayed:?}");
    }
    println!("replayed {} captures", replayed.len());
    for admin in [
        "describe_configs_v1_admin",
        "alter_configs_v2_admin",
        "incremental_alter_configs_v1_admin",
        "create_partitions_v2_admin",
        "delete_topics_v4_admin",
    ] {
        assert!(replayed.iter().any(|r| r == admin), "{admin} replayed");
    }
    assert!(failures.is_empty(), "{} of {} answers differ:\n{}", failures.len(), replayed.len(), failures.join("\n"));
}

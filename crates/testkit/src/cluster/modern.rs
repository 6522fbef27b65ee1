//! The modern mode: what a KRaft broker of Kafka 3.7 to 4.x answers, for the APIs the fake
//! serves in that mode (see [`SERVED`]). The data path (Produce, Fetch) is shared with the
//! 0.8.2 mode in `handlers.rs`; this file has the requests that only the modern mode serves or
//! answers differently: ApiVersions, Metadata, ListOffsets, CreateTopics, InitProducerId, and
//! the SASL exchange of a connection.
//!
//! Facts from the genuine Kafka 3.7.0 captures (gregor-protocol's `tests/data/kafka-3.7.0`):
//! an ApiVersions version the broker does not know is answered in a v0 body with error 35 and
//! only ApiVersions' own range; Metadata v10+ carries topic ids and, for an unknown topic
//! being auto-created, error 3 (not ZooKeeper-era 5); an out-of-range Fetch answers
//! high watermark, last stable offset and log start offset -1 with null aborted transactions;
//! a Produce failure answers offset -1 and log start offset -1.

use std::collections::{BTreeMap, HashMap};

use bytes::{Bytes, BytesMut};
use gregor_protocol::frame::{encode_response_for, ApiKey, Request, RequestHeader};
use gregor_protocol::messages::*;
use gregor_protocol::schema::{RedactedBytes, Uuid};
use gregor_protocol::ErrorCode;
use rand::Rng;

use super::codes::*;
use super::handlers::{BrokerCtx, Reply};
use super::kraft::{self, NotCreated};
use super::records;
use super::topic_configs;
use crate::sasl::{Mechanism, SaslServer, Step};

/// The modern mode's settings (see [`crate::FakeClusterBuilder::modern`]).
#[derive(Debug, Clone)]
pub(crate) struct Modern {
    /// The cluster id Metadata v2+ names.
    pub(crate) cluster_id: String,
    /// SASL required on every connection, if set.
    pub(crate) sasl: Option<SaslUsers>,
}

/// The mechanisms a SASL listener offers and the users it knows.
#[derive(Debug, Clone)]
pub(crate) struct SaslUsers {
    pub(crate) mechanisms: Vec<Mechanism>,
    pub(crate) users: HashMap<String, String>,
}

/// The APIs the modern mode serves: from the oldest version Kafka 4.0 still accepts (KIP-896)
/// to the newest Kafka 3.7.0 advertised (both no higher than gregor's codec reads). The SASL
/// APIs are added when the listener requires SASL.
pub(crate) const SERVED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 10),
    (ApiKey::Fetch, 4, 16),
    (ApiKey::Offsets, 1, 8),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::InitProducerId, 0, 4),
];

const SASL_APIS: &[(ApiKey, i16, i16)] = &[(ApiKey::SaslHandshake, 1, 1), (ApiKey::SaslAuthenticate, 0, 2)];

/// The versions this broker advertises, as ApiVersions lists them: [`SERVED`], the group
/// coordinator's ([`super::groups::SERVED`]) and the admin APIs' ([`super::admin::SERVED`]).
pub(crate) fn advertised(modern: &Modern) -> Vec<(ApiKey, i16, i16)> {
    let sasl = if modern.sasl.is_some() { SASL_APIS } else { &[] };
    let mut all: Vec<(ApiKey, i16, i16)> =
        SERVED.iter().chain(super::groups::SERVED).chain(super::admin::SERVED).chain(sasl).copied().collect();
    all.sort_by_key(|(api, _, _)| api.code());
    all.into_iter().map(|(api, min, max)| (api, min, api.versions().map_or(max, |codec| max.min(codec.max)))).collect()
}

/// What the modern mode makes of a request frame before serving it.
#[derive(Debug)]
pub(crate) enum Decoded {
    /// Serve it.
    Request(AnyRequest),
    /// Write this frame instead (an ApiVersions version the broker does not know).
    Answer(Bytes),
    /// Close the connection (an API or version not served, a body that does not parse).
    Close,
}

/// Decodes a request of a served API and version. Bytes after the body are ignored, as Kafka
/// ignores them (librdkafka's all-topics Metadata v12 carries three).
pub(crate) fn decode_request(modern: &Modern, header: &RequestHeader, mut body: Bytes) -> Decoded {
    let served = advertised(modern);
    let Some(&(_, min, max)) = served.iter().find(|(api, _, _)| *api == header.api_key) else {
        return Decoded::Close;
    };
    let v = header.api_version;
    if header.api_key == ApiKey::ApiVersions && v > max {
        let body = ApiVersionsResponse {
            error_code: UNSUPPORTED_VERSION,
            ..ApiVersionsResponse::listing([(ApiKey::ApiVersions.code(), min, max)])
        };
        let mut out = BytesMut::new();
        return match encode_response_for::<ApiVersionsRequest>(header.correlation_id, 0, &body, &mut out) {
            Ok(()) => Decoded::Answer(out.freeze()),
            Err(_) => Decoded::Close,
        };
    }
    if v < min || v > max {
        return Decoded::Close;
    }
    fn read<R: Request>(v: i16, body: &mut Bytes, wrap: fn(R) -> AnyRequest) -> Option<AnyRequest> {
        R::decode(v, body).ok().map(wrap)
    }
    let b = &mut body;
    let request = match header.api_key {
        ApiKey::Produce => read(v, b, AnyRequest::Produce),
        ApiKey::Fetch => read(v, b, AnyRequest::Fetch),
        ApiKey::Offsets => read(v, b, AnyRequest::Offsets),
        ApiKey::Metadata => read(v, b, AnyRequest::Metadata),
        ApiKey::ApiVersions => read(v, b, AnyRequest::ApiVersions),
        ApiKey::CreateTopics => read(v, b, AnyRequest::CreateTopics),
        ApiKey::InitProducerId => read(v, b, AnyRequest::InitProducerId),
        ApiKey::SaslHandshake => read(v, b, AnyRequest::SaslHandshake),
        ApiKey::SaslAuthenticate => read(v, b, AnyRequest::SaslAuthenticate),
        ApiKey::OffsetCommit => read(v, b, AnyRequest::OffsetCommit),
        ApiKey::OffsetFetch => read(v, b, AnyRequest::OffsetFetch),
        ApiKey::ConsumerMetadata => read(v, b, AnyRequest::ConsumerMetadata),
        ApiKey::JoinGroup => read(v, b, AnyRequest::JoinGroup),
        ApiKey::Heartbeat => read(v, b, AnyRequest::Heartbeat),
        ApiKey::LeaveGroup => read(v, b, AnyRequest::LeaveGroup),
        ApiKey::SyncGroup => read(v, b, AnyRequest::SyncGroup),
        ApiKey::DescribeGroups => read(v, b, AnyRequest::DescribeGroups),
        ApiKey::ListGroups => read(v, b, AnyRequest::ListGroups),
        ApiKey::DeleteTopics => read(v, b, AnyRequest::DeleteTopics),
        ApiKey::DescribeConfigs => read(v, b, AnyRequest::DescribeConfigs),
        ApiKey::AlterConfigs => read(v, b, AnyRequest::AlterConfigs),
        ApiKey::CreatePartitions => read(v, b, AnyRequest::CreatePartitions),
        ApiKey::IncrementalAlterConfigs => read(v, b, AnyRequest::IncrementalAlterConfigs),
        _ => None,
    };
    request.map_or(Decoded::Close, Decoded::Request)
}

/// A response frame for `R` in the request's version.
pub(crate) fn frame_for<R: Request>(header: &RequestHeader, body: &R::Response) -> Reply {
    let mut buf = BytesMut::new();
    match encode_response_for::<R>(header.correlation_id, header.api_version, body, &mut buf) {
        Ok(()) => Reply::Frame(buf),
        Err(e) => {
            tracing::error!(error = %e, "fake broker could not encode its response");
            Reply::Close
        }
    }
}

/// ApiVersions: the served versions, and Kafka 3.7's `metadata.version` feature.
pub(crate) fn api_versions(modern: &Modern, header: &RequestHeader) -> Reply {
    let mut body =
        ApiVersionsResponse::listing(advertised(modern).into_iter().map(|(api, min, max)| (api.code(), min, max)));
    if header.api_version >= 3 {
        body.supported_features = vec![SupportedFeatureKey {
            name: "metadata.version".into(),
            min_version: 1,
            max_version: 19,
            ..Default::default()
        }];
        body.finalized_features_epoch = 1;
        body.finalized_features = vec![FinalizedFeatureKey {
            name: "metadata.version".into(),
            max_version_level: 19,
            min_version_level: 19,
            ..Default::default()
        }];
    }
    frame_for::<ApiVersionsRequest>(header, &body)
}

/// Metadata, as a KRaft broker's metadata cache answers it.
pub(crate) fn metadata(ctx: &BrokerCtx, modern: &Modern, version: i16, req: &MetadataRequest) -> MetadataResponse {
    let cfg = &ctx.shared.config;
    let mut to_create = Vec::new();
    let response = {
        let st = ctx.shared.state();
        let brokers = st
            .brokers
            .iter()
            .filter(|(id, _)| st.is_live(**id))
            .map(|(id, b)| BrokerMetadata {
                node_id: *id,
                host: cfg.host.clone(),
                port: i32::from(b.port),
                ..Default::default()
            })
            .collect();
        // asked for by name, or by id (v10+)
        let mut asked: Vec<(Option<String>, Uuid)> = Vec::new();
        if req.wants_all_topics(version) {
            asked.extend(st.topics.iter().map(|(n, t)| (Some(n.clone()), t.id)));
        } else {
            for t in req.topics.iter().flatten() {
                match &t.topic {
                    Some(name) => asked.push((Some(name.clone()), Uuid::ZERO)),
                    None => asked.push((st.topic_named_by(t.topic_id).map(str::to_owned), t.topic_id)),
                }
            }
        }
        let auto_create = cfg.auto_create_topics_enable && (version < 4 || req.allow_auto_topic_creation);
        let topics = asked
            .into_iter()
            .map(|(name, id)| {
                let Some((name, topic)) = name.as_ref().and_then(|n| st.topics.get(n).map(|t| (n.clone(), t))) else {
                    let unknown =
                        if name.is_none() { UNKNOWN_TOPIC_ID } else { ErrorCode::UnknownTopicOrPartition.code() };
                    // KRaft: the first answer says 3 while the controller creates the topic
                    if let Some(n) = &name {
                        if auto_create && gregor_zk::paths::validate_topic_name(n).is_ok() {
                            to_create.push(n.clone());
                        }
                    }
                    // a topic asked for by an id nobody knows has no name (null from v12)
                    let name = name.unwrap_or_default();
                    let mut t = TopicMetadata::new(name.clone(), unknown, vec![]);
                    if version >= 12 && name.is_empty() {
                        t.topic = None;
                    }
                    if version >= 10 {
                        t.topic_id = id;
                    }
                    return t;
                };
                let partitions = topic
                    .partitions
                    .iter()
                    .map(|(pid, p)| {
                        let live_leader = st.is_live(p.leader);
                        let offline: Vec<i32> = p.replicas.iter().copied().filter(|r| !st.is_live(*r)).collect();
                        // v0 lists live replicas only and says so with 9 (Kafka's
                        // errorUnavailableEndpoints); later versions list them all
                        let (replicas, isr, replica_error) = if version == 0 {
                            let live = |rs: &[i32]| rs.iter().copied().filter(|r| st.is_live(*r)).collect::<Vec<_>>();
                            let (r, i) = (live(&p.replicas), live(&p.isr));
                            let short = r.len() < p.replicas.len() || i.len() < p.isr.len();
                            (r, i, if short { ErrorCode::ReplicaNotAvailable.code() } else { 0 })
                        } else {
                            (p.replicas.clone(), p.isr.clone(), 0)
                        };
                        PartitionMetadata {
                            error_code: if live_leader { replica_error } else { ErrorCode::LeaderNotAvailable.code() },
                            partition: *pid,
                            leader: if live_leader { p.leader } else { -1 },
                            leader_epoch: if version >= 7 { p.leader_epoch } else { -1 },
                            replicas,
                            isr,
                            offline_replicas: if version >= 5 { offline } else { Vec::new() },
                            ..Default::default()
                        }
                    })
                    .collect();
                let internal = name == super::config::OFFSETS_TOPIC;
                let mut t = TopicMetadata::new(name, 0, partitions);
                if version >= 10 {
                    t.topic_id = topic.id;
                }
                t.is_internal = version >= 1 && internal;
                t
            })
            .collect();
        MetadataResponse {
            brokers,
            cluster_id: (version >= 2).then(|| modern.cluster_id.clone()),
            controller_id: if version >= 1 { st.controller.unwrap_or(-1) } else { -1 },
            topics,
            ..Default::default()
        }
    };
    // KRaft: the first answer says 3 while the controller creates the topic; later ones name it
    for name in to_create {
        let cfg = &ctx.shared.config;
        match kraft::create_topic(
            &ctx.shared,
            &name,
            cfg.num_partitions,
            cfg.default_replication_factor,
            None,
            BTreeMap::new(),
        ) {
            Ok(()) | Err(NotCreated::Exists) => {}
            Err(NotCreated::Invalid(e)) => {
                tracing::warn!(topic = %name, error = %e, "fake broker could not auto-create a topic")
            }
        }
    }
    response
}

/// ListOffsets v1+: latest (-1), earliest (-2), the largest timestamp (-3, v7+) or the first
/// record at or after a time.
pub(crate) fn list_offsets(ctx: &BrokerCtx, version: i16, req: &OffsetsRequest) -> OffsetsResponse {
    let st = ctx.shared.state();
    let topics = req
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut out = OffsetsResponsePartition { partition: p.partition, ..Default::default() };
                    let found = super::handlers::leader_check(&st, ctx.id, &t.topic, p.partition)
                        .map_err(|c| c.code())
                        .and_then(|()| {
                            let part =
                                st.partition(&t.topic, p.partition).ok_or(ErrorCode::UnknownTopicOrPartition.code())?;
                            if version >= 4 && p.current_leader_epoch >= 0 {
                                if p.current_leader_epoch < part.leader_epoch {
                                    return Err(FENCED_LEADER_EPOCH);
                                }
                                if p.current_leader_epoch > part.leader_epoch {
                                    return Err(UNKNOWN_LEADER_EPOCH);
                                }
                            }
                            let log = part.leader_log().ok_or(ErrorCode::NotLeaderForPartition.code())?;
                            let records = || log.read(0, usize::MAX, part.hw);
                            Ok(match p.time {
                                -1 => (-1, part.hw, part.leader_epoch),
                                -2 => (-1, 0, part.leader_epoch),
                                -3 if version >= 7 => records::max_timestamp(records())
                                    .map_or((-1, -1, -1), |(o, ts)| (ts, o, part.leader_epoch)),
                                time => records::offset_for_time(records(), time)
                                    .map_or((-1, -1, -1), |(o, ts)| (ts, o, part.leader_epoch)),
                            })
                        });
                    match found {
                        Ok((timestamp, offset, epoch)) => {
                            out.timestamp = timestamp;
                            out.offset = offset;
                            if version >= 4 {
                                out.leader_epoch = epoch;
                            }
                        }
                        Err(code) => out.error_code = code,
                    }
                    out
                })
                .collect();
            OffsetsResponseTopic::new(t.topic.clone(), partitions)
        })
        .collect();
    OffsetsResponse { topics, ..Default::default() }
}

/// InitProducerId without a transactional id: a new producer id at epoch 0, or (v3+, KIP-360)
/// the same id at the next epoch for a producer that names its current one. Transactions are
/// not served: a transactional id is answered 15 COORDINATOR_NOT_AVAILABLE.
pub(crate) fn init_producer_id(ctx: &BrokerCtx, req: &InitProducerIdRequest) -> InitProducerIdResponse {
    if req.transactional_id.is_some() {
        return InitProducerIdResponse {
            error_code: COORDINATOR_NOT_AVAILABLE,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        };
    }
    let mut st = ctx.shared.state();
    let (producer_id, producer_epoch) =
        if req.producer_id >= 0 && req.producer_epoch >= 0 && req.producer_epoch < i16::MAX - 1 {
            (req.producer_id, req.producer_epoch + 1)
        } else {
            let id = st.next_producer_id;
            st.next_producer_id += 1;
            (id, 0)
        };
    InitProducerIdResponse { producer_id, producer_epoch, ..Default::default() }
}

/// CreateTopics, as a KRaft controller answers it (at once; `timeout_ms` is not waited). A
/// config Kafka 3.7 does not know, or a value it refuses, answers 40 INVALID_CONFIG; v5+ answers
/// list every config of the new topic (by name) with its value and source.
pub(crate) fn create_topics(ctx: &BrokerCtx, version: i16, req: &CreateTopicsRequest) -> CreateTopicsResponse {
    let cfg = &ctx.shared.config;
    let live = {
        let st = ctx.shared.state();
        st.brokers.keys().filter(|b| st.is_live(**b)).count() as i32
    };
    let topics = req
        .topics
        .iter()
        .map(|t| {
            let mut out = CreatableTopicResult { name: t.name.clone(), ..Default::default() };
            let partitions = if t.num_partitions == -1 { cfg.num_partitions } else { t.num_partitions };
            let rf = if t.replication_factor == -1 { cfg.default_replication_factor } else { i32::from(t.replication_factor) };
            let assignment: Option<BTreeMap<i32, Vec<i32>>> = (!t.assignments.is_empty())
                .then(|| t.assignments.iter().map(|a| (a.partition_index, a.broker_ids.clone())).collect());
            let config: BTreeMap<String, String> =
                t.configs.iter().filter_map(|c| c.value.clone().map(|v| (c.name.clone(), v))).collect();
            let exists = ctx.shared.state().topics.contains_key(&t.name);
            let bad_config = config.iter().find_map(|(k, v)| topic_configs::check(k, v).err());
            let refused = if exists {
                Some((TOPIC_ALREADY_EXISTS, format!("Topic '{}' already exists.", t.name)))
            } else if let Err(e) = gregor_zk::paths::validate_topic_name(&t.name) {
                Some((INVALID_TOPIC, e.to_string()))
            } else if assignment.is_none() && partitions < 1 {
                Some((INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.".into()))
            } else if assignment.is_none() && (rf < 1 || rf > live) {
                Some((
                    INVALID_REPLICATION_FACTOR,
                    format!(
                        "Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached because only {live} broker(s) are registered."
                    ),
                ))
            } else if let Some(why) = bad_config {
                Some((INVALID_CONFIG, why))
            } else if req.validate_only {
                None
            } else {
                match kraft::create_topic(&ctx.shared, &t.name, partitions, rf, assignment.clone(), config.clone()) {
                    Ok(()) => None,
                    Err(NotCreated::Exists) => Some((TOPIC_ALREADY_EXISTS, format!("Topic '{}' already exists.", t.name))),
                    Err(NotCreated::Invalid(e)) => Some((ErrorCode::InvalidTopic.code(), e)),
                }
            };
            match refused {
                Some((code, message)) => {
                    out.error_code = code;
                    out.error_message = Some(message);
                }
                None if version >= 5 => {
                    let st = ctx.shared.state();
                    let topic = st.topics.get(&t.name);
                    if version >= 7 {
                        out.topic_id = topic.map_or(Uuid::ZERO, |t| t.id);
                    }
                    out.num_partitions = topic.map_or(partitions, |t| t.partitions.len() as i32);
                    out.replication_factor = topic
                        .and_then(|t| t.partitions.values().next())
                        .map_or(rf, |p| p.replicas.len() as i32) as i16;
                    // every config of the topic, by name, as a KRaft controller lists them
                    let mut all = topic_configs::describe_topic(cfg, &config);
                    all.sort_by_key(|d| d.name);
                    out.configs = Some(
                        all.into_iter()
                            .map(|d| CreatableTopicConfigs {
                                name: d.name.to_owned(),
                                value: Some(d.value),
                                read_only: d.read_only,
                                config_source: d.source,
                                ..Default::default()
                            })
                            .collect(),
                    );
                }
                None => {}
            }
            if version < 1 {
                out.error_message = None;
            }
            out
        })
        .collect();
    CreateTopicsResponse { topics, ..Default::default() }
}

/// Where a connection stands with SASL (a listener that requires it).
#[derive(Debug)]
pub(crate) enum SaslState {
    /// No SASL on this listener, or the client authenticated.
    Open,
    /// Waiting for SaslHandshake.
    Handshake,
    /// Handshake done; SaslAuthenticate exchanges the mechanism's messages.
    Authenticating(Box<SaslServer>),
}

/// What the SASL gate makes of a request on a connection that has not authenticated.
#[derive(Debug)]
pub(crate) enum Gate {
    /// Serve it as usual (ApiVersions; anything once authenticated).
    Pass,
    /// Write this and go on.
    Answer(Reply),
    /// Write this and close the connection (a failed authentication).
    AnswerThenClose(Reply),
    /// Close without answering (a request Kafka does not allow before authentication).
    Close,
}

/// The SASL gate of a listener that requires SASL: ApiVersions, then SaslHandshake v1 naming an
/// offered mechanism, then SaslAuthenticate until the mechanism is done; anything else before
/// that closes the connection, as Kafka's `SaslServerAuthenticator` does.
pub(crate) fn sasl_gate(
    users: &SaslUsers,
    state: &mut SaslState,
    header: &RequestHeader,
    request: &AnyRequest,
) -> Gate {
    match (&mut *state, request) {
        (SaslState::Open, AnyRequest::SaslHandshake(_) | AnyRequest::SaslAuthenticate(_)) => Gate::Close,
        (SaslState::Open, _) | (_, AnyRequest::ApiVersions(_)) => Gate::Pass,
        (SaslState::Handshake, AnyRequest::SaslHandshake(r)) => {
            let offered: Vec<String> = users.mechanisms.iter().map(|m| m.name().to_owned()).collect();
            let chosen = Mechanism::from_name(&r.mechanism).filter(|m| users.mechanisms.contains(m));
            let error_code = match chosen {
                Some(m) => {
                    *state = SaslState::Authenticating(Box::new(SaslServer::new(m, users.users.clone())));
                    0
                }
                None => UNSUPPORTED_SASL_MECHANISM,
            };
            Gate::Answer(frame_for::<SaslHandshakeRequest>(
                header,
                &SaslHandshakeResponse { error_code, mechanisms: offered, ..Default::default() },
            ))
        }
        (SaslState::Authenticating(server), AnyRequest::SaslAuthenticate(r)) => {
            let mut rng = rand::rng();
            let nonce: String = (0..24).map(|_| char::from(rng.random_range(b'a'..=b'z'))).collect();
            let salt: [u8; 16] = rng.random();
            let answer = |error_code: i16, message: Option<String>, bytes: Vec<u8>| {
                frame_for::<SaslAuthenticateRequest>(
                    header,
                    &SaslAuthenticateResponse {
                        error_code,
                        error_message: message,
                        auth_bytes: RedactedBytes(Bytes::from(bytes)),
                        ..Default::default()
                    },
                )
            };
            match server.step(&r.auth_bytes.0, &nonce, &salt) {
                Step::Continue(bytes) => Gate::Answer(answer(0, None, bytes)),
                Step::Done { answer: bytes, user } => {
                    tracing::debug!(user = %user, "fake broker: SASL authenticated");
                    *state = SaslState::Open;
                    Gate::Answer(answer(0, None, bytes))
                }
                Step::Failed(message) => {
                    Gate::AnswerThenClose(answer(SASL_AUTHENTICATION_FAILED, Some(message), Vec::new()))
                }
            }
        }
        _ => Gate::Close,
    }
}

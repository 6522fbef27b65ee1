//! What a broker answers to each request, as Kafka 0.8.2's `KafkaApis` does.

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use gregor_protocol::frame::{encode_response_of, RequestHeader};
use gregor_protocol::messages::*;
use gregor_protocol::{Encode, ErrorCode};
use gregor_zk::{paths, payloads, ZkClient};

use super::codes::*;
use super::config::OFFSETS_TOPIC;
use super::log::validate_and_assign;
use super::modern;
use super::placement::offsets_partition_for;
use super::records;
use super::state::{Shared, State};
use super::topics;

/// The broker a request was sent to.
#[derive(Debug, Clone)]
pub(crate) struct BrokerCtx {
    pub(crate) id: i32,
    pub(crate) shared: Arc<Shared>,
    /// The broker's ZooKeeper session (none in the modern mode).
    pub(crate) zk: Option<ZkClient>,
}

/// What to do once a request is handled.
#[derive(Debug)]
pub(crate) enum Reply {
    /// Send this response frame.
    Frame(BytesMut),
    /// Send nothing (acks=0).
    Nothing,
    /// Close the connection (acks=0 failed, as 0.8.2 does).
    Close,
}

/// The response frame to `header`'s request: header v0, or v1 for a flexible version.
fn frame<B: Encode>(header: &RequestHeader, body: &B) -> Reply {
    let mut buf = BytesMut::new();
    match encode_response_of(header.api_key, header.correlation_id, header.api_version, body, &mut buf) {
        Ok(()) => Reply::Frame(buf),
        Err(e) => {
            tracing::error!(error = %e, "fake broker could not encode its response");
            Reply::Close
        }
    }
}

/// Handles one request.
pub(crate) async fn handle(ctx: &BrokerCtx, header: &RequestHeader, request: AnyRequest) -> Reply {
    if let Some(modern) = &ctx.shared.modern {
        let v = header.api_version;
        return match request {
            AnyRequest::Produce(r) => produce(ctx, header, r).await,
            AnyRequest::Fetch(r) => fetch(ctx, header, r).await,
            AnyRequest::Offsets(r) => modern::frame_for::<OffsetsRequest>(header, &modern::list_offsets(ctx, v, &r)),
            AnyRequest::Metadata(r) => {
                modern::frame_for::<MetadataRequest>(header, &modern::metadata(ctx, modern, v, &r))
            }
            AnyRequest::ApiVersions(_) => modern::api_versions(modern, header),
            AnyRequest::CreateTopics(r) => {
                modern::frame_for::<CreateTopicsRequest>(header, &modern::create_topics(ctx, v, &r))
            }
            AnyRequest::InitProducerId(r) => {
                modern::frame_for::<InitProducerIdRequest>(header, &modern::init_producer_id(ctx, &r))
            }
            AnyRequest::ConsumerMetadata(_)
            | AnyRequest::JoinGroup(_)
            | AnyRequest::SyncGroup(_)
            | AnyRequest::Heartbeat(_)
            | AnyRequest::LeaveGroup(_)
            | AnyRequest::OffsetCommit(_)
            | AnyRequest::OffsetFetch(_)
            | AnyRequest::DescribeGroups(_)
            | AnyRequest::ListGroups(_) => super::groups::handle(ctx, header, request).await,
            AnyRequest::DeleteTopics(_)
            | AnyRequest::DescribeConfigs(_)
            | AnyRequest::AlterConfigs(_)
            | AnyRequest::IncrementalAlterConfigs(_)
            | AnyRequest::CreatePartitions(_) => super::admin::handle(ctx, header, request).await,
            _ => Reply::Close,
        };
    }
    match request {
        AnyRequest::Produce(r) => produce(ctx, header, r).await,
        AnyRequest::Fetch(r) => fetch(ctx, header, r).await,
        AnyRequest::Offsets(r) => frame(header, &offsets(ctx, r)),
        AnyRequest::Metadata(r) => frame(header, &metadata(ctx, header.api_version, r).await),
        AnyRequest::OffsetCommit(r) => frame(header, &offset_commit(ctx, header.api_version, r).await),
        AnyRequest::OffsetFetch(r) => frame(header, &offset_fetch(ctx, header.api_version, r).await),
        AnyRequest::ConsumerMetadata(r) => frame(header, &consumer_metadata(ctx, r).await),
        _ => Reply::Close,
    }
}

/// 6 when this broker holds a replica but does not lead, 3 when it holds none or the partition
/// does not exist.
pub(crate) fn leader_check(st: &State, me: i32, topic: &str, partition: i32) -> Result<(), ErrorCode> {
    let p = st.partition(topic, partition).ok_or(ErrorCode::UnknownTopicOrPartition)?;
    if p.leader == me {
        Ok(())
    } else if p.replicas.contains(&me) {
        Err(ErrorCode::NotLeaderForPartition)
    } else {
        Err(ErrorCode::UnknownTopicOrPartition)
    }
}

async fn produce(ctx: &BrokerCtx, header: &RequestHeader, req: ProduceRequest) -> Reply {
    let cfg = &ctx.shared.config;
    let modern = ctx.shared.modern.is_some();
    if modern && ![-1, 0, 1].contains(&req.required_acks) {
        // Kafka answers every partition 21 INVALID_REQUIRED_ACKS
        let topics = req.topics.iter().map(|t| {
            let parts =
                t.partitions.iter().map(|p| ProduceResponsePartition::new(p.partition, INVALID_REQUIRED_ACKS, -1));
            ProduceResponseTopic::new(t.topic.clone(), parts.collect())
        });
        return frame(header, &ProduceResponse { topics: topics.collect(), ..Default::default() });
    }
    let mut failed = false;
    let mut waits: Vec<(String, i32, i64)> = Vec::new();
    let mut topics_out = Vec::with_capacity(req.topics.len());
    {
        let mut st = ctx.shared.state();
        for t in &req.topics {
            let mut parts = Vec::with_capacity(t.partitions.len());
            for p in &t.partitions {
                let result = append(&mut st, cfg, ctx.id, &t.topic, p, req.required_acks, modern);
                let (error_code, offset) = match result {
                    Ok((first, next)) => {
                        if req.required_acks == -1 {
                            // the in-sync followers copy it now (see replicate_now)
                            super::replicator::replicate_now(&mut st, &t.topic, p.partition);
                            waits.push((t.topic.clone(), p.partition, next));
                        }
                        (0, first)
                    }
                    Err(code) => {
                        failed = true;
                        (code, -1)
                    }
                };
                let mut out = ProduceResponsePartition::new(p.partition, error_code, offset);
                if modern && error_code == 0 && header.api_version >= 5 {
                    out.log_start_offset = 0;
                }
                parts.push(out);
            }
            topics_out.push(ProduceResponseTopic::new(t.topic.clone(), parts));
        }
    }
    ctx.shared.notify();
    if req.required_acks == 0 {
        return if failed { Reply::Close } else { Reply::Nothing };
    }
    if !waits.is_empty() {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(req.timeout.max(0) as u64);
        // as 0.8.2's DelayedProduce: a partition is done once replicated or once its leadership
        // left this broker; the latter answers 6, since the new leader may have truncated the
        // write (its own writes can carry the high watermark past the offset all the same)
        let me = ctx.id;
        let settled = |st: &State| {
            waits
                .iter()
                .all(|(t, p, need)| st.partition(t, *p).is_none_or(|part| part.leader != me || part.hw >= *need))
        };
        let _ = ctx.shared.wait_until(deadline, settled).await;
        let st = ctx.shared.state();
        for (t, p, need) in &waits {
            // acks=-1 timed out: 7 with the offset filled in; the message stays in the log
            let code = match st.partition(t, *p) {
                Some(part) if part.leader != me => ErrorCode::NotLeaderForPartition,
                Some(part) if part.hw < *need => ErrorCode::RequestTimedOut,
                _ => continue,
            };
            for out in topics_out.iter_mut().filter(|o| &o.topic == t) {
                for r in out.partitions.iter_mut().filter(|r| r.partition == *p) {
                    r.error_code = code.code();
                }
            }
        }
    }
    frame(header, &ProduceResponse { topics: topics_out, ..Default::default() })
}

/// Appends one partition's set on the leader; returns (first offset, offset after the set), or
/// the error code. The modern mode appends one RecordBatch v2 ([`records::validate_batch`]).
fn append(
    st: &mut State,
    cfg: &super::config::BrokerConfig,
    me: i32,
    topic: &str,
    p: &ProducePartition,
    acks: i16,
    modern: bool,
) -> Result<(i64, i64), i16> {
    if topic == OFFSETS_TOPIC {
        return Err(ErrorCode::InvalidTopic.code());
    }
    leader_check(st, me, topic, p.partition).map_err(ErrorCode::code)?;
    let max = st.max_message_bytes(cfg, topic);
    let min_isr = st.min_insync_replicas(cfg, topic);
    let part = st.partition_mut(topic, p.partition).ok_or(ErrorCode::UnknownTopicOrPartition.code())?;
    if acks == -1 && part.isr.len() < min_isr {
        return Err(ErrorCode::NotEnoughReplicas.code());
    }
    let leader_epoch = part.leader_epoch;
    let leader = part.logs.get_mut(&me).ok_or(ErrorCode::NotLeaderForPartition.code())?;
    let set = if modern {
        let records = p.message_set.as_bytes();
        match records::validate_batch(records, leader.log.leo(), leader_epoch, max, &part.producers)? {
            records::Appended::Duplicate(at) => return Ok((at, at + 1)),
            records::Appended::New(set, producer) => {
                if let Some((id, state)) = producer {
                    part.producers.insert(id, state);
                }
                set
            }
        }
    } else {
        validate_and_assign(&p.message_set, leader.log.leo(), max).map_err(ErrorCode::code)?
    };
    let first = leader.log.append(&set);
    let next = leader.log.leo();
    leader.caught_up_at = std::time::Instant::now();
    if part.isr.len() <= 1 {
        part.hw = next;
    }
    Ok((first, next))
}

async fn fetch(ctx: &BrokerCtx, header: &RequestHeader, req: FetchRequest) -> Reply {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(req.max_wait_time.max(0) as u64);
    let answer = |response: &FetchResponse| frame(header, response);
    loop {
        let notified = ctx.shared.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let (response, bytes, error) = read_fetch(ctx, header.api_version, &req);
        let enough = bytes >= req.min_bytes.max(0) as usize;
        if enough || error || req.max_wait_time <= 0 || req.topics.is_empty() || tokio::time::Instant::now() >= deadline
        {
            return answer(&response);
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return answer(&read_fetch(ctx, header.api_version, &req).0);
        }
    }
}

/// Reads what a Fetch asks for. The modern mode (Fetch v4+) also answers the last stable offset
/// (the high watermark: no transactions), the log start offset and an empty aborted list; names
/// topics by id from v13; keeps the whole response under `max_bytes` (v3+) but always returns the
/// first batch whole (KIP-74); and runs sessionless (session id 0: a client asking for a session
/// keeps sending full fetches, as KIP-227 has it when the broker creates none).
fn read_fetch(ctx: &BrokerCtx, version: i16, req: &FetchRequest) -> (FetchResponse, usize, bool) {
    let modern = ctx.shared.modern.is_some();
    let st = ctx.shared.state();
    let mut bytes = 0;
    let mut error = false;
    let mut budget = if modern { req.max_bytes.max(0) as usize } else { usize::MAX };
    let mut topics = Vec::with_capacity(req.topics.len());
    for t in &req.topics {
        let name = if modern && version >= 13 {
            st.topic_named_by(t.topic_id).map(str::to_owned)
        } else {
            Some(t.topic.clone())
        };
        let mut parts = Vec::with_capacity(t.partitions.len());
        for p in &t.partitions {
            let read = match &name {
                None => Err(ErrorCode::UnknownTopicId),
                Some(name) => leader_check(&st, ctx.id, name, p.partition).and_then(|()| {
                    let part = st.partition(name, p.partition).ok_or(ErrorCode::UnknownTopicOrPartition)?;
                    let log = part.leader_log().ok_or(ErrorCode::NotLeaderForPartition)?;
                    if p.fetch_offset < 0 || p.fetch_offset > log.leo() {
                        return Err(ErrorCode::OffsetOutOfRange);
                    }
                    let visible = if req.replica_id >= 0 { log.leo() } else { part.hw };
                    let max = (p.max_bytes.max(0) as usize).min(budget);
                    let set = if modern && bytes == 0 {
                        log.read_at_least_one(p.fetch_offset, max, visible)
                    } else {
                        log.read(p.fetch_offset, max, visible)
                    };
                    Ok((part.hw, set))
                }),
            };
            parts.push(match read {
                Ok((hw, set)) => {
                    bytes += set.len();
                    budget = budget.saturating_sub(set.len());
                    let mut out =
                        FetchResponsePartition::new(p.partition, 0, hw, gregor_protocol::MessageSet::from_bytes(set));
                    if modern {
                        out.last_stable_offset = hw;
                        // read_committed gets the (empty) list of aborted transactions,
                        // read_uncommitted null, as Kafka answers
                        out.aborted_transactions = (req.isolation_level == 1).then(Vec::new);
                        if version >= 5 {
                            out.log_start_offset = 0;
                        }
                    }
                    out
                }
                Err(code) => {
                    error = true;
                    FetchResponsePartition::new(p.partition, code.code(), -1, Default::default())
                }
            });
        }
        let mut out =
            FetchResponseTopic::new(if version >= 13 { String::new() } else { name.unwrap_or_default() }, parts);
        out.topic_id = t.topic_id;
        topics.push(out);
    }
    (FetchResponse { topics, ..Default::default() }, bytes, error)
}

fn offsets(ctx: &BrokerCtx, req: OffsetsRequest) -> OffsetsResponse {
    let st = ctx.shared.state();
    let topics = req
        .topics
        .iter()
        .map(|t| {
            let parts = t
                .partitions
                .iter()
                .map(|p| {
                    let found = leader_check(&st, ctx.id, &t.topic, p.partition).and_then(|()| {
                        let part = st.partition(&t.topic, p.partition).ok_or(ErrorCode::UnknownTopicOrPartition)?;
                        let log = part.leader_log().ok_or(ErrorCode::NotLeaderForPartition)?;
                        Ok(log.offsets_before(p.time, p.max_number_of_offsets.max(0) as usize))
                    });
                    match found {
                        Ok(offsets) => {
                            OffsetsResponsePartition { partition: p.partition, offsets, ..Default::default() }
                        }
                        Err(code) => OffsetsResponsePartition {
                            partition: p.partition,
                            error_code: code.code(),
                            ..Default::default()
                        },
                    }
                })
                .collect();
            OffsetsResponseTopic::new(t.topic.clone(), parts)
        })
        .collect();
    OffsetsResponse { topics, ..Default::default() }
}

async fn metadata(ctx: &BrokerCtx, version: i16, req: MetadataRequest) -> MetadataResponse {
    let cfg = &ctx.shared.config;
    let mut to_create = Vec::new();
    let response = {
        let st = ctx.shared.state();
        let live: Vec<i32> = st.brokers.keys().copied().filter(|b| st.is_live(*b)).collect();
        let brokers = if cfg.empty_cluster_lists_no_brokers && st.topics.is_empty() {
            vec![]
        } else {
            live.iter()
                .map(|b| BrokerMetadata {
                    node_id: *b,
                    host: cfg.host.clone(),
                    port: i32::from(st.brokers[b].port),
                    ..Default::default()
                })
                .collect()
        };
        let names: Vec<String> = if req.wants_all_topics(version) {
            st.topics.keys().cloned().collect()
        } else {
            req.topic_names().map(str::to_owned).collect()
        };
        let topics = names
            .into_iter()
            .map(|name| match st.topics.get(&name) {
                Some(topic) => TopicMetadata::new(
                    name,
                    0,
                    topic.partitions.iter().map(|(id, p)| partition_metadata(&st, *id, p)).collect(),
                ),
                None => {
                    let creatable = cfg.auto_create_topics_enable && paths::validate_topic_name(&name).is_ok();
                    if creatable {
                        to_create.push(name.clone());
                    }
                    let code =
                        if creatable { ErrorCode::LeaderNotAvailable } else { ErrorCode::UnknownTopicOrPartition };
                    TopicMetadata::new(name, code.code(), vec![])
                }
            })
            .collect();
        MetadataResponse { brokers, topics, ..Default::default() }
    };
    for name in to_create {
        let rf = cfg.default_replication_factor;
        let Some(zk) = &ctx.zk else { break };
        if let Err(e) = topics::create_topic(&ctx.shared, zk, &name, cfg.num_partitions, rf, None).await {
            tracing::warn!(topic = %name, error = %e, "fake broker could not auto-create a topic");
        }
    }
    response
}

fn partition_metadata(st: &State, id: i32, p: &super::state::Partition) -> PartitionMetadata {
    if !st.is_live(p.leader) {
        return PartitionMetadata {
            error_code: ErrorCode::LeaderNotAvailable.code(),
            partition: id,
            leader: -1,
            ..Default::default()
        };
    }
    let replicas: Vec<i32> = p.replicas.iter().copied().filter(|b| st.is_live(*b)).collect();
    let isr: Vec<i32> = p.isr.iter().copied().filter(|b| st.is_live(*b)).collect();
    let error_code = if replicas.len() < p.replicas.len() || isr.len() < p.isr.len() {
        ErrorCode::ReplicaNotAvailable.code()
    } else {
        0
    };
    PartitionMetadata { error_code, partition: id, leader: p.leader, replicas, isr, ..Default::default() }
}

/// The broker that coordinates `group`: the leader of its `__consumer_offsets` partition.
fn coordinator(st: &State, n: i32, group: &str) -> Option<i32> {
    let p = st.partition(OFFSETS_TOPIC, offsets_partition_for(group, n))?;
    st.is_live(p.leader).then_some(p.leader)
}

async fn offset_commit(ctx: &BrokerCtx, version: i16, req: OffsetCommitRequest) -> OffsetCommitResponse {
    let cfg = &ctx.shared.config;
    let mut topics = Vec::new();
    for t in &req.topics {
        let mut parts = Vec::new();
        for p in &t.partitions {
            let metadata = p.metadata.clone().unwrap_or_default();
            let too_large = metadata.len() > cfg.offset_metadata_max_bytes;
            // 0.8.2 (KafkaApis): v0 checks that the topic exists (not the partition), then the
            // metadata size, then writes ZooKeeper; v1 checks the coordinator, then the size
            let code = if version == 0 {
                let exists = ctx.shared.state().topics.contains_key(&t.topic);
                if !exists {
                    ErrorCode::UnknownTopicOrPartition.code()
                } else if too_large {
                    ErrorCode::OffsetMetadataTooLarge.code()
                } else {
                    let path = paths::offset(&req.group_id, &t.topic, p.partition);
                    let written = match &ctx.zk {
                        Some(zk) => zk.set_or_create(&path, &payloads::encode_offset(p.offset)).await.is_ok(),
                        None => false,
                    };
                    if written {
                        0
                    } else {
                        ErrorCode::UnknownServerError.code()
                    }
                }
            } else {
                let mut st = ctx.shared.state();
                if coordinator(&st, cfg.offsets_topic_num_partitions, &req.group_id) != Some(ctx.id) {
                    ErrorCode::NotCoordinatorForConsumer.code()
                } else if too_large {
                    ErrorCode::OffsetMetadataTooLarge.code()
                } else {
                    st.group_offsets.insert((req.group_id.clone(), t.topic.clone(), p.partition), (p.offset, metadata));
                    0
                }
            };
            parts.push(OffsetCommitResponsePartition::new(p.partition, code));
        }
        topics.push(OffsetCommitResponseTopic::new(t.topic.clone(), parts));
    }
    OffsetCommitResponse { topics, ..Default::default() }
}

async fn offset_fetch(ctx: &BrokerCtx, version: i16, req: OffsetFetchRequest) -> OffsetFetchResponse {
    let cfg = &ctx.shared.config;
    let mut topics = Vec::new();
    for t in req.topics.iter().flatten() {
        let mut parts = Vec::new();
        for &p in &t.partitions {
            let (offset, metadata, code) = if version == 0 {
                let read = match &ctx.zk {
                    Some(zk) => zk.get(&paths::offset(&req.group_id, &t.topic, p)).await.map_err(drop),
                    None => Err(()),
                };
                match read {
                    Ok(Some((data, _))) => match payloads::decode_offset(&data) {
                        Ok(o) => (o, String::new(), 0),
                        Err(_) => (-1, String::new(), ErrorCode::UnknownServerError.code()),
                    },
                    Ok(None) => (-1, String::new(), ErrorCode::UnknownTopicOrPartition.code()),
                    Err(_) => (-1, String::new(), ErrorCode::UnknownServerError.code()),
                }
            } else {
                let st = ctx.shared.state();
                if coordinator(&st, cfg.offsets_topic_num_partitions, &req.group_id) != Some(ctx.id) {
                    (-1, String::new(), ErrorCode::NotCoordinatorForConsumer.code())
                } else {
                    match st.group_offsets.get(&(req.group_id.clone(), t.topic.clone(), p)) {
                        Some((o, m)) => (*o, m.clone(), 0),
                        None => (-1, String::new(), 0),
                    }
                }
            };
            parts.push(OffsetFetchResponsePartition::new(p, offset, metadata, code));
        }
        topics.push(OffsetFetchResponseTopic::new(t.topic.clone(), parts));
    }
    OffsetFetchResponse { topics, ..Default::default() }
}

async fn consumer_metadata(ctx: &BrokerCtx, req: ConsumerMetadataRequest) -> ConsumerMetadataResponse {
    let cfg = &ctx.shared.config;
    let unavailable = ConsumerMetadataResponse {
        error_code: ErrorCode::ConsumerCoordinatorNotAvailable.code(),
        node_id: -1,
        host: String::new(),
        port: -1,
        ..Default::default()
    };
    let create = {
        let mut st = ctx.shared.state();
        if let Some(c) = coordinator(&st, cfg.offsets_topic_num_partitions, &req.key) {
            return ConsumerMetadataResponse {
                node_id: c,
                host: cfg.host.clone(),
                port: i32::from(st.brokers[&c].port),
                ..Default::default()
            };
        }
        let first = st.offsets_topic_requested.is_none() && !st.topics.contains_key(OFFSETS_TOPIC);
        if first {
            st.offsets_topic_requested = Some(std::time::Instant::now());
        }
        first.then(|| st.brokers.keys().filter(|b| st.is_live(**b)).count() as i32)
    };
    if let (Some(live), Some(zk)) = (create, &ctx.zk) {
        let rf = cfg.offsets_topic_replication_factor.min(live.max(1));
        if let Err(e) =
            topics::create_topic(&ctx.shared, zk, OFFSETS_TOPIC, cfg.offsets_topic_num_partitions, rf, None).await
        {
            tracing::warn!(error = %e, "fake broker could not create the offsets topic");
        }
    }
    unavailable
}

//! The modern mode's group coordinator: the classic group protocol of Kafka 3.7 (FindCoordinator,
//! JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups,
//! ListGroups), the one librdkafka, kafka-python and the Java client use with `group.id`.
//!
//! ```text
//!   Empty ──JoinGroup──► PreparingRebalance ──every member rejoined (or the rebalance
//!     ▲                        ▲      │           timeout passed: the rest are dropped)
//!     │ last member leaves     │      ▼
//!     └───────────── CompletingRebalance ──leader's SyncGroup──► Stable
//!                          (a join, a leave or a session timeout starts a new rebalance)
//! ```
//!
//! A group is coordinated by the leader of its `__consumer_offsets` partition (Java's string
//! hash of the group id, modulo the partitions); other brokers answer 16 NOT_COORDINATOR. The
//! first FindCoordinator of a cluster creates `__consumer_offsets` and answers 15
//! COORDINATOR_NOT_AVAILABLE while it does, as the genuine broker's first answer did. A new
//! member joins with an empty member id and gets 79 MEMBER_ID_REQUIRED with the id it is given
//! (`<client id>-<uuid>`, KIP-394, JoinGroup v4+), then joins with it. JoinGroup answers wait
//! until the rebalance completes; the leader (the first member) gets every member's metadata
//! and hands out the assignment in its SyncGroup, which the others wait for. Members that stop
//! heartbeating for their session timeout are dropped. Offsets are kept per group in memory;
//! a group without members keeps them (state Empty). Not modelled: static membership
//! (group.instance.id is echoed but not used to replace members), the consumer protocol of
//! KIP-848, `group.initial.rebalance.delay.ms` (0, as the captures were made).

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use bytes::Bytes;
use gregor_protocol::frame::{ApiKey, RequestHeader};
use gregor_protocol::messages::*;
use gregor_protocol::ErrorCode;
use tokio::time::Instant;

use super::codes::*;
use super::config::OFFSETS_TOPIC;
use super::handlers::{BrokerCtx, Reply};
use super::kraft;
use super::modern::frame_for;
use super::placement::offsets_partition_for;
use super::state::State;

/// The group APIs and versions the modern mode serves: from the oldest Kafka 4.0 still accepts
/// (KIP-896) to the newest Kafka 3.7.0 advertised.
pub(crate) const SERVED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::ConsumerMetadata, 0, 4),
    (ApiKey::JoinGroup, 2, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::ListGroups, 0, 4),
];

/// Kafka's `group.min.session.timeout.ms` and `group.max.session.timeout.ms` defaults.
const MIN_SESSION_TIMEOUT_MS: i32 = 6_000;
const MAX_SESSION_TIMEOUT_MS: i32 = 1_800_000;

/// How often a waiting JoinGroup or SyncGroup looks for members whose session ran out.
const EXPIRY_CHECK: Duration = Duration::from_millis(100);

/// Where a group stands (Kafka's names, as DescribeGroups and ListGroups give them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Empty => "Empty",
            Phase::PreparingRebalance => "PreparingRebalance",
            Phase::CompletingRebalance => "CompletingRebalance",
            Phase::Stable => "Stable",
        }
    }
}

/// One member of a group.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    client_id: String,
    group_instance_id: Option<String>,
    session_timeout: Duration,
    rebalance_timeout: Duration,
    /// (protocol name, metadata), the member's preference first.
    protocols: Vec<(String, Bytes)>,
    assignment: Bytes,
    /// Rejoined in the rebalance under way.
    joined: bool,
    last_seen: Instant,
}

/// A committed offset.
#[derive(Debug, Clone)]
struct Committed {
    offset: i64,
    leader_epoch: i32,
    metadata: String,
}

/// One group.
#[derive(Debug)]
pub(crate) struct Group {
    phase: Phase,
    generation: i32,
    protocol_type: Option<String>,
    protocol: Option<String>,
    leader: Option<String>,
    members: BTreeMap<String, Member>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, not joined yet.
    pending: HashSet<String>,
    /// When the rebalance under way gives up on members that have not rejoined.
    rebalance_deadline: Option<Instant>,
    offsets: BTreeMap<(String, i32), Committed>,
}

impl Group {
    fn new() -> Group {
        Group {
            phase: Phase::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: BTreeMap::new(),
            pending: HashSet::new(),
            rebalance_deadline: None,
            offsets: BTreeMap::new(),
        }
    }

    /// Drops members whose session ran out; a rebalance starts if any went.
    fn expire(&mut self, now: Instant) {
        let before = self.members.len();
        self.members.retain(|_, m| m.last_seen + m.session_timeout > now);
        if self.members.len() < before {
            self.rebalance(now);
        }
    }

    /// Starts a rebalance (or ends the group's generation when no member is left).
    fn rebalance(&mut self, now: Instant) {
        if self.members.is_empty() {
            self.become_empty();
            return;
        }
        if self.phase != Phase::PreparingRebalance {
            self.phase = Phase::PreparingRebalance;
            let longest = self.members.values().map(|m| m.rebalance_timeout).max().unwrap_or_default();
            self.rebalance_deadline = Some(now + longest);
        }
    }

    fn become_empty(&mut self) {
        if self.phase != Phase::Empty {
            self.generation += 1;
        }
        self.phase = Phase::Empty;
        self.protocol = None;
        self.leader = None;
        self.rebalance_deadline = None;
    }

    /// Completes the rebalance when every member rejoined, or (`force`) drops those that did
    /// not. Returns whether it completed.
    fn try_complete(&mut self, force: bool) -> bool {
        if self.phase != Phase::PreparingRebalance {
            return false;
        }
        if !force && self.members.values().any(|m| !m.joined) {
            return false;
        }
        self.members.retain(|_, m| m.joined);
        if self.members.is_empty() {
            self.become_empty();
            return true;
        }
        self.generation += 1;
        if !self.leader.as_ref().is_some_and(|l| self.members.contains_key(l)) {
            self.leader = self.members.keys().next().cloned();
        }
        // the leader's most preferred protocol that every member supports
        let leader = &self.members[self.leader.as_ref().expect("a member leads")];
        self.protocol = leader
            .protocols
            .iter()
            .map(|(name, _)| name)
            .find(|name| self.members.values().all(|m| m.protocols.iter().any(|(n, _)| n == *name)))
            .cloned();
        for m in self.members.values_mut() {
            m.joined = false;
            m.assignment = Bytes::new();
        }
        self.phase = Phase::CompletingRebalance;
        self.rebalance_deadline = None;
        true
    }

    /// The metadata member `m` gave for the chosen protocol.
    fn metadata_of(&self, m: &Member) -> Bytes {
        self.protocol
            .as_ref()
            .and_then(|p| m.protocols.iter().find(|(n, _)| n == p))
            .map(|(_, meta)| meta.clone())
            .unwrap_or_default()
    }
}

/// Every group of the cluster (kept in [`State`]).
#[derive(Debug, Default)]
pub(crate) struct Groups {
    groups: BTreeMap<String, Group>,
}

impl Groups {
    /// Group `id`, its members whose session ran out dropped first.
    fn live(&mut self, id: &str) -> Option<&mut Group> {
        let group = self.groups.get_mut(id)?;
        group.expire(Instant::now());
        Some(group)
    }
}

/// The broker coordinating `group`, if `__consumer_offsets` exists and that partition has a
/// live leader.
fn coordinator(st: &State, group: &str) -> Option<i32> {
    let topic = st.topics.get(OFFSETS_TOPIC)?;
    let n = topic.partitions.len() as i32;
    let p = topic.partitions.get(&offsets_partition_for(group, n))?;
    st.is_live(p.leader).then_some(p.leader)
}

/// Answers a group request.
pub(crate) async fn handle(ctx: &BrokerCtx, header: &RequestHeader, request: AnyRequest) -> Reply {
    let v = header.api_version;
    match request {
        AnyRequest::ConsumerMetadata(r) => frame_for::<FindCoordinatorRequest>(header, &find_coordinator(ctx, v, &r)),
        AnyRequest::JoinGroup(r) => frame_for::<JoinGroupRequest>(header, &join(ctx, header, &r).await),
        AnyRequest::SyncGroup(r) => frame_for::<SyncGroupRequest>(header, &sync(ctx, v, &r).await),
        AnyRequest::Heartbeat(r) => frame_for::<HeartbeatRequest>(header, &heartbeat(ctx, &r)),
        AnyRequest::LeaveGroup(r) => frame_for::<LeaveGroupRequest>(header, &leave(ctx, v, &r)),
        AnyRequest::OffsetCommit(r) => frame_for::<OffsetCommitRequest>(header, &commit(ctx, v, &r)),
        AnyRequest::OffsetFetch(r) => frame_for::<OffsetFetchRequest>(header, &fetch_offsets(ctx, v, &r)),
        AnyRequest::DescribeGroups(r) => frame_for::<DescribeGroupsRequest>(header, &describe(ctx, &r)),
        AnyRequest::ListGroups(r) => frame_for::<ListGroupsRequest>(header, &list(ctx, v, &r)),
        _ => Reply::Close,
    }
}

/// A coordinator found: node id, host, port.
type Found = (i32, String, i32);

fn find_coordinator(ctx: &BrokerCtx, v: i16, req: &FindCoordinatorRequest) -> FindCoordinatorResponse {
    let cfg = &ctx.shared.config;
    let keys: Vec<String> = if v >= 4 { req.coordinator_keys.clone() } else { vec![req.key.clone()] };
    // the first lookup creates the offsets topic and is told to come back
    let create = {
        let st = ctx.shared.state();
        !st.topics.contains_key(OFFSETS_TOPIC) && req.key_type == 0
    };
    if create {
        let live = {
            let st = ctx.shared.state();
            st.brokers.keys().filter(|b| st.is_live(**b)).count() as i32
        };
        let rf = cfg.offsets_topic_replication_factor.min(live.max(1));
        let _ = kraft::create_topic(
            &ctx.shared,
            OFFSETS_TOPIC,
            cfg.offsets_topic_num_partitions,
            rf,
            None,
            BTreeMap::from([("cleanup.policy".to_owned(), "compact".to_owned())]),
        );
    }
    let st = ctx.shared.state();
    let answers: Vec<(String, Result<Found, i16>)> = keys
        .into_iter()
        .map(|key| {
            let found = if create || req.key_type != 0 {
                Err(COORDINATOR_NOT_AVAILABLE)
            } else {
                coordinator(&st, &key)
                    .map(|id| (id, cfg.host.clone(), i32::from(st.brokers[&id].port)))
                    .ok_or(COORDINATOR_NOT_AVAILABLE)
            };
            (key, found)
        })
        .collect();
    let message = |code: i16, ok: &str| match code {
        0 => ok.to_owned(),
        _ => "The coordinator is not available.".to_owned(),
    };
    if v >= 4 {
        let coordinators = answers
            .into_iter()
            .map(|(key, found)| match found {
                Ok((node_id, host, port)) => {
                    Coordinator { key, node_id, host, port, error_message: Some(String::new()), ..Default::default() }
                }
                Err(code) => Coordinator {
                    key,
                    node_id: -1,
                    host: String::new(),
                    port: -1,
                    error_code: code,
                    error_message: Some(message(code, "")),
                    ..Default::default()
                },
            })
            .collect();
        return FindCoordinatorResponse { coordinators, ..Default::default() };
    }
    let (_, found) = answers.into_iter().next().unwrap_or((String::new(), Err(COORDINATOR_NOT_AVAILABLE)));
    let (error_code, (node_id, host, port)) = match found {
        Ok(at) => (0, at),
        Err(code) => (code, (-1, String::new(), -1)),
    };
    FindCoordinatorResponse {
        error_code,
        error_message: (v >= 1).then(|| message(error_code, "NONE")),
        node_id,
        host,
        port,
        ..Default::default()
    }
}

/// `Err(16)` unless this broker coordinates `group`.
fn check_coordinator(ctx: &BrokerCtx, st: &State, group: &str) -> Result<(), i16> {
    if coordinator(st, group) == Some(ctx.id) {
        Ok(())
    } else if st.topics.contains_key(OFFSETS_TOPIC) {
        Err(NOT_COORDINATOR)
    } else {
        Err(COORDINATOR_NOT_AVAILABLE)
    }
}

/// A JoinGroup answer carrying only an error (and the member id, for 79).
fn join_error(v: i16, code: i16, member_id: String) -> JoinGroupResponse {
    JoinGroupResponse {
        error_code: code,
        generation_id: -1,
        protocol_name: if v >= 7 { None } else { Some(String::new()) },
        member_id,
        ..Default::default()
    }
}

async fn join(ctx: &BrokerCtx, header: &RequestHeader, req: &JoinGroupRequest) -> JoinGroupResponse {
    let v = header.api_version;
    let now = Instant::now();
    let (member_id, start_generation) = {
        let mut st = ctx.shared.state();
        if let Err(code) = check_coordinator(ctx, &st, &req.group_id) {
            return join_error(v, code, req.member_id.clone());
        }
        if !(MIN_SESSION_TIMEOUT_MS..=MAX_SESSION_TIMEOUT_MS).contains(&req.session_timeout_ms) {
            return join_error(v, INVALID_SESSION_TIMEOUT, req.member_id.clone());
        }
        if req.protocol_type.is_empty() || req.protocols.is_empty() {
            return join_error(v, INCONSISTENT_GROUP_PROTOCOL, req.member_id.clone());
        }
        let group = st.groups.groups.entry(req.group_id.clone()).or_insert_with(Group::new);
        group.expire(now);
        let compatible = group.members.is_empty()
            || (group.protocol_type.as_deref() == Some(req.protocol_type.as_str())
                && req
                    .protocols
                    .iter()
                    .any(|p| group.members.values().all(|m| m.protocols.iter().any(|(n, _)| *n == p.name))));
        if !compatible {
            return join_error(v, INCONSISTENT_GROUP_PROTOCOL, req.member_id.clone());
        }
        let member_id = if req.member_id.is_empty() {
            let client = header.client_id.clone().unwrap_or_default();
            let id = format!("{client}-{}", uuid_text());
            if v >= 4 {
                // KIP-394: the member comes back with its id
                group.pending.insert(id.clone());
                return join_error(v, MEMBER_ID_REQUIRED, id);
            }
            id
        } else {
            if !group.members.contains_key(&req.member_id) && !group.pending.remove(&req.member_id) {
                return join_error(v, UNKNOWN_MEMBER_ID, req.member_id.clone());
            }
            req.member_id.clone()
        };
        let rebalance_timeout =
            if req.rebalance_timeout_ms >= 0 { req.rebalance_timeout_ms } else { req.session_timeout_ms };
        let member = Member {
            client_id: header.client_id.clone().unwrap_or_default(),
            group_instance_id: req.group_instance_id.clone(),
            session_timeout: Duration::from_millis(req.session_timeout_ms.max(0) as u64),
            rebalance_timeout: Duration::from_millis(rebalance_timeout.max(0) as u64),
            protocols: req.protocols.iter().map(|p| (p.name.clone(), p.metadata.clone())).collect(),
            assignment: Bytes::new(),
            joined: true,
            last_seen: now,
        };
        group.protocol_type = Some(req.protocol_type.clone());
        group.members.insert(member_id.clone(), member);
        group.rebalance(now);
        let start = group.generation;
        group.try_complete(false);
        (member_id, start)
    };
    ctx.shared.notify();
    // wait for the rebalance to complete (every member rejoined, or the deadline)
    loop {
        let done = ctx
            .shared
            .wait_until(Instant::now() + EXPIRY_CHECK, |st| {
                st.groups
                    .groups
                    .get(&req.group_id)
                    .is_none_or(|g| g.generation != start_generation || !g.members.contains_key(&member_id))
            })
            .await;
        let mut st = ctx.shared.state();
        let Some(group) = st.groups.groups.get_mut(&req.group_id) else {
            return join_error(v, UNKNOWN_MEMBER_ID, member_id);
        };
        if !done {
            let now = Instant::now();
            group.expire(now);
            let late = group.rebalance_deadline.is_some_and(|d| now >= d);
            if group.try_complete(late) {
                drop(st);
                ctx.shared.notify();
            }
            continue;
        }
        if !group.members.contains_key(&member_id) {
            return join_error(v, UNKNOWN_MEMBER_ID, member_id);
        }
        let leader = group.leader.clone().unwrap_or_default();
        let members = if leader == member_id {
            group
                .members
                .iter()
                .map(|(id, m)| JoinGroupResponseMember {
                    member_id: id.clone(),
                    group_instance_id: if v >= 5 { m.group_instance_id.clone() } else { None },
                    metadata: group.metadata_of(m),
                    ..Default::default()
                })
                .collect()
        } else {
            Vec::new()
        };
        return JoinGroupResponse {
            generation_id: group.generation,
            protocol_type: if v >= 7 { group.protocol_type.clone() } else { None },
            protocol_name: group.protocol.clone().or_else(|| (v < 7).then(String::new)),
            leader,
            member_id,
            members,
            ..Default::default()
        };
    }
}

/// The group of a member's request, if the member is in it at `generation`.
fn member_check<G: std::ops::Deref<Target = Group>>(group: Option<G>, member: &str, generation: i32) -> Result<G, i16> {
    let group = group.ok_or(UNKNOWN_MEMBER_ID)?;
    if !group.members.contains_key(member) {
        return Err(UNKNOWN_MEMBER_ID);
    }
    if generation != group.generation {
        return Err(ILLEGAL_GENERATION);
    }
    Ok(group)
}

async fn sync(ctx: &BrokerCtx, v: i16, req: &SyncGroupRequest) -> SyncGroupResponse {
    let error = |code: i16| SyncGroupResponse { error_code: code, ..Default::default() };
    {
        let mut st = ctx.shared.state();
        if let Err(code) = check_coordinator(ctx, &st, &req.group_id) {
            return error(code);
        }
        let group = match member_check(st.groups.live(&req.group_id), &req.member_id, req.generation_id) {
            Ok(g) => g,
            Err(code) => return error(code),
        };
        if group.phase == Phase::PreparingRebalance {
            return error(REBALANCE_IN_PROGRESS);
        }
        if let Some(m) = group.members.get_mut(&req.member_id) {
            m.last_seen = Instant::now();
        }
        if group.phase == Phase::CompletingRebalance && group.leader.as_deref() == Some(req.member_id.as_str()) {
            for a in &req.assignments {
                if let Some(m) = group.members.get_mut(&a.member_id) {
                    m.assignment = a.assignment.clone();
                }
            }
            group.phase = Phase::Stable;
        }
    }
    ctx.shared.notify();
    // a follower waits for the leader's assignment
    loop {
        let settled = ctx
            .shared
            .wait_until(Instant::now() + EXPIRY_CHECK, |st| {
                st.groups.groups.get(&req.group_id).is_none_or(|g| {
                    g.phase != Phase::CompletingRebalance
                        || g.generation != req.generation_id
                        || !g.members.contains_key(&req.member_id)
                })
            })
            .await;
        let mut st = ctx.shared.state();
        if !settled {
            st.groups.live(&req.group_id);
            continue;
        }
        let group = match member_check(st.groups.groups.get_mut(&req.group_id), &req.member_id, req.generation_id) {
            Ok(g) => g,
            Err(code) => return error(code),
        };
        if group.phase != Phase::Stable {
            return error(REBALANCE_IN_PROGRESS);
        }
        return SyncGroupResponse {
            protocol_type: if v >= 5 { group.protocol_type.clone() } else { None },
            protocol_name: if v >= 5 { group.protocol.clone() } else { None },
            assignment: group.members[&req.member_id].assignment.clone(),
            ..Default::default()
        };
    }
}

fn heartbeat(ctx: &BrokerCtx, req: &HeartbeatRequest) -> HeartbeatResponse {
    let mut st = ctx.shared.state();
    let code = check_coordinator(ctx, &st, &req.group_id).and_then(|()| {
        let group = member_check(st.groups.live(&req.group_id), &req.member_id, req.generation_id)?;
        if let Some(m) = group.members.get_mut(&req.member_id) {
            m.last_seen = Instant::now();
        }
        if group.phase == Phase::PreparingRebalance {
            return Err(REBALANCE_IN_PROGRESS);
        }
        Ok(())
    });
    HeartbeatResponse { error_code: code.err().unwrap_or(0), ..Default::default() }
}

fn leave(ctx: &BrokerCtx, v: i16, req: &LeaveGroupRequest) -> LeaveGroupResponse {
    let leaving: Vec<(String, Option<String>)> = if v >= 3 {
        req.members.iter().map(|m| (m.member_id.clone(), m.group_instance_id.clone())).collect()
    } else {
        vec![(req.member_id.clone(), None)]
    };
    let response = {
        let mut st = ctx.shared.state();
        if let Err(code) = check_coordinator(ctx, &st, &req.group_id) {
            return LeaveGroupResponse { error_code: code, ..Default::default() };
        }
        let now = Instant::now();
        let group = st.groups.groups.get_mut(&req.group_id);
        let mut results = Vec::new();
        let mut any_known = false;
        if let Some(group) = group {
            for (id, instance) in &leaving {
                let known = group.members.remove(id).is_some();
                any_known |= known;
                results.push(MemberResponse {
                    member_id: id.clone(),
                    group_instance_id: instance.clone(),
                    error_code: if known { 0 } else { UNKNOWN_MEMBER_ID },
                    ..Default::default()
                });
            }
            if any_known {
                group.rebalance(now);
                group.try_complete(false);
            }
        } else {
            results = leaving
                .iter()
                .map(|(id, instance)| MemberResponse {
                    member_id: id.clone(),
                    group_instance_id: instance.clone(),
                    error_code: UNKNOWN_MEMBER_ID,
                    ..Default::default()
                })
                .collect();
        }
        if v >= 3 {
            LeaveGroupResponse { members: results, ..Default::default() }
        } else {
            LeaveGroupResponse { error_code: if any_known { 0 } else { UNKNOWN_MEMBER_ID }, ..Default::default() }
        }
    };
    ctx.shared.notify();
    response
}

fn commit(ctx: &BrokerCtx, v: i16, req: &OffsetCommitRequest) -> OffsetCommitResponse {
    let cfg = &ctx.shared.config;
    let mut st = ctx.shared.state();
    // the whole request's verdict: coordinator, member and generation
    let verdict = check_coordinator(ctx, &st, &req.group_id).and_then(|()| {
        let group = st.groups.live(&req.group_id).map(|g| &*g);
        let simple = req.group_generation_id < 0 && req.consumer_id.is_empty();
        match group {
            // a commit outside group management: only while the group has no members
            _ if simple => match group {
                Some(g) if !g.members.is_empty() => Err(UNKNOWN_MEMBER_ID),
                _ => Ok(()),
            },
            None => Err(UNKNOWN_MEMBER_ID),
            Some(g) => {
                // as Kafka's coordinator: a rebalance being prepared still takes the current
                // generation's commits (the members commit before they rejoin); one being
                // completed does not
                if g.phase == Phase::CompletingRebalance {
                    return Err(REBALANCE_IN_PROGRESS);
                }
                member_check(Some(g), &req.consumer_id, req.group_generation_id).map(drop)
            }
        }
    });
    let mut topics = Vec::new();
    let mut writes = Vec::new();
    for t in &req.topics {
        let exists = st.topics.contains_key(&t.topic);
        let mut parts = Vec::new();
        for p in &t.partitions {
            let metadata = p.metadata.clone().unwrap_or_default();
            let code = match verdict {
                Err(code) => code,
                Ok(()) if !exists || st.partition(&t.topic, p.partition).is_none() => {
                    ErrorCode::UnknownTopicOrPartition.code()
                }
                Ok(()) if metadata.len() > cfg.offset_metadata_max_bytes => ErrorCode::OffsetMetadataTooLarge.code(),
                Ok(()) => {
                    let leader_epoch = if v >= 6 { p.leader_epoch } else { -1 };
                    writes
                        .push(((t.topic.clone(), p.partition), Committed { offset: p.offset, leader_epoch, metadata }));
                    0
                }
            };
            parts.push(OffsetCommitResponsePartition::new(p.partition, code));
        }
        topics.push(OffsetCommitResponseTopic::new(t.topic.clone(), parts));
    }
    if !writes.is_empty() {
        let group = st.groups.groups.entry(req.group_id.clone()).or_insert_with(Group::new);
        if group.members.is_empty() && group.protocol_type.is_none() && req.group_generation_id < 0 {
            // a group made by a commit alone has no protocol type
            group.phase = Phase::Empty;
        }
        group.offsets.extend(writes);
    }
    OffsetCommitResponse { topics, ..Default::default() }
}

/// One group's committed offsets for `topics` (all it has when `None`), or the group's error.
fn offsets_of(
    ctx: &BrokerCtx,
    st: &State,
    v: i16,
    group_id: &str,
    topics: Option<&Vec<OffsetFetchTopic>>,
) -> Result<Vec<OffsetFetchResponseTopic>, i16> {
    check_coordinator(ctx, st, group_id)?;
    let group = st.groups.groups.get(group_id);
    let entry = |topic: &str, partition: i32| -> OffsetFetchResponsePartition {
        let committed = group.and_then(|g| g.offsets.get(&(topic.to_owned(), partition)));
        let (offset, leader_epoch, metadata) =
            committed.map_or((-1, -1, String::new()), |c| (c.offset, c.leader_epoch, c.metadata.clone()));
        OffsetFetchResponsePartition {
            partition,
            offset,
            leader_epoch: if v >= 5 { leader_epoch } else { -1 },
            metadata: Some(metadata),
            ..Default::default()
        }
    };
    Ok(match topics {
        Some(topics) => topics
            .iter()
            .map(|t| {
                OffsetFetchResponseTopic::new(
                    t.topic.clone(),
                    t.partitions.iter().map(|&p| entry(&t.topic, p)).collect(),
                )
            })
            .collect(),
        None => {
            let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
            for (topic, partition) in group.map(|g| g.offsets.keys().collect::<Vec<_>>()).unwrap_or_default() {
                by_topic.entry(topic).or_default().push(*partition);
            }
            by_topic
                .into_iter()
                .map(|(t, ps)| {
                    OffsetFetchResponseTopic::new(t.to_owned(), ps.into_iter().map(|p| entry(t, p)).collect())
                })
                .collect()
        }
    })
}

fn fetch_offsets(ctx: &BrokerCtx, v: i16, req: &OffsetFetchRequest) -> OffsetFetchResponse {
    let st = ctx.shared.state();
    if v >= 8 {
        let groups = req
            .groups
            .iter()
            .map(|g| match offsets_of(ctx, &st, v, &g.group_id, g.topics.as_ref()) {
                Ok(topics) => OffsetFetchResponseGroup { group_id: g.group_id.clone(), topics, ..Default::default() },
                Err(code) => {
                    OffsetFetchResponseGroup { group_id: g.group_id.clone(), error_code: code, ..Default::default() }
                }
            })
            .collect();
        return OffsetFetchResponse { groups, ..Default::default() };
    }
    match offsets_of(ctx, &st, v, &req.group_id, req.topics.as_ref()) {
        Ok(topics) => OffsetFetchResponse { topics, ..Default::default() },
        // v1 has no top-level error: each partition carries it
        Err(code) if v < 2 => {
            let topics = req
                .topics
                .iter()
                .flatten()
                .map(|t| {
                    let parts = t
                        .partitions
                        .iter()
                        .map(|&p| OffsetFetchResponsePartition {
                            partition: p,
                            offset: -1,
                            metadata: Some(String::new()),
                            error_code: code,
                            ..Default::default()
                        })
                        .collect();
                    OffsetFetchResponseTopic::new(t.topic.clone(), parts)
                })
                .collect();
            OffsetFetchResponse { topics, ..Default::default() }
        }
        Err(code) => OffsetFetchResponse { error_code: code, ..Default::default() },
    }
}

fn describe(ctx: &BrokerCtx, req: &DescribeGroupsRequest) -> DescribeGroupsResponse {
    let st = ctx.shared.state();
    let groups = req
        .groups
        .iter()
        .map(|id| {
            if let Err(code) = check_coordinator(ctx, &st, id) {
                return DescribedGroup { error_code: code, group_id: id.clone(), ..Default::default() };
            }
            let Some(g) = st.groups.groups.get(id) else {
                return DescribedGroup { group_id: id.clone(), group_state: "Dead".into(), ..Default::default() };
            };
            let stable = g.phase == Phase::Stable;
            DescribedGroup {
                group_id: id.clone(),
                group_state: g.phase.name().into(),
                protocol_type: g.protocol_type.clone().unwrap_or_default(),
                protocol_data: if stable { g.protocol.clone().unwrap_or_default() } else { String::new() },
                members: if stable {
                    g.members
                        .iter()
                        .map(|(mid, m)| DescribedGroupMember {
                            member_id: mid.clone(),
                            client_id: m.client_id.clone(),
                            client_host: "/127.0.0.1".into(),
                            member_metadata: g.metadata_of(m),
                            member_assignment: m.assignment.clone(),
                            ..Default::default()
                        })
                        .collect()
                } else {
                    Vec::new()
                },
                ..Default::default()
            }
        })
        .collect();
    DescribeGroupsResponse { groups, ..Default::default() }
}

fn list(ctx: &BrokerCtx, v: i16, req: &ListGroupsRequest) -> ListGroupsResponse {
    let st = ctx.shared.state();
    let groups = st
        .groups
        .groups
        .iter()
        .filter(|(id, _)| coordinator(&st, id) == Some(ctx.id))
        .filter(|(_, g)| v < 4 || req.states_filter.is_empty() || req.states_filter.iter().any(|s| s == g.phase.name()))
        .map(|(id, g)| ListedGroup {
            group_id: id.clone(),
            protocol_type: g.protocol_type.clone().unwrap_or_default(),
            group_state: if v >= 4 { g.phase.name().into() } else { String::new() },
            group_type: if v >= 5 { "classic".into() } else { String::new() },
            ..Default::default()
        })
        .collect();
    ListGroupsResponse { groups, ..Default::default() }
}

/// A random UUID in its 36-character text form, as Kafka makes member ids.
fn uuid_text() -> String {
    let b: [u8; 16] = rand::random();
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

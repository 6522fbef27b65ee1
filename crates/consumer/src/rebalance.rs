//! One rebalance attempt, as pure steps and the little IO that feeds them.
//!
//! ```text
//!  registry ──► members, registrations, (topics: only for filter members), partitions
//!                 │
//!                 ▼  expand (pure): registrations + topics + exclude.internal.topics
//!              GroupState ──► assignment::plan (pure) ──► mine: (topic, partition) -> thread id
//!                                                             │
//!  registry ◄── claim all of mine, all or nothing ◄───────────┘
//!                 │ (the coordinator reads the stored offsets of what it claimed)
//!                 ▼  reconcile (pure): mine + what was mine + stored offsets
//!              starts: state kept or new, start offset, stream slot; partitions handed off
//! ```
//!
//! Rules, as Kafka 0.8.2's `ZookeeperConsumerConnector`:
//!
//! - **Expansion.** A `static` registration subscribes to its topics with its stream counts; a
//!   `white_list` / `black_list` one to every current topic its filter allows (see
//!   [`TopicFilter`]), `__consumer_offsets` excluded when `exclude.internal.topics`. A negative
//!   stream count counts as 0. A member whose filter is not a valid regex, or whose pattern is
//!   unknown, subscribes to nothing for that entry (reported in [`Expansion::ignored`]).
//! - **Claims are all or nothing.** Each planned partition gets an ephemeral owner node holding
//!   the thread id. A node already there that holds this very thread id and is ephemeral is
//!   deleted (at its version) and created again: it may be a node of an expired session of
//!   ours that the server has not removed yet, and only a node of the current session is ours
//!   (zookeeper-async does not tell the session id). Any other holder, or a registry error, is
//!   a conflict: the claims of this attempt are released and the conflict reported.
//! - **Release before claim.** The coordinator releases every owner node before an attempt, as
//!   Java does, so a plan is always claimed whole. A partition that stays with this member
//!   keeps its delivered position: see [`reconcile`].

use std::collections::{BTreeMap, BTreeSet};

use gregor_protocol::TopicPartition;
use gregor_zk::payloads::{ConsumerRegistration, PATTERN_STATIC};

use crate::assignment::{self, AssignmentStrategy, GroupState, ThreadId};
use crate::error::{Error, Result};
use crate::filter::TopicFilter;
use crate::registry::Registry;

/// The key of the wildcard streams of a filter subscription (one set of streams for every
/// topic the filter allows).
pub(crate) const WILDCARD: &str = "*";

/// This member's subscription, as given to the connector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Subscription {
    /// Topic -> number of streams.
    Static(BTreeMap<String, usize>),
    /// A filter and its number of streams.
    Filter(TopicFilter, usize),
}

impl Subscription {
    /// The registration written to `/consumers/G/ids/<id>`.
    pub(crate) fn registration(&self, timestamp_ms: i64) -> ConsumerRegistration {
        match self {
            Subscription::Static(m) => ConsumerRegistration::new(
                m.iter().map(|(t, n)| (t.clone(), clamp_streams(*n))).collect(),
                PATTERN_STATIC,
                timestamp_ms,
            ),
            Subscription::Filter(f, n) => ConsumerRegistration::new(
                [(f.regex(), clamp_streams(*n))].into_iter().collect(),
                f.pattern(),
                timestamp_ms,
            ),
        }
    }

    /// The streams, as (key, count): one key per topic, or [`WILDCARD`] for a filter.
    pub(crate) fn stream_keys(&self) -> Vec<(String, usize)> {
        match self {
            Subscription::Static(m) => m.iter().map(|(t, n)| (t.clone(), *n)).collect(),
            Subscription::Filter(_, n) => vec![(WILDCARD.to_owned(), *n)],
        }
    }

    /// The stream that delivers `topic`'s partitions owned by `thread`.
    pub(crate) fn slot(&self, topic: &str, thread: &ThreadId) -> StreamSlot {
        let key = match self {
            Subscription::Static(_) => topic.to_owned(),
            Subscription::Filter(..) => WILDCARD.to_owned(),
        };
        StreamSlot { key, index: thread.stream().unwrap_or(0) }
    }
}

fn clamp_streams(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Which stream: its key (topic, or [`WILDCARD`]) and its index among the key's streams.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StreamSlot {
    pub(crate) key: String,
    pub(crate) index: usize,
}

/// A registration entry that subscribes to nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ignored {
    /// The member.
    pub(crate) member: String,
    /// The entry (filter regex, or the pattern).
    pub(crate) entry: String,
    /// Why.
    pub(crate) reason: String,
}

/// What [`expand`] makes of the registrations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Expansion {
    /// consumer id -> (topic -> streams).
    pub(crate) members: BTreeMap<String, BTreeMap<String, usize>>,
    /// Entries that subscribe to nothing.
    pub(crate) ignored: Vec<Ignored>,
}

/// True when some registration is a filter, so the topic list must be read.
pub(crate) fn needs_topics<'a>(registrations: impl IntoIterator<Item = &'a ConsumerRegistration>) -> bool {
    registrations.into_iter().any(|r| r.pattern != PATTERN_STATIC)
}

/// Each member's subscription, filters expanded against `topics` (pure; see the module doc).
pub(crate) fn expand(
    registrations: &BTreeMap<String, ConsumerRegistration>,
    topics: &[String],
    exclude_internal_topics: bool,
) -> Expansion {
    let mut out = Expansion::default();
    for (member, reg) in registrations {
        let mut subs = BTreeMap::new();
        for (entry, &n) in &reg.subscription {
            let n = usize::try_from(n).unwrap_or(0);
            if reg.pattern == PATTERN_STATIC {
                subs.insert(entry.clone(), n);
                continue;
            }
            let Some(filter) = TopicFilter::from_registration(&reg.pattern, entry) else {
                out.ignored.push(Ignored {
                    member: member.clone(),
                    entry: reg.pattern.clone(),
                    reason: "unknown subscription pattern".into(),
                });
                continue;
            };
            let matcher = match filter.matcher() {
                Ok(m) => m,
                Err(e) => {
                    out.ignored.push(Ignored { member: member.clone(), entry: entry.clone(), reason: e.to_string() });
                    continue;
                }
            };
            for t in topics {
                if filter.allowed_by(&matcher, t, exclude_internal_topics) {
                    subs.insert(t.clone(), n);
                }
            }
        }
        out.members.insert(member.clone(), subs);
    }
    out
}

/// Reads the group and the partitions of every subscribed topic; returns the planner's input
/// and the ignored entries.
///
/// # Errors
///
/// The registry's errors.
pub(crate) async fn read_group<R: Registry>(
    registry: &R,
    exclude_internal_topics: bool,
) -> Result<(GroupState, Vec<Ignored>)> {
    let mut registrations = BTreeMap::new();
    for id in registry.members().await? {
        if let Some(reg) = registry.registration(&id).await? {
            registrations.insert(id, reg);
        }
    }
    let topics = if needs_topics(registrations.values()) { registry.topics().await? } else { Vec::new() };
    let expansion = expand(&registrations, &topics, exclude_internal_topics);
    let subscribed: BTreeSet<&String> = expansion.members.values().flat_map(|s| s.keys()).collect();
    let mut partitions = BTreeMap::new();
    for t in subscribed {
        if let Some(ps) = registry.partitions(t).await? {
            partitions.insert(t.clone(), ps);
        }
    }
    Ok((GroupState { members: expansion.members, partitions }, expansion.ignored))
}

/// How one claim ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// The owner node is ours.
    Taken,
    /// Someone else holds it (who, or what went wrong).
    Held(String),
}

/// Claims one partition for `thread` (see the module doc for a node that holds `thread`).
///
/// # Errors
///
/// The registry's errors.
pub(crate) async fn claim<R: Registry>(registry: &R, topic: &str, partition: i32, thread: &ThreadId) -> Result<Claim> {
    if registry.create_owner(topic, partition, thread).await? {
        return Ok(Claim::Taken);
    }
    match registry.owner(topic, partition).await? {
        Some(node) if node.data == thread.as_str().as_bytes() && node.ephemeral => {
            if !registry.delete_owner(topic, partition, Some(node.version)).await? {
                return Ok(Claim::Held("a node replaced meanwhile".into()));
            }
            if registry.create_owner(topic, partition, thread).await? {
                Ok(Claim::Taken)
            } else {
                let holder = registry.owner(topic, partition).await?.map(|n| n.holder());
                Ok(Claim::Held(holder.unwrap_or_else(|| "a node that vanished".into())))
            }
        }
        Some(node) => Ok(Claim::Held(node.holder())),
        None => Ok(Claim::Held("a node that vanished".into())),
    }
}

/// A claim that failed: the partition and who holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Conflict {
    pub(crate) topic: String,
    pub(crate) partition: i32,
    pub(crate) holder: String,
}

/// Claims every partition of `mine` in order, all or nothing: at the first conflict (or
/// registry error) the claims made so far are released and the conflict returned.
pub(crate) async fn claim_all<R: Registry>(registry: &R, mine: &[(TopicPartition, ThreadId)]) -> Option<Conflict> {
    for (i, (tp, thread)) in mine.iter().enumerate() {
        let holder = match claim(registry, &tp.topic, tp.partition, thread).await {
            Ok(Claim::Taken) => continue,
            Ok(Claim::Held(holder)) => holder,
            Err(e) => {
                tracing::warn!(error = %error_chain(&e), topic = %tp.topic, partition = tp.partition, "claim failed");
                error_chain(&e)
            }
        };
        let claimed: Vec<TopicPartition> = mine[..i].iter().map(|(k, _)| k.clone()).collect();
        release(registry, &claimed).await;
        return Some(Conflict { topic: tp.topic.clone(), partition: tp.partition, holder });
    }
    None
}

/// Deletes the owner nodes of `parts` (errors logged: the nodes die with the session anyway).
pub(crate) async fn release<R: Registry>(registry: &R, parts: &[TopicPartition]) {
    for tp in parts {
        if let Err(e) = registry.delete_owner(&tp.topic, tp.partition, None).await {
            tracing::debug!(error = %error_chain(&e), topic = %tp.topic, partition = tp.partition, "releasing failed");
        }
    }
}

/// Registers this member: an existing registration (of an older session not yet gone, or ours
/// after a retry) is deleted and the registration made again, up to 3 times.
///
/// # Errors
///
/// The registry's errors; [`Error::InvalidSubscription`] when the registration keeps existing
/// (another live member with the same `consumer.id`).
pub(crate) async fn register<R: Registry>(
    registry: &R,
    consumer_id: &str,
    registration: &ConsumerRegistration,
) -> Result<()> {
    for _ in 0..3 {
        if registry.register(consumer_id, registration).await? {
            return Ok(());
        }
        let _ = registry.deregister(consumer_id).await;
    }
    Err(Error::InvalidSubscription(format!(
        "the registration of {consumer_id} exists and could not be replaced: is consumer.id shared?"
    )))
}

/// How an attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Every planned partition of this member is claimed.
    Claimed {
        /// The topics of the group (to watch their partitions).
        topics: Vec<String>,
        /// What this member owns now, in (topic, partition) order.
        mine: Vec<(TopicPartition, ThreadId)>,
    },
    /// A claim failed (nothing of this attempt stays claimed).
    Conflict {
        /// The topics of the group.
        topics: Vec<String>,
        /// The claim that failed.
        conflict: Conflict,
    },
}

/// One attempt: read the group, plan, claim this member's part all or nothing.
///
/// # Errors
///
/// The registry's errors; [`Error::InvalidSubscription`] when this member is not registered or
/// the plan cannot be made (round robin over differing subscriptions).
pub(crate) async fn attempt<R: Registry>(
    registry: &R,
    consumer_id: &str,
    strategy: AssignmentStrategy,
    exclude_internal_topics: bool,
) -> Result<Attempt> {
    let (state, ignored) = read_group(registry, exclude_internal_topics).await?;
    for i in &ignored {
        tracing::warn!(member = %i.member, entry = %i.entry, reason = %i.reason, "member's subscription entry ignored");
    }
    let topics: Vec<String> = state.partitions.keys().cloned().collect();
    if !state.members.contains_key(consumer_id) {
        return Err(Error::InvalidSubscription(format!("{consumer_id} is not registered")));
    }
    let plan = assignment::plan(strategy, &state).map_err(|e| Error::InvalidSubscription(e.to_string()))?;
    let mine: Vec<(TopicPartition, ThreadId)> =
        assignment::owned_by(&plan, consumer_id).map(|(k, t)| (k.clone(), t.clone())).collect();
    match claim_all(registry, &mine).await {
        None => Ok(Attempt::Claimed { topics, mine }),
        Some(conflict) => Ok(Attempt::Conflict { topics, conflict }),
    }
}

/// Where one claimed partition starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Start {
    pub(crate) tp: TopicPartition,
    pub(crate) thread: ThreadId,
    /// The stored offset (-1: none; `auto.offset.reset` decides).
    pub(crate) stored: i64,
    /// True when this member had the partition before (in this rebalance or an earlier one):
    /// its state is reused, so what was handed out is not handed out again.
    pub(crate) resume: bool,
    /// The stream that gets its messages.
    pub(crate) slot: StreamSlot,
}

/// What [`reconcile`] decides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reconciled {
    /// One per claimed partition, in (topic, partition) order.
    pub(crate) starts: Vec<Start>,
    /// Owned before this rebalance and not now: another member takes them over.
    pub(crate) handed_off: Vec<TopicPartition>,
}

/// From the claimed partitions, the partitions owned before the rebalance, the states kept of
/// earlier ownership and the stored offsets: where each partition starts and which stream gets
/// it (pure).
pub(crate) fn reconcile(
    mine: &[(TopicPartition, ThreadId)],
    before: &BTreeSet<TopicPartition>,
    kept: &BTreeSet<TopicPartition>,
    stored: &BTreeMap<TopicPartition, Option<i64>>,
    subscription: &Subscription,
) -> Reconciled {
    let now: BTreeSet<&TopicPartition> = mine.iter().map(|(k, _)| k).collect();
    let starts = mine
        .iter()
        .map(|(tp, thread)| Start {
            tp: tp.clone(),
            thread: thread.clone(),
            stored: stored.get(tp).copied().flatten().unwrap_or(-1),
            resume: kept.contains(tp),
            slot: subscription.slot(&tp.topic, thread),
        })
        .collect();
    let handed_off = before.iter().filter(|k| !now.contains(k)).cloned().collect();
    Reconciled { starts, handed_off }
}

/// An error with its sources, `: `-separated (for the reason of a failed rebalance).
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::memory::{MemoryRegistry, Write};
    use gregor_zk::payloads::{PATTERN_BLACK_LIST, PATTERN_WHITE_LIST};

    fn reg(pattern: &str, entries: &[(&str, i32)]) -> ConsumerRegistration {
        ConsumerRegistration::new(entries.iter().map(|(e, n)| (e.to_string(), *n)).collect(), pattern, 0)
    }

    fn subs(entries: &[(&str, usize)]) -> BTreeMap<String, usize> {
        entries.iter().map(|(t, n)| (t.to_string(), *n)).collect()
    }

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition::new(t, p)
    }

    #[test]
    fn expansion_follows_each_members_pattern() {
        let topics: Vec<String> =
            ["logs-a", "logs-b", "metrics", "__consumer_offsets"].iter().map(|t| t.to_string()).collect();
        // (registrations, exclude.internal.topics, expected subscriptions, expected ignored members)
        type Case = (
            Vec<(&'static str, ConsumerRegistration)>,
            bool,
            Vec<(&'static str, Vec<(&'static str, usize)>)>,
            Vec<&'static str>,
        );
        let cases: Vec<Case> = vec![
            // static: as registered, topics need not exist; a negative count is 0
            (
                vec![("a", reg(PATTERN_STATIC, &[("x", 2), ("y", -1)]))],
                true,
                vec![("a", vec![("x", 2), ("y", 0)])],
                vec![],
            ),
            // whitelist: whole-name matches among the current topics
            (
                vec![("a", reg(PATTERN_WHITE_LIST, &[("logs-.*", 3)]))],
                true,
                vec![("a", vec![("logs-a", 3), ("logs-b", 3)])],
                vec![],
            ),
            // blacklist, with and without the internal topic
            (vec![("a", reg(PATTERN_BLACK_LIST, &[("logs-.*", 1)]))], true, vec![("a", vec![("metrics", 1)])], vec![]),
            (
                vec![("a", reg(PATTERN_BLACK_LIST, &[("logs-.*", 1)]))],
                false,
                vec![("a", vec![("__consumer_offsets", 1), ("metrics", 1)])],
                vec![],
            ),
            // an invalid regex and an unknown pattern subscribe to nothing, and say so
            (
                vec![
                    ("bad", reg(PATTERN_WHITE_LIST, &[("a(", 1)])),
                    ("odd", reg("sometimes", &[("metrics", 1)])),
                    ("ok", reg(PATTERN_STATIC, &[("metrics", 1)])),
                ],
                true,
                vec![("bad", vec![]), ("odd", vec![]), ("ok", vec![("metrics", 1)])],
                vec!["bad", "odd"],
            ),
        ];
        for (i, (regs, exclude, want, ignored)) in cases.into_iter().enumerate() {
            let regs: BTreeMap<String, ConsumerRegistration> =
                regs.into_iter().map(|(m, r)| (m.to_owned(), r)).collect();
            let got = expand(&regs, &topics, exclude);
            let want: BTreeMap<String, BTreeMap<String, usize>> =
                want.into_iter().map(|(m, s)| (m.to_owned(), subs(&s))).collect();
            assert_eq!(got.members, want, "case {i}");
            assert_eq!(got.ignored.iter().map(|x| x.member.as_str()).collect::<Vec<_>>(), ignored, "case {i}");
        }
    }

    #[test]
    fn the_topic_list_is_read_only_for_filter_members() {
        assert!(!needs_topics(&[reg(PATTERN_STATIC, &[("x", 1)])]));
        assert!(needs_topics(&[reg(PATTERN_STATIC, &[("x", 1)]), reg(PATTERN_WHITE_LIST, &[("x", 1)])]));
        assert!(!needs_topics(&[]));
    }

    #[test]
    fn registrations_and_slots_follow_the_subscription() {
        let s = Subscription::Static(subs(&[("a", 2), ("b", 1)]));
        let r = s.registration(42);
        assert_eq!((r.pattern.as_str(), r.timestamp.as_str()), (PATTERN_STATIC, "42"));
        assert_eq!(r.subscription, [("a".to_string(), 2), ("b".to_string(), 1)].into_iter().collect());
        assert_eq!(s.stream_keys(), [("a".to_string(), 2), ("b".to_string(), 1)]);
        assert_eq!(s.slot("a", &ThreadId::new("g_c", 1)), StreamSlot { key: "a".into(), index: 1 });

        let f = Subscription::Filter(TopicFilter::Blacklist(" x, y ".into()), 3);
        let r = f.registration(7);
        assert_eq!((r.pattern.as_str(), r.subscription.get("x|y")), (PATTERN_BLACK_LIST, Some(&3)));
        assert_eq!(f.stream_keys(), [(WILDCARD.to_string(), 3)]);
        assert_eq!(f.slot("any", &ThreadId::new("g_c", 2)), StreamSlot { key: WILDCARD.into(), index: 2 });
    }

    #[test]
    fn reconcile_starts_from_stored_offsets_resumes_kept_states_and_names_the_handed_off() {
        let sub = Subscription::Static(subs(&[("t", 2)]));
        let mine = vec![(tp("t", 0), ThreadId::new("c", 0)), (tp("t", 1), ThreadId::new("c", 1))];
        let before: BTreeSet<_> = [tp("t", 1), tp("t", 2)].into();
        let kept: BTreeSet<_> = [tp("t", 1), tp("t", 2), tp("old", 0)].into();
        let stored = BTreeMap::from([(tp("t", 0), None), (tp("t", 1), Some(40))]);
        let r = reconcile(&mine, &before, &kept, &stored, &sub);
        let got: Vec<(i32, i64, bool, usize)> =
            r.starts.iter().map(|s| (s.tp.partition, s.stored, s.resume, s.slot.index)).collect();
        assert_eq!(got, [(0, -1, false, 0), (1, 40, true, 1)]);
        assert_eq!(r.handed_off, [tp("t", 2)]);
        // nothing claimed: everything owned before is handed off
        let none = reconcile(&[], &before, &kept, &BTreeMap::new(), &sub);
        assert!(none.starts.is_empty());
        assert_eq!(none.handed_off, [tp("t", 1), tp("t", 2)]);
    }

    #[test]
    fn a_resumed_state_goes_on_from_the_further_of_delivered_and_stored() {
        use std::sync::atomic::Ordering::{Acquire, Release};
        let st = crate::stream::PartitionState::new("t", 0, 10);
        st.consumed.store(25, Release);
        st.committable.store(25, Release);
        // stored behind what was delivered: no redelivery
        assert_eq!(st.resume(20), 25);
        assert_eq!((st.committed.load(Acquire), st.committable.load(Acquire)), (20, 25));
        // another member got further meanwhile
        assert_eq!(st.resume(30), 30);
        assert_eq!((st.consumed.load(Acquire), st.committed.load(Acquire), st.committable.load(Acquire)), (30, 30, 30));
        // nothing stored
        assert_eq!(crate::stream::PartitionState::new("t", 0, -1).resume(-1), -1);
    }

    fn group() -> MemoryRegistry {
        let r = MemoryRegistry::default();
        r.add_topic("t", 4);
        r.add_static("g_a", &[("t", 1)]);
        r.add_static("g_b", &[("t", 1)]);
        r
    }

    fn owned(attempt: &Attempt) -> Vec<(TopicPartition, String)> {
        match attempt {
            Attempt::Claimed { mine, .. } => mine.iter().map(|(k, t)| (k.clone(), t.to_string())).collect(),
            other => panic!("expected a claim, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn an_attempt_claims_this_members_part_of_the_plan() {
        let r = group();
        let a = attempt(&r, "g_a", AssignmentStrategy::Range, true).await.unwrap();
        assert_eq!(owned(&a), [(tp("t", 0), "g_a-0".into()), (tp("t", 1), "g_a-0".into())]);
        assert!(matches!(&a, Attempt::Claimed { topics, .. } if topics == &["t"]));
        assert_eq!(
            r.take_writes(),
            [Write::CreateOwner("t".into(), 0, "g_a-0".into()), Write::CreateOwner("t".into(), 1, "g_a-0".into())]
        );
        let b = attempt(&r, "g_b", AssignmentStrategy::Range, true).await.unwrap();
        assert_eq!(owned(&b), [(tp("t", 2), "g_b-0".into()), (tp("t", 3), "g_b-0".into())]);
        assert_eq!(
            r.owners("t"),
            BTreeMap::from([(0, "g_a-0".into()), (1, "g_a-0".into()), (2, "g_b-0".into()), (3, "g_b-0".into())])
        );
    }

    #[tokio::test]
    async fn claims_are_all_or_nothing() {
        let r = group();
        r.put_owner("t", 1, "g_java-0", true);
        let a = attempt(&r, "g_a", AssignmentStrategy::Range, true).await.unwrap();
        assert_eq!(
            a,
            Attempt::Conflict {
                topics: vec!["t".into()],
                conflict: Conflict { topic: "t".into(), partition: 1, holder: "g_java-0".into() }
            }
        );
        // t/0 was claimed, then released
        assert_eq!(
            r.take_writes(),
            [Write::CreateOwner("t".into(), 0, "g_a-0".into()), Write::DeleteOwner("t".into(), 0)]
        );
        assert_eq!(r.owners("t"), BTreeMap::from([(1, "g_java-0".into())]));
    }

    #[tokio::test]
    async fn a_registry_error_while_claiming_is_a_conflict_and_releases_the_claims() {
        let r = group();
        r.fail_owner("t", 1);
        let Attempt::Conflict { conflict, .. } = attempt(&r, "g_a", AssignmentStrategy::Range, true).await.unwrap()
        else {
            panic!("expected a conflict")
        };
        assert_eq!((conflict.topic.as_str(), conflict.partition), ("t", 1));
        assert!(
            conflict.holder.contains("claiming t/1") && conflict.holder.contains("connection to zookeeper lost"),
            "{}",
            conflict.holder
        );
        assert!(r.owners("t").is_empty());
    }

    #[tokio::test]
    async fn a_node_holding_our_thread_id_is_taken_again_only_if_ephemeral() {
        // a node of an expired session of ours: deleted at its version and created again
        let r = group();
        r.put_owner("t", 0, "g_a-0", true);
        let a = attempt(&r, "g_a", AssignmentStrategy::Range, true).await.unwrap();
        assert_eq!(owned(&a).len(), 2);
        assert_eq!(
            r.take_writes(),
            [
                Write::DeleteOwner("t".into(), 0),
                Write::CreateOwner("t".into(), 0, "g_a-0".into()),
                Write::CreateOwner("t".into(), 1, "g_a-0".into())
            ]
        );
        // a persistent node with our thread id is not ours
        let r = group();
        r.put_owner("t", 0, "g_a-0", false);
        let Attempt::Conflict { conflict, .. } = attempt(&r, "g_a", AssignmentStrategy::Range, true).await.unwrap()
        else {
            panic!("expected a conflict")
        };
        assert_eq!((conflict.partition, conflict.holder.as_str()), (0, "g_a-0"));
        assert!(r.take_writes().is_empty());
    }

    #[tokio::test]
    async fn filter_members_subscribe_to_the_topics_their_filter_allows() {
        let r = MemoryRegistry::default();
        r.add_topic("logs-1", 2);
        r.add_topic("other", 2);
        r.add_member("g_w", Some(reg(PATTERN_WHITE_LIST, &[("logs-.*", 1)])));
        r.add_member("g_broken", None); // unreadable: not a member of the plan
        let a = attempt(&r, "g_w", AssignmentStrategy::RoundRobin, true).await.unwrap();
        assert_eq!(owned(&a), [(tp("logs-1", 0), "g_w-0".into()), (tp("logs-1", 1), "g_w-0".into())]);
        assert!(matches!(&a, Attempt::Claimed { topics, .. } if topics == &["logs-1"]));
    }

    #[tokio::test]
    async fn an_attempt_fails_when_unregistered_unplannable_or_unreachable() {
        let r = group();
        let e = attempt(&r, "g_z", AssignmentStrategy::Range, true).await.unwrap_err();
        assert!(matches!(&e, Error::InvalidSubscription(m) if m == "g_z is not registered"), "{e}");

        r.add_topic("u", 1);
        r.add_static("g_c", &[("t", 1), ("u", 1)]);
        let e = attempt(&r, "g_a", AssignmentStrategy::RoundRobin, true).await.unwrap_err();
        assert!(error_chain(&e).contains("round-robin assignment is allowed only if"), "{e}");

        r.set_unreachable(true);
        let e = attempt(&r, "g_a", AssignmentStrategy::Range, true).await.unwrap_err();
        assert!(matches!(e, Error::Zk { .. }), "{e}");
        assert!(r.take_writes().is_empty(), "nothing claimed");
    }

    #[tokio::test]
    async fn registering_replaces_a_leftover_registration() {
        let r = MemoryRegistry::default();
        r.add_static("g_a", &[("old", 1)]); // of an older session
        let mine = Subscription::Static(subs(&[("t", 1)])).registration(1);
        register(&r, "g_a", &mine).await.unwrap();
        assert_eq!(r.take_writes(), [Write::Deregister("g_a".into()), Write::Register("g_a".into())]);
        assert_eq!(r.registration("g_a").await.unwrap(), Some(mine));
    }
}

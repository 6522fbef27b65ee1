//! The rebalance planner: a pure function of the group's members and the topics' partitions.
//!
//! Both strategies compute what Kafka 0.8.2's `RangeAssignor` and `RoundRobinAssignor`
//! (`kafka.consumer.PartitionAssignor`) compute, for the WHOLE group rather than for one
//! member, so every member of a group (Java or gregor) arrives at the same decision from the
//! same view of ZooKeeper:
//!
//! - thread ids are `<consumerId>-<n>` and sort as strings (`c-10` before `c-2`);
//! - **range**, per topic: the topic's subscribed thread ids sorted, its partitions sorted
//!   numerically, `n = partitions / threads`, `extra = partitions % threads`; the thread at
//!   position `i` takes `n + (i < extra)` partitions starting at `n*i + min(i, extra)`;
//! - **round robin**: only when every thread id set is the same for every topic (identical
//!   subscriptions and stream counts); all thread ids sorted and cycled; all (topic,
//!   partition) pairs stably sorted by Java's `String.hashCode` of `"[topic,partition]"`;
//!   each pair goes to the next thread of the cycle.
//!
//! The one place where Java is not deterministic: pairs whose hash codes tie keep the order in
//! which Java's `HashMap` of topics yielded them. Here ties keep (topic, partition) order.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use gregor_protocol::TopicPartition;

/// A consumer stream's id: `<consumerId>-<n>`, ordered as a string (as Java orders it).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadId(String);

impl ThreadId {
    /// The thread id of stream `n` of `consumer_id`.
    pub fn new(consumer_id: &str, n: usize) -> ThreadId {
        ThreadId(format!("{consumer_id}-{n}"))
    }

    /// The id as written in `/consumers/G/owners/T/P`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The consumer id part (everything before the last `-`).
    pub fn consumer_id(&self) -> &str {
        self.0.rsplit_once('-').map(|(c, _)| c).unwrap_or(&self.0)
    }

    /// The stream number (after the last `-`), if it parses.
    pub fn stream(&self) -> Option<usize> {
        self.0.rsplit_once('-').and_then(|(_, n)| n.parse().ok())
    }
}

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ThreadId {
    fn from(s: &str) -> ThreadId {
        ThreadId(s.to_owned())
    }
}

/// The partition assignment strategy (`partition.assignment.strategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssignmentStrategy {
    /// `range`: per topic, contiguous ranges of partitions (the default).
    Range,
    /// `roundrobin`: all partitions of all topics dealt in turn to all streams.
    RoundRobin,
}

impl AssignmentStrategy {
    /// Kafka's name for the strategy.
    pub fn as_str(self) -> &'static str {
        match self {
            AssignmentStrategy::Range => "range",
            AssignmentStrategy::RoundRobin => "roundrobin",
        }
    }
}

/// The planner's input: each member's expanded subscription (topic -> number of streams,
/// wildcards already resolved against the current topics) and each topic's partitions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupState {
    /// consumer id -> (topic -> number of streams).
    pub members: BTreeMap<String, BTreeMap<String, usize>>,
    /// topic -> partition ids (any order; the planner sorts them).
    pub partitions: BTreeMap<String, Vec<i32>>,
}

/// The planner's output: partition -> owning thread id, for the whole group.
pub type Assignment = BTreeMap<TopicPartition, ThreadId>;

/// Returned when a plan cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AssignmentError {
    /// Returned when round robin is asked for but the members' subscriptions differ (Kafka
    /// 0.8.2 requires identical topics and identical stream counts).
    #[error(
        "round-robin assignment is allowed only if all consumers in the group subscribe to the same topics \
         with identical stream counts: topic {topic} has streams {streams:?} but topic {head_topic} has {head_streams:?} \
         (use partition.assignment.strategy=range)"
    )]
    SubscriptionsDiffer {
        /// The topic whose streams differ.
        topic: String,
        /// Its thread ids.
        streams: Vec<String>,
        /// The first topic, compared against.
        head_topic: String,
        /// The first topic's thread ids.
        head_streams: Vec<String>,
    },
}

/// Java's `String.hashCode` (over UTF-16 code units, wrapping `i32` arithmetic).
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// Kafka's `TopicAndPartition.toString`: `"[topic,partition]"`, the text round robin hashes
/// (not [`TopicPartition`]'s Display, `topic/partition`).
pub fn topic_and_partition_string(topic: &str, partition: i32) -> String {
    format!("[{topic},{partition}]")
}

/// Each topic's subscribed thread ids, sorted as strings (`ZkUtils.getConsumersPerTopic`).
pub fn consumers_per_topic(state: &GroupState) -> BTreeMap<String, Vec<ThreadId>> {
    let mut out: BTreeMap<String, Vec<ThreadId>> = BTreeMap::new();
    for (consumer, subscription) in &state.members {
        for (topic, &n) in subscription {
            let entry = out.entry(topic.clone()).or_default();
            entry.extend((0..n).map(|i| ThreadId::new(consumer, i)));
        }
    }
    for ids in out.values_mut() {
        ids.sort();
    }
    out
}

/// Plans with `strategy`.
///
/// # Errors
///
/// [`AssignmentError::SubscriptionsDiffer`] for round robin over differing subscriptions.
pub fn plan(strategy: AssignmentStrategy, state: &GroupState) -> Result<Assignment, AssignmentError> {
    match strategy {
        AssignmentStrategy::Range => Ok(range(state)),
        AssignmentStrategy::RoundRobin => round_robin(state),
    }
}

/// Kafka 0.8.2's `RangeAssignor`, for every member of the group.
///
/// Topics without known partitions, and threads past the last partition, get nothing.
pub fn range(state: &GroupState) -> Assignment {
    let mut out = Assignment::new();
    for (topic, threads) in consumers_per_topic(state) {
        let Some(parts) = state.partitions.get(&topic) else { continue };
        let mut parts = parts.clone();
        parts.sort_unstable();
        parts.dedup();
        if threads.is_empty() {
            continue;
        }
        let per = parts.len() / threads.len();
        let extra = parts.len() % threads.len();
        for (i, thread) in threads.iter().enumerate() {
            let start = per * i + i.min(extra);
            let n = per + usize::from(i < extra);
            for &p in &parts[start..start + n] {
                out.insert(TopicPartition::new(topic.clone(), p), thread.clone());
            }
        }
    }
    out
}

/// Kafka 0.8.2's `RoundRobinAssignor`, for every member of the group.
///
/// # Errors
///
/// [`AssignmentError::SubscriptionsDiffer`] unless every topic has the same thread id set.
pub fn round_robin(state: &GroupState) -> Result<Assignment, AssignmentError> {
    let per_topic = consumers_per_topic(state);
    let mut out = Assignment::new();
    let Some((head_topic, head)) = per_topic.iter().next() else { return Ok(out) };
    let head_set: BTreeSet<&ThreadId> = head.iter().collect();
    for (topic, threads) in &per_topic {
        let set: BTreeSet<&ThreadId> = threads.iter().collect();
        if set != head_set {
            return Err(AssignmentError::SubscriptionsDiffer {
                topic: topic.clone(),
                streams: set.iter().map(|t| t.to_string()).collect(),
                head_topic: head_topic.clone(),
                head_streams: head_set.iter().map(|t| t.to_string()).collect(),
            });
        }
    }
    let cycle: Vec<&ThreadId> = head_set.into_iter().collect(); // sorted, distinct
    if cycle.is_empty() {
        return Ok(out);
    }
    let mut all: Vec<TopicPartition> = Vec::new();
    for topic in per_topic.keys() {
        if let Some(parts) = state.partitions.get(topic) {
            let mut parts = parts.clone();
            parts.sort_unstable();
            parts.dedup();
            all.extend(parts.into_iter().map(|p| TopicPartition::new(topic.clone(), p)));
        }
    }
    // Vec::sort_by_key is stable, as Scala's sortWith (TimSort) is.
    all.sort_by_key(|tp| java_string_hash(&topic_and_partition_string(&tp.topic, tp.partition)));
    for (i, tp) in all.into_iter().enumerate() {
        out.insert(tp, cycle[i % cycle.len()].clone());
    }
    Ok(out)
}

/// The part of `assignment` owned by `consumer_id`'s threads.
pub fn owned_by<'a>(
    assignment: &'a Assignment,
    consumer_id: &'a str,
) -> impl Iterator<Item = (&'a TopicPartition, &'a ThreadId)> + 'a {
    assignment.iter().filter(move |(_, t)| t.consumer_id() == consumer_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn state(members: &[(&str, &[(&str, usize)])], parts: &[(&str, i32)]) -> GroupState {
        GroupState {
            members: members
                .iter()
                .map(|(c, subs)| (c.to_string(), subs.iter().map(|(t, n)| (t.to_string(), *n)).collect()))
                .collect(),
            partitions: parts.iter().map(|(t, n)| (t.to_string(), (0..*n).collect())).collect(),
        }
    }

    fn get<'a>(a: &'a Assignment, t: &str, p: i32) -> &'a str {
        a.get(&TopicPartition::new(t, p)).map(|t| t.as_str()).unwrap_or("<none>")
    }

    #[test]
    fn thread_ids_sort_as_strings() {
        let mut ids: Vec<ThreadId> = (0..12).map(|i| ThreadId::new("c", i)).collect();
        ids.sort();
        let s: Vec<&str> = ids.iter().map(|t| t.as_str()).collect();
        assert_eq!(s, ["c-0", "c-1", "c-10", "c-11", "c-2", "c-3", "c-4", "c-5", "c-6", "c-7", "c-8", "c-9"]);
        let t = ThreadId::from("g_host-1-abcd-3");
        assert_eq!(t.consumer_id(), "g_host-1-abcd");
        assert_eq!(t.stream(), Some(3));
    }

    /// Java String.hashCode, worked by hand: h = 31*h + c.
    /// "[t,0]": '['=91 -> 91; 't'=116 -> 91*31+116 = 2937; ','=44 -> 2937*31+44 = 91091;
    /// '0'=48 -> 91091*31+48 = 2823869; ']'=93 -> 2823869*31+93 = 87540032.
    /// "[t,1]" is 31 more (the digit is one before the last char): 87540063.
    /// "[a,0]": 91 -> 91*31+97 = 2918 -> 2918*31+44 = 90502 -> 90502*31+48 = 2805610
    ///   -> 2805610*31+93 = 86974003.
    /// "[t,10]": "[t,1" = 2823869+1 = 2823870 -> 2823870*31+48 = 87540018
    ///   -> 87540018*31+93 = 2713740651, which wraps to 2713740651 - 2^32 = -1581226645.
    #[test]
    fn java_hash_code_by_hand() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("[t,0]"), 87540032);
        assert_eq!(java_string_hash("[t,1]"), 87540063);
        assert_eq!(java_string_hash("[t,2]"), 87540094);
        assert_eq!(java_string_hash("[a,0]"), 86974003);
        assert_eq!(java_string_hash("[t,10]"), -1581226645);
        // A well known Java value.
        assert_eq!(java_string_hash("hello"), 99162322);
        assert_eq!(topic_and_partition_string("t", 10), "[t,10]");
    }

    /// Two consumers, one stream each, 6 partitions: c1 takes 0..3, c2 takes 3..6.
    #[test]
    fn range_two_consumers_six_partitions() {
        let a = range(&state(&[("c1", &[("t", 1)]), ("c2", &[("t", 1)])], &[("t", 6)]));
        for p in 0..3 {
            assert_eq!(get(&a, "t", p), "c1-0");
        }
        for p in 3..6 {
            assert_eq!(get(&a, "t", p), "c2-0");
        }
    }

    /// One consumer "c" with 12 streams over 14 partitions: sorted threads are
    /// c-0, c-1, c-10, c-11, c-2, ..., c-9; n = 1, extra = 2: positions 0,1 take 2 partitions.
    /// c-0: 0,1   c-1: 2,3   c-10: 4   c-11: 5   c-2: 6   c-3: 7 ... c-9: 13.
    #[test]
    fn range_string_order_of_thread_ids() {
        let a = range(&state(&[("c", &[("t", 12)])], &[("t", 14)]));
        let expect =
            ["c-0", "c-0", "c-1", "c-1", "c-10", "c-11", "c-2", "c-3", "c-4", "c-5", "c-6", "c-7", "c-8", "c-9"];
        for (p, e) in expect.iter().enumerate() {
            assert_eq!(get(&a, "t", p as i32), *e, "partition {p}");
        }
    }

    /// Several topics, uneven counts. Members: a {x:2, y:1}, b {x:1}, c {y:2}.
    /// x (5 partitions): threads a-0, a-1, b-0; n=1, extra=2 -> a-0: 0,1; a-1: 2,3; b-0: 4.
    /// y (3 partitions): threads a-0, c-0, c-1; n=1, extra=0 -> a-0: 0; c-0: 1; c-1: 2.
    /// z (2 partitions) has no subscriber: unassigned.
    /// w: subscribed by b (3 streams) with 2 partitions: b-0: 0, b-1: 1, b-2 nothing.
    #[test]
    fn range_several_topics_uneven() {
        let s = state(
            &[("a", &[("x", 2), ("y", 1)]), ("b", &[("x", 1), ("w", 3)]), ("c", &[("y", 2)])],
            &[("x", 5), ("y", 3), ("z", 2), ("w", 2)],
        );
        let a = range(&s);
        assert_eq!(get(&a, "x", 0), "a-0");
        assert_eq!(get(&a, "x", 1), "a-0");
        assert_eq!(get(&a, "x", 2), "a-1");
        assert_eq!(get(&a, "x", 3), "a-1");
        assert_eq!(get(&a, "x", 4), "b-0");
        assert_eq!(get(&a, "y", 0), "a-0");
        assert_eq!(get(&a, "y", 1), "c-0");
        assert_eq!(get(&a, "y", 2), "c-1");
        assert_eq!(get(&a, "w", 0), "b-0");
        assert_eq!(get(&a, "w", 1), "b-1");
        assert_eq!(get(&a, "z", 0), "<none>");
        assert_eq!(a.len(), 10);
        // round robin refuses these subscriptions
        assert!(matches!(round_robin(&s), Err(AssignmentError::SubscriptionsDiffer { .. })));
        assert!(plan(AssignmentStrategy::RoundRobin, &s).unwrap_err().to_string().contains("round-robin"));
    }

    /// Range with thread ids of consumers whose names sort around their stream numbers:
    /// "g_c-1" x2 streams and "g_c" x11 streams on one topic of 4 partitions.
    /// Thread ids: g_c-0 .. g_c-10 and g_c-1-0, g_c-1-1. Sorted as strings:
    /// g_c-0, g_c-1, g_c-1-0, g_c-1-1, g_c-10, g_c-2, ..., g_c-9 (13 threads).
    /// 4 partitions / 13 threads: n = 0, extra = 4: positions 0..4 take one each.
    #[test]
    fn range_more_threads_than_partitions() {
        let a = range(&state(&[("g_c", &[("t", 11)]), ("g_c-1", &[("t", 2)])], &[("t", 4)]));
        assert_eq!(get(&a, "t", 0), "g_c-0");
        assert_eq!(get(&a, "t", 1), "g_c-1");
        assert_eq!(get(&a, "t", 2), "g_c-1-0");
        assert_eq!(get(&a, "t", 3), "g_c-1-1");
    }

    /// Round robin, topics "a" (2 partitions) and "t" (3 partitions), consumers c1, c2 with one
    /// stream on each. Hashes: [a,0]=86974003, [a,1]=86974034, [t,0]=87540032,
    /// [t,1]=87540063, [t,2]=87540094. Order: [a,0] [a,1] [t,0] [t,1] [t,2];
    /// cycle c1-0, c2-0: [a,0]->c1-0 [a,1]->c2-0 [t,0]->c1-0 [t,1]->c2-0 [t,2]->c1-0.
    #[test]
    fn round_robin_two_topics() {
        let s = state(&[("c1", &[("a", 1), ("t", 1)]), ("c2", &[("a", 1), ("t", 1)])], &[("a", 2), ("t", 3)]);
        let a = round_robin(&s).unwrap();
        assert_eq!(get(&a, "a", 0), "c1-0");
        assert_eq!(get(&a, "a", 1), "c2-0");
        assert_eq!(get(&a, "t", 0), "c1-0");
        assert_eq!(get(&a, "t", 1), "c2-0");
        assert_eq!(get(&a, "t", 2), "c1-0");
    }

    /// Round robin where the hash order is not the numeric order: topic "t" with 11
    /// partitions, one consumer "c" with 3 streams. "[t,10]" hashes to -1581226645 (negative,
    /// by wrap-around) so it sorts FIRST; then [t,0] .. [t,9] (87540032 + 31*p).
    /// Order: 10,0,1,...,9; cycle c-0,c-1,c-2:
    /// 10->c-0 0->c-1 1->c-2 2->c-0 3->c-1 4->c-2 5->c-0 6->c-1 7->c-2 8->c-0 9->c-1.
    #[test]
    fn round_robin_hash_order_with_wraparound() {
        assert!(java_string_hash("[t,10]") < java_string_hash("[t,0]"));
        let a = round_robin(&state(&[("c", &[("t", 3)])], &[("t", 11)])).unwrap();
        let expect = [
            (10, "c-0"),
            (0, "c-1"),
            (1, "c-2"),
            (2, "c-0"),
            (3, "c-1"),
            (4, "c-2"),
            (5, "c-0"),
            (6, "c-1"),
            (7, "c-2"),
            (8, "c-0"),
            (9, "c-1"),
        ];
        for (p, t) in expect {
            assert_eq!(get(&a, "t", p), t, "partition {p}");
        }
    }

    /// Round robin with 12 streams per consumer: the cycle is in string order
    /// (c-0, c-1, c-10, c-11, c-2, ...). One consumer "c" with 12 streams, topic "t" with 4
    /// partitions: order [t,0] [t,1] [t,2] [t,3] -> c-0, c-1, c-10, c-11.
    #[test]
    fn round_robin_string_order_cycle() {
        let a = round_robin(&state(&[("c", &[("t", 12)])], &[("t", 4)])).unwrap();
        assert_eq!(get(&a, "t", 0), "c-0");
        assert_eq!(get(&a, "t", 1), "c-1");
        assert_eq!(get(&a, "t", 2), "c-10");
        assert_eq!(get(&a, "t", 3), "c-11");
    }

    #[test]
    fn round_robin_rejects_different_stream_counts() {
        // same topics, different counts per topic for one consumer
        let s = state(&[("c1", &[("a", 2), ("b", 1)]), ("c2", &[("a", 1), ("b", 1)])], &[("a", 2), ("b", 2)]);
        assert!(round_robin(&s).is_err());
        // identical: fine
        let s = state(&[("c1", &[("a", 2), ("b", 2)]), ("c2", &[("a", 1), ("b", 1)])], &[("a", 2), ("b", 2)]);
        assert!(round_robin(&s).is_ok());
    }

    fn arb_state() -> impl Strategy<Value = GroupState> {
        let topics = prop::collection::btree_map("[a-e]{1,3}", 0i32..20, 1..4);
        topics.prop_flat_map(|parts| {
            let names: Vec<String> = parts.keys().cloned().collect();
            let sub = prop::collection::btree_map(prop::sample::select(names), 1usize..13, 1..4);
            let members = prop::collection::btree_map("c[0-9]{1,2}", sub, 1..6);
            (members, Just(parts)).prop_map(|(members, parts)| GroupState {
                members,
                partitions: parts.into_iter().map(|(t, n)| (t, (0..n).rev().collect())).collect(),
            })
        })
    }

    fn check_each_once(s: &GroupState, a: &Assignment) {
        let subscribed = consumers_per_topic(s);
        for (topic, parts) in &s.partitions {
            for &p in parts {
                let owner = a.get(&TopicPartition::new(topic.clone(), p));
                match subscribed.get(topic) {
                    Some(threads) => assert!(threads.contains(owner.expect("assigned"))),
                    None => assert!(owner.is_none()),
                }
            }
        }
        let total: usize = subscribed.keys().map(|t| s.partitions[t].len()).sum();
        assert_eq!(a.len(), total);
    }

    proptest! {
        #[test]
        fn range_assigns_each_partition_once_and_balances(s in arb_state()) {
            let a = range(&s);
            check_each_once(&s, &a);
            for (topic, threads) in consumers_per_topic(&s) {
                let counts: Vec<usize> = threads.iter()
                    .map(|t| a.iter().filter(|(tp, o)| tp.topic == topic && *o == t).count())
                    .collect();
                let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
                prop_assert!(max - min <= 1, "topic {} counts {:?}", topic, counts);
            }
        }

        #[test]
        fn round_robin_assigns_each_partition_once_and_balances(s in arb_state()) {
            // make subscriptions identical: every member takes every topic with one count
            let mut s = s;
            let topics: Vec<String> = s.partitions.keys().cloned().collect();
            for (i, sub) in s.members.values_mut().enumerate() {
                *sub = topics.iter().map(|t| (t.clone(), 1 + i % 3)).collect();
            }
            let a = round_robin(&s).unwrap();
            check_each_once(&s, &a);
            let threads = consumers_per_topic(&s).into_values().next().unwrap();
            let counts: Vec<usize> = threads.iter().map(|t| a.values().filter(|o| *o == t).count()).collect();
            let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
            prop_assert!(max - min <= 1);
        }
    }
}

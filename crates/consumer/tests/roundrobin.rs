//! `partition.assignment.strategy=roundrobin` on a real ZooKeeper and a FakeCluster: three
//! members with different stream counts (each the same for both topics, as Kafka 0.8.2
//! requires) own exactly what Java's `RoundRobinAssignor` computes, each stream gets the
//! messages of the partitions its thread owns, and a member whose subscription differs makes
//! the group's rebalance fail with Java's reason until it leaves.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gregor_consumer::assignment::{self, AssignmentStrategy, GroupState};
use gregor_consumer::{ConsumerConfig, ConsumerConnector, Error, KafkaStream, TopicPartition};
use gregor_serde::StringDecoder;
use gregor_testkit::FakeCluster;

const GROUP: &str = "grr";

/// What Java 0.8.2 computes for members `grr_a` (2 streams), `grr_b` (1) and `grr_c` (11) on
/// topics `ra` (12 partitions) and `rb` (7): the 14 thread ids sorted as strings (`grr_c-10`
/// before `grr_c-2`) and cycled over the 19 pairs sorted by `"[topic,partition]".hashCode()`.
/// Worked out independently of the crate (a few lines of Python with Java's 32-bit hash and a
/// stable sort).
fn java_assignment() -> BTreeMap<(&'static str, i32), &'static str> {
    let ra = [
        "grr_b-0", "grr_c-0", "grr_c-1", "grr_c-10", "grr_c-2", "grr_c-3", "grr_c-4", "grr_c-5", "grr_c-6", "grr_c-7",
        "grr_a-0", "grr_a-1",
    ];
    let rb = ["grr_c-8", "grr_c-9", "grr_a-0", "grr_a-1", "grr_b-0", "grr_c-0", "grr_c-1"];
    let mut out = BTreeMap::new();
    for (p, t) in ra.iter().enumerate() {
        out.insert(("ra", p as i32), *t);
    }
    for (p, t) in rb.iter().enumerate() {
        out.insert(("rb", p as i32), *t);
    }
    out
}

fn config(cluster: &FakeCluster, id: &str) -> ConsumerConfig {
    ConsumerConfig::builder()
        .group_id(GROUP)
        .consumer_id(id)
        .zookeeper_connect(cluster.zookeeper())
        .partition_assignment_strategy(AssignmentStrategy::RoundRobin)
        .auto_offset_reset(gregor_consumer::AutoOffsetReset::Smallest)
        .auto_commit_enable(false)
        .rebalance_backoff(Duration::from_millis(100))
        .rebalance_max_retries(3)
        .build()
        .unwrap()
}

type Streams = HashMap<String, Vec<KafkaStream<String>>>;

async fn join(cluster: &FakeCluster, id: &str, subscription: &[(&str, usize)]) -> (ConsumerConnector, Streams) {
    let c = ConsumerConnector::new(config(cluster, id)).await.unwrap();
    let topics = subscription.iter().map(|(t, n)| (t.to_string(), *n)).collect();
    let s = c.create_message_streams(topics, Arc::new(StringDecoder::new())).await.unwrap();
    (c, s)
}

/// Both topics' owner znodes as one map.
async fn all_owners(cluster: &FakeCluster) -> BTreeMap<TopicPartition, String> {
    let mut out = BTreeMap::new();
    for t in ["ra", "rb"] {
        for (p, owner) in owners(cluster, GROUP, t).await {
            out.insert(TopicPartition::new(t, p), owner);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn roundrobin_owners_match_java_streams_get_their_partitions_and_mixed_subscriptions_fail() {
    let Some(cluster) = cluster("consumer_roundrobin", 1).await else { return };
    cluster.create_topic("ra", 12, 1).await.unwrap();
    cluster.create_topic("rb", 7, 1).await.unwrap();
    for (t, n) in [("ra", 12), ("rb", 7)] {
        for p in 0..n {
            produce_values(&cluster, t, p, &[format!("{t}-{p}")]).await;
        }
    }
    let expect: BTreeMap<TopicPartition, String> =
        java_assignment().into_iter().map(|(tp, o)| (tp.into(), o.to_string())).collect();
    // the crate's planner agrees with the independent table
    let state = GroupState {
        members: [("grr_a", 2), ("grr_b", 1), ("grr_c", 11)]
            .into_iter()
            .map(|(c, n)| (c.to_string(), BTreeMap::from([("ra".to_string(), n), ("rb".to_string(), n)])))
            .collect(),
        partitions: BTreeMap::from([("ra".to_string(), (0..12).collect()), ("rb".to_string(), (0..7).collect())]),
    };
    let planned: BTreeMap<TopicPartition, String> =
        assignment::round_robin(&state).unwrap().into_iter().map(|(k, t)| (k, t.to_string())).collect();
    assert_eq!(planned, expect);

    let (a, mut sa) = join(&cluster, "a", &[("ra", 2), ("rb", 2)]).await;
    let (b, mut sb) = join(&cluster, "b", &[("ra", 1), ("rb", 1)]).await;
    let (c, mut sc) = join(&cluster, "c", &[("ra", 11), ("rb", 11)]).await;
    let members = [("grr_a", &a), ("grr_b", &b), ("grr_c", &c)];
    let settled = || async {
        all_owners(&cluster).await == expect
            && members.iter().all(|(id, m)| {
                let mine: BTreeMap<TopicPartition, String> = expect
                    .iter()
                    .filter(|(_, o)| o.starts_with(&format!("{id}-")))
                    .map(|(k, o)| (k.clone(), o.clone()))
                    .collect();
                m.owned_partitions() == mine
            })
    };
    eventually("the round-robin assignment in /owners and in each member", Duration::from_secs(20), settled).await;

    // each stream gets exactly the partitions of its thread id (stream n is thread <id>-n)
    for (id, streams) in [("grr_a", &mut sa), ("grr_b", &mut sb), ("grr_c", &mut sc)] {
        for (topic, list) in streams.iter_mut() {
            for (n, stream) in list.iter_mut().enumerate() {
                let thread = format!("{id}-{n}");
                let mine: Vec<i32> = expect
                    .iter()
                    .filter(|(tp, o)| tp.topic == *topic && **o == thread)
                    .map(|(tp, _)| tp.partition)
                    .collect();
                let mut got = Vec::new();
                while got.len() < mine.len() {
                    match tokio::time::timeout(Duration::from_secs(10), stream.next()).await {
                        Ok(Some(Ok(m))) => {
                            assert_eq!(m.value.as_deref(), Some(format!("{topic}-{}", m.partition).as_str()));
                            got.push(m.partition);
                        }
                        other => {
                            panic!("{thread} on {topic}: expected partitions {mine:?}, got {got:?} then {other:?}")
                        }
                    }
                }
                got.sort();
                assert_eq!(got, mine, "{thread} on {topic}");
            }
        }
    }

    // Java refuses round robin when subscriptions differ: other topics, or other stream counts
    // per topic. Every member's rebalance fails with that reason, and the group recovers when
    // the odd member leaves.
    for (odd, subscription) in [("d", vec![("ra", 1)]), ("e", vec![("ra", 1), ("rb", 2)])] {
        let failed_before = a.stats().failed_rebalances;
        let (d, mut sd) = join(&cluster, odd, &subscription).await;
        let first = sd.get_mut("ra").unwrap().first_mut().unwrap();
        match tokio::time::timeout(Duration::from_secs(10), first.next()).await.expect("the failure is reported") {
            Some(Err(Error::RebalanceFailed { group, reason, .. })) => {
                assert_eq!(group, GROUP);
                assert!(
                    reason.contains("round-robin assignment is allowed only if all consumers in the group subscribe to the same topics"),
                    "{reason}"
                );
            }
            other => panic!("member {odd}: expected RebalanceFailed, got {other:?}"),
        }
        eventually("the other members' rebalances to fail too", Duration::from_secs(10), || async {
            a.stats().failed_rebalances > failed_before
        })
        .await;
        d.shutdown().await.unwrap();
        eventually("the group back to the round-robin assignment", Duration::from_secs(20), settled).await;
    }
    for m in [a, b, c] {
        m.shutdown().await.unwrap();
    }
    cluster.shutdown().await;
}

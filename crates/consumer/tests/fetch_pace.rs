//! A partition at its end does not hold back another of the same broker. A broker holds a
//! Fetch for `fetch.wait.max.ms` when every partition it is asked data for is at its end; a
//! fetcher that asked so while another partition's chunk waited for room in its stream would
//! leave that partition unfetched until the poll came back: one chunk per `fetch.wait.max.ms`
//! for a partition with a backlog, whenever its neighbour is caught up and the app is not far
//! ahead of the fetches.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gregor_consumer::{AutoOffsetReset, ConsumerConfig, ConsumerConfigBuilder, ConsumerConnector, KafkaStream};
use gregor_serde::StringDecoder;
use gregor_testkit::FakeCluster;

const BACKLOG: usize = 100;

/// A member of `group` (from the smallest offset, no auto commit, and `settings`) with its one
/// stream of `topic`.
async fn member(
    cluster: &FakeCluster,
    group: &str,
    topic: &str,
    settings: impl FnOnce(ConsumerConfigBuilder) -> ConsumerConfigBuilder,
) -> (ConsumerConnector, KafkaStream<String>) {
    let builder = ConsumerConfig::builder()
        .group_id(group)
        .zookeeper_connect(cluster.zookeeper())
        .auto_offset_reset(AutoOffsetReset::Smallest)
        .auto_commit_enable(false);
    let a = ConsumerConnector::new(settings(builder).build().unwrap()).await.unwrap();
    let mut s = a
        .create_message_streams(HashMap::from([(topic.to_string(), 1)]), Arc::new(StringDecoder::new()))
        .await
        .unwrap();
    let stream = s.get_mut(topic).unwrap().remove(0);
    (a, stream)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_caught_up_partition_does_not_pace_its_neighbours_backlog() {
    let Some(cluster) = cluster("consumer_fetch_pace", 1).await else { return };
    cluster.create_topic("pace", 2, 1).await.unwrap();
    // p0: one message, at its end after the first fetch; p1: a backlog of 34 chunks
    produce_values(&cluster, "pace", 0, &["a0".into()]).await;
    let backlog: Vec<String> = (0..BACKLOG).map(|i| format!("{i:04}{}", "b".repeat(996))).collect();
    produce_values(&cluster, "pace", 1, &backlog).await;
    let wait = Duration::from_millis(1000);
    let (a, mut stream) = member(&cluster, "gpace", "pace", |c| {
        c.fetch_message_max_bytes(4096) // 3 messages of 1,026 wire bytes a chunk
            .queued_max_message_chunks(1)
            .fetch_wait_max(wait)
    })
    .await;

    // the app takes a little time per message, so the next chunk of p1 is fetched while the
    // stream is still full and waits for room. Timed from p1's first message (the start is
    // the other test's).
    let mut first = None;
    let mut p1 = Vec::new();
    let mut p0 = 0;
    while p1.len() < BACKLOG {
        let m = tokio::time::timeout(Duration::from_secs(60), stream.next())
            .await
            .expect("the backlog keeps coming")
            .expect("the stream is open")
            .expect("no stream error");
        match m.partition {
            0 => p0 += 1,
            _ => {
                first.get_or_insert_with(tokio::time::Instant::now);
                p1.push(m.offset);
            }
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let took = first.expect("p1 came").elapsed();
    assert_eq!(p0, 1);
    assert!(p1.iter().copied().eq(0..BACKLOG as i64), "p1 in order, once each");
    // 34 chunks: paced by p0's long polls they take many seconds (measured: 16 s); fetched as
    // room frees, a fraction of one
    eprintln!("fetch_pace: {BACKLOG} messages of p1 in {took:?}");
    assert!(took < 5 * wait, "p1's backlog took {took:?}: paced by p0's long polls of {wait:?}");
    a.shutdown().await.unwrap();
    cluster.shutdown().await;
}

/// The partitions a rebalance gives a broker's fetcher reach it together: one that came a
/// moment after the others (its offset looked up in between) waited for the long poll of
/// those already fetched, `fetch.wait.max.ms` when they were at their end.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn partitions_handed_over_together_are_fetched_together() {
    let Some(cluster) = cluster("consumer_fetch_together", 1).await else { return };
    cluster.create_topic("together", 2, 1).await.unwrap();
    // p0 empty: the first fetch finds it at its end; p1 has a message
    produce_values(&cluster, "together", 1, &["b0".into()]).await;
    let wait = Duration::from_millis(2000);
    // no commit: each offset is looked up
    let (a, mut stream) = member(&cluster, "gtogether", "together", |c| c.fetch_wait_max(wait)).await;
    let started = tokio::time::Instant::now();
    let m = tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .expect("p1's message comes")
        .expect("the stream is open")
        .expect("no stream error");
    let took = started.elapsed();
    assert_eq!((m.partition, m.offset, m.value.as_deref()), (1, 0, Some("b0")));
    eprintln!("fetch_together: p1's message after {took:?}");
    assert!(took < wait / 2, "p1 waited {took:?}: for p0's long poll of {wait:?}");
    a.shutdown().await.unwrap();
    cluster.shutdown().await;
}

//! `lag()` under load: while a producer writes and a slow app falls behind, every owned
//! partition's lag is its high watermark minus the next offset the app gets, where that offset
//! is exactly what the stream delivered and the high watermark never runs ahead of the
//! cluster's; once the producer stops, the high watermark catches up with the cluster's even
//! though the app is not reading (the fetchers probe it); drained, the lag is 0.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gregor_consumer::{
    AutoOffsetReset, ConsumerConfig, ConsumerConnector, KafkaStream, MessageAndMetadata, PartitionLag,
};
use gregor_serde::StringDecoder;
use gregor_testkit::FakeCluster;

const TOPIC: &str = "lg";
const PARTITIONS: i32 = 4;
const ROUNDS: usize = 30;
const PER_ROUND: usize = 10;
/// How many messages the producer stays ahead of the app while it writes.
const LEAD: usize = 120;

/// Checks one `lag()` snapshot against what the app got and the cluster's high watermarks
/// (read after the snapshot). Returns the total lag.
fn check(lag: &[PartitionLag], delivered: &BTreeMap<i32, i64>, cluster: &FakeCluster) -> i64 {
    assert_eq!(lag.len(), PARTITIONS as usize, "{lag:?}");
    let mut total = 0;
    for l in lag {
        let hw_cluster = cluster.offsets(TOPIC, l.partition).unwrap().0;
        let next = delivered.get(&l.partition).map_or(0, |o| o + 1);
        if delivered.contains_key(&l.partition) {
            assert_eq!(l.consumed, next, "consumed is the next offset the app gets: {l:?}");
        } else {
            assert!(l.consumed <= 0, "nothing delivered yet: {l:?}");
        }
        assert!(l.high_watermark <= hw_cluster, "ahead of the cluster ({hw_cluster}): {l:?}");
        if l.high_watermark >= 0 {
            assert!(l.high_watermark >= l.consumed, "{l:?}");
            assert_eq!(l.lag, l.high_watermark - l.consumed.max(0), "{l:?}");
        }
        total += l.lag;
    }
    total
}

async fn next(stream: &mut KafkaStream<String>) -> MessageAndMetadata<String> {
    tokio::time::timeout(Duration::from_secs(10), stream.next()).await.expect("a message").expect("open").expect("ok")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lag_under_load_follows_the_cluster_and_is_zero_once_drained() {
    let Some(cluster) = cluster("consumer_lag", 2).await else { return };
    cluster.create_topic(TOPIC, PARTITIONS, 1).await.unwrap();
    let a = ConsumerConnector::new(
        ConsumerConfig::builder()
            .group_id("glag")
            .zookeeper_connect(cluster.zookeeper())
            .auto_offset_reset(AutoOffsetReset::Smallest)
            .auto_commit_enable(false)
            .fetch_message_max_bytes(2048)
            .queued_max_message_chunks(1)
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let mut s = a
        .create_message_streams(HashMap::from([(TOPIC.to_string(), 1)]), Arc::new(StringDecoder::new()))
        .await
        .unwrap();
    let mut stream = s.remove(TOPIC).unwrap().pop().unwrap();
    let cluster = Arc::new(cluster);
    let produced = Arc::new(AtomicUsize::new(0));
    let producer = {
        let (cluster, produced) = (Arc::clone(&cluster), Arc::clone(&produced));
        tokio::spawn(async move {
            for r in 0..ROUNDS {
                for p in 0..PARTITIONS {
                    let values: Vec<String> =
                        (0..PER_ROUND).map(|i| format!("{p}-{r}-{i}-{}", "v".repeat(80))).collect();
                    produce_values(&cluster, TOPIC, p, &values).await;
                    produced.fetch_add(PER_ROUND, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let total = ROUNDS * PER_ROUND * PARTITIONS as usize;

    // a slow app: it takes the next message only while the producer is LEAD messages ahead (or
    // done), however fast either runs; a lag() check every 5 messages
    let mut delivered: BTreeMap<i32, i64> = BTreeMap::new();
    let mut count = 0usize;
    let mut max_lag = 0;
    let mut checks = 0;
    while !producer.is_finished() && count < total {
        eventually("the producer to be ahead of the app", Duration::from_secs(30), async || {
            producer.is_finished() || produced.load(Ordering::SeqCst) >= count + 1 + LEAD
        })
        .await;
        let m = next(&mut stream).await;
        let prev = delivered.insert(m.partition, m.offset);
        assert_eq!(prev.map_or(0, |o| o + 1), m.offset, "in order, no gap, no duplicate");
        count += 1;
        if count % 5 == 0 {
            max_lag = max_lag.max(check(&a.lag(), &delivered, &cluster));
            checks += 1;
        }
    }
    producer.await.unwrap();
    assert!(max_lag >= 50, "the app fell behind while the producer wrote (max lag {max_lag}, {checks} checks)");

    // the app stops reading: the high watermarks still reach the cluster's
    let hw: BTreeMap<i32, i64> = (0..PARTITIONS).map(|p| (p, cluster.offsets(TOPIC, p).unwrap().0)).collect();
    assert_eq!(hw.values().sum::<i64>(), total as i64);
    eventually("lag() to see the cluster's high watermarks", Duration::from_secs(5), || async {
        a.lag().iter().all(|l| l.high_watermark == hw[&l.partition])
    })
    .await;
    let behind = check(&a.lag(), &delivered, &cluster);
    assert_eq!(behind, total as i64 - count as i64, "lag = what the app has not had yet");
    assert!(behind > 0, "still behind when the producer stopped");

    // drained: 0
    while count < total {
        let m = next(&mut stream).await;
        let prev = delivered.insert(m.partition, m.offset);
        assert_eq!(prev.map_or(0, |o| o + 1), m.offset, "in order, no gap, no duplicate");
        count += 1;
    }
    let lag = a.lag();
    assert_eq!(check(&lag, &delivered, &cluster), 0, "{lag:?}");
    assert!(lag.iter().all(|l| l.consumed == hw[&l.partition] && l.high_watermark == hw[&l.partition]), "{lag:?}");
    eprintln!("lag: max {max_lag} over {checks} checks while producing, {behind} when the producer stopped");
    a.shutdown().await.unwrap();
    Arc::try_unwrap(cluster).expect("the producer is done").shutdown().await;
}

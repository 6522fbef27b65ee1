//! A message larger than `fetch.message.max.bytes`, as Kafka 0.8.2 handles it: the partition
//! stays stuck at that offset (nothing skipped, nothing committed past it), the error comes
//! again on every fetch of it (`refresh.leader.backoff.ms` after the app has taken the
//! previous one), the other partitions keep flowing, and a consumer with a
//! larger `fetch.message.max.bytes` then reads it.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use gregor_consumer::{AutoOffsetReset, ConsumerConfig, ConsumerConnector, Error};
use gregor_serde::StringDecoder;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn oversized_message_stays_stuck_errors_again_and_a_larger_fetch_reads_it() {
    let Some(cluster) = cluster("consumer_oversized_stuck", 1).await else { return };
    cluster.create_topic("big", 2, 1).await.unwrap();
    let big = "x".repeat(5000);
    produce_values(&cluster, "big", 0, &["a0".into(), big.clone(), "a2".into()]).await;
    produce_values(&cluster, "big", 1, &["b0".into(), "b1".into()]).await;
    let backoff = Duration::from_millis(150);
    let config = |fetch: i32| {
        ConsumerConfig::builder()
            .group_id("gbig")
            .zookeeper_connect(cluster.zookeeper())
            .auto_offset_reset(AutoOffsetReset::Smallest)
            .auto_commit_enable(false)
            .refresh_leader_backoff(backoff)
            .fetch_message_max_bytes(fetch)
            .build()
            .unwrap()
    };
    let a = ConsumerConnector::new(config(1000)).await.unwrap();
    let mut s = a
        .create_message_streams(HashMap::from([("big".to_string(), 1)]), Arc::new(StringDecoder::new()))
        .await
        .unwrap();
    let stream = &mut s.get_mut("big").unwrap()[0];

    // a0 before the big message is delivered; then p0 is stuck at offset 1 and errors, again
    // and again, while p1 flows
    let mut values = Vec::new();
    let mut errors: Vec<Instant> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while errors.len() < 4 || values.len() < 5 {
        match tokio::time::timeout_at(deadline, stream.next()).await.expect("errors and p1 keep coming") {
            Some(Ok(m)) => values.push((m.partition, m.offset, m.value.unwrap())),
            Some(Err(Error::Fetch { topic, partition, offset, source })) => {
                assert_eq!((topic.as_str(), partition, offset), ("big", 0, 1), "stuck at the big message");
                assert!(
                    matches!(source, gregor_protocol::Error::MessageLargerThanFetch { .. }),
                    "the cause is the fetch size: {source}"
                );
                errors.push(Instant::now());
                if errors.len() == 2 {
                    produce_values(&cluster, "big", 1, &["b2".into(), "b3".into(), "b4".into()]).await;
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let p0: Vec<_> = values.iter().filter(|v| v.0 == 0).collect();
    assert_eq!(p0, [&(0, 0, "a0".to_string())], "nothing past the big message: {values:?}");
    let p1: Vec<&str> = values.iter().filter(|v| v.0 == 1).map(|v| v.2.as_str()).collect();
    assert_eq!(p1, ["b0", "b1", "b2", "b3", "b4"], "the other partition flows between the errors");
    // repeated, refresh.leader.backoff.ms after the app took the previous one
    for w in errors.windows(2) {
        let gap = w[1] - w[0];
        assert!(gap >= backoff - Duration::from_millis(20), "errors {gap:?} apart");
    }
    // the stuck partition shows in lag(): consumed 1 (the next offset to read), high watermark 3
    let lag = a.lag();
    let l0 = lag.iter().find(|l| l.partition == 0).unwrap();
    assert_eq!((l0.consumed, l0.high_watermark, l0.lag), (1, 3, 2), "{l0:?}");
    // committed: the offset of the big message, never past it
    a.commit_offsets().await.unwrap();
    let (d, _) = cluster.zk().get("/consumers/gbig/offsets/big/0").await.unwrap().unwrap();
    assert_eq!(d, b"1");
    a.shutdown().await.unwrap();

    // the same group with a larger fetch.message.max.bytes reads it, then what follows
    let b = ConsumerConnector::new(config(10_000)).await.unwrap();
    let mut s = b
        .create_message_streams(HashMap::from([("big".to_string(), 1)]), Arc::new(StringDecoder::new()))
        .await
        .unwrap();
    let stream = &mut s.get_mut("big").unwrap()[0];
    let mut p0 = Vec::new();
    while p0.len() < 2 {
        match tokio::time::timeout(Duration::from_secs(10), stream.next()).await.expect("the big message") {
            Some(Ok(m)) if m.partition == 0 => p0.push((m.offset, m.value.unwrap().len())),
            Some(Ok(_)) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(p0, [(1, 5000), (2, 2)]);
    b.shutdown().await.unwrap();
    cluster.shutdown().await;
}

//! The registered brokers are read again when leaders are looked for (as Java 0.8.2's leader
//! finder does), not once at connect: the only broker of a cluster restarting on another port
//! is found, fetched from, and used for the offset coordinator.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gregor_consumer::{AutoOffsetReset, ConsumerConfig, ConsumerConnector, KafkaStream, OffsetsStorage};
use gregor_serde::StringDecoder;

async fn take(stream: &mut KafkaStream<String>, n: usize, within: Duration) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + within;
    let mut out = Vec::new();
    while out.len() < n {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(Ok(m))) => out.push(m.value.unwrap()),
            Ok(other) => panic!("after {out:?}: {other:?}"),
            Err(_) => panic!("timed out after {} of {n}: {out:?}", out.len()),
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn broker_restarted_on_a_new_port_is_found_through_zookeeper() {
    let Some(cluster) = cluster("consumer_broker_port", 1).await else { return };
    cluster.create_topic("bp", 2, 1).await.unwrap();
    for p in 0..2 {
        produce_values(&cluster, "bp", p, &[format!("old-{p}")]).await;
    }
    let a = ConsumerConnector::new(
        ConsumerConfig::builder()
            .group_id("gbp")
            .zookeeper_connect(cluster.zookeeper())
            .auto_offset_reset(AutoOffsetReset::Smallest)
            .auto_commit_enable(false)
            .offsets_storage(OffsetsStorage::Kafka)
            .dual_commit_enabled(false)
            .offsets_channel_backoff(Duration::from_millis(200))
            .refresh_leader_backoff(Duration::from_millis(100))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let mut s =
        a.create_message_streams(HashMap::from([("bp".to_string(), 1)]), Arc::new(StringDecoder::new())).await.unwrap();
    let stream = &mut s.get_mut("bp").unwrap()[0];
    assert_eq!(take(stream, 2, Duration::from_secs(10)).await, ["old-0", "old-1"]);
    a.commit_offsets().await.unwrap();

    // the one broker the connector knew goes, and comes back elsewhere
    let old = cluster.broker_addr(0).unwrap();
    cluster.kill_broker(0).await.unwrap();
    let new = cluster.restart_broker_on_new_port(0).await.unwrap();
    assert_ne!(old.port(), new.port());
    cluster.wait_for_leaders("bp", Duration::from_secs(10)).await.unwrap();
    for p in 0..2 {
        produce_values(&cluster, "bp", p, &[format!("new-{p}")]).await;
    }
    assert_eq!(take(stream, 2, Duration::from_secs(15)).await, ["new-0", "new-1"], "fetched from the new port");
    // the offset coordinator is looked up among the brokers registered now, too
    tokio::time::timeout(Duration::from_secs(15), a.commit_offsets()).await.expect("commit in time").unwrap();
    let fetched = {
        let mut c = Conn::open(new).await;
        c.call(
            1,
            &gregor_protocol::messages::OffsetFetchRequest::new(
                "gbp",
                vec![gregor_protocol::messages::OffsetFetchTopic::new("bp", vec![0, 1])],
            ),
        )
        .await
    };
    let mut offsets: Vec<(i32, i64)> = fetched.topics[0].partitions.iter().map(|p| (p.partition, p.offset)).collect();
    offsets.sort();
    assert_eq!(offsets, [(0, 2), (1, 2)]);
    a.shutdown().await.unwrap();
    cluster.shutdown().await;
}

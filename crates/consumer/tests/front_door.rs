//! The Rust front door on a real ZooKeeper and a FakeCluster: `subscribe([..])` and
//! `subscribe_filter(..)` with typed decoders, streams read with `futures::StreamExt`
//! combinators (`select_all`, `map`, `take`, `collect`), and the inherent `next()` still there.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;
use futures::StreamExt;
use gregor_consumer::{AutoOffsetReset, ConsumerConfig, ConsumerConnector, Error, KafkaStream, TopicFilter};
use gregor_protocol::Compression;
use gregor_serde::StringDecoder;
use gregor_testkit::FakeCluster;

fn config(cluster: &FakeCluster, group: &str) -> ConsumerConfig {
    ConsumerConfig::builder()
        .group_id(group)
        .consumer_id("a")
        .zookeeper_connect(cluster.zookeeper())
        .auto_offset_reset(AutoOffsetReset::Smallest)
        .auto_commit_enable(false)
        .build()
        .unwrap()
}

/// `key-<topic>-<p>-<i>` / `<topic>-<p>-<i>` on each partition.
async fn produce_keyed(cluster: &FakeCluster, topic: &str, partitions: i32, per_partition: usize) {
    for p in 0..partitions {
        let leader = cluster.leader(topic, p).expect("a leader");
        let mut c = Conn::open(cluster.broker_addr(leader).expect("its address")).await;
        let msgs = (0..per_partition)
            .map(|i| msg(Some(&format!("key-{topic}-{p}-{i}")), &format!("{topic}-{p}-{i}")))
            .collect();
        let r = c.call(0, &produce(topic, p, 1, msgs, Compression::None)).await;
        assert_eq!(r.topics[0].partitions[0].error_code, 0, "produce to {topic}/{p}");
    }
}

fn expected(topics: &[(&str, i32)], per_partition: usize) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (t, partitions) in topics {
        for p in 0..*partitions {
            for i in 0..per_partition {
                out.insert(format!("{t}-{p}-{i}"));
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn subscribe_builds_typed_streams_that_futures_combinators_read() {
    let Some(cluster) = cluster("consumer_front_door", 1).await else { return };
    for (t, n) in [("fa", 3), ("fb", 1), ("other", 1)] {
        cluster.create_topic(t, n, 1).await.unwrap();
        cluster.wait_for_leaders(t, Duration::from_secs(10)).await.unwrap();
    }
    produce_keyed(&cluster, "fa", 3, 4).await;
    produce_keyed(&cluster, "fb", 1, 4).await;
    produce_keyed(&cluster, "other", 1, 2).await;

    // a topic list: 2 streams per topic, values and keys decoded, in topic then stream order
    let c = ConsumerConnector::new(config(&cluster, "gfd")).await.unwrap();
    assert!(matches!(c.subscribe(["fa"]).streams(0).start().await, Err(Error::InvalidSubscription(_))));
    let streams: Vec<KafkaStream<String, String>> = c
        .subscribe(["fb", "fa"])
        .streams(2)
        .decoder(StringDecoder::new())
        .key_decoder(StringDecoder::new())
        .start()
        .await
        .unwrap();
    let topics: Vec<Option<&str>> = streams.iter().map(|s| s.topic()).collect();
    assert_eq!(topics, [Some("fa"), Some("fa"), Some("fb"), Some("fb")]);
    assert!(matches!(c.subscribe(["fa"]).start().await, Err(Error::StreamsAlreadyCreated)));

    let want = expected(&[("fa", 3), ("fb", 1)], 4);
    let got: Vec<(String, String)> = tokio::time::timeout(
        Duration::from_secs(20),
        futures::stream::select_all(streams)
            .map(|m| {
                let m = m.expect("a message");
                let value = m.value.expect("a value");
                assert_eq!(m.key.as_deref(), Some(format!("key-{value}").as_str()), "the key decoder ran");
                assert!(
                    value.starts_with(&format!("{}-{}-", m.topic, m.partition)),
                    "{value} from {}/{}",
                    m.topic,
                    m.partition
                );
                (m.topic, value)
            })
            .take(want.len())
            .collect(),
    )
    .await
    .expect("every message within 20 s");
    assert_eq!(got.iter().map(|(_, v)| v.clone()).collect::<BTreeSet<_>>(), want);
    assert_eq!(got.len(), want.len(), "no message twice");
    assert!(got.iter().all(|(t, _)| t != "other"));
    c.shutdown().await.unwrap();

    // a filter, with raw Bytes (no decoder set): StreamExt and the inherent next() on one stream
    let f = ConsumerConnector::new(config(&cluster, "gff")).await.unwrap();
    let mut streams = f.subscribe_filter(TopicFilter::Whitelist("f[ab]".into())).start().await.unwrap();
    assert_eq!(streams.len(), 1);
    let mut stream = streams.remove(0);
    assert_eq!(stream.topic(), None, "a filter's stream reads every topic it allows");
    let first = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("a message within 20 s")
        .expect("the stream is open")
        .expect("a message");
    let rest: Vec<bytes::Bytes> = tokio::time::timeout(
        Duration::from_secs(20),
        stream.by_ref().filter_map(|m| async move { m.ok().and_then(|m| m.value) }).take(want.len() - 1).collect(),
    )
    .await
    .expect("the rest within 20 s");
    let mut values: BTreeSet<String> = rest.iter().map(|v| String::from_utf8(v.to_vec()).unwrap()).collect();
    values.insert(String::from_utf8(first.value.unwrap().to_vec()).unwrap());
    assert_eq!(values, want);
    f.shutdown().await.unwrap();
    // shutdown ends the stream, for StreamExt too
    assert!(tokio::time::timeout(Duration::from_secs(10), StreamExt::next(&mut stream)).await.unwrap().is_none());
}

//! End-to-end across the crates: the async producer writes, the simple consumer and a consumer
//! group read, admin describes. Against a real ZooKeeper and a FakeCluster, or unchanged against
//! a real Kafka 0.8.2 cluster when `GREGOR_BROKERS` and `GREGOR_ZOOKEEPER` are set (see
//! `docker-compose.yml`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use gregor::admin::Admin;
use gregor::consumer::{AutoOffsetReset, ConsumerConfig, ConsumerConnector};
use gregor::producer::{AsyncProducer, ProducerConfig, Record};
use gregor::protocol::Compression;
use gregor::serde::{StringDecoder, StringEncoder};
use gregor::simple_consumer::{SimpleConsumer, SimpleConsumerConfig};
use gregor_testkit::support::{self, bounded, eventually};
use gregor_testkit::FakeCluster;

/// The cluster under test: external when the environment names one, else a FakeCluster.
struct Target {
    brokers: String,
    zookeeper: String,
    _fake: Option<FakeCluster>,
}

async fn target(name: &str) -> Option<Target> {
    if let Some(real) = gregor_testkit::external_cluster() {
        return Some(Target { brokers: real.brokers, zookeeper: real.zookeeper, _fake: None });
    }
    let fake = support::cluster(name).start().await?;
    Some(Target { brokers: fake.bootstrap(), zookeeper: fake.zookeeper().to_owned(), _fake: Some(fake) })
}

fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos();
    format!("{prefix}-{}-{}", std::process::id(), nanos % 1_000_000_000)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_with_every_codec_then_read_with_the_simple_consumer_a_group_and_admin() {
    let Some(t) = target("end-to-end").await else { return };
    let topic = unique("e2e");
    let admin = Admin::connect(&t.zookeeper, Duration::from_secs(6)).await.expect("admin connects");
    admin.create_topic(&topic, 3, 2, Vec::<(String, String)>::new()).await.expect("topic created");

    let mut sent = Vec::new();
    for codec in [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4] {
        let config = ProducerConfig::builder()
            .metadata_broker_list(&t.brokers)
            .request_required_acks(-1)
            .compression_codec(codec)
            .queue_buffering_max(Duration::from_millis(5))
            .build()
            .unwrap();
        let producer: AsyncProducer<String, String> =
            AsyncProducer::new(config, StringEncoder::new(), StringEncoder::new()).unwrap();
        let mut futures = Vec::new();
        for i in 0..250 {
            let value = format!("{codec}-{i}");
            sent.push(value.clone());
            futures.push(
                producer
                    .send(Record::new(topic.clone(), value).with_key(format!("k{i}")))
                    .await
                    .map_err(|e| e.to_string())
                    .unwrap(),
            );
        }
        for f in futures {
            tokio::time::timeout(Duration::from_secs(30), f).await.expect("delivered in time").expect("delivered");
        }
        assert!(producer.close(Duration::from_secs(10)).await.is_ok());
    }

    // the simple consumer reads every partition to its high watermark
    let simple =
        SimpleConsumer::new(SimpleConsumerConfig::builder().metadata_broker_list(&t.brokers).build().unwrap()).unwrap();
    let mut read = Vec::new();
    let mut log_ends = BTreeMap::new();
    for p in simple.partitions(&topic).await.unwrap() {
        let mut offset = 0;
        loop {
            let data = simple.fetch_partition(&topic, p, offset).await.unwrap();
            read.extend(data.messages.iter().map(|m| String::from_utf8(m.value.as_deref().unwrap().to_vec()).unwrap()));
            offset = data.next_offset;
            if offset >= data.high_watermark {
                log_ends.insert(p, data.high_watermark);
                break;
            }
        }
    }
    let mut expected = sent.clone();
    expected.sort();
    read.sort();
    assert_eq!(read, expected, "the simple consumer read every message once");

    // a group of two high-level consumers shares the partitions and reads everything
    let group = unique("e2e-group");
    let mut members = Vec::new();
    let mut readers = Vec::new();
    for i in 0..2 {
        let config = ConsumerConfig::builder()
            .zookeeper_connect(&t.zookeeper)
            .group_id(&group)
            .consumer_id(format!("m{i}"))
            .auto_offset_reset(AutoOffsetReset::Smallest)
            .build()
            .unwrap();
        let connector = ConsumerConnector::new(config).await.unwrap();
        let mut streams = connector
            .create_message_streams(HashMap::from([(topic.clone(), 1)]), Arc::new(StringDecoder::new()))
            .await
            .unwrap();
        let mut stream = streams.remove(&topic).unwrap().pop().unwrap();
        readers.push(tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(item) = stream.next().await {
                got.push(item.expect("no stream error").value.unwrap());
            }
            got
        }));
        members.push(connector);
    }
    // done when the partitions are shared out and each owner's app has taken everything up to
    // its partition's log end (a partition that changed hands is read again by its new owner)
    eventually("the group to own every partition and read each to its log end", Duration::from_secs(60), async || {
        let positions: BTreeMap<i32, i64> = members
            .iter()
            .flat_map(|m| m.lag())
            .filter(|l| l.topic == topic)
            .map(|l| (l.partition, l.consumed))
            .collect();
        let owners = members.iter().map(|m| m.owned_partitions().len()).sum::<usize>();
        if positions == log_ends && owners == log_ends.len() {
            Ok(())
        } else {
            Err(format!("positions {positions:?} of log ends {log_ends:?}, {owners} owned"))
        }
    })
    .await;
    for connector in &members {
        connector.shutdown().await.unwrap();
    }
    let mut consumed = Vec::new();
    for reader in readers {
        consumed.extend(bounded("a stream ending after its shutdown", Duration::from_secs(30), reader).await.unwrap());
    }
    consumed.sort();
    consumed.dedup();
    assert_eq!(consumed, expected, "the group delivered every message");

    // admin sees the topic and the group's committed offsets: no lag left
    let described = admin.describe_topics(&Default::default()).await.unwrap();
    assert!(described.iter().any(|d| d.name == topic));
    let rows = admin.group_offsets(&group, gregor::admin::OffsetStorage::Zookeeper).await.unwrap();
    assert_eq!(rows.iter().filter(|r| r.topic == topic).count(), 3);
    assert!(rows.iter().filter(|r| r.topic == topic).all(|r| r.lag == Some(0)), "{rows:?}");
}

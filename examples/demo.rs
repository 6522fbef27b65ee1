//! gregor's demo: a real ZooKeeper and a 3-broker FakeCluster; 100,000 messages sent with the
//! async producer, read back with the simple consumer, then consumed by a group of 3
//! high-level consumers coordinated through ZooKeeper.
//!
//! Run: `cargo run --release --example demo` (needs Debian's `zookeeper` package: java and
//! /usr/share/java/zookeeper.jar).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gregor::consumer::{AutoOffsetReset, ConsumerConfig, ConsumerConnector};
use gregor::producer::{AsyncProducer, ProducerConfig, Record};
use gregor::protocol::Compression;
use gregor::serde::StringDecoder;
use gregor::serde::StringEncoder;
use gregor::simple_consumer::{SimpleConsumer, SimpleConsumerConfig};
use gregor_testkit::zookeeper::ZooKeeperServer;
use gregor_testkit::FakeCluster;

const TOPIC: &str = "demo";
const PARTITIONS: i32 = 6;
const MESSAGES: usize = 100_000;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let zookeeper = ZooKeeperServer::start()?;
    let cluster = FakeCluster::start(3, zookeeper.connect_string()).await?;
    cluster.create_topic(TOPIC, PARTITIONS, 2).await?;
    println!(
        "ZooKeeper {} and brokers {} up in {:.1?}",
        zookeeper.connect_string(),
        cluster.bootstrap(),
        started.elapsed()
    );
    println!("topic {TOPIC}: {PARTITIONS} partitions, replication factor 2\n");

    // the async producer: acks=-1, snappy, batches of up to 1,000 messages or 10 ms
    let config = ProducerConfig::builder()
        .metadata_broker_list(cluster.bootstrap())
        .client_id("gregor-demo")
        .request_required_acks(-1)
        .compression_codec(Compression::Snappy)
        .batch_num_messages(1_000)
        .queue_buffering_max(Duration::from_millis(10))
        .queue_buffering_max_messages(20_000)
        .build()?;
    let producer: AsyncProducer<String, String> =
        AsyncProducer::new(config, StringEncoder::new(), StringEncoder::new())?;
    let t = Instant::now();
    let mut deliveries = Vec::with_capacity(MESSAGES);
    for i in 0..MESSAGES {
        let record = Record::new(TOPIC, format!("event {i}: temperature={}.{} C", 15 + i % 17, i % 10))
            .with_key(format!("sensor-{}", i % 997));
        deliveries.push(producer.send(record).await.map_err(|e| e.to_string())?);
    }
    let mut sent: BTreeMap<i32, (usize, i64, i64)> = BTreeMap::new();
    let mut failed = 0;
    for d in deliveries {
        match d.await {
            Ok(meta) => {
                let e = sent.entry(meta.partition).or_insert((0, i64::MAX, i64::MIN));
                e.0 += 1;
                e.1 = e.1.min(meta.offset);
                e.2 = e.2.max(meta.offset);
            }
            Err(_) => failed += 1,
        }
    }
    let produce_time = t.elapsed();
    let report = producer.close(Duration::from_secs(10)).await;
    println!(
        "produced {} messages in {:.2?}: {:.0} msg/s ({failed} failed, {} undelivered at close)",
        MESSAGES - failed,
        produce_time,
        (MESSAGES - failed) as f64 / produce_time.as_secs_f64(),
        report.undelivered.len()
    );

    // read everything back with the simple consumer, one fetch covering every partition
    let consumer = SimpleConsumer::new(
        SimpleConsumerConfig::builder().metadata_broker_list(cluster.bootstrap()).client_id("gregor-demo").build()?,
    )?;
    let t = Instant::now();
    let mut next: BTreeMap<i32, i64> = (0..PARTITIONS).map(|p| (p, 0)).collect();
    let mut read: BTreeMap<i32, usize> = BTreeMap::new();
    let mut hw: BTreeMap<i32, i64> = BTreeMap::new();
    while read.values().sum::<usize>() < MESSAGES - failed {
        let requests: Vec<(&str, i32, i64)> = next.iter().map(|(p, o)| (TOPIC, *p, *o)).collect();
        let batch = consumer.fetch(&requests).await?;
        for data in batch.data() {
            *read.entry(data.partition).or_default() += data.messages.len();
            next.insert(data.partition, data.next_offset);
            hw.insert(data.partition, data.high_watermark);
        }
        if t.elapsed() > Duration::from_secs(60) {
            return Err("reading back took more than 60 s".into());
        }
    }
    let consume_time = t.elapsed();
    let total: usize = read.values().sum();
    println!(
        "consumed {total} messages in {consume_time:.2?}: {:.0} msg/s\n",
        total as f64 / consume_time.as_secs_f64()
    );

    println!(
        "{:>9} {:>7} {:>9} {:>9} {:>9} {:>10}",
        "partition", "leader", "produced", "consumed", "offsets", "high wm"
    );
    for p in 0..PARTITIONS {
        let (n, first, last) = sent.get(&p).copied().unwrap_or((0, 0, -1));
        let leader = cluster.leader(TOPIC, p).map_or("-".to_string(), |l| l.to_string());
        println!(
            "{p:>9} {leader:>7} {n:>9} {:>9} {:>9} {:>10}",
            read.get(&p).copied().unwrap_or(0),
            format!("{first}-{last}"),
            hw.get(&p).copied().unwrap_or(0)
        );
    }
    consumer.close().await;

    // a consumer group: 3 high-level consumers share the 6 partitions through ZooKeeper
    let group = consumer_group(&cluster, MESSAGES - failed).await?;
    cluster.shutdown().await;
    if total != MESSAGES - failed || failed > 0 || group != MESSAGES - failed {
        return Err(format!(
            "{failed} messages failed, {total} read back and {group} consumed by the group of {MESSAGES}"
        )
        .into());
    }
    Ok(())
}

/// Three members of group `demo-group`, one stream each, consume the topic from the beginning;
/// returns how many messages they got together.
async fn consumer_group(cluster: &FakeCluster, expected: usize) -> Result<usize, Box<dyn std::error::Error>> {
    println!("\nconsumer group demo-group: 3 members, 1 stream each, range assignment");
    let t = Instant::now();
    let mut members = Vec::new();
    for i in 0..3 {
        let config = ConsumerConfig::builder()
            .zookeeper_connect(cluster.zookeeper())
            .group_id("demo-group")
            .consumer_id(format!("member-{i}"))
            .auto_offset_reset(AutoOffsetReset::Smallest)
            .build()?;
        let connector = ConsumerConnector::new(config).await?;
        let mut streams = connector
            .create_message_streams(HashMap::from([(TOPIC.to_owned(), 1)]), Arc::new(StringDecoder::new()))
            .await?;
        let stream = streams.remove(TOPIC).and_then(|mut v| v.pop()).ok_or("no stream")?;
        members.push((connector, stream));
    }
    // let the last join settle, then every member drains what it owns
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut tasks = Vec::new();
    for (connector, mut stream) in members {
        tasks.push(tokio::spawn(async move {
            let mut count = 0usize;
            let idle = Duration::from_millis(1500);
            while let Ok(Some(item)) = tokio::time::timeout(idle, stream.next()).await {
                if item.is_ok() {
                    count += 1;
                }
            }
            (connector, count)
        }));
    }
    let mut done = Vec::new();
    for task in tasks {
        done.push(task.await?);
    }
    // ownership and lag read while all three are still members (a member shutting down makes
    // the others rebalance)
    let mut total = 0;
    println!("{:>20} {:>18} {:>9} {:>6}", "member", "partitions owned", "consumed", "lag");
    for (connector, count) in &done {
        let owned: Vec<String> = connector.owned_partitions().keys().map(|(_, p)| p.to_string()).collect();
        let lag: i64 = connector.lag().iter().map(|l| l.lag).sum();
        println!("{:>20} {:>18} {:>9} {:>6}", connector.consumer_id(), owned.join(","), count, lag);
        total += count;
    }
    for (connector, _) in done {
        connector.shutdown().await?;
    }
    println!(
        "the group consumed {total} of {expected} messages in {:.2?} (offsets committed to ZooKeeper)",
        t.elapsed()
    );
    Ok(total)
}

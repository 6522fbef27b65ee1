//! gregor's demo: 100,000 messages sent with the async producer, read back with the simple
//! consumer, then consumed by a group of 3 high-level consumers coordinated through ZooKeeper.
//!
//! Run: `bash scripts/demo.sh` on a fresh Debian machine (it installs ZooKeeper when missing),
//! or `cargo run --release --example demo` where Debian's `zookeeper` package is installed: a
//! real ZooKeeper and a 3-broker FakeCluster are started here. With `GREGOR_BROKERS` and
//! `GREGOR_ZOOKEEPER` set (e.g. the cluster of `docker-compose.yml`), that cluster is used
//! instead, with a topic and a group named after the run.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gregor::consumer::{AutoOffsetReset, ConsumerConfig, ConsumerConnector};
use gregor::producer::{AsyncProducer, ProducerConfig, Record};
use gregor::protocol::Compression;
use gregor::serde::StringDecoder;
use gregor::serde::StringEncoder;
use gregor::simple_consumer::{SimpleConsumer, SimpleConsumerConfig};

const PARTITIONS: i32 = 6;
const MESSAGES: usize = 100_000;
/// How long the group may take to consume everything.
const GROUP_WITHIN: Duration = Duration::from_secs(120);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    // on an external cluster a re-run must not read an earlier run's messages
    let run = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let external = gregor_testkit::external_cluster().is_some();
    let (topic, group) = if external {
        (format!("demo-{run}"), format!("demo-group-{run}"))
    } else {
        ("demo".into(), "demo-group".into())
    };
    let topic = topic.as_str();
    let cluster = common::cluster(topic, PARTITIONS).await?;
    println!("cluster ready in {:.1?}", started.elapsed());
    println!("topic {topic}: {PARTITIONS} partitions\n");

    // the async producer: acks=-1, snappy, batches of up to 1,000 messages or 10 ms
    let config = ProducerConfig::builder()
        .metadata_broker_list(&cluster.brokers)
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
        let record = Record::new(topic, format!("event {i}: temperature={}.{} C", 15 + i % 17, i % 10))
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
        SimpleConsumerConfig::builder().metadata_broker_list(&cluster.brokers).client_id("gregor-demo").build()?,
    )?;
    let t = Instant::now();
    let mut next: BTreeMap<i32, i64> = (0..PARTITIONS).map(|p| (p, 0)).collect();
    let mut read: BTreeMap<i32, usize> = BTreeMap::new();
    let mut hw: BTreeMap<i32, i64> = BTreeMap::new();
    while read.values().sum::<usize>() < MESSAGES - failed {
        let requests: Vec<(&str, i32, i64)> = next.iter().map(|(p, o)| (topic, *p, *o)).collect();
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
        let leader = consumer.leader(topic, p).await.map_or("-".to_string(), |(id, _)| id.to_string());
        println!(
            "{p:>9} {leader:>7} {n:>9} {:>9} {:>9} {:>10}",
            read.get(&p).copied().unwrap_or(0),
            format!("{first}-{last}"),
            hw.get(&p).copied().unwrap_or(0)
        );
    }
    consumer.close().await;

    // a consumer group: 3 high-level consumers share the 6 partitions through ZooKeeper
    let group = consumer_group(&cluster.zookeeper, topic, &group, MESSAGES - failed).await?;
    drop(cluster);
    if total != MESSAGES - failed || failed > 0 || group != MESSAGES - failed {
        return Err(format!(
            "{failed} messages failed, {total} read back and {group} consumed by the group of {MESSAGES}"
        )
        .into());
    }
    Ok(())
}

/// Three members of `group`, one stream each, consume `topic` from the beginning until they
/// have `expected` messages between them; returns how many they got.
async fn consumer_group(
    zookeeper: &str,
    topic: &str,
    group: &str,
    expected: usize,
) -> Result<usize, Box<dyn std::error::Error>> {
    println!("\nconsumer group {group}: 3 members, 1 stream each, range assignment");
    let t = Instant::now();
    let mut members = Vec::new();
    for i in 0..3 {
        let config = ConsumerConfig::builder()
            .zookeeper_connect(zookeeper)
            .group_id(group)
            .consumer_id(format!("member-{i}"))
            .auto_offset_reset(AutoOffsetReset::Smallest)
            .build()?;
        let connector = ConsumerConnector::new(config).await?;
        let stream =
            connector.subscribe([topic]).decoder(StringDecoder::new()).start().await?.pop().ok_or("no stream")?;
        members.push((connector, stream));
    }
    // every member reads what it owns (ownership moves while the others join) until the group
    // has every message between them, or the time is up; a message is counted once however
    // often it is delivered (a rebalance may hand the next owner a message again)
    let seen: Arc<Mutex<HashSet<(i32, i64)>>> = Arc::default();
    let deadline = tokio::time::Instant::now() + GROUP_WITHIN;
    let mut tasks = Vec::new();
    for (connector, mut stream) in members {
        let seen = Arc::clone(&seen);
        tasks.push(tokio::spawn(async move {
            let mut count = 0usize;
            while seen.lock().unwrap().len() < expected && tokio::time::Instant::now() < deadline {
                if let Ok(Some(Ok(m))) = tokio::time::timeout(Duration::from_millis(100), stream.next()).await {
                    count += 1;
                    seen.lock().unwrap().insert((m.partition, m.offset));
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
    let mut deliveries = 0;
    println!("{:>36} {:>18} {:>9} {:>6}", "member", "partitions owned", "consumed", "lag");
    for (connector, count) in &done {
        let owned: Vec<String> = connector.owned_partitions().keys().map(|tp| tp.partition.to_string()).collect();
        let lag: i64 = connector.lag().iter().map(|l| l.lag).sum();
        println!("{:>36} {:>18} {:>9} {:>6}", connector.consumer_id(), owned.join(","), count, lag);
        deliveries += count;
    }
    let total = seen.lock().unwrap().len();
    for (connector, _) in done {
        connector.shutdown().await?;
    }
    println!(
        "the group consumed {total} of {expected} messages in {:.2?} ({} delivered twice; offsets committed to ZooKeeper)",
        t.elapsed(),
        deliveries - total
    );
    Ok(total)
}

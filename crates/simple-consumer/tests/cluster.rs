//! The simple consumer against a FakeCluster of three brokers coordinated by a real ZooKeeper.
//!
//! Test data is produced with the raw codec (gregor-protocol's MessageSet over a gregor-net
//! connection), never with gregor-producer. Needs java and ZooKeeper (`apt-get install
//! default-jre-headless zookeeper`): without them the tests fail, or skip when
//! `GREGOR_ALLOW_SKIP=1` is set outside CI.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use gregor_net::{ConnectionConfig, MetadataCache, Pool};
use gregor_protocol::frame::ApiKey;
use gregor_protocol::messages::{AnyRequest, ProducePartition, ProduceRequest, ProduceTopic};
use gregor_protocol::{Compression, ErrorCode, Message, MessageSet};
use gregor_simple_consumer::{
    Error, FetchedMessage, SimpleConsumer, SimpleConsumerConfig, SimpleConsumerConfigBuilder, EARLIEST_TIME,
    LATEST_TIME,
};
use gregor_testkit::fault::{Fault, Rule};
use gregor_testkit::support::{cluster_or_skip, eventually};
use gregor_testkit::{FakeCluster, LoggedRequest};

const CLIENT_ID: &str = "simple-consumer-test";

/// Settings for tests: short backoffs, generous retries.
fn config(c: &FakeCluster) -> SimpleConsumerConfigBuilder {
    SimpleConsumerConfig::builder()
        .metadata_broker_list(c.bootstrap())
        .client_id(CLIENT_ID)
        .refresh_leader_backoff(Duration::from_millis(50))
        .refresh_leader_backoff_max(Duration::from_millis(400))
        .refresh_leader_max_retries(30)
}

fn consumer(c: &FakeCluster) -> SimpleConsumer {
    SimpleConsumer::new(config(c).build().unwrap()).unwrap()
}

/// Produces with acks=-1 through a raw connection to the partition's current leader.
struct Producer {
    pool: Pool,
}

impl Producer {
    fn new(c: &FakeCluster) -> Producer {
        let pool = Pool::new(ConnectionConfig::builder().client_id("test-producer").build().unwrap());
        pool.set_brokers(c.broker_addrs().into_iter().map(|(id, a)| (id, a.to_string())));
        Producer { pool }
    }

    /// Appends `messages` (one wrapper when `codec` compresses); returns the first offset.
    async fn send(
        &self,
        c: &FakeCluster,
        topic: &str,
        partition: i32,
        messages: Vec<Message>,
        codec: Compression,
    ) -> i64 {
        let request = ProduceRequest {
            required_acks: -1,
            timeout: 5000,
            topics: vec![ProduceTopic::new(
                topic,
                vec![ProducePartition {
                    partition,
                    message_set: MessageSet::from_messages(messages, codec).unwrap(),
                    ..Default::default()
                }],
            )],
            ..Default::default()
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let leader = c.leader(topic, partition).expect("a leader");
            let answer = match self.pool.get(leader).await {
                Ok(conn) => conn.request(0, &request).await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match answer {
                Ok(r) if r.topics[0].partitions[0].error_code == 0 => return r.topics[0].partitions[0].offset,
                other => {
                    // a leader move in flight: 6 means nothing was appended, so a retry cannot duplicate
                    assert!(Instant::now() < deadline, "produce to {topic}/{partition} keeps failing: {other:?}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }
}

fn text(value: &str) -> Message {
    Message::new(None, Some(Bytes::from(value.to_owned())))
}

fn texts(prefix: &str, range: std::ops::Range<usize>) -> Vec<Message> {
    range.map(|i| text(&format!("{prefix}-{i}"))).collect()
}

fn value(m: &FetchedMessage) -> String {
    String::from_utf8(m.value.as_ref().expect("a value").to_vec()).unwrap()
}

fn offsets(messages: &[FetchedMessage]) -> Vec<i64> {
    messages.iter().map(|m| m.offset).collect()
}

/// The consumer's requests of one API in the request log.
fn logged(c: &FakeCluster, api: ApiKey) -> Vec<LoggedRequest> {
    c.requests()
        .into_iter()
        .filter(|r| r.header.api_key == api && r.header.client_id.as_deref() == Some(CLIENT_ID))
        .collect()
}

/// The (topic, partition) pairs of a logged Fetch, sorted.
fn fetched_partitions(r: &LoggedRequest) -> BTreeSet<(String, i32)> {
    match &r.request {
        AnyRequest::Fetch(f) => {
            f.topics.iter().flat_map(|t| t.partitions.iter().map(|p| (t.topic.clone(), p.partition))).collect()
        }
        other => panic!("not a fetch: {other:?}"),
    }
}

/// Another live in-sync replica of the partition.
fn other_replica(c: &FakeCluster, topic: &str, partition: i32) -> i32 {
    let (leader, _, isr) = c.partition_info(topic, partition).unwrap();
    *isr.iter().find(|&&r| r != leader).unwrap_or_else(|| panic!("{topic}/{partition} has one in-sync replica"))
}

/// Waits until every replica of the partition is in sync (so a new leader has everything).
async fn wait_for_isr(c: &FakeCluster, topic: &str, partition: i32) {
    eventually(format!("every replica of {topic}/{partition} in sync"), Duration::from_secs(10), async || {
        let (_, replicas, isr) = c.partition_info(topic, partition).unwrap();
        if isr.len() == replicas.len() {
            Ok(())
        } else {
            Err(format!("isr {isr:?} of replicas {replicas:?}"))
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_partitions_of_two_topics_in_one_call_one_fetch_per_leader() {
    let c = cluster_or_skip!("sc-many", |cfg| cfg.auto_create_topics_enable = false);
    let a = BTreeMap::from([(0, vec![0, 1]), (1, vec![1, 2]), (2, vec![2, 0])]);
    let b = BTreeMap::from([(0, vec![1, 2]), (1, vec![2, 0]), (2, vec![0, 1])]);
    c.create_topic_with("a", a, BTreeMap::new()).await.unwrap();
    c.create_topic_with("b", b, BTreeMap::new()).await.unwrap();
    let producer = Producer::new(&c);
    for topic in ["a", "b"] {
        for p in 0..3 {
            let n = (p as usize + 1) * 3;
            producer.send(&c, topic, p, texts(&format!("{topic}{p}"), 0..n), Compression::None).await;
        }
    }
    let consumer = consumer(&c);
    assert_eq!(consumer.partitions("a").await.unwrap(), [0, 1, 2]);
    for (topic, p) in [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("b", 2)] {
        let (id, addr) = consumer.leader(topic, p).await.unwrap();
        assert_eq!(Some(id), c.leader(topic, p));
        assert_eq!(addr, c.broker_addr(id).unwrap().to_string());
    }
    c.clear_requests();

    let requests =
        [("a", 0, 0), ("b", 2, 0), ("a", 1, 2), ("b", 0, 0), ("a", 2, 0), ("b", 1, 4), ("nope", 0, 0), ("a", 7, 0)];
    let batch = consumer.fetch(&requests).await.unwrap();
    assert_eq!(batch.len(), 8);
    let order: Vec<(&str, i32)> = batch.iter().map(|(t, p, _)| (t, p)).collect();
    assert_eq!(order, requests.iter().map(|(t, p, _)| (*t, *p)).collect::<Vec<_>>(), "results in request order");
    for &(topic, p, offset) in &requests[..6] {
        let data = batch.get(topic, p).unwrap().as_ref().unwrap_or_else(|e| panic!("{topic}/{p}: {e}"));
        let n = (p as i64 + 1) * 3;
        assert_eq!(offsets(&data.messages), (offset..n).collect::<Vec<_>>(), "{topic}/{p}");
        assert_eq!(value(&data.messages[0]), format!("{topic}{p}-{offset}"));
        assert_eq!((data.high_watermark, data.next_offset, data.lag()), (n, n, 0));
    }
    assert_eq!(batch.message_count(), 3 + 9 + 4 + 3 + 9 + 2);
    assert!(matches!(batch.get("nope", 0), Some(Err(Error::UnknownTopic { topic })) if topic == "nope"));
    assert!(matches!(batch.get("a", 7), Some(Err(Error::UnknownPartition { partition: 7, partition_count: 3, .. }))));
    assert_eq!(batch.errors().count(), 2);

    // one Fetch per leader (no retry), each with exactly the partitions it leads
    let fetches = logged(&c, ApiKey::Fetch);
    assert_eq!(fetches.len(), 3, "{fetches:#?}");
    let mut brokers: Vec<i32> = fetches.iter().map(|r| r.broker).collect();
    brokers.sort();
    assert_eq!(brokers, [0, 1, 2]);
    for f in &fetches {
        let expected: BTreeSet<(String, i32)> = requests[..6]
            .iter()
            .filter(|(t, p, _)| c.leader(t, *p) == Some(f.broker))
            .map(|(t, p, _)| ((*t).to_owned(), *p))
            .collect();
        assert_eq!(fetched_partitions(f), expected, "broker {}", f.broker);
        assert_eq!(expected.len(), 2);
    }
    assert!(matches!(consumer.fetch(&[("a", 0, 0), ("a", 0, 1)]).await, Err(Error::DuplicatePartition { .. })));

    // the three leaders are asked at once: each holds its long poll of 500 ms on caught-up
    // partitions, and all three fetches reach the brokers within that hold (one after the
    // other, each would arrive only after the previous one was answered, 500 ms later)
    let hold = Duration::from_millis(500);
    let patient = SimpleConsumer::new(config(&c).fetch_wait_max(hold).build().unwrap()).unwrap();
    let at_end: Vec<(&str, i32, i64)> = requests[..6].iter().map(|&(t, p, _)| (t, p, (p as i64 + 1) * 3)).collect();
    patient.partitions("a").await.unwrap();
    patient.partitions("b").await.unwrap();
    c.clear_requests();
    let started = Instant::now();
    let idle = patient.fetch(&at_end).await.unwrap();
    let took = started.elapsed();
    assert_eq!((idle.message_count(), idle.errors().count()), (0, 0));
    assert!(idle.data().all(|d| d.next_offset == d.fetch_offset && d.lag() == 0));
    assert!(took >= hold - Duration::from_millis(50), "the brokers held the fetches: {took:?}");
    let arrived: Vec<std::time::SystemTime> = logged(&c, ApiKey::Fetch).iter().map(|r| r.at).collect();
    assert_eq!(arrived.len(), 3, "one fetch per leader");
    let (first, last) = (arrived.iter().min().unwrap(), arrived.iter().max().unwrap());
    let spread = last.duration_since(*first).unwrap();
    assert!(spread < hold, "the leaders were asked one after the other: the fetches arrived {spread:?} apart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_sets_read_from_the_middle_of_a_wrapper_start_at_the_offset() {
    let c = cluster_or_skip!("sc-compressed");
    c.create_topic("z", 1, 1).await.unwrap();
    let producer = Producer::new(&c);
    let codecs = [Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::None];
    for (i, codec) in codecs.into_iter().enumerate() {
        let first = producer.send(&c, "z", 0, texts(&codec.to_string(), 0..5), codec).await;
        assert_eq!(first, i as i64 * 5);
    }
    let consumer = consumer(&c);
    // 2: inside the gzip wrapper (0..=4); 7: snappy (5..=9); 12: lz4 (10..=14); 17: plain
    for start in [0, 2, 4, 7, 12, 17, 19] {
        let data = consumer.fetch_partition("z", 0, start).await.unwrap();
        assert_eq!(offsets(&data.messages), (start..20).collect::<Vec<_>>(), "from {start}");
        let (codec, i) = (codecs[start as usize / 5], start % 5);
        assert_eq!(value(&data.messages[0]), format!("{codec}-{i}"));
        assert_eq!((data.next_offset, data.high_watermark), (20, 20));
    }
    let caught_up = consumer.fetch_partition("z", 0, 20).await.unwrap();
    assert!(caught_up.messages.is_empty());
    assert_eq!((caught_up.next_offset, caught_up.high_watermark), (20, 20));
    // a fetch size that cuts the second wrapper (the gzip one takes 135 bytes): the first comes
    // back whole, nothing below 3
    let small = SimpleConsumer::new(config(&c).fetch_message_max_bytes(160).build().unwrap()).unwrap();
    let data = small.fetch_partition("z", 0, 3).await.unwrap();
    assert_eq!(offsets(&data.messages), [3, 4], "the cut snappy wrapper is dropped");
    assert_eq!(data.next_offset, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_before_latest_earliest_and_times_from_the_leader() {
    let c = cluster_or_skip!("sc-offsets");
    c.create_topic("o", 1, 2).await.unwrap();
    let consumer = consumer(&c);
    assert_eq!(consumer.latest_offset("o", 0).await.unwrap(), 0, "an empty partition");
    let producer = Producer::new(&c);
    producer.send(&c, "o", 0, texts("o", 0..6), Compression::None).await;
    wait_for_isr(&c, "o", 0).await;
    assert_eq!(consumer.latest_offset("o", 0).await.unwrap(), 6);
    assert_eq!(consumer.earliest_offset("o", 0).await.unwrap(), 0);
    assert_eq!(consumer.offsets_before("o", 0, LATEST_TIME, 10).await.unwrap(), [6, 0]);
    assert_eq!(consumer.offsets_before("o", 0, EARLIEST_TIME, 10).await.unwrap(), [0]);
    // a time: segment boundaries written before it, newest first
    assert_eq!(consumer.offsets_before("o", 0, 4_102_444_800_000, 10).await.unwrap(), [6, 0]);
    assert!(consumer.offsets_before("o", 0, 1000, 10).await.unwrap().is_empty(), "every segment is newer");
    let leader = c.leader("o", 0).unwrap();
    let asked = logged(&c, ApiKey::Offsets);
    assert_eq!(asked.len(), 7);
    assert!(asked.iter().all(|r| r.broker == leader), "every Offsets went to the leader");

    // the leader moves: the old one (a follower now) answers 6, the consumer refreshes and retries
    let new = other_replica(&c, "o", 0);
    c.move_leader("o", 0, new).await.unwrap();
    c.clear_requests();
    assert_eq!(consumer.latest_offset("o", 0).await.unwrap(), 6);
    let log: Vec<(ApiKey, i32)> = c
        .requests()
        .iter()
        .filter(|r| r.header.client_id.as_deref() == Some(CLIENT_ID))
        .map(|r| (r.header.api_key, r.broker))
        .collect();
    assert_eq!(log.len(), 3, "{log:?}");
    assert_eq!(log[0], (ApiKey::Offsets, leader), "the old leader, a follower now, answers 6: {log:?}");
    assert_eq!(log[1].0, ApiKey::Metadata, "{log:?}");
    assert_eq!(log[2], (ApiKey::Offsets, new), "{log:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_leader_is_found_again_after_not_leader_for_partition() {
    let c = cluster_or_skip!("sc-moved");
    c.create_topic("m", 1, 2).await.unwrap();
    let producer = Producer::new(&c);
    producer.send(&c, "m", 0, texts("m", 0..10), Compression::None).await;
    wait_for_isr(&c, "m", 0).await;
    let consumer = consumer(&c);
    assert_eq!(consumer.fetch_partition("m", 0, 0).await.unwrap().messages.len(), 10);
    let old = c.leader("m", 0).unwrap();
    let new = other_replica(&c, "m", 0);
    c.move_leader("m", 0, new).await.unwrap();
    c.clear_requests();

    let data = consumer.fetch_partition("m", 0, 3).await.unwrap();
    assert_eq!(offsets(&data.messages), (3..10).collect::<Vec<_>>());
    assert_eq!(consumer.leader("m", 0).await.unwrap().0, new);
    // the round trip: a Fetch to the old leader (answered 6), Metadata, a Fetch to the new one
    let log: Vec<(ApiKey, i32)> = c
        .requests()
        .iter()
        .filter(|r| r.header.client_id.as_deref() == Some(CLIENT_ID))
        .map(|r| (r.header.api_key, r.broker))
        .collect();
    assert_eq!(log[0], (ApiKey::Fetch, old), "{log:?}");
    assert_eq!(log[1].0, ApiKey::Metadata, "{log:?}");
    assert_eq!(log[2], (ApiKey::Fetch, new), "{log:?}");
    assert_eq!(log.len(), 3, "{log:?}");

    // an intercepted NotLeaderForPartition on the current leader is retried the same way
    c.clear_requests();
    c.intercept(Rule::on(ApiKey::Fetch, Fault::Error(ErrorCode::NotLeaderForPartition)).once());
    let data = consumer.fetch_partition("m", 0, 0).await.unwrap();
    assert_eq!(data.messages.len(), 10);
    let apis: Vec<ApiKey> = logged(&c, ApiKey::Fetch).iter().map(|r| r.header.api_key).collect();
    assert_eq!(apis.len(), 2, "one refused, one answered");
    assert_eq!(logged(&c, ApiKey::Metadata).len(), 1);

    // retries are bounded: a leader that keeps refusing is surfaced with the attempts made
    let strict = SimpleConsumer::new(config(&c).refresh_leader_max_retries(2).build().unwrap()).unwrap();
    c.intercept(Rule::on(ApiKey::Fetch, Fault::Error(ErrorCode::NotLeaderForPartition)).times(3));
    match strict.fetch_partition("m", 0, 0).await {
        Err(Error::Broker { code: ErrorCode::NotLeaderForPartition, attempts: 3, broker, .. }) => {
            assert_eq!(broker, new)
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offset_out_of_range_is_a_typed_error_with_the_valid_range() {
    let c = cluster_or_skip!("sc-out-of-range");
    c.create_topic("r", 2, 1).await.unwrap();
    let producer = Producer::new(&c);
    producer.send(&c, "r", 0, texts("r", 0..5), Compression::None).await;
    producer.send(&c, "r", 1, texts("q", 0..2), Compression::None).await;
    let consumer = consumer(&c);
    let batch = consumer.fetch(&[("r", 0, 100), ("r", 1, 0)]).await.unwrap();
    let err = batch.get("r", 0).unwrap().as_ref().unwrap_err();
    match err {
        Error::OffsetOutOfRange { topic, partition: 0, offset: 100, earliest: Some(0), latest: Some(5) } => {
            assert_eq!(topic, "r")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.to_string(), "offset 100 is out of range for r/0 (valid offsets 0 to 5): seek to one of them");
    assert_eq!(err.code(), Some(ErrorCode::OffsetOutOfRange));
    assert_eq!(batch.get("r", 1).unwrap().as_ref().unwrap().messages.len(), 2, "the other partition is served");
    assert!(matches!(consumer.fetch_partition("r", 0, -1).await, Err(Error::OffsetOutOfRange { offset: -1, .. })));

    // a stream reports it without moving, and goes on after a seek
    let mut stream = consumer.stream("r", 0, 100);
    assert!(matches!(stream.next().await, Some(Err(Error::OffsetOutOfRange { earliest: Some(0), .. }))));
    assert_eq!(stream.position(), 100);
    stream.seek(0);
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!((first.offset, value(&first)), (0, "r-0".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_larger_than_the_fetch_size_is_surfaced_with_the_size_needed() {
    let c = cluster_or_skip!("sc-too-large");
    c.create_topic("big", 1, 1).await.unwrap();
    let producer = Producer::new(&c);
    let big = "x".repeat(50_000);
    producer.send(&c, "big", 0, vec![text("small-0")], Compression::None).await;
    producer.send(&c, "big", 0, vec![text(&big)], Compression::None).await;
    producer.send(&c, "big", 0, vec![text("small-2")], Compression::None).await;
    // offset + size header (12) + crc, magic, attributes, key and value lengths (14) + value
    let needed = 12 + 14 + 50_000;

    let consumer = SimpleConsumer::new(config(&c).fetch_message_max_bytes(10 * 1024).build().unwrap()).unwrap();
    let before = consumer.fetch_partition("big", 0, 0).await.unwrap();
    assert_eq!(offsets(&before.messages), [0], "the cut message after it is dropped");
    assert_eq!(before.next_offset, 1);
    let err = consumer.fetch_partition("big", 0, 1).await.unwrap_err();
    match &err {
        Error::MessageSizeTooLarge { topic, partition: 0, offset: 1, fetch_size: 10_240, needed: n } => {
            assert_eq!((topic.as_str(), *n), ("big", needed))
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("raise fetch.message.max.bytes"), "{err}");
    // the stream surfaces it too, instead of polling empty results forever
    let mut stream = consumer.stream("big", 0, 0);
    assert_eq!(stream.next().await.unwrap().unwrap().offset, 0);
    assert!(matches!(stream.next().await, Some(Err(Error::MessageSizeTooLarge { offset: 1, .. }))));
    assert_eq!(stream.position(), 1);

    // with auto-grow, the partition is fetched again with just the size needed
    let growing = SimpleConsumer::new(
        config(&c).fetch_message_max_bytes(10 * 1024).fetch_message_auto_grow_max_bytes(Some(100_000)).build().unwrap(),
    )
    .unwrap();
    c.clear_requests();
    let data = growing.fetch_partition("big", 0, 1).await.unwrap();
    assert_eq!(offsets(&data.messages), [1]);
    assert_eq!(value(&data.messages[0]).len(), 50_000);
    let sizes: Vec<i32> = logged(&c, ApiKey::Fetch)
        .iter()
        .map(|r| match &r.request {
            AnyRequest::Fetch(f) => f.topics[0].partitions[0].max_bytes,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(sizes, [10_240, needed as i32]);
    // a limit below the need still surfaces the error
    let capped = SimpleConsumer::new(
        config(&c).fetch_message_max_bytes(10 * 1024).fetch_message_auto_grow_max_bytes(Some(20_000)).build().unwrap(),
    )
    .unwrap();
    assert!(matches!(
        capped.fetch_partition("big", 0, 1).await,
        Err(Error::MessageSizeTooLarge { needed: 50_026, .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_is_retried_until_the_new_leader_answers() {
    let c = cluster_or_skip!("sc-killed");
    c.create_topic("k", 2, 2).await.unwrap();
    let producer = Producer::new(&c);
    producer.send(&c, "k", 0, texts("k", 0..10), Compression::Gzip).await;
    producer.send(&c, "k", 1, texts("j", 0..4), Compression::None).await;
    wait_for_isr(&c, "k", 0).await;
    wait_for_isr(&c, "k", 1).await;
    let consumer = consumer(&c);
    let first = consumer.fetch(&[("k", 0, 0), ("k", 1, 0)]).await.unwrap();
    assert_eq!(first.message_count(), 14);
    let old = c.leader("k", 0).unwrap();

    c.kill_broker(old).await.unwrap();
    c.clear_requests();
    let started = Instant::now();
    let batch = consumer.fetch(&[("k", 0, 0), ("k", 1, 0)]).await.unwrap();
    let took = started.elapsed();
    let data = batch.get("k", 0).unwrap().as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(offsets(&data.messages), (0..10).collect::<Vec<_>>());
    assert_eq!(value(&data.messages[9]), "k-9");
    assert_eq!(batch.get("k", 1).unwrap().as_ref().unwrap().messages.len(), 4);
    let new = c.leader("k", 0).unwrap();
    assert_ne!(new, old);
    assert_eq!(consumer.leader("k", 0).await.unwrap().0, new);
    let fetches = logged(&c, ApiKey::Fetch);
    assert!(fetches.iter().all(|r| r.broker != old), "a dead broker logs nothing");
    assert!(fetches.iter().any(|r| r.broker == new && fetched_partitions(r).contains(&("k".to_owned(), 0))));
    // the first attempt went to the dead leader (the cached metadata named it): one backoff
    // of refresh.leader.backoff.ms (50 ms, minus up to 20 % jitter) came before the retry
    assert!(took >= Duration::from_millis(40), "no retry happened: {took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    eprintln!("fetch across a killed leader took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_reads_1000_messages_across_a_leader_move_without_gaps_or_duplicates() {
    let c = Arc::new(cluster_or_skip!("sc-stream"));
    c.create_topic("s", 1, 2).await.unwrap();
    let producer_cluster = c.clone();
    let producing = tokio::spawn(async move {
        let producer = Producer::new(&producer_cluster);
        for batch in 0..100 {
            let codec = if batch % 2 == 0 { Compression::None } else { Compression::Snappy };
            producer.send(&producer_cluster, "s", 0, texts("s", batch * 10..batch * 10 + 10), codec).await;
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    });
    let consumer = consumer(&c);
    let mut stream = consumer.stream("s", 0, 0);
    let old = c.leader("s", 0).unwrap();
    let mut new = None;
    let mut got: Vec<FetchedMessage> = Vec::new();
    let started = Instant::now();
    while got.len() < 1000 {
        let m = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap_or_else(|_| panic!("stuck after {} messages", got.len()))
            .expect("not stopped")
            .unwrap_or_else(|e| panic!("after {} messages: {e}", got.len()));
        got.push(m);
        if got.len() == 300 {
            wait_for_isr(&c, "s", 0).await;
            let to = other_replica(&c, "s", 0);
            c.move_leader("s", 0, to).await.unwrap();
            new = Some(to);
        }
    }
    let took = started.elapsed();
    producing.await.unwrap();
    assert_eq!(offsets(&got), (0..1000).collect::<Vec<_>>(), "no gap, no duplicate");
    assert!(got.iter().enumerate().all(|(i, m)| value(m) == format!("s-{i}")));
    assert_eq!(stream.position(), 1000);
    assert_eq!(stream.lag(), Some(0));
    let new = new.unwrap();
    let fetches = logged(&c, ApiKey::Fetch);
    assert!(
        fetches.iter().any(|r| r.broker == old) && fetches.iter().any(|r| r.broker == new),
        "read from both leaders"
    );
    eprintln!("streamed 1000 messages across a leader move in {took:?} with {} fetches", fetches.len());

    // stopping from another task abandons a long poll in flight: it is stopped once the broker
    // holds the poll (30 s), and the stream ends long before the poll would
    let patient = SimpleConsumer::new(
        config(&c).socket_timeout(Duration::from_secs(60)).fetch_wait_max(Duration::from_secs(30)).build().unwrap(),
    )
    .unwrap();
    c.clear_requests();
    let mut idle = patient.stream("s", 0, 1000);
    let stop = idle.stop_handle();
    let polling = tokio::spawn(async move {
        let started = Instant::now();
        let end = idle.next().await;
        (end.is_none(), started.elapsed(), idle)
    });
    eventually("the long poll at s/0 offset 1000 to reach the broker", Duration::from_secs(20), async || {
        logged(&c, ApiKey::Fetch).iter().any(|r| match &r.request {
            AnyRequest::Fetch(f) => f.topics.iter().flat_map(|t| &t.partitions).any(|p| p.fetch_offset == 1000),
            _ => false,
        })
    })
    .await;
    stop.stop();
    let (ended, waited, mut idle) = polling.await.unwrap();
    assert!(ended, "a stopped stream ends");
    assert!(waited < Duration::from_secs(20), "the long poll was not abandoned: {waited:?}");
    assert!(idle.is_stopped());
    assert!(idle.next_batch().await.is_none());
    stream.stop();
    assert!(stream.next().await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_and_metadata_errors() {
    let c = cluster_or_skip!("sc-batches");
    c.create_topic("n", 1, 1).await.unwrap();
    let producer = Producer::new(&c);
    producer.send(&c, "n", 0, texts("n", 0..25), Compression::Lz4).await;
    let consumer = consumer(&c);
    let mut stream = consumer.stream("n", 0, 10);
    let batch = stream.next_batch().await.unwrap().unwrap();
    assert_eq!(offsets(&batch), (10..25).collect::<Vec<_>>());
    assert_eq!((stream.position(), stream.high_watermark()), (25, Some(25)));

    // nothing listens: the call fails as a whole, with every address tried
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let nowhere =
        SimpleConsumer::new(SimpleConsumerConfig::builder().metadata_broker_list(dead).build().unwrap()).unwrap();
    let err = nowhere.fetch(&[("n", 0, 0)]).await.unwrap_err();
    assert!(matches!(err, Error::Metadata { .. }), "{err:?}");
    assert!(err.is_retriable());
    assert_eq!(err.to_string(), "could not fetch metadata for n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaders_partitions_are_split_across_fetches_only_past_the_max_frame_size() {
    let c = cluster_or_skip!("sc-frame-split");
    let on_0 = BTreeMap::from([(0, vec![0]), (1, vec![0]), (2, vec![0])]);
    c.create_topic_with("w", on_0, BTreeMap::new()).await.unwrap();
    let producer = Producer::new(&c);
    for p in 0..3 {
        producer.send(&c, "w", p, texts(&format!("w{p}"), 0..3), Compression::None).await;
    }
    // a pool shared with other clients, whose frames hold 136 KiB of message sets: two 50 KB
    // fetch sizes per request
    let pool = Pool::new(ConnectionConfig::builder().client_id(CLIENT_ID).max_frame_size(200 * 1024).build().unwrap());
    let cache = MetadataCache::new(&c.bootstrap(), pool).unwrap();
    let config = config(&c).fetch_message_max_bytes(50_000).build().unwrap();
    let consumer = SimpleConsumer::with_metadata(config.clone(), cache.clone()).unwrap();
    c.clear_requests();
    let batch = consumer.fetch(&[("w", 0, 0), ("w", 1, 1), ("w", 2, 2)]).await.unwrap();
    assert_eq!(batch.errors().count(), 0, "{batch:?}");
    assert_eq!(batch.message_count(), 3 + 2 + 1);
    let fetches = logged(&c, ApiKey::Fetch);
    assert_eq!(fetches.iter().map(|r| r.broker).collect::<Vec<_>>(), [0, 0]);
    let sizes: Vec<usize> = fetches.iter().map(|r| fetched_partitions(r).len()).collect();
    assert_eq!(sizes.iter().sum::<usize>(), 3);
    // a shared pool whose timeout a long poll would exceed is refused
    let slow = config.to_builder().fetch_wait_max(Duration::from_secs(40)).socket_timeout(Duration::from_secs(50));
    assert!(matches!(
        SimpleConsumer::with_metadata(slow.build().unwrap(), cache),
        Err(Error::Config(gregor_simple_consumer::ConfigError::Invalid { property: "socket.timeout.ms", .. }))
    ));
}

/// A Kafka 0.8 broker has no lookup by time (ListOffsets v1 came with 0.10.1): one clear error
/// naming the versions, not a retry loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offset_for_time_needs_a_broker_from_kafka_0_10_1() {
    let c = cluster_or_skip!("sc-for-time");
    c.create_topic("ft", 1, 1).await.unwrap();
    c.wait_for_leaders("ft", Duration::from_secs(10)).await.unwrap();
    let e = consumer(&c).offset_for_time("ft", 0, 1_700_000_000_000).await.unwrap_err();
    let text = format!("{e}: {}", std::error::Error::source(&e).map(ToString::to_string).unwrap_or_default());
    assert!(text.contains("no common version of Offsets: gregor implements v1-v9, the broker speaks v0-v0"), "{text}");
}

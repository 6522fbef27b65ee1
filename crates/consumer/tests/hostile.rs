//! The group consumer's fetcher against a hostile leader (gregor-testkit's `HostileBroker`),
//! registered in a real ZooKeeper as broker 0 and the leader of the topic's partitions, as
//! Kafka 0.8.2 writes them (`/brokers/ids/0`, `/brokers/topics/T`, the partition states).
//!
//! * A message with a bad CRC is put on the stream as `Error::Fetch` naming topic, partition
//!   and offset, again each time it is asked, never skipped; the partition reads on once the
//!   broker behaves.
//! * A leader that never answers, or answers garbage, never hangs a stream: with
//!   `consumer.timeout.ms` it returns `ConsumerTimeout` in time, again and again, while the
//!   fetcher keeps retrying (as Java's does), and the messages come once the broker behaves.
//!
//! Needs ZooKeeper (`apt-get install default-jre-headless zookeeper`): without it the tests fail,
//! or skip when `GREGOR_ALLOW_SKIP=1` is set outside CI. About 4 s.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use gregor_consumer::{AutoOffsetReset, ConsumerConfig, ConsumerConnector, Error, KafkaStream};
use gregor_protocol::frame::ApiKey;
use gregor_serde::StringDecoder;
use gregor_testkit::fault::{Fault, Rule};
use gregor_testkit::hostile::HostileBroker;
use gregor_testkit::support::side_by_side;
use gregor_testkit::wire;
use gregor_zk::payloads::{BrokerRegistration, PartitionState, TopicAssignment};
use gregor_zk::{paths, CreateMode, ZkClient};
use tokio::time::Instant;

const TOPIC: &str = "hostile";
const SOCKET_TIMEOUT: Duration = Duration::from_millis(500);
const CONSUMER_TIMEOUT: Duration = Duration::from_millis(400);
const BACKOFF: Duration = Duration::from_millis(50);
/// How late past its bound a result may come on a loaded machine.
const SLACK: Duration = Duration::from_secs(3);
/// How long the test waits for anything before it calls it a hang.
const LIVENESS: Duration = Duration::from_secs(20);

/// The hostile broker with `TOPIC`'s partition 0 holding m0, m1, m2, registered in ZooKeeper
/// under `connect` as broker 0, leader of `TOPIC`/0. Returns the broker and the session holding
/// its (ephemeral) registration.
/// A chroot of its own for `test`, created (ZooKeeper does not create chroots), or `None` to
/// skip (only with `GREGOR_ALLOW_SKIP=1`, never under CI).
async fn chroot(test: &str) -> Option<String> {
    let connect = common::chroot(test)?;
    let (server, path) = connect.split_at(connect.find('/').expect("a chroot"));
    let root = ZkClient::connect(server, Duration::from_secs(6)).await.unwrap();
    root.create_all(path, &[], CreateMode::Persistent).await.unwrap();
    root.close().await.unwrap();
    Some(connect)
}

async fn hostile_leader(connect: &str, rules: Vec<Rule>) -> (HostileBroker, ZkClient) {
    let messages = (0..3).map(|i| wire::msg(None, &format!("m{i}"))).collect();
    let mut b = HostileBroker::builder().messages(TOPIC, 0, messages);
    for rule in rules {
        b = b.intercept(rule);
    }
    let broker = b.start().await.unwrap();
    let zk = ZkClient::connect(connect, Duration::from_secs(6)).await.unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let registration = BrokerRegistration::new("127.0.0.1", i32::from(broker.addr().port()), now);
    zk.create_all(&paths::broker(0), &registration.to_json(), CreateMode::Ephemeral).await.unwrap();
    let assignment = TopicAssignment::new([(0, vec![0])].into());
    zk.create_all(&paths::topic(TOPIC), &assignment.to_json(), CreateMode::Persistent).await.unwrap();
    let state = PartitionState::new(0, 0, 1, vec![0]);
    zk.create_all(&paths::partition_state(TOPIC, 0), &state.to_json(), CreateMode::Persistent).await.unwrap();
    (broker, zk)
}

async fn consumer(connect: &str, group: &str) -> (ConsumerConnector, KafkaStream<String>) {
    let config = ConsumerConfig::builder()
        .group_id(group)
        .zookeeper_connect(connect)
        .auto_offset_reset(AutoOffsetReset::Smallest)
        .auto_commit_enable(false)
        .socket_timeout(SOCKET_TIMEOUT)
        .fetch_wait_max(Duration::from_millis(50))
        .refresh_leader_backoff(BACKOFF)
        .consumer_timeout(Some(CONSUMER_TIMEOUT))
        .build()
        .unwrap();
    let c = tokio::time::timeout(LIVENESS, ConsumerConnector::new(config)).await.expect("connect in time").unwrap();
    let mut streams = tokio::time::timeout(
        LIVENESS,
        c.create_message_streams(HashMap::from([(TOPIC.to_string(), 1)]), Arc::new(StringDecoder::new())),
    )
    .await
    .expect("streams in time")
    .unwrap();
    let stream = streams.remove(TOPIC).unwrap().pop().unwrap();
    (c, stream)
}

/// The stream's next item, which must come within `consumer.timeout.ms` plus slack.
async fn next(stream: &mut KafkaStream<String>) -> Result<(i64, String), Error> {
    let started = Instant::now();
    let item = tokio::time::timeout(LIVENESS, stream.next()).await.expect("the stream hung").expect("a live stream");
    let took = started.elapsed();
    assert!(took < CONSUMER_TIMEOUT + SLACK, "the stream answered after {took:?}");
    item.map(|m| (m.offset, m.value.unwrap_or_default()))
}

/// Reads until `want` messages came (ConsumerTimeouts while waiting are fine).
async fn read(stream: &mut KafkaStream<String>, want: usize) -> Vec<(i64, String)> {
    let deadline = Instant::now() + LIVENESS;
    let mut got = Vec::new();
    while got.len() < want {
        assert!(Instant::now() < deadline, "only {got:?} within {LIVENESS:?}");
        match next(stream).await {
            Ok(m) => got.push(m),
            Err(Error::ConsumerTimeout { .. }) => {}
            Err(e) => panic!("{e:?}"),
        }
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_crc_is_put_on_the_stream_naming_the_message_and_never_skipped() {
    let Some(connect) = chroot("consumer_hostile_crc").await else { return };
    gregor_testkit::init_tracing();
    let (broker, _zk) = hostile_leader(&connect, vec![Rule::on(ApiKey::Fetch, Fault::BadCrc)]).await;
    let (c, mut stream) = consumer(&connect, "g-crc").await;
    let mut errors = 0;
    let deadline = Instant::now() + LIVENESS;
    while errors < 3 {
        assert!(Instant::now() < deadline, "{errors} errors within {LIVENESS:?}");
        match next(&mut stream).await {
            Err(Error::Fetch { topic, partition, offset, source }) => {
                assert_eq!((topic.as_str(), partition, offset), (TOPIC, 0, 0));
                match &source {
                    gregor_protocol::Error::Crc { location, .. } => {
                        assert_eq!(
                            (location.topic.as_deref(), location.partition, location.offset),
                            (Some(TOPIC), Some(0), 0)
                        )
                    }
                    other => panic!("{other:?}"),
                }
                errors += 1;
            }
            Err(Error::ConsumerTimeout { .. }) => {}
            other => panic!("{other:?}"),
        }
    }
    broker.clear_intercepts();
    let got = read(&mut stream, 3).await;
    assert_eq!(got, [(0, "m0".into()), (1, "m1".into()), (2, "m2".into())], "nothing skipped");
    tokio::time::timeout(LIVENESS, c.shutdown()).await.expect("shutdown in time").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_never_answers_or_answers_garbage_never_hangs_the_stream() {
    gregor_testkit::init_tracing();
    // the behaviours side by side, each with its own chroot, broker and consumer
    let behaviours = [Fault::Silent, Fault::WrongCorrelationId, Fault::HugeArrayCount, Fault::Close];
    side_by_side(LIVENESS * 2, behaviours.into_iter().enumerate(), |(i, behaviour)| async move {
        let Some(connect) = chroot(&format!("consumer_hostile_silent_{i}")).await else { return Ok(()) };
        let (broker, zk) = hostile_leader(&connect, vec![Rule::on(ApiKey::Fetch, behaviour.clone())]).await;
        let (c, mut stream) = consumer(&connect, "g-silent").await;
        // nothing comes, but the stream says so in time, every time
        for _ in 0..2 {
            let r = next(&mut stream).await;
            assert!(matches!(r, Err(Error::ConsumerTimeout { .. })), "{behaviour:?}: {r:?}");
        }
        // and the fetcher keeps trying (a fresh connection each time the last one was given up)
        let tries = broker.count(ApiKey::Fetch);
        // (a plain loop: this scenario runs on a spawned task, where `eventually` with a check
        // borrowing the broker is not Send for today's compiler)
        let deadline = Instant::now() + LIVENESS;
        while broker.count(ApiKey::Fetch) < tries + 2 {
            assert!(Instant::now() < deadline, "{behaviour:?}: the fetcher stopped trying");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        broker.clear_intercepts();
        let got = read(&mut stream, 3).await;
        assert_eq!(got.iter().map(|m| m.0).collect::<Vec<_>>(), [0, 1, 2], "{behaviour:?}");
        tokio::time::timeout(LIVENESS, c.shutdown()).await.expect("shutdown in time").unwrap();
        zk.close().await.unwrap();
        Ok(())
    })
    .await;
}

//! The FakeCluster's timing profile (`BrokerConfig::timing`): answers wait for the service
//! time, for the broker's throughput and each partition's append rate, and for the followers'
//! fetch under acks=-1 — and the instant profile adds nothing. Lower bounds only: a loaded
//! machine may always be slower, never faster.

use std::time::{Duration, Instant};

use gregor_protocol::messages::{ProducePartition, ProduceRequest, ProduceTopic};
use gregor_protocol::record::RecordBatchBuilder;
use gregor_protocol::{Compression, MessageSet};
use gregor_testkit::wire::{metadata, Conn};
use gregor_testkit::{FakeCluster, Timing};

/// One broker in the modern mode (no ZooKeeper needed) with `timing`.
async fn cluster(timing: Timing) -> FakeCluster {
    FakeCluster::modern().brokers(1).configure(|c| c.timing = timing).start().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_waits_for_the_service_time() {
    let slow = Timing { request_service: Duration::from_millis(40), ..Timing::instant() };
    let cluster = cluster(slow).await;
    let mut conn = Conn::open(cluster.broker_addr(0).unwrap()).await;
    for _ in 0..3 {
        let started = Instant::now();
        let answer = conn.call(0, &metadata(&[])).await;
        assert_eq!(answer.brokers.len(), 1);
        assert!(started.elapsed() >= Duration::from_millis(40), "{:?}", started.elapsed());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_wait_for_the_brokers_throughput_and_the_partitions_append_rate() {
    // 200 KB/s for the broker: a 20 KB produce frame holds it for 100 ms; the partition appends
    // at 100 KB/s: its ~20 KB take 200 ms, so the answer waits for the slower of the two
    let timing = Timing { broker_bytes_per_sec: 200_000, partition_append_bytes_per_sec: 100_000, ..Timing::instant() };
    let cluster = cluster(timing).await;
    cluster.create_topic("t", 1, 1).await.unwrap();
    let mut batch = RecordBatchBuilder::new(Compression::None);
    batch.append(1, None, Some("x".repeat(20_000).as_bytes())).unwrap();
    let partition = ProducePartition::new(0, MessageSet::from_bytes(batch.finish().unwrap()));
    let request = ProduceRequest {
        required_acks: 1,
        timeout: 5000,
        topics: vec![ProduceTopic::new("t", vec![partition])],
        ..Default::default()
    };
    let mut conn = Conn::open(cluster.broker_addr(0).unwrap()).await;
    let started = Instant::now();
    let answer = conn.call(3, &request).await;
    assert_eq!(answer.topics[0].partitions[0].error_code, 0);
    assert!(started.elapsed() >= Duration::from_millis(190), "{:?}", started.elapsed());
    // two appends at once, on two connections: the second waits behind the first
    let mut other = Conn::open(cluster.broker_addr(0).unwrap()).await;
    let started = Instant::now();
    conn.send(3, &request).await;
    other.send(3, &request).await;
    assert!(conn.recv_frame(Duration::from_secs(10)).await.is_some());
    assert!(other.recv_frame(Duration::from_secs(10)).await.is_some());
    assert!(started.elapsed() >= Duration::from_millis(390), "{:?}", started.elapsed());
    assert_eq!(cluster.offsets("t", 0), Some((3, 3)), "all three appended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_instant_profile_adds_nothing() {
    let cluster = cluster(Timing::instant()).await;
    let mut conn = Conn::open(cluster.broker_addr(0).unwrap()).await;
    let started = Instant::now();
    for _ in 0..20 {
        conn.call(0, &metadata(&[])).await;
    }
    // generous: 20 answers with no added time take far less than 20 x 40 ms
    assert!(started.elapsed() < Duration::from_millis(800), "{:?}", started.elapsed());
    assert!(Timing::instant().is_instant() && !Timing::kafka_0_8_2().is_instant());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_all_waits_for_the_followers_fetch_and_acks_one_does_not() {
    let timing = Timing { replica_fetch_delay: Duration::from_millis(300), ..Timing::instant() };
    let cluster = cluster(timing).await;
    cluster.create_topic("t", 1, 1).await.unwrap();
    let mut conn = Conn::open(cluster.broker_addr(0).unwrap()).await;
    for acks in [-1i16, 1] {
        let mut batch = RecordBatchBuilder::new(Compression::None);
        batch.append(1, None, Some(b"v")).unwrap();
        let partition = ProducePartition::new(0, MessageSet::from_bytes(batch.finish().unwrap()));
        let request = ProduceRequest {
            required_acks: acks,
            timeout: 5000,
            topics: vec![ProduceTopic::new("t", vec![partition])],
            ..Default::default()
        };
        let started = Instant::now();
        assert_eq!(conn.call(3, &request).await.topics[0].partitions[0].error_code, 0);
        let took = started.elapsed();
        if acks == -1 {
            assert!(took >= Duration::from_millis(300), "acks=-1 took {took:?}");
        } else {
            assert!(took < Duration::from_millis(300), "acks=1 took {took:?}");
        }
    }
}

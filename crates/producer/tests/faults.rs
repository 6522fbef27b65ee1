//! The AsyncProducer's retry paths against a 3-broker FakeCluster: injected broker errors,
//! dropped connections, a leader moved and a broker killed while records stream with
//! acks=-1 — nothing acknowledged may be lost, and each partition keeps send order.
//!
//! Needs java and ZooKeeper (`apt-get install default-jre-headless zookeeper`): without them the
//! tests fail, or skip when `GREGOR_ALLOW_SKIP=1` is set outside CI.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use gregor_producer::{AsyncProducer, DeliveryFuture, Error, Record};
use gregor_protocol::frame::ApiKey;
use gregor_protocol::ErrorCode;
use gregor_testkit::fault::{Fault, Rule};
use gregor_testkit::support::cluster_or_skip;
use gregor_testkit::FakeCluster;

fn rec(topic: &str, value: impl ToString) -> Record<String, String> {
    Record::new(topic, value.to_string())
}

fn metadata_requests(c: &FakeCluster) -> usize {
    c.requests().iter().filter(|r| r.header.api_key == ApiKey::Metadata).count()
}

async fn warm(p: &AsyncProducer<String, String>, topic: &str) {
    p.send(rec(topic, "warm")).await.unwrap().bounded().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_leader_once_is_refreshed_retried_and_delivered() {
    let c = cluster_or_skip!("retry-not-leader");
    c.create_topic("t", 1, 1).await.unwrap();
    let p = producer(config(&c));
    warm(&p, "t").await;
    c.clear_requests();
    c.intercept(Rule::on(ApiKey::Produce, Fault::Error(ErrorCode::NotLeaderForPartition)).once());
    let m = p.send(rec("t", "one")).await.unwrap().bounded().await.unwrap();
    assert_eq!(m.offset, 1);
    assert_eq!(produce_requests(&c, "t").len(), 2, "sent, refused, sent again");
    assert!(metadata_requests(&c) >= 1, "metadata refreshed before the retry");
    assert_eq!(log_values(&c, "t", 0).await, ["warm", "one"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retriable_errors_and_dropped_connections_are_retried() {
    let c = cluster_or_skip!("retry-others");
    c.create_topic("t", 1, 1).await.unwrap();
    let p = producer(config(&c));
    warm(&p, "t").await;
    for action in [
        Fault::Error(ErrorCode::RequestTimedOut),
        Fault::Error(ErrorCode::LeaderNotAvailable),
        Fault::Error(ErrorCode::UnknownTopicOrPartition),
        Fault::Close,
    ] {
        c.clear_requests();
        c.intercept(Rule::on(ApiKey::Produce, action.clone()).once());
        let m = p.send(rec("t", format!("{action:?}"))).await.unwrap().bounded().await;
        assert!(m.is_ok(), "{action:?}: {m:?}");
        assert_eq!(produce_requests(&c, "t").len(), 2, "{action:?}");
    }
    assert_eq!(log_values(&c, "t", 0).await.len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_run_out_into_a_delivery_error() {
    let c = cluster_or_skip!("retry-exhausted");
    c.create_topic("t", 1, 1).await.unwrap();
    let p = producer(config(&c).message_send_max_retries(2).retry_backoff(Duration::from_millis(20)));
    warm(&p, "t").await;
    c.clear_requests();
    c.intercept(Rule::on(ApiKey::Produce, Fault::Error(ErrorCode::NotLeaderForPartition)).times(10));
    let e = p.send(rec("t", "doomed")).await.unwrap().bounded().await.unwrap_err();
    c.clear_intercepts();
    assert_eq!((&*e.topic, e.partition, e.attempts), ("t", Some(0), 3), "{e:?}");
    assert_eq!(e.error.code(), Some(ErrorCode::NotLeaderForPartition));
    assert_eq!(e.value.as_deref(), Some(&b"doomed"[..]));
    assert_eq!(produce_requests(&c, "t").len(), 3, "message.send.max.retries=2: three sends");
    // the partition goes on
    assert_eq!(p.send(rec("t", "next")).await.unwrap().bounded().await.unwrap().offset, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_size_too_large_fails_at_once() {
    let c = cluster_or_skip!("too-large", |b| b.message_max_bytes = 10_000);
    c.create_topic("t", 1, 1).await.unwrap();
    let p = producer(config(&c));
    warm(&p, "t").await;
    c.clear_requests();
    c.intercept(Rule::on(ApiKey::Produce, Fault::Error(ErrorCode::MessageSizeTooLarge)).once());
    let e = p.send(rec("t", "refused")).await.unwrap().bounded().await.unwrap_err();
    assert_eq!(e.attempts, 1);
    assert_eq!(e.error.code(), Some(ErrorCode::MessageSizeTooLarge));
    assert_eq!(produce_requests(&c, "t").len(), 1, "not retried");
    // the broker's own check (message.max.bytes)
    let e = p.send(rec("t", "x".repeat(20_000))).await.unwrap().bounded().await.unwrap_err();
    assert!(matches!(e.error, Error::Broker { code: ErrorCode::MessageSizeTooLarge, .. }), "{e:?}");
    assert_eq!(e.attempts, 1);
    assert_eq!(produce_requests(&c, "t").len(), 2);
    assert_eq!(p.send(rec("t", "small")).await.unwrap().bounded().await.unwrap().offset, 1);
    assert_eq!(log_values(&c, "t", 0).await, ["warm", "small"]);
}

/// Streams `chunks` × `per_chunk` records over the partitions of `topic` (value
/// `"<partition>-<n>"`, partition chosen explicitly), calling `fault` before chunk `at`.
async fn stream<F, Fut>(
    p: &AsyncProducer<String, String>,
    topic: &str,
    partitions: i32,
    chunks: usize,
    per_chunk: usize,
    at: usize,
    fault: F,
) -> Vec<(i32, String, DeliveryFuture)>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut fault = Some(fault);
    let mut sent = Vec::new();
    let mut n = 0;
    for chunk in 0..chunks {
        if chunk == at {
            (fault.take().unwrap())().await;
        }
        for _ in 0..per_chunk {
            let partition = (n % partitions as usize) as i32;
            let value = format!("{partition}-{n}");
            let d = p.send(rec(topic, &value).with_partition(partition)).await.unwrap();
            sent.push((partition, value, d));
            n += 1;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    sent
}

/// Awaits every record and checks each partition's log: every acknowledged record is there,
/// in send order; returns (acknowledged, failed, duplicates in the log).
async fn check_logs(c: &FakeCluster, topic: &str, sent: Vec<(i32, String, DeliveryFuture)>) -> (usize, usize, usize) {
    let mut acked: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    let mut failed = 0;
    for (partition, value, d) in sent {
        match d.bounded().await {
            Ok(m) => {
                assert_eq!(m.partition, partition);
                acked.entry(partition).or_default().push(value);
            }
            Err(e) => {
                eprintln!("not delivered: {e} ({})", e.error);
                failed += 1;
            }
        }
    }
    let mut duplicates = 0;
    let total = acked.values().map(Vec::len).sum();
    for (partition, values) in acked {
        let log = log_values(c, topic, partition).await;
        let mut first_seen = Vec::new();
        for v in &log {
            if first_seen.contains(v) {
                duplicates += 1;
            } else {
                first_seen.push(v.clone());
            }
        }
        let acked_in_log: Vec<String> = first_seen.iter().filter(|v| values.contains(v)).cloned().collect();
        assert_eq!(acked_in_log, values, "{topic}/{partition}: every acknowledged record, in send order");
    }
    (total, failed, duplicates)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_moved_mid_stream_with_acks_all_loses_nothing_and_keeps_order() {
    let c = cluster_or_skip!("leader-moved");
    c.create_topic("moved", 3, 3).await.unwrap();
    let p = producer(config(&c).request_required_acks(-1).message_send_max_retries(10));
    let sent = stream(&p, "moved", 3, 30, 30, 10, || async {
        for partition in 0..3 {
            let (leader, _, isr) = c.partition_info("moved", partition).unwrap();
            let to = *isr.iter().find(|r| **r != leader).expect("another in-sync replica");
            c.move_leader("moved", partition, to).await.unwrap();
        }
    })
    .await;
    let (acked, failed, duplicates) = check_logs(&c, "moved", sent).await;
    assert_eq!((acked, failed), (900, 0));
    // usually 0, but not always: a leader that appended a set and replicated it to the new
    // leader before moving answers its waiting acks=-1 request with 6 (as 0.8.2's
    // DelayedProduce does), and the retry stores the set again — Kafka 0.8 has no idempotence.
    // Seen once in a loaded run; bounded by the batches in flight when each leader moved.
    assert!(duplicates <= 90, "{duplicates} duplicates: more than one request's worth");
    eprintln!("leader moved: {duplicates} duplicates");
    let refused = produce_requests(&c, "moved").len();
    assert!(refused > 0);
}

/// Streams 900 records with acks=-1 over a topic with replication factor 3 and takes the
/// leader of partition 0 down after a third of them: `crash` is kill -9 (the broker's
/// ZooKeeper session lingers until it expires), otherwise a clean kill. Records in flight then
/// fail (connection closed, or 7 RequestTimedOut while the dead follower is still in the ISR)
/// and are retried; retries of records the broker had already stored duplicate them, as in
/// Kafka 0.8 (no idempotence), but nothing acknowledged is lost and first occurrences keep
/// the send order.
async fn broker_down_mid_stream(c: &FakeCluster, topic: &str, crash: bool) {
    c.create_topic(topic, 3, 3).await.unwrap();
    let p = producer(
        config(c)
            .request_required_acks(-1)
            .request_timeout(Duration::from_secs(2))
            // patience past zookeeper.session.timeout.ms (6 s) and the election after it
            .message_send_max_retries(100)
            .retry_backoff(Duration::from_millis(200)),
    );
    let victim = c.leader(topic, 0).unwrap();
    let sent = stream(&p, topic, 3, 30, 30, 10, || async {
        if crash {
            c.crash_broker(victim).await.unwrap();
        } else {
            c.kill_broker(victim).await.unwrap();
        }
    })
    .await;
    let (acked, failed, duplicates) = check_logs(c, topic, sent).await;
    eprintln!(
        "broker {victim} {}: {acked} acknowledged, {failed} failed, {duplicates} duplicates in the logs",
        if crash { "crashed" } else { "killed" }
    );
    assert_eq!(failed, 0, "the retries outlast the leader election");
    assert_eq!(acked, 900);
    assert!(c.leader(topic, 0).is_some_and(|l| l != victim));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_killed_mid_stream_with_acks_all_loses_nothing_acknowledged() {
    let c = cluster_or_skip!("broker-killed");
    broker_down_mid_stream(&c, "killed", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_crashed_mid_stream_with_acks_all_loses_nothing_acknowledged() {
    let c = cluster_or_skip!("broker-crashed");
    broker_down_mid_stream(&c, "crashed", true).await;
}

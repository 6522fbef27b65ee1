//! The audit check on a 3-broker FakeCluster with a real ZooKeeper: producers with audit on
//! publish their windows, `Admin::audit` finds everything, then real loss — an unclean leader
//! election after the ISR shrank, and a topic deleted and re-created — is reported exactly,
//! including the lost offsets later given to other messages; failed deliveries and unaudited
//! messages are reported as such.
//!
//! Needs java and ZooKeeper (`apt-get install default-jre-headless zookeeper`): without them the
//! tests fail, or skip when `GREGOR_ALLOW_SKIP=1` is set outside CI.

mod common;

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use common::{eventually, WAIT};
use gregor_admin::audit::{AuditOptions, AuditReport, WindowAudit};
use gregor_admin::Admin;
use gregor_producer::audit::AuditConfig;
use gregor_producer::{AsyncProducer, ProducerConfig, Record};
use gregor_serde::StringEncoder;
use gregor_testkit::support;
use gregor_testkit::FakeCluster;

const AUDIT: &str = gregor_producer::audit::DEFAULT_AUDIT_TOPIC;
/// The audit window of these tests.
const WINDOW: Duration = Duration::from_millis(200);
/// The longest a test waits for one step (a produce, a close, a check).
const STEP: Duration = Duration::from_secs(20);

#[track_caller]
fn bounded<F: Future>(what: &str, f: F) -> impl Future<Output = F::Output> + use<'_, F> {
    support::bounded(what, STEP, f)
}

/// A producer with audit on (window [`WINDOW`]) named `name`, bootstrapping from broker 0
/// (which these tests never pause or kill).
fn audited(c: &FakeCluster, name: &str, acks: i16) -> AsyncProducer<String, String> {
    let config = ProducerConfig::builder()
        .metadata_broker_list(c.broker_addr(0).expect("broker 0").to_string())
        .client_id(name)
        .request_required_acks(acks)
        .queue_buffering_max(Duration::from_millis(5))
        .retry_backoff(Duration::from_millis(50))
        .build()
        .unwrap();
    let audit = AuditConfig::new().window(WINDOW).producer_name(name);
    AsyncProducer::with_audit(config, audit, StringEncoder::new(), StringEncoder::new()).unwrap()
}

/// Sends `n` records to `topic`/`partition` in `windows` bursts (a window apart), waits for
/// every result and returns the offsets acknowledged.
async fn produce(p: &AsyncProducer<String, String>, topic: &str, partition: i32, n: usize, windows: usize) -> Vec<i64> {
    let mut offsets = Vec::new();
    for burst in 0..windows {
        let mut deliveries = Vec::new();
        for i in (burst * n / windows)..((burst + 1) * n / windows) {
            let record = Record::new(topic, format!("{topic}-{partition}-{i}")).with_partition(partition);
            deliveries.push(p.send(record).await.unwrap());
        }
        for d in deliveries {
            offsets.push(bounded("a delivery", d).await.expect("delivered").offset);
        }
        if burst + 1 < windows {
            tokio::time::sleep(WINDOW + Duration::from_millis(30)).await;
        }
    }
    offsets
}

/// Closes `p`, which publishes the audit of its last window.
async fn close(p: AsyncProducer<String, String>) {
    assert!(bounded("close", p.close(Duration::from_secs(10))).await.is_ok());
}

/// [`produce`] with a producer of its own, closed afterwards.
async fn produce_alone(c: &FakeCluster, name: &str, topic: &str, partition: i32, n: usize) -> Vec<i64> {
    let p = audited(c, name, 1);
    let offsets = produce(&p, topic, partition, n, 1).await;
    close(p).await;
    offsets
}

async fn check(admin: &Admin) -> AuditReport {
    bounded("the audit check", admin.audit(&AuditOptions::new())).await.expect("the check runs")
}

/// (produced, seen, missing, overwritten, failed) of a topic, over its windows.
fn totals(report: &AuditReport, topic: &str) -> (u64, u64, u64, u64, u64) {
    let t: WindowAudit = report.topic_total(topic);
    (t.produced, t.seen, t.missing, t.overwritten, t.failed)
}

fn unaudited(report: &AuditReport, topic: &str) -> u64 {
    report.partitions.iter().filter(|p| p.topic == topic).map(|p| p.unaudited).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_then_loss_by_an_unclean_election_is_reported_exactly() {
    let Some((c, admin)) = common::cluster("audit-unclean", |_| {}).await else { return };
    // the audit topic and u live on broker 0, t on brokers 1 (leader) and 2
    let assign = |replicas: &[&[i32]]| -> BTreeMap<i32, Vec<i32>> {
        replicas.iter().enumerate().map(|(p, r)| (p as i32, r.to_vec())).collect()
    };
    c.create_topic_with(AUDIT, assign(&[&[0]]), BTreeMap::new()).await.unwrap();
    c.create_topic_with("u", assign(&[&[0], &[0]]), BTreeMap::new()).await.unwrap();
    c.create_topic_with("t", assign(&[&[1, 2]]), BTreeMap::new()).await.unwrap();

    // 1. everything acknowledged is there
    let a = audited(&c, "producer-a", -1);
    let (t, u0) = tokio::join!(produce(&a, "t", 0, 30, 3), produce(&a, "u", 0, 20, 2));
    assert_eq!((t.len(), u0.len()), (30, 20));
    close(a).await;
    produce_alone(&c, "producer-u1", "u", 1, 8).await;
    let report = check(&admin).await;
    assert!(report.is_complete(), "{report:#?}");
    assert_eq!(totals(&report, "t"), (30, 30, 0, 0, 0));
    assert_eq!(totals(&report, "u"), (28, 28, 0, 0, 0));
    assert!(report.topic_windows("t").count() >= 3, "three bursts a window apart: {:?}", report.windows);
    assert!(report.windows.iter().all(|w| w.completeness() == Some(100.0)));
    assert_eq!((report.unaudited(), report.duplicates, report.malformed), (0, 0, 0));
    assert_eq!(report.producers.len(), 2);
    let line = report.partition("t", 0).unwrap();
    assert_eq!((line.log_start, line.log_end, line.claimed, line.seen), (Some(0), Some(30), 30, 30));

    // 2. messages of producers without audit are unaudited, not missing
    for partition in [0, 1] {
        assert_eq!(common::produce(&c, "u", partition, 2, 10).await.0, None);
    }
    let report = check(&admin).await;
    assert!(report.is_complete());
    assert_eq!(unaudited(&report, "u"), 4);

    // 3. real loss: with the follower paused, the leader acknowledges 10 more alone (acks=1);
    //    the follower falls out of the ISR, the leader dies, and the stale follower is elected
    //    (unclean). (The follower is left behind before the ISR is awaited: the FakeCluster puts
    //    a paused follower that is level with its leader back into the ISR.)
    c.pause_broker(2);
    let lost = produce_alone(&c, "producer-b", "t", 0, 10).await;
    assert_eq!(lost, (30..40).collect::<Vec<i64>>());
    eventually("the ISR of t/0 to shrink to the leader", WAIT, async || {
        c.partition_info("t", 0).is_some_and(|(_, _, isr)| isr == [1])
    })
    .await;
    c.kill_broker(1).await.unwrap();
    c.resume_broker(2);
    eventually("broker 2 to lead t/0", WAIT, async || c.leader("t", 0) == Some(2)).await;
    let report = check(&admin).await;
    assert!(!report.is_complete());
    assert_eq!(totals(&report, "t"), (40, 30, 10, 0, 0), "exactly the 10 acknowledged by the dead leader alone");
    assert_eq!(report.missing(), 10);
    let lossy: Vec<&WindowAudit> = report.topic_windows("t").filter(|w| w.missing > 0).collect();
    assert_eq!(lossy.iter().map(|w| w.missing).sum::<u64>(), 10);
    assert!(lossy.iter().all(|w| w.completeness().is_some_and(|c| c < 100.0)));

    // 4. the new leader gives the lost offsets to new messages: still exactly 10 missing, 6 of
    //    them overwritten; the new messages are seen
    let reused = produce_alone(&c, "producer-c", "t", 0, 6).await;
    assert_eq!(reused, (30..36).collect::<Vec<i64>>());
    // and failed deliveries are reported as failed, not missing
    let d = audited(&c, "producer-d", 1);
    for _ in 0..3 {
        let result =
            bounded("a delivery", d.send(Record::new("t", "x".to_owned()).with_partition(7)).await.unwrap()).await;
        assert!(result.is_err());
    }
    close(d).await;
    let report = check(&admin).await;
    assert_eq!(totals(&report, "t"), (46, 36, 10, 6, 3));
    assert_eq!(unaudited(&report, "t"), 0, "the new messages are claimed");
    assert_eq!(report.partition("t", 0).unwrap().overwritten, 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_then_recreated_topic_lost_every_claimed_message() {
    let Some((c, admin)) = common::cluster("audit-delete", |b| b.delete_topic_enable = true).await else { return };
    c.create_topic(AUDIT, 1, 1).await.unwrap();
    c.create_topic("d", 2, 1).await.unwrap();
    let p = audited(&c, "producer-1", 1);
    let _ = tokio::join!(produce(&p, "d", 0, 12, 2), produce(&p, "d", 1, 8, 1));
    close(p).await;
    assert_eq!(totals(&check(&admin).await, "d"), (20, 20, 0, 0, 0));

    admin.delete_topic("d").await.unwrap();
    eventually("d to be deleted", WAIT, async || c.partitions("d").is_empty()).await;
    // and from ZooKeeper, where the check finds the topics
    let deadline = std::time::Instant::now() + STEP;
    while c.zk().exists("/brokers/topics/d").await.unwrap().is_some() {
        assert!(std::time::Instant::now() < deadline, "d is still in ZooKeeper");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let report = check(&admin).await;
    assert_eq!(totals(&report, "d"), (20, 0, 20, 0, 0));
    assert!(report.partition("d", 0).unwrap().log_start.is_none(), "the partition is gone");

    c.create_topic("d", 1, 1).await.unwrap();
    produce_alone(&c, "producer-2", "d", 0, 5).await;
    let report = check(&admin).await;
    assert_eq!(totals(&report, "d"), (25, 5, 20, 5, 0), "5 of the lost offsets hold the new messages");
    assert_eq!(report.partition("d", 1).unwrap().missing, 8, "partition 1 is not back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_audit_topic_is_an_error_and_topics_can_be_chosen() {
    let Some((c, admin)) = common::cluster("audit-none", |_| {}).await else { return };
    let e = admin.audit(&AuditOptions::new()).await.unwrap_err();
    assert!(matches!(e, gregor_admin::Error::UnknownTopic { ref topic } if topic == AUDIT), "{e}");
    c.create_topic(AUDIT, 1, 1).await.unwrap();
    c.create_topic("x", 1, 1).await.unwrap();
    c.create_topic("y", 1, 1).await.unwrap();
    produce_alone(&c, "p", "x", 0, 3).await;
    assert_eq!(common::produce(&c, "y", 0, 2, 10).await.0, None);
    let only_y = bounded("check", admin.audit(&AuditOptions::new().topics(["y"]))).await.unwrap();
    assert!(only_y.windows.is_empty(), "y has no audit record");
    assert_eq!(only_y.partitions.len(), 1);
    assert_eq!(only_y.unaudited(), 2);
    assert!(only_y.is_complete(), "nothing claimed, nothing missing");
}

//! `gregor audit` against a 3-broker FakeCluster (a real ZooKeeper underneath): producers with
//! audit on fill a topic over several windows; the check is complete (exit 0, table and JSON);
//! the topic is deleted, and the check reports every acknowledged message missing (exit 1);
//! a missing audit topic is a failure and bad flags a usage error.
//!
//! Needs java and ZooKeeper (`apt-get install default-jre-headless zookeeper`): without them the
//! tests fail, or skip when `GREGOR_ALLOW_SKIP=1` is set outside CI.

use std::time::Duration;

mod common;

use common::{cluster_with, run_program, Run};
use gregor_producer::audit::AuditConfig;
use gregor_producer::{AsyncProducer, ProducerConfig, Record};
use gregor_serde::StringEncoder;
use gregor_testkit::FakeCluster;
use serde_json::Value;

async fn audit(c: &FakeCluster, args: &[&str]) -> Run {
    let mut all = vec!["audit", "--zookeeper", c.zookeeper()];
    all.extend_from_slice(args);
    run_program(env!("CARGO_BIN_EXE_gregor"), &all, b"").await
}

/// Sends `n` records to `topic` with audit on (window 200 ms) in two windows, then closes.
async fn produce_audited(c: &FakeCluster, topic: &str, n: usize) {
    let config = ProducerConfig::builder()
        .metadata_broker_list(c.bootstrap())
        .client_id("cli-audit-test")
        .request_required_acks(-1)
        .queue_buffering_max(Duration::from_millis(5))
        .build()
        .unwrap();
    let audit = AuditConfig::new().window(Duration::from_millis(200));
    let p: AsyncProducer<String, String> =
        AsyncProducer::with_audit(config, audit, StringEncoder::new(), StringEncoder::new()).unwrap();
    for half in 0..2 {
        let mut deliveries = Vec::new();
        for i in 0..n / 2 {
            deliveries.push(p.send(Record::new(topic, format!("{half}-{i}"))).await.unwrap());
        }
        for d in deliveries {
            tokio::time::timeout(Duration::from_secs(20), d).await.expect("delivered in time").expect("delivered");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let closed = tokio::time::timeout(Duration::from_secs(20), p.close(Duration::from_secs(10))).await;
    assert!(closed.expect("closed in time").is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_is_complete_then_reports_a_deleted_topic_as_missing() {
    let Some(c) = cluster_with("cli-audit", |b| b.delete_topic_enable = true).await else { return };
    c.create_topic("__gregor_audit", 1, 1).await.unwrap();
    c.create_topic("events", 3, 2).await.unwrap();
    produce_audited(&c, "events", 40).await;

    let table = audit(&c, &[]).await;
    let text = table.ok();
    assert!(text.starts_with("status: COMPLETE\n"), "{text}");
    assert!(text.contains("produced: 40, seen: 40, missing: 0, failed: 0, unaudited: 0"), "{text}");
    assert!(text.contains("100.00%"), "{text}");
    let json = audit(&c, &["--output", "json", "--topic", "events"]).await.json();
    assert_eq!(
        (json["complete"].as_bool(), json["produced"].as_u64(), json["seen"].as_u64()),
        (Some(true), Some(40), Some(40))
    );
    assert!(json["windows"].as_array().unwrap().len() >= 2, "two windows at least: {json}");
    assert_eq!(json["partitions"].as_array().unwrap().len(), 3);
    assert_eq!(json["topics"][0]["topic"], "events");

    // lose everything: the topic is deleted
    let deleted = run_program(
        env!("CARGO_BIN_EXE_gregor"),
        &["topics", "--zookeeper", c.zookeeper(), "--delete", "--topic", "events"],
        b"",
    )
    .await;
    deleted.ok();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    // gone from the brokers and from ZooKeeper (the audit reads the topics there; a topic
    // still registered while its partitions are gone reads as unreadable, not missing)
    while !c.partitions("events").is_empty() || c.zk().exists("/brokers/topics/events").await.unwrap().is_some() {
        assert!(std::time::Instant::now() < deadline, "the topic was not deleted");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let lost = audit(&c, &["--output", "json"]).await;
    lost.fails(1, "audit incomplete: 40 acknowledged messages missing");
    let json: Value = serde_json::from_str(&lost.stdout).expect("the report is printed before the verdict");
    assert_eq!(
        (json["complete"].as_bool(), json["missing"].as_u64(), json["seen"].as_u64()),
        (Some(false), Some(40), Some(0))
    );
    assert!(json["windows"].as_array().unwrap().iter().all(|w| w["completeness"] == 0.0), "{json}");
    let table = audit(&c, &[]).await;
    assert_eq!(table.code(), Some(1));
    assert!(table.stdout.starts_with("status: INCOMPLETE (40 missing)"), "{}", table.stdout);
    assert!(table.stdout.contains("partition does not exist"), "{}", table.stdout);

    // no such audit topic: a failure naming it; bad flags: a usage error
    audit(&c, &["--audit-topic", "nope"]).await.fails_with_error_line(1, "audit topic nope does not exist");
    audit(&c, &["--fetch-max-bytes", "10"]).await.fails(2, "--fetch-max-bytes");
}

//! Audit, LinkedIn's pattern: a producer with audit on publishes, per topic and window, what it
//! had acknowledged to an audit topic; the check reads it back against the topic and reports
//! produced, seen and missing per window. Then a producer without audit adds messages the
//! check reports as unaudited.
//!
//! Run: `cargo run --example audit` (a real ZooKeeper and a 3-broker FakeCluster are started;
//! with `GREGOR_BROKERS` and `GREGOR_ZOOKEEPER` set, that cluster is used instead).

mod common;

use std::time::Duration;

use gregor::admin::audit::AuditOptions;
use gregor::admin::Admin;
use gregor::producer::audit::AuditConfig;
use gregor::producer::{AsyncProducer, ProducerConfig, Record};
use gregor::serde::StringEncoder;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // a cluster: the one named by the environment, or ZooKeeper and a FakeCluster started here
    let cluster =
        common::cluster_with_topics(&[("payments", 3), (gregor::producer::audit::DEFAULT_AUDIT_TOPIC, 1)]).await?;
    let (brokers, zookeeper) = (cluster.brokers.clone(), cluster.zookeeper.clone());

    // 1. a producer with audit on: 2-second windows (a minute is the default)
    let config = ProducerConfig::builder()
        .metadata_broker_list(&brokers)
        .client_id("payments-api")
        .request_required_acks(-1)
        .queue_buffering_max(Duration::from_millis(10))
        .build()?;
    let audit = AuditConfig::new().window(Duration::from_secs(2));
    let producer: AsyncProducer<String, String> =
        AsyncProducer::with_audit(config.clone(), audit, StringEncoder::new(), StringEncoder::new())?;
    for second in 0..3 {
        let mut deliveries = Vec::new();
        for i in 0..500 {
            let record = Record::new("payments", format!("payment {second}-{i}")).with_key(format!("account-{i}"));
            deliveries.push(producer.send(record).await.map_err(|e| e.to_string())?);
        }
        for d in deliveries {
            d.await?;
        }
        println!("sent 500 payments");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // close publishes the audit of the last, partial window
    let closed = producer.close(Duration::from_secs(10)).await;
    println!("producer closed ({} undelivered)", closed.undelivered.len());

    // 2. a producer without audit: its messages are unaudited, not missing
    let plain: AsyncProducer<String, String> = AsyncProducer::new(config, StringEncoder::new(), StringEncoder::new())?;
    for i in 0..25 {
        plain.send(Record::new("payments", format!("legacy {i}"))).await.map_err(|e| e.to_string())?.await?;
    }
    plain.close(Duration::from_secs(5)).await;

    // 3. the check, as `gregor audit --zookeeper Z` runs it
    let admin = Admin::connect(&zookeeper, Duration::from_secs(6)).await?;
    let report = admin.audit(&AuditOptions::new().topics(["payments"])).await?;
    admin.close().await?;
    println!(
        "\n{:<8} {:<15} {:>9} {:>9} {:>8} {:>7} {:>13}",
        "topic", "window start", "produced", "seen", "missing", "failed", "completeness"
    );
    for w in &report.windows {
        let completeness = w.completeness().map_or_else(|| "-".to_owned(), |c| format!("{c:.2}%"));
        println!(
            "{:<8} {:<15} {:>9} {:>9} {:>8} {:>7} {:>13}",
            w.topic, w.window_start_ms, w.produced, w.seen, w.missing, w.failed, completeness
        );
    }
    for p in &report.partitions {
        println!("{}/{}: {} claimed, {} seen, {} unaudited", p.topic, p.partition, p.claimed, p.seen, p.unaudited);
    }
    println!(
        "\n{}: {} produced, {} seen, {} missing, {} unaudited",
        if report.is_complete() { "complete" } else { "INCOMPLETE" },
        report.produced(),
        report.seen(),
        report.missing(),
        report.unaudited()
    );
    Ok(())
}

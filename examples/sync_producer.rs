//! The sync producer: each send blocks until the brokers acknowledge it. It runs its own
//! runtime thread, so it is for code that is not async (and must not be called from inside a
//! tokio runtime).
//!
//! Run: `cargo run --example sync_producer`

mod common;

use std::time::Duration;

use gregor::producer::{ProducerConfig, Record, SyncProducer};
use gregor::serde::StringEncoder;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // the example's cluster lives on a runtime of its own; the producer below is plain sync code
    let runtime = tokio::runtime::Runtime::new()?;
    let cluster = runtime.block_on(common::cluster("audit", 1))?;

    let config = ProducerConfig::builder()
        .metadata_broker_list(&cluster.brokers)
        .client_id("sync-producer-example")
        .request_required_acks(1)
        .build()?;
    let producer: SyncProducer<String, String> = SyncProducer::new(config, StringEncoder::new(), StringEncoder::new())?;
    for i in 0..5 {
        let meta = producer
            .send(Record::new("audit", format!("login #{i}")).with_key("alice".to_owned()))
            .map_err(|e| e.to_string())?;
        println!("acknowledged: {}/{} offset {}", meta.topic, meta.partition, meta.offset);
    }
    let report = producer.close(Duration::from_secs(5));
    println!("closed, {} undelivered", report.undelivered.len());
    drop(cluster);
    Ok(())
}

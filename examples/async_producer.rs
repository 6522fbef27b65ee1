//! The async producer: batching, a bounded queue, and a result for every message (a future or
//! a callback).
//!
//! Run: `cargo run --example async_producer`

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gregor::producer::{AsyncProducer, EnqueueTimeout, ProducerConfig, Record};
use gregor::protocol::Compression;
use gregor::serde::StringEncoder;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cluster = common::cluster("orders", 3).await?;
    let config = ProducerConfig::builder()
        .metadata_broker_list(&cluster.brokers)
        .client_id("async-producer-example")
        .request_required_acks(-1) // every in-sync replica has it before it counts as delivered
        .compression_codec(Compression::Lz4)
        .batch_num_messages(500) // a batch goes out at 500 messages per broker...
        .queue_buffering_max(Duration::from_millis(20)) // ...or after 20 ms, whichever is first
        .queue_buffering_max_messages(5_000) // a hard bound on what waits in memory
        .queue_enqueue_timeout(EnqueueTimeout::Wait(Duration::from_secs(1))) // then QueueFull
        .build()?;
    let producer: AsyncProducer<String, String> =
        AsyncProducer::new(config, StringEncoder::new(), StringEncoder::new())?;

    // a future per message
    let mut futures = Vec::new();
    for i in 0..1_000 {
        let record = Record::new("orders", format!("order {i}")).with_key(format!("customer-{}", i % 37));
        futures.push(producer.send(record).await.map_err(|e| e.to_string())?);
    }
    let first = futures.remove(0).await?;
    println!("first order went to {}/{} at offset {}", first.topic, first.partition, first.offset);
    for f in futures {
        f.await?;
    }

    // or a callback per message
    let delivered = Arc::new(AtomicUsize::new(0));
    for i in 0..1_000 {
        let delivered = delivered.clone();
        let record = Record::new("orders", format!("refund {i}"));
        producer
            .send_with_callback(record, move |result| match result {
                Ok(_) => {
                    delivered.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => eprintln!("not delivered: {e}"),
            })
            .await
            .map_err(|e| e.to_string())?;
    }
    let flushed = producer.flush().await;
    println!("callbacks: {} delivered, {} failed", delivered.load(Ordering::Relaxed), flushed.failed.len());

    let report = producer.close(Duration::from_secs(5)).await;
    println!("closed: {} records undelivered", report.undelivered.len());
    Ok(())
}

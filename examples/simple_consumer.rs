//! The simple consumer: explicit partitions and offsets, fetched from the leaders.
//!
//! Run: `cargo run --example simple_consumer`

mod common;

use std::time::Duration;

use gregor::producer::{AsyncProducer, ProducerConfig, Record};
use gregor::serde::StringEncoder;
use gregor::simple_consumer::{SimpleConsumer, SimpleConsumerConfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cluster = common::cluster("clicks", 2).await?;
    let config = ProducerConfig::builder().metadata_broker_list(&cluster.brokers).request_required_acks(-1).build()?;
    let producer: AsyncProducer<String, String> =
        AsyncProducer::new(config, StringEncoder::new(), StringEncoder::new())?;
    let mut deliveries = Vec::new();
    for i in 0..20 {
        deliveries.push(
            producer
                .send(Record::new("clicks", format!("click {i}")).with_partition(i % 2))
                .await
                .map_err(|e| e.to_string())?,
        );
    }
    // Kafka 0.8.2's async producer holds a batch up to queue.buffering.max.ms (5 s by
    // default) or batch.num.messages (200): flush sends these 20 now
    producer.flush().await;
    for d in deliveries {
        d.await?;
    }
    producer.close(Duration::from_secs(5)).await;

    let consumer =
        SimpleConsumer::new(SimpleConsumerConfig::builder().metadata_broker_list(&cluster.brokers).build()?)?;
    for p in consumer.partitions("clicks").await? {
        let (leader, addr) = consumer.leader("clicks", p).await?;
        let earliest = consumer.earliest_offset("clicks", p).await?;
        let latest = consumer.latest_offset("clicks", p).await?;
        println!("clicks/{p}: leader {leader} at {addr}, offsets {earliest}..{latest}");
    }
    // both partitions in one call: one Fetch per leader, sent concurrently
    let batch = consumer.fetch(&[("clicks", 0, 5), ("clicks", 1, 0)]).await?;
    for data in batch.data() {
        let values: Vec<String> = data
            .messages
            .iter()
            .map(|m| String::from_utf8_lossy(m.value.as_deref().unwrap_or_default()).into_owned())
            .collect();
        println!(
            "clicks/{} from {}: {values:?} (high watermark {})",
            data.partition, data.fetch_offset, data.high_watermark
        );
    }
    // a stream over one partition, from an offset
    let mut stream = consumer.stream("clicks", 1, 7);
    for _ in 0..3 {
        if let Some(m) = stream.next().await {
            let m = m?;
            println!("stream: offset {} {:?}", m.offset, m.value);
        }
    }
    consumer.close().await;
    Ok(())
}

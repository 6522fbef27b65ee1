//! gregor's demo. The full demo (ZooKeeper + a FakeCluster, the async producer feeding a
//! consumer group) arrives with the producer; until then this shows the codec those parts
//! are built on: it builds Produce requests with each codec and reads back a Fetch response
//! that a genuine Kafka 0.8.2.2 broker sent.
//!
//! Run: `cargo run --release --example demo`

use bytes::{Bytes, BytesMut};
use gregor::protocol::frame::{decode_response, encode_request, ApiKey, RequestHeader};
use gregor::protocol::messages::{FetchRequest, ProducePartition, ProduceRequest, TopicPartitions};
use gregor::protocol::{Compression, Message, MessageSet};

/// A Fetch response for gzip/0 captured from a genuine Kafka 0.8.2.2 broker.
const GENUINE_FETCH: &[u8] = include_bytes!("../crates/protocol/tests/data/kafka-0.8.2.2/fetch_v0_gzip.resp.bin");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("gregor demo: the producer, consumer group and FakeCluster demo arrives with the producer (issue 4);");
    println!("for now, the Kafka 0.8.2 codec underneath them.\n");

    let messages: Vec<Message> = (0..1_000)
        .map(|i| {
            Message::new(
                Some(Bytes::from(format!("key-{i}"))),
                Some(Bytes::from(format!("event {i}: temperature={}.{} C", 20 + i % 7, i % 10))),
            )
        })
        .collect();
    let payload: usize = messages.iter().map(|m| m.value.as_ref().map_or(0, Bytes::len)).sum();
    println!("Produce v0 request for 1,000 messages ({payload} bytes of values):");
    println!("{:<8} {:>12} {:>14}", "codec", "frame bytes", "of uncompressed");
    let mut uncompressed = 0;
    for codec in [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4] {
        let set = MessageSet::from_messages(messages.clone(), codec)?;
        let request = ProduceRequest {
            required_acks: 1,
            timeout: 1500,
            topics: vec![TopicPartitions::new("demo", vec![ProducePartition { partition: 0, message_set: set }])],
        };
        let header = RequestHeader {
            api_key: ApiKey::Produce,
            api_version: 0,
            correlation_id: 1,
            client_id: Some("demo".into()),
        };
        let mut frame = BytesMut::new();
        encode_request(&header, &request, &mut frame)?;
        if codec == Compression::None {
            uncompressed = frame.len();
        }
        println!("{:<8} {:>12} {:>14.1}%", codec.name(), frame.len(), 100.0 * frame.len() as f64 / uncompressed as f64);
    }

    println!(
        "\nFetch v0 response from a genuine Kafka 0.8.2.2 broker ({} bytes), fetched at offset 4:",
        GENUINE_FETCH.len()
    );
    let (header, response) = decode_response::<FetchRequest>(0, Bytes::from_static(&GENUINE_FETCH[4..]))?;
    println!("correlation id {}", header.correlation_id);
    for topic in &response.topics {
        for p in &topic.partitions {
            let fetched = p.messages(&topic.topic, 4)?;
            println!(
                "{}/{}: high watermark {}, {} wrapper bytes, {} messages at or after offset 4 ({} below it skipped)",
                topic.topic,
                p.partition,
                p.high_watermark,
                p.message_set.len(),
                fetched.messages.len(),
                fetched.skipped
            );
            for m in &fetched.messages {
                let text =
                    |b: &Option<Bytes>| b.as_ref().map_or("null".into(), |b| String::from_utf8_lossy(b).into_owned());
                println!("  @{} key={} value={}", m.offset, text(&m.message.key), text(&m.message.value));
            }
        }
    }
    Ok(())
}

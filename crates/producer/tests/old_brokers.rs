//! What Kafka 0.11's records carry, asked of a broker that cannot take it: the 0.8.2
//! FakeCluster (no ApiVersions, no RecordBatch v2, no producer ids). An idempotent producer's
//! records, and a batch with headers, fail once, naming what is missing, without a retry
//! storm; timestamps are dropped (Message v0 has none). (Against a broker that can — tansu —
//! see the workspace's `tests/modern_peers.rs`.)

mod common;

use std::time::Duration;

use common::Bounded;
use gregor_producer::{Error, Record};
use gregor_protocol::Compression;
use gregor_testkit::support::cluster_or_skip;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_producer_fails_plainly_on_a_kafka_0_8_broker() {
    let c = cluster_or_skip!("idempotence-0-8");
    c.create_topic("i", 1, 1).await.unwrap();
    let config = common::config(&c).request_required_acks(-1).message_send_max_retries(3).enable_idempotence(true);
    let producer = common::producer(config);
    let delivery = producer.send(Record::new("i", "v".to_owned())).await.unwrap();
    let err = delivery.bounded().await.expect_err("no producer ids before Kafka 0.11");
    let Error::Network { source, .. } = &err.error else { panic!("{err:?}") };
    let text = source.to_string();
    assert!(text.contains("no common version of Produce: gregor implements v3-v12, the broker speaks v0-v0"), "{text}");
    assert_eq!(err.attempts, 1, "not retried: {err:?}");
    assert_eq!(c.offsets("i", 0), Some((0, 0)), "nothing written");
    let _ = producer.close(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_fail_their_batch_on_a_kafka_0_8_broker_and_timestamps_are_dropped() {
    let c = cluster_or_skip!("headers-0-8");
    c.create_topic("h", 1, 1).await.unwrap();
    let producer = common::producer(common::config(&c).batch_num_messages(1));
    // a timestamp alone: written, as Message v0 (without it)
    let stamped = producer.send(Record::new("h", "t".to_owned()).with_timestamp(1_600_000_000_000)).await.unwrap();
    assert_eq!(stamped.bounded().await.unwrap().offset, 0);
    let with_headers = producer.send(Record::new("h", "x".to_owned()).with_header("k", "v")).await.unwrap();
    let err = with_headers.bounded().await.expect_err("Message v0 has no headers");
    let Error::Encode { source, .. } = &err.error else { panic!("{err:?}") };
    assert_eq!(
        source.to_string(),
        "Produce v0 has no field record headers (set to 1 headers in the batch; Kafka 0.11+ takes them); use a \
         version that has it or leave it at its default"
    );
    assert_eq!(err.attempts, 1, "not retried: {err:?}");
    assert_eq!(c.offsets("h", 0), Some((1, 1)), "only the record without headers was written");
    let _ = producer.close(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zstd_fails_its_batch_on_a_broker_before_kafka_2_1() {
    let c = cluster_or_skip!("zstd-0-8");
    c.create_topic("z", 1, 1).await.unwrap();
    let producer = common::producer(common::config(&c).compression_codec(Compression::Zstd));
    let delivery = producer.send(Record::new("z", "v".to_owned())).await.unwrap();
    let err = delivery.bounded().await.expect_err("no zstd before Kafka 2.1");
    let Error::Encode { source, .. } = &err.error else { panic!("{err:?}") };
    assert!(source.to_string().starts_with("Produce v0 has no field zstd compression"), "{source}");
    assert_eq!(c.offsets("z", 0), Some((0, 0)), "nothing written");
    let _ = producer.close(Duration::from_secs(5)).await;
}

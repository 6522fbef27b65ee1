//! `enable.idempotence` against a broker that cannot do it: the 0.8.2 FakeCluster (no
//! ApiVersions, no RecordBatch v2, no producer ids). Each record fails once, naming the
//! missing versions, without a retry storm. (Against a broker that can — tansu — the
//! workspace's `tests/modern_peers.rs` shows a lost answer's retry written once.)

mod common;

use std::time::Duration;

use common::Bounded;
use gregor_producer::{Error, Record};
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

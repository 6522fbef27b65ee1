//! Helpers of the producer's integration tests: a 3-broker FakeCluster per test (in a
//! ZooKeeper chroot of its own), producer configs pointed at it, and a reader of the brokers'
//! logs over Fetch v0.

#![allow(dead_code, unreachable_pub)]

use std::future::{Future, IntoFuture};
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use gregor_net::{BrokerConnection, ConnectionConfig};
use gregor_producer::{AsyncProducer, ProducerConfig, ProducerConfigBuilder};
use gregor_protocol::messages::{AnyRequest, FetchPartition, FetchRequest, FetchTopic, ProduceRequest};
use gregor_protocol::Message;
use gregor_serde::StringEncoder;
use gregor_testkit::FakeCluster;

/// Waiting comes from the testkit's shared support.
pub use gregor_testkit::support::eventually;

/// A config for `c` with acks=1, a short linger, and retries that fit in a test.
pub fn config(c: &FakeCluster) -> ProducerConfigBuilder {
    ProducerConfig::builder()
        .metadata_broker_list(c.bootstrap())
        .client_id("gregor-producer-test")
        .request_required_acks(1)
        .queue_buffering_max(Duration::from_millis(5))
        .retry_backoff(Duration::from_millis(50))
}

/// A string producer.
pub fn producer(config: ProducerConfigBuilder) -> AsyncProducer<String, String> {
    AsyncProducer::new(config.build().expect("a valid config"), StringEncoder::new(), StringEncoder::new())
        .expect("inside a runtime")
}

pub fn pause_all(c: &FakeCluster) {
    for (id, _) in c.broker_addrs() {
        c.pause_broker(id);
    }
}

pub fn resume_all(c: &FakeCluster) {
    for (id, _) in c.broker_addrs() {
        c.resume_broker(id);
    }
}

/// Every Produce request the cluster received for `topic` (each trimmed to that topic).
pub fn produce_requests(c: &FakeCluster, topic: &str) -> Vec<ProduceRequest> {
    c.requests()
        .into_iter()
        .filter_map(|r| match r.request {
            AnyRequest::Produce(mut p) => {
                p.topics.retain(|t| t.topic == topic);
                (!p.topics.is_empty()).then_some(p)
            }
            _ => None,
        })
        .collect()
}

/// The top-level messages of every Produce request for `topic` (wrappers stay compressed).
pub fn produced_entries(c: &FakeCluster, topic: &str) -> Vec<Vec<Message>> {
    produce_requests(c, topic)
        .iter()
        .map(|r| {
            r.topics
                .iter()
                .flat_map(|t| &t.partitions)
                .flat_map(|p| p.message_set.entries().map(|e| e.expect("a whole message").message))
                .collect()
        })
        .collect()
}

/// A partition's messages as the leader serves them to consumers (up to the high
/// watermark): (offset, key, value).
pub async fn read_log(c: &FakeCluster, topic: &str, partition: i32) -> Vec<(i64, Option<String>, String)> {
    let what = format!("{topic}/{partition} to be readable at its leader");
    eventually(what, Duration::from_secs(10), async || try_read_log(c, topic, partition).await).await
}

async fn try_read_log(c: &FakeCluster, topic: &str, partition: i32) -> Option<Vec<(i64, Option<String>, String)>> {
    let leader = c.leader(topic, partition)?;
    let addr = c.broker_addr(leader)?;
    let conn = BrokerConnection::connect(addr, &ConnectionConfig::default()).await.ok()?;
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let fetch = FetchRequest {
            replica_id: -1,
            max_wait_time: 0,
            min_bytes: 0,
            topics: vec![FetchTopic::new(
                topic,
                vec![FetchPartition { partition, fetch_offset: offset, max_bytes: 4 << 20, ..Default::default() }],
            )],
            ..Default::default()
        };
        let response = conn.request(0, &fetch).await.ok()?;
        let p = &response.topics.first()?.partitions.first()?;
        if p.error_code != 0 {
            return None;
        }
        let decoded = p.messages(topic, offset).expect("the log decodes");
        for m in &decoded.messages {
            out.push((
                m.offset,
                m.message.key.as_ref().map(|k| String::from_utf8(k.to_vec()).unwrap()),
                String::from_utf8(m.message.value.clone().unwrap_or_default().to_vec()).unwrap(),
            ));
        }
        match decoded.next_offset() {
            Some(next) if next < p.high_watermark => offset = next,
            _ => break,
        }
    }
    conn.close().await;
    Some(out)
}

/// Values of a partition's log.
pub async fn log_values(c: &FakeCluster, topic: &str, partition: i32) -> Vec<String> {
    read_log(c, topic, partition).await.into_iter().map(|(_, _, v)| v).collect()
}

/// How long a test waits for a delivery, a flush or a close before it calls the producer
/// stuck (far above anything a test needs, even on a loaded CI machine).
pub const LIVENESS: Duration = Duration::from_secs(30);

/// `.bounded()` on any future a test awaits from the producer (a [`DeliveryFuture`], a flush,
/// a close): it panics after [`LIVENESS`], naming the line that waited, instead of letting a
/// liveness bug hang the test run.
///
/// [`DeliveryFuture`]: gregor_producer::DeliveryFuture
pub trait Bounded: IntoFuture + Sized {
    /// This future, bounded by [`LIVENESS`].
    #[track_caller]
    fn bounded(self) -> BoundedFuture<Self::IntoFuture>;
}

impl<F: IntoFuture> Bounded for F {
    #[track_caller]
    fn bounded(self) -> BoundedFuture<F::IntoFuture> {
        BoundedFuture { inner: Box::pin(tokio::time::timeout(LIVENESS, self.into_future())), at: Location::caller() }
    }
}

/// See [`Bounded`].
#[derive(Debug)]
pub struct BoundedFuture<F> {
    inner: Pin<Box<tokio::time::Timeout<F>>>,
    at: &'static Location<'static>,
}

impl<F: Future> Future for BoundedFuture<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        match self.inner.as_mut().poll(cx) {
            Poll::Ready(Ok(output)) => Poll::Ready(output),
            Poll::Ready(Err(_)) => panic!(
                "liveness: the producer gave no result within {LIVENESS:?} (awaited at {}); it is stuck",
                self.at
            ),
            Poll::Pending => Poll::Pending,
        }
    }
}

//! gregor's AsyncProducer: one task sends as fast as `send` lets it (a full queue blocks it:
//! queue.enqueue.timeout.ms=-1); every record's result goes to one `DeliveryHandler` with the
//! record's index as its opaque value (as librdkafka's delivery report callback gets each
//! message's opaque), which records its latency.
//!
//! The sending loop is a task spawned on the runtime, as `gregor perf produce` runs it and as the
//! producer's docs advise (gregor's canonical loop, as rdkafka_performance's is librdkafka's): on
//! the multi-thread runtime it then runs on a worker, so the client keeps two threads busy (like
//! librdkafka's application and broker threads) instead of three (`block_on`'s thread and both
//! workers), which matters where brokers share the client's cores (benchmarks/timing/
//! session-27.md: 0.96 of librdkafka on the `kafka-0.8.2` one-partition acks=1 lz4 row from
//! `block_on`, 1.03 from a task). On the current-thread runtime the task runs on the one thread.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use gregor_producer::{AsyncProducer, DeliveryHandler, DeliveryResult, ProducerConfig, Record};
use gregor_serde::BytesEncoder;

use crate::measure::{Pacer, PreciseSleep, Recorder};
use crate::spec::RunSpec;

/// gregor's `max.in.flight.requests.per.connection` in the benchmark (the Java producer's default).
pub const GREGOR_MAX_IN_FLIGHT: usize = 5;

pub fn run(
    spec: &RunSpec,
    payloads: Arc<Vec<Vec<u8>>>,
    rec: Arc<Recorder>,
    current_thread: bool,
) -> Result<(), String> {
    let runtime = if current_thread {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().enable_all().build()
    }
    .map_err(|e| e.to_string())?;
    let spec = spec.clone();
    runtime.block_on(async move {
        tokio::spawn(send_all(spec, payloads, rec)).await.map_err(|e| format!("sending task: {e}"))?
    })
}

async fn send_all(spec: RunSpec, payloads: Arc<Vec<Vec<u8>>>, rec: Arc<Recorder>) -> Result<(), String> {
    let config = ProducerConfig::builder()
        .metadata_broker_list(spec.brokers.clone())
        .client_id("gregor-bench")
        .producer_type(gregor_producer::ProducerType::Async)
        .request_required_acks(spec.acks)
        .compression_codec(spec.codec.gregor())
        // per request, as librdkafka's is per partition; at most the queue (a request of more
        // could never fill: gregor refuses such a setting)
        .batch_num_messages((spec.batch * spec.partitions_per_broker.max(1)).min(spec.queue))
        .queue_buffering_max(Duration::from_millis(spec.linger_ms))
        .queue_buffering_max_messages(spec.queue)
        // pipelining, the same for librdkafka (see client_rdkafka.rs); gregor's default, 1,
        // is Kafka 0.8's order-keeping one request at a time
        .max_in_flight(GREGOR_MAX_IN_FLIGHT)
        .build()
        .map_err(|e| e.to_string())?;
    let producer: AsyncProducer<Bytes, Bytes> =
        AsyncProducer::new(config, BytesEncoder, BytesEncoder).map_err(|e| e.to_string())?;
    let partitions = spec.partitions as usize;
    // the topic made once and cloned into every record, as librdkafka's topic handle and
    // kafka-rust's &str are
    let topic = gregor_producer::Topic::new(&spec.topic);
    let pacer = Pacer::new(spec.rate);
    let r = rec.clone();
    // one handler for the run, as librdkafka's delivery report callback (a function
    // pointer) is: made once and kept for the life of the worker process, so a send
    // changes no reference count
    let handler: &'static dyn DeliveryHandler =
        Box::leak(Box::new(move |i: u64, result: DeliveryResult| match result {
            Ok(_) => r.acked(i as usize),
            Err(e) => r.failed(i as usize, || e.to_string()),
        }));
    // paced runs wait to within ~0.1 ms as the other clients do, not on tokio's 1 ms timer
    let sleeper = spec.rate.is_some().then(PreciseSleep::new);
    for i in 0..spec.messages {
        if let (Some(wait), Some(sleeper)) = (pacer.wait(i), &sleeper) {
            sleeper.sleep(wait).await;
        }
        // a fresh copy per message, as an application building its messages makes (and
        // as librdkafka makes of the bytes it is given): no sharing of one buffer
        let value = Bytes::copy_from_slice(&payloads[i % payloads.len()]);
        let record = Record::new(topic.clone(), value).with_partition((i % partitions) as i32);
        rec.sent(i);
        producer.send_with_static_handler(record, handler, i as u64).await.map_err(|e| format!("send {i}: {e}"))?;
    }
    let report = producer.flush().await;
    if !report.is_ok() {
        eprintln!("gregor: flush reported {} undelivered", report.failed.len());
    }
    // callbacks run on the producer's task; wait until every one has run
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while rec.done() < spec.messages && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    crate::worker::mark_end();
    let close = producer.close(Duration::from_secs(10)).await;
    if !close.is_ok() {
        eprintln!("gregor: close reported {} undelivered", close.undelivered.len());
    }
    Ok(())
}

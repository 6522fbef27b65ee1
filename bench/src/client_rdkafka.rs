//! librdkafka (rdkafka crate, BaseProducer) in Kafka 0.8.2 mode: api.version.request=false,
//! broker.version.fallback=0.8.2 (so Produce v0, Message v0, Metadata v0); on the modern
//! profile it asks the brokers' versions, as gregor does (and writes RecordBatch v2). The sending
//! thread is the polling thread, librdkafka's own canonical loop (rdkafka_performance): on
//! QueueFull it polls (serving delivery reports) until there is room.

use std::sync::Arc;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::ClientContext;

use crate::measure::{Pacer, Recorder};
use crate::spec::{Codec, RunSpec};

struct Ctx {
    rec: Arc<Recorder>,
}

impl ClientContext for Ctx {}

impl ProducerContext for Ctx {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, i: usize) {
        match result {
            Ok(_) => self.rec.acked(i),
            Err((e, _)) => self.rec.failed(i, || e.to_string()),
        }
    }
}

/// The librdkafka properties of a run (also printed into the report).
pub fn properties(spec: &RunSpec) -> Vec<(&'static str, String)> {
    let mut props = vec![("bootstrap.servers", spec.brokers.clone())];
    props.extend(versions(spec.timing.as_deref()));
    props.extend([
        ("client.id", "librdkafka-bench".into()),
        ("acks", spec.acks.to_string()),
        (
            "compression.codec",
            match spec.codec {
                Codec::None => "none",
                Codec::Snappy => "snappy",
                Codec::Gzip => "gzip",
                Codec::Lz4 => "lz4",
                Codec::Zstd => "zstd",
            }
            .into(),
        ),
        ("linger.ms", spec.linger_ms.to_string()),
        ("batch.num.messages", spec.batch.to_string()),
        ("queue.buffering.max.messages", spec.queue.to_string()),
        // gregor's connections are TCP_NODELAY too
        ("socket.nagle.disable", "true".into()),
        // the same pipelining as gregor's (librdkafka's default allows 1,000,000 requests in
        // flight per connection)
        ("max.in.flight.requests.per.connection", crate::client_gregor::GREGOR_MAX_IN_FLIGHT.to_string()),
    ]);
    if spec.timing.as_deref().is_some_and(crate::plan::is_modern) {
        // as gregor's producer: not idempotent unless asked (librdkafka 2.x's default too)
        props.push(("enable.idempotence", "false".into()));
    }
    props
}

/// How librdkafka learns what the brokers speak: told 0.8.2 (it would otherwise wait out
/// `api.version.request.timeout.ms` on each 0.8.2 broker, which closes the connection on
/// ApiVersions), or, on the modern profile, asking them.
pub fn versions(timing: Option<&str>) -> Vec<(&'static str, String)> {
    if timing.is_some_and(crate::plan::is_modern) {
        vec![("api.version.request", "true".into())]
    } else {
        vec![("api.version.request", "false".into()), ("broker.version.fallback", "0.8.2".into())]
    }
}

/// Serves every delivery report waiting (rdkafka's `poll` handles one event, a batch of
/// reports, per call).
fn drain(producer: &BaseProducer<Ctx>, rec: &Recorder) {
    loop {
        let before = rec.done();
        producer.poll(Duration::ZERO);
        if rec.done() == before {
            break;
        }
    }
}

pub fn run(spec: &RunSpec, payloads: &[Vec<u8>], rec: Arc<Recorder>) -> Result<(), String> {
    let mut config = ClientConfig::new();
    for (k, v) in properties(spec) {
        config.set(k, v);
    }
    for (k, v) in &spec.librdkafka {
        config.set(k, v);
    }
    let producer: BaseProducer<Ctx> =
        config.create_with_context(Ctx { rec: rec.clone() }).map_err(|e| format!("create: {e}"))?;
    let partitions = spec.partitions as usize;
    let pacer = Pacer::new(spec.rate);
    for i in 0..spec.messages {
        if pacer.wait(i).is_some() {
            // wait by serving delivery reports
            while let Some(wait) = pacer.wait(i) {
                producer.poll(wait);
                drain(&producer, &rec);
            }
        }
        rec.sent(i);
        let mut record = BaseRecord::<(), [u8], usize>::with_opaque_to(&spec.topic, i)
            .payload(&payloads[i % payloads.len()][..])
            .partition((i % partitions) as i32);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    record = r;
                    producer.poll(Duration::from_millis(10));
                }
                Err((e, _)) => return Err(format!("send {i}: {e}")),
            }
        }
        if i % 256 == 0 {
            drain(&producer, &rec);
        }
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while rec.done() < spec.messages && std::time::Instant::now() < deadline {
        producer.poll(Duration::from_millis(100));
    }
    crate::worker::mark_end();
    producer.flush(Duration::from_secs(10)).map_err(|e| format!("flush: {e}"))?;
    Ok(())
}

//! librdkafka (rdkafka crate, BaseConsumer) reading a filled topic back in Kafka 0.8.2 mode (on
//! the modern profile asking the brokers' versions, see `client_rdkafka::versions`):
//! 0.8.2 has no group coordination API, so every partition is `assign()`ed at an explicit
//! offset (0: the topic is fresh) and no offset is ever stored or committed. librdkafka needs
//! a `group.id` for `assign()`; with 0.8.2 it only looks up the group's coordinator
//! (ConsumerMetadata v0) and never joins. One thread polls, one message per `poll`, as
//! librdkafka's consumer API hands them out; its fetcher threads prefetch behind it
//! (`queued.min.messages`, default).

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use crate::measure::Tally;
use crate::spec::ConsumeSpec;
use crate::worker::{mark_end, mark_first, Sink};

const STALL: Duration = Duration::from_secs(30);

/// The librdkafka properties of a consumer run.
pub fn properties(spec: &ConsumeSpec) -> Vec<(&'static str, String)> {
    let mut props = vec![("bootstrap.servers", spec.brokers.clone())];
    props.extend(crate::client_rdkafka::versions(spec.timing.as_deref()));
    props.extend([
        ("client.id", "librdkafka-bench".into()),
        ("group.id", format!("librdkafka-bench-{}", spec.topic)),
        ("enable.auto.commit", "false".into()),
        ("enable.auto.offset.store", "false".into()),
        ("enable.partition.eof", "false".into()),
        // gregor and kafka-rust check every message's CRC; librdkafka only when asked
        ("check.crcs", "true".into()),
        ("fetch.message.max.bytes", spec.fetch_max_bytes.to_string()),
        ("fetch.wait.max.ms", spec.fetch_wait_ms.to_string()),
        ("socket.nagle.disable", "true".into()),
    ]);
    props
}

pub fn run(spec: &ConsumeSpec, sink: Sink) -> Result<(), String> {
    let mut config = ClientConfig::new();
    for (k, v) in properties(spec) {
        config.set(k, v);
    }
    for (k, v) in &spec.librdkafka {
        config.set(k, v);
    }
    let consumer: BaseConsumer = config.create().map_err(|e| format!("create: {e}"))?;
    let mut assignment = TopicPartitionList::new();
    for p in 0..spec.partitions {
        assignment
            .add_partition_offset(&spec.topic, p, Offset::Offset(0))
            .map_err(|e| format!("assignment of partition {p}: {e}"))?;
    }
    consumer.assign(&assignment).map_err(|e| format!("assign: {e}"))?;
    let mut tally = Tally::new(&spec.end_offsets);
    let mut last_progress = Instant::now();
    let mut errors = 0u64;
    let mut first_error = None;
    while !tally.done() {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                mark_first();
                tally.record(m.partition(), m.offset(), m.payload());
                last_progress = Instant::now();
            }
            Some(Err(e)) => {
                // librdkafka reports transient trouble (a coordinator lookup, a reconnect)
                // as error events and carries on; only a stall fails the run
                errors += 1;
                if first_error.is_none() {
                    first_error = Some(e.to_string());
                }
            }
            None => {}
        }
        if last_progress.elapsed() > STALL {
            return Err(format!(
                "no message for {STALL:?}; {} of {} read; {errors} error events, first: {}",
                tally.messages,
                spec.messages,
                first_error.as_deref().unwrap_or("-")
            ));
        }
    }
    mark_end();
    if errors > 0 {
        eprintln!("librdkafka consumer: {errors} error events on the way (first: {})", first_error.unwrap_or_default());
    }
    drop(consumer);
    *sink.lock().unwrap() = Some(tally);
    Ok(())
}

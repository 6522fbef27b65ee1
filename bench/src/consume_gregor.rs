//! gregor's two consumers reading a filled topic back.
//!
//! * simple: a task per partition, each fetching its partition from its next offset
//!   (`SimpleConsumer::fetch_partition`) until the end, on tokio's multi-thread runtime: Kafka's
//!   own SimpleConsumer example reads a partition per consumer in a loop. The tasks share one
//!   `SimpleConsumer` (its connection to each leader pipelines their Fetch requests), so no
//!   partition waits for another's answer (a loop fetching every partition at once round after
//!   round waited for the slowest leader each round: 0.95-0.98 of librdkafka on `kafka-0.8.2`,
//!   6 partitions, snappy, against 1.2 this way, benchmarks/timing/session-28.md).
//! * group: a `ConsumerConnector` (ZooKeeper-coordinated, the cluster's ZooKeeper), one member
//!   of a fresh group with `streams` streams, a task draining each stream; no offset commits
//!   (`auto.commit.enable=false`), `auto.offset.reset=smallest`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use gregor_consumer::{AutoOffsetReset, ConsumerConfig, ConsumerConnector, KafkaStream};
use gregor_serde::BytesDecoder;
use gregor_simple_consumer::{SimpleConsumer, SimpleConsumerConfig};

use crate::measure::Tally;
use crate::spec::ConsumeSpec;
use crate::worker::{mark_end, mark_first, Sink};

/// A run that makes no progress for this long fails.
const STALL: Duration = Duration::from_secs(30);

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())
}

pub fn simple(spec: &ConsumeSpec, sink: Sink) -> Result<(), String> {
    runtime()?.block_on(async move {
        let config = SimpleConsumerConfig::builder()
            .metadata_broker_list(spec.brokers.clone())
            .client_id("gregor-bench-simple")
            .fetch_message_max_bytes(spec.fetch_max_bytes)
            .fetch_wait_max(Duration::from_millis(spec.fetch_wait_ms))
            .build()
            .map_err(|e| e.to_string())?;
        let consumer = Arc::new(SimpleConsumer::new(config).map_err(|e| e.to_string())?);
        let tally = Tally::new(&spec.end_offsets);
        let partitions: Vec<usize> = tally.unfinished().collect();
        // locked once per answer, by the partition's own task
        let tally = Arc::new(Mutex::new(tally));
        let mut readers = tokio::task::JoinSet::new();
        for partition in partitions {
            let (consumer, tally, topic) = (consumer.clone(), tally.clone(), spec.topic.clone());
            let end = spec.end_offsets[partition];
            readers.spawn(async move {
                let mut next = tally.lock().unwrap().next_offset(partition);
                let mut last_progress = Instant::now();
                while next < end {
                    let data = consumer
                        .fetch_partition(&topic, partition as i32, next)
                        .await
                        .map_err(|e| format!("fetch {topic}/{partition}: {e}"))?;
                    if !data.messages.is_empty() {
                        mark_first();
                    }
                    let mut tally = tally.lock().unwrap();
                    for m in &data.messages {
                        tally.record(partition as i32, m.offset, m.value.as_deref());
                    }
                    let reached = tally.next_offset(partition);
                    drop(tally);
                    if reached > next {
                        next = reached;
                        last_progress = Instant::now();
                    } else if last_progress.elapsed() > STALL {
                        return Err(format!("no message of {topic}/{partition} for {STALL:?} at offset {next}"));
                    }
                }
                Ok::<(), String>(())
            });
        }
        while let Some(read) = readers.join_next().await {
            read.map_err(|e| format!("a partition's reader: {e}"))??;
        }
        mark_end();
        let Ok(consumer) = Arc::try_unwrap(consumer) else { return Err("the consumer is still shared".into()) };
        consumer.close().await;
        let Ok(tally) = Arc::try_unwrap(tally) else { return Err("the tally is still shared".into()) };
        *sink.lock().unwrap() = Some(tally.into_inner().unwrap());
        Ok(())
    })
}

pub fn group(spec: &ConsumeSpec, sink: Sink) -> Result<(), String> {
    runtime()?.block_on(async move {
        let config = ConsumerConfig::builder()
            .group_id(format!("gregor-bench-{}", spec.topic))
            .zookeeper_connect(spec.zookeeper.clone())
            .client_id("gregor-bench-group")
            .auto_commit_enable(false)
            .auto_offset_reset(AutoOffsetReset::Smallest)
            .fetch_message_max_bytes(spec.fetch_max_bytes)
            .fetch_wait_max(Duration::from_millis(spec.fetch_wait_ms))
            .build()
            .map_err(|e| e.to_string())?;
        let connector = ConsumerConnector::new(config).await.map_err(|e| format!("connector: {e}"))?;
        let streams = connector
            .create_message_streams(HashMap::from([(spec.topic.clone(), spec.streams.max(1))]), Arc::new(BytesDecoder))
            .await
            .map_err(|e| format!("create_message_streams: {e}"))?;
        let streams: Vec<KafkaStream<Bytes>> = streams.into_values().flatten().collect();
        // partitions read to their end offset, across the streams; empty partitions are done
        let done = Arc::new(AtomicUsize::new(spec.end_offsets.iter().filter(|e| **e == 0).count()));
        let all_done = Arc::new(tokio::sync::Notify::new());
        let progress = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let partitions = spec.end_offsets.len();
        if done.load(Ordering::Acquire) == partitions {
            all_done.notify_one();
        }
        let mut tasks = tokio::task::JoinSet::new();
        for mut stream in streams {
            let (end, done, all_done, progress) =
                (spec.end_offsets.clone(), done.clone(), all_done.clone(), progress.clone());
            tasks.spawn(async move {
                let mut tally = Tally::new(&end);
                let mut error = None;
                while let Some(next) = stream.next().await {
                    match next {
                        Ok(m) => {
                            mark_first();
                            if tally.record(m.partition, m.offset, m.value.as_deref()) {
                                progress.fetch_add(1, Ordering::Relaxed);
                                if done.fetch_add(1, Ordering::AcqRel) + 1 == partitions {
                                    all_done.notify_one();
                                }
                            } else if tally.messages % 4096 == 0 {
                                progress.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Err(e) => {
                            error = Some(e.to_string());
                            all_done.notify_one();
                            break;
                        }
                    }
                }
                (tally, error)
            });
        }
        // wait until every partition is read to its end (or a stream failed, or a stall)
        let (mut seen, mut last_progress) = (0, Instant::now());
        loop {
            if tokio::time::timeout(Duration::from_millis(500), all_done.notified()).await.is_ok() {
                break; // every partition done, or a stream ended with an error (see below)
            }
            let now = progress.load(Ordering::Relaxed);
            if now != seen {
                (seen, last_progress) = (now, Instant::now());
            } else if last_progress.elapsed() > STALL {
                let _ = tokio::time::timeout(Duration::from_secs(10), connector.shutdown()).await;
                return Err(format!("no progress for {STALL:?}"));
            }
        }
        mark_end();
        tokio::time::timeout(Duration::from_secs(30), connector.shutdown())
            .await
            .map_err(|_| "shutdown took longer than 30 s".to_owned())?
            .map_err(|e| format!("shutdown: {e}"))?;
        let mut total = Tally::new(&spec.end_offsets);
        let mut first_error = None;
        while let Some(joined) = tokio::time::timeout(Duration::from_secs(10), tasks.join_next())
            .await
            .map_err(|_| "a stream did not end after shutdown".to_owned())?
        {
            let (tally, error) = joined.map_err(|e| format!("stream task: {e}"))?;
            total.merge(&tally);
            first_error = first_error.or(error);
        }
        if let Some(e) = first_error {
            return Err(format!("stream: {e}"));
        }
        *sink.lock().unwrap() = Some(total);
        Ok(())
    })
}

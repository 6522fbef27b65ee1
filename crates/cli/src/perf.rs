//! `gregor perf produce|consume`: throughput and latency, with a progress line on stderr (when
//! stderr is a terminal) and a closing summary: messages/s, MB/s, p50/p99 latency.
//!
//! Latency of `produce`: from handing a message to the asynchronous producer to its delivery
//! callback (batching included). Latency of `consume`: how long each `next()` of the consumer
//! stream waited for its message.
//!
//! `produce` sends null-key messages, and Kafka 0.8's default partitioner sends every null-key
//! message to one partition until the next metadata refresh (10 minutes by default): a run would
//! measure one partition while looking like a topic benchmark. So `perf produce` partitions
//! round robin unless `--property partitioner.class=...` says otherwise, and its summary says
//! which partitioner ran and how many messages each partition took.

use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use gregor_consumer::{ConsumerConfig, ConsumerConnector, Error as ConsumerError};
use gregor_producer::{AsyncProducer, DeliveryHandler, DeliveryResult, ProducerConfig, Record};
use gregor_serde::BytesEncoder;
use serde_json::json;

use crate::cli::{OutputFormat, PerfConsumeArgs, PerfProduceArgs};
use crate::error::CliError;
use crate::tally::{lock, PartitionCounts};

/// How often the progress line is redrawn.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// A progress line on stderr, drawn only when stderr is a terminal.
#[derive(Debug)]
struct Progress {
    total: u64,
    started: Instant,
    last: Instant,
    on: bool,
}

impl Progress {
    fn new(total: u64) -> Progress {
        let now = Instant::now();
        Progress { total, started: now, last: now, on: std::io::stderr().is_terminal() }
    }

    fn tick(&mut self, done: u64) {
        if !self.on || self.last.elapsed() < PROGRESS_EVERY {
            return;
        }
        self.last = Instant::now();
        let width = 30u64;
        let filled = (done * width).checked_div(self.total).unwrap_or(0).min(width) as usize;
        let rate = done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        let _ = write!(
            std::io::stderr(),
            "\r[{}{}] {done}/{} ({rate:.0} msg/s)",
            "#".repeat(filled),
            "-".repeat(width as usize - filled),
            self.total
        );
    }

    fn finish(&self) {
        if self.on {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

/// The closing numbers.
#[derive(Debug)]
struct Summary {
    messages: u64,
    bytes: u64,
    failed: u64,
    elapsed: Duration,
    /// Sorted.
    latencies_us: Vec<u64>,
    /// `produce` only: the partitioner and the messages delivered to each partition.
    spread: Option<Spread>,
    /// `produce` only: why the first message that failed (refused or not delivered) failed.
    first_error: Option<String>,
}

/// How a `perf produce` run partitioned its messages.
#[derive(Debug)]
struct Spread {
    /// `partitioner.class` as the producer read it.
    partitioner: String,
    /// Messages delivered per partition.
    per_partition: BTreeMap<i32, u64>,
}

impl Spread {
    /// `partitioner round_robin: 3 partitions, p0 667, p1 667, p2 666`.
    fn describe(&self) -> String {
        let parts: Vec<String> = self.per_partition.iter().map(|(p, n)| format!("p{p} {n}")).collect();
        format!(
            "partitioner {}: {} partition{}, {}",
            self.partitioner,
            self.per_partition.len(),
            if self.per_partition.len() == 1 { "" } else { "s" },
            parts.join(", ")
        )
    }
}

impl Summary {
    fn new(
        messages: u64,
        bytes: u64,
        failed: u64,
        elapsed: Duration,
        mut latencies_us: Vec<u64>,
        spread: Option<Spread>,
        first_error: Option<String>,
    ) -> Summary {
        latencies_us.sort_unstable();
        Summary { messages, bytes, failed, elapsed, latencies_us, spread, first_error }
    }

    /// The `p`th percentile of the latencies, ms.
    fn percentile(&self, p: f64) -> f64 {
        let v = &self.latencies_us;
        if v.is_empty() {
            return 0.0;
        }
        let i = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
        v[i.min(v.len() - 1)] as f64 / 1000.0
    }

    fn print(&self, what: &str, output: OutputFormat) -> Result<(), CliError> {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        let (msg_s, mb_s) = (self.messages as f64 / secs, self.bytes as f64 / secs / 1_000_000.0);
        let (p50, p99) = (self.percentile(50.0), self.percentile(99.0));
        let text = match output {
            OutputFormat::Json => {
                let mut j = json!({
                    "messages": self.messages, "bytes": self.bytes, "failed": self.failed,
                    "seconds": secs, "messages_per_second": msg_s, "mb_per_second": mb_s,
                    "latency_p50_ms": p50, "latency_p99_ms": p99,
                });
                if let Some(error) = &self.first_error {
                    j["first_error"] = json!(error);
                }
                if let Some(spread) = &self.spread {
                    let per: serde_json::Map<String, serde_json::Value> =
                        spread.per_partition.iter().map(|(p, n)| (p.to_string(), json!(n))).collect();
                    j["partitioner"] = json!(spread.partitioner);
                    j["messages_per_partition"] = serde_json::Value::Object(per);
                }
                format!("{}\n", serde_json::to_string_pretty(&j).unwrap_or_default())
            }
            OutputFormat::Table => format!(
                "{what} {} messages ({:.2} MB) in {secs:.2} s: {msg_s:.0} messages/s, {mb_s:.2} MB/s, \
                 latency p50 {p50:.2} ms, p99 {p99:.2} ms{}\n{}",
                self.messages,
                self.bytes as f64 / 1_000_000.0,
                if self.failed > 0 { format!(", {} failed", self.failed) } else { String::new() },
                self.spread.as_ref().map(|s| format!("{}\n", s.describe())).unwrap_or_default()
            ),
        };
        let _ = std::io::stdout().write_all(text.as_bytes());
        let _ = std::io::stdout().flush();
        if self.failed > 0 {
            let first = self.first_error.as_ref().map(|e| format!("; the first: {e}")).unwrap_or_default();
            return Err(CliError::msg(format!(
                "{} of {} messages were not delivered{first}",
                self.failed,
                self.messages + self.failed
            )));
        }
        Ok(())
    }
}

/// `partitioner.class` of `perf produce` unless a `--property` sets it: its messages have no
/// key, and 0.8's default partitioner would send them all to one partition.
const PERF_PARTITIONER: &str = "round_robin";

/// At most this many distinct values in `perf produce`'s pool ([`payloads`]).
const PAYLOADS: usize = 4096;

/// At most about this many bytes in `perf produce`'s pool of values (fewer values for large
/// messages, at least one).
const PAYLOAD_POOL_BYTES: usize = 16 << 20;

/// The values `perf produce` cycles through: up to [`PAYLOADS`] distinct ones of
/// `size` random uppercase letters (what Kafka's own performance tool fills its values with),
/// slices of one buffer. A single repeated value, or one letter repeated, lets a compressed
/// batch point back at the previous message and shrink to almost nothing, which no real
/// topic does: 4,096 values of 100 bytes span more than gzip's window (32 KiB) and a snappy
/// block (64 KiB). The same values every run (a fixed seed), so runs compare.
fn payloads(size: usize) -> Vec<Bytes> {
    let count = (PAYLOAD_POOL_BYTES / size.max(1)).clamp(1, PAYLOADS);
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut letter = move || {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        b'A' + ((state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) % 26) as u8
    };
    let all = Bytes::from((0..count * size).map(|_| letter()).collect::<Vec<u8>>());
    (0..count).map(|i| all.slice(i * size..(i + 1) * size)).collect()
}

/// How often (in messages) `perf produce` asks its progress line whether to redraw.
const PROGRESS_CHECK: u64 = 1024;

/// What `perf produce` learns of its messages: their send times and latencies, the partitions
/// they went to, the first failure. Its [`DeliveryHandler`] is the run's only one, called for
/// every message with the message's number.
#[derive(Debug)]
struct Tally {
    started: Instant,
    /// Per message: its send time in µs since `started` until its delivery, then its latency
    /// with [`DELIVERED`] set.
    slots: Vec<AtomicU64>,
    partitions: PartitionCounts,
    first_error: Mutex<Option<String>>,
}

/// Marks a [`Tally`] slot that holds a latency.
const DELIVERED: u64 = 1 << 63;

impl Tally {
    fn new(messages: u64) -> Tally {
        let slots = (0..messages).map(|_| AtomicU64::new(0)).collect();
        Tally { started: Instant::now(), slots, partitions: PartitionCounts::default(), first_error: Mutex::default() }
    }

    fn now_us(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    /// Message `i` is being sent now.
    fn sent(&self, i: u64) {
        self.slots[i as usize].store(self.now_us(), Ordering::Relaxed);
    }

    /// The first failure, with its causes (as `gregor produce` lists failures).
    fn note_error(&self, e: &(dyn std::error::Error + 'static)) {
        lock(&self.first_error).get_or_insert_with(|| crate::error::chain(e));
    }

    /// The delivered messages' latencies, µs.
    fn latencies_us(&self) -> Vec<u64> {
        self.slots
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .filter(|v| v & DELIVERED != 0)
            .map(|v| v & !DELIVERED)
            .collect()
    }
}

impl DeliveryHandler for Tally {
    fn on_delivery(&self, i: u64, result: DeliveryResult) {
        match result {
            Ok(metadata) => {
                let Some(slot) = self.slots.get(i as usize) else { return };
                let latency = self.now_us().saturating_sub(slot.load(Ordering::Relaxed));
                slot.store(latency | DELIVERED, Ordering::Relaxed);
                self.partitions.add(metadata.partition);
            }
            Err(e) => self.note_error(&*e),
        }
    }
}

/// Runs `gregor perf produce`.
pub(crate) async fn produce(args: PerfProduceArgs) -> Result<(), CliError> {
    let mut props: Vec<(String, String)> = vec![
        ("producer.type".into(), "async".into()),
        ("client.id".into(), "gregor-perf".into()),
        ("request.required.acks".into(), "1".into()),
        ("queue.buffering.max.ms".into(), "5".into()),
        ("batch.num.messages".into(), "500".into()),
        ("partitioner.class".into(), PERF_PARTITIONER.into()),
    ];
    props.extend(crate::properties::with_file(args.command_config.as_deref(), &args.properties)?);
    props.push(("metadata.broker.list".into(), args.broker_list.clone()));
    let config = ProducerConfig::from_properties(props).map_err(|e| CliError::usage("invalid producer settings", e))?;
    let partitioner = config.partitioner().class_name().to_owned();
    let producer: AsyncProducer<Bytes, Bytes> = AsyncProducer::new(config, BytesEncoder, BytesEncoder)
        .map_err(|e| CliError::usage("could not create the producer", e))?;
    let payloads = payloads(args.message_size);
    let topic = gregor_producer::Topic::new(&args.topic);
    // one handler for the run, made once: a send then allocates nothing for its result and
    // changes no reference count (a boxed callback per message cost this tool about 40% of
    // the producer's throughput). Leaked: it lives to the end of the command, which is the
    // process's.
    let tally: &'static Tally = Box::leak(Box::new(Tally::new(args.messages)));
    let mut progress = Progress::new(args.messages);
    for i in 0..args.messages {
        let record = Record::new(topic.clone(), payloads[i as usize % payloads.len()].clone());
        tally.sent(i);
        // a refused message counts as failed below (no delivery recorded)
        if let Err(e) = producer.send_with_static_handler(record, tally, i).await {
            tally.note_error(&e);
        }
        if i % PROGRESS_CHECK == 0 {
            progress.tick(i + 1);
        }
    }
    producer.flush().await;
    let elapsed = tally.started.elapsed();
    let _ = producer.close(Duration::from_secs(5)).await;
    progress.finish();
    let latencies_us = tally.latencies_us();
    let delivered = latencies_us.len() as u64;
    let failed = args.messages - delivered;
    let spread = Spread { partitioner, per_partition: tally.partitions.totals() };
    let first_error = lock(&tally.first_error).take();
    Summary::new(
        delivered,
        delivered * args.message_size as u64,
        failed,
        elapsed,
        latencies_us,
        Some(spread),
        first_error,
    )
    .print("produced", args.output)
}

/// Runs `gregor perf consume`.
pub(crate) async fn consume(args: PerfConsumeArgs) -> Result<(), CliError> {
    let group = args.group.clone().unwrap_or_else(|| format!("gregor-perf-{}", std::process::id()));
    let mut props: Vec<(String, String)> = vec![
        ("client.id".into(), "gregor-perf".into()),
        ("auto.offset.reset".into(), "smallest".into()),
        ("auto.commit.enable".into(), "false".into()),
    ];
    props.extend(crate::properties::with_file(args.command_config.as_deref(), &args.properties)?);
    props.push(("zookeeper.connect".into(), args.zookeeper.clone()));
    props.push(("group.id".into(), group.clone()));
    props.push(("consumer.timeout.ms".into(), args.timeout_ms.to_string()));
    let config = ConsumerConfig::from_properties(props).map_err(|e| CliError::usage("invalid consumer settings", e))?;
    let admin = crate::admin::connect_zk(&args.zookeeper, config.zookeeper_session_timeout).await?;
    let exists = admin.describe_topic_config(&args.topic).await;
    let _ = admin.close().await;
    exists.map_err(|e| CliError::new(format!("cannot consume topic {:?}", args.topic), e))?;
    let connector = ConsumerConnector::new(config)
        .await
        .map_err(|e| CliError::new(format!("could not join consumer group {group:?}"), e))?;
    let streams = connector
        .create_message_streams(HashMap::from([(args.topic.clone(), 1)]), Arc::new(gregor_serde::BytesDecoder))
        .await;
    let mut stream: gregor_consumer::KafkaStream<Bytes> =
        match streams.map(|mut m| m.remove(&args.topic).unwrap_or_default()) {
            Ok(mut s) if !s.is_empty() => s.remove(0),
            Ok(_) => {
                let _ = connector.shutdown().await;
                return Err(CliError::msg("the consumer created no stream"));
            }
            Err(e) => {
                let _ = connector.shutdown().await;
                return Err(CliError::new(format!("could not subscribe consumer group {group:?}"), e));
            }
        };
    let mut progress = Progress::new(args.messages);
    let started = Instant::now();
    let (mut messages, mut bytes) = (0u64, 0u64);
    let mut latencies_us = Vec::with_capacity(args.messages as usize);
    let mut last = started;
    let mut error = None;
    while messages < args.messages {
        let asked = Instant::now();
        let next = tokio::select! {
            biased;
            _ = tokio::signal::ctrl_c() => break,
            n = stream.next() => n,
        };
        match next {
            None | Some(Err(ConsumerError::ConsumerTimeout { .. })) => break,
            Some(Err(e)) => {
                error = Some(CliError::new("consuming failed", e));
                break;
            }
            Some(Ok(m)) => {
                messages += 1;
                bytes += m.value.as_ref().map_or(0, |v| v.len() as u64);
                latencies_us.push(asked.elapsed().as_micros() as u64);
                last = Instant::now();
                progress.tick(messages);
            }
        }
    }
    progress.finish();
    let _ = connector.shutdown().await;
    if let Some(e) = error {
        return Err(e);
    }
    Summary::new(messages, bytes, 0, last - started, latencies_us, None, None).print("consumed", args.output)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn the_tally_counts_deliveries_by_partition_and_keeps_their_latencies() {
        let tally = Tally::new(5);
        for i in 0..5 {
            tally.sent(i);
        }
        std::thread::sleep(Duration::from_millis(3));
        let topic = gregor_producer::Topic::new("t");
        let delivered = |partition| Ok(gregor_producer::RecordMetadata { topic: topic.clone(), partition, offset: 0 });
        // message 1 is never delivered (refused, or its result lost); 3 goes to a partition
        // past the lock-free counters
        for (i, partition) in [(0, 0), (2, 7), (3, 5000), (4, 7)] {
            tally.on_delivery(i, delivered(partition));
        }
        tally.on_delivery(99, delivered(0)); // no such message: ignored, no panic
        let latencies = tally.latencies_us();
        assert_eq!(latencies.len(), 4, "{latencies:?}");
        assert!(latencies.iter().all(|&l| (3_000..1_000_000).contains(&l)), "{latencies:?}");
        assert_eq!(tally.partitions.totals(), BTreeMap::from([(0, 1), (7, 2), (5000, 1)]));
        assert!(lock(&tally.first_error).is_none());
        let summary = Summary::new(4, 400, 1, Duration::from_secs(1), vec![30, 10, 40, 20], None, None);
        assert_eq!((summary.percentile(0.0), summary.percentile(100.0)), (0.01, 0.04), "sorted once, at the start");
    }

    #[test]
    fn perf_values_are_distinct_random_letters_bounded_in_bytes() {
        let values = payloads(100);
        assert_eq!(values.len(), PAYLOADS);
        assert!(values.iter().all(|v| v.len() == 100 && v.iter().all(u8::is_ascii_uppercase)));
        let distinct: HashSet<&[u8]> = values.iter().map(|v| &v[..]).collect();
        assert_eq!(distinct.len(), PAYLOADS, "every value differs");
        // every letter, none dominating: not one letter repeated
        let mut counts = [0usize; 26];
        for v in &values {
            for b in v.iter() {
                counts[(b - b'A') as usize] += 1;
            }
        }
        let total = 100 * PAYLOADS;
        assert!(counts.iter().all(|&n| n > total / 26 * 9 / 10 && n < total / 26 * 11 / 10), "{counts:?}");
        // the same values each run
        assert_eq!(payloads(100), values);
        // large values: fewer of them, the pool stays near its bound
        let big = payloads(1 << 20);
        assert_eq!(big.len(), PAYLOAD_POOL_BYTES >> 20);
        assert_ne!(big[0], big[1]);
        // a value larger than the pool's bound: one; empty values: one per slot, empty
        assert_eq!(payloads(PAYLOAD_POOL_BYTES + 1).len(), 1);
        assert!(payloads(0).iter().all(Bytes::is_empty));
    }
}

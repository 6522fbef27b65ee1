//! Outage memory: with every broker down, the async producer and a consumer group stay within
//! their configured bounds, and recover everything when the brokers return.
//!
//! A producer keeps sending at 2,000 records a second into a queue of
//! `queue.buffering.max.messages` = 5,000 records with `queue.enqueue.timeout.ms` = 20 ms, and
//! a group of two members reads along. Then every broker goes down twice: killed (listeners
//! closed, registrations gone), then paused (connections open, nothing answered) — 10 s each
//! in the short profile (CI), 60 s each in the long one (`GREGOR_FAULT_PROFILE=long`). The
//! group's application stops taking messages shortly before each outage and until the brokers
//! are back, so the members' prefetch is full while the brokers are down. Sampled every 50 ms
//! meanwhile:
//!
//! * the producer's queue ([`AsyncProducer::queued`]) never exceeds its capacity, and the app
//!   sees `QueueFull` once it is full (it is never blocked for longer than the enqueue timeout);
//! * each consumer's prefetch ([`ConsumerConnector::buffered_bytes`]) stays within
//!   `(streams x queued.max.message.chunks + owned partitions) x fetch.message.max.bytes`;
//! * the heap (a counting global allocator, below) rises by at most what the producer's
//!   capacity and the consumers' prefetch allow (see [`heap_bound`]) and stays flat once the
//!   queue is full (see [`FLAT`]): no growth with the length of the outage.
//!
//! The FakeCluster runs in a child process (this test binary again, running the ignored test
//! `cluster_process`, driven by commands on its standard input), so that the heap measured here
//! is the clients' (and the test's bookkeeping, reserved up front), not the brokers'.
//!
//! The brokers come back in the reverse order of the kills: the last one down was the last
//! in-sync replica of its partitions, and another replica back first would be elected leader
//! uncleanly (Kafka 0.8.2's default, which the FakeCluster follows) and truncate writes that
//! acks=-1 had acknowledged — a first long run, restarting in kill order, lost 58 that way.
//!
//! When the brokers return: every accepted record gets exactly one result, none fails (the
//! retries outlast the outage), every acknowledged record is in the logs (read with the simple
//! consumer), and the group delivers every message in the logs.
//!
//! Needs Debian's `zookeeper` (fails without it; skips only with `GREGOR_ALLOW_SKIP=1` outside
//! CI).
//!
//! [`AsyncProducer::queued`]: gregor::producer::AsyncProducer::queued
//! [`ConsumerConnector::buffered_bytes`]: gregor::consumer::ConsumerConnector::buffered_bytes

#[path = "faults/support.rs"]
mod support;

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gregor::producer::{EnqueueTimeout, ProducerConfig};
use gregor_testkit::zookeeper::ZooKeeperServer;
use gregor_testkit::FakeCluster;
use support::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

// The heap is measured with a counting global allocator: it is the only way to see this
// process's heap (not its RSS, which the allocator's caching blurs), and it only forwards to the
// system allocator.
gregor_testkit::counting_allocator!(ALLOCATOR);

/// Bytes allocated and not yet freed, by the whole process.
fn heap() -> i64 {
    ALLOCATOR.live() as i64
}

const TOPIC: &str = "outage";
const PARTITIONS: i32 = 6;
const GROUP: &str = "outage-group";
/// `queue.buffering.max.messages`.
const QUEUE: usize = 5_000;
/// Records a second the app tries to send.
const RATE: u32 = 2_000;
/// Members of the group, one stream each.
const MEMBERS: u8 = 2;
/// `queued.max.message.chunks` and `fetch.message.max.bytes` of the members.
const CHUNKS: usize = 2;
const FETCH_MAX: i32 = 64 * 1024;

/// Heap a record held by the producer may take: its ~100-byte value and ~8-byte key as
/// encoded `Bytes`, the record's bookkeeping (topic, slot, callback box, accumulator entry),
/// and its share of one encoded batch copy in flight — measured at 250 to 400 bytes (printed as
/// "per queued record"); 1 KiB leaves room for allocator size classes and a different build.
const PER_RECORD: i64 = 1024;
/// Heap the rest of the clients may move by while the brokers are down, whatever the outage's
/// length: connections dropped and re-made on every retry (read buffers, pending requests),
/// metadata, tokio tasks and timers, the test's samples.
const FIXED: i64 = 4 << 20;
/// How much the heap may still move once the producer's queue is full, whatever the outage's
/// length.
const FLAT: i64 = 2 << 20;

/// The heap the outage may add: the producer's capacity times [`PER_RECORD`], every member's
/// prefetch bound, and [`FIXED`].
fn heap_bound() -> i64 {
    QUEUE as i64 * PER_RECORD + i64::from(MEMBERS) * consumer_bound() as i64 + FIXED
}

/// `(streams x queued.max.message.chunks + owned partitions) x fetch.message.max.bytes` for
/// one member (one stream, owning at most every partition).
fn consumer_bound() -> u64 {
    (CHUNKS as u64 + PARTITIONS as u64) * FETCH_MAX as u64
}

/// Environment variable that makes `cluster_process` run the cluster, in this ZooKeeper.
const CLUSTER_ENV: &str = "GREGOR_OUTAGE_CLUSTER_ZOOKEEPER";

/// Marks the cluster process's protocol lines in its standard output (which the test harness
/// shares, without always ending its own lines first).
const TAG: &str = "@outage-cluster ";

/// The FakeCluster of the outage test, in a process of its own. It prints
/// `<TAG>brokers=<bootstrap>` when ready; then commands, one a line on its standard input, are
/// each answered by one `<TAG>ok ...` or `<TAG>err ...` line: `kill` (every broker, in id
/// order), `restart` (every broker, in reverse order), `pause`, `resume`, `healthy`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the outage test's cluster, started by that test in a child process"]
async fn cluster_process() {
    let Ok(zookeeper) = std::env::var(CLUSTER_ENV) else { return };
    init_tracing_if_asked();
    let cluster = FakeCluster::builder(zookeeper)
        .brokers(3)
        .request_log_capacity(0)
        .configure(|c| c.replica_lag_time_max = Duration::from_secs(2))
        .start()
        .await
        .expect("the fake cluster starts");
    cluster.create_topic(TOPIC, PARTITIONS, 2).await.expect("the topic");
    println!("{TAG}brokers={}", cluster.bootstrap());
    let ids: Vec<i32> = cluster.broker_addrs().iter().map(|(id, _)| *id).collect();
    let mut commands = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = commands.next_line().await {
        let reply = match line.trim() {
            "kill" => {
                let mut r = String::from("ok");
                for &b in &ids {
                    if let Err(e) = cluster.kill_broker(b).await {
                        r = format!("err killing {b}: {e}");
                    }
                }
                r
            }
            // the last broker down comes back first: it was the last in-sync replica of its
            // partitions (see the module docs)
            "restart" => {
                let mut r = String::from("ok");
                for &b in ids.iter().rev() {
                    if let Err(e) = cluster.restart_broker(b).await {
                        r = format!("err restarting {b}: {e}");
                    }
                }
                r
            }
            "pause" => {
                ids.iter().for_each(|b| cluster.pause_broker(*b));
                "ok".to_owned()
            }
            "resume" => {
                ids.iter().for_each(|b| cluster.resume_broker(*b));
                "ok".to_owned()
            }
            "healthy" => format!("ok {}", healthy(&cluster, TOPIC, PARTITIONS)),
            other => format!("err unknown command {other:?}"),
        };
        println!("{TAG}{reply}");
    }
    cluster.shutdown().await;
}

/// The parent's handle on the cluster process (killed when dropped).
struct ClusterProcess {
    _child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    brokers: String,
}

impl ClusterProcess {
    async fn start(zookeeper: &str) -> ClusterProcess {
        let exe = std::env::current_exe().expect("this test binary");
        let mut child = Command::new(exe)
            .args(["cluster_process", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(CLUSTER_ENV, zookeeper)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the cluster process starts");
        let stdin = child.stdin.take().expect("its stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("its stdout")).lines();
        let brokers = bounded("the cluster process starting", Duration::from_secs(60), async {
            loop {
                match stdout.next_line().await {
                    Ok(Some(line)) => {
                        if let Some(b) = tagged(&line).and_then(|l| l.strip_prefix("brokers=")) {
                            return b.trim().to_owned();
                        }
                    }
                    other => panic!("the cluster process ended before it was ready: {other:?}"),
                }
            }
        })
        .await;
        ClusterProcess { _child: child, stdin, stdout, brokers }
    }

    /// Sends a command and returns the text after `ok`; panics on `err` or an ended process.
    async fn command(&mut self, command: &'static str) -> String {
        self.stdin.write_all(format!("{command}\n").as_bytes()).await.expect("a command to the cluster");
        self.stdin.flush().await.expect("a command to the cluster");
        let stdout = &mut self.stdout;
        bounded("a command to the cluster process", Duration::from_secs(120), async move {
            loop {
                match stdout.next_line().await {
                    Ok(Some(line)) => match tagged(&line) {
                        Some(reply) if reply.starts_with("ok") => return reply[2..].trim().to_owned(),
                        Some(reply) => panic!("cluster process: {command}: {reply}"),
                        None => {} // the test harness's own lines
                    },
                    other => panic!("the cluster process ended during {command}: {other:?}"),
                }
            }
        })
        .await
    }

    async fn healthy(&mut self) -> bool {
        self.command("healthy").await == "true"
    }
}

/// The part of a line of the cluster process after [`TAG`].
fn tagged(line: &str) -> Option<&str> {
    line.find(TAG).map(|i| &line[i + TAG.len()..])
}

/// What one outage looked like.
#[derive(Debug, Default)]
struct Sampled {
    queued_at_start: usize,
    max_queued: usize,
    max_buffered: u64,
    heap_at_start: i64,
    heap_when_full: Option<i64>,
    heap_at_end: i64,
    peak: i64,
    samples: usize,
}

/// Samples for `length`: the producer's queue, the members' prefetch, the heap.
async fn sample(producer: &VerifiableProducer, members: &[Member], length: Duration) -> Sampled {
    let mut s = Sampled { heap_at_start: heap(), queued_at_start: producer.producer.queued(), ..Default::default() };
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    while started.elapsed() < length {
        tick.tick().await;
        let queued = producer.producer.queued();
        s.max_queued = s.max_queued.max(queued);
        for m in members {
            s.max_buffered = s.max_buffered.max(m.connector.buffered_bytes());
        }
        // once the queue has been full for a third of the outage, the heap must stay flat
        if s.heap_when_full.is_none() && queued == QUEUE && started.elapsed() >= length / 3 {
            s.heap_when_full = Some(heap());
        }
        s.samples += 1;
    }
    s.heap_at_end = heap();
    s.peak = ALLOCATOR.peak() as i64;
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_broker_down_producer_and_group_stay_bounded_and_recover() {
    let profile = Profile::from_env();
    let outage = match profile {
        Profile::Short => Duration::from_secs(10),
        Profile::Long => Duration::from_secs(60),
    };
    let Some(zk) = ZooKeeperServer::shared_or_skip() else { return };
    init_tracing_if_asked();
    let limit = outage * 2 + Duration::from_secs(300);
    let run = async move {
        let started = Instant::now();
        let zookeeper = zk.unique_chroot("outage");
        let mut cluster = ClusterProcess::start(&zookeeper).await;

        let group = Arc::new(Mutex::new(GroupLedger::default()));
        for p in 0..PARTITIONS {
            // reserve the ledger up front: its growth must not count as the clients'
            lock(&group).partitions.insert(p, Vec::with_capacity(1 << 17));
        }
        let (gate, gate_rx) = watch::channel(true);
        let mut members = Vec::new();
        for id in 0..MEMBERS {
            let config = consumer_config(&zookeeper, GROUP, id)
                .queued_max_message_chunks(CHUNKS)
                .fetch_message_max_bytes(FETCH_MAX);
            let ledger = Arc::clone(&group);
            members.push(join_member(&zookeeper, TOPIC, id, 1, false, config, ledger, Some(gate_rx.clone())).await);
        }
        let config = ProducerConfig::builder()
            .metadata_broker_list(cluster.brokers.clone())
            .client_id("outage-producer")
            .request_required_acks(-1)
            .request_timeout(Duration::from_secs(2))
            .queue_buffering_max_messages(QUEUE)
            .queue_enqueue_timeout(EnqueueTimeout::Wait(Duration::from_millis(20)))
            .queue_buffering_max(Duration::from_millis(5))
            // 100,000 retries of >= 200 ms outlast any outage here
            .message_send_max_retries(100_000)
            .retry_backoff(Duration::from_millis(200))
            .build()
            .expect("a producer config");
        let producer = Arc::new(VerifiableProducer::new(0, TOPIC, config, 1 << 20));
        let (stop_tx, stop_rx) = watch::channel(false);
        let sender = producer.spawn_sender(RATE, stop_rx);

        // flowing: the group keeps up
        tokio::time::sleep(Duration::from_secs(3)).await;
        let flowing = poll_until(Duration::from_secs(30), || async {
            lock(&group).total() as u64 >= producer.counts().acked.saturating_sub(2 * u64::from(RATE))
        })
        .await
        .is_some();
        assert!(flowing, "the group did not keep up before the outage");

        for (how, down, up) in [("killed", "kill", "restart"), ("paused", "pause", "resume")] {
            let refused_before = producer.counts().refused;
            // the app stops taking messages: the members' prefetch fills up
            gate.send_replace(false);
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let delivered_before = lock(&group).total();
            let backlog = producer.counts().acked.saturating_sub(delivered_before as u64);
            let t = Instant::now();
            ALLOCATOR.reset_peak();
            cluster.command(down).await;
            let s = sample(&producer, &members, outage).await;
            let down_for = t.elapsed();
            let (rss, hwm) = rss_kib();
            cluster.command(up).await;
            gate.send_replace(true);
            let t = Instant::now();
            let mut healed = false;
            while !healed && t.elapsed() < Duration::from_secs(60) {
                healed = cluster.healthy().await;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert!(healed, "the cluster did not heal after the brokers were {how}");
            // recovered: the queue drains below half and the group delivers again
            let recovered = poll_until(Duration::from_secs(60), || async {
                producer.producer.queued() < QUEUE / 2 && lock(&group).total() > delivered_before
            })
            .await
            .is_some();
            let refused = producer.counts().refused - refused_before;
            let line = format!(
                "outage[{}] brokers {how} for {:.1}s: queue max {}/{QUEUE}, refused (QueueFull) {refused}, app \
                 stalled with {backlog} messages to read, consumer prefetch max {} B (bound {} B), client heap {:.1} \
                 MiB at the start, peak +{:.2} MiB (bound +{:.1} MiB), when full +{:.2} MiB ({} B per queued \
                 record), at the end +{:.2} MiB, RSS {} MiB (high water {} MiB), {} samples, recovered in {:.1}s",
                profile.name(),
                down_for.as_secs_f64(),
                s.max_queued,
                s.max_buffered,
                consumer_bound(),
                mib(s.heap_at_start),
                mib(s.peak - s.heap_at_start),
                mib(heap_bound()),
                s.heap_when_full.map_or(f64::NAN, |h| mib(h - s.heap_at_start)),
                s.heap_when_full.map_or(0, |h| (h - s.heap_at_start) / (QUEUE - s.queued_at_start).max(1) as i64),
                mib(s.heap_at_end - s.heap_at_start),
                rss / 1024,
                hwm / 1024,
                s.samples,
                secs(t),
            );
            eprintln!("{line}");
            assert!(recovered, "no recovery within 60 s after the brokers were {how}");
            assert!(s.max_queued <= QUEUE, "the queue held {} records, over its capacity {QUEUE}", s.max_queued);
            assert_eq!(s.max_queued, QUEUE, "the queue filled up during the outage (the app outran it)");
            assert!(refused > 0, "a full queue refuses records after queue.enqueue.timeout.ms");
            assert!(
                s.max_buffered <= consumer_bound(),
                "a member's prefetch ({} B) exceeded its bound",
                s.max_buffered
            );
            assert!(
                s.peak - s.heap_at_start <= heap_bound(),
                "the heap rose by {:.1} MiB while the brokers were {how}, over the bound {:.1} MiB",
                mib(s.peak - s.heap_at_start),
                mib(heap_bound())
            );
            let full = s.heap_when_full.expect("the queue was full by a third of the outage");
            assert!(
                s.heap_at_end - full <= FLAT,
                "the heap grew by {:.2} MiB over the rest of the outage with the queue full: it grows with time",
                mib(s.heap_at_end - full)
            );
        }

        // stop sending; every accepted record gets its result, and is in the logs
        let _ = stop_tx.send(true);
        bounded("the sender stopping", Duration::from_secs(30), sender).await.expect("the sender task");
        let close =
            bounded("the producer's close", Duration::from_secs(90), producer.producer.close(Duration::from_secs(60)))
                .await;
        let logs = read_logs(&cluster.brokers, TOPIC, PARTITIONS).await;
        let produced = judge_produce(&[producer.as_ref()], &logs);
        let drained = poll_until(Duration::from_secs(90), || async {
            let distinct = lock(&group).distinct();
            logs.iter().all(|(p, entries)| entries.iter().all(|e| distinct.get(p).is_some_and(|d| d.contains(&e.0))))
        })
        .await
        .is_some();
        let consumed = judge_consume(&lock(&group), &logs, &Default::default());
        for m in members {
            leave(m).await;
        }
        eprintln!(
            "outage[{}]: accepted {} acked {} failed {} pending {} refused {} | logs {} lost {} duplicated {} \
             reordered {} | group: distinct {} deliveries {} lost {} | close undelivered {} | total {:.0}s",
            profile.name(),
            produced.accepted,
            produced.acked,
            produced.failed,
            produced.pending,
            producer.counts().refused,
            produced.in_logs,
            produced.lost,
            produced.duplicated,
            produced.reordered,
            consumed.distinct,
            consumed.deliveries,
            consumed.lost,
            close.undelivered.len(),
            secs(started),
        );
        assert_eq!((produced.pending, produced.extra_results), (0, 0), "every accepted record gets one result");
        assert_eq!(produced.failed, 0, "the retries outlast the outage: nothing may fail");
        assert_eq!(produced.lost, 0, "acknowledged records lost: {:?}", produced.lost_examples);
        assert_eq!(produced.reordered, 0, "send order kept per partition");
        assert!(drained, "the group did not deliver every message after the outage: {:?}", consumed.examples);
        assert_eq!((consumed.lost, consumed.mismatched), (0, 0), "{:?}", consumed.examples);
    };
    match tokio::time::timeout(limit, run).await {
        Ok(()) => {}
        Err(_) => panic!("hang: the outage test did not finish within {limit:?}"),
    }
}

fn mib(bytes: i64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

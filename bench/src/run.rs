//! The coordinator: starts the cluster (or connects to an external one), runs every worker (one process per run), redoes runs
//! other work on the machine disturbed, takes medians, and writes the report as it goes.
//!
//! One cluster per timing profile (`--timing`, [`crate::plan`]), in turn, each with the same
//! suites; per cluster, per partition count and codec: the producer cells of each acks (every client,
//! alternating, `--repeat` times), right after each the latency cell of that config (paced at
//! half the slowest client's median throughput just measured), then the consumer cells on the
//! topic gregor's first acks run wrote (kept for them, deleted after). Then, on one cluster
//! ([`Plan::memory`]), the memory suite: per codec, every queue bound from the smallest up.
//! The codec micro-benchmarks run first, before the cluster starts.

use std::cell::RefCell;
use std::future::Future;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cluster::Cluster;
use crate::measure;
use crate::plan::Plan;
use crate::spec::{
    Client, Codec, CodecResult, CodecSpec, ConsumeResult, ConsumeSpec, ConsumerClient, RunResult, RunSpec, WorkerSpec,
};
use crate::Args;

const BROKERS: usize = 3;

/// A cell's result: measured, failed, or not applicable to the client (with the reason).
#[derive(Debug, Clone)]
pub enum Outcome<T> {
    Ok(T),
    Failed(String),
    Na(String),
}

impl<T> Outcome<T> {
    pub fn ok(&self) -> Option<&T> {
        match self {
            Outcome::Ok(t) => Some(t),
            _ => None,
        }
    }
}

/// A producer cell (throughput, latency when `paced`, or memory).
#[derive(Debug, Clone)]
pub struct ProduceRow {
    pub client: Client,
    pub partitions: i32,
    pub acks: i16,
    pub codec: Codec,
    /// The queue bound (`queue.buffering.max.messages`) it ran with.
    pub queue: usize,
    pub outcome: Outcome<RunResult>,
    /// Every repeat's throughput, msg/s.
    pub all_rates: Vec<f64>,
    /// Every measured repeat's CPU seconds per million messages acknowledged, user and system
    /// (the memory table shows their medians: one run's kernel time moves by half).
    pub all_cpu: Vec<(f64, f64)>,
    /// The offered rate of a latency cell.
    pub paced: Option<f64>,
}

/// A consumer cell.
#[derive(Debug, Clone)]
pub struct ConsumeRow {
    pub client: ConsumerClient,
    pub partitions: i32,
    pub codec: Codec,
    pub outcome: Outcome<ConsumeResult>,
    pub all_rates: Vec<f64>,
}

/// What was measured on one cluster (one timing profile).
#[derive(Debug)]
pub struct ProfileResults {
    pub plan: Plan,
    pub throughput: Vec<ProduceRow>,
    pub latency: Vec<ProduceRow>,
    pub consumer: Vec<ConsumeRow>,
    /// The memory suite's cells (on the cluster it runs on).
    pub memory: Vec<ProduceRow>,
    /// Things the report should say (a latency cell skipped, a fill that failed).
    pub notes: Vec<String>,
    pub cluster_rss_kib: Option<u64>,
    /// The cluster's broker ids (registered in ZooKeeper), once it is up.
    pub broker_ids: Vec<i32>,
}

impl ProfileResults {
    pub fn new(plan: Plan) -> ProfileResults {
        ProfileResults {
            plan,
            throughput: Vec::new(),
            latency: Vec::new(),
            consumer: Vec::new(),
            memory: Vec::new(),
            notes: Vec::new(),
            cluster_rss_kib: None,
            broker_ids: Vec::new(),
        }
    }

    fn all_ok(&self) -> bool {
        let failed_produce = self
            .throughput
            .iter()
            .chain(&self.latency)
            .chain(&self.memory)
            .any(|r| matches!(r.outcome, Outcome::Failed(_)));
        let failed_consume = self.consumer.iter().any(|r| matches!(r.outcome, Outcome::Failed(_)));
        !failed_produce && !failed_consume
    }
}

/// Everything measured so far.
#[derive(Debug, Default)]
pub struct Results {
    /// One per cluster, in the order they ran (a profile appears once its cluster is up).
    pub profiles: Vec<ProfileResults>,
    pub codec: Option<Result<Vec<CodecResult>, String>>,
    pub load_start: String,
    pub load_end: String,
    pub elapsed: Duration,
    pub complete: bool,
}

impl Results {
    pub fn all_ok(&self) -> bool {
        self.profiles.iter().all(ProfileResults::all_ok) && !matches!(self.codec, Some(Err(_)))
    }
}

/// What the redo logic and the medians need of a result.
trait Measured: Clone + Serialize {
    fn rate(&self) -> f64;
    /// The window the disturbance is measured against, seconds.
    fn window_s(&self) -> f64;
    fn other_cpu_s(&self) -> Option<f64>;
    fn set_attempt(&mut self, attempt: usize);
    fn summary(&self) -> String;
}

impl Measured for RunResult {
    fn rate(&self) -> f64 {
        RunResult::rate(self)
    }
    fn window_s(&self) -> f64 {
        self.elapsed_s
    }
    fn other_cpu_s(&self) -> Option<f64> {
        self.other_cpu_s
    }
    fn set_attempt(&mut self, attempt: usize) {
        self.attempt = attempt;
    }
    fn summary(&self) -> String {
        let lat = match (self.spec.rate, self.p99_us, self.p999_us) {
            (Some(_), Some(p99), Some(p999)) => format!("  p99 {:.1} ms p99.9 {:.1} ms", p99 / 1e3, p999 / 1e3),
            _ => String::new(),
        };
        format!(
            "{:>9.0} msg/s  cpu {:.2}s  rss {:.0} MiB  hw={:?}{lat}",
            self.rate(),
            self.cpu_user_s + self.cpu_sys_s,
            self.peak_rss_kib as f64 / 1024.0,
            self.high_watermark_sum
        )
    }
}

impl Measured for ConsumeResult {
    fn rate(&self) -> f64 {
        ConsumeResult::rate(self)
    }
    fn window_s(&self) -> f64 {
        self.elapsed_s
    }
    fn other_cpu_s(&self) -> Option<f64> {
        self.other_cpu_s
    }
    fn set_attempt(&mut self, attempt: usize) {
        self.attempt = attempt;
    }
    fn summary(&self) -> String {
        format!(
            "{:>9.0} msg/s  cpu {:.2}s  rss {:.0} MiB  start-up {:.0} ms  read {}",
            self.rate(),
            self.cpu_user_s + self.cpu_sys_s,
            self.peak_rss_kib as f64 / 1024.0,
            self.startup_s * 1e3,
            self.messages
        )
    }
}

/// The share of the machine's CPU (window × cores) that other work took during a run; 0
/// below 0.1 s, /proc/stat's resolution (10 ms ticks) being too coarse for short runs.
fn disturbance<T: Measured>(r: &T) -> Option<f64> {
    r.other_cpu_s().map(|o| if o < 0.1 { 0.0 } else { o / (r.window_s().max(1e-3) * cores()) })
}

pub fn cores() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}

/// Public for the report's `!` marks.
pub fn disturbed_run(r: &RunResult, max_other: f64) -> bool {
    disturbance(r).unwrap_or(0.0) > max_other
}

pub fn disturbed_consume(r: &ConsumeResult, max_other: f64) -> bool {
    disturbance(r).unwrap_or(0.0) > max_other
}

/// Runs `f(attempt)` until a run is not disturbed by other work on the machine (at most
/// `--redo` more times, 3 s apart) and keeps the least disturbed one; a failure is kept as it
/// is (it is not noise).
async fn with_redo<T, F, Fut>(args: &Args, label: &str, json: &mut Vec<String>, mut f: F) -> Result<T, String>
where
    T: Measured,
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let mut best: Option<Result<T, String>> = None;
    for attempt in 0..=args.redo {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
        let mut result = f(attempt).await;
        if let Ok(r) = &mut result {
            r.set_attempt(attempt);
        }
        let disturbed = match &result {
            Ok(r) => {
                eprintln!("  {label:<40} {}", r.summary());
                json.push(serde_json::to_string(r).unwrap());
                let d = disturbance(r).unwrap_or(0.0);
                if d > args.max_other {
                    eprintln!(
                        "  {:<40} other work on the machine took {:.0}% of its CPU during this run",
                        "",
                        d * 100.0
                    );
                }
                d > args.max_other
            }
            Err(e) => {
                eprintln!("  {label:<40} FAILED: {e}");
                json.push(serde_json::json!({ "run": label, "error": e }).to_string());
                false
            }
        };
        let better = match (&best, &result) {
            (None, _) => true,
            (Some(Ok(b)), Ok(r)) => disturbance(r).unwrap_or(0.0) < disturbance(b).unwrap_or(0.0),
            _ => false,
        };
        if better {
            best = Some(result);
        }
        if !disturbed {
            break;
        }
    }
    best.expect("at least one attempt")
}

/// The median (by throughput) of a cell's repeats, and every successful repeat's
/// throughput. A failed repeat fails the cell: a client that fails now and then is not fine.
fn median<T: Measured>(results: Vec<Result<T, String>>) -> (Outcome<T>, Vec<f64>) {
    median_by(results, Measured::rate)
}

/// As [`median`], the run in the middle by `key` (a paced run's p99: its throughput is the
/// offered rate, so the median by throughput would be any run).
fn median_by<T: Measured>(results: Vec<Result<T, String>>, key: impl Fn(&T) -> f64) -> (Outcome<T>, Vec<f64>) {
    let total = results.len();
    let mut oks = Vec::new();
    let mut first_error = None;
    for r in results {
        match r {
            Ok(t) => oks.push(t),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    let rates: Vec<f64> = oks.iter().map(Measured::rate).collect();
    match first_error {
        Some(e) if oks.is_empty() => (Outcome::Failed(e), rates),
        Some(e) => (Outcome::Failed(format!("{} of {total} runs failed: {e}", total - oks.len())), rates),
        None if oks.is_empty() => (Outcome::Failed("no run".into()), rates),
        None => {
            oks.sort_by(|a, b| key(a).total_cmp(&key(b)));
            (Outcome::Ok(oks.swap_remove(oks.len() / 2)), rates)
        }
    }
}

/// What a producer cell runs: its config, the queue bound and how many messages.
#[derive(Debug, Clone, Copy)]
struct Cell {
    partitions: i32,
    codec: Codec,
    acks: i16,
    /// The offered rate of a latency cell (None: as fast as the client takes them).
    rate: Option<f64>,
    queue: usize,
    messages: usize,
}

/// Which of a cell's repeats is reported.
#[derive(Debug, Clone, Copy)]
enum Pick {
    /// The median by throughput.
    Rate,
    /// The run with the median p99 (a paced run's throughput is the offered rate).
    P99,
    /// The median by client memory per message held (the memory suite).
    PerHeld,
}

/// A topic a producer run filled and left for the consumers.
#[derive(Debug, Clone)]
struct Fill {
    topic: String,
    end_offsets: Vec<i64>,
    written_by: String,
}

struct Coordinator {
    /// The options as this cluster's runs use them ([`Plan::apply`]).
    args: Args,
    /// The cluster's timing profile (None: external), recorded in every run's spec.
    timing: Option<String>,
    cluster: Cluster,
    stamp: u64,
    seq: usize,
    json: Vec<String>,
}

pub async fn coordinate(args: Args) -> Result<bool, String> {
    let started = Instant::now();
    let mut results = Results { load_start: measure::loadavg(), ..Results::default() };
    let machine = crate::report::Machine::read();
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let mut json = Vec::new();
    let write = |results: &Results, json: &[String]| -> Result<(), String> {
        let text = crate::report::render(&args, &machine, &command, results);
        if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(&args.out, &text).map_err(|e| format!("{}: {e}", args.out.display()))?;
        if let Some(path) = &args.json {
            std::fs::write(path, json.join("\n") + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(())
    };

    if args.suites.codec {
        eprintln!("codec micro-benchmarks (gregor-protocol)");
        let spec = CodecSpec {
            messages: 1000,
            message_size: args.message_size,
            samples: args.codec_samples,
            sample_ms: args.codec_sample_ms,
        };
        let outcome = spawn_worker(&WorkerSpec::Codec(spec), args.timeout, &[], None)
            .await
            .and_then(|j| serde_json::from_str::<Vec<CodecResult>>(&j).map_err(|e| format!("codec result: {e}")));
        match &outcome {
            Ok(list) => {
                for r in list {
                    eprintln!("  {:<10} {:<6} {:>8.1} ns/msg", r.op, r.codec.name(), r.ns_per_msg);
                    json.push(serde_json::to_string(r).unwrap());
                }
            }
            Err(e) => eprintln!("  FAILED: {e}"),
        }
        results.codec = Some(outcome);
        write(&results, &json)?;
    }

    let cluster_suites = args.suites.producer || args.suites.latency || args.suites.consumer;
    let mut binary = None;
    for plan in crate::plan::plans(&args) {
        let memory = args.suites.memory && plan.memory;
        if !cluster_suites && !memory {
            continue;
        }
        let t = Instant::now();
        let cluster = match (&args.external, &plan.timing) {
            (Some(external), _) => Cluster::connect(external, args.rf).await?,
            (None, timing) => {
                let timing = timing.as_deref().unwrap_or(crate::plan::INSTANT);
                if binary.is_none() {
                    binary = Some(crate::cluster::testkit_binary(args.testkit.clone())?);
                }
                let binary = binary.as_deref().expect("set above");
                let cpus = args.split_cores.as_ref().map(|s| &s.cluster[..]);
                Cluster::start(binary, BROKERS, args.cluster_threads, cpus, timing).await?
            }
        };
        let how = if cluster.is_external() { "connected to" } else { "started" };
        let profile = plan.timing.as_deref().map_or(String::new(), |t| format!(", timing {t}"));
        eprintln!("cluster: {how} {} in {:.1?}{profile}", cluster.describe(), t.elapsed());
        if cluster.is_external() {
            eprintln!(
                "note: the external cluster is not started or stopped here, and neither its brokers' CPU \
                 (cluster CPU s) nor other work on this machine (other CPU s) is measured, so no run is \
                 redone (--redo)"
            );
        }
        let mut profile = ProfileResults::new(plan.clone());
        profile.broker_ids = cluster.broker_ids.clone();
        let kept = plan.apply(&args);
        let fewer_producers = (args.suites.producer || args.suites.latency) && kept.clients.len() < args.clients.len();
        let fewer_consumers = args.suites.consumer && kept.consumers.len() < args.consumers.len();
        if fewer_producers || fewer_consumers {
            profile.notes.extend(plan.timing.as_deref().and_then(crate::plan::left_out).map(str::to_owned));
        }
        if kept.codecs.len() < args.codecs.len() || kept.memory_codecs.len() < args.memory_codecs.len() {
            profile.notes.extend(plan.timing.as_deref().and_then(crate::plan::zstd_left_out).map(str::to_owned));
        }
        results.profiles.push(profile);
        let at = results.profiles.len() - 1;
        let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let mut co = Coordinator {
            args: kept,
            timing: plan.timing.clone(),
            cluster,
            stamp,
            seq: 0,
            json: std::mem::take(&mut json),
        };
        let mut warm: Vec<i32> =
            if args.suites.producer || args.suites.latency { args.partitions.clone() } else { Vec::new() };
        if memory && !warm.contains(&crate::memory::PARTITIONS) {
            warm.push(crate::memory::PARTITIONS);
        }
        co.warm_up(&warm).await;
        if cluster_suites {
            for &partitions in &args.partitions {
                for &codec in &args.codecs {
                    co.config_block(partitions, codec, &mut results.profiles[at]).await;
                    results.elapsed = started.elapsed();
                    write(&results, &co.json)?;
                }
            }
        }
        if memory {
            let clients: Vec<Client> = args.clients.iter().copied().filter(|c| crate::memory::has_queue(*c)).collect();
            if clients.is_empty() {
                results.profiles[at].notes.push(
                    "memory suite: skipped, no client with a queue to fill in --clients (gregor, gregor-ct, librdkafka)"
                        .into(),
                );
            } else {
                eprintln!("memory suite (queue bounds {:?})", args.memory_queues);
            }
            // per codec, every bound from the smallest up (the smallest gives the fixed memory)
            for &codec in args.memory_codecs.iter().filter(|_| !clients.is_empty()) {
                for &queue in &args.memory_queues {
                    let rows = co.memory_cell(&clients, codec, queue).await;
                    results.profiles[at].memory.extend(rows);
                    results.elapsed = started.elapsed();
                    write(&results, &co.json)?;
                }
            }
        }
        results.profiles[at].cluster_rss_kib = co.cluster.rss_kib();
        results.profiles[at].notes.extend(co.cluster.deletion_note());
        json = std::mem::take(&mut co.json);
        co.cluster.stop().await;
    }
    results.load_end = measure::loadavg();
    results.elapsed = started.elapsed();
    results.complete = true;
    write(&results, &json)?;
    println!("{}", crate::report::render(&args, &machine, &command, &results));
    eprintln!("report written to {} ({:.1} min)", args.out.display(), started.elapsed().as_secs_f64() / 60.0);
    Ok(results.all_ok())
}

impl Coordinator {
    fn topic(&mut self, what: &str, partitions: i32, codec: Codec, acks: Option<i16>) -> String {
        self.seq += 1;
        format!(
            "bench-{}-{}-{what}-p{partitions}-{}{}",
            self.stamp,
            self.seq,
            codec.name(),
            acks.map_or(String::new(), |a| if a == -1 { "-acksall".into() } else { format!("-acks{a}") })
        )
    }

    /// A cell of the throughput suite (`rate` None) or of the latency suite.
    fn cell(&self, partitions: i32, codec: Codec, acks: i16, rate: Option<f64>) -> Cell {
        let messages = match rate {
            Some(r) => ((r * self.args.latency_seconds).round() as usize).max(1000),
            None => self.args.messages,
        };
        Cell { partitions, codec, acks, rate, queue: self.args.queue, messages }
    }

    fn run_spec(&mut self, client: Client, cell: &Cell) -> RunSpec {
        let Cell { partitions, codec, acks, rate, queue, messages } = *cell;
        RunSpec {
            client,
            brokers: self.cluster.brokers.clone(),
            topic: self.topic(client.name(), partitions, codec, Some(acks)),
            partitions,
            acks,
            codec,
            messages,
            message_size: self.args.message_size,
            batch: self.args.batch,
            linger_ms: self.args.linger_ms,
            queue,
            rate,
            timing: self.timing.clone(),
            // the partitions' leaders are spread round robin over the brokers
            partitions_per_broker: (partitions as usize).div_ceil(self.cluster.broker_ids.len()),
            librdkafka: self.args.librdkafka.clone(),
        }
    }

    /// One unmeasured run per partition count (the first client, uncompressed, acks 1), its
    /// topic deleted after it. Without it the first cell's first runs paid for the cluster's
    /// cold start: in one report every client's first 1-partition run was the slowest of its
    /// cell by far (gregor's and gregor-ct's both 1.08 M msg/s against 3.0-3.8 M after), the
    /// cluster writing its logs into fresh memory, a page fault per 4 KiB, where later runs
    /// reuse the segment buffers of deleted topics.
    async fn warm_up(&mut self, partitions: &[i32]) {
        let Some(&client) = self.args.clients.first() else { return };
        // not under `--wrap` (a profiler sees the measured runs only)
        let args = Args { wrap: Vec::new(), ..self.args.clone() };
        for &partitions in partitions {
            let cell = self.cell(partitions, Codec::None, 1, None);
            let spec = self.run_spec(client, &cell);
            match one_run(&self.cluster, spec, &args, false).await {
                Ok(r) => eprintln!("  warm-up (not measured): {}", r.summary()),
                Err(e) => eprintln!("  warm-up (not measured) p{partitions} failed: {e}"),
            }
        }
    }

    /// Every measurement of one partition count and codec.
    async fn config_block(&mut self, partitions: i32, codec: Codec, results: &mut ProfileResults) {
        let args = self.args.clone();
        // the topic the consumers read: gregor's (else the first client's) first acks run
        let fill_client =
            args.clients.iter().copied().filter(|c| c.unsupported(codec).is_none()).min_by_key(|c| !c.is_gregor());
        let mut fill: Option<Fill> = None;
        for (ai, &acks) in args.acks.iter().enumerate() {
            if args.suites.producer {
                let keep = if args.suites.consumer && ai == 0 { fill_client } else { None };
                let cell = self.cell(partitions, codec, acks, None);
                let rows = self.producer_cell(cell, &args.clients, args.repeat, Pick::Rate, keep, &mut fill).await;
                results.throughput.extend(rows);
            }
            if args.suites.latency && args.latency_partitions.contains(&partitions) {
                let slowest = results
                    .throughput
                    .iter()
                    .filter(|r| r.partitions == partitions && r.codec == codec && r.acks == acks)
                    .filter_map(|r| r.outcome.ok().map(RunResult::rate))
                    .fold(f64::INFINITY, f64::min);
                let rate = args.rate.or((slowest.is_finite()).then_some(slowest / 2.0));
                match rate {
                    Some(rate) => {
                        let cell = self.cell(partitions, codec, acks, Some(rate));
                        let rows = self
                            .producer_cell(cell, &args.clients, args.latency_repeat, Pick::P99, None, &mut None)
                            .await;
                        results.latency.extend(rows);
                    }
                    None => results.notes.push(format!(
                        "latency p{partitions} {} acks={acks}: skipped, no client's throughput was measured",
                        codec.name()
                    )),
                }
            }
        }
        if args.suites.consumer {
            if fill.is_none() {
                match fill_client {
                    Some(client) => fill = self.fill(client, partitions, codec, args.acks[0]).await,
                    None => results
                        .notes
                        .push(format!("consumers p{partitions} {}: no producer to fill the topic", codec.name())),
                }
                if fill.is_none() {
                    results.notes.push(format!(
                        "consumers p{partitions} {}: skipped, the topic could not be filled",
                        codec.name()
                    ));
                }
            }
            if let Some(fill) = fill {
                let rows = self.consumer_cell(partitions, codec, &fill).await;
                results.consumer.extend(rows);
                self.cluster.delete_topic(&fill.topic).await;
            }
        }
    }

    /// A memory suite cell: the clients with a queue, alternating, at one queue bound with
    /// enough messages to fill it.
    async fn memory_cell(&mut self, clients: &[Client], codec: Codec, queue: usize) -> Vec<ProduceRow> {
        let cell = Cell {
            partitions: crate::memory::PARTITIONS,
            codec,
            acks: crate::memory::ACKS,
            rate: None,
            queue,
            messages: crate::memory::messages_for(self.args.messages, queue),
        };
        self.producer_cell(cell, clients, self.args.memory_repeat.unwrap_or(1), Pick::PerHeld, None, &mut None).await
    }

    /// One producer cell: every client, `repeat` times, alternating. With `keep`, that client's
    /// first successful run leaves its topic in place as the consumers' `fill`.
    async fn producer_cell(
        &mut self,
        cell: Cell,
        clients: &[Client],
        repeat: usize,
        pick: Pick,
        keep: Option<Client>,
        fill: &mut Option<Fill>,
    ) -> Vec<ProduceRow> {
        let Cell { partitions, codec, acks, rate, queue, .. } = cell;
        let mut per_client: Vec<Vec<Result<RunResult, String>>> = vec![Vec::new(); clients.len()];
        for _ in 0..repeat {
            for (ci, &client) in clients.iter().enumerate() {
                if client.unsupported(codec).is_some() {
                    continue;
                }
                let want_keep = keep == Some(client) && fill.is_none();
                let kept: RefCell<Option<Fill>> = RefCell::new(None);
                let label = format!(
                    "{} p{partitions} acks={acks} {}{}{}",
                    client.name(),
                    codec.name(),
                    rate.map_or(String::new(), |r| format!(" @{r:.0}/s")),
                    if matches!(pick, Pick::PerHeld) { format!(" queue={queue}") } else { String::new() }
                );
                let specs: Vec<RunSpec> = (0..=self.args.redo).map(|_| self.run_spec(client, &cell)).collect();
                let (cluster, args, kept_ref) = (&self.cluster, &self.args, &kept);
                let result = with_redo(args, &label, &mut self.json, |attempt| {
                    let spec = specs[attempt].clone();
                    let keep_this = want_keep && attempt == 0;
                    async move {
                        let r = one_run(cluster, spec, args, keep_this).await;
                        if let (true, Ok(r)) = (keep_this, &r) {
                            *kept_ref.borrow_mut() = Some(Fill {
                                topic: r.spec.topic.clone(),
                                end_offsets: r.high_watermarks.clone(),
                                written_by: format!("{} acks={acks}", client.name()),
                            });
                        }
                        r
                    }
                })
                .await;
                if let Some(k) = kept.into_inner() {
                    *fill = Some(k);
                }
                per_client[ci].push(result);
            }
        }
        clients
            .iter()
            .zip(per_client)
            .map(|(&client, results)| {
                let all_cpu = results
                    .iter()
                    .flatten()
                    .map(|r| (crate::memory::per_million(r.cpu_user_s, r), crate::memory::per_million(r.cpu_sys_s, r)))
                    .collect();
                let (outcome, all_rates) = match (client.unsupported(codec), pick) {
                    (Some(reason), _) => (Outcome::Na(reason.to_owned()), Vec::new()),
                    (None, Pick::Rate) => median(results),
                    (None, Pick::P99) => median_by(results, |r| r.p99_us.unwrap_or(f64::INFINITY)),
                    (None, Pick::PerHeld) => median_by(results, |r| {
                        crate::memory::per_held(r.client_kib(), r.peak_held).unwrap_or(f64::INFINITY)
                    }),
                };
                ProduceRow { client, partitions, acks, codec, queue, outcome, all_rates, all_cpu, paced: rate }
            })
            .collect()
    }

    /// A producer run whose only purpose is to fill a topic for the consumers.
    async fn fill(&mut self, client: Client, partitions: i32, codec: Codec, acks: i16) -> Option<Fill> {
        let cell = self.cell(partitions, codec, acks, None);
        let spec = self.run_spec(client, &cell);
        match one_run(&self.cluster, spec, &self.args, true).await {
            Ok(r) => Some(Fill {
                topic: r.spec.topic.clone(),
                end_offsets: r.high_watermarks.clone(),
                written_by: format!("{} acks={acks}", client.name()),
            }),
            Err(e) => {
                eprintln!("  filling a p{partitions} {} topic failed: {e}", codec.name());
                None
            }
        }
    }

    async fn consumer_cell(&mut self, partitions: i32, codec: Codec, fill: &Fill) -> Vec<ConsumeRow> {
        let consumers = self.args.consumers.clone();
        let mut per_client: Vec<Vec<Result<ConsumeResult, String>>> = vec![Vec::new(); consumers.len()];
        for _ in 0..self.args.consumer_repeat {
            for (ci, &client) in consumers.iter().enumerate() {
                if client.unsupported(codec).is_some() {
                    continue;
                }
                let spec = ConsumeSpec {
                    client,
                    brokers: self.cluster.brokers.clone(),
                    zookeeper: self.cluster.zookeeper.clone(),
                    topic: fill.topic.clone(),
                    partitions,
                    codec,
                    end_offsets: fill.end_offsets.clone(),
                    messages: fill.end_offsets.iter().sum::<i64>() as usize,
                    message_size: self.args.message_size,
                    fetch_max_bytes: self.args.fetch_max_bytes,
                    fetch_wait_ms: self.args.fetch_wait_ms,
                    streams: self.args.streams.unwrap_or(partitions as usize),
                    written_by: fill.written_by.clone(),
                    timing: self.timing.clone(),
                    librdkafka: self.args.librdkafka.clone(),
                };
                let label = format!("{} p{partitions} {} (read)", client.name(), codec.name());
                let (cluster, args) = (&self.cluster, &self.args);
                let result = with_redo(args, &label, &mut self.json, |_| {
                    let spec = spec.clone();
                    async move { one_consume(cluster, spec, args).await }
                })
                .await;
                per_client[ci].push(result);
            }
        }
        consumers
            .iter()
            .zip(per_client)
            .map(|(&client, results)| {
                let (outcome, all_rates) = match client.unsupported(codec) {
                    Some(reason) => (Outcome::Na(reason.to_owned()), Vec::new()),
                    None => median(results),
                };
                ConsumeRow { client, partitions, codec, outcome, all_rates }
            })
            .collect()
    }
}

/// Runs a worker process and returns the JSON after its `RESULT ` line (or its error).
/// `cpus`: the CPUs it runs on (`--split-cores`), else wherever the system puts it.
async fn spawn_worker(
    spec: &WorkerSpec,
    timeout: Duration,
    wrap: &[String],
    cpus: Option<&[usize]>,
) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut command = match wrap.split_first() {
        Some((program, rest)) => {
            let mut c = tokio::process::Command::new(program);
            c.args(rest).arg(exe);
            c
        }
        None => tokio::process::Command::new(exe),
    };
    crate::cores::pin_command(command.as_std_mut(), cpus);
    let child = command
        .arg("--worker")
        .arg(serde_json::to_string(spec).unwrap())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("worker: {e}"))?;
    let output = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| format!("worker ran longer than {timeout:?}"))?
        .map_err(|e| format!("worker: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if let Some(json) = stdout.lines().find_map(|l| l.strip_prefix("RESULT ")) {
        return Ok(json.to_owned());
    }
    Err(stdout
        .lines()
        .find_map(|l| l.strip_prefix("ERROR "))
        .and_then(|j| serde_json::from_str::<String>(j).ok())
        .unwrap_or_else(|| format!("worker exited with {}", output.status)))
}

/// A worker run with the cluster's CPU and the machine's busy CPU measured around it. With an
/// external cluster the cluster's CPU is unknown, and so is the other work's (the brokers may
/// run on this machine or not): both are `None`, and no run is redone.
struct Measurement {
    json: Result<String, String>,
    cluster_cpu_s: Option<f64>,
    busy_s: Option<f64>,
    tcp: Option<measure::TcpCounters>,
}

async fn measured_worker(cluster: &Cluster, spec: &WorkerSpec, args: &Args) -> Measurement {
    let cpu_before = cluster.cpu_seconds();
    let busy_before = measure::machine_busy_seconds();
    let tcp_before = measure::TcpCounters::read();
    let json = spawn_worker(spec, args.timeout, &args.wrap, args.split_cores.as_ref().map(|s| &s.clients[..])).await;
    let diff = |a: Option<f64>, b: Option<f64>| Some(b? - a?);
    Measurement {
        json,
        cluster_cpu_s: diff(cpu_before, cluster.cpu_seconds()),
        busy_s: diff(busy_before, measure::machine_busy_seconds()),
        tcp: measure::TcpCounters::read().zip(tcp_before).map(|(now, then)| now.since(then)),
    }
}

/// Creates a fresh topic, runs the producer in a subprocess, checks every message was
/// acknowledged and the topic's high watermarks add up to what was sent; deletes the topic
/// unless `keep` (and the run succeeded).
async fn one_run(cluster: &Cluster, spec: RunSpec, args: &Args, keep: bool) -> Result<RunResult, String> {
    cluster.create_topic(&spec.topic, spec.partitions, args.rf).await?;
    let topic = spec.topic.clone();
    let result = produce_and_check(cluster, spec, args).await;
    if !keep || result.is_err() {
        cluster.delete_topic(&topic).await;
    }
    result
}

async fn produce_and_check(cluster: &Cluster, spec: RunSpec, args: &Args) -> Result<RunResult, String> {
    // let the cluster settle (leaders announced, followers fetching) before the clock starts
    tokio::time::sleep(Duration::from_millis(300)).await;
    let m = measured_worker(cluster, &WorkerSpec::Produce(spec.clone()), args).await;
    let mut result: RunResult = serde_json::from_str(&m.json?).map_err(|e| format!("worker result: {e}"))?;
    result.cluster_cpu_s = m.cluster_cpu_s;
    result.tcp = m.tcp;
    result.other_cpu_s = match (m.busy_s, m.cluster_cpu_s) {
        (Some(b), Some(c)) => Some((b - c - result.process_cpu_s).max(0.0)),
        _ => None,
    };
    // a high watermark moves once the followers have the records (acks=1 answers before
    // that): read again for a while when short of what was acknowledged
    let deadline = Instant::now() + Duration::from_secs(5);
    let hws = loop {
        let hws = cluster.high_watermarks(&spec.topic, spec.partitions).await?;
        if hws.iter().sum::<i64>() >= result.acked as i64 || Instant::now() >= deadline {
            break hws;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let sum: i64 = hws.iter().sum();
    result.high_watermark_sum = Some(sum);
    result.high_watermarks = hws.clone();
    if result.acked != spec.messages || result.failed != 0 {
        return Err(format!(
            "{} of {} acknowledged, {} failed (first error: {})",
            result.acked,
            spec.messages,
            result.failed,
            result.first_error.as_deref().unwrap_or("-")
        ));
    }
    if sum != spec.messages as i64 {
        return Err(format!("high watermarks {hws:?} sum to {sum}, not {}", spec.messages));
    }
    Ok(result)
}

/// Runs a consumer in a subprocess over a filled topic and checks it read exactly the topic.
async fn one_consume(cluster: &Cluster, spec: ConsumeSpec, args: &Args) -> Result<ConsumeResult, String> {
    let m = measured_worker(cluster, &WorkerSpec::Consume(spec), args).await;
    let mut result: ConsumeResult = serde_json::from_str(&m.json?).map_err(|e| format!("worker result: {e}"))?;
    result.cluster_cpu_s = m.cluster_cpu_s;
    result.other_cpu_s = match (m.busy_s, m.cluster_cpu_s) {
        (Some(b), Some(c)) => Some((b - c - result.process_cpu_s).max(0.0)),
        _ => None,
    };
    match result.verify() {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Serialize)]
    struct R(f64);

    impl Measured for R {
        fn rate(&self) -> f64 {
            self.0
        }
        fn window_s(&self) -> f64 {
            1.0
        }
        fn other_cpu_s(&self) -> Option<f64> {
            None
        }
        fn set_attempt(&mut self, _: usize) {}
        fn summary(&self) -> String {
            String::new()
        }
    }

    #[test]
    fn median_by_rate_and_a_failed_repeat_fails_the_cell() {
        let (o, rates) = median(vec![Ok(R(3.0)), Ok(R(1.0)), Ok(R(2.0))]);
        assert!(matches!(o, Outcome::Ok(R(m)) if m == 2.0));
        assert_eq!(rates, [3.0, 1.0, 2.0]);
        let (o, _) = median(vec![Ok(R(3.0)), Err("boom".into()), Ok(R(2.0))]);
        assert!(matches!(o, Outcome::Failed(ref e) if e == "1 of 3 runs failed: boom"), "{o:?}");
        let (o, _) = median::<R>(vec![Err("boom".into())]);
        assert!(matches!(o, Outcome::Failed(ref e) if e == "boom"));
    }

    #[test]
    fn median_by_another_key_picks_the_middle_of_that_key() {
        // the key reverses the order: the run in the middle stays the middle one, whatever the
        // rates; with a key that is not the rate's order another run is picked
        let runs = || vec![Ok(R(1.0)), Ok(R(2.0)), Ok(R(3.0))];
        let (o, rates) = median_by(runs(), |r| -r.0);
        assert!(matches!(o, Outcome::Ok(R(m)) if m == 2.0));
        assert_eq!(rates, [1.0, 2.0, 3.0], "the rates are reported as they came");
        let (o, _) = median_by(runs(), |r| (r.0 - 1.0).abs().min((r.0 - 3.5).abs()));
        assert!(matches!(o, Outcome::Ok(R(m)) if m == 3.0), "{o:?}");
    }
}

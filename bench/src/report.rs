//! The report (Markdown, readable as plain text): a header saying where and how it was
//! measured, then a table per suite with the ratios gregor ÷ peer.

use std::fmt::Write;

use crate::run::{disturbed_consume, disturbed_run, ConsumeRow, Outcome, ProduceRow, ProfileResults, Results};
use crate::spec::{Client, Codec, ConsumerClient, RunResult};
use crate::Args;

/// Where the benchmark ran.
#[derive(Debug, Clone)]
pub struct Machine {
    pub cpu: String,
    pub cpus: usize,
    pub memory: String,
    pub kernel: String,
    pub date: String,
    pub gregor: String,
    pub rustc: String,
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program).args(args).current_dir(crate::repo_root()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

impl Machine {
    pub fn read() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown CPU".into());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or("unknown".into(), |kib| format!("{:.1} GiB", kib / 1024.0 / 1024.0));
        let kernel =
            std::fs::read_to_string("/proc/sys/kernel/osrelease").map_or("unknown".into(), |s| s.trim().into());
        let date = command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_else(|| "unknown".into());
        let gregor = match command_output("git", &["rev-parse", "--short", "HEAD"]) {
            Some(commit) => {
                let dirty = command_output("git", &["status", "--porcelain", "--untracked-files=no"])
                    .is_some_and(|s| !s.is_empty());
                if dirty {
                    format!("commit {commit} plus uncommitted changes (the crates as they were on disk)")
                } else {
                    format!("commit {commit}")
                }
            }
            None => "the crates as they were on disk (no git)".into(),
        };
        let rustc = command_output("rustc", &["-V"]).unwrap_or_else(|| "unknown".into());
        Machine {
            cpu,
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            memory,
            kernel,
            date,
            gregor,
            rustc,
        }
    }
}

/// CPUs as `taskset` lists them: runs of consecutive ones as ranges (`0`, `1-3,5`).
fn cpu_list(cpus: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &cpu in cpus {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == cpu => *last = cpu,
            _ => runs.push((cpu, cpu)),
        }
    }
    let run = |&(a, b): &(usize, usize)| if a == b { a.to_string() } else { format!("{a}-{b}") };
    runs.iter().map(run).collect::<Vec<_>>().join(",")
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

fn ms(us: Option<f64>) -> String {
    us.map_or("-".into(), |v| format!("{:.2}", v / 1000.0))
}

fn opt1(v: Option<f64>) -> String {
    v.map_or("-".into(), |c| format!("{c:.1}"))
}

/// CPU seconds per million messages (= µs per message).
fn cpu_per_m(user: f64, sys: f64, messages: f64) -> f64 {
    (user + sys) * 1e6 / messages.max(1.0)
}

fn produce_cpu(r: &RunResult) -> f64 {
    cpu_per_m(r.cpu_user_s, r.cpu_sys_s, r.acked as f64)
}

/// System (kernel) CPU seconds per million messages: socket writes, page faults, the
/// allocator's mmap/munmap and madvise (its churn).
fn produce_sys(r: &RunResult) -> f64 {
    cpu_per_m(0.0, r.cpu_sys_s, r.acked as f64)
}

/// gregor's over the peer's system CPU per message; "-" when either is 0 (the kernel splits
/// a thread's time between user and system by the ticks it samples, so a short run can show
/// none).
fn sys_ratio(g: &RunResult, p: &RunResult) -> String {
    if g.cpu_sys_s > 0.0 && p.cpu_sys_s > 0.0 {
        ratio(produce_sys(g), produce_sys(p))
    } else {
        "-".into()
    }
}

fn spread(rates: &[f64]) -> String {
    if rates.len() < 2 {
        return String::new();
    }
    let lo = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = rates.iter().copied().fold(0.0, f64::max);
    format!(" ({lo:.0}–{hi:.0})")
}

fn geomean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() {
        format!("{:.2}", a / b)
    } else {
        "-".into()
    }
}

fn escape(s: &str) -> String {
    s.replace('|', "/").replace('\n', " ")
}

pub fn render(args: &Args, m: &Machine, command: &str, res: &Results) -> String {
    let mut s = String::new();
    let (_, rdkafka_version) = rdkafka::util::get_rdkafka_version();
    let modern = args.external.is_none() && args.timing.iter().any(|t| crate::plan::is_modern(t));
    let classic = args.external.is_some() || args.timing.iter().any(|t| !crate::plan::is_modern(t));
    let era = match (classic, modern) {
        (true, true) => "Kafka 0.8.2 and a modern (3.7-4.x) cluster",
        (false, true) => "a modern (Kafka 3.7-4.x) cluster",
        _ => "Kafka 0.8.2",
    };
    let _ = writeln!(s, "# Benchmarks: gregor vs librdkafka vs kafka-rust on {era}\n");
    let _ = writeln!(
        s,
        "Written by the benchmark harness in `bench/` (method, fairness settings and options: \
         `bench/README.md`). Numbers from one machine and one run: compare the clients within \
         this file, not with other machines.\n"
    );
    let args_only: Vec<&str> = command.split(' ').skip(1).collect();
    let _ = writeln!(s, "| | |\n|---|---|");
    let _ = writeln!(s, "| machine | {}, {} CPUs (nproc), {} RAM, Linux {} |", m.cpu, m.cpus, m.memory, m.kernel);
    let _ = writeln!(
        s,
        "| date | {}; the run took {:.1} min{} |",
        m.date,
        res.elapsed.as_secs_f64() / 60.0,
        if res.complete { "" } else { " so far (INCOMPLETE: interrupted or still running)" }
    );
    let _ = writeln!(
        s,
        "| command | `cargo run --release --manifest-path bench/Cargo.toml{}{}` |",
        if args_only.is_empty() { "" } else { " -- " },
        args_only.join(" ")
    );
    let _ = writeln!(s, "| gregor | {} |", m.gregor);
    let overrides: Vec<String> = args.librdkafka.iter().map(|(k, v)| format!("`{k}={v}`")).collect();
    let _ = writeln!(
        s,
        "| peers | librdkafka {rdkafka_version} (rdkafka crate 0.37, `api.version.request=false`, \
         `broker.version.fallback=0.8.2`{}{}); kafka-rust (kafka crate 0.10) |",
        if modern { "; on the modern profiles `api.version.request=true`" } else { "" },
        if overrides.is_empty() { String::new() } else { format!("; set with --librdkafka: {}", overrides.join(", ")) }
    );
    let _ = writeln!(s, "| compiler | {} (release, `debug = 1`) |", m.rustc);
    match &args.external {
        Some(ext) => {
            let _ = writeln!(
                s,
                "| cluster | **external**: brokers `{}`, ZooKeeper `{}` (given by {}){}; not started by the \
                 bench, its CPU and memory not measured; topics created and deleted with gregor-admin; \
                 every topic replication factor {} |",
                ext.brokers,
                ext.zookeeper,
                ext.source,
                match res.profiles.first() {
                    Some(p) if !p.broker_ids.is_empty() => format!("; broker ids {:?} registered", p.broker_ids),
                    _ => String::new(),
                },
                args.rf
            );
        }
        None => {
            let several = args.timing.len() > 1;
            let profiles = if several {
                format!(
                    "timing profiles {}, a cluster of its own for each, one after the other",
                    args.timing.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(" then ")
                )
            } else {
                format!("timing profile `{}`", args.timing.join(","))
            };
            let rss: Vec<String> = res
                .profiles
                .iter()
                .filter_map(|p| {
                    let k = p.cluster_rss_kib?;
                    Some(if several {
                        format!("{} MiB ({})", mib(k), p.plan.name())
                    } else {
                        format!("{} MiB", mib(k))
                    })
                })
                .collect();
            let _ = writeln!(
                s,
                "| cluster | 3-broker FakeCluster{} (`gregor-testkit`, a process of its own, {}{}{}); \
                 {profiles}; every topic replication factor {}{} |",
                if classic { " + real ZooKeeper" } else { " in its modern mode, no ZooKeeper" },
                args.cluster_threads.map_or(
                    "its runtime with tokio's default worker threads, one per core it may use".to_string(),
                    |n| format!("its runtime with {n} worker thread(s), `--cluster-threads`"),
                ),
                args.split_cores.as_ref().map_or(String::new(), |split| format!(
                    "; on CPU {} and every client's worker on CPU {}, `--split-cores`",
                    cpu_list(&split.cluster),
                    cpu_list(&split.clients)
                )),
                match (classic, modern) {
                    (true, true) => "; the modern profiles' without ZooKeeper, `gregor-testkit --modern`",
                    (false, true) => ", `gregor-testkit --modern`",
                    _ => "",
                },
                args.rf,
                if rss.is_empty() { String::new() } else { format!("; cluster RSS at the end {}", rss.join(", ")) }
            );
        }
    }
    let _ = writeln!(
        s,
        "| load average | at the start {}; at the end {} |\n",
        res.load_start,
        if res.load_end.is_empty() { "-" } else { &res.load_end }
    );
    if args.quick || args.messages < 1_000_000 {
        let _ = writeln!(
            s,
            "**Smoke run**{}: {} messages per run, {} run(s) per cell. It shows the harness works; \
             the benchmark's figures come from the default run (1,000,000 messages, 3 runs per cell; \
             1 on `kafka-0.8.2` beside `instant`) on an otherwise idle machine.\n",
            if args.quick { " (`--quick`)" } else { "" },
            args.messages,
            args.repeat
        );
    }
    // one cluster: the report as it always was; several: a summary per profile on top, then
    // each profile's sections, titled with it
    let cluster_suites = args.suites.producer || args.suites.latency || args.suites.consumer;
    let several = cluster_suites && crate::plan::plans(args).len() > 1;
    if several {
        profiles_intro(&mut s, args, res);
    }
    for p in &res.profiles {
        summary(&mut s, p, several.then(|| p.plan.name()));
    }
    for p in &res.profiles {
        let pargs = p.plan.apply(args);
        let title = if several { format!(" (timing `{}`)", p.plan.name()) } else { String::new() };
        if args.suites.producer {
            producer_section(&mut s, &pargs, p, &title);
        }
        if args.suites.latency {
            latency_section(&mut s, &pargs, p, &title);
        }
        if args.suites.consumer {
            consumer_section(&mut s, &pargs, p, &title);
        }
        if args.suites.memory && p.plan.memory {
            memory_section(&mut s, &pargs, p, &title);
        }
    }
    if args.suites.codec {
        codec_section(&mut s, args, res);
    }
    notes_section(&mut s, args, res, several);
    s
}

/// What a FakeCluster timing profile does, from `gregor_testkit::Timing`.
fn timing_description(name: &str) -> String {
    let real = || {
        let t = gregor_testkit::Timing::kafka_0_8_2();
        format!(
            "{} ms of service per request, {} MB/s in and out per broker, {} MB/s of appends per \
             partition, {} ms more for acks=-1's followers",
            t.request_service.as_secs_f64() * 1e3,
            t.broker_bytes_per_sec / 1_000_000,
            t.partition_append_bytes_per_sec / 1_000_000,
            t.replica_fetch_delay.as_secs_f64() * 1e3
        )
    };
    let modern = "the FakeCluster's modern mode (Kafka 3.7-4.x, no ZooKeeper; topics made with CreateTopics): \
                  every client asks the brokers' versions and writes RecordBatch v2; kafka-rust and gregor-group \
                  do not run";
    match name {
        crate::plan::REAL => format!("a real broker's timing: {}", real()),
        crate::plan::MODERN => format!("{modern}; answering at once"),
        crate::plan::MODERN_TIMED => format!(
            "{modern}; with `{}`'s broker timing ({}: the model's figures come from Kafka 0.8.2, a \
             modern broker's were not measured here)",
            crate::plan::REAL,
            real()
        ),
        _ => "answers at once".into(),
    }
}

/// With several profiles: which ran, and where a profile's cells were fewer.
fn profiles_intro(s: &mut String, args: &Args, res: &Results) {
    let _ = writeln!(
        s,
        "Every cluster suite ran on {} FakeClusters, one per broker timing profile, one after the \
         other: {}.{} Each profile has its summary below, then its sections, titled with it; the \
         codec micro-benchmarks do not involve a cluster and ran once. Compare clients within a \
         profile; across profiles the same client shows what the brokers' timing does to it.\n",
        args.timing.len(),
        args.timing.iter().map(|t| format!("`{t}` ({})", timing_description(t))).collect::<Vec<_>>().join("; "),
        if res.profiles.len() < args.timing.len() && !res.complete {
            format!(
                " Measured so far: {}.",
                res.profiles.iter().map(|p| format!("`{}`", p.plan.name())).collect::<Vec<_>>().join(", ")
            )
        } else {
            String::new()
        }
    );
    for plan in crate::plan::plans(args) {
        if let Some(why) = &plan.reduced {
            let _ = writeln!(s, "**Fewer runs on `{}`**: {why}.\n", plan.name());
        }
    }
}

/// Client memory per message held at the peak, gregor's over the peer's (`None` for a run
/// without the count, from an older JSON).
fn memory_per_held(g: &RunResult, p: &RunResult) -> Option<f64> {
    if g.peak_held == 0 || p.peak_held == 0 {
        return None;
    }
    let per = |r: &RunResult| r.client_kib().max(1) as f64 / r.peak_held as f64;
    Some(per(g) / per(p))
}

/// Geometric means of gregor ÷ peer over the configs both ran, on one cluster (`profile`:
/// its name, when the report has several).
fn summary(s: &mut String, res: &ProfileResults, profile: Option<&str>) {
    let mut lines = Vec::new();
    for gregor in [Client::Gregor, Client::GregorCt] {
        if let Some(line) = target_line(&res.throughput, gregor, throughput_bar(res)) {
            lines.push(line);
        }
        for peer in [Client::Librdkafka, Client::KafkaRust] {
            let pairs = produce_pairs(&res.throughput, gregor, peer);
            let tp: Vec<f64> = pairs.iter().map(|(g, p)| g.rate() / p.rate()).collect();
            let cpu: Vec<f64> = pairs.iter().map(|(g, p)| produce_cpu(g) / produce_cpu(p)).collect();
            let sys: Vec<f64> = pairs
                .iter()
                .filter(|(g, p)| g.cpu_sys_s > 0.0 && p.cpu_sys_s > 0.0)
                .map(|(g, p)| produce_sys(g) / produce_sys(p))
                .collect();
            let mem: Vec<f64> =
                pairs.iter().map(|(g, p)| g.client_kib().max(1) as f64 / p.client_kib().max(1) as f64).collect();
            let per_held: Vec<f64> = pairs.iter().filter_map(|(g, p)| memory_per_held(g, p)).collect();
            if let (Some(t), Some(c), Some(m)) = (geomean(&tp), geomean(&cpu), geomean(&mem)) {
                let per_held = geomean(&per_held).map_or(String::new(), |h| format!("; per message held {h:.2}"));
                let sys = geomean(&sys).map_or(String::new(), |v| format!(", system CPU per message {v:.2}"));
                lines.push(format!(
                    "producer throughput {} ÷ {}: {t:.2} (CPU per message {c:.2}{sys}, client memory {m:.2}{per_held}) over {} configs",
                    gregor.name(),
                    peer.name(),
                    tp.len()
                ));
            }
            let lat = produce_pairs(&res.latency, gregor, peer);
            let p99: Vec<f64> = lat.iter().filter_map(|(g, p)| Some(g.p99_us? / p.p99_us?.max(1.0))).collect();
            let p999: Vec<f64> = lat.iter().filter_map(|(g, p)| Some(g.p999_us? / p.p999_us?.max(1.0))).collect();
            if let (Some(a), Some(b)) = (geomean(&p99), geomean(&p999)) {
                lines.push(format!(
                    "produce latency {} ÷ {} at a fixed rate: p99 {a:.2}, p99.9 {b:.2} over {} configs",
                    gregor.name(),
                    peer.name(),
                    p99.len()
                ));
            }
        }
    }
    lines.extend(memory_summary(res));
    for gregor in [ConsumerClient::GregorSimple, ConsumerClient::GregorGroup] {
        if let Some(line) = consumer_target_line(&res.consumer, gregor, throughput_bar(res)) {
            lines.push(line);
        }
        for peer in [ConsumerClient::Librdkafka, ConsumerClient::KafkaRust] {
            let pairs = consume_pairs(&res.consumer, gregor, peer);
            let tp: Vec<f64> = pairs.iter().map(|(g, p)| g.rate() / p.rate()).collect();
            let cpu: Vec<f64> = pairs
                .iter()
                .map(|(g, p)| {
                    cpu_per_m(g.cpu_user_s, g.cpu_sys_s, g.messages as f64)
                        / cpu_per_m(p.cpu_user_s, p.cpu_sys_s, p.messages as f64)
                })
                .collect();
            if let (Some(t), Some(c)) = (geomean(&tp), geomean(&cpu)) {
                lines.push(format!(
                    "consumer throughput {} ÷ {}: {t:.2} (CPU per message {c:.2}) over {} configs",
                    gregor.name(),
                    peer.name(),
                    tp.len()
                ));
            }
        }
    }
    if !lines.is_empty() {
        let _ = writeln!(
            s,
            "Summary{} (geometric means of the ratios gregor ÷ peer; throughput > 1: gregor is faster; CPU and latency < 1: gregor uses less):\n",
            profile.map_or(String::new(), |p| format!(", timing `{p}`"))
        );
        for l in lines {
            let _ = writeln!(s, "* {l}");
        }
        let _ = writeln!(s);
    }
}

/// Issue 25's bar (deliverable 7) for throughput, gregor ÷ the faster peer of each config:
/// 1.2 on `instant`, 1.0 where the brokers take time (`kafka-0.8.2`, and the modern profile's
/// and an external cluster's, held to the same).
fn throughput_bar(res: &ProfileResults) -> f64 {
    if res.plan.timing.as_deref() == Some(crate::plan::INSTANT) {
        1.2
    } else {
        1.0
    }
}

/// One config's gregor cell against the faster peer's.
struct Versus {
    config: String,
    /// The medians' ratio.
    ratio: f64,
    /// gregor's fastest run ÷ the faster peer's slowest: where this reaches the bar and the
    /// ratio does not, the two cells' runs overlap around it.
    best: f64,
}

impl Versus {
    /// `g` and `p`: the medians; `g_runs` and `p_runs`: every run's msg/s (empty in an older
    /// JSON: the median stands for them).
    fn new(config: String, g: f64, g_runs: &[f64], p: f64, p_runs: &[f64]) -> Versus {
        let fastest = g_runs.iter().copied().fold(g, f64::max);
        let slowest = p_runs.iter().copied().fold(p, f64::min);
        Versus { config, ratio: g / p, best: fastest / slowest }
    }
}

/// The summary line for the bar: how many configs meet it, the lowest, and each one below it
/// with its runs' best ratio (a shortfall inside the runs' spread reads as such).
fn target_summary(what: &str, client: &str, bar: f64, cells: &[Versus]) -> Option<String> {
    let lowest = cells.iter().min_by(|a, b| a.ratio.total_cmp(&b.ratio))?;
    let met = cells.iter().filter(|c| c.ratio >= bar).count();
    let below: Vec<String> = cells
        .iter()
        .filter(|c| c.ratio < bar)
        .map(|c| format!("{} {:.2} (fastest run ÷ the peer's slowest {:.2})", c.config, c.ratio, c.best))
        .collect();
    let below = if below.is_empty() { String::new() } else { format!("; below it: {}", below.join(", ")) };
    Some(format!(
        "{what} throughput {client} ÷ the faster peer of each config: at least {bar:.1} in {met} of {} configs \
         (lowest {:.2}, {}){below}",
        cells.len(),
        lowest.ratio,
        lowest.config
    ))
}

/// The bar's line for a producer client.
fn target_line(rows: &[ProduceRow], gregor: Client, bar: f64) -> Option<String> {
    let mut cells = Vec::new();
    for g in rows.iter().filter(|r| r.client == gregor) {
        let Some(gr) = g.outcome.ok() else { continue };
        let faster = rows
            .iter()
            .filter(|r| !r.client.is_gregor() && r.partitions == g.partitions && r.acks == g.acks && r.codec == g.codec)
            .filter_map(|r| r.outcome.ok().map(|p| (p.rate(), &r.all_rates)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((p, p_runs)) = faster {
            let config = format!("{} partition(s) acks={} {}", g.partitions, g.acks, g.codec.name());
            cells.push(Versus::new(config, gr.rate(), &g.all_rates, p, p_runs));
        }
    }
    target_summary("producer", gregor.name(), bar, &cells)
}

/// The bar's line for a consumer client.
fn consumer_target_line(rows: &[ConsumeRow], gregor: ConsumerClient, bar: f64) -> Option<String> {
    let mut cells = Vec::new();
    for g in rows.iter().filter(|r| r.client == gregor) {
        let Some(gr) = g.outcome.ok() else { continue };
        let faster = rows
            .iter()
            .filter(|r| !r.client.is_gregor() && r.partitions == g.partitions && r.codec == g.codec)
            .filter_map(|r| r.outcome.ok().map(|p| (p.rate(), &r.all_rates)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((p, p_runs)) = faster {
            let config = format!("{} partition(s) {}", g.partitions, g.codec.name());
            cells.push(Versus::new(config, gr.rate(), &g.all_rates, p, p_runs));
        }
    }
    target_summary("consumer", gregor.name(), bar, &cells)
}

fn produce_pairs(rows: &[ProduceRow], gregor: Client, peer: Client) -> Vec<(&RunResult, &RunResult)> {
    rows.iter()
        .filter(|r| r.client == gregor)
        .filter_map(|g| {
            let p = rows
                .iter()
                .find(|r| r.client == peer && r.partitions == g.partitions && r.acks == g.acks && r.codec == g.codec)?;
            Some((g.outcome.ok()?, p.outcome.ok()?))
        })
        .collect()
}

fn consume_pairs(
    rows: &[ConsumeRow],
    gregor: ConsumerClient,
    peer: ConsumerClient,
) -> Vec<(&crate::spec::ConsumeResult, &crate::spec::ConsumeResult)> {
    rows.iter()
        .filter(|r| r.client == gregor)
        .filter_map(|g| {
            let p = rows.iter().find(|r| r.client == peer && r.partitions == g.partitions && r.codec == g.codec)?;
            Some((g.outcome.ok()?, p.outcome.ok()?))
        })
        .collect()
}

fn producer_section(s: &mut String, args: &Args, res: &ProfileResults, title: &str) {
    let _ = writeln!(s, "## Producer throughput{title}\n");
    let _ = writeln!(
        s,
        "{} messages of {} bytes per run (random uppercase letters from a pool of 4096, null key), \
         message i to partition i mod partitions, each run on a fresh topic (after one unmeasured warm-up run per partition count); {} run(s) per cell, the median by \
         throughput shown (range in brackets). Batching: librdkafka batch.num.messages={} linger.ms={} \
         queue.buffering.max.messages={} max.in.flight.requests.per.connection={}; gregor batch.num.messages={} × the partitions each broker leads \
         (it counts per request; at most the queue bound) max.in.flight.requests.per.connection={} queue.buffering.max.ms={} \
         queue.buffering.max.messages={}; kafka-rust \
         send_all slices of {} × partitions. Messages handed over as fast as each client takes them. \
         CPU = user+sys of the client's process from producer creation to the last acknowledgement, \
         per million messages (getrusage), and sys s/M its system (kernel) part alone: socket writes, page \
         faults, the allocator's mmap/munmap; peak RSS = its VmHWM; client MiB = peak RSS less the process's RSS just \
         before the client was made (the benchmark's own payload pool and per-message latency arrays, \
         the same for every client); peak held = the most messages handed to the client and not yet \
         acknowledged to the benchmark at once (sampled every 256 messages): its queue and what is in \
         flight, which its memory holds (a client whose sending side outruns its network fills its \
         queue to queue.buffering.max.messages). gregor runs on tokio's multi-thread runtime (the sending loop a task \
         spawned on the workers, as `gregor perf produce` runs it, and the producer's task on the \
         workers), gregor-ct on a current-thread runtime (both on one thread, but for rounds with more \
         than about 40 us of compression, which it builds on tokio's blocking pool). Every run verified: all acknowledged, the topic's high watermarks sum to N.\n",
        args.messages,
        args.message_size,
        args.repeat,
        args.batch,
        args.linger_ms,
        args.queue,
        crate::client_gregor::GREGOR_MAX_IN_FLIGHT,
        args.batch,
        crate::client_gregor::GREGOR_MAX_IN_FLIGHT,
        args.linger_ms,
        args.queue,
        args.batch
    );
    let _ = writeln!(
        s,
        "| partitions | acks | codec | client | msg/s | MB/s | CPU s/M msgs | sys s/M | peak RSS MiB | client MiB | peak held | cluster CPU s | other CPU s |"
    );
    let _ = writeln!(s, "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in &res.throughput {
        let head = format!("| {} | {} | {} | {} ", row.partitions, row.acks, row.codec.name(), row.client.name());
        match &row.outcome {
            Outcome::Ok(r) => {
                let _ = writeln!(
                    s,
                    "{head}| {:.0}{} | {:.1} | {:.2} | {:.2} | {} | {} | {} | {} | {}{} |",
                    r.rate(),
                    spread(&row.all_rates),
                    r.rate() * args.message_size as f64 / 1e6,
                    produce_cpu(r),
                    produce_sys(r),
                    mib(r.peak_rss_kib),
                    mib(r.client_kib()),
                    r.peak_held,
                    opt1(r.cluster_cpu_s),
                    opt1(r.other_cpu_s),
                    if disturbed_run(r, args.max_other) { " !" } else { "" }
                );
            }
            Outcome::Failed(e) => {
                let _ = writeln!(s, "{head}| FAILED: {} | | | | | | | | |", escape(e));
            }
            Outcome::Na(why) => {
                let _ = writeln!(s, "{head}| n/a: {} | | | | | | | | |", escape(why));
            }
        }
    }
    let _ = writeln!(s);
    produce_ratios(s, &res.throughput, false);
}

fn produce_ratios(s: &mut String, rows: &[ProduceRow], latency: bool) {
    let present = |c: Client| rows.iter().any(|r| r.client == c && r.outcome.ok().is_some());
    for gregor in [Client::Gregor, Client::GregorCt].into_iter().filter(|c| present(*c)) {
        let peers: Vec<Client> = [Client::Librdkafka, Client::KafkaRust]
            .into_iter()
            .filter(|c| rows.iter().any(|r| r.client == *c))
            .collect();
        if peers.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            "Ratios {0} ÷ peer ({1}):\n",
            gregor.name(),
            if latency {
                "latency and CPU < 1: gregor is lower"
            } else {
                "throughput > 1: gregor is faster; CPU and RSS < 1: gregor uses less"
            }
        );
        if latency {
            let _ = writeln!(s, "| partitions | acks | codec | peer | p50 | p99 | p99.9 | CPU per msg | sys per msg |");
            let _ = writeln!(s, "|---:|---:|---|---|---:|---:|---:|---:|---:|");
        } else {
            let _ = writeln!(
                s,
                "| partitions | acks | codec | peer | throughput | CPU per msg | sys per msg | peak RSS | client memory | memory per msg held |"
            );
            let _ = writeln!(s, "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|");
        }
        for g in rows.iter().filter(|r| r.client == gregor) {
            for &peer in &peers {
                let Some(p) = rows.iter().find(|r| {
                    r.client == peer && r.partitions == g.partitions && r.acks == g.acks && r.codec == g.codec
                }) else {
                    continue;
                };
                let head = format!("| {} | {} | {} | {} ", g.partitions, g.acks, g.codec.name(), peer.name());
                let (gr, pr) = match (&g.outcome, &p.outcome) {
                    (Outcome::Ok(a), Outcome::Ok(b)) => (a, b),
                    (_, Outcome::Na(_)) => {
                        let cells = if latency {
                            "| n/a | n/a | n/a | n/a | n/a |"
                        } else {
                            "| n/a | n/a | n/a | n/a | n/a | n/a |"
                        };
                        let _ = writeln!(s, "{head}{cells}");
                        continue;
                    }
                    _ => {
                        let cells = if latency { "| - | - | - | - | - |" } else { "| - | - | - | - | - | - |" };
                        let _ = writeln!(s, "{head}{cells}");
                        continue;
                    }
                };
                if latency {
                    let r = |a: Option<f64>, b: Option<f64>| match (a, b) {
                        (Some(a), Some(b)) => ratio(a, b.max(1.0)),
                        _ => "-".into(),
                    };
                    let _ = writeln!(
                        s,
                        "{head}| {} | {} | {} | {} | {} |",
                        r(gr.p50_us, pr.p50_us),
                        r(gr.p99_us, pr.p99_us),
                        r(gr.p999_us, pr.p999_us),
                        ratio(produce_cpu(gr), produce_cpu(pr)),
                        sys_ratio(gr, pr)
                    );
                } else {
                    let _ = writeln!(
                        s,
                        "{head}| {} | {} | {} | {} | {} | {} |",
                        ratio(gr.rate(), pr.rate()),
                        ratio(produce_cpu(gr), produce_cpu(pr)),
                        sys_ratio(gr, pr),
                        ratio(gr.peak_rss_kib as f64, pr.peak_rss_kib as f64),
                        ratio(gr.client_kib().max(1) as f64, pr.client_kib().max(1) as f64),
                        memory_per_held(gr, pr).map_or_else(|| "-".into(), |r| format!("{r:.2}"))
                    );
                }
            }
        }
        let _ = writeln!(s);
    }
}

fn latency_section(s: &mut String, args: &Args, res: &ProfileResults, title: &str) {
    let _ = writeln!(s, "## Produce latency at a fixed rate{title}\n");
    let _ = writeln!(
        s,
        "Each config paced at {} for {} s (messages = rate × {} s, at least 1000), {} run(s) per cell, \
         the run with the median p99 shown. \
         Latency runs from the moment the benchmark hands a message to the client to its \
         acknowledgement: gregor's delivery handler, librdkafka's delivery report; kafka-rust is \
         synchronous, so its messages are acknowledged when the `send_all` carrying them returns (it \
         collects up to linger.ms={} of messages per slice). Pacing sleeps in whole milliseconds (a \
         message due within the next millisecond goes at once), the same for every client, each \
         sleep ending within about 0.1 ms of its deadline (gregor's sending task is woken by a \
         thread of the benchmark, not by tokio's 1 ms timer, which woke it 1.1 ms late and doubled \
         its bursts). Same \
         batching settings as the throughput runs. \"(behind)\": the client delivered less than 95% of \
         the offered rate, so its latencies include a growing backlog. TCP RTOs (loss probes): the \
         machine's TCP retransmission timeouts (each at least the kernel's 200 ms minimum) and tail \
         loss probes during the run (`TCPTimeouts`, `TCPLossProbes`; both ends of the loopback \
         connections count).\n",
        match args.rate {
            Some(r) => format!("{r:.0} msg/s (--rate)"),
            None => "half the slowest client's median throughput in the same config of this run".into(),
        },
        args.latency_seconds,
        args.latency_seconds,
        args.latency_repeat,
        args.linger_ms
    );
    let _ = writeln!(
        s,
        "| partitions | acks | codec | offered msg/s | client | p50 ms | p99 ms | p99.9 ms | achieved msg/s | CPU s/M msgs | sys s/M | peak RSS MiB | other CPU s | TCP RTOs (loss probes) |"
    );
    let _ = writeln!(s, "|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in &res.latency {
        let head = format!(
            "| {} | {} | {} | {} | {} ",
            row.partitions,
            row.acks,
            row.codec.name(),
            row.paced.map_or("-".into(), |r| format!("{r:.0}")),
            row.client.name()
        );
        match &row.outcome {
            Outcome::Ok(r) => {
                let behind = row.paced.is_some_and(|offered| r.rate() < 0.95 * offered);
                let _ = writeln!(
                    s,
                    "{head}| {} | {} | {} | {:.0}{} | {:.2} | {:.2} | {} | {}{} | {} |",
                    ms(r.p50_us),
                    ms(r.p99_us),
                    ms(r.p999_us),
                    r.rate(),
                    if behind { " (behind)" } else { "" },
                    produce_cpu(r),
                    produce_sys(r),
                    mib(r.peak_rss_kib),
                    opt1(r.other_cpu_s),
                    if disturbed_run(r, args.max_other) { " !" } else { "" },
                    r.tcp.map_or("-".into(), |t| format!("{} ({})", t.timeouts, t.loss_probes))
                );
            }
            Outcome::Failed(e) => {
                let _ = writeln!(s, "{head}| FAILED: {} | | | | | | | | |", escape(e));
            }
            Outcome::Na(why) => {
                let _ = writeln!(s, "{head}| n/a: {} | | | | | | | | |", escape(why));
            }
        }
    }
    let _ = writeln!(s);
    produce_ratios(s, &res.latency, true);
}

fn consumer_section(s: &mut String, args: &Args, res: &ProfileResults, title: &str) {
    let _ = writeln!(s, "## Consumer throughput{title}\n");
    let written_by = res
        .consumer
        .iter()
        .find_map(|r| r.outcome.ok().map(|c| c.spec.written_by.clone()))
        .unwrap_or_else(|| "gregor".into());
    let _ = writeln!(
        s,
        "Each consumer reads, from offset 0, the topic of one producer run of the throughput suite \
         (written by {written_by}: {} messages, the same topic for every consumer of a config) until \
         every partition reaches its high watermark; {} run(s) per cell, the median shown. Every run \
         verified: each partition's offsets read in order with no gap and no duplicate, the count, and a \
         fingerprint of every value (length, first and last 8 bytes) summed and compared with what was \
         produced. msg/s, MB/s (of values) and CPU over the whole read, from creating the consumer to its \
         last message (start-up included: connecting, metadata, the group's registration and \
         rebalance); start-up ms = creating the consumer to its first message handed to the app. \
         fetch.message.max.bytes={} and fetch.wait.max.ms={} for every client, CRCs checked by every \
         client (librdkafka: check.crcs=true).\n",
        args.messages, args.consumer_repeat, args.fetch_max_bytes, args.fetch_wait_ms,
    );
    // the consumers of this cluster's runs (the modern profile has no group in ZooKeeper and
    // no kafka-rust)
    let streams = args.streams.map_or("one stream per partition".into(), |n| format!("{n} stream(s)"));
    let described = [
        (
            ConsumerClient::GregorSimple,
            "gregor-simple: a task per partition on tokio's multi-thread runtime, each reading its \
             partition with `SimpleConsumer::fetch_partition` in a loop, one `SimpleConsumer` shared (its \
             Fetch requests to a leader pipelined)."
                .to_owned(),
        ),
        (
            ConsumerClient::GregorGroup,
            format!(
                "gregor-group: the ZooKeeper high-level consumer, one member of a fresh group with {streams}, a \
                 task per stream on tokio's multi-thread runtime, auto.commit.enable=false, \
                 auto.offset.reset=smallest, queued.max.message.chunks at its default."
            ),
        ),
        (
            ConsumerClient::Librdkafka,
            "librdkafka: BaseConsumer, `assign()` of every partition at offset 0, no offset store or \
             commit, one `poll` per message, its prefetching (queued.min.messages) at its defaults."
                .to_owned(),
        ),
        (
            ConsumerClient::KafkaRust,
            "kafka-rust: `Consumer` of every partition, no group, no offset storage, from the earliest \
             offset; synchronous `poll()`."
                .to_owned(),
        ),
    ];
    for (_, line) in described.iter().filter(|(c, _)| args.consumers.contains(c)) {
        let _ = writeln!(s, "* {line}");
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| partitions | codec | client | msg/s | MB/s | CPU s/M msgs | peak RSS MiB | start-up ms | cluster CPU s | other CPU s |"
    );
    let _ = writeln!(s, "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for row in &res.consumer {
        let head = format!("| {} | {} | {} ", row.partitions, row.codec.name(), row.client.name());
        match &row.outcome {
            Outcome::Ok(r) => {
                let _ = writeln!(
                    s,
                    "{head}| {:.0}{} | {:.1} | {:.2} | {} | {:.0} | {} | {}{} |",
                    r.rate(),
                    spread(&row.all_rates),
                    r.bytes as f64 / r.elapsed_s.max(1e-9) / 1e6,
                    cpu_per_m(r.cpu_user_s, r.cpu_sys_s, r.messages as f64),
                    mib(r.peak_rss_kib),
                    r.startup_s * 1e3,
                    opt1(r.cluster_cpu_s),
                    opt1(r.other_cpu_s),
                    if disturbed_consume(r, args.max_other) { " !" } else { "" }
                );
            }
            Outcome::Failed(e) => {
                let _ = writeln!(s, "{head}| FAILED: {} | | | | | | |", escape(e));
            }
            Outcome::Na(why) => {
                let _ = writeln!(s, "{head}| n/a: {} | | | | | | |", escape(why));
            }
        }
    }
    let _ = writeln!(s);
    let present = |c: ConsumerClient| res.consumer.iter().any(|r| r.client == c && r.outcome.ok().is_some());
    let peers: Vec<ConsumerClient> = [ConsumerClient::Librdkafka, ConsumerClient::KafkaRust]
        .into_iter()
        .filter(|c| res.consumer.iter().any(|r| r.client == *c))
        .collect();
    for gregor in [ConsumerClient::GregorSimple, ConsumerClient::GregorGroup].into_iter().filter(|c| present(*c)) {
        if peers.is_empty() {
            break;
        }
        let _ = writeln!(
            s,
            "Ratios {} ÷ peer (throughput > 1: gregor is faster; CPU and RSS < 1: gregor uses less):\n",
            gregor.name()
        );
        let _ = writeln!(s, "| partitions | codec | peer | throughput | CPU per msg | peak RSS |");
        let _ = writeln!(s, "|---:|---|---|---:|---:|---:|");
        for g in res.consumer.iter().filter(|r| r.client == gregor) {
            for &peer in &peers {
                let Some(p) = res
                    .consumer
                    .iter()
                    .find(|r| r.client == peer && r.partitions == g.partitions && r.codec == g.codec)
                else {
                    continue;
                };
                let head = format!("| {} | {} | {} ", g.partitions, g.codec.name(), peer.name());
                match (&g.outcome, &p.outcome) {
                    (Outcome::Ok(a), Outcome::Ok(b)) => {
                        let _ = writeln!(
                            s,
                            "{head}| {} | {} | {} |",
                            ratio(a.rate(), b.rate()),
                            ratio(
                                cpu_per_m(a.cpu_user_s, a.cpu_sys_s, a.messages as f64),
                                cpu_per_m(b.cpu_user_s, b.cpu_sys_s, b.messages as f64)
                            ),
                            ratio(a.peak_rss_kib as f64, b.peak_rss_kib as f64)
                        );
                    }
                    (_, Outcome::Na(_)) => {
                        let _ = writeln!(s, "{head}| n/a | n/a | n/a |");
                    }
                    _ => {
                        let _ = writeln!(s, "{head}| - | - | - |");
                    }
                }
            }
        }
        let _ = writeln!(s);
    }
}

/// The memory suite's summary: per gregor client and codec, its memory per message held over
/// librdkafka's at each bound, what it holds per message above its fixed part at the largest
/// bound, and its system CPU per message over librdkafka's.
fn memory_summary(res: &ProfileResults) -> Vec<String> {
    use crate::memory;
    let lines = memory::lines(&res.memory);
    let ratios = memory::ratios(&lines);
    let mut out = Vec::new();
    for gregor in [Client::Gregor, Client::GregorCt] {
        let codecs: Vec<Codec> = Codec::ALL
            .into_iter()
            .filter(|c| ratios.iter().any(|r| r.gregor.client == gregor && r.gregor.codec == *c))
            .collect();
        for codec in codecs {
            let mine: Vec<&memory::Ratio> =
                ratios.iter().filter(|r| r.gregor.client == gregor && r.gregor.codec == codec).collect();
            let per_held: Vec<String> = mine
                .iter()
                .map(|r| {
                    format!(
                        "{} at {}{}",
                        r.per_held.map_or("-".into(), |v| format!("{v:.2}")),
                        r.gregor.queue,
                        if r.equal_fills { "" } else { " (unequal fills)" }
                    )
                })
                .collect();
            let sys: Vec<f64> = mine.iter().filter_map(|r| r.sys).collect();
            let largest = lines
                .iter()
                .filter(|l| l.client == gregor && l.codec == codec && l.above_fixed.is_some())
                .max_by_key(|l| l.queue);
            let above = largest.map_or(String::new(), |l| {
                let b = l.above_fixed.expect("filtered");
                let (wire, _) =
                    memory::wire_size(res.plan.timing.as_deref(), l.run.spec.message_size, l.run.spec.batch);
                format!(
                    "; {} holds {b:.0} B per message above its fixed memory at {} ({:.2} × wire)",
                    gregor.name(),
                    l.queue,
                    b / wire
                )
            });
            out.push(format!(
                "producer memory per message held with a full queue, {} ÷ librdkafka, {}: {}{above}; system CPU per message ÷ librdkafka {} (geometric mean over the bounds)",
                gregor.name(),
                codec.name(),
                per_held.join(", "),
                geomean(&sys).map_or("-".into(), |v| format!("{v:.2}"))
            ));
        }
    }
    out
}

fn memory_section(s: &mut String, args: &Args, res: &ProfileResults, title: &str) {
    use crate::memory;
    let _ = writeln!(s, "## Producer memory with a full queue{title}\n");
    let (wire, wire_is) = memory::wire_size(res.plan.timing.as_deref(), args.message_size, args.batch);
    let on = match res.plan.timing.as_deref() {
        Some(t) if crate::plan::takes_time(t) => format!(
            "on `{t}` (a broker that takes time, so a client that hands messages over faster than the \
             brokers take them fills its queue; on `instant` librdkafka drains its queue and the \
             comparison would be of unequal fills)"
        ),
        Some(t) => format!(
            "on `{t}` (neither `{}` nor `{}` was among the profiles: on `instant` librdkafka tends to drain \
             its queue, so check the fill column)",
            crate::plan::REAL,
            crate::plan::MODERN_TIMED
        ),
        None => "on the external cluster".into(),
    };
    let _ = writeln!(
        s,
        "Producer runs whose queue fills, {on}: {} partitions, acks={}, codecs {}, \
         max({}, 3 × the bound) messages of {} bytes handed over as fast as each client takes them, \
         queue.buffering.max.messages = the bound for gregor and librdkafka (everything else as in the \
         throughput runs); {} run(s) per cell (the run with the median memory per message held shown; \
         its CPU columns are the medians of the cell's runs). peak held, \
         client MiB, peak RSS: as in the throughput table. fill = peak held ÷ the bound (gregor may hold \
         a little more: what is in flight beside its queue); below {:.0}% the client did not fill its \
         queue (marked), and a ratio with it compares unequal fills. B/msg held = client MiB ÷ peak \
         held, in bytes. fixed MiB = the same client's client MiB at the smallest bound ({}): what it \
         takes whatever it holds (runtime, connections, buffers). above fixed = (client MiB − fixed \
         MiB) ÷ peak held, in bytes; × wire = that ÷ {wire:.1}, {wire_is}. user s/M and sys s/M: CPU seconds \
         per million messages in user mode and in the kernel, each the median over the cell's runs \
         (getrusage; the kernel's part is the \
         client's socket writes, page faults and the allocator's mmap/munmap, so allocator churn shows \
         there).\n",
        memory::PARTITIONS,
        memory::ACKS,
        args.memory_codecs.iter().map(|c| c.name()).collect::<Vec<_>>().join(", "),
        args.messages,
        args.message_size,
        args.memory_repeat.unwrap_or(1),
        memory::FULL * 100.0,
        args.memory_queues.first().map_or("-".into(), |q| q.to_string()),
    );
    if res.memory.is_empty() {
        let _ = writeln!(s, "Not run yet.\n");
        return;
    }
    let _ = writeln!(
        s,
        "| codec | queue bound | client | msg/s | peak held | fill | client MiB | B/msg held | fixed MiB | above fixed B/msg | × wire | peak RSS MiB | user s/M | sys s/M | other CPU s |"
    );
    let _ = writeln!(s, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let lines = memory::lines(&res.memory);
    let mut lines_iter = lines.iter();
    for row in &res.memory {
        let head = format!("| {} | {} | {} ", row.codec.name(), row.queue, row.client.name());
        if let Some(why) = memory::not_measured(row) {
            let _ = writeln!(s, "{head}| {} | | | | | | | | | | | |", escape(&why));
            continue;
        }
        let l = lines_iter.next().expect("a line per measured row, in order");
        let r = l.run;
        let _ = writeln!(
            s,
            "{head}| {:.0} | {} | {:.0}%{} | {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {}{} |",
            r.rate(),
            r.peak_held,
            l.fill * 100.0,
            if l.full() { "" } else { " (not full)" },
            mib(r.client_kib()),
            l.per_held.map_or("-".into(), |v| format!("{v:.0}")),
            l.fixed_kib.map_or("-".into(), mib),
            l.above_fixed.map_or("-".into(), |v| format!("{v:.0}")),
            l.above_fixed.map_or("-".into(), |v| format!("{:.2}", v / wire)),
            mib(r.peak_rss_kib),
            l.cpu.0,
            l.cpu.1,
            opt1(r.other_cpu_s),
            if disturbed_run(r, args.max_other) { " !" } else { "" }
        );
    }
    let _ = writeln!(s);
    let ratios = memory::ratios(&lines);
    if ratios.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "Ratios ÷ librdkafka in the same cell (< 1: gregor holds or uses less; \"unequal\": one of the two did \
         not fill its queue, so they held different counts, and the fixed part weighs differently on each):\n"
    );
    let _ =
        writeln!(s, "| codec | queue bound | client | B/msg held | above fixed B/msg | user s/M | sys s/M | fills |");
    let _ = writeln!(s, "|---|---:|---|---:|---:|---:|---:|---|");
    let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
    for r in &ratios {
        let fills = if r.equal_fills {
            "both full".to_string()
        } else {
            format!(
                "unequal: {} {:.0}%, librdkafka {:.0}%",
                r.gregor.client.name(),
                r.gregor.fill * 100.0,
                r.peer.fill * 100.0
            )
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {fills} |",
            r.gregor.codec.name(),
            r.gregor.queue,
            r.gregor.client.name(),
            f(r.per_held),
            f(r.above_fixed),
            f(r.user),
            f(r.sys)
        );
    }
    let _ = writeln!(s);
}

fn codec_section(s: &mut String, args: &Args, res: &Results) {
    let _ = writeln!(s, "## Codec micro-benchmarks (gregor-protocol)\n");
    let _ = writeln!(
        s,
        "One thread, a process of its own, before the cluster starts. A set = 1000 messages of {} \
         bytes (the producer runs' payloads, null keys). crc32: CRC-32 of each message's magic..value \
         (crc32fast, what gregor-protocol calls); encode: `MessageSet::from_messages` (CRCs, and the \
         compressed wrapper); decode: `MessageSet::decode` (CRC checks, decompression, the wrapper \
         expanded); compress/decompress: the codec alone on the uncompressed set's bytes. Median of \
         {} samples of at least {} ms each (range in brackets); MB/s of message payload.\n",
        args.message_size, args.codec_samples, args.codec_sample_ms
    );
    match &res.codec {
        None => {
            let _ = writeln!(s, "Not run yet.\n");
        }
        Some(Err(e)) => {
            let _ = writeln!(s, "FAILED: {}\n", escape(e));
        }
        Some(Ok(list)) => {
            let _ = writeln!(s, "| operation | codec | ns/msg | M msg/s | MB/s | bytes in → out |");
            let _ = writeln!(s, "|---|---|---:|---:|---:|---:|");
            for r in list {
                let _ = writeln!(
                    s,
                    "| {} | {} | {:.1} ({:.1}–{:.1}) | {:.2} | {:.0} | {} → {} |",
                    r.op,
                    if r.op == "crc32" { "-" } else { r.codec.name() },
                    r.ns_per_msg,
                    r.min_ns,
                    r.max_ns,
                    1e3 / r.ns_per_msg,
                    r.payload_bytes_per_msg * 1e3 / r.ns_per_msg,
                    r.input_bytes,
                    r.output_bytes
                );
            }
            let _ = writeln!(s);
        }
    }
}

fn notes_section(s: &mut String, args: &Args, res: &Results, several: bool) {
    let _ = writeln!(s, "## Notes\n");
    // the notes are of the clients and consumers that ran on some cluster of the run
    let each: Vec<Args> = res.profiles.iter().map(|p| p.plan.apply(args)).collect();
    let ran = Args {
        clients: args.clients.iter().copied().filter(|c| each.iter().any(|a| a.clients.contains(c))).collect(),
        consumers: args.consumers.iter().copied().filter(|c| each.iter().any(|a| a.consumers.contains(c))).collect(),
        ..args.clone()
    };
    // (before any cluster is up, the options as given)
    let args = if each.is_empty() { args } else { &ran };
    let mut na: Vec<String> = Vec::new();
    for c in &args.clients {
        for codec in &args.codecs {
            if let Some(why) = c.unsupported(*codec) {
                na.push(format!("producer {} with {}: n/a, {why}.", c.name(), codec.name()));
            }
        }
    }
    for c in &args.consumers {
        for codec in &args.codecs {
            if let Some(why) = c.unsupported(*codec) {
                na.push(format!("consumer {} of {} topics: n/a, {why}.", c.name(), codec.name()));
            }
        }
    }
    for line in &na {
        let _ = writeln!(s, "* {line}");
    }
    for p in &res.profiles {
        for line in &p.notes {
            if several {
                let _ = writeln!(s, "* `{}`: {line}", p.plan.name());
            } else {
                let _ = writeln!(s, "* {line}");
            }
        }
    }
    if args.consumers.contains(&ConsumerClient::KafkaRust) && args.codecs.iter().any(|c| *c != Codec::None) {
        let _ = writeln!(
            s,
            "* kafka-rust 0.10's fetch decoder returns the inner messages of the first compressed \
             wrapper of a partition's data and drops the rest of it (`protocol/fetch.rs`), so it reads \
             one compressed message set per partition per Fetch."
        );
    }
    if args.external.is_some() {
        let _ = writeln!(
            s,
            "* cluster CPU s and other CPU s: not available with an external cluster (shown as -): its \
             brokers are not a process of the bench's, and may or may not run on this machine, so neither \
             their CPU nor the rest of the machine's can be told apart from the client's. No run was done \
             again for other work on the machine (`--redo` needs other CPU s).\n"
        );
        return;
    }
    let _ = writeln!(
        s,
        "* cluster CPU s: CPU the gregor-testkit process used during the run. other CPU s: the rest \
         of the machine's busy CPU during the run (anything else on its {} cores). A run where that \
         exceeded {:.0}% of the machine's CPU was done again (up to {} times) and the least disturbed \
         attempt kept; `!` marks one still above it.\n",
        crate::run::cores(),
        args.max_other * 100.0,
        args.redo
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::ProfileResults;

    /// The options of `argv`, and the results of its run once its clusters came up (no rows).
    fn run_of(argv: &[&str]) -> (Args, Results) {
        let args = crate::parse_args(argv.iter().map(|a| a.to_string()).collect()).unwrap();
        let res = Results {
            profiles: crate::plan::plans(&args).into_iter().map(ProfileResults::new).collect(),
            ..Default::default()
        };
        (args, res)
    }

    /// The notes and the consumer section of a run of `argv`.
    fn rendered(argv: &[&str]) -> (String, String) {
        let (args, res) = run_of(argv);
        let mut notes = String::new();
        notes_section(&mut notes, &args, &res, false);
        let mut consumers = String::new();
        for p in &res.profiles {
            consumer_section(&mut consumers, &p.plan.apply(&args), p, "");
        }
        (notes, consumers)
    }

    #[test]
    fn the_report_describes_only_the_clients_that_ran() {
        let argv = ["--suites", "producer,consumer", "--codecs", "none,lz4"];
        let (notes, consumers) = rendered(&argv);
        assert!(notes.contains("producer kafka-rust with lz4: n/a"), "{notes}");
        assert!(notes.contains("kafka-rust 0.10's fetch decoder"), "{notes}");
        assert!(consumers.contains("* gregor-group:") && consumers.contains("* kafka-rust:"), "{consumers}");
        // the modern profile runs neither kafka-rust nor gregor-group
        let (notes, consumers) = rendered(&[&argv[..], &["--timing", "modern"]].concat());
        assert!(!notes.contains("kafka-rust"), "{notes}");
        assert!(!consumers.contains("* gregor-group:") && !consumers.contains("* kafka-rust:"), "{consumers}");
        assert!(consumers.contains("* gregor-simple:") && consumers.contains("* librdkafka:"), "{consumers}");
        // beside another profile they ran there
        let (notes, _) = rendered(&[&argv[..], &["--timing", "modern,instant"]].concat());
        assert!(notes.contains("producer kafka-rust with lz4: n/a"), "{notes}");
    }

    /// Each profile's memory section divides by the wire size its brokers take: Message v0 on
    /// `kafka-0.8.2`, a RecordBatch v2 record on `modern-timed`.
    #[test]
    fn the_memory_section_takes_the_wire_size_of_its_profiles_format() {
        let (args, res) = run_of(&["--timing", "kafka-0.8.2,modern-timed", "--suites", "memory"]);
        let sections: Vec<String> = res
            .profiles
            .iter()
            .filter(|p| p.plan.memory)
            .map(|p| {
                let mut s = String::new();
                memory_section(&mut s, &p.plan.apply(&args), p, "");
                s
            })
            .collect();
        assert_eq!(sections.len(), 2, "the suite runs on both profiles");
        assert!(sections[0].contains("on `kafka-0.8.2` (a broker that takes time"), "{}", sections[0]);
        assert!(sections[0].contains("÷ 126.0, the bytes a 100-byte message with a null key takes as Message v0"));
        assert!(sections[1].contains("on `modern-timed` (a broker that takes time"), "{}", sections[1]);
        assert!(
            sections[1].contains("÷ 110.0, the bytes a 100-byte message with a null key and no headers takes, on average, as a record of a RecordBatch v2 of 1000 records"),
            "{}",
            sections[1]
        );
    }

    /// The report's cluster line, for a run of `argv`.
    fn cluster_line(argv: &[&str]) -> String {
        cluster_line_with(argv, |_| {})
    }

    /// The same, with `argv`'s arguments changed by `change`.
    fn cluster_line_with(argv: &[&str], change: impl FnOnce(&mut Args)) -> String {
        let (mut args, res) = run_of(argv);
        change(&mut args);
        let m = Machine {
            cpu: "cpu".into(),
            cpus: 2,
            memory: "1 GiB".into(),
            kernel: "6".into(),
            date: "today".into(),
            gregor: "commit".into(),
            rustc: "rustc".into(),
        };
        let report = render(&args, &m, "gregor-bench", &res);
        report.lines().find(|l| l.starts_with("| cluster |")).expect("a cluster line").to_owned()
    }

    #[test]
    fn the_cluster_line_says_which_cpus_each_side_ran_on() {
        assert!(!cluster_line(&["--timing", "instant"]).contains("CPU"));
        let split = crate::cores::Split { cluster: vec![0], clients: vec![1, 2, 3] };
        let line = cluster_line_with(&["--timing", "instant"], |a| a.split_cores = Some(split));
        assert!(line.contains("on CPU 0 and every client's worker on CPU 1-3, `--split-cores`"), "{line}");
        assert_eq!(cpu_list(&[1, 2, 3, 5, 7, 8]), "1-3,5,7-8");
    }

    #[test]
    fn the_bar_line_counts_the_configs_and_shows_each_one_below_it_with_its_runs() {
        let cells = [
            Versus::new("1 partition(s) none".into(), 130.0, &[125.0, 130.0, 131.0], 100.0, &[99.0, 100.0, 104.0]),
            Versus::new("1 partition(s) snappy".into(), 98.0, &[97.0, 98.0, 103.0], 100.0, &[95.0, 100.0, 101.0]),
            Versus::new("6 partition(s) gzip".into(), 90.0, &[], 100.0, &[]),
        ];
        let line = target_summary("producer", "gregor", 1.0, &cells).expect("a line");
        assert!(line.starts_with("producer throughput gregor ÷ the faster peer of each config: at least 1.0 in 1 of 3"));
        assert!(line.contains("(lowest 0.90, 6 partition(s) gzip)"), "{line}");
        // 103 ÷ 95: the runs overlap; an older JSON without runs falls back to the medians
        assert!(line.contains("1 partition(s) snappy 0.98 (fastest run ÷ the peer's slowest 1.08)"), "{line}");
        assert!(line.contains("6 partition(s) gzip 0.90 (fastest run ÷ the peer's slowest 0.90)"), "{line}");
        assert!(!line.contains("1 partition(s) none 1.30"), "{line}");
        let met = target_summary("consumer", "gregor-group", 1.2, &cells[..1]).expect("a line");
        assert!(met.ends_with("at least 1.2 in 1 of 1 configs (lowest 1.30, 1 partition(s) none)"), "{met}");
        assert!(target_summary("consumer", "gregor-group", 1.2, &[]).is_none());
    }

    #[test]
    fn the_cluster_line_names_zookeeper_only_where_a_profile_has_it() {
        let modern = cluster_line(&["--timing", "modern"]);
        assert!(modern.contains("in its modern mode, no ZooKeeper") && !modern.contains("real ZooKeeper"), "{modern}");
        let both = cluster_line(&["--timing", "instant,modern"]);
        assert!(both.contains("+ real ZooKeeper") && both.contains("the modern profiles' without ZooKeeper"), "{both}");
        let classic = cluster_line(&["--timing", "instant"]);
        assert!(classic.contains("+ real ZooKeeper") && !classic.contains("modern"), "{classic}");
    }
}

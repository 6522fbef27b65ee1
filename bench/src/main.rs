//! Producer throughput of gregor vs librdkafka (the rdkafka crate, in Kafka 0.8.2 mode) vs
//! kafka-rust (the kafka crate) on the same FakeCluster, in one run. See README.md.
//!
//! ```text
//! cargo run --release --manifest-path bench/Cargo.toml -- [--messages N] [--out FILE] ...
//! ```

mod client_gregor;
mod client_kafka_rust;
mod client_rdkafka;
mod cluster;
mod measure;
mod report;
mod spec;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use spec::{Client, Codec, RunResult, RunSpec};

const USAGE: &str = "\
usage: gregor-bench [--messages N] [--out FILE] [--json FILE]
                    [--clients gregor,librdkafka,kafka-rust] [--acks 1,-1] [--codecs none,snappy,gzip]
                    [--batch N] [--linger-ms MS] [--queue N] [--message-size BYTES]
                    [--partitions N] [--replication-factor N] [--repeat R] [--timeout-s S]
                    [--rate MSG_PER_S] [--redo N] [--max-other-cpu F]
                    [--testkit PATH] [--wrap CMD]

  --clients LIST      default gregor,librdkafka,kafka-rust; gregor-ct adds gregor on a
                      current-thread tokio runtime (gregor is on the multi-thread one)
  --messages N        messages per run (default 500000)
  --out FILE          also write the report (Markdown) to FILE
  --json FILE         also write every run's raw result (JSON lines) to FILE
  --batch N           messages per partition batch (default 1000): librdkafka batch.num.messages;
                      gregor batch.num.messages = N x partitions led per broker (it counts per
                      request); kafka-rust send_all slice = N x partitions
  --linger-ms MS      gregor queue.buffering.max.ms, librdkafka linger.ms (default 10)
  --queue N           gregor and librdkafka queue.buffering.max.messages (default 100000)
  --repeat R          runs per client and config; the median by throughput is reported (default 1)
  --rate R            hand messages over at R msg/s (default: as fast as each client takes them);
                      for latencies that are not just time spent in a full queue
  --redo N            do a run again, up to N times, when other work on the machine took more
                      than --max-other-cpu (default 0.15) of its CPU during it (default 3)
  --testkit PATH      a gregor-testkit binary (default: build the workspace's, release)
  --wrap CMD          run each worker under CMD, e.g. --wrap 'perf record -g -o /tmp/w.data --'
                      (files are overwritten by each run: select one client and config)";

struct Args {
    messages: usize,
    out: Option<PathBuf>,
    json: Option<PathBuf>,
    clients: Vec<Client>,
    acks: Vec<i16>,
    codecs: Vec<Codec>,
    batch: usize,
    linger_ms: u64,
    queue: usize,
    message_size: usize,
    partitions: i32,
    rf: usize,
    repeat: usize,
    timeout: Duration,
    testkit: Option<PathBuf>,
    rate: Option<f64>,
    wrap: Vec<String>,
    redo: usize,
    max_other: f64,
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        messages: 500_000,
        out: None,
        json: None,
        clients: Client::ALL.to_vec(),
        acks: vec![1, -1],
        codecs: Codec::ALL.to_vec(),
        batch: 1000,
        linger_ms: 10,
        queue: 100_000,
        message_size: 100,
        partitions: 6,
        rf: 2,
        repeat: 1,
        timeout: Duration::from_secs(900),
        testkit: None,
        rate: None,
        wrap: Vec::new(),
        redo: 3,
        max_other: 0.15,
    };
    fn num<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, String> {
        let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
        v.replace('_', "").parse().map_err(|_| format!("{flag}: {v:?} is not a number"))
    }
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--messages" | "-n" => a.messages = num(&flag, it.next())?,
            "--out" => a.out = Some(it.next().ok_or("--out needs a file")?.into()),
            "--json" => a.json = Some(it.next().ok_or("--json needs a file")?.into()),
            "--clients" => {
                a.clients = it
                    .next()
                    .ok_or("--clients needs a list")?
                    .split(',')
                    .map(|s| Client::parse(s.trim()).ok_or_else(|| format!("unknown client {s:?}")))
                    .collect::<Result<_, _>>()?
            }
            "--acks" => {
                a.acks = it
                    .next()
                    .ok_or("--acks needs a list")?
                    .split(',')
                    .map(|s| match s.trim() {
                        "1" => Ok(1),
                        "-1" | "all" => Ok(-1),
                        other => Err(format!("--acks: {other:?} (1 or -1)")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--codecs" | "--compression" => {
                a.codecs = it
                    .next()
                    .ok_or("--codecs needs a list")?
                    .split(',')
                    .map(|s| Codec::parse(s.trim()).ok_or_else(|| format!("unknown codec {s:?}")))
                    .collect::<Result<_, _>>()?
            }
            "--batch" => a.batch = num(&flag, it.next())?,
            "--linger-ms" => a.linger_ms = num(&flag, it.next())?,
            "--queue" => a.queue = num(&flag, it.next())?,
            "--message-size" => a.message_size = num(&flag, it.next())?,
            "--partitions" => a.partitions = num(&flag, it.next())?,
            "--replication-factor" => a.rf = num(&flag, it.next())?,
            "--repeat" => a.repeat = num::<usize>(&flag, it.next())?.max(1),
            "--timeout-s" => a.timeout = Duration::from_secs(num(&flag, it.next())?),
            "--redo" => a.redo = num(&flag, it.next())?,
            "--max-other-cpu" => a.max_other = num(&flag, it.next())?,
            "--wrap" => {
                a.wrap = it.next().ok_or("--wrap needs a command")?.split_whitespace().map(str::to_owned).collect()
            }
            "--rate" => a.rate = Some(num(&flag, it.next())?),
            "--testkit" => a.testkit = Some(it.next().ok_or("--testkit needs a path")?.into()),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if a.messages == 0 || a.batch == 0 || a.queue == 0 || a.partitions <= 0 {
        return Err("--messages, --batch, --queue and --partitions must be positive".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--worker") {
        args.next();
        return worker_main(args.next());
    }
    let args = match parse_args(args) {
        Ok(a) => a,
        Err(e) if e == USAGE => {
            println!("{e}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    match runtime.block_on(coordinate(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `gregor-bench --worker SPEC_JSON`: one run, one client, this process alone; prints
/// `RESULT {json}`.
fn worker_main(spec: Option<String>) -> ExitCode {
    let spec: RunSpec = match spec.as_deref().map(serde_json::from_str) {
        Some(Ok(s)) => s,
        other => {
            eprintln!("--worker needs a run spec: {other:?}");
            return ExitCode::from(2);
        }
    };
    match worker::run(spec) {
        Ok(result) => {
            println!("RESULT {}", serde_json::to_string(&result).unwrap());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("worker error: {e}");
            println!("ERROR {}", serde_json::to_string(&e).unwrap());
            ExitCode::FAILURE
        }
    }
}

/// One row of the report: a client in a config, its (median) result or why it has none.
pub struct Row {
    pub client: Client,
    pub acks: i16,
    pub codec: Codec,
    pub result: Result<RunResult, String>,
    /// Every repeat's throughput, msg/s.
    pub all_rates: Vec<f64>,
}

async fn coordinate(args: Args) -> Result<bool, String> {
    let binary = cluster::testkit_binary(args.testkit.clone())?;
    let brokers = 3;
    let started = Instant::now();
    let load_start = measure::loadavg();
    let cluster = cluster::Cluster::start(&binary, brokers).await?;
    eprintln!(
        "cluster: {} (zookeeper {}, pid {}, log {}) up in {:.1?}",
        cluster.brokers,
        cluster.zookeeper,
        cluster.pid,
        cluster.log.display(),
        started.elapsed()
    );
    let partitions_per_broker = (args.partitions as usize).div_ceil(brokers);
    let mut rows = Vec::new();
    let mut json_lines = Vec::new();
    let mut all_ok = true;
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let mut seq = 0;
    for &acks in &args.acks {
        for &codec in &args.codecs {
            // clients alternate within a config (and repeats alternate too), so a drift of the
            // machine hits all of them alike
            let mut per_client: Vec<Vec<Result<RunResult, String>>> = vec![Vec::new(); args.clients.len()];
            for _ in 0..args.repeat {
                for (ci, &client) in args.clients.iter().enumerate() {
                    // a run disturbed by other work on the machine is done again (up to
                    // --redo times, after a pause); the least disturbed one is kept
                    let mut best: Option<Result<RunResult, String>> = None;
                    for attempt in 0..=args.redo {
                        if attempt > 0 {
                            tokio::time::sleep(Duration::from_secs(3)).await;
                        }
                        seq += 1;
                        let topic = format!(
                            "bench-{stamp}-{seq}-{}-acks{}-{}",
                            client.name(),
                            if acks == -1 { "all".to_owned() } else { acks.to_string() },
                            codec.name()
                        );
                        let spec = RunSpec {
                            client,
                            brokers: cluster.brokers.clone(),
                            topic: topic.clone(),
                            partitions: args.partitions,
                            acks,
                            codec,
                            messages: args.messages,
                            message_size: args.message_size,
                            batch: args.batch,
                            linger_ms: args.linger_ms,
                            queue: args.queue,
                            partitions_per_broker,
                            rate: args.rate,
                        };
                        let mut result = one_run(&cluster, spec, args.rf, args.timeout, &args.wrap).await;
                        if let Ok(r) = &mut result {
                            r.attempt = attempt;
                        }
                        match &result {
                            Ok(r) => {
                                eprintln!(
                                    "  {:<10} acks={:<2} {:<6} {:>10.0} msg/s  cpu {:.2}s  rss {:.0} MiB  hw={:?}",
                                    client.name(),
                                    acks,
                                    codec.name(),
                                    r.acked as f64 / r.elapsed_s,
                                    r.cpu_user_s + r.cpu_sys_s,
                                    r.peak_rss_kib as f64 / 1024.0,
                                    r.high_watermark_sum
                                );
                                if let Some(d) = disturbance(r).filter(|d| *d > args.max_other) {
                                    eprintln!(
                                        "             other work on the machine took {:.0}% of its CPU during this run",
                                        d * 100.0
                                    );
                                }
                                json_lines.push(serde_json::to_string(r).unwrap());
                            }
                            Err(e) => {
                                eprintln!("  {:<10} acks={acks:<2} {:<6} FAILED: {e}", client.name(), codec.name());
                                json_lines.push(serde_json::json!({"client": client.name(), "acks": acks, "codec": codec.name(), "error": e}).to_string());
                            }
                        }
                        let disturbed = match &result {
                            Ok(r) => disturbance(r).unwrap_or(0.0) > args.max_other,
                            Err(_) => false, // a failure is kept as it is: it is not noise
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
                    let result = best.expect("at least one attempt");
                    if result.is_err() {
                        all_ok = false;
                    }
                    per_client[ci].push(result);
                }
            }
            for (ci, results) in per_client.into_iter().enumerate() {
                let client = args.clients[ci];
                let mut oks: Vec<RunResult> = results.iter().filter_map(|r| r.as_ref().ok().cloned()).collect();
                let all_rates: Vec<f64> = oks.iter().map(|r| r.acked as f64 / r.elapsed_s).collect();
                let result = if oks.is_empty() {
                    Err(results.into_iter().find_map(Result::err).unwrap_or_else(|| "no run".into()))
                } else {
                    oks.sort_by(|a, b| (a.acked as f64 / a.elapsed_s).total_cmp(&(b.acked as f64 / b.elapsed_s)));
                    Ok(oks.swap_remove(oks.len() / 2))
                };
                rows.push(Row { client, acks, codec, result, all_rates });
            }
        }
    }
    let cluster_rss = cluster.rss_kib();
    let load_end = measure::loadavg();
    cluster.stop().await;
    let text = report::render(&report::Context {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        messages: args.messages,
        message_size: args.message_size,
        partitions: args.partitions,
        rf: args.rf,
        batch: args.batch,
        gregor_batch: args.batch * partitions_per_broker,
        linger_ms: args.linger_ms,
        queue: args.queue,
        repeat: args.repeat,
        rate: args.rate,
        cluster_rss_kib: cluster_rss,
        load: (load_start, load_end),
        max_other: args.max_other,
        rows: &rows,
    });
    println!("{text}");
    if let Some(path) = &args.out {
        std::fs::write(path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("report written to {}", path.display());
    }
    if let Some(path) = &args.json {
        std::fs::write(path, json_lines.join("\n") + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(all_ok)
}

/// The share of the machine's CPU (elapsed × cores) that other work took during a run; 0
/// below 0.1 s, /proc/stat's resolution (10 ms ticks) being too coarse for short runs.
pub fn disturbance(r: &RunResult) -> Option<f64> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    r.other_cpu_s.map(|o| if o < 0.1 { 0.0 } else { o / (r.elapsed_s * cores) })
}

/// Creates a fresh topic, runs the client in a subprocess, checks the topic's high
/// watermarks add up to what was sent, deletes the topic.
async fn one_run(
    cluster: &cluster::Cluster,
    spec: RunSpec,
    rf: usize,
    timeout: Duration,
    wrap: &[String],
) -> Result<RunResult, String> {
    cluster.create_topic(&spec.topic, spec.partitions, rf).await?;
    // let the cluster settle (leaders announced, followers fetching) before the clock starts
    tokio::time::sleep(Duration::from_millis(300)).await;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let cpu_before = cluster.cpu_seconds();
    let busy_before = measure::machine_busy_seconds();
    let mut command = match wrap.split_first() {
        Some((program, rest)) => {
            let mut c = tokio::process::Command::new(program);
            c.args(rest).arg(exe);
            c
        }
        None => tokio::process::Command::new(exe),
    };
    let child = command
        .arg("--worker")
        .arg(serde_json::to_string(&spec).unwrap())
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
    let cluster_cpu = match (cpu_before, cluster.cpu_seconds()) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let busy = match (busy_before, measure::machine_busy_seconds()) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut result: RunResult = match stdout.lines().find_map(|l| l.strip_prefix("RESULT ")) {
        Some(json) => serde_json::from_str(json).map_err(|e| format!("worker result: {e}"))?,
        None => {
            let err = stdout
                .lines()
                .find_map(|l| l.strip_prefix("ERROR "))
                .and_then(|j| serde_json::from_str::<String>(j).ok())
                .unwrap_or_else(|| format!("worker exited with {}", output.status));
            return Err(err);
        }
    };
    result.cluster_cpu_s = cluster_cpu;
    result.other_cpu_s = match (busy, cluster_cpu) {
        (Some(b), Some(c)) => Some((b - c - result.process_cpu_s).max(0.0)),
        _ => None,
    };
    let hws = cluster.high_watermarks(&spec.topic, spec.partitions).await?;
    let sum: i64 = hws.iter().sum();
    result.high_watermark_sum = Some(sum);
    cluster.delete_topic(&spec.topic).await;
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

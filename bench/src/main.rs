//! gregor vs librdkafka (the rdkafka crate, in Kafka 0.8.2 mode) vs kafka-rust (the kafka
//! crate) on the same FakeCluster, in one run: producer throughput, produce latency at a fixed
//! rate, consumer throughput, on each broker timing profile; producer memory with a full queue
//! per queue bound; and gregor-protocol's codec micro-benchmarks. See README.md.
//!
//! ```text
//! cargo run --release --manifest-path bench/Cargo.toml              # everything, ~30-35 min
//! cargo run --release --manifest-path bench/Cargo.toml -- --quick   # a smoke run, ~4 min
//! ```

mod client_gregor;
mod client_kafka_rust;
mod client_rdkafka;
mod cluster;
mod codec;
mod consume_gregor;
mod consume_kafka_rust;
mod consume_rdkafka;
mod cores;
mod measure;
mod memory;
mod plan;
mod report;
mod run;
mod spec;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use cluster::External;
use spec::{Client, Codec, ConsumerClient, WorkerSpec};

const USAGE: &str = "\
usage: gregor-bench [--quick] [--suites producer,latency,consumer,codec,memory] [--out FILE] [--json FILE]
                    [--messages N] [--partitions 1,6] [--acks 1,-1] [--codecs none,snappy,gzip,lz4(,zstd)]
                    [--clients gregor,gregor-ct,librdkafka,kafka-rust]
                    [--consumers gregor-simple,gregor-group,librdkafka,kafka-rust]
                    [--repeat R] [--consumer-repeat R] [--latency-repeat R]
                    [--latency-seconds S] [--latency-partitions 6] [--rate MSG_PER_S]
                    [--batch N] [--linger-ms MS] [--queue N] [--message-size BYTES]
                    [--replication-factor N] [--streams N] [--fetch-max-bytes B] [--fetch-wait-ms MS]
                    [--codec-samples N] [--codec-sample-ms MS]
                    [--memory-queues 2000,100000,1000000] [--memory-codecs none,snappy] [--memory-repeat R]
                    [--redo N] [--max-other-cpu F] [--timeout-s S] [--wrap CMD] [--librdkafka KEY=VALUE]...
                    [--testkit PATH] [--cluster-threads N] [--split-cores] [--timing instant,kafka-0.8.2,modern,modern-timed]
                    [--real-timing-repeat R]
                    [--brokers HOST:PORT[,...] --zookeeper HOST:PORT[,...][/chroot]]

  (no option)         the whole benchmark on both timing profiles (~30-35 min on 2 cores),
                      report to benchmarks/RESULTS.md
  --quick             smoke run (~4 min): 100000 messages, 1 run per cell, 1 s latency runs,
                      short codec samples, no redo, both timing profiles; report to
                      target/gregor-bench-quick.md; options after it still apply
  --suites LIST       producer (throughput, unpaced), latency (paced at half the slowest
                      client's throughput of the same config), consumer (read back the topic
                      gregor's producer wrote), codec (gregor-protocol micro-benchmarks),
                      memory (producer runs whose queue fills, per queue bound: memory per
                      message held, fixed memory, user and system CPU; on kafka-0.8.2 and
                      modern-timed). Default: all five, memory only when kafka-0.8.2 or
                      modern-timed is a --timing profile (or the cluster is external)
  --out FILE          the Markdown report (rewritten after every config, so an interrupted
                      run leaves what it measured); --json FILE: every run's raw result
  --messages N        messages per producer and consumer run (default 1000000)
  --partitions LIST   topic partitions (default 1,6); --latency-partitions (default 6)
  --clients LIST      producers (default all): gregor (tokio multi-thread runtime), gregor-ct
                      (current-thread runtime), librdkafka, kafka-rust
  --consumers LIST    gregor-simple, gregor-group, librdkafka, kafka-rust
  --repeat R          runs per producer cell (default 3), the median by throughput reported;
                      --consumer-repeat (default 3), --latency-repeat (default 3: the run
                      with the median p99 reported)
  --latency-seconds S length of a paced run (default 5): messages = rate x S
  --rate R            pace latency runs at R msg/s instead of half the slowest throughput
  --batch N           messages per partition batch (default 1000): librdkafka batch.num.messages;
                      gregor batch.num.messages = N x partitions led per broker (it counts per
                      request); kafka-rust send_all slice = N x partitions
  --linger-ms MS      gregor queue.buffering.max.ms, librdkafka linger.ms (default 10)
  --queue N           gregor and librdkafka queue.buffering.max.messages (default 100000)
  --streams N         streams of the gregor group consumer's member (default: the partitions)
  --fetch-max-bytes B fetch.message.max.bytes of every consumer (default 1048576)
  --fetch-wait-ms MS  fetch.wait.max.ms of every consumer (default 100)
  --memory-queues L   the memory suite's queue bounds (queue.buffering.max.messages of gregor,
                      gregor-ct and librdkafka; default 2000,100000,1000000, --quick
                      2000,100000); the smallest gives each client's fixed memory. Its runs:
                      the --clients with a queue, 6 partitions, acks 1, max(--messages,
                      3 x the bound) messages, on kafka-0.8.2 and modern-timed (when neither
                      is given, the first --timing profile but modern)
  --codecs LIST       producer and consumer codecs (default none,snappy,gzip,lz4); zstd
                      (RecordBatch v2 only) runs on the modern profiles and an external
                      cluster, and is left out of kafka-0.8.2 and instant
  --memory-codecs L   the memory suite's codecs (default none,snappy)
  --memory-repeat R   runs per memory cell (default --real-timing-repeat's R when the suite runs
                      on kafka-0.8.2 or modern-timed, else 1; the run with the median memory
                      per message held is shown, and the CPU columns are the medians of the
                      cell's runs)
  --redo N            do a run again, up to N times (default 3), when other work on the machine
                      took more than --max-other-cpu (default 0.15) of its CPU during it
  --librdkafka K=V    set a librdkafka property (producer and consumer) after the bench's own;
                      repeatable (to see what a setting does to the peer)
  --testkit PATH      a gregor-testkit binary (default: build the workspace's, release)
  --cluster-threads N worker threads of the FakeCluster's runtime (default: tokio's, one per
                      core); it shares the machine's cores with the client under test
  --split-cores       the FakeCluster on the first CPU this process may use, every client's
                      worker on the others (as on machines of their own; on 2 cores a client
                      then sees one, and its runtime has one worker); default: shared
  --timing LIST       the brokers' timing profiles (default instant,kafka-0.8.2): instant
                      (answers at once) and kafka-0.8.2 (service time, throughput per broker
                      and partition, followers' fetch: gregor_testkit::Timing::kafka_0_8_2);
                      also modern (gregor-testkit --modern: Kafka 3.7-4.x without ZooKeeper,
                      answering at once; every client negotiates versions; no kafka-rust,
                      no gregor-group, no memory suite) and modern-timed (the modern mode
                      with kafka-0.8.2's broker timing: RecordBatch v2 to brokers that take
                      time; the memory suite runs there too).
                      A cluster of its own per profile, in turn; the producer, latency and
                      consumer suites run on each, the codec suite once; one report, a
                      summary and sections per profile
  --real-timing-repeat R  runs per cell of every suite on kafka-0.8.2 and modern-timed
                      (default: 1 beside another profile, to keep the default run within
                      ~40 min; alone, the --repeat, --consumer-repeat and --latency-repeat
                      counts)
  --brokers LIST      use the external cluster at these brokers (metadata.broker.list) instead of
  --zookeeper CONNECT starting gregor-testkit's FakeCluster; both or neither (without them, the
                      GREGOR_BROKERS and GREGOR_ZOOKEEPER environment variables, both or
                      neither). Topics are created and deleted with gregor-admin; the cluster's
                      CPU and memory are not measured (cluster CPU s, other CPU s: -; no redo);
                      --testkit, --cluster-threads, --split-cores and --timing do not apply (an error)
  --wrap CMD          run each worker under CMD, e.g. --wrap 'perf record -g -o /tmp/w.data --'
                      (files are overwritten by each run: select one client and config)";

/// Which parts of the benchmark run.
#[derive(Debug, Clone, Copy)]
pub struct Suites {
    pub producer: bool,
    pub latency: bool,
    pub consumer: bool,
    pub codec: bool,
    pub memory: bool,
}

#[derive(Debug, Clone)]
pub struct Args {
    pub quick: bool,
    pub suites: Suites,
    pub messages: usize,
    pub out: PathBuf,
    pub json: Option<PathBuf>,
    pub clients: Vec<Client>,
    pub consumers: Vec<ConsumerClient>,
    pub acks: Vec<i16>,
    pub codecs: Vec<Codec>,
    pub partitions: Vec<i32>,
    pub latency_partitions: Vec<i32>,
    pub batch: usize,
    pub linger_ms: u64,
    pub queue: usize,
    pub message_size: usize,
    pub rf: usize,
    pub repeat: usize,
    pub consumer_repeat: usize,
    pub latency_repeat: usize,
    pub latency_seconds: f64,
    pub rate: Option<f64>,
    pub streams: Option<usize>,
    pub fetch_max_bytes: i32,
    pub fetch_wait_ms: u64,
    pub codec_samples: usize,
    pub codec_sample_ms: u64,
    /// The memory suite's queue bounds, ascending, each once.
    pub memory_queues: Vec<usize>,
    pub memory_codecs: Vec<Codec>,
    /// `--memory-repeat`, when given (the plan of the memory suite's profile decides
    /// otherwise: `Plan::memory_repeat`).
    pub memory_repeat: Option<usize>,
    pub timeout: Duration,
    pub testkit: Option<PathBuf>,
    /// Worker threads of the FakeCluster's tokio runtime (None: tokio's default, one per core).
    pub cluster_threads: Option<usize>,
    /// `--split-cores`: the CPUs of the FakeCluster and of the clients' workers.
    pub split_cores: Option<cores::Split>,
    /// The brokers' timing profiles, in order (`plan::ALL_PROFILES`); a cluster of its own for
    /// each.
    pub timing: Vec<String>,
    /// `--real-timing-repeat`: runs per cell of every suite on `kafka-0.8.2` and `modern-timed`
    /// (see [`plan::plans`]).
    pub real_timing_repeat: Option<usize>,
    /// An existing cluster to use instead of starting the FakeCluster.
    pub external: Option<External>,
    pub wrap: Vec<String>,
    pub redo: usize,
    pub max_other: f64,
    pub librdkafka: Vec<(String, String)>,
}

/// The repository root (bench/ is in it).
pub fn repo_root() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("bench/ has a parent").to_path_buf()
}

fn list<T>(flag: &str, v: Option<String>, parse: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, String> {
    let v = v.ok_or_else(|| format!("{flag} needs a list"))?;
    let items: Vec<T> = v
        .split(',')
        .map(|s| parse(s.trim()).ok_or_else(|| format!("{flag}: unknown value {s:?}")))
        .collect::<Result<_, _>>()?;
    if items.is_empty() {
        return Err(format!("{flag}: empty list"));
    }
    Ok(items)
}

fn parse_args(args: Vec<String>) -> Result<Args, String> {
    let quick = args.iter().any(|a| a == "--quick");
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| repo_root().join("target"));
    let mut a = Args {
        quick,
        suites: Suites { producer: true, latency: true, consumer: true, codec: true, memory: true },
        messages: if quick { 100_000 } else { 1_000_000 },
        out: if quick {
            target.join("gregor-bench-quick.md")
        } else {
            repo_root().join("benchmarks").join("RESULTS.md")
        },
        json: None,
        clients: Client::ALL.to_vec(),
        consumers: ConsumerClient::ALL.to_vec(),
        acks: vec![1, -1],
        codecs: Codec::ALL.to_vec(),
        partitions: vec![1, 6],
        latency_partitions: vec![6],
        batch: 1000,
        linger_ms: 10,
        queue: 100_000,
        message_size: 100,
        rf: 2,
        repeat: if quick { 1 } else { 3 },
        consumer_repeat: if quick { 1 } else { 3 },
        latency_repeat: if quick { 1 } else { 3 },
        latency_seconds: if quick { 1.0 } else { 5.0 },
        rate: None,
        streams: None,
        fetch_max_bytes: 1024 * 1024,
        fetch_wait_ms: 100,
        codec_samples: if quick { 3 } else { 7 },
        codec_sample_ms: if quick { 30 } else { 200 },
        memory_queues: if quick { vec![2000, 100_000] } else { vec![2000, 100_000, 1_000_000] },
        memory_codecs: vec![Codec::None, Codec::Snappy],
        memory_repeat: None,
        timeout: Duration::from_secs(900),
        testkit: None,
        cluster_threads: None,
        split_cores: None,
        timing: plan::PROFILES.iter().map(|t| t.to_string()).collect(),
        real_timing_repeat: None,
        external: None,
        wrap: Vec::new(),
        redo: if quick { 0 } else { 3 },
        max_other: 0.15,
        librdkafka: Vec::new(),
    };
    fn num<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, String> {
        let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
        v.replace('_', "").parse().map_err(|_| format!("{flag}: {v:?} is not a number"))
    }
    // options that configure the FakeCluster the bench starts, given explicitly
    let mut fake_only: Vec<&'static str> = Vec::new();
    let mut suites_given = false;
    let (mut brokers, mut zookeeper): (Option<String>, Option<String>) = (None, None);
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--quick" => {}
            "--suites" => {
                suites_given = true;
                let s = list(&flag, it.next(), |s| {
                    ["producer", "latency", "consumer", "codec", "memory"].contains(&s).then(|| s.to_owned())
                })?;
                let has = |x: &str| s.iter().any(|y| y == x);
                a.suites = Suites {
                    producer: has("producer"),
                    latency: has("latency"),
                    consumer: has("consumer"),
                    codec: has("codec"),
                    memory: has("memory"),
                };
            }
            "--messages" | "-n" => a.messages = num(&flag, it.next())?,
            "--out" => a.out = it.next().ok_or("--out needs a file")?.into(),
            "--json" => a.json = Some(it.next().ok_or("--json needs a file")?.into()),
            "--clients" => a.clients = list(&flag, it.next(), Client::parse)?,
            "--consumers" => a.consumers = list(&flag, it.next(), ConsumerClient::parse)?,
            "--acks" => {
                a.acks = list(&flag, it.next(), |s| match s {
                    "1" => Some(1),
                    "-1" | "all" => Some(-1),
                    _ => None,
                })?
            }
            "--codecs" | "--compression" => a.codecs = list(&flag, it.next(), Codec::parse)?,
            "--partitions" => a.partitions = list(&flag, it.next(), |s| s.parse().ok().filter(|p| *p > 0))?,
            "--latency-partitions" => {
                a.latency_partitions = list(&flag, it.next(), |s| s.parse().ok().filter(|p| *p > 0))?
            }
            "--batch" => a.batch = num(&flag, it.next())?,
            "--linger-ms" => a.linger_ms = num(&flag, it.next())?,
            "--queue" => a.queue = num(&flag, it.next())?,
            "--message-size" => a.message_size = num(&flag, it.next())?,
            "--replication-factor" => a.rf = num(&flag, it.next())?,
            "--repeat" => a.repeat = num::<usize>(&flag, it.next())?.max(1),
            "--consumer-repeat" => a.consumer_repeat = num::<usize>(&flag, it.next())?.max(1),
            "--latency-repeat" => a.latency_repeat = num::<usize>(&flag, it.next())?.max(1),
            "--latency-seconds" => a.latency_seconds = num(&flag, it.next())?,
            "--rate" => a.rate = Some(num(&flag, it.next())?),
            "--streams" => a.streams = Some(num::<usize>(&flag, it.next())?.max(1)),
            "--fetch-max-bytes" => a.fetch_max_bytes = num(&flag, it.next())?,
            "--fetch-wait-ms" => a.fetch_wait_ms = num(&flag, it.next())?,
            "--codec-samples" => a.codec_samples = num::<usize>(&flag, it.next())?.max(1),
            "--codec-sample-ms" => a.codec_sample_ms = num::<u64>(&flag, it.next())?.max(1),
            "--memory-queues" => {
                let mut q = list(&flag, it.next(), |s| s.replace('_', "").parse().ok().filter(|q: &usize| *q > 0))?;
                q.sort_unstable();
                q.dedup();
                a.memory_queues = q;
            }
            "--memory-codecs" => a.memory_codecs = list(&flag, it.next(), Codec::parse)?,
            "--memory-repeat" => a.memory_repeat = Some(num::<usize>(&flag, it.next())?.max(1)),
            "--timeout-s" => a.timeout = Duration::from_secs(num(&flag, it.next())?),
            "--redo" => a.redo = num(&flag, it.next())?,
            "--max-other-cpu" => a.max_other = num(&flag, it.next())?,
            "--wrap" => {
                a.wrap = it.next().ok_or("--wrap needs a command")?.split_whitespace().map(str::to_owned).collect()
            }
            "--testkit" => {
                fake_only.push("--testkit");
                a.testkit = Some(it.next().ok_or("--testkit needs a path")?.into())
            }
            "--cluster-threads" => {
                fake_only.push("--cluster-threads");
                a.cluster_threads = Some(num::<usize>(&flag, it.next())?.max(1))
            }
            "--split-cores" => fake_only.push("--split-cores"),
            "--brokers" => brokers = Some(it.next().ok_or("--brokers needs HOST:PORT[,HOST:PORT...]")?),
            "--zookeeper" => zookeeper = Some(it.next().ok_or("--zookeeper needs HOST:PORT[/chroot]")?),
            "--timing" => {
                fake_only.push("--timing");
                a.timing = plan::parse_timing(
                    &it.next().ok_or("--timing needs instant, kafka-0.8.2, modern, modern-timed or several")?,
                )?;
            }
            "--real-timing-repeat" => {
                fake_only.push("--real-timing-repeat");
                a.real_timing_repeat = Some(num::<usize>(&flag, it.next())?.max(1))
            }
            "--librdkafka" => {
                let kv = it.next().ok_or("--librdkafka needs KEY=VALUE")?;
                let (k, v) = kv.split_once('=').ok_or_else(|| format!("--librdkafka: {kv:?} is not KEY=VALUE"))?;
                a.librdkafka.push((k.trim().to_owned(), v.trim().to_owned()));
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    a.external = external(brokers, zookeeper, env(gregor_testkit::BROKERS_ENV), env(gregor_testkit::ZOOKEEPER_ENV))?;
    if let (Some(ext), Some(flag)) = (&a.external, fake_only.first()) {
        return Err(format!(
            "{flag} configures the FakeCluster the bench starts; with an external cluster ({}) \
             there is none: drop {flag}",
            ext.source
        ));
    }
    if fake_only.contains(&"--split-cores") {
        a.split_cores = Some(cores::Split::here()?);
    }
    // the memory suite is about full queues, which the instant brokers do not make: by default
    // it runs where a broker takes time (kafka-0.8.2, or an external cluster's real brokers)
    if !suites_given && a.external.is_none() && !a.timing.iter().any(|t| plan::takes_time(t)) {
        a.suites.memory = false;
    }
    if a.messages == 0 || a.batch == 0 || a.queue == 0 || a.message_size == 0 || a.fetch_max_bytes <= 0 {
        return Err("--messages, --batch, --queue, --message-size and --fetch-max-bytes must be positive".into());
    }
    if a.latency_seconds <= 0.0 || a.rate.is_some_and(|r| r <= 0.0) {
        return Err("--latency-seconds and --rate must be positive".into());
    }
    if a.suites.latency && !a.suites.producer && a.rate.is_none() {
        return Err("the latency suite paces at half the producer suite's slowest throughput: \
                    add the producer suite or give --rate"
            .into());
    }
    Ok(a)
}

/// The external cluster named by `--brokers` and `--zookeeper` (both or neither), else by
/// `GREGOR_BROKERS` and `GREGOR_ZOOKEEPER` (both or neither; the testkit's
/// [`gregor_testkit::external_cluster`] convention, but one without the other is an error here:
/// a benchmark of the FakeCluster when a real cluster was meant would look like a result).
fn external(
    brokers: Option<String>,
    zookeeper: Option<String>,
    env_brokers: Option<String>,
    env_zookeeper: Option<String>,
) -> Result<Option<External>, String> {
    let (b_env, z_env) = (gregor_testkit::BROKERS_ENV, gregor_testkit::ZOOKEEPER_ENV);
    let (brokers, zookeeper, source) = match (brokers, zookeeper) {
        (Some(b), Some(z)) => (b, z, "--brokers/--zookeeper"),
        (Some(_), None) => {
            return Err("--brokers needs --zookeeper too: the bench creates topics and the group consumer \
                        coordinates through the cluster's ZooKeeper"
                .into())
        }
        (None, Some(_)) => return Err("--zookeeper needs --brokers too (the cluster's metadata.broker.list)".into()),
        (None, None) => match (env_brokers, env_zookeeper) {
            (Some(b), Some(z)) => (b, z, "GREGOR_BROKERS/GREGOR_ZOOKEEPER"),
            (Some(_), None) => {
                return Err(format!(
                "{b_env} is set but {z_env} is not: set both to use an external cluster, neither for the FakeCluster"
            ))
            }
            (None, Some(_)) => {
                return Err(format!(
                "{z_env} is set but {b_env} is not: set both to use an external cluster, neither for the FakeCluster"
            ))
            }
            (None, None) => return Ok(None),
        },
    };
    gregor_net::parse_broker_list(&brokers).map_err(|e| format!("{source}: brokers {brokers:?}: {e}"))?;
    if zookeeper.trim().is_empty() {
        return Err(format!("{source}: an empty ZooKeeper connect string"));
    }
    Ok(Some(External { brokers, zookeeper, source }))
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--worker") {
        args.next();
        return worker_main(args.next());
    }
    let args = match parse_args(args.collect()) {
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
    match runtime.block_on(run::coordinate(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `gregor-bench --worker SPEC_JSON`: one run, this process alone; prints `RESULT {json}`
/// (or `ERROR "why"`).
fn worker_main(spec: Option<String>) -> ExitCode {
    // gregor's warnings (retries, reconnections) on stderr, which the coordinator passes on
    gregor_testkit::init_tracing();
    let spec: WorkerSpec = match spec.as_deref().map(serde_json::from_str) {
        Some(Ok(s)) => s,
        other => {
            eprintln!("--worker needs a run spec: {other:?}");
            return ExitCode::from(2);
        }
    };
    let result = match spec {
        WorkerSpec::Produce(s) => worker::run(s).map(|r| serde_json::to_string(&r)),
        WorkerSpec::Consume(s) => worker::consume(s).map(|r| serde_json::to_string(&r)),
        WorkerSpec::Codec(s) => codec::run(&s).map(|r| serde_json::to_string(&r)),
    };
    match result {
        Ok(json) => {
            println!("RESULT {}", json.expect("results serialize"));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("worker error: {e}");
            println!("ERROR {}", serde_json::to_string(&e).unwrap());
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Option<String> {
        Some(v.to_owned())
    }

    #[test]
    fn an_external_cluster_is_named_by_both_options_or_both_variables() {
        assert!(external(None, None, None, None).unwrap().is_none(), "neither: the FakeCluster");
        let e = external(s("h:9092,h:9093"), s("h:2181/kafka"), None, None).unwrap().unwrap();
        assert_eq!(
            (e.brokers.as_str(), e.zookeeper.as_str(), e.source),
            ("h:9092,h:9093", "h:2181/kafka", "--brokers/--zookeeper")
        );
        let e = external(None, None, s("e:9092"), s("e:2181")).unwrap().unwrap();
        assert_eq!((e.brokers.as_str(), e.source), ("e:9092", "GREGOR_BROKERS/GREGOR_ZOOKEEPER"));
        let e = external(s("o:9092"), s("o:2181"), s("e:9092"), s("e:2181")).unwrap().unwrap();
        assert_eq!(e.brokers, "o:9092", "the options win over the variables");
    }

    #[test]
    fn half_an_external_cluster_is_an_error() {
        assert!(external(s("h:9092"), None, None, s("e:2181")).unwrap_err().contains("--brokers needs --zookeeper"));
        assert!(external(None, s("h:2181"), None, None).unwrap_err().contains("--zookeeper needs --brokers"));
        assert!(external(None, None, s("e:9092"), None).unwrap_err().contains("GREGOR_ZOOKEEPER is not"));
        assert!(external(None, None, None, s("e:2181")).unwrap_err().contains("GREGOR_BROKERS is not"));
        assert!(external(s("nope"), s("h:2181"), None, None).unwrap_err().contains("nope is not host:port"));
    }

    #[test]
    fn memory_suite_options() {
        let parse = |v: &[&str]| parse_args(v.iter().map(|a| a.to_string()).collect());
        let a = parse(&[]).unwrap();
        assert!(a.suites.memory, "the default run has the memory suite");
        assert_eq!(
            (a.memory_queues, a.memory_codecs, a.memory_repeat),
            (vec![2000, 100_000, 1_000_000], vec![Codec::None, Codec::Snappy], None)
        );
        assert_eq!(parse(&["--quick"]).unwrap().memory_queues, [2000, 100_000]);
        // instant alone: the report it always was, unless asked for
        assert!(!parse(&["--timing", "instant"]).unwrap().suites.memory);
        assert!(parse(&["--timing", "instant", "--suites", "producer,memory"]).unwrap().suites.memory);
        assert!(parse(&["--timing", "kafka-0.8.2"]).unwrap().suites.memory);
        assert!(parse(&["--timing", "modern-timed"]).unwrap().suites.memory);
        assert!(!parse(&["--timing", "modern"]).unwrap().suites.memory);
        let a = parse(&[
            "--suites",
            "memory",
            "--memory-queues",
            "100_000,2000,2000",
            "--memory-codecs",
            "lz4",
            "--memory-repeat",
            "3",
        ])
        .unwrap();
        let s = a.suites;
        assert!(s.memory && !s.producer && !s.latency && !s.consumer && !s.codec);
        assert_eq!(
            (a.memory_queues, a.memory_codecs, a.memory_repeat),
            (vec![2000, 100_000], vec![Codec::Lz4], Some(3))
        );
        assert!(parse(&["--memory-queues", "2000,0"]).unwrap_err().contains("--memory-queues"));
        assert!(parse(&["--timing", "instant,fast"]).unwrap_err().contains("\"fast\""));
        assert!(parse(&["--brokers", "h:9092", "--zookeeper", "h:2181", "--real-timing-repeat", "2"])
            .unwrap_err()
            .starts_with("--real-timing-repeat"));
    }

    #[test]
    fn fake_cluster_options_are_refused_with_an_external_cluster() {
        let args = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        for flag in [
            &["--timing", "kafka-0.8.2"][..],
            &["--cluster-threads", "2"],
            &["--testkit", "/bin/true"],
            &["--split-cores"],
        ] {
            let err =
                parse_args(args(&[&["--brokers", "h:9092", "--zookeeper", "h:2181"][..], flag].concat())).unwrap_err();
            assert!(err.starts_with(flag[0]) && err.contains("external cluster"), "{err}");
        }
    }
}

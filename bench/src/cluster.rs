//! The cluster under the clients: by default the workspace's `gregor-testkit` binary (a real
//! ZooKeeper and a 3-broker FakeCluster) in a process of its own, so the brokers' CPU is never
//! counted against a client; or an external cluster (`--brokers`/`--zookeeper`, or
//! `GREGOR_BROKERS`/`GREGOR_ZOOKEEPER`) that the bench connects to and never starts or stops.
//! Topics are created the way Kafka 0.8.2's admin tool does it (the assignment written to
//! /brokers/topics/T in ZooKeeper; the cluster's controller does the rest: on an external
//! cluster through gregor-admin, as `kafka-topics.sh --create --replica-assignment`) and
//! verified with gregor's simple consumer (the sum of the high watermarks).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gregor_admin::Admin;
use gregor_net::{BrokerConnection, ConnectionConfig};
use gregor_protocol::messages::{
    CreatableReplicaAssignment, CreatableTopic, CreateTopicsRequest, DeleteTopicState, DeleteTopicsRequest,
};
use gregor_simple_consumer::{SimpleConsumer, SimpleConsumerConfig};
use gregor_zk::payloads::TopicAssignment;
use gregor_zk::{paths, CreateMode, ZkClient};

/// A cluster the bench uses but does not start: `--brokers`/`--zookeeper`, or the
/// `GREGOR_BROKERS`/`GREGOR_ZOOKEEPER` pair the examples and end-to-end tests honour.
#[derive(Debug, Clone)]
pub struct External {
    /// `metadata.broker.list`: `host:port[,host:port...]`
    pub brokers: String,
    /// `zookeeper.connect`: `host:port[,host:port...][/chroot]`
    pub zookeeper: String,
    /// Where they were named, for messages and the report.
    pub source: &'static str,
}

/// The `gregor-testkit` process the bench started.
struct Process {
    child: Child,
    pid: u32,
    log: PathBuf,
}

pub struct Cluster {
    /// The testkit process, `None` for an external cluster (nothing of it runs here).
    process: Option<Process>,
    pub brokers: String,
    pub zookeeper: String,
    pub broker_ids: Vec<i32>,
    /// The cluster's ZooKeeper (None: a modern cluster, which has none).
    zk: Option<ZkClient>,
    /// On an external cluster, topics are created and deleted through gregor-admin.
    admin: Option<Admin>,
    /// On a modern cluster, topics are created and deleted through this connection to a
    /// broker (CreateTopics, DeleteTopics), as `kafka-topics.sh --bootstrap-server` does.
    kraft: Option<BrokerConnection>,
    /// On an external cluster: why deletions are no longer waited for (a topic outlived its
    /// deletion request: the brokers probably run without `delete.topic.enable=true`).
    deletion_off: RefCell<Option<String>>,
}

/// gregor's simple consumer on `brokers`: the bench's view of a cluster's metadata and offsets.
fn consumer_of(brokers: &str) -> Result<SimpleConsumer, String> {
    let config = SimpleConsumerConfig::builder()
        .metadata_broker_list(brokers.to_owned())
        .client_id("gregor-bench-verify")
        .build()
        .map_err(|e| e.to_string())?;
    SimpleConsumer::new(config).map_err(|e| e.to_string())
}

/// The broker ids the brokers at `brokers` name in a Metadata answer, sorted.
async fn metadata_broker_ids(brokers: &str) -> Result<Vec<i32>, String> {
    let consumer = consumer_of(brokers)?;
    let answered = consumer.metadata().refresh(&[]).await;
    let mut ids: Vec<i32> = consumer.metadata().snapshot().brokers().map(|b| b.id).collect();
    consumer.close().await;
    answered.map_err(|e| chain(&e))?;
    ids.sort_unstable();
    Ok(ids)
}

/// An error and its sources, `a: b: c` (gregor's errors do not repeat their sources).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

/// The `gregor-testkit` binary: the one given, or the workspace's release build (built now,
/// `cargo build --release -p gregor-testkit --bin gregor-testkit`, a no-op when up to date).
pub fn testkit_binary(given: Option<PathBuf>) -> Result<PathBuf, String> {
    if let Some(p) = given {
        return if p.is_file() { Ok(p) } else { Err(format!("--testkit {}: no such file", p.display())) };
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("bench/ has a parent").to_path_buf();
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let bin = target.join("release").join("gregor-testkit");
    eprintln!(
        "building the cluster: cargo build --release -p gregor-testkit --bin gregor-testkit (in {})",
        root.display()
    );
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "-p", "gregor-testkit", "--bin", "gregor-testkit", "--manifest-path"])
        .arg(root.join("Cargo.toml"))
        .status();
    match status {
        Ok(s) if s.success() => {}
        other if bin.is_file() => {
            eprintln!("warning: building gregor-testkit failed ({other:?}); using {}", bin.display())
        }
        other => return Err(format!("building gregor-testkit failed: {other:?}")),
    }
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!("{} not found after the build", bin.display()))
    }
}

impl Cluster {
    /// Starts `gregor-testkit --brokers N --delete-topic-enable --timing T` (on a modern
    /// profile `gregor-testkit --modern --brokers N --timing T`) and waits for its ready line;
    /// `threads`: its runtime's worker threads (`TOKIO_WORKER_THREADS`), tokio's default when
    /// None; `timing`: the profile (`plan::ALL_PROFILES`), whose brokers answer at once or take
    /// the time a real broker under load takes (`plan::broker_timing`); `cpus`: the CPUs it
    /// runs on (`--split-cores`), else wherever the system puts it.
    pub async fn start(
        binary: &Path,
        brokers: usize,
        threads: Option<usize>,
        cpus: Option<&[usize]>,
        timing: &str,
    ) -> Result<Cluster, String> {
        let log = std::env::temp_dir().join(format!("gregor-bench-testkit-{}-{timing}.log", std::process::id()));
        let log_file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let modern = crate::plan::is_modern(timing);
        let brokers_arg = brokers.to_string();
        let broker_timing = crate::plan::broker_timing(timing);
        let args: Vec<&str> = if modern {
            vec!["--modern", "--brokers", &brokers_arg, "--timing", broker_timing]
        } else {
            vec!["--brokers", &brokers_arg, "--delete-topic-enable", "--timing", broker_timing]
        };
        let mut command = Command::new(binary);
        crate::cores::pin_command(&mut command, cpus);
        let mut child = command
            .args(&args)
            .envs(threads.map(|n| ("TOKIO_WORKER_THREADS", n.to_string())))
            .stdin(Stdio::piped()) // it runs until its stdin closes: it dies with us
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("{}: {e}", binary.display()))?;
        let pid = child.id();
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .map_err(|_| format!("gregor-testkit printed no ready line in 60 s; see {}", log.display()))?;
        let mut brokers_s = None;
        let mut zookeeper = None;
        for part in line.split_whitespace() {
            if let Some(v) = part.strip_prefix("brokers=") {
                brokers_s = Some(v.to_owned());
            } else if let Some(v) = part.strip_prefix("zookeeper=") {
                zookeeper = Some(v.to_owned());
            }
        }
        if let (true, Some(brokers_s)) = (modern, &brokers_s) {
            let process = Process { child, pid, log };
            return Cluster::modern(process, brokers_s, brokers).await;
        }
        let (Some(brokers_s), Some(zookeeper)) = (brokers_s, zookeeper) else {
            let _ = child.kill();
            return Err(format!("unexpected ready line {line:?}; see {}", log.display()));
        };
        let zk = ZkClient::connect(&zookeeper, Duration::from_secs(10)).await.map_err(|e| format!("zookeeper: {e}"))?;
        let mut broker_ids: Vec<i32> = zk
            .children("/brokers/ids")
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or_default()
            .iter()
            .filter_map(|s| s.parse().ok())
            .collect();
        broker_ids.sort_unstable();
        if broker_ids.len() != brokers {
            return Err(format!("{} brokers registered, wanted {brokers}", broker_ids.len()));
        }
        Ok(Cluster {
            process: Some(Process { child, pid, log }),
            brokers: brokers_s,
            zookeeper,
            broker_ids,
            zk: Some(zk),
            admin: None,
            kraft: None,
            deletion_off: RefCell::new(None),
        })
    }

    /// The modern testkit just started (`process`, listening at `brokers_s`): its brokers from
    /// a Metadata request, a connection for the topic admin requests.
    async fn modern(mut process: Process, brokers_s: &str, brokers: usize) -> Result<Cluster, String> {
        let first = brokers_s.split(',').next().unwrap_or_default().to_owned();
        let kraft = match BrokerConnection::connect(first.as_str(), &ConnectionConfig::default()).await {
            Ok(c) => c,
            Err(e) => {
                let _ = process.child.kill();
                return Err(format!("connect to the modern cluster at {first}: {}", chain(&e)));
            }
        };
        let broker_ids = metadata_broker_ids(brokers_s)
            .await
            .map_err(|e| format!("no broker of the modern cluster at {brokers_s} answered a Metadata request: {e}"))?;
        if broker_ids.len() != brokers {
            let _ = process.child.kill();
            return Err(format!("{} brokers in the modern cluster's metadata, wanted {brokers}", broker_ids.len()));
        }
        Ok(Cluster {
            process: Some(process),
            brokers: brokers_s.to_owned(),
            zookeeper: String::new(),
            broker_ids,
            zk: None,
            admin: None,
            kraft: Some(kraft),
            deletion_off: RefCell::new(None),
        })
    }

    /// Connects to an external cluster: its ZooKeeper (the broker ids registered at
    /// `/brokers/ids`) and its brokers (a Metadata request, whose brokers must be the ones
    /// ZooKeeper has registered: the two options name one cluster). Starts nothing.
    pub async fn connect(external: &External, rf: usize) -> Result<Cluster, String> {
        let (brokers, zookeeper, source) = (&external.brokers, &external.zookeeper, external.source);
        let zk = ZkClient::connect(zookeeper, Duration::from_secs(10))
            .await
            .map_err(|e| format!("cannot reach ZooKeeper at {zookeeper} ({source}): {}", chain(&e)))?;
        let admin = Admin::new(zk.clone());
        let registered = admin
            .list_brokers()
            .await
            .map_err(|e| format!("reading /brokers/ids from ZooKeeper at {zookeeper}: {}", chain(&e)))?;
        let broker_ids: Vec<i32> = registered.brokers.iter().map(|b| b.id).collect();
        if broker_ids.is_empty() {
            let _ = admin.close().await;
            return Err(format!(
                "ZooKeeper at {zookeeper} ({source}) has no broker registered at /brokers/ids: \
                 is it the cluster's zookeeper.connect, chroot included?"
            ));
        }
        let cluster = Cluster {
            process: None,
            brokers: brokers.clone(),
            zookeeper: zookeeper.clone(),
            broker_ids,
            zk: Some(zk),
            admin: Some(admin),
            kraft: None,
            deletion_off: RefCell::new(None),
        };
        if let Err(e) = cluster.check_brokers(source, rf).await {
            cluster.close_sessions().await;
            return Err(e);
        }
        Ok(cluster)
    }

    /// The brokers answer a Metadata request with the broker ids ZooKeeper has registered, and
    /// there are enough of them for the replication factor.
    async fn check_brokers(&self, source: &str, rf: usize) -> Result<(), String> {
        let (brokers, zookeeper) = (&self.brokers, &self.zookeeper);
        let metadata_ids = metadata_broker_ids(brokers)
            .await
            .map_err(|e| format!("no broker of {brokers} ({source}) answered a Metadata request: {e}"))?;
        if metadata_ids != self.broker_ids {
            return Err(format!(
                "the brokers at {brokers} report broker ids {metadata_ids:?} but ZooKeeper at {zookeeper} has \
                 {:?} registered: do the two name the same cluster?",
                self.broker_ids
            ));
        }
        if rf > self.broker_ids.len() {
            return Err(format!(
                "--replication-factor {rf} needs {rf} brokers; the cluster has {} ({:?})",
                self.broker_ids.len(),
                self.broker_ids
            ));
        }
        Ok(())
    }

    /// Whether the bench started this cluster (the FakeCluster) or uses an external one.
    pub fn is_external(&self) -> bool {
        self.process.is_none()
    }

    /// One line for the log: where the cluster is and what it is.
    pub fn describe(&self) -> String {
        match &self.process {
            Some(p) => {
                let zookeeper =
                    if self.zk.is_some() { format!("zookeeper {}", self.zookeeper) } else { "no ZooKeeper".into() };
                format!("{} ({zookeeper}, pid {}, log {})", self.brokers, p.pid, p.log.display())
            }
            None => {
                format!("external, {} (zookeeper {}, broker ids {:?})", self.brokers, self.zookeeper, self.broker_ids)
            }
        }
    }

    /// On an external cluster whose topics outlived their deletion: what the report should say.
    pub fn deletion_note(&self) -> Option<String> {
        self.deletion_off.borrow().clone()
    }

    /// Creates `topic` with `partitions` partitions of `rf` replicas spread round robin over
    /// the brokers (as kafka-topics.sh does) and waits until each has a leader.
    /// On an external cluster the same assignment is written through gregor-admin
    /// (`create_topic_with_assignment`, as `kafka-topics.sh --create --replica-assignment`:
    /// `/config/topics/T`, then `/brokers/topics/T`), so leaders are spread as on the
    /// FakeCluster, not from a random start broker.
    pub async fn create_topic(&self, topic: &str, partitions: i32, rf: usize) -> Result<(), String> {
        let n = self.broker_ids.len();
        let assignment: BTreeMap<i32, Vec<i32>> =
            (0..partitions).map(|p| (p, (0..rf).map(|r| self.broker_ids[(p as usize + r) % n]).collect())).collect();
        match (&self.admin, &self.zk, &self.kraft) {
            (_, _, Some(kraft)) => {
                let topic_request = CreatableTopic {
                    name: topic.to_owned(),
                    num_partitions: -1,
                    replication_factor: -1,
                    assignments: assignment
                        .into_iter()
                        .map(|(partition_index, broker_ids)| CreatableReplicaAssignment {
                            partition_index,
                            broker_ids,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                };
                let request =
                    CreateTopicsRequest { topics: vec![topic_request], timeout_ms: 30_000, ..Default::default() };
                let version = kraft.version_for::<CreateTopicsRequest>(0..=7).map_err(|e| chain(&e))?;
                let answer =
                    kraft.request(version, &request).await.map_err(|e| format!("create {topic}: {}", chain(&e)))?;
                if let Some(t) = answer.topics.iter().find(|t| t.error_code != 0) {
                    return Err(format!("create {topic}: error {} {:?}", t.error_code, t.error_message));
                }
            }
            (Some(admin), _, _) => {
                let replicas: Vec<Vec<i32>> = assignment.into_values().collect();
                admin
                    .create_topic_with_assignment(topic, &replicas, [] as [(&str, &str); 0])
                    .await
                    .map_err(|e| format!("create {topic} on {}: {}", self.zookeeper, chain(&e)))?;
            }
            (None, Some(zk), None) => {
                zk.create_all(
                    &paths::topic(topic),
                    &TopicAssignment::new(assignment).to_json(),
                    CreateMode::Persistent,
                )
                .await
                .map_err(|e| format!("create {topic}: {e}"))?;
            }
            (None, None, None) => unreachable!("a cluster has ZooKeeper or a modern broker connection"),
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.leaders(topic, partitions).await {
                Ok(()) => return Ok(()),
                Err(e) if Instant::now() > deadline => return Err(format!("{topic}: no leaders after 30 s: {e}")),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    async fn leaders(&self, topic: &str, partitions: i32) -> Result<(), String> {
        let consumer = self.consumer()?;
        let got = consumer.partitions(topic).await.map_err(|e| e.to_string())?;
        if got.len() != partitions as usize {
            return Err(format!("{} partitions", got.len()));
        }
        for p in got {
            consumer.leader(topic, p).await.map_err(|e| e.to_string())?;
        }
        consumer.close().await;
        Ok(())
    }

    fn consumer(&self) -> Result<SimpleConsumer, String> {
        consumer_of(&self.brokers)
    }

    /// The topic's high watermarks (log end offsets), per partition.
    pub async fn high_watermarks(&self, topic: &str, partitions: i32) -> Result<Vec<i64>, String> {
        let consumer = self.consumer()?;
        let mut out = Vec::new();
        for p in 0..partitions {
            out.push(consumer.latest_offset(topic, p).await.map_err(|e| format!("{topic}/{p}: {e}"))?);
        }
        consumer.close().await;
        Ok(out)
    }

    /// Asks the controller to delete the topic (so the cluster's memory does not grow run
    /// after run); best effort.
    /// Waits (up to 10 s) until the controller has done it, so the deletion does not run
    /// during the next client's run. On a loaded machine the controller now and then does not
    /// act on a deletion request (seen twice in ~100 runs); a request still there after 2 s is
    /// made again (its znode deleted and recreated, a new child event).
    ///
    /// On an external cluster the deletion is asked for through gregor-admin (`delete_topic`, as
    /// `kafka-topics.sh --delete`). Whether the brokers act on it (`delete.topic.enable`) is not
    /// in ZooKeeper: the first topic still there after 10 s turns the waiting off for the rest
    /// of the run (later topics are still marked; every run has a topic name of its own), and
    /// the report says so.
    pub async fn delete_topic(&self, topic: &str) {
        if let Some(kraft) = &self.kraft {
            // a KRaft controller deletes the topic before it answers
            let answer = match kraft.version_for::<DeleteTopicsRequest>(0..=6) {
                Ok(v) => {
                    // by name: in `topics` from v6, in `topic_names` before
                    let (topics, topic_names) = if v >= 6 {
                        (vec![DeleteTopicState { name: Some(topic.to_owned()), ..Default::default() }], vec![])
                    } else {
                        (vec![], vec![topic.to_owned()])
                    };
                    let request = DeleteTopicsRequest { topics, topic_names, timeout_ms: 10_000, ..Default::default() };
                    kraft.request(v, &request).await
                }
                Err(e) => Err(e),
            };
            match answer {
                Ok(a) => {
                    if let Some(r) = a.responses.iter().find(|r| r.error_code != 0) {
                        eprintln!("warning: delete {topic}: error {}", r.error_code);
                    }
                }
                Err(e) => eprintln!("warning: delete {topic}: {}", chain(&e)),
            }
            return;
        }
        let Some(zk) = &self.zk else { return };
        let request = paths::delete_topic(topic);
        let marked = match &self.admin {
            Some(admin) => admin.delete_topic(topic).await.map(drop).map_err(|e| chain(&e)),
            None => zk.create_all(&request, b"", CreateMode::Persistent).await.map(drop).map_err(|e| e.to_string()),
        };
        if let Err(e) = marked {
            eprintln!("warning: delete {topic}: {e}");
            return;
        }
        if self.deletion_off.borrow().is_some() {
            return;
        }
        let start = Instant::now();
        let mut poked = false;
        while start.elapsed() < Duration::from_secs(10) {
            match zk.exists(&paths::topic(topic)).await {
                Ok(None) => return,
                Ok(Some(_)) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(e) => {
                    eprintln!("warning: delete {topic}: {e}");
                    return;
                }
            }
            if !poked && start.elapsed() > Duration::from_secs(2) {
                poked = true;
                eprintln!("note: topic {topic} not deleted 2 s after the request; asking again");
                let _ = zk.delete(&request, None).await;
                let _ = zk.create_all(&request, b"", CreateMode::Persistent).await;
            }
        }
        eprintln!("warning: topic {topic} still exists 10 s after its deletion was asked for");
        if self.is_external() {
            let note = format!(
                "topic {topic} still existed 10 s after it was marked for deletion (does the external \
                 cluster run with delete.topic.enable=true?): later topics were marked for deletion but \
                 not waited for, and each run wrote a topic of its own (bench-STAMP-SEQ-...), which may \
                 still be on the cluster"
            );
            eprintln!("note: {note}");
            *self.deletion_off.borrow_mut() = Some(note);
        }
    }

    /// CPU seconds (user + system) the cluster process has used so far; `None` for an external
    /// cluster (not a process of ours: it may not even run on this machine).
    pub fn cpu_seconds(&self) -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.process.as_ref()?.pid)).ok()?;
        // fields after the ")" closing the command name; utime and stime are fields 14 and 15
        let rest = &stat[stat.rfind(')')? + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let utime: f64 = fields.get(11)?.parse().ok()?;
        let stime: f64 = fields.get(12)?.parse().ok()?;
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        Some((utime + stime) / hz)
    }

    /// The cluster's resident set size now, in KiB; `None` for an external cluster.
    pub fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.process.as_ref()?.pid)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }

    async fn close_sessions(&self) {
        match &self.admin {
            Some(admin) => {
                let _ = admin.close().await;
            }
            None => {
                if let Some(zk) = &self.zk {
                    let _ = zk.close().await;
                }
                if let Some(kraft) = &self.kraft {
                    kraft.close().await;
                }
            }
        }
    }

    /// Closes the ZooKeeper session; stops the testkit process if the bench started it (an
    /// external cluster is left running).
    pub async fn stop(mut self) {
        self.close_sessions().await;
        let Some(mut process) = self.process.take() else { return };
        drop(process.child.stdin.take()); // the testkit shuts down when its stdin closes
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = process.child.try_wait() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = process.child.kill();
        let _ = process.child.wait();
    }
}

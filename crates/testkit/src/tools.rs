//! Running clients gregor did not write — kcat (librdkafka) and kafka-python — from tests, in
//! child processes bounded by a timeout.
//!
//! * [`kcat_or_skip`] finds kcat (`$KCAT`, else `kcat` on `PATH`), [`run_kcat`] runs it against
//!   a bootstrap list in Kafka 0.8.2 mode ([`KCAT_0_8_2`]).
//! * [`kafka_python_or_skip`] checks once per test binary that `/usr/bin/python3` can import
//!   kafka-python (with snappy, lz4 and xxhash), [`run_python`] runs a script with it.
//! * [`run_bounded`] runs any [`Command`] with some stdin, collecting stdout and stderr, and
//!   kills it (failing the test) when it outlives its limit. The runners never block the
//!   runtime, so a [`FakeCluster`](crate::FakeCluster) on the same runtime keeps serving.
//!
//! A missing tool follows the CI rule ([`unavailable`]): normally the test prints why and
//! skips (the `*_or_skip` functions return `None`); when the `CI` environment variable is set
//! it fails, naming the apt packages to install.
//!
//! ```no_run
//! # async fn demo(cluster: &gregor_testkit::FakeCluster) {
//! use std::time::Duration;
//! use gregor_testkit::tools;
//!
//! let Some(kcat) = tools::kcat_or_skip() else { return };
//! let run = tools::run_kcat(&kcat, &cluster.bootstrap(), &["-L"], Vec::new(), Duration::from_secs(30)).await;
//! println!("{}", String::from_utf8_lossy(&run.stdout));
//! # }
//! ```

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::sync::OnceCell;

/// How to install kcat (named in the failure under CI).
pub const INSTALL_KCAT: &str = "apt-get install kcat";

/// The Python that runs kafka-python.
pub const PYTHON: &str = "/usr/bin/python3";

/// How to install kafka-python and the codecs it needs (named in the failure under CI).
pub const INSTALL_KAFKA_PYTHON: &str =
    "apt-get install python3 python3-kafka python3-snappy python3-lz4 python3-xxhash";

/// The kafka-python version the tests were written against; another one is noted on stderr.
pub const KAFKA_PYTHON_VERSION: &str = "2.0.2";

/// The options that put librdkafka (kcat) in Kafka 0.8.2 mode: no ApiVersions request, the
/// 0.8.2 feature set.
pub const KCAT_0_8_2: [&str; 4] = ["-X", "api.version.request=false", "-X", "broker.version.fallback=0.8.2"];

/// True when the `CI` environment variable is set: a missing tool then fails the test.
pub fn under_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// The CI rule for a tool that cannot run: prints `skipping: <why>` with the way to install it
/// and returns `None`, or, [`under_ci`], panics naming `install`.
pub fn unavailable<T>(why: impl Display, install: &str) -> Option<T> {
    if under_ci() {
        panic!("{why}: install it with `{install}` (CI is set, so this fails)");
    }
    eprintln!("skipping: {why}; install it with `{install}`");
    None
}

/// The kcat executable (`$KCAT` if that is a file, else `kcat` on `PATH`), or `None` (after
/// saying why) to skip; panics under CI.
pub fn kcat_or_skip() -> Option<PathBuf> {
    let found = std::env::var_os("KCAT").map(PathBuf::from).filter(|p| p.is_file()).or_else(|| {
        std::env::var_os("PATH")
            .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("kcat")).find(|p| p.is_file()))
    });
    match found {
        Some(p) => Some(p),
        None => unavailable("kcat is not installed (not on PATH)", INSTALL_KCAT),
    }
}

/// kafka-python's version when [`PYTHON`] can import `kafka, snappy, lz4.frame, xxhash`, or
/// `None` (after saying why) to skip; panics under CI. Probed once per test binary.
pub async fn kafka_python_or_skip() -> Option<String> {
    static PROBE: OnceCell<Result<String, String>> = OnceCell::const_new();
    match PROBE.get_or_init(probe_kafka_python).await {
        Ok(version) => Some(version.clone()),
        Err(why) => unavailable(why, INSTALL_KAFKA_PYTHON),
    }
}

async fn probe_kafka_python() -> Result<String, String> {
    if !Path::new(PYTHON).exists() {
        return Err(format!("{PYTHON} is missing"));
    }
    let mut cmd = Command::new(PYTHON);
    cmd.args(["-c", "import kafka, snappy, lz4.frame, xxhash; print(kafka.__version__)"]);
    let out = run_bounded("python3 -c 'import kafka ...'", cmd, Vec::new(), Duration::from_secs(30)).await;
    if !out.status.success() {
        return Err(format!(
            "`import kafka, snappy, lz4.frame, xxhash` fails under {PYTHON}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if version != KAFKA_PYTHON_VERSION {
        eprintln!("note: written against kafka-python {KAFKA_PYTHON_VERSION}, found {version}");
    }
    Ok(version)
}

/// What a finished child process left.
#[derive(Debug)]
pub struct Finished {
    /// How it exited.
    pub status: ExitStatus,
    /// Everything it wrote to stdout.
    pub stdout: Vec<u8>,
    /// Everything it wrote to stderr.
    pub stderr: Vec<u8>,
    /// From spawning it to collecting its output.
    pub elapsed: Duration,
}

/// The last `n` bytes of `bytes`, lossily as UTF-8 (for failure messages).
pub fn tail(bytes: &[u8], n: usize) -> String {
    String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(n)..]).into_owned()
}

/// Runs `cmd` with `input` on its stdin (closed after it), in a child process that is killed,
/// failing the test, when it has not exited within `limit`. `what` names it in panics. Stdin,
/// stdout and stderr are always piped; the exit status is returned, not checked.
pub async fn run_bounded(what: &str, mut cmd: Command, input: Vec<u8>, limit: Duration) -> Finished {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let writer = tokio::spawn(async move {
        // the child may exit without reading everything: a broken pipe is fine
        let _ = stdin.write_all(&input).await;
        let _ = stdin.shutdown().await;
    });
    let out = tokio::spawn(async move {
        let mut b = Vec::new();
        let _ = stdout.read_to_end(&mut b).await;
        b
    });
    let err = tokio::spawn(async move {
        let mut b = Vec::new();
        let _ = stderr.read_to_end(&mut b).await;
        b
    });
    let status = tokio::time::timeout(limit, child.wait()).await;
    writer.abort();
    let status = match status {
        Ok(status) => status.unwrap_or_else(|e| panic!("waiting for {what}: {e}")),
        Err(_) => {
            let _ = child.start_kill();
            let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
            let stderr = tokio::time::timeout(Duration::from_secs(5), err).await.ok().and_then(Result::ok);
            panic!(
                "{what} did not finish within {limit:?}: killed it; stderr tail:\n{}",
                tail(&stderr.unwrap_or_default(), 4000)
            );
        }
    };
    let collect = |h: tokio::task::JoinHandle<Vec<u8>>| async move {
        tokio::time::timeout(Duration::from_secs(5), h).await.ok().and_then(Result::ok).unwrap_or_default()
    };
    let (stdout, stderr) = (collect(out).await, collect(err).await);
    Finished { status, stdout, stderr, elapsed: started.elapsed() }
}

/// Runs `kcat -b <bootstrap> <KCAT_0_8_2> <args>` with `input` on stdin, within `limit`
/// ([`run_bounded`]), and fails unless it exits with 0.
pub async fn run_kcat(bin: &Path, bootstrap: &str, args: &[&str], input: Vec<u8>, limit: Duration) -> Finished {
    let what = format!("kcat -b {bootstrap} {} {}", KCAT_0_8_2.join(" "), args.join(" "));
    let mut cmd = Command::new(bin);
    cmd.arg("-b").arg(bootstrap).args(KCAT_0_8_2).args(args);
    let run = run_bounded(&what, cmd, input, limit).await;
    assert!(run.status.success(), "{what} exited with {}; stderr:\n{}", run.status, tail(&run.stderr, 4000));
    run
}

/// Runs `/usr/bin/python3 -u <script> <args>` (with `PYTHONDONTWRITEBYTECODE=1` and
/// `PYTHONHASHSEED=0`) and an empty stdin, within `limit` ([`run_bounded`]). Fails with the
/// tails of its output unless it exits with 0; prints its stderr when there is any.
pub async fn run_python(script: &Path, args: &[&str], limit: Duration) -> Finished {
    let name = script.file_name().map_or_else(|| script.display().to_string(), |n| n.to_string_lossy().into_owned());
    let what = format!("{PYTHON} {name} {}", args.join(" "));
    let mut cmd = Command::new(PYTHON);
    cmd.arg("-u").arg(script).args(args).env("PYTHONDONTWRITEBYTECODE", "1").env("PYTHONHASHSEED", "0");
    let run = run_bounded(&what, cmd, Vec::new(), limit).await;
    assert!(
        run.status.success(),
        "{what} failed ({});\n--- stdout tail\n{}\n--- stderr tail\n{}",
        run.status,
        tail(&run.stdout, 4000),
        tail(&run.stderr, 16000)
    );
    if !run.stderr.is_empty() {
        eprintln!("{what} stderr:\n{}", tail(&run.stderr, 4000));
    }
    run
}

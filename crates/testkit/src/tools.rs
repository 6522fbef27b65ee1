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
//! # A missing program fails the test
//!
//! A test that needs an external program (kcat, kafka-python, or ZooKeeper through
//! [`ZooKeeperServer::shared_or_skip`](crate::zookeeper::ZooKeeperServer::shared_or_skip))
//! fails when the program is missing, naming the `apt-get install` command that fixes it, so a
//! suite never passes having run less than it says. [`SkipRule`] decides:
//!
//! | program   | `CI` set | `GREGOR_ALLOW_SKIP=1` | the test            |
//! |-----------|----------|-----------------------|---------------------|
//! | installed | any      | any                   | runs                |
//! | missing   | yes      | any                   | fails               |
//! | missing   | no       | no                    | fails               |
//! | missing   | no       | yes                   | skips, saying why   |
//!
//! Skipping is an explicit opt-in of a developer's machine ([`ALLOW_SKIP_ENV`]); under `CI` it
//! is never honoured, since a skip there would be a silent pass. The `*_or_skip` functions
//! return `None` only when the rule says skip; the caller then returns early.
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

use std::ffi::OsStr;
use std::fmt::Display;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use gregor_protocol::Compression;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::sync::OnceCell;

/// How to install kcat (named when it is missing).
pub const INSTALL_KCAT: &str = "apt-get install kcat";

/// The Python that runs kafka-python.
pub const PYTHON: &str = "/usr/bin/python3";

/// How to install kafka-python and the codecs it needs (named when it is missing).
pub const INSTALL_KAFKA_PYTHON: &str =
    "apt-get install python3 python3-kafka python3-snappy python3-lz4 python3-xxhash";

/// Every compression codec of Kafka 0.8.2 with the name kcat (`-z`) and kafka-python
/// (`compression_type`) give it.
pub const CODECS: [(&str, Compression); 4] = [
    ("none", Compression::None),
    ("gzip", Compression::Gzip),
    ("snappy", Compression::Snappy),
    ("lz4", Compression::Lz4),
];

/// The kafka-python version the tests were written against; another one is noted on stderr.
pub const KAFKA_PYTHON_VERSION: &str = "2.0.2";

/// The options that put librdkafka (kcat) in Kafka 0.8.2 mode: no ApiVersions request, the
/// 0.8.2 feature set.
pub const KCAT_0_8_2: [&str; 4] = ["-X", "api.version.request=false", "-X", "broker.version.fallback=0.8.2"];

/// The environment variable CI systems set. Under it a missing program always fails the test,
/// whatever [`ALLOW_SKIP_ENV`] says.
pub const CI_ENV: &str = "CI";

/// The environment variable with which a developer lets the tests whose external program is
/// missing skip (print why and pass) instead of failing: `GREGOR_ALLOW_SKIP=1` (`true` and
/// `yes` count too; any other value, or none, does not). Ignored under [`CI_ENV`].
pub const ALLOW_SKIP_ENV: &str = "GREGOR_ALLOW_SKIP";

/// What a test does about one external program; decided by [`SkipRule::verdict`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The program is there: the test runs.
    Run,
    /// The program is missing: the test fails, naming the command that installs it.
    Fail,
    /// The program is missing and the developer opted in to skipping: the test says why and
    /// returns early.
    Skip,
}

/// The environment's part of the rule for a missing program (see the [module docs](self)): is
/// this CI, and did the developer opt in to skipping?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SkipRule {
    /// [`CI_ENV`] is set (to anything).
    pub ci: bool,
    /// [`ALLOW_SKIP_ENV`] is set to `1`, `true` or `yes`.
    pub allow_skip: bool,
}

impl SkipRule {
    /// The rule of this process's environment.
    pub fn from_env() -> SkipRule {
        SkipRule::from_vars(std::env::var_os(CI_ENV).as_deref(), std::env::var_os(ALLOW_SKIP_ENV).as_deref())
    }

    /// The rule for these values of [`CI_ENV`] and [`ALLOW_SKIP_ENV`] (`None`: unset).
    pub fn from_vars(ci: Option<&OsStr>, allow_skip: Option<&OsStr>) -> SkipRule {
        let opted_in = allow_skip
            .and_then(OsStr::to_str)
            .is_some_and(|v| ["1", "true", "yes"].iter().any(|yes| v.trim().eq_ignore_ascii_case(yes)));
        SkipRule { ci: ci.is_some(), allow_skip: opted_in }
    }

    /// What a test does when its program is (`installed`) or is not there: run when it is;
    /// when it is not, skip only if the developer opted in and this is not CI, else fail.
    pub fn verdict(self, installed: bool) -> Verdict {
        match (installed, self.ci, self.allow_skip) {
            (true, _, _) => Verdict::Run,
            (false, false, true) => Verdict::Skip,
            (false, _, _) => Verdict::Fail,
        }
    }

    /// What a test that cannot run says, on stderr when it skips or as its panic message when
    /// it fails: `why` it cannot run, the `install` command, and how the rule applied.
    pub fn message(self, why: impl Display, install: &str) -> String {
        match self.verdict(false) {
            Verdict::Skip => format!(
                "skipping: {why}; install it with `{install}` (skipped because {ALLOW_SKIP_ENV} is set: this \
                 test did not run)"
            ),
            _ if self.ci => format!(
                "{why}: install it with `{install}` ({CI_ENV} is set, so a missing program fails the test and \
                 {ALLOW_SKIP_ENV} is ignored)"
            ),
            _ => format!(
                "{why}: install it with `{install}` (or set {ALLOW_SKIP_ENV}=1 to skip the tests that need it, \
                 never under {CI_ENV})"
            ),
        }
    }

    /// Applies the rule to a program that cannot run: prints [`message`](Self::message) to
    /// stderr (past the test harness's capture, so the skip shows) and returns `None` when it
    /// says skip.
    ///
    /// # Panics
    ///
    /// With [`message`](Self::message) when the rule says fail.
    pub fn unavailable<T>(self, why: impl Display, install: &str) -> Option<T> {
        let message = self.message(why, install);
        match self.verdict(false) {
            Verdict::Skip => {
                // straight to stderr, not eprintln!: the test harness captures that, and a
                // skipped test must not pass unseen
                let _ = writeln!(std::io::stderr(), "{message}");
                None
            }
            Verdict::Run | Verdict::Fail => panic!("{message}"),
        }
    }
}

/// True when the `CI` environment variable is set: a missing tool then fails the test even
/// with [`ALLOW_SKIP_ENV`].
pub fn under_ci() -> bool {
    SkipRule::from_env().ci
}

/// The rule for a tool that cannot run, in this process's environment
/// ([`SkipRule::unavailable`]): panics naming `install`, or, when the developer set
/// [`ALLOW_SKIP_ENV`] outside CI, prints `skipping: <why>` and returns `None`.
///
/// # Panics
///
/// Unless the rule says skip.
pub fn unavailable<T>(why: impl Display, install: &str) -> Option<T> {
    SkipRule::from_env().unavailable(why, install)
}

/// The kcat executable (`$KCAT` if that is a file, else `kcat` on `PATH`), or `None` (after
/// saying why) when it is missing and the [rule](SkipRule) says skip.
///
/// # Panics
///
/// When kcat is missing and the rule says fail (always under `CI`, and unless
/// [`ALLOW_SKIP_ENV`] is set).
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
/// `None` (after saying why) when it cannot and the [rule](SkipRule) says skip. Probed once
/// per test binary.
///
/// # Panics
///
/// When kafka-python cannot run and the rule says fail (always under `CI`, and unless
/// [`ALLOW_SKIP_ENV`] is set).
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

#[cfg(test)]
mod tests {
    use super::*;

    const INSTALL: &str = "apt-get install kcat";

    fn rule(ci: bool, allow_skip: bool) -> SkipRule {
        SkipRule { ci, allow_skip }
    }

    #[test]
    fn the_rule_runs_fails_or_skips() {
        // (CI set, GREGOR_ALLOW_SKIP set, installed) -> verdict
        let table = [
            ((false, false, true), Verdict::Run),
            ((false, true, true), Verdict::Run),
            ((true, false, true), Verdict::Run),
            ((true, true, true), Verdict::Run),
            ((false, false, false), Verdict::Fail),
            ((true, false, false), Verdict::Fail),
            ((true, true, false), Verdict::Fail),
            ((false, true, false), Verdict::Skip),
        ];
        for ((ci, allow_skip, installed), want) in table {
            assert_eq!(
                rule(ci, allow_skip).verdict(installed),
                want,
                "ci={ci} allow_skip={allow_skip} installed={installed}"
            );
        }
    }

    #[test]
    fn the_rule_reads_the_two_variables() {
        let os = |s: &'static str| Some(OsStr::new(s));
        assert_eq!(SkipRule::from_vars(None, None), rule(false, false));
        assert_eq!(SkipRule::from_vars(os("true"), None), rule(true, false));
        assert_eq!(SkipRule::from_vars(os(""), None), rule(true, false), "CI set to anything is CI");
        for yes in ["1", "true", "TRUE", "yes", " 1 "] {
            assert_eq!(SkipRule::from_vars(None, os(yes)), rule(false, true), "{yes:?}");
        }
        for no in ["", "0", "false", "no", "2", "skip"] {
            assert_eq!(SkipRule::from_vars(None, os(no)), rule(false, false), "{no:?}");
        }
        assert_eq!(SkipRule::from_vars(os("1"), os("1")), rule(true, true));
        assert_eq!(SkipRule::from_vars(os("1"), os("1")).verdict(false), Verdict::Fail);
    }

    #[test]
    fn every_message_names_the_install_command_and_how_the_rule_applied() {
        let why = "kcat is not installed (not on PATH)";
        let fail = rule(false, false).message(why, INSTALL);
        assert!(fail.starts_with(why) && fail.contains("`apt-get install kcat`"), "{fail}");
        assert!(fail.contains("set GREGOR_ALLOW_SKIP=1 to skip"), "{fail}");
        let ci = rule(true, true).message(why, INSTALL);
        assert!(ci.contains("`apt-get install kcat`") && ci.contains("CI is set"), "{ci}");
        assert!(ci.contains("GREGOR_ALLOW_SKIP is ignored"), "{ci}");
        let skip = rule(false, true).message(why, INSTALL);
        assert!(skip.starts_with("skipping: kcat is not installed"), "{skip}");
        assert!(skip.contains("`apt-get install kcat`") && skip.contains("did not run"), "{skip}");
    }

    #[test]
    fn unavailable_panics_unless_the_rule_says_skip() {
        assert_eq!(rule(false, true).unavailable::<u8>("gone", INSTALL), None);
        for (ci, allow_skip) in [(false, false), (true, false), (true, true)] {
            let failed = std::panic::catch_unwind(|| rule(ci, allow_skip).unavailable::<u8>("gone", INSTALL));
            let message = failed.expect_err("a missing program fails the test");
            let text = message.downcast_ref::<String>().expect("a formatted panic message");
            assert!(text.starts_with("gone: install it with `apt-get install kcat`"), "{text}");
        }
    }
}

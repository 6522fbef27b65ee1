//! Helpers shared by the CLI's integration tests: a FakeCluster per test and running the
//! `gregor` binary (or another program) with input, bounded in time.

#![allow(dead_code, unreachable_pub)]

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use gregor_testkit::{support, tools, BrokerConfig, FakeCluster};
use tokio::process::{Child, Command};

/// The longest any one command may take.
pub const LIMIT: Duration = Duration::from_secs(30);

/// A 3-broker cluster in a chroot of its own with auto-creation off (so an unknown topic stays
/// unknown) and `configure` applied, or `None` to skip (only with `GREGOR_ALLOW_SKIP=1`, never
/// under CI).
pub async fn cluster_with(test: &str, configure: impl FnOnce(&mut BrokerConfig)) -> Option<FakeCluster> {
    support::cluster(test).configure(|c| c.auto_create_topics_enable = false).configure(configure).start().await
}

/// What a finished command left.
#[derive(Debug)]
pub struct Run {
    pub what: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Asserts exit 0 and returns stdout.
    pub fn ok(&self) -> &str {
        assert!(self.status.success(), "{} failed ({}): {}", self.what, self.status, self.stderr);
        &self.stdout
    }

    /// Asserts exit 0 and parses stdout as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.ok()).unwrap_or_else(|e| panic!("{}: not JSON ({e}): {}", self.what, self.stdout))
    }

    /// Asserts exit `code` and that stderr mentions `needle`.
    pub fn fails(&self, code: i32, needle: &str) {
        assert_eq!(self.code(), Some(code), "{}: exit code; stderr: {}", self.what, self.stderr);
        assert!(self.stderr.contains(needle), "{}: stderr lacks {needle:?}: {}", self.what, self.stderr);
    }

    /// As [`Run::fails`], and the error is the first line of stderr.
    pub fn fails_with_error_line(&self, code: i32, needle: &str) {
        self.fails(code, needle);
        assert!(self.stderr.starts_with("error: "), "{}: {}", self.what, self.stderr);
    }
}

/// Starts `program args` with piped stdio, killed when dropped.
pub fn spawn(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Child {
    Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the program starts")
}

/// Runs `program args` with `input` on stdin (closed after it), within [`LIMIT`] (killed and
/// failing the test after it).
pub async fn run_program(program: impl AsRef<std::ffi::OsStr>, args: &[&str], input: &[u8]) -> Run {
    let what = format!("{} {}", program.as_ref().to_string_lossy(), args.join(" "));
    let mut command = Command::new(program);
    command.args(args);
    let out = tools::run_bounded(&what, command, input.to_vec(), LIMIT).await;
    Run {
        what,
        status: out.status,
        stdout: String::from_utf8(out.stdout).expect("gregor prints UTF-8"),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

//! A real ZooKeeper server for tests: Debian's ZooKeeper 3.8, launched on a free loopback port
//! with a throw-away data directory.
//!
//! [`ZooKeeperServer::start`] runs
//! `java -cp /usr/share/java/zookeeper.jar org.apache.zookeeper.server.quorum.QuorumPeerMain
//! <tmp>/zoo.cfg` (the jar's manifest brings its dependencies) and returns once the server
//! answers the `ruok` four-letter word with `imok`, `srvr` shows it serving and `conf` shows
//! *our* data directory (so a stranger listening on the same port is never mistaken for it).
//! Dropping the server kills it and removes the directory.
//!
//! A test binary normally shares one server, [`ZooKeeperServer::shared`], and gives every test
//! its own subtree with [`ZooKeeperServer::unique_chroot`]:
//!
//! ```no_run
//! use gregor_testkit::zookeeper::ZooKeeperServer;
//!
//! // One server per test binary. A missing install fails the test, naming the apt-get command,
//! // unless the developer set GREGOR_ALLOW_SKIP=1 outside CI (see `tools::SkipRule`).
//! let Some(zk) = ZooKeeperServer::shared_or_skip() else { return };
//! let connect = zk.unique_chroot("my_test"); // "127.0.0.1:PORT/gregor-test/my_test-PID-N"
//! # let _ = connect;
//! ```
//!
//! # Cleanup when the test process dies
//!
//! Static destructors do not run, so the shared server cannot rely on `Drop`. The JVM is
//! started under a tiny `sh` that also runs a watcher reading a pipe whose only write end is
//! held by this process. When the test process exits — normally, by panic, or by `SIGKILL` —
//! the kernel closes the pipe, the watcher sees end-of-file, kills the JVM with `SIGKILL` and
//! removes the data directory. [`ZooKeeperServer::stop`] writes a line to the pipe instead,
//! which kills the JVM but keeps the directory for [`ZooKeeperServer::restart`].
//!
//! # Outages and session expiry
//!
//! [`stop`](ZooKeeperServer::stop) and [`restart`](ZooKeeperServer::restart) (same port, same
//! data directory, so sessions and znodes survive) simulate a ZooKeeper outage. To expire a
//! session for real, route the client through a [`TcpProxy`](crate::proxy::TcpProxy) and stall
//! it past the session timeout.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::tools::SkipRule;

/// Where Debian's `zookeeper` package installs the server jar.
pub const DEFAULT_ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";

/// The SLF4J binding added to the class path when present, so the server's log reaches
/// [`ZooKeeperServer::log_path`] (Debian's jar brings only `slf4j-api`, which logs nothing).
pub const SLF4J_SIMPLE_JAR: &str = "/usr/share/java/slf4j-simple.jar";

/// ZooKeeper's main class, for a standalone server as well as a quorum member.
pub const MAIN_CLASS: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

/// How long [`ZooKeeperServer::start`] waits for the server to serve, by default.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// The parent znode of every [`ZooKeeperServer::unique_chroot`].
pub const CHROOT_PARENT: &str = "/gregor-test";

/// The command that installs the server.
const INSTALL_ZOOKEEPER: &str = "apt-get install zookeeper";
/// The command that installs the server and a JVM.
const INSTALL_JAVA_AND_ZOOKEEPER: &str = "apt-get install default-jre-headless zookeeper";

/// How many free ports `start` tries when ZooKeeper cannot bind the one it was given.
const BIND_ATTEMPTS: usize = 5;
/// How long one four-letter-word exchange may take.
const FOUR_LETTER_TIMEOUT: Duration = Duration::from_secs(2);
/// How long `stop` waits for the JVM to die before killing the shell around it.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of log kept in error messages.
const LOG_TAIL_BYTES: u64 = 6 * 1024;

/// The shell that runs the JVM. `$1` is the data directory's parent (removed when the test
/// process dies), the rest is the java command line.
///
/// The watcher subshell reads the pipe on fd 3 (a background job's stdin is `/dev/null`): a
/// line means "stop" (kill the JVM, keep the files), end-of-file means the test process is
/// gone (mark the directory orphaned, kill the JVM). The shell itself waits for the JVM, so
/// `Child::try_wait` sees the JVM's exit status, then removes an orphaned directory.
const LAUNCH_SCRIPT: &str = r#"dir=$1; shift
exec 3<&0
"$@" </dev/null 3<&- &
pid=$!
(
  if read -r line <&3; then
    kill -9 "$pid"
  else
    : >"$dir/.orphaned"
    kill -9 "$pid"
  fi
) </dev/null >/dev/null 2>&1 &
wpid=$!
exec 3<&-
wait "$pid"
rc=$?
kill -9 "$wpid" 2>/dev/null
if [ -e "$dir/.orphaned" ]; then rm -rf "$dir"; fi
exit "$rc"
"#;

/// Errors of the ZooKeeper launcher.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Returned when java or the ZooKeeper jar is missing; the message names the package to
    /// install.
    #[error("{what} not found: install it with `{install}`")]
    NotInstalled {
        /// What is missing (`java`, or the jar's path).
        what: String,
        /// The command that installs it.
        install: &'static str,
    },
    /// Returned when preparing or launching the server fails at the operating-system level.
    #[error("could not {action}")]
    Io {
        /// What was being done.
        action: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Returned when the JVM exits before the server serves (a port taken by someone else is
    /// retried on another port first; a restart retries the same port).
    #[error("zookeeper exited with {status} while starting on 127.0.0.1:{port}; log tail:\n{log_tail}")]
    Exited {
        /// The port it was given.
        port: u16,
        /// The JVM's exit status.
        status: ExitStatus,
        /// The end of the server's log.
        log_tail: String,
    },
    /// Returned when the server does not answer `ruok` with `imok` and serve in time.
    #[error(
        "zookeeper did not answer `ruok` with `imok` and serve on 127.0.0.1:{port} within \
         {timeout:?}; log tail:\n{log_tail}"
    )]
    Timeout {
        /// The port it was given.
        port: u16,
        /// How long it was given.
        timeout: Duration,
        /// The end of the server's log.
        log_tail: String,
    },
}

impl Error {
    /// Whether this error means java or ZooKeeper is not installed.
    pub fn is_not_installed(&self) -> bool {
        matches!(self, Error::NotInstalled { .. })
    }

    fn io(action: impl Into<String>, source: io::Error) -> Self {
        Error::Io { action: action.into(), source }
    }
}

/// A result with the launcher's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How to launch a [`ZooKeeperServer`]; made by [`ZooKeeperServer::builder`].
#[derive(Debug, Clone)]
pub struct ZooKeeperBuilder {
    java: Option<PathBuf>,
    jar: PathBuf,
    startup_timeout: Duration,
}

impl Default for ZooKeeperBuilder {
    fn default() -> Self {
        ZooKeeperBuilder {
            java: None,
            jar: PathBuf::from(DEFAULT_ZOOKEEPER_JAR),
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
        }
    }
}

impl ZooKeeperBuilder {
    /// The java executable. By default, `$JAVA_HOME/bin/java` when it exists, else `java`
    /// found on `PATH`.
    pub fn java(mut self, java: impl Into<PathBuf>) -> Self {
        self.java = Some(java.into());
        self
    }

    /// The ZooKeeper server jar. By default, [`DEFAULT_ZOOKEEPER_JAR`].
    pub fn jar(mut self, jar: impl Into<PathBuf>) -> Self {
        self.jar = jar.into();
        self
    }

    /// How long to wait for the server to serve. By default, [`DEFAULT_STARTUP_TIMEOUT`].
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Starts a server; see [`ZooKeeperServer::start`].
    ///
    /// # Errors
    ///
    /// As [`ZooKeeperServer::start`].
    pub fn start(self) -> Result<ZooKeeperServer> {
        let java = match self.java {
            Some(java) if is_executable(&java) => java,
            Some(java) => {
                return Err(Error::NotInstalled {
                    what: format!("java ({})", java.display()),
                    install: INSTALL_JAVA_AND_ZOOKEEPER,
                })
            }
            None => find_java().ok_or_else(|| Error::NotInstalled {
                what: "java (on PATH or in JAVA_HOME)".to_owned(),
                install: INSTALL_JAVA_AND_ZOOKEEPER,
            })?,
        };
        if !self.jar.is_file() {
            return Err(Error::NotInstalled {
                what: format!("the ZooKeeper server jar {}", self.jar.display()),
                install: INSTALL_ZOOKEEPER,
            });
        }
        let dir = tempfile::Builder::new()
            .prefix("gregor-zookeeper-")
            .tempdir()
            .map_err(|e| Error::io("create a temporary directory for zookeeper", e))?;
        let data_dir = dir.path().join("data");
        fs::create_dir(&data_dir).map_err(|e| Error::io(format!("create {}", data_dir.display()), e))?;

        let mut server =
            ZooKeeperServer { port: 0, java, jar: self.jar, startup_timeout: self.startup_timeout, process: None, dir };
        let mut last = None;
        for _ in 0..BIND_ATTEMPTS {
            server.port = free_port()?;
            match server.launch() {
                Ok(()) => return Ok(server),
                Err(Launch::AddrInUse(e)) => last = Some(e),
                Err(Launch::Fatal(e)) => return Err(e),
            }
        }
        Err(last.expect("BIND_ATTEMPTS > 0"))
    }
}

/// A running (or [stopped](ZooKeeperServer::stop)) standalone ZooKeeper server on 127.0.0.1.
///
/// Dropping it kills the JVM (`SIGKILL`), waits for it and removes its data directory.
#[derive(Debug)]
pub struct ZooKeeperServer {
    port: u16,
    java: PathBuf,
    jar: PathBuf,
    startup_timeout: Duration,
    process: Option<Process>,
    // Last, so the directory is removed after the process is gone.
    dir: TempDir,
}

/// The shell around the JVM and the write end of its watcher's pipe.
#[derive(Debug)]
struct Process {
    shell: Child,
    watcher: Option<ChildStdin>,
}

/// Why one launch failed.
enum Launch {
    /// The port was taken: worth another try.
    AddrInUse(Error),
    /// Anything else.
    Fatal(Error),
}

static SHARED: OnceLock<Result<ZooKeeperServer>> = OnceLock::new();
static CHROOT_COUNTER: AtomicU64 = AtomicU64::new(0);

impl ZooKeeperServer {
    /// Starts a server with the default settings on a free 127.0.0.1 port and waits (at most
    /// [`DEFAULT_STARTUP_TIMEOUT`]) until it answers `ruok` with `imok` and serves.
    ///
    /// Blocks the calling thread (about 1–2 s); fine inside `#[tokio::test]`.
    ///
    /// # Errors
    ///
    /// [`Error::NotInstalled`] when java or the jar is missing, [`Error::Exited`] when the JVM
    /// dies during startup (after trying five ports if the port was taken),
    /// [`Error::Timeout`] when it does not serve in time, [`Error::Io`] when the temporary
    /// directory, config, log or process cannot be created.
    pub fn start() -> Result<ZooKeeperServer> {
        Self::builder().start()
    }

    /// A builder to choose the java executable, the jar or the startup timeout.
    pub fn builder() -> ZooKeeperBuilder {
        ZooKeeperBuilder::default()
    }

    /// Starts a server; when java or ZooKeeper is missing, applies the
    /// [skip rule](crate::tools::SkipRule): `None` (after saying why on stderr, the caller
    /// skips) only when the developer set [`GREGOR_ALLOW_SKIP`](crate::tools::ALLOW_SKIP_ENV)
    /// outside CI.
    ///
    /// # Panics
    ///
    /// When the server cannot start for any other reason, or is not installed and the rule
    /// says fail; the message carries the install command or the server's log tail.
    pub fn start_or_skip() -> Option<ZooKeeperServer> {
        match Self::start() {
            Ok(server) => Some(server),
            Err(e) => skip_or_panic(SkipRule::from_env(), &e),
        }
    }

    /// The server shared by the whole test binary, started on first use.
    ///
    /// It is never dropped, but it dies with the test process (see the module docs), and its
    /// data directory is removed then. Give each test its own subtree with
    /// [`unique_chroot`](Self::unique_chroot). It cannot be stopped; start a private server
    /// with [`start`](Self::start) to simulate an outage.
    ///
    /// # Panics
    ///
    /// When the server cannot start (every later call panics the same way).
    pub fn shared() -> &'static ZooKeeperServer {
        match Self::shared_result() {
            Ok(server) => server,
            Err(e) => panic!("could not start the shared ZooKeeper server: {}", chain(e)),
        }
    }

    /// [`shared`](Self::shared); when java or ZooKeeper is missing, applies the
    /// [skip rule](crate::tools::SkipRule): `None` (after saying why on stderr, the caller
    /// skips) only when the developer set [`GREGOR_ALLOW_SKIP`](crate::tools::ALLOW_SKIP_ENV)
    /// outside CI.
    ///
    /// # Panics
    ///
    /// When the server cannot start for any other reason, or is not installed and the rule
    /// says fail (always under `CI`); the message names the apt-get command.
    pub fn shared_or_skip() -> Option<&'static ZooKeeperServer> {
        match Self::shared_result() {
            Ok(server) => Some(server),
            Err(e) => skip_or_panic(SkipRule::from_env(), e),
        }
    }

    fn shared_result() -> &'static Result<ZooKeeperServer> {
        SHARED.get_or_init(ZooKeeperServer::start)
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The client address, `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, self.port))
    }

    /// The connect string, `127.0.0.1:PORT`.
    pub fn connect_string(&self) -> String {
        self.addr().to_string()
    }

    /// A connect string with a chroot no other test uses:
    /// `127.0.0.1:PORT/gregor-test/<name>-<pid>-<n>`, `n` counting calls in this process.
    ///
    /// Characters of `name` other than ASCII letters, digits, `-` and `_` become `_`, so
    /// `module_path!()` is fine. The chroot node itself is not created.
    pub fn unique_chroot(&self, name: &str) -> String {
        let n = CHROOT_COUNTER.fetch_add(1, Ordering::Relaxed);
        let name: String =
            name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
        format!("{}{CHROOT_PARENT}/{name}-{}-{n}", self.connect_string(), std::process::id())
    }

    /// The server's data directory (snapshots and transaction logs), kept across
    /// [`restart`](Self::restart).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The file that collects the JVM's stdout and stderr, across restarts.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("zookeeper.log")
    }

    /// The last few kilobytes of [`log_path`](Self::log_path).
    pub fn log_tail(&self) -> String {
        read_tail(&self.log_path(), 0)
    }

    /// Whether the JVM is running (it was started and neither stopped nor dead).
    pub fn is_running(&mut self) -> bool {
        match &mut self.process {
            Some(p) => matches!(p.shell.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Sends a four-letter word (`ruok`, `srvr`, `stat`, `conf`, `mntr`, ...) and returns the
    /// whole answer.
    ///
    /// # Errors
    ///
    /// When the server cannot be reached or does not answer within a couple of seconds.
    pub fn four_letter_word(&self, word: &str) -> io::Result<String> {
        four_letter_word(self.addr(), word)
    }

    /// Kills the server (`SIGKILL`) and waits for it to die, keeping its port and data
    /// directory for [`restart`](Self::restart). Clients see their connections drop and
    /// reconnect attempts refused. Does nothing when already stopped.
    pub fn stop(&mut self) {
        if let Some(process) = self.process.take() {
            stop_process(process);
        }
    }

    /// Starts the server again on the same port with the same data directory (stopping it
    /// first if it runs), so sessions and znodes survive as they would a real restart.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start); when the port has been taken meanwhile, it retries for a
    /// second or so before returning [`Error::Exited`].
    pub fn restart(&mut self) -> Result<()> {
        self.stop();
        let mut last = None;
        for attempt in 0..BIND_ATTEMPTS {
            if attempt > 0 {
                thread::sleep(Duration::from_millis(250));
            }
            match self.launch() {
                Ok(()) => return Ok(()),
                Err(Launch::AddrInUse(e)) => last = Some(e),
                Err(Launch::Fatal(e)) => return Err(e),
            }
        }
        Err(last.expect("BIND_ATTEMPTS > 0"))
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("zoo.cfg")
    }

    /// Writes the config, spawns the JVM under the watcher shell and waits for it to serve.
    fn launch(&mut self) -> Result<(), Launch> {
        self.write_config().map_err(Launch::Fatal)?;
        let log_path = self.log_path();
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| Launch::Fatal(Error::io(format!("open {}", log_path.display()), e)))?;
        let log_start = log
            .metadata()
            .map(|m| m.len())
            .map_err(|e| Launch::Fatal(Error::io(format!("stat {}", log_path.display()), e)))?;
        let log_err = log.try_clone().map_err(|e| Launch::Fatal(Error::io("duplicate the log file handle", e)))?;

        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(LAUNCH_SCRIPT)
            .arg("gregor-zookeeper")
            .arg(self.dir.path())
            .arg(&self.java)
            .args(self.java_args())
            .current_dir(self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err));
        let mut shell = command.spawn().map_err(|e| Launch::Fatal(Error::io("spawn /bin/sh to run zookeeper", e)))?;
        let watcher = shell.stdin.take();
        let mut process = Process { shell, watcher };
        tracing::debug!(port = self.port, dir = %self.dir.path().display(), "starting zookeeper");

        match self.wait_until_serving(&mut process, log_start) {
            Ok(()) => {
                tracing::debug!(port = self.port, "zookeeper is serving");
                self.process = Some(process);
                Ok(())
            }
            Err(e) => {
                stop_process(process);
                Err(e)
            }
        }
    }

    fn java_args(&self) -> Vec<OsString> {
        let mut class_path = self.jar.clone().into_os_string();
        if Path::new(SLF4J_SIMPLE_JAR).is_file() {
            class_path.push(":");
            class_path.push(SLF4J_SIMPLE_JAR);
        }
        let mut args: Vec<OsString> = [
            "-Xms16m",
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-XX:-UsePerfData",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
            "-cp",
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        args.push(class_path);
        args.push(MAIN_CLASS.into());
        args.push(self.config_path().into_os_string());
        args
    }

    fn write_config(&self) -> Result<()> {
        // maxClientCnxns=0: every test connects from 127.0.0.1, and the default cap is 60.
        // forceSync=no: a killed JVM loses nothing (the page cache survives), and it is faster.
        let config = format!(
            "tickTime=500\n\
             dataDir={data_dir}\n\
             clientPort={port}\n\
             clientPortAddress=127.0.0.1\n\
             maxClientCnxns=0\n\
             admin.enableServer=false\n\
             minSessionTimeout=1000\n\
             maxSessionTimeout=60000\n\
             4lw.commands.whitelist=*\n\
             forceSync=no\n\
             preAllocSize=4096\n",
            data_dir = self.data_dir().display(),
            port = self.port,
        );
        let path = self.config_path();
        fs::write(&path, config).map_err(|e| Error::io(format!("write {}", path.display()), e))
    }

    fn wait_until_serving(&self, process: &mut Process, log_start: u64) -> Result<(), Launch> {
        let deadline = Instant::now() + self.startup_timeout;
        let own_data_dir = format!("dataDir={}/", self.data_dir().display());
        loop {
            match process.shell.try_wait() {
                Ok(Some(status)) => {
                    let log_tail = read_tail(&self.log_path(), log_start);
                    let in_use = log_tail.contains("Address already in use") || log_tail.contains("BindException");
                    let e = Error::Exited { port: self.port, status, log_tail };
                    return Err(if in_use {
                        tracing::debug!(port = self.port, "zookeeper's port was taken");
                        Launch::AddrInUse(e)
                    } else {
                        Launch::Fatal(e)
                    });
                }
                Ok(None) => {}
                Err(e) => return Err(Launch::Fatal(Error::io("wait for zookeeper", e))),
            }
            if is_serving(self.addr(), &own_data_dir) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Launch::Fatal(Error::Timeout {
                    port: self.port,
                    timeout: self.startup_timeout,
                    log_tail: read_tail(&self.log_path(), log_start),
                }));
            }
            thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for ZooKeeperServer {
    fn drop(&mut self) {
        self.stop();
    }
}

impl fmt::Display for ZooKeeperServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ZooKeeper at {}", self.addr())
    }
}

/// Tells the watcher to kill the JVM, then reaps the shell (which reaps the JVM).
fn stop_process(mut process: Process) {
    if let Some(mut watcher) = process.watcher.take() {
        // A line, not end-of-file: "stop, but keep the data directory".
        let _ = watcher.write_all(b"stop\n");
        let _ = watcher.flush();
    }
    let deadline = Instant::now() + STOP_TIMEOUT;
    loop {
        match process.shell.try_wait() {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) if Instant::now() >= deadline => break,
            Ok(None) => thread::sleep(Duration::from_millis(10)),
        }
    }
    tracing::warn!("zookeeper did not die within {STOP_TIMEOUT:?}; killing its shell");
    let _ = process.shell.kill();
    let _ = process.shell.wait();
}

/// `ruok` is answered `imok`, `srvr` shows a mode (a server that is not yet serving says
/// "This ZooKeeper instance is not currently serving requests") and `conf` shows our data
/// directory.
fn is_serving(addr: SocketAddr, own_data_dir: &str) -> bool {
    let ok =
        |word: &str, expect: &str| four_letter_word(addr, word).map(|answer| answer.contains(expect)).unwrap_or(false);
    ok("ruok", "imok") && ok("srvr", "Mode: ") && ok("conf", own_data_dir)
}

fn four_letter_word(addr: SocketAddr, word: &str) -> io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, FOUR_LETTER_TIMEOUT)?;
    stream.set_read_timeout(Some(FOUR_LETTER_TIMEOUT))?;
    stream.set_write_timeout(Some(FOUR_LETTER_TIMEOUT))?;
    stream.write_all(word.as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// A port that was free a moment ago.
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| Error::io("bind 127.0.0.1:0 to find a free port", e))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| Error::io("read the free port", e))
}

fn find_java() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let java = Path::new(&home).join("bin").join("java");
        if is_executable(&java) {
            return Some(java);
        }
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join("java")).find(|java| is_executable(java))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// The last [`LOG_TAIL_BYTES`] of `path` after byte `from`, starting at a line boundary.
fn read_tail(path: &Path, from: u64) -> String {
    let read = || -> io::Result<String> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        let start = from.max(len.saturating_sub(LOG_TAIL_BYTES));
        file.seek(SeekFrom::Start(start))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if start > from {
            if let Some(newline) = text.find('\n') {
                text.drain(..=newline);
            }
        }
        Ok(text)
    };
    match read() {
        Ok(text) if text.trim().is_empty() => "(the log is empty)".to_owned(),
        Ok(text) => text,
        Err(e) => format!("(could not read {}: {e})", path.display()),
    }
}

/// The error and its sources, for a panic message.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// A server that could not start: the [skip rule](SkipRule) for a missing install, a panic
/// with the error's chain for anything else.
fn skip_or_panic<T>(rule: SkipRule, e: &Error) -> Option<T> {
    match e {
        Error::NotInstalled { what, install } => {
            rule.unavailable(format!("a real ZooKeeper is needed and {what} was not found"), install)
        }
        _ => panic!("could not start ZooKeeper: {}", chain(e)),
    }
}

#[cfg(test)]
mod tests {
    use std::panic::AssertUnwindSafe;

    use super::*;

    #[test]
    fn missing_java_names_both_packages() {
        let e = ZooKeeperServer::builder().java("/nonexistent/bin/java").start().unwrap_err();
        assert!(e.is_not_installed());
        let text = e.to_string();
        assert!(text.contains("apt-get install"), "{text}");
        assert!(text.contains("default-jre-headless"), "{text}");
    }

    #[test]
    fn missing_jar_names_zookeeper() {
        let e = ZooKeeperServer::builder().java("/bin/sh").jar("/nonexistent/zookeeper.jar").start().unwrap_err();
        assert!(e.is_not_installed());
        assert!(e.to_string().contains("apt-get install zookeeper"), "{e}");
    }

    #[test]
    fn a_missing_install_fails_unless_skipping_is_allowed_outside_ci() {
        let e = ZooKeeperServer::builder().java("/bin/sh").jar("/nonexistent/zookeeper.jar").start().unwrap_err();
        let skip = SkipRule { ci: false, allow_skip: true };
        assert!(skip_or_panic::<()>(skip, &e).is_none());
        for rule in [SkipRule { ci: false, allow_skip: false }, SkipRule { ci: true, allow_skip: true }] {
            let failed =
                std::panic::catch_unwind(AssertUnwindSafe(|| skip_or_panic::<()>(rule, &e))).expect_err("fails");
            let text = failed.downcast_ref::<String>().expect("a formatted panic message");
            assert!(text.starts_with("a real ZooKeeper is needed and the ZooKeeper server jar"), "{text}");
            assert!(text.contains("install it with `apt-get install zookeeper`"), "{text}");
        }
        // anything but a missing install fails whatever the rule
        let other = Error::Timeout { port: 1, timeout: Duration::from_secs(1), log_tail: "tail".into() };
        let failed =
            std::panic::catch_unwind(AssertUnwindSafe(|| skip_or_panic::<()>(skip, &other))).expect_err("fails");
        assert!(failed.downcast_ref::<String>().unwrap().starts_with("could not start ZooKeeper"));
    }

    #[test]
    fn tail_starts_at_a_line_and_after_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut text = String::from("first attempt\n");
        let from = text.len() as u64;
        for i in 0..2000 {
            text.push_str(&format!("line {i}\n"));
        }
        fs::write(&path, &text).unwrap();
        let tail = read_tail(&path, from);
        assert!(tail.starts_with("line "), "{tail:.40}");
        assert!(tail.ends_with("line 1999\n"));
        assert!(tail.len() as u64 <= LOG_TAIL_BYTES);
        fs::write(&path, "a\nb\n").unwrap();
        assert_eq!(read_tail(&path, 2), "b\n");
        assert_eq!(read_tail(&path, 4), "(the log is empty)");
    }
}

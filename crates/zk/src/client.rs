//! [`ZkClient`]: zookeeper-async behind a small API shaped for Kafka's use of ZooKeeper.
//!
//! # What zookeeper-async 5.0 does, and what this module does about it
//!
//! Read from its source (`io.rs`, `watch.rs`, `zookeeper.rs`) and checked against Debian's
//! ZooKeeper 3.8:
//!
//! - **Session expiry** is reported as the deprecated state `ZkState::NotConnected`: when the
//!   client reconnects with a session the server has expired, the server answers the connect
//!   request with a zero timeout; zookeeper-async logs "session N expired", forgets the session
//!   id and notifies `NotConnected`. The server then closes the socket and zookeeper-async
//!   reconnects *with a brand new session* (`Connecting`, then `Connected`). It never reports
//!   `ZkState::AuthFailed` and reports `ZkState::Closed` only after `close()`. So here
//!   `NotConnected` becomes [`SessionEvent::Expired`], and the client carries on with the new
//!   session: [`SessionEvent::Connected`] follows. Expiry is only seen when the client gets
//!   through to the server again; while it cannot, it only sees [`SessionEvent::Disconnected`].
//! - **Watches are not re-registered after a reconnect** (no `SetWatches`), although the
//!   server drops a connection's watches with the connection. [`Watch`] streams therefore read
//!   again (and re-arm) after every reconnection.
//! - **A watch closure is kept even when the read that set it failed** (`NoNode` from
//!   `get_data_w`/`get_children_w`), and fires on a later event for the path. [`Watch`] streams
//!   number their reads and ignore stale closures.
//! - **Connecting only opens a TCP connection**: `ZooKeeper::connect` returns before the
//!   session exists, and retries unreachable servers forever. [`ZkClient::connect`] bounds it
//!   by the session timeout and waits for a real round trip.
//! - **Dropping a `ZooKeeper` without `close()` leaks its IO task and session** (the task holds
//!   a sender of its own request channel, so it never sees the channel close). The last
//!   [`ZkClient`] clone to go therefore closes the session in a spawned task.
//! - **Session timeouts under 1.5 s are unusable**: the read timeout of the IO task is
//!   `2 * floor(2/3 * timeout in whole seconds)`, zero below 1.5 s, so it reconnects in a loop.
//!   See [`MIN_SESSION_TIMEOUT`].
//! - **No session id**: zookeeper-async does not expose the session id or password, so there is
//!   no `session_id()` here (an ephemeral znode's [`Stat::ephemeral_owner`] is the id of the
//!   session that created it).
//! - Under a chroot, a watch on `/` (the chroot itself) never fires: zookeeper-async strips the
//!   chroot from the event path, leaving `""`, which matches no watch.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::Instant;
use tracing::{debug, info, trace, warn};
use zookeeper_async::{Acl, WatchedEvent, ZkError, ZkResult, ZkState, ZooKeeper};

use crate::paths::{self, validate_path};
use crate::{Error, Result};

/// The shortest session timeout [`ZkClient::connect`] accepts: 1.5 s.
///
/// zookeeper-async gives up on a connection after `2 * floor(2/3 * timeout)` whole seconds
/// without a byte from the server; below 1.5 s that is zero and it reconnects in a loop. Kafka's
/// default `zookeeper.session.timeout.ms` is 6000.
pub const MIN_SESSION_TIMEOUT: Duration = Duration::from_millis(1500);

/// Default port of a `zookeeper.connect` host without one, as in ZooKeeper's
/// `ConnectStringParser`.
const DEFAULT_PORT: u16 = 2181;
/// Pause between failed TCP connects inside zookeeper-async (0 would spin).
const RECONNECT_PAUSE: Duration = Duration::from_millis(100);
/// Pause between probes while waiting for the first session.
const PROBE_PAUSE: Duration = Duration::from_millis(50);
/// Pause before a watch reads again after a connection loss.
const WATCH_RETRY_PAUSE: Duration = Duration::from_millis(200);
/// Capacity of the [`ZkClient::session_events`] channel.
const SESSION_EVENTS_CAPACITY: usize = 64;
/// Capacity of a [`Watch`] channel (values are snapshots: a slow reader only delays the next).
const WATCH_CAPACITY: usize = 4;
/// How often `delete_all` re-lists a znode that gained children while it was being emptied.
const DELETE_ALL_RETRIES: usize = 10;

/// How a znode is created (ZooKeeper's `CreateMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CreateMode {
    /// Stays until deleted (topics, configs, offsets).
    Persistent,
    /// Deleted by ZooKeeper when the creating session ends (broker and consumer registrations,
    /// the controller, partition ownership claims).
    Ephemeral,
    /// Persistent, with a 10-digit increasing sequence number appended to the name (config
    /// change notices).
    PersistentSequential,
    /// Ephemeral, with a sequence number appended to the name.
    EphemeralSequential,
}

impl CreateMode {
    /// Whether ZooKeeper deletes the znode when its session ends.
    pub fn is_ephemeral(self) -> bool {
        matches!(self, CreateMode::Ephemeral | CreateMode::EphemeralSequential)
    }

    /// Whether ZooKeeper appends a sequence number to the name.
    pub fn is_sequential(self) -> bool {
        matches!(self, CreateMode::PersistentSequential | CreateMode::EphemeralSequential)
    }

    fn to_zk(self) -> zookeeper_async::CreateMode {
        match self {
            CreateMode::Persistent => zookeeper_async::CreateMode::Persistent,
            CreateMode::Ephemeral => zookeeper_async::CreateMode::Ephemeral,
            CreateMode::PersistentSequential => zookeeper_async::CreateMode::PersistentSequential,
            CreateMode::EphemeralSequential => zookeeper_async::CreateMode::EphemeralSequential,
        }
    }
}

/// A change of the client's connection or session, from [`ZkClient::session_events`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionEvent {
    /// A connection to a server is up and the session is usable. Follows every reconnection,
    /// including the new session that follows [`SessionEvent::Expired`].
    Connected,
    /// The connection was lost; the client is reconnecting. The session (ephemeral znodes,
    /// watches) survives if the client gets back within the session timeout; requests fail
    /// with [`Error::ConnectionLoss`] meanwhile.
    Disconnected,
    /// The server expired the session: its ephemeral znodes are deleted and its watches gone,
    /// and every [`Watch`] ends with [`Error::SessionExpired`]. The client opens a new session
    /// by itself ([`SessionEvent::Connected`] follows); recreate ephemeral znodes and watches
    /// then, as Kafka's brokers and consumers do in `handleNewSession`.
    Expired,
    /// The client was closed ([`ZkClient::close`]).
    Closed,
}

/// Metadata of a znode (the fields of ZooKeeper's `Stat` that Kafka uses).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Stat {
    /// Number of changes to the data; pass it to [`ZkClient::set`] or [`ZkClient::delete`] for a
    /// conditional update (Kafka's `conditionalUpdatePersistentPath`).
    pub version: i32,
    /// Number of changes to the children.
    pub cversion: i32,
    /// The id of the session that owns this ephemeral znode, 0 for a persistent one.
    pub ephemeral_owner: i64,
    /// Creation time, milliseconds since the epoch.
    pub ctime: i64,
    /// Last modification time, milliseconds since the epoch.
    pub mtime: i64,
    /// Number of children.
    pub num_children: i32,
    /// Length of the data in bytes.
    pub data_length: i32,
    /// The transaction that created the znode.
    pub czxid: i64,
    /// The transaction that last changed the data.
    pub mzxid: i64,
}

impl Stat {
    /// Whether the znode is ephemeral.
    pub fn is_ephemeral(&self) -> bool {
        self.ephemeral_owner != 0
    }

    fn from_zk(s: zookeeper_async::Stat) -> Stat {
        Stat {
            version: s.version,
            cversion: s.cversion,
            ephemeral_owner: s.ephemeral_owner,
            ctime: s.ctime,
            mtime: s.mtime,
            num_children: s.num_children,
            data_length: s.data_length,
            czxid: s.czxid,
            mzxid: s.mzxid,
        }
    }
}

/// A stream of the current value of a znode's children or data, from
/// [`ZkClient::watch_children`] or [`ZkClient::watch_data`]: a [`futures_core::Stream`], or
/// [`Watch::next`] without a trait in scope.
///
/// It yields the current value at once, then again after every change. `None` as a value
/// means the znode does not exist (the stream keeps watching for its creation).
///
/// Changes are never lost, but they may be merged: each item is a fresh read made after the
/// change, so several quick changes may show up as one item with the latest value, and an
/// item may equal the previous one (after a reconnection, a change and its reversal, or a
/// data change when watching children). Compare with the last value if that matters.
///
/// The stream ends (`next` returns `None`) when the client is closed or every
/// [`ZkClient`] clone and this `Watch` are dropped; after a session expiry its last item is
/// `Err(Error::SessionExpired)`. A request error other than a connection loss (retried) is
/// yielded, and ends the stream.
///
/// Dropping the `Watch` stops its background task (ZooKeeper's one-shot watch left on the
/// server fires once more, unseen).
pub struct Watch<T> {
    rx: mpsc::Receiver<Result<T>>,
    path: String,
}

impl<T> Watch<T> {
    /// The next value; `None` when the stream has ended.
    ///
    /// Cancel safety: cancel safe, no value is lost.
    pub async fn next(&mut self) -> Option<Result<T>> {
        self.rx.recv().await
    }

    /// The watched path (relative to the chroot).
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// The same items as [`Watch::next`], for `StreamExt` (futures, tokio-stream) and friends.
impl<T> futures_core::Stream for Watch<T> {
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T>>> {
        self.get_mut().rx.poll_recv(cx)
    }
}

impl<T> fmt::Debug for Watch<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch").field("path", &self.path).finish()
    }
}

/// Connection and session state, shared by the state listener, the client and its watches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Status {
    connected: bool,
    closed: bool,
    /// Incremented at every (re)connection: server-side watches died with the old connection.
    connections: u64,
    /// Incremented at every session expiry.
    expirations: u64,
}

struct Inner {
    zk: Arc<ZooKeeper>,
    connect: String,
    chroot: Option<String>,
    session_timeout: Duration,
    events: broadcast::Sender<SessionEvent>,
    status: watch::Sender<Status>,
    runtime: Handle,
}

impl Inner {
    fn is_closed(&self) -> bool {
        self.status.borrow().closed
    }

    fn map_err(&self, code: ZkError, path: &str) -> Error {
        let path = path.to_owned();
        match code {
            ZkError::NoNode => Error::NoNode { path },
            ZkError::NodeExists => Error::NodeExists { path },
            ZkError::BadVersion => Error::BadVersion { path },
            ZkError::NotEmpty => Error::NotEmpty { path },
            ZkError::SessionExpired => Error::SessionExpired,
            ZkError::ConnectionLoss if self.is_closed() => Error::Closed,
            ZkError::ConnectionLoss => Error::ConnectionLoss,
            code => Error::Zk { path, code },
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.is_closed() {
            return;
        }
        // zookeeper-async's IO task and session outlive a dropped `ZooKeeper`: close it.
        debug!(connect = %self.connect, "last ZkClient dropped: closing the session");
        let zk = Arc::clone(&self.zk);
        drop(self.runtime.spawn(async move {
            let _ = zk.close().await;
        }));
    }
}

/// Applies a zookeeper-async state change to the shared status and broadcasts the event.
fn on_state(state: ZkState, status: &watch::Sender<Status>, events: &broadcast::Sender<SessionEvent>) {
    let mut event = None;
    status.send_modify(|s| match state {
        ZkState::Connected | ZkState::ConnectedReadOnly => {
            s.connected = true;
            s.connections += 1;
            event = Some(SessionEvent::Connected);
        }
        ZkState::Connecting => {
            if s.connected {
                s.connected = false;
                event = Some(SessionEvent::Disconnected);
            }
        }
        // zookeeper-async's way to say "the server expired the session" (see the module doc).
        #[allow(deprecated)]
        ZkState::NotConnected => {
            s.connected = false;
            s.expirations += 1;
            event = Some(SessionEvent::Expired);
        }
        ZkState::Closed => {
            s.connected = false;
            if !s.closed {
                s.closed = true;
                event = Some(SessionEvent::Closed);
            }
        }
        other => trace!(state = ?other, "zookeeper state ignored"),
    });
    if let Some(event) = event {
        match event {
            SessionEvent::Expired => warn!("zookeeper session expired; opening a new session"),
            SessionEvent::Disconnected => warn!("zookeeper connection lost; reconnecting"),
            _ => info!(?event, "zookeeper session event"),
        }
        let _ = events.send(event);
    }
}

/// A ZooKeeper client for Kafka's znodes: cheap to clone (an `Arc` inside), all clones share
/// one session.
///
/// Paths are absolute and relative to the chroot of the connect string; they are checked with
/// [`paths::validate_path`] before use. Every operation is bounded by the session timeout
/// ([`Error::Timeout`]); while ZooKeeper is unreachable operations fail with
/// [`Error::ConnectionLoss`] or time out, and the client keeps reconnecting in the background.
///
/// Cancel safety: dropping an operation's future before it completes leaves it applied or not,
/// like [`Error::ConnectionLoss`]; the client stays usable. An operation runs on a task of its
/// own, so once it has been polled it goes on to its answer (dropped unread).
///
/// When the last clone is dropped without [`close`](ZkClient::close), the session is closed in
/// a background task (zookeeper-async would otherwise keep it open); a live [`Watch`] keeps it
/// open until the `Watch` is dropped.
#[derive(Clone)]
pub struct ZkClient {
    inner: Arc<Inner>,
}

impl fmt::Debug for ZkClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZkClient")
            .field("connect", &self.inner.connect)
            .field("session_timeout", &self.inner.session_timeout)
            .field("status", &*self.inner.status.borrow())
            .finish()
    }
}

/// A parsed `zookeeper.connect`.
#[derive(Debug, PartialEq, Eq)]
struct ConnectString {
    hosts: Vec<(String, u16)>,
    chroot: Option<String>,
}

fn invalid(connect: &str, reason: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::InvalidConnectString { connect: connect.to_owned(), reason: reason.into() }
}

/// Parses `host:port[,host:port...][/chroot]` (port 2181 when missing, IPv6 in brackets).
fn parse_connect(connect: &str) -> Result<ConnectString> {
    let trimmed = connect.trim();
    let (host_list, chroot) = match trimmed.find('/') {
        Some(i) => (&trimmed[..i], &trimmed[i..]),
        None => (trimmed, ""),
    };
    let chroot = match chroot {
        "" | "/" => None,
        chroot => match validate_path(chroot) {
            Ok(()) => Some(chroot.to_owned()),
            Err(Error::InvalidPath { reason, .. }) => {
                return Err(invalid(connect, format!("chroot {chroot:?} {reason}")))
            }
            Err(e) => return Err(e),
        },
    };
    if host_list.trim().is_empty() {
        return Err(invalid(connect, "no host: expected host:port[,host:port...][/chroot]"));
    }
    let mut hosts = Vec::new();
    for entry in host_list.split(',') {
        let entry = entry.trim();
        if entry.is_empty() {
            return Err(invalid(connect, "empty host in the host list"));
        }
        let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
            let Some((host, after)) = rest.split_once(']') else {
                return Err(invalid(connect, format!("unclosed '[' in {entry:?}")));
            };
            match after {
                "" => (host, None),
                after => match after.strip_prefix(':') {
                    Some(port) => (host, Some(port)),
                    None => return Err(invalid(connect, format!("expected ':port' after ']' in {entry:?}"))),
                },
            }
        } else {
            match entry.rsplit_once(':') {
                Some((host, _)) if host.contains(':') => {
                    return Err(invalid(connect, format!("IPv6 address {entry:?} must be in brackets: [::1]:2181")))
                }
                Some((host, port)) => (host, Some(port)),
                None => (entry, None),
            }
        };
        if host.is_empty() {
            return Err(invalid(connect, format!("empty host name in {entry:?}")));
        }
        let port = match port {
            None => DEFAULT_PORT,
            Some(p) => match p.parse::<u16>() {
                Ok(port) if port != 0 => port,
                _ => return Err(invalid(connect, format!("invalid port {p:?} in {entry:?}"))),
            },
        };
        hosts.push((host.to_owned(), port));
    }
    Ok(ConnectString { hosts, chroot })
}

/// Checks a `zookeeper.connect` string (`host:port[,host:port...][/chroot]`, port 2181 when
/// missing, IPv6 hosts in brackets, a chroot a valid znode path) as [`ZkClient::connect`] parses
/// it, without connecting.
///
/// # Errors
///
/// [`Error::InvalidConnectString`] saying what is wrong.
pub fn validate_connect_string(connect: &str) -> Result<()> {
    parse_connect(connect).map(|_| ())
}

/// Resolves every host (all of its addresses, as ZooKeeper's `StaticHostProvider` does) into
/// the IP list handed to zookeeper-async, which resolves with blocking calls otherwise.
async fn resolve(hosts: &[(String, u16)]) -> Result<String> {
    let mut addrs: Vec<std::net::SocketAddr> = Vec::new();
    for (host, port) in hosts {
        let found = tokio::net::lookup_host((host.as_str(), *port))
            .await
            .map_err(|source| Error::Resolve { host: format!("{host}:{port}"), source })?;
        for addr in found {
            if !addrs.contains(&addr) {
                addrs.push(addr);
            }
        }
    }
    if addrs.is_empty() {
        return Err(Error::Resolve {
            host: hosts.iter().map(|(h, p)| format!("{h}:{p}")).collect::<Vec<_>>().join(","),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no address found"),
        });
    }
    Ok(addrs.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(","))
}

fn millis(d: Duration) -> u128 {
    d.as_millis()
}

impl ZkClient {
    /// Connects to `host:port[,host:port...][/chroot]` (Kafka's `zookeeper.connect`; a host
    /// without a port uses 2181, IPv6 addresses go in brackets) and waits until the session is
    /// established.
    ///
    /// If a chroot is given and does not exist yet, it is created first (empty persistent
    /// znodes) through a short chroot-less session, as Kafka 0.8.2's `KafkaServer` does; every
    /// path of the client is then relative to it.
    ///
    /// The whole connect, chroot creation included, is bounded by `session_timeout`, which is
    /// also the session timeout asked of the server (Kafka's `zookeeper.session.timeout.ms`,
    /// default 6 s; the server clamps it to its `minSessionTimeout..maxSessionTimeout`).
    ///
    /// The client's background tasks (zookeeper-async's IO and watch tasks, [`Watch`] streams)
    /// run on the Tokio runtime this is called on.
    ///
    /// Cancel safety: dropping the future before it completes leaves no session behind, except
    /// when it is dropped after the TCP connection to a server that then never answers.
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidConnectString`] for a malformed connect string.
    /// - [`Error::InvalidSessionTimeout`] when `session_timeout` is below
    ///   [`MIN_SESSION_TIMEOUT`].
    /// - [`Error::Resolve`] when a host name cannot be resolved.
    /// - [`Error::Timeout`] when no session could be established within `session_timeout`
    ///   (no server reachable, or not answering).
    /// - Any error of [`create_all`](ZkClient::create_all) while creating the chroot.
    ///
    /// # Panics
    ///
    /// When polled outside a Tokio runtime.
    pub async fn connect(connect: &str, session_timeout: Duration) -> Result<ZkClient> {
        if session_timeout < MIN_SESSION_TIMEOUT {
            return Err(Error::InvalidSessionTimeout {
                timeout_ms: millis(session_timeout),
                min_ms: millis(MIN_SESSION_TIMEOUT),
            });
        }
        let parsed = parse_connect(connect)?;
        let deadline = Instant::now() + session_timeout;
        let resolved =
            tokio::time::timeout_at(deadline, resolve(&parsed.hosts)).await.map_err(|_| Error::Timeout {
                what: format!("resolving the hosts of {connect:?} (session timeout {} ms)", millis(session_timeout)),
            })??;

        if let Some(chroot) = &parsed.chroot {
            let root = Self::open(connect, &resolved, None, session_timeout, deadline).await?;
            let created = match root.create_all(chroot, &[], CreateMode::Persistent).await {
                Ok(_) => {
                    info!(chroot = %chroot, "created the zookeeper chroot");
                    Ok(())
                }
                Err(Error::NodeExists { .. }) => Ok(()),
                Err(e) => Err(e),
            };
            if let Err(e) = root.close().await {
                debug!(error = %e, "closing the chroot-creation session");
            }
            created?;
        }
        Self::open(connect, &resolved, parsed.chroot.as_deref(), session_timeout, deadline).await
    }

    /// Opens one session on the resolved address list and waits for it.
    async fn open(
        connect: &str,
        resolved: &str,
        chroot: Option<&str>,
        session_timeout: Duration,
        deadline: Instant,
    ) -> Result<ZkClient> {
        let full = match chroot {
            Some(chroot) => format!("{resolved}{chroot}"),
            None => resolved.to_owned(),
        };
        debug!(connect = %full, "connecting to zookeeper");
        let default_watcher = |event: WatchedEvent| trace!(?event, "zookeeper event without a watch");
        let zk = match tokio::time::timeout_at(
            deadline,
            ZooKeeper::connect_with_retry_time(&full, session_timeout, default_watcher, RECONNECT_PAUSE),
        )
        .await
        {
            Ok(Ok(zk)) => zk,
            Ok(Err(code)) => return Err(invalid(connect, format!("zookeeper-async refused {full:?} ({code:?})"))),
            Err(_) => {
                return Err(Error::Timeout {
                    what: format!(
                        "connecting to zookeeper at {connect:?}: no server accepted a TCP \
                         connection within the {} ms session timeout",
                        millis(session_timeout)
                    ),
                })
            }
        };

        let (events, _) = broadcast::channel(SESSION_EVENTS_CAPACITY);
        let (status, _) = watch::channel(Status::default());
        {
            let status = status.clone();
            let events = events.clone();
            zk.add_listener(move |state| on_state(state, &status, &events));
        }
        let client = ZkClient {
            inner: Arc::new(Inner {
                zk: Arc::new(zk),
                connect: connect.to_owned(),
                chroot: chroot.map(str::to_owned),
                session_timeout,
                events,
                status,
                runtime: Handle::current(),
            }),
        };

        // zookeeper-async returns once the TCP connection is up; the first answer to a request
        // pipelined behind its connect request proves the session exists (the server holds
        // requests until the session is established).
        loop {
            let zk = Arc::clone(&client.inner.zk);
            let probe = detached(&client.inner.runtime, async move { zk.exists("/", false).await });
            match tokio::time::timeout_at(deadline, probe).await {
                Ok(Ok(_)) => break,
                Ok(Err(ZkError::ConnectionLoss)) => {
                    if tokio::time::timeout_at(deadline, tokio::time::sleep(PROBE_PAUSE)).await.is_err() {
                        continue; // the next probe times out at once
                    }
                }
                Ok(Err(code)) => return Err(client.inner.map_err(code, "/")),
                Err(_) => {
                    return Err(Error::Timeout {
                        what: format!(
                            "waiting for a zookeeper session at {connect:?}: a server accepted \
                             the connection but no session was established within the {} ms \
                             session timeout",
                            millis(session_timeout)
                        ),
                    })
                }
            }
        }
        client.inner.status.send_modify(|s| {
            if !s.connected {
                s.connected = true;
                s.connections += 1;
            }
        });
        debug!(connect = %full, "zookeeper session established");
        Ok(client)
    }

    /// Runs one request, `request(zookeeper, path)`, on a task of its own ([`detached`]),
    /// bounded by the session timeout, mapping its error.
    async fn call<T, F>(
        &self,
        what: &'static str,
        path: &str,
        request: impl FnOnce(Arc<ZooKeeper>, String) -> F,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: Future<Output = ZkResult<T>> + Send + 'static,
    {
        if self.inner.is_closed() {
            return Err(Error::Closed);
        }
        debug!(path, "zookeeper {what}");
        let request = detached(&self.inner.runtime, request(Arc::clone(&self.inner.zk), path.to_owned()));
        match tokio::time::timeout(self.inner.session_timeout, request).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(code)) => Err(self.inner.map_err(code, path)),
            Err(_) => Err(Error::Timeout {
                what: format!(
                    "{what} {path} (no answer within the {} ms session timeout)",
                    millis(self.inner.session_timeout)
                ),
            }),
        }
    }

    fn zk(&self) -> &ZooKeeper {
        &self.inner.zk
    }

    /// Creates `path` holding `data` (world-readable and writable, as Kafka 0.8.2 creates
    /// everything) and returns the created path relative to the chroot: for a sequential mode,
    /// `path` with ZooKeeper's 10-digit sequence number appended.
    ///
    /// Cancel safety: see [`ZkClient`]; the znode may exist if the future is dropped.
    ///
    /// # Errors
    ///
    /// [`Error::NodeExists`] when it exists, [`Error::NoNode`] when its parent does not (see
    /// [`create_all`](ZkClient::create_all)), [`Error::Zk`] with `NoChildrenForEphemerals` under
    /// an ephemeral parent, [`Error::InvalidPath`], and the connection errors
    /// ([`Error::ConnectionLoss`], [`Error::Timeout`], [`Error::SessionExpired`],
    /// [`Error::Closed`]).
    pub async fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String> {
        validate_path(path)?;
        let (data, mode) = (data.to_vec(), mode.to_zk());
        self.call("create", path, move |zk, path| async move {
            zk.create(&path, data, Acl::open_unsafe().clone(), mode).await
        })
        .await
    }

    /// Like [`create`](ZkClient::create), first creating the missing parents as empty
    /// persistent znodes (Kafka's `createParentPath`); existing parents are fine.
    ///
    /// Cancel safety: see [`ZkClient`]; some parents may have been created.
    ///
    /// # Errors
    ///
    /// As [`create`](ZkClient::create); [`Error::NodeExists`] when `path` itself exists.
    pub async fn create_all(&self, path: &str, data: &[u8], mode: CreateMode) -> Result<String> {
        validate_path(path)?;
        match self.create(path, data, mode).await {
            Err(Error::NoNode { .. }) => {}
            other => return other,
        }
        for parent in paths::ancestors(path) {
            match self.create(&parent, &[], CreateMode::Persistent).await {
                Ok(_) | Err(Error::NodeExists { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        self.create(path, data, mode).await
    }

    /// The data and [`Stat`] of `path`, `None` when it does not exist.
    ///
    /// Cancel safety: cancel safe (a read).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] and the connection errors.
    pub async fn get(&self, path: &str) -> Result<Option<(Vec<u8>, Stat)>> {
        validate_path(path)?;
        match self.call("get", path, |zk, path| async move { zk.get_data(&path, false).await }).await {
            Ok((data, stat)) => Ok(Some((data, Stat::from_zk(stat)))),
            Err(Error::NoNode { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Replaces the data of `path`; with `Some(version)` only if the znode is still at that
    /// version (compare-and-set). Returns the new [`Stat`].
    ///
    /// Cancel safety: see [`ZkClient`]; the data may have been written.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`] when it does not exist, [`Error::BadVersion`] when its version is not
    /// `version`, [`Error::InvalidPath`] and the connection errors.
    pub async fn set(&self, path: &str, data: &[u8], version: Option<i32>) -> Result<Stat> {
        validate_path(path)?;
        let data = data.to_vec();
        self.call("set", path, move |zk, path| async move { zk.set_data(&path, data, version).await })
            .await
            .map(Stat::from_zk)
    }

    /// Writes `data` to `path`, creating it (persistent, with its parents) if it does not
    /// exist: Kafka's `updatePersistentPath`, used for offsets and configs.
    ///
    /// Cancel safety: see [`ZkClient`].
    ///
    /// # Errors
    ///
    /// As [`create_all`](ZkClient::create_all) and [`set`](ZkClient::set).
    pub async fn set_or_create(&self, path: &str, data: &[u8]) -> Result<()> {
        validate_path(path)?;
        let mut attempts = 0;
        loop {
            attempts += 1;
            match self.set(path, data, None).await {
                Ok(_) => return Ok(()),
                Err(Error::NoNode { .. }) => {}
                Err(e) => return Err(e),
            }
            match self.create_all(path, data, CreateMode::Persistent).await {
                Ok(_) => return Ok(()),
                // Created by someone else in between (or deleted again): set it.
                Err(Error::NodeExists { .. }) if attempts < 5 => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Deletes `path`; with `Some(version)` only if it is still at that version. Returns
    /// `false` when it did not exist.
    ///
    /// Cancel safety: see [`ZkClient`]; the znode may have been deleted.
    ///
    /// # Errors
    ///
    /// [`Error::BadVersion`], [`Error::NotEmpty`] when it has children (see
    /// [`delete_all`](ZkClient::delete_all)), [`Error::InvalidPath`] and the connection errors.
    pub async fn delete(&self, path: &str, version: Option<i32>) -> Result<bool> {
        validate_path(path)?;
        match self.call("delete", path, move |zk, path| async move { zk.delete(&path, version).await }).await {
            Ok(()) => Ok(true),
            Err(Error::NoNode { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes `path` and everything under it (Kafka's `deletePathRecursive`); fine if it does
    /// not exist. `delete_all("/")` empties the root (of the chroot, if any) but keeps it, and
    /// without a chroot keeps ZooKeeper's own `/zookeeper`.
    ///
    /// Cancel safety: see [`ZkClient`]; part of the tree may be gone.
    ///
    /// # Errors
    ///
    /// [`Error::NotEmpty`] when children keep appearing faster than they are deleted,
    /// [`Error::InvalidPath`] and the connection errors.
    pub async fn delete_all(&self, path: &str) -> Result<()> {
        validate_path(path)?;
        // Post-order walk: (path, children already pushed).
        let mut stack = vec![(path.to_owned(), false)];
        let mut retries = 0;
        while let Some((node, expanded)) = stack.pop() {
            if expanded {
                if node == "/" {
                    continue;
                }
                match self.delete(&node, None).await {
                    Ok(_) => {}
                    Err(Error::NotEmpty { .. }) if retries < DELETE_ALL_RETRIES => {
                        retries += 1;
                        stack.push((node, false));
                    }
                    Err(e) => return Err(e),
                }
            } else {
                let Some(children) = self.children(&node).await? else {
                    continue;
                };
                let system = node == "/" && self.inner.chroot.is_none();
                stack.push((node.clone(), true));
                for child in children {
                    if system && child == "zookeeper" {
                        continue;
                    }
                    stack.push((paths::join(&node, &child), false));
                }
            }
        }
        Ok(())
    }

    /// The names of the children of `path`, sorted; `None` when it does not exist.
    ///
    /// Cancel safety: cancel safe (a read).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] and the connection errors.
    pub async fn children(&self, path: &str) -> Result<Option<Vec<String>>> {
        validate_path(path)?;
        match self.call("get children", path, |zk, path| async move { zk.get_children(&path, false).await }).await {
            Ok(mut children) => {
                children.sort();
                Ok(Some(children))
            }
            Err(Error::NoNode { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The [`Stat`] of `path`, `None` when it does not exist.
    ///
    /// Cancel safety: cancel safe (a read).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`] and the connection errors.
    pub async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        validate_path(path)?;
        self.call("exists", path, |zk, path| async move { zk.exists(&path, false).await })
            .await
            .map(|stat| stat.map(Stat::from_zk))
    }

    /// A stream of the sorted children of `path` (see [`Watch`]): the current list at once,
    /// then the list again after every change of the children, re-arming ZooKeeper's one-shot
    /// child watch each time with the read itself (`getChildren` with a watch), so no change
    /// between a read and the next watch is missed. While `path` does not exist the stream
    /// yields `None` and waits for its creation with an `exists` watch.
    ///
    /// This is how Kafka follows `/brokers/ids`, `/brokers/topics` and `/consumers/G/ids`.
    ///
    /// The stream's task runs on the runtime the client was connected on.
    pub fn watch_children(&self, path: &str) -> Watch<Option<Vec<String>>> {
        self.spawn_watch(path, Kind::Children, |value| match value {
            Some(Value::Children(children)) => Some(children),
            _ => None,
        })
    }

    /// A stream of the data of `path` (see [`Watch`]): the current data at once, then again
    /// after every change, `None` while `path` does not exist (the stream then waits for its
    /// creation). Re-armed with the read itself (`getData` with a watch), so no change is
    /// missed.
    ///
    /// This is how Kafka follows `/controller` and `/admin/reassign_partitions`.
    ///
    /// The stream's task runs on the runtime the client was connected on.
    pub fn watch_data(&self, path: &str) -> Watch<Option<Vec<u8>>> {
        self.spawn_watch(path, Kind::Data, |value| match value {
            Some(Value::Data(data)) => Some(data),
            _ => None,
        })
    }

    fn spawn_watch<T: Send + 'static>(&self, path: &str, kind: Kind, convert: fn(Option<Value>) -> T) -> Watch<T> {
        let (tx, rx) = mpsc::channel(WATCH_CAPACITY);
        let watch = Watch { rx, path: path.to_owned() };
        if let Err(e) = validate_path(path) {
            let _ = tx.try_send(Err(e));
            return watch;
        }
        let start = *self.inner.status.borrow();
        if start.closed {
            let _ = tx.try_send(Err(Error::Closed));
            return watch;
        }
        let task = run_watch(Arc::clone(&self.inner), path.to_owned(), kind, tx, convert, start);
        drop(self.inner.runtime.spawn(task));
        watch
    }

    /// A receiver of [`SessionEvent`]s from now on (a broadcast channel of 64 events; a receiver
    /// that falls further behind gets `RecvError::Lagged` and continues with the newest).
    pub fn session_events(&self) -> broadcast::Receiver<SessionEvent> {
        self.inner.events.subscribe()
    }

    /// Whether the client is connected to a server right now.
    pub fn is_connected(&self) -> bool {
        self.inner.status.borrow().connected
    }

    /// The chroot of the connect string, if any (`/kafka` for `zk:2181/kafka`).
    pub fn chroot(&self) -> Option<&str> {
        self.inner.chroot.as_deref()
    }

    /// Closes the session: ZooKeeper deletes its ephemeral znodes at once (rather than after
    /// the session timeout), [`Watch`] streams end and [`SessionEvent::Closed`] is sent. Later
    /// operations fail with [`Error::Closed`]. Closing twice is fine.
    ///
    /// Cancel safety: dropping the future may leave the session open until it times out; the
    /// client counts as closed either way.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when the close request could not be sent within the session timeout
    /// (ZooKeeper unreachable): the server then expires the session after its timeout.
    pub async fn close(&self) -> Result<()> {
        if self.inner.is_closed() {
            return Ok(());
        }
        debug!(connect = %self.inner.connect, "closing the zookeeper session");
        let result = tokio::time::timeout(self.inner.session_timeout, self.zk().close()).await;
        // zookeeper-async notifies `Closed` itself once the request is written; make sure.
        on_state(ZkState::Closed, &self.inner.status, &self.inner.events);
        match result {
            // ConnectionLoss: the IO task is already gone.
            Ok(Ok(())) | Ok(Err(ZkError::ConnectionLoss)) => Ok(()),
            Ok(Err(code)) => Err(self.inner.map_err(code, "/")),
            Err(_) => Err(Error::Timeout {
                what: format!(
                    "closing the zookeeper session at {:?} within the {} ms session timeout",
                    self.inner.connect,
                    millis(self.inner.session_timeout)
                ),
            }),
        }
    }
}

// -------------------------------------------------------------------------------------------
// Watches
// -------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Kind {
    Children,
    Data,
}

enum Value {
    Children(Vec<String>),
    Data(Vec<u8>),
}

/// A one-shot watch callback that records that read number `round` fired.
fn notifier(fired: &Arc<watch::Sender<u64>>, round: u64) -> impl FnOnce(WatchedEvent) + Send + 'static {
    let fired = Arc::clone(fired);
    move |event| {
        trace!(?event, round, "zookeeper watch fired");
        fired.send_modify(|latest| *latest = (*latest).max(round));
    }
}

/// Runs `request` on a task of its own on the client's runtime and waits for it. A caller that
/// stops waiting (its future dropped by a timeout, a `select!` or an aborted task) leaves the
/// answer to that task, which takes it and drops it: zookeeper-async logs an ERROR ("Error
/// sending listener event") for every answer that comes back to a dropped request, which an
/// application would otherwise see each time it stopped with a request in flight.
async fn detached<T: Send + 'static>(
    runtime: &Handle,
    request: impl Future<Output = ZkResult<T>> + Send + 'static,
) -> ZkResult<T> {
    match runtime.spawn(request).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // the runtime is shutting down, and zookeeper-async's connection with it
        Err(_) => Err(ZkError::ConnectionLoss),
    }
}

/// Reads `path` with a watch left by the read itself; a missing znode gets an `exists` watch.
async fn read_armed(
    zk: &ZooKeeper,
    kind: Kind,
    path: &str,
    fired: &Arc<watch::Sender<u64>>,
    round: u64,
) -> ZkResult<Option<Value>> {
    loop {
        let read = match kind {
            Kind::Children => zk.get_children_w(path, notifier(fired, round)).await.map(|mut children| {
                children.sort();
                Value::Children(children)
            }),
            Kind::Data => zk.get_data_w(path, notifier(fired, round)).await.map(|(data, _)| Value::Data(data)),
        };
        match read {
            Ok(value) => return Ok(Some(value)),
            Err(ZkError::NoNode) => match zk.exists_w(path, notifier(fired, round)).await? {
                None => return Ok(None),
                // Created between the two reads: read it (the exists watch stays armed and
                // at worst causes one extra read).
                Some(_) => continue,
            },
            Err(e) => return Err(e),
        }
    }
}

/// The task behind a [`Watch`]: read with a watch, yield, wait for the watch (or a
/// reconnection, whose new connection has lost the server-side watch), repeat.
async fn run_watch<T: Send + 'static>(
    inner: Arc<Inner>,
    path: String,
    kind: Kind,
    tx: mpsc::Sender<Result<T>>,
    convert: fn(Option<Value>) -> T,
    start: Status,
) {
    let (fired_tx, mut fired_rx) = watch::channel(0u64);
    let fired_tx = Arc::new(fired_tx);
    let mut status_rx = inner.status.subscribe();
    let expirations = start.expirations;
    let mut round = 0u64;
    loop {
        let now = *status_rx.borrow_and_update();
        if now.closed {
            return;
        }
        if now.expirations > expirations {
            let _ = tx.send(Err(Error::SessionExpired)).await;
            return;
        }
        let connections = now.connections;
        round += 1;
        let read = tokio::select! {
            read = tokio::time::timeout(
                inner.session_timeout,
                detached(&inner.runtime, {
                    let (zk, path, fired) = (Arc::clone(&inner.zk), path.clone(), Arc::clone(&fired_tx));
                    async move { read_armed(&zk, kind, &path, &fired, round).await }
                }),
            ) => read,
            () = tx.closed() => return,
        };
        match read {
            Ok(Ok(value)) => {
                if tx.send(Ok(convert(value))).await.is_err() {
                    return;
                }
            }
            Ok(Err(ZkError::SessionExpired)) => {
                let _ = tx.send(Err(Error::SessionExpired)).await;
                return;
            }
            Ok(Err(ZkError::ConnectionLoss)) | Err(_) => {
                if inner.is_closed() {
                    return;
                }
                debug!(path, "watch read failed (connection loss); retrying");
                tokio::select! {
                    () = tokio::time::sleep(WATCH_RETRY_PAUSE) => continue,
                    () = tx.closed() => return,
                }
            }
            Ok(Err(code)) => {
                let _ = tx.send(Err(inner.map_err(code, &path))).await;
                return;
            }
        }
        // Wait for this round's watch, a reconnection, an expiry or the end.
        loop {
            tokio::select! {
                () = tx.closed() => return,
                changed = fired_rx.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    if *fired_rx.borrow_and_update() >= round {
                        break;
                    }
                }
                changed = status_rx.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let now = *status_rx.borrow_and_update();
                    if now.closed || now.expirations > expirations || now.connections > connections {
                        break;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_watch_is_a_stream_of_the_same_items() {
        use futures::StreamExt;
        let (tx, rx) = mpsc::channel(WATCH_CAPACITY);
        let watch: Watch<Option<Vec<String>>> = Watch { rx, path: "/brokers/ids".into() };
        tx.send(Ok(Some(vec!["1".into()]))).await.unwrap();
        tx.send(Ok(None)).await.unwrap();
        tx.send(Err(Error::SessionExpired)).await.unwrap();
        drop(tx);
        let items: Vec<String> = watch
            .map(|item| match item {
                Ok(Some(ids)) => ids.join(","),
                Ok(None) => "gone".into(),
                Err(e) => e.to_string(),
            })
            .collect()
            .await;
        assert_eq!(items, ["1", "gone", "zookeeper session expired: its ephemeral znodes and watches are gone"]);
    }

    fn hosts(list: &[(&str, u16)]) -> Vec<(String, u16)> {
        list.iter().map(|(h, p)| (h.to_string(), *p)).collect()
    }

    #[test]
    fn connect_strings() {
        let c = parse_connect("127.0.0.1:2181").unwrap();
        assert_eq!(c.hosts, hosts(&[("127.0.0.1", 2181)]));
        assert_eq!(c.chroot, None);

        let c = parse_connect("a:1, b:2 ,c/kafka/prod").unwrap();
        assert_eq!(c.hosts, hosts(&[("a", 1), ("b", 2), ("c", 2181)]));
        assert_eq!(c.chroot.as_deref(), Some("/kafka/prod"));

        let c = parse_connect("[::1]:2182,[fe80::1]/").unwrap();
        assert_eq!(c.hosts, hosts(&[("::1", 2182), ("fe80::1", 2181)]));
        assert_eq!(c.chroot, None);

        let c = parse_connect("localhost:2181/").unwrap();
        assert_eq!(c.chroot, None);
    }

    #[test]
    fn bad_connect_strings() {
        for (bad, why) in [
            ("", "no host"),
            ("/kafka", "no host"),
            ("a:1,,b:2", "empty host in the host list"),
            ("a:x", "invalid port \"x\""),
            ("a:0", "invalid port \"0\""),
            ("a:70000", "invalid port \"70000\""),
            ("::1:2181", "must be in brackets"),
            ("[::1:2181", "unclosed '['"),
            ("[::1]2181", "expected ':port'"),
            (":2181", "empty host name"),
            ("a:1/kafka/", "chroot \"/kafka/\" must not end with '/'"),
            ("a:1/kafka//x", "must not contain an empty segment"),
        ] {
            match parse_connect(bad) {
                Err(Error::InvalidConnectString { connect, reason }) => {
                    assert_eq!(connect, bad);
                    assert!(reason.contains(why), "{bad:?}: {reason}");
                }
                other => panic!("{bad:?}: expected InvalidConnectString, got {other:?}"),
            }
        }
    }

    #[test]
    fn create_modes() {
        assert!(CreateMode::Ephemeral.is_ephemeral());
        assert!(CreateMode::EphemeralSequential.is_ephemeral());
        assert!(!CreateMode::Persistent.is_ephemeral());
        assert!(CreateMode::PersistentSequential.is_sequential());
        assert!(!CreateMode::Ephemeral.is_sequential());
        assert_eq!(CreateMode::EphemeralSequential.to_zk(), zookeeper_async::CreateMode::EphemeralSequential);
        assert_eq!(CreateMode::Persistent.to_zk(), zookeeper_async::CreateMode::Persistent);
    }

    #[test]
    fn state_changes_become_session_events() {
        let (status, _) = watch::channel(Status::default());
        let (events, mut rx) = broadcast::channel(16);
        // First connection, a drop, an expiry seen on reconnect, the new session, close.
        on_state(ZkState::Connected, &status, &events);
        on_state(ZkState::Connecting, &status, &events);
        #[allow(deprecated)]
        on_state(ZkState::NotConnected, &status, &events);
        on_state(ZkState::Connecting, &status, &events);
        on_state(ZkState::Connected, &status, &events);
        on_state(ZkState::Closed, &status, &events);
        on_state(ZkState::Closed, &status, &events);
        let mut seen = Vec::new();
        while let Ok(e) = rx.try_recv() {
            seen.push(e);
        }
        assert_eq!(
            seen,
            vec![
                SessionEvent::Connected,
                SessionEvent::Disconnected,
                SessionEvent::Expired,
                SessionEvent::Connected,
                SessionEvent::Closed,
            ]
        );
        let s = *status.borrow();
        assert_eq!(s, Status { connected: false, closed: true, connections: 2, expirations: 1 });
    }

    #[test]
    fn stat_conversion() {
        let zk = zookeeper_async::Stat {
            czxid: 1,
            mzxid: 2,
            ctime: 3,
            mtime: 4,
            version: 5,
            cversion: 6,
            aversion: 7,
            ephemeral_owner: 8,
            data_length: 9,
            num_children: 10,
            pzxid: 11,
        };
        let s = Stat::from_zk(zk);
        assert_eq!(
            s,
            Stat {
                version: 5,
                cversion: 6,
                ephemeral_owner: 8,
                ctime: 3,
                mtime: 4,
                num_children: 10,
                data_length: 9,
                czxid: 1,
                mzxid: 2,
            }
        );
        assert!(s.is_ephemeral());
        assert!(!Stat::default().is_ephemeral());
    }

    /// Compile-time check: the public futures are `Send` (never run).
    #[allow(dead_code)]
    fn public_futures_are_send(zk: &ZkClient) {
        fn send<T: Send>(_: T) {}
        send(ZkClient::connect("127.0.0.1:2181", MIN_SESSION_TIMEOUT));
        send(zk.create("/a", b"", CreateMode::Persistent));
        send(zk.create_all("/a", b"", CreateMode::Persistent));
        send(zk.get("/a"));
        send(zk.set("/a", b"", None));
        send(zk.set_or_create("/a", b""));
        send(zk.delete("/a", None));
        send(zk.delete_all("/a"));
        send(zk.children("/a"));
        send(zk.exists("/a"));
        send(zk.close());
        let mut watch = zk.watch_children("/a");
        send(watch.next());
    }

    #[tokio::test]
    async fn connect_rejects_short_session_timeouts() {
        let err = ZkClient::connect("127.0.0.1:2181", Duration::from_millis(1000)).await.unwrap_err();
        assert!(matches!(err, Error::InvalidSessionTimeout { timeout_ms: 1000, min_ms: 1500 }));
    }

    #[tokio::test]
    async fn connect_rejects_bad_strings_before_any_io() {
        let err = ZkClient::connect("a:1,,b", Duration::from_secs(2)).await.unwrap_err();
        assert!(matches!(err, Error::InvalidConnectString { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn connect_times_out_when_nothing_listens() {
        // A port that was free a moment ago: connection refused, retried until the deadline.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let started = std::time::Instant::now();
        let err = ZkClient::connect(&format!("127.0.0.1:{port}"), Duration::from_millis(1500)).await.unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
        assert!(err.to_string().contains(&format!("127.0.0.1:{port}")), "{err}");
        // the deadline is the 1.5 s session timeout; the bound tells it from a hang
        assert!(started.elapsed() < Duration::from_millis(1500) + Duration::from_secs(5), "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn connect_times_out_when_the_server_never_answers() {
        // Accepts TCP connections and says nothing.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((sock, _)) = listener.accept().await {
                held.push(sock);
            }
        });
        let err = ZkClient::connect(&addr.to_string(), Duration::from_millis(1500)).await.unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
        assert!(err.to_string().contains("no session was established"), "{err}");
        server.abort();
    }

    #[tokio::test]
    async fn unresolvable_hosts() {
        let err = ZkClient::connect("no-such-host.invalid:2181", Duration::from_secs(2)).await.unwrap_err();
        assert!(matches!(err, Error::Resolve { .. } | Error::Timeout { .. }), "{err:?}");
    }
}

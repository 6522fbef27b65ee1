//! A TCP proxy on 127.0.0.1 that tests can stall, resume and cut, to put a network fault
//! between a client and a real server.
//!
//! Its main use is expiring a ZooKeeper session for real: zookeeper-async does not expose a
//! session's id and password, so a second client cannot take the session over. Instead the
//! client connects through the proxy; the test [`stall`](TcpProxy::stall)s it (connections stay
//! open, no byte passes either way, new connections are accepted but not forwarded), waits
//! past the session timeout — the server expires the session — and
//! [`resume`](TcpProxy::resume)s it: the client reconnects with its old session and is told it
//! has expired.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use gregor_testkit::proxy::TcpProxy;
//! use gregor_testkit::zookeeper::ZooKeeperServer;
//!
//! let zk = ZooKeeperServer::shared();
//! let proxy = TcpProxy::start(zk.addr()).await?;
//! let connect = format!("{}/gregor-test/expiry", proxy.addr()); // give this to the client
//! # let _ = connect;
//! proxy.stall();
//! tokio::time::sleep(std::time::Duration::from_secs(8)).await; // > the session timeout
//! proxy.resume(); // the client now sees its session expired
//! # Ok(())
//! # }
//! ```
//!
//! The proxy's tasks run on the tokio runtime that called [`TcpProxy::start`] and end with it
//! or when the proxy is dropped.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinHandle};

/// Bytes read from one side before they are written to the other.
const BUFFER_SIZE: usize = 16 * 1024;

/// A TCP proxy from a free 127.0.0.1 port to a target address, with fault switches.
///
/// Dropping it closes the listener and every connection.
pub struct TcpProxy {
    addr: SocketAddr,
    target: SocketAddr,
    shared: Arc<Shared>,
    accept_task: JoinHandle<()>,
}

/// State shared by the handle, the accept loop and the connection tasks.
struct Shared {
    /// `true` while stalled; connection tasks wait on it before reading, writing and
    /// connecting upstream.
    stalled: watch::Sender<bool>,
    /// The live connection tasks, to close them.
    connections: Mutex<HashMap<u64, AbortHandle>>,
    /// Connections accepted so far.
    accepted: AtomicU64,
}

impl Shared {
    fn connections(&self) -> MutexGuard<'_, HashMap<u64, AbortHandle>> {
        // A panic while holding this lock leaves the map consistent; carry on.
        self.connections.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl TcpProxy {
    /// Listens on a free 127.0.0.1 port and forwards every connection to `target`, connecting
    /// to it when a client connects (or, while stalled, when resumed). A connection the target
    /// refuses is closed.
    ///
    /// Spawns its tasks on the current tokio runtime.
    ///
    /// # Errors
    ///
    /// When the listening socket cannot be bound.
    ///
    /// # Panics
    ///
    /// When called outside a tokio runtime.
    pub async fn start(target: SocketAddr) -> io::Result<TcpProxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let (stalled, _) = watch::channel(false);
        let shared = Arc::new(Shared { stalled, connections: Mutex::new(HashMap::new()), accepted: AtomicU64::new(0) });
        let accept_task = tokio::spawn(accept_loop(listener, target, Arc::clone(&shared)));
        tracing::debug!(%addr, %target, "tcp proxy started");
        Ok(TcpProxy { addr, target, shared, accept_task })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address connections are forwarded to.
    pub fn target(&self) -> SocketAddr {
        self.target
    }

    /// Stops forwarding: connections stay open but no byte passes in either direction, and
    /// new connections are accepted but not connected to the target, like a network partition
    /// that drops packets. Bytes sent meanwhile are held, and delivered on
    /// [`resume`](Self::resume).
    pub fn stall(&self) {
        tracing::debug!(addr = %self.addr, "tcp proxy stalled");
        self.shared.stalled.send_replace(true);
    }

    /// Forwards again after [`stall`](Self::stall), held bytes first.
    pub fn resume(&self) {
        tracing::debug!(addr = %self.addr, "tcp proxy resumed");
        self.shared.stalled.send_replace(false);
    }

    /// Whether the proxy is stalled.
    pub fn is_stalled(&self) -> bool {
        *self.shared.stalled.borrow()
    }

    /// Closes every current connection on both sides (new ones are still accepted) and
    /// returns how many there were. The sockets close as soon as the runtime runs the
    /// cancelled tasks, i.e. at once on a multi-threaded runtime, at the caller's next
    /// `.await` on a current-thread one.
    pub fn drop_connections(&self) -> usize {
        let connections: Vec<AbortHandle> = self.shared.connections().drain().map(|(_, h)| h).collect();
        for connection in &connections {
            connection.abort();
        }
        tracing::debug!(addr = %self.addr, closed = connections.len(), "tcp proxy dropped connections");
        connections.len()
    }

    /// How many connections are open now.
    pub fn connection_count(&self) -> usize {
        self.shared.connections().len()
    }

    /// How many connections have been accepted since the start.
    pub fn accepted_count(&self) -> u64 {
        self.shared.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.accept_task.abort();
        for (_, connection) in self.shared.connections().drain() {
            connection.abort();
        }
    }
}

impl fmt::Debug for TcpProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpProxy")
            .field("addr", &self.addr)
            .field("target", &self.target)
            .field("stalled", &self.is_stalled())
            .field("connections", &self.connection_count())
            .finish()
    }
}

async fn accept_loop(listener: TcpListener, target: SocketAddr, shared: Arc<Shared>) {
    let mut next_id: u64 = 0;
    loop {
        let (client, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // EMFILE and the like: keep serving the connections we have.
                tracing::warn!(error = %e, "tcp proxy could not accept a connection");
                tokio::task::yield_now().await;
                continue;
            }
        };
        shared.accepted.fetch_add(1, Ordering::Relaxed);
        let id = next_id;
        next_id += 1;
        let stalled = shared.stalled.subscribe();
        let task_shared = Arc::clone(&shared);
        // Spawn and register under the lock, so the task cannot deregister before it is
        // registered.
        let mut connections = shared.connections();
        let task = tokio::spawn(async move {
            if let Err(e) = forward(client, target, stalled).await {
                tracing::debug!(%peer, %target, error = %e, "tcp proxy connection ended");
            }
            task_shared.connections().remove(&id);
        });
        connections.insert(id, task.abort_handle());
    }
}

/// Connects to `target` (once not stalled) and copies both ways until both sides are done or
/// either fails.
async fn forward(client: TcpStream, target: SocketAddr, mut stalled: watch::Receiver<bool>) -> io::Result<()> {
    wait_until_flowing(&mut stalled).await?;
    let upstream = TcpStream::connect(target).await?;
    client.set_nodelay(true)?;
    upstream.set_nodelay(true)?;
    let (client_read, client_write) = client.into_split();
    let (upstream_read, upstream_write) = upstream.into_split();
    tokio::try_join!(pump(client_read, upstream_write, stalled.clone()), pump(upstream_read, client_write, stalled),)?;
    Ok(())
}

/// Copies one direction; end-of-file is passed on as a half-close.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut stalled: watch::Receiver<bool>) -> io::Result<()> {
    let mut buf = vec![0u8; BUFFER_SIZE];
    loop {
        wait_until_flowing(&mut stalled).await?;
        let n = from.read(&mut buf).await?;
        // Bytes that arrived while stalled wait here.
        wait_until_flowing(&mut stalled).await?;
        if n == 0 {
            to.shutdown().await?;
            return Ok(());
        }
        to.write_all(&buf[..n]).await?;
    }
}

async fn wait_until_flowing(stalled: &mut watch::Receiver<bool>) -> io::Result<()> {
    match stalled.wait_for(|stalled| !*stalled).await {
        Ok(_) => Ok(()),
        Err(_) => Err(io::Error::other("tcp proxy stopped")),
    }
}

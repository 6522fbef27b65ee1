//! [`Pool`]: one shared connection per broker, opened on first use and replaced when poisoned.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use crate::config::ConnectionConfig;
use crate::connection::BrokerConnection;
use crate::error::{Error, Result};
use crate::BrokerId;

/// Connections keyed by broker address, shared by everyone holding a clone of the pool.
///
/// A connection is opened on the first [`Pool::get`] or [`Pool::get_addr`] for its address and
/// handed out (cloned) until it is poisoned; the next `get` then opens a fresh one. Broker ids
/// are mapped to addresses by [`Pool::set_brokers`] (a [`crate::MetadataCache`] does it on
/// every refresh).
///
/// Connecting to one broker never waits for another: the pool's map is locked only to find a
/// broker's slot, and each slot has its own lock, held while that broker is being connected
/// to (so concurrent callers for the same broker share one connection attempt).
///
/// Cheap to clone (an `Arc`).
#[derive(Debug, Clone)]
pub struct Pool {
    inner: Arc<PoolInner>,
}

#[derive(Debug)]
struct PoolInner {
    config: ConnectionConfig,
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<BrokerConnection>>>>>,
    brokers: RwLock<HashMap<BrokerId, String>>,
}

impl Pool {
    /// An empty pool whose connections use `config`.
    pub fn new(config: ConnectionConfig) -> Pool {
        Pool {
            inner: Arc::new(PoolInner {
                config,
                slots: Mutex::new(HashMap::new()),
                brokers: RwLock::new(HashMap::new()),
            }),
        }
    }

    /// The settings of the pool's connections.
    pub fn config(&self) -> &ConnectionConfig {
        &self.inner.config
    }

    /// Records where broker `id` listens (`host:port`).
    pub fn set_broker(&self, id: BrokerId, addr: impl Into<String>) {
        self.inner.brokers.write().unwrap_or_else(|p| p.into_inner()).insert(id, addr.into());
    }

    /// Records where brokers listen, keeping brokers not named (a broker missing from one
    /// Metadata response may be back in the next).
    pub fn set_brokers<I, S>(&self, brokers: I)
    where
        I: IntoIterator<Item = (BrokerId, S)>,
        S: Into<String>,
    {
        let mut map = self.inner.brokers.write().unwrap_or_else(|p| p.into_inner());
        for (id, addr) in brokers {
            map.insert(id, addr.into());
        }
    }

    /// Where broker `id` listens, if known.
    pub fn broker_addr(&self, id: BrokerId) -> Option<String> {
        self.inner.brokers.read().unwrap_or_else(|p| p.into_inner()).get(&id).cloned()
    }

    /// The connection to broker `id`, opened if there is none or the cached one is poisoned.
    ///
    /// Cancel safety: dropping the future abandons a connection attempt; a connection already
    /// cached stays cached.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownBroker`] when the broker's address is not known (refresh metadata), and
    /// the errors of [`BrokerConnection::connect`].
    pub async fn get(&self, id: BrokerId) -> Result<BrokerConnection> {
        let addr = self.broker_addr(id).ok_or(Error::UnknownBroker { broker_id: id })?;
        self.get_inner(&addr, Some(id)).await
    }

    /// The connection to the broker at `addr` (`host:port`), opened if there is none or the
    /// cached one is poisoned.
    ///
    /// Cancel safety: as [`Pool::get`].
    ///
    /// # Errors
    ///
    /// The errors of [`BrokerConnection::connect`].
    pub async fn get_addr(&self, addr: &str) -> Result<BrokerConnection> {
        let id = {
            let brokers = self.inner.brokers.read().unwrap_or_else(|p| p.into_inner());
            brokers.iter().find(|(_, a)| a.as_str() == addr).map(|(id, _)| *id)
        };
        self.get_inner(addr, id).await
    }

    async fn get_inner(&self, addr: &str, id: Option<BrokerId>) -> Result<BrokerConnection> {
        let slot = {
            let mut slots = self.inner.slots.lock().unwrap_or_else(|p| p.into_inner());
            slots.entry(addr.to_owned()).or_default().clone()
        };
        let mut cached = slot.lock().await;
        if let Some(conn) = cached.as_ref() {
            if !conn.is_poisoned() {
                if let Some(id) = id {
                    conn.set_broker_id(id);
                }
                return Ok(conn.clone());
            }
            tracing::debug!(%addr, broker_id = id, reason = ?conn.poison_reason(), "replacing a poisoned connection");
        }
        *cached = None;
        let conn = BrokerConnection::connect_to(addr.to_owned(), id, &self.inner.config).await?;
        *cached = Some(conn.clone());
        Ok(conn)
    }

    /// The cached, healthy connection to `addr`, without connecting.
    pub fn cached(&self, addr: &str) -> Option<BrokerConnection> {
        let slot = self.inner.slots.lock().unwrap_or_else(|p| p.into_inner()).get(addr).cloned()?;
        let cached = slot.try_lock().ok()?;
        cached.as_ref().filter(|c| !c.is_poisoned()).cloned()
    }

    /// Closes and forgets the connection to `addr`, if any (requests in flight on it fail with
    /// [`Error::Closed`]).
    ///
    /// Cancel safety: the connection is closed at the first poll once its slot is free.
    pub async fn remove(&self, addr: &str) {
        let slot = self.inner.slots.lock().unwrap_or_else(|p| p.into_inner()).remove(addr);
        if let Some(slot) = slot {
            if let Some(conn) = slot.lock().await.take() {
                conn.close().await;
            }
        }
    }

    /// Closes every connection (requests in flight fail with [`Error::Closed`]); the pool stays
    /// usable and reconnects on the next `get`.
    ///
    /// Cancel safety: connections already closed stay closed.
    pub async fn close(&self) {
        let slots: Vec<_> =
            self.inner.slots.lock().unwrap_or_else(|p| p.into_inner()).drain().map(|(_, s)| s).collect();
        for slot in slots {
            if let Some(conn) = slot.lock().await.take() {
                conn.close().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::net::{TcpListener, TcpSocket, TcpStream};
    use tokio::time::Instant;

    /// A listener that never accepts, with its accept queue full: new connects hang.
    async fn black_hole() -> (TcpListener, Vec<TcpStream>, String) {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(0).unwrap();
        let addr = listener.local_addr().unwrap();
        let mut held = Vec::new();
        for _ in 0..4 {
            match tokio::time::timeout(Duration::from_millis(100), TcpStream::connect(addr)).await {
                Ok(Ok(s)) => held.push(s),
                _ => break,
            }
        }
        (listener, held, addr.to_string())
    }

    #[tokio::test]
    async fn a_slow_connect_to_one_broker_does_not_hold_up_another() {
        let (_hole, _held, slow) = black_hole().await;
        let live = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let live_addr = live.local_addr().unwrap().to_string();
        // a connect timeout far beyond what a live broker's connect takes on a loaded machine
        // (the live listener never answers: nothing asked at connect)
        let config = ConnectionConfig::builder()
            .connect_timeout(Duration::from_secs(5))
            .api_version_request(false)
            .build()
            .unwrap();
        let pool = Pool::new(config);
        let started = Instant::now();
        let slow_pool = pool.clone();
        let slow_task = tokio::spawn(async move { slow_pool.get_addr(&slow).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let fast = pool.get_addr(&live_addr).await.unwrap();
        let fast_took = started.elapsed();
        assert!(!fast.is_poisoned());
        assert!(fast_took < Duration::from_secs(4), "the live broker waited for the slow one: {fast_took:?}");
        match slow_task.await.unwrap() {
            Err(Error::ConnectTimeout { after, .. }) => assert_eq!(after, Duration::from_secs(5)),
            other => eprintln!("note: this OS accepted past a full backlog, nothing was slow: {other:?}"),
        }
    }

    #[tokio::test]
    async fn concurrent_gets_share_one_connection_and_a_poisoned_one_is_replaced() {
        let live = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = live.local_addr().unwrap().to_string();
        // (the listener never answers: nothing asked at connect)
        let pool = Pool::new(ConnectionConfig::builder().api_version_request(false).build().unwrap());
        pool.set_broker(3, addr.clone());
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..10 {
            let pool = pool.clone();
            set.spawn(async move { pool.get(3).await.unwrap() });
        }
        let conns: Vec<BrokerConnection> = set.join_all().await;
        assert!(conns.iter().all(|c| c.same_connection(&conns[0])));
        assert_eq!(conns[0].broker_id(), Some(3));
        assert!(pool.cached(&addr).is_some());
        conns[0].close().await;
        assert!(pool.cached(&addr).is_none(), "a poisoned connection is not handed out");
        let fresh = pool.get_addr(&addr).await.unwrap();
        assert!(!fresh.same_connection(&conns[0]));
        assert_eq!(fresh.broker_id(), Some(3), "the id is known from the address");
        pool.close().await;
        assert!(fresh.is_poisoned());
        assert!(matches!(pool.get(4).await.unwrap_err(), Error::UnknownBroker { broker_id: 4 }));
    }
}

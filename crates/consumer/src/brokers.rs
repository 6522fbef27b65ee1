//! The brokers registered in ZooKeeper (`/brokers/ids`), read again each time leaders are looked
//! for, as Java 0.8.2's `LeaderFinderThread` does (`ZkUtils.getAllBrokersInCluster` on every
//! round): a broker that restarted on another port, or joined after the connector started, is
//! found even when no broker the connector knew is left.

use std::sync::{Arc, Mutex};

use gregor_net::{Broker, MetadataCache, Pool};
use gregor_zk::payloads::BrokerRegistration;
use gregor_zk::{paths, ZkClient};

use crate::error::{self, Result};

/// The registered brokers and a metadata cache seeded with them (cheap to clone).
#[derive(Debug, Clone)]
pub(crate) struct Brokers {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    zk: ZkClient,
    pool: Pool,
    /// The cache seeded with the addresses of the last read (replaced when they change).
    metadata: Mutex<MetadataCache>,
}

/// `(broker id, host:port)` of every broker registered under `/brokers/ids`, sorted by id.
/// Unreadable registrations are skipped.
async fn registered(zk: &ZkClient) -> Result<Vec<(i32, String)>> {
    let ids = zk.children(paths::BROKER_IDS).await.map_err(error::zk("listing brokers"))?.unwrap_or_default();
    let mut out = Vec::new();
    for id in ids {
        let Ok(n) = id.parse::<i32>() else { continue };
        if let Some((data, _)) =
            zk.get(&paths::join(paths::BROKER_IDS, &id)).await.map_err(error::zk("reading a broker"))?
        {
            if let Ok(b) = BrokerRegistration::from_json(&data) {
                out.push((n, Broker { id: n, host: b.host, port: b.port }.addr()));
            }
        }
    }
    out.sort();
    Ok(out)
}

impl Brokers {
    /// Reads `/brokers/ids` and seeds a metadata cache with every registered broker.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Zk`] when ZooKeeper fails, [`crate::Error::Net`] when no broker is
    /// registered.
    pub(crate) async fn connect(zk: ZkClient, pool: Pool) -> Result<Brokers> {
        let found = registered(&zk).await?;
        pool.set_brokers(found.iter().cloned());
        let list: Vec<String> = found.into_iter().map(|(_, a)| a).collect();
        let metadata = MetadataCache::new(&list.join(","), pool.clone())
            .map_err(error::net("no broker registered in zookeeper"))?;
        Ok(Brokers { inner: Arc::new(Inner { zk, pool, metadata: Mutex::new(metadata) }) })
    }

    /// The connection pool (shared by every cache this makes).
    pub(crate) fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    /// The current metadata cache, without reading ZooKeeper.
    pub(crate) fn metadata(&self) -> MetadataCache {
        self.inner.metadata.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The addresses of the last read.
    pub(crate) fn addresses(&self) -> Vec<String> {
        self.metadata().bootstrap().to_vec()
    }

    /// Reads `/brokers/ids` again: records every broker's address in the pool and, when the
    /// set of addresses changed, seeds a new metadata cache with them. Returns the current
    /// cache (the previous one when ZooKeeper cannot be read or lists no broker).
    pub(crate) async fn refresh(&self) -> MetadataCache {
        let found = match registered(&self.inner.zk).await {
            Ok(found) if !found.is_empty() => found,
            Ok(_) => {
                tracing::debug!("no broker registered in zookeeper: keeping the known ones");
                return self.metadata();
            }
            Err(e) => {
                tracing::debug!(error = %e, "cannot read /brokers/ids: keeping the known brokers");
                return self.metadata();
            }
        };
        self.inner.pool.set_brokers(found.iter().cloned());
        let list: Vec<String> = found.into_iter().map(|(_, a)| a).collect();
        let mut current = self.inner.metadata.lock().unwrap_or_else(|p| p.into_inner());
        let mut known = current.bootstrap().to_vec();
        known.sort();
        let mut sorted = list.clone();
        sorted.sort();
        if known != sorted {
            match MetadataCache::new(&list.join(","), self.inner.pool.clone()) {
                Ok(fresh) => {
                    tracing::info!(brokers = %list.join(","), "registered brokers changed");
                    *current = fresh;
                }
                Err(e) => tracing::warn!(error = %e, "unusable broker registrations: keeping the known brokers"),
            }
        }
        current.clone()
    }
}

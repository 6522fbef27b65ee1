//! Brokers: the registrations at `/brokers/ids` and the controller at `/controller`.

use gregor_net::BrokerId;
use gregor_zk::paths;
use gregor_zk::payloads::ControllerRegistration;

use crate::error::Result;
use crate::Admin;

/// A registered broker, from `/brokers/ids/N`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BrokerInfo {
    /// The broker id (`broker.id`).
    pub id: BrokerId,
    /// The host clients connect to (`advertised.host.name`).
    pub host: String,
    /// The port clients connect to (`advertised.port`).
    pub port: i32,
    /// The JMX port, -1 when JMX is off.
    pub jmx_port: i32,
    /// When the broker registered, ms since the epoch (`None` if not a number).
    pub timestamp_ms: Option<i64>,
}

impl BrokerInfo {
    /// `host:port`.
    pub fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// The live brokers and the controller.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BrokerList {
    /// The registered brokers, by id.
    pub brokers: Vec<BrokerInfo>,
    /// The controller's broker id (`/controller`), `None` during an election.
    pub controller: Option<BrokerId>,
}

impl Admin {
    /// The registered (live) brokers with their host and port, sorted by id, and the
    /// controller. A broker that goes away between the listing and the read is left out.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`](crate::Error::ZooKeeper), also for a registration that is not
    /// Kafka's JSON.
    pub async fn list_brokers(&self) -> Result<BrokerList> {
        let mut brokers = Vec::new();
        for id in self.live_brokers().await? {
            if let Some(reg) = self.broker_registration(id).await? {
                brokers.push(BrokerInfo {
                    id,
                    timestamp_ms: reg.timestamp_ms(),
                    host: reg.host,
                    port: reg.port,
                    jmx_port: reg.jmx_port,
                });
            }
        }
        Ok(BrokerList { brokers, controller: self.controller().await? })
    }

    /// The controller's broker id (`/controller`), `None` while no broker holds it.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`](crate::Error::ZooKeeper).
    pub async fn controller(&self) -> Result<Option<BrokerId>> {
        match self.zk.get(paths::CONTROLLER).await? {
            Some((data, _)) => Ok(Some(ControllerRegistration::from_json(&data)?.brokerid)),
            None => Ok(None),
        }
    }
}

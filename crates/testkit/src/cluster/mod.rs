//! [`FakeCluster`]: Kafka 0.8.2 brokers on 127.0.0.1, coordinated through a real ZooKeeper.
//!
//! ```text
//!   clients ──TCP──► broker 0 ─┐                       ┌─ /brokers/ids/N (each broker's session)
//!   clients ──TCP──► broker 1 ─┼─ shared state ◄─────► ├─ /controller, /controller_epoch
//!   clients ──TCP──► broker 2 ─┘  (logs, ISR, HW)      ├─ /brokers/topics/T[/partitions/P/state]
//!                     ▲  replicator (followers fetch)   ├─ /config/topics, /config/changes
//!                     └─ controller (one broker) ◄──────┴─ /admin/*, /consumers/G/offsets
//! ```
//!
//! Each broker has its own ZooKeeper session and registers at `/brokers/ids/N`; one is elected
//! controller through `/controller`. A topic written at `/brokers/topics/T` by anyone becomes
//! partitions with leaders, ISRs and state znodes. Followers copy from leaders, so acks=-1 waits
//! for the ISR; a follower that stops fetching leaves the ISR after `replica.lag.time.max.ms`;
//! a killed broker's partitions move to the ISR's next replica.
//!
//! Faults: [`FakeCluster::kill_broker`], [`FakeCluster::restart_broker`],
//! [`FakeCluster::pause_broker`], [`FakeCluster::move_leader`], [`FakeCluster::intercept`] (any
//! [`Fault`](crate::fault::Fault) by API key and broker: error codes, delays, dropped
//! connections, missing responses, and every corrupt frame the
//! [`HostileBroker`](crate::hostile::HostileBroker) can send), [`FakeCluster::set_accept`], and
//! a request log ([`FakeCluster::requests`]) that names the fault each request met.

mod admin;
mod alarm;
mod codes;
mod config;
mod controller;
mod groups;
mod handlers;
mod hooks;
mod kraft;
mod log;
mod modern;
mod placement;
mod records;
mod replicator;
mod server;
mod state;
mod topic_configs;
mod topics;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gregor_zk::payloads::{BrokerRegistration, ControllerRegistration};
use gregor_zk::{paths, CreateMode, ZkClient};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

pub use config::{
    BrokerConfig, Timing, DEFAULT_MESSAGE_MAX_BYTES, DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS,
    DEFAULT_OFFSETS_TOPIC_REPLICATION_FACTOR, DEFAULT_OFFSET_METADATA_MAX_BYTES, DEFAULT_REPLICA_LAG_TIME_MAX,
    OFFSETS_TOPIC,
};
pub use hooks::{LoggedRequest, REQUEST_LOG_CAPACITY};

use crate::fault::{Accept, Rule};
use crate::tls::ServerTls;
use handlers::BrokerCtx;
use state::{BrokerSlot, Shared};

/// Errors of the FakeCluster.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Returned when ZooKeeper fails or refuses an operation.
    #[error("zookeeper")]
    ZooKeeper(#[from] gregor_zk::Error),
    /// Returned when a listener cannot be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Returned when something does not happen in time.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        after: Duration,
    },
    /// Returned for a request the cluster cannot carry out (unknown broker, bad topic).
    #[error("{0}")]
    Invalid(String),
    /// Returned when TLS cannot be set up (a PEM without a certificate or key, a key that does
    /// not fit, a file that cannot be read): see [`crate::tls`].
    #[error("TLS setup: {0}")]
    Tls(String),
}

impl From<crate::tls::Error> for Error {
    fn from(e: crate::tls::Error) -> Error {
        Error::Tls(e.0)
    }
}

/// Kafka 3.x's `message.max.bytes` (1 MiB + the record batch overhead), the modern mode's default.
const MODERN_MESSAGE_MAX_BYTES: usize = 1_048_588;

/// A KRaft cluster id: 16 random bytes in URL-safe base64 without padding, as `kafka-storage.sh
/// random-uuid` prints it.
fn modern_cluster_id() -> String {
    use base64::Engine as _;
    let id: [u8; 16] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id)
}

/// How long start-up steps may take before [`Error::Timeout`].
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// Builds a [`FakeCluster`].
#[derive(Debug, Clone)]
pub struct FakeClusterBuilder {
    brokers: usize,
    first_broker_id: i32,
    config: BrokerConfig,
    zookeeper: String,
    ports: Vec<u16>,
    request_log_capacity: usize,
    tls: Option<ServerTls>,
    /// The modern mode's settings (no ZooKeeper), or `None` for Kafka 0.8.2.
    modern: Option<modern::Modern>,
}

impl FakeClusterBuilder {
    /// Number of brokers (default 3), with ids `0..n`.
    pub fn brokers(mut self, n: usize) -> Self {
        self.brokers = n.max(1);
        self
    }

    /// Id of the first broker (default 0); the others follow.
    pub fn first_broker_id(mut self, id: i32) -> Self {
        self.first_broker_id = id;
        self
    }

    /// Broker settings.
    pub fn config(mut self, config: BrokerConfig) -> Self {
        self.config = config;
        self
    }

    /// Changes broker settings in place.
    pub fn configure(mut self, f: impl FnOnce(&mut BrokerConfig)) -> Self {
        f(&mut self.config);
        self
    }

    /// How many requests the request log keeps (default [`REQUEST_LOG_CAPACITY`]; 0 turns it
    /// off). Logged Produce requests hold their message sets: keep it small for long runs.
    pub fn request_log_capacity(mut self, n: usize) -> Self {
        self.request_log_capacity = n;
        self
    }

    /// Fixed ports for the brokers (default: free ports picked by the system).
    pub fn ports(mut self, ports: Vec<u16>) -> Self {
        self.ports = ports;
        self
    }

    /// Serves every broker's listener over TLS with `tls`'s certificate (and, if it says so,
    /// requires client certificates): Kafka's `listeners=SSL://...`. Default: plaintext. The
    /// brokers still register `host:port` in ZooKeeper; a client connects with
    /// `security.protocol=SSL` and the CA that signed the certificate. A connection whose
    /// handshake fails is closed and counted ([`FakeCluster::tls_handshakes_failed`]).
    pub fn tls(mut self, tls: ServerTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Requires SASL on every connection (modern mode only; `SASL_PLAINTEXT`, or `SASL_SSL`
    /// with [`FakeClusterBuilder::tls`]): the brokers offer `mechanisms` and know `users`
    /// (name, password). A client sends ApiVersions, SaslHandshake v1 and SaslAuthenticate
    /// until the mechanism is done; any other request before that closes the connection, and a
    /// failed authentication is answered 58 SASL_AUTHENTICATION_FAILED, then closed, as
    /// Kafka's `SaslServerAuthenticator` does.
    ///
    /// # Panics
    ///
    /// On a builder not made by [`FakeCluster::modern`]: Kafka 0.8.2 has no SASL.
    pub fn sasl<U, P>(mut self, mechanisms: &[crate::sasl::Mechanism], users: impl IntoIterator<Item = (U, P)>) -> Self
    where
        U: Into<String>,
        P: Into<String>,
    {
        let modern =
            self.modern.as_mut().expect("SASL needs the modern mode (FakeCluster::modern): Kafka 0.8.2 has no SASL");
        modern.sasl = Some(modern::SaslUsers {
            mechanisms: mechanisms.to_vec(),
            users: users.into_iter().map(|(u, p)| (u.into(), p.into())).collect(),
        });
        self
    }

    /// Starts the brokers, registers them, waits for a controller.
    ///
    /// # Errors
    ///
    /// [`Error::ZooKeeper`] when ZooKeeper is unreachable, [`Error::Bind`], [`Error::Timeout`].
    pub async fn start(self) -> Result<FakeCluster, Error> {
        if self.modern.is_some() {
            return self.start_modern().await;
        }
        let shared = Shared::new(self.config.clone(), self.request_log_capacity, self.tls.clone(), None);
        let admin = ZkClient::connect(&self.zookeeper, self.config.zookeeper_session_timeout).await?;
        for path in [
            paths::CONSUMERS,
            paths::BROKER_IDS,
            paths::BROKER_TOPICS,
            paths::CONFIG_CHANGES,
            paths::CONFIG_TOPICS,
            paths::DELETE_TOPICS,
        ] {
            if admin.exists(path).await?.is_none() {
                match admin.create_all(path, b"", CreateMode::Persistent).await {
                    Ok(_) | Err(gregor_zk::Error::NodeExists { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        let (shutdown, shutdown_rx) = watch::channel(false);
        let (isr_tx, mut isr_rx) = mpsc::unbounded_channel::<(String, i32)>();
        let mut tasks = Vec::new();
        tasks.push(tokio::spawn(replicator::run(shared.clone(), isr_tx, shutdown_rx.clone())));
        {
            let shared = shared.clone();
            let zk = admin.clone();
            tasks.push(tokio::spawn(async move {
                while let Some((t, p)) = isr_rx.recv().await {
                    controller::write_state(&shared, &zk, &t, p).await;
                }
            }));
        }
        let cluster = FakeCluster {
            shared,
            admin: Some(admin),
            zookeeper: self.zookeeper.clone(),
            brokers: Mutex::new(BTreeMap::new()),
            crashed: Mutex::new(Vec::new()),
            shutdown,
            tasks: Mutex::new(tasks),
        };
        cluster.listen(&self).await?;
        let n = self.brokers;
        cluster
            .wait_for("a controller and every broker registered", STARTUP_TIMEOUT, |st| {
                st.controller.is_some() && st.brokers.values().filter(|b| b.registered).count() == n
            })
            .await?;
        Ok(cluster)
    }

    /// The modern mode's start: no ZooKeeper; the brokers register and elect their controller
    /// in the cluster's own metadata (see `kraft.rs`).
    async fn start_modern(self) -> Result<FakeCluster, Error> {
        let shared = Shared::new(self.config.clone(), self.request_log_capacity, self.tls.clone(), self.modern.clone());
        let (shutdown, shutdown_rx) = watch::channel(false);
        // ISR changes are in the state already; there are no znodes to write
        let (isr_tx, mut isr_rx) = mpsc::unbounded_channel::<(String, i32)>();
        let tasks = vec![
            tokio::spawn(replicator::run(shared.clone(), isr_tx, shutdown_rx)),
            tokio::spawn(async move { while isr_rx.recv().await.is_some() {} }),
        ];
        let cluster = FakeCluster {
            shared,
            admin: None,
            zookeeper: String::new(),
            brokers: Mutex::new(BTreeMap::new()),
            crashed: Mutex::new(Vec::new()),
            shutdown,
            tasks: Mutex::new(tasks),
        };
        cluster.listen(&self).await?;
        Ok(cluster)
    }
}

impl FakeCluster {
    /// Binds every broker's listener and launches the brokers.
    async fn listen(&self, builder: &FakeClusterBuilder) -> Result<(), Error> {
        let cluster = self;
        let mut listeners = Vec::new();
        for i in 0..builder.brokers {
            let id = builder.first_broker_id + i as i32;
            let port = builder.ports.get(i).copied().unwrap_or(0);
            let addr = format!("{}:{port}", "127.0.0.1");
            let listener = TcpListener::bind(&addr).await.map_err(|source| Error::Bind { addr, source })?;
            let port = listener.local_addr().map_err(|source| Error::Bind { addr: "127.0.0.1".into(), source })?.port();
            cluster
                .shared
                .state()
                .brokers
                .insert(id, BrokerSlot { port, running: false, registered: false, paused: false });
            listeners.push((id, listener));
        }
        for (id, listener) in listeners {
            cluster.launch(id, listener).await?;
        }
        Ok(())
    }
}

/// A running broker's tasks.
#[derive(Debug)]
struct BrokerRuntime {
    /// The broker's ZooKeeper session (none in the modern mode).
    zk: Option<ZkClient>,
    /// The broker's own path to ZooKeeper, so a crash can silence its session.
    zk_proxy: Option<crate::proxy::TcpProxy>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

/// A Kafka 0.8.2 cluster in this process, speaking the wire protocol on 127.0.0.1 and
/// coordinating through a real ZooKeeper (see the module docs).
#[derive(Debug)]
pub struct FakeCluster {
    shared: Arc<Shared>,
    /// The cluster's own ZooKeeper session (none in the modern mode).
    admin: Option<ZkClient>,
    zookeeper: String,
    brokers: Mutex<BTreeMap<i32, BrokerRuntime>>,
    /// Crashed brokers whose ZooKeeper sessions are left to expire.
    crashed: Mutex<Vec<BrokerRuntime>>,
    shutdown: watch::Sender<bool>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

/// [`kraft::create_topic`] for [`FakeCluster`]'s own calls: an existing topic is left alone, as
/// in the 0.8.2 mode.
fn kraft_create(
    shared: &Shared,
    name: &str,
    partitions: i32,
    replication_factor: i32,
    assignment: Option<BTreeMap<i32, Vec<i32>>>,
    config: BTreeMap<String, String>,
) -> Result<(), Error> {
    match kraft::create_topic(shared, name, partitions, replication_factor, assignment, config) {
        Ok(()) | Err(kraft::NotCreated::Exists) => Ok(()),
        Err(kraft::NotCreated::Invalid(e)) => Err(Error::Invalid(e)),
    }
}

/// `host:port` and `/chroot` of a single-server connect string, for routing a broker's session
/// through a proxy.
fn single_server(connect: &str) -> Option<(SocketAddr, &str)> {
    let (hosts, chroot) = connect.find('/').map_or((connect, ""), |i| connect.split_at(i));
    if hosts.contains(',') {
        return None;
    }
    use std::net::ToSocketAddrs;
    let addr = hosts.to_socket_addrs().ok()?.next()?;
    Some((addr, chroot))
}

impl FakeCluster {
    /// A builder for a cluster whose brokers use the ZooKeeper at `zookeeper`
    /// (`host:port[/chroot]`).
    pub fn builder(zookeeper: impl Into<String>) -> FakeClusterBuilder {
        FakeClusterBuilder {
            brokers: 3,
            first_broker_id: 0,
            config: BrokerConfig::default(),
            zookeeper: zookeeper.into(),
            ports: vec![],
            request_log_capacity: REQUEST_LOG_CAPACITY,
            tls: None,
            modern: None,
        }
    }

    /// A builder for a cluster in the modern mode: brokers of Kafka 3.7 to 4.x in KRaft mode,
    /// without ZooKeeper. They answer ApiVersions, speak the versions from Kafka 4.0's oldest to
    /// Kafka 3.7's newest of Produce (v3-v10, one RecordBatch v2 per partition, idempotent
    /// producers' sequences checked), Fetch (v4-v16, topic ids from v13), ListOffsets (v1-v8,
    /// by time too), Metadata (v0-v12, topic ids), CreateTopics (v2-v7) and InitProducerId
    /// (v0-v4), and the admin APIs DeleteTopics (v1-v6), DescribeConfigs (v1-v4, a Kafka 3.7
    /// topic's 31 configs with sources and synonyms), AlterConfigs (v0-v2),
    /// IncrementalAlterConfigs (v0-v1) and CreatePartitions (v0-v3), over plaintext,
    /// [TLS](FakeClusterBuilder::tls) and [SASL](FakeClusterBuilder::sasl). Topics live in the
    /// cluster's own metadata: created by [`FakeCluster::create_topic`], CreateTopics or
    /// auto-creation. Replication, ISRs, acks, leader moves and broker kills work as in the 0.8.2
    /// mode. Where Kafka 3.7's defaults differ from 0.8.2's, the builder starts from 3.7's:
    /// `delete.topic.enable=true`, `unclean.leader.election.enable=false`,
    /// `message.max.bytes=1048588`. Not served (yet): consumer groups and offsets over Kafka
    /// APIs, transactions, other admin APIs; a client asking for one finds it missing from
    /// ApiVersions.
    pub fn modern() -> FakeClusterBuilder {
        let mut builder = FakeCluster::builder(String::new());
        builder.config.message_max_bytes = MODERN_MESSAGE_MAX_BYTES;
        // Kafka 3.7's defaults where they differ from 0.8.2's
        builder.config.delete_topic_enable = true;
        builder.config.unclean_leader_election_enable = false;
        builder.modern = Some(modern::Modern { cluster_id: modern_cluster_id(), sasl: None });
        builder
    }

    /// Starts `brokers` brokers with default settings.
    ///
    /// # Errors
    ///
    /// As [`FakeClusterBuilder::start`].
    pub async fn start(brokers: usize, zookeeper: impl Into<String>) -> Result<FakeCluster, Error> {
        FakeCluster::builder(zookeeper).brokers(brokers).start().await
    }

    async fn launch(&self, id: i32, listener: TcpListener) -> Result<(), Error> {
        let Some(admin) = self.admin.clone() else {
            // modern mode: the broker registers in the cluster's metadata as it starts serving
            let (shutdown, rx) = watch::channel(false);
            let ctx = BrokerCtx { id, shared: self.shared.clone(), zk: None };
            if let Some(b) = self.shared.state().brokers.get_mut(&id) {
                b.running = true;
                b.paused = false;
            }
            let tasks = vec![tokio::spawn(server::serve(listener, ctx, rx))];
            kraft::brokers_changed(&self.shared);
            self.lock_brokers().insert(id, BrokerRuntime { zk: None, zk_proxy: None, shutdown, tasks });
            return Ok(());
        };
        let cfg = &self.shared.config;
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        // each broker reaches ZooKeeper through its own proxy, so that a crash can stop its
        // heartbeats and let the session expire as a kill -9 does
        let zk_proxy = match single_server(&self.zookeeper) {
            Some((addr, _)) => crate::proxy::TcpProxy::start(addr).await.ok(),
            None => None,
        };
        let connect = match (&zk_proxy, single_server(&self.zookeeper)) {
            (Some(p), Some((_, chroot))) => format!("{}{chroot}", p.addr()),
            _ => self.zookeeper.clone(),
        };
        let zk = ZkClient::connect(&connect, cfg.zookeeper_session_timeout).await?;
        let (shutdown, rx) = watch::channel(false);
        let ctx = BrokerCtx { id, shared: self.shared.clone(), zk: Some(zk.clone()) };
        {
            let mut st = self.shared.state();
            if let Some(b) = st.brokers.get_mut(&id) {
                b.running = true;
                b.paused = false;
            }
        }
        let mut tasks = vec![tokio::spawn(server::serve(listener, ctx.clone(), rx.clone()))];
        let reg = BrokerRegistration::new(&cfg.host, i32::from(port), controller::now_ms());
        // after a crash the old session's registration lingers until it expires; Kafka's
        // broker waits for it to go, and so does this one
        let deadline = tokio::time::Instant::now() + cfg.zookeeper_session_timeout * 3;
        loop {
            match zk.create_all(&paths::broker(id), &reg.to_json(), CreateMode::Ephemeral).await {
                Ok(_) => break,
                Err(gregor_zk::Error::NodeExists { .. }) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        tasks.push(tokio::spawn(controller::run_election(ctx, admin, rx)));
        self.lock_brokers().insert(id, BrokerRuntime { zk: Some(zk), zk_proxy, shutdown, tasks });
        Ok(())
    }

    fn lock_brokers(&self) -> std::sync::MutexGuard<'_, BTreeMap<i32, BrokerRuntime>> {
        self.brokers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `host:port` of every broker, comma-separated: a `metadata.broker.list`.
    pub fn bootstrap(&self) -> String {
        self.broker_addrs().iter().map(|(_, a)| a.to_string()).collect::<Vec<_>>().join(",")
    }

    /// True when the brokers serve TLS ([`FakeClusterBuilder::tls`]).
    pub fn is_tls(&self) -> bool {
        self.shared.tls.is_some()
    }

    /// How many connections the brokers have accepted since the start (every broker, each
    /// connection counted once, before any TLS handshake): to prove a client does not reconnect
    /// in a loop.
    pub fn connections_accepted(&self) -> u64 {
        self.shared.hooks.connections_accepted()
    }

    /// How many TLS handshakes the brokers saw fail (the client refused the certificate, or
    /// presented none when one is required).
    pub fn tls_handshakes_failed(&self) -> u64 {
        self.shared.hooks.tls_handshakes_failed()
    }

    /// Every broker's id and address, running or not.
    pub fn broker_addrs(&self) -> Vec<(i32, SocketAddr)> {
        let st = self.shared.state();
        st.brokers.iter().map(|(id, b)| (*id, SocketAddr::from(([127, 0, 0, 1], b.port)))).collect()
    }

    /// The address of one broker.
    pub fn broker_addr(&self, id: i32) -> Option<SocketAddr> {
        self.broker_addrs().into_iter().find(|(b, _)| *b == id).map(|(_, a)| a)
    }

    /// The ZooKeeper connect string the brokers use (with its chroot); empty in the modern mode.
    pub fn zookeeper(&self) -> &str {
        &self.zookeeper
    }

    /// The cluster's own ZooKeeper session (rooted at the chroot), for tests that read znodes.
    ///
    /// # Panics
    ///
    /// In the modern mode, which has no ZooKeeper: see [`FakeCluster::try_zk`].
    pub fn zk(&self) -> &ZkClient {
        self.admin.as_ref().expect("a modern-mode FakeCluster has no ZooKeeper")
    }

    /// The cluster's own ZooKeeper session, `None` in the modern mode.
    pub fn try_zk(&self) -> Option<&ZkClient> {
        self.admin.as_ref()
    }

    /// True for a cluster in the modern mode ([`FakeCluster::modern`]).
    pub fn is_modern(&self) -> bool {
        self.shared.modern.is_some()
    }

    /// The KRaft cluster id Metadata names (modern mode), `None` for a 0.8.2 cluster.
    pub fn cluster_id(&self) -> Option<&str> {
        self.shared.modern.as_ref().map(|m| m.cluster_id.as_str())
    }

    /// A topic's id (modern mode: Metadata v10+ and Fetch v13+ name topics by it).
    pub fn topic_id(&self, topic: &str) -> Option<gregor_protocol::schema::Uuid> {
        self.shared.state().topics.get(topic).map(|t| t.id)
    }

    /// Leaders elected from outside their partition's ISR since the cluster started (see
    /// [`BrokerConfig::unclean_leader_election_enable`]): each may have lost acknowledged
    /// writes, as in Kafka.
    pub fn unclean_elections(&self) -> u64 {
        self.shared.state().unclean_elections
    }

    /// A topic's own config settings (what CreateTopics, AlterConfigs or
    /// IncrementalAlterConfigs set; unset configs take the broker's values), or `None` when the
    /// topic does not exist.
    pub fn topic_config(&self, topic: &str) -> Option<BTreeMap<String, String>> {
        self.shared.state().topics.get(topic).map(|t| t.config.clone())
    }

    /// The current controller's id.
    pub fn controller(&self) -> Option<i32> {
        self.shared.state().controller
    }

    /// The leader of a partition (-1 = none), its replicas and ISR, from the cluster's state.
    pub fn partition_info(&self, topic: &str, partition: i32) -> Option<(i32, Vec<i32>, Vec<i32>)> {
        let st = self.shared.state();
        st.partition(topic, partition).map(|p| (p.leader, p.replicas.clone(), p.isr.clone()))
    }

    /// A partition's leader, if it has a live one.
    pub fn leader(&self, topic: &str, partition: i32) -> Option<i32> {
        let st = self.shared.state();
        st.partition(topic, partition).map(|p| p.leader).filter(|l| st.is_live(*l))
    }

    /// A partition's high watermark (what consumers can read up to) and its leader's log end.
    pub fn offsets(&self, topic: &str, partition: i32) -> Option<(i64, i64)> {
        let st = self.shared.state();
        let p = st.partition(topic, partition)?;
        Some((p.hw, p.leader_log().map_or(-1, |l| l.leo())))
    }

    /// The partitions of a topic the cluster knows.
    pub fn partitions(&self, topic: &str) -> Vec<i32> {
        self.shared.state().topics.get(topic).map(|t| t.partitions.keys().copied().collect()).unwrap_or_default()
    }

    /// Creates a topic as Kafka's tools do (replicas placed like Kafka over the live brokers)
    /// and waits until every partition has a leader.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] for a bad name or replication factor, [`Error::ZooKeeper`],
    /// [`Error::Timeout`].
    pub async fn create_topic(&self, name: &str, partitions: i32, replication_factor: i32) -> Result<(), Error> {
        match &self.admin {
            Some(zk) => topics::create_topic(&self.shared, zk, name, partitions, replication_factor, None).await?,
            None => kraft_create(&self.shared, name, partitions, replication_factor, None, BTreeMap::new())?,
        }
        self.wait_for_leaders(name, STARTUP_TIMEOUT).await
    }

    /// Creates a topic with an explicit assignment (partition -> replicas, the first preferred)
    /// and per-topic configs, and waits for its leaders.
    ///
    /// # Errors
    ///
    /// As [`FakeCluster::create_topic`].
    pub async fn create_topic_with(
        &self,
        name: &str,
        assignment: BTreeMap<i32, Vec<i32>>,
        config: BTreeMap<String, String>,
    ) -> Result<(), Error> {
        match &self.admin {
            Some(zk) => {
                topics::create_topic_with_config(&self.shared, zk, name, 0, 0, Some(assignment), config).await?
            }
            None => kraft_create(&self.shared, name, 0, 0, Some(assignment), config)?,
        }
        self.wait_for_leaders(name, STARTUP_TIMEOUT).await
    }

    /// Waits until the topic exists and each of its partitions has a live leader.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`].
    pub async fn wait_for_leaders(&self, topic: &str, timeout: Duration) -> Result<(), Error> {
        self.wait_for(&format!("leaders of {topic}"), timeout, |st| {
            st.topics
                .get(topic)
                .is_some_and(|t| !t.partitions.is_empty() && t.partitions.values().all(|p| st.is_live(p.leader)))
        })
        .await
    }

    async fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        mut ready: impl FnMut(&state::State) -> bool,
    ) -> Result<(), Error> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self
                .shared
                .wait_until(deadline.min(tokio::time::Instant::now() + Duration::from_millis(50)), &mut ready)
                .await
            {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Timeout { what: what.to_owned(), after: timeout });
            }
        }
    }

    /// Kills a broker: its connections close, its listener stops, its ZooKeeper session ends
    /// (so its registration goes and the controller moves its partitions). Its logs are kept
    /// for a restart, as a disk would keep them.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] for an unknown or already dead broker.
    pub async fn kill_broker(&self, id: i32) -> Result<(), Error> {
        let runtime =
            self.lock_brokers().remove(&id).ok_or_else(|| Error::Invalid(format!("broker {id} is not running")))?;
        let _ = runtime.shutdown.send(true);
        for t in &runtime.tasks {
            t.abort();
        }
        {
            let mut st = self.shared.state();
            if let Some(b) = st.brokers.get_mut(&id) {
                b.running = false;
            }
            if st.controller == Some(id) {
                st.controller = None;
            }
        }
        let Some(zk) = runtime.zk.as_ref() else {
            // modern mode: the controller fences the broker at once
            kraft::brokers_changed(&self.shared);
            return Ok(());
        };
        // a clean shutdown: deregister at once (and give up /controller if held), then close
        // the session; the proxy stays up until the close has gone through
        let _ = zk.delete(&paths::broker(id), None).await;
        if let Ok(Some((data, _))) = zk.get(paths::CONTROLLER).await {
            if ControllerRegistration::from_json(&data).is_ok_and(|c| c.brokerid == id) {
                let _ = zk.delete(paths::CONTROLLER, None).await;
            }
        }
        let _ = zk.close().await;
        drop(runtime);
        self.shared.notify();
        Ok(())
    }

    /// Crashes a broker as `kill -9` would: it stops serving at once, but its ZooKeeper session
    /// is not closed, so its registration stays until the session expires
    /// (`zookeeper.session.timeout.ms`, 6 s by default) and only then does the controller move
    /// its partitions. Meanwhile Metadata still names it and acks=-1 requests wait on it. Use
    /// [`FakeCluster::kill_broker`] for a clean shutdown. Needs a single-server ZooKeeper
    /// connect string (it falls back to a clean kill otherwise).
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] for an unknown or already dead broker.
    pub async fn crash_broker(&self, id: i32) -> Result<(), Error> {
        let runtime =
            self.lock_brokers().remove(&id).ok_or_else(|| Error::Invalid(format!("broker {id} is not running")))?;
        let Some(proxy) = runtime.zk_proxy.as_ref() else {
            self.lock_brokers().insert(id, runtime);
            return self.kill_broker(id).await;
        };
        proxy.stall();
        let _ = runtime.shutdown.send(true);
        for t in &runtime.tasks {
            t.abort();
        }
        {
            let mut st = self.shared.state();
            if let Some(b) = st.brokers.get_mut(&id) {
                b.running = false;
            }
        }
        self.crashed.lock().unwrap_or_else(|p| p.into_inner()).push(runtime);
        self.shared.notify();
        Ok(())
    }

    /// Restarts a killed broker on the same port: it registers again, truncates its follower
    /// logs to the high watermark and catches up; the leaders add it back to their ISRs.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] for an unknown or running broker, [`Error::Bind`],
    /// [`Error::ZooKeeper`].
    pub async fn restart_broker(&self, id: i32) -> Result<(), Error> {
        let port = {
            let st = self.shared.state();
            match st.brokers.get(&id) {
                Some(b) if !b.running => b.port,
                Some(_) => return Err(Error::Invalid(format!("broker {id} is running"))),
                None => return Err(Error::Invalid(format!("no broker {id}"))),
            }
        };
        let addr = format!("127.0.0.1:{port}");
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(&addr).await {
                Ok(l) => break l,
                Err(source) if tries >= 50 => return Err(Error::Bind { addr, source }),
                Err(_) => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        // the crashed incarnations' sessions are no longer needed
        self.crashed.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.launch(id, listener).await?;
        self.wait_for(&format!("broker {id} registered"), STARTUP_TIMEOUT, |st| st.is_live(id)).await
    }

    /// Restarts a killed broker as [`FakeCluster::restart_broker`] does, but on a new port
    /// picked by the system (a broker moved to another listener): it registers its new address
    /// in `/brokers/ids/N` and Metadata names it; the old port is closed. Returns the new
    /// address.
    ///
    /// # Errors
    ///
    /// As [`FakeCluster::restart_broker`].
    pub async fn restart_broker_on_new_port(&self, id: i32) -> Result<SocketAddr, Error> {
        match self.shared.state().brokers.get(&id) {
            Some(b) if !b.running => {}
            Some(_) => return Err(Error::Invalid(format!("broker {id} is running"))),
            None => return Err(Error::Invalid(format!("no broker {id}"))),
        }
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|source| Error::Bind { addr: "127.0.0.1:0".into(), source })?;
        let addr = listener.local_addr().map_err(|source| Error::Bind { addr: "127.0.0.1:0".into(), source })?;
        if let Some(b) = self.shared.state().brokers.get_mut(&id) {
            b.port = addr.port();
        }
        self.crashed.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.launch(id, listener).await?;
        self.wait_for(&format!("broker {id} registered"), STARTUP_TIMEOUT, |st| st.is_live(id)).await?;
        Ok(addr)
    }

    /// Pauses a broker: it keeps its connections and its ZooKeeper session but answers nothing
    /// and stops replicating, so clients time out and its followers drop out of ISRs.
    pub fn pause_broker(&self, id: i32) {
        if let Some(b) = self.shared.state().brokers.get_mut(&id) {
            b.paused = true;
        }
        self.shared.notify();
    }

    /// Resumes a paused broker.
    pub fn resume_broker(&self, id: i32) {
        if let Some(b) = self.shared.state().brokers.get_mut(&id) {
            b.paused = false;
        }
        self.shared.notify();
    }

    /// Moves a partition's leadership to `to`, which must be a live in-sync replica.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] when `to` is not a live member of the ISR.
    pub async fn move_leader(&self, topic: &str, partition: i32, to: i32) -> Result<(), Error> {
        match &self.admin {
            Some(zk) => controller::move_leader(&self.shared, zk, topic, partition, to).await.map_err(Error::Invalid),
            None => kraft::move_leader(&self.shared, topic, partition, to).map_err(Error::Invalid),
        }
    }

    /// Adds a fault rule, tried after the existing ones, by every broker (or the one
    /// [`Rule::on_broker`] names); see [`crate::fault`] for how rules are tried and what each
    /// [`Fault`](crate::fault::Fault) does.
    ///
    /// ```no_run
    /// # fn demo(cluster: &gregor_testkit::FakeCluster) {
    /// use gregor_protocol::frame::ApiKey;
    /// use gregor_protocol::ErrorCode;
    /// use gregor_testkit::fault::{Fault, Rule};
    ///
    /// cluster.intercept(Rule::on(ApiKey::Produce, Fault::Error(ErrorCode::NotLeaderForPartition)).once());
    /// cluster.intercept(Rule::on(ApiKey::Fetch, Fault::TruncateThenClose).on_broker(1).times(3));
    /// # }
    /// ```
    pub fn intercept(&self, rule: Rule) {
        self.shared.hooks.add(rule);
    }

    /// Removes every fault rule: requests are answered correctly from now on (connections a
    /// fault already silenced stay silent).
    pub fn clear_intercepts(&self) {
        self.shared.hooks.clear();
    }

    /// How broker `id` greets the connections it accepts from now on (default
    /// [`Accept::Serve`]); connections already open are left as they are.
    pub fn set_accept(&self, id: i32, accept: Accept) {
        self.shared.hooks.set_accept(id, accept);
    }

    /// The requests the brokers received, oldest first (at most
    /// [`FakeClusterBuilder::request_log_capacity`] of them).
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.shared.hooks.requests()
    }

    /// Empties the request log.
    pub fn clear_requests(&self) {
        self.shared.hooks.clear_log();
    }

    /// Stops every broker and closes the sessions.
    pub async fn shutdown(self) {
        let ids: Vec<i32> = self.lock_brokers().keys().copied().collect();
        for id in ids {
            let _ = self.kill_broker(id).await;
        }
        let _ = self.shutdown.send(true);
        if let Some(zk) = &self.admin {
            let _ = zk.close().await;
        }
    }
}

impl Drop for FakeCluster {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        for t in self.tasks.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            t.abort();
        }
        for (_, b) in self.lock_brokers().iter() {
            let _ = b.shutdown.send(true);
            for t in &b.tasks {
                t.abort();
            }
        }
    }
}

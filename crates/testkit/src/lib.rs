//! # gregor-testkit
//!
//! Test infrastructure for Kafka 0.8.2 clients — gregor's and anyone else's:
//!
//! * [`zookeeper::ZooKeeperServer`]: Debian's real ZooKeeper, started on a free loopback port
//!   with a temporary data directory and stopped on drop; one shared server per test binary
//!   ([`zookeeper::ZooKeeperServer::shared`]) and a unique chroot per test.
//! * [`proxy::TcpProxy`]: a TCP proxy that can stall traffic, to expire a ZooKeeper session
//!   for real or cut a client off a broker.
//! * [`FakeCluster`]: Kafka 0.8.2 brokers on 127.0.0.1 that speak the wire protocol and
//!   coordinate through the real ZooKeeper exactly as Kafka does (registration, controller,
//!   topics, partition state, ISR, admin paths, consumer offsets), with faults (kill,
//!   crash, restart or pause a broker, move a leader, any [`fault::Fault`] on any request) and
//!   a request log.
//! * [`hostile::HostileBroker`]: one misbehaving broker with no ZooKeeper and no replicas, to
//!   prove a client turns corrupt frames and silence into typed errors within its timeouts.
//! * [`fault`]: the one fault vocabulary both fakes take. A [`fault::Rule`] (an API key or any,
//!   optionally one broker, once / `times(n)` / always) picks a [`fault::Fault`] for each
//!   request: an error code, a delay, a closed connection, silence, or a corrupt frame (a
//!   wrong correlation id, a truncated frame, a bad CRC, a huge array count, ...), each
//!   documented once with what it models. `cluster.intercept(rule)` and
//!   `hostile.intercept(rule)` apply it the same way to every connection they serve.
//! * [`wire`]: a tiny raw wire client (one connection, the codec, nothing else) and request
//!   builders, to poke a broker exactly.
//! * [`tools`]: kcat (in 0.8.2 mode) and kafka-python run in child processes bounded by a
//!   timeout, and the rule for a missing external program ([`tools::SkipRule`]): the test
//!   fails naming the apt-get command, unless the developer set `GREGOR_ALLOW_SKIP=1` outside
//!   `CI`.
//! * [`support`]: what every client crate's tests need around these, written once: waiting
//!   for a condition ([`support::eventually`]) or a future ([`support::bounded`]), a counting
//!   global allocator ([`support::CountingAllocator`]), and a FakeCluster per test in a chroot
//!   of its own with its topics led ([`support::cluster`]).
//! * [`tls`]: TLS listeners for the FakeCluster ([`tls::ServerTls`],
//!   [`FakeClusterBuilder::tls`]) and certificates made at test time ([`tls::TestPki`]).
//! * the `gregor-testkit` binary, which runs a cluster outside tests.
//!
//! The testkit depends only on `gregor-protocol` and `gregor-zk`, never on a client crate, so
//! it can test all of them. Its fidelity is proven by clients gregor did not write (kcat and
//! kafka-python, in this crate's tests) and by the frames of a genuine 0.8.2.2 cluster.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use gregor_testkit::{zookeeper::ZooKeeperServer, FakeCluster};
//!
//! let zk = ZooKeeperServer::shared();
//! let cluster = FakeCluster::start(3, zk.unique_chroot("my-test")).await?;
//! cluster.create_topic("events", 3, 2).await?;
//! println!("metadata.broker.list={}", cluster.bootstrap());
//! cluster.kill_broker(cluster.leader("events", 0).unwrap()).await?;
//! # Ok(()) }
//! ```

pub mod cluster;
pub mod fault;
pub mod hostile;
mod kafka_0_8_2;
pub mod peers;
pub mod proxy;
pub mod sasl;
pub mod support;
pub mod tls;
pub mod tools;
pub mod wire;
pub mod zookeeper;

pub use cluster::{BrokerConfig, FakeCluster, FakeClusterBuilder, LoggedRequest, Timing};

/// Installs a `tracing` subscriber that prints to stderr, filtered by `RUST_LOG` (default
/// `warn`). Safe to call more than once; for tests and the binary, never for libraries.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}

/// Environment variable naming a real cluster's `metadata.broker.list` for end-to-end tests.
pub const BROKERS_ENV: &str = "GREGOR_BROKERS";
/// Environment variable naming that cluster's ZooKeeper (`host:port[/chroot]`).
pub const ZOOKEEPER_ENV: &str = "GREGOR_ZOOKEEPER";

/// A real Kafka cluster named by [`BROKERS_ENV`] and [`ZOOKEEPER_ENV`] (e.g. the one
/// `docker-compose.yml` starts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalCluster {
    /// `host:port,host:port,...`
    pub brokers: String,
    /// `host:port[/chroot]`
    pub zookeeper: String,
}

/// The external cluster end-to-end tests should target instead of a [`FakeCluster`], when both
/// variables are set. Tests that need fault injection (killing brokers, intercepts) keep the
/// FakeCluster.
pub fn external_cluster() -> Option<ExternalCluster> {
    let brokers = std::env::var(BROKERS_ENV).ok().filter(|s| !s.is_empty())?;
    let zookeeper = std::env::var(ZOOKEEPER_ENV).ok().filter(|s| !s.is_empty())?;
    Some(ExternalCluster { brokers, zookeeper })
}

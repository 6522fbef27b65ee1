//! A FakeCluster per test, in a ZooKeeper chroot of its own on the binary's shared server.

use std::time::Duration;

use crate::cluster::{BrokerConfig, FakeCluster};
use crate::zookeeper::ZooKeeperServer;

/// The replica lag of [`TestClusterBuilder::quick`].
pub const QUICK_REPLICA_LAG: Duration = Duration::from_millis(1500);
/// The partitions of `__consumer_offsets` of [`TestClusterBuilder::quick`].
pub const QUICK_OFFSETS_PARTITIONS: i32 = 4;

/// A connect string (`127.0.0.1:PORT/gregor-test/<test>-<pid>-<n>`) for a ZooKeeper subtree no
/// other test uses, on the test binary's [shared server](ZooKeeperServer::shared); `None` when
/// ZooKeeper is missing and the [skip rule](crate::tools::SkipRule) says skip.
///
/// # Panics
///
/// When ZooKeeper cannot start, or is missing and the rule says fail (the message names the
/// apt-get command).
pub fn chroot(test: &str) -> Option<String> {
    ZooKeeperServer::shared_or_skip().map(|zk| zk.unique_chroot(test))
}

/// A [`FakeCluster`] for the test `test`, to configure and [`start`](TestClusterBuilder::start):
/// 3 brokers with [`BrokerConfig::default`], in a [`chroot`] of its own, with tracing to stderr
/// ([`init_tracing`](crate::init_tracing), unless [turned off](TestClusterBuilder::tracing)).
pub fn cluster(test: &str) -> TestClusterBuilder {
    TestClusterBuilder {
        test: test.to_owned(),
        brokers: 3,
        config: BrokerConfig::default(),
        request_log_capacity: None,
        topics: Vec::new(),
        tracing: true,
        tls: None,
    }
}

/// How to start a test's [`FakeCluster`]; made by [`cluster`].
#[derive(Debug, Clone)]
#[must_use = "start() starts the cluster"]
pub struct TestClusterBuilder {
    test: String,
    brokers: usize,
    config: BrokerConfig,
    request_log_capacity: Option<usize>,
    topics: Vec<(String, i32, i32)>,
    tracing: bool,
    tls: Option<crate::tls::ServerTls>,
}

impl TestClusterBuilder {
    /// Number of brokers (default 3), with ids `0..n`.
    pub fn brokers(mut self, n: usize) -> Self {
        self.brokers = n;
        self
    }

    /// Changes the broker settings in place (calls add up).
    pub fn configure(mut self, f: impl FnOnce(&mut BrokerConfig)) -> Self {
        f(&mut self.config);
        self
    }

    /// How many requests the request log keeps (see
    /// [`FakeClusterBuilder::request_log_capacity`](crate::FakeClusterBuilder::request_log_capacity)).
    pub fn request_log_capacity(mut self, n: usize) -> Self {
        self.request_log_capacity = Some(n);
        self
    }

    /// Whether [`start`](Self::start) installs [`init_tracing`](crate::init_tracing) (by
    /// default it does). A test that provokes thousands of retry warnings turns it off.
    pub fn tracing(mut self, on: bool) -> Self {
        self.tracing = on;
        self
    }

    /// Settings that keep tests quick: a replica lag of 1.5 s
    /// ([`replica_lag_time_max`](BrokerConfig::replica_lag_time_max), so a stalled follower leaves
    /// the ISR within a test) and 4 partitions of `__consumer_offsets`
    /// ([`offsets_topic_num_partitions`](BrokerConfig::offsets_topic_num_partitions), Kafka's 50
    /// take a while to create).
    pub fn quick(self) -> Self {
        self.configure(|c| {
            c.replica_lag_time_max = QUICK_REPLICA_LAG;
            c.offsets_topic_num_partitions = QUICK_OFFSETS_PARTITIONS;
        })
    }

    /// Serves every listener over TLS (see
    /// [`FakeClusterBuilder::tls`](crate::FakeClusterBuilder::tls)).
    pub fn tls(mut self, tls: crate::tls::ServerTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// A topic to create once the cluster runs, as [`FakeCluster::create_topic`] does (which
    /// waits until every partition has a leader).
    pub fn topic(mut self, name: &str, partitions: i32, replication_factor: i32) -> Self {
        self.topics.push((name.to_owned(), partitions, replication_factor));
        self
    }

    /// Starts the cluster and creates its topics, each partition led when this returns; `None`
    /// when ZooKeeper is missing and the [skip rule](crate::tools::SkipRule) says skip.
    ///
    /// # Panics
    ///
    /// When the cluster does not start or a topic cannot be created (the message names the
    /// test and the error), and as [`chroot`].
    pub async fn start(self) -> Option<FakeCluster> {
        let zookeeper = chroot(&self.test)?;
        if self.tracing {
            crate::init_tracing();
        }
        let test = &self.test;
        let mut builder = FakeCluster::builder(zookeeper).brokers(self.brokers).config(self.config);
        if let Some(n) = self.request_log_capacity {
            builder = builder.request_log_capacity(n);
        }
        if let Some(tls) = self.tls {
            builder = builder.tls(tls);
        }
        let cluster = builder.start().await.unwrap_or_else(|e| panic!("{test}: the fake cluster does not start: {e}"));
        for (name, partitions, replication_factor) in &self.topics {
            cluster.create_topic(name, *partitions, *replication_factor).await.unwrap_or_else(|e| {
                panic!("{test}: topic {name} ({partitions} partitions, replication {replication_factor}): {e}")
            });
        }
        Some(cluster)
    }
}

/// Starts a test's cluster of three brokers (with `configure` applied to the
/// [`BrokerConfig`]) like [`cluster()`], or returns from the calling test
/// when the [skip rule](crate::tools::SkipRule) says skip:
///
/// ```no_run
/// use gregor_testkit::support::cluster_or_skip;
///
/// # async fn demo() {
/// let cluster = cluster_or_skip!("my-test");
/// let other = cluster_or_skip!("my-other-test", |b| b.auto_create_topics_enable = false);
/// # }
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! __support_cluster_or_skip {
    ($test:expr) => {
        $crate::support::cluster_or_skip!($test, |_| {})
    };
    ($test:expr, $configure:expr) => {
        match $crate::support::cluster($test).configure($configure).start().await {
            ::std::option::Option::Some(cluster) => cluster,
            ::std::option::Option::None => return,
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chroots_are_unique_and_carry_the_test_name() {
        let Some(a) = chroot("support-chroot") else { return };
        let b = chroot("support-chroot").expect("the same server");
        assert_ne!(a, b);
        let zk = ZooKeeperServer::shared();
        for c in [&a, &b] {
            let rest = c.strip_prefix(&zk.connect_string()).expect("on the shared server");
            assert!(rest.starts_with("/gregor-test/support-chroot-"), "{c}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_test_cluster_starts_in_its_own_chroot_with_led_topics() {
        let Some(c) =
            cluster("support-cluster").brokers(2).configure(|b| b.num_partitions = 5).topic("a", 3, 2).start().await
        else {
            return;
        };
        assert_eq!(c.broker_addrs().len(), 2);
        assert!(c.zookeeper().contains("/gregor-test/support-cluster-"), "{}", c.zookeeper());
        assert_eq!(c.partitions("a"), [0, 1, 2]);
        for p in 0..3 {
            assert!(c.leader("a", p).is_some(), "a/{p} is led when start returns");
            assert_eq!(c.partition_info("a", p).unwrap().1.len(), 2);
        }
        // the configuration reached the brokers: an auto-created topic gets num_partitions
        let mut conn = crate::wire::Conn::open(c.broker_addr(0).unwrap()).await;
        conn.call(0, &crate::wire::metadata(&["auto"])).await;
        c.wait_for_leaders("auto", std::time::Duration::from_secs(20)).await.unwrap();
        assert_eq!(c.partitions("auto").len(), 5);
        c.shutdown().await;
    }
}

//! Where the examples find a cluster: the real one named by `GREGOR_BROKERS` (see
//! `docker-compose.yml`), or else a real ZooKeeper and a 3-broker FakeCluster started here.

use gregor_testkit::zookeeper::ZooKeeperServer;
use gregor_testkit::FakeCluster;

/// A running cluster for an example; dropping it stops what it started.
pub(crate) struct ExampleCluster {
    /// `metadata.broker.list`
    pub(crate) brokers: String,
    /// The FakeCluster, when one was started (dropped before the ZooKeeper server).
    _fake: Option<FakeCluster>,
    _zookeeper: Option<ZooKeeperServer>,
}

/// Starts (or finds) a cluster and makes sure `topic` exists with `partitions` partitions.
pub(crate) async fn cluster(topic: &str, partitions: i32) -> Result<ExampleCluster, Box<dyn std::error::Error>> {
    if let Some(external) = gregor_testkit::external_cluster() {
        println!("using the cluster at {} (GREGOR_BROKERS); topic {topic} is auto-created", external.brokers);
        return Ok(ExampleCluster { brokers: external.brokers, _fake: None, _zookeeper: None });
    }
    let zookeeper = ZooKeeperServer::start()?;
    let fake = FakeCluster::start(3, zookeeper.connect_string()).await?;
    fake.create_topic(topic, partitions, 2).await?;
    println!("started ZooKeeper {} and a FakeCluster at {}", zookeeper.connect_string(), fake.bootstrap());
    Ok(ExampleCluster { brokers: fake.bootstrap(), _fake: Some(fake), _zookeeper: Some(zookeeper) })
}

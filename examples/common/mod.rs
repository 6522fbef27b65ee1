//! Where the examples find a cluster: the real one named by `GREGOR_BROKERS` and
//! `GREGOR_ZOOKEEPER` (see `docker-compose.yml`), or else a real ZooKeeper and a 3-broker
//! FakeCluster started here. Either way the topics an example assumes exist, with the
//! partitions it assumes, and have leaders before it starts: on an external cluster they are
//! created through ZooKeeper with `gregor::admin`, as `kafka-topics.sh --create` does (a broker's
//! auto-creation would give one partition).

#![allow(dead_code)] // each example uses a part

use std::time::{Duration, Instant};

use gregor::admin::{Admin, Error as AdminError, TopicSelection};
use gregor::simple_consumer::{SimpleConsumer, SimpleConsumerConfig};
use gregor_testkit::zookeeper::ZooKeeperServer;
use gregor_testkit::FakeCluster;

/// How long a new topic may take to get a leader for every partition.
const LEADERS_WITHIN: Duration = Duration::from_secs(30);

/// A running cluster for an example; dropping it stops what it started.
pub(crate) struct ExampleCluster {
    /// `metadata.broker.list`
    pub(crate) brokers: String,
    /// `zookeeper.connect`
    pub(crate) zookeeper: String,
    /// Whether the cluster is an external one (`GREGOR_BROKERS`), not started here.
    pub(crate) external: bool,
    /// The FakeCluster, when one was started (dropped before the ZooKeeper server).
    _fake: Option<FakeCluster>,
    _zookeeper: Option<ZooKeeperServer>,
}

/// Starts (or finds) a cluster and makes sure `topic` exists with `partitions` partitions.
pub(crate) async fn cluster(topic: &str, partitions: i32) -> Result<ExampleCluster, Box<dyn std::error::Error>> {
    cluster_with_topics(&[(topic, partitions)]).await
}

/// Starts (or finds) a cluster and makes sure each `(topic, partitions)` exists with at least
/// that many partitions, each with a leader.
pub(crate) async fn cluster_with_topics(topics: &[(&str, i32)]) -> Result<ExampleCluster, Box<dyn std::error::Error>> {
    if let Some(external) = gregor_testkit::external_cluster() {
        println!(
            "using the cluster at {} with ZooKeeper {} (GREGOR_BROKERS, GREGOR_ZOOKEEPER)",
            external.brokers, external.zookeeper
        );
        for (topic, partitions) in topics {
            ensure_topic(&external.zookeeper, &external.brokers, topic, *partitions).await?;
        }
        return Ok(ExampleCluster {
            brokers: external.brokers,
            zookeeper: external.zookeeper,
            external: true,
            _fake: None,
            _zookeeper: None,
        });
    }
    let zookeeper = ZooKeeperServer::start()?;
    let fake = FakeCluster::start(3, zookeeper.connect_string()).await?;
    for (topic, partitions) in topics {
        fake.create_topic(topic, *partitions, 2).await?;
    }
    println!("started ZooKeeper {} and a FakeCluster at {}", zookeeper.connect_string(), fake.bootstrap());
    Ok(ExampleCluster {
        brokers: fake.bootstrap(),
        zookeeper: zookeeper.connect_string(),
        external: false,
        _fake: Some(fake),
        _zookeeper: Some(zookeeper),
    })
}

/// Creates `topic` with `partitions` partitions (replication factor 2, or 1 on a one-broker
/// cluster) unless it exists; adds partitions to an existing topic with fewer; then waits until
/// every partition has a leader.
async fn ensure_topic(
    zookeeper: &str,
    brokers: &str,
    topic: &str,
    partitions: i32,
) -> Result<(), Box<dyn std::error::Error>> {
    let admin = Admin::connect(zookeeper, Duration::from_secs(6)).await?;
    let outcome = async {
        match admin.describe_topics(&TopicSelection::only([topic])).await {
            Ok(described) => {
                let have = described.first().map_or(0, |d| d.partition_count()) as i32;
                if have < partitions {
                    admin.add_partitions(topic, partitions, None).await?;
                    println!("topic {topic}: had {have} partitions, added up to {partitions}");
                } else {
                    println!("topic {topic}: exists with {have} partitions");
                }
            }
            Err(AdminError::UnknownTopic { .. }) => {
                let live = admin.list_brokers().await?.brokers.len() as i32;
                let replication = live.clamp(1, 2);
                admin.create_topic(topic, partitions, replication, [] as [(&str, &str); 0]).await?;
                println!("topic {topic}: created with {partitions} partitions, replication factor {replication}");
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }
    .await;
    let _ = admin.close().await;
    outcome?;
    wait_for_leaders(brokers, topic, partitions).await
}

/// Waits until the brokers' metadata shows `topic` with `partitions` partitions, each led.
async fn wait_for_leaders(brokers: &str, topic: &str, partitions: i32) -> Result<(), Box<dyn std::error::Error>> {
    let consumer = SimpleConsumer::new(SimpleConsumerConfig::builder().metadata_broker_list(brokers).build()?)?;
    let deadline = Instant::now() + LEADERS_WITHIN;
    let outcome = loop {
        let mut led = 0;
        if let Ok(ids) = consumer.partitions(topic).await {
            for p in ids {
                if consumer.leader(topic, p).await.is_ok() {
                    led += 1;
                }
            }
        }
        if led >= partitions {
            break Ok(());
        }
        if Instant::now() > deadline {
            break Err(format!(
                "topic {topic}: {led} of {partitions} partitions have a leader after {LEADERS_WITHIN:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    consumer.close().await;
    Ok(outcome?)
}

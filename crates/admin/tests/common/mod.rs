//! Shared helpers of gregor-admin's integration tests: a ZooKeeper chroot or a FakeCluster per
//! test, polling, and a few raw wire requests (produce, commit) made the way other clients
//! would make them.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use gregor_admin::Admin;
use gregor_net::{BrokerConnection, ConnectionConfig};
use gregor_protocol::messages::{
    ConsumerMetadataRequest, OffsetCommitPartition, OffsetCommitRequest, OffsetCommitTopic, ProducePartition,
    ProduceRequest, ProduceTopic,
};
use gregor_protocol::{Compression, ErrorCode, Message, MessageSet};
use gregor_testkit::{support, BrokerConfig, FakeCluster};

/// Waiting comes from the testkit's shared support.
pub use gregor_testkit::support::eventually;

/// How long a test waits for the controller or the brokers to act.
pub const WAIT: Duration = Duration::from_secs(10);

/// A ZooKeeper session as an admin handle in a chroot of its own, or `None` to skip (only with
/// `GREGOR_ALLOW_SKIP=1`, never under CI).
pub async fn bare_admin(test: &str) -> Option<Admin> {
    let connect = support::chroot(test)?;
    Some(Admin::connect(&connect, Duration::from_secs(6)).await.expect("zookeeper connects"))
}

/// A cluster of three brokers in a chroot of its own, and an admin handle on the same chroot,
/// or `None` to skip (only with `GREGOR_ALLOW_SKIP=1`, never under CI).
pub async fn cluster(test: &str, configure: impl FnOnce(&mut BrokerConfig)) -> Option<(FakeCluster, Admin)> {
    let cluster = support::cluster(test)
        .configure(|c| {
            c.offsets_topic_num_partitions = 2;
            c.replica_lag_time_max = Duration::from_millis(1500);
        })
        .configure(configure)
        .start()
        .await?;
    let admin = Admin::connect(cluster.zookeeper(), Duration::from_secs(6)).await.expect("zookeeper connects");
    Some((cluster, admin))
}

pub async fn connect(cluster: &FakeCluster, broker: i32) -> BrokerConnection {
    let addr = cluster.broker_addr(broker).expect("a known broker");
    BrokerConnection::connect(addr, &ConnectionConfig::default()).await.expect("connect to the broker")
}

/// Produces `n` messages of `size` bytes to a partition's leader (acks=1) and returns the
/// partition's error code (if any) and base offset.
pub async fn produce(
    cluster: &FakeCluster,
    topic: &str,
    partition: i32,
    n: usize,
    size: usize,
) -> (Option<ErrorCode>, i64) {
    let leader = cluster.leader(topic, partition).expect("the partition has a leader");
    let conn = connect(cluster, leader).await;
    let messages = (0..n).map(|i| Message::new(None, Some(vec![b'a' + (i % 26) as u8; size].into())));
    let request = ProduceRequest {
        required_acks: 1,
        timeout: 5000,
        topics: vec![ProduceTopic::new(
            topic,
            vec![ProducePartition {
                partition,
                message_set: MessageSet::from_messages(messages, Compression::None).unwrap(),
                ..Default::default()
            }],
        )],
        ..Default::default()
    };
    let response = conn.request(0, &request).await.expect("a produce response");
    let p = &response.topics[0].partitions[0];
    (p.error(), p.offset)
}

/// Commits `offset` for `group` in Kafka (OffsetCommit v1 at the coordinator), as a Java 0.8.2
/// consumer with `offsets.storage=kafka` does: ConsumerMetadata until the coordinator is ready.
pub async fn commit_in_kafka(cluster: &FakeCluster, group: &str, topic: &str, partition: i32, offset: i64) {
    let any = connect(cluster, 0).await;
    let coordinator = eventually("the offset coordinator", WAIT, || {
        let any = any.clone();
        async move {
            let r = any.request(0, &ConsumerMetadataRequest::group(group)).await.ok()?;
            (r.error_code == 0).then_some(r.node_id)
        }
    })
    .await;
    let conn = connect(cluster, coordinator).await;
    let request = OffsetCommitRequest {
        group_id: group.to_owned(),
        group_generation_id: 1,
        consumer_id: format!("{group}_test-1-00000000"),
        topics: vec![OffsetCommitTopic::new(
            topic,
            vec![OffsetCommitPartition { timestamp: -1, ..OffsetCommitPartition::new(partition, offset, "by hand") }],
        )],
        ..Default::default()
    };
    let response = conn.request(1, &request).await.expect("a commit response");
    assert_eq!(response.topics[0].partitions[0].error_code, 0, "the commit succeeds");
}

//! Helpers of the consumer's integration tests: a chroot per test, and the testkit's tiny
//! raw-codec client ([`gregor_testkit::wire`]).

#![allow(dead_code, unreachable_pub, unused_imports)]

use gregor_testkit::support;
use gregor_testkit::FakeCluster;

/// Waiting and a chroot per test come from the testkit's shared support.
pub use gregor_testkit::support::{chroot, eventually};

/// A cluster of `n` brokers in a chroot of its own, [quick](support::TestClusterBuilder::quick)
/// (a short replica lag for ISR tests), or `None` to skip (only with `GREGOR_ALLOW_SKIP=1`,
/// never under CI).
pub async fn cluster(test: &str, n: usize) -> Option<FakeCluster> {
    support::cluster(test).brokers(n).quick().start().await
}

/// The raw wire client and request builders live in the testkit itself.
pub use gregor_testkit::wire::{fetch, metadata, msg, produce, Conn};

/// Appends `values` (null keys, no compression, acks=1) to `topic/partition` at its leader.
pub async fn produce_values(cluster: &FakeCluster, topic: &str, partition: i32, values: &[String]) {
    let leader = cluster.leader(topic, partition).expect("a leader");
    let mut c = Conn::open(cluster.broker_addr(leader).expect("its address")).await;
    let msgs = values.iter().map(|v| msg(None, v)).collect();
    let r = c.call(0, &produce(topic, partition, 1, msgs, gregor_protocol::Compression::None)).await;
    assert_eq!(r.topics[0].partitions[0].error_code, 0, "produce to {topic}/{partition}");
}

/// `/consumers/G/owners/T/*`: partition -> owning thread id.
pub async fn owners(cluster: &FakeCluster, group: &str, topic: &str) -> std::collections::BTreeMap<i32, String> {
    let zk = cluster.zk();
    let mut out = std::collections::BTreeMap::new();
    for p in zk.children(&format!("/consumers/{group}/owners/{topic}")).await.unwrap().unwrap_or_default() {
        if let Some((d, _)) = zk.get(&format!("/consumers/{group}/owners/{topic}/{p}")).await.unwrap() {
            out.insert(p.parse().unwrap(), String::from_utf8(d).unwrap());
        }
    }
    out
}

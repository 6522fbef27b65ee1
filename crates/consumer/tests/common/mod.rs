//! Helpers of the consumer's integration tests: a chroot per test, and the testkit's tiny
//! raw-codec client ([`gregor_testkit::wire`]).

#![allow(dead_code, unreachable_pub, unused_imports)]

use std::time::Duration;

use gregor_testkit::zookeeper::ZooKeeperServer;
use gregor_testkit::FakeCluster;

/// A connect string with a chroot of its own, or `None` to skip (never under CI).
pub fn chroot(test: &str) -> Option<String> {
    ZooKeeperServer::shared_or_skip().map(|zk| zk.unique_chroot(test))
}

/// A cluster of `n` brokers in a chroot of its own (with a short replica lag for ISR tests).
pub async fn cluster(test: &str, n: usize) -> Option<FakeCluster> {
    let zk = chroot(test)?;
    gregor_testkit::init_tracing();
    Some(
        FakeCluster::builder(zk)
            .brokers(n)
            .configure(|c| {
                c.replica_lag_time_max = Duration::from_millis(1500);
                c.offsets_topic_num_partitions = 4;
            })
            .start()
            .await
            .expect("the fake cluster starts"),
    )
}

/// The raw wire client and request builders live in the testkit itself.
pub use gregor_testkit::wire::{fetch, metadata, msg, produce, Conn};

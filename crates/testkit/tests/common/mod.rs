//! Shared helpers of the testkit's integration tests: a ZooKeeper chroot per test, and the
//! testkit's tiny wire client ([`gregor_testkit::wire`], made only of gregor-protocol).

#![allow(dead_code, unreachable_pub, unused_imports)]

use gregor_protocol::frame::ApiKey;
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
pub use gregor_testkit::wire::{fetch, metadata, msg, produce, read_values, Conn};

pub const API_PRODUCE: ApiKey = ApiKey::Produce;

//! Shared support for tests of Kafka clients: what every crate's `tests/` needs around the
//! [`FakeCluster`](crate::FakeCluster), written once.
//!
//! * Waiting: [`eventually`] polls a condition until it holds (one argument order: what, how
//!   long, the check; [`poll_until`] is the same without the failure, for reports), [`bounded`] awaits a future that must finish in time, and
//!   [`side_by_side`] runs the cases of a test concurrently, collecting the failures that
//!   [`check!`](crate::support::check) returns. Every timeout is a failure guard, generous
//!   enough for a loaded machine, never the measurement; all of them follow tokio's clock, so
//!   they work under `tokio::time::pause()`.
//! * Memory: [`CountingAllocator`], a global allocator that counts the live heap (and the part
//!   of it in blocks of 1 MiB or more), its peak, and
//!   the largest single allocation of a thread; each test binary installs its own with
//!   [`counting_allocator!`](crate::counting_allocator).
//! * Messages: [`MessageAt`], one message as a client read it, with a `Debug` short enough
//!   to compare thousands.
//! * Clusters: [`chroot`] hands out a ZooKeeper subtree of the binary's shared server no other
//!   test uses, and [`cluster()`] starts a FakeCluster there with topics whose partitions all have
//!   leaders ([`cluster_or_skip!`](crate::support::cluster_or_skip) in one line). A missing ZooKeeper follows the [skip rule](crate::tools::SkipRule): it fails
//!   the test, unless the developer opted in to skipping.
//!
//! ```no_run
//! use std::time::Duration;
//! use gregor_testkit::support::{self, eventually};
//!
//! # async fn demo() {
//! let Some(cluster) = support::cluster("my-test").brokers(3).topic("events", 3, 2).start().await else {
//!     return; // ZooKeeper is missing and GREGOR_ALLOW_SKIP=1 is set
//! };
//! let leader = cluster.leader("events", 0).unwrap();
//! cluster.kill_broker(leader).await.unwrap();
//! eventually("a new leader of events/0", Duration::from_secs(30), async || {
//!     cluster.leader("events", 0).filter(|l| *l != leader)
//! })
//! .await;
//! # }
//! ```

mod alloc;
mod cluster;
mod message;
mod wait;

pub use alloc::{CountingAllocator, LargestAllocation, LARGE_ALLOCATION};
pub use cluster::{chroot, cluster, TestClusterBuilder, QUICK_OFFSETS_PARTITIONS, QUICK_REPLICA_LAG};
pub use message::MessageAt;
pub use wait::{bounded, eventually, poll_until, side_by_side, Condition, POLL_INTERVAL};

#[doc(inline)]
pub use crate::__support_check as check;
#[doc(inline)]
pub use crate::__support_cluster_or_skip as cluster_or_skip;

//! A measuring tool, not a check (ignored; issue 25 wants the memory bar measured, not asserted
//! in a test): the heap a queued record costs, counted by a counting global allocator while
//! 100,000 records of 100-byte values (126 bytes on the wire) sent with a static handler wait
//! for a paused cluster. Prints the live bytes per record held, over all of them and over the
//! second half (the rounds in flight, whose request frames are a copy of their sets, weigh on the
//! first). Run: `cargo test -p gregor-producer --test queued_memory -- --ignored --nocapture`.

// a global allocator is `unsafe` to implement: it only counts, and hands every call to `System`
#![allow(unsafe_code)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use common::*;
use gregor_producer::{
    AsyncProducer, DeliveryHandler, DeliveryResult, PartitionerKind, ProducerConfig, ProducerConfigBuilder, Record,
};
use gregor_testkit::support::cluster_or_skip;

/// Counts the bytes allocated and not yet freed.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call goes to `System` with the caller's arguments; only the count is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

struct Discard;

impl DeliveryHandler for Discard {
    fn on_delivery(&self, _: u64, _: DeliveryResult) {}
}

static HANDLER: Discard = Discard;

/// The producer settings of every tool: room for `n` records, round robin, no request timing
/// out while the brokers are paused.
fn queue_of(builder: ProducerConfigBuilder, n: usize) -> ProducerConfigBuilder {
    builder
        .queue_buffering_max_messages(n)
        .partitioner(PartitionerKind::RoundRobin)
        .request_timeout(Duration::from_secs(60))
}

/// Sends `n` records made by `record` (with the static handler) to a producer whose brokers do
/// not answer, and returns the live heap per record over all of them and over the second half.
async fn heap_per_record(
    p: &AsyncProducer<String, String>,
    n: usize,
    record: impl Fn() -> Record<String, String>,
) -> (f64, f64) {
    let settle = || tokio::time::sleep(Duration::from_millis(500));
    settle().await;
    let before = LIVE.load(Ordering::Relaxed);
    let mut half = 0;
    for i in 0..n {
        if i == n / 2 {
            settle().await;
            half = LIVE.load(Ordering::Relaxed);
        }
        p.send_with_static_handler(record(), &HANDLER, i as u64).await.unwrap();
    }
    settle().await;
    let after = LIVE.load(Ordering::Relaxed);
    ((after - before) as f64 / n as f64, (after - half) as f64 / (n / 2) as f64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measuring tool: run it by hand"]
async fn heap_per_queued_record() {
    let c = cluster_or_skip!("queued-memory");
    c.create_topic("m", 6, 1).await.unwrap();
    let n = 100_000;
    let p = producer(queue_of(config(&c), n));
    for _ in 0..6 {
        p.send(Record::new("m", "warm".to_owned())).await.unwrap().await.unwrap();
    }
    let value = "x".repeat(100);
    pause_all(&c);
    let (all, second_half) = heap_per_record(&p, n, || Record::new("m", value.clone())).await;
    eprintln!(
        "heap per queued record: {all:.1} bytes over all {n} held, {second_half:.1} over the second half ({} queued)",
        p.queued()
    );
    resume_all(&c);
    assert!(p.flush().await.is_ok());
}

/// The same for records held for their topic's metadata: the brokers paused before the first
/// record of a topic the producer has not seen, so every record waits without a partition
/// (`crate::held`). Run: `cargo test -p gregor-producer --test queued_memory -- --ignored
/// --nocapture heap_per_held_record`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measuring tool: run it by hand"]
async fn heap_per_held_record() {
    let c = cluster_or_skip!("held-memory");
    c.create_topic("h", 6, 1).await.unwrap();
    let n = 100_000;
    let p = producer(queue_of(config(&c), n).message_send_max_retries(100));
    let value = "x".repeat(100);
    pause_all(&c);
    let (all, _) = heap_per_record(&p, n, || Record::new("h", value.clone())).await;
    eprintln!("heap per held record: {all:.1} bytes over {n} held ({} queued)", p.queued());
    resume_all(&c);
    assert!(p.flush().await.is_ok());
}

/// The same on the FakeCluster's modern mode (RecordBatch v2), with and without a header per
/// record. Run: `cargo test -p gregor-producer --test queued_memory -- --ignored --nocapture
/// --test-threads=1 heap_per_queued_v2_record`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measuring tool: run it by hand"]
async fn heap_per_queued_v2_record() {
    for header in [false, true] {
        let c = gregor_testkit::FakeCluster::modern().brokers(1).start().await.unwrap();
        c.create_topic("m", 6, 1).await.unwrap();
        let n = 100_000;
        let p = producer(queue_of(ProducerConfig::builder().metadata_broker_list(c.bootstrap()), n));
        for _ in 0..6 {
            p.send(Record::new("m", "warm".to_owned())).await.unwrap().await.unwrap();
        }
        let value = "x".repeat(100);
        c.pause_broker(0);
        let record = || {
            let record = Record::new("m", value.clone());
            if header {
                record.with_header("trace-id", "0123456789abcdef")
            } else {
                record
            }
        };
        let (all, _) = heap_per_record(&p, n, record).await;
        let with = if header { " with a 24-byte header" } else { "" };
        eprintln!("heap per queued v2 record{with}: {all:.1} bytes over {n} held ({} queued)", p.queued());
        c.resume_broker(0);
        assert!(p.flush().await.is_ok());
    }
}

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
use gregor_producer::{DeliveryHandler, DeliveryResult, PartitionerKind, Record};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measuring tool: run it by hand"]
async fn heap_per_queued_record() {
    let c = cluster_or_skip!("queued-memory");
    c.create_topic("m", 6, 1).await.unwrap();
    let n = 100_000;
    let p = producer(
        config(&c)
            .queue_buffering_max_messages(n)
            .partitioner(PartitionerKind::RoundRobin)
            .request_timeout(Duration::from_secs(60)),
    );
    for _ in 0..6 {
        p.send(Record::new("m", "warm".to_owned())).await.unwrap().await.unwrap();
    }
    let value = "x".repeat(100);
    pause_all(&c);
    let settle = || tokio::time::sleep(Duration::from_millis(500));
    settle().await;
    let before = LIVE.load(Ordering::Relaxed);
    let mut half = 0;
    for i in 0..n as u64 {
        if i == n as u64 / 2 {
            settle().await;
            half = LIVE.load(Ordering::Relaxed);
        }
        p.send_with_static_handler(Record::new("m", value.clone()), &HANDLER, i).await.unwrap();
    }
    settle().await;
    let after = LIVE.load(Ordering::Relaxed);
    eprintln!(
        "heap per queued record: {:.1} bytes over all {} held, {:.1} over the second half ({} queued)",
        (after - before) as f64 / n as f64,
        n,
        (after - half) as f64 / (n / 2) as f64,
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
    let p = producer(
        config(&c)
            .queue_buffering_max_messages(n)
            .partitioner(PartitionerKind::RoundRobin)
            .request_timeout(Duration::from_secs(60))
            .message_send_max_retries(100),
    );
    let value = "x".repeat(100);
    pause_all(&c);
    let settle = || tokio::time::sleep(Duration::from_millis(500));
    settle().await;
    let before = LIVE.load(Ordering::Relaxed);
    for i in 0..n as u64 {
        p.send_with_static_handler(Record::new("h", value.clone()), &HANDLER, i).await.unwrap();
    }
    settle().await;
    let after = LIVE.load(Ordering::Relaxed);
    eprintln!(
        "heap per held record: {:.1} bytes over {} held ({} queued)",
        (after - before) as f64 / n as f64,
        n,
        p.queued()
    );
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
        let p = producer(
            gregor_producer::ProducerConfig::builder()
                .metadata_broker_list(c.bootstrap())
                .queue_buffering_max_messages(n)
                .partitioner(PartitionerKind::RoundRobin)
                .request_timeout(Duration::from_secs(60)),
        );
        for _ in 0..6 {
            p.send(Record::new("m", "warm".to_owned())).await.unwrap().await.unwrap();
        }
        let value = "x".repeat(100);
        c.pause_broker(0);
        let settle = || tokio::time::sleep(Duration::from_millis(500));
        settle().await;
        let before = LIVE.load(Ordering::Relaxed);
        for i in 0..n as u64 {
            let mut record = Record::new("m", value.clone());
            if header {
                record = record.with_header("trace-id", "0123456789abcdef");
            }
            p.send_with_static_handler(record, &HANDLER, i).await.unwrap();
        }
        settle().await;
        let after = LIVE.load(Ordering::Relaxed);
        eprintln!(
            "heap per queued v2 record{}: {:.1} bytes over {} held ({} queued)",
            if header { " with a 24-byte header" } else { "" },
            (after - before) as f64 / n as f64,
            n,
            p.queued()
        );
        c.resume_broker(0);
        assert!(p.flush().await.is_ok());
    }
}

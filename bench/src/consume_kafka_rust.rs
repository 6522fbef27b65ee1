//! kafka-rust (the `kafka` crate 0.10) reading a filled topic back: its `Consumer` over every
//! partition, no group and no offset storage (`with_offset_storage(None)`), starting from the
//! earliest offset; `poll()` sends one Fetch v0 per leader, one broker after the other, and
//! hands back what they returned. Synchronous, on the calling thread.
//!
//! Note (from its source, `protocol/fetch.rs`): on a compressed wrapper its decoder returns
//! that wrapper's inner messages and ignores the rest of the partition's data, so it reads one
//! compressed message set per partition per fetch (the next fetch starts after it).

use std::time::{Duration, Instant};

use kafka::consumer::{Consumer, FetchOffset};

use crate::measure::Tally;
use crate::spec::{Codec, ConsumeSpec};
use crate::worker::{mark_end, mark_first, Sink};

const STALL: Duration = Duration::from_secs(30);

pub fn run(spec: &ConsumeSpec, sink: Sink) -> Result<(), String> {
    if matches!(spec.codec, Codec::Lz4 | Codec::Zstd) {
        return Err(spec.client.unsupported(spec.codec).unwrap_or("unsupported codec").to_owned());
    }
    let hosts: Vec<String> = spec.brokers.split(',').map(str::to_owned).collect();
    let partitions: Vec<i32> = (0..spec.partitions).collect();
    let mut consumer = Consumer::from_hosts(hosts)
        .with_client_id("kafka-rust-bench".to_owned())
        .with_topic_partitions(spec.topic.clone(), &partitions)
        .with_fallback_offset(FetchOffset::Earliest)
        .with_offset_storage(None)
        .with_fetch_max_bytes_per_partition(spec.fetch_max_bytes)
        .with_fetch_max_wait_time(Duration::from_millis(spec.fetch_wait_ms))
        .with_fetch_min_bytes(1)
        .with_fetch_crc_validation(true)
        .create()
        .map_err(|e| format!("create: {e}"))?;
    let mut tally = Tally::new(&spec.end_offsets);
    let mut last_progress = Instant::now();
    while !tally.done() {
        let sets = consumer.poll().map_err(|e| format!("poll: {e}"))?;
        for set in sets.iter() {
            let partition = set.partition();
            let messages = set.messages();
            if !messages.is_empty() {
                mark_first();
                last_progress = Instant::now();
            }
            for m in messages {
                tally.record(partition, m.offset, Some(m.value));
            }
        }
        if last_progress.elapsed() > STALL {
            return Err(format!("no message for {STALL:?}; {} of {} read", tally.messages, spec.messages));
        }
    }
    mark_end();
    *sink.lock().unwrap() = Some(tally);
    Ok(())
}

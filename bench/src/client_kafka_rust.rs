//! kafka-rust (the `kafka` crate, 0.10): Produce v0 and Metadata v0, Kafka 0.8.2's protocol.
//! Its Producer is synchronous: `send_all(&records)` groups the records into one Produce
//! request per leader, sends them one broker after the other and waits for each answer.
//! The benchmark hands it slices of `batch × partitions` records (or fewer, when `--rate`
//! makes them wait longer than linger.ms for company); a message's latency runs from when it
//! was put in a slice to when the `send_all` carrying it returned.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka::producer::{Compression, Producer, Record, RequiredAcks};

use crate::measure::{Pacer, Recorder};
use crate::spec::{Codec, RunSpec};

pub fn run(spec: &RunSpec, payloads: &[Vec<u8>], rec: Arc<Recorder>) -> Result<(), String> {
    let hosts: Vec<String> = spec.brokers.split(',').map(str::to_owned).collect();
    let acks = match spec.acks {
        0 => RequiredAcks::None,
        1 => RequiredAcks::One,
        -1 => RequiredAcks::All,
        other => return Err(format!("kafka-rust has no acks={other}")),
    };
    let mut producer = Producer::from_hosts(hosts)
        .with_client_id("kafka-rust-bench".to_owned())
        .with_required_acks(acks)
        .with_ack_timeout(Duration::from_secs(10))
        .with_compression(match spec.codec {
            Codec::None => Compression::NONE,
            Codec::Snappy => Compression::SNAPPY,
            Codec::Gzip => Compression::GZIP,
            Codec::Lz4 | Codec::Zstd => {
                return Err(spec.client.unsupported(spec.codec).unwrap_or("unsupported codec").to_owned())
            }
        })
        .create()
        .map_err(|e| format!("create: {e}"))?;
    let partitions = spec.partitions as usize;
    let chunk = (spec.batch * partitions).max(1);
    let linger = Duration::from_millis(spec.linger_ms);
    let pacer = Pacer::new(spec.rate);
    let mut records = Vec::with_capacity(chunk);
    let mut next = 0; // the next message to put in a chunk
    while next < spec.messages {
        // a chunk: `chunk` messages, or what came within linger.ms of its first one (only
        // matters with --rate; unpaced, a chunk fills in microseconds)
        let first = next;
        let mut opened = None;
        records.clear();
        while next < spec.messages && records.len() < chunk {
            if let Some(wait) = pacer.wait(next) {
                let opened_at: Instant = *opened.get_or_insert_with(Instant::now);
                let close_at = opened_at + linger;
                if Instant::now() + wait > close_at && !records.is_empty() {
                    std::thread::sleep(close_at.saturating_duration_since(Instant::now()));
                    break;
                }
                std::thread::sleep(wait);
            }
            opened.get_or_insert_with(Instant::now);
            rec.sent(next);
            records.push(
                Record::from_value(&spec.topic, &payloads[next % payloads.len()][..])
                    .with_partition((next % partitions) as i32),
            );
            next += 1;
        }
        let result = producer.send_all(&records);
        let now = rec.clock();
        match result {
            Ok(confirms) => {
                // a confirm per partition of the request; a message is acknowledged when its
                // partition's confirm carries an offset
                let mut ok_partitions = vec![false; partitions];
                let mut errors = Vec::new();
                for c in &confirms {
                    for pc in &c.partition_confirms {
                        match pc.offset {
                            Ok(_) => {
                                if let Some(slot) = ok_partitions.get_mut(pc.partition as usize) {
                                    *slot = true;
                                }
                            }
                            Err(code) => errors.push(format!("partition {}: {code:?}", pc.partition)),
                        }
                    }
                }
                for i in first..next {
                    if ok_partitions[i % partitions] {
                        rec.acked_at(i, now);
                    } else {
                        let e = errors.first().cloned().unwrap_or_else(|| "no confirm".to_owned());
                        rec.failed(i, || e);
                    }
                }
            }
            Err(e) => {
                let msg = e.to_string();
                for i in first..next {
                    rec.failed(i, || msg.clone());
                }
            }
        }
    }
    crate::worker::mark_end();
    Ok(())
}

//! The memory suite's arithmetic: producer runs whose queue fills (a broker that takes time,
//! more messages than the queue holds), one cell per client, codec and queue bound, and from
//! them what a message held costs the client, its fixed memory, and gregor's figures over
//! librdkafka's.

use crate::run::{Outcome, ProduceRow};
use crate::spec::{Client, Codec, RunResult};

/// Partitions of every memory run's topic.
pub const PARTITIONS: i32 = 6;
/// acks of every memory run.
pub const ACKS: i16 = 1;
/// A queue counts as full when the client held at least this share of its bound.
pub const FULL: f64 = 0.95;

/// Messages of a memory run: enough to fill the queue three times over, at least `--messages`.
pub fn messages_for(messages: usize, queue: usize) -> usize {
    messages.max(queue.saturating_mul(3))
}

/// The bytes a message of `value` bytes with a null key takes as Message v0 in a MessageSet:
/// offset 8, size 4, crc 4, magic 1, attributes 1, key length 4, value length 4, the value.
pub fn wire_size_v0(value: usize) -> usize {
    26 + value
}

/// The bytes a message of `value` bytes with a null key and no headers takes, on average, as a
/// record of a RecordBatch v2 of `batch` records (before compression): each record's size as
/// gregor-protocol counts it (`size_of_record`, its timestamp delta under 64 ms: one byte) and
/// its share of the batch's header.
pub fn wire_size_v2(value: usize, batch: usize) -> f64 {
    use gregor_protocol::record::{size_of_record, BATCH_HEADER_SIZE};

    let batch = batch.max(1);
    let payload = vec![0u8; value];
    let records: usize =
        (0..batch).map(|i| size_of_record(i32::try_from(i).unwrap_or(i32::MAX), 0, None, Some(&payload), &[])).sum();
    (records + BATCH_HEADER_SIZE) as f64 / batch as f64
}

/// The wire size a memory cell's × wire divides by on `profile` (None: an external cluster,
/// taken as Kafka 0.8.2): RecordBatch v2's on a modern profile, else Message v0's; and how the
/// report says which.
pub fn wire_size(profile: Option<&str>, value: usize, batch: usize) -> (f64, String) {
    if profile.is_some_and(crate::plan::is_modern) {
        (
            wire_size_v2(value, batch),
            format!(
                "the bytes a {value}-byte message with a null key and no headers takes, on average, as a record \
                 of a RecordBatch v2 of {batch} records (its {}-byte header shared; timestamp \
                 deltas under 64 ms), before compression",
                gregor_protocol::record::BATCH_HEADER_SIZE
            ),
        )
    } else {
        (
            wire_size_v0(value) as f64,
            format!(
                "the bytes a {value}-byte message with a null key takes as Message v0 in a MessageSet (before \
                 compression)"
            ),
        )
    }
}

/// The clients with a queue (`queue.buffering.max.messages`) to fill: kafka-rust sends
/// synchronously and holds one `send_all` slice.
pub fn has_queue(client: Client) -> bool {
    client != Client::KafkaRust
}

/// One memory cell, as its table shows it.
#[derive(Debug, Clone)]
pub struct Line<'a> {
    pub client: Client,
    pub codec: Codec,
    pub queue: usize,
    pub run: &'a RunResult,
    /// Client memory per message held at the peak, bytes.
    pub per_held: Option<f64>,
    /// The same client's (and codec's) client memory at the smallest queue bound, KiB: what it
    /// takes whatever it holds (runtime, connections, buffers).
    pub fixed_kib: Option<u64>,
    /// (client memory − fixed) per message held, bytes; None at the smallest bound itself.
    pub above_fixed: Option<f64>,
    /// Peak held ÷ the bound.
    pub fill: f64,
    /// CPU seconds per million messages acknowledged, user and system: the medians over the
    /// cell's runs (the shown run's own when there are none).
    pub cpu: (f64, f64),
}

impl Line<'_> {
    pub fn full(&self) -> bool {
        self.fill >= FULL
    }
}

/// Bytes of client memory per message held.
pub fn per_held(client_kib: u64, held: usize) -> Option<f64> {
    (held > 0).then(|| client_kib as f64 * 1024.0 / held as f64)
}

/// Bytes of client memory above the fixed part per message held (negative when the run took
/// less than the smallest bound's: noise of a few pages).
pub fn above_fixed(client_kib: u64, fixed_kib: u64, held: usize) -> Option<f64> {
    (held > 0).then(|| (client_kib as f64 - fixed_kib as f64) * 1024.0 / held as f64)
}

/// Every measured memory cell, in the order the rows came.
pub fn lines(rows: &[ProduceRow]) -> Vec<Line<'_>> {
    rows.iter()
        .filter_map(|row| {
            let run = row.outcome.ok()?;
            // the smallest bound this client and codec ran at, measured or not
            let smallest = rows
                .iter()
                .filter(|r| r.client == row.client && r.codec == row.codec)
                .min_by_key(|r| r.queue)
                .expect("the row itself");
            let fixed_kib = smallest.outcome.ok().map(RunResult::client_kib);
            let above = match fixed_kib {
                Some(f) if smallest.queue < row.queue => above_fixed(run.client_kib(), f, run.peak_held),
                _ => None,
            };
            Some(Line {
                client: row.client,
                codec: row.codec,
                queue: row.queue,
                run,
                per_held: per_held(run.client_kib(), run.peak_held),
                fixed_kib,
                above_fixed: above,
                fill: run.peak_held as f64 / row.queue.max(1) as f64,
                cpu: median_cpu(&row.all_cpu)
                    .unwrap_or_else(|| (per_million(run.cpu_user_s, run), per_million(run.cpu_sys_s, run))),
            })
        })
        .collect()
}

/// The medians of runs' (user, system) CPU per million messages, each of its own; `None` for no
/// run. One run's kernel time moves by half from run to run (`benchmarks/timing/session-43.md`),
/// so the system CPU of the run picked for its memory says little on its own.
pub fn median_cpu(runs: &[(f64, f64)]) -> Option<(f64, f64)> {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    };
    (!runs.is_empty()).then(|| (median(runs.iter().map(|c| c.0).collect()), median(runs.iter().map(|c| c.1).collect())))
}

/// gregor's (or gregor-ct's) figures over librdkafka's in one cell.
#[derive(Debug, Clone)]
pub struct Ratio<'a> {
    pub gregor: &'a Line<'a>,
    pub peer: &'a Line<'a>,
    pub per_held: Option<f64>,
    pub above_fixed: Option<f64>,
    pub user: Option<f64>,
    pub sys: Option<f64>,
    /// Both held at least [`FULL`] of the bound: the comparison is of equal fills.
    pub equal_fills: bool,
}

fn div(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 && a.is_finite() => Some(a / b),
        _ => None,
    }
}

/// CPU seconds per million messages acknowledged.
pub fn per_million(seconds: f64, r: &RunResult) -> f64 {
    seconds * 1e6 / (r.acked as f64).max(1.0)
}

/// Every gregor line beside librdkafka's of the same codec and bound.
pub fn ratios<'a>(lines: &'a [Line<'a>]) -> Vec<Ratio<'a>> {
    lines
        .iter()
        .filter(|g| g.client.is_gregor())
        .filter_map(|g| {
            let p =
                lines.iter().find(|p| p.client == Client::Librdkafka && p.codec == g.codec && p.queue == g.queue)?;
            let cpu = |l: &Line, sys: bool| {
                let s = if sys { l.cpu.1 } else { l.cpu.0 };
                // a kernel's user/system split from its ticks can give a short run 0 system time
                (s > 0.0).then_some(s)
            };
            Some(Ratio {
                gregor: g,
                peer: p,
                per_held: div(g.per_held, p.per_held),
                above_fixed: div(g.above_fixed, p.above_fixed),
                user: div(cpu(g, false), cpu(p, false)),
                sys: div(cpu(g, true), cpu(p, true)),
                equal_fills: g.full() && p.full(),
            })
        })
        .collect()
}

/// A row's outcome in words, for a cell with no line (failed, n/a).
pub fn not_measured(row: &ProduceRow) -> Option<String> {
    match &row.outcome {
        Outcome::Ok(_) => None,
        Outcome::Failed(e) => Some(format!("FAILED: {e}")),
        Outcome::Na(why) => Some(format!("n/a: {why}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A memory run of `client` at `queue` that took `client_kib` and held `held`.
    fn row(client: Client, codec: Codec, queue: usize, client_kib: u64, held: usize, cpu: (f64, f64)) -> ProduceRow {
        let spec = serde_json::json!({
            "client": client, "brokers": "b", "topic": "t", "partitions": PARTITIONS, "acks": ACKS,
            "codec": codec, "messages": 3 * queue, "message_size": 100, "batch": 1000, "linger_ms": 10,
            "queue": queue, "partitions_per_broker": 2,
        });
        let result = serde_json::json!({
            "spec": spec, "acked": 2_000_000, "failed": 0, "first_error": null, "elapsed_s": 1.0,
            "p50_us": null, "p99_us": null, "cpu_user_s": cpu.0, "cpu_sys_s": cpu.1,
            "peak_rss_kib": 20_000 + client_kib, "baseline_rss_kib": 20_000, "peak_held": held,
        });
        ProduceRow {
            client,
            partitions: PARTITIONS,
            acks: ACKS,
            codec,
            queue,
            outcome: Outcome::Ok(serde_json::from_value(result).unwrap()),
            all_rates: Vec::new(),
            all_cpu: Vec::new(),
            paced: None,
        }
    }

    #[test]
    fn messages_fill_the_queue_three_times_and_a_v0_message_is_26_bytes_more() {
        assert_eq!(messages_for(1_000_000, 2000), 1_000_000);
        assert_eq!(messages_for(1_000_000, 1_000_000), 3_000_000);
        assert_eq!(messages_for(100_000, 100_000), 300_000);
        assert_eq!(wire_size_v0(100), 126);
        assert!(has_queue(Client::GregorCt) && !has_queue(Client::KafkaRust));
    }

    /// The figure agrees with the bytes gregor-protocol's RecordBatch v2 encoder writes (the
    /// encoder itself checked against Kafka 3.7.0's frames in the protocol crate's tests).
    #[test]
    fn a_v2_records_share_of_its_batch_matches_the_encoder() {
        for (value, batch) in [(100, 1000), (100, 1), (100, 64), (10, 200), (1000, 10_000)] {
            let mut b = gregor_protocol::RecordBatchBuilder::new(gregor_protocol::Compression::None);
            let payload = vec![7u8; value];
            for i in 0..batch {
                // timestamps up to 63 ms after the first: one byte of delta each
                b.append(1_700_000_000_000 + (i % 64) as i64, None, Some(&payload)).unwrap();
            }
            let encoded = b.finish().unwrap().len() as f64 / batch as f64;
            let computed = wire_size_v2(value, batch);
            assert!((encoded - computed).abs() < 1e-9, "value {value}, batch {batch}: {encoded} vs {computed}");
        }
        // a 100-byte value in a batch of 1,000: 109 or 110 bytes a record, plus 61 / 1,000
        assert!((wire_size_v2(100, 1000) - (64.0 * 109.0 + 936.0 * 110.0 + 61.0) / 1000.0).abs() < 1e-9);
        assert_eq!(wire_size(Some(crate::plan::MODERN_TIMED), 100, 1000).0, wire_size_v2(100, 1000));
        assert_eq!(wire_size(Some(crate::plan::REAL), 100, 1000).0, 126.0);
        assert_eq!(wire_size(None, 100, 1000).0, 126.0);
    }

    #[test]
    fn per_message_held_and_above_the_fixed_part() {
        // 6 MiB at 2,000 held (the fixed part), 30 MiB at 100,000, 180 MiB at 1,000,000
        let rows = vec![
            row(Client::Gregor, Codec::None, 2000, 6 * 1024, 2048, (1.0, 0.5)),
            row(Client::Gregor, Codec::None, 100_000, 30 * 1024, 102_000, (1.0, 0.5)),
            row(Client::Gregor, Codec::None, 1_000_000, 180 * 1024, 1_002_000, (1.0, 0.5)),
        ];
        let l = lines(&rows);
        assert_eq!(l.len(), 3);
        assert_eq!(l.iter().map(|l| l.fixed_kib).collect::<Vec<_>>(), [Some(6144); 3]);
        assert_eq!(l[0].per_held, Some(6.0 * 1048576.0 / 2048.0));
        assert_eq!(l[0].above_fixed, None, "the smallest bound is the fixed part itself");
        let above = l[1].above_fixed.unwrap();
        assert!((above - 24.0 * 1048576.0 / 102_000.0).abs() < 1e-9, "{above}");
        let above = l[2].above_fixed.unwrap();
        assert!((above - 174.0 * 1048576.0 / 1_002_000.0).abs() < 1e-9, "{above}");
        assert!((above / wire_size_v0(100) as f64 - 1.445).abs() < 0.01);
        assert!(l.iter().all(Line::full));
        assert_eq!(per_held(1, 0), None);
        assert_eq!(above_fixed(1000, 1024, 1024), Some(-24.0), "below the fixed part: shown as it is");
    }

    #[test]
    fn the_fixed_part_is_missing_when_the_smallest_bound_failed() {
        let mut rows = vec![
            row(Client::Gregor, Codec::None, 2000, 6 * 1024, 2000, (1.0, 0.5)),
            row(Client::Gregor, Codec::None, 100_000, 30 * 1024, 100_000, (1.0, 0.5)),
            row(Client::Gregor, Codec::Snappy, 2000, 7 * 1024, 2000, (1.0, 0.5)),
        ];
        rows[0].outcome = Outcome::Failed("boom".into());
        let l = lines(&rows);
        assert_eq!(l.len(), 2, "no line for the failed cell");
        assert_eq!((l[0].queue, l[0].fixed_kib, l[0].above_fixed), (100_000, None, None));
        assert_eq!((l[1].codec, l[1].fixed_kib), (Codec::Snappy, Some(7 * 1024)), "per codec");
        assert_eq!(not_measured(&rows[0]).as_deref(), Some("FAILED: boom"));
    }

    #[test]
    fn gregor_over_librdkafka_and_unequal_fills() {
        let rows = vec![
            row(Client::Gregor, Codec::None, 2000, 6 * 1024, 2000, (1.0, 0.2)),
            row(Client::Librdkafka, Codec::None, 2000, 4 * 1024, 2000, (2.0, 0.4)),
            row(Client::Gregor, Codec::None, 1_000_000, 180 * 1024, 1_000_000, (1.0, 0.2)),
            // librdkafka held only 60% of its bound
            row(Client::Librdkafka, Codec::None, 1_000_000, 200 * 1024, 600_000, (2.0, 0.0)),
        ];
        let l = lines(&rows);
        let r = ratios(&l);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].per_held, Some(1.5));
        assert_eq!((r[0].user, r[0].sys), (Some(0.5), Some(0.5)));
        assert!(r[0].equal_fills);
        assert_eq!(r[0].above_fixed, None);
        // per held: (180 MiB / 1,000,000) / (200 MiB / 600,000) = 0.54
        assert!((r[1].per_held.unwrap() - 0.54).abs() < 1e-9);
        // above fixed: (174 / 1,000,000) / (196 / 600,000)
        assert!((r[1].above_fixed.unwrap() - 174.0 * 0.6 / 196.0).abs() < 1e-9);
        assert_eq!(r[1].sys, None, "no system time measured for the peer: no ratio");
        assert!(!r[1].equal_fills && !r[1].peer.full() && r[1].gregor.full());
    }

    #[test]
    fn cpu_is_the_median_of_the_cells_runs_each_of_its_own() {
        assert_eq!(median_cpu(&[]), None);
        assert_eq!(median_cpu(&[(1.0, 0.3), (3.0, 0.1), (2.0, 0.2)]), Some((2.0, 0.2)));
        // each column its own median (not the pair of one run), and the middle two of an even count
        assert_eq!(median_cpu(&[(1.0, 0.4), (2.0, 0.1), (4.0, 0.2), (3.0, 0.3)]), Some((2.5, 0.25)));
        // a line's CPU and the ratios come from its runs' medians, not from the run it shows
        let mut rows = vec![
            row(Client::Gregor, Codec::None, 100_000, 30 * 1024, 100_000, (1.0, 0.9)),
            row(Client::Librdkafka, Codec::None, 100_000, 40 * 1024, 100_000, (2.0, 0.1)),
        ];
        // (the helper's runs acknowledge 2,000,000 messages: per million, half the seconds)
        rows[0].all_cpu = vec![(0.5, 0.45), (0.6, 0.1), (0.4, 0.12)];
        rows[1].all_cpu = vec![(1.0, 0.05), (1.2, 0.2), (0.8, 0.2)];
        let l = lines(&rows);
        assert_eq!((l[0].cpu, l[1].cpu), ((0.5, 0.12), (1.0, 0.2)));
        let r = ratios(&l);
        assert_eq!((r[0].user, r[0].sys), (Some(0.5), Some(0.12 / 0.2)));
        // no runs kept: the shown run's own
        rows[0].all_cpu.clear();
        assert_eq!(lines(&rows)[0].cpu, (0.5, 0.45));
    }
}

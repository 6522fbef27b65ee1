//! A worker: one client, one run, in its own process (so getrusage(RUSAGE_SELF) and VmHWM
//! are that client's alone, and the cluster's CPU, in another process, is not counted).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use crate::measure::{expected_fingerprint, payloads, proc_status_kib, Cpu, Recorder, Tally};
use crate::spec::{Client, ConsumeResult, ConsumeSpec, ConsumerClient, RunResult, RunSpec};

static END: OnceLock<(Instant, Cpu)> = OnceLock::new();

/// The client calls this once the last acknowledgement (or the last message) has come in
/// (before closing).
pub fn mark_end() {
    let _ = END.set((Instant::now(), Cpu::now()));
}

static FIRST: OnceLock<Instant> = OnceLock::new();

/// A consumer calls this for its first message (later calls are no-ops).
#[inline]
pub fn mark_first() {
    if FIRST.get().is_none() {
        let _ = FIRST.set(Instant::now());
    }
}

pub fn run(spec: RunSpec) -> Result<RunResult, String> {
    let payloads = Arc::new(payloads(spec.message_size, 4096));
    // a paced run's latencies are reported: every message timed
    let every = if spec.rate.is_some() { 1 } else { crate::measure::UNPACED_EVERY };
    let rec = Arc::new(Recorder::new(spec.messages, every));
    let baseline_rss_kib = proc_status_kib("VmHWM");
    let cpu0 = Cpu::now();
    let t0 = Instant::now();
    let outcome = match spec.client {
        Client::Gregor => crate::client_gregor::run(&spec, payloads.clone(), rec.clone(), false),
        Client::GregorCt => crate::client_gregor::run(&spec, payloads.clone(), rec.clone(), true),
        Client::Librdkafka => crate::client_rdkafka::run(&spec, &payloads, rec.clone()),
        Client::KafkaRust => crate::client_kafka_rust::run(&spec, &payloads, rec.clone()),
    };
    mark_end(); // no-op when the client marked it
    let (t1, cpu1) = *END.get().expect("set above");
    let peak_rss_kib = proc_status_kib("VmHWM");
    outcome?;
    let total = Cpu::now();
    let cpu = cpu1.since(cpu0);
    let pct = rec.percentiles();
    Ok(RunResult {
        acked: rec.acked.load(std::sync::atomic::Ordering::Acquire),
        failed: rec.failed.load(std::sync::atomic::Ordering::Acquire),
        first_error: rec.first_error(),
        elapsed_s: (t1 - t0).as_secs_f64(),
        p50_us: pct.p50,
        p99_us: pct.p99,
        p999_us: pct.p999,
        cpu_user_s: cpu.user.as_secs_f64(),
        cpu_sys_s: cpu.sys.as_secs_f64(),
        process_cpu_s: (total.user + total.sys).as_secs_f64(),
        peak_rss_kib,
        baseline_rss_kib,
        peak_held: rec.peak_held(),
        high_watermark_sum: None,
        high_watermarks: Vec::new(),
        cluster_cpu_s: None,
        other_cpu_s: None,
        attempt: 0,
        tcp: None,
        spec,
    })
}

/// Where a consumer puts what it read: its [`Tally`] (merged from every reading task).
pub type Sink = Arc<Mutex<Option<Tally>>>;

pub fn consume(spec: ConsumeSpec) -> Result<ConsumeResult, String> {
    let expected = expected_fingerprint(&payloads(spec.message_size, 4096), spec.messages);
    let sink: Sink = Arc::default();
    let baseline_rss_kib = proc_status_kib("VmHWM");
    let cpu0 = Cpu::now();
    let t0 = Instant::now();
    let outcome = match spec.client {
        ConsumerClient::GregorSimple => crate::consume_gregor::simple(&spec, sink.clone()),
        ConsumerClient::GregorGroup => crate::consume_gregor::group(&spec, sink.clone()),
        ConsumerClient::Librdkafka => crate::consume_rdkafka::run(&spec, sink.clone()),
        ConsumerClient::KafkaRust => crate::consume_kafka_rust::run(&spec, sink.clone()),
    };
    mark_end();
    let (t1, cpu1) = *END.get().expect("set above");
    let peak_rss_kib = proc_status_kib("VmHWM");
    outcome?;
    let total = Cpu::now();
    let cpu = cpu1.since(cpu0);
    let tally = sink.lock().unwrap().take().ok_or("the consumer reported nothing")?;
    let first = FIRST.get().copied().unwrap_or(t1);
    Ok(ConsumeResult {
        messages: tally.messages,
        bytes: tally.bytes,
        duplicates: tally.duplicates,
        gaps: tally.gaps,
        fingerprint: tally.fingerprint,
        expected_fingerprint: expected,
        startup_s: (first.max(t0) - t0).as_secs_f64(),
        elapsed_s: (t1 - t0).as_secs_f64(),
        cpu_user_s: cpu.user.as_secs_f64(),
        cpu_sys_s: cpu.sys.as_secs_f64(),
        process_cpu_s: (total.user + total.sys).as_secs_f64(),
        peak_rss_kib,
        baseline_rss_kib,
        cluster_cpu_s: None,
        other_cpu_s: None,
        attempt: 0,
        spec,
    })
}

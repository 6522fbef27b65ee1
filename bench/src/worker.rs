//! A worker: one client, one run, in its own process (so getrusage(RUSAGE_SELF) and VmHWM
//! are that client's alone, and the cluster's CPU, in another process, is not counted).

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use crate::measure::{payloads, proc_status_kib, Cpu, Recorder};
use crate::spec::{Client, RunResult, RunSpec};

static END: OnceLock<(Instant, Cpu)> = OnceLock::new();

/// The client calls this once the last acknowledgement has come in (before closing).
pub fn mark_end() {
    let _ = END.set((Instant::now(), Cpu::now()));
}

pub fn run(spec: RunSpec) -> Result<RunResult, String> {
    let payloads = payloads(spec.message_size, 4096);
    let rec = Arc::new(Recorder::new(spec.messages));
    let baseline_rss_kib = proc_status_kib("VmHWM");
    let cpu0 = Cpu::now();
    let t0 = Instant::now();
    let outcome = match spec.client {
        Client::Gregor => crate::client_gregor::run(&spec, &payloads, rec.clone(), false),
        Client::GregorCt => crate::client_gregor::run(&spec, &payloads, rec.clone(), true),
        Client::Librdkafka => crate::client_rdkafka::run(&spec, &payloads, rec.clone()),
        Client::KafkaRust => crate::client_kafka_rust::run(&spec, &payloads, rec.clone()),
    };
    mark_end(); // no-op when the client marked it
    let (t1, cpu1) = *END.get().expect("set above");
    let peak_rss_kib = proc_status_kib("VmHWM");
    outcome?;
    let total = Cpu::now();
    let cpu = cpu1.since(cpu0);
    let (p50_us, p99_us, _) = rec.percentiles(None);
    Ok(RunResult {
        acked: rec.acked.load(std::sync::atomic::Ordering::Acquire),
        failed: rec.failed.load(std::sync::atomic::Ordering::Acquire),
        first_error: rec.first_error(),
        elapsed_s: (t1 - t0).as_secs_f64(),
        p50_us,
        p99_us,
        cpu_user_s: cpu.user.as_secs_f64(),
        cpu_sys_s: cpu.sys.as_secs_f64(),
        process_cpu_s: (total.user + total.sys).as_secs_f64(),
        peak_rss_kib,
        baseline_rss_kib,
        high_watermark_sum: None,
        cluster_cpu_s: None,
        other_cpu_s: None,
        attempt: 0,
        spec,
    })
}

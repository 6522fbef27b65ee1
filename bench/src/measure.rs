//! What a worker measures about itself: CPU time (getrusage), peak RSS (VmHWM), and
//! per-message produce latency.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// User and system CPU time of this whole process (every thread: the client's own
/// background threads count), from `getrusage(RUSAGE_SELF)`.
#[derive(Debug, Clone, Copy)]
pub struct Cpu {
    pub user: Duration,
    pub sys: Duration,
}

impl Cpu {
    pub fn now() -> Cpu {
        // SAFETY: getrusage writes a plain C struct we own.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        assert_eq!(rc, 0, "getrusage failed");
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
        Cpu { user: tv(ru.ru_utime), sys: tv(ru.ru_stime) }
    }

    pub fn since(self, earlier: Cpu) -> Cpu {
        Cpu { user: self.user.saturating_sub(earlier.user), sys: self.sys.saturating_sub(earlier.sys) }
    }
}

/// CPU seconds the whole machine has been busy (all cores; /proc/stat's user, nice, system,
/// irq, softirq and steal).
pub fn machine_busy_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<f64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    let busy = v.first()? + v.get(1)? + v.get(2)? + v.get(5)? + v.get(6)? + v.get(7).unwrap_or(&0.0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(busy / hz)
}

/// /proc/loadavg's first three fields.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A field of /proc/self/status in KiB (`VmHWM`: peak resident set size; `VmRSS`: now).
pub fn proc_status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field).and_then(|r| r.strip_prefix(':')))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Per-message send time and completion latency, shared by the sending loop and whatever
/// thread the client completes deliveries on. Preallocated and pre-touched before the
/// baseline RSS is read, the same size for every client, so it does not tilt the RSS column.
#[derive(Debug)]
pub struct Recorder {
    start: Instant,
    sent_ns: Vec<AtomicU64>,
    latency_us: Vec<AtomicU32>,
    pub acked: AtomicUsize,
    pub failed: AtomicUsize,
    first_error: std::sync::Mutex<Option<String>>,
}

impl Recorder {
    pub fn new(n: usize) -> Recorder {
        let sent_ns: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(u64::MAX)).collect();
        let latency_us: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(u32::MAX)).collect();
        Recorder {
            start: Instant::now(),
            sent_ns,
            latency_us,
            acked: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
            first_error: std::sync::Mutex::new(None),
        }
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Message `i` is handed to the client now.
    #[inline]
    pub fn sent(&self, i: usize) {
        self.sent_ns[i].store(self.now_ns(), Ordering::Relaxed);
    }

    /// Message `i` got its acknowledgement now.
    #[inline]
    pub fn acked(&self, i: usize) {
        self.acked_at(i, self.now_ns());
    }

    /// Nanoseconds since this recorder was made (for [`Recorder::acked_at`]).
    pub fn clock(&self) -> u64 {
        self.now_ns()
    }

    /// Message `i` got its acknowledgement at `now_ns` ([`Recorder::clock`]).
    #[inline]
    pub fn acked_at(&self, i: usize, now_ns: u64) {
        let sent = self.sent_ns[i].load(Ordering::Relaxed);
        let lat = now_ns.saturating_sub(sent) / 1000;
        self.latency_us[i].store(lat.min(u32::MAX as u64 - 1) as u32, Ordering::Relaxed);
        self.acked.fetch_add(1, Ordering::Release);
    }

    /// Message `i` failed for good.
    pub fn failed(&self, _i: usize, error: impl FnOnce() -> String) {
        let mut first = self.first_error.lock().unwrap();
        if first.is_none() {
            *first = Some(error());
        }
        self.failed.fetch_add(1, Ordering::Release);
    }

    pub fn done(&self) -> usize {
        self.acked.load(Ordering::Acquire) + self.failed.load(Ordering::Acquire)
    }

    pub fn first_error(&self) -> Option<String> {
        self.first_error.lock().unwrap().clone()
    }

    /// p50 and p99 (µs) of the recorded latencies, and how many there were.
    pub fn percentiles(&self, only_first: Option<usize>) -> (Option<f64>, Option<f64>, usize) {
        let n = only_first.unwrap_or(self.latency_us.len()).min(self.latency_us.len());
        let mut v: Vec<u32> =
            self.latency_us[..n].iter().map(|a| a.load(Ordering::Relaxed)).filter(|&x| x != u32::MAX).collect();
        if v.is_empty() {
            return (None, None, 0);
        }
        v.sort_unstable();
        let pick = |q: f64| {
            let idx = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
            v[idx] as f64
        };
        (Some(pick(0.50)), Some(pick(0.99)), v.len())
    }
}

/// A deterministic pool of distinct `size`-byte payloads of random uppercase letters (what
/// Kafka's own `ProducerPerformance` sends), cycled through by every client alike. 4096 of
/// them (400 KiB) is more than the gzip window (32 KiB) and a snappy block (64 KiB), so a
/// compressed batch cannot just point back at an identical earlier message.
pub fn payloads(size: usize, count: usize) -> Vec<Vec<u8>> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    (0..count).map(|_| (0..size).map(|_| b'A' + (next() % 26) as u8).collect()).collect()
}

/// `--rate`: message `i` is due at `start + i / rate`; without a rate every message is due
/// at once (the clients are pushed as fast as they take messages).
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    start: Instant,
    nanos_per_message: Option<f64>,
}

impl Pacer {
    pub fn new(rate: Option<f64>) -> Pacer {
        Pacer { start: Instant::now(), nanos_per_message: rate.filter(|r| *r > 0.0).map(|r| 1e9 / r) }
    }

    /// How long to wait before handing message `i` over (None: go). Waits are whole
    /// milliseconds or more: a message due within the next millisecond goes now, so every
    /// client sleeps at most ~1,000 times a second and sends in bursts of rate/1000 messages
    /// (what tokio's 1 ms timer does to gregor's sleeps anyway).
    #[inline]
    pub fn wait(&self, i: usize) -> Option<Duration> {
        let npm = self.nanos_per_message?;
        let due = self.start + Duration::from_nanos((i as f64 * npm) as u64);
        due.checked_duration_since(Instant::now()).filter(|d| *d >= Duration::from_millis(1))
    }
}

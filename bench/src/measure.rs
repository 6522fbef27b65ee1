//! What a worker measures about itself: CPU time (getrusage), peak RSS (VmHWM), and
//! per-message produce latency.

/// An unpaced run times one message in this many (see [`Recorder`]).
pub const UNPACED_EVERY: usize = 64;

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// User and system CPU time of this whole process (every thread: the client's own
/// background threads count), from `getrusage(RUSAGE_SELF)`. The sum is the scheduler's
/// exact run time; the split between user and system is the kernel's estimate from the
/// ticks it sampled in each mode (`cputime_adjust`), so a run of a few seconds has it to
/// within a few ticks per thread, and a run shorter than a tick may show no system time.
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

/// The machine's TCP counters that explain a stall on loopback: retransmission timeouts
/// (`TcpExt: TCPTimeouts`: at least the 200 ms minimum RTO each), tail loss probes
/// (`TCPLossProbes`) and retransmitted segments (`Tcp: RetransSegs`). Machine-wide: a run's
/// difference includes the cluster's side of the connections (and anything else running).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TcpCounters {
    pub timeouts: u64,
    pub loss_probes: u64,
    pub retransmits: u64,
}

impl TcpCounters {
    pub fn read() -> Option<TcpCounters> {
        let netstat = std::fs::read_to_string("/proc/net/netstat").ok()?;
        let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
        Some(TcpCounters {
            timeouts: proc_net_field(&netstat, "TcpExt:", "TCPTimeouts")?,
            loss_probes: proc_net_field(&netstat, "TcpExt:", "TCPLossProbes")?,
            retransmits: proc_net_field(&snmp, "Tcp:", "RetransSegs")?,
        })
    }

    pub fn since(self, earlier: TcpCounters) -> TcpCounters {
        TcpCounters {
            timeouts: self.timeouts.saturating_sub(earlier.timeouts),
            loss_probes: self.loss_probes.saturating_sub(earlier.loss_probes),
            retransmits: self.retransmits.saturating_sub(earlier.retransmits),
        }
    }
}

/// A field of /proc/net/snmp or /proc/net/netstat: a `Prefix: names...` line followed by a
/// `Prefix: values...` line.
fn proc_net_field(text: &str, prefix: &str, name: &str) -> Option<u64> {
    let mut lines = text.lines().filter(|l| l.starts_with(prefix));
    while let (Some(names), Some(values)) = (lines.next(), lines.next()) {
        let at = names.split_whitespace().position(|n| n == name);
        if let Some(at) = at {
            return values.split_whitespace().nth(at)?.parse().ok();
        }
    }
    None
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
///
/// Only messages `i` with `i % every == 0` are timed (every message counts as acknowledged
/// or failed): an unpaced run times one in [`UNPACED_EVERY`], as its latencies are mostly
/// queueing and not reported, and two clock readings per message cost a single-threaded
/// client about an eighth of its time (perf, gregor-ct, 1 partition: `clock_gettime` 12% of
/// the samples, half in the sending loop, half in the delivery handler). A paced (latency)
/// run times every message.
#[derive(Debug)]
pub struct Recorder {
    start: Instant,
    /// `every - 1` (`every` is a power of two).
    mask: usize,
    sent_ns: Vec<AtomicU64>,
    latency_us: Vec<AtomicU32>,
    pub acked: AtomicUsize,
    pub failed: AtomicUsize,
    /// The most messages handed to the client and not yet reported back (sampled on every
    /// [`HELD_EVERY`]th message): what the client had to keep, its queue and what was in
    /// flight.
    peak_held: AtomicUsize,
    first_error: std::sync::Mutex<Option<String>>,
}

/// [`Recorder::sent`] samples the messages held on one message in this many (a power of two).
const HELD_EVERY: usize = 256;

impl Recorder {
    /// For `n` messages, timing one in `every` (rounded up to a power of two).
    pub fn new(n: usize, every: usize) -> Recorder {
        let sent_ns: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(u64::MAX)).collect();
        let latency_us: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(u32::MAX)).collect();
        Recorder {
            start: Instant::now(),
            mask: every.max(1).next_power_of_two() - 1,
            sent_ns,
            latency_us,
            acked: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
            peak_held: AtomicUsize::new(0),
            first_error: std::sync::Mutex::new(None),
        }
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// True when message `i` is timed.
    #[inline]
    fn timed(&self, i: usize) -> bool {
        i & self.mask == 0
    }

    /// Message `i` is handed to the client now.
    #[inline]
    pub fn sent(&self, i: usize) {
        if self.timed(i) {
            self.sent_ns[i].store(self.now_ns(), Ordering::Relaxed);
        }
        if i & (HELD_EVERY - 1) == 0 {
            // messages 0..i were handed over; only the sending thread writes the peak
            let held = i.saturating_sub(self.done());
            if held > self.peak_held.load(Ordering::Relaxed) {
                self.peak_held.store(held, Ordering::Relaxed);
            }
        }
    }

    /// The most messages the client held at once, as sampled by [`Recorder::sent`].
    pub fn peak_held(&self) -> usize {
        self.peak_held.load(Ordering::Relaxed)
    }

    /// Message `i` got its acknowledgement now.
    #[inline]
    pub fn acked(&self, i: usize) {
        if self.timed(i) {
            self.acked_at(i, self.now_ns());
        } else {
            self.acked.fetch_add(1, Ordering::Release);
        }
    }

    /// Nanoseconds since this recorder was made (for [`Recorder::acked_at`]).
    pub fn clock(&self) -> u64 {
        self.now_ns()
    }

    /// Message `i` got its acknowledgement at `now_ns` ([`Recorder::clock`]).
    #[inline]
    pub fn acked_at(&self, i: usize, now_ns: u64) {
        if self.timed(i) {
            let sent = self.sent_ns[i].load(Ordering::Relaxed);
            let lat = now_ns.saturating_sub(sent) / 1000;
            self.latency_us[i].store(lat.min(u32::MAX as u64 - 1) as u32, Ordering::Relaxed);
        }
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

    /// p50, p99 and p99.9 (µs) of the recorded latencies (nearest rank).
    pub fn percentiles(&self) -> Percentiles {
        let mut v: Vec<u32> =
            self.latency_us.iter().map(|a| a.load(Ordering::Relaxed)).filter(|&x| x != u32::MAX).collect();
        if v.is_empty() {
            return Percentiles::default();
        }
        v.sort_unstable();
        let pick = |q: f64| {
            let idx = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
            Some(v[idx] as f64)
        };
        Percentiles { p50: pick(0.50), p99: pick(0.99), p999: pick(0.999) }
    }
}

/// Latency percentiles in µs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Percentiles {
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
}

/// A cheap fingerprint of one value: its length and its first and last 8 bytes, mixed.
/// Consumers add them up (wrapping), so the sum does not depend on the order of delivery;
/// the 4096 distinct random payloads of the pool all fingerprint differently.
#[inline]
pub fn fingerprint(value: &[u8]) -> u64 {
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        let n = b.len().min(8);
        w[..n].copy_from_slice(&b[..n]);
        u64::from_le_bytes(w)
    };
    let head = word(value);
    let tail = word(&value[value.len().saturating_sub(8)..]);
    (head ^ tail.rotate_left(29) ^ value.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5851_F42D_4C95_7F2D
}

/// The fingerprint sum of the bench's messages 0..n (message i carries payload i mod pool).
pub fn expected_fingerprint(payloads: &[Vec<u8>], n: usize) -> u64 {
    let per: Vec<u64> = payloads.iter().map(|p| fingerprint(p)).collect();
    let (full, rest) = (n / per.len(), n % per.len());
    let all = per.iter().fold(0u64, |a, f| a.wrapping_add(*f));
    let head = per[..rest].iter().fold(0u64, |a, f| a.wrapping_add(*f));
    all.wrapping_mul(full as u64).wrapping_add(head)
}

/// What a consumer read, checked as it goes: per partition the next offset expected (so a
/// redelivered offset counts as a duplicate and a skipped one as a gap), the count, the value
/// bytes and the fingerprint sum. One per reading thread or task; [`Tally::merge`] adds them.
#[derive(Debug, Clone)]
pub struct Tally {
    next: Vec<i64>,
    end: Vec<i64>,
    pub messages: u64,
    pub bytes: u64,
    pub duplicates: u64,
    pub gaps: u64,
    pub fingerprint: u64,
}

impl Tally {
    /// Reading partitions `0..end.len()` from offset 0 to `end[p]`.
    pub fn new(end: &[i64]) -> Tally {
        Tally {
            next: vec![0; end.len()],
            end: end.to_vec(),
            messages: 0,
            bytes: 0,
            duplicates: 0,
            gaps: 0,
            fingerprint: 0,
        }
    }

    /// One message; true when it is the last one of its partition (the partition is done).
    #[inline]
    pub fn record(&mut self, partition: i32, offset: i64, value: Option<&[u8]>) -> bool {
        let Some(next) = self.next.get_mut(partition as usize) else {
            self.gaps += 1; // a partition that does not exist: count it as wrong
            return false;
        };
        if offset < *next {
            self.duplicates += 1;
            return false;
        }
        if offset > *next {
            self.gaps += (offset - *next) as u64;
        }
        *next = offset + 1;
        self.messages += 1;
        if let Some(v) = value {
            self.bytes += v.len() as u64;
            self.fingerprint = self.fingerprint.wrapping_add(fingerprint(v));
        }
        *next == self.end[partition as usize]
    }

    /// True when every partition has reached its end offset.
    pub fn done(&self) -> bool {
        self.next.iter().zip(&self.end).all(|(n, e)| n >= e)
    }

    /// The next offset to read of a partition.
    pub fn next_offset(&self, partition: usize) -> i64 {
        self.next[partition]
    }

    /// Partitions not read to their end yet.
    pub fn unfinished(&self) -> impl Iterator<Item = usize> + '_ {
        self.next.iter().zip(&self.end).enumerate().filter(|(_, (n, e))| n < e).map(|(p, _)| p)
    }

    /// Adds another reader's tally (a partition is read by one of them only).
    pub fn merge(&mut self, other: &Tally) {
        for (a, b) in self.next.iter_mut().zip(&other.next) {
            *a = (*a).max(*b);
        }
        self.messages += other.messages;
        self.bytes += other.bytes;
        self.duplicates += other.duplicates;
        self.gaps += other.gaps;
        self.fingerprint = self.fingerprint.wrapping_add(other.fingerprint);
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
    /// (gregor's async loop sleeps with [`PreciseSleep`], not tokio's timer, to keep to it).
    #[inline]
    pub fn wait(&self, i: usize) -> Option<Duration> {
        let npm = self.nanos_per_message?;
        let due = self.start + Duration::from_nanos((i as f64 * npm) as u64);
        due.checked_duration_since(Instant::now()).filter(|d| *d >= Duration::from_millis(1))
    }
}

/// A sleep for an async sending loop that ends when the [`Pacer`] says, to within about
/// 0.1 ms, as librdkafka's `poll(wait)` and kafka-rust's `thread::sleep` do: tokio's timer
/// fires on the first whole millisecond after a deadline and its driver rounds its wait up
/// again, so a paced task woke about 1.1 ms late and sent bursts of twice the messages the
/// other clients got (437,778 msg/s: 930 every 2.1 ms against 476 every 1.07 ms, measured).
/// A thread of the benchmark keeps the deadline and wakes the task: the same offered traffic
/// for every client, as the latency suite means it.
pub struct PreciseSleep {
    tx: std::sync::mpsc::Sender<(Instant, tokio::sync::oneshot::Sender<()>)>,
}

impl PreciseSleep {
    pub fn new() -> PreciseSleep {
        let (tx, rx) = std::sync::mpsc::channel::<(Instant, tokio::sync::oneshot::Sender<()>)>();
        std::thread::Builder::new()
            .name("bench-pacer".into())
            .spawn(move || {
                for (deadline, done) in rx {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if !left.is_zero() {
                        std::thread::sleep(left);
                    }
                    let _ = done.send(());
                }
            })
            .expect("a pacing thread");
        PreciseSleep { tx }
    }

    pub async fn sleep(&self, wait: Duration) {
        let (done, woken) = tokio::sync::oneshot::channel();
        if self.tx.send((Instant::now() + wait, done)).is_ok() {
            let _ = woken.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_precise_sleep_ends_after_its_wait() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let sleeper = PreciseSleep::new();
        runtime.block_on(async {
            for ms in [1, 3] {
                let at = Instant::now();
                sleeper.sleep(Duration::from_millis(ms)).await;
                assert!(at.elapsed() >= Duration::from_millis(ms), "{:?}", at.elapsed());
            }
        });
    }

    #[test]
    fn peak_held_is_the_most_messages_handed_over_and_not_reported() {
        let rec = Recorder::new(4096, 1024);
        // each message reported 1,000 messages after it was handed over, but for the ones due
        // in a stall between 2,000 and 3,000 (never reported)
        for i in 0..4096 {
            rec.sent(i);
            if i >= 1000 && !(2000..3000).contains(&i) {
                rec.acked(i - 1000);
            }
        }
        // the samples (every 256th message) see 1,000 held before the stall, 1,816 at its last
        // one (2,816), and 2,000 after it (the 1,000 messages due in the stall stay unreported)
        assert_eq!(rec.peak_held(), 2000);
        let quiet = Recorder::new(512, 1);
        for i in 0..512 {
            quiet.sent(i);
            quiet.acked(i);
        }
        assert_eq!(quiet.peak_held(), 0);
    }

    #[test]
    fn expected_fingerprint_is_the_sum_over_the_messages_in_any_order() {
        let pool = payloads(100, 4096);
        for n in [0, 1, 4095, 4096, 4097, 10_000] {
            let direct = (0..n).fold(0u64, |a, i| a.wrapping_add(fingerprint(&pool[i % pool.len()])));
            assert_eq!(expected_fingerprint(&pool, n), direct, "n={n}");
        }
        // the pool's payloads fingerprint differently, so a wrong value is noticed
        let mut all: Vec<u64> = pool.iter().map(|p| fingerprint(p)).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), pool.len());
        // short values too
        assert_ne!(fingerprint(b""), fingerprint(b"A"));
        assert_ne!(fingerprint(b"AB"), fingerprint(b"BA"));
    }

    #[test]
    fn tally_counts_in_order_messages_and_flags_duplicates_and_gaps() {
        let pool = payloads(10, 4);
        let mut t = Tally::new(&[3, 0, 2]);
        assert!(!t.done());
        assert_eq!(t.unfinished().collect::<Vec<_>>(), [0, 2]);
        assert!(!t.record(0, 0, Some(&pool[0])));
        assert!(!t.record(0, 0, Some(&pool[0]))); // again: a duplicate, not counted
        assert!(!t.record(2, 0, Some(&pool[1])));
        assert!(t.record(2, 1, Some(&pool[2]))); // partition 2 done
        assert!(!t.record(0, 1, Some(&pool[3])));
        assert!(t.record(0, 2, Some(&pool[0])));
        assert!(t.done());
        assert_eq!((t.messages, t.duplicates, t.gaps, t.bytes), (5, 1, 0, 50));
        let fp = [0, 1, 2, 3, 0].iter().fold(0u64, |a, i| a.wrapping_add(fingerprint(&pool[*i])));
        assert_eq!(t.fingerprint, fp);

        let mut g = Tally::new(&[5]);
        g.record(0, 0, Some(b"x"));
        g.record(0, 3, Some(b"y")); // offsets 1 and 2 skipped
        assert_eq!((g.messages, g.gaps, g.next_offset(0)), (2, 2, 4));
        assert!(!g.record(7, 0, Some(b"z"))); // no such partition: counted as wrong
        assert_eq!(g.gaps, 3);
    }

    #[test]
    fn tallies_of_separate_readers_merge() {
        let mut a = Tally::new(&[2, 2]);
        let mut b = Tally::new(&[2, 2]);
        a.record(0, 0, Some(b"a"));
        a.record(0, 1, Some(b"b"));
        b.record(1, 0, Some(b"c"));
        b.record(1, 1, Some(b"d"));
        assert!(!a.done() && !b.done());
        a.merge(&b);
        assert!(a.done());
        assert_eq!((a.messages, a.bytes), (4, 4));
        let fp = [b"a", b"b", b"c", b"d"].iter().fold(0u64, |x, v| x.wrapping_add(fingerprint(*v)));
        assert_eq!(a.fingerprint, fp);
    }

    #[test]
    fn proc_net_fields_are_found_by_name_in_their_prefix_pair() {
        let text = "Tcp: RtoMin RetransSegs InErrs\nTcp: 200 9216 0\nUdp: RetransSegs\nUdp: 7\n\
                    TcpExt: SyncookiesSent TCPTimeouts\nTcpExt: 0 7\n";
        assert_eq!(proc_net_field(text, "Tcp:", "RetransSegs"), Some(9216));
        assert_eq!(proc_net_field(text, "Udp:", "RetransSegs"), Some(7));
        assert_eq!(proc_net_field(text, "TcpExt:", "TCPTimeouts"), Some(7));
        assert_eq!(proc_net_field(text, "TcpExt:", "TCPLossProbes"), None);
        let before = TcpCounters { timeouts: 7, loss_probes: 10, retransmits: 20 };
        let after = TcpCounters { timeouts: 9, loss_probes: 10, retransmits: 25 };
        assert_eq!(after.since(before), TcpCounters { timeouts: 2, loss_probes: 0, retransmits: 5 });
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let r = Recorder::new(1000, 1);
        for i in 0..1000 {
            r.sent_ns[i].store(0, Ordering::Relaxed);
            r.acked_at(i, (i as u64 + 1) * 1000);
        }
        let p = r.percentiles();
        assert_eq!((p.p50, p.p99, p.p999), (Some(500.0), Some(990.0), Some(999.0)));
        assert_eq!(Recorder::new(3, 1).percentiles().p50, None);
    }

    #[test]
    fn one_message_in_every_is_timed_and_every_one_counted() {
        let r = Recorder::new(1000, 60); // rounded up to 64
        for i in 0..1000 {
            r.sent(i);
            r.acked(i);
        }
        assert_eq!(r.done(), 1000);
        let timed = r.latency_us.iter().filter(|l| l.load(Ordering::Relaxed) != u32::MAX).count();
        assert_eq!(timed, 1000usize.div_ceil(64));
        assert!(r.percentiles().p50.is_some());
    }
}

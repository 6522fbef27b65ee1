//! Waiting to within tens of microseconds, for the broker timing profile.
//!
//! tokio's timer has a resolution of one millisecond and fires at the first tick at or after
//! a deadline, so an answer due 2.9 ms after its request went out after 3 to 4 ms: half a
//! millisecond more on average, and a request's time a step function of its size (a few
//! microseconds more work could cost a whole tick). A real broker's time is continuous. Here
//! one thread of the process keeps the pending deadlines in a heap and sleeps on a condition
//! variable until the earliest, which the kernel's high-resolution timers end within about
//! the thread's timer slack (50 us by default).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex, Once};
use std::time::Instant;

use tokio::sync::oneshot;

/// One pending deadline; ordered by deadline, then by arrival.
struct Alarm {
    at: Instant,
    seq: u64,
    wake: oneshot::Sender<()>,
}

impl PartialEq for Alarm {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Alarm {}
impl PartialOrd for Alarm {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Alarm {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

struct Pending {
    heap: BinaryHeap<Reverse<Alarm>>,
    next_seq: u64,
}

struct Clock {
    pending: Mutex<Pending>,
    changed: Condvar,
}

/// The process's deadlines, and its one alarm thread, started on first use.
fn clock() -> &'static Clock {
    static CLOCK: Clock =
        Clock { pending: Mutex::new(Pending { heap: BinaryHeap::new(), next_seq: 0 }), changed: Condvar::new() };
    static STARTED: Once = Once::new();
    STARTED.call_once(|| {
        std::thread::Builder::new()
            .name("gregor-testkit-alarm".into())
            .spawn(|| ring(&CLOCK))
            .expect("the testkit's alarm thread starts");
    });
    &CLOCK
}

/// The alarm thread: wakes each waiter at its deadline, earliest first.
fn ring(clock: &'static Clock) {
    let mut pending = clock.pending.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let now = Instant::now();
        match pending.heap.peek() {
            None => pending = clock.changed.wait(pending).unwrap_or_else(|e| e.into_inner()),
            Some(Reverse(first)) if first.at <= now => {
                if let Some(Reverse(due)) = pending.heap.pop() {
                    // the waiter may be gone (its request cancelled): nothing to wake
                    let _ = due.wake.send(());
                }
            }
            Some(Reverse(first)) => {
                let wait = first.at - now;
                pending = clock.changed.wait_timeout(pending, wait).unwrap_or_else(|e| e.into_inner()).0;
            }
        }
    }
}

/// Waits until `deadline`, to within the alarm thread's wake-up latency rather than tokio's
/// millisecond ticks. Returns at once for a deadline already past.
pub(crate) async fn sleep_until(deadline: tokio::time::Instant) {
    let at = deadline.into_std();
    if at <= Instant::now() {
        return;
    }
    let (wake, woken) = oneshot::channel();
    let clock = clock();
    {
        let mut pending = clock.pending.lock().unwrap_or_else(|e| e.into_inner());
        let seq = pending.next_seq;
        pending.next_seq += 1;
        let earliest = pending.heap.peek().is_none_or(|Reverse(first)| at < first.at);
        pending.heap.push(Reverse(Alarm { at, seq, wake }));
        if earliest {
            clock.changed.notify_one();
        }
    }
    // the sender is only dropped after sending
    let _ = woken.await;
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn wakes_at_the_deadline_not_at_the_next_millisecond() {
        // up to three rounds: a machine busy with the rest of the test suite can delay one
        // round's thread wake-ups (CI once saw a median of 330 us)
        let mut rounds = Vec::new();
        for _ in 0..3 {
            let mut late = Vec::new();
            for i in 0..21u64 {
                // deadlines that fall between tokio's millisecond ticks
                let due = tokio::time::Instant::now() + Duration::from_micros(1_300 + 37 * i);
                sleep_until(due).await;
                let now = tokio::time::Instant::now();
                assert!(now >= due, "woke {:?} early", due - now);
                late.push(now - due);
            }
            late.sort();
            // tokio's sleep_until is late by about half a millisecond on average (up to a
            // whole one): the median here is tens of microseconds, with room for a loaded
            // machine
            if late[late.len() / 2] < Duration::from_micros(300) {
                return;
            }
            rounds.push(late);
        }
        panic!("the median lateness was 300 us or more in every round: {rounds:?}");
    }

    #[tokio::test]
    async fn many_waiters_each_wake_in_deadline_order() {
        let start = tokio::time::Instant::now();
        let woken = std::sync::Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in (0..10u64).rev() {
            let woken = woken.clone();
            tasks.push(tokio::spawn(async move {
                sleep_until(start + Duration::from_millis(2 + 2 * i)).await;
                woken.lock().unwrap().push(i);
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*woken.lock().unwrap(), (0..10).collect::<Vec<_>>());
        assert!(start.elapsed() >= Duration::from_millis(20));
    }

    #[tokio::test]
    async fn a_past_deadline_returns_at_once_and_a_dropped_waiter_harms_nothing() {
        let within = |d| tokio::time::timeout(Duration::from_secs(5), d);
        let past = tokio::time::Instant::now() - Duration::from_millis(1);
        assert!(within(sleep_until(past)).await.is_ok(), "a past deadline waits for nothing");
        let soon = tokio::time::Instant::now() + Duration::from_millis(5);
        assert!(tokio::time::timeout(Duration::from_millis(1), sleep_until(soon)).await.is_err(), "dropped waiting");
        // the alarm thread rings past the dropped waiter and goes on
        let next = tokio::time::Instant::now() + Duration::from_millis(10);
        assert!(within(sleep_until(next)).await.is_ok(), "the next waiter is woken");
    }
}

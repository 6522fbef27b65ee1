//! Waiting for a condition, for a future, and for concurrent cases.

use std::fmt::{Debug, Display};
use std::future::{Future, IntoFuture};
use std::panic::Location;
use std::time::Duration;

/// How often [`eventually`] checks its condition.
pub const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// What a check given to [`eventually`] returns: whether the condition holds yet, and what it
/// holds.
///
/// * `bool`: `true` when it holds (the wait returns `()`);
/// * `Option<T>`: `Some(value)` when it holds (the wait returns the value);
/// * `Result<T, E>`: `Ok(value)` when it holds; the last `Err` (its `Debug`) says, in the
///   failure, how far the condition was from holding.
pub trait Condition {
    /// What the wait returns once the condition holds.
    type Output;

    /// `Ok` when the condition holds; `Err` with what is still wrong, if the check says.
    ///
    /// # Errors
    ///
    /// When the condition does not hold yet.
    fn holds(self) -> Result<Self::Output, Option<String>>;
}

impl Condition for bool {
    type Output = ();

    fn holds(self) -> Result<(), Option<String>> {
        if self {
            Ok(())
        } else {
            Err(None)
        }
    }
}

impl<T> Condition for Option<T> {
    type Output = T;

    fn holds(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

impl<T, E: Debug> Condition for Result<T, E> {
    type Output = T;

    fn holds(self) -> Result<T, Option<String>> {
        self.map_err(|e| Some(format!("{e:?}")))
    }
}

/// Waits until `check` holds, checking at once and then every [`POLL_INTERVAL`], and returns
/// what it holds (see [`Condition`]).
///
/// `within` is a failure guard, not a measurement: give it room for a loaded machine (seconds,
/// not milliseconds). It follows tokio's clock, so a paused clock advances to it.
///
/// ```no_run
/// # async fn demo(cluster: &gregor_testkit::FakeCluster) {
/// use std::time::Duration;
/// use gregor_testkit::support::eventually;
///
/// let leader = eventually("a leader of t/0", Duration::from_secs(10), async || cluster.leader("t", 0)).await;
/// # }
/// ```
///
/// # Send
///
/// Awaited on a test's own task, the check may borrow anything. A future that must be `Send`
/// (given to `tokio::spawn`) cannot await a check that borrows from its surroundings: today's
/// compiler cannot prove the async closure's borrowing future `Send` for every lifetime. There,
/// give it a `move` closure that hands each check's `async move` block its own clone of what
/// it reads (an `Arc`), or wait on the test's own task.
///
/// # Panics
///
/// When `check` has not held within `within`: the message names `what`, the caller's line and
/// the last thing a `Result` check said.
#[track_caller]
pub fn eventually<C: Condition>(
    what: impl Display,
    within: Duration,
    mut check: impl AsyncFnMut() -> C,
) -> impl Future<Output = C::Output> {
    let at = Location::caller();
    async move {
        match poll(within, &mut check).await {
            Ok(value) => value,
            Err(Some(last)) => panic!("timed out after {within:?} waiting for {what} (at {at}); last: {last}"),
            Err(None) => panic!("timed out after {within:?} waiting for {what} (at {at})"),
        }
    }
}

/// [`eventually`] without the failure, for a test that reports rather than asserts (a chaos
/// run counting what recovered): what `check` holds, or `None` when it has not held within
/// `within`.
pub async fn poll_until<C: Condition>(within: Duration, mut check: impl AsyncFnMut() -> C) -> Option<C::Output> {
    poll(within, &mut check).await.ok()
}

/// Checks at once, then every [`POLL_INTERVAL`] until `within` has passed; `Err` with the last
/// thing a `Result` check said.
async fn poll<C: Condition>(within: Duration, check: &mut impl AsyncFnMut() -> C) -> Result<C::Output, Option<String>> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let last = match check().await.holds() {
            Ok(value) => return Ok(value),
            Err(last) => last,
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(last);
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Awaits `future`, failing the test when it has not finished `within`: a liveness guard for
/// calls that must return (a close, a shutdown, a delivery), not a measurement.
///
/// # Panics
///
/// When `future` has not finished within `within`; the message names `what` and the caller's
/// line.
#[track_caller]
pub fn bounded<F: IntoFuture>(what: impl Display, within: Duration, future: F) -> impl Future<Output = F::Output> {
    let at = Location::caller();
    let future = tokio::time::timeout(within, future.into_future());
    async move {
        match future.await {
            Ok(output) => output,
            Err(_) => panic!("hang: {what} did not finish within {within:?} (at {at})"),
        }
    }
}

/// Runs `scenario` for every case at once, each on its own task, and fails the test with every
/// failure (`Err` message) together, so one run shows all the cases that went wrong. Use
/// [`check!`](crate::support::check) inside a scenario to return a failure.
///
/// # Panics
///
/// When a scenario fails or panics, or when they have not all finished `within`.
#[track_caller]
pub fn side_by_side<C, F, Fut>(
    within: Duration,
    cases: impl IntoIterator<Item = C>,
    scenario: F,
) -> impl Future<Output = ()>
where
    F: Fn(C) -> Fut,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    let at = Location::caller();
    async move {
        let mut set = tokio::task::JoinSet::new();
        for case in cases {
            set.spawn(scenario(case));
        }
        let deadline = tokio::time::Instant::now() + within;
        let mut failures = Vec::new();
        loop {
            match tokio::time::timeout_at(deadline, set.join_next()).await {
                Ok(Some(Ok(Ok(())))) => {}
                Ok(Some(Ok(Err(failure)))) => failures.push(failure),
                Ok(Some(Err(e))) => failures.push(format!("a scenario panicked or was cancelled: {e}")),
                Ok(None) => break,
                Err(_) => {
                    failures.push(format!("hang: {} scenario(s) did not finish within {within:?}", set.len()));
                    break;
                }
            }
        }
        assert!(failures.is_empty(), "{} scenario(s) failed (at {at}):\n{}", failures.len(), failures.join("\n"));
    }
}

/// In a function returning `Result<_, String>` (a [`side_by_side`] scenario): returns
/// `Err(format!(..))` unless the condition holds.
///
/// ```
/// use gregor_testkit::support::check;
///
/// fn positive(n: i32) -> Result<(), String> {
///     check!(n > 0, "{n} is not positive");
///     Ok(())
/// }
/// assert_eq!(positive(-1), Err("-1 is not positive".to_owned()));
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! __support_check {
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            return ::std::result::Result::Err(::std::format!($($arg)+));
        }
    };
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::support::check;

    fn panic_text(e: Box<dyn std::any::Any + Send>) -> String {
        match e.downcast::<String>() {
            Ok(s) => *s,
            Err(e) => e.downcast_ref::<&str>().map(|s| (*s).to_owned()).unwrap_or_default(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn eventually_returns_what_the_condition_holds_once_it_holds() {
        let calls = AtomicUsize::new(0);
        let started = tokio::time::Instant::now();
        let got = eventually("the third call", Duration::from_secs(5), async || {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            (n == 3).then_some(n * 10)
        })
        .await;
        assert_eq!(got, 30);
        assert_eq!(started.elapsed(), POLL_INTERVAL * 2, "checked at once, then every interval");

        let flag = Arc::new(AtomicUsize::new(0));
        let f = Arc::clone(&flag);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            f.store(1, Ordering::SeqCst);
        });
        eventually("the flag", Duration::from_secs(3), async || flag.load(Ordering::SeqCst) == 1).await;
        let ok: u8 = eventually("ok", Duration::from_secs(1), async || Ok::<_, String>(7)).await;
        assert_eq!(ok, 7);
    }

    #[tokio::test(start_paused = true)]
    async fn a_spawned_wait_owns_what_its_check_reads() {
        let flag = Arc::new(AtomicUsize::new(0));
        let owned = Arc::clone(&flag);
        let waiting = tokio::spawn(eventually("the flag, on another task", Duration::from_secs(5), move || {
            let flag = Arc::clone(&owned);
            async move { flag.load(Ordering::SeqCst) == 1 }
        }));
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiting.is_finished());
        flag.store(1, Ordering::SeqCst);
        waiting.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn eventually_fails_after_its_timeout_naming_what_and_the_last_error() {
        let started = tokio::time::Instant::now();
        let failed = tokio::spawn(eventually("the impossible", Duration::from_secs(2), async || false)).await;
        let text = panic_text(failed.expect_err("it times out").into_panic());
        assert!(text.starts_with("timed out after 2s waiting for the impossible (at "), "{text}");
        assert!(text.contains("wait.rs"), "names the caller's line: {text}");
        assert!(started.elapsed() >= Duration::from_secs(2) && started.elapsed() < Duration::from_secs(3));

        let mut n = 0;
        let failed = tokio::spawn(eventually("an isr of 3", Duration::from_secs(1), async move || {
            n += 1;
            Err::<(), _>(format!("isr of {n}"))
        }))
        .await;
        let text = panic_text(failed.expect_err("it times out").into_panic());
        assert!(text.contains("waiting for an isr of 3") && text.contains("; last: \"isr of "), "{text}");
    }

    #[tokio::test(start_paused = true)]
    async fn poll_until_says_whether_the_condition_held_in_time() {
        let started = tokio::time::Instant::now();
        assert_eq!(poll_until(Duration::from_secs(2), async || false).await, None);
        assert!(started.elapsed() >= Duration::from_secs(2) && started.elapsed() < Duration::from_secs(3));
        let mut n = 0;
        let got = poll_until(Duration::from_secs(2), async || {
            n += 1;
            (n == 5).then_some("fifth")
        })
        .await;
        assert_eq!((got, n), (Some("fifth"), 5));
        let failing: Option<()> = poll_until(Duration::ZERO, async || Err::<(), _>("never")).await;
        assert_eq!(failing, None, "checked once even with no time at all");
    }

    #[tokio::test(start_paused = true)]
    async fn bounded_returns_the_output_or_fails_naming_the_hang() {
        assert_eq!(bounded("a quick one", Duration::from_secs(1), async { 5 }).await, 5);
        let failed = tokio::spawn(bounded("a close", Duration::from_secs(1), std::future::pending::<()>())).await;
        let text = panic_text(failed.expect_err("it hangs").into_panic());
        assert!(text.starts_with("hang: a close did not finish within 1s (at "), "{text}");
    }

    #[tokio::test(start_paused = true)]
    async fn side_by_side_runs_the_cases_at_once_and_reports_every_failure() {
        let started = tokio::time::Instant::now();
        side_by_side(Duration::from_secs(5), 0..4, |i: u64| async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            check!(i < 10, "{i} too big");
            Ok(())
        })
        .await;
        assert_eq!(started.elapsed(), Duration::from_secs(1), "the cases ran concurrently");

        let failed = tokio::spawn(side_by_side(Duration::from_secs(5), 0..4, |i: u64| async move {
            check!(i % 2 == 0, "case {i} is odd");
            Ok(())
        }))
        .await;
        let text = panic_text(failed.expect_err("two cases fail").into_panic());
        assert!(text.starts_with("2 scenario(s) failed"), "{text}");
        assert!(text.contains("case 1 is odd") && text.contains("case 3 is odd"), "{text}");

        let failed = tokio::spawn(side_by_side(Duration::from_secs(5), [()], |()| async {
            std::future::pending::<Result<(), String>>().await
        }))
        .await;
        let text = panic_text(failed.expect_err("it hangs").into_panic());
        assert!(text.contains("hang: 1 scenario(s) did not finish within 5s"), "{text}");
    }
}

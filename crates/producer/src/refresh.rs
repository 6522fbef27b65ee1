//! When the producer refreshes its metadata: a pure state machine fed `now`. The engine tells
//! it what happened (an error that moved a leader, records waiting for metadata, a refresh's
//! end) and asks it, once per turn of its loop, whether to start a refresh; it sleeps until
//! [`RefreshSchedule::next_wakeup`].
//!
//! ```text
//!  want(now)  ◄── leader errors, a new topic, a partition missing from a response
//!  want_for_waiting(now) ◄── a record placed nowhere yet (its topic's partitions unknown)
//!  poll(now, waiting, has_topics) ──► start a refresh? ──► (the refresh task) ──► finished(now, ok, waiting)
//!  after_request(now) ◄── every Produce request (0.8's interval 0)
//! ```
//!
//! Rules (each has a table test below):
//!
//! * **One at a time** — a refresh starts when one is wanted and its time has come, and none
//!   is running. Wishes made while one runs wait for its end (the timer ignores them until
//!   then).
//! * **Earliest wins** — a refresh wanted at `t` while one is wanted at `t'` is wanted at the
//!   earlier of the two.
//! * **Nothing to ask about** — while the producer knows no topic, wishes are dropped (and no
//!   timer spins on them).
//! * **Records never wait for nothing** — while records wait for metadata (held for their
//!   topic's partitions, or queued for a partition without a leader) a refresh is running or
//!   wanted: if none is, one is wanted `retry.backoff.ms` from now. Only a refresh's end
//!   counts the metadata rounds that release such records, so without one they would wait for
//!   the periodic refresh (10 minutes by default, or never). A refresh that ends with records
//!   still waiting wants the next one `retry.backoff.ms` after it.
//! * **Periodic** — every `topic.metadata.refresh.interval.ms` from the end of the last
//!   successful refresh (`None`: never). A failed refresh keeps the period already set (a
//!   failed periodic refresh is due again an interval after its end). An interval of 0 is
//!   0.8's "after every Produce request" ([`RefreshSchedule::after_request`]) instead.

use std::time::Duration;

use tokio::time::Instant;

/// What [`RefreshSchedule::poll`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Poll {
    /// A refresh starts now (the schedule counts it as running until
    /// [`RefreshSchedule::finished`] or [`RefreshSchedule::abandoned`]).
    pub(crate) start: bool,
    /// A refresh was wanted because records wait for metadata and none was coming (the
    /// liveness rule; worth a debug line).
    pub(crate) for_waiting: bool,
}

/// The metadata refresh schedule (see the [module docs](self)).
#[derive(Debug, Clone)]
pub(crate) struct RefreshSchedule {
    /// `topic.metadata.refresh.interval.ms`: `None` never, zero after every request.
    interval: Option<Duration>,
    /// `retry.backoff.ms`: how long records waiting for metadata wait between refreshes.
    backoff: Duration,
    /// A refresh is running.
    running: bool,
    /// A refresh is wanted, not before this.
    wanted: Option<Instant>,
    /// When the periodic refresh is due.
    periodic: Option<Instant>,
}

impl RefreshSchedule {
    /// A schedule with `topic.metadata.refresh.interval.ms` `interval` (`None`: never) and
    /// `retry.backoff.ms` `backoff`; nothing wanted yet.
    pub(crate) fn new(interval: Option<Duration>, backoff: Duration) -> RefreshSchedule {
        RefreshSchedule { interval, backoff, running: false, wanted: None, periodic: None }
    }

    /// A refresh is wanted at `at` (or at the time already wanted, when earlier).
    pub(crate) fn want(&mut self, at: Instant) {
        self.wanted = Some(self.wanted.map_or(at, |w| w.min(at)));
    }

    /// A record waits for metadata: a refresh is wanted `retry.backoff.ms` from now, unless
    /// one is running or wanted already.
    pub(crate) fn want_for_waiting(&mut self, now: Instant) -> bool {
        if self.is_coming() {
            return false;
        }
        self.want(now + self.backoff);
        true
    }

    /// True when a refresh is running or wanted.
    pub(crate) fn is_coming(&self) -> bool {
        self.running || self.wanted.is_some()
    }

    /// True while a refresh runs (the tests' view).
    #[cfg(test)]
    pub(crate) fn is_running(&self) -> bool {
        self.running
    }

    /// The turn of the engine's loop at `now`: the periodic refresh when it is due, the
    /// liveness rule (`waiting`: do records wait for metadata? asked only when no refresh is
    /// coming), then whether a refresh starts now (`has_topics`: the producer knows a topic to
    /// ask about).
    pub(crate) fn poll(&mut self, now: Instant, waiting: impl FnOnce() -> bool, has_topics: bool) -> Poll {
        if self.periodic.is_some_and(|at| now >= at) {
            self.periodic = None;
            self.want(now);
        }
        let for_waiting = !self.is_coming() && waiting() && self.want_for_waiting(now);
        if !has_topics {
            self.wanted = None;
            return Poll { start: false, for_waiting };
        }
        let start = !self.running && self.wanted.is_some_and(|at| at <= now);
        if start {
            self.wanted = None;
            self.running = true;
        }
        Poll { start, for_waiting }
    }

    /// The running refresh ended at `now` (`ok`: it succeeded); `waiting`: records still wait
    /// for metadata once its outcome was applied.
    pub(crate) fn finished(&mut self, now: Instant, ok: bool, waiting: bool) {
        if ok || self.periodic.is_none() {
            self.periodic = self.interval.filter(|i| !i.is_zero()).map(|i| now + i);
        }
        self.running = false;
        if waiting {
            self.want(now + self.backoff);
        }
    }

    /// The running refresh was abandoned (aborted on close): no outcome will come.
    pub(crate) fn abandoned(&mut self) {
        self.running = false;
    }

    /// A Produce request's outcome came at `now`: with an interval of 0, a refresh is wanted
    /// now (0.8 refreshes after every request).
    pub(crate) fn after_request(&mut self, now: Instant) {
        if self.interval == Some(Duration::ZERO) {
            self.want(now);
        }
    }

    /// The time a refresh is wanted (the tests' view).
    #[cfg(test)]
    pub(crate) fn wanted(&self) -> Option<Instant> {
        self.wanted
    }

    /// When [`RefreshSchedule::poll`] has something to do next, if nothing else happens: the
    /// time a refresh is wanted (unless one runs), or the periodic one's.
    pub(crate) fn next_wakeup(&self) -> Option<Instant> {
        let wanted = self.wanted.filter(|_| !self.running);
        match (wanted, self.periodic) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const BACKOFF: Duration = Duration::from_millis(100);

    /// What happens, at a time in ms from the start.
    #[derive(Debug, Clone, Copy)]
    enum Event {
        Want(u64),
        WantForWaiting,
        /// A turn of the loop, poll(now, waiting, has_topics): does a refresh start?
        Turn {
            waiting: bool,
            topics: bool,
            start: bool,
        },
        Finished {
            ok: bool,
            waiting: bool,
        },
        Abandoned,
        AfterRequest,
    }
    use Event::*;

    /// Runs `events` (at their times, in ms) on a schedule of `interval`, checking after each
    /// that the next wake-up is the one given (in ms; `None`: no timer) and that a refresh is
    /// coming or not as given.
    fn run(interval: Option<Duration>, events: &[(u64, Event, Option<u64>, bool)]) {
        let t0 = Instant::now();
        let mut s = RefreshSchedule::new(interval, BACKOFF);
        for (i, &(at, event, wakeup, coming)) in events.iter().enumerate() {
            let ms = Duration::from_millis;
            let now = t0 + ms(at);
            match event {
                Want(at) => s.want(t0 + ms(at)),
                WantForWaiting => {
                    s.want_for_waiting(now);
                }
                Turn { waiting, topics, start } => {
                    assert_eq!(s.poll(now, || waiting, topics).start, start, "row {i}: {event:?} at {at} ms");
                }
                Finished { ok, waiting } => s.finished(now, ok, waiting),
                Abandoned => s.abandoned(),
                AfterRequest => s.after_request(now),
            }
            assert_eq!(s.next_wakeup(), wakeup.map(|at| t0 + ms(at)), "row {i}: {event:?} at {at} ms: wake-up");
            assert_eq!(s.is_coming(), coming, "row {i}: {event:?} at {at} ms: coming");
        }
    }

    const TOPICS: bool = true;

    #[test]
    fn one_refresh_at_a_time_and_the_earliest_wish_wins() {
        #[rustfmt::skip]
        run(None, &[
            // (at ms, event, next wake-up ms, coming)
            (0, Want(50), Some(50), true),
            (0, Want(20), Some(20), true),
            (0, Want(70), Some(20), true),
            (10, Turn { waiting: false, topics: TOPICS, start: false }, Some(20), true),
            (20, Turn { waiting: false, topics: TOPICS, start: true }, None, true),
            // wishes while it runs wait for its end; the timer ignores them
            (25, Want(25), None, true),
            (30, Turn { waiting: false, topics: TOPICS, start: false }, None, true),
            (40, Finished { ok: true, waiting: false }, Some(25), true),
            (40, Turn { waiting: false, topics: TOPICS, start: true }, None, true),
            (45, Finished { ok: true, waiting: false }, None, false),
            (50, Turn { waiting: false, topics: TOPICS, start: false }, None, false),
        ]);
    }

    #[test]
    fn without_topics_a_wish_is_dropped() {
        #[rustfmt::skip]
        run(None, &[
            (0, Want(0), Some(0), true),
            (0, Turn { waiting: false, topics: false, start: false }, None, false),
            (5, Want(5), Some(5), true),
            (5, Turn { waiting: false, topics: TOPICS, start: true }, None, true),
        ]);
    }

    /// Regression: records waiting for a leader of a topic the producer knew asked for no
    /// refresh, so they waited for the periodic one (10 minutes).
    #[test]
    fn records_waiting_for_metadata_always_have_a_refresh_coming() {
        #[rustfmt::skip]
        run(None, &[
            // nothing wanted, records wait: one is wanted a backoff on
            (0, Turn { waiting: true, topics: TOPICS, start: false }, Some(100), true),
            (50, Turn { waiting: true, topics: TOPICS, start: false }, Some(100), true),
            (100, Turn { waiting: true, topics: TOPICS, start: true }, None, true),
            // a record placed nowhere while it runs asks for nothing more
            (110, WantForWaiting, None, true),
            // it ends with records still waiting: the next one a backoff after its end
            (120, Finished { ok: false, waiting: true }, Some(220), true),
            (220, Turn { waiting: true, topics: TOPICS, start: true }, None, true),
            // it ends with nothing waiting: no spare refresh
            (230, Finished { ok: true, waiting: false }, None, false),
            (240, Turn { waiting: false, topics: TOPICS, start: false }, None, false),
            // a record placed nowhere asks for one a backoff on, once
            (250, WantForWaiting, Some(350), true),
            (260, WantForWaiting, Some(350), true),
            // an earlier wish still wins
            (270, Want(270), Some(270), true),
        ]);
    }

    #[test]
    fn the_periodic_refresh_runs_an_interval_after_the_last_success() {
        #[rustfmt::skip]
        run(Some(1000 * MS), &[
            (0, Want(0), Some(0), true),
            (0, Turn { waiting: false, topics: TOPICS, start: true }, None, true),
            (10, Finished { ok: true, waiting: false }, Some(1010), false),
            (1009, Turn { waiting: false, topics: TOPICS, start: false }, Some(1010), false),
            (1010, Turn { waiting: false, topics: TOPICS, start: true }, None, true),
            // a failed periodic refresh is due again an interval after its end
            (1020, Finished { ok: false, waiting: false }, Some(2020), false),
            // a refresh wanted meanwhile succeeds: the period starts again from it
            (1500, Want(1500), Some(1500), true),
            (1500, Turn { waiting: false, topics: TOPICS, start: true }, Some(2020), true),
            (1600, Finished { ok: true, waiting: false }, Some(2600), false),
            // a failed one keeps the period set
            (1700, Want(1700), Some(1700), true),
            (1700, Turn { waiting: false, topics: TOPICS, start: true }, Some(2600), true),
            (1800, Finished { ok: false, waiting: false }, Some(2600), false),
        ]);
    }

    #[test]
    fn an_interval_of_zero_refreshes_after_every_request_and_none_never() {
        #[rustfmt::skip]
        run(Some(Duration::ZERO), &[
            (0, AfterRequest, Some(0), true),
            (0, Turn { waiting: false, topics: TOPICS, start: true }, None, true),
            (5, Finished { ok: true, waiting: false }, None, false),
            (6, AfterRequest, Some(6), true),
        ]);
        #[rustfmt::skip]
        run(None, &[
            (0, AfterRequest, None, false),
            (0, Want(0), Some(0), true),
            (0, Turn { waiting: false, topics: TOPICS, start: true }, None, true),
            (5, Finished { ok: true, waiting: false }, None, false),
            (100_000, Turn { waiting: false, topics: TOPICS, start: false }, None, false),
        ]);
        #[rustfmt::skip]
        run(Some(1000 * MS), &[
            (0, AfterRequest, None, false),
        ]);
    }

    #[test]
    fn an_abandoned_refresh_lets_the_next_one_start() {
        #[rustfmt::skip]
        run(None, &[
            (0, Want(0), Some(0), true),
            (0, Turn { waiting: false, topics: TOPICS, start: true }, None, true),
            (5, Want(5), None, true),
            (6, Abandoned, Some(5), true),
            (6, Turn { waiting: false, topics: TOPICS, start: true }, None, true),
        ]);
    }

    #[test]
    fn poll_says_when_the_liveness_rule_asked() {
        let t0 = Instant::now();
        let mut s = RefreshSchedule::new(None, BACKOFF);
        assert_eq!(s.poll(t0, || true, TOPICS), Poll { start: false, for_waiting: true });
        let asked = |s: &mut RefreshSchedule, now| {
            let mut asked = false;
            let poll = s.poll(
                now,
                || {
                    asked = true;
                    true
                },
                TOPICS,
            );
            (poll, asked)
        };
        let already = Poll { start: false, for_waiting: false };
        assert_eq!(asked(&mut s, t0), (already, false), "already wanted: not even asked");
        assert_eq!(asked(&mut s, t0 + BACKOFF), (Poll { start: true, for_waiting: false }, false));
        assert!(s.is_running());
        s.finished(t0 + BACKOFF, true, false);
        assert_eq!(asked(&mut s, t0 + BACKOFF), (Poll { start: false, for_waiting: true }, true));
    }
}

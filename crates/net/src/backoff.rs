//! Exponential backoff with jitter, as a pure function of the attempt number.

use std::time::Duration;

/// Exponential backoff: `base × 2^attempt`, capped at `max`, minus up to `jitter` of it at
/// random (so many clients retrying at once spread out, and a delay never exceeds `max`).
///
/// Pure: [`Backoff::delay`] takes the random draw as an argument; [`Backoff::next_delay`] draws
/// one from the thread's RNG.
///
/// ```
/// use std::time::Duration;
/// use gregor_net::Backoff;
///
/// let b = Backoff::new(Duration::from_millis(100), Duration::from_secs(1)).with_jitter(0.0);
/// assert_eq!(b.next_delay(0), Duration::from_millis(100));
/// assert_eq!(b.next_delay(2), Duration::from_millis(400));
/// assert_eq!(b.next_delay(30), Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    jitter: f64,
}

/// Default jitter of [`Backoff::new`]: up to 20 % of each delay is taken off at random.
pub const DEFAULT_JITTER: f64 = 0.2;

impl Backoff {
    /// Backoff from `base` doubling up to `max` (raised to `base` if below it), with
    /// [`DEFAULT_JITTER`].
    pub fn new(base: Duration, max: Duration) -> Backoff {
        Backoff { base, max: max.max(base), jitter: DEFAULT_JITTER }
    }

    /// The same backoff with `jitter` (clamped to `0.0..=1.0`) as the largest fraction taken off
    /// a delay at random; 0 makes it deterministic.
    pub fn with_jitter(mut self, jitter: f64) -> Backoff {
        self.jitter = if jitter.is_nan() { 0.0 } else { jitter.clamp(0.0, 1.0) };
        self
    }

    /// The first delay.
    pub fn base(&self) -> Duration {
        self.base
    }

    /// The longest delay.
    pub fn max(&self) -> Duration {
        self.max
    }

    /// The jitter fraction.
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// `base × 2^attempt` capped at `max`, without jitter (`attempt` counts from 0).
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        self.base.checked_mul(factor).map_or(self.max, |d| d.min(self.max))
    }

    /// The delay before retry number `attempt` (from 0) for a random draw `unit` in `[0, 1)`:
    /// the ceiling minus `unit × jitter` of it.
    pub fn delay(&self, attempt: u32, unit: f64) -> Duration {
        let ceiling = self.ceiling(attempt);
        let unit = if unit.is_nan() { 0.0 } else { unit.clamp(0.0, 1.0) };
        ceiling.mul_f64(1.0 - self.jitter * unit)
    }

    /// The delay before retry number `attempt` (from 0), with a random jitter.
    pub fn next_delay(&self, attempt: u32) -> Duration {
        let unit = if self.jitter > 0.0 { rand::random::<f64>() } else { 0.0 };
        self.delay(attempt, unit)
    }
}

impl Default for Backoff {
    /// 100 ms (`retry.backoff.ms`) doubling up to 1 s.
    fn default() -> Self {
        Backoff::new(crate::config::DEFAULT_RETRY_BACKOFF, crate::config::DEFAULT_RETRY_BACKOFF_MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn doubles_up_to_the_cap_without_overflow() {
        let b = Backoff::new(100 * MS, 1000 * MS).with_jitter(0.0);
        let got: Vec<_> = (0..6).map(|a| b.next_delay(a)).collect();
        assert_eq!(got, [100 * MS, 200 * MS, 400 * MS, 800 * MS, 1000 * MS, 1000 * MS]);
        assert_eq!(b.next_delay(u32::MAX), 1000 * MS);
        let huge = Backoff::new(Duration::from_secs(u64::MAX / 2), Duration::MAX);
        assert_eq!(huge.ceiling(40), Duration::MAX);
    }

    #[test]
    fn jitter_only_shortens_and_stays_in_range() {
        let b = Backoff::new(100 * MS, 1000 * MS).with_jitter(0.5);
        assert_eq!(b.delay(1, 0.0), 200 * MS);
        assert_eq!(b.delay(1, 1.0), 100 * MS);
        assert_eq!(b.delay(1, 0.5), 150 * MS);
        for _ in 0..1000 {
            let d = b.next_delay(3);
            assert!(d >= 400 * MS && d <= 800 * MS, "{d:?}");
        }
        assert_eq!(Backoff::new(MS, MS).with_jitter(7.0).jitter(), 1.0);
        assert_eq!(Backoff::new(MS, MS).with_jitter(f64::NAN).jitter(), 0.0);
        assert_eq!(Backoff::new(10 * MS, MS).max(), 10 * MS, "max is raised to base");
    }
}

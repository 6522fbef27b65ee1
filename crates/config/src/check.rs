//! Range checks for values set through a builder's typed setters (a `Duration`, a `usize`),
//! with the same messages as the properties reader's.

use std::fmt;
use std::time::Duration;

use crate::{ConfigError, INT_MAX};

/// Checks a duration set through a builder for a Kafka `.ms` property: `min_ms` to
/// [`INT_MAX`] whole milliseconds (a Kafka `int`; a fraction of a millisecond is dropped, as
/// when the value is sent or written back as a property).
///
/// # Errors
///
/// [`ConfigError::Invalid`] showing the milliseconds, with the reason
/// `must be between MIN and 2147483647`.
pub fn check_ms(property: &'static str, duration: Duration, min_ms: u64) -> Result<(), ConfigError> {
    let ms = duration.as_millis();
    if ms < u128::from(min_ms) || ms > INT_MAX as u128 {
        return Err(ConfigError::invalid(property, ms, format!("must be between {min_ms} and {INT_MAX}")));
    }
    Ok(())
}

/// Checks a count or size set through a builder for a Kafka `int` property: `min` to
/// [`INT_MAX`].
///
/// # Errors
///
/// [`ConfigError::Invalid`] showing the number, with the reason
/// `must be between MIN and 2147483647`.
pub fn check_count<T>(property: &'static str, n: T, min: i64) -> Result<(), ConfigError>
where
    T: Copy + fmt::Display + TryInto<i64>,
{
    match n.try_into() {
        Ok(m) if (min..=INT_MAX).contains(&m) => Ok(()),
        _ => Err(ConfigError::invalid(property, n, format!("must be between {min} and {INT_MAX}"))),
    }
}

/// Checks a timeout set through a builder: above zero and at most `max`.
///
/// # Errors
///
/// [`ConfigError::Invalid`]: `"0"` with the reason `must be above zero`, or the milliseconds
/// with the reason `must be at most MAX ms` (see [`check_at_most`]).
pub fn check_timeout(property: &'static str, timeout: Duration, max: Duration) -> Result<(), ConfigError> {
    if timeout.is_zero() {
        return Err(ConfigError::invalid(property, 0, "must be above zero"));
    }
    check_at_most(property, timeout, max)
}

/// Checks a duration set through a builder is at most `max`.
///
/// # Errors
///
/// [`ConfigError::Invalid`] showing the milliseconds, with the reason `must be at most MAX ms`.
pub fn check_at_most(property: &'static str, duration: Duration, max: Duration) -> Result<(), ConfigError> {
    if duration > max {
        return Err(ConfigError::invalid(
            property,
            duration.as_millis(),
            format!("must be at most {} ms", max.as_millis()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(result: Result<(), ConfigError>) -> String {
        result.unwrap_err().to_string()
    }

    #[test]
    fn milliseconds_in_kafkas_int_range() {
        let ms = Duration::from_millis;
        for (duration, min) in [(Duration::ZERO, 0), (ms(1), 1), (ms(1500), 1500), (ms(2_147_483_647), 0)] {
            check_ms("p", duration, min).unwrap_or_else(|e| panic!("{duration:?}: {e}"));
        }
        // a fraction of a millisecond over the top is still 2147483647 ms
        check_ms("p", ms(2_147_483_647) + Duration::from_micros(999), 0).unwrap();
        for (duration, min, expected) in [
            (Duration::ZERO, 1, "invalid value \"0\" for p: must be between 1 and 2147483647"),
            (Duration::from_micros(999), 1, "invalid value \"0\" for p: must be between 1 and 2147483647"),
            (ms(1499), 1500, "invalid value \"1499\" for p: must be between 1500 and 2147483647"),
            (ms(2_147_483_648), 0, "invalid value \"2147483648\" for p: must be between 0 and 2147483647"),
            (Duration::MAX, 0, "invalid value \"18446744073709551615999\" for p: must be between 0 and 2147483647"),
        ] {
            assert_eq!(message(check_ms("p", duration, min)), expected, "{duration:?}");
        }
    }

    #[test]
    fn counts_in_kafkas_int_range() {
        check_count("p", 0u32, 0).unwrap();
        check_count("p", 1usize, 1).unwrap();
        check_count("p", i32::MAX, 0).unwrap();
        check_count("p", 26i32, 26).unwrap();
        for (result, expected) in [
            (check_count("p", 0usize, 1), "invalid value \"0\" for p: must be between 1 and 2147483647"),
            (check_count("p", -1i32, 0), "invalid value \"-1\" for p: must be between 0 and 2147483647"),
            (check_count("p", i32::MIN, 0), "invalid value \"-2147483648\" for p: must be between 0 and 2147483647"),
            (check_count("p", 1u64 << 31, 1), "invalid value \"2147483648\" for p: must be between 1 and 2147483647"),
            (check_count("p", u32::MAX, 0), "invalid value \"4294967295\" for p: must be between 0 and 2147483647"),
            // too large for an i64: shown as it is, not wrapped
            (
                check_count("p", usize::MAX, 1),
                "invalid value \"18446744073709551615\" for p: must be between 1 and 2147483647",
            ),
        ] {
            assert_eq!(message(result), expected);
        }
    }

    #[test]
    fn timeouts_above_zero_and_at_most_the_max() {
        let max = Duration::from_millis(u32::MAX.into());
        check_timeout("t", Duration::from_nanos(1), max).unwrap();
        check_timeout("t", max, max).unwrap();
        check_at_most("t", Duration::ZERO, max).unwrap();
        assert_eq!(message(check_timeout("t", Duration::ZERO, max)), "invalid value \"0\" for t: must be above zero");
        assert_eq!(
            message(check_timeout("t", max + Duration::from_millis(1), max)),
            "invalid value \"4294967296\" for t: must be at most 4294967295 ms"
        );
        assert_eq!(
            message(check_at_most("t", Duration::from_secs(2), Duration::from_secs(1))),
            "invalid value \"2000\" for t: must be at most 1000 ms"
        );
    }
}

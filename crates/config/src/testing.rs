//! Assertions for the configuration tests of the client crates: read properties that must be
//! refused, and check how. On with the `testing` feature, which only dev-dependencies turn on.
//!
//! ```
//! use gregor_config::testing::{assert_invalid, error_of};
//! use gregor_config::{read, ConfigError};
//!
//! /// A client whose one property, `retries`, is 0 to 9.
//! fn from_properties(props: Vec<(&str, &str)>) -> Result<u8, ConfigError> {
//!     let mut retries = 3;
//!     for p in read("demo", &["retries"], props) {
//!         retries = p?.int_between(0, 9)?;
//!     }
//!     Ok(retries)
//! }
//!
//! let e = error_of(from_properties, &[("retries", "1")], &[("retries", "10")]);
//! assert_invalid(&e, "retries", Some("10"), "between 0 and 9", "retries=10");
//! ```

use std::fmt;

use crate::ConfigError;

/// Reads `props` through `from_properties`, after each property of `base` that `props` does
/// not set (the required ones, to test another), and returns the error.
///
/// # Panics
///
/// When `from_properties` accepts them.
pub fn error_of<'a, T: fmt::Debug>(
    from_properties: impl FnOnce(Vec<(&'a str, &'a str)>) -> Result<T, ConfigError>,
    base: &[(&'a str, &'a str)],
    props: &[(&'a str, &'a str)],
) -> ConfigError {
    let unset = base.iter().filter(|(name, _)| props.iter().all(|(given, _)| given != name));
    match from_properties(unset.chain(props).copied().collect()) {
        Ok(accepted) => panic!("{props:?} was accepted: {accepted:?}"),
        Err(e) => e,
    }
}

/// Asserts that `e` is a [`ConfigError::Invalid`] for `property` whose reason contains `reason`
/// and, when `value` is given, whose value is `value`, and that its message says them. `case`
/// names the case in the panic.
///
/// # Panics
///
/// When it is not.
pub fn assert_invalid(e: &ConfigError, property: &str, value: Option<&str>, reason: &str, case: &str) {
    let ConfigError::Invalid { property: p, value: v, reason: r } = e else {
        panic!("{case}: expected Invalid for {property}, got {e:?}");
    };
    assert_eq!(*p, property, "{case}: {e}");
    assert!(r.contains(reason), "{case}: reason {r:?} lacks {reason:?}");
    assert_eq!(e.to_string(), format!("invalid value {v:?} for {p}: {r}"), "{case}");
    if let Some(value) = value {
        assert_eq!(v, value, "{case}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two(props: Vec<(&str, &str)>) -> Result<Vec<(String, String)>, ConfigError> {
        let mut read = Vec::new();
        for p in crate::read("two", &["a", "b"], props) {
            let p = p?;
            if p.value() == "bad" {
                return Err(p.invalid("is bad"));
            }
            read.push((p.name().to_owned(), p.value().to_owned()));
        }
        Ok(read)
    }

    #[test]
    fn error_of_adds_the_base_properties_not_given() {
        let e = error_of(two, &[("a", "1"), ("b", "2")], &[("b", "bad")]);
        assert_eq!(e, ConfigError::invalid("b", "bad", "is bad"));
        let e = error_of(two, &[("a", "bad")], &[("b", "1")]);
        assert_eq!(e, ConfigError::invalid("a", "bad", "is bad"), "the base comes first");
        let e = error_of(two, &[], &[("c", "1")]);
        assert!(matches!(e, ConfigError::UnknownProperty { .. }));
    }

    #[test]
    #[should_panic(expected = "[(\"a\", \"fine\")] was accepted")]
    fn error_of_panics_when_accepted() {
        error_of(two, &[("a", "bad")], &[("a", "fine")]);
    }

    #[test]
    fn assert_invalid_accepts_what_it_says() {
        let e = ConfigError::invalid("p", "v", "must be w");
        assert_invalid(&e, "p", Some("v"), "must be", "ok");
        assert_invalid(&e, "p", None, "", "any value");
    }

    #[test]
    #[should_panic(expected = "wrong property")]
    fn assert_invalid_refuses_another_property() {
        assert_invalid(&ConfigError::invalid("p", "v", "r"), "q", None, "r", "wrong property");
    }

    #[test]
    #[should_panic(expected = "lacks")]
    fn assert_invalid_refuses_another_reason() {
        assert_invalid(&ConfigError::invalid("p", "v", "r"), "p", None, "s", "wrong reason");
    }

    #[test]
    #[should_panic(expected = "wrong value")]
    fn assert_invalid_refuses_another_value() {
        assert_invalid(&ConfigError::invalid("p", "v", "r"), "p", Some("w"), "r", "wrong value");
    }

    #[test]
    #[should_panic(expected = "expected Invalid for p")]
    fn assert_invalid_refuses_another_variant() {
        assert_invalid(&ConfigError::missing("p"), "p", None, "", "missing");
    }
}

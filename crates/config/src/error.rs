//! The one configuration error, and how a value is shown in it.

use std::fmt;

/// The most bytes of a value a [`ConfigError::Invalid`] shows; a longer value is cut (at a
/// character boundary) and its length added: see [`shorten`].
pub const MAX_SHOWN_VALUE_BYTES: usize = 64;

/// A setting that cannot work: the configuration error of every gregor client.
///
/// The client crates re-export it under their own names (`gregor_producer::ConfigError`,
/// `gregor_consumer::ConfigError`, `gregor_net::ConfigError`,
/// `gregor_simple_consumer::ConfigError`): one type, three messages.
///
/// * `invalid value "2" for request.required.acks: must be -1, 0 or 1`
/// * `missing required property metadata.broker.list`
/// * `unknown simple-consumer property "group.id"; known: metadata.broker.list, ...`
///
/// Properties are named as Kafka names them (`socket.timeout.ms`); settings Kafka does not
/// have are named after their setter (`max_in_flight`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Returned when a property has a value that cannot work, alone or with another one.
    #[error("invalid value {value:?} for {property}: {reason}")]
    Invalid {
        /// The Kafka property (or gregor setting) name.
        property: &'static str,
        /// The value given (values over [`MAX_SHOWN_VALUE_BYTES`] bytes are shortened).
        value: String,
        /// Why it cannot work (and, where there is one, the fix).
        reason: String,
    },
    /// Returned when a required property is not set (or set to nothing but spaces).
    #[error("missing required property {property}")]
    Missing {
        /// The Kafka property.
        property: &'static str,
    },
    /// Returned when a client's properties name one the client does not have (a typo, or a
    /// property of another client). Kafka 0.8.2 only logs a warning ("Property ... is not
    /// valid") and goes on without it; gregor refuses, so a typo cannot silently keep a
    /// default.
    #[error("unknown {client} property {property:?}; known: {}", known.join(", "))]
    UnknownProperty {
        /// The client the properties were for (`producer`, `consumer`, `simple-consumer`).
        client: &'static str,
        /// The name as given (trimmed).
        property: String,
        /// Every property that client knows.
        known: &'static [&'static str],
    },
    /// Returned when two names of one setting (Kafka 0.8's and today's, such as
    /// `queue.buffering.max.ms` and `linger.ms`) are both given, with different values.
    #[error("{second}={second_value:?} and {first}={first_value:?} name the same {client} setting with different values: give one")]
    Conflict {
        /// The client.
        client: &'static str,
        /// The name given first.
        first: &'static str,
        /// Its value.
        first_value: String,
        /// The name given second.
        second: &'static str,
        /// Its value.
        second_value: String,
    },
}

impl ConfigError {
    /// A [`ConfigError::Invalid`] for `property`: `value` as shown by its `Display`,
    /// [`shorten`]ed, and the `reason`.
    pub fn invalid(property: &'static str, value: impl fmt::Display, reason: impl Into<String>) -> ConfigError {
        ConfigError::Invalid { property, value: shorten(value.to_string()), reason: reason.into() }
    }

    /// A [`ConfigError::Missing`] for `property`.
    pub fn missing(property: &'static str) -> ConfigError {
        ConfigError::Missing { property }
    }

    /// The property the error is about (for [`ConfigError::UnknownProperty`], the name as
    /// given).
    pub fn property(&self) -> &str {
        match self {
            ConfigError::Invalid { property, .. } | ConfigError::Missing { property } => property,
            ConfigError::UnknownProperty { property, .. } => property,
            ConfigError::Conflict { second, .. } => second,
        }
    }
}

/// `value` as a [`ConfigError::Invalid`] shows it: whole up to [`MAX_SHOWN_VALUE_BYTES`]
/// bytes, else its first 64 bytes (fewer, to end on a character boundary), `...` and its length
/// (`xxxx... (40000 bytes)`), so a megabyte pasted by mistake does not become a megabyte of log.
pub fn shorten(value: String) -> String {
    if value.len() <= MAX_SHOWN_VALUE_BYTES {
        return value;
    }
    let mut end = MAX_SHOWN_VALUE_BYTES;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &value[..end], value.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_messages() {
        let cases = [
            (
                ConfigError::invalid("request.required.acks", 2, "must be -1, 0 or 1"),
                "invalid value \"2\" for request.required.acks: must be -1, 0 or 1",
            ),
            (ConfigError::missing("metadata.broker.list"), "missing required property metadata.broker.list"),
            (
                ConfigError::UnknownProperty {
                    client: "simple-consumer",
                    property: "group.id".into(),
                    known: &["metadata.broker.list", "client.id"],
                },
                "unknown simple-consumer property \"group.id\"; known: metadata.broker.list, client.id",
            ),
            (
                ConfigError::invalid("client.id", "tab\t\"", "contains '\\t'"),
                "invalid value \"tab\\t\\\"\" for client.id: contains '\\t'",
            ),
        ];
        for (e, message) in cases {
            assert_eq!(e.to_string(), message);
        }
    }

    #[test]
    fn property_names_the_property() {
        assert_eq!(ConfigError::invalid("a.b", "", "r").property(), "a.b");
        assert_eq!(ConfigError::missing("group.id").property(), "group.id");
        let unknown = ConfigError::UnknownProperty { client: "c", property: "typo".into(), known: &[] };
        assert_eq!(unknown.property(), "typo");
    }

    /// (value, what is shown): cut at 64 bytes, or before, at the last character boundary.
    #[test]
    fn long_values_are_shortened_at_a_char_boundary() {
        let x64 = "x".repeat(64);
        let cases: Vec<(String, String)> = vec![
            (String::new(), String::new()),
            (x64.clone(), x64.clone()),
            (format!("{x64}y"), format!("{x64}... (65 bytes)")),
            ("x".repeat(40_000), format!("{x64}... (40000 bytes)")),
            // 2-byte 'é' : 32 of them fill 64 bytes exactly
            ("é".repeat(40_000), format!("{}... (80000 bytes)", "é".repeat(32))),
            // 'é' straddling byte 64: cut before it
            (format!("{}é{}", "x".repeat(63), "x".repeat(10)), format!("{}... (75 bytes)", "x".repeat(63))),
            // a 4-byte char starting at byte 62: cut at 62
            (format!("{}🦀{}", "x".repeat(62), "x".repeat(10)), format!("{}... (76 bytes)", "x".repeat(62))),
            // exactly 64 bytes with multibyte chars: whole
            ("é".repeat(32), "é".repeat(32)),
        ];
        for (value, shown) in cases {
            assert_eq!(shorten(value.clone()), shown, "{value:?}");
            let e = ConfigError::invalid("p", &value, "r");
            let ConfigError::Invalid { value: v, .. } = &e else { unreachable!() };
            assert_eq!(v, &shown);
        }
    }
}

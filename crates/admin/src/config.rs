//! Per-topic configuration overrides as Kafka 0.8.2's `LogConfig` knows them. Pure.
//!
//! Kafka's tools refuse a property `LogConfig` does not know ("Unknown configuration") and a
//! value that does not parse as the property's type; so does [`validate_topic_config`]. It also
//! refuses values out of the range later Kafka versions' `LogConfig` enforce (0.8.2 checks only
//! `min.insync.replicas`, and a broker given `segment.bytes=0` or `segment.ms=0` rolls a new
//! segment for every message): see [`config_range`].

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// The type of a topic config value, as `LogConfig.fromProps` parses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigType {
    /// A 32-bit integer (`Integer.parseInt`).
    Int,
    /// A 64-bit integer (`Long.parseLong`).
    Long,
    /// A floating point number (`Double.parseDouble`).
    Double,
    /// `true` or `false`, any case (Scala's `toBoolean`).
    Boolean,
    /// `delete` or `compact`.
    CleanupPolicy,
}

/// Every per-topic property Kafka 0.8.2 accepts (`LogConfig.ConfigNames`) and its type.
pub const TOPIC_CONFIGS: &[(&str, ConfigType)] = &[
    ("segment.bytes", ConfigType::Int),
    ("segment.ms", ConfigType::Long),
    ("segment.jitter.ms", ConfigType::Long),
    ("segment.index.bytes", ConfigType::Int),
    ("flush.messages", ConfigType::Long),
    ("flush.ms", ConfigType::Long),
    ("retention.bytes", ConfigType::Long),
    ("retention.ms", ConfigType::Long),
    ("max.message.bytes", ConfigType::Int),
    ("index.interval.bytes", ConfigType::Int),
    ("delete.retention.ms", ConfigType::Long),
    ("file.delete.delay.ms", ConfigType::Long),
    ("min.cleanable.dirty.ratio", ConfigType::Double),
    ("cleanup.policy", ConfigType::CleanupPolicy),
    ("unclean.leader.election.enable", ConfigType::Boolean),
    ("min.insync.replicas", ConfigType::Int),
];

/// The type of a per-topic property, `None` when Kafka 0.8.2 does not know it.
pub fn config_type(property: &str) -> Option<ConfigType> {
    TOPIC_CONFIGS.iter().find(|(name, _)| *name == property).map(|(_, t)| *t)
}

/// The smallest value accepted for a numeric per-topic property (`None`: any value of its
/// type), as later Kafka versions' `LogConfig` define them: a segment holds at least one
/// message overhead (14 bytes) and lives at least 1 ms, an index at least one entry (4 bytes),
/// a flush happens at least every message, `min.insync.replicas` is at least 1, and the other
/// sizes and times are not negative. `retention.bytes` and `retention.ms` may be negative
/// (no limit). `min.cleanable.dirty.ratio` is between 0 and 1.
pub fn config_range(property: &str) -> Option<i64> {
    Some(match property {
        "segment.bytes" => 14,
        "segment.ms" | "flush.messages" | "min.insync.replicas" => 1,
        "segment.index.bytes" => 4,
        "segment.jitter.ms"
        | "flush.ms"
        | "max.message.bytes"
        | "index.interval.bytes"
        | "delete.retention.ms"
        | "file.delete.delay.ms" => 0,
        _ => return None,
    })
}

fn names() -> String {
    TOPIC_CONFIGS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

/// Checks that `property` is a per-topic property Kafka 0.8.2 knows (`LogConfig.validateNames`).
///
/// # Errors
///
/// [`Error::InvalidConfig`] listing the known names.
pub fn validate_config_name(property: &str) -> Result<ConfigType> {
    config_type(property).ok_or_else(|| Error::InvalidConfig {
        property: property.to_owned(),
        value: None,
        reason: format!("Kafka 0.8.2 knows {}", names()),
    })
}

/// Checks one property and its value as `LogConfig.validate` does: a known name, a value of
/// the property's type, and (beyond 0.8.2) in the property's range ([`config_range`]).
///
/// # Errors
///
/// [`Error::InvalidConfig`] naming the property, the value and what was expected.
pub fn validate_config(property: &str, value: &str) -> Result<()> {
    let kind = validate_config_name(property)?;
    let bad = |reason: &str| Error::InvalidConfig {
        property: property.to_owned(),
        value: Some(value.to_owned()),
        reason: reason.to_owned(),
    };
    let at_least = |v: i64| match config_range(property) {
        Some(min) if v < min => Err(bad(&format!("must be at least {min}"))),
        _ => Ok(()),
    };
    match kind {
        ConfigType::Int => {
            let v = value.parse::<i32>().map_err(|_| bad("expected a 32-bit integer"))?;
            at_least(v.into())?;
        }
        ConfigType::Long => {
            let v = value.parse::<i64>().map_err(|_| bad("expected a 64-bit integer"))?;
            at_least(v)?;
        }
        ConfigType::Double => {
            let v = value.trim().parse::<f64>().map_err(|_| bad("expected a number"))?;
            if property == "min.cleanable.dirty.ratio" && !(0.0..=1.0).contains(&v) {
                return Err(bad("must be between 0 and 1"));
            }
        }
        ConfigType::Boolean => {
            if gregor_config::kafka_bool(value).is_none() {
                return Err(bad("expected true or false"));
            }
        }
        ConfigType::CleanupPolicy => {
            let v = value.trim().to_ascii_lowercase();
            if v != "delete" && v != "compact" {
                return Err(bad("expected delete or compact"));
            }
        }
    }
    Ok(())
}

/// Checks every property of a topic configuration (see [`validate_config`]).
///
/// # Errors
///
/// [`Error::InvalidConfig`] for the first bad property.
pub fn validate_topic_config(config: &BTreeMap<String, String>) -> Result<()> {
    for (k, v) in config {
        validate_config(k, v)?;
    }
    Ok(())
}

/// Collects `(name, value)` pairs into a config map.
pub(crate) fn collect<I, K, V>(pairs: I) -> BTreeMap<String, String>
where
    I: IntoIterator<Item = (K, V)>,
    K: Into<String>,
    V: Into<String>,
{
    pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_properties_and_types() {
        for (name, value) in [
            ("segment.bytes", "1048576"),
            ("retention.ms", "-1"),
            ("retention.bytes", "1099511627776"),
            ("max.message.bytes", "1000"),
            ("min.cleanable.dirty.ratio", "0.5"),
            ("cleanup.policy", "compact"),
            ("cleanup.policy", "Delete"),
            ("unclean.leader.election.enable", "FALSE"),
            ("min.insync.replicas", "2"),
        ] {
            validate_config(name, value).unwrap();
        }
        assert_eq!(TOPIC_CONFIGS.len(), 16);
    }

    #[test]
    fn refused_properties() {
        let err = validate_config("retention.hours", "1").unwrap_err();
        assert!(
            err.to_string().starts_with("unknown topic config \"retention.hours\": Kafka 0.8.2 knows segment.bytes, "),
            "{err}"
        );
        assert_eq!(
            validate_config("max.message.bytes", "3000000000").unwrap_err().to_string(),
            "invalid value \"3000000000\" for topic config max.message.bytes: expected a 32-bit integer"
        );
        assert_eq!(
            validate_config("min.insync.replicas", "0").unwrap_err().to_string(),
            "invalid value \"0\" for topic config min.insync.replicas: must be at least 1"
        );
        validate_config("unclean.leader.election.enable", "yes").unwrap_err();
        validate_config("cleanup.policy", "forever").unwrap_err();
        validate_config("min.cleanable.dirty.ratio", "half").unwrap_err();
        let map = BTreeMap::from([("retention.ms".to_owned(), "x".to_owned())]);
        validate_topic_config(&map).unwrap_err();
    }
}

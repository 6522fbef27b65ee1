//! A Kafka 3.7 topic's configs, as the modern mode's DescribeConfigs, AlterConfigs,
//! IncrementalAlterConfigs and CreateTopics see them: each config's name, type, Kafka 3.7
//! default and broker-level synonym, how a value is checked, and where an effective value comes
//! from. Pure: no state, no IO.
//!
//! Where a value comes from, highest precedence first (DescribeConfigs' `config_source`):
//!
//! 1. the topic's own setting (source 1), kept in [`super::state::Topic::config`], the one place
//!    a topic's overrides live;
//! 2. the broker's `server.properties` (source 4, "static broker"): the fake's broker settings
//!    that differ from Kafka 3.7's defaults (`message.max.bytes`, `min.insync.replicas`,
//!    `unclean.leader.election.enable`), plus `log.segment.bytes=1073741824` and
//!    `log.retention.hours=168`, which the `server.properties` Kafka ships sets (the genuine
//!    3.7.0 broker of the captures answers `segment.bytes` from source 4);
//! 3. Kafka 3.7's default (source 5).
//!
//! Synonyms (when asked) are the same setting at those levels: the topic's setting under its
//! own name, then the broker-level config's static value and default. As in Kafka, a broker
//! synonym is listed only when the first broker-level name of the family has a value: the
//! `retention.ms` family starts with `log.retention.ms`, which has no default (the broker's
//! value comes from `log.retention.hours`), so an unset `retention.ms` lists no synonym, nor do
//! `segment.ms` and `flush.ms` (whose families are in the same case) or the configs with no
//! broker-level name. The captured answer (`describe_configs_v1_admin`) shows all of this.
//!
//! [`TOPIC_CONFIGS`] is in the order a Kafka 3.7.0 broker lists them (its hash map's order, as
//! captured), so that the fake's answer reads as the genuine one does.

use super::config::BrokerConfig;

/// DescribeConfigs' `config_source` for a topic's own setting.
pub(crate) const SOURCE_TOPIC: i8 = 1;
/// DescribeConfigs' `config_source` for a broker's `server.properties` setting.
pub(crate) const SOURCE_STATIC_BROKER: i8 = 4;
/// DescribeConfigs' `config_source` for Kafka's default.
pub(crate) const SOURCE_DEFAULT: i8 = 5;

/// A config value's type, with DescribeConfigs v3+'s `config_type` code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Boolean = 1,
    String = 2,
    Int = 3,
    Long = 5,
    Double = 6,
    List = 7,
}

/// One topic config of Kafka 3.7.
#[derive(Debug)]
pub(crate) struct TopicConfigDef {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    /// Kafka 3.7's default, as DescribeConfigs writes it.
    pub(crate) default: &'static str,
    /// The broker-level config it falls back to, when that one has a value of its own (see the
    /// module doc).
    pub(crate) broker: Option<&'static str>,
    /// The smallest value Kafka accepts (numbers).
    pub(crate) min: Option<i64>,
}

const fn def(
    name: &'static str,
    kind: Kind,
    default: &'static str,
    broker: Option<&'static str>,
    min: Option<i64>,
) -> TopicConfigDef {
    TopicConfigDef { name, kind, default, broker, min }
}

const LONG_MAX: &str = "9223372036854775807";

/// Kafka 3.7's topic configs, in the order a 3.7.0 broker lists them.
pub(crate) const TOPIC_CONFIGS: &[TopicConfigDef] = &[
    def("compression.type", Kind::String, "producer", Some("compression.type"), None),
    def("leader.replication.throttled.replicas", Kind::List, "", None, None),
    def("remote.storage.enable", Kind::Boolean, "false", None, None),
    def("message.downconversion.enable", Kind::Boolean, "true", Some("log.message.downconversion.enable"), None),
    def("min.insync.replicas", Kind::Int, "1", Some("min.insync.replicas"), Some(1)),
    def("segment.jitter.ms", Kind::Long, "0", None, Some(0)),
    def("local.retention.ms", Kind::Long, "-2", Some("log.local.retention.ms"), Some(-2)),
    def("cleanup.policy", Kind::List, "delete", Some("log.cleanup.policy"), None),
    def("flush.ms", Kind::Long, LONG_MAX, None, Some(0)),
    def("follower.replication.throttled.replicas", Kind::List, "", None, None),
    def("segment.bytes", Kind::Int, "1073741824", Some("log.segment.bytes"), Some(14)),
    def("retention.ms", Kind::Long, "604800000", None, Some(-1)),
    def("flush.messages", Kind::Long, LONG_MAX, Some("log.flush.interval.messages"), Some(1)),
    def("message.format.version", Kind::String, "3.0-IV1", Some("log.message.format.version"), None),
    def("max.compaction.lag.ms", Kind::Long, LONG_MAX, Some("log.cleaner.max.compaction.lag.ms"), Some(1)),
    def("file.delete.delay.ms", Kind::Long, "60000", Some("log.segment.delete.delay.ms"), Some(0)),
    def("max.message.bytes", Kind::Int, "1048588", Some("message.max.bytes"), Some(0)),
    def("min.compaction.lag.ms", Kind::Long, "0", Some("log.cleaner.min.compaction.lag.ms"), Some(0)),
    def("message.timestamp.type", Kind::String, "CreateTime", Some("log.message.timestamp.type"), None),
    def("local.retention.bytes", Kind::Long, "-2", Some("log.local.retention.bytes"), Some(-2)),
    def("preallocate", Kind::Boolean, "false", Some("log.preallocate"), None),
    def("min.cleanable.dirty.ratio", Kind::Double, "0.5", Some("log.cleaner.min.cleanable.ratio"), None),
    def("index.interval.bytes", Kind::Int, "4096", Some("log.index.interval.bytes"), Some(0)),
    def("unclean.leader.election.enable", Kind::Boolean, "false", Some("unclean.leader.election.enable"), None),
    def("retention.bytes", Kind::Long, "-1", Some("log.retention.bytes"), None),
    def("delete.retention.ms", Kind::Long, "86400000", Some("log.cleaner.delete.retention.ms"), Some(0)),
    def("message.timestamp.after.max.ms", Kind::Long, LONG_MAX, Some("log.message.timestamp.after.max.ms"), Some(0)),
    def("message.timestamp.before.max.ms", Kind::Long, LONG_MAX, Some("log.message.timestamp.before.max.ms"), Some(0)),
    def("segment.ms", Kind::Long, "604800000", None, Some(1)),
    def(
        "message.timestamp.difference.max.ms",
        Kind::Long,
        LONG_MAX,
        Some("log.message.timestamp.difference.max.ms"),
        Some(0),
    ),
    def("segment.index.bytes", Kind::Int, "10485760", Some("log.index.size.max.bytes"), Some(4)),
];

/// The definition of topic config `name`.
pub(crate) fn topic_config(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

/// Kafka 3.7's default of a broker-level config the fake describes.
fn broker_default(name: &str) -> Option<&'static str> {
    match name {
        "log.retention.hours" => Some("168"),
        "num.partitions" | "default.replication.factor" => Some("1"),
        "auto.create.topics.enable" | "delete.topic.enable" => Some("true"),
        _ => TOPIC_CONFIGS.iter().find(|d| d.broker == Some(name)).map(|d| d.default),
    }
}

/// A broker-level config's value in the fake's `server.properties`, if set there (see the
/// module doc).
fn broker_static(cfg: &BrokerConfig, name: &str) -> Option<String> {
    let value = match name {
        "log.segment.bytes" => "1073741824".to_owned(),
        "log.retention.hours" => "168".to_owned(),
        "message.max.bytes" => cfg.message_max_bytes.to_string(),
        "min.insync.replicas" => cfg.min_insync_replicas.to_string(),
        "unclean.leader.election.enable" => cfg.unclean_leader_election_enable.to_string(),
        "num.partitions" => cfg.num_partitions.to_string(),
        "default.replication.factor" => cfg.default_replication_factor.to_string(),
        "auto.create.topics.enable" => cfg.auto_create_topics_enable.to_string(),
        "delete.topic.enable" => cfg.delete_topic_enable.to_string(),
        _ => return None,
    };
    // a setting equal to Kafka's default is one server.properties need not carry, except the
    // two the shipped file sets
    let shipped = matches!(name, "log.segment.bytes" | "log.retention.hours");
    (shipped || broker_default(name) != Some(value.as_str())).then_some(value)
}

/// One config as DescribeConfigs describes it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Described {
    pub(crate) name: &'static str,
    pub(crate) value: String,
    pub(crate) source: i8,
    pub(crate) kind: Kind,
    pub(crate) read_only: bool,
    /// (name, value, source), highest precedence first.
    pub(crate) synonyms: Vec<(&'static str, String, i8)>,
}

/// A broker-level config's synonyms: its static value, then its default.
fn broker_synonyms(cfg: &BrokerConfig, name: &'static str) -> Vec<(&'static str, String, i8)> {
    let mut out = Vec::new();
    if let Some(v) = broker_static(cfg, name) {
        out.push((name, v, SOURCE_STATIC_BROKER));
    }
    if let Some(v) = broker_default(name) {
        out.push((name, v.to_owned(), SOURCE_DEFAULT));
    }
    out
}

/// Every config of a topic whose own settings are `overrides`, in Kafka's order.
pub(crate) fn describe_topic(
    cfg: &BrokerConfig,
    overrides: &std::collections::BTreeMap<String, String>,
) -> Vec<Described> {
    TOPIC_CONFIGS
        .iter()
        .map(|d| {
            let mut synonyms = Vec::new();
            if let Some(v) = overrides.get(d.name) {
                synonyms.push((d.name, v.clone(), SOURCE_TOPIC));
            }
            if let Some(b) = d.broker {
                synonyms.extend(broker_synonyms(cfg, b));
            }
            let (value, source) =
                synonyms.first().map_or((d.default.to_owned(), SOURCE_DEFAULT), |(_, v, s)| (v.clone(), *s));
            Described { name: d.name, value, source, kind: d.kind, read_only: false, synonyms }
        })
        .collect()
}

/// The broker-level configs the fake describes for a broker (a subset of Kafka's several
/// hundred): its id, the topic configs' broker-level names, and the settings of
/// [`BrokerConfig`] that have a Kafka name. Those a Kafka broker cannot change without a
/// restart are read-only.
pub(crate) fn describe_broker(cfg: &BrokerConfig, id: i32) -> Vec<Described> {
    let mut out = vec![Described {
        name: "node.id",
        value: id.to_string(),
        source: SOURCE_STATIC_BROKER,
        kind: Kind::Int,
        read_only: true,
        synonyms: vec![("node.id", id.to_string(), SOURCE_STATIC_BROKER)],
    }];
    let fixed: [(&'static str, Kind); 4] = [
        ("num.partitions", Kind::Int),
        ("default.replication.factor", Kind::Int),
        ("auto.create.topics.enable", Kind::Boolean),
        ("delete.topic.enable", Kind::Boolean),
    ];
    let dynamic =
        TOPIC_CONFIGS.iter().filter_map(|d| d.broker.map(|b| (b, d.kind))).chain([("log.retention.hours", Kind::Int)]);
    for (name, kind, read_only) in
        fixed.into_iter().map(|(n, k)| (n, k, true)).chain(dynamic.map(|(n, k)| (n, k, false)))
    {
        let synonyms = broker_synonyms(cfg, name);
        let Some((_, value, source)) = synonyms.first().cloned() else { continue };
        out.push(Described { name, value, source, kind, read_only, synonyms });
    }
    out
}

/// Checks a value for topic config `name`: `Err` says why it is not acceptable (an unknown
/// name, a value of the wrong type, out of range or not one of the allowed words).
pub(crate) fn check(name: &str, value: &str) -> Result<(), String> {
    let d = topic_config(name).ok_or_else(|| format!("unknown topic config {name}"))?;
    let bad = |why: &str| Err(format!("invalid value {value:?} for {name}: {why}"));
    match d.kind {
        Kind::Boolean => {
            if !value.trim().eq_ignore_ascii_case("true") && !value.trim().eq_ignore_ascii_case("false") {
                return bad("expected true or false");
            }
        }
        Kind::Int | Kind::Long => {
            let parsed = if d.kind == Kind::Int {
                value.trim().parse::<i32>().map(i64::from).ok()
            } else {
                value.trim().parse::<i64>().ok()
            };
            let Some(n) = parsed else {
                return bad(if d.kind == Kind::Int { "not a 32-bit integer" } else { "not a 64-bit integer" });
            };
            if let Some(min) = d.min.filter(|m| n < *m) {
                return bad(&format!("must be at least {min}"));
            }
        }
        Kind::Double => match value.trim().parse::<f64>() {
            Ok(x) if (0.0..=1.0).contains(&x) => {}
            Ok(_) => return bad("must be between 0 and 1"),
            Err(_) => return bad("not a number"),
        },
        Kind::List => {
            for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                let ok = match name {
                    "cleanup.policy" => matches!(item, "compact" | "delete"),
                    // "*" or partition:broker pairs
                    _ => {
                        item == "*"
                            || item.split_once(':').is_some_and(|(p, b)| {
                                p.trim().parse::<i32>().is_ok() && b.trim().parse::<i32>().is_ok()
                            })
                    }
                };
                if !ok {
                    return bad(&format!("{item:?} is not allowed"));
                }
            }
        }
        Kind::String => {
            let allowed: &[&str] = match name {
                "compression.type" => &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"],
                "message.timestamp.type" => &["CreateTime", "LogAppendTime"],
                _ => &[],
            };
            if !allowed.is_empty() && !allowed.contains(&value) {
                return bad(&format!("expected one of {}", allowed.join(", ")));
            }
        }
    }
    if name == "remote.storage.enable" && value.trim().eq_ignore_ascii_case("true") {
        // Kafka refuses it on a broker without tiered storage, as the fake's are
        return bad("tiered storage is not enabled on this cluster");
    }
    Ok(())
}

/// The effective value of topic config `name` for a topic whose own settings are `overrides`.
pub(crate) fn effective(
    cfg: &BrokerConfig,
    overrides: &std::collections::BTreeMap<String, String>,
    name: &str,
) -> Option<String> {
    if let Some(v) = overrides.get(name) {
        return Some(v.clone());
    }
    let d = topic_config(name)?;
    Some(d.broker.and_then(|b| broker_static(cfg, b)).unwrap_or_else(|| d.default.to_owned()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn modern_config() -> BrokerConfig {
        BrokerConfig {
            message_max_bytes: 1_048_588,
            unclean_leader_election_enable: false,
            delete_topic_enable: true,
            ..BrokerConfig::default()
        }
    }

    #[test]
    fn a_fresh_topic_has_kafka_3_7_defaults_and_segment_bytes_from_server_properties() {
        let all = describe_topic(&modern_config(), &BTreeMap::new());
        assert_eq!(all.len(), 31);
        let seg = all.iter().find(|d| d.name == "segment.bytes").unwrap();
        assert_eq!(seg.source, SOURCE_STATIC_BROKER);
        assert_eq!(seg.synonyms.len(), 2);
        let retention = all.iter().find(|d| d.name == "retention.ms").unwrap();
        assert_eq!((retention.value.as_str(), retention.source), ("604800000", SOURCE_DEFAULT));
        assert!(retention.synonyms.is_empty());
        assert!(all.iter().filter(|d| d.name != "segment.bytes").all(|d| d.source == SOURCE_DEFAULT));
    }

    #[test]
    fn a_broker_setting_off_the_default_is_a_static_one() {
        let cfg = BrokerConfig { min_insync_replicas: 2, ..modern_config() };
        let all = describe_topic(&cfg, &BTreeMap::from([("min.insync.replicas".to_owned(), "3".to_owned())]));
        let min = all.iter().find(|d| d.name == "min.insync.replicas").unwrap();
        assert_eq!((min.value.as_str(), min.source), ("3", SOURCE_TOPIC));
        let sources: Vec<i8> = min.synonyms.iter().map(|s| s.2).collect();
        assert_eq!(sources, [SOURCE_TOPIC, SOURCE_STATIC_BROKER, SOURCE_DEFAULT]);
        assert_eq!(effective(&cfg, &BTreeMap::new(), "min.insync.replicas").as_deref(), Some("2"));
    }

    #[test]
    fn values_are_checked_by_type_range_and_allowed_words() {
        assert!(check("retention.ms", "-1").is_ok());
        assert!(check("retention.ms", "-2").is_err());
        assert!(check("retention.ms", "soon").is_err());
        assert!(check("segment.bytes", "4294967296").is_err());
        assert!(check("cleanup.policy", "compact,delete").is_ok());
        assert!(check("cleanup.policy", "shred").is_err());
        assert!(check("compression.type", "brotli").is_err());
        assert!(check("min.cleanable.dirty.ratio", "1.5").is_err());
        assert!(check("preallocate", "TRUE").is_ok());
        assert!(check("leader.replication.throttled.replicas", "0:1,1:2").is_ok());
        assert!(check("no.such.config", "1").is_err());
        assert!(check("remote.storage.enable", "true").is_err());
    }
}

//! Topic config validation: every per-topic property Kafka 0.8.2 knows refuses its invalid values
//! with an error naming the property and the reason, in the message shape every gregor
//! configuration error shares. Pure: no ZooKeeper.

use std::collections::{BTreeMap, BTreeSet};

use gregor_admin::config::{config_range, validate_config, validate_topic_config, TOPIC_CONFIGS};
use gregor_admin::Error;

fn assert_invalid(property: &str, value: &str, reason: &str) {
    let e = validate_config(property, value).expect_err(&format!("{property}={value}"));
    let Error::InvalidConfig { property: p, value: v, reason: r } = &e else { panic!("{e:?}") };
    assert_eq!((p.as_str(), v.as_deref()), (property, Some(value)));
    assert!(r.contains(reason), "{property}={value}: reason {r:?} lacks {reason:?}");
    assert_eq!(e.to_string(), format!("invalid value {value:?} for topic config {property}: {r}"));
}

#[test]
fn every_topic_config_refuses_its_invalid_values() {
    let cases: &[(&str, &str, &str)] = &[
        ("segment.bytes", "13", "must be at least 14"),
        ("segment.bytes", "2147483648", "expected a 32-bit integer"),
        ("segment.ms", "0", "must be at least 1"),
        ("segment.ms", "1h", "expected a 64-bit integer"),
        ("segment.jitter.ms", "-1", "must be at least 0"),
        ("segment.index.bytes", "3", "must be at least 4"),
        ("flush.messages", "0", "must be at least 1"),
        ("flush.ms", "-1", "must be at least 0"),
        ("retention.bytes", "1GB", "expected a 64-bit integer"),
        ("retention.ms", "soon", "expected a 64-bit integer"),
        ("max.message.bytes", "-1", "must be at least 0"),
        ("max.message.bytes", "3000000000", "expected a 32-bit integer"),
        ("index.interval.bytes", "-4096", "must be at least 0"),
        ("delete.retention.ms", "-1", "must be at least 0"),
        ("file.delete.delay.ms", "-60000", "must be at least 0"),
        ("min.cleanable.dirty.ratio", "1.5", "must be between 0 and 1"),
        ("min.cleanable.dirty.ratio", "-0.1", "must be between 0 and 1"),
        ("min.cleanable.dirty.ratio", "half", "expected a number"),
        ("cleanup.policy", "forever", "expected delete or compact"),
        ("unclean.leader.election.enable", "yes", "expected true or false"),
        ("min.insync.replicas", "0", "must be at least 1"),
    ];
    for (property, value, reason) in cases {
        assert_invalid(property, value, reason);
    }
    let covered: BTreeSet<&str> = cases.iter().map(|(p, _, _)| *p).collect();
    let all: BTreeSet<&str> = TOPIC_CONFIGS.iter().map(|(p, _)| *p).collect();
    assert_eq!(covered, all, "every topic config has an invalid value in the table");
}

#[test]
fn the_edges_and_kafkas_spellings_are_accepted() {
    for (property, value) in [
        ("segment.bytes", "14"),
        ("segment.ms", "1"),
        ("segment.jitter.ms", "0"),
        ("segment.index.bytes", "4"),
        ("flush.messages", "1"),
        ("flush.ms", "0"),
        ("retention.bytes", "-1"),
        ("retention.ms", "-1"),
        ("max.message.bytes", "0"),
        ("index.interval.bytes", "0"),
        ("delete.retention.ms", "0"),
        ("file.delete.delay.ms", "0"),
        ("min.cleanable.dirty.ratio", "0"),
        ("min.cleanable.dirty.ratio", "1.0"),
        ("cleanup.policy", "Compact"),
        ("unclean.leader.election.enable", "FALSE"),
        ("min.insync.replicas", "1"),
    ] {
        validate_config(property, value).unwrap_or_else(|e| panic!("{property}={value}: {e}"));
    }
    assert_eq!(config_range("retention.ms"), None, "negative retention means no limit");
    assert_eq!(config_range("cleanup.policy"), None);
}

#[test]
fn unknown_names_list_the_known_ones() {
    for unknown in ["retention.hours", "log.retention.ms", "compression.type", ""] {
        let e = validate_config(unknown, "1").unwrap_err();
        let Error::InvalidConfig { property, value: None, reason } = &e else { panic!("{e:?}") };
        assert_eq!(property, unknown);
        let known = TOPIC_CONFIGS.iter().map(|(p, _)| *p).collect::<Vec<_>>().join(", ");
        assert_eq!(reason, &format!("Kafka 0.8.2 knows {known}"));
        assert_eq!(e.to_string(), format!("unknown topic config {unknown:?}: Kafka 0.8.2 knows {known}"));
    }
    let map =
        BTreeMap::from([("retention.ms".to_owned(), "1000".to_owned()), ("segment.bytes".to_owned(), "0".to_owned())]);
    let e = validate_topic_config(&map).unwrap_err();
    assert_eq!(e.to_string(), "invalid value \"0\" for topic config segment.bytes: must be at least 14");
}

//! Configuration validation: every simple-consumer property refuses its invalid values with an
//! error naming the property and the reason, combinations included, and every property reads
//! back its own default. Pure: no cluster, no runtime.

use std::collections::BTreeSet;
use std::time::Duration;

use gregor_config::testing::{self, assert_invalid};
use gregor_simple_consumer::config::{MIN_FETCH_MESSAGE_MAX_BYTES, PROPERTIES};
use gregor_simple_consumer::{ConfigError, SimpleConsumerConfig};

const BROKERS: (&str, &str) = ("metadata.broker.list", "k1:9092");

/// Kafka 0.8.2's consumer defaults for the properties it has, gregor's for the others.
const DEFAULTS: &[(&str, &str)] = &[
    ("metadata.broker.list", "k1:9092"),
    ("client.id", ""),
    ("socket.timeout.ms", "30000"),
    ("fetch.message.max.bytes", "1048576"),
    ("fetch.min.bytes", "1"),
    ("fetch.wait.max.ms", "100"),
    ("refresh.leader.backoff.ms", "200"),
    ("refresh.leader.backoff.max.ms", "1000"),
    ("refresh.leader.max.retries", "10"),
    ("fetch.message.auto.grow.max.bytes", "0"),
    ("isolation.level", "read_uncommitted"),
    ("api.version.request", "true"),
    ("broker.version.fallback", "0.8.2"),
];

/// The error of `props` read after a valid broker list (unless `props` sets one).
fn error_of(props: &[(&str, &str)]) -> ConfigError {
    testing::error_of(SimpleConsumerConfig::from_properties, &[BROKERS], props)
}

#[test]
fn every_property_refuses_its_invalid_values() {
    let cases: &[(&str, &str, &str)] = &[
        ("metadata.broker.list", "nohost", "nohost is not host:port"),
        ("metadata.broker.list", "k1:0", "no valid port"),
        ("metadata.broker.list", "k1:9092,:1", ":1 has no host"),
        ("client.id", "my reader", "contains ' ': only ASCII letters and digits, '.', '_' and '-'"),
        ("client.id", "reader#1", "contains '#'"),
        ("socket.timeout.ms", "0", "must be between 1 and 2147483647"),
        ("socket.timeout.ms", "2147483648", "must be between 1 and 2147483647"),
        ("socket.timeout.ms", "30s", "not an integer (1 to 2147483647)"),
        ("fetch.message.max.bytes", "25", "must be between 26 and 2147483647"),
        ("fetch.message.max.bytes", "-1", "must be between 26 and 2147483647"),
        ("fetch.message.max.bytes", "1MB", "not an integer"),
        ("fetch.min.bytes", "-1", "must be between 0 and 2147483647"),
        ("fetch.min.bytes", "2147483648", "must be between 0 and 2147483647"),
        ("fetch.wait.max.ms", "-1", "must be between 0 and 2147483647"),
        ("fetch.wait.max.ms", "soon", "not an integer (0 to 2147483647)"),
        ("refresh.leader.backoff.ms", "-200", "must be between 0 and 2147483647"),
        ("refresh.leader.backoff.max.ms", "2147483648", "must be between 0 and 2147483647"),
        ("refresh.leader.max.retries", "-1", "must be between 0 and 2147483647"),
        ("refresh.leader.max.retries", "ten", "not an integer"),
        ("fetch.message.auto.grow.max.bytes", "-1", "must be between 0 and 2147483647"),
        ("fetch.message.auto.grow.max.bytes", "1024", "must exceed fetch.message.max.bytes (1048576), or be 0 (off)"),
        ("isolation.level", "committed", "is not an isolation level (read_uncommitted or read_committed)"),
        ("api.version.request", "yes please", "true or false"),
        ("broker.version.fallback", "3.7.0", "brokers from Kafka 0.10 on answer ApiVersions"),
        ("broker.version.fallback", "latest", "is not a Kafka release"),
    ];
    for (property, value, reason) in cases {
        let case = format!("{property}={value}");
        assert_invalid(&error_of(&[(property, value)]), property, Some(value), reason, &case);
    }
    let covered: BTreeSet<&str> = cases.iter().map(|(p, _, _)| *p).collect();
    assert_eq!(covered, PROPERTIES.iter().copied().collect(), "every property has an invalid value in the table");
    let long = "x".repeat(40_000);
    let e = error_of(&[("client.id", &long)]);
    assert_invalid(&e, "client.id", Some(&format!("{}... (40000 bytes)", "x".repeat(64))), "longer than 32767", "long");
}

#[test]
fn combinations_name_the_property_and_the_other_one() {
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str, &'a str);
    let cases: &[Case<'_>] = &[
        // a long poll must end before the request times out
        (&[("socket.timeout.ms", "100")], "socket.timeout.ms", "100", "must exceed fetch.wait.max.ms (100 ms)"),
        (
            &[("fetch.wait.max.ms", "30000")],
            "socket.timeout.ms",
            "30000",
            "must exceed fetch.wait.max.ms (30000 ms), or long polls time out",
        ),
        (
            &[("refresh.leader.backoff.ms", "5000")],
            "refresh.leader.backoff.max.ms",
            "1000",
            "must be at least refresh.leader.backoff.ms (5000 ms)",
        ),
        (
            &[("fetch.message.auto.grow.max.bytes", "65536"), ("fetch.message.max.bytes", "65536")],
            "fetch.message.auto.grow.max.bytes",
            "65536",
            "must exceed fetch.message.max.bytes (65536)",
        ),
    ];
    for (props, property, value, reason) in cases {
        assert_invalid(&error_of(props), property, Some(value), reason, &format!("{props:?}"));
    }
    // the edges that work, in either order
    let c = SimpleConsumerConfig::from_properties([
        ("fetch.message.auto.grow.max.bytes", "65537"),
        ("fetch.message.max.bytes", "65536"),
        ("socket.timeout.ms", "101"),
        ("refresh.leader.backoff.ms", "1000"),
        BROKERS,
    ])
    .unwrap();
    assert_eq!(c.fetch_message_auto_grow_max_bytes(), Some(65_537));
    assert_eq!(c.socket_timeout(), Duration::from_millis(101));
}

#[test]
fn missing_and_unknown_properties() {
    let e = SimpleConsumerConfig::from_properties(Vec::<(&str, &str)>::new()).unwrap_err();
    assert_eq!(e, ConfigError::Missing { property: "metadata.broker.list" });
    assert_eq!(e.to_string(), "missing required property metadata.broker.list");
    assert_eq!(error_of(&[("metadata.broker.list", " ")]), ConfigError::Missing { property: "metadata.broker.list" });
    for unknown in ["group.id", "fetch.size", "socket_timeout_ms", "zookeeper.connect"] {
        let e = error_of(&[(unknown, "1")]);
        let ConfigError::UnknownProperty { client, property, known } = &e else { panic!("{e:?}") };
        assert_eq!((*client, property.as_str(), *known), ("simple-consumer", unknown, PROPERTIES));
        assert_eq!(
            e.to_string(),
            format!("unknown simple-consumer property {unknown:?}; known: {}", PROPERTIES.join(", "))
        );
    }
}

#[test]
fn the_builder_is_checked_the_same_way() {
    let b = || SimpleConsumerConfig::builder().metadata_broker_list("k1:9092");
    let big = Duration::from_millis(i32::MAX as u64 + 1);
    let cases = [
        (b().client_id("a b").build(), "client.id", "contains ' '"),
        (b().socket_timeout(Duration::ZERO).build(), "socket.timeout.ms", "between 1 and 2147483647"),
        (b().socket_timeout(big).build(), "socket.timeout.ms", "between 1 and 2147483647"),
        (b().fetch_wait_max(big).build(), "fetch.wait.max.ms", "between 0 and 2147483647"),
        (
            b().fetch_message_max_bytes(MIN_FETCH_MESSAGE_MAX_BYTES - 1).build(),
            "fetch.message.max.bytes",
            "at least 26",
        ),
        (b().fetch_min_bytes(-1).build(), "fetch.min.bytes", "between 0 and"),
        (b().refresh_leader_backoff(big).build(), "refresh.leader.backoff.ms", "between 0 and"),
        (b().refresh_leader_backoff_max(big).build(), "refresh.leader.backoff.max.ms", "between 0 and"),
        (b().refresh_leader_max_retries(u32::MAX).build(), "refresh.leader.max.retries", "between 0 and"),
        (b().fetch_message_auto_grow_max_bytes(Some(0)).build(), "fetch.message.auto.grow.max.bytes", "must exceed"),
    ];
    for (result, property, reason) in cases {
        assert_invalid(&result.unwrap_err(), property, None, reason, property);
    }
    assert_eq!(
        SimpleConsumerConfig::builder().build().unwrap_err(),
        ConfigError::Missing { property: "metadata.broker.list" }
    );
}

#[test]
fn every_property_round_trips_its_default() {
    let default = SimpleConsumerConfig::builder().metadata_broker_list("k1:9092").build().unwrap();
    let listed: Vec<&str> = DEFAULTS.iter().map(|(k, _)| *k).collect();
    assert_eq!(listed, PROPERTIES, "the table lists every property, in PROPERTIES' order");
    let expected: Vec<(&str, String)> = DEFAULTS.iter().map(|(k, v)| (*k, v.to_string())).collect();
    assert_eq!(default.to_properties(), expected);
    for (property, value) in DEFAULTS {
        let one = SimpleConsumerConfig::from_properties([BROKERS, (property, value)]).unwrap();
        assert_eq!(one, default, "{property}={value:?} is the default");
    }
    assert_eq!(SimpleConsumerConfig::from_properties(DEFAULTS.iter().copied()).unwrap(), default);
}

#[test]
fn a_changed_configuration_round_trips() {
    let changed: &[(&str, &str)] = &[
        ("metadata.broker.list", "a:1,b:2"),
        ("client.id", "reader-1"),
        ("socket.timeout.ms", "5000"),
        ("fetch.message.max.bytes", "10240"),
        ("fetch.min.bytes", "0"),
        ("fetch.wait.max.ms", "0"),
        ("refresh.leader.backoff.ms", "0"),
        ("refresh.leader.backoff.max.ms", "0"),
        ("refresh.leader.max.retries", "0"),
        ("fetch.message.auto.grow.max.bytes", "2147483647"),
        ("isolation.level", "read_committed"),
        ("api.version.request", "false"),
        ("broker.version.fallback", "0.9.0"),
    ];
    let c = SimpleConsumerConfig::from_properties(changed.iter().copied()).unwrap();
    let expected: Vec<(&str, String)> = changed.iter().map(|(k, v)| (*k, v.to_string())).collect();
    assert_eq!(c.to_properties(), expected);
    assert_eq!(SimpleConsumerConfig::from_properties(c.to_properties()).unwrap(), c);
}

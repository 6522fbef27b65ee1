//! Configuration validation: every high-level consumer property refuses its invalid values with
//! an error naming the property and the reason, combinations included (Kafka 0.8.2's
//! `ConsumerConfig.validate` and more), and every property reads back its own default. Pure: no
//! ZooKeeper, no cluster, no runtime.

use std::collections::BTreeSet;
use std::time::Duration;

use gregor_config::testing::{self, assert_invalid};
use gregor_consumer::assignment::AssignmentStrategy;
use gregor_consumer::config::{MIN_FETCH_MESSAGE_MAX_BYTES, PROPERTIES};
use gregor_consumer::{AutoOffsetReset, ConfigError, ConsumerConfig, OffsetsStorage};

const REQUIRED: [(&str, &str); 2] = [("group.id", "g"), ("zookeeper.connect", "zk1:2181/kafka")];

/// Kafka 0.8.2's documented high-level consumer defaults ("Important configuration properties
/// for the high-level consumer"), with the required ones set; `client.id` defaults to the group.
const DEFAULTS: &[(&str, &str)] = &[
    ("group.id", "g"),
    ("zookeeper.connect", "zk1:2181/kafka"),
    ("zookeeper.session.timeout.ms", "6000"),
    ("zookeeper.connection.timeout.ms", "6000"),
    ("zookeeper.sync.time.ms", "2000"),
    ("socket.timeout.ms", "30000"),
    ("socket.receive.buffer.bytes", "65536"),
    ("fetch.message.max.bytes", "1048576"),
    ("num.consumer.fetchers", "1"),
    ("auto.commit.enable", "true"),
    ("auto.commit.interval.ms", "60000"),
    ("queued.max.message.chunks", "2"),
    ("rebalance.max.retries", "4"),
    ("rebalance.backoff.ms", "2000"),
    ("refresh.leader.backoff.ms", "200"),
    ("fetch.min.bytes", "1"),
    ("fetch.wait.max.ms", "100"),
    ("auto.offset.reset", "largest"),
    ("consumer.timeout.ms", "-1"),
    ("exclude.internal.topics", "true"),
    ("partition.assignment.strategy", "range"),
    ("client.id", "g"),
    ("offsets.storage", "zookeeper"),
    ("offsets.channel.backoff.ms", "1000"),
    ("offsets.channel.socket.timeout.ms", "10000"),
    ("offsets.commit.max.retries", "5"),
    ("dual.commit.enabled", "true"),
    ("isolation.level", "read_uncommitted"),
    ("api.version.request", "true"),
    ("broker.version.fallback", "0.8.2"),
];

/// Reads `props`, with the required properties it does not set, and returns the error.
fn error_of(props: &[(&str, &str)]) -> ConfigError {
    testing::error_of(ConsumerConfig::from_properties, &REQUIRED, props)
}

#[test]
fn every_property_refuses_its_invalid_values() {
    let chars = "only ASCII letters and digits, '.', '_' and '-' are allowed";
    let cases: &[(&str, &str, &str)] = &[
        ("group.id", "my group", "contains ' '"),
        ("group.id", "a/b", "contains '/'"),
        ("group.id", "", "must not be empty"),
        ("consumer.id", "host:1", "contains ':'"),
        ("consumer.id", "", "must not be empty (leave it unset for a generated id)"),
        ("zookeeper.connect", "zk1:2181/kafka/", "chroot \"/kafka/\""),
        ("zookeeper.connect", "zk1:x", "invalid port \"x\""),
        ("zookeeper.connect", "zk1:2181,,zk2", "empty host in the host list"),
        ("zookeeper.connect", "::1:2181", "must be in brackets"),
        ("zookeeper.connect", "/kafka", "no host"),
        ("zookeeper.session.timeout.ms", "1000", "must be between 1500 and 2147483647"),
        ("zookeeper.session.timeout.ms", "-1", "must be between 0 and 2147483647"),
        ("zookeeper.connection.timeout.ms", "0", "must be between 1 and 2147483647"),
        ("zookeeper.connection.timeout.ms", "2147483648", "must be between 0 and 2147483647"),
        ("zookeeper.sync.time.ms", "-1", "must be between 0 and 2147483647"),
        ("socket.timeout.ms", "0", "must be between 1 and 2147483647"),
        ("socket.timeout.ms", "x", "not an integer (0 to 2147483647)"),
        ("socket.receive.buffer.bytes", "0", "must be between 1 and 2147483647"),
        ("fetch.message.max.bytes", "25", "must be at least 26 bytes, the smallest message"),
        ("fetch.message.max.bytes", "0", "must be at least 26 bytes"),
        ("fetch.message.max.bytes", "2147483648", "must be between -2147483648 and 2147483647"),
        ("num.consumer.fetchers", "0", "must be between 1 and 2147483647"),
        ("auto.commit.enable", "yes", "must be true or false"),
        ("auto.commit.interval.ms", "0", "must be at least 1 when auto.commit.enable=true"),
        ("auto.commit.interval.ms", "-1", "must be between 0 and 2147483647"),
        ("queued.max.message.chunks", "0", "must be between 1 and 2147483647"),
        ("rebalance.max.retries", "-1", "must be between 0 and 2147483647"),
        ("rebalance.backoff.ms", "-1", "must be between 0 and 2147483647"),
        ("refresh.leader.backoff.ms", "1e3", "not an integer"),
        ("fetch.min.bytes", "-1", "must be between 0 and 2147483647"),
        ("fetch.wait.max.ms", "-1", "must be between 0 and 2147483647"),
        // earliest and latest are today's names for smallest and largest (see MODERN_NAMES)
        ("auto.offset.reset", "beginning", "must be smallest, largest, earliest or latest"),
        ("auto.offset.reset", "Smallest", "must be smallest, largest, earliest or latest"),
        ("consumer.timeout.ms", "-2", "must be -1 (block forever) or 0 to 2147483647"),
        ("consumer.timeout.ms", "2147483648", "must be -1 (block forever) or 0 to 2147483647"),
        ("exclude.internal.topics", "1", "must be true or false"),
        ("partition.assignment.strategy", "sticky", "must be range or roundrobin"),
        ("partition.assignment.strategy", "round-robin", "must be range or roundrobin"),
        ("client.id", "my client", "contains ' '"),
        ("offsets.storage", "mysql", "must be zookeeper or kafka"),
        ("offsets.channel.backoff.ms", "-1", "must be between 0 and 2147483647"),
        ("offsets.channel.socket.timeout.ms", "0", "must be between 1 and 2147483647"),
        ("offsets.commit.max.retries", "-5", "must be between 0 and 2147483647"),
        ("dual.commit.enabled", "on", "must be true or false"),
        ("isolation.level", "serializable", "is not an isolation level (read_uncommitted or read_committed)"),
        ("api.version.request", "1", "must be true or false"),
        ("broker.version.fallback", "1.0.0", "brokers from Kafka 0.10 on answer ApiVersions"),
    ];
    for (property, value, reason) in cases {
        let case = format!("{property}={value}");
        assert_invalid(&error_of(&[(property, value)]), property, Some(value), reason, &case);
    }
    for (property, value, _) in cases.iter().filter(|(p, _, _)| p.ends_with(".id") && !p.starts_with("consumer")) {
        if !value.is_empty() && *value != "a/b" {
            let e = error_of(&[(property, value)]);
            assert!(e.to_string().ends_with(chars), "{e}");
        }
    }
    let covered: BTreeSet<&str> = cases.iter().map(|(p, _, _)| *p).collect();
    assert_eq!(covered, PROPERTIES.iter().copied().collect(), "every property has an invalid value in the table");
}

#[test]
fn combinations_name_the_property_and_the_other_one() {
    // Kafka 0.8.2: require(fetchWaitMaxMs <= socketTimeoutMs, "socket.timeout.ms should always be
    // at least fetch.wait.max.ms to prevent unnecessary socket timeouts")
    let e = error_of(&[("fetch.wait.max.ms", "40000")]);
    assert_invalid(&e, "socket.timeout.ms", Some("30000"), "must be at least fetch.wait.max.ms (40000 ms)", "wait");
    let e = error_of(&[("socket.timeout.ms", "99")]);
    assert_invalid(&e, "socket.timeout.ms", Some("99"), "(100 ms), or every long poll times out", "socket");
    let equal = ConsumerConfig::from_properties(
        REQUIRED.into_iter().chain([("socket.timeout.ms", "500"), ("fetch.wait.max.ms", "500")]),
    )
    .unwrap();
    assert_eq!(equal.socket_timeout, equal.fetch_wait_max, "equal is allowed, as in Kafka");
    // a zero interval only matters while auto-commit is on
    let e = error_of(&[("auto.commit.interval.ms", "0"), ("auto.commit.enable", "true")]);
    assert_invalid(&e, "auto.commit.interval.ms", Some("0"), "when auto.commit.enable=true", "auto");
    let off = ConsumerConfig::from_properties(
        REQUIRED.into_iter().chain([("auto.commit.interval.ms", "0"), ("auto.commit.enable", "false")]),
    )
    .unwrap();
    assert!(!off.auto_commit_enable);
    // client.id defaults to group.id, so the group's characters are checked once, as group.id
    let e = error_of(&[("group.id", "g 1")]);
    assert_invalid(&e, "group.id", Some("g 1"), "contains ' '", "group");
}

#[test]
fn missing_and_unknown_properties() {
    let e = ConsumerConfig::from_properties([("zookeeper.connect", "z:2181")]).unwrap_err();
    assert_eq!(e, ConfigError::Missing { property: "group.id" });
    assert_eq!(e.to_string(), "missing required property group.id");
    let e = ConsumerConfig::from_properties([("group.id", "g")]).unwrap_err();
    assert_eq!(e.to_string(), "missing required property zookeeper.connect");
    assert_eq!(error_of(&[("zookeeper.connect", "  ")]), ConfigError::Missing { property: "zookeeper.connect" });
    for unknown in ["groupid", "metadata.broker.list", "auto_offset_reset", "queued.max.messages", "fetch.size"] {
        let e = error_of(&[(unknown, "1")]);
        assert_eq!(
            e,
            ConfigError::UnknownProperty { client: "consumer", property: unknown.to_owned(), known: PROPERTIES }
        );
        assert_eq!(e.to_string(), format!("unknown consumer property {unknown:?}; known: {}", PROPERTIES.join(", ")));
    }
}

#[test]
fn the_builder_is_checked_the_same_way() {
    let b = || ConsumerConfig::builder().group_id("g").zookeeper_connect("zk1:2181");
    let big = Duration::from_millis(i32::MAX as u64 + 1);
    let cases = [
        (b().zookeeper_session_timeout(Duration::from_millis(1499)).build(), "zookeeper.session.timeout.ms", "1500"),
        (b().zookeeper_session_timeout(big).build(), "zookeeper.session.timeout.ms", "and 2147483647"),
        (b().zookeeper_connection_timeout(Duration::ZERO).build(), "zookeeper.connection.timeout.ms", "between 1"),
        (b().zookeeper_sync_time(big).build(), "zookeeper.sync.time.ms", "and 2147483647"),
        (b().socket_timeout(big).build(), "socket.timeout.ms", "and 2147483647"),
        (b().socket_receive_buffer_bytes(0).build(), "socket.receive.buffer.bytes", "between 1"),
        (b().socket_receive_buffer_bytes(1 << 31).build(), "socket.receive.buffer.bytes", "and 2147483647"),
        (
            b().fetch_message_max_bytes(MIN_FETCH_MESSAGE_MAX_BYTES - 1).build(),
            "fetch.message.max.bytes",
            "at least 26 bytes",
        ),
        (b().num_consumer_fetchers(0).build(), "num.consumer.fetchers", "between 1"),
        (b().auto_commit_interval(big).build(), "auto.commit.interval.ms", "and 2147483647"),
        (b().queued_max_message_chunks(0).build(), "queued.max.message.chunks", "between 1"),
        (b().rebalance_max_retries(u32::MAX).build(), "rebalance.max.retries", "and 2147483647"),
        (b().rebalance_backoff(big).build(), "rebalance.backoff.ms", "and 2147483647"),
        (b().refresh_leader_backoff(big).build(), "refresh.leader.backoff.ms", "and 2147483647"),
        (b().fetch_min_bytes(i32::MIN).build(), "fetch.min.bytes", "between 0"),
        (b().fetch_wait_max(big).build(), "fetch.wait.max.ms", "and 2147483647"),
        (b().consumer_timeout(Some(big)).build(), "consumer.timeout.ms", "and 2147483647"),
        (b().client_id("ä").build(), "client.id", "contains 'ä'"),
        (b().client_id("x".repeat(32_768)).build(), "client.id", "longer than 32767 bytes"),
        (b().offsets_channel_backoff(big).build(), "offsets.channel.backoff.ms", "and 2147483647"),
        (b().offsets_channel_socket_timeout(Duration::ZERO).build(), "offsets.channel.socket.timeout.ms", "between 1"),
        (b().offsets_commit_max_retries(u32::MAX).build(), "offsets.commit.max.retries", "and 2147483647"),
        (b().consumer_id("a/b").build(), "consumer.id", "contains '/'"),
        (ConsumerConfig::builder().group_id("g").zookeeper_connect("zk1:99999").build(), "zookeeper.connect", "port"),
    ];
    for (result, property, reason) in cases {
        assert_invalid(&result.unwrap_err(), property, None, reason, property);
    }
    // the edges that work
    let c = b()
        .zookeeper_session_timeout(gregor_zk::MIN_SESSION_TIMEOUT)
        .client_id("")
        .consumer_id("host-1.a_b")
        .fetch_message_max_bytes(MIN_FETCH_MESSAGE_MAX_BYTES)
        .fetch_min_bytes(0)
        .fetch_wait_max(Duration::ZERO)
        .consumer_timeout(Some(Duration::ZERO))
        .build()
        .unwrap();
    assert_eq!((c.client_id.as_str(), c.consumer_id.as_deref()), ("", Some("host-1.a_b")));
}

#[test]
fn every_property_round_trips_its_default() {
    let default = ConsumerConfig::builder().group_id("g").zookeeper_connect("zk1:2181/kafka").build().unwrap();
    let listed: BTreeSet<&str> = DEFAULTS.iter().map(|(k, _)| *k).collect();
    let all: BTreeSet<&str> = PROPERTIES.iter().copied().collect();
    assert_eq!(
        all.difference(&listed).copied().collect::<Vec<_>>(),
        ["consumer.id"],
        "every property with a default is in the table (consumer.id has none: it is generated)"
    );
    let expected: Vec<(&str, String)> = DEFAULTS.iter().map(|(k, v)| (*k, v.to_string())).collect();
    assert_eq!(default.to_properties(), expected, "to_properties of the defaults is Kafka 0.8.2's table");
    for (property, value) in DEFAULTS {
        let one = ConsumerConfig::from_properties(REQUIRED.into_iter().chain([(*property, *value)]))
            .unwrap_or_else(|e| panic!("{property}={value:?}: {e}"));
        assert_eq!(one.to_properties(), expected, "{property}={value:?} is the default");
    }
    let c = ConsumerConfig::from_properties(DEFAULTS.iter().copied()).unwrap();
    assert_eq!(c.to_properties(), expected);
    assert_eq!(c.auto_offset_reset, AutoOffsetReset::Largest);
    assert_eq!(c.offsets_storage, OffsetsStorage::Zookeeper);
    assert_eq!(c.partition_assignment_strategy, AssignmentStrategy::Range);
}

#[test]
fn a_changed_configuration_round_trips() {
    let changed: &[(&str, &str)] = &[
        ("group.id", "billing.v2"),
        ("consumer.id", "worker-7"),
        ("zookeeper.connect", "zk1:2181,[::1]:2182/kafka/prod"),
        ("zookeeper.session.timeout.ms", "1500"),
        ("zookeeper.connection.timeout.ms", "1"),
        ("zookeeper.sync.time.ms", "0"),
        ("socket.timeout.ms", "2147483647"),
        ("socket.receive.buffer.bytes", "1"),
        ("fetch.message.max.bytes", "26"),
        ("num.consumer.fetchers", "3"),
        ("auto.commit.enable", "false"),
        ("auto.commit.interval.ms", "0"),
        ("queued.max.message.chunks", "1"),
        ("rebalance.max.retries", "9"),
        ("rebalance.backoff.ms", "0"),
        ("refresh.leader.backoff.ms", "0"),
        ("fetch.min.bytes", "0"),
        ("fetch.wait.max.ms", "2147483647"),
        ("auto.offset.reset", "smallest"),
        ("consumer.timeout.ms", "0"),
        ("exclude.internal.topics", "false"),
        ("partition.assignment.strategy", "roundrobin"),
        ("client.id", ""),
        ("offsets.storage", "kafka"),
        ("offsets.channel.backoff.ms", "0"),
        ("offsets.channel.socket.timeout.ms", "1"),
        ("offsets.commit.max.retries", "0"),
        ("dual.commit.enabled", "false"),
        ("isolation.level", "read_committed"),
        ("api.version.request", "false"),
        ("broker.version.fallback", "0.8.0"),
    ];
    let c = ConsumerConfig::from_properties(changed.iter().copied()).unwrap();
    let expected: Vec<(&str, String)> = changed.iter().map(|(k, v)| (*k, v.to_string())).collect();
    assert_eq!(c.to_properties(), expected);
    assert_eq!(ConsumerConfig::from_properties(c.to_properties()).unwrap().to_properties(), expected);
    // Kafka reads booleans and offsets.storage in any case
    let spelled = ConsumerConfig::from_properties(REQUIRED.into_iter().chain([
        ("auto.commit.enable", "FALSE"),
        ("dual.commit.enabled", "True"),
        ("offsets.storage", "Kafka"),
    ]))
    .unwrap();
    assert!(!spelled.auto_commit_enable && spelled.dual_commit_enabled);
    assert_eq!(spelled.offsets_storage, OffsetsStorage::Kafka);
}

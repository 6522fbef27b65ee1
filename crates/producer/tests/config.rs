//! Configuration validation: every producer property refuses its invalid values with an error
//! naming the property (Kafka's name) and the reason, combinations included, and every property
//! reads back its own default. Pure: no cluster, no runtime.

use std::collections::BTreeSet;
use std::time::Duration;

use gregor_config::testing::{self, assert_invalid};
use gregor_producer::{config::PROPERTIES, ConfigError, EnqueueTimeout, ProducerConfig};
use gregor_protocol::Compression;

const BROKERS: (&str, &str) = ("metadata.broker.list", "k1:9092");

/// Kafka 0.8.2's documented producer defaults, as property strings (the 0.8.2 documentation's
/// "Producer Configs" table), plus gregor's spelling of the empty ones.
const DEFAULTS: &[(&str, &str)] = &[
    ("metadata.broker.list", "k1:9092"),
    ("producer.type", "sync"),
    ("request.required.acks", "0"),
    ("request.timeout.ms", "10000"),
    ("queue.buffering.max.ms", "5000"),
    ("queue.buffering.max.messages", "10000"),
    ("queue.buffering.max.bytes", "0"),
    ("queue.enqueue.timeout.ms", "-1"),
    ("batch.num.messages", "200"),
    ("batch.size", "-1"),
    ("message.send.max.retries", "3"),
    ("retry.backoff.ms", "100"),
    ("delivery.timeout.ms", "-1"),
    ("max.in.flight.requests.per.connection", "1"),
    ("topic.metadata.refresh.interval.ms", "600000"),
    ("compression.codec", "none"),
    ("compressed.topics", ""),
    ("client.id", ""),
    ("send.buffer.bytes", "102400"),
    ("partitioner.class", "kafka.producer.DefaultPartitioner"),
    ("serializer.class", "kafka.serializer.DefaultEncoder"),
    ("key.serializer.class", "kafka.serializer.DefaultEncoder"),
    ("api.version.request", "true"),
    ("broker.version.fallback", "0.8.2"),
    ("enable.idempotence", "false"),
];

/// Reads `props` after a valid broker list (unless `props` sets one) and returns the error.
fn error_of(props: &[(&str, &str)]) -> ConfigError {
    testing::error_of(ProducerConfig::from_properties, &[BROKERS], props)
}

#[test]
fn every_property_refuses_its_invalid_values() {
    let long_id = "x".repeat(40_000);
    let long_topic = "t".repeat(256);
    let long_topic_reason =
        format!("topic \"{}... (256 bytes)\" must not be longer than 255 characters", "t".repeat(64));
    // (property, invalid value, reason fragment)
    let cases: &[(&str, &str, &str)] = &[
        ("metadata.broker.list", "nohost", "nohost is not host:port"),
        ("metadata.broker.list", "k1:9092,k2", "k2 is not host:port"),
        ("metadata.broker.list", "k1:0", "no valid port (1 to 65535)"),
        ("metadata.broker.list", "k1:65536", "no valid port"),
        ("metadata.broker.list", "k1:http", "no valid port"),
        ("metadata.broker.list", ":9092", "has no host"),
        ("producer.type", "batch", "must be sync or async"),
        ("producer.type", "SYNC", "must be sync or async"),
        ("request.required.acks", "2", "must be -1 (all in-sync replicas), 0 (no response) or 1 (the leader)"),
        ("request.required.acks", "-2", "must be -1"),
        ("request.required.acks", "all", "must be -1"),
        ("request.timeout.ms", "0", "must be between 1 and 2147483647"),
        ("request.timeout.ms", "-1", "must be between 1 and 2147483647"),
        ("request.timeout.ms", "2147483648", "must be between 1 and 2147483647"),
        ("request.timeout.ms", "10s", "not an integer (1 to 2147483647)"),
        ("queue.buffering.max.ms", "-5", "must be between 0 and 2147483647"),
        ("queue.buffering.max.ms", "2147483648", "must be between 0 and 2147483647"),
        ("queue.buffering.max.messages", "0", "must be between 1 and 2147483647"),
        ("queue.buffering.max.messages", "2147483648", "must be between 1 and 2147483647"),
        ("queue.buffering.max.bytes", "-1", "must be between 0 and 2147483647"),
        ("queue.buffering.max.bytes", "lots", "not an integer"),
        ("queue.enqueue.timeout.ms", "-2", "must be -1 (block), 0 (fail at once) or a wait of 1 to 2147483647 ms"),
        ("queue.enqueue.timeout.ms", "2147483648", "a wait of 1 to 2147483647 ms"),
        ("queue.enqueue.timeout.ms", "forever", "not an integer"),
        ("batch.num.messages", "0", "must be between 1 and 2147483647"),
        ("batch.num.messages", "1.5", "not an integer"),
        ("batch.size", "-2", "must be between -1 and 2147483647"),
        ("batch.size", "2147483648", "must be between -1 and 2147483647"),
        ("message.send.max.retries", "-1", "must be between 0 and 2147483647"),
        ("message.send.max.retries", "4294967296", "must be between 0 and 2147483647"),
        ("retry.backoff.ms", "-1", "must be between 0 and 2147483647"),
        ("max.in.flight.requests.per.connection", "0", "must be between 1 and 2147483647"),
        ("retry.backoff.ms", "x", "not an integer"),
        ("delivery.timeout.ms", "0", "must be between 1 and 2147483647"),
        ("delivery.timeout.ms", "-2", "must be between -1 and 2147483647"),
        ("delivery.timeout.ms", "14999", "must be at least queue.buffering.max.ms + request.timeout.ms (15000 ms)"),
        ("topic.metadata.refresh.interval.ms", "2147483648", "must be between -2147483648 and 2147483647"),
        ("topic.metadata.refresh.interval.ms", "soon", "not an integer"),
        ("compression.codec", "brotli", "must be none, gzip, snappy, lz4 or zstd (any case), or 0 to 4"),
        ("compression.codec", "5", "must be none, gzip, snappy, lz4 or zstd"),
        ("compressed.topics", "a,b c", "topic \"b c\" contains ' '"),
        ("compressed.topics", "a,..", "topic \"..\" must not be \".\" or \"..\""),
        ("compressed.topics", &long_topic, &long_topic_reason),
        ("client.id", "my app", "contains ' ': only ASCII letters and digits, '.', '_' and '-' are allowed"),
        ("client.id", "app/1", "contains '/'"),
        ("client.id", &long_id, "longer than 32767 bytes"),
        ("send.buffer.bytes", "0", "must be between 1 and 2147483647"),
        ("send.buffer.bytes", "2147483648", "must be between 1 and 2147483647"),
        ("partitioner.class", "com.example.MyPartitioner", "must be kafka.producer.DefaultPartitioner, murmur2"),
        ("serializer.class", "com.example.AvroEncoder", "encoders are Rust values"),
        ("serializer.class", "kafka.serializer.NullEncoder", "only those names are accepted"),
        ("key.serializer.class", "kafka.serializer.AvroEncoder", "only those names are accepted"),
        ("api.version.request", "sometimes", "true or false"),
        ("broker.version.fallback", "2.8", "brokers from Kafka 0.10 on answer ApiVersions"),
        ("enable.idempotence", "perhaps", "true or false"),
    ];
    for (property, value, reason) in cases {
        let case = format!("{property}={value}");
        let e = error_of(&[(property, value)]);
        let shown = (value.len() <= 64).then_some(*value);
        let expected_value = if *property == "compressed.topics" { None } else { shown };
        assert_invalid(&e, property, expected_value, reason, &case);
    }
    let covered: BTreeSet<&str> = cases.iter().map(|(p, _, _)| *p).collect();
    let all: BTreeSet<&str> = PROPERTIES.iter().copied().collect();
    assert_eq!(covered, all, "every property has an invalid value in the table");
}

#[test]
fn long_values_are_shortened_in_the_message() {
    let e = error_of(&[("client.id", &"é".repeat(40_000))]);
    let ConfigError::Invalid { value, .. } = &e else { panic!("{e:?}") };
    assert_eq!(value, &format!("{}... (80000 bytes)", "é".repeat(32)));
    assert!(e.to_string().len() < 200, "{e}");
}

#[test]
fn missing_and_unknown_properties() {
    let e = ProducerConfig::from_properties(Vec::<(&str, &str)>::new()).unwrap_err();
    assert_eq!(e, ConfigError::Missing { property: "metadata.broker.list" });
    assert_eq!(e.to_string(), "missing required property metadata.broker.list");
    let e = error_of(&[("metadata.broker.list", " , ")]);
    assert!(matches!(e, ConfigError::Invalid { property: "metadata.broker.list", .. }), "{e:?}");
    assert_eq!(error_of(&[("metadata.broker.list", "  ")]), ConfigError::Missing { property: "metadata.broker.list" });
    for unknown in ["linger", "bootstrap.server", "request_required_acks", "group.id", ""] {
        let e = error_of(&[(unknown, "1")]);
        assert_eq!(
            e,
            ConfigError::UnknownProperty { client: "producer", property: unknown.to_owned(), known: PROPERTIES }
        );
        let message = e.to_string();
        assert!(
            message.starts_with(&format!("unknown producer property {unknown:?}; known: metadata.broker.list, ")),
            "{message}"
        );
        assert!(message.ends_with("api.version.request, broker.version.fallback, enable.idempotence"), "{message}");
    }
}

#[test]
fn combinations_name_the_property_and_the_other_one() {
    // Kafka 0.8.2's ProducerConfig.validateBatchSize
    let e = error_of(&[("queue.buffering.max.messages", "100"), ("batch.num.messages", "101")]);
    assert_invalid(
        &e,
        "batch.num.messages",
        Some("101"),
        "must not exceed queue.buffering.max.messages (100)",
        "batch",
    );
    // the order of the properties does not matter
    let e = error_of(&[("batch.num.messages", "101"), ("queue.buffering.max.messages", "100")]);
    assert_invalid(&e, "batch.num.messages", Some("101"), "must not exceed queue.buffering.max.messages", "batch");
    // a smaller queue alone breaks the default batch of 200
    let e = error_of(&[("queue.buffering.max.messages", "50")]);
    assert_invalid(&e, "batch.num.messages", Some("200"), "(50)", "queue");
    // equal is fine
    let c =
        ProducerConfig::from_properties([BROKERS, ("queue.buffering.max.messages", "7"), ("batch.num.messages", "7")])
            .unwrap();
    assert_eq!((c.batch_num_messages(), c.queue_buffering_max_messages()), (7, 7));

    // the idempotent producer's needs, each named with the setting that breaks it
    let idem = |extra: &[(&'static str, &'static str)]| {
        let mut props = vec![("enable.idempotence", "true"), ("acks", "all")];
        props.extend_from_slice(extra);
        error_of(&props)
    };
    let e = error_of(&[("enable.idempotence", "true")]);
    assert_invalid(&e, "request.required.acks", Some("0"), "enable.idempotence needs -1 (acks=all)", "acks");
    let e = idem(&[("retries", "0")]);
    assert_invalid(&e, "message.send.max.retries", Some("0"), "enable.idempotence needs at least 1 retry", "retries");
    let e = idem(&[("max.in.flight.requests.per.connection", "6")]);
    assert_invalid(&e, "max.in.flight.requests.per.connection", Some("6"), "needs at most 5", "in flight");
    let e = idem(&[("api.version.request", "false")]);
    assert_invalid(&e, "api.version.request", Some("false"), "needs true", "negotiation");
    let c = ProducerConfig::from_properties([BROKERS, ("enable.idempotence", "true"), ("acks", "all")]).unwrap();
    assert!(c.enable_idempotence());
    // zstd needs negotiated versions (Kafka 2.1)
    let e = error_of(&[("compression.codec", "zstd"), ("api.version.request", "false")]);
    assert_invalid(&e, "compression.codec", Some("zstd"), "needs api.version.request=true", "zstd");
    let c = ProducerConfig::from_properties([BROKERS, ("compression.type", "zstd")]).unwrap();
    assert_eq!(c.compression_codec(), gregor_protocol::Compression::Zstd);
}

#[test]
fn the_builder_is_checked_the_same_way() {
    let b = || ProducerConfig::builder().metadata_broker_list("k1:9092");
    let big = Duration::from_millis(i32::MAX as u64 + 1);
    let cases: Vec<(ConfigError, &str, &str)> = vec![
        (b().request_required_acks(2).build().unwrap_err(), "request.required.acks", "must be -1"),
        (b().request_timeout(Duration::ZERO).build().unwrap_err(), "request.timeout.ms", "between 1 and"),
        (b().request_timeout(Duration::from_micros(999)).build().unwrap_err(), "request.timeout.ms", "between 1"),
        (b().request_timeout(big).build().unwrap_err(), "request.timeout.ms", "and 2147483647"),
        (b().queue_buffering_max(big).build().unwrap_err(), "queue.buffering.max.ms", "and 2147483647"),
        (b().queue_buffering_max_messages(0).build().unwrap_err(), "queue.buffering.max.messages", "between 1"),
        (
            b().queue_buffering_max_messages(1 << 31).batch_num_messages(1).build().unwrap_err(),
            "queue.buffering.max.messages",
            "and 2147483647",
        ),
        (
            b().queue_enqueue_timeout(EnqueueTimeout::Wait(big)).build().unwrap_err(),
            "queue.enqueue.timeout.ms",
            "and 2147483647",
        ),
        (b().batch_num_messages(0).build().unwrap_err(), "batch.num.messages", "between 1"),
        (b().batch_size(Some(1 << 31)).build().unwrap_err(), "batch.size", "between 0 and 2147483647"),
        (b().message_send_max_retries(u32::MAX).build().unwrap_err(), "message.send.max.retries", "and 2147483647"),
        (b().retry_backoff(Duration::MAX).build().unwrap_err(), "retry.backoff.ms", "and 2147483647"),
        (
            b().topic_metadata_refresh_interval(Some(big)).build().unwrap_err(),
            "topic.metadata.refresh.interval.ms",
            "and 2147483647",
        ),
        (b().compressed_topics(["ok", ""]).build().unwrap_err(), "compressed.topics", "topic \"\" must not be empty"),
        (b().client_id("ünïcode").build().unwrap_err(), "client.id", "contains 'ü'"),
        (b().send_buffer_bytes(0).build().unwrap_err(), "send.buffer.bytes", "between 1"),
        (
            ProducerConfig::builder().metadata_broker_list("k1:9092,[::1]").build().unwrap_err(),
            "metadata.broker.list",
            "[::1] has no valid port",
        ),
    ];
    for (e, property, reason) in &cases {
        assert_invalid(e, property, None, reason, property);
    }
    assert_eq!(
        ProducerConfig::builder().build().unwrap_err(),
        ConfigError::Missing { property: "metadata.broker.list" }
    );
    // what the builder accepts at the edges
    let c = b()
        .request_required_acks(-1)
        .request_timeout(Duration::from_millis(i32::MAX as u64))
        .queue_enqueue_timeout(EnqueueTimeout::Wait(Duration::from_millis(1)))
        .message_send_max_retries(i32::MAX as u32)
        .topic_metadata_refresh_interval(None)
        .client_id("A-z_0.9")
        .compressed_topics(["a.b-c_D"])
        .compression_codec(Compression::Lz4)
        .build()
        .unwrap();
    assert_eq!(c.compression_for("a.b-c_D"), Compression::Lz4);
}

/// The properties of `c`, as a comparable list.
fn props(c: &ProducerConfig) -> Vec<(&'static str, String)> {
    c.to_properties()
}

#[test]
fn every_property_round_trips_its_default() {
    let default = ProducerConfig::builder().metadata_broker_list("k1:9092").build().unwrap();
    let listed: Vec<&str> = DEFAULTS.iter().map(|(k, _)| *k).collect();
    assert_eq!(listed, PROPERTIES, "the table lists every property, in PROPERTIES' order");
    let expected: Vec<(&str, String)> = DEFAULTS.iter().map(|(k, v)| (*k, v.to_string())).collect();
    assert_eq!(props(&default), expected, "to_properties of the defaults is Kafka 0.8.2's table");
    for (property, value) in DEFAULTS {
        let one = ProducerConfig::from_properties([BROKERS, (property, value)])
            .unwrap_or_else(|e| panic!("{property}={value:?}: {e}"));
        assert_eq!(props(&one), expected, "{property}={value:?} is the default");
    }
    let all = ProducerConfig::from_properties(DEFAULTS.iter().copied()).unwrap();
    assert_eq!(props(&all), expected);
}

#[test]
fn a_changed_configuration_round_trips() {
    let changed: &[(&str, &str)] = &[
        ("metadata.broker.list", "a:1,b:2"),
        ("producer.type", "async"),
        ("request.required.acks", "-1"),
        ("request.timeout.ms", "1500"),
        ("queue.buffering.max.ms", "0"),
        ("queue.buffering.max.messages", "500"),
        ("queue.buffering.max.bytes", "1048576"),
        ("queue.enqueue.timeout.ms", "250"),
        ("batch.num.messages", "500"),
        ("batch.size", "16384"),
        ("message.send.max.retries", "0"),
        ("retry.backoff.ms", "20"),
        ("delivery.timeout.ms", "120000"),
        ("max.in.flight.requests.per.connection", "5"),
        ("topic.metadata.refresh.interval.ms", "-1"),
        ("compression.codec", "snappy"),
        ("compressed.topics", "a,b"),
        ("client.id", "app-1"),
        ("send.buffer.bytes", "65536"),
        ("partitioner.class", "round_robin"),
        ("serializer.class", "kafka.serializer.StringEncoder"),
        ("key.serializer.class", "kafka.serializer.NullEncoder"),
        ("api.version.request", "false"),
        ("broker.version.fallback", "0.9.0"),
        ("enable.idempotence", "false"),
    ];
    let c = ProducerConfig::from_properties(changed.iter().copied()).unwrap();
    let expected: Vec<(&str, String)> = changed.iter().map(|(k, v)| (*k, v.to_string())).collect();
    assert_eq!(props(&c), expected);
    let again = ProducerConfig::from_properties(c.to_properties()).unwrap();
    assert_eq!(props(&again), expected);
    // the other spellings Kafka accepts read as the same values
    let spelled = ProducerConfig::from_properties([
        BROKERS,
        ("compression.codec", "2"),
        ("topic.metadata.refresh.interval.ms", "-5"),
        ("partitioner.class", "roundrobin"),
    ])
    .unwrap();
    assert_eq!(spelled.compression_codec(), Compression::Snappy);
    assert_eq!(spelled.topic_metadata_refresh_interval(), None);
    let upper = ProducerConfig::from_properties([BROKERS, ("compression.codec", "GZIP")]).unwrap();
    assert_eq!(upper.compression_codec(), Compression::Gzip);
}

//! Configuration validation of the connection and metadata settings: every setting refuses its
//! invalid values with an error naming it and the reason; the messages every client crate
//! shares. Pure: no cluster, no runtime.

use std::time::Duration;

use gregor_net::config::{validate_broker_list, validate_client_id, MAX_TIMEOUT};
use gregor_net::{parse_broker_list, ConfigError, ConnectionConfig, MetadataConfig};

fn assert_invalid(result: Result<impl std::fmt::Debug, ConfigError>, property: &str, value: &str, reason: &str) {
    let e = result.expect_err(property);
    let ConfigError::Invalid { property: p, value: v, reason: r } = &e else { panic!("{property}: {e:?}") };
    assert_eq!((*p, v.as_str()), (property, value), "{e}");
    assert!(r.contains(reason), "{property}: reason {r:?} lacks {reason:?}");
    assert_eq!(e.to_string(), format!("invalid value {value:?} for {property}: {r}"));
}

#[test]
fn every_connection_setting_refuses_its_invalid_values() {
    let b = ConnectionConfig::builder;
    let over = MAX_TIMEOUT + Duration::from_millis(1);
    assert_invalid(b().client_id("a b").build(), "client.id", "a b", "contains ' ': only ASCII letters and digits");
    assert_invalid(b().client_id("tab\t").build(), "client.id", "tab\t", "contains '\\t'");
    assert_invalid(b().request_timeout(Duration::ZERO).build(), "socket.timeout.ms", "0", "must be above zero");
    assert_invalid(b().request_timeout(over).build(), "socket.timeout.ms", "4294967296", "at most 4294967295 ms");
    assert_invalid(
        b().request_timeout(Duration::MAX).build(),
        "socket.timeout.ms",
        &Duration::MAX.as_millis().to_string(),
        "at most",
    );
    assert_invalid(b().connect_timeout(Duration::ZERO).build(), "connect_timeout", "0", "must be above zero");
    assert_invalid(b().connect_timeout(over).build(), "connect_timeout", "4294967296", "at most 4294967295 ms");
    assert_invalid(b().max_frame_size(7).build(), "max_frame_size", "7", "between 8 and 2147483647 bytes");
    assert_invalid(b().max_frame_size(1 << 31).build(), "max_frame_size", "2147483648", "between 8 and 2147483647");
    assert_invalid(
        b().send_buffer_bytes(Some(0)).build(),
        "send.buffer.bytes",
        "0",
        "above zero (None for the OS default)",
    );
    assert_invalid(
        b().send_buffer_bytes(Some(1 << 31)).build(),
        "send.buffer.bytes",
        "2147483648",
        "at most 2147483647",
    );
    assert_invalid(b().receive_buffer_bytes(Some(0)).build(), "socket.receive.buffer.bytes", "0", "above zero");
    assert_invalid(
        b().receive_buffer_bytes(Some(1 << 31)).build(),
        "socket.receive.buffer.bytes",
        "2147483648",
        "at most 2147483647",
    );
    assert_invalid(b().max_in_flight(0).build(), "max_in_flight", "0", "between 1 and 1000000");
    assert_invalid(b().max_in_flight(1_000_001).build(), "max_in_flight", "1000001", "between 1 and 1000000");
    // the edges that work
    let c = b()
        .client_id("")
        .request_timeout(MAX_TIMEOUT)
        .connect_timeout(Duration::from_millis(1))
        .max_frame_size(8)
        .send_buffer_bytes(None)
        .receive_buffer_bytes(Some(i32::MAX as usize))
        .max_in_flight(1_000_000)
        .build()
        .unwrap();
    assert_eq!((c.client_id(), c.max_frame_size(), c.max_in_flight()), ("", 8, 1_000_000));
}

#[test]
fn every_metadata_setting_refuses_its_invalid_values() {
    let b = MetadataConfig::builder;
    assert_invalid(b().refresh_rounds(0).build(), "refresh_rounds", "0", "must be at least 1");
    assert_invalid(
        b().retry_backoff(Duration::from_secs(5)).build(),
        "retry_backoff_max",
        "1000",
        "must be at least retry.backoff.ms (5000 ms)",
    );
    let over = MAX_TIMEOUT + Duration::from_millis(1);
    assert_invalid(
        b().retry_backoff(over).retry_backoff_max(over).build(),
        "retry.backoff.ms",
        "4294967296",
        "at most",
    );
    assert_invalid(b().retry_backoff_max(over).build(), "retry_backoff_max", "4294967296", "at most 4294967295 ms");
    // an interval of "never" (the producer's negative topic.metadata.refresh.interval.ms) is fine
    let c = b().refresh_interval(Duration::MAX).retry_backoff(Duration::ZERO).build().unwrap();
    assert_eq!(c.refresh_interval(), Duration::MAX);
}

#[test]
fn client_ids_follow_kafkas_characters() {
    for ok in ["", "app", "A-z_0.9", &"x".repeat(32_767)] {
        validate_client_id(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
    }
    for (bad, reason) in [
        ("a b", "contains ' '"),
        ("a/b", "contains '/'"),
        ("a:b", "contains ':'"),
        ("café", "contains 'é'"),
        ("a\0", "contains '\\0'"),
    ] {
        assert_invalid(validate_client_id(bad), "client.id", bad, reason);
    }
    let long = "x".repeat(32_768);
    let e = validate_client_id(&long).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("invalid value \"{}... (32768 bytes)\" for client.id: longer than 32767 bytes", "x".repeat(64))
    );
}

#[test]
fn broker_lists_refuse_what_cannot_be_dialled() {
    for (list, reason) in [
        ("", "no broker given"),
        (" , ", "no broker given"),
        ("k1", "k1 is not host:port"),
        ("k1:9092,k2", "k2 is not host:port"),
        (":9092", ":9092 has no host"),
        ("[]:9092", "[]:9092 has no host"),
        ("k1:0", "k1:0 has no valid port (1 to 65535)"),
        ("k1:65536", "has no valid port"),
        ("k1:-1", "has no valid port"),
        ("k1:port", "has no valid port"),
        ("[::1]", "[::1] has no valid port"),
    ] {
        assert_invalid(parse_broker_list(list), "metadata.broker.list", list, reason);
    }
    assert_eq!(parse_broker_list(" k1:1 ,[::1]:2,k1:1").unwrap(), ["k1:1", "[::1]:2"]);
    assert_eq!(parse_broker_list("k1:65535").unwrap(), ["k1:65535"]);
    // a required list (the producer's, the simple consumer's): blank is missing, the rest as above
    for blank in ["", "  "] {
        assert_eq!(validate_broker_list(blank), Err(ConfigError::Missing { property: "metadata.broker.list" }));
    }
    assert_invalid(validate_broker_list(" , "), "metadata.broker.list", " , ", "no broker given");
    assert_invalid(validate_broker_list("k1"), "metadata.broker.list", "k1", "k1 is not host:port");
    assert_eq!(validate_broker_list("k1:1, k2:2").unwrap(), ["k1:1", "k2:2"]);
}

#[test]
fn the_three_messages_every_client_shares() {
    let cases = [
        (
            ConfigError::Invalid {
                property: "request.required.acks",
                value: "2".into(),
                reason: "must be -1, 0 or 1".into(),
            },
            "invalid value \"2\" for request.required.acks: must be -1, 0 or 1",
        ),
        (ConfigError::Missing { property: "metadata.broker.list" }, "missing required property metadata.broker.list"),
        (
            ConfigError::UnknownProperty {
                client: "simple-consumer",
                property: "group.id".into(),
                known: &["metadata.broker.list", "client.id"],
            },
            "unknown simple-consumer property \"group.id\"; known: metadata.broker.list, client.id",
        ),
    ];
    for (e, message) in cases {
        assert_eq!(e.to_string(), message);
    }
}

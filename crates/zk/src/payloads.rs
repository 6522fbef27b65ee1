//! The data Kafka 0.8.2 keeps in its znodes: JSON documents, plain decimal numbers and strings.
//!
//! Every JSON type has `to_json` (the exact bytes Kafka writes, fields in the order of
//! DESIGN.md section 3) and `from_json` (any field order, unknown fields ignored, so the
//! documents written by a real Kafka 0.8.2 broker, whose Scala maps come out in hash order,
//! parse too). Timestamps are milliseconds since the epoch written as a decimal *string*, as
//! Kafka writes them; `from_json` also accepts a JSON number there.
//!
//! | znode | type |
//! |---|---|
//! | [`/brokers/ids/N`](crate::paths::broker) | [`BrokerRegistration`] |
//! | [`/brokers/topics/T`](crate::paths::topic) | [`TopicAssignment`] |
//! | [`/brokers/topics/T/partitions/P/state`](crate::paths::partition_state) | [`PartitionState`] |
//! | [`/controller`](crate::paths::CONTROLLER) | [`ControllerRegistration`] |
//! | [`/controller_epoch`](crate::paths::CONTROLLER_EPOCH) | [`encode_controller_epoch`] |
//! | [`/config/topics/T`](crate::paths::topic_config) | [`TopicConfig`] |
//! | [`/config/changes/config_change_N`](crate::paths::CONFIG_CHANGES) | [`encode_config_change`] |
//! | [`/admin/reassign_partitions`](crate::paths::REASSIGN_PARTITIONS) | [`ReassignPartitions`] |
//! | [`/admin/preferred_replica_election`](crate::paths::PREFERRED_REPLICA_ELECTION) | [`PreferredReplicaElection`] |
//! | [`/consumers/G/ids/C`](crate::paths::consumer_id) | [`ConsumerRegistration`] |
//! | [`/consumers/G/owners/T/P`](crate::paths::owner) | the owner's thread id, plain text |
//! | [`/consumers/G/offsets/T/P`](crate::paths::offset) | [`encode_offset`] |
//!
//! ```
//! use gregor_zk::payloads::{BrokerRegistration, TopicAssignment};
//!
//! let broker = BrokerRegistration::new("127.0.0.1", 9092, 1234);
//! assert_eq!(
//!     broker.to_json(),
//!     br#"{"version":1,"host":"127.0.0.1","port":9092,"jmx_port":-1,"timestamp":"1234"}"#
//! );
//!
//! // What a real Kafka 0.8.2 broker writes: same fields, another order.
//! let real = br#"{"jmx_port":-1,"timestamp":"1427000000000","host":"kafka1","version":1,"port":9092}"#;
//! assert_eq!(BrokerRegistration::from_json(real)?.host, "kafka1");
//!
//! let topic = TopicAssignment::from_json(br#"{"version":1,"partitions":{"0":[1,2],"1":[2,0]}}"#)?;
//! assert_eq!(topic.partitions[&1], vec![2, 0]);
//! # Ok::<(), gregor_zk::Error>(())
//! ```

use std::collections::BTreeMap;

use gregor_protocol::TopicPartition;
use serde::{Deserialize, Deserializer, Serialize};

use crate::{Error, Result};

/// The `version` Kafka 0.8.2 writes in every JSON znode.
pub const VERSION: i32 = 1;

/// The `jmx_port` of a broker registration when JMX is off (Kafka's default).
pub const NO_JMX_PORT: i32 = -1;

/// [`ConsumerRegistration::pattern`] of a consumer subscribed to a fixed list of topics.
pub const PATTERN_STATIC: &str = "static";
/// [`ConsumerRegistration::pattern`] of a consumer subscribed to a topic whitelist regex
/// (the subscription key is the regex).
pub const PATTERN_WHITE_LIST: &str = "white_list";
/// [`ConsumerRegistration::pattern`] of a consumer subscribed to a topic blacklist regex
/// (the subscription key is the regex).
pub const PATTERN_BLACK_LIST: &str = "black_list";

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    // These types hold only strings, integers, sequences and maps with string or integer
    // keys: serde_json cannot fail on them.
    serde_json::to_vec(value).expect("znode payloads always serialize")
}

fn decode<'de, T: Deserialize<'de>>(bytes: &'de [u8], what: &'static str) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|source| Error::Json { what, source })
}

/// Kafka writes timestamps as decimal strings; accept a JSON number too.
fn string_or_integer<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum StringOrInteger {
        String(String),
        Integer(i64),
    }
    Ok(match StringOrInteger::deserialize(deserializer)? {
        StringOrInteger::String(s) => s,
        StringOrInteger::Integer(i) => i.to_string(),
    })
}

fn parse_ms(timestamp: &str) -> Option<i64> {
    timestamp.trim().parse().ok()
}

macro_rules! json_methods {
    ($ty:ident, $what:literal) => {
        impl $ty {
            /// The JSON bytes Kafka 0.8.2 writes into the znode, fields in Kafka's order.
            pub fn to_json(&self) -> Vec<u8> {
                encode(self)
            }

            #[doc = concat!("Parses the JSON of a ", $what, " znode, in any field order; unknown fields are ignored.")]
            ///
            /// # Errors
            ///
            /// [`Error::Json`] naming the znode type, with serde's message as its source, when
            /// the bytes are not such a JSON document.
            pub fn from_json(bytes: &[u8]) -> Result<Self> {
                decode(bytes, $what)
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------

/// `/brokers/ids/N`: where broker `N` accepts client connections. Kafka writes
/// `{"version":1,"host":h,"port":p,"jmx_port":-1,"timestamp":"<ms>"}` when the broker starts;
/// clients read it to turn the broker ids of metadata and partition state into addresses.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BrokerRegistration {
    /// Format version, [`VERSION`] (1) in Kafka 0.8.2.
    pub version: i32,
    /// The host name clients connect to (`advertised.host.name`, else `host.name`, else the
    /// machine's canonical host name).
    pub host: String,
    /// The port clients connect to (`advertised.port`, else `port`).
    pub port: i32,
    /// The broker's JMX port, [`NO_JMX_PORT`] (-1) when JMX is off.
    pub jmx_port: i32,
    /// When the broker registered, in milliseconds since the epoch, as a decimal string.
    #[serde(deserialize_with = "string_or_integer")]
    pub timestamp: String,
}

json_methods!(BrokerRegistration, "broker registration (/brokers/ids/N)");

impl BrokerRegistration {
    /// A version 1 registration without JMX, registered at `timestamp_ms`.
    pub fn new(host: impl Into<String>, port: i32, timestamp_ms: i64) -> Self {
        BrokerRegistration {
            version: VERSION,
            host: host.into(),
            port,
            jmx_port: NO_JMX_PORT,
            timestamp: timestamp_ms.to_string(),
        }
    }

    /// The timestamp in milliseconds, `None` when it is not a decimal integer.
    pub fn timestamp_ms(&self) -> Option<i64> {
        parse_ms(&self.timestamp)
    }
}

// ---------------------------------------------------------------------------------------------

/// `/brokers/topics/T`: the replica assignment of a topic, partition id -> replica broker ids,
/// the first replica being the preferred leader. Kafka writes
/// `{"version":1,"partitions":{"0":[1,2],"1":[2,0]}}` (JSON keys are the partition ids as
/// decimal strings, in numeric order here). The controller creates the partitions it lists.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TopicAssignment {
    /// Format version, [`VERSION`] (1) in Kafka 0.8.2.
    pub version: i32,
    /// Partition id -> replica broker ids (preferred leader first).
    pub partitions: BTreeMap<i32, Vec<i32>>,
}

json_methods!(TopicAssignment, "topic assignment (/brokers/topics/T)");

impl TopicAssignment {
    /// A version 1 assignment.
    pub fn new(partitions: BTreeMap<i32, Vec<i32>>) -> Self {
        TopicAssignment { version: VERSION, partitions }
    }
}

// ---------------------------------------------------------------------------------------------

/// `/brokers/topics/T/partitions/P/state`: who leads a partition and which replicas are in sync.
/// Kafka writes
/// `{"version":1,"leader":L,"leader_epoch":E,"controller_epoch":C,"isr":[...]}`; the
/// controller rewrites it on every election, the leader when the ISR changes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PartitionState {
    /// Format version, [`VERSION`] (1) in Kafka 0.8.2.
    pub version: i32,
    /// The leader's broker id, -1 when the partition has no leader.
    pub leader: i32,
    /// Incremented at every leader change.
    pub leader_epoch: i32,
    /// The epoch of the controller that wrote this state.
    pub controller_epoch: i32,
    /// The in-sync replicas (broker ids), leader included.
    pub isr: Vec<i32>,
}

json_methods!(PartitionState, "partition state (/brokers/topics/T/partitions/P/state)");

impl PartitionState {
    /// A version 1 partition state.
    pub fn new(leader: i32, leader_epoch: i32, controller_epoch: i32, isr: Vec<i32>) -> Self {
        PartitionState { version: VERSION, leader, leader_epoch, controller_epoch, isr }
    }
}

// ---------------------------------------------------------------------------------------------

/// `/controller`: the broker that won the controller election. Kafka writes
/// `{"version":1,"brokerid":N,"timestamp":"<ms>"}` into the ephemeral znode.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ControllerRegistration {
    /// Format version, [`VERSION`] (1) in Kafka 0.8.2.
    pub version: i32,
    /// The controller's broker id.
    pub brokerid: i32,
    /// When it became controller, in milliseconds since the epoch, as a decimal string.
    #[serde(deserialize_with = "string_or_integer")]
    pub timestamp: String,
}

json_methods!(ControllerRegistration, "controller registration (/controller)");

impl ControllerRegistration {
    /// A version 1 registration of broker `brokerid` at `timestamp_ms`.
    pub fn new(brokerid: i32, timestamp_ms: i64) -> Self {
        ControllerRegistration { version: VERSION, brokerid, timestamp: timestamp_ms.to_string() }
    }

    /// The timestamp in milliseconds, `None` when it is not a decimal integer.
    pub fn timestamp_ms(&self) -> Option<i64> {
        parse_ms(&self.timestamp)
    }
}

// ---------------------------------------------------------------------------------------------

/// `/config/topics/T`: a topic's configuration overrides (`retention.ms`, `cleanup.policy`,
/// ...), all values strings. Kafka writes `{"version":1,"config":{"retention.ms":"1000"}}`;
/// brokers apply it when a change notice appears under `/config/changes`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TopicConfig {
    /// Format version, [`VERSION`] (1) in Kafka 0.8.2.
    pub version: i32,
    /// Property name -> value (keys in sorted order here).
    pub config: BTreeMap<String, String>,
}

json_methods!(TopicConfig, "topic config (/config/topics/T)");

impl TopicConfig {
    /// A version 1 topic configuration.
    pub fn new(config: BTreeMap<String, String>) -> Self {
        TopicConfig { version: VERSION, config }
    }
}

/// The data of a `/config/changes/config_change_N` notice: the topic name as a JSON string
/// (`"T"`, quotes included), as Kafka 0.8.2's `AdminUtils.changeTopicConfig` writes it.
pub fn encode_config_change(topic: &str) -> Vec<u8> {
    encode(&topic)
}

/// Parses a `/config/changes/config_change_N` notice into the topic name.
///
/// # Errors
///
/// [`Error::Json`] when the data is not a JSON string.
pub fn decode_config_change(bytes: &[u8]) -> Result<String> {
    decode(bytes, "config change notice (/config/changes/config_change_N)")
}

// ---------------------------------------------------------------------------------------------

/// One partition of a [`ReassignPartitions`] request and its new replica list.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PartitionReassignment {
    /// The topic.
    pub topic: String,
    /// The partition id.
    pub partition: i32,
    /// The new replicas (broker ids), preferred leader first.
    pub replicas: Vec<i32>,
}

impl PartitionReassignment {
    /// The partition this move is about.
    pub fn topic_partition(&self) -> TopicPartition {
        TopicPartition::new(self.topic.clone(), self.partition)
    }
}

/// `/admin/reassign_partitions`: the partition moves the controller should make. Kafka writes
/// `{"version":1,"partitions":[{"topic":t,"partition":p,"replicas":[...]}]}`; the controller
/// removes each partition as its move completes and deletes the znode at the end.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReassignPartitions {
    /// Format version, [`VERSION`] (1) in Kafka 0.8.2.
    pub version: i32,
    /// The moves still pending.
    pub partitions: Vec<PartitionReassignment>,
}

json_methods!(ReassignPartitions, "partition reassignment (/admin/reassign_partitions)");

impl ReassignPartitions {
    /// A version 1 reassignment request.
    pub fn new(partitions: Vec<PartitionReassignment>) -> Self {
        ReassignPartitions { version: VERSION, partitions }
    }
}

// ---------------------------------------------------------------------------------------------

/// `/admin/preferred_replica_election`: the partitions whose leadership the controller should
/// move back to their preferred (first) replica. Kafka writes
/// `{"version":1,"partitions":[{"topic":t,"partition":p}]}` and the controller deletes the
/// znode when done.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PreferredReplicaElection {
    /// Format version, [`VERSION`] (1) in Kafka 0.8.2.
    pub version: i32,
    /// The partitions to elect, each written as `{"topic":t,"partition":p}`.
    pub partitions: Vec<TopicPartition>,
}

json_methods!(PreferredReplicaElection, "preferred replica election (/admin/preferred_replica_election)");

impl PreferredReplicaElection {
    /// A version 1 election request.
    pub fn new(partitions: Vec<TopicPartition>) -> Self {
        PreferredReplicaElection { version: VERSION, partitions }
    }
}

// ---------------------------------------------------------------------------------------------

/// `/consumers/G/ids/C`: a group member's subscription. Kafka writes
/// `{"version":1,"subscription":{"T":n},"pattern":"static","timestamp":"<ms>"}`: for a
/// `static` subscription the keys are topics and the values the number of streams; for
/// `white_list`/`black_list` the single key is the topic filter regex. Every member reads all
/// registrations to compute the same partition assignment.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ConsumerRegistration {
    /// Format version, [`VERSION`] (1) in Kafka 0.8.2.
    pub version: i32,
    /// Topic (or filter regex) -> number of streams.
    pub subscription: BTreeMap<String, i32>,
    /// [`PATTERN_STATIC`], [`PATTERN_WHITE_LIST`] or [`PATTERN_BLACK_LIST`].
    pub pattern: String,
    /// When the member registered, in milliseconds since the epoch, as a decimal string.
    #[serde(deserialize_with = "string_or_integer")]
    pub timestamp: String,
}

json_methods!(ConsumerRegistration, "consumer registration (/consumers/G/ids/C)");

impl ConsumerRegistration {
    /// A version 1 registration.
    pub fn new(subscription: BTreeMap<String, i32>, pattern: impl Into<String>, timestamp_ms: i64) -> Self {
        ConsumerRegistration {
            version: VERSION,
            subscription,
            pattern: pattern.into(),
            timestamp: timestamp_ms.to_string(),
        }
    }

    /// The timestamp in milliseconds, `None` when it is not a decimal integer.
    pub fn timestamp_ms(&self) -> Option<i64> {
        parse_ms(&self.timestamp)
    }
}

// ---------------------------------------------------------------------------------------------

fn decode_decimal<T: std::str::FromStr>(bytes: &[u8], what: &'static str) -> Result<T> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| Error::InvalidNumber { what, text: String::from_utf8_lossy(bytes).into_owned() })
}

/// The data of `/consumers/G/offsets/T/P`: the offset of the next message to read, as a plain
/// decimal string (`b"42"`), as Kafka's ZooKeeper offset storage writes it.
pub fn encode_offset(offset: i64) -> Vec<u8> {
    offset.to_string().into_bytes()
}

/// Parses the data of `/consumers/G/offsets/T/P` (surrounding whitespace is ignored).
///
/// # Errors
///
/// [`Error::InvalidNumber`] when the data is not a decimal 64-bit integer.
pub fn decode_offset(bytes: &[u8]) -> Result<i64> {
    decode_decimal(bytes, "consumer offset (/consumers/G/offsets/T/P)")
}

/// The data of `/controller_epoch`: the epoch as a plain decimal integer (`b"3"`).
pub fn encode_controller_epoch(epoch: i32) -> Vec<u8> {
    epoch.to_string().into_bytes()
}

/// Parses the data of `/controller_epoch` (surrounding whitespace is ignored).
///
/// # Errors
///
/// [`Error::InvalidNumber`] when the data is not a decimal 32-bit integer.
pub fn decode_controller_epoch(bytes: &[u8]) -> Result<i32> {
    decode_decimal(bytes, "controller epoch (/controller_epoch)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(bytes: &[u8]) -> &str {
        std::str::from_utf8(bytes).unwrap()
    }

    fn json_error(err: Error) -> (String, String) {
        match &err {
            Error::Json { .. } => {
                let source = std::error::Error::source(&err).expect("serde source");
                (err.to_string(), source.to_string())
            }
            other => panic!("expected Error::Json, got {other:?}"),
        }
    }

    #[test]
    fn broker_registration() {
        let b = BrokerRegistration::new("127.0.0.1", 9092, 1234);
        assert_eq!(b.to_json(), br#"{"version":1,"host":"127.0.0.1","port":9092,"jmx_port":-1,"timestamp":"1234"}"#);
        assert_eq!(BrokerRegistration::from_json(&b.to_json()).unwrap(), b);
        assert_eq!(b.timestamp_ms(), Some(1234));
    }

    #[test]
    fn broker_registration_as_kafka_writes_it() {
        // Kafka 0.8.2.2's ZkUtils.registerBrokerInZk, Scala map order.
        let real = br#"{"jmx_port":-1,"timestamp":"1427000000000","host":"kafka-1.example","version":1,"port":9092}"#;
        let b = BrokerRegistration::from_json(real).unwrap();
        assert_eq!(
            b,
            BrokerRegistration {
                version: 1,
                host: "kafka-1.example".into(),
                port: 9092,
                jmx_port: -1,
                timestamp: "1427000000000".into(),
            }
        );
        // Re-encoded in our (DESIGN.md) order.
        assert_eq!(
            json(&b.to_json()),
            r#"{"version":1,"host":"kafka-1.example","port":9092,"jmx_port":-1,"timestamp":"1427000000000"}"#
        );
        // Later Kafka versions add fields: ignored. A numeric timestamp is accepted.
        let later = br#"{"jmx_port":9999,"timestamp":1427000000001,"endpoints":["PLAINTEXT://h:9093"],"host":"h","version":2,"port":9093}"#;
        let b = BrokerRegistration::from_json(later).unwrap();
        assert_eq!((b.version, b.port, b.jmx_port), (2, 9093, 9999));
        assert_eq!(b.timestamp_ms(), Some(1427000000001));
    }

    #[test]
    fn broker_registration_errors() {
        let (msg, source) = json_error(BrokerRegistration::from_json(b"not json").unwrap_err());
        assert_eq!(msg, "invalid broker registration (/brokers/ids/N) JSON");
        assert!(source.contains("expected ident"), "{source}");
        let (_, source) = json_error(BrokerRegistration::from_json(br#"{"version":1,"host":"h"}"#).unwrap_err());
        assert!(source.contains("missing field `port`"), "{source}");
        let (_, source) = json_error(
            BrokerRegistration::from_json(br#"{"version":1,"host":"h","port":"9092","jmx_port":-1,"timestamp":"1"}"#)
                .unwrap_err(),
        );
        assert!(source.contains("invalid type"), "{source}");
        json_error(BrokerRegistration::from_json(b"").unwrap_err());
    }

    #[test]
    fn topic_assignment() {
        let raw = br#"{"version":1,"partitions":{"0":[1,2],"1":[2,0]}}"#;
        let t = TopicAssignment::from_json(raw).unwrap();
        assert_eq!(t.version, 1);
        assert_eq!(t.partitions, BTreeMap::from([(0, vec![1, 2]), (1, vec![2, 0])]));
        assert_eq!(t.to_json(), raw);

        // Numeric order, not string order ("10" after "2").
        let t = TopicAssignment::new((0..12).map(|p| (p, vec![p % 3])).collect());
        assert_eq!(
            json(&t.to_json()),
            r#"{"version":1,"partitions":{"0":[0],"1":[1],"2":[2],"3":[0],"4":[1],"5":[2],"6":[0],"7":[1],"8":[2],"9":[0],"10":[1],"11":[2]}}"#
        );
        // Kafka's hash order parses the same.
        let shuffled = br#"{"partitions":{"2":[0],"0":[1],"1":[2]},"version":1}"#;
        let t = TopicAssignment::from_json(shuffled).unwrap();
        assert_eq!(json(&t.to_json()), r#"{"version":1,"partitions":{"0":[1],"1":[2],"2":[0]}}"#);
        let (msg, source) =
            json_error(TopicAssignment::from_json(br#"{"version":1,"partitions":{"x":[1]}}"#).unwrap_err());
        assert_eq!(msg, "invalid topic assignment (/brokers/topics/T) JSON");
        assert!(!source.is_empty());
        json_error(TopicAssignment::from_json(br#"{"version":1,"partitions":[1]}"#).unwrap_err());
    }

    #[test]
    fn partition_state() {
        let s = PartitionState::new(1, 4, 2, vec![1, 0]);
        assert_eq!(json(&s.to_json()), r#"{"version":1,"leader":1,"leader_epoch":4,"controller_epoch":2,"isr":[1,0]}"#);
        let real = br#"{"controller_epoch":2,"leader":1,"version":1,"leader_epoch":4,"isr":[1,0]}"#;
        assert_eq!(PartitionState::from_json(real).unwrap(), s);
        let no_leader = PartitionState::new(-1, 5, 2, vec![]);
        assert_eq!(
            json(&no_leader.to_json()),
            r#"{"version":1,"leader":-1,"leader_epoch":5,"controller_epoch":2,"isr":[]}"#
        );
        let (msg, _) = json_error(PartitionState::from_json(br#"{"leader":1}"#).unwrap_err());
        assert_eq!(msg, "invalid partition state (/brokers/topics/T/partitions/P/state) JSON");
    }

    #[test]
    fn controller_registration() {
        let c = ControllerRegistration::new(2, 1427000000000);
        assert_eq!(json(&c.to_json()), r#"{"version":1,"brokerid":2,"timestamp":"1427000000000"}"#);
        let real = br#"{"version":1,"brokerid":2,"timestamp":"1427000000000"}"#;
        assert_eq!(ControllerRegistration::from_json(real).unwrap(), c);
        let reordered = br#"{"timestamp":"1427000000000","brokerid":2,"version":1}"#;
        assert_eq!(ControllerRegistration::from_json(reordered).unwrap(), c);
        assert_eq!(c.timestamp_ms(), Some(1427000000000));
        let (msg, _) = json_error(ControllerRegistration::from_json(b"2").unwrap_err());
        assert_eq!(msg, "invalid controller registration (/controller) JSON");
    }

    #[test]
    fn controller_epoch() {
        assert_eq!(encode_controller_epoch(7), b"7");
        assert_eq!(decode_controller_epoch(b"7").unwrap(), 7);
        assert_eq!(decode_controller_epoch(b" 12\n").unwrap(), 12);
        let err = decode_controller_epoch(b"seven").unwrap_err();
        assert!(matches!(err, Error::InvalidNumber { .. }));
        assert_eq!(
            err.to_string(),
            "invalid controller epoch (/controller_epoch) \"seven\": expected a decimal integer"
        );
        decode_controller_epoch(b"").unwrap_err();
        decode_controller_epoch(b"99999999999").unwrap_err();
    }

    #[test]
    fn topic_config() {
        let c = TopicConfig::new(BTreeMap::from([
            ("segment.bytes".to_owned(), "1048576".to_owned()),
            ("cleanup.policy".to_owned(), "compact".to_owned()),
        ]));
        assert_eq!(
            json(&c.to_json()),
            r#"{"version":1,"config":{"cleanup.policy":"compact","segment.bytes":"1048576"}}"#
        );
        assert_eq!(TopicConfig::from_json(&c.to_json()).unwrap(), c);
        let empty = TopicConfig::new(BTreeMap::new());
        assert_eq!(json(&empty.to_json()), r#"{"version":1,"config":{}}"#);
        let (msg, _) = json_error(TopicConfig::from_json(br#"{"version":1,"config":{"a":1}}"#).unwrap_err());
        assert_eq!(msg, "invalid topic config (/config/topics/T) JSON");
    }

    #[test]
    fn config_change_notice() {
        assert_eq!(encode_config_change("events"), br#""events""#);
        assert_eq!(decode_config_change(br#""events""#).unwrap(), "events");
        let (msg, _) = json_error(decode_config_change(b"events").unwrap_err());
        assert_eq!(msg, "invalid config change notice (/config/changes/config_change_N) JSON");
    }

    #[test]
    fn reassign_partitions() {
        let r = ReassignPartitions::new(vec![
            PartitionReassignment { topic: "events".into(), partition: 0, replicas: vec![1, 2] },
            PartitionReassignment { topic: "logs".into(), partition: 3, replicas: vec![0] },
        ]);
        assert_eq!(
            json(&r.to_json()),
            r#"{"version":1,"partitions":[{"topic":"events","partition":0,"replicas":[1,2]},{"topic":"logs","partition":3,"replicas":[0]}]}"#
        );
        let real = br#"{"version":1,"partitions":[{"topic":"events","partition":0,"replicas":[1,2]},{"partition":3,"replicas":[0],"topic":"logs"}]}"#;
        assert_eq!(ReassignPartitions::from_json(real).unwrap(), r);
        assert_eq!(r.partitions[1].topic_partition(), TopicPartition::new("logs", 3));
        let (msg, _) =
            json_error(ReassignPartitions::from_json(br#"{"version":1,"partitions":[{"topic":"t"}]}"#).unwrap_err());
        assert_eq!(msg, "invalid partition reassignment (/admin/reassign_partitions) JSON");
    }

    #[test]
    fn preferred_replica_election() {
        let e = PreferredReplicaElection::new(vec![TopicPartition::new("events", 1), TopicPartition::new("events", 0)]);
        assert_eq!(
            json(&e.to_json()),
            r#"{"version":1,"partitions":[{"topic":"events","partition":1},{"topic":"events","partition":0}]}"#
        );
        let real = br#"{"partitions":[{"partition":1,"topic":"events"},{"topic":"events","partition":0}],"version":1}"#;
        assert_eq!(PreferredReplicaElection::from_json(real).unwrap(), e);
        // an entry's unknown fields are ignored; a missing or out-of-range partition is not
        let later = br#"{"version":1,"partitions":[{"topic":"events","partition":1,"leader":2}]}"#;
        assert_eq!(PreferredReplicaElection::from_json(later).unwrap().partitions, [TopicPartition::new("events", 1)]);
        let (_, source) = json_error(
            PreferredReplicaElection::from_json(br#"{"version":1,"partitions":[{"topic":"t"}]}"#).unwrap_err(),
        );
        assert!(source.contains("missing field `partition`"), "{source}");
        json_error(
            PreferredReplicaElection::from_json(
                br#"{"version":1,"partitions":[{"topic":"t","partition":2147483648}]}"#,
            )
            .unwrap_err(),
        );
        let (msg, _) = json_error(PreferredReplicaElection::from_json(b"{").unwrap_err());
        assert_eq!(msg, "invalid preferred replica election (/admin/preferred_replica_election) JSON");
    }

    #[test]
    fn consumer_registration() {
        let c = ConsumerRegistration::new(
            BTreeMap::from([("events".to_owned(), 2), ("logs".to_owned(), 1)]),
            PATTERN_STATIC,
            1427000000000,
        );
        assert_eq!(
            json(&c.to_json()),
            r#"{"version":1,"subscription":{"events":2,"logs":1},"pattern":"static","timestamp":"1427000000000"}"#
        );
        let real =
            br#"{"pattern":"static","subscription":{"logs":1,"events":2},"timestamp":"1427000000000","version":1}"#;
        assert_eq!(ConsumerRegistration::from_json(real).unwrap(), c);
        assert_eq!(c.timestamp_ms(), Some(1427000000000));

        let filter = ConsumerRegistration::new(BTreeMap::from([("events\\..*".to_owned(), 1)]), PATTERN_WHITE_LIST, 5);
        assert_eq!(
            json(&filter.to_json()),
            r#"{"version":1,"subscription":{"events\\..*":1},"pattern":"white_list","timestamp":"5"}"#
        );
        assert_eq!(ConsumerRegistration::from_json(&filter.to_json()).unwrap(), filter);
        assert_eq!(PATTERN_BLACK_LIST, "black_list");
        let (msg, _) = json_error(ConsumerRegistration::from_json(b"[]").unwrap_err());
        assert_eq!(msg, "invalid consumer registration (/consumers/G/ids/C) JSON");
    }

    #[test]
    fn offsets() {
        assert_eq!(encode_offset(0), b"0");
        assert_eq!(encode_offset(1234567890123), b"1234567890123");
        assert_eq!(encode_offset(-1), b"-1");
        assert_eq!(decode_offset(b"1234567890123").unwrap(), 1234567890123);
        assert_eq!(decode_offset(b"42\n").unwrap(), 42);
        let err = decode_offset(b"4x2").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid consumer offset (/consumers/G/offsets/T/P) \"4x2\": expected a decimal integer"
        );
        decode_offset(b"").unwrap_err();
        decode_offset(&[0xff, 0xfe]).unwrap_err();
        decode_offset(b"1.5").unwrap_err();
    }

    #[test]
    fn hostile_input_does_not_panic() {
        let inputs: [&[u8]; 6] = [
            b"",
            b"\x00\xff",
            b"{\"version\":1e999}",
            b"[[[[[[[[[[[[[[[[[[[[",
            b"{\"version\":1,\"partitions\":{\"99999999999\":[1]}}",
            b"null",
        ];
        for input in inputs {
            let _ = BrokerRegistration::from_json(input);
            let _ = TopicAssignment::from_json(input);
            let _ = PartitionState::from_json(input);
            let _ = ControllerRegistration::from_json(input);
            let _ = TopicConfig::from_json(input);
            let _ = ReassignPartitions::from_json(input);
            let _ = PreferredReplicaElection::from_json(input);
            let _ = ConsumerRegistration::from_json(input);
            let _ = decode_offset(input);
            let _ = decode_controller_epoch(input);
            let _ = decode_config_change(input);
        }
    }
}

//! Kafka 0.8.2's znode paths, as `ZkUtils`, `ZKGroupDirs` and `ZKGroupTopicDirs` spell them.
//!
//! Pure functions and constants, no IO. Every path is absolute (it starts with `/`) and is
//! relative to the chroot of the `zookeeper.connect` string, if any: a cluster configured with
//! `zookeeper.connect=zk:2181/kafka` keeps its brokers under `/kafka/brokers/ids`, and a
//! [`ZkClient`](crate::ZkClient) connected to `zk:2181/kafka` reaches them as
//! [`BROKER_IDS`].
//!
//! The functions only format: they do not check their arguments. Check a topic name with
//! [`validate_topic_name`] before it reaches ZooKeeper (Kafka refuses the same names), and a
//! path handed to the client is checked by the client itself ([`validate_path`]).
//!
//! ```
//! use gregor_zk::paths;
//!
//! assert_eq!(paths::broker(1), "/brokers/ids/1");
//! assert_eq!(paths::partition_state("events", 3), "/brokers/topics/events/partitions/3/state");
//! assert_eq!(paths::offset("billing", "events", 3), "/consumers/billing/offsets/events/3");
//! assert!(paths::validate_topic_name("events.v2_eu-1").is_ok());
//! assert!(paths::validate_topic_name("no spaces").is_err());
//! ```

use crate::{Error, Result};

// ---------------------------------------------------------------------------------------------
// Brokers
// ---------------------------------------------------------------------------------------------

/// `/brokers`: the parent of [`BROKER_IDS`] and [`BROKER_TOPICS`].
pub const BROKERS: &str = "/brokers";

/// `/brokers/ids`: every live broker registers an ephemeral child named by its `broker.id`
/// (see [`broker`]); clients list it to find the cluster and watch it to notice brokers
/// coming and going. The controller watches it to detect broker failure.
pub const BROKER_IDS: &str = "/brokers/ids";

/// `/brokers/ids/N`: the ephemeral registration of broker `N`, holding a
/// [`BrokerRegistration`](crate::payloads::BrokerRegistration) (host and port of its socket
/// server). It disappears when the broker's ZooKeeper session ends, which is how Kafka detects
/// a dead broker.
pub fn broker(id: i32) -> String {
    format!("{BROKER_IDS}/{id}")
}

/// `/brokers/topics`: one child per topic (see [`topic`]); the controller watches it to notice
/// new topics, and clients list it to discover them (topic whitelists/blacklists).
pub const BROKER_TOPICS: &str = "/brokers/topics";

/// `/brokers/topics/T`: the replica assignment of topic `T`, a
/// [`TopicAssignment`](crate::payloads::TopicAssignment) (partition -> replica broker ids).
/// Writing it creates the topic: the controller notices it and makes the partitions' leaders.
/// Adding partitions rewrites it with more entries.
pub fn topic(topic: &str) -> String {
    format!("{BROKER_TOPICS}/{topic}")
}

/// `/brokers/topics/T/partitions`: one child per partition of `T` that the controller has
/// brought online (see [`partition`]).
pub fn topic_partitions(topic: &str) -> String {
    format!("{BROKER_TOPICS}/{topic}/partitions")
}

/// `/brokers/topics/T/partitions/P`: the parent of the partition's [`partition_state`];
/// it holds no data.
pub fn partition(topic: &str, partition: i32) -> String {
    format!("{BROKER_TOPICS}/{topic}/partitions/{partition}")
}

/// `/brokers/topics/T/partitions/P/state`: the leader, leader epoch, controller epoch and ISR of
/// partition `P`, a [`PartitionState`](crate::payloads::PartitionState). Written by the
/// controller on every leader election and by the leader when the ISR shrinks or grows.
pub fn partition_state(topic: &str, partition: i32) -> String {
    format!("{BROKER_TOPICS}/{topic}/partitions/{partition}/state")
}

// ---------------------------------------------------------------------------------------------
// Controller
// ---------------------------------------------------------------------------------------------

/// `/controller`: the ephemeral znode the brokers race to create to become the controller; it
/// holds a [`ControllerRegistration`](crate::payloads::ControllerRegistration). When it
/// disappears the live brokers elect a new controller.
pub const CONTROLLER: &str = "/controller";

/// `/controller_epoch`: a persistent plain decimal integer, incremented by every new
/// controller (see [`encode_controller_epoch`](crate::payloads::encode_controller_epoch)).
/// Brokers ignore requests from a controller with an older epoch.
pub const CONTROLLER_EPOCH: &str = "/controller_epoch";

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/// `/config`: the parent of [`CONFIG_TOPICS`] and [`CONFIG_CHANGES`].
pub const CONFIG: &str = "/config";

/// `/config/topics`: one child per topic with per-topic configuration overrides.
pub const CONFIG_TOPICS: &str = "/config/topics";

/// `/config/topics/T`: the configuration overrides of topic `T`, a
/// [`TopicConfig`](crate::payloads::TopicConfig). Topic creation writes it first, before
/// [`topic`]; a change is announced by a sequential znode under [`CONFIG_CHANGES`].
pub fn topic_config(topic: &str) -> String {
    format!("{CONFIG_TOPICS}/{topic}")
}

/// `/config/changes`: the brokers watch its children; each persistent sequential child
/// (prefix [`CONFIG_CHANGE_PREFIX`]) names a topic whose [`topic_config`] changed, and the
/// brokers re-read that topic's configuration.
pub const CONFIG_CHANGES: &str = "/config/changes";

/// `config_change_`: the name prefix of the sequential change notices under
/// [`CONFIG_CHANGES`]; ZooKeeper appends a 10-digit sequence number.
pub const CONFIG_CHANGE_PREFIX: &str = "config_change_";

/// `/config/changes/config_change_`: the path to create with
/// [`CreateMode::PersistentSequential`](crate::CreateMode::PersistentSequential) to announce a
/// topic configuration change (data: see
/// [`encode_config_change`](crate::payloads::encode_config_change)).
pub fn config_change_prefix_path() -> String {
    format!("{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}")
}

// ---------------------------------------------------------------------------------------------
// Admin
// ---------------------------------------------------------------------------------------------

/// `/admin`: the parent of the admin requests the controller acts on.
pub const ADMIN: &str = "/admin";

/// `/admin/reassign_partitions`: a pending partition reassignment, a
/// [`ReassignPartitions`](crate::payloads::ReassignPartitions). The controller watches it,
/// moves the replicas, removes each partition from it as it completes, and deletes it when
/// done. Only one reassignment may be in progress: creating it fails with `NodeExists` while
/// one is.
pub const REASSIGN_PARTITIONS: &str = "/admin/reassign_partitions";

/// `/admin/preferred_replica_election`: a pending preferred replica election, a
/// [`PreferredReplicaElection`](crate::payloads::PreferredReplicaElection). The controller
/// moves leadership of the listed partitions back to their first replica and deletes it.
pub const PREFERRED_REPLICA_ELECTION: &str = "/admin/preferred_replica_election";

/// `/admin/delete_topics`: one empty child per topic marked for deletion (see
/// [`delete_topic`]). Kafka 0.8.2 brokers act on it only with `delete.topic.enable=true`;
/// otherwise the mark stays and the topic is kept.
pub const DELETE_TOPICS: &str = "/admin/delete_topics";

/// `/admin/delete_topics/T`: the empty znode that marks topic `T` for deletion; the
/// controller deletes the topic's znodes, then this one.
pub fn delete_topic(topic: &str) -> String {
    format!("{DELETE_TOPICS}/{topic}")
}

// ---------------------------------------------------------------------------------------------
// Consumers
// ---------------------------------------------------------------------------------------------

/// `/consumers`: one child per consumer group of the ZooKeeper-coordinated (high-level)
/// consumer.
pub const CONSUMERS: &str = "/consumers";

/// `/consumers/G`: everything about consumer group `G` (`ZKGroupDirs.consumerGroupDir`).
pub fn consumer_group(group: &str) -> String {
    format!("{CONSUMERS}/{group}")
}

/// `/consumers/G/ids`: the group's member registry; every member registers an ephemeral child
/// (see [`consumer_id`]), and every member watches the list to trigger a rebalance.
pub fn consumer_ids(group: &str) -> String {
    format!("{CONSUMERS}/{group}/ids")
}

/// `/consumers/G/ids/<consumer id>`: the ephemeral registration of one group member, a
/// [`ConsumerRegistration`](crate::payloads::ConsumerRegistration) (its subscription). Kafka
/// names it `<G>_<host>-<ms>-<8 hex digits>`.
pub fn consumer_id(group: &str, consumer_id: &str) -> String {
    format!("{CONSUMERS}/{group}/ids/{consumer_id}")
}

/// `/consumers/G/owners`: one child per topic the group consumes, holding the partition
/// ownership claims (`ZKGroupDirs.consumerGroupOwnersDir`).
pub fn consumer_owners(group: &str) -> String {
    format!("{CONSUMERS}/{group}/owners")
}

/// `/consumers/G/owners/T`: one ephemeral child per partition of `T` claimed by a member of
/// `G` (see [`owner`]).
pub fn owners(group: &str, topic: &str) -> String {
    format!("{CONSUMERS}/{group}/owners/{topic}")
}

/// `/consumers/G/owners/T/P`: the ephemeral ownership claim of partition `P`, holding the
/// owning consumer thread id `<consumer id>-<thread number>` as plain text. A member creates it
/// during a rebalance and retries while the previous owner's claim still exists.
pub fn owner(group: &str, topic: &str, partition: i32) -> String {
    format!("{CONSUMERS}/{group}/owners/{topic}/{partition}")
}

/// `/consumers/G/offsets`: one child per topic the group has committed offsets for
/// (`ZKGroupDirs.consumerGroupOffsetsDir`; used with `offsets.storage=zookeeper`).
pub fn consumer_offsets(group: &str) -> String {
    format!("{CONSUMERS}/{group}/offsets")
}

/// `/consumers/G/offsets/T`: one persistent child per partition of `T` (see [`offset`]).
pub fn offsets(group: &str, topic: &str) -> String {
    format!("{CONSUMERS}/{group}/offsets/{topic}")
}

/// `/consumers/G/offsets/T/P`: the committed offset of partition `P` for group `G`, the plain
/// decimal offset of the next message to read (see
/// [`encode_offset`](crate::payloads::encode_offset)).
pub fn offset(group: &str, topic: &str, partition: i32) -> String {
    format!("{CONSUMERS}/{group}/offsets/{topic}/{partition}")
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

/// The longest topic name Kafka 0.8.2 accepts (`Topic.maxNameLength`).
pub const MAX_TOPIC_NAME_LENGTH: usize = gregor_config::MAX_TOPIC_NAME_LENGTH;

/// Checks a topic name against Kafka 0.8.2's rules (`kafka.common.Topic.validate`): not empty,
/// not `.` or `..`, at most [`MAX_TOPIC_NAME_LENGTH`] characters, and only ASCII letters,
/// digits, `.`, `_` and `-` (the rules are [`gregor_config::validate_topic_name`]'s).
///
/// Kafka's admin tools refuse other names, and a name with `/` would put the topic's znodes in
/// the wrong place.
///
/// # Errors
///
/// [`Error::InvalidTopic`] naming the rule the name breaks
/// ([`TopicNameError::rule`](gregor_config::TopicNameError::rule)).
pub fn validate_topic_name(name: &str) -> Result<()> {
    gregor_config::validate_topic_name(name)
        .map_err(|e| Error::InvalidTopic { topic: name.to_owned(), reason: e.rule() })
}

/// Checks a znode path the way ZooKeeper's `PathUtils.validatePath` does: it starts with `/`,
/// does not end with `/` (except the root itself), has no empty segment (`//`), no `.` or `..`
/// segment and no control character.
///
/// [`ZkClient`](crate::ZkClient) checks every path before sending it, so a bad one fails here
/// with its reason instead of reaching the server (or, under a chroot, being silently glued to
/// the chroot: `"/kafka" + "brokers"`).
///
/// # Errors
///
/// [`Error::InvalidPath`] naming the rule the path breaks.
pub fn validate_path(path: &str) -> Result<()> {
    let reason = if path.is_empty() {
        "must not be empty"
    } else if !path.starts_with('/') {
        "must start with '/'"
    } else if path == "/" {
        return Ok(());
    } else if path.ends_with('/') {
        "must not end with '/'"
    } else if path.chars().any(|c| c.is_control()) {
        "must not contain control characters"
    } else if path[1..].split('/').any(str::is_empty) {
        "must not contain an empty segment (\"//\")"
    } else if path[1..].split('/').any(|s| s == "." || s == "..") {
        "must not contain a \".\" or \"..\" segment"
    } else {
        return Ok(());
    };
    Err(Error::InvalidPath { path: path.to_owned(), reason })
}

/// Joins a parent path and a child name: `join("/a", "b") == "/a/b"`, `join("/", "b") == "/b"`.
pub fn join(parent: &str, child: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{child}")
    } else {
        format!("{parent}/{child}")
    }
}

/// The proper ancestors of `path`, outermost first, root excluded:
/// `ancestors("/a/b/c") == ["/a", "/a/b"]`.
pub fn ancestors(path: &str) -> Vec<String> {
    path.match_indices('/').map(|(i, _)| i).filter(|&i| i > 0).map(|i| path[..i].to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_paths() {
        assert_eq!(BROKERS, "/brokers");
        assert_eq!(BROKER_IDS, "/brokers/ids");
        assert_eq!(broker(0), "/brokers/ids/0");
        assert_eq!(broker(1001), "/brokers/ids/1001");
        assert_eq!(BROKER_TOPICS, "/brokers/topics");
        assert_eq!(topic("events"), "/brokers/topics/events");
        assert_eq!(topic_partitions("events"), "/brokers/topics/events/partitions");
        assert_eq!(partition("events", 7), "/brokers/topics/events/partitions/7");
        assert_eq!(partition_state("events", 7), "/brokers/topics/events/partitions/7/state");
    }

    #[test]
    fn controller_paths() {
        assert_eq!(CONTROLLER, "/controller");
        assert_eq!(CONTROLLER_EPOCH, "/controller_epoch");
    }

    #[test]
    fn config_paths() {
        assert_eq!(CONFIG, "/config");
        assert_eq!(CONFIG_TOPICS, "/config/topics");
        assert_eq!(topic_config("events"), "/config/topics/events");
        assert_eq!(CONFIG_CHANGES, "/config/changes");
        assert_eq!(CONFIG_CHANGE_PREFIX, "config_change_");
        assert_eq!(config_change_prefix_path(), "/config/changes/config_change_");
    }

    #[test]
    fn admin_paths() {
        assert_eq!(ADMIN, "/admin");
        assert_eq!(REASSIGN_PARTITIONS, "/admin/reassign_partitions");
        assert_eq!(PREFERRED_REPLICA_ELECTION, "/admin/preferred_replica_election");
        assert_eq!(DELETE_TOPICS, "/admin/delete_topics");
        assert_eq!(delete_topic("events"), "/admin/delete_topics/events");
    }

    #[test]
    fn consumer_paths() {
        assert_eq!(CONSUMERS, "/consumers");
        assert_eq!(consumer_group("g"), "/consumers/g");
        assert_eq!(consumer_ids("g"), "/consumers/g/ids");
        assert_eq!(consumer_id("g", "g_host-1427000000000-1a2b3c4d"), "/consumers/g/ids/g_host-1427000000000-1a2b3c4d");
        assert_eq!(consumer_owners("g"), "/consumers/g/owners");
        assert_eq!(owners("g", "events"), "/consumers/g/owners/events");
        assert_eq!(owner("g", "events", 2), "/consumers/g/owners/events/2");
        assert_eq!(consumer_offsets("g"), "/consumers/g/offsets");
        assert_eq!(offsets("g", "events"), "/consumers/g/offsets/events");
        assert_eq!(offset("g", "events", 2), "/consumers/g/offsets/events/2");
    }

    #[test]
    fn every_path_is_valid() {
        for p in [
            broker(1),
            topic("t"),
            topic_partitions("t"),
            partition("t", 0),
            partition_state("t", 0),
            topic_config("t"),
            config_change_prefix_path(),
            delete_topic("t"),
            consumer_group("g"),
            consumer_ids("g"),
            consumer_id("g", "c"),
            consumer_owners("g"),
            owners("g", "t"),
            owner("g", "t", 0),
            consumer_offsets("g"),
            offsets("g", "t"),
            offset("g", "t", 0),
        ] {
            validate_path(&p).unwrap();
        }
        for p in [
            BROKERS,
            BROKER_IDS,
            BROKER_TOPICS,
            CONTROLLER,
            CONTROLLER_EPOCH,
            CONFIG,
            CONFIG_TOPICS,
            CONFIG_CHANGES,
            ADMIN,
            REASSIGN_PARTITIONS,
            PREFERRED_REPLICA_ELECTION,
            DELETE_TOPICS,
            CONSUMERS,
        ] {
            validate_path(p).unwrap();
        }
    }

    #[test]
    fn topic_names_kafka_accepts() {
        for name in ["a", "events", "Events.v2", "a_b-c.d", "0", "..a", "a..", "..."] {
            validate_topic_name(name).unwrap();
        }
        validate_topic_name(&"x".repeat(255)).unwrap();
    }

    #[test]
    fn topic_names_kafka_refuses() {
        let reason = |name: &str| match validate_topic_name(name) {
            Err(Error::InvalidTopic { topic, reason }) => {
                assert_eq!(topic, name);
                reason
            }
            other => panic!("{name:?}: expected InvalidTopic, got {other:?}"),
        };
        assert_eq!(reason(""), "must not be empty");
        assert_eq!(reason("."), "must not be \".\" or \"..\"");
        assert_eq!(reason(".."), "must not be \".\" or \"..\"");
        assert_eq!(reason(&"x".repeat(256)), "must not be longer than 255 characters");
        for bad in ["a b", "a/b", "a:b", "a*", "tópico", "a\n", "a,b", "a+b"] {
            assert!(reason(bad).starts_with("contains a character"), "{bad:?}");
        }
        let err = validate_topic_name("a b").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid topic name \"a b\": contains a character other than ASCII letters and digits, \
             '.', '_' and '-'"
        );
    }

    #[test]
    fn znode_paths() {
        for ok in ["/", "/a", "/a/b", "/a.b/c..d", "/brokers/ids/1", "/config_change_0000000001"] {
            validate_path(ok).unwrap();
        }
        for (bad, why) in [
            ("", "must not be empty"),
            ("a", "must start with '/'"),
            ("a/b", "must start with '/'"),
            ("/a/", "must not end with '/'"),
            ("//a", "must not contain an empty segment (\"//\")"),
            ("/a//b", "must not contain an empty segment (\"//\")"),
            ("/a/./b", "must not contain a \".\" or \"..\" segment"),
            ("/..", "must not contain a \".\" or \"..\" segment"),
            ("/a\u{0}b", "must not contain control characters"),
        ] {
            match validate_path(bad) {
                Err(Error::InvalidPath { path, reason }) => {
                    assert_eq!(path, bad);
                    assert_eq!(reason, why, "{bad:?}");
                }
                other => panic!("{bad:?}: expected InvalidPath, got {other:?}"),
            }
        }
        assert_eq!(validate_path("a").unwrap_err().to_string(), "invalid znode path \"a\": must start with '/'");
    }

    #[test]
    fn join_and_ancestors() {
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
        assert_eq!(ancestors("/a/b/c"), vec!["/a".to_owned(), "/a/b".to_owned()]);
        assert_eq!(ancestors("/a"), Vec::<String>::new());
        assert_eq!(ancestors("/"), Vec::<String>::new());
    }
}

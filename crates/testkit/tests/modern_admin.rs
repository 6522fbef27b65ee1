//! The modern fake's admin APIs driven directly over the wire, for what the genuine captures
//! (replayed by `modern_replay.rs`) do not show: errors, `validate_only`, a deleted topic being
//! gone, added partitions taking writes, config changes taking effect, and the peers'
//! (confluent-kafka's AdminClient) view of them.

use std::collections::BTreeMap;
use std::time::Duration;

use gregor_protocol::messages::*;
use gregor_protocol::record::RecordBatchBuilder;
use gregor_protocol::schema::Uuid;
use gregor_protocol::{Compression, MessageSet};
use gregor_testkit::wire::Conn;
use gregor_testkit::{peers, FakeCluster};

async fn cluster(brokers: usize, first_id: i32) -> FakeCluster {
    FakeCluster::modern().brokers(brokers).first_broker_id(first_id).start().await.unwrap()
}

async fn conn(cluster: &FakeCluster, broker: i32) -> Conn {
    Conn::open(cluster.broker_addr(broker).unwrap()).await
}

/// Produces one record of `len` bytes to `topic/partition` through its leader (Produce v7):
/// the partition's error code and base offset.
async fn produce(cluster: &FakeCluster, topic: &str, partition: i32, acks: i16, len: usize) -> (i16, i64) {
    let leader = cluster.leader(topic, partition).expect("a leader");
    let mut batch = RecordBatchBuilder::new(Compression::None);
    batch.append(1, None, Some("x".repeat(len).as_bytes())).unwrap();
    let request = ProduceRequest {
        required_acks: acks,
        timeout: 5000,
        topics: vec![ProduceTopic::new(
            topic,
            vec![ProducePartition::new(partition, MessageSet::from_bytes(batch.finish().unwrap()))],
        )],
        ..Default::default()
    };
    let answer = conn(cluster, leader).await.call(7, &request).await;
    let p = &answer.topics[0].partitions[0];
    (p.error_code, p.offset)
}

fn delete_by_name(names: &[&str]) -> DeleteTopicsRequest {
    DeleteTopicsRequest {
        topic_names: names.iter().map(|n| n.to_string()).collect(),
        timeout_ms: 5000,
        ..Default::default()
    }
}

fn delete_by_id(id: Uuid) -> DeleteTopicsRequest {
    DeleteTopicsRequest {
        topics: vec![DeleteTopicState { name: None, topic_id: id, ..Default::default() }],
        timeout_ms: 5000,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_topic_is_gone_and_its_name_free_again() {
    let cluster = cluster(1, 1).await;
    cluster.create_topic("gone", 2, 1).await.unwrap();
    assert_eq!(produce(&cluster, "gone", 1, 1, 10).await, (0, 0));
    assert_eq!(produce(&cluster, "gone", 1, 1, 10).await, (0, 1));
    let id = cluster.topic_id("gone").unwrap();
    let mut c = conn(&cluster, 1).await;

    // by id (v6): the answer names the topic and its id
    let answer = c.call(6, &delete_by_id(id)).await;
    let r = &answer.responses[0];
    assert_eq!((r.name.as_deref(), r.topic_id, r.error_code, r.error_message.as_deref()), (Some("gone"), id, 0, None));
    assert_eq!(cluster.topic_id("gone"), None);
    assert!(cluster.partitions("gone").is_empty());
    let mut metadata = MetadataRequest::for_topics(["gone"]);
    metadata.allow_auto_topic_creation = false;
    let answer = c.call(12, &metadata).await;
    assert_eq!(answer.topics[0].error_code, 3, "Metadata no longer knows it");
    assert_eq!(produce_to_missing(&cluster, "gone").await, 3);

    // again: unknown, by id (100, null name) and by name (3; v5+ with a message, v4 without)
    let answer = c.call(6, &delete_by_id(id)).await;
    let r = &answer.responses[0];
    assert_eq!((r.name.as_deref(), r.topic_id, r.error_code), (None, id, 100));
    assert!(r.error_message.is_some());
    let answer = c.call(5, &delete_by_name(&["gone"])).await;
    assert_eq!((answer.responses[0].error_code, answer.responses[0].error_message.is_some()), (3, true));
    let answer = c.call(4, &delete_by_name(&["gone"])).await;
    assert_eq!((answer.responses[0].error_code, answer.responses[0].error_message.as_deref()), (3, None));

    // named twice, or by name and id at once: 42, nothing deleted
    cluster.create_topic("twice", 1, 1).await.unwrap();
    let answer = c.call(4, &delete_by_name(&["twice", "twice"])).await;
    assert!(answer.responses.iter().all(|r| r.error_code == 42), "{answer:?}");
    let both = DeleteTopicsRequest {
        topics: vec![DeleteTopicState {
            name: Some("twice".into()),
            topic_id: cluster.topic_id("twice").unwrap(),
            ..Default::default()
        }],
        ..Default::default()
    };
    assert_eq!(c.call(6, &both).await.responses[0].error_code, 42);
    assert!(cluster.topic_id("twice").is_some());

    // the name is free: a new topic, a new id, an empty log
    cluster.create_topic("gone", 1, 1).await.unwrap();
    assert_ne!(cluster.topic_id("gone"), Some(id));
    assert_eq!(cluster.offsets("gone", 0), Some((0, 0)));
    assert_eq!(produce(&cluster, "gone", 0, 1, 10).await, (0, 0));
}

/// A Produce to a topic that has no partition 0 any more (sent to broker 1): its error code.
async fn produce_to_missing(cluster: &FakeCluster, topic: &str) -> i16 {
    let mut batch = RecordBatchBuilder::new(Compression::None);
    batch.append(1, None, Some(b"x")).unwrap();
    let request = ProduceRequest {
        required_acks: 1,
        timeout: 5000,
        topics: vec![ProduceTopic::new(
            topic,
            vec![ProducePartition::new(0, MessageSet::from_bytes(batch.finish().unwrap()))],
        )],
        ..Default::default()
    };
    conn(cluster, 1).await.call(7, &request).await.topics[0].partitions[0].error_code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_disabled_answers_73_or_42_before_v3() {
    let cluster = FakeCluster::modern().configure(|c| c.delete_topic_enable = false).start().await.unwrap();
    cluster.create_topic("kept", 1, 1).await.unwrap();
    let mut c = conn(&cluster, 0).await;
    assert_eq!(c.call(4, &delete_by_name(&["kept"])).await.responses[0].error_code, 73);
    assert_eq!(c.call(1, &delete_by_name(&["kept"])).await.responses[0].error_code, 42);
    assert!(cluster.topic_id("kept").is_some());
}

fn grow(topic: &str, count: i32, assignments: Option<Vec<Vec<i32>>>, validate_only: bool) -> CreatePartitionsRequest {
    let assignments = assignments.map(|a| {
        a.into_iter().map(|broker_ids| CreatePartitionsAssignment { broker_ids, ..Default::default() }).collect()
    });
    CreatePartitionsRequest {
        topics: vec![CreatePartitionsTopic { name: topic.into(), count, assignments, ..Default::default() }],
        timeout_ms: 5000,
        validate_only,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_partitions_are_placed_like_kafka_and_take_writes() {
    let cluster = cluster(3, 0).await;
    cluster.create_topic_with("grow", BTreeMap::from([(0, vec![1, 2])]), BTreeMap::new()).await.unwrap();
    let mut c = conn(&cluster, 0).await;

    // validate_only: answered 0, nothing added
    let answer = c.call(3, &grow("grow", 4, None, true)).await;
    assert_eq!((answer.results[0].error_code, answer.results[0].error_message.as_deref()), (0, None));
    assert_eq!(cluster.partitions("grow"), [0]);

    // placed round-robin from partition 0's leader, followers shifted as Kafka shifts them
    let answer = c.call(2, &grow("grow", 4, None, false)).await;
    assert_eq!(answer.results[0].error_code, 0, "{answer:?}");
    assert_eq!(cluster.partitions("grow"), [0, 1, 2, 3]);
    let replicas: Vec<Vec<i32>> = (1..4).map(|p| cluster.partition_info("grow", p).unwrap().1).collect();
    assert_eq!(replicas, [vec![2, 1], vec![0, 2], vec![1, 2]]);
    for p in 1..4 {
        let (leader, replicas, isr) = cluster.partition_info("grow", p).unwrap();
        assert_eq!((leader, &isr), (replicas[0], &replicas));
        assert_eq!(produce(&cluster, "grow", p, -1, 10).await, (0, 0), "partition {p}");
    }
    let answer = c.call(12, &MetadataRequest::for_topics(["grow"])).await;
    assert_eq!(answer.topics[0].partitions.len(), 4);

    // not an increase, an unknown topic, bad assignments, too many at once
    for (request, code) in [
        (grow("grow", 4, None, false), 37),
        (grow("grow", 2, None, false), 37),
        (grow("nope", 5, None, false), 3),
        (grow("grow", 6, Some(vec![vec![0, 1]]), false), 39),
        (grow("grow", 5, Some(vec![vec![0]]), false), 39),
        (grow("grow", 5, Some(vec![vec![0, 9]]), false), 39),
        (grow("grow", 5, Some(vec![vec![2, 2]]), false), 39),
        (grow("grow", 20_005, None, false), 44),
    ] {
        let answer = c.call(3, &request).await;
        let r = &answer.results[0];
        assert_eq!(r.error_code, code, "{request:?}: {r:?}");
        assert!(r.error_message.is_some());
    }
    assert_eq!(cluster.partitions("grow").len(), 4);

    // a given assignment is taken as it is
    let answer = c.call(1, &grow("grow", 5, Some(vec![vec![0, 2]]), false)).await;
    assert_eq!(answer.results[0].error_code, 0);
    assert_eq!(cluster.partition_info("grow", 4).unwrap().1, [0, 2]);
    assert_eq!(produce(&cluster, "grow", 4, 1, 10).await, (0, 0));
}

fn describe(resource_type: i8, name: &str, keys: Option<&[&str]>, synonyms: bool) -> DescribeConfigsRequest {
    DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type,
            resource_name: name.into(),
            configuration_keys: keys.map(|k| k.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        }],
        include_synonyms: synonyms,
        ..Default::default()
    }
}

fn alter(topic: &str, configs: &[(&str, &str)], validate_only: bool) -> AlterConfigsRequest {
    AlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: 2,
            resource_name: topic.into(),
            configs: configs
                .iter()
                .map(|(n, v)| AlterableConfig { name: n.to_string(), value: Some(v.to_string()), ..Default::default() })
                .collect(),
            ..Default::default()
        }],
        validate_only,
        ..Default::default()
    }
}

fn incremental(
    topic: &str,
    changes: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> IncrementalAlterConfigsRequest {
    IncrementalAlterConfigsRequest {
        resources: vec![IncrementalAlterConfigsResource {
            resource_type: 2,
            resource_name: topic.into(),
            configs: changes
                .iter()
                .map(|(n, op, v)| IncrementalAlterableConfig {
                    name: n.to_string(),
                    config_operation: *op,
                    value: v.map(str::to_owned),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        validate_only,
        ..Default::default()
    }
}

fn own(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_changes_are_checked_take_effect_and_are_described_with_their_source() {
    let cluster = cluster(1, 1).await;
    cluster.create_topic("cfg", 1, 1).await.unwrap();
    let mut c = conn(&cluster, 1).await;

    // AlterConfigs: checked, validate_only changes nothing, then the whole set is replaced
    for (request, code) in [
        (alter("cfg", &[("retention.ms", "1000"), ("no.such.config", "1")], false), 40),
        (alter("cfg", &[("retention.ms", "soon")], false), 40),
        (alter("cfg", &[("cleanup.policy", "shred")], false), 40),
        (alter("cfg", &[("retention.ms", "1"), ("retention.ms", "2")], false), 42),
        (alter("nope", &[("retention.ms", "1000")], false), 3),
        (alter("cfg", &[("retention.ms", "1000")], true), 0),
    ] {
        let answer = c.call(2, &request).await;
        let r = &answer.responses[0];
        assert_eq!((r.error_code, r.error_message.is_some()), (code, code != 0), "{request:?}: {r:?}");
    }
    assert_eq!(cluster.topic_config("cfg"), own(&[]));
    assert_eq!(
        c.call(0, &alter("cfg", &[("retention.ms", "1000"), ("segment.ms", "5000")], false)).await.responses[0]
            .error_code,
        0
    );
    assert_eq!(cluster.topic_config("cfg"), own(&[("retention.ms", "1000"), ("segment.ms", "5000")]));
    assert_eq!(c.call(1, &alter("cfg", &[("cleanup.policy", "compact")], false)).await.responses[0].error_code, 0);
    assert_eq!(cluster.topic_config("cfg"), own(&[("cleanup.policy", "compact")]), "the whole set is replaced");

    // IncrementalAlterConfigs: list operations, deletes, all or nothing, validate_only
    let ok = [
        (
            incremental("cfg", &[("cleanup.policy", 2, Some("delete"))], false),
            own(&[("cleanup.policy", "compact,delete")]),
        ),
        (incremental("cfg", &[("cleanup.policy", 3, Some("compact"))], false), own(&[("cleanup.policy", "delete")])),
        (
            incremental("cfg", &[("retention.ms", 0, Some("7")), ("cleanup.policy", 1, None)], false),
            own(&[("retention.ms", "7")]),
        ),
        (incremental("cfg", &[("retention.ms", 0, Some("9"))], true), own(&[("retention.ms", "7")])),
        (
            incremental("cfg", &[("follower.replication.throttled.replicas", 2, Some("0:1"))], false),
            own(&[("follower.replication.throttled.replicas", "0:1"), ("retention.ms", "7")]),
        ),
    ];
    for (request, after) in ok {
        let answer = c.call(1, &request).await;
        assert_eq!((answer.responses[0].error_code, answer.responses[0].error_message.as_deref()), (0, None));
        assert_eq!(cluster.topic_config("cfg"), after, "{request:?}");
    }
    let before = cluster.topic_config("cfg");
    for (request, code) in [
        (incremental("cfg", &[("retention.ms", 2, Some("1"))], false), 40),
        (incremental("cfg", &[("cleanup.policy", 2, None)], false), 40),
        (incremental("cfg", &[("segment.ms", 0, Some("5")), ("bogus", 0, Some("1"))], false), 40),
        (incremental("cfg", &[("segment.ms", 0, Some("0"))], false), 40),
        (incremental("cfg", &[("segment.ms", 9, Some("5"))], false), 42),
        (incremental("nope", &[("segment.ms", 0, Some("5"))], false), 3),
    ] {
        let answer = c.call(0, &request).await;
        assert_eq!(answer.responses[0].error_code, code, "{request:?}");
    }
    assert_eq!(cluster.topic_config("cfg"), before, "a refused resource changes nothing");

    // the configs the brokers act on read the same place
    assert_eq!(produce(&cluster, "cfg", 0, 1, 200).await.0, 0);
    assert_eq!(
        c.call(1, &incremental("cfg", &[("max.message.bytes", 0, Some("100"))], false)).await.responses[0].error_code,
        0
    );
    assert_eq!(produce(&cluster, "cfg", 0, 1, 200).await.0, 10, "MESSAGE_TOO_LARGE");
    assert_eq!(
        c.call(1, &incremental("cfg", &[("min.insync.replicas", 0, Some("2"))], false)).await.responses[0].error_code,
        0
    );
    assert_eq!(produce(&cluster, "cfg", 0, -1, 10).await.0, 19, "NOT_ENOUGH_REPLICAS");

    // described: own settings from source 1, the rest from the broker (4) or Kafka's default (5)
    let answer = c.call(4, &describe(2, "cfg", Some(&["retention.ms", "segment.ms", "segment.bytes"]), true)).await;
    let r = &answer.results[0];
    assert_eq!((r.error_code, r.error_message.as_deref()), (0, Some("")));
    let seen: Vec<(&str, Option<&str>, i8, i8, usize)> = r
        .configs
        .iter()
        .map(|c| (c.name.as_str(), c.value.as_deref(), c.config_source, c.config_type, c.synonyms.len()))
        .collect();
    assert_eq!(
        seen,
        [
            ("segment.bytes", Some("1073741824"), 4, 3, 2),
            ("retention.ms", Some("7"), 1, 5, 1),
            ("segment.ms", Some("604800000"), 5, 5, 0)
        ]
    );
    let answer = c.call(1, &describe(2, "cfg", None, false)).await;
    let r = &answer.results[0];
    assert_eq!(r.configs.len(), 31);
    assert!(r.configs.iter().all(|c| c.synonyms.is_empty() && c.config_type == 0));
    let max = r.configs.iter().find(|c| c.name == "max.message.bytes").unwrap();
    assert_eq!((max.value.as_deref(), max.config_source), (Some("100"), 1));

    // unknown or bad topics, brokers
    assert_eq!(c.call(1, &describe(2, "nope", None, false)).await.results[0].error_code, 3);
    assert_eq!(c.call(1, &describe(2, "", None, false)).await.results[0].error_code, 17);
    assert_eq!(c.call(1, &describe(4, "7", None, false)).await.results[0].error_code, 42);
    assert_eq!(c.call(1, &describe(8, "1", None, false)).await.results[0].error_code, 42);
    let answer = c.call(1, &describe(4, "", None, false)).await;
    assert_eq!((answer.results[0].error_code, answer.results[0].configs.len()), (0, 0), "no dynamic defaults");
    let answer = c.call(3, &describe(4, "1", None, true)).await;
    let broker = &answer.results[0];
    assert_eq!(broker.error_code, 0);
    let find = |n: &str| broker.configs.iter().find(|c| c.name == n).unwrap_or_else(|| panic!("{n}"));
    assert_eq!((find("node.id").value.as_deref(), find("node.id").read_only), (Some("1"), true));
    assert_eq!(
        (find("message.max.bytes").value.as_deref(), find("message.max.bytes").config_source),
        (Some("1048588"), 5)
    );
    assert_eq!((find("log.segment.bytes").config_source, find("log.segment.bytes").synonyms.len()), (4, 2));
    assert_eq!(find("delete.topic.enable").value.as_deref(), Some("true"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_topics_checks_configs_and_lists_them_all_from_v5() {
    let cluster = cluster(1, 1).await;
    let mut c = conn(&cluster, 1).await;
    let create = |name: &str, config: (&str, &str)| CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.into(),
            num_partitions: 1,
            replication_factor: 1,
            configs: vec![CreatableTopicConfig {
                name: config.0.into(),
                value: Some(config.1.into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        timeout_ms: 5000,
        ..Default::default()
    };
    for bad in [("no.such.config", "1"), ("retention.ms", "soon")] {
        let answer = c.call(7, &create("bad", bad)).await;
        assert_eq!(answer.topics[0].error_code, 40, "{bad:?}");
        assert_eq!(cluster.topic_id("bad"), None);
    }
    let answer = c.call(7, &create("good", ("retention.ms", "1000"))).await;
    let t = &answer.topics[0];
    assert_eq!(t.error_code, 0);
    let configs = t.configs.as_ref().unwrap();
    assert_eq!(configs.len(), 31);
    assert!(configs.windows(2).all(|w| w[0].name < w[1].name), "by name");
    let find = |n: &str| configs.iter().find(|c| c.name == n).unwrap();
    assert_eq!((find("retention.ms").value.as_deref(), find("retention.ms").config_source), (Some("1000"), 1));
    assert_eq!(find("segment.bytes").config_source, 4);
    assert_eq!(find("cleanup.policy").config_source, 5);
    assert_eq!(cluster.topic_config("good"), own(&[("retention.ms", "1000")]));
}

/// confluent-kafka's AdminClient (librdkafka) against the fake: create, describe, alter
/// (incrementally), add partitions, delete. Prints what it saw, one fact a line.
const ADMIN_SCRIPT: &str = r#"
import sys
from confluent_kafka.admin import AdminClient, NewTopic, NewPartitions, ConfigResource, ConfigEntry, AlterConfigOpType
a = AdminClient({'bootstrap.servers': sys.argv[1]})
def done(futures):
    for f in futures.values():
        f.result(30)
done(a.create_topics([NewTopic('py', num_partitions=1, replication_factor=1, config={'retention.ms': '3600000'})]))
res = ConfigResource('topic', 'py')
configs = a.describe_configs([res])[res].result(30)
src = configs['retention.ms'].source
print('described', len(configs), configs['retention.ms'].value, int(getattr(src, 'value', src)))
done(a.incremental_alter_configs([ConfigResource('topic', 'py', incremental_configs=[
    ConfigEntry('cleanup.policy', 'compact', incremental_operation=AlterConfigOpType.SET)])]))
done(a.alter_configs([ConfigResource('topic', 'py', set_config={'retention.ms': '7200000'})]))
done(a.create_partitions([NewPartitions('py', 3)]))
try:
    done(a.create_partitions([NewPartitions('py', 2)]))
    print('shrunk')
except Exception as e:
    print('refused', e.args[0].code())
md = a.list_topics(timeout=30)
print('partitions', len(md.topics['py'].partitions))
done(a.delete_topics(['py']))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_admin_client_manages_topics_on_the_fake() {
    let Some(python) = peers::python_or_skip() else { return };
    let cluster = cluster(1, 1).await;
    let bootstrap = cluster.broker_addr(1).unwrap().to_string();
    let out =
        peers::python_ok(&python, "confluent-kafka admin", ADMIN_SCRIPT, &[&bootstrap], Duration::from_secs(120)).await;
    let lines: Vec<&str> = out.lines().collect();
    // source 1 is librdkafka's CONFIG_SOURCE.DYNAMIC_TOPIC_CONFIG
    assert_eq!(lines, ["described 31 3600000 1", "refused 37", "partitions 3"], "{out}");
    assert_eq!(cluster.topic_id("py"), None, "deleted");
}

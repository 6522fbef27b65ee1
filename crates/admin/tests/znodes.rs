//! What the admin writes, byte for byte, against a real ZooKeeper with no controller running:
//! nothing acts on the znodes, so they can be read back exactly as written (and the states a
//! controller would write are written by hand).
//!
//! Needs java and ZooKeeper (`apt-get install default-jre-headless zookeeper`): without them the
//! tests fail, or skip when `GREGOR_ALLOW_SKIP=1` is set outside CI.

mod common;

use std::collections::BTreeMap;

use gregor_admin::placement::assign_replicas;
use gregor_admin::{
    Admin, DeleteTopicOutcome, Error, PartitionReassignment, ReassignmentPlan, ReassignmentStatus, TopicPartition,
    TopicSelection,
};
use gregor_zk::payloads::{BrokerRegistration, ControllerRegistration, PartitionState, TopicAssignment};
use gregor_zk::{paths, CreateMode};

macro_rules! admin_or_skip {
    ($name:expr) => {
        match common::bare_admin($name).await {
            Some(a) => a,
            None => return,
        }
    };
}

async fn register_brokers(admin: &Admin, ids: &[i32]) {
    for &id in ids {
        let reg = BrokerRegistration::new(format!("kafka-{id}.example"), 9092 + id, 1_427_000_000_000);
        admin.zk().create_all(&paths::broker(id), &reg.to_json(), CreateMode::Ephemeral).await.unwrap();
    }
}

async fn read(admin: &Admin, path: &str) -> (String, gregor_zk::Stat) {
    let (data, stat) = admin.zk().get(path).await.unwrap().unwrap_or_else(|| panic!("{path} exists"));
    (String::from_utf8(data).unwrap(), stat)
}

async fn write_state(admin: &Admin, topic: &str, partition: i32, leader: i32, isr: &[i32]) {
    let state = PartitionState::new(leader, 0, 1, isr.to_vec());
    admin.zk().set_or_create(&paths::partition_state(topic, partition), &state.to_json()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_topic_writes_config_first_then_the_assignment() {
    let admin = admin_or_skip!("admin-create-bytes");
    register_brokers(&admin, &[0, 1, 2]).await;

    let assignment =
        admin.create_topic("events", 6, 2, [("retention.ms", "1000"), ("cleanup.policy", "compact")]).await.unwrap();
    let (config, config_stat) = read(&admin, "/config/topics/events").await;
    assert_eq!(config, r#"{"version":1,"config":{"cleanup.policy":"compact","retention.ms":"1000"}}"#);
    let (topic, topic_stat) = read(&admin, "/brokers/topics/events").await;
    assert!(config_stat.czxid < topic_stat.czxid, "/config/topics/T is created before /brokers/topics/T");
    let expected = String::from_utf8(TopicAssignment::new(assignment.clone()).to_json()).unwrap();
    assert_eq!(topic, expected);
    assert!(topic.starts_with(r#"{"version":1,"partitions":{"0":["#), "{topic}");
    // Kafka's placement with some start index and shift over the sorted brokers
    let placed: Vec<Vec<i32>> = assignment.values().cloned().collect();
    let kafka = (0..3)
        .flat_map(|s| (0..3).map(move |h| (s, h)))
        .any(|(s, h)| assign_replicas(&[0, 1, 2], 6, 2, s, h).unwrap() == placed);
    assert!(kafka, "not Kafka's placement: {placed:?}");

    // no config: an empty one is written all the same, as Kafka does
    admin.create_topic("bare", 1, 1, Vec::<(String, String)>::new()).await.unwrap();
    assert_eq!(read(&admin, "/config/topics/bare").await.0, r#"{"version":1,"config":{}}"#);

    // refusals
    let err = admin.create_topic("events", 1, 1, [("retention.ms", "1")]).await.unwrap_err();
    assert!(matches!(err, Error::TopicExists { .. }), "{err}");
    assert_eq!(err.to_string(), "topic \"events\" already exists");
    let err = admin.create_topic("wide", 1, 4, Vec::<(String, String)>::new()).await.unwrap_err();
    assert_eq!(err.to_string(), "replication factor 4 larger than the 3 available brokers");
    let err = admin.create_topic("none", 0, 1, Vec::<(String, String)>::new()).await.unwrap_err();
    assert_eq!(err.to_string(), "number of partitions must be at least 1, not 0");
    let err = admin.create_topic("bad name", 1, 1, Vec::<(String, String)>::new()).await.unwrap_err();
    assert!(matches!(err, Error::InvalidTopicName { .. }), "{err}");
    let err = admin.create_topic("cfg", 1, 1, [("retention.hours", "1")]).await.unwrap_err();
    assert!(matches!(err, Error::InvalidConfig { .. }), "{err}");
    for t in ["wide", "none", "cfg"] {
        assert!(admin.zk().exists(&paths::topic(t)).await.unwrap().is_none(), "{t} was not written");
        assert!(admin.zk().exists(&paths::topic_config(t)).await.unwrap().is_none(), "{t} config was not written");
    }

    // explicit assignments
    admin
        .create_topic_with_assignment("manual", &[vec![2, 0], vec![0, 1]], [("max.message.bytes", "2000")])
        .await
        .unwrap();
    assert_eq!(read(&admin, "/brokers/topics/manual").await.0, r#"{"version":1,"partitions":{"0":[2,0],"1":[0,1]}}"#);
    let err = admin
        .create_topic_with_assignment("m2", &[vec![0, 7], vec![9, 1]], Vec::<(String, String)>::new())
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "brokers 7, 9 in the replica assignment are not registered (live brokers: 0, 1, 2)");
    let err = admin
        .create_topic_with_assignment("m2", &[vec![0, 1], vec![1]], Vec::<(String, String)>::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidAssignment { .. }), "{err}");
    let err =
        admin.create_topic_with_assignment("m2", &[vec![1, 1]], Vec::<(String, String)>::new()).await.unwrap_err();
    assert!(err.to_string().contains("lists broker 1 more than once"), "{err}");

    let topics: Vec<String> = admin.list_topics().await.unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(topics, ["bare", "events", "manual"]);
    admin.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_filters_and_health_from_the_state_znodes() {
    let admin = admin_or_skip!("admin-describe-bytes");
    register_brokers(&admin, &[0, 1, 2]).await;
    admin
        .create_topic_with_assignment(
            "t",
            &[vec![0, 1], vec![1, 2], vec![2, 0], vec![0, 2]],
            Vec::<(String, String)>::new(),
        )
        .await
        .unwrap();
    write_state(&admin, "t", 0, 0, &[0, 1]).await; // healthy
    write_state(&admin, "t", 1, 2, &[2]).await; // under-replicated, not on its preferred leader
    write_state(&admin, "t", 2, -1, &[]).await; // no leader
                                                // partition 3: no state znode yet (not online)
    admin.create_topic_with_assignment("gone", &[vec![5]], Vec::<(String, String)>::new()).await.unwrap_err();
    // a leader that is not registered: write the assignment by hand, as an old tool might
    admin
        .zk()
        .create_all("/brokers/topics/old", br#"{"version":1,"partitions":{"0":[5]}}"#, CreateMode::Persistent)
        .await
        .unwrap();
    write_state(&admin, "old", 0, 5, &[5]).await;

    let topics = admin.describe_topics(&TopicSelection::All).await.unwrap();
    assert_eq!(topics.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["old", "t"]);
    let t = &topics[1];
    assert_eq!((t.partition_count(), t.replication_factor()), (4, 2));
    assert_eq!(t.partitions[0].leader, Some(0));
    assert_eq!(t.partitions[1].isr, [2]);
    assert_eq!(t.partitions[2].leader, None);
    assert_eq!((t.partitions[3].leader, t.partitions[3].isr.len()), (None, 0));
    let under: Vec<i32> = t.under_replicated().map(|p| p.partition).collect();
    assert_eq!(under, [1, 2, 3]);
    let unavailable: Vec<i32> = t.unavailable().map(|p| p.partition).collect();
    assert_eq!(unavailable, [2, 3]);
    let unavailable = admin.unavailable_partitions(&TopicSelection::All).await.unwrap();
    assert_eq!(
        unavailable.iter().map(|p| (p.topic.as_str(), p.partition)).collect::<Vec<_>>(),
        [("old", 0), ("t", 2), ("t", 3)]
    );
    assert_eq!(admin.under_replicated_partitions(&TopicSelection::only(["old"])).await.unwrap().len(), 0);
    let err = admin.describe_topics(&TopicSelection::only(["nope"])).await.unwrap_err();
    assert_eq!(err.to_string(), "topic \"nope\" does not exist");

    let health = admin.health().await.unwrap();
    assert_eq!(health.controller, None);
    assert!(!health.is_healthy());
    assert_eq!((health.topic_count, health.partition_count), (2, 5));
    assert_eq!(health.live_brokers, [0, 1, 2]);
    assert_eq!(health.offline.len(), 3);
    assert_eq!(health.under_replicated.len(), 3);
    assert_eq!(
        health.not_on_preferred_leader.iter().map(|p| (p.topic.as_str(), p.partition)).collect::<Vec<_>>(),
        [("t", 1)]
    );
    let loads: Vec<(i32, bool, usize, usize, usize)> = health
        .brokers
        .iter()
        .map(|b| (b.id, b.live, b.leader_count, b.partition_count, b.preferred_leader_count))
        .collect();
    assert_eq!(loads, [(0, true, 1, 3, 2), (1, true, 0, 2, 1), (2, true, 1, 3, 1), (5, false, 0, 1, 1)]);
    admin.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_requests_are_kafkas_json_and_one_at_a_time() {
    let admin = admin_or_skip!("admin-requests-bytes");
    register_brokers(&admin, &[0, 1, 2]).await;
    let controller = ControllerRegistration::new(1, 1_427_000_000_000);
    admin.zk().create_all(paths::CONTROLLER, &controller.to_json(), CreateMode::Ephemeral).await.unwrap();
    admin.create_topic_with_assignment("t", &[vec![0, 1], vec![1, 2]], Vec::<(String, String)>::new()).await.unwrap();

    // brokers
    let brokers = admin.list_brokers().await.unwrap();
    assert_eq!(brokers.controller, Some(1));
    assert_eq!(
        brokers.brokers.iter().map(|b| (b.id, b.addr())).collect::<Vec<_>>(),
        [
            (0, "kafka-0.example:9092".to_owned()),
            (1, "kafka-1.example:9093".to_owned()),
            (2, "kafka-2.example:9094".to_owned())
        ]
    );
    assert_eq!(brokers.brokers[0].timestamp_ms, Some(1_427_000_000_000));

    // reassignment
    let plan = ReassignmentPlan::new(vec![
        PartitionReassignment { topic: "t".into(), partition: 0, replicas: vec![2, 0] },
        PartitionReassignment { topic: "t".into(), partition: 1, replicas: vec![1, 2] },
        PartitionReassignment { topic: "t".into(), partition: 9, replicas: vec![1] },
    ]);
    let executed = admin.execute_reassignment(&plan).await.unwrap();
    assert_eq!(executed.skipped, [TopicPartition::new("t", 9)]);
    assert_eq!(
        executed.previous.to_json(),
        r#"{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[0,1]},{"topic":"t","partition":1,"replicas":[1,2]}]}"#
    );
    let (written, _) = read(&admin, paths::REASSIGN_PARTITIONS).await;
    assert_eq!(
        written,
        r#"{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,0]},{"topic":"t","partition":1,"replicas":[1,2]}]}"#
    );
    assert_eq!(admin.reassignment_in_progress().await.unwrap(), Some(executed.started.clone()));
    let err = admin.execute_reassignment(&plan).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "a partition reassignment is already in progress for [t,0], [t,1]: wait until it completes (verify it) before starting another"
    );
    let Error::ReassignmentInProgress { partitions } = err else { panic!("{err:?}") };
    assert_eq!(partitions, [TopicPartition::new("t", 0), TopicPartition::new("t", 1)]);
    let statuses = admin.verify_reassignment(&executed.started).await.unwrap();
    assert!(statuses.iter().all(|s| s.status == ReassignmentStatus::InProgress), "{statuses:?}");
    // what a controller does: partition 1 done (it was already there), partition 0 gave up
    admin
        .zk()
        .set(
            paths::REASSIGN_PARTITIONS,
            br#"{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,0]}]}"#,
            None,
        )
        .await
        .unwrap();
    let statuses = admin.verify_reassignment(&executed.started).await.unwrap();
    assert_eq!(statuses[0].status, ReassignmentStatus::InProgress);
    assert_eq!(statuses[1].status, ReassignmentStatus::Completed);
    admin.zk().delete(paths::REASSIGN_PARTITIONS, None).await.unwrap();
    let statuses = admin.verify_reassignment(&executed.started).await.unwrap();
    assert_eq!(statuses[0].status, ReassignmentStatus::Failed { assigned: vec![0, 1] });
    let err = admin
        .execute_reassignment(&ReassignmentPlan::new(vec![PartitionReassignment {
            topic: "t".into(),
            partition: 0,
            replicas: vec![0, 8],
        }]))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UnknownBrokers { .. }), "{err}");
    let err = admin
        .execute_reassignment(&ReassignmentPlan::new(vec![PartitionReassignment {
            topic: "x".into(),
            partition: 0,
            replicas: vec![0],
        }]))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "invalid reassignment JSON: none of its partitions exists ([x,0])");

    // generate: every partition, the topic's replication factor, only the listed brokers
    let proposal = admin.generate_reassignment(&["t"], &[2, 1]).await.unwrap();
    assert_eq!(
        proposal.current.to_map(),
        BTreeMap::from([(TopicPartition::new("t", 0), vec![0, 1]), (TopicPartition::new("t", 1), vec![1, 2])])
    );
    let proposed = proposal.proposed.to_map();
    assert_eq!(proposed.len(), 2);
    for replicas in proposed.values() {
        let mut sorted = replicas.clone();
        sorted.sort();
        assert_eq!(sorted, [1, 2]);
    }
    let err = admin.generate_reassignment(&["t"], &[2]).await.unwrap_err();
    assert_eq!(err.to_string(), "replication factor 2 larger than the 1 available brokers");
    assert!(matches!(admin.generate_reassignment(&["t"], &[1, 1]).await.unwrap_err(), Error::InvalidBrokerList { .. }));
    assert!(matches!(admin.generate_reassignment(&["nope"], &[1, 2]).await.unwrap_err(), Error::UnknownTopic { .. }));

    // preferred replica election
    let all = admin.preferred_replica_election(None).await.unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(
        read(&admin, paths::PREFERRED_REPLICA_ELECTION).await.0,
        r#"{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":1}]}"#
    );
    let one = [TopicPartition::new("t", 1)];
    let err = admin.preferred_replica_election(Some(&one)).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "a preferred replica election is already in progress for [t,0], [t,1]: wait until the controller finishes it"
    );
    let Error::PreferredReplicaElectionInProgress { partitions } = err else { panic!("{err:?}") };
    assert_eq!(partitions, [TopicPartition::new("t", 0), TopicPartition::new("t", 1)]);
    assert_eq!(admin.preferred_replica_election_in_progress().await.unwrap(), Some(partitions));
    admin.zk().delete(paths::PREFERRED_REPLICA_ELECTION, None).await.unwrap();
    admin.preferred_replica_election(Some(&one)).await.unwrap();
    assert_eq!(
        read(&admin, paths::PREFERRED_REPLICA_ELECTION).await.0,
        r#"{"version":1,"partitions":[{"topic":"t","partition":1}]}"#
    );
    admin.zk().delete(paths::PREFERRED_REPLICA_ELECTION, None).await.unwrap();
    let missing = [TopicPartition::new("t", 5)];
    assert!(matches!(
        admin.preferred_replica_election(Some(&missing)).await.unwrap_err(),
        Error::UnknownPartition { .. }
    ));

    // config change with its notice
    let config =
        admin.alter_topic_config("t", [("retention.ms", "5000"), ("max.message.bytes", "100")], &[]).await.unwrap();
    assert_eq!(config.len(), 2);
    let config = admin.alter_topic_config("t", Vec::<(String, String)>::new(), &["max.message.bytes"]).await.unwrap();
    assert_eq!(config, BTreeMap::from([("retention.ms".to_owned(), "5000".to_owned())]));
    assert_eq!(read(&admin, "/config/topics/t").await.0, r#"{"version":1,"config":{"retention.ms":"5000"}}"#);
    let notices = admin.zk().children(paths::CONFIG_CHANGES).await.unwrap().unwrap();
    assert_eq!(notices, ["config_change_0000000000", "config_change_0000000001"]);
    assert_eq!(read(&admin, "/config/changes/config_change_0000000001").await.0, r#""t""#);
    assert_eq!(admin.describe_topic_config("t").await.unwrap(), config);
    let err = admin.alter_topic_config("t", [("retention.ms", "soon")], &[]).await.unwrap_err();
    assert_eq!(err.to_string(), "invalid value \"soon\" for topic config retention.ms: expected a 64-bit integer");
    assert!(matches!(
        admin.alter_topic_config("t", Vec::<(String, String)>::new(), &["nope"]).await.unwrap_err(),
        Error::InvalidConfig { .. }
    ));
    assert!(matches!(
        admin.alter_topic_config("x", [("retention.ms", "1")], &[]).await.unwrap_err(),
        Error::UnknownTopic { .. }
    ));

    // add partitions: the rewrite keeps the existing ones and places the new ones as Kafka does
    let added = admin.add_partitions("t", 5, None).await.unwrap();
    let expected = gregor_admin::placement::assign_replicas_from(&[0, 1, 2], 3, 2, 0, 0, 2).unwrap();
    assert_eq!(added.values().cloned().collect::<Vec<_>>(), expected);
    let (json, _) = read(&admin, "/brokers/topics/t").await;
    let all = TopicAssignment::from_json(json.as_bytes()).unwrap().partitions;
    assert_eq!((all[&0].clone(), all[&1].clone(), all.len()), (vec![0, 1], vec![1, 2], 5));
    assert_eq!(admin.describe_topic_config("t").await.unwrap(), config, "adding partitions keeps the config");
    let err = admin.add_partitions("t", 5, None).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "topic \"t\" has 5 partitions: the number of partitions can only be increased, so ask for more than 5, not 5"
    );
    let added = admin.add_partitions("t", 6, Some(&[vec![2, 1]])).await.unwrap();
    assert_eq!(added, BTreeMap::from([(5, vec![2, 1])]));
    let err = admin.add_partitions("t", 7, Some(&[vec![2]])).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the replica assignment for the new partitions of \"t\" has replication factor 1, not the topic's 2"
    );
    assert!(matches!(
        admin.add_partitions("t", 7, Some(&[vec![2, 6]])).await.unwrap_err(),
        Error::UnknownBrokers { .. }
    ));

    // delete: only a mark
    assert_eq!(admin.delete_topic("t").await.unwrap(), DeleteTopicOutcome::MarkedForDeletion);
    let (data, _) = read(&admin, "/admin/delete_topics/t").await;
    assert_eq!(data, "");
    assert_eq!(admin.delete_topic("t").await.unwrap(), DeleteTopicOutcome::AlreadyMarked);
    let listed = admin.list_topics().await.unwrap();
    assert!(listed.iter().any(|t| t.name == "t" && t.marked_for_deletion));
    assert!(matches!(admin.delete_topic("x").await.unwrap_err(), Error::UnknownTopic { .. }));
    admin.close().await.unwrap();
}

//! The admin against a FakeCluster of three brokers whose controller acts on what the admin
//! writes, as a Kafka 0.8.2 controller does; brokers are asked over the wire.
//!
//! Needs java and ZooKeeper (`apt-get install default-jre-headless zookeeper`): without them the
//! tests fail, or skip when `GREGOR_ALLOW_SKIP=1` is set outside CI.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{commit_in_kafka, eventually, produce, WAIT};
use gregor_admin::{
    Admin, DeleteTopicOutcome, Error, OffsetReset, OffsetStorage, PartitionDescription, ReassignmentStatus,
    TopicDescription, TopicPartition, TopicSelection,
};
use gregor_net::Backoff;
use gregor_protocol::frame::ApiKey;
use gregor_protocol::ErrorCode;
use gregor_testkit::fault::{Fault, Rule};
use gregor_zk::payloads::{encode_offset, ConsumerRegistration, PATTERN_STATIC};
use gregor_zk::{paths, CreateMode};

macro_rules! cluster_or_skip {
    ($name:expr) => {
        cluster_or_skip!($name, |_| {})
    };
    ($name:expr, $configure:expr) => {
        match common::cluster($name, $configure).await {
            Some(c) => c,
            None => return,
        }
    };
}

const NO_CONFIG: [(&str, &str); 0] = [];

/// The topic's description once `ready` holds for it.
async fn describe_until(admin: &Admin, topic: &str, ready: impl Fn(&TopicDescription) -> bool) -> TopicDescription {
    eventually(&format!("the description of {topic}"), WAIT, || async {
        let t = admin.describe_topics(&TopicSelection::only([topic])).await.ok()?.pop()?;
        ready(&t).then_some(t)
    })
    .await
}

fn online(t: &TopicDescription) -> bool {
    !t.partitions.is_empty() && t.partitions.iter().all(|p| p.leader_live && p.isr.len() == p.replicas.len())
}

fn names(parts: &[PartitionDescription]) -> Vec<TopicPartition> {
    parts.iter().map(|p| TopicPartition::new(p.topic.clone(), p.partition)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn created_topics_come_online_and_describe_shows_lost_replicas() {
    // kill_broker closes the broker's session, but the close does not always reach ZooKeeper
    // (the broker's ZooKeeper proxy goes with it): then the session expires after its timeout
    let (c, admin) = cluster_or_skip!("admin-topics", |cfg| cfg.zookeeper_session_timeout = Duration::from_secs(3));

    // brokers
    let brokers = admin.list_brokers().await.unwrap();
    assert_eq!(brokers.controller, c.controller());
    let listed: Vec<(i32, String)> = brokers.brokers.iter().map(|b| (b.id, b.addr())).collect();
    let expected: Vec<(i32, String)> = c.broker_addrs().into_iter().map(|(id, a)| (id, a.to_string())).collect();
    assert_eq!(listed, expected);

    // a topic with Kafka's placement: the controller brings every partition online
    let assignment = admin.create_topic("events", 3, 2, [("retention.ms", "60000")]).await.unwrap();
    c.wait_for_leaders("events", WAIT).await.unwrap();
    let events = describe_until(&admin, "events", online).await;
    assert_eq!((events.partition_count(), events.replication_factor()), (3, 2));
    assert_eq!(events.config, BTreeMap::from([("retention.ms".to_owned(), "60000".to_owned())]));
    for p in &events.partitions {
        assert_eq!(p.replicas, assignment[&p.partition]);
        assert_eq!(p.leader, Some(p.replicas[0]), "the preferred replica leads");
        assert_eq!(
            c.partition_info("events", p.partition).unwrap(),
            (p.replicas[0], p.replicas.clone(), p.isr.clone())
        );
    }
    let err = admin.create_topic("wide", 3, 4, NO_CONFIG).await.unwrap_err();
    assert_eq!(err.to_string(), "replication factor 4 larger than the 3 available brokers");

    // explicit assignments
    admin.create_topic_with_assignment("single", &[vec![1]], NO_CONFIG).await.unwrap();
    admin.create_topic_with_assignment("spread", &[vec![0, 1], vec![1, 2], vec![2, 0]], NO_CONFIG).await.unwrap();
    let spread = describe_until(&admin, "spread", online).await;
    assert_eq!(spread.partitions.iter().map(|p| p.leader.unwrap()).collect::<Vec<_>>(), [0, 1, 2]);
    describe_until(&admin, "single", online).await;
    let listed: Vec<String> = admin.list_topics().await.unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(listed, ["events", "single", "spread"]);

    let health = admin.health().await.unwrap();
    assert!(health.is_healthy(), "{health:?}");
    assert_eq!((health.topic_count, health.partition_count), (3, 7));
    assert_eq!(health.brokers.iter().map(|b| b.partition_count).sum::<usize>(), 6 + 1 + 6);
    assert_eq!(health.brokers.iter().map(|b| b.leader_count).sum::<usize>(), 7);
    assert_eq!(
        health.broker(1).unwrap().leader_count,
        1 + 1 + events.partitions.iter().filter(|p| p.leader == Some(1)).count()
    );

    // broker 1 goes: its replicas leave the ISRs, "single" has nobody left to lead
    c.kill_broker(1).await.unwrap();
    let under = eventually("the ISRs to shrink", WAIT, || async {
        let under = admin.under_replicated_partitions(&TopicSelection::All).await.ok()?;
        let want: usize = events.partitions.iter().filter(|p| p.replicas.contains(&1)).count() + 2;
        (under.len() == want).then_some(under)
    })
    .await;
    let under = names(&under);
    assert!(
        under.contains(&TopicPartition::new("spread", 0)) && under.contains(&TopicPartition::new("spread", 1)),
        "{under:?}"
    );
    assert!(!under.contains(&TopicPartition::new("single", 0)), "its ISR is its one replica");
    let unavailable = admin.unavailable_partitions(&TopicSelection::All).await.unwrap();
    assert_eq!(names(&unavailable), [TopicPartition::new("single", 0)]);
    assert_eq!(unavailable[0].leader, Some(1), "the state still names the dead leader");
    let spread = describe_until(&admin, "spread", |t| t.partitions[1].leader == Some(2)).await;
    assert_eq!(spread.partitions[1].isr, [2]);
    assert_eq!(spread.unavailable().count(), 0);

    let health = admin.health().await.unwrap();
    assert!(!health.is_healthy());
    assert_eq!(health.live_brokers, [0, 2]);
    assert_eq!(names(&health.offline), [TopicPartition::new("single", 0)]);
    assert_eq!(health.under_replicated.len(), under.len());
    let gone = health.broker(1).unwrap();
    assert_eq!((gone.live, gone.leader_count), (false, 0));
    assert_eq!(gone.partition_count, 1 + 2 + events.partitions.iter().filter(|p| p.replicas.contains(&1)).count());
    admin.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_partitions_are_served() {
    let (c, admin) = cluster_or_skip!("admin-add-partitions");
    admin.create_topic("grow", 2, 2, NO_CONFIG).await.unwrap();
    c.wait_for_leaders("grow", WAIT).await.unwrap();
    let added = admin.add_partitions("grow", 4, None).await.unwrap();
    assert_eq!(added.keys().copied().collect::<Vec<_>>(), [2, 3]);
    eventually("the new partitions", WAIT, || async { (c.partitions("grow") == [0, 1, 2, 3]).then_some(()) }).await;
    c.wait_for_leaders("grow", WAIT).await.unwrap();
    let grow = describe_until(&admin, "grow", online).await;
    assert_eq!(grow.partitions[3].replicas, added[&3]);
    let (error, offset) = produce(&c, "grow", 3, 5, 10).await;
    assert_eq!((error, offset), (None, 0), "a new partition takes messages");
    let (error, offset) = produce(&c, "grow", 3, 1, 10).await;
    assert_eq!((error, offset), (None, 5));
    assert_eq!(c.offsets("grow", 3).unwrap().1, 6);
    let err = admin.add_partitions("grow", 3, None).await.unwrap_err();
    assert!(matches!(err, Error::PartitionCountNotIncreased { current: 4, requested: 3, .. }), "{err}");
    admin.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn altered_config_is_enforced_by_the_brokers() {
    let (c, admin) = cluster_or_skip!("admin-config");
    admin.create_topic("limits", 1, 1, NO_CONFIG).await.unwrap();
    c.wait_for_leaders("limits", WAIT).await.unwrap();
    assert_eq!(produce(&c, "limits", 0, 1, 500).await.0, None);

    admin.alter_topic_config("limits", [("max.message.bytes", "200")], &[]).await.unwrap();
    assert_eq!(admin.describe_topic_config("limits").await.unwrap()["max.message.bytes"], "200");
    eventually("the broker to refuse a 500-byte message", WAIT, || async {
        (produce(&c, "limits", 0, 1, 500).await.0 == Some(ErrorCode::MessageSizeTooLarge)).then_some(())
    })
    .await;
    assert_eq!(produce(&c, "limits", 0, 1, 50).await.0, None, "small messages still go");

    admin.alter_topic_config("limits", NO_CONFIG, &["max.message.bytes"]).await.unwrap();
    assert!(admin.describe_topic_config("limits").await.unwrap().is_empty());
    eventually("the broker to take a 500-byte message again", WAIT, || async {
        produce(&c, "limits", 0, 1, 500).await.0.is_none().then_some(())
    })
    .await;
    admin.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_topic_is_gone_with_delete_topic_enable() {
    let (c, admin) = cluster_or_skip!("admin-delete", |cfg| cfg.delete_topic_enable = true);
    admin.create_topic("doomed", 2, 2, [("retention.ms", "1000")]).await.unwrap();
    admin.create_topic("kept", 1, 1, NO_CONFIG).await.unwrap();
    c.wait_for_leaders("doomed", WAIT).await.unwrap();
    assert_eq!(admin.delete_topic("doomed").await.unwrap(), DeleteTopicOutcome::MarkedForDeletion);
    eventually("the topic to go", WAIT, || async {
        let topics = admin.list_topics().await.ok()?;
        (topics.len() == 1 && topics[0].name == "kept").then_some(())
    })
    .await;
    assert!(c.partitions("doomed").is_empty());
    let zk = admin.zk();
    eventually("the deletion mark to go", WAIT, || async {
        zk.exists(&paths::delete_topic("doomed")).await.ok()?.is_none().then_some(())
    })
    .await;
    assert!(zk.exists(&paths::topic_config("doomed")).await.unwrap().is_none());
    let err = admin.describe_topics(&TopicSelection::only(["doomed"])).await.unwrap_err();
    assert!(matches!(err, Error::UnknownTopic { .. }), "{err}");
    assert!(matches!(admin.delete_topic("doomed").await.unwrap_err(), Error::UnknownTopic { .. }));
    admin.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reassignment_moves_replicas_and_updates_the_isr() {
    let (c, admin) = cluster_or_skip!("admin-reassign");
    admin.create_topic_with_assignment("moving", &[vec![0, 1], vec![1, 0]], NO_CONFIG).await.unwrap();
    describe_until(&admin, "moving", online).await;
    assert_eq!(produce(&c, "moving", 0, 3, 10).await.0, None);

    let proposal = admin.generate_reassignment(&["moving"], &[1, 2]).await.unwrap();
    assert_eq!(proposal.current.to_map()[&TopicPartition::new("moving", 0)], [0, 1]);
    let plan = proposal.proposed;
    for p in &plan.partitions {
        assert!(p.replicas.iter().all(|b| [1, 2].contains(b)) && p.replicas.len() == 2, "{plan:?}");
    }
    let plan = gregor_admin::parse_reassignment_json(&plan.to_json()).unwrap();
    let executed = admin.execute_reassignment(&plan).await.unwrap();
    assert_eq!(executed.previous, proposal.current);
    let statuses = eventually("the reassignment to complete", WAIT, || async {
        let s = admin.verify_reassignment(&plan).await.ok()?;
        s.iter().all(|s| s.status == ReassignmentStatus::Completed).then_some(s)
    })
    .await;
    assert_eq!(statuses.len(), 2);
    assert!(admin.reassignment_in_progress().await.unwrap().is_none());
    let moved = describe_until(&admin, "moving", online).await;
    for (p, target) in moved.partitions.iter().zip(&plan.partitions) {
        assert_eq!(p.replicas, target.replicas);
        let mut isr = p.isr.clone();
        isr.sort();
        assert_eq!(isr, [1, 2], "the ISR follows the new replicas");
        assert!(target.replicas.contains(&p.leader.unwrap()));
        let (leader, replicas, isr) = c.partition_info("moving", p.partition).unwrap();
        assert_eq!((Some(leader), replicas), (p.leader, p.replicas.clone()));
        assert!(!isr.contains(&0));
    }
    admin.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preferred_replica_election_restores_the_preferred_leader() {
    let (c, admin) = cluster_or_skip!("admin-election");
    admin.create_topic_with_assignment("pref", &[vec![0, 1, 2], vec![1, 2, 0]], NO_CONFIG).await.unwrap();
    describe_until(&admin, "pref", online).await;
    c.move_leader("pref", 0, 2).await.unwrap();
    describe_until(&admin, "pref", |t| t.partitions[0].leader == Some(2)).await;
    let health = admin.health().await.unwrap();
    assert_eq!(names(&health.not_on_preferred_leader), [TopicPartition::new("pref", 0)]);
    assert_eq!(health.broker(2).unwrap().leader_count, 1);
    assert_eq!(health.broker(0).unwrap().leader_count, 0);

    let elected = admin.preferred_replica_election(None).await.unwrap();
    assert_eq!(elected.len(), 2);
    let pref = describe_until(&admin, "pref", |t| t.partitions[0].leader == Some(0)).await;
    assert!(pref.partitions.iter().all(PartitionDescription::is_led_by_preferred_replica));
    eventually("the election znode to go", WAIT, || async {
        admin.preferred_replica_election_in_progress().await.ok()?.is_none().then_some(())
    })
    .await;
    assert!(admin.health().await.unwrap().not_on_preferred_leader.is_empty());
    admin.close().await.unwrap();
}

/// Registers a consumer and its ownership claims as a Java 0.8.2 ZookeeperConsumerConnector
/// does.
async fn register_consumer(admin: &Admin, group: &str, id: &str, topic: &str, owned: &[i32]) {
    let reg = ConsumerRegistration::new(BTreeMap::from([(topic.to_owned(), 1)]), PATTERN_STATIC, 1_427_000_000_000);
    admin.zk().create_all(&paths::consumer_id(group, id), &reg.to_json(), CreateMode::Ephemeral).await.unwrap();
    for p in owned {
        admin
            .zk()
            .create_all(&paths::owner(group, topic, *p), format!("{id}-0").as_bytes(), CreateMode::Ephemeral)
            .await
            .unwrap();
    }
}

async fn unregister_consumer(admin: &Admin, group: &str, id: &str, topic: &str, owned: &[i32]) {
    for p in owned {
        admin.zk().delete(&paths::owner(group, topic, *p), None).await.unwrap();
    }
    admin.zk().delete(&paths::consumer_id(group, id), None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_stored_offsets_lag_and_reset() {
    let (c, admin) = cluster_or_skip!("admin-groups-zk");
    admin.create_topic_with_assignment("clicks", &[vec![0], vec![1]], NO_CONFIG).await.unwrap();
    c.wait_for_leaders("clicks", WAIT).await.unwrap();
    assert_eq!(produce(&c, "clicks", 0, 10, 20).await.0, None);
    assert_eq!(produce(&c, "clicks", 1, 4, 20).await.0, None);

    let member = "web_host-1427000000000-0a1b2c3d";
    register_consumer(&admin, "web", member, "clicks", &[0, 1]).await;
    admin.zk().set_or_create(&paths::offset("web", "clicks", 0), &encode_offset(7)).await.unwrap();
    admin.zk().set_or_create(&paths::offset("web", "clicks", 1), &encode_offset(1)).await.unwrap();

    assert_eq!(admin.list_groups().await.unwrap(), ["web"]);
    let group = admin.describe_group("web").await.unwrap();
    assert!(group.is_active());
    assert_eq!(group.members.len(), 1);
    assert_eq!(group.members[0].consumer_id, member);
    assert_eq!(group.members[0].subscription, BTreeMap::from([("clicks".to_owned(), 1)]));
    assert_eq!(group.members[0].pattern, "static");
    let owners: Vec<(i32, Option<String>)> = group.owners.iter().map(|o| (o.partition, o.owner.clone())).collect();
    assert_eq!(owners, [(0, Some(format!("{member}-0"))), (1, Some(format!("{member}-0")))]);

    let rows = admin.group_offsets("web", OffsetStorage::Zookeeper).await.unwrap();
    let table: Vec<_> = rows.iter().map(|r| (r.partition, r.offset, r.log_size, r.lag, r.owner.clone())).collect();
    assert_eq!(
        table,
        [
            (0, Some(7), Some(10), Some(3), Some(format!("{member}-0"))),
            (1, Some(1), Some(4), Some(3), Some(format!("{member}-0")))
        ]
    );
    assert!(rows
        .iter()
        .all(|r| r.group == "web" && r.topic == "clicks" && r.committed_in == Some(OffsetStorage::Zookeeper)));

    // an active group is left alone
    let err = admin.reset_offsets("web", "clicks", OffsetReset::Earliest, OffsetStorage::Zookeeper).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "consumer group \"web\" is active (1 registered: {member}): stop its consumers before resetting offsets"
        )
    );

    unregister_consumer(&admin, "web", member, "clicks", &[0, 1]).await;
    let reset = admin.reset_offsets("web", "clicks", OffsetReset::Earliest, OffsetStorage::Zookeeper).await.unwrap();
    assert_eq!(
        reset.iter().map(|r| (r.partition, r.previous, r.offset)).collect::<Vec<_>>(),
        [(0, Some(7), 0), (1, Some(1), 0)]
    );
    let (data, _) = admin.zk().get(&paths::offset("web", "clicks", 0)).await.unwrap().unwrap();
    assert_eq!(data, b"0");
    let reset = admin.reset_offsets("web", "clicks", OffsetReset::Latest, OffsetStorage::Zookeeper).await.unwrap();
    assert_eq!(reset.iter().map(|r| r.offset).collect::<Vec<_>>(), [10, 4]);
    let err = admin.reset_offsets("web", "clicks", OffsetReset::Offset(5), OffsetStorage::Zookeeper).await.unwrap_err();
    assert_eq!(err.to_string(), "offset 5 is out of range for clicks/1: the partition holds offsets 0 to 4");
    admin.reset_offsets("web", "clicks", OffsetReset::Offset(3), OffsetStorage::Zookeeper).await.unwrap();
    let rows = admin.group_offsets("web", OffsetStorage::Zookeeper).await.unwrap();
    let table: Vec<_> = rows.iter().map(|r| (r.offset, r.lag, r.owner.clone())).collect();
    assert_eq!(table, [(Some(3), Some(7), None), (Some(3), Some(1), None)]);

    assert!(matches!(admin.describe_group("nobody").await.unwrap_err(), Error::UnknownGroup { .. }));
    assert!(matches!(
        admin.group_offsets("nobody", OffsetStorage::Zookeeper).await.unwrap_err(),
        Error::UnknownGroup { .. }
    ));
    assert!(matches!(
        admin.reset_offsets("web", "nope", OffsetReset::Latest, OffsetStorage::Zookeeper).await.unwrap_err(),
        Error::UnknownTopic { .. }
    ));
    admin.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_stored_offsets_lag_and_reset() {
    let (c, admin) = cluster_or_skip!("admin-groups-kafka");
    admin.create_topic_with_assignment("orders", &[vec![0], vec![1]], NO_CONFIG).await.unwrap();
    c.wait_for_leaders("orders", WAIT).await.unwrap();
    assert_eq!(produce(&c, "orders", 0, 12, 20).await.0, None);
    assert_eq!(produce(&c, "orders", 1, 5, 20).await.0, None);

    // partition 0 committed in Kafka by a v1 commit through the coordinator; partition 1 only
    // in ZooKeeper (a group migrating off ZooKeeper)
    commit_in_kafka(&c, "billing", "orders", 0, 8).await;
    admin.zk().set_or_create(&paths::offset("billing", "orders", 1), &encode_offset(2)).await.unwrap();

    let rows = admin.group_offsets_for_topics("billing", OffsetStorage::Kafka, &["orders"]).await.unwrap();
    let table: Vec<_> = rows.iter().map(|r| (r.partition, r.offset, r.log_size, r.lag, r.committed_in)).collect();
    assert_eq!(
        table,
        [
            (0, Some(8), Some(12), Some(4), Some(OffsetStorage::Kafka)),
            (1, Some(2), Some(5), Some(3), Some(OffsetStorage::Zookeeper)),
        ]
    );
    // found through ZooKeeper's traces of the group too
    assert_eq!(admin.group_offsets("billing", OffsetStorage::Kafka).await.unwrap(), rows);
    // ZooKeeper storage sees only partition 1
    let zk_rows = admin.group_offsets("billing", OffsetStorage::Zookeeper).await.unwrap();
    assert_eq!(zk_rows.iter().map(|r| (r.offset, r.lag)).collect::<Vec<_>>(), [(None, None), (Some(2), Some(3))]);

    let member = "billing_host-1427000000000-0badcafe";
    register_consumer(&admin, "billing", member, "orders", &[0]).await;
    let err = admin.reset_offsets("billing", "orders", OffsetReset::Latest, OffsetStorage::Kafka).await.unwrap_err();
    assert!(matches!(&err, Error::GroupActive { members, .. } if members == &[member.to_owned()]), "{err}");
    unregister_consumer(&admin, "billing", member, "orders", &[0]).await;

    let reset = admin.reset_offsets("billing", "orders", OffsetReset::Latest, OffsetStorage::Kafka).await.unwrap();
    assert_eq!(
        reset.iter().map(|r| (r.partition, r.previous, r.offset)).collect::<Vec<_>>(),
        [(0, Some(8), 12), (1, Some(2), 5)]
    );
    let rows = admin.group_offsets_for_topics("billing", OffsetStorage::Kafka, &["orders"]).await.unwrap();
    let table: Vec<_> = rows.iter().map(|r| (r.offset, r.lag, r.committed_in)).collect();
    assert_eq!(
        table,
        [(Some(12), Some(0), Some(OffsetStorage::Kafka)), (Some(5), Some(0), Some(OffsetStorage::Kafka))]
    );
    // ZooKeeper's copy is untouched
    let (data, _) = admin.zk().get(&paths::offset("billing", "orders", 1)).await.unwrap().unwrap();
    assert_eq!(data, b"2");

    // lag follows new messages
    assert_eq!(produce(&c, "orders", 0, 3, 20).await.0, None);
    let rows = admin.group_offsets_for_topics("billing", OffsetStorage::Kafka, &["orders"]).await.unwrap();
    assert_eq!((rows[0].log_size, rows[0].lag), (Some(15), Some(3)));

    // a coordinator that moved is looked up again; one that never comes is given up on
    c.intercept(Rule::on(ApiKey::OffsetFetch, Fault::Error(ErrorCode::NotCoordinatorForConsumer)).times(2));
    let again = admin.group_offsets_for_topics("billing", OffsetStorage::Kafka, &["orders"]).await.unwrap();
    assert_eq!(again, rows);
    c.intercept(Rule::on(ApiKey::ConsumerMetadata, Fault::Error(ErrorCode::ConsumerCoordinatorNotAvailable)));
    let impatient =
        admin.clone().with_coordinator_retries(3, Backoff::new(Duration::from_millis(10), Duration::from_millis(20)));
    let err = impatient.group_offsets_for_topics("billing", OffsetStorage::Kafka, &["orders"]).await.unwrap_err();
    assert!(matches!(err, Error::CoordinatorNotAvailable { attempts: 3, .. }), "{err}");
    assert_eq!(err.to_string(), "no offset coordinator found for consumer group \"billing\" after 3 attempts");
    c.clear_intercepts();
    admin.close().await.unwrap();
}

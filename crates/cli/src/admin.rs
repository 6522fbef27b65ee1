//! The administration commands, through ZooKeeper with gregor-admin, as Kafka 0.8.2's tools:
//! `topics` (kafka-topics.sh), `brokers`, `groups` (ConsumerOffsetChecker and offset resets),
//! `health`, `reassign` (kafka-reassign-partitions.sh) and `elect-leaders`
//! (kafka-preferred-replica-election.sh).
//!
//! Each prints a table (or sentences) for people, or with `--output json` one JSON document.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use gregor_admin::{
    parse_reassignment_json, parse_topics_to_move_json, Admin, DeleteTopicOutcome, OffsetReset, OffsetStorage,
    PartitionDescription, ReassignmentPlan, ReassignmentStatus, TopicDescription, TopicPartition, TopicSelection,
};
use serde_json::{json, Value};

use crate::cli::{
    BrokersArgs, ElectLeadersArgs, GroupsArgs, HealthArgs, OutputFormat, ReassignArgs, ResetTo, Storage, TopicsArgs,
    ZkArgs,
};
use crate::error::CliError;
use crate::table::{ids, opt, print, print_json, Table};

/// A ZooKeeper session for the admin, or the error naming the connect string.
pub(crate) async fn connect_zk(zookeeper: &str, timeout: Duration) -> Result<Admin, CliError> {
    Admin::connect(zookeeper, timeout)
        .await
        .map_err(|e| CliError::new(format!("could not connect to zookeeper at {zookeeper}"), e))
}

/// The admin handle of an admin command: its ZooKeeper session, and broker connections
/// secured as its `--command-config` file says.
pub(crate) async fn connect(zk: &ZkArgs) -> Result<Admin, CliError> {
    let security = crate::properties::security(zk.command_config.as_deref())?;
    Ok(connect_zk(&zk.zookeeper, Duration::from_millis(zk.zookeeper_timeout_ms)).await?.with_security(&security))
}

/// Runs `f` with an admin handle, closing it afterwards whatever happened.
macro_rules! with_admin {
    ($zk:expr, |$admin:ident| $body:expr) => {{
        let $admin = connect($zk).await?;
        let result = $body;
        let _ = $admin.close().await;
        result
    }};
}

fn leader(p: &PartitionDescription) -> String {
    match p.leader {
        Some(l) if p.leader_live => l.to_string(),
        Some(l) => format!("{l} (not live)"),
        None => "none".to_owned(),
    }
}

fn partition_json(p: &PartitionDescription) -> Value {
    json!({
        "topic": p.topic,
        "partition": p.partition,
        "leader": p.leader,
        "leader_live": p.leader_live,
        "replicas": p.replicas,
        "isr": p.isr,
        "under_replicated": p.is_under_replicated(),
        "unavailable": p.is_unavailable(),
    })
}

fn partition_table<'a>(partitions: impl IntoIterator<Item = &'a PartitionDescription>) -> Table {
    let mut t = Table::new(&["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR"]);
    for p in partitions {
        t.row(vec![p.topic.clone(), p.partition.to_string(), leader(p), ids(&p.replicas), ids(&p.isr)]);
    }
    t
}

fn configs(c: &std::collections::BTreeMap<String, String>) -> String {
    c.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

// ---------------------------------------------------------------------------------------------
// topics
// ---------------------------------------------------------------------------------------------

/// Runs `gregor topics`.
pub(crate) async fn topics(args: TopicsArgs) -> Result<(), CliError> {
    with_admin!(&args.zk, |admin| topics_with(&admin, &args).await)
}

async fn topics_with(admin: &Admin, args: &TopicsArgs) -> Result<(), CliError> {
    let json = args.output == OutputFormat::Json;
    let topic = args.topic.as_deref().unwrap_or_default();
    if args.create {
        let config = args.config.iter().cloned();
        let assignment: Vec<Vec<i32>> = match &args.replica_assignment {
            Some(text) => {
                let assignment = parse_assignment(text)?;
                admin
                    .create_topic_with_assignment(topic, &assignment, config)
                    .await
                    .map_err(|e| CliError::new(format!("could not create topic {topic:?}"), e))?;
                assignment
            }
            None => {
                let (partitions, rf) = (args.partitions.unwrap_or(1), args.replication_factor.unwrap_or(1));
                admin
                    .create_topic(topic, partitions, rf, config)
                    .await
                    .map_err(|e| CliError::new(format!("could not create topic {topic:?}"), e))?
                    .into_values()
                    .collect()
            }
        };
        return if json {
            print_json(&json!({ "created": topic, "replicas": assignment })).await
        } else {
            print(&format!("Created topic {topic:?}.\n")).await
        };
    }
    if args.list {
        let topics = admin.list_topics().await.map_err(|e| CliError::new("could not list the topics", e))?;
        return if json {
            let list: Vec<Value> = topics
                .iter()
                .map(|t| json!({ "topic": t.name, "marked_for_deletion": t.marked_for_deletion }))
                .collect();
            print_json(&Value::Array(list)).await
        } else {
            let text: String = topics
                .iter()
                .map(|t| {
                    if t.marked_for_deletion {
                        format!("{} - marked for deletion\n", t.name)
                    } else {
                        format!("{}\n", t.name)
                    }
                })
                .collect();
            print(&text).await
        };
    }
    if args.describe {
        let filter = match &args.topic {
            Some(t) => TopicSelection::only([t.clone()]),
            None => TopicSelection::All,
        };
        let what = args.topic.as_ref().map_or_else(|| "the topics".to_owned(), |t| format!("topic {t:?}"));
        let topics =
            admin.describe_topics(&filter).await.map_err(|e| CliError::new(format!("could not describe {what}"), e))?;
        let filtered = args.under_replicated_partitions || args.unavailable_partitions;
        let keep = |p: &PartitionDescription| {
            !filtered
                || (args.under_replicated_partitions && p.is_under_replicated())
                || (args.unavailable_partitions && p.is_unavailable())
        };
        return if json {
            if filtered {
                let list: Vec<Value> =
                    topics.iter().flat_map(|t| t.partitions.iter()).filter(|p| keep(p)).map(partition_json).collect();
                print_json(&Value::Array(list)).await
            } else {
                print_json(&Value::Array(topics.iter().map(topic_json).collect())).await
            }
        } else if filtered {
            let t = partition_table(topics.iter().flat_map(|t| t.partitions.iter()).filter(|p| keep(p)));
            print(&if t.is_empty() { String::new() } else { t.render() }).await
        } else {
            let mut summary = Table::new(&["TOPIC", "PARTITIONS", "REPLICATION", "CONFIGS"]);
            for t in &topics {
                let name =
                    if t.marked_for_deletion { format!("{} (marked for deletion)", t.name) } else { t.name.clone() };
                summary.row(vec![
                    name,
                    t.partition_count().to_string(),
                    t.replication_factor().to_string(),
                    configs(&t.config),
                ]);
            }
            let parts = partition_table(topics.iter().flat_map(|t| t.partitions.iter()));
            let text =
                if topics.is_empty() { String::new() } else { format!("{}\n{}", summary.render(), parts.render()) };
            print(&text).await
        };
    }
    if args.alter {
        let mut added = None;
        if let Some(total) = args.partitions {
            let given = args.replica_assignment.as_deref().map(parse_assignment).transpose()?;
            let new = admin
                .add_partitions(topic, total, given.as_deref())
                .await
                .map_err(|e| CliError::new(format!("could not add partitions to topic {topic:?}"), e))?;
            added = Some(new);
        }
        let mut config = None;
        if !args.config.is_empty() || !args.delete_config.is_empty() {
            let delete: Vec<&str> = args.delete_config.iter().map(String::as_str).collect();
            let new = admin
                .alter_topic_config(topic, args.config.iter().cloned(), &delete)
                .await
                .map_err(|e| CliError::new(format!("could not change the config of topic {topic:?}"), e))?;
            config = Some(new);
        }
        return if json {
            let added: Option<Value> =
                added.as_ref().map(|a| a.iter().map(|(p, r)| json!({ "partition": p, "replicas": r })).collect());
            print_json(&json!({ "topic": topic, "added_partitions": added, "config": config })).await
        } else {
            let mut text = String::new();
            if let Some(a) = &added {
                let total = args.partitions.unwrap_or_default();
                text.push_str(&format!("Added {} partitions to topic {topic:?} (now {total}).\n", a.len()));
            }
            if let Some(c) = &config {
                text.push_str(&format!("Updated config for topic {topic:?}: {}\n", configs(c)));
            }
            print(&text).await
        };
    }
    if args.delete {
        let outcome = admin
            .delete_topic(topic)
            .await
            .map_err(|e| CliError::new(format!("could not delete topic {topic:?}"), e))?;
        let already = !matches!(outcome, DeleteTopicOutcome::MarkedForDeletion);
        return if json {
            print_json(&json!({ "topic": topic, "marked_for_deletion": true, "already_marked": already })).await
        } else if already {
            print(&format!("Topic {topic} is already marked for deletion.\n")).await
        } else {
            print(&format!(
                "Topic {topic} is marked for deletion.\n\
                 Note: This will have no impact if delete.topic.enable is not set to true.\n"
            ))
            .await
        };
    }
    Ok(())
}

fn topic_json(t: &TopicDescription) -> Value {
    json!({
        "topic": t.name,
        "partition_count": t.partition_count(),
        "replication_factor": t.replication_factor(),
        "config": t.config,
        "marked_for_deletion": t.marked_for_deletion,
        "partitions": t.partitions.iter().map(partition_json).collect::<Vec<_>>(),
    })
}

fn parse_assignment(text: &str) -> Result<Vec<Vec<i32>>, CliError> {
    gregor_admin::placement::parse_replica_assignment(text)
        .map_err(|e| CliError::new(format!("invalid --replica-assignment {text:?}"), e))
}

// ---------------------------------------------------------------------------------------------
// brokers and health
// ---------------------------------------------------------------------------------------------

/// Runs `gregor brokers`: from ZooKeeper with `--zookeeper`, from a Metadata request with
/// `--bootstrap-server` ([`crate::brokers`]).
pub(crate) async fn brokers(args: BrokersArgs) -> Result<(), CliError> {
    let zk = match (args.zookeeper, &args.broker_list) {
        (Some(zookeeper), None) => {
            ZkArgs { zookeeper, zookeeper_timeout_ms: args.zookeeper_timeout_ms, command_config: args.command_config }
        }
        (None, Some(broker_list)) => {
            return crate::brokers::run(crate::brokers::MetadataSource {
                broker_list,
                command_config: args.command_config.as_deref(),
                properties: &args.properties,
                output: args.output,
            })
            .await
        }
        // clap's "source" group already refuses both and neither; this keeps the message if not
        _ => return Err(CliError::msg("give exactly one of --zookeeper and --bootstrap-server (--broker-list)")),
    };
    let list = with_admin!(&zk, |admin| admin
        .list_brokers()
        .await
        .map_err(|e| CliError::new("could not list the brokers", e)))?;
    if args.output == OutputFormat::Json {
        let brokers: Vec<Value> = list
            .brokers
            .iter()
            .map(|b| {
                json!({
                    "id": b.id, "host": b.host, "port": b.port, "jmx_port": b.jmx_port,
                    "timestamp_ms": b.timestamp_ms, "controller": list.controller == Some(b.id),
                })
            })
            .collect();
        return print_json(&json!({ "controller": list.controller, "brokers": brokers })).await;
    }
    let mut t = Table::new(&["ID", "HOST", "PORT", "JMX_PORT", "CONTROLLER"]);
    for b in &list.brokers {
        let jmx = if b.jmx_port < 0 { "-".to_owned() } else { b.jmx_port.to_string() };
        let controller = if list.controller == Some(b.id) { "yes" } else { "" };
        t.row(vec![b.id.to_string(), b.host.clone(), b.port.to_string(), jmx, controller.to_owned()]);
    }
    print(&t.render()).await
}

/// Runs `gregor health`.
pub(crate) async fn health(args: HealthArgs) -> Result<(), CliError> {
    let h = with_admin!(&args.zk, |admin| admin
        .health()
        .await
        .map_err(|e| CliError::new("could not read the cluster's state", e)))?;
    if args.output == OutputFormat::Json {
        let brokers: Vec<Value> = h
            .brokers
            .iter()
            .map(|b| {
                json!({
                    "id": b.id, "live": b.live, "leader_count": b.leader_count,
                    "partition_count": b.partition_count, "preferred_leader_count": b.preferred_leader_count,
                })
            })
            .collect();
        let parts = |ps: &[PartitionDescription]| ps.iter().map(partition_json).collect::<Vec<_>>();
        return print_json(&json!({
            "healthy": h.is_healthy(),
            "controller": h.controller,
            "live_brokers": h.live_brokers,
            "topic_count": h.topic_count,
            "partition_count": h.partition_count,
            "brokers": brokers,
            "under_replicated": parts(&h.under_replicated),
            "offline": parts(&h.offline),
            "not_on_preferred_leader": parts(&h.not_on_preferred_leader),
        }))
        .await;
    }
    let mut text = format!(
        "status: {}\ncontroller: {}\nlive brokers: {}\ntopics: {}, partitions: {}\n\
         under-replicated partitions: {}\noffline partitions: {}\npartitions not led by their preferred replica: {}\n\n",
        if h.is_healthy() { "healthy" } else { "UNHEALTHY" },
        opt(h.controller),
        ids(&h.live_brokers),
        h.topic_count,
        h.partition_count,
        h.under_replicated.len(),
        h.offline.len(),
        h.not_on_preferred_leader.len(),
    );
    let mut t = Table::new(&["BROKER", "LIVE", "LEADERS", "PARTITIONS", "PREFERRED_LEADERS"]);
    for b in &h.brokers {
        t.row(vec![
            b.id.to_string(),
            if b.live { "yes" } else { "no" }.to_owned(),
            b.leader_count.to_string(),
            b.partition_count.to_string(),
            b.preferred_leader_count.to_string(),
        ]);
    }
    text.push_str(&t.render());
    for (title, list) in [("Under-replicated partitions", &h.under_replicated), ("Offline partitions", &h.offline)] {
        if !list.is_empty() {
            text.push_str(&format!("\n{title}:\n{}", partition_table(list.iter()).render()));
        }
    }
    print(&text).await
}

// ---------------------------------------------------------------------------------------------
// groups
// ---------------------------------------------------------------------------------------------

fn storage(s: Storage) -> OffsetStorage {
    match s {
        Storage::Zookeeper => OffsetStorage::Zookeeper,
        Storage::Kafka => OffsetStorage::Kafka,
    }
}

fn storage_name(s: OffsetStorage) -> &'static str {
    match s {
        OffsetStorage::Zookeeper => "zookeeper",
        OffsetStorage::Kafka => "kafka",
    }
}

/// Runs `gregor groups`.
pub(crate) async fn groups(args: GroupsArgs) -> Result<(), CliError> {
    with_admin!(&args.zk, |admin| groups_with(&admin, &args).await)
}

async fn groups_with(admin: &Admin, args: &GroupsArgs) -> Result<(), CliError> {
    let json = args.output == OutputFormat::Json;
    let group = args.group.as_deref().unwrap_or_default();
    let store = storage(args.offsets_storage);
    if args.list {
        let groups = admin.list_groups().await.map_err(|e| CliError::new("could not list the consumer groups", e))?;
        return if json {
            print_json(&json!(groups)).await
        } else {
            print(&groups.iter().map(|g| format!("{g}\n")).collect::<String>()).await
        };
    }
    if args.describe {
        let context = || format!("could not describe consumer group {group:?}");
        // a group keeping its offsets in Kafka only has no /consumers/G: no members then
        let description = match admin.describe_group(group).await {
            Ok(d) => Some(d),
            Err(gregor_admin::Error::UnknownGroup { .. }) if store == OffsetStorage::Kafka || args.topic.is_some() => {
                None
            }
            Err(e) => return Err(CliError::new(context(), e)),
        };
        let offsets = match &args.topic {
            Some(t) => admin.group_offsets_for_topics(group, store, &[t.as_str()]).await,
            None => admin.group_offsets(group, store).await,
        }
        .map_err(|e| CliError::new(context(), e))?;
        let members = description.map(|d| d.members).unwrap_or_default();
        if json {
            let members: Vec<Value> = members
                .iter()
                .map(|m| {
                    json!({
                        "consumer_id": m.consumer_id, "pattern": m.pattern,
                        "subscription": m.subscription, "timestamp_ms": m.timestamp_ms,
                    })
                })
                .collect();
            let offsets: Vec<Value> = offsets
                .iter()
                .map(|o| {
                    json!({
                        "topic": o.topic, "partition": o.partition, "offset": o.offset,
                        "committed_in": o.committed_in.map(storage_name), "log_size": o.log_size,
                        "lag": o.lag, "owner": o.owner, "problem": o.problem,
                    })
                })
                .collect();
            return print_json(&json!({ "group": group, "members": members, "offsets": offsets })).await;
        }
        let mut text = String::new();
        if members.is_empty() {
            text.push_str(&format!("Consumer group {group} has no active member.\n\n"));
        } else {
            let mut t = Table::new(&["MEMBER", "PATTERN", "SUBSCRIPTION"]);
            for m in &members {
                let sub = m.subscription.iter().map(|(k, n)| format!("{k}:{n}")).collect::<Vec<_>>().join(",");
                t.row(vec![m.consumer_id.clone(), m.pattern.clone(), sub]);
            }
            text.push_str(&t.render());
            text.push('\n');
        }
        let mut t = Table::new(&["GROUP", "TOPIC", "PID", "OFFSET", "LOGSIZE", "LAG", "OWNER"]);
        let mut problems = String::new();
        for o in &offsets {
            t.row(vec![
                group.to_owned(),
                o.topic.clone(),
                o.partition.to_string(),
                o.offset.map_or_else(|| "unknown".to_owned(), |v| v.to_string()),
                o.log_size.map_or_else(|| "unknown".to_owned(), |v| v.to_string()),
                o.lag.map_or_else(|| "unknown".to_owned(), |v| v.to_string()),
                o.owner.clone().unwrap_or_else(|| "none".to_owned()),
            ]);
            if let Some(p) = &o.problem {
                problems.push_str(&format!("{}/{}: {p}\n", o.topic, o.partition));
            }
        }
        text.push_str(&t.render());
        if !problems.is_empty() {
            let _ = std::io::Write::write_all(&mut std::io::stderr(), problems.as_bytes());
        }
        return print(&text).await;
    }
    if args.reset_offsets {
        let topic = args.topic.as_deref().unwrap_or_default();
        let to = match args.to {
            Some(ResetTo::Earliest) => OffsetReset::Earliest,
            Some(ResetTo::Latest) | None => OffsetReset::Latest,
            Some(ResetTo::Offset(n)) => OffsetReset::Offset(n),
        };
        let results = admin.reset_offsets(group, topic, to, store).await.map_err(|e| {
            CliError::new(format!("could not reset the offsets of consumer group {group:?} on {topic:?}"), e)
        })?;
        if json {
            let list: Vec<Value> = results
                .iter()
                .map(|r| json!({ "topic": r.topic, "partition": r.partition, "previous": r.previous, "offset": r.offset }))
                .collect();
            return print_json(&json!({ "group": group, "storage": storage_name(store), "partitions": list })).await;
        }
        let mut t = Table::new(&["TOPIC", "PARTITION", "PREVIOUS", "NEW"]);
        for r in &results {
            t.row(vec![
                r.topic.clone(),
                r.partition.to_string(),
                r.previous.map_or_else(|| "none".to_owned(), |v| v.to_string()),
                r.offset.to_string(),
            ]);
        }
        return print(&t.render()).await;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// reassign and elect-leaders
// ---------------------------------------------------------------------------------------------

fn read(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|e| CliError::new(format!("could not read {}", path.display()), e))
}

/// Runs `gregor reassign`.
pub(crate) async fn reassign(args: ReassignArgs) -> Result<(), CliError> {
    // the files are checked before ZooKeeper is asked anything
    let plan = match &args.reassignment_json_file {
        Some(path) if args.execute || args.verify => Some(
            parse_reassignment_json(&read(path)?)
                .map_err(|e| CliError::new(format!("invalid reassignment file {}", path.display()), e))?,
        ),
        _ => None,
    };
    let topics = match &args.topics_to_move_json_file {
        Some(path) if args.generate => Some(
            parse_topics_to_move_json(&read(path)?)
                .map_err(|e| CliError::new(format!("invalid topics-to-move file {}", path.display()), e))?,
        ),
        _ => None,
    };
    with_admin!(&args.zk, |admin| reassign_with(&admin, &args, plan, topics).await)
}

fn plan_json(plan: &ReassignmentPlan) -> Value {
    serde_json::from_str(&plan.to_json()).unwrap_or(Value::Null)
}

async fn reassign_with(
    admin: &Admin,
    args: &ReassignArgs,
    plan: Option<ReassignmentPlan>,
    topics: Option<Vec<String>>,
) -> Result<(), CliError> {
    let json = args.output == OutputFormat::Json;
    if let Some(topics) = topics {
        let proposed = admin
            .generate_reassignment(&topics, &args.broker_list)
            .await
            .map_err(|e| CliError::new("could not generate a reassignment", e))?;
        return if json {
            print_json(&json!({ "current": plan_json(&proposed.current), "proposed": plan_json(&proposed.proposed) }))
                .await
        } else {
            print(&format!(
                "Current partition replica assignment\n\n{}\n\nProposed partition reassignment configuration\n\n{}\n",
                proposed.current.to_json(),
                proposed.proposed.to_json()
            ))
            .await
        };
    }
    let Some(plan) = plan else { return Ok(()) };
    if args.execute {
        let done = admin
            .execute_reassignment(&plan)
            .await
            .map_err(|e| CliError::new("could not start the reassignment", e))?;
        if json {
            let skipped: Vec<Value> =
                done.skipped.iter().map(|tp| json!({ "topic": tp.topic, "partition": tp.partition })).collect();
            return print_json(&json!({
                "previous": plan_json(&done.previous),
                "started": plan_json(&done.started),
                "skipped": skipped,
            }))
            .await;
        }
        let mut text = format!(
            "Current partition replica assignment\n\n{}\n\nSave this to use as the --reassignment-json-file option \
             during rollback\nSuccessfully started reassignment of partitions {}\n",
            done.previous.to_json(),
            done.started.to_json()
        );
        for tp in &done.skipped {
            text.push_str(&format!("Skipped [{},{}]: the partition does not exist\n", tp.topic, tp.partition));
        }
        return print(&text).await;
    }
    if args.verify {
        let statuses = admin
            .verify_reassignment(&plan)
            .await
            .map_err(|e| CliError::new("could not verify the reassignment", e))?;
        if json {
            let list: Vec<Value> = statuses
                .iter()
                .map(|s| {
                    let (status, assigned) = match &s.status {
                        ReassignmentStatus::Completed => ("completed", None),
                        ReassignmentStatus::InProgress => ("in_progress", None),
                        ReassignmentStatus::Failed { assigned } => ("failed", Some(assigned.clone())),
                    };
                    json!({ "topic": s.topic, "partition": s.partition, "target": s.target,
                            "status": status, "assigned": assigned })
                })
                .collect();
            return print_json(&Value::Array(list)).await;
        }
        let mut text = "Status of partition reassignment:\n".to_owned();
        for s in &statuses {
            let what = match &s.status {
                ReassignmentStatus::Completed => "completed successfully".to_owned(),
                ReassignmentStatus::InProgress => "is still in progress".to_owned(),
                ReassignmentStatus::Failed { assigned } => {
                    format!("failed (replicas are {}, not {})", ids(assigned), ids(&s.target))
                }
            };
            text.push_str(&format!("Reassignment of partition [{},{}] {what}\n", s.topic, s.partition));
        }
        return print(&text).await;
    }
    Ok(())
}

/// Parses `{"partitions":[{"topic":"t","partition":0},...]}` (kafka-preferred-replica-election's
/// file).
fn parse_election_json(text: &str) -> Result<Vec<TopicPartition>, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("malformed JSON: {e}"))?;
    let parts =
        doc.get("partitions").ok_or("no \"partitions\" field")?.as_array().ok_or("\"partitions\" is not an array")?;
    let mut out = Vec::with_capacity(parts.len());
    let mut seen = BTreeSet::new();
    for (i, p) in parts.iter().enumerate() {
        let topic = p
            .get("topic")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("partitions[{i}].topic is missing or not a string"))?;
        let partition = p
            .get("partition")
            .and_then(Value::as_i64)
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| format!("partitions[{i}].partition is missing or not an integer"))?;
        if !seen.insert((topic.to_owned(), partition)) {
            return Err(format!("[{topic},{partition}] is listed twice"));
        }
        out.push(TopicPartition::new(topic, partition));
    }
    if out.is_empty() {
        return Err("it lists no partition".to_owned());
    }
    Ok(out)
}

/// Runs `gregor elect-leaders`.
pub(crate) async fn elect_leaders(args: ElectLeadersArgs) -> Result<(), CliError> {
    let listed = match &args.path_to_json_file {
        Some(path) => Some(parse_election_json(&read(path)?).map_err(|reason| {
            CliError::msg(format!("invalid preferred replica election file {}: {reason}", path.display()))
        })?),
        None => None,
    };
    let elected = with_admin!(&args.zk, |admin| async {
        let list = match (&listed, &args.topic) {
            (Some(l), _) => Some(l.clone()),
            (None, Some(topic)) => {
                let topics = admin
                    .describe_topics(&TopicSelection::only([topic.clone()]))
                    .await
                    .map_err(|e| CliError::new(format!("could not describe topic {topic:?}"), e))?;
                Some(
                    topics
                        .iter()
                        .flat_map(|t| &t.partitions)
                        .map(|p| TopicPartition::new(p.topic.clone(), p.partition))
                        .collect::<Vec<_>>(),
                )
            }
            (None, None) => None,
        };
        admin
            .preferred_replica_election(list.as_deref())
            .await
            .map_err(|e| CliError::new("could not start a preferred replica election", e))
    }
    .await)?;
    if args.output == OutputFormat::Json {
        let list: Vec<Value> = elected.iter().map(|p| json!({ "topic": p.topic, "partition": p.partition })).collect();
        return print_json(&json!({ "partitions": list })).await;
    }
    let list = elected.iter().map(|p| format!("[{},{}]", p.topic, p.partition)).collect::<Vec<_>>().join(",");
    print(&format!("Successfully started preferred replica election for partitions {list}\n")).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn election_files_are_kafkas() {
        let list =
            parse_election_json(r#"{"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":2}]}"#).unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!((list[1].topic.as_str(), list[1].partition), ("u", 2));
        assert!(parse_election_json("{").unwrap_err().starts_with("malformed JSON"));
        assert!(parse_election_json(r#"{"partitions":[]}"#).is_err());
        assert!(parse_election_json(r#"{"partitions":[{"topic":"t"}]}"#).unwrap_err().contains("partition"));
        let twice = r#"{"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":0}]}"#;
        assert!(parse_election_json(twice).unwrap_err().contains("twice"));
    }
}

//! The modern mode's admin APIs: DeleteTopics, DescribeConfigs, AlterConfigs,
//! IncrementalAlterConfigs and CreatePartitions, as a Kafka 3.7 KRaft broker answers them.
//!
//! Each change is applied to the cluster's metadata at once, as the KRaft controller commits it
//! and every broker then sees it (`timeout_ms` is never waited). A topic's configs live in
//! [`super::state::Topic::config`] (its own settings only); what they mean, how they are checked
//! and where an unset one comes from is [`super::topic_configs`].
//!
//! Facts from the genuine Kafka 3.7.0 captures and Kafka's behaviour:
//!
//! * DeleteTopics (v1-v6): an unknown name answers 3 UNKNOWN_TOPIC_OR_PARTITION, an unknown id
//!   (v6) 100 UNKNOWN_TOPIC_ID with a null name; a topic named twice, or by both name and id,
//!   42 INVALID_REQUEST; with `delete.topic.enable=false`, 73 TOPIC_DELETION_DISABLED (v3+) or
//!   42 (older). The topic's partitions and their logs go, and so do the offsets groups
//!   committed for it.
//! * CreatePartitions (v0-v3): `count` is the new total; one not larger than the current count
//!   answers 37 INVALID_PARTITIONS, an unknown topic 3, a bad assignment 39
//!   INVALID_REPLICA_ASSIGNMENT, more than 10000 new partitions at once 44 POLICY_VIOLATION.
//!   Without an assignment the new partitions are placed as Kafka's `AdminZkClient` places
//!   them: round-robin over the live brokers from the broker of partition 0's first replica,
//!   with partition 0's replication factor.
//! * DescribeConfigs (v1-v4): topics (resource type 2; unknown: 3) list all 31 configs of a
//!   Kafka 3.7 topic with value, source and, when asked, synonyms; a broker (type 4) named by
//!   its own id lists its broker-level configs, the empty name (the cluster-wide dynamic
//!   defaults, none here) nothing, another id 42. A success carries an empty (not null) error
//!   message. Documentation is never given (null).
//! * AlterConfigs (v0-v2) replaces a topic's own settings; IncrementalAlterConfigs (v0-v1) sets
//!   (0), deletes (1), appends to (2) or subtracts from (3) single ones, the last two for list
//!   configs only. An unknown name or bad value answers 40 INVALID_CONFIG, a name given twice
//!   42; `validate_only` checks without changing anything. Broker configs are not changed by
//!   the fake (42).

use std::collections::{BTreeMap, HashMap};

use gregor_protocol::frame::{ApiKey, RequestHeader};
use gregor_protocol::messages::*;
use gregor_protocol::schema::Uuid;

use super::codes::*;
use super::handlers::{BrokerCtx, Reply};
use super::modern::frame_for;
use super::placement::assign_replicas;
use super::state::{Partition, State, Topic};
use super::topic_configs::{self, Kind};

/// The admin APIs and versions the modern mode serves: from the oldest Kafka 4.0 still accepts
/// (KIP-896) to the newest Kafka 3.7.0 advertised.
pub(crate) const SERVED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
];

/// The most partitions one CreatePartitions may add to a topic (Kafka's controller refuses a
/// larger batch).
const MAX_NEW_PARTITIONS: i32 = 10_000;

/// Resource type of a topic in the config APIs.
const RESOURCE_TOPIC: i8 = 2;
/// Resource type of a broker in the config APIs.
const RESOURCE_BROKER: i8 = 4;

/// An error code and its message.
type Refusal = (i16, String);

/// Answers an admin request.
pub(crate) async fn handle(ctx: &BrokerCtx, header: &RequestHeader, request: AnyRequest) -> Reply {
    let v = header.api_version;
    match request {
        AnyRequest::DeleteTopics(r) => frame_for::<DeleteTopicsRequest>(header, &delete_topics(ctx, v, &r)),
        AnyRequest::CreatePartitions(r) => frame_for::<CreatePartitionsRequest>(header, &create_partitions(ctx, &r)),
        AnyRequest::DescribeConfigs(r) => frame_for::<DescribeConfigsRequest>(header, &describe_configs(ctx, v, &r)),
        AnyRequest::AlterConfigs(r) => frame_for::<AlterConfigsRequest>(header, &alter_configs(ctx, &r)),
        AnyRequest::IncrementalAlterConfigs(r) => {
            frame_for::<IncrementalAlterConfigsRequest>(header, &incremental_alter_configs(ctx, &r))
        }
        _ => Reply::Close,
    }
}

/// How many times each key occurs.
fn counts<K: std::hash::Hash + Eq>(keys: impl IntoIterator<Item = K>) -> HashMap<K, usize> {
    let mut out = HashMap::new();
    for k in keys {
        *out.entry(k).or_insert(0) += 1;
    }
    out
}

/// DeleteTopics: removes each named topic from the metadata; the removed topics (their logs)
/// are freed after the state lock is let go.
fn delete_topics(ctx: &BrokerCtx, version: i16, req: &DeleteTopicsRequest) -> DeleteTopicsResponse {
    let asked: Vec<(Option<String>, Uuid)> = if version >= 6 {
        req.topics.iter().map(|t| (t.name.clone(), t.topic_id)).collect()
    } else {
        req.topic_names.iter().map(|n| (Some(n.clone()), Uuid::ZERO)).collect()
    };
    let times = counts(asked.iter().cloned());
    let enabled = ctx.shared.config.delete_topic_enable;
    let mut removed: Vec<Topic> = Vec::new();
    let mut responses = Vec::with_capacity(asked.len());
    {
        let mut st = ctx.shared.state();
        for key in &asked {
            let (name, id) = key;
            let mut out = DeletableTopicResult { name: name.clone(), ..Default::default() };
            if version >= 6 {
                out.topic_id = *id;
            }
            let outcome = if !enabled {
                let code = if version >= 3 { TOPIC_DELETION_DISABLED } else { INVALID_REQUEST };
                Err((code, "topic deletion is disabled (delete.topic.enable=false)".to_owned()))
            } else if name.is_some() && !id.is_zero() {
                Err((INVALID_REQUEST, "a topic is named either by name or by id, not both".to_owned()))
            } else if times.get(key).copied().unwrap_or(0) > 1 {
                Err((INVALID_REQUEST, "the topic is named more than once in the request".to_owned()))
            } else {
                delete_one(&mut st, name.as_deref(), *id)
            };
            match outcome {
                Ok((name, topic)) => {
                    out.name = Some(name);
                    if version >= 6 {
                        out.topic_id = topic.id;
                    }
                    removed.push(topic);
                }
                Err((code, message)) => {
                    out.error_code = code;
                    if version >= 5 {
                        out.error_message = Some(message);
                    }
                }
            }
            responses.push(out);
        }
    }
    // a topic of a few million messages is a gigabyte or more to free, and every produce and
    // fetch of the cluster takes the lock
    let any = !removed.is_empty();
    drop(removed);
    if any {
        ctx.shared.notify();
    }
    DeleteTopicsResponse { responses, ..Default::default() }
}

/// Removes one topic, named by name or (when `name` is `None`) by id, with the offsets groups
/// committed for it; returns its name and what was removed.
fn delete_one(st: &mut State, name: Option<&str>, id: Uuid) -> Result<(String, Topic), Refusal> {
    let name = match name {
        Some(n) => n.to_owned(),
        None => st
            .topic_named_by(id)
            .map(str::to_owned)
            .ok_or((UNKNOWN_TOPIC_ID, "no topic has this topic id".to_owned()))?,
    };
    let topic =
        st.topics.remove(&name).ok_or_else(|| (UNKNOWN_TOPIC_OR_PARTITION, format!("topic {name} does not exist")))?;
    st.group_offsets.retain(|(_, t, _), _| *t != name);
    Ok((name, topic))
}

/// CreatePartitions: raises each topic's partition count, or (`validate_only`) says whether it
/// could.
fn create_partitions(ctx: &BrokerCtx, req: &CreatePartitionsRequest) -> CreatePartitionsResponse {
    let times = counts(req.topics.iter().map(|t| t.name.as_str()));
    let mut changed = false;
    let results = {
        let mut st = ctx.shared.state();
        req.topics
            .iter()
            .map(|t| {
                let outcome = if times.get(t.name.as_str()).copied().unwrap_or(0) > 1 {
                    Err((INVALID_REQUEST, format!("topic {} is named more than once in the request", t.name)))
                } else {
                    add_partitions(&mut st, t, req.validate_only)
                };
                let mut out = CreatePartitionsTopicResult { name: t.name.clone(), ..Default::default() };
                match outcome {
                    Ok(added) => changed |= added,
                    Err((code, message)) => {
                        out.error_code = code;
                        out.error_message = Some(message);
                    }
                }
                out
            })
            .collect()
    };
    if changed {
        ctx.shared.notify();
    }
    CreatePartitionsResponse { results, ..Default::default() }
}

/// Checks and (unless `validate_only`) adds one topic's new partitions; whether any were added.
fn add_partitions(st: &mut State, t: &CreatePartitionsTopic, validate_only: bool) -> Result<bool, Refusal> {
    let live: Vec<i32> = st.brokers.keys().copied().filter(|b| st.is_live(*b)).collect();
    let topic = st
        .topics
        .get(&t.name)
        .ok_or_else(|| (UNKNOWN_TOPIC_OR_PARTITION, format!("topic {} does not exist", t.name)))?;
    let current = topic.partitions.len() as i32;
    if t.count <= current {
        let message = if t.count == current {
            format!("topic {} already has {current} partitions", t.name)
        } else {
            format!(
                "topic {} has {current} partitions, more than the {} asked for: partitions are never removed",
                t.name, t.count
            )
        };
        return Err((INVALID_PARTITIONS, message));
    }
    let add = t.count - current;
    if add > MAX_NEW_PARTITIONS {
        return Err((
            POLICY_VIOLATION,
            format!("{add} new partitions in one request is more than {MAX_NEW_PARTITIONS}"),
        ));
    }
    let first = topic.partitions.values().next().map(|p| p.replicas.clone()).unwrap_or_default();
    let rf = first.len().max(1);
    let new: Vec<Vec<i32>> = match &t.assignments {
        Some(given) => {
            if given.len() != add as usize {
                return Err((
                    INVALID_REPLICA_ASSIGNMENT,
                    format!("{add} partitions are added but {} assignments are given", given.len()),
                ));
            }
            for (i, a) in given.iter().enumerate() {
                let p = current as usize + i;
                let replicas = &a.broker_ids;
                let bad = |why: String| Err((INVALID_REPLICA_ASSIGNMENT, format!("partition {p}: {why}")));
                if replicas.len() != rf {
                    return bad(format!("{} replicas, where the topic's partitions have {rf}", replicas.len()));
                }
                if let Some(b) = replicas.iter().find(|b| !st.brokers.contains_key(b)) {
                    return bad(format!("broker {b} does not exist"));
                }
                if counts(replicas.iter()).values().any(|n| *n > 1) {
                    return bad("a broker is named twice".to_owned());
                }
                if !replicas.iter().any(|b| live.contains(b)) {
                    return bad("none of its brokers is running".to_owned());
                }
            }
            given.iter().map(|a| a.broker_ids.clone()).collect()
        }
        None => {
            if rf > live.len() {
                return Err((
                    INVALID_REPLICATION_FACTOR,
                    format!("{rf} replicas per partition cannot be placed on {} live brokers", live.len()),
                ));
            }
            let leader = first.first().copied().unwrap_or(0);
            let start = live.iter().position(|b| *b >= leader).unwrap_or(0);
            assign_replicas(&live, t.count, rf as i32, start, start).split_off(current as usize)
        }
    };
    if validate_only {
        return Ok(false);
    }
    let Some(topic) = st.topics.get_mut(&t.name) else { return Ok(false) };
    for (pid, replicas) in (current..).zip(new) {
        topic.partitions.insert(pid, Partition::new(replicas, &live));
    }
    Ok(true)
}

/// DescribeConfigs: topics' and this broker's configs.
fn describe_configs(ctx: &BrokerCtx, version: i16, req: &DescribeConfigsRequest) -> DescribeConfigsResponse {
    let cfg = &ctx.shared.config;
    let st = ctx.shared.state();
    let results = req
        .resources
        .iter()
        .map(|r| {
            let mut out = DescribeConfigsResult {
                error_message: Some(String::new()),
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
                ..Default::default()
            };
            let name = r.resource_name.as_str();
            let described = match r.resource_type {
                RESOURCE_TOPIC => match gregor_zk::paths::validate_topic_name(name) {
                    Err(e) => Err((INVALID_TOPIC, e.to_string())),
                    Ok(()) => st
                        .topics
                        .get(name)
                        .map(|t| topic_configs::describe_topic(cfg, &t.config))
                        .ok_or_else(|| (UNKNOWN_TOPIC_OR_PARTITION, format!("topic {name} does not exist"))),
                },
                RESOURCE_BROKER if name.is_empty() => Ok(Vec::new()),
                RESOURCE_BROKER if name.parse::<i32>().ok() == Some(ctx.id) => {
                    Ok(topic_configs::describe_broker(cfg, ctx.id))
                }
                RESOURCE_BROKER => Err((
                    INVALID_REQUEST,
                    format!("broker {} was asked about broker {name:?}: ask that broker", ctx.id),
                )),
                other => Err((INVALID_REQUEST, format!("resource type {other} is not served by the fake broker"))),
            };
            match described {
                Ok(all) => {
                    out.configs = all
                        .into_iter()
                        .filter(|d| r.configuration_keys.as_ref().is_none_or(|keys| keys.iter().any(|k| k == d.name)))
                        .map(|d| describe_entry(version, req.include_synonyms, d))
                        .collect();
                }
                Err((code, message)) => {
                    out.error_code = code;
                    out.error_message = Some(message);
                }
            }
            out
        })
        .collect();
    DescribeConfigsResponse { results, ..Default::default() }
}

/// One config as the request's version writes it.
fn describe_entry(version: i16, synonyms: bool, d: topic_configs::Described) -> DescribeConfigsResourceResult {
    let mut out = DescribeConfigsResourceResult {
        name: d.name.to_owned(),
        value: Some(d.value),
        read_only: d.read_only,
        ..Default::default()
    };
    if version == 0 {
        out.is_default = d.source == topic_configs::SOURCE_DEFAULT;
    } else {
        out.config_source = d.source;
        if synonyms {
            out.synonyms = d
                .synonyms
                .into_iter()
                .map(|(name, value, source)| DescribeConfigsSynonym {
                    name: name.to_owned(),
                    value: Some(value),
                    source,
                    ..Default::default()
                })
                .collect();
        }
    }
    if version >= 3 {
        out.config_type = d.kind as i8;
    }
    out
}

/// The topic a config change is about: `Err` for a resource the fake does not change.
fn topic_resource<'a>(st: &'a mut State, resource_type: i8, name: &str) -> Result<&'a mut Topic, Refusal> {
    if resource_type != RESOURCE_TOPIC {
        return Err((
            INVALID_REQUEST,
            format!("the fake broker changes topic configs only, not resource type {resource_type}"),
        ));
    }
    st.topics.get_mut(name).ok_or_else(|| (UNKNOWN_TOPIC_OR_PARTITION, format!("topic {name} does not exist")))
}

/// `Err` when a config name occurs twice among `names`.
fn no_repeats<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), Refusal> {
    match counts(names).into_iter().find(|(_, n)| *n > 1) {
        Some((name, _)) => Err((INVALID_REQUEST, format!("config {name} is named more than once"))),
        None => Ok(()),
    }
}

/// AlterConfigs: each topic's own settings become exactly the given ones.
fn alter_configs(ctx: &BrokerCtx, req: &AlterConfigsRequest) -> AlterConfigsResponse {
    let resources = counts(req.resources.iter().map(|r| (r.resource_type, r.resource_name.as_str())));
    let mut st = ctx.shared.state();
    let responses = req
        .resources
        .iter()
        .map(|r| {
            let outcome = (|| {
                if resources.get(&(r.resource_type, r.resource_name.as_str())).copied().unwrap_or(0) > 1 {
                    return Err((INVALID_REQUEST, "the resource is named more than once".to_owned()));
                }
                let topic = topic_resource(&mut st, r.resource_type, &r.resource_name)?;
                no_repeats(r.configs.iter().map(|c| c.name.as_str()))?;
                let mut new = BTreeMap::new();
                for c in &r.configs {
                    match &c.value {
                        Some(v) => {
                            topic_configs::check(&c.name, v).map_err(|e| (INVALID_CONFIG, e))?;
                            new.insert(c.name.clone(), v.clone());
                        }
                        // a null value leaves the config at its default
                        None if topic_configs::topic_config(&c.name).is_some() => {}
                        None => return Err((INVALID_CONFIG, format!("unknown topic config {}", c.name))),
                    }
                }
                if !req.validate_only {
                    topic.config = new;
                }
                Ok(())
            })();
            let mut out = AlterConfigsResourceResponse {
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
                ..Default::default()
            };
            if let Err((code, message)) = outcome {
                out.error_code = code;
                out.error_message = Some(message);
            }
            out
        })
        .collect();
    AlterConfigsResponse { responses, ..Default::default() }
}

/// IncrementalAlterConfigs' operations.
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;

/// IncrementalAlterConfigs: each change applied in order to the topic's own settings; all of a
/// resource's changes take effect, or none.
fn incremental_alter_configs(ctx: &BrokerCtx, req: &IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse {
    let cfg = &ctx.shared.config;
    let resources = counts(req.resources.iter().map(|r| (r.resource_type, r.resource_name.as_str())));
    let mut st = ctx.shared.state();
    let responses = req
        .resources
        .iter()
        .map(|r| {
            let outcome = (|| {
                if resources.get(&(r.resource_type, r.resource_name.as_str())).copied().unwrap_or(0) > 1 {
                    return Err((INVALID_REQUEST, "the resource is named more than once".to_owned()));
                }
                let topic = topic_resource(&mut st, r.resource_type, &r.resource_name)?;
                no_repeats(r.configs.iter().map(|c| c.name.as_str()))?;
                let mut new = topic.config.clone();
                for c in &r.configs {
                    let name = c.name.as_str();
                    let def = topic_configs::topic_config(name)
                        .ok_or_else(|| (INVALID_CONFIG, format!("unknown topic config {name}")))?;
                    match (c.config_operation, &c.value) {
                        (SET, Some(v)) => {
                            topic_configs::check(name, v).map_err(|e| (INVALID_CONFIG, e))?;
                            new.insert(c.name.clone(), v.clone());
                        }
                        (SET | DELETE, _) => {
                            new.remove(name);
                        }
                        (APPEND | SUBTRACT, _) if def.kind != Kind::List => {
                            return Err((
                                INVALID_CONFIG,
                                format!("{name} is not a list: it cannot be appended to or subtracted from"),
                            ));
                        }
                        (op @ (APPEND | SUBTRACT), Some(v)) => {
                            let current = topic_configs::effective(cfg, &new, name).unwrap_or_default();
                            let mut items: Vec<String> = current
                                .split(',')
                                .map(str::trim)
                                .filter(|i| !i.is_empty())
                                .map(str::to_owned)
                                .collect();
                            for item in v.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                                if op == APPEND && !items.iter().any(|i| i == item) {
                                    items.push(item.to_owned());
                                } else if op == SUBTRACT {
                                    items.retain(|i| i != item);
                                }
                            }
                            let joined = items.join(",");
                            topic_configs::check(name, &joined).map_err(|e| (INVALID_CONFIG, e))?;
                            new.insert(c.name.clone(), joined);
                        }
                        (APPEND | SUBTRACT, None) => {
                            return Err((
                                INVALID_CONFIG,
                                format!("appending to or subtracting from {name} needs a value"),
                            ));
                        }
                        (op, _) => return Err((INVALID_REQUEST, format!("unknown config operation {op}"))),
                    }
                }
                if !req.validate_only {
                    topic.config = new;
                }
                Ok(())
            })();
            let mut out = IncrementalAlterConfigsResourceResponse {
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
                ..Default::default()
            };
            if let Err((code, message)) = outcome {
                out.error_code = code;
                out.error_message = Some(message);
            }
            out
        })
        .collect();
    IncrementalAlterConfigsResponse { responses, ..Default::default() }
}

#[cfg(test)]
mod tests {
    use gregor_protocol::ErrorCode;

    use super::*;

    #[test]
    fn served_versions_stay_within_the_codec() {
        for (api, min, max) in SERVED {
            let codec = api.versions().expect("the codec knows the API");
            assert!(codec.min <= *min && *max <= codec.max, "{api:?} {min}-{max}");
        }
        assert_eq!(ErrorCode::UnknownTopicOrPartition.code(), UNKNOWN_TOPIC_OR_PARTITION);
        assert_eq!(ErrorCode::UnknownTopicId.code(), UNKNOWN_TOPIC_ID);
        assert_eq!(ErrorCode::InvalidRequest.code(), INVALID_REQUEST);
        assert_eq!(ErrorCode::InvalidPartitions.code(), INVALID_PARTITIONS);
    }
}

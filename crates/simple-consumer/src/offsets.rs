//! Offsets (`getOffsetsBefore`) sent to partition leaders, and leader lookups.

use std::collections::HashMap;

use gregor_net::{BrokerConnection, BrokerId, IsolationLevel, Pool};
use gregor_protocol::messages::{OffsetsPartition, OffsetsRequest, OffsetsResponsePartition, OffsetsTopic};

use crate::driver::{group_by_topic, Cause, LeaderOp, Outcome, Target};

/// What to ask of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OffsetsState {
    pub(crate) time: i64,
    pub(crate) max_number: i32,
}

/// One ListOffsets request per leader, in the highest version both sides speak (a follower
/// answers 6, a broker without a replica 3: both retried after a refresh).
///
/// v0 (Kafka 0.8-0.10.0) answers up to `max_number` segment start offsets before `time`,
/// newest first; v1 and later answer one offset: for -1/-2 the log end/start, for a time the
/// first offset whose timestamp is at or after it (none past the last record's).
#[derive(Debug, Clone)]
pub(crate) struct OffsetsOp {
    /// read_committed: the log end is the last stable offset (v2+).
    pub(crate) isolation: IsolationLevel,
}

impl LeaderOp for OffsetsOp {
    type State = OffsetsState;
    type Out = (BrokerId, Vec<i64>);

    async fn call(
        &self,
        pool: Pool,
        broker: BrokerId,
        targets: Vec<Target<OffsetsState>>,
    ) -> gregor_net::Result<Vec<Outcome<OffsetsState, (BrokerId, Vec<i64>)>>> {
        let conn = pool.get(broker).await?;
        let version = conn.client_version::<OffsetsRequest>()?;
        let ask = |t: &Target<OffsetsState>| OffsetsPartition {
            partition: t.partition,
            time: t.state.time,
            max_number_of_offsets: if version == 0 { t.state.max_number } else { 1 },
            ..Default::default()
        };
        list_offsets(&conn, broker, version, self.isolation, &targets, ask, |p| match version {
            0 => (broker, p.offsets.clone()),
            _ => (broker, (p.offset >= 0).then_some(p.offset).into_iter().collect()),
        })
        .await
    }
}

/// ListOffsets for a time, v1 and later (Kafka 0.10.1+): the first offset whose timestamp is at
/// or after the time asked, with that timestamp. A v0-only broker (Kafka 0.8-0.10.0) has no
/// such lookup: [`gregor_net::Error::NoCommonVersion`].
#[derive(Debug, Clone)]
pub(crate) struct TimeOp {
    pub(crate) isolation: IsolationLevel,
}

impl LeaderOp for TimeOp {
    type State = i64;
    type Out = Option<(i64, i64)>;

    async fn call(
        &self,
        pool: Pool,
        broker: BrokerId,
        targets: Vec<Target<i64>>,
    ) -> gregor_net::Result<Vec<Outcome<i64, Option<(i64, i64)>>>> {
        let conn = pool.get(broker).await?;
        let top = gregor_net::client_versions(gregor_protocol::frame::ApiKey::Offsets).map_or(1, |r| r.max);
        let version = conn.version_for::<OffsetsRequest>(1..=top)?;
        let ask = |t: &Target<i64>| OffsetsPartition::new(t.partition, t.state);
        list_offsets(&conn, broker, version, self.isolation, &targets, ask, |p| {
            (p.offset >= 0).then_some((p.offset, p.timestamp))
        })
        .await
    }
}

/// Sends one ListOffsets in `version` for `targets` (`ask` makes each partition's entry) and
/// classifies each target's answer: `done` reads one answered without an error; a follower's 6
/// and a replica-less broker's 3 are retried after a refresh.
async fn list_offsets<S, O>(
    conn: &BrokerConnection,
    broker: BrokerId,
    version: i16,
    isolation: IsolationLevel,
    targets: &[Target<S>],
    ask: impl Fn(&Target<S>) -> OffsetsPartition,
    done: impl Fn(&OffsetsResponsePartition) -> O,
) -> gregor_net::Result<Vec<Outcome<S, O>>> {
    let request = OffsetsRequest {
        replica_id: gregor_protocol::messages::CONSUMER_REPLICA_ID,
        // (a field a version lacks must keep its default: the codec refuses to drop it)
        isolation_level: if version >= 2 { isolation.code() } else { 0 },
        topics: group_by_topic(targets, ask)
            .into_iter()
            .map(|(topic, parts)| OffsetsTopic::new(topic, parts))
            .collect(),
        ..Default::default()
    };
    let response = conn.request(version, &request).await?;
    let mut by_name: HashMap<(&str, i32), &OffsetsResponsePartition> = HashMap::new();
    for t in &response.topics {
        for p in &t.partitions {
            by_name.insert((t.topic.as_str(), p.partition), p);
        }
    }
    Ok(targets
        .iter()
        .map(|t| match by_name.get(&(t.topic.as_str(), t.partition)) {
            None => Outcome::Fail(Cause::Missing { broker }),
            Some(p) => match p.error() {
                None => Outcome::Done(Ok(done(p))),
                Some(code) if code.is_retriable() || code.needs_metadata_refresh() => {
                    Outcome::Retry(Cause::Code { broker, code })
                }
                Some(code) => Outcome::Fail(Cause::Code { broker, code }),
            },
        })
        .collect())
}

/// Finds leaders without sending anything: the driver's routing does the work.
#[derive(Debug, Clone)]
pub(crate) struct LeaderLookup;

impl LeaderOp for LeaderLookup {
    type State = ();
    type Out = BrokerId;

    async fn call(
        &self,
        _pool: Pool,
        broker: BrokerId,
        targets: Vec<Target<()>>,
    ) -> gregor_net::Result<Vec<Outcome<(), BrokerId>>> {
        Ok(targets.iter().map(|_| Outcome::Done(Ok(broker))).collect())
    }
}

//! Offset storage: ZooKeeper (`/consumers/G/offsets/T/P`), Kafka (OffsetCommit/OffsetFetch at
//! the coordinator found with ConsumerMetadata: v1 with Kafka 0.8.2, the highest both sides
//! speak up to v7 with a later broker), or both (dual commit, read the max).

use std::collections::BTreeMap;

use gregor_net::{BrokerConnection, Pool};
use gregor_protocol::messages::{
    ConsumerMetadataRequest, OffsetCommitPartition, OffsetCommitRequest, OffsetCommitResponse, OffsetCommitTopic,
    OffsetFetchRequest, OffsetFetchResponse, OffsetFetchTopic, DEFAULT_CONSUMER_ID, DEFAULT_GENERATION_ID,
    DEFAULT_TIMESTAMP,
};
use gregor_protocol::{ErrorCode, TopicPartition};
use gregor_zk::{paths, payloads, ZkClient};

use crate::brokers::Brokers;
use crate::config::{ConsumerConfig, OffsetsStorage};
use crate::error::{self, Error, Result};

/// Reads and writes a group's offsets where the configuration says.
#[derive(Debug, Clone)]
pub(crate) struct OffsetStore {
    pub(crate) config: ConsumerConfig,
    pub(crate) zk: ZkClient,
    pub(crate) pool: Pool,
    /// Whom to ask for the coordinator: the brokers registered in ZooKeeper.
    pub(crate) brokers: Brokers,
}

fn is_coordinator_error(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::ConsumerCoordinatorNotAvailable
            | ErrorCode::NotCoordinatorForConsumer
            | ErrorCode::OffsetsLoadInProgress
    )
}

/// True when a failed offset request is worth another try at the (re-found) coordinator: a
/// coordinator error, or a connection that failed.
fn is_retriable(e: &Error) -> bool {
    match e {
        Error::Broker { code, .. } => is_coordinator_error(*code),
        Error::Net { .. } => true,
        _ => false,
    }
}

/// How many tries an offset request gets (`offsets.commit.max.retries`, at least 3, x4).
fn max_tries(offsets_commit_max_retries: u32) -> u32 {
    offsets_commit_max_retries.max(3) * 4
}

/// An OffsetCommit request for `offsets` (next offset to read, per partition): generation -1
/// and no member, as a group the broker does not coordinate commits; every field at the value
/// that reads the same in v1 to v7 (the v1 timestamp is -1, "now").
fn commit_request(group_id: &str, offsets: &BTreeMap<TopicPartition, i64>) -> OffsetCommitRequest {
    let mut topics: BTreeMap<&str, Vec<OffsetCommitPartition>> = BTreeMap::new();
    for (tp, o) in offsets {
        topics.entry(&tp.topic).or_default().push(OffsetCommitPartition {
            timestamp: DEFAULT_TIMESTAMP,
            ..OffsetCommitPartition::new(tp.partition, *o, "")
        });
    }
    OffsetCommitRequest {
        group_id: group_id.to_owned(),
        group_generation_id: DEFAULT_GENERATION_ID,
        consumer_id: DEFAULT_CONSUMER_ID.to_owned(),
        topics: topics.into_iter().map(|(t, ps)| OffsetCommitTopic::new(t, ps)).collect(),
        ..Default::default()
    }
}

/// The first partition error of an OffsetCommit response.
#[allow(clippy::result_large_err)] // the crate's one Error type, as everywhere else
fn check_commit(r: &OffsetCommitResponse) -> Result<()> {
    for t in &r.topics {
        for p in &t.partitions {
            if let Some(code) = p.error() {
                return Err(Error::Broker { context: format!("OffsetCommit {}/{}", t.topic, p.partition), code });
            }
        }
    }
    Ok(())
}

/// The offsets of an OffsetFetch response (-1: none; UnknownTopicOrPartition is none too, as
/// 0.8.2 answers for a partition never committed).
#[allow(clippy::result_large_err)] // the crate's one Error type, as everywhere else
fn fetched_offsets(r: &OffsetFetchResponse) -> Result<Vec<(TopicPartition, i64)>> {
    // v2+: an error for the whole group (the coordinator moved, is loading, ...)
    if let Some(code) = ErrorCode::from_i16(r.error_code) {
        return Err(Error::Broker { context: "OffsetFetch".to_owned(), code });
    }
    let mut out = Vec::new();
    for t in &r.topics {
        for p in &t.partitions {
            let tp = || TopicPartition::new(t.topic.clone(), p.partition);
            match p.error() {
                None => out.push((tp(), p.offset)),
                Some(ErrorCode::UnknownTopicOrPartition) => out.push((tp(), -1)),
                Some(code) => {
                    return Err(Error::Broker { context: format!("OffsetFetch {}/{}", t.topic, p.partition), code })
                }
            }
        }
    }
    Ok(out)
}

/// Dual commit reads both stores: the further offset wins, -1 (none) never does.
fn merge_offsets(out: &mut BTreeMap<TopicPartition, Option<i64>>, kafka: Vec<(TopicPartition, i64)>) {
    for (k, o) in kafka {
        let e = out.entry(k).or_default();
        if o >= 0 && e.is_none_or(|cur| o > cur) {
            *e = Some(o);
        }
    }
}

impl OffsetStore {
    fn use_zk(&self) -> bool {
        self.config.offsets_storage == OffsetsStorage::Zookeeper || self.config.dual_commit_enabled
    }

    fn use_kafka(&self) -> bool {
        self.config.offsets_storage == OffsetsStorage::Kafka
    }

    /// Commits offsets (next offset to read) per partition.
    pub(crate) async fn commit(&self, offsets: &BTreeMap<TopicPartition, i64>) -> Result<()> {
        if offsets.is_empty() {
            return Ok(());
        }
        if self.use_kafka() {
            self.commit_kafka(offsets).await?;
        }
        if self.use_zk() {
            let g = &self.config.group_id;
            for (tp, o) in offsets {
                self.zk
                    .set_or_create(&paths::offset(g, &tp.topic, tp.partition), &payloads::encode_offset(*o))
                    .await
                    .map_err(error::zk(format!("committing offset {o} of {tp}")))?;
            }
        }
        Ok(())
    }

    /// The committed offset of each partition (`None`: nothing committed); with dual commit,
    /// the max of both stores.
    pub(crate) async fn fetch(&self, parts: &[TopicPartition]) -> Result<BTreeMap<TopicPartition, Option<i64>>> {
        let mut out: BTreeMap<TopicPartition, Option<i64>> = parts.iter().map(|k| (k.clone(), None)).collect();
        if self.use_zk() {
            let g = &self.config.group_id;
            for tp in parts {
                let data = self
                    .zk
                    .get(&paths::offset(g, &tp.topic, tp.partition))
                    .await
                    .map_err(error::zk(format!("reading offset of {tp}")))?;
                if let Some((bytes, _)) = data {
                    if let Ok(o) = payloads::decode_offset(&bytes) {
                        out.insert(tp.clone(), Some(o));
                    }
                }
            }
        }
        if self.use_kafka() {
            merge_offsets(&mut out, self.fetch_kafka(parts).await?);
        }
        Ok(out)
    }

    async fn coordinator(&self) -> Result<BrokerConnection> {
        let mut last = None;
        for addr in &self.brokers.addresses() {
            let conn = match self.pool.get_addr(addr).await {
                Ok(c) => c,
                Err(e) => {
                    last = Some(Error::Net { context: format!("connecting to {addr}"), source: e });
                    continue;
                }
            };
            // v4 asks for several keys at once, a shape this lookup does not need
            let version = conn.version_for::<ConsumerMetadataRequest>(0..=3).map_err(error::net("ConsumerMetadata"))?;
            let r = conn
                .request(version, &ConsumerMetadataRequest::group(self.config.group_id.clone()))
                .await
                .map_err(error::net("ConsumerMetadata"))?;
            if let Some(code) = r.error() {
                return Err(Error::Broker {
                    context: format!("ConsumerMetadata for group {}", self.config.group_id),
                    code,
                });
            }
            let addr = format!("{}:{}", r.host, r.port);
            return self.pool.get_addr(&addr).await.map_err(error::net(format!("connecting to coordinator {addr}")));
        }
        // none answered: read the registered brokers again for the next attempt (one may be
        // back on another port)
        self.brokers.refresh().await;
        Err(last.unwrap_or(Error::InvalidSubscription("no broker to ask for the offset coordinator".into())))
    }

    async fn with_retries<T, F, Fut>(&self, what: &str, mut f: F) -> Result<T>
    where
        F: FnMut(BrokerConnection) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let mut attempt = 0;
        loop {
            let r = match self.coordinator().await {
                Ok(conn) => f(conn).await,
                Err(e) => Err(e),
            };
            match r {
                Ok(v) => return Ok(v),
                Err(e) => {
                    attempt += 1;
                    if !is_retriable(&e) || attempt > max_tries(self.config.offsets_commit_max_retries) {
                        return Err(e);
                    }
                    tracing::warn!(error = %e, attempt, "{what}: retrying after offsets.channel.backoff.ms");
                    tokio::time::sleep(self.config.offsets_channel_backoff).await;
                }
            }
        }
    }

    async fn commit_kafka(&self, offsets: &BTreeMap<TopicPartition, i64>) -> Result<()> {
        let request = commit_request(&self.config.group_id, offsets);
        self.with_retries("OffsetCommit", |conn| {
            let request = request.clone();
            async move {
                // v1 (Kafka 0.8.2) to v7; v8 on is flexible and batched differently
                let version = conn.version_for::<OffsetCommitRequest>(1..=7).map_err(error::net("OffsetCommit"))?;
                check_commit(&conn.request(version, &request).await.map_err(error::net("OffsetCommit"))?)
            }
        })
        .await
    }

    async fn fetch_kafka(&self, parts: &[TopicPartition]) -> Result<Vec<(TopicPartition, i64)>> {
        let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for tp in parts {
            topics.entry(&tp.topic).or_default().push(tp.partition);
        }
        let request = OffsetFetchRequest::new(
            self.config.group_id.clone(),
            topics.into_iter().map(|(t, ps)| OffsetFetchTopic::new(t, ps)).collect(),
        );
        self.with_retries("OffsetFetch", |conn| {
            let request = request.clone();
            async move {
                // v1 (Kafka 0.8.2) to v7; v8 on asks for several groups at once
                let version = conn.version_for::<OffsetFetchRequest>(1..=7).map_err(error::net("OffsetFetch"))?;
                fetched_offsets(&conn.request(version, &request).await.map_err(error::net("OffsetFetch"))?)
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gregor_protocol::messages::{
        OffsetCommitResponsePartition, OffsetCommitResponseTopic, OffsetFetchResponsePartition,
        OffsetFetchResponseTopic,
    };

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition::new(t, p)
    }

    #[test]
    fn retried_errors_are_coordinator_errors_and_broken_connections() {
        let broker = |code| Error::Broker { context: "c".into(), code };
        for (e, want) in [
            (broker(ErrorCode::ConsumerCoordinatorNotAvailable), true),
            (broker(ErrorCode::NotCoordinatorForConsumer), true),
            (broker(ErrorCode::OffsetsLoadInProgress), true),
            (broker(ErrorCode::OffsetMetadataTooLarge), false),
            (broker(ErrorCode::UnknownTopicOrPartition), false),
            (Error::Net { context: "c".into(), source: gregor_net::Error::Closed { addr: "k:9092".into() } }, true),
            (Error::Shutdown, false),
        ] {
            assert_eq!(is_retriable(&e), want, "{e}");
        }
        assert_eq!((max_tries(0), max_tries(3), max_tries(5)), (12, 12, 20));
    }

    #[test]
    fn a_commit_request_groups_partitions_by_topic_with_0_8_2_defaults() {
        let offsets = BTreeMap::from([(tp("b", 1), 7), (tp("a", 0), 3), (tp("b", 0), 5)]);
        let r = commit_request("g", &offsets);
        assert_eq!((r.group_id.as_str(), r.group_generation_id), ("g", DEFAULT_GENERATION_ID));
        assert_eq!(r.consumer_id, DEFAULT_CONSUMER_ID);
        type Row = (i32, i64, i64); // partition, offset, timestamp
        let got: Vec<(&str, Vec<Row>)> = r
            .topics
            .iter()
            .map(|t| (t.topic.as_str(), t.partitions.iter().map(|p| (p.partition, p.offset, p.timestamp)).collect()))
            .collect();
        assert_eq!(
            got,
            [("a", vec![(0, 3, DEFAULT_TIMESTAMP)]), ("b", vec![(0, 5, DEFAULT_TIMESTAMP), (1, 7, DEFAULT_TIMESTAMP)])]
        );
    }

    #[test]
    fn commit_and_fetch_responses_report_partition_errors_with_context() {
        let ok = OffsetCommitResponse {
            topics: vec![OffsetCommitResponseTopic::new("t", vec![OffsetCommitResponsePartition::new(0, 0)])],
            ..Default::default()
        };
        assert!(check_commit(&ok).is_ok());
        let bad = OffsetCommitResponse {
            topics: vec![OffsetCommitResponseTopic::new(
                "t",
                vec![OffsetCommitResponsePartition::new(0, 0), OffsetCommitResponsePartition::new(1, 16)],
            )],
            ..Default::default()
        };
        match check_commit(&bad) {
            Err(Error::Broker { context, code: ErrorCode::NotCoordinatorForConsumer }) => {
                assert_eq!(context, "OffsetCommit t/1")
            }
            other => panic!("{other:?}"),
        }

        let part = |partition, offset, error_code| OffsetFetchResponsePartition::new(partition, offset, "", error_code);
        let fetched = OffsetFetchResponse {
            topics: vec![OffsetFetchResponseTopic::new("t", vec![part(0, 42, 0), part(1, 9, 3), part(2, -1, 0)])],
            ..Default::default()
        };
        assert_eq!(fetched_offsets(&fetched).unwrap(), [(tp("t", 0), 42), (tp("t", 1), -1), (tp("t", 2), -1)]);
        let loading = OffsetFetchResponse {
            topics: vec![OffsetFetchResponseTopic::new("t", vec![part(0, -1, 14)])],
            ..Default::default()
        };
        assert!(matches!(fetched_offsets(&loading), Err(Error::Broker { code: ErrorCode::OffsetsLoadInProgress, .. })));
    }

    #[test]
    fn dual_reads_keep_the_further_offset_and_never_none_over_some() {
        let mut out =
            BTreeMap::from([(tp("t", 0), Some(10)), (tp("t", 1), Some(10)), (tp("t", 2), None), (tp("t", 3), Some(4))]);
        merge_offsets(
            &mut out,
            vec![(tp("t", 0), 12), (tp("t", 1), 8), (tp("t", 2), 5), (tp("t", 3), -1), (tp("t", 4), -1)],
        );
        assert_eq!(
            out,
            BTreeMap::from([
                (tp("t", 0), Some(12)),
                (tp("t", 1), Some(10)),
                (tp("t", 2), Some(5)),
                (tp("t", 3), Some(4)),
                (tp("t", 4), None),
            ])
        );
    }
}

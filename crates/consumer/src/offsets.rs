//! Offset storage: ZooKeeper (`/consumers/G/offsets/T/P`), Kafka (OffsetCommit/OffsetFetch v1
//! at the coordinator found with ConsumerMetadata), or both (dual commit, read the max).

use std::collections::BTreeMap;

use gregor_net::{BrokerConnection, Pool};
use gregor_protocol::messages::{
    ConsumerMetadataRequest, OffsetCommitPartition, OffsetCommitRequest, OffsetFetchRequest, TopicPartitions,
    DEFAULT_CONSUMER_ID, DEFAULT_GENERATION_ID, DEFAULT_TIMESTAMP,
};
use gregor_protocol::ErrorCode;
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

impl OffsetStore {
    fn use_zk(&self) -> bool {
        self.config.offsets_storage == OffsetsStorage::Zookeeper || self.config.dual_commit_enabled
    }

    fn use_kafka(&self) -> bool {
        self.config.offsets_storage == OffsetsStorage::Kafka
    }

    /// Commits offsets (next offset to read) per partition.
    pub(crate) async fn commit(&self, offsets: &BTreeMap<(String, i32), i64>) -> Result<()> {
        if offsets.is_empty() {
            return Ok(());
        }
        if self.use_kafka() {
            self.commit_kafka(offsets).await?;
        }
        if self.use_zk() {
            let g = &self.config.group_id;
            for ((t, p), o) in offsets {
                self.zk
                    .set_or_create(&paths::offset(g, t, *p), &payloads::encode_offset(*o))
                    .await
                    .map_err(error::zk(format!("committing offset {o} of {t}/{p}")))?;
            }
        }
        Ok(())
    }

    /// The committed offset of each partition (`None`: nothing committed); with dual commit,
    /// the max of both stores.
    pub(crate) async fn fetch(&self, parts: &[(String, i32)]) -> Result<BTreeMap<(String, i32), Option<i64>>> {
        let mut out: BTreeMap<(String, i32), Option<i64>> = parts.iter().map(|k| (k.clone(), None)).collect();
        if self.use_zk() {
            let g = &self.config.group_id;
            for (t, p) in parts {
                let data = self
                    .zk
                    .get(&paths::offset(g, t, *p))
                    .await
                    .map_err(error::zk(format!("reading offset of {t}/{p}")))?;
                if let Some((bytes, _)) = data {
                    if let Ok(o) = payloads::decode_offset(&bytes) {
                        out.insert((t.clone(), *p), Some(o));
                    }
                }
            }
        }
        if self.use_kafka() {
            for (k, o) in self.fetch_kafka(parts).await? {
                let e = out.entry(k).or_default();
                if o >= 0 && e.is_none_or(|cur| o > cur) {
                    *e = Some(o);
                }
            }
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
            let r = conn
                .request(0, &ConsumerMetadataRequest { group_id: self.config.group_id.clone() })
                .await
                .map_err(error::net("ConsumerMetadata"))?;
            if let Some(code) = r.error() {
                return Err(Error::Broker {
                    context: format!("ConsumerMetadata for group {}", self.config.group_id),
                    code,
                });
            }
            let addr = format!("{}:{}", r.coordinator_host, r.coordinator_port);
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
                    let retriable = match &e {
                        Error::Broker { code, .. } => is_coordinator_error(*code),
                        Error::Net { .. } => true,
                        _ => false,
                    };
                    attempt += 1;
                    if !retriable || attempt > self.config.offsets_commit_max_retries.max(3) * 4 {
                        return Err(e);
                    }
                    tracing::warn!(error = %e, attempt, "{what}: retrying after offsets.channel.backoff.ms");
                    tokio::time::sleep(self.config.offsets_channel_backoff).await;
                }
            }
        }
    }

    async fn commit_kafka(&self, offsets: &BTreeMap<(String, i32), i64>) -> Result<()> {
        let mut topics: BTreeMap<&str, Vec<OffsetCommitPartition>> = BTreeMap::new();
        for ((t, p), o) in offsets {
            topics.entry(t).or_default().push(OffsetCommitPartition {
                partition: *p,
                offset: *o,
                timestamp: DEFAULT_TIMESTAMP,
                metadata: String::new(),
            });
        }
        let request = OffsetCommitRequest {
            group_id: self.config.group_id.clone(),
            group_generation_id: DEFAULT_GENERATION_ID,
            consumer_id: DEFAULT_CONSUMER_ID.to_owned(),
            topics: topics.into_iter().map(|(t, ps)| TopicPartitions::new(t, ps)).collect(),
        };
        self.with_retries("OffsetCommit v1", |conn| {
            let request = request.clone();
            async move {
                let r = conn.request(1, &request).await.map_err(error::net("OffsetCommit v1"))?;
                for t in &r.topics {
                    for p in &t.partitions {
                        if let Some(code) = p.error() {
                            return Err(Error::Broker {
                                context: format!("OffsetCommit v1 {}/{}", t.topic, p.partition),
                                code,
                            });
                        }
                    }
                }
                Ok(())
            }
        })
        .await
    }

    async fn fetch_kafka(&self, parts: &[(String, i32)]) -> Result<Vec<((String, i32), i64)>> {
        let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for (t, p) in parts {
            topics.entry(t).or_default().push(*p);
        }
        let request = OffsetFetchRequest {
            group_id: self.config.group_id.clone(),
            topics: topics.into_iter().map(|(t, ps)| TopicPartitions::new(t, ps)).collect(),
        };
        self.with_retries("OffsetFetch v1", |conn| {
            let request = request.clone();
            async move {
                let r = conn.request(1, &request).await.map_err(error::net("OffsetFetch v1"))?;
                let mut out = Vec::new();
                for t in &r.topics {
                    for p in &t.partitions {
                        match p.error() {
                            None => out.push(((t.topic.clone(), p.partition), p.offset)),
                            Some(ErrorCode::UnknownTopicOrPartition) => out.push(((t.topic.clone(), p.partition), -1)),
                            Some(code) => {
                                return Err(Error::Broker {
                                    context: format!("OffsetFetch v1 {}/{}", t.topic, p.partition),
                                    code,
                                })
                            }
                        }
                    }
                }
                Ok(out)
            }
        })
        .await
    }
}

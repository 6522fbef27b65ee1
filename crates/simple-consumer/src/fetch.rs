//! What a fetch returns ([`FetchBatch`], [`PartitionData`], [`FetchedMessage`]) and the pure
//! decision of what to do with one partition of a Fetch response.

use std::collections::HashMap;

use gregor_net::{classify_fetch_at, BrokerConnection, BrokerId, FetchClass, FetchRead, IsolationLevel, Pool};
use gregor_protocol::messages::{FetchPartition, FetchRequest, FetchResponse, FetchResponsePartition, FetchTopic};
use gregor_protocol::ErrorCode;
use tokio::task::JoinSet;

use crate::driver::{group_by_topic, Cause, LeaderOp, Outcome, Target};
use crate::error::{Error, Result};

/// One message read from a partition: gregor-protocol's [`Record`](gregor_protocol::Record)
/// (offset, key, value, and from Kafka 0.10/0.11 on the timestamp and headers; a message v0
/// reads timestamp -1, `NoTimestamp`, no headers).
pub type FetchedMessage = gregor_protocol::Record;

/// What one partition returned: its messages from the fetch offset on, in offset order,
/// compressed sets expanded, and where to fetch next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionData {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset fetched from.
    pub fetch_offset: i64,
    /// The messages at `fetch_offset` and after (messages of a compressed wrapper below it are
    /// dropped), possibly none when the partition has nothing new.
    pub messages: Vec<FetchedMessage>,
    /// The partition's high watermark: the offset after the last committed message.
    pub high_watermark: i64,
    /// The offset to fetch next: one past the last message, or `fetch_offset` when there was
    /// none.
    pub next_offset: i64,
}

impl PartitionData {
    /// How many committed messages remain after this batch (high watermark minus
    /// `next_offset`, not below 0): the consumer lag.
    pub fn lag(&self) -> i64 {
        (self.high_watermark - self.next_offset).max(0)
    }

    /// True when no message came back.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }
}

/// The results of one [`crate::SimpleConsumer::fetch`]: one per requested partition, in the
/// order requested, each the partition's data or its own error.
///
/// ```
/// # async fn demo(consumer: gregor_simple_consumer::SimpleConsumer) -> gregor_simple_consumer::Result<()> {
/// let batch = consumer.fetch(&[("events", 0, 0), ("events", 1, 42)]).await?;
/// for (topic, partition, result) in batch.iter() {
///     match result {
///         Ok(data) => println!("{topic}/{partition}: {} messages, next {}", data.messages.len(), data.next_offset),
///         Err(e) => eprintln!("{topic}/{partition}: {e}"),
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct FetchBatch {
    results: Vec<(String, i32, Result<PartitionData>)>,
}

impl FetchBatch {
    pub(crate) fn new(results: Vec<(String, i32, Result<PartitionData>)>) -> FetchBatch {
        FetchBatch { results }
    }

    /// The result for one partition, if it was requested.
    pub fn get(&self, topic: &str, partition: i32) -> Option<&Result<PartitionData>> {
        self.results.iter().find(|(t, p, _)| t == topic && *p == partition).map(|(_, _, r)| r)
    }

    /// Takes the result for one partition out of the batch.
    pub fn take(&mut self, topic: &str, partition: i32) -> Option<Result<PartitionData>> {
        let i = self.results.iter().position(|(t, p, _)| t == topic && *p == partition)?;
        Some(self.results.remove(i).2)
    }

    /// Every result, in the order requested.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i32, &Result<PartitionData>)> {
        self.results.iter().map(|(t, p, r)| (t.as_str(), *p, r))
    }

    /// The partitions that returned data.
    pub fn data(&self) -> impl Iterator<Item = &PartitionData> {
        self.results.iter().filter_map(|(_, _, r)| r.as_ref().ok())
    }

    /// The partitions that failed, with their errors.
    pub fn errors(&self) -> impl Iterator<Item = (&str, i32, &Error)> {
        self.results.iter().filter_map(|(t, p, r)| r.as_ref().err().map(|e| (t.as_str(), *p, e)))
    }

    /// Messages returned across all partitions.
    pub fn message_count(&self) -> usize {
        self.data().map(|d| d.messages.len()).sum()
    }

    /// Partitions in the batch.
    pub fn len(&self) -> usize {
        self.results.len()
    }

    /// True for a batch of no partition.
    pub fn is_empty(&self) -> bool {
        self.results.is_empty()
    }
}

impl IntoIterator for FetchBatch {
    type Item = (String, i32, Result<PartitionData>);
    type IntoIter = std::vec::IntoIter<Self::Item>;

    fn into_iter(self) -> Self::IntoIter {
        self.results.into_iter()
    }
}

/// Per-partition state of a fetch: where, and how many bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FetchState {
    pub(crate) offset: i64,
    pub(crate) fetch_size: i32,
}

/// One Fetch request per leader.
#[derive(Debug, Clone)]
pub(crate) struct FetchOp {
    pub(crate) max_wait_ms: i32,
    pub(crate) min_bytes: i32,
    pub(crate) grow_max: Option<i32>,
    pub(crate) isolation: IsolationLevel,
}

impl LeaderOp for FetchOp {
    type State = FetchState;
    type Out = PartitionData;

    async fn call(
        &self,
        pool: Pool,
        broker: BrokerId,
        targets: Vec<Target<FetchState>>,
    ) -> gregor_net::Result<Vec<Outcome<FetchState, PartitionData>>> {
        let conn: BrokerConnection = pool.get(broker).await?;
        let version = conn.client_version::<FetchRequest>()?;
        let read = FetchRead { version, isolation: self.isolation };
        let chunks = split_for_frame(&targets, pool.config().max_frame_size());
        if chunks.len() > 1 {
            tracing::debug!(
                broker,
                requests = chunks.len(),
                max_frame_size = pool.config().max_frame_size(),
                "fetch sizes exceed the max frame size: one Fetch per chunk, pipelined"
            );
        }
        let mut requests = JoinSet::new();
        for (i, range) in chunks.iter().enumerate() {
            let targets = &targets[range.clone()];
            let total: i64 = targets.iter().map(|t| i64::from(t.state.fetch_size.max(0))).sum();
            let request = FetchRequest {
                replica_id: gregor_protocol::messages::CONSUMER_REPLICA_ID,
                max_wait_time: self.max_wait_ms,
                min_bytes: self.min_bytes,
                // v3+: no more than the partitions' sizes together (KIP-74 still returns a
                // first batch larger than that)
                // (a field a version lacks must keep its default: the codec refuses to drop it)
                max_bytes: if version >= 3 { i32::try_from(total).unwrap_or(i32::MAX) } else { i32::MAX },
                isolation_level: if version >= 4 { self.isolation.code() } else { 0 },
                topics: group_by_topic(targets, |t| {
                    FetchPartition::new(t.partition, t.state.offset, t.state.fetch_size)
                })
                .into_iter()
                .map(|(topic, parts)| FetchTopic::new(topic, parts))
                .collect(),
                ..Default::default()
            };
            let conn = conn.clone();
            requests.spawn(async move { (i, conn.request(version, &request).await) });
        }
        let mut responses: Vec<Option<FetchResponse>> = chunks.iter().map(|_| None).collect();
        while let Some(joined) = requests.join_next().await {
            let (i, response) = match joined {
                Ok(done) => done,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => unreachable!("a fetch was cancelled while awaited: {e}"),
            };
            responses[i] = Some(response?);
        }
        // v7+: an error for the whole request (a fetch session's; gregor opens none)
        if let Some(code) = responses.iter().flatten().find_map(|r| ErrorCode::from_i16(r.error_code)) {
            return Ok(targets.iter().map(|_| Outcome::Fail(Cause::Code { broker, code })).collect());
        }
        // responses list topics and partitions in no particular order: match by name
        let mut by_name: HashMap<(&str, i32), &FetchResponsePartition> = HashMap::new();
        for t in responses.iter().flatten().flat_map(|r| &r.topics) {
            for p in &t.partitions {
                by_name.insert((t.topic.as_str(), p.partition), p);
            }
        }
        Ok(targets
            .iter()
            .map(|t| match by_name.get(&(t.topic.as_str(), t.partition)) {
                Some(p) => classify(&t.topic, p, t.state, broker, self.grow_max, read),
                None => Outcome::Fail(Cause::Missing { broker }),
            })
            .collect())
    }
}

/// Bytes of a response frame besides the message sets: header, counts, and some slack.
const FRAME_SLACK: usize = 64 * 1024;

/// Splits targets into runs whose fetch sizes (plus per-partition overhead) fit one response
/// frame of `max_frame_size`; one run in the usual case. A single partition larger than the
/// frame gets a run of its own (the connection rejects it; nothing better can be done).
pub(crate) fn split_for_frame(targets: &[Target<FetchState>], max_frame_size: usize) -> Vec<std::ops::Range<usize>> {
    let budget = max_frame_size.saturating_sub(FRAME_SLACK).max(1);
    let mut runs = Vec::new();
    let (mut start, mut used) = (0, 0usize);
    for (i, t) in targets.iter().enumerate() {
        // partition, error code, high watermark, set size, and the topic name at worst
        let cost = t.state.fetch_size.max(0) as usize + 18 + 2 + t.topic.len() + 4;
        if i > start && used + cost > budget {
            runs.push(start..i);
            (start, used) = (i, 0);
        }
        used += cost;
    }
    if start < targets.len() {
        runs.push(start..targets.len());
    }
    runs
}

/// What to do with one partition of a Fetch response (pure): gregor-net's
/// [`classify_fetch`](gregor_net::classify_fetch) decides what the answer means; a message
/// too large is fetched again at once with the size it needs when `grow_max` allows, and the
/// leader errors are retried.
pub(crate) fn classify(
    topic: &str,
    p: &FetchResponsePartition,
    state: FetchState,
    broker: BrokerId,
    grow_max: Option<i32>,
    read: FetchRead,
) -> Outcome<FetchState, PartitionData> {
    let partition = p.partition;
    match classify_fetch_at(topic, p, state.offset, read) {
        FetchClass::Data { messages, next_offset, high_watermark } => Outcome::Done(Ok(PartitionData {
            topic: topic.to_owned(),
            partition,
            fetch_offset: state.offset,
            messages,
            high_watermark,
            next_offset: next_offset.unwrap_or(state.offset),
        })),
        FetchClass::MessageTooLarge { offset, needed, .. } => {
            let fits = grow_max.is_some_and(|max| needed <= max as usize) && needed > state.fetch_size as usize;
            if fits {
                tracing::debug!(
                    %topic, partition, offset, needed, fetch_size = state.fetch_size,
                    "message larger than the fetch size: fetching it again with a grown size"
                );
                Outcome::Again(FetchState { offset: state.offset, fetch_size: needed as i32 })
            } else {
                Outcome::Done(Err(Error::MessageSizeTooLarge {
                    topic: topic.to_owned(),
                    partition,
                    offset,
                    fetch_size: state.fetch_size,
                    needed,
                }))
            }
        }
        FetchClass::Corrupt(source) => Outcome::Done(Err(Error::Protocol {
            topic: topic.to_owned(),
            partition,
            offset: state.offset,
            source: Box::new(source),
        })),
        FetchClass::OffsetOutOfRange => Outcome::Done(Err(Error::OffsetOutOfRange {
            topic: topic.to_owned(),
            partition,
            offset: state.offset,
            earliest: None,
            latest: None,
        })),
        FetchClass::Retry(code) => Outcome::Retry(Cause::Code { broker, code }),
        FetchClass::Fail(code) => Outcome::Fail(Cause::Code { broker, code }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use gregor_protocol::{Compression, Message, MessageAndOffset, MessageSet};

    fn set(first: i64, values: &[&str], codec: Compression) -> MessageSet {
        let inner: Vec<MessageAndOffset> = values
            .iter()
            .enumerate()
            .map(|(i, v)| MessageAndOffset::new(first + i as i64, Message::new(None, Some(Bytes::from(v.to_string())))))
            .collect();
        if codec == Compression::None {
            MessageSet::encode(&inner).unwrap()
        } else {
            MessageSet::encode(&[MessageSet::wrap(&inner, codec).unwrap()]).unwrap()
        }
    }

    fn part(error_code: i16, hw: i64, message_set: MessageSet) -> FetchResponsePartition {
        FetchResponsePartition { partition: 3, error_code, high_watermark: hw, message_set, ..Default::default() }
    }

    const AT_0: FetchState = FetchState { offset: 0, fetch_size: 1024 };

    #[test]
    fn data_starts_at_the_fetch_offset_inside_a_wrapper() {
        let p = part(0, 10, set(5, &["a", "b", "c", "d"], Compression::Gzip));
        let Outcome::Done(Ok(d)) =
            classify("t", &p, FetchState { offset: 7, fetch_size: 1024 }, 1, None, FetchRead::V0)
        else {
            panic!()
        };
        assert_eq!(d.messages.iter().map(|m| m.offset).collect::<Vec<_>>(), [7, 8]);
        assert_eq!(d.messages[0].value.as_deref(), Some(&b"c"[..]));
        assert_eq!((d.fetch_offset, d.next_offset, d.high_watermark, d.lag()), (7, 9, 10, 1));
    }

    #[test]
    fn an_empty_set_keeps_the_offset() {
        let Outcome::Done(Ok(d)) =
            classify("t", &part(0, 4, MessageSet::new()), FetchState { offset: 4, ..AT_0 }, 1, None, FetchRead::V0)
        else {
            panic!()
        };
        assert!(d.is_empty());
        assert_eq!((d.next_offset, d.lag()), (4, 0));
    }

    #[test]
    fn a_cut_message_is_too_large_or_grows_the_fetch() {
        let full = set(0, &[&"x".repeat(500)], Compression::None);
        let needed = full.len();
        let cut = MessageSet::from_bytes(full.as_bytes().slice(..100));
        let small = FetchState { offset: 0, fetch_size: 100 };
        match classify("t", &part(0, 1, cut.clone()), small, 1, None, FetchRead::V0) {
            Outcome::Done(Err(Error::MessageSizeTooLarge { offset: 0, fetch_size: 100, needed: n, .. })) => {
                assert_eq!(n, needed)
            }
            other => panic!("{other:?}"),
        }
        match classify("t", &part(0, 1, cut.clone()), small, 1, Some(needed as i32), FetchRead::V0) {
            Outcome::Again(s) => assert_eq!(s, FetchState { offset: 0, fetch_size: needed as i32 }),
            other => panic!("{other:?}"),
        }
        // a limit below the need still surfaces the error
        assert!(matches!(
            classify("t", &part(0, 1, cut), small, 1, Some(needed as i32 - 1), FetchRead::V0),
            Outcome::Done(Err(Error::MessageSizeTooLarge { .. }))
        ));
    }

    #[test]
    fn partitions_split_only_past_the_max_frame_size() {
        let t =
            |fetch_size| Target { topic: "t".to_owned(), partition: 0, state: FetchState { offset: 0, fetch_size } };
        let mib = 1 << 20;
        let many: Vec<_> = (0..250).map(|_| t(mib)).collect();
        let one = split_for_frame(&many[..10], 100 * mib as usize);
        assert_eq!((one.len(), one[0].clone()), (1, 0..10));
        assert_eq!(split_for_frame(&many, 100 * mib as usize), [0..99, 99..198, 198..250]);
        assert_eq!(split_for_frame(&[t(10 * mib), t(1)], mib as usize), [0..1, 1..2], "too big alone");
        assert!(split_for_frame(&[], mib as usize).is_empty());
    }

    #[test]
    fn codes_are_typed_retried_or_failed() {
        let empty = MessageSet::new();
        match classify("t", &part(1, -1, empty.clone()), FetchState { offset: 99, ..AT_0 }, 1, None, FetchRead::V0) {
            Outcome::Done(Err(Error::OffsetOutOfRange { offset: 99, partition: 3, .. })) => {}
            other => panic!("{other:?}"),
        }
        for code in [3, 5, 6] {
            assert!(
                matches!(
                    classify("t", &part(code, -1, empty.clone()), AT_0, 1, None, FetchRead::V0),
                    Outcome::Retry(_)
                ),
                "{code}"
            );
        }
        assert!(matches!(classify("t", &part(2, -1, empty.clone()), AT_0, 1, None, FetchRead::V0), Outcome::Fail(_)));
        let mut bad = set(0, &["a"], Compression::None).into_bytes().to_vec();
        bad[12] ^= 0xff;
        assert!(matches!(
            classify("t", &part(0, 1, MessageSet::from_bytes(bad.into())), AT_0, 1, None, FetchRead::V0),
            Outcome::Done(Err(Error::Protocol { .. }))
        ));
    }
}

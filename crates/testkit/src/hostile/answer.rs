//! The correct answers of a [`HostileBroker`](super::HostileBroker): a one-broker Kafka 0.8.2
//! cluster that leads every partition of its topics, keeps each partition's messages in a
//! `Vec` (the offset is the index) and stores no group offsets. Faults are applied around these
//! answers by [`crate::fault`].

use std::time::Duration;

use bytes::BytesMut;
use gregor_protocol::frame::{encode_response, RequestHeader};
use gregor_protocol::messages::{
    AnyRequest, BrokerMetadata, ConsumerMetadataResponse, FetchRequest, FetchResponse, FetchResponsePartition,
    FetchResponseTopic, MetadataRequest, MetadataResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetCommitResponsePartition, OffsetCommitResponseTopic, OffsetFetchRequest, OffsetFetchResponse,
    OffsetFetchResponsePartition, OffsetFetchResponseTopic, OffsetsRequest, OffsetsResponse, OffsetsResponsePartition,
    OffsetsResponseTopic, PartitionMetadata, ProduceRequest, ProduceResponse, ProduceResponsePartition,
    ProduceResponseTopic, TopicMetadata, EARLIEST_TIME, LATEST_TIME,
};
use gregor_protocol::{Encode, ErrorCode, Message, MessageAndOffset, MessageSet, Request};

use super::state::{Shared, State};
use crate::fault::Handled;

/// Carries `request` out and returns its correct response. A Fetch that finds fewer than its
/// `min_bytes` is first parked for its `max_wait_time`, as a broker parks it (nothing arrives
/// meanwhile unless a client produces to this broker).
pub(super) async fn carry_out(shared: &Shared, header: &RequestHeader, request: AnyRequest) -> Handled {
    if let AnyRequest::Fetch(fetch) = &request {
        if fetchable_bytes(shared, fetch) < i64::from(fetch.min_bytes) {
            let wait = u64::try_from(fetch.max_wait_time).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(wait)).await;
        }
    }
    answer(shared, header, &request)
}

/// The correct response to `request`, carried out under the state's lock.
fn answer(shared: &Shared, header: &RequestHeader, request: &AnyRequest) -> Handled {
    let mut st = shared.state();
    let st = &mut *st;
    match request {
        AnyRequest::Metadata(r) => frame(header, &metadata(shared, st, header.api_version, r)),
        AnyRequest::Produce(r) => {
            let response = produce(st, r);
            if r.expects_response() {
                frame(header, &response)
            } else {
                Handled::Nothing
            }
        }
        AnyRequest::Fetch(r) => frame(header, &fetch(st, r)),
        AnyRequest::Offsets(r) => frame(header, &offsets(st, r)),
        AnyRequest::OffsetCommit(r) => frame(header, &offset_commit(r)),
        AnyRequest::OffsetFetch(r) => frame(header, &offset_fetch(r)),
        AnyRequest::ConsumerMetadata(_) => frame(header, &consumer_metadata(shared)),
        // as 0.8.2 does with an API it does not know
        _ => Handled::Close,
    }
}

fn frame<B: Encode>(header: &RequestHeader, body: &B) -> Handled {
    let mut buf = BytesMut::new();
    match encode_response(header.correlation_id, header.api_version, body, &mut buf) {
        Ok(()) => Handled::Frame(buf.freeze()),
        Err(e) => {
            tracing::error!(api = %header.api_key, error = %e, "hostile broker could not encode its response");
            Handled::Close
        }
    }
}

/// The message bytes a Fetch would get now.
fn fetchable_bytes(shared: &Shared, request: &FetchRequest) -> i64 {
    let st = shared.state();
    let mut total = 0;
    for t in &request.topics {
        for p in &t.partitions {
            if let Some(log) = st.logs.get(&(t.topic.clone(), p.partition)) {
                let set = message_set(&entries_from(log, p.fetch_offset), p.max_bytes);
                total += set.len() as i64;
            }
        }
    }
    total
}

fn metadata(shared: &Shared, st: &State, version: i16, request: &MetadataRequest) -> MetadataResponse {
    let names: Vec<String> = if request.wants_all_topics(version) {
        st.topics.keys().cloned().collect()
    } else {
        request.topic_names().map(str::to_owned).collect()
    };
    let topics = names
        .into_iter()
        .map(|topic| match st.topics.get(&topic) {
            Some(&n) => TopicMetadata::new(
                topic,
                0,
                (0..n)
                    .map(|partition| PartitionMetadata {
                        partition,
                        leader: shared.node_id,
                        replicas: vec![shared.node_id],
                        isr: vec![shared.node_id],
                        ..Default::default()
                    })
                    .collect(),
            ),
            None => TopicMetadata::new(topic, ErrorCode::UnknownTopicOrPartition.code(), Vec::new()),
        })
        .collect();
    MetadataResponse {
        brokers: vec![BrokerMetadata {
            node_id: shared.node_id,
            host: shared.addr.ip().to_string(),
            port: i32::from(shared.addr.port()),
            ..Default::default()
        }],
        topics,
        ..Default::default()
    }
}

fn consumer_metadata(shared: &Shared) -> ConsumerMetadataResponse {
    ConsumerMetadataResponse {
        node_id: shared.node_id,
        host: shared.addr.ip().to_string(),
        port: i32::from(shared.addr.port()),
        ..Default::default()
    }
}

fn produce(st: &mut State, request: &ProduceRequest) -> ProduceResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| match st.logs.get_mut(&(t.topic.clone(), p.partition)) {
                    Some(log) => {
                        let base = log.len() as i64;
                        match p.message_set.entries().collect::<Result<Vec<_>, _>>() {
                            Ok(entries) => {
                                log.extend(entries.into_iter().map(|e| e.message));
                                ProduceResponsePartition::new(p.partition, 0, base)
                            }
                            Err(_) => ProduceResponsePartition::new(p.partition, ErrorCode::InvalidMessage.code(), -1),
                        }
                    }
                    None => ProduceResponsePartition::new(p.partition, ErrorCode::UnknownTopicOrPartition.code(), -1),
                })
                .collect();
            ProduceResponseTopic::new(t.topic.clone(), partitions)
        })
        .collect();
    ProduceResponse { topics, ..Default::default() }
}

/// The entries of `log` from `offset`, at their offsets.
fn entries_from(log: &[Message], offset: i64) -> Vec<MessageAndOffset> {
    let start = usize::try_from(offset.max(0)).unwrap_or(usize::MAX).min(log.len());
    log[start..].iter().enumerate().map(|(i, m)| MessageAndOffset::new((start + i) as i64, m.clone())).collect()
}

/// A message set of `entries` cut at `max_bytes` (a partial trailing message, as Kafka sends).
fn message_set(entries: &[MessageAndOffset], max_bytes: i32) -> MessageSet {
    let set = MessageSet::encode(entries).unwrap_or_default();
    let max = usize::try_from(max_bytes.max(0)).unwrap_or(0);
    if set.len() <= max {
        set
    } else {
        MessageSet::from_bytes(set.as_bytes().slice(..max))
    }
}

fn fetch(st: &State, request: &FetchRequest) -> FetchResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| match st.logs.get(&(t.topic.clone(), p.partition)) {
                    Some(log) => FetchResponsePartition::new(
                        p.partition,
                        0,
                        log.len() as i64,
                        message_set(&entries_from(log, p.fetch_offset), p.max_bytes),
                    ),
                    None => FetchResponsePartition::new(
                        p.partition,
                        ErrorCode::UnknownTopicOrPartition.code(),
                        -1,
                        MessageSet::new(),
                    ),
                })
                .collect();
            FetchResponseTopic::new(t.topic.clone(), partitions)
        })
        .collect();
    FetchResponse { topics, ..Default::default() }
}

fn offsets(st: &State, request: &OffsetsRequest) -> OffsetsResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| match st.logs.get(&(t.topic.clone(), p.partition)) {
                    Some(log) => {
                        let end = log.len() as i64;
                        // one segment starting at 0: latest gives [end, 0], anything else [0]
                        let mut offsets = match p.time {
                            LATEST_TIME if end > 0 => vec![end, 0],
                            LATEST_TIME => vec![0],
                            EARLIEST_TIME => vec![0],
                            _ => vec![0],
                        };
                        offsets.truncate(usize::try_from(p.max_number_of_offsets.max(0)).unwrap_or(0));
                        OffsetsResponsePartition { partition: p.partition, offsets, ..Default::default() }
                    }
                    None => OffsetsResponsePartition {
                        partition: p.partition,
                        error_code: ErrorCode::UnknownTopicOrPartition.code(),
                        ..Default::default()
                    },
                })
                .collect();
            OffsetsResponseTopic::new(t.topic.clone(), partitions)
        })
        .collect();
    OffsetsResponse { topics, ..Default::default() }
}

fn offset_commit(request: &OffsetCommitRequest) -> OffsetCommitResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t.partitions.iter().map(|p| OffsetCommitResponsePartition::new(p.partition, 0)).collect();
            OffsetCommitResponseTopic::new(t.topic.clone(), partitions)
        })
        .collect();
    OffsetCommitResponse { topics, ..Default::default() }
}

fn offset_fetch(request: &OffsetFetchRequest) -> OffsetFetchResponse {
    let topics = request
        .topics
        .iter()
        .flatten()
        .map(|t| {
            let partitions =
                t.partitions.iter().map(|&partition| OffsetFetchResponsePartition::new(partition, -1, "", 0)).collect();
            OffsetFetchResponseTopic::new(t.topic.clone(), partitions)
        })
        .collect();
    OffsetFetchResponse { topics, ..Default::default() }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{broker, fetch_of};
    use crate::wire::{self, Conn};
    use gregor_protocol::frame::ApiKey;
    use gregor_protocol::messages::{BrokerMetadata, OffsetsPartition, OffsetsRequest, OffsetsTopic, LATEST_TIME};
    use gregor_protocol::{Compression, ErrorCode};
    use std::time::Duration;

    #[tokio::test]
    async fn answers_correctly_by_default() {
        let b = broker().await;
        let mut c = Conn::open(b.addr()).await;
        let md = c.call(0, &wire::metadata(&[])).await;
        assert_eq!(
            md.brokers,
            [BrokerMetadata {
                node_id: 0,
                host: "127.0.0.1".into(),
                port: b.addr().port().into(),
                ..Default::default()
            }]
        );
        assert_eq!(md.topics.len(), 1);
        assert!(md.topics[0].partitions.iter().all(|p| p.leader == 0));
        let md = c.call(0, &wire::metadata(&["nope"])).await;
        assert_eq!(md.topics[0].error(), Some(ErrorCode::UnknownTopicOrPartition));

        let f = c.call(0, &fetch_of("t", 0, 1)).await;
        let p = &f.topics[0].partitions[0];
        assert_eq!(p.high_watermark, 2);
        let got = p.messages("t", 1).unwrap().messages;
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].offset, got[0].message.value.as_deref()), (1, Some(&b"b"[..])));

        let r = c.call(0, &wire::produce("t", 1, 1, vec![wire::msg(None, "x")], Compression::None)).await;
        assert_eq!((r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].offset), (0, 0));
        assert_eq!(b.log("t", 1).len(), 1);

        let o = c
            .call(
                0,
                &OffsetsRequest {
                    replica_id: -1,
                    topics: vec![OffsetsTopic::new(
                        "t",
                        vec![OffsetsPartition {
                            partition: 0,
                            time: LATEST_TIME,
                            max_number_of_offsets: 1,
                            ..Default::default()
                        }],
                    )],
                    ..Default::default()
                },
            )
            .await;
        assert_eq!(o.topics[0].partitions[0].offsets, [2]);
        assert_eq!(b.count(ApiKey::Metadata), 2);
        assert_eq!(b.served().len(), 5);
    }

    #[tokio::test]
    async fn a_fetch_with_nothing_new_is_parked_for_its_max_wait() {
        let b = broker().await;
        let mut c = Conn::open(b.addr()).await;
        let mut request = fetch_of("t", 0, 2);
        request.min_bytes = 1;
        request.max_wait_time = 150;
        let started = tokio::time::Instant::now();
        let f = c.call(0, &request).await;
        assert!(started.elapsed() >= Duration::from_millis(150));
        assert!(f.topics[0].partitions[0].message_set.is_empty());
        // with data there, at once
        request.topics[0].partitions[0].fetch_offset = 1;
        request.max_wait_time = 10_000;
        let started = tokio::time::Instant::now();
        c.call(0, &request).await;
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

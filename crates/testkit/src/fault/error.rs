//! The response of [`Fault::Error`](super::Fault::Error): one error code for everything a
//! request names.

use bytes::{Bytes, BytesMut};
use gregor_protocol::frame::{encode_response_of, RequestHeader};
use gregor_protocol::messages::{
    AnyRequest, ConsumerMetadataResponse, FetchResponse, FetchResponsePartition, FetchResponseTopic, MetadataResponse,
    OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic, OffsetFetchResponse,
    OffsetFetchResponsePartition, OffsetFetchResponseTopic, OffsetsResponse, OffsetsResponsePartition,
    OffsetsResponseTopic, ProduceResponse, ProduceResponsePartition, ProduceResponseTopic, TopicMetadata,
};
use gregor_protocol::{Encode, ErrorCode};

/// The response frame (size prefix included) a broker gives when `code` applies to every
/// topic/partition of `request`; `None` when it closes the connection instead (an `acks=0`
/// Produce, as 0.8.2 does when one fails).
pub(super) fn error_response(header: &RequestHeader, request: &AnyRequest, code: ErrorCode) -> Option<Bytes> {
    let c = code.code();
    match request {
        AnyRequest::Produce(r) if r.required_acks == 0 => None,
        AnyRequest::Produce(r) => frame(
            header,
            &ProduceResponse {
                topics: r
                    .topics
                    .iter()
                    .map(|t| {
                        let parts = t.partitions.iter().map(|p| ProduceResponsePartition::new(p.partition, c, -1));
                        ProduceResponseTopic::new(t.topic.clone(), parts.collect())
                    })
                    .collect(),
                ..Default::default()
            },
        ),
        AnyRequest::Fetch(r) => frame(
            header,
            &FetchResponse {
                topics: r
                    .topics
                    .iter()
                    .map(|t| {
                        let parts = t
                            .partitions
                            .iter()
                            .map(|p| FetchResponsePartition::new(p.partition, c, -1, Default::default()));
                        FetchResponseTopic::new(t.topic.clone(), parts.collect())
                    })
                    .collect(),
                ..Default::default()
            },
        ),
        AnyRequest::Offsets(r) => frame(
            header,
            &OffsetsResponse {
                topics: r
                    .topics
                    .iter()
                    .map(|t| {
                        let parts = t.partitions.iter().map(|p| OffsetsResponsePartition {
                            partition: p.partition,
                            error_code: c,
                            ..Default::default()
                        });
                        OffsetsResponseTopic::new(t.topic.clone(), parts.collect())
                    })
                    .collect(),
                ..Default::default()
            },
        ),
        AnyRequest::Metadata(r) => frame(
            header,
            &MetadataResponse {
                topics: r.topic_names().map(|t| TopicMetadata::new(t, c, vec![])).collect(),
                ..Default::default()
            },
        ),
        AnyRequest::OffsetCommit(r) => frame(
            header,
            &OffsetCommitResponse {
                topics: r
                    .topics
                    .iter()
                    .map(|t| {
                        let parts = t.partitions.iter().map(|p| OffsetCommitResponsePartition::new(p.partition, c));
                        OffsetCommitResponseTopic::new(t.topic.clone(), parts.collect())
                    })
                    .collect(),
                ..Default::default()
            },
        ),
        AnyRequest::OffsetFetch(r) => frame(
            header,
            &OffsetFetchResponse {
                topics: r
                    .topics
                    .iter()
                    .flatten()
                    .map(|t| {
                        let parts = t.partitions.iter().map(|&p| OffsetFetchResponsePartition::new(p, -1, "", c));
                        OffsetFetchResponseTopic::new(t.topic.clone(), parts.collect())
                    })
                    .collect(),
                ..Default::default()
            },
        ),
        AnyRequest::ConsumerMetadata(_) => frame(
            header,
            &ConsumerMetadataResponse {
                error_code: c,
                node_id: -1,
                host: String::new(),
                port: -1,
                ..Default::default()
            },
        ),
        _ => None,
    }
}

fn frame<B: Encode>(header: &RequestHeader, body: &B) -> Option<Bytes> {
    let mut buf = BytesMut::new();
    let written = encode_response_of(header.api_key, header.correlation_id, header.api_version, body, &mut buf);
    match written {
        Ok(()) => Some(buf.freeze()),
        Err(e) => {
            tracing::error!(api = %header.api_key, error = %e, "fake broker could not encode an error response");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gregor_protocol::frame::decode_response;
    use gregor_protocol::messages::{
        ConsumerMetadataRequest, FetchPartition, FetchRequest, FetchTopic, ProducePartition, ProduceRequest,
        ProduceTopic,
    };
    use gregor_protocol::{MessageSet, Request};

    fn header<R: Request>(correlation_id: i32) -> RequestHeader {
        RequestHeader {
            api_key: R::KEY,
            api_version: 0,
            correlation_id,
            client_id: None,
            unknown_tagged_fields: Default::default(),
        }
    }

    fn produce(acks: i16) -> ProduceRequest {
        let partition = |partition| ProducePartition::new(partition, MessageSet::new());
        ProduceRequest {
            required_acks: acks,
            timeout: 100,
            topics: vec![ProduceTopic::new("t", vec![partition(0), partition(3)])],
            ..Default::default()
        }
    }

    #[test]
    fn every_partition_named_gets_the_code() {
        let h = header::<ProduceRequest>(7);
        let frame = error_response(&h, &AnyRequest::Produce(produce(1)), ErrorCode::NotLeaderForPartition).unwrap();
        let (rh, r) = decode_response::<ProduceRequest>(0, frame.slice(4..)).unwrap();
        assert_eq!(rh.correlation_id, 7);
        let got: Vec<_> = r.topics[0].partitions.iter().map(|p| (p.partition, p.error_code, p.offset)).collect();
        assert_eq!(got, [(0, 6, -1), (3, 6, -1)]);

        let fetch = FetchRequest {
            max_wait_time: 0,
            min_bytes: 0,
            topics: vec![FetchTopic::new("t", vec![FetchPartition::new(1, 4, 9)])],
            ..Default::default()
        };
        let frame =
            error_response(&header::<FetchRequest>(8), &AnyRequest::Fetch(fetch), ErrorCode::OffsetOutOfRange).unwrap();
        let (_, r) = decode_response::<FetchRequest>(0, frame.slice(4..)).unwrap();
        let p = &r.topics[0].partitions[0];
        assert_eq!((p.partition, p.error(), p.high_watermark), (1, Some(ErrorCode::OffsetOutOfRange), -1));

        let frame = error_response(
            &header::<ConsumerMetadataRequest>(9),
            &AnyRequest::ConsumerMetadata(ConsumerMetadataRequest::group("g")),
            ErrorCode::ConsumerCoordinatorNotAvailable,
        )
        .unwrap();
        let (_, r) = decode_response::<ConsumerMetadataRequest>(0, frame.slice(4..)).unwrap();
        assert_eq!((r.error_code, r.node_id), (ErrorCode::ConsumerCoordinatorNotAvailable.code(), -1));
    }

    #[test]
    fn an_acks_0_produce_closes_instead() {
        let h = header::<ProduceRequest>(1);
        assert_eq!(error_response(&h, &AnyRequest::Produce(produce(0)), ErrorCode::MessageSizeTooLarge), None);
    }
}

//! # gregor-protocol
//!
//! A pure codec for the Kafka 0.8.2 wire protocol: bytes in, values out. No IO, no async, no
//! logging; the network, producer, consumer and the test cluster all speak through it.
//!
//! ```text
//!  frame::split_frame ──► RequestHeader::decode ──► AnyRequest::decode      (a broker)
//!  frame::encode_request(header, &ProduceRequest) ──► bytes                 (a client)
//!  frame::decode_response::<FetchRequest>(0, frame) ──► FetchResponse
//!        └─ FetchResponsePartition::messages(topic, offset) ──► MessageSet::decode
//!              (CRC check, gzip/snappy/lz4 wrappers expanded, offsets below the fetch
//!               offset dropped, partial trailing message dropped, "too large" reported)
//! ```
//!
//! * [`frame`]: API keys, the versioned [`Encode`]/[`Decode`]/[`Request`] traits, headers and the
//!   4-byte size framing.
//! * [`messages`]: one module per API, every version from 0.8.2's to today's — Produce v0-v12,
//!   Fetch v0-v17, ListOffsets (Offsets) v0-v10, Metadata v0-v13, OffsetCommit and OffsetFetch
//!   v0-v9, FindCoordinator (ConsumerMetadata) v0-v4, ApiVersions v0-v3, the group APIs,
//!   InitProducerId, SASL and the admin APIs — requests and responses, both directions, declared
//!   with the [`schema`]'s `message!` (fields by version, flexible versions' tagged fields).
//! * [`message`]: Message v0 and v1 and [`MessageSet`], compressed wrappers.
//! * [`record`]: RecordBatch v2 (magic 2): [`RecordBatchBuilder`] appends records in place and
//!   finishes the batch (codec, header, CRC-32C); [`Batches`] reads a fetched `records` blob of
//!   any magic (v0/v1 messages and v2 batches) into [`Batch`]es and their [`Record`]s.
//! * [`compression`]: gzip, snappy (Kafka's xerial framing), lz4 (the 0.8 frame for magic 0,
//!   the standard one above) and zstd (magic 2).
//! * [`ErrorCode`]: every broker error code of 0.8.2.
//! * [`TopicPartition`]: Kafka's `TopicAndPartition`, one partition of one topic; the key of
//!   every per-partition map in gregor. With the `serde` feature (off by default; gregor-zk
//!   turns it on) it reads and writes Kafka's JSON `{"topic":"t","partition":0}`.
//!
//! Wire input is treated as hostile: decoding never panics, never allocates from a length it
//! has not checked against the bytes that remain, and a frame is used exactly or rejected.
//!
//! ```
//! use bytes::{Bytes, BytesMut};
//! use gregor_protocol::frame::{encode_request, split_frame, ApiKey, RequestHeader};
//! use gregor_protocol::messages::{AnyRequest, MetadataRequest};
//!
//! let header = RequestHeader {
//!     api_key: ApiKey::Metadata,
//!     api_version: 0,
//!     correlation_id: 7,
//!     client_id: Some("doc".into()),
//!     unknown_tagged_fields: Default::default(),
//! };
//! let mut buf = BytesMut::new();
//! encode_request(&header, &MetadataRequest::for_topics(["t"]), &mut buf)?;
//!
//! // the broker's side
//! let mut frame = split_frame(&mut buf, 1 << 20)?.expect("a whole frame");
//! let got = RequestHeader::decode(&mut frame)?;
//! assert_eq!(got, header);
//! let AnyRequest::Metadata(req) = AnyRequest::decode(&got, frame)? else { unreachable!() };
//! assert_eq!(req.topic_names().collect::<Vec<_>>(), ["t"]);
//! # Ok::<(), gregor_protocol::Error>(())
//! ```

mod api;
mod api_key;
pub mod compression;
mod error;
mod error_code;
pub mod frame;
pub mod message;
pub mod messages;
mod parts;
pub mod record;
pub mod schema;
mod topic_partition;
pub mod wire;

pub use compression::Compression;
pub use error::{Error, MessageLocation, Result};
pub use error_code::{check as check_error_code, ErrorCode};
pub use frame::{Decode, Encode, Request};
pub use message::{EncodedMessage, Message, MessageAndOffset, MessageSet, MessageV1, MessageView};
pub use record::{Batch, Batches, Record, RecordBatchBuilder};
pub use topic_partition::TopicPartition;

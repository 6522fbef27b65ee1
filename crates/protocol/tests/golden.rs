//! Golden vectors: every request and response body of every version Kafka 0.8.2 has, written out
//! by hand byte by byte (a comment on every field), plus whole request and response frames and
//! message sets with their CRCs as literals.
//!
//! Each vector is checked three ways by [`assert_golden`]: the value encodes to exactly these
//! bytes, the bytes decode to exactly this value with nothing left over, and every strict prefix
//! of the bytes (in particular the vector with its last byte removed) fails to decode, without
//! panicking.
//!
//! The CRC literals were computed independently of the crate (`zlib.crc32` in Python over the
//! bytes from magic to the end of the value) and are re-checked below with a bit-by-bit CRC-32
//! written in this file, not with `crc32fast`.

use std::fmt::Debug;

use bytes::{Bytes, BytesMut};
use gregor_protocol::frame::{decode_response, encode_request, encode_response, split_frame, ApiKey, RequestHeader};
use gregor_protocol::message::DecodeOptions;
use gregor_protocol::messages::*;
use gregor_protocol::{Decode, Encode, Error, Message, MessageAndOffset, MessageSet};

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

/// Checks that `value` encodes in `version` to exactly `bytes`, that `bytes` decode to exactly
/// `value` using every byte, and that the vector cut short (by one byte, and by every other
/// amount) fails to decode rather than panicking or producing a value.
fn assert_golden<T: Encode + Decode + PartialEq + Debug>(value: &T, version: i16, bytes: &[u8]) {
    let encoded = value.to_bytes(version).unwrap_or_else(|e| panic!("encoding {value:?} v{version}: {e}"));
    assert_eq!(hex(&encoded), hex(bytes), "encoding of {value:?} v{version}");

    let mut buf = Bytes::copy_from_slice(bytes);
    let decoded = T::decode(version, &mut buf).unwrap_or_else(|e| panic!("decoding v{version} golden bytes: {e}"));
    assert_eq!(&decoded, value, "decoding v{version}");
    assert!(buf.is_empty(), "{} bytes left after decoding v{version}", buf.len());

    // One byte removed from the end: the last field is incomplete.
    let mut cut = Bytes::copy_from_slice(&bytes[..bytes.len() - 1]);
    let result = T::decode(version, &mut cut);
    assert!(result.is_err(), "decoding v{version} golden bytes without their last byte gave {result:?}");

    // And any shorter prefix too.
    for len in 0..bytes.len() {
        let mut cut = Bytes::copy_from_slice(&bytes[..len]);
        let result = T::decode(version, &mut cut);
        assert!(
            result.is_err(),
            "decoding the first {len} of {} golden bytes (v{version}) gave {result:?}",
            bytes.len()
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), bit by bit: an implementation
/// independent of the crate's `crc32fast`.
fn crc32_bitwise(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

fn b(s: &str) -> Option<Bytes> {
    Some(Bytes::copy_from_slice(s.as_bytes()))
}

fn set(bytes: &[u8]) -> MessageSet {
    MessageSet::from_bytes(Bytes::copy_from_slice(bytes))
}

// ---------------------------------------------------------------------------------------------
// message sets
// ---------------------------------------------------------------------------------------------

/// Message v0, key "key", value "hello" (22 bytes).
const MSG_KEY_HELLO: &[u8] = &[
    0x08, 0x31, 0x3f, 0x85, // crc = 0x08313f85 (CRC-32 of the 18 bytes from magic to the end)
    0x00, // magic = 0
    0x00, // attributes = 0 (no compression)
    0x00, 0x00, 0x00, 0x03, // key length = 3
    b'k', b'e', b'y', // key = "key"
    0x00, 0x00, 0x00, 0x05, // value length = 5
    b'h', b'e', b'l', b'l', b'o', // value = "hello"
];

/// Message v0 with a null key and a null value (14 bytes): Kafka's well-known CRC a7 ec 68 03.
const MSG_NULL_NULL: &[u8] = &[
    0xa7, 0xec, 0x68, 0x03, // crc = 0xa7ec6803
    0x00, // magic = 0
    0x00, // attributes = 0
    0xff, 0xff, 0xff, 0xff, // key length = -1 (null)
    0xff, 0xff, 0xff, 0xff, // value length = -1 (null)
];

/// Message v0 with a null key and value "hi" (16 bytes).
const MSG_NULL_HI: &[u8] = &[
    0xfd, 0x6e, 0xbd, 0xdb, // crc = 0xfd6ebddb
    0x00, // magic = 0
    0x00, // attributes = 0
    0xff, 0xff, 0xff, 0xff, // key length = -1 (null)
    0x00, 0x00, 0x00, 0x02, // value length = 2
    b'h', b'i', // value = "hi"
];

#[test]
fn crc_literals_match_an_independent_crc32() {
    for msg in [MSG_KEY_HELLO, MSG_NULL_NULL, MSG_NULL_HI] {
        let stored = u32::from_be_bytes(msg[..4].try_into().unwrap());
        assert_eq!(crc32_bitwise(&msg[4..]), stored, "{}", hex(msg));
    }
    // The textbook check value of CRC-32/IEEE, so the bitwise implementation is itself right.
    assert_eq!(crc32_bitwise(b"123456789"), 0xcbf4_3926);
}

#[test]
fn message_with_key_and_value() {
    let mut buf = BytesMut::new();
    Message::new(b("key"), b("hello")).encode(&mut buf).unwrap();
    assert_eq!(hex(&buf), hex(MSG_KEY_HELLO));
    let decoded = Message::decode(Bytes::from_static(MSG_KEY_HELLO), Default::default).unwrap();
    assert_eq!(decoded, Message::new(b("key"), b("hello")));
    assert_eq!(Message::new(b("key"), b("hello")).encoded_len(), MSG_KEY_HELLO.len());
}

#[test]
fn message_with_null_key_and_null_value() {
    let mut buf = BytesMut::new();
    Message::new(None, None).encode(&mut buf).unwrap();
    assert_eq!(hex(&buf), hex(MSG_NULL_NULL));
    assert_eq!(&buf[..4], &[0xa7, 0xec, 0x68, 0x03]);
    let decoded = Message::decode(Bytes::from_static(MSG_NULL_NULL), Default::default).unwrap();
    assert_eq!(decoded, Message::new(None, None));
}

#[test]
fn message_set_of_two_uncompressed_messages() {
    #[rustfmt::skip]
    let bytes: Vec<u8> = [
        &[
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, // offset = 5
            0x00, 0x00, 0x00, 0x16, // message size = 22
        ][..],
        MSG_KEY_HELLO, // crc 08 31 3f 85 | magic 0 | attributes 0 | key "key" | value "hello"
        &[
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, // offset = 6
            0x00, 0x00, 0x00, 0x0e, // message size = 14
        ][..],
        MSG_NULL_NULL, // crc a7 ec 68 03 | magic 0 | attributes 0 | key null | value null
    ]
    .concat();
    let entries = vec![
        MessageAndOffset::new(5, Message::new(b("key"), b("hello"))),
        MessageAndOffset::new(6, Message::new(None, None)),
    ];
    let encoded = MessageSet::encode(&entries).unwrap();
    assert_eq!(hex(encoded.as_bytes()), hex(&bytes));

    let decoded = set(&bytes).decode(&DecodeOptions::default()).unwrap();
    assert_eq!(decoded.messages, entries);
    assert_eq!(decoded.skipped, 0);
    assert_eq!(decoded.partial_trailing_bytes, 0);
    assert_eq!(decoded.next_offset(), Some(7));

    // Fetched from offset 6: the first message is dropped and counted.
    let decoded = set(&bytes).decode(&DecodeOptions::fetched("t", 0, 6)).unwrap();
    assert_eq!(decoded.messages, entries[1..]);
    assert_eq!(decoded.skipped, 1);

    // One byte short: the second message is a partial trailing one, dropped and counted.
    let decoded = set(&bytes[..bytes.len() - 1]).decode(&DecodeOptions::default()).unwrap();
    assert_eq!(decoded.messages, entries[..1]);
    assert_eq!(decoded.partial_trailing_bytes, 12 + 14 - 1);

    // Cut inside the first message: nothing whole, which is an error, not an empty result.
    let err = set(&bytes[..20]).decode(&DecodeOptions::fetched("t", 0, 5)).unwrap_err();
    assert!(matches!(err, Error::MessageLargerThanFetch { entry_size: Some(34), fetched_bytes: 20, .. }), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Produce (api key 0)
// ---------------------------------------------------------------------------------------------

#[test]
fn produce_v0_request() {
    #[rustfmt::skip]
    let bytes: Vec<u8> = [
        &[
            0x00, 0x01, // required_acks = 1
            0x00, 0x00, 0x05, 0xdc, // timeout = 1500 ms
            0x00, 0x00, 0x00, 0x01, // topics: 1
            0x00, 0x01, b't', // topic = "t"
            0x00, 0x00, 0x00, 0x02, // partitions: 2
            0x00, 0x00, 0x00, 0x00, // partition = 0
            0x00, 0x00, 0x00, 0x22, // message_set_size = 34
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // offset = 0
            0x00, 0x00, 0x00, 0x16, // message size = 22
        ][..],
        MSG_KEY_HELLO, // crc 08 31 3f 85 | magic 0 | attributes 0 | key "key" | value "hello"
        &[
            0x00, 0x00, 0x00, 0x01, // partition = 1
            0x00, 0x00, 0x00, 0x1a, // message_set_size = 26
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // offset = 0
            0x00, 0x00, 0x00, 0x0e, // message size = 14
        ][..],
        MSG_NULL_NULL, // crc a7 ec 68 03 | magic 0 | attributes 0 | key null | value null
    ]
    .concat();
    let value = ProduceRequest {
        required_acks: 1,
        timeout: 1500,
        topics: vec![ProduceTopic::new(
            "t",
            vec![
                ProducePartition {
                    partition: 0,
                    message_set: MessageSet::encode(&[MessageAndOffset::new(0, Message::new(b("key"), b("hello")))])
                        .unwrap(),
                    ..Default::default()
                },
                ProducePartition {
                    partition: 1,
                    message_set: MessageSet::from_messages(
                        [Message::new(None, None)],
                        gregor_protocol::Compression::None,
                    )
                    .unwrap(),
                    ..Default::default()
                },
            ],
        )],
        ..Default::default()
    };
    assert_golden(&value, 0, &bytes);
    // the size hint that sizes the request buffer is exact for a produce request
    assert_eq!(value.size_hint(), bytes.len());
}

#[test]
fn produce_v0_request_acks_0_with_empty_set() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, // required_acks = 0 (no response)
        0x00, 0x00, 0x00, 0x00, // timeout = 0
        0x00, 0x00, 0x00, 0x01, // topics: 1
        0x00, 0x00, // topic = "" (empty string)
        0x00, 0x00, 0x00, 0x01, // partitions: 1
        0xff, 0xff, 0xff, 0xff, // partition = -1
        0x00, 0x00, 0x00, 0x00, // message_set_size = 0 (empty set)
    ];
    let value = ProduceRequest {
        required_acks: 0,
        timeout: 0,
        topics: vec![ProduceTopic::new(
            "",
            vec![ProducePartition { partition: -1, message_set: MessageSet::new(), ..Default::default() }],
        )],
        ..Default::default()
    };
    assert!(!gregor_protocol::Request::expects_response(&value));
    assert_golden(&value, 0, bytes);
}

#[test]
fn produce_v0_response() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, 0x00, 0x02, // topics: 2
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x02, // partitions: 2
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x00, // error_code = 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, // offset = 42
        0x00, 0x00, 0x00, 0x01, // partition = 1
        0x00, 0x06, // error_code = 6 (NotLeaderForPartition)
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // offset = -1
        0x00, 0x01, b'u', // topic = "u"
        0x00, 0x00, 0x00, 0x01, // partitions: 1
        0x00, 0x00, 0x00, 0x07, // partition = 7
        0x00, 0x00, // error_code = 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x42, 0x40, // offset = 1000000
    ];
    let value = ProduceResponse {
        topics: vec![
            ProduceResponseTopic::new(
                "t",
                vec![
                    ProduceResponsePartition { partition: 0, error_code: 0, offset: 42, ..Default::default() },
                    ProduceResponsePartition { partition: 1, error_code: 6, offset: -1, ..Default::default() },
                ],
            ),
            ProduceResponseTopic::new(
                "u",
                vec![ProduceResponsePartition { partition: 7, error_code: 0, offset: 1_000_000, ..Default::default() }],
            ),
        ],
        ..Default::default()
    };
    assert_golden(&value, 0, bytes);
    assert_eq!(value.topics[0].partitions[1].error(), Some(gregor_protocol::ErrorCode::NotLeaderForPartition));
}

// ---------------------------------------------------------------------------------------------
// Fetch (api key 1)
// ---------------------------------------------------------------------------------------------

#[test]
fn fetch_v0_request() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0xff, 0xff, 0xff, 0xff, // replica_id = -1 (a consumer)
        0x00, 0x00, 0x00, 0x64, // max_wait_time = 100 ms
        0x00, 0x00, 0x00, 0x01, // min_bytes = 1
        0x00, 0x00, 0x00, 0x02, // topics: 2
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x02, // partitions: 2
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // fetch_offset = 0
        0x00, 0x10, 0x00, 0x00, // max_bytes = 1048576
        0x00, 0x00, 0x00, 0x01, // partition = 1
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, // fetch_offset = 42
        0x00, 0x01, 0x00, 0x00, // max_bytes = 65536
        0x00, 0x06, b'o', b'r', b'd', b'e', b'r', b's', // topic = "orders"
        0x00, 0x00, 0x00, 0x01, // partitions: 1
        0x00, 0x00, 0x00, 0x03, // partition = 3
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, // fetch_offset = 7
        0x00, 0x00, 0x04, 0x00, // max_bytes = 1024
    ];
    let value = FetchRequest {
        replica_id: CONSUMER_REPLICA_ID,
        max_wait_time: 100,
        min_bytes: 1,
        topics: vec![
            FetchTopic::new(
                "t",
                vec![
                    FetchPartition { partition: 0, fetch_offset: 0, max_bytes: 1 << 20, ..Default::default() },
                    FetchPartition { partition: 1, fetch_offset: 42, max_bytes: 1 << 16, ..Default::default() },
                ],
            ),
            FetchTopic::new(
                "orders",
                vec![FetchPartition { partition: 3, fetch_offset: 7, max_bytes: 1024, ..Default::default() }],
            ),
        ],
        ..Default::default()
    };
    assert_golden(&value, 0, bytes);
}

#[test]
fn fetch_v0_response() {
    #[rustfmt::skip]
    let bytes: Vec<u8> = [
        &[
            0x00, 0x00, 0x00, 0x01, // topics: 1
            0x00, 0x01, b't', // topic = "t"
            0x00, 0x00, 0x00, 0x02, // partitions: 2
            0x00, 0x00, 0x00, 0x00, // partition = 0
            0x00, 0x00, // error_code = 0
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // high_watermark = 1
            0x00, 0x00, 0x00, 0x1c, // message_set_size = 28
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // offset = 0
            0x00, 0x00, 0x00, 0x10, // message size = 16
        ][..],
        MSG_NULL_HI, // crc fd 6e bd db | magic 0 | attributes 0 | key null | value "hi"
        &[
            0x00, 0x00, 0x00, 0x01, // partition = 1
            0x00, 0x01, // error_code = 1 (OffsetOutOfRange)
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // high_watermark = -1
            0x00, 0x00, 0x00, 0x00, // message_set_size = 0 (empty set)
        ][..],
    ]
    .concat();
    let value = FetchResponse {
        topics: vec![FetchResponseTopic::new(
            "t",
            vec![
                FetchResponsePartition {
                    partition: 0,
                    error_code: 0,
                    high_watermark: 1,
                    message_set: MessageSet::encode(&[MessageAndOffset::new(0, Message::new(None, b("hi")))]).unwrap(),
                    ..Default::default()
                },
                FetchResponsePartition {
                    partition: 1,
                    error_code: 1,
                    high_watermark: -1,
                    message_set: MessageSet::new(),
                    ..Default::default()
                },
            ],
        )],
        ..Default::default()
    };
    assert_golden(&value, 0, &bytes);
    let msgs = value.topics[0].partitions[0].messages("t", 0).unwrap();
    assert_eq!(msgs.messages, vec![MessageAndOffset::new(0, Message::new(None, b("hi")))]);
    assert!(value.topics[0].partitions[1].messages("t", 0).unwrap().messages.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Offsets (api key 2)
// ---------------------------------------------------------------------------------------------

#[test]
fn offsets_v0_request() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0xff, 0xff, 0xff, 0xff, // replica_id = -1
        0x00, 0x00, 0x00, 0x02, // topics: 2
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x02, // partitions: 2
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // time = -1 (latest)
        0x00, 0x00, 0x00, 0x01, // max_number_of_offsets = 1
        0x00, 0x00, 0x00, 0x01, // partition = 1
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, // time = -2 (earliest)
        0x00, 0x00, 0x00, 0x01, // max_number_of_offsets = 1
        0x00, 0x01, b'u', // topic = "u"
        0x00, 0x00, 0x00, 0x01, // partitions: 1
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x00, 0x01, 0x45, 0xf6, 0x80, 0xb0, 0x00, // time = 1400000000000 ms
        0x00, 0x00, 0x00, 0x0a, // max_number_of_offsets = 10
    ];
    let value = OffsetsRequest {
        replica_id: -1,
        topics: vec![
            OffsetsTopic::new(
                "t",
                vec![
                    OffsetsPartition {
                        partition: 0,
                        time: LATEST_TIME,
                        max_number_of_offsets: 1,
                        ..Default::default()
                    },
                    OffsetsPartition {
                        partition: 1,
                        time: EARLIEST_TIME,
                        max_number_of_offsets: 1,
                        ..Default::default()
                    },
                ],
            ),
            OffsetsTopic::new(
                "u",
                vec![OffsetsPartition {
                    partition: 0,
                    time: 1_400_000_000_000,
                    max_number_of_offsets: 10,
                    ..Default::default()
                }],
            ),
        ],
        ..Default::default()
    };
    assert_golden(&value, 0, bytes);
}

#[test]
fn offsets_v0_response() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, 0x00, 0x02, // topics: 2
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x02, // partitions: 2
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x00, // error_code = 0
        0x00, 0x00, 0x00, 0x01, // offsets: 1
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, // offset = 42
        0x00, 0x00, 0x00, 0x01, // partition = 1
        0x00, 0x06, // error_code = 6 (NotLeaderForPartition)
        0x00, 0x00, 0x00, 0x00, // offsets: 0
        0x00, 0x01, b'u', // topic = "u"
        0x00, 0x00, 0x00, 0x01, // partitions: 1
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x00, // error_code = 0
        0x00, 0x00, 0x00, 0x03, // offsets: 3 (newest first)
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc8, // offset = 200
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x64, // offset = 100
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // offset = 0
    ];
    let value = OffsetsResponse {
        topics: vec![
            OffsetsResponseTopic::new(
                "t",
                vec![
                    OffsetsResponsePartition { partition: 0, error_code: 0, offsets: vec![42], ..Default::default() },
                    OffsetsResponsePartition { partition: 1, error_code: 6, offsets: vec![], ..Default::default() },
                ],
            ),
            OffsetsResponseTopic::new(
                "u",
                vec![OffsetsResponsePartition {
                    partition: 0,
                    error_code: 0,
                    offsets: vec![200, 100, 0],
                    ..Default::default()
                }],
            ),
        ],
        ..Default::default()
    };
    assert_golden(&value, 0, bytes);
}

// ---------------------------------------------------------------------------------------------
// Metadata (api key 3)
// ---------------------------------------------------------------------------------------------

#[test]
fn metadata_v0_request_all_topics() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, 0x00, 0x00, // topics: 0 (all topics)
    ];
    assert_golden(&MetadataRequest { topics: Some(vec![]), ..Default::default() }, 0, bytes);
}

#[test]
fn metadata_v0_request_two_topics() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, 0x00, 0x02, // topics: 2
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x06, b'o', b'r', b'd', b'e', b'r', b's', // topic = "orders"
    ];
    assert_golden(&MetadataRequest::for_topics(["t", "orders"]), 0, bytes);
}

#[test]
fn metadata_v0_response() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, 0x00, 0x02, // brokers: 2
        0x00, 0x00, 0x00, 0x01, // node_id = 1
        0x00, 0x02, b'h', b'1', // host = "h1"
        0x00, 0x00, 0x23, 0x84, // port = 9092
        0x00, 0x00, 0x00, 0x02, // node_id = 2
        0x00, 0x00, // host = "" (empty string)
        0x00, 0x00, 0x23, 0x85, // port = 9093
        0x00, 0x00, 0x00, 0x02, // topics: 2
        0x00, 0x00, // topic_error_code = 0
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x03, // partitions: 3
        0x00, 0x00, // partition_error_code = 0
        0x00, 0x00, 0x00, 0x00, // partition_id = 0
        0x00, 0x00, 0x00, 0x01, // leader = 1
        0x00, 0x00, 0x00, 0x02, // replicas: 2
        0x00, 0x00, 0x00, 0x01, // replica = 1
        0x00, 0x00, 0x00, 0x02, // replica = 2
        0x00, 0x00, 0x00, 0x02, // isr: 2
        0x00, 0x00, 0x00, 0x02, // isr = 2
        0x00, 0x00, 0x00, 0x01, // isr = 1
        0x00, 0x09, // partition_error_code = 9 (ReplicaNotAvailable)
        0x00, 0x00, 0x00, 0x01, // partition_id = 1
        0x00, 0x00, 0x00, 0x02, // leader = 2
        0x00, 0x00, 0x00, 0x01, // replicas: 1
        0x00, 0x00, 0x00, 0x02, // replica = 2
        0x00, 0x00, 0x00, 0x00, // isr: 0
        0x00, 0x05, // partition_error_code = 5 (LeaderNotAvailable)
        0x00, 0x00, 0x00, 0x02, // partition_id = 2
        0xff, 0xff, 0xff, 0xff, // leader = -1 (none)
        0x00, 0x00, 0x00, 0x01, // replicas: 1
        0x00, 0x00, 0x00, 0x01, // replica = 1
        0x00, 0x00, 0x00, 0x00, // isr: 0
        0x00, 0x05, // topic_error_code = 5 (LeaderNotAvailable)
        0x00, 0x03, b'n', b'e', b'w', // topic = "new"
        0x00, 0x00, 0x00, 0x00, // partitions: 0
    ];
    let value = MetadataResponse {
        brokers: vec![
            BrokerMetadata { node_id: 1, host: "h1".into(), port: 9092, ..Default::default() },
            BrokerMetadata { node_id: 2, host: String::new(), port: 9093, ..Default::default() },
        ],
        topics: vec![
            TopicMetadata {
                error_code: 0,
                topic: Some("t".into()),
                partitions: vec![
                    PartitionMetadata {
                        error_code: 0,
                        partition: 0,
                        leader: 1,
                        replicas: vec![1, 2],
                        isr: vec![2, 1],
                        ..Default::default()
                    },
                    PartitionMetadata {
                        error_code: 9,
                        partition: 1,
                        leader: 2,
                        replicas: vec![2],
                        isr: vec![],
                        ..Default::default()
                    },
                    PartitionMetadata {
                        error_code: 5,
                        partition: 2,
                        leader: -1,
                        replicas: vec![1],
                        isr: vec![],
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
            TopicMetadata::new("new", 5, vec![]),
        ],
        ..Default::default()
    };
    assert_golden(&value, 0, bytes);
    assert_eq!(value.topics[0].partitions[2].leader(), None);
    assert_eq!(value.topics[0].partitions[1].leader(), Some(2));
}

#[test]
fn metadata_v0_response_empty_cluster() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, 0x00, 0x00, // brokers: 0
        0x00, 0x00, 0x00, 0x00, // topics: 0
    ];
    assert_golden(&MetadataResponse::default(), 0, bytes);
}

// ---------------------------------------------------------------------------------------------
// OffsetCommit (api key 8)
// ---------------------------------------------------------------------------------------------

#[test]
fn offset_commit_v0_request() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x01, b'g', // group_id = "g"
        // (no group_generation_id, consumer_id in v0)
        0x00, 0x00, 0x00, 0x01, // topics: 1
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x02, // partitions: 2
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, // offset = 42
        // (no timestamp in v0)
        0x00, 0x00, // metadata = "" (empty string)
        0x00, 0x00, 0x00, 0x01, // partition = 1
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // offset = -1
        0x00, 0x01, b'm', // metadata = "m"
    ];
    let value = OffsetCommitRequest {
        group_id: "g".into(),
        group_generation_id: DEFAULT_GENERATION_ID,
        consumer_id: DEFAULT_CONSUMER_ID.into(),
        topics: vec![OffsetCommitTopic::new(
            "t",
            vec![
                OffsetCommitPartition {
                    partition: 0,
                    offset: 42,
                    timestamp: DEFAULT_TIMESTAMP,
                    metadata: Some(String::new()),
                    ..Default::default()
                },
                OffsetCommitPartition {
                    partition: 1,
                    offset: -1,
                    timestamp: DEFAULT_TIMESTAMP,
                    metadata: Some("m".into()),
                    ..Default::default()
                },
            ],
        )],
        ..Default::default()
    };
    assert_golden(&value, 0, bytes);
}

#[test]
fn offset_commit_v1_request() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x01, b'g', // group_id = "g"
        0x00, 0x00, 0x00, 0x05, // group_generation_id = 5
        0x00, 0x03, b'c', b'-', b'1', // consumer_id = "c-1"
        0x00, 0x00, 0x00, 0x02, // topics: 2
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x02, // partitions: 2
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, // offset = 42
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // timestamp = -1 (broker's time)
        0x00, 0x00, // metadata = ""
        0x00, 0x00, 0x00, 0x01, // partition = 1
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, // offset = 7
        0x00, 0x00, 0x01, 0x45, 0xf6, 0x80, 0xb0, 0x00, // timestamp = 1400000000000 ms
        0x00, 0x04, b'm', b'e', b't', b'a', // metadata = "meta"
        0x00, 0x01, b'u', // topic = "u"
        0x00, 0x00, 0x00, 0x01, // partitions: 1
        0x00, 0x00, 0x00, 0x03, // partition = 3
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, // offset = -2
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // timestamp = -1
        0x00, 0x00, // metadata = ""
    ];
    let value = OffsetCommitRequest {
        group_id: "g".into(),
        group_generation_id: 5,
        consumer_id: "c-1".into(),
        topics: vec![
            OffsetCommitTopic::new(
                "t",
                vec![
                    OffsetCommitPartition {
                        partition: 0,
                        offset: 42,
                        timestamp: -1,
                        metadata: Some(String::new()),
                        ..Default::default()
                    },
                    OffsetCommitPartition {
                        partition: 1,
                        offset: 7,
                        timestamp: 1_400_000_000_000,
                        metadata: Some("meta".into()),
                        ..Default::default()
                    },
                ],
            ),
            OffsetCommitTopic::new(
                "u",
                vec![OffsetCommitPartition {
                    partition: 3,
                    offset: -2,
                    timestamp: -1,
                    metadata: Some(String::new()),
                    ..Default::default()
                }],
            ),
        ],
        ..Default::default()
    };
    assert_golden(&value, 1, bytes);
}

#[test]
fn offset_commit_v1_request_with_default_generation_and_consumer() {
    // What a consumer outside a managed group sends in v1: generation -1, consumer "".
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, // group_id = "" (empty string)
        0xff, 0xff, 0xff, 0xff, // group_generation_id = -1
        0x00, 0x00, // consumer_id = ""
        0x00, 0x00, 0x00, 0x00, // topics: 0
    ];
    let value = OffsetCommitRequest {
        group_id: String::new(),
        group_generation_id: -1,
        consumer_id: String::new(),
        topics: vec![],
        ..Default::default()
    };
    assert_golden(&value, 1, bytes);
    // The same value in v0 is just the group and the topics.
    assert_golden(&value, 0, &[0x00, 0x00 /* group_id = "" */, 0x00, 0x00, 0x00, 0x00 /* topics: 0 */]);
}

#[test]
fn offset_commit_v0_response() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, 0x00, 0x01, // topics: 1
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x02, // partitions: 2
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x00, // error_code = 0
        0x00, 0x00, 0x00, 0x01, // partition = 1
        0x00, 0x03, // error_code = 3 (UnknownTopicOrPartition)
    ];
    let value = OffsetCommitResponse {
        topics: vec![OffsetCommitResponseTopic::new(
            "t",
            vec![OffsetCommitResponsePartition::new(0, 0), OffsetCommitResponsePartition::new(1, 3)],
        )],
        ..Default::default()
    };
    assert_golden(&value, 0, bytes);
}

#[test]
fn offset_commit_v1_response() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, 0x00, 0x02, // topics: 2
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x01, // partitions: 1
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x10, // error_code = 16 (NotCoordinatorForConsumer)
        0x00, 0x01, b'u', // topic = "u"
        0x00, 0x00, 0x00, 0x02, // partitions: 2
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x00, // error_code = 0
        0x00, 0x00, 0x00, 0x01, // partition = 1
        0x00, 0x0c, // error_code = 12 (OffsetMetadataTooLarge)
    ];
    let value = OffsetCommitResponse {
        topics: vec![
            OffsetCommitResponseTopic::new("t", vec![OffsetCommitResponsePartition::new(0, 16)]),
            OffsetCommitResponseTopic::new(
                "u",
                vec![OffsetCommitResponsePartition::new(0, 0), OffsetCommitResponsePartition::new(1, 12)],
            ),
        ],
        ..Default::default()
    };
    assert_golden(&value, 1, bytes);
    // v0 and v1 responses share a layout.
    assert_golden(&value, 0, bytes);
}

// ---------------------------------------------------------------------------------------------
// OffsetFetch (api key 9)
// ---------------------------------------------------------------------------------------------

#[test]
fn offset_fetch_v0_request() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x01, b'g', // group_id = "g"
        0x00, 0x00, 0x00, 0x01, // topics: 1
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x02, // partitions: 2
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x00, 0x00, 0x01, // partition = 1
    ];
    let value = OffsetFetchRequest::new("g", vec![OffsetFetchTopic::new("t", vec![0, 1])]);
    assert_golden(&value, 0, bytes);
}

#[test]
fn offset_fetch_v1_request() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x03, b'g', b'r', b'p', // group_id = "grp"
        0x00, 0x00, 0x00, 0x02, // topics: 2
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x01, // partitions: 1
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x01, b'u', // topic = "u"
        0x00, 0x00, 0x00, 0x02, // partitions: 2
        0x00, 0x00, 0x00, 0x02, // partition = 2
        0x00, 0x00, 0x00, 0x03, // partition = 3
    ];
    let value = OffsetFetchRequest::new(
        "grp",
        vec![OffsetFetchTopic::new("t", vec![0]), OffsetFetchTopic::new("u", vec![2, 3])],
    );
    assert_golden(&value, 1, bytes);
}

#[test]
fn offset_fetch_v0_response() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, 0x00, 0x01, // topics: 1
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x02, // partitions: 2
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, // offset = 42
        0x00, 0x00, // metadata = "" (v0 keeps none)
        0x00, 0x00, // error_code = 0
        0x00, 0x00, 0x00, 0x01, // partition = 1
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // offset = -1 (never committed)
        0x00, 0x00, // metadata = ""
        0x00, 0x03, // error_code = 3 (UnknownTopicOrPartition: v0's "no offset")
    ];
    let value = OffsetFetchResponse {
        topics: vec![OffsetFetchResponseTopic::new(
            "t",
            vec![
                OffsetFetchResponsePartition {
                    partition: 0,
                    offset: 42,
                    metadata: Some(String::new()),
                    error_code: 0,
                    ..Default::default()
                },
                OffsetFetchResponsePartition {
                    partition: 1,
                    offset: -1,
                    metadata: Some(String::new()),
                    error_code: 3,
                    ..Default::default()
                },
            ],
        )],
        ..Default::default()
    };
    assert_golden(&value, 0, bytes);
}

#[test]
fn offset_fetch_v1_response() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, 0x00, 0x02, // topics: 2
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x02, // partitions: 2
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, // offset = 42
        0x00, 0x04, b'm', b'e', b't', b'a', // metadata = "meta"
        0x00, 0x00, // error_code = 0
        0x00, 0x00, 0x00, 0x01, // partition = 1
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // offset = -1 (never committed)
        0x00, 0x00, // metadata = ""
        0x00, 0x00, // error_code = 0 (v1's "no offset")
        0x00, 0x01, b'u', // topic = "u"
        0x00, 0x00, 0x00, 0x01, // partitions: 1
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // offset = -1
        0x00, 0x00, // metadata = ""
        0x00, 0x10, // error_code = 16 (NotCoordinatorForConsumer)
    ];
    let value = OffsetFetchResponse {
        topics: vec![
            OffsetFetchResponseTopic::new(
                "t",
                vec![
                    OffsetFetchResponsePartition {
                        partition: 0,
                        offset: 42,
                        metadata: Some("meta".into()),
                        error_code: 0,
                        ..Default::default()
                    },
                    OffsetFetchResponsePartition {
                        partition: 1,
                        offset: -1,
                        metadata: Some(String::new()),
                        error_code: 0,
                        ..Default::default()
                    },
                ],
            ),
            OffsetFetchResponseTopic::new(
                "u",
                vec![OffsetFetchResponsePartition {
                    partition: 0,
                    offset: -1,
                    metadata: Some(String::new()),
                    error_code: 16,
                    ..Default::default()
                }],
            ),
        ],
        ..Default::default()
    };
    assert_golden(&value, 1, bytes);
}

// ---------------------------------------------------------------------------------------------
// ConsumerMetadata (api key 10)
// ---------------------------------------------------------------------------------------------

#[test]
fn consumer_metadata_v0_request() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x05, b'g', b'r', b'o', b'u', b'p', // group_id = "group"
    ];
    assert_golden(&ConsumerMetadataRequest::group("group"), 0, bytes);
}

#[test]
fn consumer_metadata_v0_response() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, // error_code = 0
        0x00, 0x00, 0x00, 0x01, // coordinator_id = 1
        0x00, 0x02, b'h', b'1', // coordinator_host = "h1"
        0x00, 0x00, 0x23, 0x84, // coordinator_port = 9092
    ];
    let value =
        ConsumerMetadataResponse { error_code: 0, node_id: 1, host: "h1".into(), port: 9092, ..Default::default() };
    assert_golden(&value, 0, bytes);
}

#[test]
fn consumer_metadata_v0_response_not_available() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x0f, // error_code = 15 (ConsumerCoordinatorNotAvailable)
        0xff, 0xff, 0xff, 0xff, // coordinator_id = -1
        0x00, 0x00, // coordinator_host = "" (empty string)
        0xff, 0xff, 0xff, 0xff, // coordinator_port = -1
    ];
    let value =
        ConsumerMetadataResponse { error_code: 15, node_id: -1, host: String::new(), port: -1, ..Default::default() };
    assert_golden(&value, 0, bytes);
    assert_eq!(value.error(), Some(gregor_protocol::ErrorCode::ConsumerCoordinatorNotAvailable));
}

// ---------------------------------------------------------------------------------------------
// whole frames
// ---------------------------------------------------------------------------------------------

#[test]
fn fetch_v0_request_frame() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, 0x00, 0x34, // size = 52 (everything after this field)
        0x00, 0x01, // api_key = 1 (Fetch)
        0x00, 0x00, // api_version = 0
        0x00, 0x00, 0x00, 0x2a, // correlation_id = 42
        0x00, 0x03, b'c', b'l', b'i', // client_id = "cli"
        0xff, 0xff, 0xff, 0xff, // replica_id = -1
        0x00, 0x00, 0x01, 0xf4, // max_wait_time = 500 ms
        0x00, 0x00, 0x00, 0x00, // min_bytes = 0
        0x00, 0x00, 0x00, 0x01, // topics: 1
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x01, // partitions: 1
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, // fetch_offset = -2
        0x00, 0x00, 0x04, 0x00, // max_bytes = 1024
    ];
    assert_eq!(bytes.len(), 4 + 52);
    let header = RequestHeader {
        api_key: ApiKey::Fetch,
        api_version: 0,
        correlation_id: 42,
        client_id: Some("cli".into()),
        unknown_tagged_fields: Default::default(),
    };
    let body = FetchRequest {
        replica_id: -1,
        max_wait_time: 500,
        min_bytes: 0,
        topics: vec![FetchTopic::new(
            "t",
            vec![FetchPartition { partition: 0, fetch_offset: -2, max_bytes: 1024, ..Default::default() }],
        )],
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    encode_request(&header, &body, &mut buf).unwrap();
    assert_eq!(hex(&buf), hex(bytes));

    // The broker's side.
    let mut stream = BytesMut::from(bytes);
    let mut frame = split_frame(&mut stream, 1 << 20).unwrap().expect("a whole frame");
    assert!(stream.is_empty());
    assert_eq!(RequestHeader::decode(&mut frame).unwrap(), header);
    assert_eq!(AnyRequest::decode(&header, frame).unwrap(), AnyRequest::Fetch(body));

    // A frame one byte short is not complete yet.
    let mut stream = BytesMut::from(&bytes[..bytes.len() - 1]);
    assert!(split_frame(&mut stream, 1 << 20).unwrap().is_none());
    // A body one byte short of the size cannot be decoded.
    let mut cut = Bytes::copy_from_slice(&bytes[4..bytes.len() - 1]);
    let h = RequestHeader::decode(&mut cut).unwrap();
    assert!(AnyRequest::decode(&h, cut).is_err());
}

#[test]
fn metadata_v0_request_frame_with_null_client_id() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, 0x00, 0x11, // size = 17
        0x00, 0x03, // api_key = 3 (Metadata)
        0x00, 0x00, // api_version = 0
        0x7f, 0xff, 0xff, 0xff, // correlation_id = 2147483647
        0xff, 0xff, // client_id = null
        0x00, 0x00, 0x00, 0x01, // topics: 1
        0x00, 0x01, b't', // topic = "t"
    ];
    let header = RequestHeader {
        api_key: ApiKey::Metadata,
        api_version: 0,
        correlation_id: i32::MAX,
        client_id: None,
        unknown_tagged_fields: Default::default(),
    };
    let body = MetadataRequest::for_topics(["t"]);
    let mut buf = BytesMut::new();
    encode_request(&header, &body, &mut buf).unwrap();
    assert_eq!(hex(&buf), hex(bytes));
    let mut stream = BytesMut::from(bytes);
    let mut frame = split_frame(&mut stream, 1 << 20).unwrap().unwrap();
    assert_eq!(RequestHeader::decode(&mut frame).unwrap(), header);
    assert_eq!(AnyRequest::decode(&header, frame).unwrap(), AnyRequest::Metadata(body));
}

#[test]
fn offset_commit_v1_request_frame() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, 0x00, 0x35, // size = 53
        0x00, 0x08, // api_key = 8 (OffsetCommit)
        0x00, 0x01, // api_version = 1
        0x00, 0x00, 0x00, 0x03, // correlation_id = 3
        0x00, 0x00, // client_id = "" (empty string)
        0x00, 0x01, b'g', // group_id = "g"
        0x00, 0x00, 0x00, 0x02, // group_generation_id = 2
        0x00, 0x01, b'c', // consumer_id = "c"
        0x00, 0x00, 0x00, 0x01, // topics: 1
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x01, // partitions: 1
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // offset = 1
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // timestamp = -1
        0x00, 0x00, // metadata = ""
    ];
    assert_eq!(bytes.len(), 4 + 53);
    let header = RequestHeader {
        api_key: ApiKey::OffsetCommit,
        api_version: 1,
        correlation_id: 3,
        client_id: Some(String::new()),
        unknown_tagged_fields: Default::default(),
    };
    let body = OffsetCommitRequest {
        group_id: "g".into(),
        group_generation_id: 2,
        consumer_id: "c".into(),
        topics: vec![OffsetCommitTopic::new(
            "t",
            vec![OffsetCommitPartition { timestamp: -1, ..OffsetCommitPartition::new(0, 1, "") }],
        )],
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    encode_request(&header, &body, &mut buf).unwrap();
    assert_eq!(hex(&buf), hex(bytes));
    let mut stream = BytesMut::from(bytes);
    let mut frame = split_frame(&mut stream, 1 << 20).unwrap().unwrap();
    assert_eq!(RequestHeader::decode(&mut frame).unwrap(), header);
    assert_eq!(AnyRequest::decode(&header, frame).unwrap(), AnyRequest::OffsetCommit(body));
}

#[test]
fn produce_v0_response_frame() {
    #[rustfmt::skip]
    let bytes: &[u8] = &[
        0x00, 0x00, 0x00, 0x1d, // size = 29
        0x00, 0x00, 0x00, 0x2a, // correlation_id = 42
        0x00, 0x00, 0x00, 0x01, // topics: 1
        0x00, 0x01, b't', // topic = "t"
        0x00, 0x00, 0x00, 0x01, // partitions: 1
        0x00, 0x00, 0x00, 0x00, // partition = 0
        0x00, 0x00, // error_code = 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, // offset = 5
    ];
    assert_eq!(bytes.len(), 4 + 29);
    let body = ProduceResponse {
        topics: vec![ProduceResponseTopic::new(
            "t",
            vec![ProduceResponsePartition { partition: 0, error_code: 0, offset: 5, ..Default::default() }],
        )],
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    encode_response(42, 0, &body, &mut buf).unwrap();
    assert_eq!(hex(&buf), hex(bytes));

    let mut stream = BytesMut::from(bytes);
    let frame = split_frame(&mut stream, 1 << 20).unwrap().unwrap();
    let (header, got) = decode_response::<ProduceRequest>(0, frame).unwrap();
    assert_eq!(header.correlation_id, 42);
    assert_eq!(got, body);

    // A frame with a byte too many is rejected, not silently accepted.
    let mut long = bytes[4..].to_vec();
    long.push(0);
    assert!(matches!(
        decode_response::<ProduceRequest>(0, long.into()),
        Err(Error::TrailingBytes { remaining: 1, .. })
    ));
    // And one a byte short fails too.
    assert!(decode_response::<ProduceRequest>(0, Bytes::copy_from_slice(&bytes[4..bytes.len() - 1])).is_err());
}

#[test]
fn fetch_v0_response_frame() {
    #[rustfmt::skip]
    let bytes: Vec<u8> = [
        &[
            0x00, 0x00, 0x00, 0x43, // size = 67
            0x00, 0x00, 0x00, 0x07, // correlation_id = 7
            0x00, 0x00, 0x00, 0x01, // topics: 1
            0x00, 0x01, b't', // topic = "t"
            0x00, 0x00, 0x00, 0x01, // partitions: 1
            0x00, 0x00, 0x00, 0x00, // partition = 0
            0x00, 0x00, // error_code = 0
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, // high_watermark = 10
            0x00, 0x00, 0x00, 0x22, // message_set_size = 34
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, // offset = 9
            0x00, 0x00, 0x00, 0x16, // message size = 22
        ][..],
        MSG_KEY_HELLO, // crc 08 31 3f 85 | magic 0 | attributes 0 | key "key" | value "hello"
    ]
    .concat();
    assert_eq!(bytes.len(), 4 + 67);
    let body = FetchResponse {
        topics: vec![FetchResponseTopic::new(
            "t",
            vec![FetchResponsePartition {
                partition: 0,
                error_code: 0,
                high_watermark: 10,
                message_set: MessageSet::encode(&[MessageAndOffset::new(9, Message::new(b("key"), b("hello")))])
                    .unwrap(),
                ..Default::default()
            }],
        )],
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    encode_response(7, 0, &body, &mut buf).unwrap();
    assert_eq!(hex(&buf), hex(&bytes));
    let (header, got) = decode_response::<FetchRequest>(0, Bytes::copy_from_slice(&bytes[4..])).unwrap();
    assert_eq!(header.correlation_id, 7);
    assert_eq!(got, body);
    let msgs = got.topics[0].partitions[0].messages("t", 9).unwrap();
    assert_eq!(msgs.messages, vec![MessageAndOffset::new(9, Message::new(b("key"), b("hello")))]);
    for len in 4..bytes.len() {
        assert!(decode_response::<FetchRequest>(0, Bytes::copy_from_slice(&bytes[4..len])).is_err(), "cut at {len}");
    }
}

// ---------------------------------------------------------------------------------------------
// version errors
// ---------------------------------------------------------------------------------------------

#[test]
fn offset_commit_v0_rejects_v1_only_fields() {
    let base = OffsetCommitRequest {
        group_id: "g".into(),
        group_generation_id: 5,
        consumer_id: String::new(),
        topics: vec![OffsetCommitTopic::new(
            "t",
            vec![OffsetCommitPartition { timestamp: -1, ..OffsetCommitPartition::new(0, 1, "") }],
        )],
        ..Default::default()
    };
    let err = base.to_bytes(0).unwrap_err();
    assert!(
        matches!(&err, Error::FieldNotInVersion { api: ApiKey::OffsetCommit, version: 0, field: "group_generation_id", value } if value == "5"),
        "{err:?}"
    );
    // v1 carries it.
    assert!(base.to_bytes(1).is_ok());

    let consumer = OffsetCommitRequest { group_generation_id: -1, consumer_id: "c".into(), ..base.clone() };
    assert!(matches!(consumer.to_bytes(0), Err(Error::FieldNotInVersion { field: "consumer_id", .. })));

    let mut timestamp = OffsetCommitRequest { group_generation_id: -1, ..base.clone() };
    timestamp.topics[0].partitions[0].timestamp = 1_400_000_000_000;
    assert!(matches!(timestamp.to_bytes(0), Err(Error::FieldNotInVersion { field: "timestamp", .. })));
}

#[test]
fn fetch_v18_is_unsupported_both_ways() {
    let req = FetchRequest { replica_id: -1, max_wait_time: 0, min_bytes: 0, topics: vec![], ..Default::default() };
    let err = req.to_bytes(18).unwrap_err();
    assert!(matches!(err, Error::UnsupportedVersion { api: ApiKey::Fetch, version: 18, min: 0, max: 17 }), "{err:?}");
    let resp = FetchResponse { topics: vec![], ..Default::default() };
    assert!(matches!(resp.to_bytes(18), Err(Error::UnsupportedVersion { api: ApiKey::Fetch, version: 18, .. })));

    // Bytes that are a fine v0 body are still refused as v18.
    let mut body = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert!(FetchRequest::decode(0, &mut body.clone()).is_ok());
    assert!(matches!(
        FetchRequest::decode(18, &mut body),
        Err(Error::UnsupportedVersion { api: ApiKey::Fetch, version: 18, .. })
    ));
    let mut body = Bytes::from_static(&[0, 0, 0, 0]);
    assert!(matches!(
        FetchResponse::decode(18, &mut body),
        Err(Error::UnsupportedVersion { api: ApiKey::Fetch, version: 18, .. })
    ));

    // And a header asking for it cannot be framed.
    let header = RequestHeader {
        api_key: ApiKey::Fetch,
        api_version: 18,
        correlation_id: 0,
        client_id: None,
        unknown_tagged_fields: Default::default(),
    };
    assert!(matches!(encode_request(&header, &req, &mut BytesMut::new()), Err(Error::UnsupportedVersion { .. })));
    assert!(matches!(
        AnyRequest::decode(&header, Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])),
        Err(Error::UnsupportedVersion { .. })
    ));
}

#[test]
fn other_unsupported_versions() {
    // v10 of OffsetCommit/OffsetFetch (past v9, the newest here), v5 of FindCoordinator and v1
    // of the v0-only APIs are refused, as is -1.
    assert!(matches!(OffsetCommitResponse::default().to_bytes(10), Err(Error::UnsupportedVersion { .. })));
    assert!(matches!(OffsetFetchRequest::new("g", vec![]).to_bytes(10), Err(Error::UnsupportedVersion { .. })));
    assert!(matches!(ConsumerMetadataRequest::group("g").to_bytes(5), Err(Error::UnsupportedVersion { .. })));
    assert!(matches!(MetadataRequest::all_topics().to_bytes(14), Err(Error::UnsupportedVersion { .. })));
    assert!(matches!(ConsumerMetadataRequest::group("g").to_bytes(-1), Err(Error::UnsupportedVersion { .. })));
    // A header whose key does not match the body's type is refused.
    let header = RequestHeader {
        api_key: ApiKey::Produce,
        api_version: 0,
        correlation_id: 0,
        client_id: None,
        unknown_tagged_fields: Default::default(),
    };
    assert!(matches!(
        encode_request(&header, &MetadataRequest::default(), &mut BytesMut::new()),
        Err(Error::UnsupportedApiKey(0))
    ));
}

//! What one partition of a Fetch response means for its reader: the one classification shared
//! by the high-level consumer's fetcher and the simple consumer (pure: no IO, no clock).
//!
//! | the partition's answer                                  | [`FetchClass`]       |
//! |---------------------------------------------------------|----------------------|
//! | no error, the set decodes (possibly to nothing)         | `Data`               |
//! | no error, a message larger than the fetch size          | `MessageTooLarge`    |
//! | no error, a set that cannot be decoded (CRC, codec, ...) | `Corrupt`           |
//! | `OffsetOutOfRange`                                      | `OffsetOutOfRange`   |
//! | a code after which a leader lookup may help             | `Retry`              |
//! | any other code                                          | `Fail`               |
//!
//! "May help": [`ErrorCode::is_retriable`] or [`ErrorCode::needs_metadata_refresh`]
//! (NotLeaderForPartition, UnknownTopicOrPartition, LeaderNotAvailable, ...). What each reader
//! then does is its own business: the simple consumer grows its fetch size for a message too
//! large when allowed and retries a bounded number of times; the high-level consumer (as
//! Java's) hands every code but OffsetOutOfRange to its leader finder, and keeps a partition
//! stuck on a message it cannot read.
//!
//! Decoding drops the messages below the fetch offset (a compressed wrapper starts earlier)
//! and a partial trailing message (the broker cuts the set at the fetch size): both normal.

use gregor_protocol::message::DecodeOptions;
use gregor_protocol::messages::FetchResponsePartition;
use gregor_protocol::{ErrorCode, MessageAndOffset};

/// What one partition of a Fetch response means (see the module doc).
///
/// Exhaustive on purpose: a new class must be handled by every reader.
#[derive(Debug)]
pub enum FetchClass {
    /// The messages at the fetch offset and after, in offset order (possibly none).
    Data {
        /// The messages.
        messages: Vec<MessageAndOffset>,
        /// The offset to fetch next: one past the last message, `None` when there was none.
        next_offset: Option<i64>,
        /// The partition's high watermark.
        high_watermark: i64,
    },
    /// The first message does not fit the fetch size: it can be read only with a fetch of at
    /// least `needed` bytes.
    MessageTooLarge {
        /// The message's offset (the fetch offset when its header was cut).
        offset: i64,
        /// The fetch size the message needs.
        needed: usize,
        /// The codec's error ([`gregor_protocol::Error::MessageLargerThanFetch`]).
        source: gregor_protocol::Error,
    },
    /// The set cannot be decoded (bad CRC, unknown codec, a message too large whose size was
    /// cut off, ...).
    Corrupt(gregor_protocol::Error),
    /// The broker answered `OffsetOutOfRange`: the fetch offset is not in the log.
    OffsetOutOfRange,
    /// A code after which the leader should be looked up again and the fetch retried.
    Retry(ErrorCode),
    /// A code that retrying will not cure.
    Fail(ErrorCode),
}

/// Classifies `partition` of a Fetch response for `topic` sent at `fetch_offset`.
pub fn classify_fetch(topic: &str, partition: &FetchResponsePartition, fetch_offset: i64) -> FetchClass {
    match partition.error() {
        None => {}
        Some(ErrorCode::OffsetOutOfRange) => return FetchClass::OffsetOutOfRange,
        Some(code) if code.is_retriable() || code.needs_metadata_refresh() => return FetchClass::Retry(code),
        Some(code) => return FetchClass::Fail(code),
    }
    let options = DecodeOptions::fetched(topic, partition.partition, fetch_offset);
    match partition.message_set.decode(&options) {
        Ok(decoded) => FetchClass::Data {
            next_offset: decoded.next_offset(),
            messages: decoded.messages,
            high_watermark: partition.high_watermark,
        },
        Err(gregor_protocol::Error::MessageLargerThanFetch { location, entry_size: Some(needed), fetched_bytes }) => {
            FetchClass::MessageTooLarge {
                offset: location.offset,
                needed,
                source: gregor_protocol::Error::MessageLargerThanFetch {
                    location,
                    entry_size: Some(needed),
                    fetched_bytes,
                },
            }
        }
        Err(source) => FetchClass::Corrupt(source),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use gregor_protocol::{Compression, Message, MessageSet};

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

    fn part(error_code: i16, high_watermark: i64, message_set: MessageSet) -> FetchResponsePartition {
        FetchResponsePartition::new(2, error_code, high_watermark, message_set)
    }

    fn offsets(class: &FetchClass) -> (Vec<i64>, Option<i64>, i64) {
        match class {
            FetchClass::Data { messages, next_offset, high_watermark } => {
                (messages.iter().map(|m| m.offset).collect(), *next_offset, *high_watermark)
            }
            other => panic!("expected data, got {other:?}"),
        }
    }

    #[test]
    fn data_starts_at_the_fetch_offset_and_drops_a_cut_tail() {
        let gz = set(5, &["a", "b", "c", "d"], Compression::Gzip);
        assert_eq!(offsets(&classify_fetch("t", &part(0, 12, gz), 7)), (vec![7, 8], Some(9), 12));
        assert_eq!(offsets(&classify_fetch("t", &part(0, 3, MessageSet::new()), 3)), (vec![], None, 3));
        let two = set(0, &["one", "two"], Compression::None);
        let cut = MessageSet::from_bytes(two.as_bytes().slice(..two.len() - 3));
        assert_eq!(offsets(&classify_fetch("t", &part(0, 2, cut), 0)), (vec![0], Some(1), 2));
    }

    #[test]
    fn a_message_larger_than_the_fetch_says_what_it_needs() {
        let full = set(4, &[&"x".repeat(300)], Compression::None);
        let cut = MessageSet::from_bytes(full.as_bytes().slice(..100));
        match classify_fetch("t", &part(0, 5, cut), 4) {
            FetchClass::MessageTooLarge { offset: 4, needed, source } => {
                assert_eq!(needed, full.len());
                assert!(matches!(source, gregor_protocol::Error::MessageLargerThanFetch { .. }));
            }
            other => panic!("{other:?}"),
        }
        // the size field itself cut off: the need is unknown, the set undecodable
        let header = MessageSet::from_bytes(full.as_bytes().slice(..10));
        assert!(matches!(
            classify_fetch("t", &part(0, 5, header), 4),
            FetchClass::Corrupt(gregor_protocol::Error::MessageLargerThanFetch { entry_size: None, .. })
        ));
    }

    #[test]
    fn a_bad_crc_is_corrupt() {
        let mut bad = set(0, &["a"], Compression::None).as_bytes().to_vec();
        bad[12] ^= 0xff;
        assert!(matches!(
            classify_fetch("t", &part(0, 1, MessageSet::from_bytes(bad.into())), 0),
            FetchClass::Corrupt(_)
        ));
    }

    #[test]
    fn codes_are_out_of_range_retried_or_failed() {
        let table: &[(i16, &str)] = &[
            (1, "out of range"),
            (3, "retry"),  // UnknownTopicOrPartition
            (5, "retry"),  // LeaderNotAvailable
            (6, "retry"),  // NotLeaderForPartition
            (7, "retry"),  // RequestTimedOut
            (8, "retry"),  // BrokerNotAvailable
            (9, "retry"),  // ReplicaNotAvailable
            (2, "fail"),   // InvalidMessage
            (4, "fail"),   // InvalidFetchSize
            (10, "fail"),  // MessageSizeTooLarge
            (-1, "fail"),  // Unknown
            (999, "fail"), // a code this client does not know
        ];
        for &(code, want) in table {
            // the code wins over whatever set came with it
            let got = match classify_fetch("t", &part(code, -1, set(0, &["a"], Compression::None)), 0) {
                FetchClass::OffsetOutOfRange => "out of range",
                FetchClass::Retry(c) if c == ErrorCode::from_i16(code).unwrap() => "retry",
                FetchClass::Fail(c) if c == ErrorCode::from_i16(code).unwrap() => "fail",
                other => panic!("code {code}: {other:?}"),
            };
            assert_eq!(got, want, "code {code}");
        }
    }
}

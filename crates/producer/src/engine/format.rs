//! The record format a batch goes out in, by the Produce version its leader speaks: message
//! sets of Message v0 up to Produce v2 (Kafka 0.8-0.10), RecordBatch v2 from v3 (Kafka 0.11
//! on; Kafka 4 has nothing older).
//!
//! Once a partition's leader is known to take RecordBatch v2, its records are written as such
//! as they are queued (`crate::log::RecordAppender::push`: each in its batch, cut as records
//! come), and the round only writes the header and CRC-32C over them, compressing them once
//! (`RecordRun::finish`). Records queued as Message v0 (before the leader's versions were
//! known) are laid out as one RecordBatch v2 when their round is built ([`to_record_batch`]),
//! stamped with the round's wall-clock time (CreateTime) unless they carry their own. A batch
//! built for one format and sent to a leader of the other is converted.

use gregor_protocol::message::DecodeOptions;
use gregor_protocol::record::{Batches, HeaderRef, RecordBatchBuilder, MAGIC_V2};

use crate::record::RecordExtra;
use gregor_protocol::{Compression, EncodedMessage, MessageAndOffset, MessageSet};

/// The first Produce version that carries RecordBatch v2.
pub(crate) const FIRST_RECORD_BATCH_VERSION: i16 = 3;

/// The magic of a set's first entry (byte 16), if it has one.
pub(crate) fn magic_of(set: &MessageSet) -> Option<i8> {
    set.parts().first().and_then(|part| part.get(16)).map(|&b| b as i8)
}

/// A RecordBatch v2 of the records of `set` (message v0/v1 entries, wrappers expanded),
/// compressed with `codec`, carrying `producer` (id, epoch, first sequence) when idempotent.
/// `extras` gives records by index in the set a timestamp and headers of their own (by
/// index, in order); the others are stamped `timestamp`. A set that already is a v2 batch
/// comes back as it is.
///
/// # Errors
///
/// The codec's: a set that cannot be read, a record or batch too large.
pub(crate) fn to_record_batch(
    set: &MessageSet,
    codec: Compression,
    timestamp: i64,
    producer: Option<(i64, i16, i32)>,
    extras: &[(usize, RecordExtra)],
) -> Result<MessageSet, gregor_protocol::Error> {
    if magic_of(set) == Some(MAGIC_V2) {
        return Ok(set.clone());
    }
    let new_builder = || {
        let builder = RecordBatchBuilder::with_capacity(codec, set.len() + 64);
        match producer {
            Some((id, epoch, sequence)) => builder.producer(id, epoch, sequence),
            None => builder,
        }
    };
    let mut builder = new_builder();
    match from_plain(&mut builder, set, timestamp, extras) {
        Some(built) => built?,
        None => {
            builder = new_builder();
            from_any(&mut builder, set, timestamp, extras)?;
        }
    }
    Ok(MessageSet::from_bytes(builder.finish()?))
}

/// Appends the records of `set` (message v0/v1 entries, wrappers expanded) to `builder`, as
/// [`to_record_batch`] describes.
fn from_any(
    builder: &mut RecordBatchBuilder,
    set: &MessageSet,
    timestamp: i64,
    extras: &[(usize, RecordExtra)],
) -> Result<(), gregor_protocol::Error> {
    let mut stamps = Stamps::new(timestamp, extras);
    // a set in parts (a batch across its log's blocks) holds whole entries in each
    for batch in crate::log::readable(set).into_iter().flat_map(|part| Batches::new(part, &DecodeOptions::default())) {
        for record in batch?.records() {
            let record = record?;
            stamps.append(builder, record.key.as_deref(), record.value.as_deref())?;
        }
    }
    Ok(())
}

/// Appends the records of `set` to `builder` when `set` is what the producer's log makes:
/// uncompressed Message v0 entries, each part of whole entries. Their keys and values are read
/// in place (no CRC checked again, no shared buffer's count touched per record: [`from_any`]'s
/// reader did both, a fifth of a modern leader's produce path). `None`, with `builder` to be
/// dropped, at any other entry.
fn from_plain(
    builder: &mut RecordBatchBuilder,
    set: &MessageSet,
    timestamp: i64,
    extras: &[(usize, RecordExtra)],
) -> Option<Result<(), gregor_protocol::Error>> {
    let mut stamps = Stamps::new(timestamp, extras);
    for entry in crate::log::entries(set) {
        let (part, at) = entry?;
        let message = EncodedMessage::view_of(&part[at]).filter(|m| m.attributes == 0)?;
        if let Err(e) = stamps.append(builder, message.key, message.value) {
            return Some(Err(e));
        }
    }
    Some(Ok(()))
}

/// The records' own timestamps and headers (`extras`, by index in the set), as the records
/// are appended in order; the others are stamped `timestamp`.
struct Stamps<'e> {
    timestamp: i64,
    index: usize,
    extras: std::iter::Peekable<std::slice::Iter<'e, (usize, RecordExtra)>>,
    headers: Vec<HeaderRef<'e>>,
}

impl<'e> Stamps<'e> {
    fn new(timestamp: i64, extras: &'e [(usize, RecordExtra)]) -> Stamps<'e> {
        Stamps { timestamp, index: 0, extras: extras.iter().peekable(), headers: Vec::new() }
    }

    /// Appends the next record to `builder`, with its timestamp and headers if it has its own.
    fn append(
        &mut self,
        builder: &mut RecordBatchBuilder,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Result<(), gregor_protocol::Error> {
        let index = self.index;
        self.index += 1;
        let appended = match self.extras.next_if(|(i, _)| *i == index) {
            Some((_, extra)) => {
                self.headers.clear();
                self.headers.extend(extra.headers.iter().map(|h| (h.key.as_str(), h.value.as_deref())));
                builder.append_with_headers(extra.timestamp.unwrap_or(self.timestamp), key, value, &self.headers)
            }
            None => builder.append(self.timestamp, key, value),
        };
        appended.map(|_| ())
    }
}

/// A message set of Message v0 (compressed with `codec`) of the records of a v2 batch: for a
/// retry whose partition moved to a leader without RecordBatch v2. Any other set comes back as
/// it is.
///
/// # Errors
///
/// The codec's.
pub(crate) fn to_message_set(set: &MessageSet, codec: Compression) -> Result<MessageSet, gregor_protocol::Error> {
    if magic_of(set) != Some(MAGIC_V2) {
        return Ok(set.clone());
    }
    let messages: Vec<MessageAndOffset> = crate::log::records_of(set)?
        .into_iter()
        .enumerate()
        .map(|(i, message)| MessageAndOffset::new(i as i64, message))
        .collect();
    if codec == Compression::None {
        MessageSet::encode(&messages)
    } else {
        MessageSet::encode(&[MessageSet::wrap(&messages, codec)?])
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use gregor_protocol::Message;

    use super::*;

    fn plain(values: &[&str]) -> MessageSet {
        let messages: Vec<MessageAndOffset> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let key = (i % 2 == 0).then(|| Bytes::from(format!("k{i}")));
                MessageAndOffset::new(i as i64, Message::new(key, Some(Bytes::from(v.to_string()))))
            })
            .collect();
        MessageSet::encode(&messages).unwrap()
    }

    fn read(set: &MessageSet) -> Vec<(Option<Bytes>, Option<Bytes>, i64)> {
        Batches::new(set.as_bytes().clone(), &DecodeOptions::default())
            .flat_map(|b| b.unwrap().records().map(|r| r.unwrap()).collect::<Vec<_>>())
            .map(|r| (r.key, r.value, r.timestamp))
            .collect()
    }

    #[test]
    fn records_keep_the_timestamps_and_headers_they_were_given() {
        use crate::record::Header;
        let set = plain(&["a", "b", "c"]);
        let extra = |timestamp, headers: &[(&str, Option<&'static [u8]>)]| RecordExtra {
            timestamp,
            headers: headers
                .iter()
                .map(|(k, v)| Header { key: (*k).to_owned(), value: v.map(Bytes::from_static) })
                .collect(),
        };
        let extras = [(0, extra(Some(11), &[("h", Some(b"x")), ("n", None)])), (2, extra(None, &[("h", Some(b"z"))]))];
        let batch = to_record_batch(&set, Compression::Lz4, 99, None, &extras).unwrap();
        let records: Vec<_> = Batches::new(batch.as_bytes().clone(), &DecodeOptions::default())
            .flat_map(|b| b.unwrap().records().map(|r| r.unwrap()).collect::<Vec<_>>())
            .map(|r| {
                let headers: Vec<(String, Option<Bytes>)> =
                    r.headers.iter().map(|h| (h.key_str().unwrap().to_owned(), h.value)).collect();
                (r.timestamp, headers)
            })
            .collect();
        assert_eq!(
            records,
            [
                (11, vec![("h".to_owned(), Some(Bytes::from_static(b"x"))), ("n".to_owned(), None)]),
                (99, vec![]),
                (99, vec![("h".to_owned(), Some(Bytes::from_static(b"z")))]),
            ]
        );
    }

    #[test]
    fn the_logs_plain_entries_read_in_place_build_what_the_reader_builds() {
        use crate::record::Header;
        // a set in two parts, as a batch across its log's blocks: null keys and values, an
        // empty value, extras in both parts
        let (a, b) = (plain(&["a", "", "ccc"]), plain(&["d", "e"]));
        let messages = vec![MessageAndOffset::new(0, Message::new(None, None))];
        let nulls = MessageSet::encode(&messages).unwrap();
        let set = MessageSet::from_parts(vec![a.as_bytes().clone(), nulls.as_bytes().clone(), b.as_bytes().clone()]);
        let extra = |timestamp| RecordExtra {
            timestamp,
            headers: vec![Header { key: "h".to_owned(), value: Some(Bytes::from_static(b"v")) }],
        };
        let extras = [(1, extra(Some(7))), (4, extra(None))];
        for (codec, producer) in [(Compression::None, None), (Compression::Snappy, Some((3, 2, 10)))] {
            let mut fast = RecordBatchBuilder::with_capacity(codec, 64);
            let mut slow = RecordBatchBuilder::with_capacity(codec, 64);
            if let Some((id, epoch, sequence)) = producer {
                fast = fast.producer(id, epoch, sequence);
                slow = slow.producer(id, epoch, sequence);
            }
            from_plain(&mut fast, &set, 1234, &extras).expect("plain entries").unwrap();
            from_any(&mut slow, &set, 1234, &extras).unwrap();
            let (fast, slow) = (fast.finish().unwrap(), slow.finish().unwrap());
            assert_eq!(fast, slow, "{codec}");
            let got = read(&MessageSet::from_bytes(fast));
            assert_eq!(got.len(), 6);
            assert_eq!(got[3], (None, None, 1234));
            assert_eq!(got[1], (None, Some(Bytes::new()), 7));
        }
        // anything else is left to the reader: a compressed wrapper, a torn entry
        let wrapped = MessageSet::encode(&[MessageSet::wrap(&messages, Compression::Gzip).unwrap()]).unwrap();
        let mut builder = RecordBatchBuilder::with_capacity(Compression::None, 64);
        assert!(from_plain(&mut builder, &wrapped, 0, &[]).is_none());
        let torn = MessageSet::from_bytes(a.as_bytes().slice(..a.len() - 1));
        assert!(from_plain(&mut builder, &torn, 0, &[]).is_none());
        let from_torn = to_record_batch(&torn, Compression::None, 0, None, &[]).unwrap();
        assert_eq!(read(&from_torn).len(), 2, "the reader's reading: the whole entries");
    }

    #[test]
    fn message_sets_become_one_record_batch_and_back_in_every_codec() {
        let set = plain(&["a", "b", "c"]);
        for codec in [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
            let batch = to_record_batch(&set, codec, 1_700_000_000_123, None, &[]).unwrap();
            assert_eq!(magic_of(&batch), Some(MAGIC_V2), "{codec}");
            let got = read(&batch);
            assert_eq!(got.len(), 3, "{codec}");
            assert!(got.iter().all(|r| r.2 == 1_700_000_000_123), "{codec}");
            assert_eq!(got[0].0.as_deref(), Some(&b"k0"[..]));
            assert_eq!(got[1].0, None);
            assert_eq!(got[2].1.as_deref(), Some(&b"c"[..]));
            // a v2 batch stays as it is; back to v0 for an older leader, same records
            assert_eq!(to_record_batch(&batch, codec, 0, None, &[]).unwrap(), batch);
            if codec != Compression::Zstd {
                let back = to_message_set(&batch, codec).unwrap();
                assert_eq!(magic_of(&back), Some(0));
                let plain_back: Vec<_> = read(&back).into_iter().map(|(k, v, _)| (k, v)).collect();
                let plain_then: Vec<_> = read(&set).into_iter().map(|(k, v, _)| (k, v)).collect();
                assert_eq!(plain_back, plain_then, "{codec}");
            }
        }
        // a compressed v0 set (wrappers) converts the same
        let wrapped = MessageSet::encode(&[MessageSet::wrap(
            &[MessageAndOffset::new(0, Message::new(None, Some(Bytes::from_static(b"w"))))],
            Compression::Gzip,
        )
        .unwrap()])
        .unwrap();
        let batch = to_record_batch(&wrapped, Compression::Snappy, 5, Some((7, 1, 40)), &[]).unwrap();
        assert_eq!(read(&batch), [(None, Some(Bytes::from_static(b"w")), 5)]);
        // an idempotent batch carries the producer id, epoch and first sequence
        let header =
            *Batches::new(batch.as_bytes().clone(), &DecodeOptions::default()).next().unwrap().unwrap().header();
        assert_eq!((header.producer_id, header.producer_epoch, header.base_sequence), (7, 1, 40));
        assert_eq!(to_message_set(&set, Compression::Gzip).unwrap(), set, "a v0 set stays");
    }
}

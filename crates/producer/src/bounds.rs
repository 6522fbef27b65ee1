//! The producer's queue bounds: `queue.buffering.max.messages` places, and optionally
//! `queue.buffering.max.bytes` (Java's `buffer.memory`) bytes. A record takes its place and its
//! bytes at `send` and gives both back with its result, so an application caps the memory its
//! queued records hold directly, whatever their size.
//!
//! A record's bytes are what it weighs on the wire as Kafka 0.8 frames it — its Message v0 (14
//! bytes plus key and value) in a MessageSet entry (12 bytes of offset and size) — plus its
//! headers' keys and values: [`held_bytes`], counted the same way when taken and when given
//! back.

use tokio::sync::Semaphore;

use crate::accumulator::Batch;
use crate::blocks::Queued;
use crate::delivery::Pending;
use crate::record::Header;

/// A MessageSet entry's offset and size, and a Message v0's CRC, magic, attributes and two
/// length fields.
const OVERHEAD: usize = 12 + 14;

/// The bytes a record holds in the queue: its message on the wire (`key` and `value` bytes; a
/// null key or value counts 0) and its headers.
pub(crate) fn held_bytes(key: usize, value: usize, headers: &[Header]) -> usize {
    let headers: usize = headers.iter().map(|h| h.key.len() + h.value.as_ref().map_or(0, |v| v.len())).sum();
    OVERHEAD + key + value + headers
}

/// What a queued record weighs (its encoded message already holds the key and value).
fn held_by(pending: Queued<'_, Pending>) -> usize {
    held_by_message(pending, pending.message().len())
}

/// What a record whose message is `len` bytes weighs.
fn held_by_message(pending: Queued<'_, Pending>, len: usize) -> usize {
    // the encoded message is a Message v0: 14 bytes around the key and value
    let headers = pending.extra().map_or(&[][..], |e| &e.headers[..]);
    held_bytes(0, len.saturating_sub(14), headers)
}

/// What the records of a batch that have a delivery slot weigh (their messages in the batch's
/// bytes, or their own when it has none).
pub(crate) fn held_by_batch(batch: &Batch<Pending>) -> usize {
    if let (None, Some(run)) = (&batch.plain, &batch.run) {
        // RecordBatch v2 records: their keys and values read where they are
        return batch
            .records
            .iter()
            .zip(run.records())
            .filter(|(p, _)| p.has_slot())
            .map(|(p, r)| {
                let Ok(r) = r else { return held_bytes(0, 0, p.extra().map_or(&[][..], |e| &e.headers[..])) };
                let (key, value) = (r.key.map_or(0, |k| k.len()), r.value.map_or(0, |v| v.len()));
                match p.extra() {
                    // the record kept its headers (the log's are not as given)
                    Some(extra) => held_bytes(key, value, &extra.headers),
                    // its headers are the log's
                    None => {
                        let headers: usize =
                            r.headers.iter().map(|h| h.key.len() + h.value.as_ref().map_or(0, |v| v.len())).sum();
                        OVERHEAD + key + value + headers
                    }
                }
            })
            .sum();
    }
    match &batch.plain {
        Some(plain) => batch
            .records
            .iter()
            .zip(crate::log::messages(plain))
            .filter(|(p, _)| p.has_slot())
            .map(|(p, m)| held_by_message(p, m.len()))
            .sum(),
        None => batch.records.iter().filter(|p| p.has_slot()).map(held_by).sum(),
    }
}

/// The places and (if bounded) the bytes of the queue.
#[derive(Debug)]
pub(crate) struct QueueBounds {
    pub(crate) places: Semaphore,
    /// `queue.buffering.max.bytes` and its semaphore, when set.
    pub(crate) bytes: Option<(Semaphore, usize)>,
}

impl QueueBounds {
    pub(crate) fn new(places: usize, bytes: Option<usize>) -> QueueBounds {
        let bytes = bytes.map(|n| {
            let n = n.min(Semaphore::MAX_PERMITS);
            (Semaphore::new(n), n)
        });
        QueueBounds { places: Semaphore::new(places), bytes }
    }

    /// Gives back the places and bytes of the records that have their results (those with a
    /// delivery slot: the observer's own records took neither).
    pub(crate) fn release<'a>(&self, records: impl Iterator<Item = &'a Pending>) {
        let (mut places, mut bytes) = (0, 0);
        for p in records.filter(|p| p.has_slot()) {
            places += 1;
            if self.bytes.is_some() {
                bytes += held_by(Queued::Kept(p));
            }
        }
        self.places.add_permits(places);
        if let Some((sem, _)) = &self.bytes {
            sem.add_permits(bytes);
        }
    }

    /// Gives back `places` places and `bytes` bytes (a batch's records with a delivery slot,
    /// weighed when it was built).
    pub(crate) fn release_counted(&self, places: usize, bytes: usize) {
        self.places.add_permits(places);
        if let Some((sem, _)) = &self.bytes {
            sem.add_permits(bytes);
        }
    }

    /// Bytes held right now (0 without a byte bound).
    pub(crate) fn bytes_held(&self) -> usize {
        self.bytes.as_ref().map_or(0, |(sem, cap)| cap.saturating_sub(sem.available_permits()))
    }

    /// No more places or bytes: waiting senders get `Closed`.
    pub(crate) fn close(&self) {
        self.places.close();
        if let Some((sem, _)) = &self.bytes {
            sem.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use gregor_protocol::{EncodedMessage, Message};

    use super::*;
    use crate::record::RecordExtra;

    #[test]
    fn a_record_weighs_its_wire_size_and_headers_when_taken_and_when_given_back() {
        let key = Bytes::from_static(b"k1");
        let value = Bytes::from(vec![b'v'; 100]);
        // 100-byte value, 2-byte key: 128 bytes on the wire as Message v0 in a MessageSet
        assert_eq!(held_bytes(2, 100, &[]), 128);
        let message = EncodedMessage::encode(&Message::new(Some(key), Some(value))).unwrap();
        assert_eq!(message.len() + 12, 128, "the wire size");
        let extra = RecordExtra {
            timestamp: None,
            headers: vec![Header { key: "trace".into(), value: Some(Bytes::from_static(b"abc")) }],
        };
        let pending = |extra: Option<RecordExtra>| {
            Pending::new(crate::topic::TopicId::UNREGISTERED, None, message.clone(), None, extra)
        };
        assert_eq!(held_by(Queued::Kept(&pending(None))), 128);
        assert_eq!(held_by(Queued::Kept(&pending(Some(extra.clone())))), held_bytes(2, 100, &extra.headers));
        assert_eq!(held_bytes(2, 100, &extra.headers), 128 + 8);
    }

    #[test]
    fn release_gives_back_only_what_records_with_slots_took() {
        let bounds = QueueBounds::new(10, Some(1000));
        let (_, cap) = bounds.bytes.as_ref().unwrap();
        assert_eq!((*cap, bounds.bytes_held()), (1000, 0));
        bounds.bytes.as_ref().unwrap().0.try_acquire_many(500).unwrap().forget();
        assert_eq!(bounds.bytes_held(), 500);
        // records without a slot (the observer's) took nothing and give nothing back
        let message = EncodedMessage::encode(&Message::new(None, Some(Bytes::from_static(b"x")))).unwrap();
        let pending = Pending::new(crate::topic::TopicId::UNREGISTERED, None, message, None, None);
        bounds.release([&pending].into_iter());
        assert_eq!(bounds.bytes_held(), 500);
        assert_eq!(bounds.places.available_permits(), 10);
    }
}

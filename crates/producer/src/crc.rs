//! A Message v0's CRC-32, computed only where the message goes out as one.
//!
//! `send` encodes every record as a Message v0 (what its partition's log holds). That message's
//! CRC is read only where it goes out as it is: in a message set for a Kafka 0.8-0.10 leader
//! (Produce v0-v2), or compressed into such a set's wrapper. A leader that speaks RecordBatch
//! v2 (Produce v3+, Kafka 0.11 on) gets the records laid out again, under one CRC-32C for the
//! batch and none per record (`engine::format`). Computing the CRC at `send` for such a leader
//! was 5.65-6.8% of the producer's process against the FakeCluster's modern mode
//! (`benchmarks/timing/session-35.md`, `session-36.md`).
//!
//! So the producer's rounds say which format they went out in ([`Crcs::round_in`]), and while
//! the last went out as RecordBatch v2 the sending threads leave the CRC 0
//! ([`Crcs::skip_at_send`]). A set that goes out as Message v0 after all (a leader moved to an
//! older broker, a chunk compressed before its leader's versions were known) has its missing
//! CRCs computed on the way ([`with_crcs`]): a copy of the set, only once some CRC may have
//! been left out. A CRC of 0 is taken as missing: a message whose true CRC is 0 gets the same 0
//! again.

use std::sync::atomic::{AtomicBool, Ordering};

use gregor_protocol::MessageSet;

/// Whether the sending threads compute the CRC, shared by them and the engine.
#[derive(Debug, Default)]
pub(crate) struct Crcs {
    /// The last round went out as RecordBatch v2: `send` leaves the CRC out.
    skip: AtomicBool,
    /// `skip` was ever set: a set may hold messages without their CRC (set before `skip`, so
    /// the engine sees it for any record that was encoded without one).
    skipped: AtomicBool,
}

impl Crcs {
    /// True when `send` leaves the CRC 0.
    pub(crate) fn skip_at_send(&self) -> bool {
        self.skip.load(Ordering::SeqCst)
    }

    /// A round is built, as RecordBatch v2 (`record_batch`, Produce v3+) or as Message v0 sets:
    /// the records sent from now on get their CRC only in the second case.
    pub(crate) fn round_in(&self, record_batch: bool) {
        if record_batch != self.skip.load(Ordering::SeqCst) {
            if record_batch {
                self.skipped.store(true, Ordering::SeqCst);
            }
            self.skip.store(record_batch, Ordering::SeqCst);
        }
    }

    /// True once a message may have been encoded without its CRC: Message v0 sets get theirs
    /// computed ([`with_crcs`]) before they go out.
    pub(crate) fn may_be_missing(&self) -> bool {
        self.skipped.load(Ordering::SeqCst)
    }
}

/// `set` (uncompressed Message v0 entries, each part of whole entries, as a partition's log
/// makes them) with the CRC of every message whose CRC is 0 computed: a copy when one is,
/// else `set` itself. A set that cannot be read comes back as it is (its reader says what is
/// wrong with it).
pub(crate) fn with_crcs(set: &MessageSet) -> MessageSet {
    let missing = |part: &bytes::Bytes, at: &std::ops::Range<usize>| part.get(at.start..at.start + 4) == Some(&[0; 4]);
    let mut any = false;
    for entry in crate::log::entries(set) {
        match entry {
            Some((part, at)) => any |= missing(part, &at),
            None => return set.clone(),
        }
    }
    if !any {
        return set.clone();
    }
    let mut out = bytes::BytesMut::with_capacity(set.len());
    for (part, at) in crate::log::entries(set).flatten() {
        // the entry's offset and size, then its message
        let start = out.len() + crate::log::ENTRY_HEADER;
        out.extend_from_slice(&part[at.start - crate::log::ENTRY_HEADER..at.end]);
        if missing(part, &at) {
            gregor_protocol::message::fill_crc(&mut out[start..]);
        }
    }
    MessageSet::from_bytes(out.freeze())
}

#[cfg(test)]
pub(crate) mod tests {
    use bytes::{Bytes, BytesMut};
    use gregor_protocol::message::DecodeOptions;
    use gregor_protocol::{Message, MessageAndOffset};

    use super::*;

    /// Appends `message` to `part` as a message set entry at `offset`, without its CRC when
    /// `open`.
    fn push_entry(part: &mut BytesMut, offset: usize, message: &Message, open: bool) {
        let mut encoded = BytesMut::new();
        if open {
            message.encode_without_crc(&mut encoded).unwrap();
        } else {
            message.encode(&mut encoded).unwrap();
        }
        part.extend_from_slice(&(offset as i64).to_be_bytes());
        part.extend_from_slice(&(encoded.len() as i32).to_be_bytes());
        part.extend_from_slice(&encoded);
    }

    /// A set of `values` (offsets 0, 1, ...) whose messages at `open` have no CRC, in two parts.
    pub(crate) fn set(values: &[&str], open: &[usize]) -> MessageSet {
        let mut parts = Vec::new();
        for half in values.chunks(values.len().div_ceil(2)) {
            let mut part = BytesMut::new();
            for value in half {
                let i = values.iter().position(|v| v == value).unwrap();
                let message = Message::new(None, Some(Bytes::copy_from_slice(value.as_bytes())));
                push_entry(&mut part, i, &message, open.contains(&i));
            }
            parts.push(part.freeze());
        }
        MessageSet::from_parts(parts)
    }

    fn whole(values: &[&str]) -> MessageSet {
        let messages: Vec<_> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                MessageAndOffset::new(i as i64, Message::new(None, Some(Bytes::copy_from_slice(v.as_bytes()))))
            })
            .collect();
        MessageSet::encode(&messages).unwrap()
    }

    #[test]
    fn the_missing_crcs_of_a_set_in_parts_are_computed_in_a_copy() {
        let values = ["a", "bb", "ccc", "dddd", "eeeee"];
        let open = set(&values, &[1, 4]);
        assert_eq!(open.parts().len(), 2);
        assert!(open.decode(&DecodeOptions::default()).is_err(), "a reader refuses a message without its CRC");
        let filled = with_crcs(&open);
        assert_eq!(filled.as_bytes(), whole(&values).as_bytes());
        assert_eq!(filled.decode(&DecodeOptions::default()).unwrap().messages.len(), values.len());
    }

    #[test]
    fn a_set_with_every_crc_comes_back_as_it_is() {
        let values = ["a", "bb", "ccc"];
        let complete = set(&values, &[]);
        let back = with_crcs(&complete);
        assert_eq!(back.parts().len(), 2, "not copied");
        assert!(back.parts().iter().zip(complete.parts()).all(|(a, b)| a.as_ptr() == b.as_ptr()));
        let torn = MessageSet::from_bytes(Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 0, 0]));
        assert_eq!(with_crcs(&torn).as_bytes(), torn.as_bytes(), "an unreadable set is left to its reader");
    }

    proptest::proptest! {
        /// Any records (null or empty keys and values too), any of them without their CRC, in
        /// parts cut anywhere between entries: the same bytes as the set encoded whole.
        #[test]
        fn any_set_gets_back_every_crc(
            records in proptest::collection::vec(
                (proptest::option::of(proptest::collection::vec(0u8..=255, 0..20)),
                 proptest::option::of(proptest::collection::vec(0u8..=255, 0..300)),
                 proptest::bool::ANY,
                 proptest::bool::ANY),
                1..40),
        ) {
            let mut parts = Vec::new();
            let mut part = BytesMut::new();
            let mut messages = Vec::new();
            for (i, (key, value, open, cut)) in records.into_iter().enumerate() {
                let message = Message::new(key.map(Bytes::from), value.map(Bytes::from));
                push_entry(&mut part, i, &message, open);
                if cut {
                    parts.push(part.split().freeze());
                }
                messages.push(MessageAndOffset::new(i as i64, message));
            }
            parts.push(part.freeze());
            let filled = with_crcs(&MessageSet::from_parts(parts));
            let whole = MessageSet::encode(&messages).unwrap();
            proptest::prop_assert_eq!(filled.as_bytes(), whole.as_bytes());
        }
    }

    #[test]
    fn send_leaves_the_crc_out_while_the_rounds_go_out_as_record_batches() {
        let crcs = Crcs::default();
        assert!(!crcs.skip_at_send() && !crcs.may_be_missing(), "computed until a round says otherwise");
        crcs.round_in(false);
        assert!(!crcs.skip_at_send() && !crcs.may_be_missing());
        crcs.round_in(true);
        assert!(crcs.skip_at_send() && crcs.may_be_missing());
        crcs.round_in(true);
        assert!(crcs.skip_at_send());
        crcs.round_in(false);
        assert!(!crcs.skip_at_send(), "a round to an older leader: computed again");
        assert!(crcs.may_be_missing(), "records sent before may still lack theirs");
    }
}

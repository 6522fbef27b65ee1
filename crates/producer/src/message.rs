//! A record's encoded message on its way through the producer: a small one (at most
//! [`SHARED_MAX`] bytes) shares buffers with other records (the inbox's byte stream), a large
//! one has an allocation of its own from the sending thread; once its partition is known,
//! either is copied to the end of its partition's log (`crate::log`), where its batch takes
//! it from.

use bytes::Bytes;
use gregor_protocol::EncodedMessage;

/// Records whose message is at most this long go through the inbox's byte stream and are
/// copied from it to their partition's log; longer ones get an allocation of their own until
/// then.
pub(crate) const SHARED_MAX: usize = 8 * 1024;

/// The message in an allocation of its own when it sits in a shared buffer; as it is
/// otherwise (a record that waits long must not keep a whole shared block alive).
pub(crate) fn detach(message: &EncodedMessage) -> EncodedMessage {
    if message.len() <= SHARED_MAX {
        message.detached()
    } else {
        message.clone()
    }
}

/// A record's message from its bytes in the inbox's block, in an allocation of its own.
pub(crate) fn own_copy(raw: &[u8]) -> EncodedMessage {
    EncodedMessage::from_bytes(Bytes::copy_from_slice(raw)).expect("the inbox holds what Message::encode wrote")
}

/// A message no record sends (null key, null value), held by a record whose bytes are
/// elsewhere (in the inbox's block, its partition's log or its batch's set); static, so a clone
/// costs no reference count.
static PLACEHOLDER: [u8; 14] = [0xa7, 0xec, 0x68, 0x03, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];

/// The placeholder message (see [`PLACEHOLDER`]).
pub(crate) fn placeholder() -> EncodedMessage {
    EncodedMessage::from_bytes(Bytes::from_static(&PLACEHOLDER)).expect("a message")
}

#[cfg(test)]
mod tests {
    use gregor_protocol::Message;

    use super::*;

    #[test]
    fn the_placeholder_is_a_message_of_nothing() {
        assert_eq!(placeholder().to_message(), Message::new(None, None));
    }

    #[test]
    fn a_small_message_is_detached_from_its_buffer_and_a_large_one_kept() {
        let small = EncodedMessage::encode(&Message::new(None, Some(Bytes::from_static(b"v")))).unwrap();
        let large = EncodedMessage::encode(&Message::new(None, Some(Bytes::from(vec![b'x'; SHARED_MAX])))).unwrap();
        assert_ne!(detach(&small).as_bytes().as_ptr(), small.as_bytes().as_ptr());
        assert_eq!(detach(&small), small);
        assert_eq!(detach(&large).as_bytes().as_ptr(), large.as_bytes().as_ptr());
        assert_eq!(own_copy(small.as_bytes()), small);
    }
}

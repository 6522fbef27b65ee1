//! A request frame as the byte strings to write, large ones shared rather than copied.

use bytes::{Bytes, BytesMut};

/// Where [`Encode::encode_parts`](crate::Encode::encode_parts) writes: a buffer, and byte strings appended without a copy
/// ([`PartsWriter::share`]).
#[derive(Debug, Default)]
pub struct PartsWriter {
    buf: BytesMut,
    /// What was written before the first shared part (kept writable: see [`RequestFrame`]).
    head: Option<BytesMut>,
    tail: Vec<Bytes>,
}

impl PartsWriter {
    /// Shorter byte strings are copied by [`PartsWriter::share`]: a part of its own would cost
    /// more to write than the copy.
    pub const SHARE_MIN: usize = 1024;

    /// A writer whose buffer has room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> PartsWriter {
        PartsWriter { buf: BytesMut::with_capacity(capacity), head: None, tail: Vec::new() }
    }

    /// The buffer, to append to.
    pub fn buf(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Appends `bytes`: as a part of its own (no copy, a reference count) from
    /// [`PartsWriter::SHARE_MIN`] bytes on, else copied into the buffer.
    pub fn share(&mut self, bytes: &Bytes) {
        if bytes.len() < Self::SHARE_MIN {
            self.buf.extend_from_slice(bytes);
            return;
        }
        let written = self.buf.split();
        match self.head {
            None => self.head = Some(written),
            Some(_) if written.is_empty() => {}
            Some(_) => self.tail.push(written.freeze()),
        }
        self.tail.push(bytes.clone());
    }

    /// Everything written, in order.
    pub fn finish(self) -> RequestFrame {
        let PartsWriter { buf, head, mut tail } = self;
        match head {
            None => RequestFrame { head: buf, tail },
            Some(head) => {
                if !buf.is_empty() {
                    tail.push(buf.freeze());
                }
                RequestFrame { head, tail }
            }
        }
    }
}

/// A request frame as the byte strings to write one after the other: `head` (the size prefix,
/// the header and the body's first bytes; writable, so that a connection can set the
/// correlation id), then `tail`, which may share large byte strings with the request (a Produce
/// request's message sets are not copied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFrame {
    /// The first bytes: at least the size prefix and the header.
    pub head: BytesMut,
    /// The rest, in order.
    pub tail: Vec<Bytes>,
}

impl RequestFrame {
    /// The frame's length, size prefix included.
    pub fn len(&self) -> usize {
        self.head.len() + self.tail.iter().map(Bytes::len).sum::<usize>()
    }

    /// False: a frame has at least its size prefix and header.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frame in one buffer (a copy).
    pub fn to_bytes(&self) -> Bytes {
        let mut all = BytesMut::with_capacity(self.len());
        all.extend_from_slice(&self.head);
        for part in &self.tail {
            all.extend_from_slice(part);
        }
        all.freeze()
    }
}

//! The tagged-field section flexible versions put after every structure (KIP-482):
//! `uvarint count, (uvarint tag, uvarint size, size bytes)*`, tags ascending.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::varint;
use crate::error::{Error, Result};

/// One tagged field this crate does not know: its tag and raw value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawTaggedField {
    /// The tag.
    pub tag: u32,
    /// The value's bytes, as they were on the wire.
    pub value: Bytes,
}

/// Tagged fields kept as they came (those a declaration does not name), to be written back.
///
/// Almost always empty, and one sits in every structure of a message (every partition of a
/// Fetch response has four): the empty set is a null pointer, one word that costs nothing to
/// create, move or drop.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(clippy::box_collection)] // a thin pointer: one word, where a Vec takes three
pub struct TaggedFields(Option<Box<Vec<RawTaggedField>>>);

impl Drop for TaggedFields {
    /// Inline, so that dropping the (usual) empty set is a pointer test, not a call.
    #[inline]
    fn drop(&mut self) {
        if let Some(fields) = self.0.take() {
            drop_fields(fields);
        }
    }
}

#[inline(never)]
#[allow(clippy::box_collection)]
fn drop_fields(fields: Box<Vec<RawTaggedField>>) {
    drop(fields);
}

impl TaggedFields {
    /// The fields, in the order they were read.
    pub fn fields(&self) -> &[RawTaggedField] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.fields().is_empty()
    }

    /// Adds a field.
    pub fn push(&mut self, tag: u32, value: Bytes) {
        self.0.get_or_insert_with(Box::default).push(RawTaggedField { tag, value });
    }

    /// Reads a tagged-field section: each field's tag and bytes, checked against the input.
    ///
    /// # Errors
    ///
    /// Truncated or malformed varints, a size past the end, tags out of ascending order.
    pub fn read(buf: &mut Bytes) -> Result<Vec<(u32, Bytes)>> {
        let count = varint::get_u32(buf, "tagged fields")? as usize;
        // every field takes at least 2 bytes (tag and size)
        if count > buf.remaining() / 2 {
            return Err(Error::InvalidLength {
                field: "tagged fields",
                length: count as i64,
                remaining: buf.remaining(),
            });
        }
        let mut out = Vec::with_capacity(count);
        let mut last: Option<u32> = None;
        for _ in 0..count {
            let tag = varint::get_u32(buf, "tag")?;
            if last.is_some_and(|l| tag <= l) {
                return Err(Error::InvalidVarint {
                    field: "tag",
                    reason: format!("tag {tag} after tag {}", last.unwrap_or(0)),
                });
            }
            last = Some(tag);
            let size = varint::get_u32(buf, "tagged field size")? as usize;
            if size > buf.remaining() {
                return Err(Error::InvalidLength {
                    field: "tagged field size",
                    length: size as i64,
                    remaining: buf.remaining(),
                });
            }
            out.push((tag, buf.split_to(size)));
        }
        Ok(out)
    }

    /// Writes a tagged-field section holding `known` (tag, value) pairs and these unknown
    /// fields, merged in ascending tag order.
    ///
    /// # Errors
    ///
    /// [`Error::TooLong`] for a value over `u32::MAX` bytes.
    pub fn put_with(&self, mut known: Vec<(u32, Bytes)>, buf: &mut BytesMut) -> Result<()> {
        if known.is_empty() && self.is_empty() {
            buf.put_u8(0);
            return Ok(());
        }
        known.extend(self.fields().iter().map(|f| (f.tag, f.value.clone())));
        known.sort_by_key(|(tag, _)| *tag);
        varint::put_u32(buf, u32::try_from(known.len()).unwrap_or(u32::MAX));
        for (tag, value) in known {
            varint::put_u32(buf, tag);
            let size = u32::try_from(value.len()).map_err(|_| Error::TooLong {
                field: "tagged field",
                length: value.len(),
                max: u32::MAX as usize,
            })?;
            varint::put_u32(buf, size);
            buf.put_slice(&value);
        }
        Ok(())
    }
}

/// Fails when a tagged field's value was not read to its end.
///
/// # Errors
///
/// [`Error::InvalidLength`] naming the field.
pub fn ensure_consumed(field: &'static str, rest: &Bytes) -> Result<()> {
    if rest.has_remaining() {
        return Err(Error::InvalidLength { field, length: rest.remaining() as i64, remaining: 0 });
    }
    Ok(())
}

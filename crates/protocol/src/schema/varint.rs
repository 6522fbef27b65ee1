//! Variable-length integers: unsigned LEB128 varints (lengths and counts of flexible versions,
//! tags) and zig-zag signed varints (the fields of a record in a RecordBatch v2), as Protocol
//! Buffers writes them.
//!
//! A reader stops after the most bytes its width can take (5 for 32 bits, 10 for 64) and rejects
//! bits beyond the width, so a run of 0xff bytes is an error, not a loop or an overflow.

use bytes::{Buf, BufMut, Bytes};

use crate::error::{Error, Result};

fn malformed(field: &'static str, what: &str) -> Error {
    Error::InvalidVarint { field, reason: what.to_string() }
}

/// Reads an unsigned varint of at most 64 bits.
fn get_raw(buf: &mut Bytes, field: &'static str, max_bytes: usize, bits: u32) -> Result<u64> {
    let mut value = 0u64;
    for i in 0..max_bytes {
        if !buf.has_remaining() {
            return Err(Error::Truncated { field, needed: i + 1, remaining: 0 });
        }
        let byte = buf.get_u8();
        let shift = 7 * i as u32;
        let part = u64::from(byte & 0x7f);
        if shift + 7 > bits && part >> (bits - shift) != 0 {
            return Err(malformed(field, "more bits than its width"));
        }
        value |= part << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(malformed(field, "too many bytes"))
}

/// Reads an unsigned 32-bit varint.
///
/// # Errors
///
/// [`Error::Truncated`], [`Error::InvalidVarint`] past 5 bytes or 32 bits.
pub fn get_u32(buf: &mut Bytes, field: &'static str) -> Result<u32> {
    get_raw(buf, field, 5, 32).map(|v| v as u32)
}

/// Reads an unsigned 64-bit varint.
///
/// # Errors
///
/// [`Error::Truncated`], [`Error::InvalidVarint`] past 10 bytes or 64 bits.
pub fn get_u64(buf: &mut Bytes, field: &'static str) -> Result<u64> {
    get_raw(buf, field, 10, 64)
}

/// Reads a zig-zag signed 32-bit varint.
///
/// # Errors
///
/// As [`get_u32`].
pub fn get_i32(buf: &mut Bytes, field: &'static str) -> Result<i32> {
    let v = get_u32(buf, field)?;
    Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
}

/// Reads a zig-zag signed 64-bit varint.
///
/// # Errors
///
/// As [`get_u64`].
pub fn get_i64(buf: &mut Bytes, field: &'static str) -> Result<i64> {
    let v = get_u64(buf, field)?;
    Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
}

/// Appends an unsigned varint.
pub fn put_u64(buf: &mut impl BufMut, mut value: u64) {
    while value >= 0x80 {
        buf.put_u8((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    buf.put_u8(value as u8);
}

/// Appends an unsigned 32-bit varint.
pub fn put_u32(buf: &mut impl BufMut, value: u32) {
    put_u64(buf, u64::from(value));
}

/// Appends a zig-zag signed 32-bit varint.
pub fn put_i32(buf: &mut impl BufMut, value: i32) {
    put_u32(buf, ((value << 1) ^ (value >> 31)) as u32);
}

/// Appends a zig-zag signed 64-bit varint.
pub fn put_i64(buf: &mut impl BufMut, value: i64) {
    put_u64(buf, ((value << 1) ^ (value >> 63)) as u64);
}

/// How many bytes [`put_u64`] writes for `value`.
pub const fn len_u64(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// How many bytes [`put_i32`] writes for `value`.
pub const fn len_i32(value: i32) -> usize {
    len_u64(((value << 1) ^ (value >> 31)) as u32 as u64)
}

/// How many bytes [`put_i64`] writes for `value`.
pub const fn len_i64(value: i64) -> usize {
    len_u64(((value << 1) ^ (value >> 63)) as u64)
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::*;

    #[test]
    fn known_encodings() {
        // (value, bytes) pairs from the Protocol Buffers encoding guide and Kafka's ByteUtils tests
        let unsigned: &[(u64, &[u8])] = &[
            (0, &[0]),
            (1, &[1]),
            (127, &[0x7f]),
            (128, &[0x80, 1]),
            (300, &[0xac, 0x02]),
            (16_384, &[0x80, 0x80, 1]),
        ];
        for &(v, bytes) in unsigned {
            let mut buf = BytesMut::new();
            put_u64(&mut buf, v);
            assert_eq!(&buf[..], bytes, "{v}");
            assert_eq!(len_u64(v), bytes.len());
            assert_eq!(get_u64(&mut Bytes::copy_from_slice(bytes), "v").unwrap(), v);
        }
        let signed: &[(i64, &[u8])] = &[(0, &[0]), (-1, &[1]), (1, &[2]), (-2, &[3]), (63, &[0x7e]), (-64, &[0x7f])];
        for &(v, bytes) in signed {
            let mut buf = BytesMut::new();
            put_i64(&mut buf, v);
            assert_eq!(&buf[..], bytes, "{v}");
            assert_eq!(len_i64(v), bytes.len());
            assert_eq!(get_i64(&mut Bytes::copy_from_slice(bytes), "v").unwrap(), v);
        }
    }

    #[test]
    fn extremes_round_trip() {
        for v in [i32::MIN, i32::MIN + 1, -1, 0, 1, i32::MAX] {
            let mut buf = BytesMut::new();
            put_i32(&mut buf, v);
            assert_eq!(buf.len(), len_i32(v));
            assert_eq!(get_i32(&mut buf.freeze(), "v").unwrap(), v);
        }
        for v in [i64::MIN, -1, 0, i64::MAX] {
            let mut buf = BytesMut::new();
            put_i64(&mut buf, v);
            assert_eq!(buf.len(), len_i64(v));
            assert_eq!(get_i64(&mut buf.freeze(), "v").unwrap(), v);
        }
        let mut buf = BytesMut::new();
        put_u32(&mut buf, u32::MAX);
        assert_eq!(&buf[..], [0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(get_u32(&mut buf.freeze(), "v").unwrap(), u32::MAX);
    }

    #[test]
    fn hostile_varints_are_errors() {
        // endless continuation bits
        let err = get_u32(&mut Bytes::from_static(&[0xff; 16]), "len").unwrap_err();
        assert!(matches!(err, Error::InvalidVarint { field: "len", .. }), "{err}");
        // a fifth byte with bits beyond 32
        let err = get_u32(&mut Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x1f]), "len").unwrap_err();
        assert!(matches!(err, Error::InvalidVarint { .. }), "{err}");
        // cut in the middle
        let err = get_u64(&mut Bytes::from_static(&[0x80, 0x80]), "len").unwrap_err();
        assert!(matches!(err, Error::Truncated { field: "len", .. }), "{err}");
        let err = get_u64(&mut Bytes::from_static(&[0xff; 11]), "len").unwrap_err();
        assert!(matches!(err, Error::InvalidVarint { .. }), "{err}");
    }
}

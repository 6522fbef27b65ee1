//! Kafka's primitive types on the wire: big-endian integers, `int16`-prefixed strings,
//! `int32`-prefixed bytes (-1 = null) and `int32`-counted arrays.
//!
//! Readers treat every length as hostile: a length is checked against the bytes that remain
//! before anything is allocated, and an array count against the smallest size its elements can
//! have, so a count of 2^31-1 inside a 100-byte frame fails at once.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::{Error, Result};

/// Reads a fixed-size integer.
macro_rules! getter {
    ($name:ident, $ty:ty, $get:ident) => {
        #[doc = concat!("Reads a big-endian `", stringify!($ty), "`.")]
        ///
        /// # Errors
        ///
        /// [`Error::Truncated`] when too few bytes remain.
        pub fn $name(buf: &mut Bytes, field: &'static str) -> Result<$ty> {
            const N: usize = std::mem::size_of::<$ty>();
            if buf.remaining() < N {
                return Err(Error::truncated(field, N, buf.remaining()));
            }
            Ok(buf.$get())
        }
    };
}

getter!(get_i8, i8, get_i8);
getter!(get_i16, i16, get_i16);
getter!(get_i32, i32, get_i32);
getter!(get_i64, i64, get_i64);
getter!(get_u32, u32, get_u32);

/// Reads an `int16`-prefixed string that may be null (-1).
///
/// # Errors
///
/// [`Error::Truncated`], [`Error::InvalidLength`] for a negative length other than -1 or one past
/// the end, [`Error::InvalidUtf8`].
pub fn get_nullable_string(buf: &mut Bytes, field: &'static str) -> Result<Option<String>> {
    let len = get_i16(buf, field)?;
    if len == -1 {
        return Ok(None);
    }
    if len < 0 || len as usize > buf.remaining() {
        return Err(Error::InvalidLength { field, length: len.into(), remaining: buf.remaining() });
    }
    let raw = buf.split_to(len as usize);
    String::from_utf8(raw.to_vec()).map(Some).map_err(|_| Error::InvalidUtf8 { field })
}

/// Reads an `int16`-prefixed string that must not be null.
///
/// # Errors
///
/// As [`get_nullable_string`], and [`Error::UnexpectedNull`] for -1.
pub fn get_string(buf: &mut Bytes, field: &'static str) -> Result<String> {
    get_nullable_string(buf, field)?.ok_or(Error::UnexpectedNull { field })
}

/// Reads `int32`-prefixed bytes (-1 = null) without copying.
///
/// # Errors
///
/// [`Error::Truncated`], [`Error::InvalidLength`].
pub fn get_nullable_bytes(buf: &mut Bytes, field: &'static str) -> Result<Option<Bytes>> {
    let len = get_i32(buf, field)?;
    if len == -1 {
        return Ok(None);
    }
    if len < 0 || len as usize > buf.remaining() {
        return Err(Error::InvalidLength { field, length: len.into(), remaining: buf.remaining() });
    }
    Ok(Some(buf.split_to(len as usize)))
}

/// Reads `int32`-prefixed bytes that must not be null, without copying.
///
/// # Errors
///
/// As [`get_nullable_bytes`], and [`Error::UnexpectedNull`] for -1.
pub fn get_bytes(buf: &mut Bytes, field: &'static str) -> Result<Bytes> {
    get_nullable_bytes(buf, field)?.ok_or(Error::UnexpectedNull { field })
}

/// Reads an `int32` array count and checks it against the remaining bytes, assuming each
/// element takes at least `min_element_size` bytes (at least 1 is assumed).
///
/// # Errors
///
/// [`Error::InvalidLength`] for a negative count or one that cannot fit.
pub fn get_array_len(buf: &mut Bytes, field: &'static str, min_element_size: usize) -> Result<usize> {
    let count = get_i32(buf, field)?;
    let fits = buf.remaining() / min_element_size.max(1);
    if count < 0 || count as usize > fits {
        return Err(Error::InvalidLength { field, length: count.into(), remaining: buf.remaining() });
    }
    Ok(count as usize)
}

/// Reads an `int32`-counted array whose elements take at least `min_element_size` bytes each.
///
/// # Errors
///
/// As [`get_array_len`], and whatever `element` returns.
pub fn get_array<T>(
    buf: &mut Bytes,
    field: &'static str,
    min_element_size: usize,
    mut element: impl FnMut(&mut Bytes) -> Result<T>,
) -> Result<Vec<T>> {
    let count = get_array_len(buf, field, min_element_size)?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        out.push(element(buf)?);
    }
    Ok(out)
}

/// Writes an `int16`-prefixed string, or -1 for `None`.
///
/// # Errors
///
/// [`Error::TooLong`] for a string over 32767 bytes.
pub fn put_nullable_string(buf: &mut BytesMut, field: &'static str, s: Option<&str>) -> Result<()> {
    match s {
        None => buf.put_i16(-1),
        Some(s) => {
            let len = i16::try_from(s.len()).map_err(|_| Error::TooLong {
                field,
                length: s.len(),
                max: i16::MAX as usize,
            })?;
            buf.put_i16(len);
            buf.put_slice(s.as_bytes());
        }
    }
    Ok(())
}

/// Writes an `int16`-prefixed string.
///
/// # Errors
///
/// [`Error::TooLong`] for a string over 32767 bytes.
pub fn put_string(buf: &mut BytesMut, field: &'static str, s: &str) -> Result<()> {
    put_nullable_string(buf, field, Some(s))
}

/// Writes `int32`-prefixed bytes, or -1 for `None`.
///
/// # Errors
///
/// [`Error::TooLong`] for more than `i32::MAX` bytes.
pub fn put_nullable_bytes(buf: &mut BytesMut, field: &'static str, b: Option<&[u8]>) -> Result<()> {
    match b {
        None => buf.put_i32(-1),
        Some(b) => {
            buf.put_i32(len_i32(field, b.len())?);
            buf.put_slice(b);
        }
    }
    Ok(())
}

/// Writes an `int32`-counted array.
///
/// # Errors
///
/// [`Error::TooLong`] for more than `i32::MAX` elements, and whatever `element` returns.
pub fn put_array<T>(
    buf: &mut BytesMut,
    field: &'static str,
    items: &[T],
    mut element: impl FnMut(&mut BytesMut, &T) -> Result<()>,
) -> Result<()> {
    buf.put_i32(len_i32(field, items.len())?);
    for item in items {
        element(buf, item)?;
    }
    Ok(())
}

/// Converts a length to the `int32` the wire carries.
///
/// # Errors
///
/// [`Error::TooLong`] above `i32::MAX`.
pub fn len_i32(field: &'static str, len: usize) -> Result<i32> {
    i32::try_from(len).map_err(|_| Error::TooLong { field, length: len, max: i32::MAX as usize })
}

/// Reserves an `int32` size field to be filled in by [`finish_size`] once what follows it is
/// written (Sarama's push/pop length fields). Returns the field's position.
pub fn begin_size(buf: &mut BytesMut) -> usize {
    let at = buf.len();
    buf.put_i32(0);
    at
}

/// Fills the `int32` size field reserved at `at` with the number of bytes written after it.
///
/// # Errors
///
/// [`Error::TooLong`] above `i32::MAX`.
pub fn finish_size(buf: &mut BytesMut, at: usize, field: &'static str) -> Result<()> {
    let len = len_i32(field, buf.len() - at - 4)?;
    buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_array_count_in_a_small_frame_fails_at_once() {
        let mut frame = BytesMut::new();
        frame.put_i32(i32::MAX);
        frame.put_slice(&[0u8; 96]);
        let mut b = frame.freeze();
        let err = get_array(&mut b, "topics", 6, |b| get_string(b, "topic")).unwrap_err();
        assert!(
            matches!(err, Error::InvalidLength { field: "topics", length, remaining: 96 } if length == i64::from(i32::MAX)),
            "{err}"
        );
    }

    #[test]
    fn negative_lengths_are_rejected_and_minus_one_is_null() {
        let mut b = Bytes::from_static(&[0xff, 0xff]);
        assert_eq!(get_nullable_string(&mut b, "s").unwrap(), None);
        let mut b = Bytes::from_static(&[0xff, 0xff]);
        assert!(matches!(get_string(&mut b, "s"), Err(Error::UnexpectedNull { field: "s" })));
        let mut b = Bytes::from_static(&[0xff, 0xfe]);
        assert!(matches!(get_nullable_string(&mut b, "s"), Err(Error::InvalidLength { length: -2, .. })));
        let mut b = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(get_nullable_bytes(&mut b, "v").unwrap(), None);
        let mut b = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 1, 2]);
        assert!(matches!(get_nullable_bytes(&mut b, "v"), Err(Error::InvalidLength { remaining: 2, .. })));
    }

    #[test]
    fn strings_and_bytes_round_trip() {
        let mut buf = BytesMut::new();
        put_string(&mut buf, "a", "topic").unwrap();
        put_nullable_string(&mut buf, "b", None).unwrap();
        put_nullable_bytes(&mut buf, "c", Some(b"xy")).unwrap();
        put_nullable_bytes(&mut buf, "d", None).unwrap();
        put_nullable_bytes(&mut buf, "e", Some(b"")).unwrap();
        assert_eq!(&buf[..], b"\x00\x05topic\xff\xff\x00\x00\x00\x02xy\xff\xff\xff\xff\x00\x00\x00\x00");
        let mut b = buf.freeze();
        assert_eq!(get_string(&mut b, "a").unwrap(), "topic");
        assert_eq!(get_nullable_string(&mut b, "b").unwrap(), None);
        assert_eq!(get_nullable_bytes(&mut b, "c").unwrap().as_deref(), Some(&b"xy"[..]));
        assert_eq!(get_nullable_bytes(&mut b, "d").unwrap(), None);
        assert_eq!(get_nullable_bytes(&mut b, "e").unwrap().as_deref(), Some(&b""[..]));
        assert!(b.is_empty());
    }

    #[test]
    fn truncated_integers_report_what_was_missing() {
        let mut b = Bytes::from_static(&[0, 0, 1]);
        let err = get_i32(&mut b, "correlation_id").unwrap_err();
        assert_eq!(err.to_string(), "truncated input: correlation_id needs 4 bytes, 3 remain");
    }

    #[test]
    fn size_fields_are_back_patched() {
        let mut buf = BytesMut::new();
        let at = begin_size(&mut buf);
        buf.put_slice(b"hello");
        finish_size(&mut buf, at, "x").unwrap();
        assert_eq!(&buf[..], b"\x00\x00\x00\x05hello");
    }

    #[test]
    fn overlong_string_is_an_error_not_a_wrap() {
        let s = "x".repeat(40_000);
        let err = put_string(&mut BytesMut::new(), "client_id", &s).unwrap_err();
        assert!(matches!(err, Error::TooLong { length: 40_000, max: 32_767, .. }));
    }
}

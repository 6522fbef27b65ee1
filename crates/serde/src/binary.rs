//! Raw bytes, passed through unchanged: Kafka's `kafka.serializer.DefaultEncoder` and
//! `DefaultDecoder`.

use bytes::Bytes;

use crate::{Decoder, Encoder, Result};

/// Passes bytes through unchanged; Kafka's `DefaultEncoder`.
///
/// Encoding a [`Bytes`] is zero-copy (a reference count); a `Vec<u8>` or `[u8]` is borrowed by
/// [`Encoder::encode`], so it is copied once.
///
/// ```
/// use bytes::Bytes;
/// use gregor_serde::{BytesEncoder, Encoder};
///
/// let value = Bytes::from_static(b"\x00\x01raw");
/// assert_eq!(BytesEncoder.encode(&value)?, value);
/// assert_eq!(BytesEncoder.encode(&b"raw"[..])?, &b"raw"[..]);
/// # Ok::<(), gregor_serde::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BytesEncoder;

impl Encoder<Bytes> for BytesEncoder {
    fn encode(&self, value: &Bytes) -> Result<Bytes> {
        Ok(value.clone())
    }

    fn encode_owned(&self, value: Bytes) -> std::result::Result<Bytes, (Bytes, crate::Error)> {
        Ok(value)
    }
}

impl Encoder<Vec<u8>> for BytesEncoder {
    fn encode(&self, value: &Vec<u8>) -> Result<Bytes> {
        Ok(Bytes::copy_from_slice(value))
    }

    fn encode_owned(&self, value: Vec<u8>) -> std::result::Result<Bytes, (Vec<u8>, crate::Error)> {
        Ok(Bytes::from(value))
    }
}

impl Encoder<[u8]> for BytesEncoder {
    fn encode(&self, value: &[u8]) -> Result<Bytes> {
        Ok(Bytes::copy_from_slice(value))
    }
}

/// Passes bytes through unchanged; Kafka's `DefaultDecoder`.
///
/// [`Decoder::decode_bytes`] is zero-copy for [`Bytes`] (and for `Vec<u8>` when the caller holds
/// the only reference to the buffer); [`Decoder::decode`] borrows, so it copies.
///
/// ```
/// use bytes::Bytes;
/// use gregor_serde::{BytesDecoder, Decoder};
///
/// let value = Bytes::from_static(b"raw");
/// let out: Bytes = BytesDecoder.decode_bytes(value.clone())?;
/// assert_eq!(out.as_ptr(), value.as_ptr()); // the same buffer
/// let out: Vec<u8> = BytesDecoder.decode(b"raw")?;
/// assert_eq!(out, b"raw");
/// # Ok::<(), gregor_serde::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BytesDecoder;

impl Decoder<Bytes> for BytesDecoder {
    fn decode(&self, bytes: &[u8]) -> Result<Bytes> {
        Ok(Bytes::copy_from_slice(bytes))
    }

    /// Returns `bytes` as they are.
    fn decode_bytes(&self, bytes: Bytes) -> Result<Bytes> {
        Ok(bytes)
    }
}

impl Decoder<Vec<u8>> for BytesDecoder {
    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>> {
        Ok(bytes.to_vec())
    }

    /// Reuses the buffer when `bytes` holds the only reference to it.
    fn decode_bytes(&self, bytes: Bytes) -> Result<Vec<u8>> {
        Ok(Vec::from(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity() {
        let cases: [&[u8]; 4] = [b"", b"\x00", b"\xff\xfe not utf-8 \x80", &[7u8; 1000]];
        for case in cases {
            let b = Bytes::copy_from_slice(case);
            assert_eq!(BytesEncoder.encode(&b).unwrap(), case);
            assert_eq!(BytesEncoder.encode(&case.to_vec()).unwrap(), case);
            assert_eq!(BytesEncoder.encode(case).unwrap(), case);
            let d: Bytes = BytesDecoder.decode(case).unwrap();
            assert_eq!(d, case);
            let d: Vec<u8> = BytesDecoder.decode(case).unwrap();
            assert_eq!(d, case);
            let d: Bytes = BytesDecoder.decode_bytes(b.clone()).unwrap();
            assert_eq!(d, case);
            let d: Vec<u8> = BytesDecoder.decode_bytes(b).unwrap();
            assert_eq!(d, case);
        }
    }

    #[test]
    fn zero_copy_where_possible() {
        let value = Bytes::from(vec![1u8, 2, 3, 4]);
        let encoded = BytesEncoder.encode(&value).unwrap();
        assert_eq!(encoded.as_ptr(), value.as_ptr());
        // owned: the same buffer handed over, for Bytes and Vec alike
        let at = value.as_ptr();
        drop(encoded);
        assert_eq!(BytesEncoder.encode_owned(value.clone()).unwrap().as_ptr(), at);
        let vec = vec![5u8; 100];
        let at = vec.as_ptr();
        let encoded = Encoder::<Vec<u8>>::encode_owned(&BytesEncoder, vec).unwrap();
        assert_eq!((encoded.as_ptr(), encoded.len()), (at, 100));
        let decoded: Bytes = BytesDecoder.decode_bytes(value.slice(1..)).unwrap();
        assert_eq!(decoded.as_ptr(), value[1..].as_ptr());

        // the only reference to a Vec-backed buffer: the Vec comes back without a copy
        let vec = vec![9u8; 64];
        let ptr = vec.as_ptr();
        let out: Vec<u8> = BytesDecoder.decode_bytes(Bytes::from(vec)).unwrap();
        assert_eq!(out.as_ptr(), ptr);
    }
}

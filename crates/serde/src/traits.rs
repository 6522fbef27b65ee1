//! The [`Encoder`] and [`Decoder`] traits.

use bytes::Bytes;

use crate::Result;

/// Turns a value into the bytes of a Kafka message key or value.
///
/// Kafka 0.8's `kafka.serializer.Encoder[T]` (`toBytes(t: T): Array[Byte]`), with an error
/// instead of an exception. Producers call it once per message, from any thread, so an encoder
/// is `Send + Sync` and takes `&self`.
///
/// Any closure `Fn(&T) -> Result<Bytes, Error> + Send + Sync` is an encoder:
///
/// ```
/// use bytes::Bytes;
/// use gregor_serde::{Encoder, Error};
///
/// let upper = |s: &str| -> Result<Bytes, Error> { Ok(Bytes::from(s.to_uppercase())) };
/// assert_eq!(upper.encode("abc")?, "ABC");
/// # Ok::<(), Error>(())
/// ```
///
/// An encoder always produces bytes: a null key (Kafka's `NullEncoder`) is not an encoder's
/// business. The producer takes the key as an `Option` and writes `None` as the null key
/// (length -1), without calling the key encoder. An empty key is not a null key: it is
/// hashed by the partitioner like any other.
pub trait Encoder<T: ?Sized>: Send + Sync {
    /// Encodes `value`.
    ///
    /// # Errors
    ///
    /// Whatever the encoder cannot encode; for the encoders of this crate, a value that does
    /// not match an Avro schema ([`Error::SchemaMismatch`](crate::Error::SchemaMismatch)).
    fn encode(&self, value: &T) -> Result<Bytes>;

    /// Encodes `value`, taking it: the producer calls this, so an encoder of owned bytes
    /// (`Bytes`, `Vec<u8>`, `String`) hands the buffer over as it is, with no copy and no
    /// reference count. The default encodes by reference.
    ///
    /// # Errors
    ///
    /// As [`Encoder::encode`], with the value given back.
    fn encode_owned(&self, value: T) -> std::result::Result<Bytes, (T, crate::Error)>
    where
        T: Sized,
    {
        match self.encode(&value) {
            Ok(bytes) => Ok(bytes),
            Err(e) => Err((value, e)),
        }
    }
}

impl<T: ?Sized, F> Encoder<T> for F
where
    F: Fn(&T) -> Result<Bytes> + Send + Sync,
{
    fn encode(&self, value: &T) -> Result<Bytes> {
        self(value)
    }
}

/// Turns the bytes of a Kafka message key or value back into a value.
///
/// Kafka 0.8's `kafka.serializer.Decoder[T]` (`fromBytes(bytes: Array[Byte]): T`), with an
/// error instead of an exception. Consumers call it once per message, from any thread.
///
/// Any closure `Fn(&[u8]) -> Result<T, Error> + Send + Sync` is a decoder:
///
/// ```
/// use gregor_serde::{Decoder, Error};
///
/// let len = |b: &[u8]| -> Result<usize, Error> { Ok(b.len()) };
/// assert_eq!(len.decode(b"abc")?, 3);
/// # Ok::<(), Error>(())
/// ```
///
/// A null key or value (length -1 on the wire) never reaches a decoder: the consumer hands it
/// out as `None`.
pub trait Decoder<T>: Send + Sync {
    /// Decodes `bytes`.
    ///
    /// # Errors
    ///
    /// Whatever the decoder cannot decode: invalid UTF-8, a malformed Avro datum, an unknown
    /// schema id, ... (see [`Error`](crate::Error)).
    fn decode(&self, bytes: &[u8]) -> Result<T>;

    /// Decodes bytes the caller owns, such as a message value cut from a fetch response.
    ///
    /// The default borrows them and calls [`decode`](Decoder::decode); decoders whose result can
    /// reuse the buffer override it to avoid the copy (the [`BytesDecoder`](crate::BytesDecoder)
    /// for `Bytes` returns them as they are).
    ///
    /// # Errors
    ///
    /// As [`decode`](Decoder::decode).
    fn decode_bytes(&self, bytes: Bytes) -> Result<T> {
        self.decode(&bytes)
    }
}

impl<T, F> Decoder<T> for F
where
    F: Fn(&[u8]) -> Result<T> + Send + Sync,
{
    fn decode(&self, bytes: &[u8]) -> Result<T> {
        self(bytes)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::Error;

    #[test]
    fn closures_are_encoders_and_decoders() {
        let enc = |v: &u32| -> Result<Bytes> { Ok(Bytes::copy_from_slice(&v.to_be_bytes())) };
        let dec = |b: &[u8]| -> Result<u32> {
            let arr: [u8; 4] = b.try_into().map_err(|_| Error::custom(format!("expected 4 bytes, got {}", b.len())))?;
            Ok(u32::from_be_bytes(arr))
        };
        let bytes = enc.encode(&0x0102_0304).unwrap();
        assert_eq!(&bytes[..], [1, 2, 3, 4]);
        assert_eq!(dec.decode(&bytes).unwrap(), 0x0102_0304);
        assert_eq!(dec.decode_bytes(bytes).unwrap(), 0x0102_0304);
        assert_eq!(dec.decode(&[1]).unwrap_err().to_string(), "expected 4 bytes, got 1");
    }

    #[test]
    fn trait_objects_work() {
        let enc: Arc<dyn Encoder<str>> =
            Arc::new(|s: &str| -> Result<Bytes> { Ok(Bytes::copy_from_slice(s.as_bytes())) });
        let dec: Box<dyn Decoder<String>> = Box::new(crate::StringDecoder::new());
        let bytes = enc.encode("héllo").unwrap();
        assert_eq!(dec.decode_bytes(bytes).unwrap(), "héllo");
    }
}

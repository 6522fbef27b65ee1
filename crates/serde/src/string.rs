//! UTF-8 strings: Kafka's `kafka.serializer.StringEncoder` and `StringDecoder`.

use bytes::Bytes;

use crate::{Decoder, Encoder, Error, Result};

/// The Kafka property that names the string encoding (read by both Kafka's `StringEncoder` and
/// `StringDecoder`).
pub const SERIALIZER_ENCODING: &str = "serializer.encoding";

/// The default of [`SERIALIZER_ENCODING`], as in Kafka 0.8.2.
pub const DEFAULT_SERIALIZER_ENCODING: &str = "UTF8";

/// Checks a `serializer.encoding` value: UTF-8 under its Java names `UTF8` and `UTF-8`, in any
/// case (Java's charset lookup ignores case).
fn check_encoding(encoding: &str) -> Result<()> {
    if encoding.eq_ignore_ascii_case("UTF8") || encoding.eq_ignore_ascii_case("UTF-8") {
        Ok(())
    } else {
        Err(Error::UnsupportedEncoding { encoding: encoding.to_owned() })
    }
}

/// Encodes strings as their UTF-8 bytes; Kafka's `StringEncoder`.
///
/// ```
/// use gregor_serde::{Encoder, StringEncoder};
///
/// let enc = StringEncoder::new();
/// assert_eq!(enc.encode("héllo")?, &b"h\xc3\xa9llo"[..]);
/// # Ok::<(), gregor_serde::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StringEncoder {
    _priv: (),
}

impl StringEncoder {
    /// A UTF-8 encoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// An encoder for the given [`SERIALIZER_ENCODING`] (default
    /// [`DEFAULT_SERIALIZER_ENCODING`]). Kafka accepts any Java charset here; only UTF-8, named
    /// `UTF8` or `UTF-8` (any case), is supported.
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedEncoding`] for any other encoding.
    pub fn with_encoding(encoding: &str) -> Result<Self> {
        check_encoding(encoding)?;
        Ok(Self::new())
    }
}

impl Encoder<str> for StringEncoder {
    fn encode(&self, value: &str) -> Result<Bytes> {
        Ok(Bytes::copy_from_slice(value.as_bytes()))
    }
}

impl Encoder<String> for StringEncoder {
    fn encode(&self, value: &String) -> Result<Bytes> {
        Ok(Bytes::copy_from_slice(value.as_bytes()))
    }

    fn encode_owned(&self, value: String) -> std::result::Result<Bytes, (String, crate::Error)> {
        Ok(Bytes::from(value.into_bytes()))
    }
}

/// Decodes UTF-8 bytes into a `String`; Kafka's `StringDecoder`.
///
/// Unlike Java's decoder, which replaces invalid sequences with U+FFFD, invalid UTF-8 is an
/// error ([`Error::InvalidUtf8`]).
///
/// ```
/// use gregor_serde::{Decoder, StringDecoder};
///
/// let dec = StringDecoder::new();
/// assert_eq!(dec.decode(b"h\xc3\xa9llo")?, "héllo");
/// assert!(dec.decode(b"\xff").is_err());
/// # Ok::<(), gregor_serde::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StringDecoder {
    _priv: (),
}

impl StringDecoder {
    /// A UTF-8 decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder for the given [`SERIALIZER_ENCODING`] (default
    /// [`DEFAULT_SERIALIZER_ENCODING`]); only UTF-8, named `UTF8` or `UTF-8` (any case), is
    /// supported.
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedEncoding`] for any other encoding.
    pub fn with_encoding(encoding: &str) -> Result<Self> {
        check_encoding(encoding)?;
        Ok(Self::new())
    }
}

fn utf8_error(len: usize, source: std::str::Utf8Error) -> Error {
    Error::InvalidUtf8 { len, valid_up_to: source.valid_up_to(), source }
}

impl Decoder<String> for StringDecoder {
    fn decode(&self, bytes: &[u8]) -> Result<String> {
        std::str::from_utf8(bytes).map(str::to_owned).map_err(|e| utf8_error(bytes.len(), e))
    }

    /// Reuses the buffer when `bytes` holds the only reference to it.
    fn decode_bytes(&self, bytes: Bytes) -> Result<String> {
        let len = bytes.len();
        String::from_utf8(Vec::from(bytes)).map_err(|e| utf8_error(len, e.utf8_error()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let enc = StringEncoder::new();
        let dec = StringDecoder::new();
        for s in ["", "plain ascii", "héllo wörld", "日本語のテキスト", "emoji 🦀 and \u{0}nul", "\u{10FFFF}"]
        {
            let bytes = Encoder::<str>::encode(&enc, s).unwrap();
            assert_eq!(&bytes[..], s.as_bytes());
            assert_eq!(Encoder::<String>::encode(&enc, &s.to_owned()).unwrap(), bytes);
            assert_eq!(dec.decode(&bytes).unwrap(), s);
            assert_eq!(dec.decode_bytes(bytes).unwrap(), s);
        }
    }

    #[test]
    fn exact_bytes_of_non_ascii() {
        let bytes = Encoder::<str>::encode(&StringEncoder::new(), "é€🦀").unwrap();
        // é = C3 A9, € = E2 82 AC, 🦀 = F0 9F A6 80
        assert_eq!(&bytes[..], [0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0xA6, 0x80]);
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let dec = StringDecoder::new();
        // a lone continuation byte, a truncated 3-byte sequence, an overlong encoding, a surrogate
        let cases: [(&[u8], usize); 4] = [(b"ok\x80", 2), (b"abc\xE2\x82", 3), (b"\xC0\xAF", 0), (b"x\xED\xA0\x80", 1)];
        for (bytes, valid_up_to) in cases {
            for err in [dec.decode(bytes).unwrap_err(), dec.decode_bytes(Bytes::copy_from_slice(bytes)).unwrap_err()] {
                match &err {
                    Error::InvalidUtf8 { len, valid_up_to: v, .. } => {
                        assert_eq!(*len, bytes.len());
                        assert_eq!(*v, valid_up_to);
                    }
                    other => panic!("unexpected {other:?}"),
                }
                assert_eq!(
                    err.to_string(),
                    format!("message of {} bytes is not valid UTF-8 (valid up to byte {valid_up_to})", bytes.len())
                );
                assert!(std::error::Error::source(&err).is_some());
            }
        }
    }

    #[test]
    fn encoding_names() {
        for ok in ["UTF8", "UTF-8", "utf8", "utf-8", DEFAULT_SERIALIZER_ENCODING] {
            assert!(StringEncoder::with_encoding(ok).is_ok(), "{ok}");
            assert!(StringDecoder::with_encoding(ok).is_ok(), "{ok}");
        }
        for bad in ["ISO-8859-1", "UTF-16", "latin1", "", "UTF 8"] {
            let err = StringEncoder::with_encoding(bad).unwrap_err();
            assert!(matches!(&err, Error::UnsupportedEncoding { encoding } if encoding == bad));
            assert_eq!(
                err.to_string(),
                format!("unsupported serializer.encoding {bad:?}: only UTF8 (also spelled UTF-8) is supported")
            );
            assert!(StringDecoder::with_encoding(bad).is_err());
        }
    }
}

//! Kafka's 128-bit `uuid` type (topic ids since Kafka 2.8, KIP-516).

use std::fmt;

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::{Ctx, Wire};
use crate::error::{Error, Result};

/// A topic id or other Kafka UUID: 16 bytes, shown as Kafka shows it (22 characters of URL-safe
/// base64 without padding, e.g. `IdX_4VjbT4ehRsUVr22m8g`). The zero id (`AAAAAAAAAAAAAAAAAAAAAA`)
/// means "none" in requests that name topics by name.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Uuid(pub [u8; 16]);

impl Uuid {
    /// The zero id.
    pub const ZERO: Uuid = Uuid([0; 16]);

    /// True for the zero id.
    pub fn is_zero(&self) -> bool {
        *self == Uuid::ZERO
    }

    /// Parses Kafka's 22-character base64url form.
    pub fn parse(s: &str) -> Option<Uuid> {
        if s.len() != 22 {
            return None;
        }
        // 22 characters carry 132 bits: 128 of the id, then 4 padding bits that must be zero
        let mut id = [0u8; 16];
        let (mut acc, mut held, mut at) = (0u32, 0u32, 0usize);
        for c in s.bytes() {
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'-' => 62,
                b'_' => 63,
                _ => return None,
            };
            acc = (acc << 6) | u32::from(v);
            held += 6;
            if held >= 8 && at < 16 {
                held -= 8;
                id[at] = (acc >> held) as u8;
                at += 1;
                acc &= (1 << held) - 1;
            }
        }
        (acc == 0).then_some(Uuid(id))
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = [0u8; 22];
        let (mut acc, mut held, mut at) = (0u32, 0u32, 0usize);
        for byte in self.0 {
            acc = (acc << 8) | u32::from(byte);
            held += 8;
            while held >= 6 {
                held -= 6;
                out[at] = ALPHABET[((acc >> held) & 0x3f) as usize];
                at += 1;
            }
            acc &= (1 << held) - 1;
        }
        // 128 = 21 * 6 + 2: the last character holds 2 bits and 4 zero bits of padding
        out[at] = ALPHABET[((acc << (6 - held)) & 0x3f) as usize];
        f.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({self})")
    }
}

impl Wire for Uuid {
    const MIN_SIZE: usize = 16;

    fn put(&self, _ctx: Ctx, _field: &'static str, buf: &mut BytesMut) -> Result<()> {
        buf.put_slice(&self.0);
        Ok(())
    }

    fn get(_ctx: Ctx, field: &'static str, buf: &mut Bytes) -> Result<Self> {
        if buf.remaining() < 16 {
            return Err(Error::Truncated { field, needed: 16, remaining: buf.remaining() });
        }
        let mut id = [0u8; 16];
        buf.copy_to_slice(&mut id);
        Ok(Uuid(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_string_form_round_trips() {
        assert_eq!(Uuid::ZERO.to_string(), "AAAAAAAAAAAAAAAAAAAAAA");
        // a topic id from the Kafka 3.7.0 fixtures
        let id = Uuid::parse("IdX_4VjbT4ehRsUVr22m8g").unwrap();
        assert_eq!(id.to_string(), "IdX_4VjbT4ehRsUVr22m8g");
        assert_eq!(id.0[0], 0x21);
        assert_eq!(Uuid::parse("IdX_4VjbT4ehRsUVr22m8h"), None, "non-zero padding bits");
        assert_eq!(Uuid::parse("short"), None);
        assert_eq!(Uuid::parse("IdX_4VjbT4ehRsUVr22m8+"), None);
    }
}

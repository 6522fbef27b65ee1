//! One message as a test compares it: where it is and what it holds, raw.

use std::fmt;

/// One message as a client read it (or as a delivery result placed it): partition, offset,
/// and the raw key and value (`None`: null). Its `Debug` is one short line (`2@17 key="k"
/// value="v"`, long values cut at 40 bytes), so a failed comparison of thousands stays
/// readable.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MessageAt {
    /// The partition.
    pub partition: i32,
    /// The offset in the partition.
    pub offset: i64,
    /// The key; `None` for a null key (distinct from an empty one).
    pub key: Option<Vec<u8>>,
    /// The value; `None` for a null value.
    pub value: Option<Vec<u8>>,
}

impl fmt::Debug for MessageAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |b: &Option<Vec<u8>>| match b {
            None => "null".to_owned(),
            Some(b) if b.len() > 40 => format!("{:?}..({} bytes)", String::from_utf8_lossy(&b[..40]), b.len()),
            Some(b) => format!("{:?}", String::from_utf8_lossy(b)),
        };
        write!(f, "{}@{} key={} value={}", self.partition, self.offset, show(&self.key), show(&self.value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_one_short_line() {
        let m = |key: Option<&[u8]>, value: Option<&[u8]>| MessageAt {
            partition: 2,
            offset: 17,
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
        };
        assert_eq!(format!("{:?}", m(Some(b"k"), Some(b"v"))), r#"2@17 key="k" value="v""#);
        assert_eq!(format!("{:?}", m(None, Some(b""))), r#"2@17 key=null value="""#);
        let long = format!("{:?}", m(Some(b"\xff"), Some(&[b'x'; 100])));
        assert_eq!(long, format!("2@17 key=\"\u{fffd}\" value=\"{}\"..(100 bytes)", "x".repeat(40)));
    }
}

//! Message v0 and v1 and MessageSet, with compressed wrapper messages.
//!
//! ```text
//! MessageSet  = [offset int64 | size int32 | Message]...      (no count; the enclosing field
//!                                                              gives the byte length)
//! Message v0  = crc uint32 | magic int8 = 0 | attributes int8 | key bytes | value bytes
//!               crc = CRC-32 (IEEE) of magic..end of value; codec = attributes & 0x07
//! Message v1  = crc uint32 | magic int8 = 1 | attributes int8 | timestamp int64 | key | value
//!               (Kafka 0.10, KIP-32); attribute bit 3 = timestamp type (1 = LogAppendTime)
//! wrapper     = a Message whose codec is gzip/snappy/lz4 and whose value is a compressed
//!               inner MessageSet; its offset is the LAST inner offset. In a v0 wrapper the
//!               broker writes absolute inner offsets; in a v1 wrapper they are relative
//!               (0, 1, 2...: absolute = wrapper offset - last inner offset + inner offset,
//!               KIP-31), and a LogAppendTime wrapper's timestamp is every inner message's
//! ```
//!
//! Which magic a reader takes: [`Message`], [`MessageView`], [`MessageSet::entries`] and
//! [`MessageSet::decode`] are the Kafka 0.8.2 readers and take magic 0 only (anything else is
//! [`Error::UnsupportedMagic`]: their callers speak 0.8.2); [`MessageV1`] is magic 1 only. A
//! reader of a fetched blob of any magic (0, 1 or RecordBatch v2) is
//! [`crate::record::Batches`], where `UnsupportedMagic` means magic above 2.
//!
//! A [`MessageSet`] keeps the bytes as they came off the wire, so a decoded frame re-encodes
//! to exactly the same bytes and a consumer pays for parsing only when it reads. Reading is in
//! two levels: [`MessageSet::entries`] walks the top-level entries (wrappers stay compressed)
//! and [`MessageSet::decode`] expands wrappers, verifies every CRC, drops messages below a
//! requested offset and reports a partial trailing message or a message too large for the
//! fetch.

use std::fmt;
use std::sync::{Arc, OnceLock};

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::compression::{self, Compression};
use crate::error::{Error, MessageLocation, Result};
use crate::wire;

/// The only message format Kafka 0.8.2 knows.
pub const MAGIC_V0: i8 = 0;
/// The message format of Kafka 0.10 (a timestamp after the attributes).
pub const MAGIC_V1: i8 = 1;
/// Bytes a Message v0 takes besides its key and value: crc, magic, attributes, two lengths.
pub const MESSAGE_V0_OVERHEAD: usize = 4 + 1 + 1 + 4 + 4;
/// Bytes a Message v1 takes besides its key and value: v0's and the timestamp.
pub const MESSAGE_V1_OVERHEAD: usize = MESSAGE_V0_OVERHEAD + 8;
/// Attribute bit 3 of a message v1: the timestamp is the broker's (LogAppendTime).
pub const TIMESTAMP_TYPE_BIT: i8 = 0x08;

/// How a record's timestamp was set: attribute bit 3 of a RecordBatch v2 or a message v1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TimestampType {
    /// A message v0: no timestamp (the record's timestamp reads -1).
    NoTimestamp,
    /// Set by the producer (bit 3 clear).
    #[default]
    CreateTime,
    /// Set by the broker when it appended the batch (bit 3 set); every record of the batch
    /// carries the batch's max timestamp.
    LogAppendTime,
}

impl TimestampType {
    /// The type bit 3 of `attributes` names (magic 1 and 2).
    pub fn from_attributes(attributes: i16) -> TimestampType {
        if attributes & i16::from(TIMESTAMP_TYPE_BIT) != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Kafka's name: `NoTimestampType`, `CreateTime` or `LogAppendTime`.
    pub const fn name(self) -> &'static str {
        match self {
            TimestampType::NoTimestamp => "NoTimestampType",
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        }
    }
}

impl fmt::Display for TimestampType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}
/// Bytes of the `offset int64 | size int32` header before each message of a set.
pub const ENTRY_HEADER_SIZE: usize = 8 + 4;
/// Default bound on the bytes decompressed while decoding one message set (zip-bomb guard).
pub const DEFAULT_MAX_DECOMPRESSED_BYTES: usize = 256 * 1024 * 1024;

/// A Kafka message (format v0). For a compressed wrapper, `value` holds the compressed inner
/// MessageSet.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Message {
    /// Attributes byte: the low 3 bits are the codec (see [`Message::compression`]), the others
    /// are unused in v0 and kept as read.
    pub attributes: i8,
    /// The key (`None` = null, which Kafka's partitioners treat as "no key").
    pub key: Option<Bytes>,
    /// The value (`None` = null, a delete marker in compacted topics).
    pub value: Option<Bytes>,
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Message");
        if self.attributes != 0 {
            d.field("attributes", &self.attributes);
        }
        d.field("key", &self.key.as_deref().map(ShowBytes))
            .field("value", &self.value.as_deref().map(ShowBytes))
            .finish()
    }
}

/// Shows bytes as a string when they are printable, as hex otherwise, cut after 64 bytes.
struct ShowBytes<'a>(&'a [u8]);

impl fmt::Debug for ShowBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = &self.0[..self.0.len().min(64)];
        let more = if shown.len() < self.0.len() { format!("..({} bytes)", self.0.len()) } else { String::new() };
        match std::str::from_utf8(shown) {
            Ok(s) if s.chars().all(|c| !c.is_control()) => write!(f, "{s:?}{more}"),
            _ => {
                write!(f, "0x")?;
                shown.iter().try_for_each(|b| write!(f, "{b:02x}"))?;
                write!(f, "{more}")
            }
        }
    }
}

impl Message {
    /// An uncompressed message.
    pub fn new(key: Option<Bytes>, value: Option<Bytes>) -> Message {
        Message { attributes: 0, key, value }
    }

    /// The codec named by the attributes.
    ///
    /// # Errors
    ///
    /// [`crate::compression::CompressionError::UnknownCodec`] for bits 4 to 7.
    pub fn compression(&self) -> Result<Compression, compression::CompressionError> {
        Compression::from_attributes(self.attributes)
    }

    /// True when the codec bits are not 0: the value is a compressed MessageSet.
    pub fn is_wrapper(&self) -> bool {
        self.attributes & Compression::ATTRIBUTE_MASK != 0
    }

    /// The key's and the value's lengths as the wire writes them (-1: null).
    ///
    /// # Errors
    ///
    /// [`Error::TooLong`] for a key or value over `i32::MAX` bytes.
    fn field_lengths(&self) -> Result<(i32, i32)> {
        let nullable_len = |field, b: Option<&Bytes>| b.map_or(Ok(-1), |b| wire::len_i32(field, b.len()));
        Ok((nullable_len("key", self.key.as_ref())?, nullable_len("value", self.value.as_ref())?))
    }

    /// [`Message::encoded_len`], once the lengths are known to fit the wire: what a buffer
    /// about to hold the message is sized by (a record over `i32::MAX` bytes fails here, before
    /// its size is reserved).
    fn checked_len(&self) -> Result<usize> {
        self.field_lengths()?;
        Ok(self.encoded_len())
    }

    /// Bytes this message takes on the wire (without the set's offset and size).
    pub fn encoded_len(&self) -> usize {
        MESSAGE_V0_OVERHEAD + self.key.as_ref().map_or(0, Bytes::len) + self.value.as_ref().map_or(0, Bytes::len)
    }

    /// Appends the message, computing its CRC.
    ///
    /// # Errors
    ///
    /// [`Error::TooLong`] for a key or value over `i32::MAX` bytes.
    pub fn encode(&self, buf: &mut BytesMut) -> Result<()> {
        self.encode_crc(buf, true)
    }

    /// Appends the message with its CRC field left 0: for a producer that sends it as a
    /// RecordBatch v2 record (whose batch has a CRC-32C of its own and no per-record CRC), and
    /// fills the CRC in ([`fill_crc`]) only where the message goes out as a Message v0. Every
    /// reader that checks CRCs rejects the message until then.
    ///
    /// # Errors
    ///
    /// [`Error::TooLong`] for a key or value over `i32::MAX` bytes.
    pub fn encode_without_crc(&self, buf: &mut BytesMut) -> Result<()> {
        self.encode_crc(buf, false)
    }

    /// [`Message::encode`], computing the CRC when `crc`.
    fn encode_crc(&self, buf: &mut BytesMut, crc: bool) -> Result<()> {
        let (key, value) = (self.key.as_deref(), self.value.as_deref());
        // both lengths checked before anything is written: `buf` is left as it was on error
        let (key_len, value_len) = self.field_lengths()?;
        // one room check and a few copies (a message is small, and its fields' puts one by
        // one cost more than the copying)
        buf.reserve(self.encoded_len());
        let crc_at = buf.len();
        let mut head = [0u8; 10];
        head[4] = MAGIC_V0 as u8;
        head[5] = self.attributes as u8;
        head[6..].copy_from_slice(&key_len.to_be_bytes());
        buf.extend_from_slice(&head);
        if let Some(key) = key {
            buf.extend_from_slice(key);
        }
        buf.extend_from_slice(&value_len.to_be_bytes());
        if let Some(value) = value {
            buf.extend_from_slice(value);
        }
        if crc {
            fill_crc(&mut buf[crc_at..]);
        }
        Ok(())
    }

    /// Reads a message that fills `bytes` exactly, verifying magic and CRC.
    ///
    /// # Errors
    ///
    /// [`Error::Crc`], [`Error::UnsupportedMagic`], [`Error::MalformedMessage`].
    pub fn decode(mut bytes: Bytes, location: impl FnOnce() -> MessageLocation) -> Result<Message> {
        // the same checks as `MessageView::parse` (a test holds them to it), on the handle
        if bytes.len() < MESSAGE_V0_OVERHEAD {
            return Err(Error::MalformedMessage {
                location: location(),
                reason: format!("{} bytes cannot hold a message (at least {MESSAGE_V0_OVERHEAD})", bytes.len()),
            });
        }
        let stored = bytes.get_u32();
        let computed = crc32fast::hash(&bytes);
        let magic = bytes.get_i8();
        if magic != MAGIC_V0 {
            return Err(Error::UnsupportedMagic { location: location(), magic });
        }
        if stored != computed {
            return Err(Error::Crc { location: location(), stored, computed });
        }
        let attributes = bytes.get_i8();
        let fields = (|| {
            Ok::<_, Error>((
                wire::get_nullable_bytes(&mut bytes, "key")?,
                wire::get_nullable_bytes(&mut bytes, "value")?,
            ))
        })();
        match fields {
            Ok((key, value)) if bytes.is_empty() => Ok(Message { attributes, key, value }),
            Ok(_) => Err(Error::MalformedMessage {
                location: location(),
                reason: format!("{} bytes left after the value", bytes.len()),
            }),
            Err(e) => Err(Error::MalformedMessage { location: location(), reason: e.to_string() }),
        }
    }
}

/// A message read in place: its fields borrow the bytes it was read from. The same checks as
/// [`Message::decode`], without a handle on the bytes or an allocation (a broker validating a
/// produced set, a reader that only looks). `decode` keeps its own copy of the checks: built
/// on this one (slicing the handle afterwards) it decoded an uncompressed set of 1,000
/// messages 10-30 µs slower.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageView<'a> {
    /// Bits 0-2: the codec; the rest 0 in 0.8.
    pub attributes: i8,
    /// The key; `None` is a null key.
    pub key: Option<&'a [u8]>,
    /// The value; `None` is a null value.
    pub value: Option<&'a [u8]>,
}

impl<'a> MessageView<'a> {
    /// Reads a message that fills `bytes` exactly, verifying magic and CRC.
    ///
    /// # Errors
    ///
    /// [`Error::Crc`], [`Error::UnsupportedMagic`], [`Error::MalformedMessage`].
    pub fn parse(bytes: &'a [u8], location: impl FnOnce() -> MessageLocation) -> Result<MessageView<'a>> {
        let head = LegacyHead::read(bytes, location, &[MAGIC_V0], true)?;
        let slice = |r: Option<(usize, usize)>| r.map(|(from, to)| &bytes[from..to]);
        Ok(MessageView { attributes: head.attributes, key: slice(head.key), value: slice(head.value) })
    }

    /// The codec named by the attributes.
    ///
    /// # Errors
    ///
    /// [`crate::compression::CompressionError::UnknownCodec`] for bits 4 to 7.
    pub fn compression(&self) -> Result<Compression, compression::CompressionError> {
        Compression::from_attributes(self.attributes)
    }

    /// True when the codec bits are not 0: the value is a compressed MessageSet.
    pub fn is_wrapper(&self) -> bool {
        self.attributes & Compression::ATTRIBUTE_MASK != 0
    }
}

/// A message with its offset in the partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageAndOffset {
    /// The offset (for a wrapper: its last inner offset).
    pub offset: i64,
    /// The message.
    pub message: Message,
}

impl MessageAndOffset {
    /// A message at an offset.
    pub fn new(offset: i64, message: Message) -> MessageAndOffset {
        MessageAndOffset { offset, message }
    }
}

/// A MessageSet: the bytes as they travel on the wire (see the module docs).
///
/// Usually one buffer; a set a producer laid out in several (its entries where they were
/// queued, [`MessageSet::from_parts`]) keeps its parts, each written to the wire as it is
/// ([`MessageSet::parts`]), and is joined into one buffer only when something asks for its
/// bytes whole ([`MessageSet::as_bytes`]).
#[derive(Clone, Default)]
pub struct MessageSet {
    /// The set's bytes when it is one buffer (`parts` is `None`); empty otherwise.
    bytes: Bytes,
    parts: Option<Arc<Parts>>,
}

/// The buffers of a set in several parts.
#[derive(Debug)]
struct Parts {
    list: Box<[Bytes]>,
    len: usize,
    /// The parts joined, once asked for.
    joined: OnceLock<Bytes>,
}

impl PartialEq for MessageSet {
    fn eq(&self, other: &MessageSet) -> bool {
        if self.parts.is_none() && other.parts.is_none() {
            return self.bytes == other.bytes;
        }
        self.len() == other.len()
            && self.parts().iter().flat_map(|p| p.iter()).eq(other.parts().iter().flat_map(|p| p.iter()))
    }
}

impl Eq for MessageSet {}

impl fmt::Debug for MessageSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        let mut entries = self.entries();
        for entry in entries.by_ref() {
            match entry {
                Ok(e) => list.entry(&e),
                Err(err) => list.entry(&format_args!("<{err}>")),
            };
        }
        if entries.partial_trailing_bytes() > 0 {
            list.entry(&format_args!("<partial trailing message: {} bytes>", entries.partial_trailing_bytes()));
        }
        list.finish()
    }
}

/// Where and how to decode a message set (see [`MessageSet::decode`]).
#[derive(Debug, Clone)]
pub struct DecodeOptions {
    /// Topic, for errors.
    pub topic: Option<String>,
    /// Partition, for errors.
    pub partition: Option<i32>,
    /// Messages below this offset are dropped (a fetch from the middle of a compressed wrapper
    /// gets the whole wrapper back). The fetch offset; 0 keeps everything.
    pub min_offset: i64,
    /// Bound on all bytes decompressed while decoding this set
    /// ([`DEFAULT_MAX_DECOMPRESSED_BYTES`] by default).
    pub max_decompressed_bytes: usize,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            topic: None,
            partition: None,
            min_offset: 0,
            max_decompressed_bytes: DEFAULT_MAX_DECOMPRESSED_BYTES,
        }
    }
}

impl DecodeOptions {
    /// Options for the set fetched from `topic`/`partition` at `fetch_offset`.
    pub fn fetched(topic: &str, partition: i32, fetch_offset: i64) -> DecodeOptions {
        DecodeOptions {
            topic: Some(topic.to_owned()),
            partition: Some(partition),
            min_offset: fetch_offset,
            ..DecodeOptions::default()
        }
    }

    pub(crate) fn location(&self, offset: i64) -> MessageLocation {
        MessageLocation { topic: self.topic.clone(), partition: self.partition, offset }
    }
}

/// The messages of a decoded set: [`MessageAndOffset`]s ([`MessageSet::decode`]) or
/// [`Record`](crate::record::Record)s ([`MessageSet::decode_records`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedMessages<T = MessageAndOffset> {
    /// Every message at or above the requested offset, wrappers expanded, in log order.
    pub messages: Vec<T>,
    /// Messages dropped because their offset was below the requested one.
    pub skipped: usize,
    /// Bytes of a partial message at the end of the set (normal in a fetch response: the
    /// broker cuts the set at the fetch size). Dropped.
    pub partial_trailing_bytes: usize,
}

impl<T> Default for DecodedMessages<T> {
    fn default() -> Self {
        DecodedMessages { messages: Vec::new(), skipped: 0, partial_trailing_bytes: 0 }
    }
}

impl DecodedMessages {
    /// The offset to fetch next: one past the last message, or `None` when no message was read.
    pub fn next_offset(&self) -> Option<i64> {
        self.messages.last().map(|m| m.offset + 1)
    }
}

impl MessageSet {
    /// An empty set.
    pub fn new() -> MessageSet {
        MessageSet::default()
    }

    /// A set over bytes as read from the wire. Nothing is checked until it is read.
    pub fn from_bytes(bytes: Bytes) -> MessageSet {
        MessageSet { bytes, parts: None }
    }

    /// A set whose bytes are `parts` one after the other, kept where they are (not copied):
    /// for a producer whose queued entries lie in several buffers. To be compressed
    /// ([`MessageSet::compress`]), each part should be whole entries (offset, size, message);
    /// read otherwise, the parts are joined, so an entry may lie across them (a compressed set
    /// a producer keeps in its blocks). Nothing is checked until the set is read. Empty parts
    /// are dropped.
    pub fn from_parts(parts: impl IntoIterator<Item = Bytes>) -> MessageSet {
        let mut list: Vec<Bytes> = parts.into_iter().filter(|p| !p.is_empty()).collect();
        match list.len() {
            0 => MessageSet::new(),
            1 => MessageSet::from_bytes(list.pop().expect("one part")),
            _ => {
                let len = list.iter().map(Bytes::len).sum();
                let list = list.into_boxed_slice();
                MessageSet { bytes: Bytes::new(), parts: Some(Arc::new(Parts { list, len, joined: OnceLock::new() })) }
            }
        }
    }

    /// The buffers the set's bytes are in, in order: one for a set made from one buffer, none
    /// for an empty one made from parts.
    pub fn parts(&self) -> &[Bytes] {
        match &self.parts {
            None => std::slice::from_ref(&self.bytes),
            Some(parts) => &parts.list,
        }
    }

    /// The set's bytes. A set in several parts is joined into one buffer the first time (a
    /// copy the set then keeps: prefer [`MessageSet::parts`] where the bytes need not be one).
    pub fn as_bytes(&self) -> &Bytes {
        match &self.parts {
            None => &self.bytes,
            Some(parts) => parts.joined.get_or_init(|| {
                let mut joined = BytesMut::with_capacity(parts.len);
                for part in parts.list.iter() {
                    joined.extend_from_slice(part);
                }
                joined.freeze()
            }),
        }
    }

    /// The set's bytes, by value (see [`MessageSet::as_bytes`]).
    pub fn into_bytes(self) -> Bytes {
        match self.parts {
            None => self.bytes,
            Some(_) => self.as_bytes().clone(),
        }
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.parts.as_ref().map_or(self.bytes.len(), |parts| parts.len)
    }

    /// True for a set of no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Encodes messages at the given offsets, uncompressed at this level (a wrapper made with
    /// [`MessageSet::wrap`] is just another entry).
    ///
    /// # Errors
    ///
    /// [`Error::TooLong`] for a field or an entry too long for its length prefix.
    pub fn encode(entries: &[MessageAndOffset]) -> Result<MessageSet> {
        let size =
            entries.iter().map(|e| e.message.checked_len().map(|n| ENTRY_HEADER_SIZE + n)).sum::<Result<usize>>()?;
        let mut buf = BytesMut::with_capacity(size);
        encode_entries(entries, &mut buf)?;
        Ok(MessageSet::from_bytes(buf.freeze()))
    }

    /// Builds the wrapper message that holds `inner`, compressed with `codec`: its offset is the
    /// last inner offset, its key null, as Kafka's producers and brokers write it.
    ///
    /// # Errors
    ///
    /// [`Error::Compression`] when compressing fails; [`Error::TooLong`];
    /// [`Error::MalformedMessage`] when `inner` is empty or `codec` is [`Compression::None`].
    pub fn wrap(inner: &[MessageAndOffset], codec: Compression) -> Result<MessageAndOffset> {
        MessageSet::wrap_with_gzip_level(inner, codec, 6)
    }

    /// As [`MessageSet::wrap`], compressing gzip at deflate `gzip_level` instead of Java's
    /// default 6 (see [`compression::gzip::compress_level`]); other codecs ignore it.
    ///
    /// # Errors
    ///
    /// As [`MessageSet::wrap`].
    pub fn wrap_with_gzip_level(
        inner: &[MessageAndOffset],
        codec: Compression,
        gzip_level: u32,
    ) -> Result<MessageAndOffset> {
        let last = inner.last().map(|m| m.offset).ok_or_else(|| Error::MalformedMessage {
            location: MessageLocation::default(),
            reason: "a compressed wrapper needs at least one inner message".to_owned(),
        })?;
        let location = || MessageLocation { offset: last, ..MessageLocation::default() };
        if codec == Compression::None {
            return Err(Error::MalformedMessage {
                location: location(),
                reason: "a wrapper needs a codec other than none".to_owned(),
            });
        }
        let size =
            inner.iter().map(|e| e.message.checked_len().map(|n| ENTRY_HEADER_SIZE + n)).sum::<Result<usize>>()?;
        let mut raw = BytesMut::with_capacity(size);
        encode_entries(inner, &mut raw)?;
        let mut compressed = Vec::with_capacity(raw.len() / 2 + 64);
        let compressed_now = match codec {
            Compression::Gzip => compression::gzip::compress_level(&raw, gzip_level, &mut compressed),
            _ => compression::compress_for_magic(codec, MAGIC_V0, &raw, &mut compressed),
        };
        compressed_now.map_err(|source| Error::Compression { location: location(), codec, source })?;
        Ok(MessageAndOffset::new(
            last,
            Message { attributes: codec.attribute_bits(), key: None, value: Some(compressed.into()) },
        ))
    }

    /// A set as Kafka's producers send it: messages at offsets 0, 1, 2... (the broker assigns
    /// the real ones); with a codec, one wrapper at offset n-1 holding them all.
    ///
    /// # Errors
    ///
    /// As [`MessageSet::encode`] and [`MessageSet::wrap`].
    pub fn from_messages(messages: impl IntoIterator<Item = Message>, codec: Compression) -> Result<MessageSet> {
        let messages: Vec<Message> = messages.into_iter().collect();
        MessageSet::from_message_refs(&messages, codec)
    }

    /// [`MessageSet::from_messages`] over borrowed messages: the same bytes, written straight
    /// from the caller's messages (no message, key or value is cloned; one buffer for the set,
    /// and one more for the compressed payload with a codec).
    ///
    /// # Errors
    ///
    /// As [`MessageSet::from_messages`].
    pub fn from_message_refs<'a, I>(messages: I, codec: Compression) -> Result<MessageSet>
    where
        I: IntoIterator<Item = &'a Message>,
        I::IntoIter: Clone,
    {
        let messages = messages.into_iter();
        let size = messages.clone().map(|m| m.checked_len().map(|n| ENTRY_HEADER_SIZE + n)).sum::<Result<usize>>()?;
        let mut raw = BytesMut::with_capacity(size);
        let mut count: i64 = 0;
        for message in messages {
            encode_entry(count, message, &mut raw)?;
            count += 1;
        }
        MessageSet::finish(raw, count, codec)
    }

    /// [`MessageSet::from_message_refs`] over messages encoded beforehand: the same bytes, with
    /// no CRC computed here (each [`EncodedMessage`] carries its own); entries are copied
    /// behind their offset and size.
    ///
    /// # Errors
    ///
    /// [`Error::Compression`] when the codec fails; [`Error::TooLong`] for a message over
    /// `i32::MAX` bytes.
    pub fn from_encoded<'a, I>(messages: I, codec: Compression) -> Result<MessageSet>
    where
        I: IntoIterator<Item = &'a EncodedMessage>,
        I::IntoIter: Clone,
    {
        let messages = messages.into_iter();
        let size = messages.clone().map(|m| ENTRY_HEADER_SIZE + m.len()).sum();
        let mut raw = BytesMut::with_capacity(size);
        let mut count: i64 = 0;
        for message in messages {
            raw.put_i64(count);
            let len = i32::try_from(message.len()).map_err(|_| Error::TooLong {
                field: "message_size",
                length: message.len(),
                max: i32::MAX as usize,
            })?;
            raw.put_i32(len);
            raw.extend_from_slice(message.as_bytes());
            count += 1;
        }
        MessageSet::finish(raw, count, codec)
    }

    /// The set of `count` uncompressed entries in `raw` (offsets 0..count), wrapped and
    /// compressed with `codec`.
    fn finish(raw: BytesMut, count: i64, codec: Compression) -> Result<MessageSet> {
        if codec == Compression::None || count == 0 {
            return Ok(MessageSet::from_bytes(raw.freeze()));
        }
        MessageSet::wrap_raw(&[&raw], count - 1, codec, MessageSet::copied)
    }

    /// This set of uncompressed entries as [`MessageSet::from_encoded`] makes it with `codec`:
    /// one wrapper, at the offset of the last entry, holding the entries compressed (the set
    /// itself when `codec` is none or the set is empty). For a caller that lays the entries
    /// out in one place and compresses them in another (on another thread).
    ///
    /// # Errors
    ///
    /// [`Error::MalformedMessage`] when the set ends in part of an entry or holds a negative
    /// size; [`Error::Compression`] when the codec fails.
    pub fn compress(&self, codec: Compression) -> Result<MessageSet> {
        self.compress_with(codec, MessageSet::copied)
    }

    /// A set of its own holding a copy of `bytes` (one allocation of their size): how
    /// [`MessageSet::compress`] keeps what its codec wrote.
    pub fn copied(bytes: &[u8]) -> MessageSet {
        MessageSet::from_bytes(Bytes::copy_from_slice(bytes))
    }

    /// As [`MessageSet::compress`], the compressed set's bytes (written first into this
    /// thread's scratch buffer) handed to `keep`, which copies them where it keeps its sets and
    /// returns them as a set: in one buffer, or in parts ([`MessageSet::from_parts`]; a
    /// compressed set in parts is one entry across them, read joined). For a caller that keeps
    /// its sets' allocations and uses them again.
    ///
    /// # Errors
    ///
    /// As [`MessageSet::compress`].
    pub fn compress_with(&self, codec: Compression, keep: impl FnOnce(&[u8]) -> MessageSet) -> Result<MessageSet> {
        if codec == Compression::None || self.is_empty() {
            return Ok(self.clone());
        }
        // the offset of the last entry, every entry checked whole (each part holds whole ones)
        let (mut last, mut before) = (0, 0);
        for raw in self.parts() {
            let (part_last, pos) = whole_entries(raw);
            last = part_last.unwrap_or(last);
            if pos < raw.len() {
                return Err(Error::MalformedMessage {
                    location: MessageLocation { offset: last, ..MessageLocation::default() },
                    reason: format!(
                        "the entry at byte {} of {} is cut short or has a negative size",
                        before + pos,
                        self.len()
                    ),
                });
            }
            before += raw.len();
        }
        // the codec reads the parts where they are (not joined first)
        let parts: Vec<&[u8]> = self.parts().iter().map(|p| &p[..]).collect();
        MessageSet::wrap_raw(&parts, last, codec, keep)
    }

    /// `raw` (uncompressed entries, in parts one after the other) compressed with `codec` into
    /// one wrapper at `last`.
    ///
    /// The codec writes into this thread's scratch buffer straight after room for the
    /// wrapper's entry header and message header, which are filled in once its length is
    /// known; the set is then one copy of exactly its size, made by `keep`. Compressing
    /// into a buffer of its own (grown as the codec wrote) and encoding the wrapper from it took
    /// three allocations a batch or more; cutting that buffer to size instead (a shrinking
    /// `realloc`) cost system CPU (glibc giving the tail back).
    fn wrap_raw(
        raw: &[&[u8]],
        last: i64,
        codec: Compression,
        keep: impl FnOnce(&[u8]) -> MessageSet,
    ) -> Result<MessageSet> {
        const HEAD: usize = ENTRY_HEADER_SIZE + MESSAGE_V0_OVERHEAD;
        compression::with_scratch(|out| {
            out.resize(HEAD, 0);
            compression::compress_parts_for_magic(codec, MAGIC_V0, raw, out).map_err(|source| Error::Compression {
                location: MessageLocation { offset: last, ..MessageLocation::default() },
                codec,
                source,
            })?;
            let value_len = wire::len_i32("value", out.len() - HEAD)?;
            let size = wire::len_i32("message", out.len() - ENTRY_HEADER_SIZE)?;
            out[..8].copy_from_slice(&last.to_be_bytes());
            out[8..12].copy_from_slice(&size.to_be_bytes());
            out[16] = MAGIC_V0 as u8;
            out[17] = codec.attribute_bits() as u8;
            out[18..22].copy_from_slice(&(-1i32).to_be_bytes());
            out[22..26].copy_from_slice(&value_len.to_be_bytes());
            fill_crc(&mut out[12..]);
            Ok(keep(out))
        })
    }

    /// Walks the top-level entries: wrappers are returned as they are (compressed), CRCs and
    /// magic are verified. The walk ends at the end of the set, at a partial trailing entry
    /// (see [`Entries::partial_trailing_bytes`]) or after the first error.
    pub fn entries(&self) -> Entries {
        Entries { rest: self.as_bytes().clone(), partial: 0, failed: false, whole: 0, topic: None, partition: None }
    }

    /// Decodes every message: wrappers are decompressed and expanded (their inner offsets are
    /// absolute, as 0.8 brokers write them), messages below `options.min_offset` are dropped,
    /// a partial trailing entry is dropped and counted.
    ///
    /// # Errors
    ///
    /// [`Error::MessageLargerThanFetch`] when the set holds bytes but not one whole entry (the
    /// next message is larger than the fetch size: never a silent empty result);
    /// [`Error::Crc`], [`Error::UnsupportedMagic`], [`Error::MalformedMessage`],
    /// [`Error::UnknownCodec`], [`Error::Compression`] (also when more than
    /// `max_decompressed_bytes` would be decompressed), [`Error::NestedCompression`] — each
    /// with the topic, partition and offset known.
    pub fn decode(&self, options: &DecodeOptions) -> Result<DecodedMessages> {
        self.decode_as(options, 0)
    }

    /// How many messages the set's whole entries say it holds from `min_offset` on, to size
    /// the list they are decoded into: the offsets from `min_offset` to the last whole entry's
    /// (a wrapper carries its last inner message's offset; a compacted log has gaps, so this
    /// may be more than are there). The offsets come from the broker unchecked, so the count
    /// is held to a quarter of the set's bytes.
    pub(crate) fn offsets_spanned(&self, min_offset: i64) -> usize {
        let (last, _) = whole_entries(self.as_bytes());
        let spanned = last.map_or(0, |last| last.saturating_sub(min_offset).saturating_add(1));
        usize::try_from(spanned).unwrap_or(0).min(self.len() / 4)
    }

    /// [`MessageSet::decode`] into another type, each message converted as it is read (see
    /// `MessageSet::decode_records`).
    pub(crate) fn decode_as<T: From<MessageAndOffset>>(
        &self,
        options: &DecodeOptions,
        capacity: usize,
    ) -> Result<DecodedMessages<T>> {
        let mut out = DecodedMessages { messages: Vec::with_capacity(capacity), ..DecodedMessages::default() };
        let mut budget = options.max_decompressed_bytes;
        let mut entries = self.entries_in(options);
        for entry in entries.by_ref() {
            let entry = entry?;
            let codec = entry.message.compression().map_err(|_| Error::UnknownCodec {
                location: options.location(entry.offset),
                bits: entry.message.attributes & 0x07,
            })?;
            if codec == Compression::None {
                push_from(&mut out, entry, options.min_offset);
                continue;
            }
            let compressed = entry.message.value.as_deref().ok_or_else(|| Error::MalformedMessage {
                location: options.location(entry.offset),
                reason: format!("{codec} wrapper has a null value"),
            })?;
            let mut raw = Vec::new();
            compression::decompress(codec, compressed, budget, &mut raw).map_err(|source| Error::Compression {
                location: options.location(entry.offset),
                codec,
                source,
            })?;
            budget -= raw.len();
            let inner_set = MessageSet::from_bytes(raw.into());
            let mut inner = inner_set.entries_in(options);
            for m in inner.by_ref() {
                let m = m?;
                if m.message.is_wrapper() {
                    return Err(Error::NestedCompression { location: options.location(m.offset) });
                }
                push_from(&mut out, m, options.min_offset);
            }
            if inner.partial_trailing_bytes() > 0 {
                return Err(Error::MalformedMessage {
                    location: options.location(entry.offset),
                    reason: format!(
                        "{codec} wrapper's inner set ends in {} bytes of a partial message",
                        inner.partial_trailing_bytes()
                    ),
                });
            }
        }
        out.partial_trailing_bytes = entries.partial_trailing_bytes();
        if entries.whole == 0 && !self.is_empty() {
            let bytes = self.as_bytes();
            let (offset, entry_size) = match bytes.len() {
                n if n >= ENTRY_HEADER_SIZE => {
                    let mut head = bytes.slice(..ENTRY_HEADER_SIZE);
                    (head.get_i64(), Some(ENTRY_HEADER_SIZE + head.get_i32().max(0) as usize))
                }
                _ => (options.min_offset, None),
            };
            return Err(Error::MessageLargerThanFetch {
                location: options.location(offset),
                entry_size,
                fetched_bytes: bytes.len(),
            });
        }
        Ok(out)
    }

    fn entries_in(&self, options: &DecodeOptions) -> Entries {
        Entries { topic: options.topic.clone(), partition: options.partition, ..self.entries() }
    }
}

/// Walks the whole entries at the start of `raw` (offset, size, message) without reading the
/// messages: the last one's offset, and where the walk stopped (`raw.len()` when every entry
/// was whole; else the start of the one cut short or with a negative size).
fn whole_entries(raw: &[u8]) -> (Option<i64>, usize) {
    let (mut last, mut pos) = (None, 0);
    while let Some(head) = raw.get(pos..).and_then(|rest| rest.get(..ENTRY_HEADER_SIZE)) {
        let offset = i64::from_be_bytes(head[..8].try_into().expect("8 bytes"));
        let size = i32::from_be_bytes(head[8..].try_into().expect("4 bytes"));
        let end = usize::try_from(size).ok().and_then(|n| (pos + ENTRY_HEADER_SIZE).checked_add(n));
        let Some(end) = end.filter(|end| *end <= raw.len()) else { break };
        last = Some(offset);
        pos = end;
    }
    (last, pos)
}

fn push_from<T: From<MessageAndOffset>>(out: &mut DecodedMessages<T>, m: MessageAndOffset, min_offset: i64) {
    if m.offset < min_offset {
        out.skipped += 1;
    } else {
        out.messages.push(T::from(m));
    }
}

fn encode_entries(entries: &[MessageAndOffset], buf: &mut BytesMut) -> Result<()> {
    for entry in entries {
        encode_entry(entry.offset, &entry.message, buf)?;
    }
    Ok(())
}

/// A [`Message`] already in its wire form (CRC, magic, attributes, key, value), for a producer
/// that encodes each message once, where it is made, and builds sets of them later
/// ([`MessageSet::from_encoded`]). Only made by encoding a message, so its bytes are always a
/// well-formed message v0.
#[derive(Clone, PartialEq, Eq)]
pub struct EncodedMessage {
    bytes: Bytes,
}

impl fmt::Debug for EncodedMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncodedMessage").field("len", &self.bytes.len()).finish()
    }
}

impl EncodedMessage {
    /// Encodes `message` at the end of `buf` and splits it off: the result shares `buf`'s
    /// allocation (many messages encoded into one buffer cost one allocation), and an empty
    /// `buf` stays empty with the rest of its capacity.
    ///
    /// # Errors
    ///
    /// [`Error::TooLong`] for a key or value over `i32::MAX` bytes (`buf` is left as it was).
    pub fn encode_into(message: &Message, buf: &mut BytesMut) -> Result<EncodedMessage> {
        let at = buf.len();
        if let Err(e) = message.encode(buf) {
            buf.truncate(at);
            return Err(e);
        }
        Ok(EncodedMessage { bytes: split_tail(buf, at) })
    }

    /// Encodes `message` into an allocation of its own, of exactly its size.
    ///
    /// # Errors
    ///
    /// As [`EncodedMessage::encode_into`].
    pub fn encode(message: &Message) -> Result<EncodedMessage> {
        let mut buf = BytesMut::with_capacity(message.checked_len()?);
        message.encode(&mut buf)?;
        Ok(EncodedMessage { bytes: buf.freeze() })
    }

    /// Copies the message to the end of `buf` and splits the copy off, as
    /// [`EncodedMessage::encode_into`] does (no CRC computed again).
    pub fn copy_into(&self, buf: &mut BytesMut) -> EncodedMessage {
        let at = buf.len();
        buf.extend_from_slice(&self.bytes);
        EncodedMessage { bytes: split_tail(buf, at) }
    }

    /// Bytes that [`Message::encode`] wrote, as an encoded message: for a producer that
    /// encodes into a buffer of its own and keeps the bytes in another. The layout is
    /// checked (magic 0; the key and value lengths fill the bytes exactly), the CRC is not
    /// ([`MessageView::parse`] checks it): `None` when `bytes` is not one message v0.
    pub fn from_bytes(bytes: Bytes) -> Option<EncodedMessage> {
        is_one_message(&bytes).then_some(EncodedMessage { bytes })
    }

    /// [`EncodedMessage::from_bytes`] of a copy of `bytes`, at the end of `buf` and split off
    /// (as [`EncodedMessage::copy_into`] does); `buf` is left as it was when `bytes` is not
    /// one message v0.
    pub fn copy_from_slice_into(bytes: &[u8], buf: &mut BytesMut) -> Option<EncodedMessage> {
        if !is_one_message(bytes) {
            return None;
        }
        let at = buf.len();
        buf.extend_from_slice(bytes);
        Some(EncodedMessage { bytes: split_tail(buf, at) })
    }

    /// The key of the message v0 in `bytes` (laid out as [`EncodedMessage::as_bytes`]), read
    /// without a copy; `None` for a null key, or when `bytes` is too short to hold it.
    pub fn key_of(bytes: &[u8]) -> Option<&[u8]> {
        let mut rest = bytes.get(6..)?;
        take_nullable(&mut rest)?
    }

    /// The message v0 in `bytes` (laid out as [`EncodedMessage::as_bytes`]) read in place, as
    /// [`MessageView::parse`] reads it but without checking the CRC: for a producer reading
    /// back what it encoded itself. `None` when `bytes` is not one message v0.
    pub fn view_of(bytes: &[u8]) -> Option<MessageView<'_>> {
        if !is_one_message(bytes) {
            return None;
        }
        let mut rest = &bytes[6..];
        let key = take_nullable(&mut rest)?;
        let value = take_nullable(&mut rest)?;
        Some(MessageView { attributes: bytes[5] as i8, key, value })
    }

    /// The same message in an allocation of its own (so it no longer keeps a shared buffer
    /// alive).
    pub fn detached(&self) -> EncodedMessage {
        EncodedMessage { bytes: Bytes::copy_from_slice(&self.bytes) }
    }

    /// The wire bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Bytes it takes on the wire (without a set's offset and size).
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Always false: a message has at least [`MESSAGE_V0_OVERHEAD`] bytes.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The CRC stored in the message (of its magic, attributes, key and value).
    pub fn crc(&self) -> u32 {
        self.bytes.get(..4).map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The key, read from the bytes (no copy); `None` for a null key.
    pub fn key(&self) -> Option<&[u8]> {
        EncodedMessage::key_of(&self.bytes)
    }

    /// The message again (its key and value share these bytes, no copy; the CRC is not
    /// checked again).
    pub fn to_message(&self) -> Message {
        let attributes = self.bytes.get(5).map_or(0, |a| *a as i8);
        let mut rest = self.bytes.get(6..).unwrap_or_default();
        let key = take_nullable(&mut rest).flatten().map(|k| self.bytes.slice_ref(k));
        let value = take_nullable(&mut rest).flatten().map(|v| self.bytes.slice_ref(v));
        Message { attributes, key, value }
    }
}

/// Writes the CRC of the message v0 or v1 that fills `message` (from its magic on) into its
/// first four bytes: what [`Message::encode_without_crc`] left out. A message shorter than its
/// CRC and magic is left as it is.
pub fn fill_crc(message: &mut [u8]) {
    if message.len() > 4 {
        let crc = crc32fast::hash(&message[4..]);
        message[..4].copy_from_slice(&crc.to_be_bytes());
    }
}

/// True when `bytes` is one message v0 as [`Message::encode`] lays it out: magic 0, and the key
/// and value lengths fill the bytes exactly (the CRC is not checked).
fn is_one_message(bytes: &[u8]) -> bool {
    if bytes.len() < MESSAGE_V0_OVERHEAD || bytes[4] as i8 != MAGIC_V0 {
        return false;
    }
    let mut rest = &bytes[6..];
    take_nullable(&mut rest).is_some() && take_nullable(&mut rest).is_some() && rest.is_empty()
}

/// Splits `buf[at..]` off `buf`; an empty `buf` (`at` 0, the intended use) keeps its spare
/// capacity, earlier bytes stay in `buf` (without it).
fn split_tail(buf: &mut BytesMut, at: usize) -> Bytes {
    if at == 0 {
        return buf.split().freeze();
    }
    let mut before = buf.split();
    let message = before.split_off(at);
    *buf = before;
    message.freeze()
}

/// Reads a nullable `bytes` field off the front of `rest`: `Some(None)` for null, `None` when
/// `rest` is too short.
fn take_nullable<'a>(rest: &mut &'a [u8]) -> Option<Option<&'a [u8]>> {
    let len = i32::from_be_bytes(rest.get(..4)?.try_into().ok()?);
    *rest = &rest[4..];
    if len < 0 {
        return Some(None);
    }
    let field = rest.get(..len as usize)?;
    *rest = &rest[len as usize..];
    Some(Some(field))
}

/// One set entry: offset, size, message.
fn encode_entry(offset: i64, message: &Message, buf: &mut BytesMut) -> Result<()> {
    buf.put_i64(offset);
    let at = wire::begin_size(buf);
    message.encode(buf)?;
    wire::finish_size(buf, at, "message_size")
}

/// Iterator over the top-level entries of a [`MessageSet`] (see [`MessageSet::entries`]).
#[derive(Debug)]
pub struct Entries {
    rest: Bytes,
    partial: usize,
    failed: bool,
    whole: usize,
    topic: Option<String>,
    partition: Option<i32>,
}

impl Entries {
    /// Bytes of the partial entry the set ended with (0 if none, or not reached yet).
    pub fn partial_trailing_bytes(&self) -> usize {
        self.partial
    }

    fn location(&self, offset: i64) -> MessageLocation {
        MessageLocation { topic: self.topic.clone(), partition: self.partition, offset }
    }
}

impl Iterator for Entries {
    type Item = Result<MessageAndOffset>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.is_empty() {
            return None;
        }
        if self.rest.len() < ENTRY_HEADER_SIZE {
            self.partial = self.rest.len();
            self.rest.clear();
            return None;
        }
        let offset = i64::from_be_bytes(self.rest[..8].try_into().expect("8 bytes"));
        let size = i32::from_be_bytes(self.rest[8..12].try_into().expect("4 bytes"));
        if size < 0 {
            self.failed = true;
            return Some(Err(Error::MalformedMessage {
                location: self.location(offset),
                reason: format!("negative message size {size}"),
            }));
        }
        let size = size as usize;
        if self.rest.len() - ENTRY_HEADER_SIZE < size {
            self.partial = self.rest.len();
            self.rest.clear();
            return None;
        }
        self.rest.advance(ENTRY_HEADER_SIZE);
        let bytes = self.rest.split_to(size);
        match Message::decode(bytes, || self.location(offset)) {
            Ok(message) => {
                self.whole += 1;
                Some(Ok(MessageAndOffset { offset, message }))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// A Kafka message of format v1 (magic 1, Kafka 0.10): a [`Message`] with a timestamp. For a
/// compressed wrapper, `value` holds the compressed inner set, whose offsets are relative
/// ([`MessageSet::from_messages_v1`] writes them, [`crate::record::Batches`] reads them).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct MessageV1 {
    /// Attributes: bits 0-2 the codec (0 to 3), bit 3 the timestamp type.
    pub attributes: i8,
    /// Milliseconds since the epoch (-1: none).
    pub timestamp: i64,
    /// The key (`None` = null).
    pub key: Option<Bytes>,
    /// The value (`None` = null).
    pub value: Option<Bytes>,
}

impl fmt::Debug for MessageV1 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("MessageV1");
        if self.attributes != 0 {
            d.field("attributes", &self.attributes);
        }
        d.field("timestamp", &self.timestamp)
            .field("key", &self.key.as_deref().map(ShowBytes))
            .field("value", &self.value.as_deref().map(ShowBytes))
            .finish()
    }
}

impl MessageV1 {
    /// An uncompressed message with a producer's (CreateTime) timestamp.
    pub fn new(timestamp: i64, key: Option<Bytes>, value: Option<Bytes>) -> MessageV1 {
        MessageV1 { attributes: 0, timestamp, key, value }
    }

    /// The codec named by the attributes.
    ///
    /// # Errors
    ///
    /// [`crate::compression::CompressionError::UnknownCodec`] for bits 4 to 7.
    pub fn compression(&self) -> Result<Compression, compression::CompressionError> {
        Compression::from_attributes(self.attributes)
    }

    /// How the timestamp was set (attribute bit 3).
    pub fn timestamp_type(&self) -> TimestampType {
        TimestampType::from_attributes(i16::from(self.attributes))
    }

    /// True when the codec bits are not 0: the value is a compressed MessageSet.
    pub fn is_wrapper(&self) -> bool {
        self.attributes & Compression::ATTRIBUTE_MASK != 0
    }

    /// Bytes this message takes on the wire (without the set's offset and size).
    pub fn encoded_len(&self) -> usize {
        MESSAGE_V1_OVERHEAD + self.key.as_ref().map_or(0, Bytes::len) + self.value.as_ref().map_or(0, Bytes::len)
    }

    /// Appends the message, computing its CRC.
    ///
    /// # Errors
    ///
    /// [`Error::TooLong`] for a key or value over `i32::MAX` bytes (`buf` is left as it was).
    pub fn encode(&self, buf: &mut BytesMut) -> Result<()> {
        let nullable_len = |field, b: Option<&Bytes>| b.map_or(Ok(-1), |b| wire::len_i32(field, b.len()));
        let key_len = nullable_len("key", self.key.as_ref())?;
        let value_len = nullable_len("value", self.value.as_ref())?;
        buf.reserve(self.encoded_len());
        let crc_at = buf.len();
        buf.put_u32(0);
        buf.put_i8(MAGIC_V1);
        buf.put_i8(self.attributes);
        buf.put_i64(self.timestamp);
        buf.put_i32(key_len);
        if let Some(key) = &self.key {
            buf.extend_from_slice(key);
        }
        buf.put_i32(value_len);
        if let Some(value) = &self.value {
            buf.extend_from_slice(value);
        }
        fill_crc(&mut buf[crc_at..]);
        Ok(())
    }

    /// Reads a message v1 that fills `bytes` exactly, verifying magic and CRC.
    ///
    /// # Errors
    ///
    /// [`Error::Crc`], [`Error::UnsupportedMagic`] for any magic but 1,
    /// [`Error::MalformedMessage`].
    pub fn decode(bytes: Bytes, location: impl FnOnce() -> MessageLocation) -> Result<MessageV1> {
        let m = LegacyMessage::parse(bytes, location, &[MAGIC_V1])?;
        Ok(MessageV1 { attributes: m.attributes, timestamp: m.timestamp, key: m.key, value: m.value })
    }
}

/// A message of magic 0 or 1 as a reader of any magic sees it.
#[derive(Debug, Clone)]
pub(crate) struct LegacyMessage {
    pub(crate) magic: i8,
    pub(crate) crc: u32,
    pub(crate) attributes: i8,
    /// -1 for magic 0.
    pub(crate) timestamp: i64,
    pub(crate) key: Option<Bytes>,
    pub(crate) value: Option<Bytes>,
}

impl LegacyMessage {
    /// Reads a message that fills `bytes` exactly, of one of the magics `magics` (0, 1),
    /// verifying its CRC.
    pub(crate) fn parse(
        bytes: Bytes,
        location: impl FnOnce() -> MessageLocation,
        magics: &[i8],
    ) -> Result<LegacyMessage> {
        let head = LegacyHead::read(&bytes, location, magics, true)?;
        Ok(head.message(&bytes))
    }
}

/// A message of magic 0 or 1 read in place: its fields, and where its key and value lie in
/// the bytes it was read from (nothing copied, nothing shared).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LegacyHead {
    pub(crate) magic: i8,
    pub(crate) crc: u32,
    pub(crate) attributes: i8,
    /// -1 for magic 0.
    pub(crate) timestamp: i64,
    pub(crate) key: Option<(usize, usize)>,
    pub(crate) value: Option<(usize, usize)>,
}

impl LegacyHead {
    /// Reads a message that fills `bytes` exactly, of one of the magics `magics` (0, 1),
    /// verifying its CRC if `verify_crc` (not when it was verified before, as a lazy reader's
    /// second reading of an entry it checked). Every other check is made either way.
    pub(crate) fn read(
        bytes: &[u8],
        location: impl FnOnce() -> MessageLocation,
        magics: &[i8],
        verify_crc: bool,
    ) -> Result<LegacyHead> {
        let malformed = |location: MessageLocation, reason| Error::MalformedMessage { location, reason };
        if bytes.len() < MESSAGE_V0_OVERHEAD {
            let reason = format!("{} bytes cannot hold a message (at least {MESSAGE_V0_OVERHEAD})", bytes.len());
            return Err(malformed(location(), reason));
        }
        let magic = bytes[4] as i8;
        if !magics.contains(&magic) {
            return Err(Error::UnsupportedMagic { location: location(), magic });
        }
        let overhead = if magic == MAGIC_V1 { MESSAGE_V1_OVERHEAD } else { MESSAGE_V0_OVERHEAD };
        if bytes.len() < overhead {
            let reason = format!("{} bytes cannot hold a message v{magic} (at least {overhead})", bytes.len());
            return Err(malformed(location(), reason));
        }
        let stored = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        if verify_crc {
            let computed = crc32fast::hash(&bytes[4..]);
            if stored != computed {
                return Err(Error::Crc { location: location(), stored, computed });
            }
        }
        let attributes = bytes[5] as i8;
        let (timestamp, mut at) = if magic == MAGIC_V1 {
            (i64::from_be_bytes(bytes[6..14].try_into().expect("8 bytes")), 14)
        } else {
            (-1, 6)
        };
        let fields = (|| Ok::<_, Error>((field_at(bytes, &mut at, "key")?, field_at(bytes, &mut at, "value")?)))();
        match fields {
            Ok((key, value)) if at == bytes.len() => {
                Ok(LegacyHead { magic, crc: stored, attributes, timestamp, key, value })
            }
            Ok(_) => Err(malformed(location(), format!("{} bytes left after the value", bytes.len() - at))),
            Err(e) => Err(malformed(location(), e.to_string())),
        }
    }

    /// The message, its key and value slices of `bytes` (the bytes it was read from).
    pub(crate) fn message(&self, bytes: &Bytes) -> LegacyMessage {
        let slice = |r: Option<(usize, usize)>| r.map(|(from, to)| bytes.slice(from..to));
        LegacyMessage {
            magic: self.magic,
            crc: self.crc,
            attributes: self.attributes,
            timestamp: self.timestamp,
            key: slice(self.key),
            value: slice(self.value),
        }
    }

    /// True when the codec bits are not 0: the value is a compressed inner set.
    pub(crate) fn is_wrapper(&self) -> bool {
        self.attributes & Compression::ATTRIBUTE_MASK != 0
    }
}

/// Where the `int32`-prefixed nullable field at `*at` of `bytes` lies, `*at` moved past it;
/// the same errors as [`wire::get_nullable_bytes`].
fn field_at(bytes: &[u8], at: &mut usize, field: &'static str) -> Result<Option<(usize, usize)>> {
    let rest = &bytes[*at..];
    let Some((len, after)) = rest.split_first_chunk::<4>() else {
        return Err(Error::truncated(field, 4, rest.len()));
    };
    let len = i32::from_be_bytes(*len);
    *at += 4;
    if len == -1 {
        return Ok(None);
    }
    if len < 0 || len as usize > after.len() {
        return Err(Error::InvalidLength { field, length: len.into(), remaining: after.len() });
    }
    let from = *at;
    *at += len as usize;
    Ok(Some((from, *at)))
}

impl MessageSet {
    /// Encodes messages v1 at the given offsets, uncompressed at this level.
    ///
    /// # Errors
    ///
    /// [`Error::TooLong`] for a field or an entry too long for its length prefix.
    pub fn encode_v1(entries: &[(i64, MessageV1)]) -> Result<MessageSet> {
        let size = entries.iter().map(|(_, m)| ENTRY_HEADER_SIZE + m.encoded_len()).sum();
        let mut buf = BytesMut::with_capacity(size);
        for (offset, message) in entries {
            buf.put_i64(*offset);
            let at = wire::begin_size(&mut buf);
            message.encode(&mut buf)?;
            wire::finish_size(&mut buf, at, "message_size")?;
        }
        Ok(MessageSet::from_bytes(buf.freeze()))
    }

    /// A set of messages v1 as Kafka 0.10's producer sends it: at offsets 0, 1, 2...; with a
    /// codec, one wrapper at offset n-1 whose inner messages carry the relative offsets 0 to
    /// n-1, whose timestamp is the largest inner one (CreateTime) and whose LZ4 frame has the
    /// standard header checksum.
    ///
    /// # Errors
    ///
    /// [`Error::Compression`] when the codec fails or is zstd (never in a message v1);
    /// [`Error::TooLong`].
    pub fn from_messages_v1(messages: &[MessageV1], codec: Compression) -> Result<MessageSet> {
        let entries: Vec<(i64, MessageV1)> = (0..).zip(messages.iter().cloned()).collect();
        let inner = MessageSet::encode_v1(&entries)?;
        if codec == Compression::None || messages.is_empty() {
            return Ok(inner);
        }
        let last = entries.len() as i64 - 1;
        let mut compressed = Vec::with_capacity(inner.len() / 2 + 64);
        compression::compress_for_magic(codec, MAGIC_V1, inner.as_bytes(), &mut compressed).map_err(|source| {
            Error::Compression {
                location: MessageLocation { offset: last, ..MessageLocation::default() },
                codec,
                source,
            }
        })?;
        let wrapper = MessageV1 {
            attributes: codec.attribute_bits(),
            timestamp: messages.iter().map(|m| m.timestamp).max().unwrap_or(-1),
            key: None,
            value: Some(compressed.into()),
        };
        MessageSet::encode_v1(&[(last, wrapper)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Option<Bytes> {
        Some(Bytes::copy_from_slice(s.as_bytes()))
    }

    /// The borrowing builder writes what the entry-by-entry path (`encode` of offsets 0..n, or
    /// of `wrap` of them) writes, for every codec, and decodes back to the messages.
    #[test]
    fn from_message_refs_equals_encoding_entry_by_entry() {
        let messages: Vec<Message> = (0..50)
            .map(|i| Message::new(if i % 3 == 0 { None } else { b(&format!("k{i}")) }, b(&format!("value {i}"))))
            .collect();
        let entries: Vec<MessageAndOffset> =
            messages.iter().cloned().zip(0..).map(|(m, o)| MessageAndOffset::new(o, m)).collect();
        for codec in [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let expected = if codec == Compression::None {
                MessageSet::encode(&entries).unwrap()
            } else {
                MessageSet::encode(&[MessageSet::wrap(&entries, codec).unwrap()]).unwrap()
            };
            let built = MessageSet::from_message_refs(&messages, codec).unwrap();
            assert_eq!(built.as_bytes(), expected.as_bytes(), "{codec:?}");
            let decoded = built.decode(&DecodeOptions::default()).unwrap();
            let back: Vec<Message> = decoded.messages.into_iter().map(|m| m.message).collect();
            assert_eq!(back, messages, "{codec:?}");
        }
        assert!(MessageSet::from_message_refs(&[], Compression::Gzip).unwrap().as_bytes().is_empty());
    }

    #[test]
    fn from_encoded_equals_from_message_refs_and_encoded_messages_read_back() {
        let messages: Vec<Message> = (0..40)
            .map(|i| match i % 4 {
                0 => Message::new(None, b(&format!("value {i}"))),
                1 => Message::new(b(&format!("k{i}")), b(&format!("value {i}"))),
                2 => Message::new(b(""), None),
                _ => Message::new(None, None),
            })
            .collect();
        // several messages in one buffer, as a producer encodes them
        let mut chunk = BytesMut::with_capacity(4096);
        let encoded: Vec<EncodedMessage> =
            messages.iter().map(|m| EncodedMessage::encode_into(m, &mut chunk).unwrap()).collect();
        assert!(chunk.is_empty() && chunk.capacity() > 0, "the buffer keeps its spare room");
        for (m, e) in messages.iter().zip(&encoded) {
            assert_eq!(e.len(), m.encoded_len());
            assert_eq!(e.key(), m.key.as_deref());
            assert_eq!(e.crc(), crc32fast::hash(&e.as_bytes()[4..]));
            assert_eq!(&e.to_message(), m);
            assert_eq!(e.detached(), *e);
            let mut other = BytesMut::with_capacity(64);
            let copy = e.copy_into(&mut other);
            assert_eq!((copy, other.len()), (e.clone(), 0));
            assert_eq!(EncodedMessage::encode(m).unwrap(), *e);
        }
        for codec in [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let expected = MessageSet::from_message_refs(&messages, codec).unwrap();
            let built = MessageSet::from_encoded(&encoded, codec).unwrap();
            assert_eq!(built.as_bytes(), expected.as_bytes(), "{codec:?}");
            // laid out uncompressed, then compressed: the same bytes
            let plain = MessageSet::from_encoded(&encoded, Compression::None).unwrap();
            assert_eq!(plain.compress(codec).unwrap().as_bytes(), expected.as_bytes(), "{codec:?}");
            let one = MessageSet::from_encoded(&encoded[..1], Compression::None).unwrap();
            let expected_one = MessageSet::from_encoded(&encoded[..1], codec).unwrap();
            assert_eq!(one.compress(codec).unwrap().as_bytes(), expected_one.as_bytes(), "{codec:?}");
        }
        assert!(MessageSet::from_encoded(&[], Compression::Snappy).unwrap().is_empty());
        assert!(MessageSet::from_bytes(Bytes::new()).compress(Compression::Gzip).unwrap().is_empty());
        // a set cut short, or with a negative size, is refused
        let plain = MessageSet::from_encoded(&encoded, Compression::None).unwrap();
        let cut = MessageSet::from_bytes(plain.as_bytes().slice(..plain.len() - 1));
        assert!(matches!(cut.compress(Compression::Snappy), Err(Error::MalformedMessage { .. })));
        let mut negative = plain.as_bytes().to_vec();
        negative[8..12].copy_from_slice(&(-1i32).to_be_bytes());
        let negative = MessageSet::from_bytes(negative.into());
        assert!(matches!(negative.compress(Compression::Lz4), Err(Error::MalformedMessage { .. })));
        let short = MessageSet::from_bytes(Bytes::from_static(&[0; 5]));
        assert!(matches!(short.compress(Compression::Gzip), Err(Error::MalformedMessage { .. })));
    }

    #[test]
    fn encode_into_leaves_earlier_bytes_in_the_buffer() {
        let mut buf = BytesMut::from(&b"abc"[..]);
        let m = Message::new(b("k"), b("v"));
        let e = EncodedMessage::encode_into(&m, &mut buf).unwrap();
        assert_eq!(&buf[..], b"abc");
        assert_eq!(e.to_message(), m);
    }

    #[test]
    fn a_message_encoded_without_its_crc_is_refused_until_the_crc_is_filled_in() {
        for m in [Message::new(b("key"), b("value")), Message::new(None, None), Message::new(None, b("v"))] {
            let mut whole = BytesMut::from(&b"ab"[..]);
            m.encode(&mut whole).unwrap();
            let mut open = BytesMut::from(&b"ab"[..]);
            m.encode_without_crc(&mut open).unwrap();
            assert_eq!(&open[..6], b"ab\0\0\0\0", "the CRC field is left 0");
            assert_eq!(open[6..], whole[6..], "everything after the CRC as encode writes it");
            let refused = Message::decode(Bytes::copy_from_slice(&open[2..]), MessageLocation::default);
            assert!(matches!(refused, Err(Error::Crc { stored: 0, .. })), "{refused:?}");
            fill_crc(&mut open[2..]);
            assert_eq!(open, whole);
            assert_eq!(Message::decode(open.split_off(2).freeze(), MessageLocation::default).unwrap(), m);
        }
        let mut short = [1u8, 2, 3, 4];
        fill_crc(&mut short);
        assert_eq!(short, [1, 2, 3, 4], "too short to hold a message: left as it is");
    }

    #[test]
    fn from_bytes_takes_one_whole_message_and_nothing_else() {
        for m in [Message::new(b("key"), b("value")), Message::new(None, None), Message::new(None, b("v"))] {
            let mut buf = BytesMut::new();
            m.encode(&mut buf).unwrap();
            let whole = buf.freeze();
            let e = EncodedMessage::from_bytes(whole.clone()).expect("one whole message");
            assert_eq!(e.to_message(), m);
            assert_eq!(e.as_bytes(), &whole[..]);
            assert_eq!(EncodedMessage::key_of(&whole), m.key.as_deref());
            let mut buf = BytesMut::from(&b"before"[..]);
            let copy = EncodedMessage::copy_from_slice_into(&whole, &mut buf).expect("one whole message");
            assert_eq!((copy.as_bytes(), &buf[..]), (&whole[..], &b"before"[..]));
            // a byte short, a byte over, or another magic: not one message
            assert!(EncodedMessage::from_bytes(whole.slice(..whole.len() - 1)).is_none());
            let mut buf = BytesMut::from(&b"before"[..]);
            assert!(EncodedMessage::copy_from_slice_into(&whole[..whole.len() - 1], &mut buf).is_none());
            assert_eq!(&buf[..], b"before");
            let mut over = whole.to_vec();
            over.push(0);
            assert!(EncodedMessage::from_bytes(over.into()).is_none());
            let mut magic = whole.to_vec();
            magic[4] = 1;
            assert!(EncodedMessage::from_bytes(magic.into()).is_none());
        }
        assert!(EncodedMessage::from_bytes(Bytes::from_static(&[0; 13])).is_none());
        // a key length pointing past the end
        let mut long_key = vec![0u8; 14];
        long_key[6..10].copy_from_slice(&100i32.to_be_bytes());
        assert!(EncodedMessage::from_bytes(long_key.into()).is_none());
    }

    #[test]
    fn null_key_and_null_value_has_kafkas_crc() {
        let mut buf = BytesMut::new();
        Message::new(None, None).encode(&mut buf).unwrap();
        assert_eq!(&buf[..], &[0xa7, 0xec, 0x68, 0x03, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    }

    #[test]
    fn entries_round_trip_and_crc_is_checked_with_location() {
        let set = MessageSet::encode(&[
            MessageAndOffset::new(7, Message::new(b("k"), b("v"))),
            MessageAndOffset::new(8, Message::new(None, b("w"))),
        ])
        .unwrap();
        let got: Vec<_> = set.entries().map(Result::unwrap).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].offset, 8);
        let mut bad = set.as_bytes().to_vec();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        let bad = MessageSet::from_bytes(bad.into());
        let err = bad.decode(&DecodeOptions::fetched("plain", 3, 0)).unwrap_err();
        assert!(
            matches!(&err, Error::Crc { location, .. } if location.offset == 8 && location.partition == Some(3)),
            "{err}"
        );
        assert!(err.to_string().starts_with("crc mismatch in message at plain/3 offset 8: stored 0x"), "{err}");
    }

    #[test]
    fn partial_trailing_entry_is_dropped_and_counted() {
        let set = MessageSet::encode(&[
            MessageAndOffset::new(0, Message::new(b("a"), b("1"))),
            MessageAndOffset::new(1, Message::new(b("b"), b("2"))),
        ])
        .unwrap();
        let whole_first = ENTRY_HEADER_SIZE + Message::new(b("a"), b("1")).encoded_len();
        for cut in whole_first..set.len() {
            let part = MessageSet::from_bytes(set.as_bytes().slice(..cut));
            let d = part.decode(&DecodeOptions::default()).unwrap();
            assert_eq!(d.messages.len(), 1, "cut {cut}");
            assert_eq!(d.partial_trailing_bytes, cut - whole_first);
        }
    }

    #[test]
    fn a_set_with_no_whole_message_is_reported_as_too_large_for_the_fetch() {
        let set = MessageSet::encode(&[MessageAndOffset::new(42, Message::new(b("k"), Some(vec![7u8; 500].into())))])
            .unwrap();
        let cut = MessageSet::from_bytes(set.as_bytes().slice(..100));
        let err = cut.decode(&DecodeOptions::fetched("t", 0, 42)).unwrap_err();
        match err {
            Error::MessageLargerThanFetch { location, entry_size, fetched_bytes } => {
                assert_eq!(location.offset, 42);
                assert_eq!(entry_size, Some(set.len()));
                assert_eq!(fetched_bytes, 100);
            }
            other => panic!("{other}"),
        }
        let tiny = MessageSet::from_bytes(set.as_bytes().slice(..5));
        assert!(matches!(
            tiny.decode(&DecodeOptions::fetched("t", 0, 42)),
            Err(Error::MessageLargerThanFetch { entry_size: None, .. })
        ));
        assert_eq!(MessageSet::new().decode(&DecodeOptions::default()).unwrap(), DecodedMessages::default());
    }

    #[test]
    fn compressed_wrappers_expand_and_drop_inner_messages_below_the_fetch_offset() {
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let inner: Vec<_> =
                (3..6).map(|o| MessageAndOffset::new(o, Message::new(b(&format!("k{o}")), b("v")))).collect();
            let wrapper = MessageSet::wrap(&inner, codec).unwrap();
            assert_eq!(wrapper.offset, 5);
            assert_eq!(wrapper.message.key, None);
            let set = MessageSet::encode(&[wrapper]).unwrap();
            let d = set.decode(&DecodeOptions::fetched("t", 0, 4)).unwrap();
            assert_eq!(d.skipped, 1, "{codec}");
            assert_eq!(d.messages, inner[1..].to_vec(), "{codec}");
            assert_eq!(d.next_offset(), Some(6));
        }
    }

    #[test]
    fn from_messages_numbers_from_zero_and_wraps_once() {
        let msgs = vec![Message::new(None, b("x")), Message::new(None, b("y"))];
        let plain = MessageSet::from_messages(msgs.clone(), Compression::None).unwrap();
        let offsets: Vec<i64> = plain.entries().map(|e| e.unwrap().offset).collect();
        assert_eq!(offsets, vec![0, 1]);
        let gz = MessageSet::from_messages(msgs, Compression::Gzip).unwrap();
        let top: Vec<_> = gz.entries().map(Result::unwrap).collect();
        assert_eq!(top.len(), 1);
        assert_eq!(top[0].offset, 1);
        assert_eq!(top[0].message.attributes, 1);
    }

    /// `MessageSet::compress` writes its wrapper in place: the same bytes as the wrapper
    /// message encoded from a value compressed apart, for every codec of Message v0, sizes
    /// around snappy's and lz4's block sizes included.
    #[test]
    fn a_set_compressed_in_place_is_the_wrapper_encoded_from_its_compressed_value() {
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            for n in [1usize, 7, 300, 1000, 2500] {
                let entries: Vec<MessageAndOffset> = (0..n)
                    .map(|i| {
                        let value: Vec<u8> = (0..(i % 61 + 20)).map(|j| ((i * 31 + j * 7) % 251) as u8).collect();
                        MessageAndOffset::new(i as i64, Message::new(None, Some(Bytes::from(value))))
                    })
                    .collect();
                let plain = MessageSet::encode(&entries).unwrap();
                let mut value = Vec::new();
                compression::compress_for_magic(codec, MAGIC_V0, plain.as_bytes(), &mut value).unwrap();
                let wrapper = Message { attributes: codec.attribute_bits(), key: None, value: Some(value.into()) };
                let want = MessageSet::encode(&[MessageAndOffset::new(n as i64 - 1, wrapper)]).unwrap();
                let got = plain.compress(codec).unwrap();
                assert_eq!(got.as_bytes(), want.as_bytes(), "{codec} with {n} messages");
                let back = got.decode(&DecodeOptions::default()).unwrap();
                assert_eq!(back.messages.len(), n, "{codec} with {n} messages");
            }
        }
    }

    /// A set in parts (entries where a producer queued them) is the set of its parts joined:
    /// equal to it, read the same, compressed to the same wrapper; cut entries are an error.
    #[test]
    fn a_set_in_parts_is_its_parts_joined_everywhere() {
        let entries: Vec<MessageAndOffset> = (0..40)
            .map(|i| MessageAndOffset::new(i, Message::new(None, Some(Bytes::from(vec![i as u8; 30 + i as usize])))))
            .collect();
        let whole = MessageSet::encode(&entries).unwrap();
        let cut = [MessageSet::encode(&entries[..7]).unwrap(), MessageSet::encode(&entries[7..8]).unwrap()];
        let rest = MessageSet::encode(&entries[8..]).unwrap();
        let parts = [cut[0].as_bytes().clone(), Bytes::new(), cut[1].as_bytes().clone(), rest.as_bytes().clone()];
        let set = MessageSet::from_parts(parts.clone());
        assert_eq!(set.parts().len(), 3, "empty parts dropped");
        assert_eq!(set.parts()[0].as_ptr(), parts[0].as_ptr(), "kept where they are");
        assert_eq!(set.len(), whole.len());
        assert_eq!(set, whole);
        assert_eq!(whole, set);
        assert_ne!(set, MessageSet::from_parts([cut[0].as_bytes().clone(), rest.as_bytes().clone()]));
        assert_eq!(set.decode(&DecodeOptions::default()).unwrap(), whole.decode(&DecodeOptions::default()).unwrap());
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            assert_eq!(set.compress(codec).unwrap(), whole.compress(codec).unwrap(), "{codec}");
        }
        assert_eq!(set.compress(Compression::None).unwrap().parts().len(), 3, "uncompressed: the same parts");
        // kept where the caller keeps it: here in parts of 7 bytes, one entry across them
        let mut given = 0;
        let into = set
            .compress_with(Compression::Lz4, |bytes| {
                given = bytes.len();
                MessageSet::from_parts(bytes.chunks(7).map(Bytes::copy_from_slice))
            })
            .unwrap();
        assert_eq!((given, into.parts().len()), (into.len(), into.len().div_ceil(7)));
        assert_eq!(into, whole.compress(Compression::Lz4).unwrap());
        assert_eq!(into.decode(&DecodeOptions::default()).unwrap(), whole.decode(&DecodeOptions::default()).unwrap());
        assert_eq!(set.as_bytes(), whole.as_bytes());
        assert_eq!(set.clone().into_bytes(), whole.into_bytes());
        assert_eq!(format!("{set:?}").matches("MessageAndOffset").count(), 40);
        // one part, or none
        assert_eq!(MessageSet::from_parts([rest.as_bytes().clone()]).parts()[0].as_ptr(), rest.as_bytes().as_ptr());
        assert!(MessageSet::from_parts([Bytes::new(), Bytes::new()]).is_empty());
        // an entry cut across parts is malformed, not read past
        let joined = set.as_bytes().clone();
        let split = MessageSet::from_parts([joined.slice(..50), joined.slice(50..)]);
        assert!(matches!(split.compress(Compression::Snappy), Err(Error::MalformedMessage { .. })));
    }

    #[test]
    fn decompression_is_bounded() {
        let inner = vec![MessageAndOffset::new(0, Message::new(None, Some(vec![0u8; 1 << 20].into())))];
        let set = MessageSet::encode(&[MessageSet::wrap(&inner, Compression::Gzip).unwrap()]).unwrap();
        assert!(set.len() < 10_000);
        let opts = DecodeOptions { max_decompressed_bytes: 1 << 16, ..DecodeOptions::default() };
        assert!(matches!(set.decode(&opts), Err(Error::Compression { .. })));
    }

    #[test]
    fn nested_wrappers_are_rejected() {
        let inner =
            vec![MessageSet::wrap(&[MessageAndOffset::new(0, Message::new(None, b("x")))], Compression::Gzip).unwrap()];
        let set = MessageSet::encode(&[MessageSet::wrap(&inner, Compression::Snappy).unwrap()]).unwrap();
        assert!(matches!(set.decode(&DecodeOptions::default()), Err(Error::NestedCompression { .. })));
    }

    /// `MessageView::parse` and `Message::decode` keep separate copies of the checks: on valid
    /// messages, truncated ones, flipped bytes and lengths (with the CRC fixed up or not) they
    /// agree on every field and every error.
    #[test]
    fn message_view_and_decode_agree() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let field = |n: usize| (n > 0).then(|| Bytes::from((0..n - 1).map(|i| i as u8).collect::<Vec<u8>>()));
        let (mut oks, mut errs) = (0, 0);
        for round in 0..5000 {
            let mut m = Message::new(field(next(40)), field(next(300)));
            m.attributes = [0, 0, 1, 2, 3, 8][next(6)] as i8;
            let mut b = BytesMut::new();
            m.encode(&mut b).unwrap();
            let mut b = b.to_vec();
            match next(5) {
                0 => {}
                1 => b.truncate(next(b.len() + 1)),
                2 => {
                    let i = next(b.len());
                    b[i] ^= 1 << next(8);
                }
                _ => {
                    // a key or value length changed, the CRC made right again
                    let at = if next(2) == 0 { 6 } else { b.len() - 4 - m.value.as_ref().map_or(0, Bytes::len) };
                    let len = [-2i32, -1, 0, 1, 1000, i32::MAX][next(6)];
                    b[at..at + 4].copy_from_slice(&len.to_be_bytes());
                    if next(4) > 0 {
                        b.extend(std::iter::repeat_n(0u8, next(3)));
                    }
                    let crc = crc32fast::hash(&b[4..]);
                    b[..4].copy_from_slice(&crc.to_be_bytes());
                }
            }
            let decoded = Message::decode(Bytes::from(b.clone()), MessageLocation::default);
            let parsed = MessageView::parse(&b, MessageLocation::default);
            match (decoded, parsed) {
                (Ok(d), Ok(p)) => {
                    assert_eq!((d.attributes, d.key.as_deref(), d.value.as_deref()), (p.attributes, p.key, p.value));
                    assert_eq!(d.compression().ok(), p.compression().ok());
                    assert_eq!(d.is_wrapper(), p.is_wrapper());
                    oks += 1;
                }
                (Err(d), Err(p)) => {
                    assert_eq!(d.to_string(), p.to_string(), "round {round}");
                    errs += 1;
                }
                (d, p) => panic!("round {round}: decode {d:?}, parse {p:?}"),
            }
        }
        assert!(oks > 500 && errs > 1000, "both paths exercised: {oks} valid, {errs} errors");
    }

    #[test]
    fn negative_size_and_bad_magic_are_errors_not_panics() {
        let mut raw = BytesMut::new();
        raw.put_i64(0);
        raw.put_i32(-5);
        raw.put_slice(&[0u8; 20]);
        let set = MessageSet::from_bytes(raw.freeze());
        assert!(matches!(set.decode(&DecodeOptions::default()), Err(Error::MalformedMessage { .. })));
        let mut m = BytesMut::new();
        Message::new(None, None).encode(&mut m).unwrap();
        m[4] = 1;
        let crc = crc32fast::hash(&m[4..]);
        m[..4].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            Message::decode(m.freeze(), MessageLocation::default),
            Err(Error::UnsupportedMagic { magic: 1, .. })
        ));
    }
}

//! The "consumer" protocol of consumer groups: what a member puts in
//! [`JoinGroupRequestProtocol::metadata`](super::JoinGroupRequestProtocol) (a subscription) and
//! what the leader puts in
//! [`SyncGroupRequestAssignment::assignment`](super::SyncGroupRequestAssignment) (an
//! assignment). Versions: v0-v3 of each, never flexible.
//!
//! ```text
//! ConsumerProtocolSubscription => version int16, [topics string], user_data nullable bytes,
//!                                 (v1+ [topic string, [partitions int32]] owned_partitions),
//!                                 (v2+ generation_id int32), (v3+ rack_id nullable string)
//! ConsumerProtocolAssignment   => version int16, [topic string, [partitions int32]]
//!                                 assigned_partitions, user_data nullable bytes
//! ```
//!
//! The bytes start with their own version, written by the member or the leader (the group
//! APIs' versions say nothing about it), then the classic encoding of that version. Kafka reads
//! a version above the newest it knows as the newest (new versions only append fields), and so
//! do [`ConsumerProtocolSubscription::decode`] and [`ConsumerProtocolAssignment::decode`]; a
//! negative version is refused. The assignment's layout is the same in every version (its
//! version follows the subscription's).
//!
//! Kafka 3.7.0 (`tests/data/kafka-3.7.0`): librdkafka subscribes with v3 (user data empty, no
//! owned partitions, generation -1, rack id "") and assigns with v0 (user data empty);
//! kafka-python subscribes and assigns with v0.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::api_key::ApiKey;
use crate::error::{Error, Result};
use crate::message;
use crate::schema::{Ctx, Wire};

/// The newest version of the consumer protocol's subscription and assignment.
pub const CONSUMER_PROTOCOL_MAX_VERSION: i16 = 3;

/// The protocol type of consumer groups in JoinGroup, SyncGroup, DescribeGroups and ListGroups.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

message! {
    /// A member's subscription: the metadata of each protocol it offers in JoinGroup.
    pub struct ConsumerProtocolSubscription {
        /// v0+. The topics the member subscribes to.
        topics: Vec<String> [0],
        /// v0+. Data for the assignor, or null.
        user_data: Option<Bytes> [0],
        /// v1+. The partitions the member owns now (cooperative rebalancing).
        owned_partitions: Vec<ConsumerProtocolTopicPartitions> [1],
        /// v2+. The generation of the member's owned partitions, -1 for none.
        generation_id: i32 [2] = -1,
        /// v3+. The member's rack (`client.rack`), or null.
        rack_id: Option<String> [3],
    }
}

message! {
    /// A leader's assignment of one member: its bytes in SyncGroup.
    pub struct ConsumerProtocolAssignment {
        /// v0+. The partitions assigned to the member.
        assigned_partitions: Vec<ConsumerProtocolTopicPartitions> [0],
        /// v0+. Data from the assignor, or null.
        user_data: Option<Bytes> [0],
    }
}

message! {
    /// Partitions of one topic, owned or assigned.
    pub struct ConsumerProtocolTopicPartitions {
        /// v0+. Topic name.
        topic: String [0],
        /// v0+. Partition ids.
        partitions: Vec<i32> [0],
    }
}

impl ConsumerProtocolTopicPartitions {
    /// A topic with its partitions.
    pub fn new(topic: impl Into<String>, partitions: Vec<i32>) -> Self {
        ConsumerProtocolTopicPartitions { topic: topic.into(), partitions, ..Default::default() }
    }
}

/// Writes `version` and `value` in that version.
fn encode_versioned<T: Wire>(value: &T, api: ApiKey, version: i16, buf: &mut BytesMut) -> Result<()> {
    if !(0..=CONSUMER_PROTOCOL_MAX_VERSION).contains(&version) {
        return Err(Error::UnsupportedVersion { api, version, min: 0, max: CONSUMER_PROTOCOL_MAX_VERSION });
    }
    buf.put_i16(version);
    value.put(Ctx { api, version, flexible: false }, "consumer protocol", buf)
}

/// Reads a version and a value; a version above the newest is read as the newest.
fn decode_versioned<T: Wire>(api: ApiKey, buf: &mut Bytes) -> Result<(i16, T)> {
    if buf.remaining() < 2 {
        return Err(Error::Truncated { field: "version", needed: 2, remaining: buf.remaining() });
    }
    let version = buf.get_i16();
    if version < 0 {
        return Err(Error::UnsupportedVersion { api, version, min: 0, max: CONSUMER_PROTOCOL_MAX_VERSION });
    }
    let read_as = version.min(CONSUMER_PROTOCOL_MAX_VERSION);
    let value = T::get(Ctx { api, version: read_as, flexible: false }, "consumer protocol", buf)?;
    Ok((version, value))
}

impl ConsumerProtocolSubscription {
    /// Appends the version prefix and the subscription in `version` (0 to
    /// [`CONSUMER_PROTOCOL_MAX_VERSION`]).
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedVersion`] for another version, [`Error::FieldNotInVersion`] for a
    /// field the version lacks, [`Error::TooLong`].
    pub fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        encode_versioned(self, ApiKey::JoinGroup, version, buf)
    }

    /// The version prefix and the subscription in `version`, in new bytes.
    ///
    /// # Errors
    ///
    /// As [`ConsumerProtocolSubscription::encode`].
    pub fn to_bytes(&self, version: i16) -> Result<Bytes> {
        let mut buf = BytesMut::new();
        self.encode(version, &mut buf)?;
        Ok(buf.freeze())
    }

    /// Reads a subscription from the front of `buf`: the version written and the value (a
    /// version above [`CONSUMER_PROTOCOL_MAX_VERSION`] is read as that one, its further fields
    /// left in `buf`).
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedVersion`] for a negative version, and any decoding error.
    pub fn decode(buf: &mut Bytes) -> Result<(i16, Self)> {
        decode_versioned(ApiKey::JoinGroup, buf)
    }
}

impl ConsumerProtocolAssignment {
    /// Appends the version prefix and the assignment in `version` (0 to
    /// [`CONSUMER_PROTOCOL_MAX_VERSION`]).
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedVersion`] for another version, [`Error::TooLong`].
    pub fn encode(&self, version: i16, buf: &mut BytesMut) -> Result<()> {
        encode_versioned(self, ApiKey::SyncGroup, version, buf)
    }

    /// The version prefix and the assignment in `version`, in new bytes.
    ///
    /// # Errors
    ///
    /// As [`ConsumerProtocolAssignment::encode`].
    pub fn to_bytes(&self, version: i16) -> Result<Bytes> {
        let mut buf = BytesMut::new();
        self.encode(version, &mut buf)?;
        Ok(buf.freeze())
    }

    /// Reads an assignment from the front of `buf`: the version written and the value (a version
    /// above [`CONSUMER_PROTOCOL_MAX_VERSION`] is read as that one, its further fields left in
    /// `buf`).
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedVersion`] for a negative version, and any decoding error.
    pub fn decode(buf: &mut Bytes) -> Result<(i16, Self)> {
        decode_versioned(ApiKey::SyncGroup, buf)
    }
}

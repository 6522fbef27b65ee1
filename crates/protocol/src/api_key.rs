//! The API key of a request and the range of versions of an API: plain values, which the rest
//! of the crate (errors included) builds on. Which versions this crate implements for each API
//! is the table in [`crate::messages`].

use std::fmt;

macro_rules! api_keys {
    ($($(#[$doc:meta])* $name:ident = $code:literal,)*) => {
        /// The API key of a request (`int16`). Every API gregor speaks is named, and the
        /// inter-broker ones of Kafka 0.8.2 (4 to 7) so logs can say what a broker was sent; any
        /// other key is [`ApiKey::Other`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ApiKey {
            $($(#[$doc])* $name,)*
            /// Any other key.
            Other(i16),
        }

        impl ApiKey {
            /// The key for a number.
            pub fn from_i16(key: i16) -> ApiKey {
                match key {
                    $($code => ApiKey::$name,)*
                    other => ApiKey::Other(other),
                }
            }

            /// The number on the wire.
            pub fn code(self) -> i16 {
                match self {
                    $(ApiKey::$name => $code,)*
                    ApiKey::Other(k) => k,
                }
            }
        }
    };
}

api_keys! {
    /// 0 — Produce.
    Produce = 0,
    /// 1 — Fetch.
    Fetch = 1,
    /// 2 — Offsets (ListOffsets, `getOffsetsBefore`).
    Offsets = 2,
    /// 3 — Metadata (TopicMetadata).
    Metadata = 3,
    /// 4 — LeaderAndIsr (inter-broker).
    LeaderAndIsr = 4,
    /// 5 — StopReplica (inter-broker).
    StopReplica = 5,
    /// 6 — UpdateMetadata (inter-broker).
    UpdateMetadata = 6,
    /// 7 — ControlledShutdown (inter-broker).
    ControlledShutdown = 7,
    /// 8 — OffsetCommit.
    OffsetCommit = 8,
    /// 9 — OffsetFetch.
    OffsetFetch = 9,
    /// 10 — ConsumerMetadata (GroupCoordinator, then FindCoordinator, in later versions).
    ConsumerMetadata = 10,
    /// 11 — JoinGroup (Kafka 0.9+).
    JoinGroup = 11,
    /// 12 — Heartbeat (Kafka 0.9+).
    Heartbeat = 12,
    /// 13 — LeaveGroup (Kafka 0.9+).
    LeaveGroup = 13,
    /// 14 — SyncGroup (Kafka 0.9+).
    SyncGroup = 14,
    /// 15 — DescribeGroups (Kafka 0.9+).
    DescribeGroups = 15,
    /// 16 — ListGroups (Kafka 0.9+).
    ListGroups = 16,
    /// 17 — SaslHandshake (Kafka 0.10+).
    SaslHandshake = 17,
    /// 18 — ApiVersions (Kafka 0.10+, KIP-35; a 0.8 broker closes the connection on it).
    ApiVersions = 18,
    /// 19 — CreateTopics (Kafka 0.10.1+).
    CreateTopics = 19,
    /// 20 — DeleteTopics (Kafka 0.10.1+).
    DeleteTopics = 20,
    /// 21 — DeleteRecords (Kafka 0.11+).
    DeleteRecords = 21,
    /// 22 — InitProducerId (Kafka 0.11+; idempotent and transactional producers).
    InitProducerId = 22,
    /// 32 — DescribeConfigs (Kafka 0.11+).
    DescribeConfigs = 32,
    /// 33 — AlterConfigs (Kafka 0.11+).
    AlterConfigs = 33,
    /// 36 — SaslAuthenticate (Kafka 1.0+).
    SaslAuthenticate = 36,
    /// 37 — CreatePartitions (Kafka 1.0+).
    CreatePartitions = 37,
    /// 42 — DeleteGroups (Kafka 1.1+).
    DeleteGroups = 42,
    /// 43 — ElectLeaders (Kafka 2.2+; ElectPreferredLeaders before 2.4).
    ElectLeaders = 43,
    /// 44 — IncrementalAlterConfigs (Kafka 2.3+).
    IncrementalAlterConfigs = 44,
    /// 45 — AlterPartitionReassignments (Kafka 2.4+, KIP-455).
    AlterPartitionReassignments = 45,
    /// 46 — ListPartitionReassignments (Kafka 2.4+, KIP-455).
    ListPartitionReassignments = 46,
    /// 47 — OffsetDelete (Kafka 2.4+, KIP-496).
    OffsetDelete = 47,
    /// 60 — DescribeCluster (Kafka 2.8+, KIP-700).
    DescribeCluster = 60,
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiKey::Other(k) => write!(f, "ApiKey({k})"),
            known => fmt::Debug::fmt(known, f),
        }
    }
}

/// An inclusive range of API versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRange {
    /// Lowest version.
    pub min: i16,
    /// Highest version.
    pub max: i16,
}

impl VersionRange {
    /// True when `version` is in the range.
    pub fn contains(self, version: i16) -> bool {
        (self.min..=self.max).contains(&version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_keys_round_trip() {
        for k in -1..=20 {
            assert_eq!(ApiKey::from_i16(k).code(), k);
        }
        assert_eq!(ApiKey::from_i16(18), ApiKey::ApiVersions);
        assert_eq!(ApiKey::from_i16(1000), ApiKey::Other(1000));
        assert_eq!(ApiKey::Fetch.to_string(), "Fetch");
        assert_eq!(ApiKey::Other(1000).to_string(), "ApiKey(1000)");
    }
}

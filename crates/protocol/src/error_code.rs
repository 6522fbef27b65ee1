//! Kafka's broker error codes: all of Kafka 0.8.2's, and the later ones gregor's clients meet.

use std::fmt;

/// An error code as a broker sends it in a response (`int16`): every code of Kafka 0.8.2
/// ([`ErrorCode::all`]) and the later codes a client of today's brokers meets
/// ([`ErrorCode::later`]); any other keeps its number in [`ErrorCode::Unknown`].
///
/// `0` (no error) is not a variant: [`ErrorCode::from_i16`] returns `None` for it, so a value of
/// this type is always an error. Codes this crate does not know keep their number in
/// [`ErrorCode::Unknown`]. Display prints Kafka's name and meaning, e.g.
/// `NOT_LEADER_FOR_PARTITION (6): this broker is not the leader for that topic-partition`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// `-1` UNKNOWN: an unexpected server error.
    UnknownServerError,
    /// `1` OFFSET_OUT_OF_RANGE: the requested offset is outside the range kept for the partition.
    OffsetOutOfRange,
    /// `2` INVALID_MESSAGE (CORRUPT_MESSAGE): a message failed its CRC check or is malformed.
    InvalidMessage,
    /// `3` UNKNOWN_TOPIC_OR_PARTITION: the broker holds no replica of that topic-partition.
    UnknownTopicOrPartition,
    /// `4` INVALID_FETCH_SIZE: the requested fetch size is invalid.
    InvalidFetchSize,
    /// `5` LEADER_NOT_AVAILABLE: the partition has no leader right now (e.g. an election is running).
    LeaderNotAvailable,
    /// `6` NOT_LEADER_FOR_PARTITION: the broker is not the leader; the client's metadata is stale.
    NotLeaderForPartition,
    /// `7` REQUEST_TIMED_OUT: the request exceeded its timeout (for acks=-1 the message may still be stored).
    RequestTimedOut,
    /// `8` BROKER_NOT_AVAILABLE: the broker is not available.
    BrokerNotAvailable,
    /// `9` REPLICA_NOT_AVAILABLE: a replica is not available; in Metadata it comes with a valid leader.
    ReplicaNotAvailable,
    /// `10` MESSAGE_SIZE_TOO_LARGE: a message is larger than the broker's `message.max.bytes`.
    MessageSizeTooLarge,
    /// `11` STALE_CONTROLLER_EPOCH: a controller request carried an old epoch (inter-broker).
    StaleControllerEpoch,
    /// `12` OFFSET_METADATA_TOO_LARGE: the committed metadata string is too large.
    OffsetMetadataTooLarge,
    /// `13` STALE_LEADER_EPOCH: a request carried an old leader epoch (inter-broker).
    StaleLeaderEpoch,
    /// `14` OFFSETS_LOAD_IN_PROGRESS: the coordinator is still loading offsets.
    OffsetsLoadInProgress,
    /// `15` CONSUMER_COORDINATOR_NOT_AVAILABLE: the offsets topic is not ready yet.
    ConsumerCoordinatorNotAvailable,
    /// `16` NOT_COORDINATOR_FOR_CONSUMER: the broker is not the coordinator of that group.
    NotCoordinatorForConsumer,
    /// `17` INVALID_TOPIC: the topic is invalid for this request (e.g. producing to an internal topic).
    InvalidTopic,
    /// `18` MESSAGE_SET_SIZE_TOO_LARGE: a message set is larger than the log segment size.
    MessageSetSizeTooLarge,
    /// `19` NOT_ENOUGH_REPLICAS: fewer in-sync replicas than `min.insync.replicas`; nothing was written.
    NotEnoughReplicas,
    /// `20` NOT_ENOUGH_REPLICAS_AFTER_APPEND: written, but the ISR shrank below `min.insync.replicas`.
    NotEnoughReplicasAfterAppend,
    /// `21` INVALID_REQUIRED_ACKS: acks was not -1, 0 or 1.
    InvalidRequiredAcks,
    /// `22` ILLEGAL_GENERATION: the group's generation has moved on.
    IllegalGeneration,
    /// `25` UNKNOWN_MEMBER_ID: the group coordinator does not know this member.
    UnknownMemberId,
    /// `27` REBALANCE_IN_PROGRESS: the group is rebalancing.
    RebalanceInProgress,
    /// `29` TOPIC_AUTHORIZATION_FAILED: not authorized to access the topic.
    TopicAuthorizationFailed,
    /// `32` INVALID_TIMESTAMP: a record's timestamp is out of the topic's accepted range.
    InvalidTimestamp,
    /// `33` UNSUPPORTED_SASL_MECHANISM: the broker does not offer that SASL mechanism.
    UnsupportedSaslMechanism,
    /// `34` ILLEGAL_SASL_STATE: a request came at the wrong point of the SASL exchange.
    IllegalSaslState,
    /// `35` UNSUPPORTED_VERSION: the broker does not speak that version of the request.
    UnsupportedVersion,
    /// `36` TOPIC_ALREADY_EXISTS: a topic of that name exists already.
    TopicAlreadyExists,
    /// `37` INVALID_PARTITIONS: the number of partitions is not valid.
    InvalidPartitions,
    /// `38` INVALID_REPLICATION_FACTOR: the replication factor is not valid for the brokers there are.
    InvalidReplicationFactor,
    /// `41` NOT_CONTROLLER: this broker is not the controller.
    NotController,
    /// `42` INVALID_REQUEST: the broker could not make sense of the request.
    InvalidRequest,
    /// `43` UNSUPPORTED_FOR_MESSAGE_FORMAT: the topic's message format does not support the request.
    UnsupportedForMessageFormat,
    /// `45` OUT_OF_ORDER_SEQUENCE_NUMBER: an idempotent producer's batch does not follow its last one.
    OutOfOrderSequenceNumber,
    /// `46` DUPLICATE_SEQUENCE_NUMBER: an idempotent producer's batch was written already.
    DuplicateSequenceNumber,
    /// `47` INVALID_PRODUCER_EPOCH: the producer's epoch is older than the one the broker knows.
    InvalidProducerEpoch,
    /// `48` INVALID_TXN_STATE: the request does not fit the producer's transaction state.
    InvalidTxnState,
    /// `56` KAFKA_STORAGE_ERROR: the replica's log directory failed; another replica may lead soon.
    KafkaStorageError,
    /// `58` SASL_AUTHENTICATION_FAILED: SASL authentication failed (wrong credentials or mechanism).
    SaslAuthenticationFailed,
    /// `59` UNKNOWN_PRODUCER_ID: the broker no longer has state for this producer id.
    UnknownProducerId,
    /// `74` FENCED_LEADER_EPOCH: the leader epoch in the request is older than the broker's.
    FencedLeaderEpoch,
    /// `75` UNKNOWN_LEADER_EPOCH: the leader epoch in the request is newer than the broker's.
    UnknownLeaderEpoch,
    /// `76` UNSUPPORTED_COMPRESSION_TYPE: the request's version does not allow that codec.
    UnsupportedCompressionType,
    /// `79` MEMBER_ID_REQUIRED: the group needs the member to rejoin with the id it was given.
    MemberIdRequired,
    /// `87` INVALID_RECORD: the broker refused a record or batch as invalid.
    InvalidRecord,
    /// `89` THROTTLING_QUOTA_EXCEEDED: a quota was exceeded; try again later.
    ThrottlingQuotaExceeded,
    /// `90` PRODUCER_FENCED: a newer producer with the same transactional id exists.
    ProducerFenced,
    /// `100` UNKNOWN_TOPIC_ID: the broker does not know that topic id.
    UnknownTopicId,
    /// `103` OFFSET_NOT_AVAILABLE: the leader cannot answer for that offset yet (its high watermark is catching up).
    OffsetNotAvailable,
    /// A code this crate does not name; the number as received.
    Unknown(i16),
}

/// Codes of later Kafka versions that gregor's clients meet (producing, fetching, negotiating,
/// authenticating, creating topics, groups), with their names and meanings, in code order.
const LATER: &[(i16, ErrorCode, &str, &str)] = &[
    (21, ErrorCode::InvalidRequiredAcks, "INVALID_REQUIRED_ACKS", "acks was not -1, 0 or 1"),
    (22, ErrorCode::IllegalGeneration, "ILLEGAL_GENERATION", "the group's generation has moved on"),
    (25, ErrorCode::UnknownMemberId, "UNKNOWN_MEMBER_ID", "the group coordinator does not know this member"),
    (27, ErrorCode::RebalanceInProgress, "REBALANCE_IN_PROGRESS", "the group is rebalancing"),
    (29, ErrorCode::TopicAuthorizationFailed, "TOPIC_AUTHORIZATION_FAILED", "not authorized to access the topic"),
    (32, ErrorCode::InvalidTimestamp, "INVALID_TIMESTAMP", "a record's timestamp is out of the topic's accepted range"),
    (
        33,
        ErrorCode::UnsupportedSaslMechanism,
        "UNSUPPORTED_SASL_MECHANISM",
        "the broker does not offer that SASL mechanism",
    ),
    (34, ErrorCode::IllegalSaslState, "ILLEGAL_SASL_STATE", "a request came at the wrong point of the SASL exchange"),
    (35, ErrorCode::UnsupportedVersion, "UNSUPPORTED_VERSION", "the broker does not speak that version of the request"),
    (36, ErrorCode::TopicAlreadyExists, "TOPIC_ALREADY_EXISTS", "a topic of that name exists already"),
    (37, ErrorCode::InvalidPartitions, "INVALID_PARTITIONS", "the number of partitions is not valid"),
    (
        38,
        ErrorCode::InvalidReplicationFactor,
        "INVALID_REPLICATION_FACTOR",
        "the replication factor is not valid for the brokers there are",
    ),
    (41, ErrorCode::NotController, "NOT_CONTROLLER", "this broker is not the controller"),
    (42, ErrorCode::InvalidRequest, "INVALID_REQUEST", "the broker could not make sense of the request"),
    (
        43,
        ErrorCode::UnsupportedForMessageFormat,
        "UNSUPPORTED_FOR_MESSAGE_FORMAT",
        "the topic's message format does not support the request",
    ),
    (
        45,
        ErrorCode::OutOfOrderSequenceNumber,
        "OUT_OF_ORDER_SEQUENCE_NUMBER",
        "an idempotent producer's batch does not follow its last one",
    ),
    (
        46,
        ErrorCode::DuplicateSequenceNumber,
        "DUPLICATE_SEQUENCE_NUMBER",
        "an idempotent producer's batch was written already",
    ),
    (
        47,
        ErrorCode::InvalidProducerEpoch,
        "INVALID_PRODUCER_EPOCH",
        "the producer's epoch is older than the one the broker knows",
    ),
    (48, ErrorCode::InvalidTxnState, "INVALID_TXN_STATE", "the request does not fit the producer's transaction state"),
    (
        56,
        ErrorCode::KafkaStorageError,
        "KAFKA_STORAGE_ERROR",
        "the replica's log directory failed; another replica may lead soon",
    ),
    (
        58,
        ErrorCode::SaslAuthenticationFailed,
        "SASL_AUTHENTICATION_FAILED",
        "SASL authentication failed (wrong credentials or mechanism)",
    ),
    (59, ErrorCode::UnknownProducerId, "UNKNOWN_PRODUCER_ID", "the broker no longer has state for this producer id"),
    (
        74,
        ErrorCode::FencedLeaderEpoch,
        "FENCED_LEADER_EPOCH",
        "the leader epoch in the request is older than the broker's",
    ),
    (
        75,
        ErrorCode::UnknownLeaderEpoch,
        "UNKNOWN_LEADER_EPOCH",
        "the leader epoch in the request is newer than the broker's",
    ),
    (
        76,
        ErrorCode::UnsupportedCompressionType,
        "UNSUPPORTED_COMPRESSION_TYPE",
        "the request's version does not allow that codec",
    ),
    (
        79,
        ErrorCode::MemberIdRequired,
        "MEMBER_ID_REQUIRED",
        "the group needs the member to rejoin with the id it was given",
    ),
    (87, ErrorCode::InvalidRecord, "INVALID_RECORD", "the broker refused a record or batch as invalid"),
    (89, ErrorCode::ThrottlingQuotaExceeded, "THROTTLING_QUOTA_EXCEEDED", "a quota was exceeded; try again later"),
    (90, ErrorCode::ProducerFenced, "PRODUCER_FENCED", "a newer producer with the same transactional id exists"),
    (100, ErrorCode::UnknownTopicId, "UNKNOWN_TOPIC_ID", "the broker does not know that topic id"),
    (
        103,
        ErrorCode::OffsetNotAvailable,
        "OFFSET_NOT_AVAILABLE",
        "the leader cannot answer for that offset yet (its high watermark is catching up)",
    ),
];

/// Every code Kafka 0.8.2 defines, with its name and meaning, in code order.
const TABLE: &[(i16, ErrorCode, &str, &str)] = &[
    (-1, ErrorCode::UnknownServerError, "UNKNOWN", "an unexpected server error"),
    (
        1,
        ErrorCode::OffsetOutOfRange,
        "OFFSET_OUT_OF_RANGE",
        "the requested offset is outside the range of offsets kept for the partition",
    ),
    (2, ErrorCode::InvalidMessage, "INVALID_MESSAGE", "the message failed its CRC check or is otherwise corrupt"),
    (
        3,
        ErrorCode::UnknownTopicOrPartition,
        "UNKNOWN_TOPIC_OR_PARTITION",
        "this broker holds no replica of that topic-partition",
    ),
    (4, ErrorCode::InvalidFetchSize, "INVALID_FETCH_SIZE", "the requested fetch size is invalid"),
    (
        5,
        ErrorCode::LeaderNotAvailable,
        "LEADER_NOT_AVAILABLE",
        "there is no leader for this topic-partition, as a leader election is in progress",
    ),
    (
        6,
        ErrorCode::NotLeaderForPartition,
        "NOT_LEADER_FOR_PARTITION",
        "this broker is not the leader for that topic-partition",
    ),
    (7, ErrorCode::RequestTimedOut, "REQUEST_TIMED_OUT", "the request timed out"),
    (8, ErrorCode::BrokerNotAvailable, "BROKER_NOT_AVAILABLE", "the broker is not available"),
    (
        9,
        ErrorCode::ReplicaNotAvailable,
        "REPLICA_NOT_AVAILABLE",
        "the replica is not available for the requested topic-partition",
    ),
    (
        10,
        ErrorCode::MessageSizeTooLarge,
        "MESSAGE_SIZE_TOO_LARGE",
        "the message is larger than the maximum the broker accepts",
    ),
    (
        11,
        ErrorCode::StaleControllerEpoch,
        "STALE_CONTROLLER_EPOCH",
        "the request came from a controller with an older epoch",
    ),
    (
        12,
        ErrorCode::OffsetMetadataTooLarge,
        "OFFSET_METADATA_TOO_LARGE",
        "the metadata field of the offset request was too large",
    ),
    (13, ErrorCode::StaleLeaderEpoch, "STALE_LEADER_EPOCH", "the request carried an older leader epoch"),
    (
        14,
        ErrorCode::OffsetsLoadInProgress,
        "OFFSETS_LOAD_IN_PROGRESS",
        "the coordinator is loading offsets and cannot serve them yet",
    ),
    (
        15,
        ErrorCode::ConsumerCoordinatorNotAvailable,
        "CONSUMER_COORDINATOR_NOT_AVAILABLE",
        "the offsets topic has not been created yet or the coordinator is not active",
    ),
    (
        16,
        ErrorCode::NotCoordinatorForConsumer,
        "NOT_COORDINATOR_FOR_CONSUMER",
        "this broker is not the coordinator for that consumer group",
    ),
    (17, ErrorCode::InvalidTopic, "INVALID_TOPIC", "the request attempted an operation on an invalid topic"),
    (
        18,
        ErrorCode::MessageSetSizeTooLarge,
        "MESSAGE_SET_SIZE_TOO_LARGE",
        "the message set is larger than the log segment size",
    ),
    (
        19,
        ErrorCode::NotEnoughReplicas,
        "NOT_ENOUGH_REPLICAS",
        "fewer in-sync replicas than min.insync.replicas; the messages were rejected",
    ),
    (
        20,
        ErrorCode::NotEnoughReplicasAfterAppend,
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        "the messages were written, but to fewer in-sync replicas than min.insync.replicas",
    ),
];

impl ErrorCode {
    /// Every code Kafka 0.8.2 defines, in numeric order (`-1`, then `1..=20`).
    pub fn all() -> impl Iterator<Item = ErrorCode> {
        TABLE.iter().map(|row| row.1)
    }

    /// The codes of later Kafka versions this crate names (`21` INVALID_REQUIRED_ACKS to `103`
    /// OFFSET_NOT_AVAILABLE, with gaps), in numeric order. Their numbers never clash with
    /// 0.8.2's: Kafka only added codes.
    pub fn later() -> impl Iterator<Item = ErrorCode> {
        LATER.iter().map(|row| row.1)
    }

    /// Reads a code from the wire: `None` for `0` (no error), [`ErrorCode::Unknown`] for a code
    /// this crate does not name.
    pub fn from_i16(code: i16) -> Option<ErrorCode> {
        if code == 0 {
            return None;
        }
        Some(TABLE.iter().chain(LATER).find(|row| row.0 == code).map_or(ErrorCode::Unknown(code), |row| row.1))
    }

    /// The number on the wire.
    pub fn code(self) -> i16 {
        match self {
            ErrorCode::Unknown(code) => code,
            known => TABLE.iter().chain(LATER).find(|row| row.1 == known).map_or(-1, |row| row.0),
        }
    }

    /// Kafka's name for the code, e.g. `NOT_LEADER_FOR_PARTITION`; `UNKNOWN_CODE` for a code
    /// this crate does not name.
    pub fn name(self) -> &'static str {
        self.row().map_or("UNKNOWN_CODE", |row| row.2)
    }

    /// What the code means, in a few words.
    pub fn description(self) -> &'static str {
        self.row().map_or("a code gregor does not know", |row| row.3)
    }

    /// True when the same request may succeed if sent again, usually after a metadata refresh
    /// and a backoff: leader moves, elections, timeouts, coordinators that are not ready.
    ///
    /// [`ErrorCode::RequestTimedOut`] is retriable, but a Produce retried after it may store the
    /// message twice (the leader had appended it).
    pub fn is_retriable(self) -> bool {
        matches!(
            self,
            ErrorCode::UnknownTopicOrPartition
                | ErrorCode::LeaderNotAvailable
                | ErrorCode::NotLeaderForPartition
                | ErrorCode::RequestTimedOut
                | ErrorCode::BrokerNotAvailable
                | ErrorCode::ReplicaNotAvailable
                | ErrorCode::OffsetsLoadInProgress
                | ErrorCode::ConsumerCoordinatorNotAvailable
                | ErrorCode::NotCoordinatorForConsumer
                | ErrorCode::NotEnoughReplicas
                | ErrorCode::NotEnoughReplicasAfterAppend
                | ErrorCode::NotController
                | ErrorCode::KafkaStorageError
                | ErrorCode::FencedLeaderEpoch
                | ErrorCode::UnknownLeaderEpoch
                | ErrorCode::ThrottlingQuotaExceeded
                | ErrorCode::UnknownTopicId
                | ErrorCode::OffsetNotAvailable
        )
    }

    /// True when the client's view of leaders or coordinators is stale and metadata (or the
    /// coordinator) must be looked up again before a retry.
    pub fn needs_metadata_refresh(self) -> bool {
        matches!(
            self,
            ErrorCode::UnknownTopicOrPartition
                | ErrorCode::LeaderNotAvailable
                | ErrorCode::NotLeaderForPartition
                | ErrorCode::BrokerNotAvailable
                | ErrorCode::NotCoordinatorForConsumer
                | ErrorCode::ConsumerCoordinatorNotAvailable
                | ErrorCode::NotController
                | ErrorCode::KafkaStorageError
                | ErrorCode::FencedLeaderEpoch
                | ErrorCode::UnknownLeaderEpoch
                | ErrorCode::UnknownTopicId
        )
    }

    fn row(self) -> Option<&'static (i16, ErrorCode, &'static str, &'static str)> {
        match self {
            ErrorCode::Unknown(_) => None,
            known => TABLE.iter().chain(LATER).find(|row| row.1 == known),
        }
    }
}

/// Converts a wire code to `Ok(())` for 0 and `Err(code)` otherwise.
pub fn check(code: i16) -> Result<(), ErrorCode> {
    ErrorCode::from_i16(code).map_or(Ok(()), Err)
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.name(), self.code(), self.description())
    }
}

impl std::error::Error for ErrorCode {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_0_8_2_code_round_trips() {
        let codes: Vec<i16> = ErrorCode::all().map(ErrorCode::code).collect();
        let mut expected = vec![-1];
        expected.extend(1..=20);
        assert_eq!(codes, expected);
        for code in expected {
            let e = ErrorCode::from_i16(code).unwrap();
            assert!(!matches!(e, ErrorCode::Unknown(_)), "{code}");
            assert_eq!(e.code(), code);
        }
    }

    #[test]
    fn zero_is_no_error_and_unknown_codes_keep_their_number() {
        assert_eq!(ErrorCode::from_i16(0), None);
        assert_eq!(check(0), Ok(()));
        assert_eq!(check(6), Err(ErrorCode::NotLeaderForPartition));
        let e = ErrorCode::from_i16(77).unwrap();
        assert_eq!(e, ErrorCode::Unknown(77));
        assert_eq!(e.code(), 77);
        assert_eq!(e.name(), "UNKNOWN_CODE");
        assert!(!e.is_retriable());
        assert_eq!(ErrorCode::from_i16(-2), Some(ErrorCode::Unknown(-2)));
    }

    #[test]
    fn display_names_the_code_and_its_meaning() {
        assert_eq!(
            ErrorCode::NotLeaderForPartition.to_string(),
            "NOT_LEADER_FOR_PARTITION (6): this broker is not the leader for that topic-partition"
        );
        assert_eq!(ErrorCode::UnknownServerError.to_string(), "UNKNOWN (-1): an unexpected server error");
        assert_eq!(ErrorCode::Unknown(99).to_string(), "UNKNOWN_CODE (99): a code gregor does not know");
        assert_eq!(
            ErrorCode::from_i16(74).unwrap().to_string(),
            "FENCED_LEADER_EPOCH (74): the leader epoch in the request is older than the broker's"
        );
    }

    #[test]
    fn retriable_codes_are_the_transient_ones() {
        let retriable: Vec<i16> = ErrorCode::all().filter(|e| e.is_retriable()).map(ErrorCode::code).collect();
        assert_eq!(retriable, vec![3, 5, 6, 7, 8, 9, 14, 15, 16, 19, 20]);
        for fatal in [1, 2, 4, 10, 12, 17, 18, -1] {
            assert!(!ErrorCode::from_i16(fatal).unwrap().is_retriable(), "{fatal}");
        }
    }

    #[test]
    fn later_codes_round_trip_and_say_whether_to_retry() {
        let mut last = 20;
        for e in ErrorCode::later() {
            let code = e.code();
            assert!(code > last, "in order, after 0.8.2's: {code}");
            last = code;
            assert_eq!(ErrorCode::from_i16(code), Some(e));
            assert!(!matches!(e, ErrorCode::Unknown(_)) && e.name() != "UNKNOWN_CODE", "{code}");
            assert!(!e.needs_metadata_refresh() || e.is_retriable(), "{e}: a refresh implies a retry");
        }
        let retriable: Vec<i16> = ErrorCode::later().filter(|e| e.is_retriable()).map(ErrorCode::code).collect();
        assert_eq!(retriable, vec![41, 56, 74, 75, 89, 100, 103]);
        let refresh: Vec<i16> =
            ErrorCode::later().filter(|e| e.needs_metadata_refresh()).map(ErrorCode::code).collect();
        assert_eq!(refresh, vec![41, 56, 74, 75, 100]);
        // the idempotent producer's sequence codes are not plain retries: the producer decides
        for code in [45, 46, 47, 59] {
            assert!(!ErrorCode::from_i16(code).unwrap().is_retriable(), "{code}");
        }
        // 0.8.2's list is unchanged
        assert_eq!(ErrorCode::all().count(), 21);
    }
}

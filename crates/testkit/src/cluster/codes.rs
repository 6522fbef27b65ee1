//! The error codes the fake brokers answer, as the wire carries them: Kafka's numbers, for the
//! answers of the modern mode (0.8.2's own codes are `gregor_protocol::ErrorCode`'s). Kept as
//! plain `i16` constants, one place for the modern mode's files.

/// `2`: a batch's CRC or records are broken.
pub(crate) const CORRUPT_MESSAGE: i16 = 2;
/// `3`: no such topic or partition.
pub(crate) const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
/// `10`: a batch larger than `max.message.bytes`.
pub(crate) const MESSAGE_TOO_LARGE: i16 = 10;
/// `15`: no coordinator (yet) for a group, or transactions.
pub(crate) const COORDINATOR_NOT_AVAILABLE: i16 = 15;
/// `16`: this broker does not coordinate the group.
pub(crate) const NOT_COORDINATOR: i16 = 16;
/// `17`: a topic name Kafka refuses.
pub(crate) const INVALID_TOPIC: i16 = 17;
/// `21`: acks other than -1, 0 and 1.
pub(crate) const INVALID_REQUIRED_ACKS: i16 = 21;
/// `22`: a generation the group has moved past.
pub(crate) const ILLEGAL_GENERATION: i16 = 22;
/// `23`: a protocol type or protocols the group cannot take.
pub(crate) const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
/// `25`: a member the group does not know.
pub(crate) const UNKNOWN_MEMBER_ID: i16 = 25;
/// `26`: a session timeout outside the broker's bounds.
pub(crate) const INVALID_SESSION_TIMEOUT: i16 = 26;
/// `27`: the group is rebalancing.
pub(crate) const REBALANCE_IN_PROGRESS: i16 = 27;
/// `33`: a SASL mechanism the listener does not offer.
pub(crate) const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
/// `35`: a version of the request the broker does not speak.
pub(crate) const UNSUPPORTED_VERSION: i16 = 35;
/// `36`: the topic exists.
pub(crate) const TOPIC_ALREADY_EXISTS: i16 = 36;
/// `37`: a partition count that is not valid.
pub(crate) const INVALID_PARTITIONS: i16 = 37;
/// `38`: a replication factor the brokers cannot meet.
pub(crate) const INVALID_REPLICATION_FACTOR: i16 = 38;
/// `39`: an assignment that is not valid.
pub(crate) const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
/// `40`: an unknown config or a value it refuses.
pub(crate) const INVALID_CONFIG: i16 = 40;
/// `42`: a request the broker cannot make sense of.
pub(crate) const INVALID_REQUEST: i16 = 42;
/// `44`: more than the broker allows at once.
pub(crate) const POLICY_VIOLATION: i16 = 44;
/// `45`: a gap in an idempotent producer's sequence.
pub(crate) const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
/// `47`: an epoch older than the producer's current one.
pub(crate) const INVALID_PRODUCER_EPOCH: i16 = 47;
/// `48`: a transactional batch outside a transaction.
pub(crate) const INVALID_TXN_STATE: i16 = 48;
/// `58`: wrong credentials.
pub(crate) const SASL_AUTHENTICATION_FAILED: i16 = 58;
/// `73`: `delete.topic.enable` is off.
pub(crate) const TOPIC_DELETION_DISABLED: i16 = 73;
/// `74`: a leader epoch older than the broker's.
pub(crate) const FENCED_LEADER_EPOCH: i16 = 74;
/// `75`: a leader epoch newer than the broker's.
pub(crate) const UNKNOWN_LEADER_EPOCH: i16 = 75;
/// `79`: a new member must rejoin with the id it is given.
pub(crate) const MEMBER_ID_REQUIRED: i16 = 79;
/// `87`: not exactly one RecordBatch v2, or a record Kafka refuses.
pub(crate) const INVALID_RECORD: i16 = 87;
/// `100`: a topic id the broker does not know.
pub(crate) const UNKNOWN_TOPIC_ID: i16 = 100;

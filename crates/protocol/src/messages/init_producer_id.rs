//! API key 22 — InitProducerId (Kafka 0.11+; idempotent and transactional producers). Versions:
//! v0-v4 (v2+ flexible).
//!
//! ```text
//! InitProducerIdRequest v0-v2  => transactional_id nullable string, transaction_timeout_ms int32
//! InitProducerIdRequest v3+    => transactional_id, transaction_timeout_ms, producer_id int64,
//!                                 producer_epoch int16                     (v2+: compact, tags)
//! InitProducerIdResponse       => throttle_time_ms int32, error_code int16, producer_id int64,
//!                                 producer_epoch int16
//! ```
//!
//! An idempotent producer sends a null transactional id; from v3 a producer that already has an
//! id and epoch sends them to bump its epoch after an error rather than get a new id.
//!
//! Kafka 3.7.0 (`tests/data/kafka-3.7.0`): librdkafka and kafka-python both use v4 with a null
//! transactional id, producer id -1 and epoch -1; librdkafka sends a timeout of -1,
//! kafka-python 0. On a fresh broker the first answer can be 14 COORDINATOR_LOAD_IN_PROGRESS
//! (producer id -1, epoch -1); then producer id 0, epoch 0.

use crate::api_key::ApiKey;
use crate::error_code::ErrorCode;
use crate::message;

message! {
    /// InitProducerId request.
    pub struct InitProducerIdRequest {
        /// v0+. The transactional id, or null for an idempotent producer.
        transactional_id: Option<String> [0],
        /// v0+. How long the coordinator waits before aborting an idle transaction, in ms (with a
        /// transactional id only).
        transaction_timeout_ms: i32 [0],
        /// v3+. The producer's current id, -1 for none.
        producer_id: i64 [3] = -1,
        /// v3+. The producer's current epoch, -1 for none.
        producer_epoch: i16 [3] = -1,
    }
}

message! {
    /// InitProducerId response.
    pub struct InitProducerIdResponse {
        /// v0+. How long the request was throttled, in ms.
        throttle_time_ms: i32 [0],
        /// v0+. 0, or an [`ErrorCode`].
        error_code: i16 [0],
        /// v0+. The producer id, -1 on error.
        producer_id: i64 [0] = -1,
        /// v0+. The producer epoch.
        producer_epoch: i16 [0],
    }
}

crate::top_level!(request InitProducerIdRequest: ApiKey::InitProducerId, versions 0..=4, flexible Some(2), response InitProducerIdResponse);
crate::top_level!(response InitProducerIdResponse for InitProducerIdRequest);

impl InitProducerIdResponse {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

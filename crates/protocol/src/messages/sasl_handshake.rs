//! API key 17 — SaslHandshake (Kafka 0.10+). Versions: v0-v1 (never flexible).
//!
//! ```text
//! SaslHandshakeRequest  => mechanism string
//! SaslHandshakeResponse => error_code int16, [mechanisms string]
//! ```
//!
//! The first request on a SASL connection: the client names a mechanism ("PLAIN",
//! "SCRAM-SHA-256", "GSSAPI", ...); the broker answers 0, or 33 UNSUPPORTED_SASL_MECHANISM, with
//! the mechanisms it has enabled. After v0 the SASL tokens follow as raw size-prefixed frames;
//! after v1 they travel in [`SaslAuthenticateRequest`](super::SaslAuthenticateRequest)s. Never
//! flexible: a newer version would break clients up to Kafka 2.4 (KAFKA-9577).

use crate::api_key::ApiKey;
use crate::error_code::ErrorCode;
use crate::message;

message! {
    /// SaslHandshake request.
    pub struct SaslHandshakeRequest {
        /// v0+. The SASL mechanism the client chose.
        mechanism: String [0],
    }
}

message! {
    /// SaslHandshake response.
    pub struct SaslHandshakeResponse {
        /// v0+. 0, or an [`ErrorCode`] (33: mechanism not enabled).
        error_code: i16 [0],
        /// v0+. The mechanisms the broker has enabled.
        mechanisms: Vec<String> [0],
    }
}

crate::top_level!(request SaslHandshakeRequest: ApiKey::SaslHandshake, versions 0..=1, flexible None, response SaslHandshakeResponse);
crate::top_level!(response SaslHandshakeResponse for SaslHandshakeRequest);

impl SaslHandshakeResponse {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

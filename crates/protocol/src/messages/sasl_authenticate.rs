//! API key 36 — SaslAuthenticate (Kafka 1.0+). Versions: v0-v2 (v2 flexible).
//!
//! ```text
//! SaslAuthenticateRequest      => auth_bytes bytes                          (v2: compact, tags)
//! SaslAuthenticateResponse v0  => error_code int16, error_message nullable string, auth_bytes bytes
//! SaslAuthenticateResponse v1+ => error_code, error_message, auth_bytes, session_lifetime_ms int64
//! ```
//!
//! After a [`SaslHandshakeRequest`](super::SaslHandshakeRequest) v1, each SASL token of the
//! chosen mechanism travels in one request and the broker's in the answer, until the mechanism
//! completes. A failure is 58 SASL_AUTHENTICATION_FAILED with a message. From v1 the broker says
//! how long the session lasts (0: no limit); the client re-authenticates before then (KIP-368).

use crate::schema::RedactedBytes;

use crate::api_key::ApiKey;
use crate::error_code::ErrorCode;
use crate::message;

message! {
    /// SaslAuthenticate request.
    pub struct SaslAuthenticateRequest {
        /// v0+. The client's SASL token.
        auth_bytes: RedactedBytes [0],
    }
}

message! {
    /// SaslAuthenticate response.
    pub struct SaslAuthenticateResponse {
        /// v0+. 0, or an [`ErrorCode`] (58: authentication failed).
        error_code: i16 [0],
        /// v0+. The error's text, or null.
        error_message: Option<String> [0],
        /// v0+. The broker's SASL token.
        auth_bytes: RedactedBytes [0],
        /// v1+. How long the session lasts in ms, 0 for no limit.
        session_lifetime_ms: i64 [1],
    }
}

crate::top_level!(request SaslAuthenticateRequest: ApiKey::SaslAuthenticate, versions 0..=2, flexible Some(2), response SaslAuthenticateResponse);
crate::top_level!(response SaslAuthenticateResponse for SaslAuthenticateRequest);

impl SaslAuthenticateResponse {
    /// The error, if any.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i16(self.error_code)
    }
}

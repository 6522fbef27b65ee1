//! What a Kafka 0.8.2 broker understands: the fake brokers decode requests with gregor's codec,
//! which also speaks later versions of some APIs, and refuse those versions as 0.8.2 does (by
//! closing the connection).

use bytes::Bytes;
use gregor_protocol::frame::{ApiKey, RequestHeader};
use gregor_protocol::messages::AnyRequest;
use gregor_protocol::Error;

/// The highest version of `api` Kafka 0.8.2 answers, `None` for an API it does not serve to
/// clients.
pub(crate) fn max_version(api: ApiKey) -> Option<i16> {
    match api {
        ApiKey::Produce | ApiKey::Fetch | ApiKey::Offsets | ApiKey::Metadata | ApiKey::ConsumerMetadata => Some(0),
        ApiKey::OffsetCommit | ApiKey::OffsetFetch => Some(1),
        _ => None,
    }
}

/// [`AnyRequest::decode`], refusing the versions Kafka 0.8.2 does not have.
///
/// # Errors
///
/// [`Error::UnsupportedApiKey`] for an API 0.8.2 does not serve to clients,
/// [`Error::UnsupportedVersion`] for a version past 0.8.2's, and those of [`AnyRequest::decode`].
pub(crate) fn decode_request(header: &RequestHeader, body: Bytes) -> Result<AnyRequest, Error> {
    match max_version(header.api_key) {
        None => Err(Error::UnsupportedApiKey(header.api_key.code())),
        Some(max) if header.api_version > max => {
            Err(Error::UnsupportedVersion { api: header.api_key, version: header.api_version, min: 0, max })
        }
        _ => AnyRequest::decode(header, body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_past_0_8_2_are_refused() {
        let header = |api_key, api_version| RequestHeader {
            api_key,
            api_version,
            correlation_id: 1,
            client_id: None,
            unknown_tagged_fields: Default::default(),
        };
        // an OffsetCommit v2 body that gregor's codec reads: group "", generation, member, retention, no topics
        let body =
            Bytes::from_static(&[0, 0, 0, 0, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
        assert!(AnyRequest::decode(&header(ApiKey::OffsetCommit, 2), body.clone()).is_ok());
        let err = decode_request(&header(ApiKey::OffsetCommit, 2), body).unwrap_err();
        assert!(matches!(err, Error::UnsupportedVersion { version: 2, max: 1, .. }), "{err}");
        assert!(decode_request(&header(ApiKey::ConsumerMetadata, 1), Bytes::from_static(&[0, 1, b'g', 0])).is_err());
        assert!(decode_request(&header(ApiKey::ConsumerMetadata, 0), Bytes::from_static(&[0, 1, b'g'])).is_ok());
        // ApiVersions reads as a request, but 0.8.2 has no such API: refused (the broker closes)
        assert!(AnyRequest::decode(&header(ApiKey::ApiVersions, 0), Bytes::new()).is_ok());
        let err = decode_request(&header(ApiKey::ApiVersions, 0), Bytes::new()).unwrap_err();
        assert!(matches!(err, Error::UnsupportedApiKey(18)), "{err}");
    }
}

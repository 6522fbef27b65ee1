//! SASL authentication (`BrokerConnection::authenticate`) against a scripted broker that answers
//! ApiVersions with a genuine Kafka 3.7.0 answer (from gregor-protocol's captures), then
//! SaslHandshake and SaslAuthenticate with the testkit's broker-side SASL (written from the
//! RFCs apart from gregor-net's client side), then Metadata v0 once authenticated.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::BytesMut;
use common::{empty_metadata_v0, fixture, read_request};
use gregor_net::{BrokerConnection, ConnectionConfig, Error, SaslConfig, SaslMechanism};
use gregor_protocol::frame::{self, ApiKey};
use gregor_protocol::messages::{
    MetadataRequest, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use gregor_protocol::Decode;
use gregor_testkit::sasl::{Mechanism, SaslServer, Step};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// What the scripted broker saw: the APIs in order, and who authenticated.
#[derive(Default, Debug)]
struct Seen {
    apis: Vec<ApiKey>,
    user: Option<String>,
}

/// A broker offering `offered`, with one user `alice` / `wonderland`.
async fn broker(offered: Mechanism) -> (String, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let log = seen.clone();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let users = HashMap::from([("alice".to_string(), "wonderland".to_string())]);
        let mut server = SaslServer::new(offered, users);
        while let Some((header, mut body)) = read_request(&mut socket).await {
            log.lock().unwrap().apis.push(header.api_key);
            let mut out = BytesMut::new();
            let mut close = false;
            match header.api_key {
                ApiKey::ApiVersions => {
                    out.extend_from_slice(&fixture("api_versions_v3_connect_1.resp.bin"));
                    out[4..8].copy_from_slice(&header.correlation_id.to_be_bytes());
                }
                ApiKey::SaslHandshake => {
                    let request = SaslHandshakeRequest::decode(header.api_version, &mut body).unwrap();
                    let answer = SaslHandshakeResponse {
                        error_code: if request.mechanism == offered.name() { 0 } else { 33 },
                        mechanisms: vec![offered.name().to_string()],
                        ..Default::default()
                    };
                    frame::encode_response_for::<SaslHandshakeRequest>(
                        header.correlation_id,
                        header.api_version,
                        &answer,
                        &mut out,
                    )
                    .unwrap();
                }
                ApiKey::SaslAuthenticate => {
                    let request = SaslAuthenticateRequest::decode(header.api_version, &mut body).unwrap();
                    let mut answer = SaslAuthenticateResponse::default();
                    match server.step(&request.auth_bytes, "server-nonce-7f3a", b"pepper") {
                        Step::Continue(bytes) => answer.auth_bytes = bytes.into(),
                        Step::Done { answer: bytes, user } => {
                            answer.auth_bytes = bytes.into();
                            log.lock().unwrap().user = Some(user);
                        }
                        Step::Failed(message) => {
                            answer.error_code = 58;
                            answer.error_message = Some(message);
                            close = true;
                        }
                    }
                    frame::encode_response_for::<SaslAuthenticateRequest>(
                        header.correlation_id,
                        header.api_version,
                        &answer,
                        &mut out,
                    )
                    .unwrap();
                }
                ApiKey::Metadata => {
                    assert!(log.lock().unwrap().user.is_some(), "Metadata before authentication");
                    out = empty_metadata_v0(header.correlation_id);
                }
                other => panic!("unexpected {other}"),
            }
            socket.write_all(&out).await.unwrap();
            if close {
                return;
            }
        }
    });
    (addr, seen)
}

async fn connect(addr: &str) -> BrokerConnection {
    let config = ConnectionConfig::builder().api_version_request(true).build().unwrap();
    BrokerConnection::connect(addr, &config).await.unwrap()
}

#[tokio::test]
async fn scram_sha_256_and_512_and_plain_authenticate_then_requests_flow() {
    for (ours, theirs) in [
        (SaslMechanism::ScramSha256, Mechanism::ScramSha256),
        (SaslMechanism::ScramSha512, Mechanism::ScramSha512),
        (SaslMechanism::Plain, Mechanism::Plain),
    ] {
        let (addr, seen) = broker(theirs).await;
        let conn = connect(&addr).await;
        conn.authenticate(&SaslConfig::new(ours, "alice", "wonderland")).await.unwrap();
        conn.request(0, &MetadataRequest::default()).await.unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.user.as_deref(), Some("alice"), "{ours}");
        let rounds = if ours == SaslMechanism::Plain { 1 } else { 2 };
        let mut want = vec![ApiKey::ApiVersions, ApiKey::SaslHandshake];
        want.extend(std::iter::repeat_n(ApiKey::SaslAuthenticate, rounds));
        want.push(ApiKey::Metadata);
        assert_eq!(seen.apis, want, "{ours}");
    }
}

#[tokio::test]
async fn a_wrong_password_is_one_clear_error_with_the_brokers_words_and_no_password() {
    let (addr, _) = broker(Mechanism::ScramSha512).await;
    let conn = connect(&addr).await;
    let err =
        conn.authenticate(&SaslConfig::new(SaslMechanism::ScramSha512, "alice", "looking-glass")).await.unwrap_err();
    let Error::Sasl { addr: named, reason, .. } = &err else { panic!("{err:?}") };
    assert_eq!(named, &addr);
    assert!(reason.contains("error 58") && reason.contains("invalid credentials"), "{reason}");
    assert!(!err.is_retriable());
    for shown in [err.to_string(), format!("{err:?}")] {
        assert!(!shown.contains("looking-glass"), "{shown}");
    }
}

#[tokio::test]
async fn a_mechanism_the_broker_does_not_offer_names_what_it_offers() {
    let (addr, _) = broker(Mechanism::Plain).await;
    let conn = connect(&addr).await;
    let err = conn.authenticate(&SaslConfig::new(SaslMechanism::ScramSha256, "alice", "wonderland")).await.unwrap_err();
    assert!(err.to_string().ends_with("the broker does not offer SCRAM-SHA-256 (error 33); it offers PLAIN"), "{err}");
}

#[tokio::test]
async fn a_config_with_sasl_authenticates_at_connect() {
    let (addr, seen) = broker(Mechanism::ScramSha256).await;
    let config = ConnectionConfig::builder()
        .sasl(Some(SaslConfig::new(SaslMechanism::ScramSha256, "alice", "wonderland")))
        .api_version_request(false)
        .build()
        .unwrap();
    // with api.version.request off, SASL asks for the versions anyway
    assert!(!config.api_version_request());
    let conn = BrokerConnection::connect(&addr, &config).await.unwrap();
    conn.request(0, &MetadataRequest::default()).await.unwrap();
    assert_eq!(seen.lock().unwrap().user.as_deref(), Some("alice"));
}

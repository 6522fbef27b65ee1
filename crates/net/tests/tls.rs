//! TLS connections (`security.protocol=SSL`) against a TLS server made here with the testkit's
//! `ServerTls` and certificates made at test time (`TestPki`, rcgen): a CA the client is told to trust, one it is not, a
//! certificate for another name, and a server that requires a client certificate.

mod common;

use common::{empty_metadata_v0, read_request};
use gregor_net::{BrokerConnection, ConnectionConfig, Error, TlsConfig};
use gregor_protocol::frame::ApiKey;
use gregor_protocol::messages::MetadataRequest;
use gregor_testkit::tls::{ServerTls, TestPki};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// A TLS "broker" on loopback answering every Metadata v0 request with no brokers and no
/// topics, presenting a certificate for `names` from `pki`; with `require_client_ca`, it
/// requires a client certificate signed by `pki`.
async fn serve(pki: &TestPki, names: &[&str], require_client_ca: bool) -> String {
    let issued = pki.issue(names, false).unwrap();
    let mut server = ServerTls::from_pem(&issued.certificate_pem, &issued.key_pem).unwrap();
    if require_client_ca {
        server = server.require_client_certificates(&pki.ca_pem()).unwrap();
    }
    let acceptor = server.acceptor();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else { return };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else { return };
                while let Some((header, _)) = read_request(&mut tls).await {
                    assert_eq!(header.api_key, ApiKey::Metadata);
                    if tls.write_all(&empty_metadata_v0(header.correlation_id)).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

fn config(tls: TlsConfig) -> ConnectionConfig {
    ConnectionConfig::builder().tls(Some(tls)).build().unwrap()
}

#[tokio::test]
async fn a_broker_whose_certificate_the_ca_signed_is_reached_over_tls() {
    let pki = TestPki::new("net-tls");
    let addr = serve(&pki, &["localhost", "127.0.0.1"], false).await;
    let tls = TlsConfig::builder().ca_pem(pki.ca_pem()).build().unwrap();
    let conn = BrokerConnection::connect(&addr, &config(tls)).await.unwrap();
    for _ in 0..3 {
        let metadata = conn.request(0, &MetadataRequest::default()).await.unwrap();
        assert!(metadata.brokers.is_empty() && metadata.topics.is_empty());
    }
    conn.close().await;
}

#[tokio::test]
async fn an_untrusted_certificate_is_one_clear_error_naming_the_broker_and_not_retriable() {
    let pki = TestPki::new("net-tls");
    let addr = serve(&pki, &["127.0.0.1"], false).await;
    let stranger = TestPki::new("stranger");
    let tls = TlsConfig::builder().ca_pem(stranger.ca_pem()).build().unwrap();
    let err = BrokerConnection::connect(&addr, &config(tls)).await.unwrap_err();
    let Error::Tls { addr: named, reason } = &err else { panic!("{err:?}") };
    assert_eq!(named, &addr);
    assert!(reason.contains("UnknownIssuer"), "{reason}");
    assert!(!err.is_retriable());
    assert!(err.to_string().starts_with(&format!("TLS with broker at {addr} failed")), "{err}");
}

#[tokio::test]
async fn the_host_name_is_checked_unless_identification_is_off() {
    let pki = TestPki::new("net-tls");
    let addr = serve(&pki, &["kafka.example.com"], false).await;
    let strict = TlsConfig::builder().ca_pem(pki.ca_pem()).build().unwrap();
    let err = BrokerConnection::connect(&addr, &config(strict)).await.unwrap_err();
    assert!(
        matches!(&err, Error::Tls { reason, .. } if reason.contains("not valid for name \"127.0.0.1\"")),
        "{err:?}"
    );
    // ssl.endpoint.identification.algorithm=none: the chain is still checked ...
    let lax = TlsConfig::builder().ca_pem(pki.ca_pem()).verify_hostname(false).build().unwrap();
    let conn = BrokerConnection::connect(&addr, &config(lax)).await.unwrap();
    conn.request(0, &MetadataRequest::default()).await.unwrap();
    // ... so a stranger's CA still fails
    let stranger =
        TlsConfig::builder().ca_pem(TestPki::new("stranger").ca_pem()).verify_hostname(false).build().unwrap();
    let err = BrokerConnection::connect(&addr, &config(stranger)).await.unwrap_err();
    assert!(matches!(&err, Error::Tls { reason, .. } if reason.contains("UnknownIssuer")), "{err:?}");
}

#[tokio::test]
async fn a_broker_that_requires_a_client_certificate_gets_one() {
    let pki = TestPki::new("net-tls");
    let addr = serve(&pki, &["127.0.0.1"], true).await;
    let client = pki.issue(&["gregor-client"], true).unwrap();
    let tls = TlsConfig::builder()
        .ca_pem(pki.ca_pem())
        .client_certificate_pem(client.certificate_pem, client.key_pem)
        .build()
        .unwrap();
    assert!(!format!("{tls:?}").contains("PRIVATE KEY"), "{tls:?}");
    let conn = BrokerConnection::connect(&addr, &config(tls)).await.unwrap();
    conn.request(0, &MetadataRequest::default()).await.unwrap();

    // without one: TLS 1.3 completes the client's side of the handshake, then the broker's
    // alert fails the first request; that failure is not retriable either
    let without = TlsConfig::builder().ca_pem(pki.ca_pem()).build().unwrap();
    let err = match BrokerConnection::connect(&addr, &config(without)).await {
        Err(e) => e,
        Ok(conn) => conn.request(0, &MetadataRequest::default()).await.unwrap_err(),
    };
    assert!(!err.is_retriable(), "{err:?}");
    assert!(format!("{err:?}").contains("CertificateRequired"), "{err:?}");
}

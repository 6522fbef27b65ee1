//! TLS connections (`security.protocol=SSL`) against a TLS server made here with rustls and
//! certificates made at test time (rcgen): a CA the client is told to trust, one it is not, a
//! certificate for another name, and a server that requires a client certificate.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use gregor_net::{BrokerConnection, ConnectionConfig, Error, TlsConfig};
use gregor_protocol::frame::{ApiKey, RequestHeader};
use gregor_protocol::messages::MetadataRequest;
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

struct Pki {
    ca_pem: String,
    ca: rcgen::Certificate,
    ca_key: KeyPair,
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Pki {
    fn new() -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        // a name of its own, so that two test CAs are two issuers
        let name = format!("gregor test CA {}", rand_suffix());
        params.distinguished_name.push(DnType::CommonName, name);
        let ca = params.self_signed(&ca_key).unwrap();
        Pki { ca_pem: ca.pem(), ca, ca_key }
    }

    /// A certificate for `names`, signed by this CA: (certificate, key).
    fn issue(&self, names: &[&str], client: bool) -> (rcgen::Certificate, KeyPair) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        if client {
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        }
        (params.signed_by(&key, &self.ca, &self.ca_key).unwrap(), key)
    }
}

/// A TLS "broker" on loopback answering every Metadata v0 request with no brokers and no
/// topics; with `client_ca`, it requires a client certificate signed by it.
async fn serve(server: (rcgen::Certificate, KeyPair), client_ca: Option<&Pki>) -> String {
    let (cert, key) = server;
    let builder =
        rustls::ServerConfig::builder_with_provider(provider()).with_safe_default_protocol_versions().unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(pki) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(pki.ca.der().clone()).unwrap();
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else { return };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else { return };
                loop {
                    let mut size = [0u8; 4];
                    if tls.read_exact(&mut size).await.is_err() {
                        return;
                    }
                    let mut frame = vec![0u8; i32::from_be_bytes(size) as usize];
                    if tls.read_exact(&mut frame).await.is_err() {
                        return;
                    }
                    let header = RequestHeader::decode(&mut bytes::Bytes::from(frame)).unwrap();
                    assert_eq!(header.api_key, ApiKey::Metadata);
                    let mut out = BytesMut::new();
                    out.put_i32(12);
                    out.put_i32(header.correlation_id);
                    out.put_i32(0);
                    out.put_i32(0);
                    if tls.write_all(&out).await.is_err() {
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
    let pki = Pki::new();
    let addr = serve(pki.issue(&["localhost", "127.0.0.1"], false), None).await;
    let tls = TlsConfig::builder().ca_pem(pki.ca_pem.clone()).build().unwrap();
    let conn = BrokerConnection::connect(&addr, &config(tls)).await.unwrap();
    for _ in 0..3 {
        let metadata = conn.request(0, &MetadataRequest::default()).await.unwrap();
        assert!(metadata.brokers.is_empty() && metadata.topics.is_empty());
    }
    conn.close().await;
}

#[tokio::test]
async fn an_untrusted_certificate_is_one_clear_error_naming_the_broker_and_not_retriable() {
    let pki = Pki::new();
    let addr = serve(pki.issue(&["127.0.0.1"], false), None).await;
    let stranger = Pki::new();
    let tls = TlsConfig::builder().ca_pem(stranger.ca_pem).build().unwrap();
    let err = BrokerConnection::connect(&addr, &config(tls)).await.unwrap_err();
    let Error::Tls { addr: named, reason } = &err else { panic!("{err:?}") };
    assert_eq!(named, &addr);
    assert!(reason.contains("UnknownIssuer"), "{reason}");
    assert!(!err.is_retriable());
    assert!(err.to_string().starts_with(&format!("TLS with broker at {addr} failed")), "{err}");
}

#[tokio::test]
async fn the_host_name_is_checked_unless_identification_is_off() {
    let pki = Pki::new();
    let addr = serve(pki.issue(&["kafka.example.com"], false), None).await;
    let strict = TlsConfig::builder().ca_pem(pki.ca_pem.clone()).build().unwrap();
    let err = BrokerConnection::connect(&addr, &config(strict)).await.unwrap_err();
    assert!(
        matches!(&err, Error::Tls { reason, .. } if reason.contains("not valid for name \"127.0.0.1\"")),
        "{err:?}"
    );
    // ssl.endpoint.identification.algorithm=none: the chain is still checked ...
    let lax = TlsConfig::builder().ca_pem(pki.ca_pem.clone()).verify_hostname(false).build().unwrap();
    let conn = BrokerConnection::connect(&addr, &config(lax)).await.unwrap();
    conn.request(0, &MetadataRequest::default()).await.unwrap();
    // ... so a stranger's CA still fails
    let stranger = TlsConfig::builder().ca_pem(Pki::new().ca_pem).verify_hostname(false).build().unwrap();
    let err = BrokerConnection::connect(&addr, &config(stranger)).await.unwrap_err();
    assert!(matches!(&err, Error::Tls { reason, .. } if reason.contains("UnknownIssuer")), "{err:?}");
}

#[tokio::test]
async fn a_broker_that_requires_a_client_certificate_gets_one() {
    let pki = Pki::new();
    let addr = serve(pki.issue(&["127.0.0.1"], false), Some(&pki)).await;
    let (client, client_key) = pki.issue(&["gregor-client"], true);
    let tls = TlsConfig::builder()
        .ca_pem(pki.ca_pem.clone())
        .client_certificate_pem(client.pem(), client_key.serialize_pem())
        .build()
        .unwrap();
    assert!(!format!("{tls:?}").contains("PRIVATE KEY"), "{tls:?}");
    let conn = BrokerConnection::connect(&addr, &config(tls)).await.unwrap();
    conn.request(0, &MetadataRequest::default()).await.unwrap();

    // without one: TLS 1.3 completes the client's side of the handshake, then the broker's
    // alert fails the first request; that failure is not retriable either
    let without = TlsConfig::builder().ca_pem(pki.ca_pem.clone()).build().unwrap();
    let err = match BrokerConnection::connect(&addr, &config(without)).await {
        Err(e) => e,
        Ok(conn) => conn.request(0, &MetadataRequest::default()).await.unwrap_err(),
    };
    assert!(!err.is_retriable(), "{err:?}");
    assert!(format!("{err:?}").contains("CertificateRequired"), "{err:?}");
}

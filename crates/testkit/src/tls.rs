//! TLS for the [`FakeCluster`](crate::FakeCluster)'s listeners (Kafka's `listeners=SSL://...`),
//! and certificates made at test time.
//!
//! * [`ServerTls`]: a broker certificate (chain) and its key, optionally a CA whose client
//!   certificates the brokers require (Kafka's `ssl.client.auth=required`). Hand it to
//!   [`FakeClusterBuilder::tls`](crate::FakeClusterBuilder::tls): every broker then serves
//!   TLS only (plaintext stays the default). The `gregor-testkit` binary takes
//!   `--tls-cert FILE --tls-key FILE` (and `--tls-client-ca FILE`).
//! * [`TestPki`]: a CA made with rcgen, and certificates it signs: a broker certificate for
//!   `127.0.0.1` and `localhost` (the names a client of the fake connects to), client
//!   certificates; all as PEM, or written to files for programs that read files (kcat).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use gregor_testkit::{tls::TestPki, zookeeper::ZooKeeperServer, FakeCluster};
//!
//! let pki = TestPki::new("my test");
//! let zk = ZooKeeperServer::shared();
//! let cluster = FakeCluster::builder(zk.unique_chroot("tls")).brokers(1).tls(pki.server_tls()?).start().await?;
//! // a client trusting pki.ca_pem() connects to cluster.bootstrap() with security.protocol=SSL
//! # Ok(()) }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// A certificate, key or file the TLS setup cannot use (the FakeCluster reports it as
/// [`crate::cluster::Error::Tls`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Error(pub String);

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn tls_error(what: impl fmt::Display) -> Error {
    Error(what.to_string())
}

/// What the brokers present, and whether they require client certificates. Cheap to clone;
/// `Debug` never shows the key.
#[derive(Clone)]
pub struct ServerTls {
    chain: Vec<CertificateDer<'static>>,
    key: Arc<PrivateKeyDer<'static>>,
    client_ca: Option<Vec<CertificateDer<'static>>>,
    acceptor: TlsAcceptor,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("chain_certificates", &self.chain.len())
            .field("requires_client_certificate", &self.client_ca.is_some())
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// A certificate chain (the broker's first) and its private key, as PEM text.
    ///
    /// # Errors
    ///
    /// [`Error`] for a PEM without a certificate or key, or a key that does not fit.
    pub fn from_pem(certificate_chain: &str, key: &str) -> Result<ServerTls, Error> {
        let chain = certificates(certificate_chain.as_bytes()).map_err(|e| tls_error(format!("certificate: {e}")))?;
        let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).map_err(|e| tls_error(format!("key: {e}")))?;
        ServerTls::make(chain, Arc::new(key), None)
    }

    /// [`ServerTls::from_pem`] from two PEM files.
    ///
    /// # Errors
    ///
    /// [`Error`] naming a file that cannot be read, and what [`ServerTls::from_pem`] refuses.
    pub fn from_files(certificate_chain: impl AsRef<Path>, key: impl AsRef<Path>) -> Result<ServerTls, Error> {
        ServerTls::from_pem(&read(certificate_chain.as_ref())?, &read(key.as_ref())?)
    }

    /// Requires every client to present a certificate signed by one of `ca_pem`'s (Kafka's
    /// `ssl.client.auth=required`); a client without one fails the handshake.
    ///
    /// # Errors
    ///
    /// [`Error`] for a PEM without a certificate.
    pub fn require_client_certificates(self, ca_pem: &str) -> Result<ServerTls, Error> {
        let cas = certificates(ca_pem.as_bytes()).map_err(|e| tls_error(format!("client CA: {e}")))?;
        ServerTls::make(self.chain, self.key, Some(cas))
    }

    /// True when client certificates are required.
    pub fn requires_client_certificates(&self) -> bool {
        self.client_ca.is_some()
    }

    fn make(
        chain: Vec<CertificateDer<'static>>,
        key: Arc<PrivateKeyDer<'static>>,
        client_ca: Option<Vec<CertificateDer<'static>>>,
    ) -> Result<ServerTls, Error> {
        let builder = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(tls_error)?;
        let builder = match &client_ca {
            None => builder.with_no_client_auth(),
            Some(cas) => {
                let mut roots = rustls::RootCertStore::empty();
                for ca in cas {
                    roots.add(ca.clone()).map_err(|e| tls_error(format!("client CA: {e}")))?;
                }
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                    .build()
                    .map_err(|e| tls_error(format!("client CA: {e}")))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let config = builder.with_single_cert(chain.clone(), key.clone_key()).map_err(tls_error)?;
        Ok(ServerTls { chain, key, client_ca, acceptor: TlsAcceptor::from(Arc::new(config)) })
    }

    /// The acceptor every listener uses (also for a test's own TLS server).
    pub fn acceptor(&self) -> TlsAcceptor {
        self.acceptor.clone()
    }
}

fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|e| tls_error(format!("cannot read {}: {e}", path.display())))
}

fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
    if certs.is_empty() {
        return Err("no certificate in the PEM".to_owned());
    }
    Ok(certs)
}

/// A certificate and its key, as PEM text.
#[derive(Clone)]
pub struct Issued {
    /// The certificate.
    pub certificate_pem: String,
    /// Its private key (PKCS#8).
    pub key_pem: String,
}

impl fmt::Debug for Issued {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Issued").field("certificate_pem", &self.certificate_pem).finish_non_exhaustive()
    }
}

/// A certificate authority made at test time (rcgen), and the certificates it signs.
pub struct TestPki {
    ca: rcgen::Certificate,
    ca_key: KeyPair,
}

impl fmt::Debug for TestPki {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestPki").finish_non_exhaustive()
    }
}

/// Where [`TestPki::write`] put the files.
#[derive(Debug, Clone)]
pub struct PkiFiles {
    /// The CA certificate (`ssl.ca.location`).
    pub ca: PathBuf,
    /// The broker certificate (`--tls-cert`).
    pub server_certificate: PathBuf,
    /// Its key (`--tls-key`).
    pub server_key: PathBuf,
    /// A client certificate (`ssl.certificate.location`).
    pub client_certificate: PathBuf,
    /// Its key (`ssl.key.location`).
    pub client_key: PathBuf,
}

impl TestPki {
    /// A new CA named `gregor test CA <name> <random>` (two CAs are two issuers).
    ///
    /// # Panics
    ///
    /// When rcgen cannot make a key (it always can, with ring).
    pub fn new(name: &str) -> TestPki {
        let ca_key = KeyPair::generate().expect("rcgen makes a key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("no names to check");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, format!("gregor test CA {name} {:016x}", rand::random::<u64>()));
        let ca = params.self_signed(&ca_key).expect("rcgen signs");
        TestPki { ca, ca_key }
    }

    /// The CA certificate, PEM: what a client trusts (`ssl.ca.pem`).
    pub fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// A certificate for `names` (DNS names or IP addresses), signed by this CA; `client`
    /// marks it for client authentication.
    ///
    /// # Errors
    ///
    /// [`Error`] for a name rcgen refuses.
    pub fn issue(&self, names: &[&str], client: bool) -> Result<Issued, Error> {
        let key = KeyPair::generate().map_err(tls_error)?;
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).map_err(tls_error)?;
        if let Some(first) = names.first() {
            params.distinguished_name.push(DnType::CommonName, *first);
        }
        params.extended_key_usages =
            vec![if client { ExtendedKeyUsagePurpose::ClientAuth } else { ExtendedKeyUsagePurpose::ServerAuth }];
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).map_err(tls_error)?;
        Ok(Issued { certificate_pem: cert.pem(), key_pem: key.serialize_pem() })
    }

    /// A broker certificate for `127.0.0.1` and `localhost`, the names the fake's brokers are
    /// reached by.
    ///
    /// # Errors
    ///
    /// As [`TestPki::issue`].
    pub fn server(&self) -> Result<Issued, Error> {
        self.issue(&["127.0.0.1", "localhost"], false)
    }

    /// [`ServerTls`] with a fresh [`TestPki::server`] certificate.
    ///
    /// # Errors
    ///
    /// As [`TestPki::issue`].
    pub fn server_tls(&self) -> Result<ServerTls, Error> {
        let server = self.server()?;
        ServerTls::from_pem(&server.certificate_pem, &server.key_pem)
    }

    /// Writes the CA, a broker certificate and key, and a client certificate (for `client`)
    /// and key into `dir`, as `ca.pem`, `server.pem`, `server.key`, `client.pem` and
    /// `client.key`.
    ///
    /// # Errors
    ///
    /// [`Error`] when a file cannot be written.
    pub fn write(&self, dir: &Path) -> Result<PkiFiles, Error> {
        let server = self.server()?;
        let client = self.issue(&["client"], true)?;
        let files = PkiFiles {
            ca: dir.join("ca.pem"),
            server_certificate: dir.join("server.pem"),
            server_key: dir.join("server.key"),
            client_certificate: dir.join("client.pem"),
            client_key: dir.join("client.key"),
        };
        for (path, text) in [
            (&files.ca, self.ca_pem()),
            (&files.server_certificate, server.certificate_pem),
            (&files.server_key, server.key_pem),
            (&files.client_certificate, client.certificate_pem),
            (&files.client_key, client.key_pem),
        ] {
            std::fs::write(path, text).map_err(|e| tls_error(format!("cannot write {}: {e}", path.display())))?;
        }
        Ok(files)
    }
}

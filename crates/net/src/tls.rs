//! TLS for broker connections, on rustls: Kafka's `security.protocol=SSL` (and `SASL_SSL`)
//! with its `ssl.*` settings.
//!
//! | setting | Kafka / librdkafka property | default |
//! |---|---|---|
//! | [`TlsConfigBuilder::ca_file`], [`TlsConfigBuilder::ca_pem`] | `ssl.ca.location`, `ssl.ca.pem` | the system's roots |
//! | [`TlsConfigBuilder::client_certificate_files`] | `ssl.certificate.location` + `ssl.key.location` | none |
//! | [`TlsConfigBuilder::client_certificate_pem`] | `ssl.certificate.pem` + `ssl.key.pem` | none |
//! | [`TlsConfigBuilder::verify_hostname`] | `ssl.endpoint.identification.algorithm` (`https` / `none`) | on |
//! | [`TlsConfigBuilder::verify_certificates`] | `enable.ssl.certificate.verification` | on |
//!
//! Certificates and keys are read and checked when the configuration is built, so a missing
//! file or a PEM without a certificate is a configuration error, not a failure at each
//! connect. A handshake the broker's certificate fails (unknown issuer, wrong name, expired)
//! is one [`Error::Tls`](crate::Error::Tls) naming the broker, which is not retriable: the same
//! certificate would fail again. Private keys never appear in `Debug` output or errors.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gregor_config::ConfigError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// Where the certificates that may sign a broker's certificate come from.
#[derive(Clone, PartialEq, Eq)]
enum CaSource {
    /// The operating system's trust store (`/etc/ssl/certs` on Debian).
    System,
    /// A PEM file (`ssl.ca.location`).
    File(PathBuf),
    /// PEM text (`ssl.ca.pem`).
    Pem(String),
}

/// A certificate or key: a PEM file or PEM text.
#[derive(Clone, PartialEq, Eq)]
enum Pem {
    File(PathBuf),
    Text(String),
}

impl Pem {
    fn read(&self, property: &'static str) -> Result<Vec<u8>, ConfigError> {
        match self {
            Pem::Text(text) => Ok(text.as_bytes().to_vec()),
            Pem::File(path) => std::fs::read(path)
                .map_err(|e| ConfigError::invalid(property, path.display(), format!("cannot be read: {e}"))),
        }
    }

    /// The property that gives it: `file` for a file, `text` for PEM text.
    fn property(&self, file: &'static str, text: &'static str) -> &'static str {
        match self {
            Pem::File(_) => file,
            Pem::Text(_) => text,
        }
    }

    /// How it shows in `Debug` and errors: a file's path, or only the length of a text (keys
    /// are secrets).
    fn describe(&self) -> String {
        match self {
            Pem::File(path) => path.display().to_string(),
            Pem::Text(text) => format!("<{} bytes of PEM>", text.len()),
        }
    }
}

/// The TLS settings of a connection. Build with [`TlsConfig::builder`].
#[derive(Clone)]
pub struct TlsConfig {
    ca: CaSource,
    client: Option<(Pem, Pem)>,
    verify_hostname: bool,
    verify_certificates: bool,
    rustls: Arc<ClientConfig>,
}

impl PartialEq for TlsConfig {
    fn eq(&self, other: &Self) -> bool {
        // the rustls configuration is made from the rest
        (&self.ca, &self.client, self.verify_hostname, self.verify_certificates)
            == (&other.ca, &other.client, other.verify_hostname, other.verify_certificates)
    }
}

impl Eq for TlsConfig {}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ca = match &self.ca {
            CaSource::System => "system roots".to_string(),
            CaSource::File(path) => path.display().to_string(),
            CaSource::Pem(text) => format!("<{} bytes of PEM>", text.len()),
        };
        let client = self.client.as_ref().map(|(cert, _)| format!("{} (key hidden)", cert.describe()));
        f.debug_struct("TlsConfig")
            .field("ca", &ca)
            .field("client_certificate", &client)
            .field("verify_hostname", &self.verify_hostname)
            .field("verify_certificates", &self.verify_certificates)
            .finish()
    }
}

impl TlsConfig {
    /// A builder: the system's roots, no client certificate, hostname and certificate checks on.
    pub fn builder() -> TlsConfigBuilder {
        TlsConfigBuilder { ca: CaSource::System, client: None, verify_hostname: true, verify_certificates: true }
    }

    /// The rustls configuration made from these settings.
    pub(crate) fn rustls(&self) -> Arc<ClientConfig> {
        self.rustls.clone()
    }

    /// These settings as Kafka's `ssl.*` properties, as [`crate::Security::from_properties`]
    /// reads them; a private key given as PEM text is `***` (a key file is named by its path).
    pub(crate) fn properties(&self) -> Vec<(&'static str, String)> {
        let mut props = Vec::new();
        match &self.ca {
            CaSource::System => {}
            CaSource::File(path) => props.push(("ssl.ca.location", path.display().to_string())),
            CaSource::Pem(text) => props.push(("ssl.ca.pem", text.clone())),
        }
        match &self.client {
            None => {}
            Some((Pem::File(cert), Pem::File(key))) => {
                props.push(("ssl.certificate.location", cert.display().to_string()));
                props.push(("ssl.key.location", key.display().to_string()));
            }
            Some((cert, key)) => {
                for (pem, file, text, secret) in [
                    (cert, "ssl.certificate.location", "ssl.certificate.pem", false),
                    (key, "ssl.key.location", "ssl.key.pem", true),
                ] {
                    let value = match pem {
                        Pem::File(path) => path.display().to_string(),
                        Pem::Text(_) if secret => "***".to_owned(),
                        Pem::Text(text) => text.clone(),
                    };
                    props.push((pem.property(file, text), value));
                }
            }
        }
        let algorithm = if self.verify_hostname { "https" } else { "none" };
        props.push(("ssl.endpoint.identification.algorithm", algorithm.to_owned()));
        props.push(("enable.ssl.certificate.verification", self.verify_certificates.to_string()));
        props
    }

    /// Whether the broker's name is checked against its certificate.
    pub fn verify_hostname(&self) -> bool {
        self.verify_hostname
    }

    /// Whether the broker's certificate is checked at all.
    pub fn verify_certificates(&self) -> bool {
        self.verify_certificates
    }
}

/// Builds a [`TlsConfig`]; [`TlsConfigBuilder::build`] reads and checks the certificates.
#[derive(Clone)]
pub struct TlsConfigBuilder {
    ca: CaSource,
    client: Option<(Pem, Pem)>,
    verify_hostname: bool,
    verify_certificates: bool,
}

impl fmt::Debug for TlsConfigBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfigBuilder").finish_non_exhaustive()
    }
}

impl TlsConfigBuilder {
    /// `ssl.ca.location`: trust the certificates of this PEM file (instead of the system's).
    pub fn ca_file(mut self, path: impl AsRef<Path>) -> Self {
        self.ca = CaSource::File(path.as_ref().to_path_buf());
        self
    }

    /// `ssl.ca.pem`: trust the certificates of this PEM text (instead of the system's).
    pub fn ca_pem(mut self, pem: impl Into<String>) -> Self {
        self.ca = CaSource::Pem(pem.into());
        self
    }

    /// `ssl.certificate.location` and `ssl.key.location`: present this certificate (chain) and
    /// its private key (PKCS#8, PKCS#1 or SEC1 PEM, unencrypted) when the broker asks for one.
    pub fn client_certificate_files(mut self, certificate: impl AsRef<Path>, key: impl AsRef<Path>) -> Self {
        self.client = Some((Pem::File(certificate.as_ref().to_path_buf()), Pem::File(key.as_ref().to_path_buf())));
        self
    }

    /// `ssl.certificate.pem` and `ssl.key.pem`: as [`client_certificate_files`](Self::client_certificate_files),
    /// from PEM text.
    pub fn client_certificate_pem(mut self, certificate: impl Into<String>, key: impl Into<String>) -> Self {
        self.client = Some((Pem::Text(certificate.into()), Pem::Text(key.into())));
        self
    }

    /// `ssl.endpoint.identification.algorithm`: `https` (true, the default) checks that the
    /// broker's certificate names the host connected to; `none` (false) only checks that a
    /// trusted CA signed it.
    pub fn verify_hostname(mut self, on: bool) -> Self {
        self.verify_hostname = on;
        self
    }

    /// `enable.ssl.certificate.verification`: false accepts ANY certificate (encryption without
    /// authentication: anyone in the middle can read everything). For tests only.
    pub fn verify_certificates(mut self, on: bool) -> Self {
        self.verify_certificates = on;
        self
    }

    /// Reads the certificates and key and makes the rustls configuration.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Invalid`] naming the property: a file that cannot be read, a PEM without
    /// a certificate (or key), a certificate the trust store refuses, a key that does not
    /// match; no usable root in the system's store.
    pub fn build(self) -> Result<TlsConfig, ConfigError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = Arc::new(self.roots()?);
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| ConfigError::invalid("security.protocol", "SSL", e.to_string()))?;
        let verifier: Arc<dyn ServerCertVerifier> = if !self.verify_certificates {
            tracing::warn!("TLS certificate verification is off: brokers are not authenticated");
            Arc::new(AcceptAnything(provider.clone()))
        } else {
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| ConfigError::invalid(self.ca_property(), self.ca_name(), e.to_string()))?;
            if self.verify_hostname {
                webpki
            } else {
                Arc::new(IgnoreHostname(webpki))
            }
        };
        let builder = builder.dangerous().with_custom_certificate_verifier(verifier);
        let rustls = match &self.client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let cert_property = cert.property("ssl.certificate.location", "ssl.certificate.pem");
                let key_property = key.property("ssl.key.location", "ssl.key.pem");
                let chain = certificates(&cert.read(cert_property)?)
                    .map_err(|e| ConfigError::invalid(cert_property, cert.describe(), e))?;
                let key_der = PrivateKeyDer::from_pem_slice(&key.read(key_property)?).map_err(|e| {
                    ConfigError::invalid(key_property, key.describe(), format!("holds no usable private key: {e}"))
                })?;
                builder.with_client_auth_cert(chain, key_der).map_err(|e| {
                    ConfigError::invalid(key_property, key.describe(), format!("does not fit the certificate: {e}"))
                })?
            }
        };
        Ok(TlsConfig {
            ca: self.ca,
            client: self.client,
            verify_hostname: self.verify_hostname,
            verify_certificates: self.verify_certificates,
            rustls: Arc::new(rustls),
        })
    }

    /// The property that names the CA: `ssl.ca.pem` for PEM text, else `ssl.ca.location`.
    fn ca_property(&self) -> &'static str {
        match &self.ca {
            CaSource::Pem(_) => "ssl.ca.pem",
            _ => "ssl.ca.location",
        }
    }

    fn ca_name(&self) -> String {
        match &self.ca {
            CaSource::System => "system roots".to_string(),
            CaSource::File(path) => path.display().to_string(),
            CaSource::Pem(text) => format!("<{} bytes of PEM>", text.len()),
        }
    }

    fn roots(&self) -> Result<RootCertStore, ConfigError> {
        let mut roots = RootCertStore::empty();
        let pem = match &self.ca {
            CaSource::System => {
                let found = rustls_native_certs::load_native_certs();
                let (added, _ignored) = roots.add_parsable_certificates(found.certs);
                if added == 0 && self.verify_certificates {
                    return Err(ConfigError::invalid(
                        "ssl.ca.location",
                        "system roots",
                        "no CA certificate found in the system's store (install ca-certificates, or name a CA file)",
                    ));
                }
                return Ok(roots);
            }
            CaSource::File(path) => Pem::File(path.clone()).read("ssl.ca.location")?,
            CaSource::Pem(text) => text.as_bytes().to_vec(),
        };
        let property = self.ca_property();
        let certs = certificates(&pem).map_err(|e| ConfigError::invalid(property, self.ca_name(), e))?;
        for cert in certs {
            roots
                .add(cert)
                .map_err(|e| ConfigError::invalid(property, self.ca_name(), format!("a bad CA certificate: {e}")))?;
        }
        Ok(roots)
    }
}

/// The certificates of a PEM text, at least one.
fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("is not valid PEM: {e}"))?;
    if certs.is_empty() {
        return Err("holds no certificate".to_string());
    }
    Ok(certs)
}

/// The name a broker's certificate must carry: the host of `host:port` (a DNS name or an IP).
///
/// # Errors
///
/// A message when the host is neither.
pub(crate) fn server_name(addr: &str) -> Result<ServerName<'static>, String> {
    let host = match addr.rsplit_once(':') {
        Some((host, port)) if port.parse::<u16>().is_ok() => host,
        _ => addr,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_owned()).map_err(|e| format!("{host:?} is not a host name for TLS: {e}"))
}

/// Checks the chain, not the name (`ssl.endpoint.identification.algorithm=none`).
#[derive(Debug)]
struct IgnoreHostname(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for IgnoreHostname {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Accepts any certificate (`enable.ssl.certificate.verification=false`), still checking that
/// the handshake is signed by the certificate presented.
#[derive(Debug)]
struct AcceptAnything(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnything {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_come_from_the_host() {
        assert_eq!(server_name("broker-1.example.com:9093").unwrap().to_str(), "broker-1.example.com");
        assert!(matches!(server_name("127.0.0.1:9093").unwrap(), ServerName::IpAddress(_)));
        assert!(matches!(server_name("[::1]:9093").unwrap(), ServerName::IpAddress(_)));
        assert!(server_name("bad host:1").is_err());
    }

    #[test]
    fn missing_files_and_empty_pem_are_config_errors_naming_the_property() {
        let err = TlsConfig::builder().ca_file("/nonexistent/ca.pem").build().unwrap_err();
        assert!(err.to_string().contains("ssl.ca.location"), "{err}");
        let err = TlsConfig::builder().ca_pem("not pem").build().unwrap_err();
        assert!(err.to_string().contains("holds no certificate"), "{err}");
    }

    #[test]
    fn debug_never_shows_a_private_key() {
        let key = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n";
        let builder = TlsConfig::builder().verify_certificates(false).client_certificate_pem("cert", key);
        assert!(!format!("{builder:?}").contains("c2VjcmV0"));
        // (the certificate is not valid: the error names the property, not the key)
        let err = builder.build().unwrap_err().to_string();
        assert!(!err.contains("c2VjcmV0"), "{err}");
    }
}

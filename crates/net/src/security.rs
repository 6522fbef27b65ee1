//! Kafka's security settings, read once for every gregor client: `security.protocol` and the
//! `ssl.*` and `sasl.*` properties, into a [`Security`] (TLS settings and SASL credentials)
//! that [`ConnectionConfigBuilder::security`](crate::ConnectionConfigBuilder::security) puts on
//! every connection.
//!
//! | property | meaning | default |
//! |---|---|---|
//! | `security.protocol` | `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT` or `SASL_SSL` (any case) | `PLAINTEXT` |
//! | `ssl.ca.location` | a PEM file of the CAs that may sign a broker's certificate (`probe`: the system's) | the system's roots |
//! | `ssl.ca.pem` | the same, as PEM text | — |
//! | `ssl.certificate.location`, `ssl.key.location` | a client certificate (chain) and its unencrypted private key, PEM files | none |
//! | `ssl.certificate.pem`, `ssl.key.pem` | the same, as PEM text | none |
//! | `ssl.endpoint.identification.algorithm` | `https`: the certificate must name the broker's host; `none` (or empty, as Kafka reads it): only the chain is checked | `https` |
//! | `enable.ssl.certificate.verification` | `false` accepts any certificate (tests only) | `true` |
//! | `sasl.mechanism` (librdkafka: `sasl.mechanisms`) | `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512` (any case) | required with SASL |
//! | `sasl.username`, `sasl.password` | the credentials | required with SASL |
//!
//! The clients (producer, consumers, admin) take these names beside their own in
//! `from_properties`, through [`SecurityProperties`]; [`Security::from_properties`] reads them
//! alone. What cannot work is refused when the properties are read, naming the property:
//!
//! * `ssl.*` with `PLAINTEXT` or `SASL_PLAINTEXT`, `sasl.*` with `PLAINTEXT` or `SSL` (a
//!   setting that would be silently ignored is a mistake somewhere);
//! * a SASL protocol without `sasl.mechanism`, `sasl.username` or `sasl.password`
//!   ([`ConfigError::Missing`]);
//! * an unknown protocol or mechanism (GSSAPI and OAUTHBEARER are not supported);
//! * a CA given twice (`ssl.ca.location` and `ssl.ca.pem`), a certificate without its key (or
//!   a key without its certificate), a file that cannot be read, a PEM without a certificate;
//! * Java's keystore settings (`ssl.truststore.*`, `ssl.keystore.*`, `ssl.key.password`),
//!   `sasl.jaas.config`, and any other `ssl.*` or `sasl.*` name, with what to use instead.
//!
//! Secrets — `sasl.password`, `ssl.key.pem`, `sasl.jaas.config`, `ssl.*.password` — never appear
//! in `Debug` output, errors or [`Security::to_properties`]: they print `***`.
//!
//! With SASL settings, [`BrokerConnection::connect`](crate::BrokerConnection::connect)
//! authenticates every new connection (SaslHandshake, then SaslAuthenticate rounds) before it
//! is used; a refusal is one non-retriable [`Error::Sasl`](crate::Error::Sasl).
//!
//! ```
//! use gregor_net::{ConnectionConfig, Security, SecurityProtocol};
//!
//! let security = Security::from_properties([
//!     ("security.protocol", "sasl_plaintext"),
//!     ("sasl.mechanism", "SCRAM-SHA-512"),
//!     ("sasl.username", "alice"),
//!     ("sasl.password", "alice-secret"),
//! ])?;
//! assert_eq!(security.protocol(), SecurityProtocol::SaslPlaintext);
//! assert!(!format!("{security:?}").contains("alice-secret"));
//! let config = ConnectionConfig::builder().security(&security).build()?;
//! assert_eq!(config.sasl().unwrap().username, "alice");
//!
//! let e = Security::from_properties([("ssl.ca.location", "/etc/kafka/ca.pem")]).unwrap_err();
//! assert_eq!(
//!     e.to_string(),
//!     "invalid value \"/etc/kafka/ca.pem\" for ssl.ca.location: needs security.protocol SSL or SASL_SSL \
//!      (security.protocol is PLAINTEXT, the default)"
//! );
//! # Ok::<(), gregor_net::ConfigError>(())
//! ```

use std::fmt;
use std::str::FromStr;

use gregor_config::{Alias, ConfigError};

use crate::sasl::{SaslConfig, SaslMechanism, Secret};
use crate::tls::TlsConfig;

/// Every security property [`Security::from_properties`] knows, in the order of the module
/// table (`sasl.mechanisms`, librdkafka's spelling of `sasl.mechanism`, is read too).
pub const SECURITY_PROPERTIES: &[&str] = &[
    "security.protocol",
    "ssl.ca.location",
    "ssl.ca.pem",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.certificate.pem",
    "ssl.key.pem",
    "ssl.endpoint.identification.algorithm",
    "enable.ssl.certificate.verification",
    "sasl.mechanism",
    "sasl.username",
    "sasl.password",
];

/// The client name in a [`ConfigError::UnknownProperty`] for an `ssl.*` or `sasl.*` name this
/// module does not know.
const CLIENT: &str = "security";

/// librdkafka's `sasl.mechanisms` for `sasl.mechanism`.
const ALIASES: &[Alias] = &[Alias { modern: "sasl.mechanisms", classic: "sasl.mechanism", translate: None }];

/// Security names of other Kafka clients gregor does not read, and what to use instead.
const NOT_READ: &[(&str, &str)] = &[
    ("ssl.truststore.location", "Java keystores are not read: give the CA certificates as PEM with ssl.ca.location"),
    ("ssl.truststore.password", "Java keystores are not read: give the CA certificates as PEM with ssl.ca.location"),
    ("ssl.truststore.type", "Java keystores are not read: give the CA certificates as PEM with ssl.ca.location"),
    (
        "ssl.keystore.location",
        "Java keystores are not read: give the client certificate and key as PEM with ssl.certificate.location \
         and ssl.key.location",
    ),
    (
        "ssl.keystore.password",
        "Java keystores are not read: give the client certificate and key as PEM with ssl.certificate.location \
         and ssl.key.location",
    ),
    (
        "ssl.keystore.type",
        "Java keystores are not read: give the client certificate and key as PEM with ssl.certificate.location \
         and ssl.key.location",
    ),
    (
        "ssl.key.password",
        "encrypted private keys are not supported: give an unencrypted key (PKCS#8, PKCS#1 or SEC1 PEM)",
    ),
    ("sasl.jaas.config", "JAAS is Java's: give sasl.mechanism, sasl.username and sasl.password"),
];

/// Whether a property of this name holds a secret: its value is never shown.
fn is_secret(name: &str) -> bool {
    matches!(name, "sasl.password" | "ssl.key.pem" | "sasl.jaas.config") || name.ends_with(".password")
}

/// How a value of `name` shows in an error: `***` for a secret, else as given.
fn shown(name: &str, value: &str) -> String {
    if is_secret(name) {
        "***".to_owned()
    } else {
        value.to_owned()
    }
}

/// `security.protocol`: how connections are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SecurityProtocol {
    /// `PLAINTEXT`: TCP, no authentication (Kafka 0.8's only way).
    #[default]
    Plaintext,
    /// `SSL`: TLS.
    Ssl,
    /// `SASL_PLAINTEXT`: SASL authentication over TCP.
    SaslPlaintext,
    /// `SASL_SSL`: SASL authentication over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Every protocol, in the order of Kafka's documentation.
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    /// The property value: `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT` or `SASL_SSL`.
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// True for `SSL` and `SASL_SSL`.
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// True for `SASL_PLAINTEXT` and `SASL_SSL`.
    pub fn uses_sasl(self) -> bool {
        matches!(self, SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl)
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for SecurityProtocol {
    type Err = ConfigError;

    /// Reads a protocol name in any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let table = SecurityProtocol::ALL.map(|p| (p.name(), p));
        gregor_config::parse_choice("security.protocol", s.trim(), &table, true)
            .map_err(|_| ConfigError::invalid("security.protocol", s.trim(), PROTOCOL_REASON))
    }
}

const PROTOCOL_REASON: &str = "must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (any case)";

/// How connections are secured: TLS settings, SASL credentials, both or neither (plaintext,
/// the default). Cheap to clone; `Debug` never shows a password or a private key.
///
/// Read Kafka's properties with [`Security::from_properties`] (or, beside a client's own,
/// with [`SecurityProperties`]); make one from the net types with [`Security::new`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Security {
    tls: Option<TlsConfig>,
    sasl: Option<SaslConfig>,
}

impl Security {
    /// Plaintext: no TLS, no SASL (`security.protocol=PLAINTEXT`).
    pub fn plaintext() -> Security {
        Security::default()
    }

    /// TLS when `tls` is given, SASL when `sasl` is: the protocol follows
    /// ([`Security::protocol`]).
    pub fn new(tls: Option<TlsConfig>, sasl: Option<SaslConfig>) -> Security {
        Security { tls, sasl }
    }

    /// `security.protocol`, as the settings make it.
    pub fn protocol(&self) -> SecurityProtocol {
        match (self.tls.is_some(), self.sasl.is_some()) {
            (false, false) => SecurityProtocol::Plaintext,
            (true, false) => SecurityProtocol::Ssl,
            (false, true) => SecurityProtocol::SaslPlaintext,
            (true, true) => SecurityProtocol::SaslSsl,
        }
    }

    /// The TLS settings, or `None` for a protocol without TLS.
    pub fn tls(&self) -> Option<&TlsConfig> {
        self.tls.as_ref()
    }

    /// The SASL mechanism and credentials, or `None` for a protocol without SASL.
    pub fn sasl(&self) -> Option<&SaslConfig> {
        self.sasl.as_ref()
    }

    /// True for a name [`Security::from_properties`] reads, or refuses as a security setting
    /// it does not know: `security.protocol`, `enable.ssl.certificate.verification`, and every
    /// `ssl.*` and `sasl.*` name. A client hands these to [`SecurityProperties`].
    pub fn is_security_property(name: &str) -> bool {
        let name = name.trim();
        name == "security.protocol"
            || name == "enable.ssl.certificate.verification"
            || name.starts_with("ssl.")
            || name.starts_with("sasl.")
    }

    /// Reads Kafka's security properties (see the [module table](self)); values are trimmed;
    /// a name given twice keeps its last value. Certificate and key files are read now.
    ///
    /// # Errors
    ///
    /// [`ConfigError::UnknownProperty`] for a name not in [`SECURITY_PROPERTIES`] (and not
    /// `sasl.mechanisms`); [`ConfigError::Invalid`] naming the property for a value that cannot
    /// work, a setting the protocol does not use, Java's keystore and JAAS settings;
    /// [`ConfigError::Missing`] for a credential a SASL protocol needs;
    /// [`ConfigError::Conflict`] for `sasl.mechanism` and `sasl.mechanisms` with different
    /// values. Secrets show as `***`.
    pub fn from_properties<I, K, V>(properties: I) -> Result<Security, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut given = Given::default();
        for property in gregor_config::read_with_aliases(CLIENT, SECURITY_PROPERTIES, ALIASES, properties) {
            let p = property.map_err(not_read)?;
            let value = p.value();
            let name = p.name();
            if name != "security.protocol" {
                // the first ssl.* / sasl.* given, to name in a protocol mismatch
                let first = if name.starts_with("sasl.") { &mut given.first_sasl } else { &mut given.first_ssl };
                if first.is_none() && (!value.is_empty() || name == "ssl.endpoint.identification.algorithm") {
                    *first = Some((p.given_as(), shown(name, value)));
                }
            }
            let text = || (!value.is_empty()).then(|| value.to_owned());
            match name {
                "security.protocol" => given.protocol = Some(value.parse()?),
                "ssl.ca.location" => given.ca_location = text(),
                "ssl.ca.pem" => given.ca_pem = text(),
                "ssl.certificate.location" => given.certificate_location = text(),
                "ssl.key.location" => given.key_location = text(),
                "ssl.certificate.pem" => given.certificate_pem = text(),
                "ssl.key.pem" => given.key_pem = text().map(Secret::new),
                "ssl.endpoint.identification.algorithm" => {
                    given.verify_hostname = Some(if value.is_empty() {
                        false
                    } else {
                        p.choice_ignore_case(&[("https", true), ("none", false)])
                            .map_err(|_| p.invalid("must be https, none or empty (none)"))?
                    });
                }
                "enable.ssl.certificate.verification" => given.verify_certificates = Some(p.bool()?),
                "sasl.mechanism" => {
                    given.mechanism = match value {
                        "" => None,
                        _ => Some(mechanism(value).map_err(|reason| p.invalid(reason))?),
                    }
                }
                "sasl.username" => given.username = text(),
                "sasl.password" => given.password = text().map(Secret::new),
                _ => unreachable!("every name of SECURITY_PROPERTIES is handled"),
            }
        }
        given.build()
    }

    /// These settings as Kafka's properties, which [`Security::from_properties`] reads back —
    /// except the secrets: `sasl.password` and `ssl.key.pem` are `***`. Plaintext is
    /// `security.protocol=PLAINTEXT` alone.
    pub fn to_properties(&self) -> Vec<(&'static str, String)> {
        let mut props = vec![("security.protocol", self.protocol().name().to_owned())];
        if let Some(tls) = &self.tls {
            props.extend(tls.properties());
        }
        if let Some(sasl) = &self.sasl {
            props.push(("sasl.mechanism", sasl.mechanism.name().to_owned()));
            props.push(("sasl.username", sasl.username.clone()));
            props.push(("sasl.password", sasl.password.to_string()));
        }
        props
    }
}

/// Reads `sasl.mechanism`'s value.
fn mechanism(value: &str) -> Result<SaslMechanism, String> {
    if ["GSSAPI", "OAUTHBEARER"].iter().any(|m| m.eq_ignore_ascii_case(value)) {
        return Err("is not supported by gregor: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512".to_owned());
    }
    SaslMechanism::from_str(value).map_err(|_| "must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (any case)".to_owned())
}

/// An unknown-property error for a name of [`NOT_READ`] turned into the reason it is refused
/// (its value hidden: some hold passwords).
fn not_read(e: ConfigError) -> ConfigError {
    if let ConfigError::UnknownProperty { property, .. } = &e {
        if let Some((name, reason)) = NOT_READ.iter().find(|(name, _)| name == property) {
            return ConfigError::invalid(name, "(hidden)", *reason);
        }
    }
    e
}

/// What the properties said, before the checks that look at several of them.
#[derive(Default)]
struct Given {
    protocol: Option<SecurityProtocol>,
    ca_location: Option<String>,
    ca_pem: Option<String>,
    certificate_location: Option<String>,
    key_location: Option<String>,
    certificate_pem: Option<String>,
    key_pem: Option<Secret>,
    verify_hostname: Option<bool>,
    verify_certificates: Option<bool>,
    mechanism: Option<SaslMechanism>,
    username: Option<String>,
    password: Option<Secret>,
    /// The first `ssl.*` property given (name as given, value as shown).
    first_ssl: Option<(&'static str, String)>,
    /// The first `sasl.*` property given.
    first_sasl: Option<(&'static str, String)>,
}

impl Given {
    fn build(self) -> Result<Security, ConfigError> {
        let protocol = self.protocol.unwrap_or_default();
        let said = if self.protocol.is_some() {
            format!("security.protocol is {protocol}")
        } else {
            format!("security.protocol is {protocol}, the default")
        };
        if let (false, Some((name, value))) = (protocol.uses_tls(), &self.first_ssl) {
            return Err(ConfigError::invalid(name, value, format!("needs security.protocol SSL or SASL_SSL ({said})")));
        }
        if let (false, Some((name, value))) = (protocol.uses_sasl(), &self.first_sasl) {
            return Err(ConfigError::invalid(
                name,
                value,
                format!("needs security.protocol SASL_PLAINTEXT or SASL_SSL ({said})"),
            ));
        }
        let sasl = if protocol.uses_sasl() {
            let mechanism = self.mechanism.ok_or_else(|| ConfigError::missing("sasl.mechanism"))?;
            let username = self.username.clone().ok_or_else(|| ConfigError::missing("sasl.username"))?;
            let password = self.password.clone().ok_or_else(|| ConfigError::missing("sasl.password"))?;
            Some(SaslConfig { mechanism, username, password })
        } else {
            None
        };
        let tls = if protocol.uses_tls() { Some(self.tls()?) } else { None };
        Ok(Security { tls, sasl })
    }

    fn tls(&self) -> Result<TlsConfig, ConfigError> {
        let mut b = TlsConfig::builder();
        match (&self.ca_location, &self.ca_pem) {
            (Some(_), Some(pem)) => {
                return Err(ConfigError::invalid(
                    "ssl.ca.pem",
                    format!("<{} bytes of PEM>", pem.len()),
                    "give ssl.ca.location or ssl.ca.pem, not both",
                ))
            }
            (Some(location), None) if location.eq_ignore_ascii_case("probe") => {}
            (Some(location), None) => b = b.ca_file(location),
            (None, Some(pem)) => b = b.ca_pem(pem.clone()),
            (None, None) => {}
        }
        let files = (&self.certificate_location, &self.key_location);
        let pems = (&self.certificate_pem, &self.key_pem);
        match (files, pems) {
            ((None, None), (None, None)) => {}
            ((Some(cert), Some(key)), (None, None)) => b = b.client_certificate_files(cert, key),
            ((None, None), (Some(cert), Some(key))) => b = b.client_certificate_pem(cert.clone(), key.expose()),
            ((Some(cert), None), (None, None)) => {
                return Err(ConfigError::invalid(
                    "ssl.certificate.location",
                    cert,
                    "needs ssl.key.location, its private key",
                ))
            }
            ((None, Some(key)), (None, None)) => {
                return Err(ConfigError::invalid(
                    "ssl.key.location",
                    key,
                    "needs ssl.certificate.location, its certificate",
                ))
            }
            ((None, None), (Some(cert), None)) => {
                return Err(ConfigError::invalid(
                    "ssl.certificate.pem",
                    format!("<{} bytes of PEM>", cert.len()),
                    "needs ssl.key.pem, its private key",
                ))
            }
            ((None, None), (None, Some(_))) => {
                return Err(ConfigError::invalid("ssl.key.pem", "***", "needs ssl.certificate.pem, its certificate"))
            }
            _ => {
                return Err(ConfigError::invalid(
                    "ssl.certificate.pem",
                    "(given)",
                    "give the client certificate and key either as files (ssl.certificate.location, \
                     ssl.key.location) or as PEM text (ssl.certificate.pem, ssl.key.pem), not both",
                ))
            }
        }
        if let Some(on) = self.verify_hostname {
            b = b.verify_hostname(on);
        }
        if let Some(on) = self.verify_certificates {
            b = b.verify_certificates(on);
        }
        b.build()
    }
}

/// The security properties among a client's: [`SecurityProperties::take`] keeps each
/// security name ([`Security::is_security_property`]) out of the client's own reader, and
/// [`SecurityProperties::build`] reads them all at the end.
///
/// ```
/// use gregor_net::SecurityProperties;
///
/// let given = [("client.id", "app"), ("security.protocol", "SSL"), ("enable.ssl.certificate.verification", "false")];
/// let mut security = SecurityProperties::new();
/// let own: Vec<_> = given.into_iter().filter(|(k, v)| !security.take(k, v)).collect();
/// assert_eq!(own, [("client.id", "app")]);
/// assert!(security.build()?.tls().is_some());
/// # Ok::<(), gregor_net::ConfigError>(())
/// ```
#[derive(Default)]
pub struct SecurityProperties {
    given: Vec<(String, String)>,
}

impl fmt::Debug for SecurityProperties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: Vec<_> = self.given.iter().map(|(k, v)| (k.as_str(), shown(k.trim(), v))).collect();
        f.debug_struct("SecurityProperties").field("given", &shown).finish()
    }
}

impl SecurityProperties {
    /// None yet.
    pub fn new() -> SecurityProperties {
        SecurityProperties::default()
    }

    /// Keeps `name=value` and returns true when `name` is a security property; returns false
    /// (keeping nothing) for any other name.
    pub fn take(&mut self, name: impl AsRef<str>, value: impl AsRef<str>) -> bool {
        let name = name.as_ref();
        if !Security::is_security_property(name) {
            return false;
        }
        self.given.push((name.to_owned(), value.as_ref().to_owned()));
        true
    }

    /// True when no security property was given.
    pub fn is_empty(&self) -> bool {
        self.given.is_empty()
    }

    /// Reads the properties kept, as [`Security::from_properties`].
    ///
    /// # Errors
    ///
    /// As [`Security::from_properties`].
    pub fn build(self) -> Result<Security, ConfigError> {
        Security::from_properties(self.given)
    }
}

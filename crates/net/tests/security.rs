//! The security property reader (`security.protocol`, `ssl.*`, `sasl.*`): a table of good
//! inputs and what they make, a table of bad ones with the exact error text, secrets kept out
//! of `Debug`, errors and `to_properties`, and the one SASL refusal of a connection.

use std::path::Path;

use gregor_net::{
    BrokerConnection, ConfigError, ConnectionConfig, Error, SaslMechanism, Security, SecurityProperties,
    SecurityProtocol,
};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

/// A CA certificate, and a client certificate with its key, as PEM text.
struct Pems {
    ca: String,
    cert: String,
    key: String,
}

fn pems() -> Pems {
    let ca_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["client".to_owned()]).unwrap().signed_by(&key, &ca, &ca_key).unwrap();
    Pems { ca: ca.pem(), cert: cert.pem(), key: key.serialize_pem() }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn read(props: &[(&str, &str)]) -> Result<Security, ConfigError> {
    Security::from_properties(props.iter().copied())
}

#[test]
fn good_inputs_make_the_settings_they_say() {
    let dir = tempfile::tempdir().unwrap();
    let p = pems();
    let ca = write(dir.path(), "ca.pem", &p.ca);
    let cert = write(dir.path(), "client.pem", &p.cert);
    let key = write(dir.path(), "client.key", &p.key);
    // (properties, protocol, hostname checked, certificates checked, SASL mechanism and user)
    type Case<'a> = (Vec<(&'a str, &'a str)>, SecurityProtocol, bool, bool, Option<(SaslMechanism, &'a str)>);
    let cases: Vec<Case<'_>> = vec![
        (vec![], SecurityProtocol::Plaintext, false, false, None),
        (vec![("security.protocol", "plaintext")], SecurityProtocol::Plaintext, false, false, None),
        (vec![("security.protocol", " SSL "), ("ssl.ca.location", &ca)], SecurityProtocol::Ssl, true, true, None),
        (vec![("security.protocol", "ssl"), ("ssl.ca.pem", &p.ca)], SecurityProtocol::Ssl, true, true, None),
        (
            vec![
                ("security.protocol", "Ssl"),
                ("ssl.ca.location", &ca),
                ("ssl.certificate.location", &cert),
                ("ssl.key.location", &key),
            ],
            SecurityProtocol::Ssl,
            true,
            true,
            None,
        ),
        (
            vec![
                ("security.protocol", "SSL"),
                ("ssl.ca.pem", &p.ca),
                ("ssl.certificate.pem", &p.cert),
                ("ssl.key.pem", &p.key),
            ],
            SecurityProtocol::Ssl,
            true,
            true,
            None,
        ),
        (
            vec![
                ("security.protocol", "SSL"),
                ("ssl.ca.location", &ca),
                ("ssl.endpoint.identification.algorithm", "none"),
            ],
            SecurityProtocol::Ssl,
            false,
            true,
            None,
        ),
        // empty is none, as Kafka reads it
        (
            vec![("security.protocol", "SSL"), ("ssl.ca.location", &ca), ("ssl.endpoint.identification.algorithm", "")],
            SecurityProtocol::Ssl,
            false,
            true,
            None,
        ),
        (
            vec![
                ("security.protocol", "SSL"),
                ("ssl.ca.pem", &p.ca),
                ("ssl.endpoint.identification.algorithm", "HTTPS"),
            ],
            SecurityProtocol::Ssl,
            true,
            true,
            None,
        ),
        (
            vec![("security.protocol", "SSL"), ("enable.ssl.certificate.verification", "FALSE")],
            SecurityProtocol::Ssl,
            true,
            false,
            None,
        ),
        (
            vec![
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", "plain"),
                ("sasl.username", "alice"),
                ("sasl.password", "alice-secret"),
            ],
            SecurityProtocol::SaslPlaintext,
            false,
            false,
            Some((SaslMechanism::Plain, "alice")),
        ),
        // librdkafka's sasl.mechanisms
        (
            vec![
                ("security.protocol", "sasl_ssl"),
                ("ssl.ca.location", &ca),
                ("sasl.mechanisms", "SCRAM-SHA-512"),
                ("sasl.username", "bob"),
                ("sasl.password", "bob-secret"),
            ],
            SecurityProtocol::SaslSsl,
            true,
            true,
            Some((SaslMechanism::ScramSha512, "bob")),
        ),
        // both spellings with one value
        (
            vec![
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", "SCRAM-SHA-256"),
                ("sasl.mechanisms", "SCRAM-SHA-256"),
                ("sasl.username", "carol"),
                ("sasl.password", "carol-secret"),
            ],
            SecurityProtocol::SaslPlaintext,
            false,
            false,
            Some((SaslMechanism::ScramSha256, "carol")),
        ),
    ];
    for (props, protocol, hostname, certificates, sasl) in cases {
        let s = read(&props).unwrap_or_else(|e| panic!("{props:?}: {e}"));
        assert_eq!(s.protocol(), protocol, "{props:?}");
        assert_eq!(s.tls().is_some(), protocol.uses_tls(), "{props:?}");
        if let Some(tls) = s.tls() {
            assert_eq!((tls.verify_hostname(), tls.verify_certificates()), (hostname, certificates), "{props:?}");
        }
        assert_eq!(s.sasl().map(|c| (c.mechanism, c.username.as_str())), sasl, "{props:?}");
        // what is read is what a connection gets
        let config = ConnectionConfig::builder().security(&s).build().unwrap();
        assert_eq!(config.security(), s);
        assert_eq!(ConnectionConfig::default().with_security(&s), config);
    }
}

#[test]
fn bad_inputs_are_refused_with_the_property_and_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let p = pems();
    let ca = write(dir.path(), "ca.pem", &p.ca);
    let cert = write(dir.path(), "client.pem", &p.cert);
    let key = write(dir.path(), "client.key", &p.key);
    let missing = dir.path().join("nope.pem").display().to_string();
    let sasl = |protocol: &'static str| {
        vec![
            ("security.protocol", protocol),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", "alice"),
            ("sasl.password", "alice-secret"),
        ]
    };
    let without = |mut props: Vec<(&'static str, &'static str)>, name: &str| {
        props.retain(|(k, _)| *k != name);
        props
    };
    let with = |mut props: Vec<(&'static str, &'static str)>, more: &[(&'static str, &'static str)]| {
        props.extend_from_slice(more);
        props
    };
    let cases: Vec<(Vec<(&str, &str)>, String)> = vec![
        (
            vec![("security.protocol", "TLS")],
            "invalid value \"TLS\" for security.protocol: must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (any case)"
                .into(),
        ),
        (
            vec![("security.protocol", "")],
            "invalid value \"\" for security.protocol: must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (any case)"
                .into(),
        ),
        // ssl.* without TLS
        (
            vec![("ssl.ca.location", "/etc/kafka/ca.pem")],
            "invalid value \"/etc/kafka/ca.pem\" for ssl.ca.location: needs security.protocol SSL or SASL_SSL \
             (security.protocol is PLAINTEXT, the default)"
                .into(),
        ),
        (
            vec![("security.protocol", "PLAINTEXT"), ("enable.ssl.certificate.verification", "false")],
            "invalid value \"false\" for enable.ssl.certificate.verification: needs security.protocol SSL or \
             SASL_SSL (security.protocol is PLAINTEXT)"
                .into(),
        ),
        (
            with(sasl("SASL_PLAINTEXT"), &[("ssl.endpoint.identification.algorithm", "")]),
            "invalid value \"\" for ssl.endpoint.identification.algorithm: needs security.protocol SSL or SASL_SSL \
             (security.protocol is SASL_PLAINTEXT)"
                .into(),
        ),
        (
            vec![("security.protocol", "plaintext"), ("ssl.key.pem", "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n")],
            "invalid value \"***\" for ssl.key.pem: needs security.protocol SSL or SASL_SSL (security.protocol is \
             PLAINTEXT)"
                .into(),
        ),
        // sasl.* without SASL
        (
            vec![("security.protocol", "SSL"), ("sasl.username", "alice")],
            "invalid value \"alice\" for sasl.username: needs security.protocol SASL_PLAINTEXT or SASL_SSL \
             (security.protocol is SSL)"
                .into(),
        ),
        (
            vec![("sasl.password", "alice-secret")],
            "invalid value \"***\" for sasl.password: needs security.protocol SASL_PLAINTEXT or SASL_SSL \
             (security.protocol is PLAINTEXT, the default)"
                .into(),
        ),
        (
            vec![("sasl.mechanisms", "PLAIN")],
            "invalid value \"PLAIN\" for sasl.mechanisms: needs security.protocol SASL_PLAINTEXT or SASL_SSL \
             (security.protocol is PLAINTEXT, the default)"
                .into(),
        ),
        // a SASL protocol without its settings
        (without(sasl("SASL_PLAINTEXT"), "sasl.mechanism"), "missing required property sasl.mechanism".into()),
        (without(sasl("SASL_SSL"), "sasl.username"), "missing required property sasl.username".into()),
        (without(sasl("SASL_SSL"), "sasl.password"), "missing required property sasl.password".into()),
        (
            with(without(sasl("SASL_SSL"), "sasl.password"), &[("sasl.password", " ")]),
            "missing required property sasl.password".into(),
        ),
        (
            with(without(sasl("SASL_PLAINTEXT"), "sasl.mechanism"), &[("sasl.mechanism", "GSSAPI")]),
            "invalid value \"GSSAPI\" for sasl.mechanism: is not supported by gregor: use PLAIN, SCRAM-SHA-256 or \
             SCRAM-SHA-512"
                .into(),
        ),
        (
            with(without(sasl("SASL_PLAINTEXT"), "sasl.mechanism"), &[("sasl.mechanisms", "oauthbearer")]),
            "invalid value \"oauthbearer\" for sasl.mechanisms: is not supported by gregor: use PLAIN, \
             SCRAM-SHA-256 or SCRAM-SHA-512"
                .into(),
        ),
        (
            with(without(sasl("SASL_PLAINTEXT"), "sasl.mechanism"), &[("sasl.mechanism", "SCRAM-SHA-1")]),
            "invalid value \"SCRAM-SHA-1\" for sasl.mechanism: must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (any \
             case)"
                .into(),
        ),
        (
            with(sasl("SASL_PLAINTEXT"), &[("sasl.mechanisms", "SCRAM-SHA-256")]),
            "sasl.mechanisms=\"SCRAM-SHA-256\" and sasl.mechanism=\"PLAIN\" name the same security setting with \
             different values: give one"
                .into(),
        ),
        // TLS settings that cannot work
        (
            vec![("security.protocol", "SSL"), ("ssl.ca.location", &missing)],
            format!(
                "invalid value {missing:?} for ssl.ca.location: cannot be read: No such file or directory (os error 2)"
            ),
        ),
        (
            vec![("security.protocol", "SSL"), ("ssl.ca.pem", "not pem")],
            "invalid value \"<7 bytes of PEM>\" for ssl.ca.pem: holds no certificate".into(),
        ),
        (
            vec![("security.protocol", "SSL"), ("ssl.ca.location", &ca), ("ssl.ca.pem", &p.ca)],
            format!(
                "invalid value \"<{} bytes of PEM>\" for ssl.ca.pem: give ssl.ca.location or ssl.ca.pem, not both",
                p.ca.trim().len()
            ),
        ),
        (
            vec![("security.protocol", "SSL"), ("ssl.certificate.location", &cert)],
            format!("invalid value {cert:?} for ssl.certificate.location: needs ssl.key.location, its private key"),
        ),
        (
            vec![("security.protocol", "SSL"), ("ssl.key.location", &key)],
            format!("invalid value {key:?} for ssl.key.location: needs ssl.certificate.location, its certificate"),
        ),
        (
            vec![("security.protocol", "SSL"), ("ssl.key.pem", &p.key)],
            "invalid value \"***\" for ssl.key.pem: needs ssl.certificate.pem, its certificate".into(),
        ),
        (
            vec![("security.protocol", "SSL"), ("ssl.certificate.location", &cert), ("ssl.key.pem", &p.key)],
            "invalid value \"(given)\" for ssl.certificate.pem: give the client certificate and key either as files \
             (ssl.certificate.location, ssl.key.location) or as PEM text (ssl.certificate.pem, ssl.key.pem), not both"
                .into(),
        ),
        (
            vec![("security.protocol", "SSL"), ("ssl.certificate.pem", &p.cert), ("ssl.key.pem", &p.ca)],
            format!(
                "invalid value \"<{} bytes of PEM>\" for ssl.key.pem: holds no usable private key: no items found",
                p.ca.trim().len()
            ),
        ),
        (
            vec![("security.protocol", "SSL"), ("ssl.endpoint.identification.algorithm", "dns")],
            "invalid value \"dns\" for ssl.endpoint.identification.algorithm: must be https, none or empty (none)"
                .into(),
        ),
        (
            vec![("security.protocol", "SSL"), ("enable.ssl.certificate.verification", "no")],
            "invalid value \"no\" for enable.ssl.certificate.verification: must be true or false".into(),
        ),
        // other clients' names
        (
            vec![("security.protocol", "SSL"), ("ssl.truststore.location", "/etc/kafka/truststore.jks")],
            "invalid value \"(hidden)\" for ssl.truststore.location: Java keystores are not read: give the CA \
             certificates as PEM with ssl.ca.location"
                .into(),
        ),
        (
            vec![("ssl.keystore.password", "changeit")],
            "invalid value \"(hidden)\" for ssl.keystore.password: Java keystores are not read: give the client \
             certificate and key as PEM with ssl.certificate.location and ssl.key.location"
                .into(),
        ),
        (
            vec![("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required password=\"x\";")],
            "invalid value \"(hidden)\" for sasl.jaas.config: JAAS is Java's: give sasl.mechanism, sasl.username \
             and sasl.password"
                .into(),
        ),
        (
            vec![("ssl.ca.locaton", "/ca.pem")],
            "unknown security property \"ssl.ca.locaton\"; known: security.protocol, ssl.ca.location, ssl.ca.pem, \
             ssl.certificate.location, ssl.key.location, ssl.certificate.pem, ssl.key.pem, \
             ssl.endpoint.identification.algorithm, enable.ssl.certificate.verification, sasl.mechanism, \
             sasl.username, sasl.password"
                .into(),
        ),
    ];
    for (props, expected) in cases {
        match read(&props) {
            Ok(s) => panic!("{props:?} was accepted: {s:?}"),
            Err(e) => assert_eq!(e.to_string(), expected, "{props:?}"),
        }
    }
}

#[test]
fn clients_hand_over_exactly_the_security_names() {
    for name in [
        "security.protocol",
        "ssl.ca.location",
        "ssl.truststore.location",
        "sasl.mechanisms",
        "sasl.jaas.config",
        " enable.ssl.certificate.verification ",
    ] {
        assert!(Security::is_security_property(name), "{name}");
    }
    for name in ["client.id", "metadata.broker.list", "bootstrap.servers", "ssl", "security", "socket.timeout.ms"] {
        assert!(!Security::is_security_property(name), "{name}");
    }
    let mut kept = SecurityProperties::new();
    assert!(kept.is_empty());
    assert!(kept.take("sasl.password", "hunter2"));
    assert!(!kept.take("client.id", "app"));
    assert!(!format!("{kept:?}").contains("hunter2"), "{kept:?}");
    // a password given without SASL: the error shows *** too
    assert!(!kept.build().unwrap_err().to_string().contains("hunter2"));
}

#[test]
fn secrets_never_show() {
    let p = pems();
    let key_body = p.key.lines().nth(1).unwrap().to_owned();
    let s = read(&[
        ("security.protocol", "SASL_SSL"),
        ("ssl.ca.pem", &p.ca),
        ("ssl.certificate.pem", &p.cert),
        ("ssl.key.pem", &p.key),
        ("sasl.mechanism", "SCRAM-SHA-256"),
        ("sasl.username", "alice"),
        ("sasl.password", "alice-secret"),
    ])
    .unwrap();
    let config = ConnectionConfig::builder().security(&s).build().unwrap();
    let shown = [
        format!("{s:?}"),
        format!("{:?}", s.sasl().unwrap()),
        format!("{config:?}"),
        format!("{:?}", s.to_properties()),
        format!("{:?}", config.to_builder()),
    ];
    for text in &shown {
        assert!(!text.contains("alice-secret"), "{text}");
        assert!(!text.contains(&key_body), "{text}");
    }
    let props = s.to_properties();
    let get = |name: &str| props.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str());
    assert_eq!(get("security.protocol"), Some("SASL_SSL"));
    assert_eq!(get("sasl.password"), Some("***"));
    assert_eq!(get("ssl.key.pem"), Some("***"));
    assert_eq!(get("ssl.certificate.pem"), Some(p.cert.trim()));
    assert_eq!(get("sasl.username"), Some("alice"));
    assert_eq!(get("ssl.endpoint.identification.algorithm"), Some("https"));
    // everything but the secrets reads back
    let plaintext = Security::plaintext().to_properties();
    assert_eq!(plaintext, [("security.protocol", "PLAINTEXT".to_owned())]);
    let dir = tempfile::tempdir().unwrap();
    let ca = write(dir.path(), "ca.pem", &p.ca);
    let tls = read(&[
        ("security.protocol", "SSL"),
        ("ssl.ca.location", &ca),
        ("ssl.endpoint.identification.algorithm", "none"),
    ])
    .unwrap();
    assert_eq!(Security::from_properties(tls.to_properties()).unwrap(), tls);
    // errors about secrets do not quote them
    for props in [
        vec![
            ("security.protocol", "SSL"),
            ("ssl.certificate.pem", p.cert.as_str()),
            ("ssl.key.pem", "hunter2 not a key"),
        ],
        vec![("security.protocol", "SASL_SSL"), ("sasl.mechanism", "PLAIN"), ("sasl.password", "hunter2")],
        vec![("security.protocol", "SSL"), ("ssl.key.password", "hunter2")],
        vec![("security.protocol", "SSL"), ("sasl.password", "hunter2")],
    ] {
        let e = read(&props).unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
        assert!(!format!("{e:?}").contains("hunter2"), "{e:?}");
    }
}

#[tokio::test]
async fn sasl_against_a_broker_that_closes_on_api_versions_is_one_clear_error() {
    let s = read(&[
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "SCRAM-SHA-512"),
        ("sasl.username", "alice"),
        ("sasl.password", "alice-secret"),
    ])
    .unwrap();
    let config = ConnectionConfig::builder().security(&s).build().unwrap();
    // a Kafka 0.8 broker: reads the request and closes
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = [0u8; 256];
            let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut buf).await;
        }
    });
    let err = BrokerConnection::connect(&addr, &config).await.unwrap_err();
    assert!(matches!(err, Error::Sasl { mechanism: SaslMechanism::ScramSha512, .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "SASL SCRAM-SHA-512 authentication with broker at {addr} failed: the broker closed the connection on \
             ApiVersions (Kafka before 0.10), so it cannot do SASL"
        )
    );
    assert!(!err.is_retriable());
    assert!(err.is_security_refusal());
    assert!(!format!("{err:?}").contains("alice-secret"));
}

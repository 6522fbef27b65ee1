//! SASL authentication mechanisms (Kafka's `sasl.mechanism`): PLAIN (RFC 4616) and
//! SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677), as pure state machines: bytes from the
//! broker in, bytes to send out. The connection carries them in SaslHandshake and
//! SaslAuthenticate requests.
//!
//! ```text
//! PLAIN  client: \0 user \0 password                                    (one round)
//! SCRAM  client-first: n,,n=user,r=<client nonce>
//!        server-first: r=<client nonce + server nonce>,s=<salt b64>,i=<iterations>
//!        client-final: c=biws,r=<nonce>,p=<proof b64>
//!        server-final: v=<server signature b64>   (checked: the broker knows the password too)
//! ```
//!
//! The password is a [`Secret`]: its `Debug` and `Display` print `***`, and no error of this
//! module quotes it or anything derived from it.

use std::fmt;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

/// A password (or other credential): kept out of `Debug`, `Display` and errors.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Secret {
        Secret(secret.into())
    }

    /// The secret itself, for the one place that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// A SASL mechanism gregor speaks (`sasl.mechanism`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SaslMechanism {
    /// `PLAIN`: the user name and password in the clear (use it over TLS only).
    Plain,
    /// `SCRAM-SHA-256`.
    ScramSha256,
    /// `SCRAM-SHA-512`.
    ScramSha512,
}

impl SaslMechanism {
    /// The name SaslHandshake carries.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

impl fmt::Display for SaslMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SaslMechanism {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_uppercase().as_str() {
            "PLAIN" => Ok(SaslMechanism::Plain),
            "SCRAM-SHA-256" => Ok(SaslMechanism::ScramSha256),
            "SCRAM-SHA-512" => Ok(SaslMechanism::ScramSha512),
            "GSSAPI" | "OAUTHBEARER" => {
                Err(format!("sasl.mechanism {s} is not supported by gregor (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 are)"))
            }
            _ => Err(format!("{s:?} is not a SASL mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)")),
        }
    }
}

/// Credentials and mechanism (`sasl.mechanism`, `sasl.username`, `sasl.password`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslConfig {
    /// The mechanism.
    pub mechanism: SaslMechanism,
    /// The user name.
    pub username: String,
    /// The password.
    pub password: Secret,
}

impl SaslConfig {
    /// Credentials for `mechanism`.
    pub fn new(mechanism: SaslMechanism, username: impl Into<String>, password: impl Into<String>) -> SaslConfig {
        SaslConfig { mechanism, username: username.into(), password: Secret::new(password) }
    }
}

/// What went wrong in an exchange (never quoting a credential).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslError {
    /// The broker's message is not what the mechanism expects.
    #[error("malformed {mechanism} message from the broker: {reason}")]
    Malformed {
        /// The mechanism.
        mechanism: SaslMechanism,
        /// What is wrong.
        reason: String,
    },
    /// The broker's final SCRAM message does not prove it knows the password (or it sent an
    /// error `e=...`).
    #[error("{mechanism}: the broker's final message failed: {reason}")]
    ServerRejected {
        /// The mechanism.
        mechanism: SaslMechanism,
        /// What it said or what did not match.
        reason: String,
    },
}

/// One client's side of an exchange.
#[derive(Debug)]
pub struct SaslClient {
    config: SaslConfig,
    state: State,
}

#[derive(Debug)]
enum State {
    Start,
    /// SCRAM: sent client-first with this nonce and bare message.
    SentFirst {
        nonce: String,
        first_bare: String,
    },
    /// SCRAM: sent client-final; the server signature that must come back.
    SentFinal {
        server_signature: Vec<u8>,
    },
    Done,
}

impl SaslClient {
    /// A client for these credentials, with a random nonce.
    pub fn new(config: SaslConfig) -> SaslClient {
        SaslClient { config, state: State::Start }
    }

    /// The first message to send.
    pub fn first_message(&mut self) -> Vec<u8> {
        self.first_message_with_nonce(&random_nonce())
    }

    /// [`SaslClient::first_message`] with a given nonce (tests use RFC vectors).
    pub fn first_message_with_nonce(&mut self, nonce: &str) -> Vec<u8> {
        match self.config.mechanism {
            SaslMechanism::Plain => {
                self.state = State::Done;
                let mut out = Vec::new();
                out.push(0);
                out.extend_from_slice(self.config.username.as_bytes());
                out.push(0);
                out.extend_from_slice(self.config.password.expose().as_bytes());
                out
            }
            SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => {
                let first_bare = format!("n={},r={nonce}", escape_name(&self.config.username));
                self.state = State::SentFirst { nonce: nonce.to_string(), first_bare: first_bare.clone() };
                format!("n,,{first_bare}").into_bytes()
            }
        }
    }

    /// True once nothing more is to be sent or checked.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// Takes the broker's answer; returns the next message to send, or `None` when the exchange
    /// is complete (the last answer checked).
    ///
    /// # Errors
    ///
    /// [`SaslError`] for an answer the mechanism cannot use, or a server signature that does
    /// not match.
    pub fn answer(&mut self, from_broker: &[u8]) -> Result<Option<Vec<u8>>, SaslError> {
        let mechanism = self.config.mechanism;
        match std::mem::replace(&mut self.state, State::Done) {
            State::Start | State::Done => Ok(None),
            State::SentFirst { nonce, first_bare } => {
                let (message, server_signature) = scram_final(&self.config, &nonce, &first_bare, from_broker)?;
                self.state = State::SentFinal { server_signature };
                Ok(Some(message))
            }
            State::SentFinal { server_signature } => {
                let text = std::str::from_utf8(from_broker).map_err(|_| malformed(mechanism, "not UTF-8"))?;
                let attrs = attributes(text);
                if let Some(e) = attrs.iter().find(|(k, _)| *k == 'e') {
                    return Err(SaslError::ServerRejected { mechanism, reason: format!("error {}", e.1) });
                }
                let v = attrs.iter().find(|(k, _)| *k == 'v').ok_or_else(|| malformed(mechanism, "no v= attribute"))?;
                let got = B64.decode(v.1).map_err(|_| malformed(mechanism, "v= is not base64"))?;
                if got != server_signature {
                    return Err(SaslError::ServerRejected {
                        mechanism,
                        reason: "its signature does not match: it does not know the password".into(),
                    });
                }
                Ok(None)
            }
        }
    }
}

fn malformed(mechanism: SaslMechanism, reason: &str) -> SaslError {
    SaslError::Malformed { mechanism, reason: reason.to_string() }
}

/// `=` and `,` in a SCRAM user name are written `=3D` and `=2C`.
fn escape_name(name: &str) -> String {
    name.replace('=', "=3D").replace(',', "=2C")
}

/// `k=value` attributes of a SCRAM message.
fn attributes(text: &str) -> Vec<(char, &str)> {
    text.split(',')
        .filter_map(|part| {
            let mut chars = part.chars();
            let key = chars.next()?;
            let rest = chars.as_str().strip_prefix('=')?;
            Some((key, rest))
        })
        .collect()
}

fn random_nonce() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    B64.encode(bytes)
}

/// The most PBKDF2 iterations accepted from a broker (Kafka's limit is 16384; more would let a
/// hostile broker spend the client's CPU).
const MAX_ITERATIONS: u32 = 16_384;

/// Builds client-final from server-first: (message, the server signature to expect).
fn scram_final(
    config: &SaslConfig,
    nonce: &str,
    first_bare: &str,
    server_first: &[u8],
) -> Result<(Vec<u8>, Vec<u8>), SaslError> {
    let mechanism = config.mechanism;
    let text = std::str::from_utf8(server_first).map_err(|_| malformed(mechanism, "not UTF-8"))?;
    let attrs = attributes(text);
    let get = |k: char| attrs.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
    if let Some(e) = get('e') {
        return Err(SaslError::ServerRejected { mechanism, reason: format!("error {e}") });
    }
    let server_nonce = get('r').ok_or_else(|| malformed(mechanism, "no r= nonce"))?;
    if !server_nonce.starts_with(nonce) || server_nonce.len() <= nonce.len() {
        return Err(malformed(mechanism, "the nonce does not extend ours"));
    }
    let salt = B64
        .decode(get('s').ok_or_else(|| malformed(mechanism, "no s= salt"))?)
        .map_err(|_| malformed(mechanism, "s= is not base64"))?;
    let iterations: u32 = get('i')
        .ok_or_else(|| malformed(mechanism, "no i= iteration count"))?
        .parse()
        .map_err(|_| malformed(mechanism, "i= is not a number"))?;
    if iterations == 0 || iterations > MAX_ITERATIONS {
        return Err(malformed(mechanism, &format!("{iterations} iterations (1 to {MAX_ITERATIONS} accepted)")));
    }
    let without_proof = format!("c=biws,r={server_nonce}");
    let auth_message = format!("{first_bare},{text},{without_proof}");
    let (proof, server_signature) = match mechanism {
        SaslMechanism::ScramSha256 => {
            proofs_sha256(config.password.expose().as_bytes(), &salt, iterations, auth_message.as_bytes())
        }
        SaslMechanism::ScramSha512 => {
            proofs_sha512(config.password.expose().as_bytes(), &salt, iterations, auth_message.as_bytes())
        }
        SaslMechanism::Plain => return Err(malformed(mechanism, "PLAIN has no second round")),
    };
    Ok((format!("{without_proof},p={}", B64.encode(proof)).into_bytes(), server_signature))
}

/// (client proof, server signature) of RFC 5802, for one hash.
macro_rules! proofs {
    ($name:ident, $hash:ty) => {
        fn $name(password: &[u8], salt: &[u8], iterations: u32, auth_message: &[u8]) -> (Vec<u8>, Vec<u8>) {
            let hmac = |key: &[u8], data: &[u8]| -> Vec<u8> {
                let mut mac = <Hmac<$hash> as Mac>::new_from_slice(key)
                    .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            };
            let mut salted = vec![0u8; <$hash as Digest>::output_size()];
            pbkdf2::pbkdf2_hmac::<$hash>(password, salt, iterations, &mut salted);
            let client_key = hmac(&salted, b"Client Key");
            let stored_key = <$hash as Digest>::digest(&client_key).to_vec();
            let client_signature = hmac(&stored_key, auth_message);
            let proof: Vec<u8> = client_key.iter().zip(&client_signature).map(|(a, b)| a ^ b).collect();
            let server_key = hmac(&salted, b"Server Key");
            (proof, hmac(&server_key, auth_message))
        }
    };
}

proofs!(proofs_sha256, Sha256);
proofs!(proofs_sha512, Sha512);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scram_sha_256_matches_rfc_7677() {
        // the example exchange of RFC 7677 section 3
        let mut c = SaslClient::new(SaslConfig::new(SaslMechanism::ScramSha256, "user", "pencil"));
        assert_eq!(c.first_message_with_nonce("rOprNGfwEbeRWgbNEkqO"), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let client_final = c.answer(server_first).unwrap().unwrap();
        assert_eq!(
            String::from_utf8(client_final).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        assert!(!c.is_done());
        assert_eq!(c.answer(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").unwrap(), None);
        assert!(c.is_done());
    }

    #[test]
    fn a_broker_that_does_not_know_the_password_is_caught() {
        let mut c = SaslClient::new(SaslConfig::new(SaslMechanism::ScramSha512, "user", "pencil"));
        c.first_message_with_nonce("abc");
        c.answer(b"r=abcdef,s=c2FsdA==,i=4096").unwrap().unwrap();
        let err = c.answer(b"v=AAAA").unwrap_err();
        assert!(matches!(err, SaslError::ServerRejected { .. }), "{err}");
        assert!(!err.to_string().contains("pencil"));
    }

    #[test]
    fn hostile_server_first_messages_are_refused() {
        let cases: &[&[u8]] = &[
            b"r=zzz,s=c2FsdA==,i=4096",       // a nonce that is not ours
            b"r=abc,s=c2FsdA==,i=4096",       // ours, not extended
            b"r=abcd,s=!!,i=4096",            // bad salt
            b"r=abcd,s=c2FsdA==,i=999999999", // a CPU bomb
            b"r=abcd,s=c2FsdA==,i=0",
            b"r=abcd,s=c2FsdA==",
            b"e=invalid-proof",
            b"\xff\xfe",
        ];
        for case in cases {
            let mut c = SaslClient::new(SaslConfig::new(SaslMechanism::ScramSha256, "u", "p"));
            c.first_message_with_nonce("abc");
            assert!(c.answer(case).is_err(), "{:?}", String::from_utf8_lossy(case));
        }
    }

    #[test]
    fn plain_is_one_message_and_names_are_escaped_for_scram() {
        let mut c = SaslClient::new(SaslConfig::new(SaslMechanism::Plain, "alice", "s3cret"));
        assert_eq!(c.first_message(), b"\0alice\0s3cret");
        assert!(c.is_done());
        let mut c = SaslClient::new(SaslConfig::new(SaslMechanism::ScramSha256, "a=b,c", "p"));
        assert_eq!(c.first_message_with_nonce("n"), b"n,,n=a=3Db=2Cc,r=n");
    }

    #[test]
    fn secrets_stay_out_of_debug() {
        let config = SaslConfig::new(SaslMechanism::ScramSha256, "alice", "s3cret");
        assert!(!format!("{config:?}").contains("s3cret"));
        assert!(!format!("{:?}", SaslClient::new(config)).contains("s3cret"));
        assert_eq!(Secret::new("x").to_string(), "***");
        assert_eq!("scram-sha-512".parse::<SaslMechanism>(), Ok(SaslMechanism::ScramSha512));
        assert!("GSSAPI".parse::<SaslMechanism>().unwrap_err().contains("not supported"));
    }
}

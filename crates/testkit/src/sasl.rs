//! The broker's side of SASL PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677), for
//! fake brokers: a [`SaslServer`] checks one client's messages against known credentials, as a
//! Kafka broker's `SaslServer` does, and answers with Kafka's messages (`e=...` for SCRAM
//! errors).
//!
//! Written from the RFCs, independently of gregor-net's client side, so that a bug mirrored in
//! both would have to be made twice; the RFC 7677 example exchange is checked here too.

use std::collections::HashMap;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

/// A mechanism a fake broker offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mechanism {
    /// `PLAIN`.
    Plain,
    /// `SCRAM-SHA-256`.
    ScramSha256,
    /// `SCRAM-SHA-512`.
    ScramSha512,
}

impl Mechanism {
    /// Kafka's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism named `name` (exactly, as Kafka compares).
    pub fn from_name(name: &str) -> Option<Mechanism> {
        [Mechanism::Plain, Mechanism::ScramSha256, Mechanism::ScramSha512].into_iter().find(|m| m.name() == name)
    }
}

/// What a [`SaslServer`] says after a client message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send these bytes; the exchange goes on.
    Continue(Vec<u8>),
    /// Send these bytes (possibly empty); the client is authenticated as `user`.
    Done {
        /// The last answer.
        answer: Vec<u8>,
        /// Who.
        user: String,
    },
    /// Authentication failed: Kafka answers error 58 (SASL_AUTHENTICATION_FAILED) with this
    /// message and closes the connection.
    Failed(String),
}

/// One client's exchange.
#[derive(Debug)]
pub struct SaslServer {
    mechanism: Mechanism,
    users: HashMap<String, String>,
    iterations: u32,
    state: State,
}

#[derive(Debug)]
enum State {
    Start,
    /// SCRAM: server-first sent.
    SentFirst {
        user: String,
        client_first_bare: String,
        server_first: String,
        nonce: String,
        salt: Vec<u8>,
    },
    Done,
}

impl SaslServer {
    /// An exchange for `mechanism` checking against `users` (name to password). SCRAM uses
    /// 4096 iterations, Kafka's usual count.
    pub fn new(mechanism: Mechanism, users: HashMap<String, String>) -> SaslServer {
        SaslServer { mechanism, users, iterations: 4096, state: State::Start }
    }

    /// Takes the client's next message; `server_nonce` is appended to the client's nonce in
    /// SCRAM's first answer (pass something random; tests pass RFC values).
    pub fn step(&mut self, message: &[u8], server_nonce: &str, salt: &[u8]) -> Step {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Done => Step::Failed("the exchange is over".into()),
            State::Start => match self.mechanism {
                Mechanism::Plain => self.plain(message),
                Mechanism::ScramSha256 | Mechanism::ScramSha512 => self.scram_first(message, server_nonce, salt),
            },
            State::SentFirst { user, client_first_bare, server_first, nonce, salt } => {
                self.scram_final(message, &user, &client_first_bare, &server_first, &nonce, &salt)
            }
        }
    }

    fn plain(&mut self, message: &[u8]) -> Step {
        let parts: Vec<&[u8]> = message.split(|b| *b == 0).collect();
        let [_authzid, user, password] = parts.as_slice() else {
            return Step::Failed("Invalid SASL/PLAIN response: expected 3 tokens".into());
        };
        let (Ok(user), Ok(password)) = (std::str::from_utf8(user), std::str::from_utf8(password)) else {
            return Step::Failed("Invalid SASL/PLAIN response: not UTF-8".into());
        };
        match self.users.get(user) {
            Some(known) if known == password => Step::Done { answer: Vec::new(), user: user.to_string() },
            _ => Step::Failed("Authentication failed: Invalid username or password".into()),
        }
    }

    fn scram_first(&mut self, message: &[u8], server_nonce: &str, salt: &[u8]) -> Step {
        let Ok(text) = std::str::from_utf8(message) else { return Step::Failed("not UTF-8".into()) };
        // gs2 header: no channel binding, no authzid
        let Some(bare) = text.strip_prefix("n,,") else {
            return Step::Failed(format!("unsupported gs2 header in {text:?}"));
        };
        let attrs = attributes(bare);
        let (Some(user), Some(client_nonce)) = (attrs.get(&'n'), attrs.get(&'r')) else {
            return Step::Failed("client-first without n= or r=".into());
        };
        let user = user.replace("=2C", ",").replace("=3D", "=");
        if !self.users.contains_key(&user) {
            return Step::Failed(format!(
                "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
                self.mechanism.name()
            ));
        }
        let nonce = format!("{client_nonce}{server_nonce}");
        let server_first = format!("r={nonce},s={},i={}", B64.encode(salt), self.iterations);
        self.state = State::SentFirst {
            user,
            client_first_bare: bare.to_string(),
            server_first: server_first.clone(),
            nonce,
            salt: salt.to_vec(),
        };
        Step::Continue(server_first.into_bytes())
    }

    fn scram_final(
        &mut self,
        message: &[u8],
        user: &str,
        client_first_bare: &str,
        server_first: &str,
        nonce: &str,
        salt: &[u8],
    ) -> Step {
        let Ok(text) = std::str::from_utf8(message) else { return Step::Failed("not UTF-8".into()) };
        let Some((without_proof, proof)) = text.rsplit_once(",p=") else {
            return Step::Failed("client-final without p=".into());
        };
        let attrs = attributes(without_proof);
        if attrs.get(&'r').copied() != Some(nonce) {
            return Step::Failed("Invalid nonce".into());
        }
        if attrs.get(&'c').copied() != Some("biws") {
            return Step::Failed("Invalid channel binding".into());
        }
        let Ok(proof) = B64.decode(proof) else { return Step::Failed("p= is not base64".into()) };
        let password = self.users.get(user).cloned().unwrap_or_default();
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let (expected, signature) = match self.mechanism {
            Mechanism::ScramSha256 => scram_sha256(password.as_bytes(), salt, self.iterations, auth_message.as_bytes()),
            Mechanism::ScramSha512 => scram_sha512(password.as_bytes(), salt, self.iterations, auth_message.as_bytes()),
            Mechanism::Plain => return Step::Failed("PLAIN has one round".into()),
        };
        if proof != expected {
            return Step::Failed(format!(
                "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
                self.mechanism.name()
            ));
        }
        Step::Done { answer: format!("v={}", B64.encode(signature)).into_bytes(), user: user.to_string() }
    }
}

fn attributes(text: &str) -> HashMap<char, &str> {
    text.split(',')
        .filter_map(|part| {
            let (key, value) = part.split_once('=')?;
            let mut chars = key.chars();
            let k = chars.next()?;
            chars.next().is_none().then_some((k, value))
        })
        .collect()
}

/// (the client proof expected, the server signature) for one hash, RFC 5802 section 3.
macro_rules! scram {
    ($name:ident, $hash:ty) => {
        fn $name(password: &[u8], salt: &[u8], iterations: u32, auth_message: &[u8]) -> (Vec<u8>, Vec<u8>) {
            let mac = |key: &[u8], data: &[u8]| -> Vec<u8> {
                let mut m = <Hmac<$hash> as Mac>::new_from_slice(key).expect("HMAC takes any key");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            };
            let mut salted = vec![0u8; <$hash as Digest>::output_size()];
            pbkdf2::pbkdf2_hmac::<$hash>(password, salt, iterations, &mut salted);
            let client_key = mac(&salted, b"Client Key");
            let stored_key = <$hash as Digest>::digest(&client_key);
            let client_signature = mac(&stored_key, auth_message);
            let proof = client_key.iter().zip(&client_signature).map(|(k, s)| k ^ s).collect();
            (proof, mac(&mac(&salted, b"Server Key"), auth_message))
        }
    };
}

scram!(scram_sha256, Sha256);
scram!(scram_sha512, Sha512);

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> HashMap<String, String> {
        HashMap::from([("user".to_string(), "pencil".to_string())])
    }

    #[test]
    fn the_rfc_7677_exchange_is_accepted() {
        let mut server = SaslServer::new(Mechanism::ScramSha256, users());
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let first = server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", &salt);
        assert_eq!(
            first,
            Step::Continue(
                b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".to_vec()
            )
        );
        let last = server.step(
            b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
            "",
            &salt,
        );
        assert_eq!(
            last,
            Step::Done { answer: b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".to_vec(), user: "user".into() }
        );
    }

    #[test]
    fn wrong_proofs_and_passwords_fail() {
        let mut server = SaslServer::new(Mechanism::ScramSha256, users());
        let salt = b"salt";
        assert!(matches!(server.step(b"n,,n=user,r=abc", "def", salt), Step::Continue(_)));
        assert!(matches!(server.step(b"c=biws,r=abcdef,p=AAAA", "", salt), Step::Failed(_)));
        let mut server = SaslServer::new(Mechanism::Plain, users());
        assert!(matches!(server.step(b"\0user\0pencil", "", b""), Step::Done { .. }));
        let mut server = SaslServer::new(Mechanism::Plain, users());
        assert!(matches!(server.step(b"\0user\0crayon", "", b""), Step::Failed(_)));
        let mut server = SaslServer::new(Mechanism::ScramSha512, users());
        assert!(matches!(server.step(b"n,,n=nobody,r=abc", "def", salt), Step::Failed(_)));
    }
}

//! # gregor-config
//!
//! The configuration kit every gregor client reads its settings through: the producer, the
//! high-level consumer, the simple consumer, the connections of `gregor-net` and the admin
//! tools. Pure: no IO, no runtime, no logging (the two-tier check's warnings stay with each
//! client, which knows what is suspicious).
//!
//! * [`ConfigError`]: the one configuration error. Every client crate re-exports it
//!   (`gregor_producer::ConfigError`, `gregor_consumer::ConfigError`, `gregor_net::ConfigError`,
//!   `gregor_simple_consumer::ConfigError` are this type), so its three messages read the same
//!   everywhere:
//!   `invalid value "2" for request.required.acks: must be -1, 0 or 1`,
//!   `missing required property metadata.broker.list`,
//!   `unknown consumer property "fetch.size"; known: group.id, ...`.
//! * [`read()`]: Kafka properties (`IntoIterator<Item = (K, V)>`) checked against a client's
//!   known names, each a [`Property`] with typed reads: integers in a range
//!   ([`Property::int`]), milliseconds into a [`Duration`](std::time::Duration)
//!   ([`Property::ms`]), booleans as Kafka reads them ([`Property::bool`]), names from a table
//!   ([`Property::choice`]), strings ([`Property::value`]).
//! * Builder-side checks, for values set with typed setters: [`check_ms`] and [`check_count`]
//!   (Kafka `int` properties, at most [`INT_MAX`]), [`check_timeout`] and [`check_at_most`].
//! * Kafka 0.8.2's naming rules: [`validate_client_id`], [`check_name_chars`] (`group.id`,
//!   `consumer.id`), [`validate_topic_name`] (and [`check_topic_name`] for a property whose
//!   value is a topic).
//! * With the `testing` feature, the `testing` module: the assertions the client crates'
//!   configuration tests share.
//!
//! ```
//! use std::time::Duration;
//! use gregor_config::{read, ConfigError};
//!
//! const PROPERTIES: &[&str] = &["fetch.wait.max.ms", "auto.commit.enable", "auto.offset.reset"];
//!
//! let mut wait = Duration::from_millis(100);
//! let mut commit = true;
//! let mut from_start = false;
//! let given = [("fetch.wait.max.ms", "500"), ("auto.commit.enable", "FALSE"), ("auto.offset.reset", "smallest")];
//! for property in read("example", PROPERTIES, given) {
//!     let property = property?;
//!     match property.name() {
//!         "fetch.wait.max.ms" => wait = property.ms(0)?,
//!         "auto.commit.enable" => commit = property.bool()?,
//!         "auto.offset.reset" => from_start = property.choice(&[("smallest", true), ("largest", false)])?,
//!         _ => unreachable!("read yields only known names"),
//!     }
//! }
//! assert_eq!((wait, commit, from_start), (Duration::from_millis(500), false, true));
//!
//! let e = read("example", PROPERTIES, [("fetch.size", "1")]).next().unwrap().unwrap_err();
//! assert_eq!(
//!     e.to_string(),
//!     "unknown example property \"fetch.size\"; known: fetch.wait.max.ms, auto.commit.enable, auto.offset.reset"
//! );
//! # Ok::<(), ConfigError>(())
//! ```

mod check;
mod error;
mod names;
mod read;
#[cfg(feature = "testing")]
pub mod testing;

pub use check::{check_at_most, check_count, check_ms, check_timeout};
pub use error::{shorten, ConfigError, MAX_SHOWN_VALUE_BYTES};
pub use names::{
    check_name_chars, check_topic_name, is_legal_char, validate_client_id, validate_topic_name, TopicNameError,
    MAX_CLIENT_ID_BYTES, MAX_TOPIC_NAME_LENGTH,
};
pub use read::{
    kafka_bool, parse_bool, parse_choice, parse_int, parse_ms, read, read_with_aliases, Alias, Properties, Property,
    INT_MAX,
};

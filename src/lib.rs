//! # gregor
//!
//! A Rust client SDK for Apache Kafka with the Kafka 0.8 client architecture. This facade
//! re-exports the workspace's crates; today that is the protocol codec:
//!
//! * [`protocol`]: the pure Kafka 0.8.2 wire codec (every client API, Message v0, MessageSet,
//!   gzip/snappy/lz4, error codes).
//!
//! The producers, consumers, admin operations and the test cluster arrive in the next steps;
//! see the README and CHANGELOG.

pub use gregor_protocol as protocol;

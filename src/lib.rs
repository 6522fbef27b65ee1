//! The `gregor` facade: it re-exports the workspace's crates. Today that is the protocol codec,
//! [`protocol`] (`gregor-protocol`); the producers, consumers, admin operations and the test
//! cluster join it as they land. The README follows.
//!
#![doc = include_str!("../README.md")]

pub use gregor_protocol as protocol;

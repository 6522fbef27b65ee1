//! What the cluster's brokers do on purpose: the fault [`Rule`]s every broker consults, how
//! each broker greets connections ([`Accept`]), and the request log.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use gregor_protocol::frame::{ApiKey, RequestHeader};
use gregor_protocol::messages::AnyRequest;

use crate::fault::{Accept, Fault, Rule, Rules};

/// A request as a broker received it.
#[derive(Debug, Clone)]
pub struct LoggedRequest {
    /// The broker that received it.
    pub broker: i32,
    /// When.
    pub at: SystemTime,
    /// Its header.
    pub header: RequestHeader,
    /// Its body.
    pub request: AnyRequest,
    /// The fault it met: [`Fault::Answer`] when no rule matched, [`Fault::Silent`] on a
    /// connection a fault had silenced.
    pub fault: Fault,
}

/// Most requests the log keeps by default (the oldest go first); see
/// [`crate::FakeClusterBuilder::request_log_capacity`]. Logged Produce requests hold their
/// message sets, so a long benchmark wants a small log.
pub const REQUEST_LOG_CAPACITY: usize = 100_000;

#[derive(Debug)]
pub(crate) struct Hooks {
    capacity: usize,
    rules: Mutex<Rules>,
    accept: Mutex<BTreeMap<i32, Accept>>,
    log: Mutex<VecDeque<LoggedRequest>>,
    accepted: AtomicU64,
    handshakes_failed: AtomicU64,
}

impl Hooks {
    pub(crate) fn new(capacity: usize) -> Hooks {
        Hooks {
            capacity,
            rules: Mutex::default(),
            accept: Mutex::default(),
            log: Mutex::default(),
            accepted: AtomicU64::new(0),
            handshakes_failed: AtomicU64::new(0),
        }
    }

    /// A connection was accepted.
    pub(crate) fn count_accepted(&self) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn connections_accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    /// A TLS handshake failed.
    pub(crate) fn count_handshake_failed(&self) {
        self.handshakes_failed.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn tls_handshakes_failed(&self) -> u64 {
        self.handshakes_failed.load(Ordering::Relaxed)
    }

    pub(crate) fn add(&self, rule: Rule) {
        lock(&self.rules).push(rule);
    }

    pub(crate) fn clear(&self) {
        lock(&self.rules).clear();
    }

    /// The fault for a request, spending one use of the rule that matched.
    pub(crate) fn take(&self, broker: i32, api_key: ApiKey) -> Option<Fault> {
        lock(&self.rules).take(broker, api_key)
    }

    pub(crate) fn set_accept(&self, broker: i32, accept: Accept) {
        lock(&self.accept).insert(broker, accept);
    }

    /// How `broker` greets a new connection.
    pub(crate) fn accept(&self, broker: i32) -> Accept {
        lock(&self.accept).get(&broker).copied().unwrap_or_default()
    }

    pub(crate) fn record(&self, entry: LoggedRequest) {
        if self.capacity == 0 {
            return;
        }
        let mut log = lock(&self.log);
        while log.len() >= self.capacity {
            log.pop_front();
        }
        log.push_back(entry);
    }

    pub(crate) fn requests(&self) -> Vec<LoggedRequest> {
        lock(&self.log).iter().cloned().collect()
    }

    pub(crate) fn clear_log(&self) {
        lock(&self.log).clear();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

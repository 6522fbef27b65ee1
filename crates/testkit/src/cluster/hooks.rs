//! Fault hooks and the request log.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use gregor_protocol::frame::{ApiKey, RequestHeader};
use gregor_protocol::messages::AnyRequest;
use gregor_protocol::ErrorCode;

/// What an interception does to a matching request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Answer with this error code for every topic/partition (or the whole response) of the
    /// request instead of handling it.
    Error(ErrorCode),
    /// Handle the request normally, but only after this delay.
    Delay(Duration),
    /// Close the connection without answering.
    DropConnection,
    /// Handle the request but send no response (the client must time out).
    NoResponse,
}

/// A rule: requests with this API key (optionally to one broker) get the action, once, a
/// number of times, or always.
#[derive(Debug, Clone)]
pub struct Intercept {
    api_key: ApiKey,
    broker: Option<i32>,
    remaining: Option<usize>,
    action: Action,
}

impl Intercept {
    /// Every request with `api_key` gets `action`, until [`Intercept::times`] says otherwise.
    pub fn new(api_key: ApiKey, action: Action) -> Intercept {
        Intercept { api_key, broker: None, remaining: None, action }
    }

    /// Only requests sent to `broker`.
    pub fn on_broker(mut self, broker: i32) -> Intercept {
        self.broker = Some(broker);
        self
    }

    /// Only the next request.
    pub fn once(self) -> Intercept {
        self.times(1)
    }

    /// Only the next `n` requests.
    pub fn times(mut self, n: usize) -> Intercept {
        self.remaining = Some(n);
        self
    }
}

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
}

/// Most requests the log keeps by default (the oldest go first); see
/// [`crate::FakeClusterBuilder::request_log_capacity`]. Logged Produce requests hold their
/// message sets, so a long benchmark wants a small log.
pub const REQUEST_LOG_CAPACITY: usize = 100_000;

#[derive(Debug)]
pub(crate) struct Hooks {
    capacity: usize,
    intercepts: Mutex<Vec<Intercept>>,
    log: Mutex<VecDeque<LoggedRequest>>,
}

impl Hooks {
    pub(crate) fn new(capacity: usize) -> Hooks {
        Hooks { capacity, intercepts: Mutex::default(), log: Mutex::default() }
    }

    pub(crate) fn add(&self, intercept: Intercept) {
        lock(&self.intercepts).push(intercept);
    }

    pub(crate) fn clear(&self) {
        lock(&self.intercepts).clear();
    }

    /// The action for a request, consuming one use of the rule that matched.
    pub(crate) fn take(&self, broker: i32, api_key: ApiKey) -> Option<Action> {
        let mut rules = lock(&self.intercepts);
        let i = rules.iter().position(|r| r.api_key == api_key && r.broker.is_none_or(|b| b == broker))?;
        let action = rules[i].action.clone();
        if let Some(n) = rules[i].remaining.as_mut() {
            *n -= 1;
            if *n == 0 {
                rules.remove(i);
            }
        }
        Some(action)
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

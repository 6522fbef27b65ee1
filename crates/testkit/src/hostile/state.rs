//! What a [`HostileBroker`](super::HostileBroker) holds: its topics' logs, its fault rules, how
//! it greets connections, the requests it served and its open connections.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, MutexGuard};

use gregor_protocol::frame::{ApiKey, RequestHeader};
use gregor_protocol::messages::AnyRequest;
use gregor_protocol::Message;
use tokio::task::AbortHandle;

use crate::fault::{Accept, Fault, Rules};

/// How many requests [`HostileBroker::served`](super::HostileBroker::served) keeps (the oldest
/// are dropped first; [`HostileBroker::count`](super::HostileBroker::count) counts them all).
pub const SERVED_LOG_CAPACITY: usize = 10_000;

/// A request the broker received, and the fault it met.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    /// Which connection it came on (numbered from 0 in accept order).
    pub connection: u64,
    /// Its header.
    pub header: RequestHeader,
    /// Its body.
    pub request: AnyRequest,
    /// The fault it met: [`Fault::Answer`] when no rule matched, [`Fault::Silent`] on a
    /// connection a fault (or [`Accept::Silent`]) had silenced.
    pub fault: Fault,
}

/// The broker's data, behind one lock never held across an await.
#[derive(Debug)]
pub(super) struct State {
    /// Topic -> number of partitions.
    pub(super) topics: BTreeMap<String, i32>,
    /// (topic, partition) -> its messages, the offset being the index.
    pub(super) logs: HashMap<(String, i32), Vec<Message>>,
    pub(super) rules: Rules,
    pub(super) accept: Accept,
    pub(super) served: VecDeque<Served>,
    pub(super) counts: HashMap<ApiKey, usize>,
}

/// What the broker's handle and its tasks share.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) node_id: i32,
    pub(super) addr: SocketAddr,
    state: Mutex<State>,
    connections: Mutex<HashMap<u64, AbortHandle>>,
    /// Connections accepted so far.
    pub(super) accepted: AtomicU64,
}

impl Shared {
    pub(super) fn new(node_id: i32, addr: SocketAddr, state: State) -> Shared {
        Shared {
            node_id,
            addr,
            state: Mutex::new(state),
            connections: Mutex::new(HashMap::new()),
            accepted: AtomicU64::new(0),
        }
    }

    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        // a panic while holding the lock leaves the state consistent enough for a test tool
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Open connections' tasks, by connection number.
    pub(super) fn connections(&self) -> MutexGuard<'_, HashMap<u64, AbortHandle>> {
        self.connections.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Picks the fault for a request (spending one use of the rule that matched; none on a
    /// muted connection) and logs the request with it.
    pub(super) fn take(
        &self,
        connection: u64,
        header: &RequestHeader,
        request: &AnyRequest,
        muted: bool,
    ) -> Option<Fault> {
        let mut st = self.state();
        let fault = if muted { None } else { st.rules.take(self.node_id, header.api_key) };
        let logged = match (&fault, muted) {
            (_, true) => Fault::Silent,
            (Some(f), false) => f.clone(),
            (None, false) => Fault::Answer,
        };
        *st.counts.entry(header.api_key).or_default() += 1;
        if st.served.len() == SERVED_LOG_CAPACITY {
            st.served.pop_front();
        }
        st.served.push_back(Served { connection, header: header.clone(), request: request.clone(), fault: logged });
        fault
    }
}

//! A hostile broker: a Kafka 0.8.2 broker on 127.0.0.1 that answers each request the way a
//! script says — correctly, or with any [`Fault`](crate::fault::Fault): an error code, a delay, a wrong correlation
//! id, a truncated frame, a huge or negative size prefix, a corrupt body (a bad CRC, a message
//! set that overruns its frame, an array count of 2^31-1, bytes after the body), garbage after
//! a valid response, silence, a closed connection, or one byte at a time.
//!
//! It exists to prove that a client turns each of these into a typed error within its
//! timeouts, without a panic, a hang or an allocation the bytes received do not justify.
//! Unlike the [`FakeCluster`](crate::FakeCluster) it needs no ZooKeeper and keeps no replicas:
//! it is one broker (id 0 unless [`HostileBrokerBuilder::node_id`] says otherwise) that names
//! itself in Metadata as the only broker and the leader of every partition of the topics it
//! was given, so a producer or consumer bootstrapped from [`HostileBroker::bootstrap`] sends it
//! everything. The faults and the [`Rule`]s that pick them are the testkit's one vocabulary
//! ([`crate::fault`]), the same the FakeCluster takes: a test can move from one fake to the
//! other without changing its rules.
//!
//! What gets which fault is decided per request by rules, tried in the order they were added
//! (the first that matches and has uses left wins); a request no rule matches is answered
//! correctly. Rules can be added and cleared while clients run. How connections are greeted is
//! set with an [`Accept`]. As a broker does, a Fetch that finds fewer than its `min_bytes` is
//! parked for its `max_wait_time` before it is answered.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use gregor_protocol::frame::ApiKey;
//! use gregor_testkit::fault::{Fault, Rule};
//! use gregor_testkit::hostile::HostileBroker;
//! use gregor_testkit::wire::{self, Conn};
//!
//! let broker = HostileBroker::builder().topic("events", 2).start().await.unwrap();
//! // Metadata is answered correctly: broker 0 at broker.addr() leads events/0 and events/1...
//! let mut conn = Conn::open(broker.addr()).await;
//! let metadata = conn.call(0, &wire::metadata(&["events"])).await;
//! assert_eq!(metadata.brokers[0].port, i32::from(broker.addr().port()));
//! assert_eq!(metadata.topics[0].partitions.len(), 2);
//!
//! // ...and the next Fetch gets a message whose CRC is wrong, the one after it silence.
//! broker.intercept(Rule::on(ApiKey::Fetch, Fault::BadCrc).once());
//! broker.intercept(Rule::on(ApiKey::Fetch, Fault::Silent));
//! // point the client under test at broker.bootstrap() and check what it reports
//! assert_eq!(broker.bootstrap(), broker.addr().to_string());
//! # }
//! ```
//!
//! The broker's tasks run on the tokio runtime that called [`HostileBrokerBuilder::start`];
//! dropping the [`HostileBroker`] closes its listener and every connection.

mod answer;
mod serve;
mod state;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use gregor_protocol::frame::ApiKey;
use gregor_protocol::Message;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::fault::{Accept, Rule, Rules};
pub use serve::MAX_REQUEST_SIZE;
pub use state::{Served, SERVED_LOG_CAPACITY};
use state::{Shared, State};

/// Builds a [`HostileBroker`].
#[derive(Debug, Clone)]
pub struct HostileBrokerBuilder {
    node_id: i32,
    topics: BTreeMap<String, i32>,
    logs: BTreeMap<(String, i32), Vec<Message>>,
    rules: Vec<Rule>,
    accept: Accept,
}

impl HostileBrokerBuilder {
    /// The broker id it gives itself in Metadata and ConsumerMetadata (and that
    /// [`Rule::on_broker`] matches). Default: 0.
    pub fn node_id(mut self, id: i32) -> Self {
        self.node_id = id;
        self
    }

    /// A topic of `partitions` partitions, each led by this broker (starting empty).
    pub fn topic(mut self, name: impl Into<String>, partitions: i32) -> Self {
        self.topics.insert(name.into(), partitions.max(0));
        self
    }

    /// Messages already in `topic/partition`, at offsets 0, 1, 2... (Fetch serves them,
    /// Produce appends after them). Adds the topic when it is unknown, with enough partitions.
    pub fn messages(mut self, topic: impl Into<String>, partition: i32, messages: Vec<Message>) -> Self {
        let topic = topic.into();
        let count = self.topics.entry(topic.clone()).or_insert(0);
        *count = (*count).max(partition + 1);
        self.logs.entry((topic, partition)).or_default().extend(messages);
        self
    }

    /// A fault rule, tried after those added before it (see [`crate::fault`]).
    pub fn intercept(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// How new connections are greeted. Default: [`Accept::Serve`].
    pub fn accept(mut self, accept: Accept) -> Self {
        self.accept = accept;
        self
    }

    /// Listens on a free 127.0.0.1 port and serves until dropped. Spawns its tasks on the
    /// current tokio runtime.
    ///
    /// # Errors
    ///
    /// When the port cannot be bound.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub async fn start(self) -> io::Result<HostileBroker> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let mut logs: HashMap<(String, i32), Vec<Message>> = HashMap::new();
        for (topic, partitions) in &self.topics {
            for p in 0..*partitions {
                logs.insert((topic.clone(), p), Vec::new());
            }
        }
        for (key, messages) in self.logs {
            logs.entry(key).or_default().extend(messages);
        }
        let state = State {
            topics: self.topics,
            logs,
            rules: Rules::new(self.rules),
            accept: self.accept,
            served: VecDeque::new(),
            counts: HashMap::new(),
        };
        let shared = Arc::new(Shared::new(self.node_id, addr, state));
        let accept_task = tokio::spawn(serve::accept_loop(listener, shared.clone()));
        Ok(HostileBroker { shared, accept_task })
    }
}

/// A broker that misbehaves on purpose; see the [module docs](self).
///
/// Dropping it closes the listener and every connection.
pub struct HostileBroker {
    shared: Arc<Shared>,
    accept_task: JoinHandle<()>,
}

impl fmt::Debug for HostileBroker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostileBroker")
            .field("addr", &self.shared.addr)
            .field("node_id", &self.shared.node_id)
            .field("accepted", &self.connections_accepted())
            .finish()
    }
}

impl Drop for HostileBroker {
    fn drop(&mut self) {
        self.accept_task.abort();
        for (_, task) in self.shared.connections().drain() {
            task.abort();
        }
    }
}

impl HostileBroker {
    /// A builder: broker id 0, no topics, no rules (every request answered correctly).
    pub fn builder() -> HostileBrokerBuilder {
        HostileBrokerBuilder {
            node_id: 0,
            topics: BTreeMap::new(),
            logs: BTreeMap::new(),
            rules: Vec::new(),
            accept: Accept::Serve,
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// `metadata.broker.list` for a client: `127.0.0.1:<port>`.
    pub fn bootstrap(&self) -> String {
        self.shared.addr.to_string()
    }

    /// Its broker id.
    pub fn node_id(&self) -> i32 {
        self.shared.node_id
    }

    /// Adds a fault rule, tried after the existing ones (see [`crate::fault`]).
    pub fn intercept(&self, rule: Rule) {
        self.shared.state().rules.push(rule);
    }

    /// Removes every fault rule: requests are answered correctly from now on (connections a
    /// fault already silenced stay silent).
    pub fn clear_intercepts(&self) {
        self.shared.state().rules.clear();
    }

    /// How connections accepted from now on are greeted.
    pub fn set_accept(&self, accept: Accept) {
        self.shared.state().accept = accept;
    }

    /// The requests received so far, in order (the last [`SERVED_LOG_CAPACITY`]), each with the
    /// [`Fault`](crate::fault::Fault) it met.
    pub fn served(&self) -> Vec<Served> {
        self.shared.state().served.iter().cloned().collect()
    }

    /// How many requests with `api_key` were received so far.
    pub fn count(&self, api_key: ApiKey) -> usize {
        self.shared.state().counts.get(&api_key).copied().unwrap_or(0)
    }

    /// Connections accepted so far.
    pub fn connections_accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Connections still open on the broker's side.
    pub fn open_connections(&self) -> usize {
        self.shared.connections().len()
    }

    /// The messages of `topic/partition` (what the builder put there and what was produced).
    pub fn log(&self, topic: &str, partition: i32) -> Vec<Message> {
        self.shared.state().logs.get(&(topic.to_owned(), partition)).cloned().unwrap_or_default()
    }

    /// Closes every open connection (the listener stays).
    pub fn close_connections(&self) {
        for (_, task) in self.shared.connections().drain() {
            task.abort();
        }
    }
}

/// What the unit tests of the HostileBroker's modules share.
#[cfg(test)]
pub(crate) mod tests {
    use super::HostileBroker;
    use crate::wire;
    use gregor_protocol::messages::FetchRequest;

    /// A Fetch of `topic/partition` from `offset` that the broker answers at once.
    pub(crate) fn fetch_of(topic: &str, partition: i32, offset: i64) -> FetchRequest {
        wire::fetch(topic, partition, offset, 0)
    }

    /// A broker with topic `t` of 2 partitions; `t/0` holds a keyed message `a` and `b`.
    pub(crate) async fn broker() -> HostileBroker {
        HostileBroker::builder()
            .topic("t", 2)
            .messages("t", 0, vec![wire::msg(Some("k"), "a"), wire::msg(None, "b")])
            .start()
            .await
            .unwrap()
    }
}

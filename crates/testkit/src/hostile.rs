//! A hostile broker: a Kafka 0.8.2 broker on 127.0.0.1 that answers each request the way a
//! script says — correctly, or with a wrong correlation id, a truncated frame, a huge or
//! negative size prefix, a corrupt body (a bad CRC, a message set that overruns its frame, an
//! array count of 2^31-1, bytes after the body), garbage after a valid response, silence, a
//! closed connection, or one byte at a time.
//!
//! It exists to prove that a client turns each of these into a typed error within its
//! timeouts, without a panic, a hang or an allocation the bytes received do not justify.
//! Unlike the [`FakeCluster`](crate::FakeCluster) it needs no ZooKeeper and keeps no replicas:
//! it is one broker (id 0 unless [`HostileBrokerBuilder::node_id`] says otherwise) that names
//! itself in Metadata as the only broker and the leader of every partition of the topics it
//! was given, so a producer or consumer bootstrapped from [`HostileBroker::bootstrap`] sends it
//! everything.
//!
//! What gets which [`Behaviour`] is decided per request by [`Rule`]s, tried in the order they
//! were added (the first that matches and has uses left wins); a request no rule matches is
//! answered correctly. Rules can be added and cleared while clients run. How connections are
//! greeted is set with [`Accept`]. As a broker does, a Fetch that finds fewer than its
//! `min_bytes` is parked for its `max_wait_time` before it is handled.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use gregor_protocol::frame::ApiKey;
//! use gregor_testkit::hostile::{Behaviour, HostileBroker, Rule};
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
//! broker.add_rule(Rule::on(ApiKey::Fetch, Behaviour::BadCrc).once());
//! broker.add_rule(Rule::on(ApiKey::Fetch, Behaviour::Silent));
//! // point the client under test at broker.bootstrap() and check what it reports
//! assert_eq!(broker.bootstrap(), broker.addr().to_string());
//! # }
//! ```
//!
//! The broker's tasks run on the tokio runtime that called [`HostileBrokerBuilder::start`];
//! dropping the [`HostileBroker`] closes its listener and every connection.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use gregor_protocol::frame::{encode_response, split_frame, ApiKey, RequestHeader};
use gregor_protocol::messages::{
    AnyRequest, BrokerMetadata, ConsumerMetadataRequest, ConsumerMetadataResponse, FetchRequest, FetchResponse,
    FetchResponsePartition, MetadataRequest, MetadataResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetCommitResponsePartition, OffsetFetchRequest, OffsetFetchResponse, OffsetFetchResponsePartition,
    OffsetsRequest, OffsetsResponse, OffsetsResponsePartition, PartitionMetadata, ProduceRequest, ProduceResponse,
    ProduceResponsePartition, TopicMetadata, TopicPartitions, EARLIEST_TIME, LATEST_TIME,
};
use gregor_protocol::{Encode, ErrorCode, Message, MessageAndOffset, MessageSet, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};

/// What [`Behaviour::WrongCorrelationId`] adds to the request's correlation id.
pub const WRONG_CORRELATION_OFFSET: i32 = 1_000_000;
/// The bytes [`Behaviour::GarbageAfter`] writes after a valid response: read as a size
/// prefix they are negative (`0xdeadbeef`), so no honest reader can take them for a frame.
pub const GARBAGE: &[u8] = b"\xde\xad\xbe\xefgarbage after the response";
/// By how many bytes the message-set size of [`Behaviour::MessageSetOverrun`] exceeds the
/// bytes that follow it in the frame.
pub const MESSAGE_SET_OVERRUN: i32 = 1_000_000;
/// The bytes [`Behaviour::TrailingBytes`] appends inside the frame, after the body.
pub const TRAILING: &[u8] = b"junk";
/// The value of the message a [`Behaviour::BadCrc`] Fetch of an empty partition serves (with
/// its CRC broken) at the offset asked for.
pub const BAD_CRC_VALUE: &[u8] = b"hostile";
/// How many requests [`HostileBroker::served`] keeps (the oldest are dropped first;
/// [`HostileBroker::count`] counts them all).
pub const SERVED_LOG_CAPACITY: usize = 10_000;
/// The largest request frame the broker reads; a larger one closes the connection, as a
/// 0.8.2 broker does past `socket.request.max.bytes`.
pub const MAX_REQUEST_SIZE: usize = 100 * 1024 * 1024;

/// How the broker answers one request (see the [module docs](self) for how one is chosen).
///
/// "The correct response" is what a healthy 0.8.2 broker holding the builder's topics would
/// answer (see [`HostileBrokerBuilder::topic`]). A request takes effect whatever its behaviour:
/// a Produce is appended to the log even when its response is then mangled or never sent, as
/// when a broker stores records and the response is lost. A Produce with `acks=0` gets no
/// response from [`Behaviour::Answer`], [`Behaviour::Delay`] and [`Behaviour::Slowloris`], as
/// from a real broker; every other behaviour writes what it says regardless.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Behaviour {
    /// The correct response.
    Answer,
    /// The correct response, after this delay (requests behind it on the connection wait, as
    /// a 0.8 broker answers in order).
    Delay(Duration),
    /// The correct response carrying the request's correlation id plus
    /// [`WRONG_CORRELATION_OFFSET`].
    WrongCorrelationId,
    /// The first half of the correct response frame (its size prefix included), then the
    /// connection is closed.
    TruncateThenClose,
    /// The first half of the correct response frame (its size prefix included), then nothing
    /// more on this connection: later requests are read and never answered.
    TruncateThenSilence,
    /// Only this 4-byte size prefix (e.g. `i32::MAX`, or a negative size), then nothing more on
    /// this connection.
    SizePrefix(i32),
    /// Fetch: the partition's messages (or, for an empty partition, one message of value
    /// [`BAD_CRC_VALUE`] at the offset asked for) with the first message's CRC flipped; the
    /// frame and everything else are correct. Other APIs: the correct response.
    BadCrc,
    /// Fetch: a response whose first partition's message-set size is
    /// [`MESSAGE_SET_OVERRUN`] bytes larger than what follows it in the frame. Other APIs: as
    /// [`Behaviour::HugeArrayCount`].
    MessageSetOverrun,
    /// A whole frame with the correct correlation id whose body starts with an array count of
    /// `i32::MAX` (2^31-1) followed by 8 zero bytes (the first array of the response: brokers
    /// for Metadata, topics for the others; ConsumerMetadata has no array and just fails to
    /// decode).
    HugeArrayCount,
    /// The correct response with [`TRAILING`] appended inside the frame (its size counts them).
    TrailingBytes,
    /// The correct response, then [`GARBAGE`] outside any frame.
    GarbageAfter,
    /// No response to this request or any later one on this connection ("accepts and never
    /// answers"); the connection stays open until the client or the broker closes it.
    Silent,
    /// Close the connection without a response.
    Close,
    /// The correct response, one byte at a time, this long apart.
    Slowloris(Duration),
    /// Exactly these bytes, whatever they are (frame them yourself).
    Raw(Bytes),
}

/// How the broker greets a new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Accept {
    /// Read requests and answer them by the rules (the default).
    #[default]
    Serve,
    /// Close the connection right after accepting it, before reading anything.
    Close,
    /// Keep the connection open, read requests, never answer any.
    Silent,
    /// Keep the connection open and never read from it: a client's writes stall once the
    /// socket buffers fill.
    Stall,
}

/// Which requests get a [`Behaviour`], and how many times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    api_key: Option<ApiKey>,
    remaining: Option<usize>,
    behaviour: Behaviour,
}

impl Rule {
    /// Every request with `api_key` gets `behaviour` (until [`Rule::times`] says otherwise).
    pub fn on(api_key: ApiKey, behaviour: Behaviour) -> Rule {
        Rule { api_key: Some(api_key), remaining: None, behaviour }
    }

    /// Every request, whatever its API, gets `behaviour`.
    pub fn any(behaviour: Behaviour) -> Rule {
        Rule { api_key: None, remaining: None, behaviour }
    }

    /// Only the next matching request.
    pub fn once(self) -> Rule {
        self.times(1)
    }

    /// Only the next `n` matching requests.
    pub fn times(mut self, n: usize) -> Rule {
        self.remaining = Some(n);
        self
    }

    fn matches(&self, api_key: ApiKey) -> bool {
        self.remaining != Some(0) && self.api_key.is_none_or(|k| k == api_key)
    }
}

/// A request the broker received, and what it did with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    /// Which connection it came on (numbered from 0 in accept order).
    pub connection: u64,
    /// Its header.
    pub header: RequestHeader,
    /// Its body.
    pub request: AnyRequest,
    /// What the broker did (a request on a connection already silenced is logged as
    /// [`Behaviour::Silent`]).
    pub behaviour: Behaviour,
}

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
    /// The broker id it gives itself in Metadata and ConsumerMetadata. Default: 0.
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

    /// A rule, tried after those added before it.
    pub fn rule(mut self, rule: Rule) -> Self {
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
        let shared = Arc::new(Shared {
            node_id: self.node_id,
            addr,
            state: Mutex::new(State {
                topics: self.topics,
                logs,
                rules: self.rules,
                accept: self.accept,
                served: VecDeque::new(),
                counts: HashMap::new(),
            }),
            connections: Mutex::new(HashMap::new()),
            accepted: AtomicU64::new(0),
        });
        let accept_task = tokio::spawn(accept_loop(listener, shared.clone()));
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

    /// Adds a rule, tried after the existing ones.
    pub fn add_rule(&self, rule: Rule) {
        self.shared.state().rules.push(rule);
    }

    /// Removes every rule: requests are answered correctly from now on (connections already
    /// silenced stay silent).
    pub fn clear_rules(&self) {
        self.shared.state().rules.clear();
    }

    /// How connections accepted from now on are greeted.
    pub fn set_accept(&self, accept: Accept) {
        self.shared.state().accept = accept;
    }

    /// The requests received so far, in order (the last [`SERVED_LOG_CAPACITY`]).
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

struct Shared {
    node_id: i32,
    addr: SocketAddr,
    state: Mutex<State>,
    connections: Mutex<HashMap<u64, AbortHandle>>,
    accepted: AtomicU64,
}

struct State {
    topics: BTreeMap<String, i32>,
    logs: HashMap<(String, i32), Vec<Message>>,
    rules: Vec<Rule>,
    accept: Accept,
    served: VecDeque<Served>,
    counts: HashMap<ApiKey, usize>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        // a panic while holding the lock leaves the state consistent enough for a test tool
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn connections(&self) -> MutexGuard<'_, HashMap<u64, AbortHandle>> {
        self.connections.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Picks the behaviour for a request (using up a counted rule), logs the request, and
    /// computes the correct response while the state is locked.
    fn take(&self, connection: u64, header: &RequestHeader, request: &AnyRequest, muted: bool) -> (Behaviour, Answer) {
        let mut st = self.state();
        let behaviour = if muted {
            Behaviour::Silent
        } else {
            let picked = st.rules.iter_mut().find(|r| r.matches(header.api_key));
            match picked {
                Some(rule) => {
                    if let Some(n) = rule.remaining.as_mut() {
                        *n -= 1;
                    }
                    rule.behaviour.clone()
                }
                None => Behaviour::Answer,
            }
        };
        *st.counts.entry(header.api_key).or_default() += 1;
        if st.served.len() == SERVED_LOG_CAPACITY {
            st.served.pop_front();
        }
        st.served.push_back(Served {
            connection,
            header: header.clone(),
            request: request.clone(),
            behaviour: behaviour.clone(),
        });
        let answer = if muted { Answer::none() } else { self.answer(&mut st, header, request) };
        (behaviour, answer)
    }

    /// The correct response to `request` (and what the hostile variants need).
    fn answer(&self, st: &mut State, header: &RequestHeader, request: &AnyRequest) -> Answer {
        let v = header.api_version;
        let id = header.correlation_id;
        match request {
            AnyRequest::Metadata(r) => Answer::of(id, v, &self.metadata(st, r)),
            AnyRequest::Produce(r) => {
                let response = produce(st, r);
                if r.expects_response() {
                    Answer::of(id, v, &response)
                } else {
                    Answer::none()
                }
            }
            AnyRequest::Fetch(r) => {
                let mut answer = Answer::of(id, v, &fetch(st, r));
                answer.fetch = Some(FetchFacts::of(st, r));
                answer
            }
            AnyRequest::Offsets(r) => Answer::of(id, v, &offsets(st, r)),
            AnyRequest::OffsetCommit(r) => Answer::of(id, v, &offset_commit(r)),
            AnyRequest::OffsetFetch(r) => Answer::of(id, v, &offset_fetch(r)),
            AnyRequest::ConsumerMetadata(r) => Answer::of(id, v, &self.consumer_metadata(r)),
            _ => Answer::none(),
        }
    }

    /// The message bytes a Fetch would get now.
    fn fetchable_bytes(&self, request: &FetchRequest) -> i64 {
        let st = self.state();
        let mut total = 0;
        for t in &request.topics {
            for p in &t.partitions {
                if let Some(log) = st.logs.get(&(t.topic.clone(), p.partition)) {
                    let set = message_set(&entries_from(log, p.fetch_offset), p.max_bytes);
                    total += set.len() as i64;
                }
            }
        }
        total
    }

    fn metadata(&self, st: &State, request: &MetadataRequest) -> MetadataResponse {
        let names: Vec<String> =
            if request.topics.is_empty() { st.topics.keys().cloned().collect() } else { request.topics.clone() };
        let topics = names
            .into_iter()
            .map(|topic| match st.topics.get(&topic) {
                Some(&n) => TopicMetadata {
                    error_code: 0,
                    topic,
                    partitions: (0..n)
                        .map(|partition| PartitionMetadata {
                            error_code: 0,
                            partition,
                            leader: self.node_id,
                            replicas: vec![self.node_id],
                            isr: vec![self.node_id],
                        })
                        .collect(),
                },
                None => TopicMetadata {
                    error_code: ErrorCode::UnknownTopicOrPartition.code(),
                    topic,
                    partitions: Vec::new(),
                },
            })
            .collect();
        MetadataResponse {
            brokers: vec![BrokerMetadata {
                node_id: self.node_id,
                host: self.addr.ip().to_string(),
                port: i32::from(self.addr.port()),
            }],
            topics,
        }
    }

    fn consumer_metadata(&self, _request: &ConsumerMetadataRequest) -> ConsumerMetadataResponse {
        ConsumerMetadataResponse {
            error_code: 0,
            coordinator_id: self.node_id,
            coordinator_host: self.addr.ip().to_string(),
            coordinator_port: i32::from(self.addr.port()),
        }
    }
}

fn produce(st: &mut State, request: &ProduceRequest) -> ProduceResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| match st.logs.get_mut(&(t.topic.clone(), p.partition)) {
                    Some(log) => {
                        let base = log.len() as i64;
                        match p.message_set.entries().collect::<Result<Vec<_>, _>>() {
                            Ok(entries) => {
                                log.extend(entries.into_iter().map(|e| e.message));
                                ProduceResponsePartition { partition: p.partition, error_code: 0, offset: base }
                            }
                            Err(_) => ProduceResponsePartition {
                                partition: p.partition,
                                error_code: ErrorCode::InvalidMessage.code(),
                                offset: -1,
                            },
                        }
                    }
                    None => ProduceResponsePartition {
                        partition: p.partition,
                        error_code: ErrorCode::UnknownTopicOrPartition.code(),
                        offset: -1,
                    },
                })
                .collect();
            TopicPartitions::new(t.topic.clone(), partitions)
        })
        .collect();
    ProduceResponse { topics }
}

/// The entries of `log` from `offset`, at their offsets.
fn entries_from(log: &[Message], offset: i64) -> Vec<MessageAndOffset> {
    let start = usize::try_from(offset.max(0)).unwrap_or(usize::MAX).min(log.len());
    log[start..].iter().enumerate().map(|(i, m)| MessageAndOffset::new((start + i) as i64, m.clone())).collect()
}

/// A message set of `entries` cut at `max_bytes` (a partial trailing message, as Kafka sends).
fn message_set(entries: &[MessageAndOffset], max_bytes: i32) -> MessageSet {
    let set = MessageSet::encode(entries).unwrap_or_default();
    let max = usize::try_from(max_bytes.max(0)).unwrap_or(0);
    if set.len() <= max {
        set
    } else {
        MessageSet::from_bytes(set.as_bytes().slice(..max))
    }
}

fn fetch(st: &State, request: &FetchRequest) -> FetchResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| match st.logs.get(&(t.topic.clone(), p.partition)) {
                    Some(log) => FetchResponsePartition {
                        partition: p.partition,
                        error_code: 0,
                        high_watermark: log.len() as i64,
                        message_set: message_set(&entries_from(log, p.fetch_offset), p.max_bytes),
                    },
                    None => FetchResponsePartition {
                        partition: p.partition,
                        error_code: ErrorCode::UnknownTopicOrPartition.code(),
                        high_watermark: -1,
                        message_set: MessageSet::new(),
                    },
                })
                .collect();
            TopicPartitions::new(t.topic.clone(), partitions)
        })
        .collect();
    FetchResponse { topics }
}

fn offsets(st: &State, request: &OffsetsRequest) -> OffsetsResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| match st.logs.get(&(t.topic.clone(), p.partition)) {
                    Some(log) => {
                        let end = log.len() as i64;
                        // one segment starting at 0: latest gives [end, 0], anything else [0]
                        let mut offsets = match p.time {
                            LATEST_TIME if end > 0 => vec![end, 0],
                            LATEST_TIME => vec![0],
                            EARLIEST_TIME => vec![0],
                            _ => vec![0],
                        };
                        offsets.truncate(usize::try_from(p.max_number_of_offsets.max(0)).unwrap_or(0));
                        OffsetsResponsePartition { partition: p.partition, error_code: 0, offsets }
                    }
                    None => OffsetsResponsePartition {
                        partition: p.partition,
                        error_code: ErrorCode::UnknownTopicOrPartition.code(),
                        offsets: Vec::new(),
                    },
                })
                .collect();
            TopicPartitions::new(t.topic.clone(), partitions)
        })
        .collect();
    OffsetsResponse { topics }
}

fn offset_commit(request: &OffsetCommitRequest) -> OffsetCommitResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| OffsetCommitResponsePartition { partition: p.partition, error_code: 0 })
                .collect();
            TopicPartitions::new(t.topic.clone(), partitions)
        })
        .collect();
    OffsetCommitResponse { topics }
}

fn offset_fetch(request: &OffsetFetchRequest) -> OffsetFetchResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|&partition| OffsetFetchResponsePartition {
                    partition,
                    offset: -1,
                    metadata: String::new(),
                    error_code: 0,
                })
                .collect();
            TopicPartitions::new(t.topic.clone(), partitions)
        })
        .collect();
    OffsetFetchResponse { topics }
}

/// The first partition of a Fetch, for the corrupt Fetch behaviours.
#[derive(Debug, Clone)]
struct FetchFacts {
    topic: String,
    partition: i32,
    high_watermark: i64,
    /// The entries served from the fetch offset, or one made up at it for an empty partition.
    entries: Vec<MessageAndOffset>,
}

impl FetchFacts {
    fn of(st: &State, request: &FetchRequest) -> Option<FetchFacts> {
        let t = request.topics.first()?;
        let p = t.partitions.first()?;
        let log = st.logs.get(&(t.topic.clone(), p.partition));
        let mut entries = log.map(|l| entries_from(l, p.fetch_offset)).unwrap_or_default();
        if entries.is_empty() {
            entries.push(MessageAndOffset::new(
                p.fetch_offset.max(0),
                Message::new(None, Some(Bytes::from_static(BAD_CRC_VALUE))),
            ));
        }
        Some(FetchFacts {
            topic: t.topic.clone(),
            partition: p.partition,
            high_watermark: log.map_or(0, |l| l.len() as i64).max(entries.last().map_or(0, |e| e.offset + 1)),
            entries,
        })
    }
}

/// The correct response frame (if the request gets one) and what corrupt variants need.
struct Answer {
    correlation_id: i32,
    /// The whole frame, size prefix included; `None` when no response is due (acks=0).
    frame: Option<Bytes>,
    /// For a Fetch: its first partition.
    fetch: Option<Option<FetchFacts>>,
}

impl Answer {
    fn none() -> Answer {
        Answer { correlation_id: 0, frame: None, fetch: None }
    }

    fn of<B: Encode>(correlation_id: i32, version: i16, body: &B) -> Answer {
        let mut buf = BytesMut::new();
        let frame = encode_response(correlation_id, version, body, &mut buf).ok().map(|()| buf.freeze());
        Answer { correlation_id, frame, fetch: None }
    }

    /// The frame with a different correlation id.
    fn with_correlation_id(&self, correlation_id: i32) -> Option<Bytes> {
        let frame = self.frame.as_ref()?;
        let mut out = BytesMut::from(&frame[..]);
        out[4..8].copy_from_slice(&correlation_id.to_be_bytes());
        Some(out.freeze())
    }

    /// A frame of this correlation id around `body`.
    fn framed(&self, body: &[u8]) -> Bytes {
        let mut out = BytesMut::with_capacity(8 + body.len());
        out.put_i32((4 + body.len()) as i32);
        out.put_i32(self.correlation_id);
        out.put_slice(body);
        out.freeze()
    }

    fn huge_array_count(&self) -> Bytes {
        let mut body = BytesMut::new();
        body.put_i32(i32::MAX);
        body.put_slice(&[0; 8]);
        self.framed(&body)
    }

    fn trailing_bytes(&self) -> Option<Bytes> {
        let frame = self.frame.as_ref()?;
        let mut body = BytesMut::from(&frame[8..]);
        body.put_slice(TRAILING);
        Some(self.framed(&body))
    }

    /// A Fetch response of the first partition with the first message's CRC flipped.
    fn bad_crc(&self) -> Option<Bytes> {
        let Some(Some(f)) = &self.fetch else { return self.frame.clone() };
        let set = MessageSet::encode(&f.entries).ok()?;
        let mut bytes = BytesMut::from(&set.as_bytes()[..]);
        // offset (8) + size (4), then the CRC's first byte
        bytes[12] ^= 0xff;
        let response = FetchResponse {
            topics: vec![TopicPartitions::new(
                f.topic.clone(),
                vec![FetchResponsePartition {
                    partition: f.partition,
                    error_code: 0,
                    high_watermark: f.high_watermark,
                    message_set: MessageSet::from_bytes(bytes.freeze()),
                }],
            )],
        };
        Answer::of(self.correlation_id, 0, &response).frame
    }

    /// A Fetch response whose message-set size runs past the end of the frame.
    fn message_set_overrun(&self) -> Bytes {
        let Some(Some(f)) = &self.fetch else { return self.huge_array_count() };
        let set = MessageSet::encode(&f.entries).unwrap_or_default();
        let mut body = BytesMut::new();
        body.put_i32(1);
        put_string(&mut body, &f.topic);
        body.put_i32(1);
        body.put_i32(f.partition);
        body.put_i16(0);
        body.put_i64(f.high_watermark);
        body.put_i32((set.len() as i32).saturating_add(MESSAGE_SET_OVERRUN));
        body.put_slice(set.as_bytes());
        self.framed(&body)
    }
}

fn put_string(buf: &mut BytesMut, s: &str) {
    let bytes = &s.as_bytes()[..s.len().min(i16::MAX as usize)];
    buf.put_i16(bytes.len() as i16);
    buf.put_slice(bytes);
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((stream, _peer)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let id = shared.accepted.fetch_add(1, Ordering::SeqCst);
        let accept = shared.state().accept;
        if accept == Accept::Close {
            drop(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        let conn_shared = shared.clone();
        // hold the map's lock while spawning, so the task cannot remove itself before it is in
        let mut connections = shared.connections();
        let task = tokio::spawn(async move {
            if accept == Accept::Stall {
                // hold the socket, never read; the task ends when it is aborted
                let _held = stream;
                std::future::pending::<()>().await;
            } else {
                serve(stream, id, accept == Accept::Silent, &conn_shared).await;
            }
            conn_shared.connections().remove(&id);
        });
        connections.insert(id, task.abort_handle());
    }
}

/// Reads requests off one connection and answers each as its behaviour says, until the client
/// closes, a request is malformed, or a behaviour ends the connection.
async fn serve(stream: TcpStream, connection: u64, mut muted: bool, shared: &Shared) {
    let (mut read, mut write) = stream.into_split();
    let mut buf = BytesMut::with_capacity(16 * 1024);
    loop {
        let mut frame = loop {
            match split_frame(&mut buf, MAX_REQUEST_SIZE) {
                Ok(Some(frame)) => break frame,
                Ok(None) => match read.read_buf(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                },
                Err(_) => return,
            }
        };
        // like a 0.8 broker: a request it cannot parse closes the connection
        let Ok(header) = RequestHeader::decode(&mut frame) else { return };
        let Ok(request) = AnyRequest::decode(&header, frame) else { return };
        if let AnyRequest::Fetch(fetch) = &request {
            // as a broker parks a fetch until min_bytes are there or max_wait_time passes
            // (nothing is produced meanwhile unless a client produces to this broker)
            if !muted && shared.fetchable_bytes(fetch) < i64::from(fetch.min_bytes) {
                let wait = u64::try_from(fetch.max_wait_time).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
        }
        let (behaviour, answer) = shared.take(connection, &header, &request, muted);
        match act(&behaviour, &answer, &mut write).await {
            Ok(Next::Serve) => {}
            Ok(Next::Mute) => muted = true,
            Ok(Next::Close) | Err(_) => return,
        }
    }
}

enum Next {
    Serve,
    Mute,
    Close,
}

async fn act(behaviour: &Behaviour, answer: &Answer, write: &mut OwnedWriteHalf) -> io::Result<Next> {
    let frame = answer.frame.as_ref();
    match behaviour {
        Behaviour::Answer => {
            if let Some(frame) = frame {
                write.write_all(frame).await?;
            }
        }
        Behaviour::Delay(delay) => {
            tokio::time::sleep(*delay).await;
            if let Some(frame) = frame {
                write.write_all(frame).await?;
            }
        }
        Behaviour::WrongCorrelationId => {
            let wrong = answer.correlation_id.wrapping_add(WRONG_CORRELATION_OFFSET);
            if let Some(frame) = answer.with_correlation_id(wrong) {
                write.write_all(&frame).await?;
            }
        }
        Behaviour::TruncateThenClose | Behaviour::TruncateThenSilence => {
            if let Some(frame) = frame {
                // the size prefix and at least one byte of the body, never the whole frame
                let cut = (frame.len() / 2).max(5).min(frame.len().saturating_sub(1));
                write.write_all(&frame[..cut]).await?;
            }
            write.flush().await?;
            return Ok(if *behaviour == Behaviour::TruncateThenClose { Next::Close } else { Next::Mute });
        }
        Behaviour::SizePrefix(size) => {
            write.write_all(&size.to_be_bytes()).await?;
            return Ok(Next::Mute);
        }
        Behaviour::BadCrc => {
            if let Some(frame) = answer.bad_crc() {
                write.write_all(&frame).await?;
            }
        }
        Behaviour::MessageSetOverrun => write.write_all(&answer.message_set_overrun()).await?,
        Behaviour::HugeArrayCount => write.write_all(&answer.huge_array_count()).await?,
        Behaviour::TrailingBytes => {
            if let Some(frame) = answer.trailing_bytes() {
                write.write_all(&frame).await?;
            }
        }
        Behaviour::GarbageAfter => {
            let mut out = BytesMut::new();
            if let Some(frame) = frame {
                out.put_slice(frame);
            }
            out.put_slice(GARBAGE);
            write.write_all(&out).await?;
        }
        Behaviour::Silent => return Ok(Next::Mute),
        Behaviour::Close => return Ok(Next::Close),
        Behaviour::Slowloris(interval) => {
            if let Some(frame) = frame {
                for byte in frame.iter() {
                    write.write_all(&[*byte]).await?;
                    write.flush().await?;
                    tokio::time::sleep(*interval).await;
                }
            }
        }
        Behaviour::Raw(bytes) => write.write_all(bytes).await?,
    }
    write.flush().await?;
    Ok(Next::Serve)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{self, Conn};
    use gregor_protocol::frame::decode_response;
    use gregor_protocol::messages::{FetchPartition, OffsetsPartition};
    use gregor_protocol::Compression;

    const WITHIN: Duration = Duration::from_secs(5);

    fn fetch_of(topic: &str, partition: i32, offset: i64) -> FetchRequest {
        FetchRequest {
            replica_id: -1,
            max_wait_time: 0,
            min_bytes: 0,
            topics: vec![TopicPartitions::new(
                topic,
                vec![FetchPartition { partition, fetch_offset: offset, max_bytes: 1 << 20 }],
            )],
        }
    }

    async fn broker() -> HostileBroker {
        HostileBroker::builder()
            .topic("t", 2)
            .messages("t", 0, vec![wire::msg(Some("k"), "a"), wire::msg(None, "b")])
            .start()
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn answers_correctly_by_default() {
        let b = broker().await;
        let mut c = Conn::open(b.addr()).await;
        let md = c.call(0, &wire::metadata(&[])).await;
        assert_eq!(md.brokers, [BrokerMetadata { node_id: 0, host: "127.0.0.1".into(), port: b.addr().port().into() }]);
        assert_eq!(md.topics.len(), 1);
        assert!(md.topics[0].partitions.iter().all(|p| p.leader == 0));
        let md = c.call(0, &wire::metadata(&["nope"])).await;
        assert_eq!(md.topics[0].error(), Some(ErrorCode::UnknownTopicOrPartition));

        let f = c.call(0, &fetch_of("t", 0, 1)).await;
        let p = &f.topics[0].partitions[0];
        assert_eq!(p.high_watermark, 2);
        let got = p.messages("t", 1).unwrap().messages;
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].offset, got[0].message.value.as_deref()), (1, Some(&b"b"[..])));

        let r = c.call(0, &wire::produce("t", 1, 1, vec![wire::msg(None, "x")], Compression::None)).await;
        assert_eq!((r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].offset), (0, 0));
        assert_eq!(b.log("t", 1).len(), 1);

        let o = c
            .call(
                0,
                &OffsetsRequest {
                    replica_id: -1,
                    topics: vec![TopicPartitions::new(
                        "t",
                        vec![OffsetsPartition { partition: 0, time: LATEST_TIME, max_number_of_offsets: 1 }],
                    )],
                },
            )
            .await;
        assert_eq!(o.topics[0].partitions[0].offsets, [2]);
        assert_eq!(b.count(ApiKey::Metadata), 2);
        assert_eq!(b.served().len(), 5);
    }

    #[tokio::test]
    async fn a_fetch_with_nothing_new_is_parked_for_its_max_wait() {
        let b = broker().await;
        let mut c = Conn::open(b.addr()).await;
        let mut request = fetch_of("t", 0, 2);
        request.min_bytes = 1;
        request.max_wait_time = 150;
        let started = tokio::time::Instant::now();
        let f = c.call(0, &request).await;
        assert!(started.elapsed() >= Duration::from_millis(150));
        assert!(f.topics[0].partitions[0].message_set.is_empty());
        // with data there, at once
        request.topics[0].partitions[0].fetch_offset = 1;
        request.max_wait_time = 10_000;
        let started = tokio::time::Instant::now();
        c.call(0, &request).await;
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn a_once_rule_is_used_up_and_rules_go_in_order() {
        let b = broker().await;
        b.add_rule(Rule::on(ApiKey::Metadata, Behaviour::WrongCorrelationId).once());
        b.add_rule(Rule::any(Behaviour::TrailingBytes));
        let mut c = Conn::open(b.addr()).await;
        let id = c.send(0, &wire::metadata(&[])).await;
        let frame = c.recv_frame(WITHIN).await.unwrap();
        assert_eq!(i32::from_be_bytes(frame[..4].try_into().unwrap()), id + WRONG_CORRELATION_OFFSET);
        c.send(0, &wire::metadata(&[])).await;
        let frame = c.recv_frame(WITHIN).await.unwrap();
        assert!(frame.ends_with(TRAILING));
        assert!(decode_response::<MetadataRequest>(0, frame).is_err());
        b.clear_rules();
        c.call(0, &wire::metadata(&[])).await;
        let behaviours: Vec<_> = b.served().into_iter().map(|s| s.behaviour).collect();
        assert_eq!(behaviours, [Behaviour::WrongCorrelationId, Behaviour::TrailingBytes, Behaviour::Answer]);
    }

    #[tokio::test]
    async fn corrupt_fetches_are_what_they_say() {
        let b = broker().await;
        let mut c = Conn::open(b.addr()).await;

        b.add_rule(Rule::on(ApiKey::Fetch, Behaviour::BadCrc).once());
        let f = c.call(0, &fetch_of("t", 1, 7)).await;
        let err = f.topics[0].partitions[0].messages("t", 7).unwrap_err();
        assert!(
            matches!(&err, gregor_protocol::Error::Crc { location, .. }
                if location.offset == 7 && location.partition == Some(1) && location.topic.as_deref() == Some("t")),
            "{err:?}"
        );

        b.add_rule(Rule::on(ApiKey::Fetch, Behaviour::MessageSetOverrun).once());
        c.send(0, &fetch_of("t", 0, 0)).await;
        let frame = c.recv_frame(WITHIN).await.unwrap();
        let err = decode_response::<FetchRequest>(0, frame).unwrap_err();
        assert!(matches!(err, gregor_protocol::Error::InvalidLength { .. }), "{err:?}");

        b.add_rule(Rule::on(ApiKey::Metadata, Behaviour::HugeArrayCount).once());
        c.send(0, &wire::metadata(&[])).await;
        let frame = c.recv_frame(WITHIN).await.unwrap();
        let err = decode_response::<MetadataRequest>(0, frame).unwrap_err();
        assert!(matches!(err, gregor_protocol::Error::InvalidLength { length: 2147483647, .. }), "{err:?}");
    }

    /// A raw client socket: requests encoded by the codec, responses read as bytes.
    async fn raw(b: &HostileBroker) -> TcpStream {
        TcpStream::connect(b.addr()).await.unwrap()
    }

    async fn send_metadata(s: &mut TcpStream, correlation_id: i32) {
        let header =
            RequestHeader { api_key: ApiKey::Metadata, api_version: 0, correlation_id, client_id: Some("raw".into()) };
        let mut out = BytesMut::new();
        gregor_protocol::frame::encode_request(&header, &wire::metadata(&[]), &mut out).unwrap();
        s.write_all(&out).await.unwrap();
    }

    async fn read_to_end(s: &mut TcpStream) -> Vec<u8> {
        let mut all = Vec::new();
        tokio::time::timeout(WITHIN, s.read_to_end(&mut all)).await.unwrap().unwrap();
        all
    }

    #[tokio::test]
    async fn framing_behaviours_write_what_they_say() {
        let b = broker().await;
        let mut s = raw(&b).await;
        send_metadata(&mut s, 9).await;
        let mut good = vec![0; 4];
        tokio::time::timeout(WITHIN, s.read_exact(&mut good)).await.unwrap().unwrap();
        let size = i32::from_be_bytes(good[..4].try_into().unwrap()) as usize;
        let frame_len = 4 + size;

        b.add_rule(Rule::on(ApiKey::Metadata, Behaviour::GarbageAfter).once());
        let mut s = raw(&b).await;
        send_metadata(&mut s, 1).await;
        let mut got = vec![0; frame_len + GARBAGE.len()];
        tokio::time::timeout(WITHIN, s.read_exact(&mut got)).await.unwrap().unwrap();
        assert_eq!(&got[4..8], &1i32.to_be_bytes());
        assert_eq!(&got[frame_len..], GARBAGE);
        assert!(i32::from_be_bytes(GARBAGE[..4].try_into().unwrap()) < 0);

        b.add_rule(Rule::on(ApiKey::Metadata, Behaviour::SizePrefix(i32::MAX)).once());
        let mut s = raw(&b).await;
        send_metadata(&mut s, 1).await;
        let mut size = [0; 4];
        tokio::time::timeout(WITHIN, s.read_exact(&mut size)).await.unwrap().unwrap();
        assert_eq!(i32::from_be_bytes(size), i32::MAX);
        // silent from then on, the connection open
        send_metadata(&mut s, 2).await;
        let mut more = [0; 1];
        assert!(tokio::time::timeout(Duration::from_millis(100), s.read(&mut more)).await.is_err());
        assert_eq!(b.served().last().unwrap().behaviour, Behaviour::Silent);

        b.add_rule(Rule::on(ApiKey::Metadata, Behaviour::TruncateThenClose).once());
        let mut s = raw(&b).await;
        send_metadata(&mut s, 1).await;
        let all = read_to_end(&mut s).await;
        assert!(all.len() > 4 && all.len() < frame_len, "{} of {frame_len}", all.len());
        assert_eq!(&all[..4], &good[..4]);

        b.add_rule(Rule::on(ApiKey::Metadata, Behaviour::Close).once());
        let mut s = raw(&b).await;
        send_metadata(&mut s, 1).await;
        assert!(read_to_end(&mut s).await.is_empty());
    }

    #[tokio::test]
    async fn accept_close_closes_at_once() {
        let b = HostileBroker::builder().accept(Accept::Close).start().await.unwrap();
        let mut s = raw(&b).await;
        let mut buf = [0; 1];
        let n = tokio::time::timeout(WITHIN, s.read(&mut buf)).await.unwrap().unwrap_or(0);
        assert_eq!(n, 0);
        assert_eq!(b.connections_accepted(), 1);
        assert_eq!(b.open_connections(), 0);
    }
}

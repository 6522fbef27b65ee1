//! The Rust front door: [`ConsumerConnector::subscribe`] and
//! [`ConsumerConnector::subscribe_filter`] return a [`Subscribe`] builder; `start()` joins the
//! group and hands out the [`KafkaStream`]s.
//!
//! ```text
//!  connector.subscribe(["t1", "t2"])      connector.subscribe_filter(TopicFilter::Whitelist(..))
//!           └──────────────┬──────────────────────────┘
//!          .streams(n) .decoder(d) .key_decoder(k)      (defaults: 1 stream, raw Bytes)
//!                          │
//!                   .start().await? ──► Vec<KafkaStream<T, K>>  (each a futures Stream)
//! ```
//!
//! It does what Java's `createMessageStreams` and `createMessageStreamsByFilter` do (and what
//! [`ConsumerConnector::create_message_streams`] still does for code ported from 0.8): the
//! decoders are plain values rather than `Arc<dyn Decoder<T>>`, the defaults need not be
//! spelled out, and the result is a list rather than a map of topics (each stream knows its
//! [`KafkaStream::topic`]). A list because the usual next step is to hand each stream to a
//! task, or to merge them all (`futures::stream::select_all`).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use gregor_serde::{BytesDecoder, Decoder};

use crate::connector::ConsumerConnector;
use crate::error::Result;
use crate::filter::TopicFilter;
use crate::rebalance::Subscription;
use crate::stream::KafkaStream;

/// What to subscribe to.
#[derive(Debug, Clone)]
enum Topics {
    List(Vec<String>),
    Filter(TopicFilter),
}

/// A subscription being set up: see [`ConsumerConnector::subscribe`].
///
/// `T` is the type of the message values (the [`Subscribe::decoder`]'s), `K` of the keys (the
/// [`Subscribe::key_decoder`]'s); both are the raw [`Bytes`] until set.
#[must_use = "a subscription does nothing until start() is awaited"]
pub struct Subscribe<'c, T = Bytes, K = Bytes> {
    connector: &'c ConsumerConnector,
    topics: Topics,
    streams: usize,
    decoder: Arc<dyn Decoder<T>>,
    key_decoder: Arc<dyn Decoder<K>>,
}

impl<T, K> std::fmt::Debug for Subscribe<'_, T, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscribe")
            .field("topics", &self.topics)
            .field("streams", &self.streams)
            .finish_non_exhaustive()
    }
}

impl ConsumerConnector {
    /// Subscribes to `topics` (one stream per topic unless [`Subscribe::streams`] says more).
    /// Nothing happens until [`Subscribe::start`].
    ///
    /// ```no_run
    /// # async fn demo(connector: gregor_consumer::ConsumerConnector) -> gregor_consumer::Result<()> {
    /// use futures::StreamExt;
    /// use gregor_serde::StringDecoder;
    ///
    /// let streams = connector.subscribe(["clicks", "views"]).streams(2).decoder(StringDecoder::new()).start().await?;
    /// let mut all = futures::stream::select_all(streams);
    /// while let Some(message) = all.next().await {
    ///     let message = message?;
    ///     println!("{}/{}@{}: {:?}", message.topic, message.partition, message.offset, message.value);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn subscribe<I>(&self, topics: I) -> Subscribe<'_>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.subscribe_to(Topics::List(topics.into_iter().map(Into::into).collect()))
    }

    /// Subscribes to every topic `filter` allows, now and later (Java's
    /// `createMessageStreamsByFilter`): one stream unless [`Subscribe::streams`] says more, all
    /// streams sharing all the topics. See [`TopicFilter`] for the syntax.
    ///
    /// ```no_run
    /// # async fn demo(connector: gregor_consumer::ConsumerConnector) -> gregor_consumer::Result<()> {
    /// use gregor_consumer::TopicFilter;
    ///
    /// let mut streams = connector.subscribe_filter(TopicFilter::Whitelist("logs-.*".into())).start().await?;
    /// let mut logs = streams.remove(0);
    /// while let Some(message) = logs.next().await {
    ///     let message = message?; // raw Bytes: no decoder was set
    ///     println!("{}: {} bytes", message.topic, message.value.map_or(0, |v| v.len()));
    /// }
    /// # Ok(()) }
    /// ```
    pub fn subscribe_filter(&self, filter: TopicFilter) -> Subscribe<'_> {
        self.subscribe_to(Topics::Filter(filter))
    }

    fn subscribe_to(&self, topics: Topics) -> Subscribe<'_> {
        Subscribe {
            connector: self,
            topics,
            streams: 1,
            decoder: Arc::new(BytesDecoder),
            key_decoder: Arc::new(BytesDecoder),
        }
    }
}

impl<'c, T: Send + 'static, K: Send + 'static> Subscribe<'c, T, K> {
    /// How many streams: per topic for a topic list, in all for a filter. Each stream is one
    /// thread id of the group (`<consumer id>-<n>`) and gets its own partitions. Default 1.
    pub fn streams(mut self, n: usize) -> Self {
        self.streams = n;
        self
    }

    /// Decodes the message values with `decoder` (any `Fn(&[u8]) -> gregor_serde::Result<V>`
    /// will do). Default: the raw [`Bytes`].
    pub fn decoder<V: Send + 'static>(self, decoder: impl Decoder<V> + 'static) -> Subscribe<'c, V, K> {
        Subscribe {
            connector: self.connector,
            topics: self.topics,
            streams: self.streams,
            decoder: Arc::new(decoder),
            key_decoder: self.key_decoder,
        }
    }

    /// Decodes the message keys with `key_decoder`. Default: the raw [`Bytes`].
    pub fn key_decoder<J: Send + 'static>(self, key_decoder: impl Decoder<J> + 'static) -> Subscribe<'c, T, J> {
        Subscribe {
            connector: self.connector,
            topics: self.topics,
            streams: self.streams,
            decoder: self.decoder,
            key_decoder: Arc::new(key_decoder),
        }
    }

    /// Joins the group: registers in `/consumers/G/ids`, waits for the first rebalance and
    /// returns the streams (a topic list's by topic name, then stream number). The connector
    /// follows the group from then on.
    ///
    /// Cancel safety: not cancel safe; once registered, the connector stays subscribed (its
    /// streams are lost with the future).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSubscription`](crate::Error::InvalidSubscription) for no topic, zero
    /// streams or a filter that is not a valid regex;
    /// [`Error::StreamsAlreadyCreated`](crate::Error::StreamsAlreadyCreated) when the connector
    /// already has streams (one subscription per connector, as in Kafka);
    /// [`Error::Zk`](crate::Error::Zk) when registering fails.
    pub async fn start(self) -> Result<Vec<KafkaStream<T, K>>> {
        let sub = match self.topics {
            Topics::List(topics) => {
                Subscription::Static(topics.into_iter().map(|t| (t, self.streams)).collect::<BTreeMap<_, _>>())
            }
            Topics::Filter(filter) => Subscription::Filter(filter, self.streams),
        };
        self.connector.open_streams(sub, self.key_decoder, self.decoder).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send<T: Send>(_: &T) {}

    /// Compiled, not run: the front door's future and streams can go to another task, and the
    /// streams are `Unpin` (what `StreamExt::next` and `select_all` need).
    #[allow(dead_code)]
    fn the_front_door_is_send(connector: &ConsumerConnector) {
        let start = connector.subscribe(["t"]).decoder(gregor_serde::StringDecoder::new()).start();
        send(&start);
        let filtered = connector.subscribe_filter(TopicFilter::Whitelist("t.*".into())).streams(2).start();
        send(&filtered);
    }

    #[test]
    fn streams_are_send_sync_and_unpin() {
        fn check<T: Send + Sync + Unpin + 'static>() {}
        check::<KafkaStream<String, Bytes>>();
        check::<KafkaStream<Bytes>>();
    }
}

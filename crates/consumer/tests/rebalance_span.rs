//! The rebalance's tracing span covers the rebalance: the events logged while it runs (here
//! its closing "rebalance done") carry `rebalance{group, consumer_id, attempt}` in their scope.
//! A binary of its own, because it installs the global subscriber (the connector logs from its
//! own tasks, on any worker thread).

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use gregor_consumer::{ConsumerConfig, ConsumerConnector};
use gregor_serde::StringDecoder;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// The fields of a span or event, as `name=value`.
#[derive(Default)]
struct Fields(Vec<String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push(format!("{}={value:?}", field.name()));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push(format!("{}={value}", field.name()));
    }
}

/// One event: its fields, and each span of its scope (innermost first) with its fields.
#[derive(Clone, Debug)]
struct Seen {
    fields: Vec<String>,
    scope: Vec<(String, Vec<String>)>,
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Seen>>>);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let scope = ctx
            .event_scope(event)
            .map(|scope| {
                scope
                    .map(|span| {
                        let f = span.extensions().get::<Fields>().map(|f| f.0.clone()).unwrap_or_default();
                        (span.name().to_owned(), f)
                    })
                    .collect()
            })
            .unwrap_or_default();
        self.0.lock().unwrap().push(Seen { fields: fields.0, scope });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rebalance_span_covers_the_rebalance() {
    let capture = Capture::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(capture.clone()))
        .expect("the only subscriber of this test binary");
    let Some(cluster) = cluster("consumer_rebalance_span", 1).await else { return };
    cluster.create_topic("spanned", 2, 1).await.unwrap();
    cluster.wait_for_leaders("spanned", Duration::from_secs(10)).await.unwrap();

    let config = ConsumerConfig::builder()
        .group_id("gs")
        .consumer_id("a")
        .zookeeper_connect(cluster.zookeeper())
        .auto_commit_enable(false)
        .build()
        .unwrap();
    let c = ConsumerConnector::new(config).await.unwrap();
    let _streams = c
        .create_message_streams(HashMap::from([("spanned".to_string(), 1)]), Arc::new(StringDecoder::new()))
        .await
        .unwrap();

    let seen = capture.0.lock().unwrap().clone();
    let done: Vec<&Seen> = seen.iter().filter(|s| s.fields.iter().any(|f| f == "message=rebalance done")).collect();
    // the first rebalance (a spurious watch event may have brought another one meanwhile)
    let first = done.first().expect("a rebalance was logged");
    let (name, fields) = first.scope.first().expect("the event is inside a span");
    assert_eq!(name, "rebalance", "{:?}", first.scope);
    assert_eq!(fields, &["group=gs", "consumer_id=gs_a", "attempt=0"].map(String::from));
    assert!(first.fields.contains(&"owned=2".to_string()), "{:?}", first.fields);
    for later in &done[1..] {
        assert_eq!(later.scope.first().map(|(name, _)| name.as_str()), Some("rebalance"), "{later:?}");
    }
    c.shutdown().await.unwrap();
}

//! End to end over TLS (`security.protocol=SSL`): a FakeCluster whose brokers serve TLS with a
//! certificate of a CA made here (rcgen), and gregor's clients configured only through Kafka's
//! properties. The producer sends, the simple consumer and a consumer group read everything
//! back; a client trusting another CA fails at once with the broker's TLS error, without
//! reconnecting in a loop; brokers that require client certificates take the one given with
//! `ssl.certificate.pem`/`ssl.key.pem` and refuse a client without.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gregor::consumer::{ConsumerConfig, ConsumerConnector};
use gregor::net::Error as NetError;
use gregor::producer::{AsyncProducer, Error as ProducerError, ProducerConfig, Record};
use gregor::serde::{StringDecoder, StringEncoder};
use gregor::simple_consumer::{Error as ConsumerError, SimpleConsumer, SimpleConsumerConfig};
use gregor_testkit::support::{self, bounded};
use gregor_testkit::tls::TestPki;
use gregor_testkit::FakeCluster;

const MESSAGES: usize = 300;

/// Kafka's properties for TLS trusting `ca_pem`, plus `more`.
fn ssl<'a>(ca_pem: &'a str, more: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut props = vec![("security.protocol", "SSL"), ("ssl.ca.pem", ca_pem)];
    props.extend_from_slice(more);
    props
}

/// Sends `MESSAGES` records with acks=-1 through a producer made from `props` (and the
/// bootstrap list), and waits for each.
async fn produce(cluster: &FakeCluster, topic: &str, props: &[(&str, &str)]) -> Vec<String> {
    let bootstrap = cluster.bootstrap();
    let mut all = vec![("bootstrap.servers", bootstrap.as_str()), ("acks", "all"), ("linger.ms", "5")];
    all.extend_from_slice(props);
    let config = ProducerConfig::from_properties(all).expect("producer properties");
    let producer: AsyncProducer<String, String> =
        AsyncProducer::new(config, StringEncoder::new(), StringEncoder::new()).unwrap();
    let mut futures = Vec::new();
    let mut sent = Vec::new();
    for i in 0..MESSAGES {
        let value = format!("secret-{i:04}");
        sent.push(value.clone());
        let record = Record::new(topic.to_owned(), value).with_key(format!("k{i}"));
        futures.push(producer.send(record).await.map_err(|e| e.to_string()).unwrap());
    }
    for f in futures {
        bounded("delivery over TLS", Duration::from_secs(30), f).await.expect("delivered over TLS");
    }
    assert!(producer.close(Duration::from_secs(10)).await.is_ok());
    sent
}

/// Every message of `topic`, read by a simple consumer made from `props`.
async fn fetch_all(cluster: &FakeCluster, topic: &str, props: &[(&str, &str)]) -> Vec<String> {
    let bootstrap = cluster.bootstrap();
    let mut all = vec![("metadata.broker.list", bootstrap.as_str())];
    all.extend_from_slice(props);
    let simple = SimpleConsumer::new(SimpleConsumerConfig::from_properties(all).expect("consumer properties")).unwrap();
    let mut read = Vec::new();
    for p in simple.partitions(topic).await.expect("partitions over TLS") {
        let mut offset = 0;
        loop {
            let data = simple.fetch_partition(topic, p, offset).await.expect("fetch over TLS");
            read.extend(data.messages.iter().map(|m| String::from_utf8(m.value.as_deref().unwrap().to_vec()).unwrap()));
            offset = data.next_offset;
            if offset >= data.high_watermark {
                break;
            }
        }
    }
    simple.close().await;
    read.sort();
    read
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_and_both_consumers_talk_tls_to_a_tls_cluster() {
    let pki = TestPki::new("e2e");
    let Some(cluster) =
        support::cluster("tls-e2e").quick().tls(pki.server_tls().unwrap()).topic("secure", 3, 2).start().await
    else {
        return;
    };
    let ca = pki.ca_pem();
    // hostname identification is on by default: the certificate names 127.0.0.1
    let sent = produce(&cluster, "secure", &ssl(&ca, &[])).await;
    let read = fetch_all(&cluster, "secure", &ssl(&ca, &[("ssl.endpoint.identification.algorithm", "https")])).await;
    assert_eq!(read, sent, "the simple consumer read every message once, over TLS");
    assert_eq!(cluster.tls_handshakes_failed(), 0);

    // a consumer group member, with the same properties beside its own
    let zookeeper = cluster.zookeeper().to_owned();
    let mut props = ssl(&ca, &[("zookeeper.connect", &zookeeper), ("group.id", "tls-group")]);
    props.extend([("auto.offset.reset", "smallest"), ("consumer.timeout.ms", "5000")]);
    let config = ConsumerConfig::from_properties(props).expect("consumer group properties");
    assert!(config.security.tls().is_some());
    let connector = ConsumerConnector::new(config).await.unwrap();
    let mut streams = connector
        .create_message_streams(HashMap::from([("secure".to_owned(), 1)]), Arc::new(StringDecoder::new()))
        .await
        .unwrap();
    let mut stream = streams.remove("secure").unwrap().pop().unwrap();
    let mut got = Vec::new();
    while got.len() < MESSAGES {
        match bounded("a message over TLS", Duration::from_secs(30), stream.next()).await {
            Some(Ok(m)) => got.push(m.value.unwrap()),
            other => panic!("the group stream ended after {} messages: {other:?}", got.len()),
        }
    }
    connector.shutdown().await.unwrap();
    got.sort();
    assert_eq!(got, sent, "the group member read every message over TLS");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_ca_fails_at_once_with_the_brokers_tls_error() {
    let pki = TestPki::new("e2e-served");
    let other = TestPki::new("e2e-trusted");
    let Some(cluster) =
        support::cluster("tls-untrusted").brokers(1).tls(pki.server_tls().unwrap()).topic("t", 1, 1).start().await
    else {
        return;
    };
    let addr = cluster.bootstrap();
    let other_ca = other.ca_pem();
    let before = cluster.connections_accepted();
    let started = Instant::now();
    let config = ProducerConfig::from_properties(
        [("bootstrap.servers", addr.as_str()), ("acks", "1"), ("retries", "5"), ("retry.backoff.ms", "200")]
            .into_iter()
            .chain(ssl(&other_ca, &[])),
    )
    .unwrap();
    let producer: AsyncProducer<String, String> =
        AsyncProducer::new(config, StringEncoder::new(), StringEncoder::new()).unwrap();
    let delivery = producer.send(Record::new("t".to_owned(), "v".to_owned())).await.map_err(|e| e.to_string()).unwrap();
    let err =
        bounded("the refusal", Duration::from_secs(10), delivery).await.expect_err("an untrusted CA cannot deliver");
    let elapsed = started.elapsed();
    let ProducerError::Refused { source } = &err.error else { panic!("expected Refused, got {err:?}") };
    let NetError::Tls { addr: refused, reason } = &**source else { panic!("expected Error::Tls, got {source:?}") };
    assert_eq!(refused, &addr, "the error names the broker");
    assert!(reason.contains("UnknownIssuer"), "{reason}");
    // 5 retries of 200 ms would be over a second and six connections: none were made
    let attempts = cluster.connections_accepted() - before;
    assert_eq!(attempts, 1, "one connection, no retries (in {elapsed:?})");
    assert!(elapsed < Duration::from_secs(2), "failed in {elapsed:?}");
    // the broker counts the failure when it reads the client's alert, which may come just after
    // the client has its error
    support::eventually("the broker to count the refused handshake", Duration::from_secs(5), async || {
        cluster.tls_handshakes_failed() >= 1
    })
    .await;
    assert_eq!(cluster.tls_handshakes_failed(), 1, "one handshake, no retries");
    let _ = producer.close(Duration::from_secs(5)).await;

    // the simple consumer, likewise: one attempt, the TLS error inside
    let before = cluster.connections_accepted();
    let bootstrap = cluster.bootstrap();
    let simple = SimpleConsumer::new(
        SimpleConsumerConfig::from_properties(
            [("metadata.broker.list", bootstrap.as_str())].into_iter().chain(ssl(&other_ca, &[])),
        )
        .unwrap(),
    )
    .unwrap();
    let err = bounded("the refusal", Duration::from_secs(10), simple.fetch_partition("t", 0, 0)).await.unwrap_err();
    let ConsumerError::Metadata { source, .. } = &err else { panic!("expected Metadata, got {err:?}") };
    assert!(matches!(&**source, NetError::Tls { addr: a, .. } if *a == addr), "{source:?}");
    assert_eq!(cluster.connections_accepted() - before, 1, "one connection, no retries");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_requiring_client_certificates_take_the_configured_one() {
    let pki = TestPki::new("e2e-mtls");
    let tls = pki.server_tls().unwrap().require_client_certificates(&pki.ca_pem()).unwrap();
    let Some(cluster) = support::cluster("tls-client-cert").brokers(1).tls(tls).topic("mtls", 1, 1).start().await
    else {
        return;
    };
    let ca = pki.ca_pem();
    let client = pki.issue(&["client"], true).unwrap();
    let with_cert = ssl(&ca, &[("ssl.certificate.pem", &client.certificate_pem), ("ssl.key.pem", &client.key_pem)]);
    let sent = produce(&cluster, "mtls", &with_cert).await;
    assert_eq!(fetch_all(&cluster, "mtls", &with_cert).await, sent);

    // without a certificate: refused, not retried (under TLS 1.3 the refusal comes as an alert
    // after the client's side of the handshake)
    let bootstrap = cluster.bootstrap();
    let simple = SimpleConsumer::new(
        SimpleConsumerConfig::from_properties(
            [("metadata.broker.list", bootstrap.as_str())].into_iter().chain(ssl(&ca, &[])),
        )
        .unwrap(),
    )
    .unwrap();
    let err = bounded("the refusal", Duration::from_secs(10), simple.fetch_partition("mtls", 0, 0)).await.unwrap_err();
    let ConsumerError::Metadata { source, .. } = &err else { panic!("expected Metadata, got {err:?}") };
    assert!(source.is_tls_refusal(), "{source:?}");
    cluster.shutdown().await;
}

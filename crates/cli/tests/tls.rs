//! The `gregor` binary against a FakeCluster serving TLS: `produce` with `--command-config`
//! (a properties file with `security.protocol=SSL` and `ssl.ca.location`), `fetch` with the
//! same settings as `--property` values, `consume` with the file, and `groups --describe`,
//! whose log sizes come from the brokers, with and without the file. A file with more than
//! security settings is a usage error for an admin command.

use std::path::Path;

mod common;

use common::run_program;
use common::Run;
use gregor_testkit::support;
use gregor_testkit::tls::TestPki;

async fn gregor(args: &[&str], input: &[u8]) -> Run {
    run_program(env!("CARGO_BIN_EXE_gregor"), args, input).await
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_speaks_tls_with_the_security_settings() {
    const N: usize = 200;
    let pki = TestPki::new("cli");
    let Some(cluster) = support::cluster("cli-tls")
        .brokers(2)
        .quick()
        .tls(pki.server_tls().unwrap())
        .topic("secure", 2, 2)
        .start()
        .await
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ca = write(dir.path(), "ca.pem", &pki.ca_pem());
    let config = write(
        dir.path(),
        "client.properties",
        &format!("# TLS to the brokers\nsecurity.protocol=SSL\nssl.ca.location={ca}\n"),
    );
    let brokers = cluster.bootstrap();
    let zookeeper = cluster.zookeeper().to_owned();

    let input: String = (0..N).map(|i| format!("line-{i:04}\n")).collect();
    gregor(
        &["produce", "--broker-list", &brokers, "--topic", "secure", "--acks", "-1", "--command-config", &config],
        input.as_bytes(),
    )
    .await
    .ok();

    let ca_property = format!("ssl.ca.location={ca}");
    let mut fetched = Vec::new();
    for partition in ["0", "1"] {
        let run = gregor(
            &[
                "fetch",
                "--broker-list",
                &brokers,
                "--topic",
                "secure",
                "--partition",
                partition,
                "--offset",
                "earliest",
                "--property",
                "security.protocol=ssl",
                "--property",
                &ca_property,
            ],
            b"",
        )
        .await;
        fetched.extend(run.ok().lines().map(str::to_owned));
    }
    fetched.sort();
    assert_eq!(fetched, (0..N).map(|i| format!("line-{i:04}")).collect::<Vec<_>>(), "fetch read every line over TLS");

    // a consumer group member reads everything with the file, and commits on exit
    let n = N.to_string();
    let run = gregor(
        &[
            "consume",
            "--zookeeper",
            &zookeeper,
            "--group",
            "tls-readers",
            "--topic",
            "secure",
            "--from-beginning",
            "--max-messages",
            &n,
            "--command-config",
            &config,
        ],
        b"",
    )
    .await;
    assert_eq!(run.ok().lines().count(), N, "{}", run.stderr);

    // the group's log sizes come from the brokers: over TLS with the file...
    let describe = ["groups", "--zookeeper", &zookeeper, "--describe", "--group", "tls-readers", "--output", "json"];
    let with_file = [&describe[..], &["--command-config", &config]].concat();
    let json = gregor(&with_file, b"").await.json();
    let offsets = json["offsets"].as_array().expect("offsets");
    assert_eq!(offsets.len(), 2, "{json}");
    let sizes: i64 = offsets.iter().map(|o| o["log_size"].as_i64().unwrap_or_else(|| panic!("a log size: {o}"))).sum();
    assert_eq!(sizes, N as i64, "{json}");
    // (lines without keys stick to one partition; the other has no committed offset, no lag)
    assert!(offsets.iter().all(|o| o["lag"] == 0 || o["log_size"] == 0), "{json}");
    // ...and not without it (a plaintext request to a TLS listener gets no answer)
    let json = gregor(&describe, b"").await.json();
    assert!(json["offsets"].as_array().unwrap().iter().all(|o| o["log_size"].is_null()), "{json}");

    // an admin command takes only security settings from the file
    let mixed = write(dir.path(), "mixed.properties", "security.protocol=SSL\nclient.id=tool\n");
    gregor(&["groups", "--zookeeper", &zookeeper, "--list", "--command-config", &mixed], b"").await.fails(
        2,
        "\"client.id\" is not a security setting: only security.protocol, ssl.* and sasl.* apply to this command",
    );
    let secret = write(dir.path(), "secret.properties", "security.protocol=SSL\nsasl.password=hunter2\n");
    let run = gregor(&["groups", "--zookeeper", &zookeeper, "--list", "--command-config", &secret], b"").await;
    run.fails(2, "invalid value \"***\" for sasl.password: needs security.protocol SASL_PLAINTEXT or SASL_SSL");
    assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
    gregor(
        &["health", "--zookeeper", &zookeeper, "--command-config", &dir.path().join("none").display().to_string()],
        b"",
    )
    .await
    .fails(2, "could not read --command-config");
    cluster.shutdown().await;
}

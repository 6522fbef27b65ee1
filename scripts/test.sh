#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (see .ci/run, which installs what it needs).
set -euo pipefail
cd "$(dirname "$0")/.."

# The kafka-python fixtures (an independent encoder) must be exactly what the checked-in script
# generates. Needs Debian's python3-kafka, python3-snappy, python3-lz4, python3-xxhash.
if /usr/bin/python3 -c 'import kafka, snappy, lz4, xxhash' 2>/dev/null; then
    /usr/bin/python3 scripts/kafka_python_fixtures.py --check crates/protocol/tests/data/kafka-python
elif [ -n "${CI:-}" ]; then
    echo "error: kafka-python is missing: apt-get install -y python3-kafka python3-snappy python3-lz4 python3-xxhash" >&2
    exit 1
else
    echo "skipping the kafka-python fixture regeneration check: apt-get install -y python3-kafka python3-snappy python3-lz4 python3-xxhash" >&2
fi

cargo fmt --all -- --check
cargo check --workspace --benches --examples --locked
cargo test --workspace --lib --bins --tests --examples --locked
cargo test --workspace --doc --locked

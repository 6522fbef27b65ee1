#!/usr/bin/env bash
# The demo (README's first command): installs Debian's ZooKeeper when it is missing (as root;
# otherwise it names the package), then runs examples/demo.rs. With GREGOR_BROKERS and
# GREGOR_ZOOKEEPER set, the demo uses that cluster and needs nothing installed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/packages.sh

if [ -z "${GREGOR_BROKERS:-}" ] || [ -z "${GREGOR_ZOOKEEPER:-}" ]; then
    ensure_packages zookeeper
fi
ensure_cargo
exec cargo run --release --locked --example demo "$@"

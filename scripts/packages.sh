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

#!/usr/bin/env bash
# Instructions per produced message, counted by callgrind: a figure that does not move with
# the machine's load, for comparing two versions of gregor (or gregor with a peer) where the
# wall-clock runs of one cell vary by up to ~30%.
#
# Each client produces N and then 2N messages under `valgrind --tool=callgrind` (the worker
# process only; the cluster runs outside it), and the figure is (Ir(2N) - Ir(N)) / N: the
# start-up (connecting, metadata, the payload pool) cancels out. Callgrind runs one thread at a
# time, so this counts work, not waiting, cache misses or contention between threads.
#
#   bench/instructions.sh [--clients L] [--partitions P] [--acks A] [--codec C] [--messages N]
#
# Defaults: gregor-ct,gregor,librdkafka; 1 partition; acks 1; none; N = 100000.
# Needs valgrind (apt-get install -y valgrind). Takes about a minute per client.
set -euo pipefail

clients=gregor-ct,gregor,librdkafka
partitions=1
acks=1
codec=none
n=100000
while [ $# -gt 0 ]; do
  case "$1" in
    --clients) clients=$2; shift 2 ;;
    --partitions) partitions=$2; shift 2 ;;
    --acks) acks=$2; shift 2 ;;
    --codec) codec=$2; shift 2 ;;
    --messages) n=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install -y valgrind)" >&2; exit 1; }

root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --manifest-path "$root/bench/Cargo.toml" >&2
bench="$root/bench/target/release/gregor-bench"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# total instructions of the one worker that ran CLIENT with MESSAGES
count() {
  local client=$1 messages=$2 dir="$work/$1-$2"
  mkdir -p "$dir"
  "$bench" --suites producer --clients "$client" --partitions "$partitions" --acks "$acks" \
    --codecs "$codec" --messages "$messages" --repeat 1 --redo 0 --out "$dir/report.md" \
    --wrap "valgrind --tool=callgrind --callgrind-out-file=$dir/callgrind.%p" >"$dir/log" 2>&1 \
    || { cat "$dir/log" >&2; exit 1; }
  local files=("$dir"/callgrind.*)
  [ ${#files[@]} -eq 1 ] || { echo "expected one worker profile in $dir, found ${#files[@]}" >&2; exit 1; }
  grep -q "hw=Some($messages)" "$dir/log" || { echo "$client: the run did not land $messages messages" >&2; cat "$dir/log" >&2; exit 1; }
  awk '/^summary:/ {print $2}' "${files[0]}"
}

printf '%s\n' "instructions per message: $partitions partition(s), acks=$acks, $codec, N=$n (callgrind, (Ir(2N) - Ir(N)) / N)"
printf '%-12s %14s %14s %12s\n' client "Ir(N)" "Ir(2N)" "Ir/message"
for client in ${clients//,/ }; do
  one=$(count "$client" "$n")
  two=$(count "$client" $((2 * n)))
  printf '%-12s %14d %14d %12.0f\n' "$client" "$one" "$two" "$(echo "($two - $one) / $n" | bc -l)"
done

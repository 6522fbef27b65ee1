#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 60), JOBS at a time (default 2), on the stable
# toolchain (RUSTC_BOOTSTRAP=1 lets stable rustc accept cargo-fuzz's -Z flags), after seeding
# the corpus from the fixtures. Logs go to fuzz/logs/<target>.log; the final libFuzzer stats
# of each target are printed at the end. Crashes land in fuzz/artifacts/<target>/.
#
#   bash fuzz/run_all.sh [SECONDS] [JOBS] [TARGET...]
#   CARGO_FUZZ_FLAGS="--sanitizer none" bash fuzz/run_all.sh 300   # ~10x the executions, no ASan
set -uo pipefail
cd "$(dirname "$0")"
SECONDS_PER_TARGET=${1:-60}
JOBS=${2:-2}
shift $(( $# < 2 ? $# : 2 ))
export RUSTC_BOOTSTRAP=1

command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
python3 seed.py >/dev/null
# shellcheck disable=SC2086 # word splitting of the flags is wanted
cargo fuzz build ${CARGO_FUZZ_FLAGS:-} || exit 1
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo fuzz list)
mkdir -p logs

run() {
    local t=$1
    # shellcheck disable=SC2086
    cargo fuzz run ${CARGO_FUZZ_FLAGS:-} "$t" -- -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb="${MALLOC_LIMIT_MB:-64}" \
        -print_final_stats=1 >"logs/$t.log" 2>&1
    echo "$t exit $?" >>"logs/$t.log"
}

running=0
for t in "${targets[@]}"; do
    run "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait

status=0
printf '%-36s %12s %8s %8s %8s %s\n' target execs cov ft corp result
for t in "${targets[@]}"; do
    log="logs/$t.log"
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
    execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
    cov=$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' <<<"$done_line")
    ft=$(sed -nE 's/.*ft: ([0-9]+).*/\1/p' <<<"$done_line")
    corp=$(sed -nE 's/.*corp: ([0-9]+).*/\1/p' <<<"$done_line")
    result=ok
    if grep -qE 'ERROR: libFuzzer|panicked|SUMMARY: AddressSanitizer' "$log"; then result=CRASH; status=1; fi
    printf '%-36s %12s %8s %8s %8s %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
done
exit $status

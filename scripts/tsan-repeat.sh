#!/usr/bin/env bash
# Runs the whole test suite under ThreadSanitizer N times in a row (default 10), built once,
# and stops at the first failing run. CI determinism is a property of the code, not of
# reruns: this is the check that a change did not bring an intermittent report back.
#
#   scripts/tsan-repeat.sh [N] [-- swift test arguments]
#
# Prints one line per run (seconds, verdict) and a summary; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=10
if [ $# -gt 0 ] && [ "$1" != "--" ]; then runs=$1; shift; fi
[ "${1:-}" = "--" ] && shift
scripts/bootstrap.sh
supp="$PWD/scripts/sanitizers"
# As scripts/sanitizers.sh: time bounds 10 times longer, at most 32 tests at a time (see there).
export COURIER_TEST_TIME_SCALE="${COURIER_TEST_TIME_SCALE:-10}"
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-32}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
swift build --build-tests --sanitize=thread --scratch-path .build-tsan
log_dir=$(mktemp -d)
passed=0
for run in $(seq 1 "$runs"); do
  start=$(date +%s)
  if swift test --skip-build --sanitize=thread --scratch-path .build-tsan "$@" >"$log_dir/run-$run.log" 2>&1; then
    passed=$((passed + 1))
    echo "tsan run $run/$runs: passed ($(( $(date +%s) - start )) s, $(grep -Eo 'Test run with [0-9]+ tests' "$log_dir/run-$run.log" | tail -1))"
  else
    echo "tsan run $run/$runs: FAILED ($(( $(date +%s) - start )) s); log follows" >&2
    tail -200 "$log_dir/run-$run.log" >&2
    echo "tsan-repeat: $passed of $run runs passed before the failure" >&2
    exit 1
  fi
done
echo "tsan-repeat: $passed of $runs runs passed, no ThreadSanitizer report (uptime: $(uptime | sed 's/.*load/load/'))"
rm -rf "$log_dir"

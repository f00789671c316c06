#!/usr/bin/env bash
# Builds the libFuzzer targets in Fuzz/ and runs each for a while.
#
#   scripts/fuzz.sh                    every target, 10 minutes each, one after the other
#   scripts/fuzz.sh --smoke            every target, 25 seconds each (CI)
#   scripts/fuzz.sh --time 120 FuzzFormDecoder
#   scripts/fuzz.sh --parallel         every target at once (each still gets its full time)
#   scripts/fuzz.sh --jobs 2           at most two targets at a time
#   scripts/fuzz.sh --no-build ...     reuse the last build
#
# Seeds come from Fixtures/fuzz/<target>/ (read only); the growing corpus, crash inputs and
# logs go to fuzz-artifacts/<target>/ (ignored by git). Prints executions and coverage
# (libFuzzer's cov: edges, ft: features) per target; exits non-zero when a target crashes,
# leaks, times out on one input or runs out of memory. Reproduce a crash with
#   Fuzz/.build/release/<target> fuzz-artifacts/<target>/crash-…
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds=600
build=1
jobs=1
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) seconds=25 ;;
    --time) seconds="$2"; shift ;;
    --no-build) build=0 ;;
    --parallel) jobs=1000 ;;
    --jobs) jobs="$2"; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
if [ ${#targets[@]} -eq 0 ]; then
  for dir in Fuzz/Sources/Fuzz*/; do
    name=$(basename "$dir")
    [ "$name" = FuzzSupport ] || targets+=("$name")
  done
fi

flags=(-c release --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xcc -fsanitize=address)
if [ "$build" = 1 ]; then
  echo "== building ${targets[*]} (release, fuzzer+address)"
  start=$(date +%s)
  # SwiftPM adds -parse-as-library to single-file executables, so libFuzzer's main() is the
  # entry point and calls each target's @_cdecl("LLVMFuzzerTestOneInput"). `--sanitize=fuzzer`
  # makes SwiftPM link libFuzzer; ASan is added through -Xswiftc as ONE combined flag because
  # `--sanitize=fuzzer --sanitize=address` hands swiftc two -sanitize= flags and the last one
  # wins, which silently drops the coverage instrumentation (libFuzzer then sees ~15 edges).
  (cd Fuzz && swift build "${flags[@]}")
  echo "   built in $(( $(date +%s) - start )) s"
fi
bin=$(cd Fuzz && swift build "${flags[@]}" --show-bin-path)
# Refuse to "fuzz" blind: the binaries must carry coverage counters for the Swift code.
for target in "${targets[@]}"; do
  edges=$("$bin/$target" -runs=0 2>&1 | sed -n 's/.*(\([0-9]*\) inline 8-bit counters).*/\1/p' | head -1)
  if [ "${edges:-0}" -lt 500 ]; then
    echo "$target has ${edges:-no} coverage counters: not instrumented, rebuild" >&2
    exit 1
  fi
done

run_one() {
  local target=$1
  local out="$root/fuzz-artifacts/$target"
  mkdir -p "$out/corpus"
  # Leak detection stays on (-detect_leaks=1); malloc limit catches unbounded allocations
  # from a single small input; -timeout flags an input that takes over 10 s (a hang).
  # SWIFT_BACKTRACE=enable=no: Swift's crash backtracer, reading memory under ASan, adds a
  # second "unknown-crash" report and takes seconds; libFuzzer's own stack trace is enough.
  SWIFT_BACKTRACE=enable=no ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}" \
    "$bin/$target" "$out/corpus" "$root/Fixtures/fuzz/$target" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=16384 \
    -print_final_stats=1 -artifact_prefix="$out/" >"$out/fuzz.log" 2>&1
}

summary() {
  local target=$1 status=$2
  local log="$root/fuzz-artifacts/$target/fuzz.log"
  local last execs
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  local cov ft corpus rate
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corpus=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$last")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  local verdict=ok
  [ "$status" = 0 ] || verdict="FAILED (exit $status, see $log)"
  printf '%-22s %10s execs %8s/s  cov %6s  ft %7s  corpus %-12s %s\n' \
    "$target" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corpus:-?}" "$verdict"
  if [ "$status" != 0 ]; then
    grep -E 'ERROR: |Fatal error|SUMMARY|Test unit written' "$log" | head -8 | sed 's/^/    /'
  fi
}

echo "== fuzzing ${#targets[@]} target(s), ${seconds} s each"
failed=0
declare -A statuses
if [ "$jobs" -gt 1 ]; then
  # A pool of `jobs` targets at a time; each target's exit status is kept by name.
  declare -A pids
  running=0
  for target in "${targets[@]}"; do
    if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
    run_one "$target" & pids[$target]=$!
    running=$((running + 1))
  done
  for target in "${targets[@]}"; do
    if wait "${pids[$target]}"; then statuses[$target]=0; else statuses[$target]=$?; fi
  done
else
  for target in "${targets[@]}"; do
    if run_one "$target"; then statuses[$target]=0; else statuses[$target]=$?; fi
  done
fi
for target in "${targets[@]}"; do
  summary "$target" "${statuses[$target]}"
  [ "${statuses[$target]}" = 0 ] || failed=1
done
exit $failed

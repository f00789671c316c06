#!/usr/bin/env bash
# Runs the whole test suite under ThreadSanitizer and AddressSanitizer (LeakSanitizer included).
#
#   scripts/sanitizers.sh              both, one after the other
#   scripts/sanitizers.sh thread       only TSan   (scratch path .build-tsan)
#   scripts/sanitizers.sh address      only ASan   (scratch path .build-asan)
#   scripts/sanitizers.sh address -- --filter FaultMatrixTests
#
# Each sanitizer gets its own scratch path so switching does not rebuild the normal .build.
# The address run ends with the courier-demo tour under ASan + LeakSanitizer.
# Known false positives are suppressed in scripts/sanitizers/*.supp, each entry with the reason.
# Prints how long each build and each test run took; exits non-zero on any report.
set -euo pipefail
cd "$(dirname "$0")/.."

kinds=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    thread|address) kinds+=("$1") ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: $0 [thread|address]... [-- swift test arguments]" >&2; exit 2 ;;
  esac
  shift
done
[ ${#kinds[@]} -gt 0 ] || kinds=(thread address)

supp="$PWD/scripts/sanitizers"
# halt_on_error: the first report fails the run, so a report is never lost in the test output.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=0:suppressions=$supp/asan.supp${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

# At most 32 tests at a time (Swift Testing starts every test of the suite at once otherwise).
# Under ThreadSanitizer on 2 cores, all at once stretched each test past fixed bounds (a 60 s
# transfer timeout, a 60 s freshness) and made the run slower, not faster: the whole TSan suite
# took 164 s unlimited, 109 s at 16 and 94 s at 32, one run each at load 8-10 (7 Dec 2026,
# beside two helpers' builds); the longest test 150 s, 102 s and 87 s. 32 tests at a time still
# interleave plenty for the sanitizer to see. An environment setting wins.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-32}"

results=()
failures=()
status=0
for kind in "${kinds[@]}"; do
  # The tests' time bounds (CourierTesting's TestTimeBound) grow with the sanitizer's slowdown:
  # under TSan the parallel suite runs ~10x slower on 2 cores, and a bound right for the plain
  # run failed for the machine's load (3 tests in one run at load 4.5, 28 Nov 2026).
  case "$kind" in
    thread) scratch=.build-tsan; scale=10 ;;
    address) scratch=.build-asan; scale=3 ;;
  esac
  export COURIER_TEST_TIME_SCALE="${COURIER_TEST_TIME_SCALE_OVERRIDE:-$scale}"
  echo "== $kind sanitizer: building into $scratch"
  start=$(date +%s)
  swift build --build-tests --sanitize="$kind" --scratch-path "$scratch"
  built=$(( $(date +%s) - start ))
  echo "== $kind sanitizer: testing"
  start=$(date +%s)
  # Parallel test execution stays on: interleavings between tests are what TSan needs to see.
  # The output is also kept, so that what failed is repeated at the very end: CI shows only
  # the tail of a run, and a failure in the thread run was followed by the whole address run.
  log="$scratch/test-output.log"
  if scripts/watchdog.py swift test --skip-build --sanitize="$kind" --scratch-path "$scratch" ${extra[@]+"${extra[@]}"} \
    2>&1 | tee "$log"; then
    verdict=passed
  else
    verdict=FAILED
    status=1
    failures+=("== $kind sanitizer: what failed" "$(
      grep -E '^✘ Test .*recorded an issue|WARNING: ThreadSanitizer|ERROR: (Address|Leak)Sanitizer|^SUMMARY: ' "$log" |
        cut -c1-600 | head -30
      # The watchdog's list of tests that never finished (its thread stacks stay above).
      sed -n '/^watchdog: no output/,/^$/p' "$log" | head -40
    )")
  fi
  tested=$(( $(date +%s) - start ))
  results+=("$kind: $verdict (build ${built} s, tests ${tested} s)")
  # The demo tour under AddressSanitizer: LeakSanitizer checks it at exit (curl handles,
  # protobuf messages, continuations of a whole app run). Skipped when arguments select tests.
  if [ "$kind" = address ] && [ ${#extra[@]} -eq 0 ]; then
    echo "== address sanitizer: courier-demo tour"
    if "$scratch/debug/courier-demo" >"$scratch/demo.log" 2>&1; then
      results+=("address: courier-demo tour passed, no leak")
    else
      cat "$scratch/demo.log" >&2
      results+=("address: courier-demo tour FAILED (see above)")
      status=1
    fi
  fi
done
[ ${#failures[@]} -eq 0 ] || printf '%s\n' "${failures[@]}"
printf '%s\n' "${results[@]}"
exit $status

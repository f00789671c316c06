#!/usr/bin/env bash
# The test command: installs what is missing, checks formatting and generated code,
# builds with warnings as errors, and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh
scripts/check-format.sh
scripts/check-locks.sh
if [ -x scripts/generate-protos.sh ]; then scripts/generate-protos.sh --check; fi
# The protobuf goldens are what Google's runtime makes of Protos/ (the first python3 with
# python3-protobuf, which bootstrap.sh installs: on PATH, then Debian's).
for python in python3 /usr/bin/python3; do
  if "$python" -c 'import google.protobuf' 2>/dev/null; then
    "$python" scripts/make-protobuf-fixtures.py --check
    break
  fi
  [ "$python" != /usr/bin/python3 ] || { echo "no python3 with python3-protobuf" >&2; exit 1; }
done

swift build --build-tests
# Through the watchdog: a test that hangs ends the run after 10 minutes without output, with
# the tests still running and every thread's stack, instead of holding CI to its time limit.
scripts/watchdog.py swift test --skip-build "$@"

# The demo tour doubles as a smoke test (it exits non-zero when a step misbehaves); the debug
# build made above is enough. Skipped when arguments select tests (e.g. --filter).
if [ $# -eq 0 ]; then
  tour_log="$(mktemp)"
  if ! "$(swift build --show-bin-path)/courier-demo" >"$tour_log" 2>&1; then
    cat "$tour_log" >&2
    echo "courier-demo: a tour step did not behave as shown" >&2
    rm -f "$tour_log"
    exit 1
  fi
  rm -f "$tour_log"
  echo "courier-demo: every tour step behaved as shown"
fi

#!/usr/bin/env bash
# The test command: installs what is missing, checks formatting and generated code,
# builds with warnings as errors, and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh
scripts/check-format.sh
if [ -x scripts/generate-protos.sh ]; then scripts/generate-protos.sh --check; fi

swift build --build-tests
swift test --skip-build "$@"

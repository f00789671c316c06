#!/usr/bin/env bash
# Fails when any Swift file differs from what `swift format` would write.
set -euo pipefail
cd "$(dirname "$0")/.."
dirs=(Sources Tests)
[ -d Benchmarks/Sources ] && dirs+=(Benchmarks/Sources)
swift format lint --strict --recursive --parallel "${dirs[@]}"

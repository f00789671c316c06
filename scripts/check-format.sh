#!/usr/bin/env bash
# Fails when any Swift file differs from what `swift format` would write.
set -euo pipefail
cd "$(dirname "$0")/.."
dirs=(Sources Tests)
for extra in Plugins Benchmarks/Sources Benchmarks/Benchmarks Fuzz/Sources; do [ -d "$extra" ] && dirs+=("$extra"); done
swift format lint --strict --recursive --parallel "${dirs[@]}"

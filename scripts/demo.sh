#!/usr/bin/env bash
# The main job: installs what is missing, builds and runs courier-demo against its
# embedded loopback server. Extra arguments go to courier-demo (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh --demo
swift build -c release --product courier-demo
exec "$(swift build -c release --show-bin-path)/courier-demo" "$@"

#!/usr/bin/env bash
# Installs the Debian packages Courier needs, only those that are missing.
# Used by scripts/test.sh and scripts/demo.sh, so a fresh Debian machine needs nothing else.
set -euo pipefail

packages=(
    libcurl4-openssl-dev   # the transport
    libprotobuf-c-dev      # the protobuf runtime
    protobuf-c-compiler    # protoc-c, to check the generated code
    libsqlite3-dev         # the cache's disk tier
    libpsl-dev             # the Public Suffix List for the cookie jar
    zlib1g-dev             # gzip in the loopback test server
    nginx                  # TLS and HTTP/2 tests
    openssl                # the tests' self-signed CA
    ca-certificates
    pkg-config
)
if [ "${1:-}" = "--demo" ]; then
    packages=(libcurl4-openssl-dev libprotobuf-c-dev libsqlite3-dev libpsl-dev zlib1g-dev pkg-config)
fi

missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "Installing missing system packages: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"

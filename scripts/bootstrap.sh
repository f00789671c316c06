#!/usr/bin/env bash
# Makes sure the system libraries and tools Courier needs are there, installing only what is
# missing through apt-get. Used by scripts/test.sh and scripts/demo.sh, so a fresh Debian
# machine needs nothing else.
#
#   scripts/bootstrap.sh           what the tests need
#   scripts/bootstrap.sh --demo    what the library and the demo need (no test servers)
#
# Each need is checked the way the build finds it (pkg-config for libraries, the PATH for
# tools), so libraries installed another way (a source build, another distribution) are used
# as they are and apt is not run at all. Without root, and without sudo that works without a
# password, nothing is installed: the script prints the one apt-get line to run and fails.
set -euo pipefail

# need | Debian package | check (a shell condition)
needs=(
    "libcurl (the transport)|libcurl4-openssl-dev|pkg-config --exists libcurl"
    "libprotobuf-c (the protobuf runtime)|libprotobuf-c-dev|pkg-config --exists libprotobuf-c"
    "SQLite (the cache's disk tier)|libsqlite3-dev|pkg-config --exists sqlite3"
    "zlib (gzip and deflate bodies; gzip in the loopback test server)|zlib1g-dev|pkg-config --exists zlib"
    "libpsl (the Public Suffix List for cookies)|libpsl-dev|pkg-config --exists libpsl"
    "pkg-config|pkg-config|command -v pkg-config"
)
if [ "${1:-}" != "--demo" ]; then
    needs+=(
        "protoc-c (checks the generated code)|protobuf-c-compiler|command -v protoc-c"
        "nginx (TLS and HTTP/2 tests)|nginx|command -v nginx || [ -x /usr/sbin/nginx ]"
        "openssl (the tests' self-signed CA)|openssl|command -v openssl"
        "curl (the reference client the nginx tests check their server with)|curl|command -v curl"
        "CA certificates|ca-certificates|[ -s /etc/ssl/certs/ca-certificates.crt ]"
        "hiredis (fleet mode: the CourierRedis target)|libhiredis-dev|[ -f /usr/include/hiredis/hiredis.h ]"
        "redis-server (fleet-mode tests start their own)|redis-server|command -v redis-server || [ -x /usr/bin/redis-server ]"
        "tinyproxy (HTTP proxy tests)|tinyproxy|command -v tinyproxy"
        "dante (SOCKS5 proxy tests)|dante-server|command -v danted || [ -x /usr/sbin/danted ]"
        "python3 (the test run's watchdog, scripts/watchdog.py)|python3-minimal|command -v python3"
        "python3-protobuf (the protobuf differential tests against Google's runtime)|python3-protobuf|/usr/bin/python3 -c 'import google.protobuf' || python3 -c 'import google.protobuf'"
    )
fi

missing=()
reasons=()
for entry in "${needs[@]}"; do
    IFS='|' read -r what package check <<<"$entry"
    # pkg-config itself may be what is missing: then every pkg-config check fails too.
    if ! bash -c "$check" >/dev/null 2>&1; then
        case " ${missing[*]} " in *" $package "*) ;; *) missing+=("$package"); reasons+=("$what") ;; esac
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

echo "bootstrap: missing: $(IFS=,; echo "${reasons[*]}" | sed 's/,/, /g')"
apt_line="apt-get install -y --no-install-recommends ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo_cmd=(sudo)
    else
        echo "bootstrap: not root and no password-less sudo, so nothing was installed. Run:" >&2
        echo "    sudo apt-get update && sudo $apt_line" >&2
        exit 1
    fi
fi
if ! command -v apt-get >/dev/null; then
    echo "bootstrap: no apt-get on this machine; install the equivalent of: ${missing[*]}" >&2
    exit 1
fi
echo "bootstrap: installing with apt-get: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The proxies' packages start system-wide daemons (tinyproxy on :8888, danted on :1080) and
# enable them at boot; the tests start their own on free ports, so stop and disable those.
for service in tinyproxy danted; do
    case " ${missing[*]} " in *" tinyproxy "* | *" dante-server "*) ;; *) continue ;; esac
    if [ -d /run/systemd/system ]; then
        "${sudo_cmd[@]}" systemctl disable --now "$service" >/dev/null 2>&1 || true
    else
        "${sudo_cmd[@]}" service "$service" stop >/dev/null 2>&1 || true
        "${sudo_cmd[@]}" update-rc.d "$service" disable >/dev/null 2>&1 || true
    fi
done
echo "bootstrap: installed ${missing[*]}"

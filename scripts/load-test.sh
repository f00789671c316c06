#!/usr/bin/env bash
# A bounded load run (not part of the test suite): 100,000 GETs with 256 in flight through one
# HTTPClient against nginx on loopback. Passes when nothing failed, open file descriptors are
# back to the baseline afterwards, and resident memory after 100,000 requests is within 10% of
# after 50,000. Results are recorded in Docs/Reliability.md by hand.
#
#   scripts/load-test.sh [--requests N] [--in-flight K] [--connections C]
#
# nginx runs from a temporary folder (config in the style of CourierTesting.NginxServer) and is
# stopped on exit, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { echo "nginx is not installed" >&2; exit 1; }
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

echo "== building Tools/courier-load (release)"
start=$(date +%s)
(cd Tools && swift build -c release --product courier-load)
echo "   built in $(( $(date +%s) - start )) s"
load="$(cd Tools && swift build -c release --show-bin-path)/courier-load"

dir=$(mktemp -d /tmp/courier-load.XXXXXX)
nginx_pid=""
cleanup() {
  if [ -n "$nginx_pid" ] && kill -0 "$nginx_pid" 2>/dev/null; then
    kill -QUIT "$nginx_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$nginx_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$nginx_pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$dir/root"
# A 1 KiB JSON document: small enough that the run measures the client, not the copy.
python3 -c 'import json; print(json.dumps({"items": [{"id": i, "name": "item %d" % i} for i in range(40)]})[:1023])' \
  >"$dir/root/item.json"
bytes=$(stat -c %s "$dir/root/item.json")
user=""; [ "$(id -u)" = 0 ] && user="user root;"
cat >"$dir/nginx.conf" <<CONF
$user
daemon off;
master_process on;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
worker_rlimit_nofile 8192;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $dir/client_body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    types { application/json json; }
    server {
        listen 127.0.0.1:$port;
        server_name localhost 127.0.0.1;
        root $dir/root;
        location / { }
    }
}
CONF
"$nginx_bin" -p "$dir" -c "$dir/nginx.conf" &
nginx_pid=$!
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.1
done

echo "== load: http://127.0.0.1:$port/item.json ($bytes bytes)"
"$load" "http://127.0.0.1:$port/item.json" --bytes "$bytes" "$@"

# Sourced by the benchmark scripts: the benchmarks' nginx, and the set-up they share.
#
#   bench_setup PRODUCT NAME      # builds PRODUCT of Benchmarks/ in release (unless SKIP_BUILD
#                                 # is set) and sets `bench` (BENCH=path measures another build);
#                                 # makes `work` (/tmp/courier-NAME.XXXXXX), removed at exit
#                                 # with the nginx of `nginx_pid`, if any
#   bench_nginx_head WORK         # prints the configuration's start, up to the http block's
#                                 # shared lines (one worker, temp paths in WORK, no access log)
#   run_bench_nginx WORK READY_URL  # starts nginx on WORK/nginx.conf, waits for READY_URL
#   start_bench_nginx WORK [EXTRA_SERVER_LINES]
#
# Serves WORK/www on a free loopback port with the benchmarks' configuration (one worker, kept
# connections, no access log), waits until it answers WORK/www/catalog.json, and sets
# `nginx_pid`, `port` and `url`. The caller stops nginx (`kill "$nginx_pid"`) in its cleanup.
bench_setup() {
    local product="$1" name="$2"
    if [ -z "${SKIP_BUILD:-}" ]; then
        echo "== building $product (release)" >&2
        (cd "$root/Benchmarks" && swift build -c release --product "$product" 2>&1 | tail -n 1) >&2
    fi
    bench="${BENCH:-$root/Benchmarks/.build/release/$product}"
    work="$(mktemp -d "/tmp/courier-$name.XXXXXX")"
    nginx_pid=""
    trap bench_cleanup EXIT
}

bench_cleanup() {
    if [ -n "${nginx_pid:-}" ] && kill -0 "$nginx_pid" 2>/dev/null; then
        kill "$nginx_pid"
        wait "$nginx_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}

bench_nginx_head() {
    local work="$1" user_line=""
    [ "$(id -u)" -eq 0 ] && user_line="user root;"
    cat <<CONF
$user_line
daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 16384;
pid $work/nginx.pid;
error_log $work/error.log warn;
events { worker_connections 8192; }
http {
    access_log off;
    client_body_temp_path $work/client_body;
    proxy_temp_path $work/proxy;
    fastcgi_temp_path $work/fastcgi;
    uwsgi_temp_path $work/uwsgi;
    scgi_temp_path $work/scgi;
CONF
}

start_bench_nginx() {
    local work="$1" extra="${2:-}"
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    {
        bench_nginx_head "$work"
        cat <<CONF
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    types { application/json json; }
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$port backlog=4096;
        root $work/www;
        location / { }
        $extra
    }
}
CONF
    } >"$work/nginx.conf"
    url="http://127.0.0.1:$port/catalog.json"
    run_bench_nginx "$work" "$url"
}

# Starts nginx with WORK/nginx.conf, sets `nginx_pid`, and waits until URL answers (its
# error log and exit 1 when it never does).
run_bench_nginx() {
    local work="$1" ready="$2" nginx_bin
    nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
    "$nginx_bin" -c "$work/nginx.conf" -p "$work" -e "$work/error.log" &
    nginx_pid=$!
    for _ in $(seq 1 100); do
        curl -fsS -o /dev/null "$ready" 2>/dev/null && break
        sleep 0.1  # waiting for nginx to bind (startup, not synchronisation between measurements)
    done
    curl -fsS -o /dev/null "$ready" || { cat "$work/error.log"; exit 1; }
}

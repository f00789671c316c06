#!/usr/bin/env bash
# HTTPS and HTTP/2 against nginx on loopback (issue 22 items 5 and 6): Courier's transport path
# (`courier-http-bench courier-transport`, `HTTPClient.send`) beside the curl command line in
# the same run, rounds interleaved (Courier, curl, Courier, curl, ...), each figure the median
# of ROUNDS with its min–max. Prints a Markdown section for Docs/Performance.md.
#
#   scripts/bench-https.sh                     # ROUNDS=3
#   ROUNDS=5 REQUESTS=20000 GOAWAY_REQUESTS=100000 scripts/bench-https.sh
#   SKIP_GOAWAY=1 scripts/bench-https.sh       # without the long GOAWAY run
#
# One nginx (one worker, TLS 1.3 only, EC P-256 certificate of a CA made here, session cache
# and tickets on, access log off) listens on four ports:
#   kept       HTTPS HTTP/1.1, connections kept (keepalive_requests high): C=32
#   handshake  HTTPS HTTP/1.1, `keepalive_timeout 0`: every request on a new connection, so the
#              rate is the new-handshake rate (both clients may resume TLS sessions)
#   h2         HTTPS HTTP/2, kept: 100 requests in flight as streams of one connection
#   goaway     HTTPS HTTP/2, `keepalive_requests 100`: nginx sends GOAWAY after every 100th
#              stream; GOAWAY_REQUESTS GETs, failures counted (the goal: none)
# A fifth, plain-http port serves `stub_status`: the connections nginx accepted during a run
# are its "connections" column (handshakes for the TLS ports).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
rounds="${ROUNDS:-3}"
requests="${REQUESTS:-10000}"
handshakes="${HANDSHAKES:-2000}"
goaway_requests="${GOAWAY_REQUESTS:-100000}"
. "$root/scripts/bench-nginx.sh"
bench_setup courier-http-bench bench-https

# --- certificates and nginx -----------------------------------------------------------------
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${ec[@]}" -keyout "$work/ca.key" -out "$work/ca.pem" -days 2 -subj "/CN=bench CA" 2>/dev/null
openssl req "${ec[@]}" -keyout "$work/server.key" -out "$work/server.csr" -subj "/CN=127.0.0.1" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$work/ext.cnf"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
    -out "$work/server.pem" -days 2 -extfile "$work/ext.cnf" 2>/dev/null

mkdir -p "$work/www"
"$bench" write-body "$work/www/catalog.json" >/dev/null
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
status_port="$(free_port)" kept_port="$(free_port)" handshake_port="$(free_port)"
h2_port="$(free_port)" goaway_port="$(free_port)"
{
    bench_nginx_head "$work"
    cat <<CONF
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    ssl_certificate $work/server.pem;
    ssl_certificate_key $work/server.key;
    ssl_protocols TLSv1.3;
    ssl_session_cache shared:SSL:10m;
    types { application/json json; }
    default_type application/octet-stream;
    root $work/www;
    server { listen 127.0.0.1:$status_port; location = /status { stub_status; } }
    server { listen 127.0.0.1:$kept_port ssl backlog=4096; location / { } }
    server { listen 127.0.0.1:$handshake_port ssl backlog=4096; keepalive_timeout 0; location / { } }
    server { listen 127.0.0.1:$h2_port ssl http2 backlog=4096; location / { } }
    server { listen 127.0.0.1:$goaway_port ssl http2 backlog=4096; keepalive_requests 100; location / { } }
}
CONF
} >"$work/nginx.conf"
status_url="http://127.0.0.1:$status_port/status"
run_bench_nginx "$work" "$status_url"
curl -fsS -o /dev/null --cacert "$work/ca.pem" "https://127.0.0.1:$kept_port/catalog.json" || {
    cat "$work/error.log"
    exit 1
}

# --- measuring --------------------------------------------------------------------------------
results="$work/results.jsonl"
: >"$results"

# nginx's counters: connections accepted, requests served (the status requests included).
counters() { curl -fsS "$status_url" | awk '/^ *[0-9]+ +[0-9]+ +[0-9]+/ { print $1, $3 }'; }

# A curl config of N requests of URL.
curl_config() {  # file url n
    for _ in $(seq 1 "$3"); do printf 'url = "%s"\noutput = "/dev/null"\n' "$2"; done >"$1"
}

# Runs curl and prints a JSON line like courier-http-bench's: rate over the whole process (its
# start-up and config parsing included), CPU of the child, and the failed transfers (an exit
# code or a status other than 200).
measure_curl() {  # requests concurrency config curl-arguments...
    local requests="$1" concurrency="$2" config="$3"
    shift 3
    python3 - "$requests" "$concurrency" "$config" "$work/ca.pem" "$@" <<'PY'
import json, resource, subprocess, sys, time
requests, concurrency, config, ca, extra = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
command = ["curl", "-s", "--no-progress-meter", "--cacert", ca, "-w", "%{http_code} %{exitcode}\n"] + extra
if concurrency > 1:
    command += ["--parallel", "--parallel-max", str(concurrency)]
command += ["--config", config]
start = time.monotonic()
out = subprocess.run(command, stdout=subprocess.PIPE, text=True).stdout.split("\n")
seconds = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
failures = requests - sum(1 for line in out if line == "200 0")
print(json.dumps({"client": "curl", "concurrency": concurrency, "requests": requests, "seconds": seconds,
                  "rps": requests / seconds, "cpu_us_per_request": (usage.ru_utime + usage.ru_stime) * 1e6 / requests,
                  "peak_rss_kib": usage.ru_maxrss, "failures": failures}))
PY
}

# Runs one measurement and appends its JSON line, with the case, the round, the 1-minute load
# after it, and the connections nginx accepted and requests it served meanwhile.
record() {  # case round command...
    local name="$1" round="$2" before after line load1
    shift 2
    before="$(counters)"
    line="$("$@")"
    after="$(counters)"
    load1="$(cut -d" " -f1 /proc/loadavg)"
    read -r accepted_before served_before <<<"$before"
    read -r accepted_after served_after <<<"$after"
    echo "$line" | sed "s/^{/{\"case\": \"$name\", \"round\": $round, \"load1\": $load1, \
\"accepted\": $((accepted_after - accepted_before - 1)), \"served\": $((served_after - served_before - 1)), /" \
        >>"$results"
    echo "   $name: $line" >&2
}

courier() {  # url requests concurrency [more courier-http-bench arguments...]
    local url="$1" n="$2" c="$3"
    shift 3
    "$bench" courier-transport --url "$url" --requests "$n" --concurrency "$c" --ca "$work/ca.pem" \
        --failures count "$@"
}

kept_url="https://127.0.0.1:$kept_port/catalog.json"
handshake_url="https://127.0.0.1:$handshake_port/catalog.json"
h2_url="https://127.0.0.1:$h2_port/catalog.json"
goaway_url="https://127.0.0.1:$goaway_port/catalog.json"
curl_config "$work/kept.conf" "$kept_url" "$requests"
curl_config "$work/handshake.conf" "$handshake_url" "$handshakes"
curl_config "$work/handshake-1.conf" "$handshake_url" "$((handshakes / 4))"
curl_config "$work/h2.conf" "$h2_url" "$requests"
curl_config "$work/goaway.conf" "$goaway_url" "$goaway_requests"

load_start="$(cut -d" " -f1-3 /proc/loadavg)"
started=$(date +%s)
for round in $(seq 1 "$rounds"); do
    echo "== round $round/$rounds" >&2
    record kept-c32 "$round" courier "$kept_url" "$requests" 32
    record kept-c32 "$round" measure_curl "$requests" 32 "$work/kept.conf" --http1.1
    # No warm-up connections to keep: each request opens its own.
    record handshake-c32 "$round" courier "$handshake_url" "$handshakes" 32 --warmup 32
    record handshake-c32 "$round" measure_curl "$handshakes" 32 "$work/handshake.conf" --http1.1
    record handshake-c1 "$round" courier "$handshake_url" "$((handshakes / 4))" 1 --warmup 1
    record handshake-c1 "$round" measure_curl "$((handshakes / 4))" 1 "$work/handshake-1.conf" --http1.1
    record h2-100-streams "$round" courier "$h2_url" "$requests" 100
    record h2-100-streams "$round" measure_curl "$requests" 100 "$work/h2.conf" --http2
    if [ -z "${SKIP_GOAWAY:-}" ]; then
        record goaway-100 "$round" courier "$goaway_url" "$goaway_requests" 100
        record goaway-100 "$round" measure_curl "$goaway_requests" 100 "$work/goaway.conf" --http2
    fi
done
load_end="$(cut -d" " -f1-3 /proc/loadavg)"

# --- report -----------------------------------------------------------------------------------
PYTHONPATH="$root/Benchmarks" python3 - "$results" "$rounds" "$load_start" "$load_end" "$(($(date +%s) - started))" <<'PY'
import json, statistics, sys
import goals
path, rounds, load_start, load_end, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
rows = [json.loads(line) for line in open(path)]
cases = {"kept-c32": "HTTPS HTTP/1.1, kept connections, 32 in flight",
         "handshake-c32": "HTTPS HTTP/1.1, a new connection (TLS handshake) per request, 32 in flight",
         "handshake-c1": "HTTPS HTTP/1.1, a new connection per request, 1 in flight",
         "h2-100-streams": "HTTP/2, 100 in flight (streams)",
         "goaway-100": "HTTP/2, GOAWAY every 100 requests, 100 in flight"}
def spread(values, fmt):
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}–{fmt(max(values))})"
print(f"Measured with `ROUNDS={rounds} scripts/bench-https.sh`, {seconds} s; load average "
      f"{load_start} at the start, {load_end} at the end; 1-minute load after each measurement "
      f"{min(r['load1'] for r in rows)}–{max(r['load1'] for r in rows)}.\n")
print("| case | client | requests | req/s median (min–max) | Courier ÷ curl | CPU µs/req | connections | failed |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for case, title in cases.items():
    by_client = {c: [r for r in rows if r["case"] == case and r["client"] == c]
                 for c in ("courier-transport", "curl")}
    if not by_client["curl"]:
        continue
    ratio = statistics.median(r["rps"] for r in by_client["courier-transport"]) / statistics.median(
        r["rps"] for r in by_client["curl"])
    for client, runs in by_client.items():
        failed = sum(r.get("failures", 0) + r.get("warmup_failures", 0) for r in runs)
        print(f"| {title} | {'Courier `send`' if client != 'curl' else 'curl'} | {runs[0]['requests']:,} | "
              f"{spread([r['rps'] for r in runs], lambda v: f'{v:,.0f}')} | "
              f"{f'**{ratio:.2f}**' if client != 'curl' else ''} | "
              f"{statistics.median(r['cpu_us_per_request'] for r in runs):.0f} | "
              f"{spread([r['accepted'] for r in runs], lambda v: f'{v:.0f}')} | {failed} |")
print()
def per_round(case):
    runs = {}
    for r in rows:
        if r["case"] == case:
            runs.setdefault(r["round"], {})[r["client"]] = r
    return [v["courier-transport"]["rps"] / v["curl"]["rps"] for v in runs.values() if len(v) == 2]
for case, text, target in (("kept-c32", "5. HTTPS, kept connections, 32 in flight: requests/s", 1.2),
                           ("handshake-c32", "5. HTTPS, new handshakes, 32 in flight: requests/s", 0.9),
                           ("handshake-c1", "5. HTTPS, new handshakes, 1 in flight: requests/s", 0.9),
                           ("h2-100-streams", "6. HTTP/2, 100 streams on one connection: requests/s", 1.0)):
    goals.check(text, "`HTTPClient.send` vs `curl`", per_round(case), target)
goaway = [r for r in rows if r["case"] == "goaway-100" and r["client"] == "courier-transport"]
if goaway:
    goals.check(f"6. HTTP/2 GOAWAY every 100 requests, {goaway[0]['requests']:,} requests: failed calls",
                "`HTTPClient.send`", [r.get("failures", 0) + r.get("warmup_failures", 0) for r in goaway], 0,
                higher=False, unit="")
PY

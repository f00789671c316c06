#!/usr/bin/env bash
# Runs Courier's benchmarks against its peers and writes Docs/Performance.md.
#
#   scripts/benchmark.sh            # everything: HTTP (nginx on loopback), memory, micro benchmarks
#   RUNS=5 scripts/benchmark.sh     # more interleaved runs per figure (default 3)
#   SKIP_MICRO=1 scripts/benchmark.sh   # HTTP figures only
#   RAW_DIR=/tmp/raw scripts/benchmark.sh   # also keep the raw figures (and sections, goals) there
#   SKIP_SECTIONS=1 scripts/benchmark.sh    # without the other scripts' sections (below)
#   PREVIOUS=/tmp/raw scripts/benchmark.sh  # also compares this run with the one kept in /tmp/raw
#                                           # (RAW_DIR of an earlier run on this machine): does a
#                                           # rerun land within the stated spread? (reproduce.py)
#
# Then the other benchmark scripts, each writing one section of the file with its own command,
# load and spread: scripts/parked-memory.sh (memory per parked request), scripts/scaling.sh
# (C in flight × body size), scripts/service-overhead.sh (the service layer over `send`) and
# scripts/large-bodies.sh (100 MiB throughput against curl, and flat memory) and
# scripts/bench-https.sh (TLS kept and new connections, HTTP/2 streams, GOAWAY). One command
# regenerates the whole of Docs/Performance.md; the by-hand before/after comparisons of past
# changes are in Docs/PerformanceHistory.md.
#
# nginx serves a 1 KB JSON file from a config in a temporary folder (one worker, access log off,
# keepalive_requests high), on a free loopback port. Each HTTP client runs in its own process
# (Benchmarks' `courier-http-bench CLIENT`), so its CPU time and peak RSS are its own. The runs
# are interleaved (A B C D A B C D …) and each figure is the median of RUNS runs.
set -euo pipefail
. "$(dirname "$0")/bench-nginx.sh"

root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${RUNS:-3}"
requests="${REQUESTS:-10000}"
inflight_big="${INFLIGHT_BIG:-1000}"
started=$(date +%s)
load_start="$(cut -d" " -f1-3 /proc/loadavg | sed 's| | / |g')"

# --- tools ---------------------------------------------------------------------------------
"$root/scripts/bootstrap.sh"
tools=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || tools+=(nginx)
command -v wrk >/dev/null || tools+=(wrk)
command -v curl >/dev/null || tools+=(curl)
command -v python3 >/dev/null || tools+=(python3)
if [ ${#tools[@]} -gt 0 ]; then
    echo "Installing missing tools: ${tools[*]}"
    sudo_cmd=()
    if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_cmd[@]}" apt-get update -qq
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${tools[@]}"
fi

# --- build -----------------------------------------------------------------------------------
echo "== building (release)"
(cd "$root/Benchmarks" && swift build -c release --product courier-http-bench 2>&1 | tail -n 3)
bench="$root/Benchmarks/.build/release/courier-http-bench"

# --- nginx -----------------------------------------------------------------------------------
work="$(mktemp -d /tmp/courier-bench.XXXXXX)"
nginx_pid=""
cleanup() {
    # RAW_DIR=folder keeps the raw figures (results.jsonl, micro/) to rerun Benchmarks/report.py on.
    if [ -n "${RAW_DIR:-}" ]; then
        mkdir -p "$RAW_DIR"
        cp -r "$work/results.jsonl" "$work/micro" "$work/sections" "$work/goals.jsonl" "$RAW_DIR/" 2>/dev/null || true
    fi
    if [ -n "$nginx_pid" ] && kill -0 "$nginx_pid" 2>/dev/null; then
        kill "$nginx_pid"
        wait "$nginx_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/www"
"$bench" write-body "$work/www/catalog.json"
start_bench_nginx "$work" 'location = /status { stub_status; }'
echo "== nginx on $url ($(curl -fsS "$url" | wc -c) bytes)"

# --- HTTP runs ---------------------------------------------------------------------------------
results="$work/results.jsonl"
: >"$results"
for i in $(seq 1 "$requests"); do printf 'url = "%s"\noutput = "/dev/null"\n' "$url"; done >"$work/curl.conf"

# Runs a command and prints its wall time, children's CPU and peak RSS as a JSON line.
measure_child() {  # client concurrency command...
    local client="$1" concurrency="$2"
    shift 2
    python3 - "$client" "$concurrency" "$requests" "$@" <<'PY'
import json, resource, subprocess, sys, time
client, concurrency, requests, command = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
start = time.monotonic()
subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
seconds = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"client": client, "concurrency": concurrency, "requests": requests, "seconds": seconds,
                  "rps": requests / seconds, "cpu_us_per_request": (usage.ru_utime + usage.ru_stime) * 1e6 / requests,
                  "peak_rss_kib": usage.ru_maxrss}))
PY
}

wrk_json() {  # connections
    local rps
    rps="$(wrk -t1 -c"$1" -d5s "$url" | awk '/Requests\/sec/ { print $2 }')"
    echo "{\"client\": \"wrk\", \"concurrency\": $1, \"rps\": $rps}"
}

# nginx's count of the requests it has served (stub_status; the status request included).
served() {
    curl -fsS "http://127.0.0.1:$port/status" | awk '/^ *[0-9]+ +[0-9]+ +[0-9]+/ { print $3 }'
}

# Runs one measurement and appends its JSON line to the results, with the run number, the
# 1-minute load average right after it (the machine may be shared: the report shows the range)
# and how many requests nginx served meanwhile (a check that every counted request was sent).
record() {  # run command...
    local run="$1" before after line load1
    shift
    before="$(served)"
    line="$("$@")"
    after="$(served)"
    load1="$(cut -d" " -f1 /proc/loadavg)"
    echo "$line" | sed "s/^{/{\"run\": $run, \"load1\": $load1, \"served\": $((after - before - 1)), /" >>"$results"
    echo "   $line"
}

clients=(courier-transport courier-e2e courier-service ahc-transport ahc-e2e urlsession-transport urlsession-e2e)
for run in $(seq 1 "$runs"); do
    for concurrency in 1 32; do
        echo "== run $run/$runs, $concurrency in flight"
        for client in "${clients[@]}"; do
            record "$run" "$bench" "$client" --url "$url" --requests "$requests" --concurrency "$concurrency"
        done
        # The same work with a task per request (the way a server's request handlers call a client).
        for client in courier-transport courier-service ahc-transport ahc-e2e; do
            record "$run" "$bench" "$client" --url "$url" --requests "$requests" --concurrency "$concurrency" \
                --driver task
        done
        if [ "$concurrency" -eq 1 ]; then
            record "$run" measure_child curl 1 curl -s --no-progress-meter --config "$work/curl.conf"
        else
            record "$run" measure_child curl "$concurrency" curl -s --no-progress-meter --parallel \
                --parallel-max "$concurrency" --config "$work/curl.conf"
        fi
        record "$run" wrk_json "$concurrency"
    done
    echo "== run $run/$runs, $inflight_big in flight (memory)"
    for client in courier-transport courier-service ahc-transport urlsession-transport; do
        record "$run" "$bench" "$client" --url "$url" --requests "$requests" --concurrency "$inflight_big" \
            --connections "$inflight_big" --warmup 0
    done
done

# --- micro benchmarks --------------------------------------------------------------------------
micro="$work/micro"
mkdir -p "$micro"
if [ -z "${SKIP_MICRO:-}" ]; then
    # The whole suite once per run, so that a burst of load on a shared machine hits one pass,
    # not one benchmark; the report takes the median of the passes' medians. The first pass
    # builds the suite (the plugin's release build).
    for run in $(seq 1 "$runs"); do
        echo "== micro benchmarks (package-benchmark), pass $run/$runs"
        mkdir -p "$micro/run-$run"
        (cd "$root/Benchmarks" && BENCH_URL="$url" BENCH_CACHE_DIR="$work/cache-$run" swift package \
            --allow-writing-to-directory "$micro/run-$run" \
            benchmark --format jmh --path "$micro/run-$run" --no-progress 2>&1 | tail -n 2)
        [ -n "$(find "$micro/run-$run" -name '*.json')" ] || { echo "micro benchmarks failed"; exit 1; }
    done
fi

# --- the other scripts' sections ------------------------------------------------------------
sections="$work/sections"
mkdir -p "$sections"
# Each script's goal checks (Benchmarks/goals.py) add a line here for the goals table.
export GOALS_FILE="$work/goals.jsonl"
: >"$GOALS_FILE"
section() {  # file title command...
    local file="$1" title="$2"
    shift 2
    echo "== $title: $*"
    {
        echo "## $title"
        echo
        echo "\`$*\`, $(date -u '+%Y-%m-%d %H:%M') UTC, commit $(git -C "$root" rev-parse --short HEAD), load average $(cut -d" " -f1-3 /proc/loadavg) at the start."
        echo
        (cd "$root" && "$@" 2>/dev/null)
    } >"$sections/$file" || { echo "   $title failed; its section is left out"; rm -f "$sections/$file"; }
}
if [ -z "${SKIP_SECTIONS:-}" ]; then
    section 10-parked.md "Memory per request parked on a slow server" scripts/parked-memory.sh
    section 20-scaling.md "Scaling: C in flight × body size" scripts/scaling.sh
    section 30-service.md "Service overhead over send" scripts/service-overhead.sh
    section 40-large.md "Large bodies" scripts/large-bodies.sh
    section 50-https.md "HTTPS and HTTP/2" scripts/bench-https.sh
fi

# --- report ------------------------------------------------------------------------------------
finished=$(date +%s)
load_end="$(cut -d" " -f1-3 /proc/loadavg | sed 's| | / |g')"
python3 "$root/Benchmarks/report.py" --results "$results" --micro "$micro" --runs "$runs" \
    --requests "$requests" --inflight "$inflight_big" --seconds $((finished - started)) \
    --body-bytes "$(curl -fsS "$url" | wc -c)" --load-start "$load_start" \
    --load-end "$load_end" --date "$(date -u '+%Y-%m-%d %H:%M')" --sections "$sections" --goals "$GOALS_FILE" \
    --profiles "$root/Benchmarks/profiles.md" \
    ${PREVIOUS:+--previous "$PREVIOUS" --previous-label "${PREVIOUS_LABEL:-the run kept in $PREVIOUS}"} \
    >"$root/Docs/Performance.md"
echo "== wrote Docs/Performance.md in $((finished - started)) s"

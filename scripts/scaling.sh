#!/usr/bin/env bash
# The scaling table (issue 22 item 8): requests per second of Courier `HTTPClient.send`,
# AsyncHTTPClient and `curl --parallel` for C in flight × response bodies of 1 KB, 100 KB and
# 1 MB, from nginx on loopback, with Courier's peak RSS and the most file descriptors it held.
#
#   scripts/scaling.sh                        # 3 interleaved rounds, task-per-request driver
#   ROUNDS=5 CONCURRENCIES="1 32 1000" BODIES="1k 1m" scripts/scaling.sh
#   DRIVER=worker scripts/scaling.sh          # long-lived workers instead of a task per request
#
# Each client is its own process (`courier-http-bench CLIENT`, one per cell and round); C
# connections are allowed (`maxConnectionsPerHost` and its equivalents) and each run warms up
# C requests first. curl's `--parallel-max` stops at 300 (curl 7.88), so its C=1000 cells run
# 300 in flight. Cells take turns within a round, and clients within a cell; each figure is the
# median over the rounds with min–max, and a ratio the median of the per-round ratios.
set -euo pipefail
. "$(dirname "$0")/bench-nginx.sh"

root="$(cd "$(dirname "$0")/.." && pwd)"
rounds="${ROUNDS:-3}"
concurrencies="${CONCURRENCIES:-1 8 32 256 1000}"
bodies="${BODIES:-1k 100k 1m}"
driver="${DRIVER:-task}"
load_start="$(cut -d" " -f1-3 /proc/loadavg)"
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { echo "needs nginx (scripts/benchmark.sh installs it)"; exit 1; }
command -v curl >/dev/null || { echo "needs curl"; exit 1; }

bench_setup courier-http-bench scaling
ulimit -n 16384

mkdir -p "$work/www"
"$bench" write-body "$work/www/catalog.json" >/dev/null
head -c 102400 /dev/urandom >"$work/www/body-100k"
head -c 1048576 /dev/urandom >"$work/www/body-1m"
start_bench_nginx "$work"
base="http://127.0.0.1:$port"

path_of() { case "$1" in 1k) echo catalog.json ;; 100k) echo body-100k ;; 1m) echo body-1m ;; esac; }
bytes_of() { case "$1" in 1k) stat -c %s "$work/www/catalog.json" ;; 100k) echo 102400 ;; 1m) echo 1048576 ;; esac; }
# Requests per cell: a few seconds of work at most for each client.
requests_of() {  # body concurrency
    case "$1" in
        1k) [ "$2" -le 1 ] && echo 3000 || echo 10000 ;;
        100k) [ "$2" -le 1 ] && echo 1500 || echo 3000 ;;
        1m) [ "$2" -le 1 ] && echo 300 || echo 1000 ;;
    esac
}

results="$work/results.jsonl"
: >"$results"
for round in $(seq 1 "$rounds"); do
    echo "== round $round/$rounds (load $(cut -d" " -f1 /proc/loadavg))" >&2
    for body in $bodies; do
        url="$base/$(path_of "$body")"
        bytes="$(bytes_of "$body")"
        for c in $concurrencies; do
            n="$(requests_of "$body" "$c")"
            [ "$n" -ge "$c" ] || n="$c"
            for client in courier-transport ahc-transport; do
                line="$("$bench" "$client" --url "$url" --requests "$n" --concurrency "$c" --connections "$c" \
                    --warmup "$c" --body-bytes "$bytes" --driver "$driver" --sample-fds yes)"
                echo "{\"round\": $round, \"body\": \"$body\", \"c\": $c, \"result\": $line}" >>"$results"
            done
            parallel=$((c > 300 ? 300 : c))
            for _ in $(seq 1 "$n"); do printf 'url = "%s"\noutput = "/dev/null"\n' "$url"; done >"$work/curl.conf"
            start="$(date +%s.%N)"
            if [ "$c" -le 1 ]; then
                curl -fsS -K "$work/curl.conf"
            else
                curl -fsS --no-progress-meter --parallel --parallel-immediate --parallel-max "$parallel" -K "$work/curl.conf"
            fi
            end="$(date +%s.%N)"
            rps="$(python3 -c "print($n / ($end - $start))")"
            echo "{\"round\": $round, \"body\": \"$body\", \"c\": $c, \"result\": {\"client\": \"curl\", \"rps\": $rps}}" \
                >>"$results"
        done
    done
done

PYTHONPATH="$root/Benchmarks" python3 - "$results" "$driver" "$load_start" "$(cut -d" " -f1-3 /proc/loadavg)" <<'PY'
import json, statistics, sys
import goals
path, driver, load_start, load_end = sys.argv[1:5]
cells = {}
for line in open(path):
    row = json.loads(line)
    cells.setdefault((row["body"], row["c"]), {}).setdefault(row["result"]["client"], {})[row["round"]] = row["result"]
def span(values, digits=0):
    return f"{statistics.median(values):,.{digits}f} [{min(values):,.{digits}f}–{max(values):,.{digits}f}]"
def ratio(cell, a, b):
    rounds = sorted(set(cell[a]) & set(cell[b]))
    values = [cell[a][r]["rps"] / cell[b][r]["rps"] for r in rounds]
    return f"{statistics.median(values):.2f}× [{min(values):.2f}–{max(values):.2f}]"
print(f"Driver: {driver}. Load average {load_start} at the start, {load_end} at the end.")
print()
print("| body | C | Courier req/s | AHC req/s | curl req/s | Courier ÷ curl | Courier ÷ AHC | Courier peak RSS MiB | Courier max fds | AHC peak RSS MiB |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
order = {"1k": 0, "100k": 1, "1m": 2}
for (body, c), cell in sorted(cells.items(), key=lambda item: (order[item[0][0]], item[0][1])):
    courier, ahc, curl = cell["courier-transport"], cell["ahc-transport"], cell["curl"]
    label = f"{c}" if c <= 300 else f"{c} (curl 300)"
    print(f"| {body} | {label} | {span([r['rps'] for r in courier.values()])} | {span([r['rps'] for r in ahc.values()])} "
          f"| {span([r['rps'] for r in curl.values()])} | {ratio(cell, 'courier-transport', 'curl')} "
          f"| {ratio(cell, 'courier-transport', 'ahc-transport')} "
          f"| {statistics.median(r['peak_rss_kib'] for r in courier.values()) / 1024:.1f} "
          f"| {max(r.get('max_fds', -1) for r in courier.values())} "
          f"| {statistics.median(r['peak_rss_kib'] for r in ahc.values()) / 1024:.1f} |")
print()
# Bounded descriptors: at most one socket per allowed connection, plus the process's own (the
# loop's wakeup pair, stdio, the runtime's): 64 over C.
for (body, c), cell in sorted(cells.items(), key=lambda item: (order[item[0][0]], item[0][1])):
    fds = [r["max_fds"] for r in cell["courier-transport"].values() if r.get("max_fds", -1) >= 0]
    if c == max(key[1] for key in cells) and fds:
        goals.check(f"8. Descriptors bounded, {c} in flight, {body} bodies", "`HTTPClient.send`, most open",
                    fds, c + 64, higher=False, unit=" fds")
PY

#!/usr/bin/env bash
# Memory per in-flight request with the requests parked on a slow server (issue 22, item 4).
#
#   scripts/parked-memory.sh                      # 1,000 parked, 5 interleaved rounds
#   PARKED=2000 ROUNDS=7 scripts/parked-memory.sh
#   CLIENTS="courier-transport courier-service" scripts/parked-memory.sh
#
# `Benchmarks/parked_server.py` answers no request until PARKED of them are waiting at once, so
# a client's peak resident set is taken with PARKED requests sent and unanswered, one kept
# HTTP/1.1 connection each. Every client runs as its own process (`courier-http-bench CLIENT`)
# twice per round: PARKED requests with PARKED in flight, and 1 with 1 (a second server that
# holds nothing). Extra KiB per in-flight request = (peak RSS with PARKED − peak RSS with 1) ÷
# (PARKED − 1); medians over the rounds, with min–max.
#
# `caller-only` is the harness with no client: a task per request, parked on an actor. Its
# figure is the caller's own cost (a task and its frames), present under every client; the
# "net" column subtracts it, round by round.
set -euo pipefail
. "$(dirname "$0")/bench-nginx.sh"

root="$(cd "$(dirname "$0")/.." && pwd)"
parked="${PARKED:-1000}"
rounds="${ROUNDS:-5}"
clients="${CLIENTS:-caller-only courier-transport courier-service ahc-transport}"
load_start="$(cut -d" " -f1-3 /proc/loadavg)"
command -v python3 >/dev/null || { echo "needs python3"; exit 1; }

bench_setup courier-http-bench parked
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    bench_cleanup
}
trap cleanup EXIT

ulimit -n "$((parked * 2 + 1024))"
"$bench" write-body "$work/catalog.json" >/dev/null
start_server() {  # name hold
    python3 "$root/Benchmarks/parked_server.py" "$work/$1.port" "$2" "$work/catalog.json" &
    pids+=($!)
}
start_server many "$parked"
start_server one 1
for name in many one; do
    # The server writes its port file once it listens (startup, not a measurement wait).
    for _ in $(seq 1 100); do [ -s "$work/$name.port" ] && break; sleep 0.1; done
    [ -s "$work/$name.port" ] || { echo "parked_server.py did not start"; exit 1; }
done
many_url="http://127.0.0.1:$(cat "$work/many.port")/catalog.json"
one_url="http://127.0.0.1:$(cat "$work/one.port")/catalog.json"

results="$work/results.jsonl"
: >"$results"
for round in $(seq 1 "$rounds"); do
    echo "== round $round/$rounds (load $(cut -d" " -f1 /proc/loadavg))" >&2
    for client in $clients; do
        for n in 1 "$parked"; do
            url="$one_url"
            [ "$n" = 1 ] || url="$many_url"
            line="$("$bench" "$client" --url "$url" --requests "$n" --concurrency "$n" --connections "$n" \
                --warmup 0)"
            echo "{\"round\": $round, \"n\": $n, \"result\": $line}" >>"$results"
        done
    done
done

PYTHONPATH="$root/Benchmarks" python3 - "$results" "$parked" "$load_start" "$(cut -d" " -f1-3 /proc/loadavg)" <<'PY'
import json, statistics, sys
import goals
path, parked, load_start, load_end = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
peaks = {}
for line in open(path):
    row = json.loads(line)
    peaks[(row["result"]["client"], row["round"], row["n"])] = row["result"]["peak_rss_kib"]
clients = list(dict.fromkeys(key[0] for key in peaks))
rounds = sorted({key[1] for key in peaks})
def per_request(client, r):
    return (peaks[(client, r, parked)] - peaks[(client, r, 1)]) / (parked - 1)
def fmt(values):
    return f"{statistics.median(values):.1f} [{min(values):.1f}–{max(values):.1f}]"
print(f"{parked} requests parked, {len(rounds)} rounds; load average {load_start} at the start, {load_end} at the end")
print()
print("| client | peak RSS MiB, 1 in flight | peak RSS MiB, parked | KiB per in-flight request | net of the caller |")
print("| --- | ---: | ---: | ---: | ---: |")
for client in clients:
    one = [peaks[(client, r, 1)] / 1024 for r in rounds]
    many = [peaks[(client, r, parked)] / 1024 for r in rounds]
    gross = [per_request(client, r) for r in rounds]
    net = [per_request(client, r) - per_request("caller-only", r) for r in rounds] if "caller-only" in clients else None
    net_text = "—" if client == "caller-only" or net is None else fmt(net)
    print(f"| {client} | {statistics.median(one):.1f} | {statistics.median(many):.1f} | {fmt(gross)} | {net_text} |")
print()
for client, compared, target in (("courier-transport", "`HTTPClient.send`", 12), ("courier-service", "`APIService.get`", 16)):
    if client in clients:
        goals.check(f"4. Memory per request parked ({parked:,} on a slow server)", f"{compared}, KiB per request",
                    [per_request(client, r) for r in rounds], target, higher=False, unit=" KiB")
PY

#!/usr/bin/env bash
# Measures what the service layer costs per call over the client (issue 17): `APIService.get`
# → model (`courier-service`) against `HTTPClient.send` + the same JSON decode
# (`courier-e2e`) on the same work, and both against `curl`. Prints Markdown tables.
#
#   scripts/service-overhead.sh                 # instruction counts (callgrind) + CPU time
#   ROUNDS=7 REQUESTS=20000 scripts/service-overhead.sh
#   SKIP_CALLGRIND=1 scripts/service-overhead.sh   # CPU time only
#   SKIP_RUSAGE=1 scripts/service-overhead.sh      # instruction counts only
#   KERNEL=1 SKIP_CALLGRIND=1 SKIP_RUSAGE=1 scripts/service-overhead.sh
#       # system calls, context switches, migrations, user and system CPU per request
#   SERVICE_CLIENT=courier-service-default scripts/service-overhead.sh
#       # the service rows measure the call with the default options (de-duplication of
#       # identical GETs in flight on: compare at 1 in flight only) instead of the opt-out
#   PROFILE_DIR=/tmp/cg scripts/service-overhead.sh  # keep the callgrind files, print the
#                                                     # functions whose cost differs most
#   BEFORE=/tmp/old/courier-service-bench SKIP_CALLGRIND=1 scripts/service-overhead.sh
#       # CPU time of another build too, in the same rounds (rows `before …`): a before/after
#       # comparison that is fair on a loaded machine. Make the other build with
#       # `git worktree add /tmp/old COMMIT` and `swift build -c release --product
#       # courier-service-bench` in its Benchmarks/.
#
# Why two methods: on a shared machine wall-clock and even CPU-time figures move with the
# other processes (cache and frequency effects, scheduling), while the number of instructions
# a process executes for the same work barely does.
#
# - Instructions per request: `valgrind --tool=callgrind` counts every instruction of the
#   process (all threads: the caller's tasks, the curl thread). Each client runs twice, with
#   CG_SMALL and CG_LARGE measured requests after the same warm-up; (Ir(large) − Ir(small)) ÷
#   (large − small) is the cost of one request, without start-up, warm-up and shutdown.
# - CPU per request: the bench's own getrusage (user + system) over REQUESTS measured
#   requests after its warm-up, ROUNDS interleaved rounds (each client once per round, in
#   turn), medians; curl's figure is its whole child process (getrusage of the child), start-up
#   and the parsing of a REQUESTS-URL config included, as in scripts/benchmark.sh.
#
# nginx serves the 972-byte JSON body on a free loopback port with the configuration of
# scripts/benchmark.sh. `courier-service` opts out of the de-duplication of identical GETs in
# flight, so every call is one HTTP request, as for the other clients.
set -euo pipefail
. "$(dirname "$0")/bench-nginx.sh"

root="$(cd "$(dirname "$0")/.." && pwd)"
rounds="${ROUNDS:-5}"
requests="${REQUESTS:-10000}"
cg_small="${CG_SMALL:-300}"
cg_large="${CG_LARGE:-1800}"
concurrencies="${CONCURRENCY:-1 32}"
load_start="$(cut -d" " -f1-3 /proc/loadavg)"

command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { echo "needs nginx (scripts/benchmark.sh installs it)"; exit 1; }
command -v curl >/dev/null || { echo "needs curl"; exit 1; }
command -v python3 >/dev/null || { echo "needs python3"; exit 1; }
if [ -z "${SKIP_CALLGRIND:-}" ] && ! command -v valgrind >/dev/null; then
    echo "needs valgrind (apt-get install valgrind), or SKIP_CALLGRIND=1"
    exit 1
fi

# courier-service-bench runs the same Courier clients as courier-http-bench (which also builds
# AsyncHTTPClient and swift-protobuf); BENCH_PRODUCT=courier-http-bench measures with that one.
product="${BENCH_PRODUCT:-courier-service-bench}"
if [ -z "${SKIP_BUILD:-}" ]; then
    echo "== building $product (release)" >&2
    (cd "$root/Benchmarks" && swift build -c release --product "$product" 2>&1 | tail -n 1) >&2
fi
bench="${BENCH:-$root/Benchmarks/.build/release/$product}"  # BENCH=path measures another build
# The bench's client for the rows labelled `courier-service` (see SERVICE_CLIENT above).
service_client="${SERVICE_CLIENT:-courier-service}"
mode() { if [ "$1" = courier-service ]; then echo "$service_client"; else echo "$1"; fi; }

work="$(mktemp -d /tmp/courier-overhead.XXXXXX)"
nginx_pid=""
cleanup() {
    if [ -n "$nginx_pid" ] && kill -0 "$nginx_pid" 2>/dev/null; then
        kill "$nginx_pid"
        wait "$nginx_pid" 2>/dev/null || true
    fi
    if [ -n "${PROFILE_DIR:-}" ]; then
        mkdir -p "$PROFILE_DIR"
        cp "$work"/callgrind.* "$PROFILE_DIR/" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/www"
"$bench" write-body "$work/www/catalog.json" >/dev/null
start_bench_nginx "$work"

# valgrind 3.19 cannot read the DWARF 5 debug info Swift 6 emits: callgrind runs a copy without
# it (the symbol table, and so the function names, stay).
objcopy --strip-debug "$bench" "$work/bench-nodebug"

results="$work/results.jsonl"
: >"$results"

# --- instructions (callgrind) -------------------------------------------------------------------
if [ -z "${SKIP_CALLGRIND:-}" ]; then
    for concurrency in $concurrencies; do
        for client in courier-e2e courier-service; do
            for n in "$cg_small" "$cg_large"; do
                echo "== callgrind $client, $concurrency in flight, $n requests" >&2
                out="$work/callgrind.$client.c$concurrency.n$n"
                valgrind --tool=callgrind --callgrind-out-file="$out" --dump-instr=no \
                    "$work/bench-nodebug" "$(mode "$client")" --url "$url" --requests "$n" --concurrency "$concurrency" \
                    --warmup 200 >/dev/null 2>"$work/valgrind.log" \
                    || { tail -n 20 "$work/valgrind.log"; exit 1; }
                ir="$(awk '/^(summary|totals):/ { print $2; exit }' "$out")"
                echo "{\"kind\": \"ir\", \"client\": \"$client\", \"concurrency\": $concurrency, \"requests\": $n, \"ir\": $ir}" >>"$results"
            done
        done
    done
fi

# --- CPU time (getrusage) -----------------------------------------------------------------------
for i in $(seq 1 "$requests"); do printf 'url = "%s"\noutput = "/dev/null"\n' "$url"; done >"$work/curl.conf"
curl_cpu() { # concurrency
    python3 - "$1" "$requests" "$work/curl.conf" <<'PY'
import json, resource, subprocess, sys
concurrency, requests, config = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
command = ["curl", "-s", "--no-progress-meter", "--config", config]
if concurrency > 1:
    command[1:1] = ["--parallel", "--parallel-max", str(concurrency)]
subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"client": "curl", "cpu_us_per_request": (usage.ru_utime + usage.ru_stime) * 1e6 / requests}))
PY
}
if [ -z "${SKIP_RUSAGE:-}" ]; then
    for round in $(seq 1 "$rounds"); do
        for concurrency in $concurrencies; do
            echo "== CPU round $round/$rounds, $concurrency in flight" >&2
            clients=(courier-e2e courier-service curl)
            # The other build goes after this one in odd rounds and before it in even ones, so that
            # an order effect cannot hide in a fixed position (27 Nov 2026, 1 in flight: the e2e
            # path of two builds 500 instructions apart read 180.3 vs 173.9 µs in fixed order, ranges
            # overlapping; alternated whole-process pairs gave 1.005× [0.98–1.02]).
            if [ -n "${BEFORE:-}" ]; then
                if [ $((round % 2)) -eq 1 ]; then
                    clients+=("before courier-e2e" "before courier-service")
                else
                    clients=("before courier-e2e" "before courier-service" "${clients[@]}")
                fi
            fi
            for client in "${clients[@]}"; do
                if [ "$client" = curl ]; then
                    line="$(curl_cpu "$concurrency")"
                elif [ "${client#before }" != "$client" ]; then
                    line="$("$BEFORE" "$(mode "${client#before }")" --url "$url" --requests "$requests" --concurrency "$concurrency")"
                else
                    line="$("$bench" "$(mode "$client")" --url "$url" --requests "$requests" --concurrency "$concurrency")"
                fi
                load1="$(cut -d" " -f1 /proc/loadavg)"
                echo "$line" | python3 -c "
import json, sys
line = json.loads(sys.stdin.read())
print(json.dumps({'kind': 'cpu', 'round': $round, 'client': '$client', 'concurrency': $concurrency,
                  'cpu': line['cpu_us_per_request'], 'load1': $load1}))" >>"$results"
            done
        done
    done
fi

# --- kernel work (strace, perf, getrusage) -------------------------------------------------------
# KERNEL=1: what each path asks of the kernel per request, as the difference of two runs
# (KERNEL_SMALL and KERNEL_LARGE measured requests after the same warm-up, KERNEL_ROUNDS rounds,
# medians): system calls by name (`strace -f -c`, a run of its own: ptrace slows every call),
# then context switches, CPU migrations (`perf stat`) and user and system CPU time (getrusage of
# the process) in runs without strace.
if [ -n "${KERNEL:-}" ]; then
    command -v strace >/dev/null && command -v perf >/dev/null || { echo "KERNEL=1 needs strace and perf"; exit 1; }
    k_small="${KERNEL_SMALL:-2000}"
    k_large="${KERNEL_LARGE:-10000}"
    for round in $(seq 1 "${KERNEL_ROUNDS:-3}"); do
        for concurrency in $concurrencies; do
            for client in courier-e2e courier-service; do
                for n in "$k_small" "$k_large"; do
                    echo "== kernel round $round, $client, $concurrency in flight, $n requests" >&2
                    args=("$(mode "$client")" --url "$url" --requests "$n" --concurrency "$concurrency" --warmup 200)
                    strace -f -c -o "$work/strace.out" "$bench" "${args[@]}" >/dev/null
                    python3 - "$work/strace.out" "$work/perf.out" "$round" "$client" "$concurrency" "$n" \
                        "$bench" "${args[@]}" >>"$results" <<'PY'
import json, resource, subprocess, sys
strace_out, perf_out, round_, client, concurrency, n = sys.argv[1:7]
command = sys.argv[7:]
calls = {}
for line in open(strace_out):
    fields = line.split()
    if len(fields) >= 5 and fields[0][0].isdigit() and fields[-1] != "total":
        calls[fields[-1]] = int(fields[3])
subprocess.run(["perf", "stat", "-x", ",", "-o", perf_out, "-e", "context-switches,cpu-migrations", "--"] + command,
               check=True, stdout=subprocess.DEVNULL)
perf = {}
for line in open(perf_out):
    fields = line.strip().split(",")
    if len(fields) > 2 and fields[0].replace(".", "").isdigit():
        perf[fields[2]] = float(fields[0])
usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the perf run (perf and the bench)
print(json.dumps({"kind": "kernel", "round": int(round_), "client": client, "concurrency": int(concurrency),
                  "requests": int(n), "syscalls": calls, "switches": perf.get("context-switches", 0),
                  "migrations": perf.get("cpu-migrations", 0), "user": usage.ru_utime, "sys": usage.ru_stime}))
PY
                done
            done
        done
    done
fi

load_end="$(cut -d" " -f1-3 /proc/loadavg)"
commit="commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- Sources Benchmarks || echo '+changes')"
[ -n "${BENCH:-}" ] && commit="binary $BENCH"
PYTHONPATH="$root/Benchmarks" python3 - "$results" "$cg_small" "$cg_large" "$requests" "$rounds" "$load_start" "$load_end" "$commit" <<'PY'
import json, os, statistics, subprocess, sys
import goals
path, small, large, requests, rounds, load_start, load_end, commit = sys.argv[1:9]
small, large = int(small), int(large)
rows = [json.loads(line) for line in open(path)]
cpu_model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"{commit}; {cpu_model}, {os.cpu_count()} logical cores; "
      f"load average (1/5/15 min) {load_start} at the start, {load_end} at the end")
print()
ir = {(r["client"], r["concurrency"], r["requests"]): r["ir"] for r in rows if r["kind"] == "ir"}
if ir:
    print(f"Instructions per request (callgrind, whole process; ({large} − {small} requests) difference):")
    print()
    print("| in flight | `send` + decode | `APIService.get` | service − send | ratio |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for c in sorted({k[1] for k in ir}):
        per = {}
        for client in ("courier-e2e", "courier-service"):
            per[client] = (ir[(client, c, large)] - ir[(client, c, small)]) / (large - small)
        e2e, service = per["courier-e2e"], per["courier-service"]
        print(f"| {c} | {e2e:,.0f} | {service:,.0f} | {service - e2e:+,.0f} | {service / e2e:.3f}× |")
    print()
cpu = [r for r in rows if r["kind"] == "cpu"]
if cpu:
    loads = sorted(r["load1"] for r in cpu)
    print(f"CPU µs per request (getrusage, {requests} requests, median of {rounds} interleaved rounds "
          f"[min–max]; 1-minute load after each run {loads[0]:.2f}–{loads[-1]:.2f}):")
    print()
    print("| in flight | `send` + decode | `APIService.get` | curl | service − send | service ÷ curl | send ÷ curl |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    overheads = {}  # in flight → the service − send difference of each round, for the goal check
    for c in sorted({r["concurrency"] for r in cpu}):
        def values(client):
            return [r["cpu"] for r in cpu if r["client"] == client and r["concurrency"] == c]
        def fmt(client):
            v = values(client)
            return f"{statistics.median(v):.1f} [{min(v):.1f}–{max(v):.1f}]"
        by_round = {}
        for r in cpu:
            if r["concurrency"] == c:
                by_round.setdefault(r["round"], {})[r["client"]] = r["cpu"]
        diffs = [v["courier-service"] - v["courier-e2e"] for v in by_round.values()]
        overheads[c] = diffs
        svc_curl = [v["courier-service"] / v["curl"] for v in by_round.values()]
        e2e_curl = [v["courier-e2e"] / v["curl"] for v in by_round.values()]
        print(f"| {c} | {fmt('courier-e2e')} | {fmt('courier-service')} | {fmt('curl')} "
              f"| {statistics.median(diffs):+.1f} [{min(diffs):+.1f}–{max(diffs):+.1f}] "
              f"| {statistics.median(svc_curl):.2f}× | {statistics.median(e2e_curl):.2f}× |")
        if values("before courier-e2e"):
            diffs = [v["before courier-service"] - v["before courier-e2e"] for v in by_round.values()]
            svc_curl = [v["before courier-service"] / v["curl"] for v in by_round.values()]
            e2e_curl = [v["before courier-e2e"] / v["curl"] for v in by_round.values()]
            print(f"| {c}, before | {fmt('before courier-e2e')} | {fmt('before courier-service')} | "
                  f"| {statistics.median(diffs):+.1f} [{min(diffs):+.1f}–{max(diffs):+.1f}] "
                  f"| {statistics.median(svc_curl):.2f}× | {statistics.median(e2e_curl):.2f}× |")
    print()
    print("Differences and ratios are per round (same round, same load), then the median over rounds.")
    print()
    for c, diffs in overheads.items():
        goals.check(f"3. Service overhead, {c} in flight: CPU per call", "`APIService.get` − (`send` + decode)",
                    diffs, 2.0, higher=False, unit=" µs")
kernel = [r for r in rows if r["kind"] == "kernel"]
if kernel:
    sizes = sorted({r["requests"] for r in kernel})
    small, large = sizes[0], sizes[-1]
    print()
    print(f"Kernel work per request (({large} − {small} requests) difference, median of "
          f"{len({r['round'] for r in kernel})} rounds [min–max]; system calls by `strace -f -c`, the "
          "rest from runs without strace):")
    print()
    names = set()
    for r in kernel:
        names |= set(r["syscalls"])
    def per_request(client, c, value):
        out = []
        for round_ in sorted({r["round"] for r in kernel}):
            pair = {r["requests"]: r for r in kernel
                    if r["client"] == client and r["concurrency"] == c and r["round"] == round_}
            if small in pair and large in pair:
                out.append((value(pair[large]) - value(pair[small])) / (large - small))
        return out
    def fmt(values, scale=1.0, digits=2):
        if not values:
            return "–"
        v = [x * scale for x in values]
        return f"{statistics.median(v):.{digits}f} [{min(v):.{digits}f}–{max(v):.{digits}f}]"
    top = sorted(names, key=lambda name: -max(
        [abs(x) for c in {r["concurrency"] for r in kernel} for client in ("courier-e2e", "courier-service")
         for x in per_request(client, c, lambda r: r["syscalls"].get(name, 0))] or [0]))[:6]
    print("| in flight | path | system calls | " + " | ".join(f"`{name}`" for name in top)
          + " | context switches | migrations | user µs | sys µs |")
    print("| ---: | --- | ---: | " + " | ".join("---:" for _ in top) + " | ---: | ---: | ---: | ---: |")
    for c in sorted({r["concurrency"] for r in kernel}):
        for client in ("courier-e2e", "courier-service"):
            cells = [fmt(per_request(client, c, lambda r: sum(r["syscalls"].values())))]
            cells += [fmt(per_request(client, c, lambda r, name=name: r["syscalls"].get(name, 0))) for name in top]
            cells += [fmt(per_request(client, c, lambda r: r["switches"])),
                      fmt(per_request(client, c, lambda r: r["migrations"]), digits=3),
                      fmt(per_request(client, c, lambda r: r["user"]), 1e6, 1),
                      fmt(per_request(client, c, lambda r: r["sys"]), 1e6, 1)]
            label = "`send` + decode" if client == "courier-e2e" else "`APIService.get`"
            print(f"| {c} | {label} | " + " | ".join(cells) + " |")
PY

# --- where the difference goes ------------------------------------------------------------------
if [ -n "${PROFILE_DIR:-}" ] && [ -z "${SKIP_CALLGRIND:-}" ]; then
    for concurrency in $concurrencies; do
        python3 "$root/Benchmarks/callgrind-diff.py" \
            "$work/callgrind.courier-e2e.c$concurrency.n$cg_small" "$work/callgrind.courier-e2e.c$concurrency.n$cg_large" \
            "$work/callgrind.courier-service.c$concurrency.n$cg_small" "$work/callgrind.courier-service.c$concurrency.n$cg_large" \
            --requests $((cg_large - cg_small)) --title "$concurrency in flight"
    done
fi

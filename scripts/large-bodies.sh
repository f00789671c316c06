#!/usr/bin/env bash
# Peak resident memory of large downloads and uploads (issue 21 item 7): each of
# `download`, `upload-file` and `upload-stream` moves 64 MiB and 1 GiB through nginx on
# loopback, one transfer per process, ROUNDS times; prints the median seconds and the peak RSS
# (VmHWM) per case. Flat memory: the 1 GiB peak is no higher than the 64 MiB peak.
#
#   scripts/large-bodies.sh            # ROUNDS=3
#   ROUNDS=5 SIZES="67108864 1073741824" scripts/large-bodies.sh
#   SKIP_MEMORY=1 scripts/large-bodies.sh   # the throughput table only
#
# Then throughput against curl (issue 22 item 7): a THROUGHPUT_SIZE body (100 MiB) downloaded
# into a file on tmpfs (/dev/shm, so that the fsync Courier's `download` does before its rename
# costs nothing and curl, which does none, is not favoured) and uploaded from a file, Courier
# and `curl` taking turns in each of THROUGHPUT_ROUNDS rounds. Each tool's own clock (the
# bench's `seconds`, curl's `time_total`: neither counts process start-up); the ratio is
# curl's seconds ÷ Courier's, round by round, then the median with min–max.
#
# nginx serves sparse files from a temporary folder and discards uploads (`return 204` with
# `client_max_body_size 0`: nginx reads and drops the body). The bench checks that the
# last progress value is the whole body and the status 2xx. The downloaded file is written to
# the temporary folder and deleted after each run.
set -euo pipefail
. "$(dirname "$0")/bench-nginx.sh"

root="$(cd "$(dirname "$0")/.." && pwd)"
rounds="${ROUNDS:-3}"
sizes="${SIZES:-67108864 1073741824}"
work="$(mktemp -d /tmp/courier-large-bodies.XXXXXX)"
nginx_pid=""
cleanup() {
    [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/www"
echo '{}' >"$work/www/catalog.json"
for size in $sizes; do truncate -s "$size" "$work/www/body-$size"; done
start_bench_nginx "$work" "location = /upload { client_max_body_size 0; return 204; }"
base="http://127.0.0.1:$port"

(cd "$root/Benchmarks" && swift build -c release --product courier-large-body-bench >/dev/null)
bench="$root/Benchmarks/.build/release/courier-large-body-bench"

echo "load: $(uptime | sed 's/.*load average: //')"
echo
if [ -z "${SKIP_MEMORY:-}" ]; then
echo "| Case | Body | Seconds (median of $rounds) | Peak RSS KiB (min–max) | RSS before KiB |"
echo "|---|---|---|---|---|"
for mode in download upload-file upload-stream; do
    for size in $sizes; do
        seconds=() peaks=() befores=()
        for _ in $(seq 1 "$rounds"); do
            case "$mode" in
                download) line="$("$bench" download --url "$base/body-$size" --bytes "$size" --file "$work/out")" ;;
                upload-file) line="$("$bench" upload-file --url "$base/upload" --bytes "$size" --file "$work/www/body-$size")" ;;
                upload-stream) line="$("$bench" upload-stream --url "$base/upload" --bytes "$size")" ;;
            esac
            seconds+=("$(sed -E 's/.*seconds=([0-9.]+).*/\1/' <<<"$line")")
            peaks+=("$(sed -E 's/.*peak_rss_kib=([0-9]+).*/\1/' <<<"$line")")
            befores+=("$(sed -E 's/.*rss_before_kib=([0-9]+).*/\1/' <<<"$line")")
        done
        median="$(printf '%s\n' "${seconds[@]}" | sort -n | sed -n "$(((rounds + 1) / 2))p")"
        low="$(printf '%s\n' "${peaks[@]}" | sort -n | head -1)"
        high="$(printf '%s\n' "${peaks[@]}" | sort -n | tail -1)"
        before="$(printf '%s\n' "${befores[@]}" | sort -n | tail -1)"
        echo "| $mode | $((size >> 20)) MiB | $median | $low–$high | $before |"
    done
done
echo
fi

# --- Throughput against curl -----------------------------------------------------------------
size="${THROUGHPUT_SIZE:-104857600}"
throughput_rounds="${THROUGHPUT_ROUNDS:-9}"
truncate -s "$size" "$work/www/body-$size"
shm="$(mktemp -d /dev/shm/courier-large-bodies.XXXXXX)"
trap 'rm -rf "$shm"; cleanup' EXIT
seconds_of() { sed -E 's/.*seconds=([0-9.]+).*/\1/'; }
: >"$work/throughput"
for round in $(seq 1 "$throughput_rounds"); do
    courier_down="$("$bench" download --url "$base/body-$size" --bytes "$size" --file "$shm/out" | seconds_of)"
    curl_down="$(curl -fsS -o "$shm/out" -w '%{time_total}' "$base/body-$size")"
    rm -f "$shm/out"
    courier_up="$("$bench" upload-file --url "$base/upload" --bytes "$size" --file "$work/www/body-$size" | seconds_of)"
    curl_up="$(curl -fsS -o /dev/null -w '%{time_total}' -T "$work/www/body-$size" "$base/upload")"
    echo "$round $courier_down $curl_down $courier_up $curl_up" >>"$work/throughput"
done
PYTHONPATH="$root/Benchmarks" python3 - "$work/throughput" "$size" <<'PY'
import statistics, sys
import goals
rows = [list(map(float, line.split()[1:])) for line in open(sys.argv[1])]
size = int(sys.argv[2])
def span(values): return f"{statistics.median(values):.3f} [{min(values):.3f}–{max(values):.3f}]"
print(f"Throughput, {size >> 20} MiB, {len(rows)} rounds (seconds: median [min–max]; ratio = curl ÷ Courier per round)")
print()
print("| direction | Courier s | curl s | Courier MB/s (median) | curl MB/s (median) | Courier ÷ curl throughput |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for name, courier, curl in (("download", 0, 1), ("upload (file)", 2, 3)):
    c = [row[courier] for row in rows]
    k = [row[curl] for row in rows]
    ratios = [b / a for a, b in zip(c, k)]
    print(f"| {name} | {span(c)} | {span(k)} | {size / statistics.median(c) / 1e6:.0f} | {size / statistics.median(k) / 1e6:.0f} | {statistics.median(ratios):.2f}× [{min(ratios):.2f}–{max(ratios):.2f}] |")
print()
for name, courier, curl in (("download", 0, 1), ("upload (file)", 2, 3)):
    goals.check(f"7. Large bodies, {size >> 20} MiB {name}: throughput", "Courier vs `curl`",
                [row[curl] / row[courier] for row in rows], 0.9)
PY
echo
echo "load after: $(uptime | sed 's/.*load average: //')"

#!/usr/bin/env bash
# Peak resident memory of large downloads and uploads (issue 21 item 7): each of
# `download`, `upload-file` and `upload-stream` moves 64 MiB and 1 GiB through nginx on
# loopback, one transfer per process, ROUNDS times; prints the median seconds and the peak RSS
# (VmHWM) per case. Flat memory: the 1 GiB peak is no higher than the 64 MiB peak.
#
#   scripts/large-bodies.sh            # ROUNDS=3
#   ROUNDS=5 SIZES="67108864 1073741824" scripts/large-bodies.sh
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
echo "load after: $(uptime | sed 's/.*load average: //')"

#!/usr/bin/env bash
# Fails when code outside Sources/CourierLocking uses a lock other than LockedValue.
#
# ThreadSanitizer cannot see Synchronization.Mutex hand a contended lock over and then reports
# races that are not there; LockedValue is the same Mutex with the annotations TSan needs. One
# lock type for the whole project keeps the ThreadSanitizer run deterministic by construction.
set -euo pipefail
cd "$(dirname "$0")/.."
pattern='\bMutex *(<|\()|\bNSLock\b|\bNSRecursiveLock\b|pthread_mutex_(lock|init)|os_unfair_lock'
dirs=(Sources Tests)
for extra in Benchmarks/Sources Benchmarks/Benchmarks Fuzz/Sources; do [ -d "$extra" ] && dirs+=("$extra"); done
if hits=$(grep -rnE --include='*.swift' "$pattern" "${dirs[@]}" | grep -v '^Sources/CourierLocking/LockedValue.swift:' \
    | grep -vE '^[^:]+:[0-9]+:\s*//'); then
  echo "$hits" >&2
  echo "check-locks: use LockedValue (Sources/CourierLocking) instead of a direct lock" >&2
  exit 1
fi
echo "check-locks: every lock goes through LockedValue"

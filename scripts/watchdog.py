#!/usr/bin/env python3
"""Runs a test command and ends it when it stops making progress, saying where it stood.

    scripts/watchdog.py swift test --skip-build [arguments]
    STALL_SECONDS=300 scripts/watchdog.py ...

The command's output passes through unchanged. When it prints nothing for STALL_SECONDS
(default 600: the slowest test of the suite takes well under a minute, under a sanitizer too),
the watchdog prints the swift-testing tests that started and have not finished, the stack of
every thread of every process the command started (gdb, when installed), then ends them all
and exits 124. Without it a hung test holds CI until its 90-minute limit and leaves no trace
of which test hung. Otherwise it exits with the command's status.
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time

STARTED = re.compile(r"Test (.+?) started\.")
ENDED = re.compile(r"Test (.+?)(?: with \d+ test cases?)? (?:passed|failed) after")


def descendants(pid):
    """The processes below `pid`, children first."""
    found = []
    pending = [pid]
    while pending:
        parent = pending.pop()
        try:
            with open(f"/proc/{parent}/task/{parent}/children") as file:
                children = [int(child) for child in file.read().split()]
        except OSError:
            children = []
        found.extend(children)
        pending.extend(children)
    return found


def main():
    if len(sys.argv) < 2:
        print("usage: watchdog.py COMMAND [ARGUMENT...]", file=sys.stderr)
        return 2
    stall = float(os.environ.get("STALL_SECONDS", "600"))
    process = subprocess.Popen(
        sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    last_output = [time.monotonic()]
    running = {}

    def pump():
        for raw in iter(process.stdout.readline, b""):
            last_output[0] = time.monotonic()
            sys.stdout.buffer.write(raw)
            sys.stdout.buffer.flush()
            line = raw.decode("utf-8", "replace")
            if "Test case passing" in line:
                continue  # a parameterized test's case: swift-testing reports no end for it
            started = STARTED.search(line)
            if started:
                running[started.group(1)] = time.monotonic()
            ended = ENDED.search(line)
            if ended:
                running.pop(ended.group(1), None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    while True:
        try:
            status = process.wait(timeout=5)
            reader.join()
            return status
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() - last_output[0] < stall:
            continue
        now = time.monotonic()
        print(f"\nwatchdog: no output for {stall:.0f} s; tests started and not finished:", flush=True)
        for name, since in sorted(running.items(), key=lambda item: item[1]):
            print(f"  {name} (for {now - since:.0f} s)", flush=True)
        pids = [process.pid] + descendants(process.pid)
        if subprocess.run(["sh", "-c", "command -v gdb"], stdout=subprocess.DEVNULL).returncode == 0:
            for pid in pids:
                print(f"\nwatchdog: threads of process {pid}:", flush=True)
                try:
                    subprocess.run(
                        ["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 30"],
                        stdout=sys.stdout, stderr=subprocess.DEVNULL, timeout=120, check=False)
                except subprocess.TimeoutExpired:
                    print("watchdog: gdb did not finish in 120 s", flush=True)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        print("watchdog: ended the command", flush=True)
        return 124


if __name__ == "__main__":
    sys.exit(main())

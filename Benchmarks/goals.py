"""The goals of the performance issues, as the benchmark scripts check them.

A script calls `check(...)` for each goal its figures measure. The verdict is printed into the
script's own output (its section of Docs/Performance.md), and, when the environment names a
`GOALS_FILE` (scripts/benchmark.sh does), appended there as one JSON line, from which
Benchmarks/report.py builds the one goals table at the top of Docs/Performance.md. `row(...)`
is that table's row, for report.py's own goals as well.
"""
import json
import os
import statistics


def verdict(value, target, higher=True, runs=None):
    """'reached' or 'not reached' for the median, and whether every run agrees."""
    def meets(x):
        return x >= target if higher else x <= target

    text = "reached" if meets(value) else "not reached"
    if runs is not None and meets(runs[0]) != meets(runs[1]):
        text += " (median; not in every run)" if meets(value) else " (median; reached in some runs)"
    return text


def fmt(value, unit):
    if unit in ("", " fds"):  # counts
        return f"{round(value):,}{unit}"
    return f"{value:,.2f}{unit}" if abs(value) < 100 else f"{value:,.0f}{unit}"


def row(text, compared, value, target, higher=True, unit="×", runs=None):
    """One row of the goals table: goal | compared | median | per run | target | verdict."""
    per_run = "—" if runs is None else f"{fmt(runs[0], unit)}–{fmt(runs[1], unit)}"
    if value is None:
        return f"| {text} | {compared} | not measured | {per_run} | {target}{unit} | — |"
    sign = "≥" if higher else "≤"
    return (f"| {text} | {compared} | {fmt(value, unit)} | {per_run} | {sign} {fmt(target, unit)} "
            f"| {verdict(value, target, higher, runs)} |")


def check(text, compared, values, target, higher=True, unit="×"):
    """Prints the verdict on `values` (one figure per round) and records it in GOALS_FILE."""
    if not values:
        return
    value = statistics.median(values)
    runs = (min(values), max(values))
    print(f"- Goal: {text} ({compared}) {'≥' if higher else '≤'} {fmt(target, unit)}: "
          f"median {fmt(value, unit)} [{fmt(runs[0], unit)}–{fmt(runs[1], unit)}], "
          f"{verdict(value, target, higher, runs)}.")
    path = os.environ.get("GOALS_FILE")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps({"text": text, "compared": compared, "value": value, "runs": list(runs),
                                  "target": target, "higher": higher, "unit": unit}) + "\n")

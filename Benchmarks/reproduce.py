#!/usr/bin/env python3
"""Does a rerun land within the stated spread? This run's figures against a previous run's.

    python3 Benchmarks/reproduce.py THIS_RAW PREVIOUS_RAW   # Markdown on stdout

Each argument is a folder scripts/benchmark.sh kept with RAW_DIR= (results.jsonl, goals.jsonl).
scripts/benchmark.sh runs this itself when PREVIOUS= names the previous run's folder, and
Benchmarks/report.py puts the table in Docs/Performance.md.

Compared:
- every HTTP row against curl in the same round (requests/s ÷ curl's), and its CPU per request;
- every goal a section script checked (Benchmarks/goals.py), with its per-round range.

A figure reproduces when either run's median lies within the other's per-round range
[min–max]: the spread each run states is the claim a rerun is held to. A figure measured by
one round only has no range, and is compared only by its difference.
"""
import json
import os
import statistics
import sys


# A task-per-request run (`--driver task`, the way a server's request handlers call a client) is
# its own row beside the long-lived workers' one.
TASK = " (task per request)"


def read_results(path):
    """The rows of a results.jsonl, a task-per-request run's client named with `TASK`."""
    rows = [json.loads(line) for line in open(path) if line.strip()]
    for r in rows:
        if r.get("driver") == "task":
            r["client"] += TASK
    return rows


def load_results(folder):
    path = os.path.join(folder, "results.jsonl")
    return read_results(path) if os.path.exists(path) else []


def load_goals(folder):
    path = os.path.join(folder, "goals.jsonl")
    if not os.path.exists(path):
        return {}
    out = {}
    for line in open(path):
        if line.strip():
            g = json.loads(line)
            out[(g["text"], g["compared"])] = g
    return out


def http_figures(rows):
    """{(client, in flight, 'rps ÷ curl' or 'CPU µs'): [one value per round]}."""
    out = {}
    by_run = {}
    for r in rows:
        by_run.setdefault((r.get("run"), r["concurrency"]), {})[r["client"]] = r
    for (_, concurrency), clients in sorted(by_run.items(), key=lambda kv: (kv[0][1], kv[0][0] or 0)):
        curl = clients.get("curl")
        for client, r in clients.items():
            if client in ("curl", "wrk"):
                continue
            if curl and curl.get("rps"):
                out.setdefault((client, concurrency, "requests/s ÷ curl"), []).append(r["rps"] / curl["rps"])
            if r.get("cpu_us_per_request") is not None:
                out.setdefault((client, concurrency, "CPU µs per request"), []).append(r["cpu_us_per_request"])
    return out


def lands(this, previous):
    """(this median, this range, previous median, previous range, verdict)."""
    m1, m0 = statistics.median(this), statistics.median(previous)
    r1, r0 = (min(this), max(this)), (min(previous), max(previous))
    if len(this) < 2 and len(previous) < 2:
        verdict = "one round each"
    elif r0[0] <= m1 <= r0[1] or r1[0] <= m0 <= r1[1]:
        verdict = "within"
    else:
        verdict = "**outside**"
    return m1, r1, m0, r0, verdict


def fmt(value, unit):
    if unit == "×":
        return f"{value:.2f}×"
    return f"{value:,.1f}" if abs(value) < 1000 else f"{value:,.0f}"


def span(r, unit):
    return f"{fmt(r[0], unit)}–{fmt(r[1], unit)}"


def section(this_folder, previous_folder, previous_label="the previous run"):
    """The Markdown table and the counts {'within', '**outside**', 'one round each'}; ("", counts)
    when there is nothing to compare."""
    this_http, previous_http = http_figures(load_results(this_folder)), http_figures(load_results(previous_folder))
    this_goals, previous_goals = load_goals(this_folder), load_goals(previous_folder)
    lines = []
    counts = {"within": 0, "**outside**": 0, "one round each": 0}

    def add(what, path, this, previous, unit):
        m1, r1, m0, r0, verdict = lands(this, previous)
        counts[verdict] += 1
        change = (m1 / m0 - 1) * 100 if m0 else 0.0
        lines.append(f"| {what} | {path} | {fmt(m1, unit)} [{span(r1, unit)}] | {fmt(m0, unit)} [{span(r0, unit)}] "
                     f"| {change:+.0f}% | {verdict} |")

    for key in sorted(set(this_http) & set(previous_http), key=lambda k: (k[2], k[1], k[0])):
        client, concurrency, metric = key
        add(f"{metric}, {concurrency} in flight", f"`{client}`", this_http[key], previous_http[key],
            "×" if "curl" in metric else "")
    for key in [k for k in this_goals if k in previous_goals]:
        g1, g0 = this_goals[key], previous_goals[key]
        unit = "×" if g1["unit"] == "×" else ""
        # A goal line keeps its median and range, not every round: the range stands for them.
        add(f"goal {key[0]}", key[1], [g1["runs"][0], g1["value"], g1["runs"][1]],
            [g0["runs"][0], g0["value"], g0["runs"][1]], unit)
    if not lines:
        return "", counts
    total = sum(counts.values())
    head = [
        f"This run against {previous_label}, same machine, same script. A figure reproduces when "
        "either run's median lies within the other's per-round range [min–max].",
        "",
        f"**{counts['within']} of {total} figures within, {counts['**outside**']} outside**"
        + (f", {counts['one round each']} with one round each" if counts["one round each"] else "") + ".",
        "",
        "| figure | path | this run: median [range] | previous: median [range] | change | |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    return "\n".join(head + lines) + "\n", counts


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: reproduce.py THIS_RAW PREVIOUS_RAW")
    print(section(sys.argv[1], sys.argv[2])[0], end="")

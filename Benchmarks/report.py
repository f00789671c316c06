#!/usr/bin/env python3
"""Turns the raw figures of scripts/benchmark.sh into Docs/Performance.md (Markdown on stdout)."""
import argparse, datetime, glob, json, os, platform, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import goals  # noqa: E402  (Benchmarks/goals.py: the goal rows and verdicts every benchmark script shares)
import reproduce  # noqa: E402  (Benchmarks/reproduce.py: this run against a previous one)

p = argparse.ArgumentParser()
p.add_argument("--results", required=True)
p.add_argument("--micro", required=True)
p.add_argument("--runs", type=int, required=True)
p.add_argument("--requests", type=int, required=True)
p.add_argument("--inflight", type=int, required=True)
p.add_argument("--seconds", type=int, required=True)
p.add_argument("--body-bytes", type=int, required=True)
p.add_argument("--load-start", default="unknown")
p.add_argument("--load-end", help="1/5/15-minute load average when the measurements ended (default: now)")
p.add_argument("--commit", help="the Courier commit measured (default: git HEAD of this checkout)")
p.add_argument("--date", help="when the measurements ended, UTC (default: now)")
p.add_argument("--sections", help="a folder of Markdown sections the other benchmark scripts wrote, "
               "each with its own command, load and spread; included in name order")
p.add_argument("--note", help="a sentence for the top of the file, e.g. how the figures were put together "
               "when sections were rerun apart from the HTTP runs")
p.add_argument("--goals", help="the JSON lines the other benchmark scripts' goal checks wrote (GOALS_FILE)")
p.add_argument("--profiles", help="a Markdown file of profiles of the goals not reached (committed analysis, "
               "dated; included as it is)")
p.add_argument("--previous", help="the raw folder (RAW_DIR) of a previous run of the script on this machine: "
               "adds the reproducibility table, this run's figures against that run's (Benchmarks/reproduce.py)")
p.add_argument("--previous-label", default="the previous run",
               help="how the table names the previous run, e.g. its commit and time")
a = p.parse_args()

rows = reproduce.read_results(a.results)
TASK = reproduce.TASK


def med(client, concurrency, key):
    values = [r[key] for r in rows if r["client"] == client and r["concurrency"] == concurrency and key in r]
    return statistics.median(values) if values else None


def spread(client, concurrency, key):
    values = [r[key] for r in rows if r["client"] == client and r["concurrency"] == concurrency and key in r]
    return (min(values), max(values)) if values else None


def per_run(client_a, client_b, concurrency, key, combine):
    """`combine` of the two clients' figures in each run (both from the same run), as (min, max)."""
    values = []
    for run in sorted({r["run"] for r in rows if "run" in r}):
        x = [r[key] for r in rows if r.get("run") == run and r["client"] == client_a and r["concurrency"] == concurrency]
        y = [r[key] for r in rows if r.get("run") == run and r["client"] == client_b and r["concurrency"] == concurrency]
        value = combine(x[0], y[0]) if x and y else None
        if value is not None:
            values.append(value)
    return (min(values), max(values)) if values else None


def per_run_ratio(client_a, client_b, concurrency, key):
    return per_run(client_a, client_b, concurrency, key, lambda x, y: x / y if y else None)


def per_run_diff(client_a, client_b, concurrency, key):
    return per_run(client_a, client_b, concurrency, key, lambda x, y: x - y)


def diff(a_, b_):
    return None if a_ is None or b_ is None else a_ - b_


def goal(text, compared, value, target, higher=True, unit="×", runs=None):
    return goals.row(text, compared, value, target, higher=higher, unit=unit, runs=runs)


def client_goal(text, compared, client, peer, concurrency, key, target, higher=True):
    """The goal row of `client` ÷ `peer` on `key` with `concurrency` in flight, with its per-run range."""
    return goal(text, compared, ratio(med(client, concurrency, key), med(peer, concurrency, key)), target,
                higher=higher, runs=per_run_ratio(client, peer, concurrency, key))


GOALS_HEADER = "| goal | Courier path vs peer | median | per run | target | |\n| --- | --- | ---: | ---: | ---: | --- |"


def fmt(value, digits=0):
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def ratio(a_, b_):
    return None if a_ is None or b_ in (None, 0) else a_ / b_


def fr(value):
    return "—" if value is None else f"{value:.2f}×"


def load_range():
    loads = sorted(r["load1"] for r in rows if "load1" in r)
    if not loads:
        return "not recorded"
    return f"{loads[0]:.2f} / {statistics.median(loads):.2f} / {loads[-1]:.2f}"


def git_head():
    try:
        return subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "log", "-1",
                               "--format=%h (%cd)", "--date=format:%Y-%m-%d %H:%M"],
                              capture_output=True, text=True).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def machine():
    model = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "unknown"
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    def version(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0].strip()
        except (OSError, IndexError):
            return "not found"
    return [
        ("date (UTC)", a.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")),
        ("CPU", f"{model}, {os.cpu_count()} logical cores (nproc)"),
        ("memory", mem),
        ("load average at the start (1/5/15 min)", a.load_start),
        ("1-minute load average after each HTTP measurement (min / median / max)", load_range()),
        ("load average at the end (1/5/15 min)", a.load_end or load),
        ("Courier commit (measured code)", a.commit or git_head()),
        ("kernel", platform.release()),
        ("Swift", version(["swift", "--version"])),
        ("curl", version(["curl", "--version"])),
        ("nginx", subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()
            if subprocess.run(["which", "nginx"], capture_output=True).returncode == 0 else "/usr/sbin/nginx"),
    ]


def served_check():
    """nginx's served requests ÷ the requests a client made (measured + warm-up), per client and concurrency."""
    table = {}
    for r in rows:
        if "served" not in r or r["client"] == "wrk":
            continue
        warmup = 0 if r["client"] == "curl" or r["concurrency"] == a.inflight else max(500, r["concurrency"])
        table.setdefault((r["client"], r["concurrency"]), []).append(r["served"] / (r["requests"] + warmup))
    return table


# Micro benchmarks (package-benchmark JMH export).
def to_us(metric, percentile="50.0"):
    value = metric.get("scorePercentiles", {}).get(percentile)
    if value is None:
        return None
    scale = {"ns": 1e-3, "μs": 1.0, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}.get(metric.get("scoreUnit", "μs"), 1.0)
    return value * scale


passes = {}  # pass folder -> benchmark name -> figures
for path in glob.glob(os.path.join(a.micro, "**", "*.json"), recursive=True):
    try:
        elements = json.load(open(path))
    except (OSError, ValueError):
        continue
    for e in elements if isinstance(elements, list) else []:
        name = e["benchmark"].split(".", 3)[-1].replace("_", " ")
        name = name.split("CourierBenchmarks.", 1)[-1]
        sec = e.get("secondaryMetrics", {})
        mallocs = sec.get("Malloc (total)", {}).get("scorePercentiles", {}).get("50.0")
        passes.setdefault(os.path.dirname(path), {})[name] = {
            "wall": to_us(sec.get("Time (wall clock)", {})), "best": to_us(sec.get("Time (wall clock)", {}), "0.0"),
            "mallocs": mallocs}

# Median over the passes of each pass's median.
micro = {}
for name in sorted({n for figures in passes.values() for n in figures}):
    def over_passes(key):
        values = [f[name][key] for f in passes.values() if name in f and f[name][key] is not None]
        return statistics.median(values) if values else None
    micro[name] = {"wall": over_passes("wall"), "best": over_passes("best"), "mallocs": over_passes("mallocs")}


def micro_pass_ratio(prefix_a, prefix_b):
    """Fastest time of b ÷ fastest time of a within each pass (a's speed relative to b), as (min, max)."""
    values = []
    for figures in passes.values():
        x = next((v["best"] for k, v in figures.items() if k.startswith(prefix_a) and v["best"]), None)
        y = next((v["best"] for k, v in figures.items() if k.startswith(prefix_b) and v["best"]), None)
        if x and y:
            values.append(y / x)
    return (min(values), max(values)) if values else None


out = []
w = out.append
w("# Performance")
w("")
w("Generated by `scripts/benchmark.sh` — do not edit by hand; run the script again. "
  f"Each HTTP figure is the median of {a.runs} interleaved runs (every client once per run, "
  "in turn); each micro figure is the median, over the passes of the suite (one per run), of "
  "package-benchmark's median over its iterations. "
  f"The whole script took {a.seconds} s.")
if a.note:
    w("")
    w(a.note)
w("")
w("## Machine")
w("")
w("| | |")
w("| --- | --- |")
for k, v in machine():
    w(f"| {k} | {v} |")
w("")
w("The machine is shared (other builds may run at the same time, see the load average); "
  "ratios between clients measured in the same run are more stable than absolute figures.")
w("")

w("## Goals (issue 22)")
w("")
w("Each goal as the benchmark that measures it checks it: the median over the interleaved runs, the "
  "lowest and highest of the per-run figures, and the verdict (a median that is not reached in every run "
  "says so). Rows of items 2 and 3 come from the HTTP tables below; the others from the sections further "
  "down, each checked by its own script. A goal not reached has its "
  "profile in \"Where the time goes\" at the end.")
w("")
w(GOALS_HEADER)
reproducibility, counts = ("", None) if not a.previous else reproduce.section(
    os.path.dirname(os.path.abspath(a.results)), a.previous, a.previous_label)
if reproducibility:
    compared = sum(counts.values()) - counts["one round each"]
    share = 100 * counts["within"] / compared if compared else None
    w(goal("1. A rerun lands within the stated spread", f"figures within, of {compared} against {a.previous_label}",
           share, 100, unit="%"))
w(client_goal("2. One in flight: requests/s", "`HTTPClient.send` bytes vs `curl` (one connection)",
              "courier-transport", "curl", 1, "rps", 0.95))
w(client_goal("2. One in flight: requests/s", "`APIService.get` → model vs `curl` (one connection)",
              "courier-service", "curl", 1, "rps", 0.9))
w(client_goal("3. 32 in flight: requests/s", "`APIService.get` → model vs `curl --parallel`",
              "courier-service", "curl", 32, "rps", 1.3))
for c in (1, 32):
    w(goal(f"3. Service overhead, {c} in flight: CPU per call", "`APIService.get` − (`send` + pipeline)",
           diff(med("courier-service", c, "cpu_us_per_request"), med("courier-e2e", c, "cpu_us_per_request")),
           2.0, higher=False, unit=" µs", runs=per_run_diff("courier-service", "courier-e2e", c, "cpu_us_per_request")))
if a.goals and os.path.exists(a.goals):
    checked = [json.loads(line) for line in open(a.goals) if line.strip()]
    # In the issue's order (each text starts with its item number), the scripts' own order within an item.
    for g in sorted(checked, key=lambda g: int(g["text"].split(".")[0])):
        w(goals.row(g["text"], g["compared"], g["value"], g["target"], g["higher"], g["unit"], tuple(g["runs"])))
w("")

if reproducibility:
    w("## Reproducibility (issue 22, item 1)")
    w("")
    w(reproducibility)

names = {
    "courier-transport": "Courier `HTTPClient.send`, bytes",
    "courier-e2e": "Courier `send` + `ResponsePipeline` `.json` → model",
    "courier-service": "Courier `APIService.get` → model",
    "ahc-transport": "AsyncHTTPClient, bytes",
    "ahc-e2e": "AsyncHTTPClient + `JSONDecoder` → model",
    "urlsession-transport": "URLSession, bytes",
    "urlsession-e2e": "URLSession + `JSONDecoder` → model",
    "curl": "`curl` CLI (C libcurl), bytes",
    "wrk": "`wrk` (the server's ceiling)",
}

w(f"## HTTP: {a.requests:,} GETs of a {a.body_bytes}-byte JSON body from nginx on loopback")
w("")
w("Each client runs in its own process (`courier-http-bench CLIENT`), with its connections opened by "
  "500 warm-up requests that are not measured. Client CPU is the process's user + system time over "
  "the measured requests (getrusage), divided by the requests; for `curl` it is the whole child "
  "process, start-up and the parsing of a 10,000-URL config included. Peak RSS is the process's "
  "maximum resident set. `wrk` runs for 5 s with as many connections and only gives the server's "
  "ceiling. Ratios: requests/s as client ÷ peer (higher is better), CPU and RSS as client ÷ peer "
  "(lower is better). The AsyncHTTPClient peer of a row is the one of the same kind: bytes only for "
  "transport rows, `JSONDecoder` into the model for decoded rows.")
rows_order = ["courier-transport", "ahc-transport", "urlsession-transport", "curl", "courier-service", "courier-e2e",
              "ahc-e2e", "urlsession-e2e", "wrk"]
for client in ["courier-transport", "ahc-transport", "courier-service", "ahc-e2e"]:
    if any(r["client"] == client + TASK for r in rows):
        rows_order.append(client + TASK)
        names[client + TASK] = names[client] + ", a task per request"
for c in (1, 32):
    w("")
    w(f"### {c} in flight" + (" (curl: `--parallel --parallel-max 32`)" if c > 1 else " (curl: one connection, sequential)"))
    w("")
    w("| client | requests/s | min–max | ÷ curl | ÷ AHC | CPU µs/request | ÷ curl | ÷ AHC | peak RSS MiB | ÷ AHC |")
    w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    curl_rps, curl_cpu = med("curl", c, "rps"), med("curl", c, "cpu_us_per_request")
    for client in rows_order:
        rps, cpu, rss = med(client, c, "rps"), med(client, c, "cpu_us_per_request"), med(client, c, "peak_rss_kib")
        base = client.removesuffix(TASK)
        peer = ("ahc-e2e" if base.endswith("e2e") or base == "courier-service" else "ahc-transport") + client[len(base):]
        s_ = spread(client, c, "rps")
        rng = f"{s_[0]:,.0f}–{s_[1]:,.0f}" if s_ else "—"
        is_peer = client == peer
        w(f"| {names[client]} | {fmt(rps)} | {rng} | {fr(ratio(rps, curl_rps))} | "
          f"{'' if is_peer or client == 'wrk' else fr(ratio(rps, med(peer, c, 'rps')))} | {fmt(cpu, 1)} | "
          f"{fr(ratio(cpu, curl_cpu)) if client != 'wrk' else ''} | "
          f"{'' if is_peer or client == 'wrk' else fr(ratio(cpu, med(peer, c, 'cpu_us_per_request')))} | "
          f"{fmt(rss / 1024 if rss else None, 1)} | "
          f"{'' if is_peer or client == 'wrk' else fr(ratio(rss, med(peer, c, 'peak_rss_kib')))} |")

w("")
w(f"## Memory: {a.inflight:,} requests in flight")
w("")
w(f"{a.requests:,} GETs with {a.inflight:,} in flight and as many connections allowed "
  "(`maxConnectionsPerHost` and its equivalents), no warm-up. Extra memory per in-flight request = "
  f"(median peak RSS here − median peak RSS of the same client with 1 in flight) ÷ {a.inflight - 1:,}. "
  "URLSession queues requests over at most its own connection limit, so its figure is not one "
  "connection per request.")
w("")
w("| client | requests/s | peak RSS MiB | extra KiB per in-flight request | ÷ AHC |")
w("| --- | ---: | ---: | ---: | ---: |")
per_request = {}
for client in ["courier-transport", "courier-service", "ahc-transport", "urlsession-transport"]:
    rss = med(client, a.inflight, "peak_rss_kib")
    base = med(client, 1, "peak_rss_kib")
    per_request[client] = None if rss is None or base is None else (rss - base) / (a.inflight - 1)
for client, extra in per_request.items():
    rss = med(client, a.inflight, "peak_rss_kib")
    vs = "" if client == "ahc-transport" else fr(ratio(extra, per_request.get("ahc-transport")))
    w(f"| {names[client]} | {fmt(med(client, a.inflight, 'rps'))} | {fmt(rss / 1024 if rss else None, 1)} | "
      f"{fmt(extra, 1)} | {vs} |")

def micro_table(title, prefix, baseline_name, note=""):
    entries = {k: v for k, v in micro.items() if k.startswith(prefix)}
    w("")
    w(f"### {title}")
    w("")
    if note:
        w(note)
        w("")
    if not entries:
        w("Not measured in this run.")
        return
    base = next((v["best"] for k, v in entries.items() if baseline_name in k), None)
    base_median = next((v["wall"] for k, v in entries.items() if baseline_name in k), None)
    w(f"| benchmark | fastest µs | speed vs {baseline_name} | median µs | speed (medians) | mallocs |")
    w("| --- | ---: | ---: | ---: | ---: | ---: |")
    for k, v in sorted(entries.items(), key=lambda kv: kv[1]["best"] or 0):
        w(f"| {k[len(prefix):].strip()} | {fmt(v['best'], 2)} | {fr(ratio(base, v['best']))} | {fmt(v['wall'], 2)} | "
          f"{fr(ratio(base_median, v['wall']))} | {fmt(v['mallocs'])} |")


w("")
w("## Serializers and cache (package-benchmark)")
w("")
w("Wall-clock time per operation. \"Fastest\" is each pass's fastest iteration, \"median\" each pass's "
  "median iteration; both are then the median over the passes. On a shared, loaded machine a "
  "benchmark's median moves with whatever else runs during its 2 seconds (the same benchmark's "
  "median varied up to 2× between passes here), while its fastest iteration — one not interrupted — "
  "stays put; so speeds and goals use the fastest, and the medians are shown for reference.")
micro_table(f"JSON decode of the {a.body_bytes}-byte body into a model", "JSON decode:", "Foundation JSONDecoder")
large_json_note = ("One page of an issue tracker's list endpoint (`IssuePage` in "
                   "Benchmarks/Sources/BenchSupport/IssuePage.swift): nested users and labels, `null`s, "
                   "snake_case keys, long text with escapes and non-ASCII; generated the same on every run.")
micro_table("JSON decode of a 100 KB API payload (101,801 bytes, 90 issues) into a model", "JSON decode 100 KB:",
            "Foundation JSONDecoder", large_json_note)
micro_table("JSON decode of a 1 MB API payload (1,016,188 bytes, 900 issues) into a model", "JSON decode 1 MB:",
            "Foundation JSONDecoder", large_json_note)
encode_note = ("Default options on both sides (compact output; members in Foundation's hash order, in "
               "Courier's encoding order). \"Request serializer\" is what a call with `.json` parameters pays: "
               "`JSONRequestSerializer.shared` writing the body and `Content-Type` of a POST.")
micro_table(f"JSON encode of the {a.body_bytes}-byte body's model", "JSON encode 1 KB:", "Foundation JSONEncoder",
            encode_note)
micro_table("JSON encode of the 100 KB payload's model", "JSON encode 100 KB:", "Foundation JSONEncoder")
micro_table("JSON encode of the 1 MB payload's model", "JSON encode 1 MB:", "Foundation JSONEncoder")
micro_table("Form encode (7 fields, one a 3-element list)", "Form encode:", "Foundation URLComponents")
micro_table("Protobuf decode + encode of the same catalog", "Protobuf decode+encode:", "raw protobuf-c",
            "Courier's model is the one `scripts/generate-protos.sh` generates from Benchmarks/Protos/bench.proto; "
            "apple/swift-protobuf runs on protoc-gen-swift's output for the same file "
            "(Benchmarks/Sources/BenchSupport/bench.pb.swift, made by the same script).")
micro_table("Cache hit vs a loopback round trip", "Cache:", "loopback round trip")


checks = served_check()
if checks:
    w("")
    w("### Check: every counted request reached the server")
    w("")
    w("nginx's `stub_status` request count before and after each measurement, divided by the requests "
      "the client made (measured + warm-up): 1.00 means one HTTP request per call. Courier's "
      "`APIService` calls here opt out of the de-duplication of identical GETs in flight (on by "
      "default), which would otherwise let concurrent calls share one transfer.")
    w("")
    levels = sorted({c for _, c in checks})
    w("| client | " + " | ".join(f"{c:,} in flight (min–max)" for c in levels) + " |")
    w("| --- |" + " ---: |" * len(levels))
    for client in rows_order:
        cells = []
        for c in levels:
            values = checks.get((client, c))
            cells.append(f"{min(values):.2f}–{max(values):.2f}" if values else "")
        if any(cells):
            w(f"| {names[client]} | " + " | ".join(cells) + " |")


# Goals (issue 7).
def micro_wall(prefix):
    return next((v["best"] for k, v in micro.items() if k.startswith(prefix) and v["best"]), None)


w("")
w("## Goals (issue 7)")
w("")
w("Speed ratios are Courier ÷ peer for requests/s and peer time ÷ Courier time (fastest iterations) for micro benchmarks "
  "(higher is faster); CPU and memory are Courier ÷ peer (lower is better). \"Per run\" is the same ratio "
  "within each interleaved run (each pass of the micro suite), to show how much the verdict depends on the run.")
w("")
w(GOALS_HEADER)
w(client_goal("Transport, 32 in flight: requests/s", "`HTTPClient.send` bytes vs `curl --parallel`",
              "courier-transport", "curl", 32, "rps", 1.2))
w(client_goal("Transport, 32 in flight: CPU per request", "`HTTPClient.send` bytes vs `curl --parallel`",
              "courier-transport", "curl", 32, "cpu_us_per_request", 0.8, higher=False))
w(client_goal("End to end, 32 in flight: requests/s", "`APIService.get` → model vs AsyncHTTPClient + `JSONDecoder`",
              "courier-service", "ahc-e2e", 32, "rps", 2.0))
w(client_goal("1 in flight: requests/s", "`HTTPClient.send` bytes vs `curl` (one connection)",
              "courier-transport", "curl", 1, "rps", 0.9))
generated = "Protobuf decode+encode: Courier generated model"
direct = micro_wall(generated)
w(goal("Protobuf model decode+encode: speed", "generated model (`ProtobufDirectCodable`) vs raw protobuf-c",
       ratio(micro_wall("Protobuf decode+encode: raw protobuf-c"), direct), 0.5,
       runs=micro_pass_ratio(generated, "Protobuf decode+encode: raw protobuf-c")))
w(goal("Protobuf model decode+encode: speed", "generated model (`ProtobufDirectCodable`) vs apple/swift-protobuf",
       ratio(micro_wall("Protobuf decode+encode: apple/swift-protobuf"), direct), 1.5,
       runs=micro_pass_ratio(generated, "Protobuf decode+encode: apple/swift-protobuf")))
for size, prefix, target in [("1 KB body", "JSON decode:", 5.0), ("100 KB payload", "JSON decode 100 KB:", 3.0),
                             ("1 MB payload", "JSON decode 1 MB:", 3.0)]:
    w(goal(f"JSON decode into a model, {size}: speed", "response pipeline `.json` vs bare Foundation `JSONDecoder`",
           ratio(micro_wall(f"{prefix} Foundation JSONDecoder"), micro_wall(f"{prefix} Courier pipeline (.json")),
           target, runs=micro_pass_ratio(f"{prefix} Courier pipeline (.json", f"{prefix} Foundation JSONDecoder")))
for size in ["1 KB", "100 KB", "1 MB"]:
    prefix = f"JSON encode {size}:"
    w(goal(f"JSON encode of a model, {size}: speed", "request serializer `.json` vs bare Foundation `JSONEncoder`",
           ratio(micro_wall(f"{prefix} Foundation JSONEncoder"), micro_wall(f"{prefix} Courier request serializer")),
           2.0, runs=micro_pass_ratio(f"{prefix} Courier request serializer", f"{prefix} Foundation JSONEncoder")))
def per_run_memory(client):
    values = []
    for run in sorted({r["run"] for r in rows if "run" in r}):
        big = [r["peak_rss_kib"] for r in rows if r.get("run") == run and r["client"] == client
               and r["concurrency"] == a.inflight]
        one = [r["peak_rss_kib"] for r in rows if r.get("run") == run and r["client"] == client and r["concurrency"] == 1]
        if big and one:
            values.append((big[0] - one[0]) / (a.inflight - 1))
    return (min(values), max(values)) if values else None


w(goal(f"Memory per in-flight request ({a.inflight:,} in flight)", "`HTTPClient.send` bytes (absolute)",
       per_request.get("courier-transport"), 16, higher=False, unit=" KiB", runs=per_run_memory("courier-transport")))
w("")
w("The protobuf goals use the model `scripts/generate-protos.sh` generates from `Benchmarks/Protos/bench.proto` "
  "(Courier's `ProtobufDirectCodable` fast path); the hand-written `Codable` model (`Catalog: ProtobufMessage`, "
  "no field mapping code) is the slower path in the protobuf table above.")

# Notes computed from the figures above.
notes = []
for c in (1, 32):
    service = diff(med("courier-service", c, "cpu_us_per_request"), med("courier-e2e", c, "cpu_us_per_request"))
    decode_courier = diff(med("courier-e2e", c, "cpu_us_per_request"), med("courier-transport", c, "cpu_us_per_request"))
    decode_ahc = diff(med("ahc-e2e", c, "cpu_us_per_request"), med("ahc-transport", c, "cpu_us_per_request"))
    if service is not None:
        notes.append(f"With {c} in flight, the `APIService` layer (call object and task, registry, interceptor "
                     f"chain, validation) costs {service:,.0f} µs of CPU per call over `send` + `ResponsePipeline` "
                     "on the same transport (Courier `APIService.get` row minus the `send` + pipeline row).")
    if decode_courier is not None and decode_ahc is not None:
        notes.append(f"With {c} in flight, decoding the body into the model adds {decode_courier:,.0f} µs of CPU per "
                     f"request to Courier's transport (`.json` pipeline) and {decode_ahc:,.0f} µs to "
                     "AsyncHTTPClient's (`JSONDecoder`).")
for c in (1, 32):
    cr, cc = med("courier-transport", c, "rps"), med("courier-transport", c, "cpu_us_per_request")
    if cr and cc:
        notes.append(f"With {c} in flight, Courier's transport uses {cr * cc / 1e6:.2f} cores on average "
                     f"({cr:,.0f} requests/s × {cc:,.0f} µs); AsyncHTTPClient "
                     f"{(med('ahc-transport', c, 'rps') or 0) * (med('ahc-transport', c, 'cpu_us_per_request') or 0) / 1e6:.2f}, "
                     f"curl {(med('curl', c, 'rps') or 0) * (med('curl', c, 'cpu_us_per_request') or 0) / 1e6:.2f}. "
                     "nginx needs CPU on the same 2 cores; the rest of a client's time is spent waiting (for the "
                     "server, for its own threads to be scheduled, or for the other processes of a shared machine).")
if notes:
    w("")
    w("## Notes")
    w("")
    for note in notes:
        w(f"- {note}")

if a.sections and os.path.isdir(a.sections):
    for name in sorted(os.listdir(a.sections)):
        if name.endswith(".md"):
            w("")
            w(open(os.path.join(a.sections, name)).read().rstrip())

if a.profiles and os.path.exists(a.profiles):
    w("")
    w(open(a.profiles).read().rstrip())

w("")
w("## Reproduce")
w("")
w("```sh")
w("scripts/benchmark.sh                      # from the repository root; rewrites this file")
w("RUNS=5 scripts/benchmark.sh               # more interleaved runs per figure (default 3)")
w("REQUESTS=1000 RUNS=1 scripts/benchmark.sh # a quick pass (figures too short to quote)")
w("SKIP_MICRO=1 scripts/benchmark.sh         # HTTP and memory figures only")
w("SKIP_SECTIONS=1 scripts/benchmark.sh      # without the sections of the other scripts")
w("```")
w("")
w("The script installs what is missing (nginx, wrk, curl, python3 and Courier's own system "
  "packages), builds `Benchmarks/` in release (AsyncHTTPClient and swift-protobuf make a first "
  "build take several minutes on 2 cores), starts nginx from a config in a temporary folder on a "
  "free loopback port (one worker, access log off, `keepalive_requests 1000000`), runs every client "
  f"in turn in each run, then the micro benchmarks (`swift package benchmark` in `Benchmarks/`, "
  "which the cache benchmarks point at the same nginx), and writes this file with `Benchmarks/report.py`. "
  "On a shared machine, run it when the load average is low and compare ratios rather than absolute figures.")
w("")
w("Before/after comparisons of past changes, measured by hand: [PerformanceHistory.md](PerformanceHistory.md).")
print("\n".join(out))

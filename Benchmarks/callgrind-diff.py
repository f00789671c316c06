#!/usr/bin/env python3
"""Where one path's extra instructions per request go, by function (used by
scripts/service-overhead.sh with PROFILE_DIR).

    callgrind-diff.py A_SMALL A_LARGE B_SMALL B_LARGE --requests N [--inclusive] [--top 40]

Each pair is one client's callgrind files with a small and a large number of measured
requests (same warm-up); a function's cost per request is (large − small) ÷ N. Prints the
functions whose cost per request differs most between B and A (B − A), names demangled with
`swift demangle --simplified` when it is there.
"""
import argparse
import re
import shutil
import subprocess
from collections import defaultdict

LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(?:\*\s+)?(.+?)(?:\s+\[[^\]]*\])?$")


def costs(path, inclusive):
    command = ["callgrind_annotate", "--threshold=100", f"--inclusive={'yes' if inclusive else 'no'}", path]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    result = defaultdict(int)
    started = False
    for line in out.splitlines():
        if "file:function" in line:
            started = True
            continue
        if not started:
            continue
        match = LINE.match(line)
        if match:
            name = match.group(2)
            name = name.split(":", 1)[1] if ":" in name and not name.startswith("$") else name
            result[name] += int(match.group(1).replace(",", ""))
    return result


def per_request(small, large, requests, inclusive):
    a, b = costs(small, inclusive), costs(large, inclusive)
    return {name: (b.get(name, 0) - a.get(name, 0)) / requests for name in set(a) | set(b)}


def demangle(names):
    if not names or not shutil.which("swift"):
        return names
    out = subprocess.run(
        ["swift", "demangle", "--simplified"], input="\n".join(names), capture_output=True, text=True
    ).stdout.splitlines()
    return out if len(out) == len(names) else names


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a_small")
    parser.add_argument("a_large")
    parser.add_argument("b_small")
    parser.add_argument("b_large")
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--inclusive", action="store_true")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    a = per_request(args.a_small, args.a_large, args.requests, args.inclusive)
    b = per_request(args.b_small, args.b_large, args.requests, args.inclusive)
    diff = {name: b.get(name, 0) - a.get(name, 0) for name in set(a) | set(b)}
    top = sorted(diff, key=lambda n: -abs(diff[n]))[: args.top]
    kind = "inclusive" if args.inclusive else "self"
    print(f"\n{args.title}: instructions per request by function ({kind}), B − A, largest first")
    print(f"total A {sum(a.values()):,.0f}, B {sum(b.values()):,.0f}" if not args.inclusive else "")
    for name, shown in zip(top, demangle(top)):
        print(f"{diff[name]:+10,.0f}  A {a.get(name, 0):9,.0f}  B {b.get(name, 0):9,.0f}  {shown[:160]}")


if __name__ == "__main__":
    main()

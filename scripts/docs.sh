#!/usr/bin/env bash
# Builds the DocC documentation of Courier's library products with swift-docc-plugin and fails
# on any DocC warning (a broken ``Symbol`` or <doc:Article> link, a documentation comment that
# names a parameter the function does not have, ...).
#
#   scripts/docs.sh                    build the archives (.build/plugins/Swift-DocC/outputs/)
#   scripts/docs.sh --check-coverage   also print DocC's documentation coverage table and fail
#                                      when a public symbol has no summary (see the end)
#   scripts/docs.sh --articles-only    only write the guide articles into the catalogs
#
# The guides: Docs/*.md is the one source, read on GitHub as it is. This script copies each
# guide into the catalogs (Sources/<Target>/<Target>.docc/Guides/, ignored by git) with its
# links rewritten for DocC: `[text](Caching.md#per-user-privacy)` becomes
# `[text](doc:Caching#Per-user-privacy)`. A link to a guide that is not in the same catalog, or
# to a file outside Docs/, stops the script: DocC could not resolve it.
# Running `swift package generate-documentation` directly (without this script) builds the
# symbol documentation but not the guides, and DocC warns about the landing pages' guide links.
#
# Reading the result: each archive is a static website; serve its folder, e.g.
#   python3 -m http.server -d .build/plugins/Swift-DocC/outputs/Courier.doccarchive 8000
# and open http://localhost:8000/documentation/courier/.
set -euo pipefail
cd "$(dirname "$0")/.."

coverage=0
articles_only=0
for argument in "$@"; do
  case "$argument" in
    --check-coverage) coverage=1 ;;
    --articles-only) articles_only=1 ;;
    *) echo "usage: scripts/docs.sh [--check-coverage] [--articles-only]" >&2; exit 2 ;;
  esac
done

# Target: the guides its catalog carries. Courier's carries all of them; the Protobuf and fleet
# guides also sit beside the symbols they describe.
targets=(Courier CourierProtobuf CourierRedis CourierTesting)
declare -A guides=(
  [Courier]="$(cd Docs && ls *.md | sed 's/\.md$//' | tr '\n' ' ')"
  [CourierProtobuf]="Protobuf"
  [CourierRedis]="FleetMode"
  [CourierTesting]=""
)

for target in "${targets[@]}"; do
  catalog="Sources/$target/$target.docc"
  rm -rf "$catalog/Guides"
  [ -n "${guides[$target]}" ] || continue
  mkdir -p "$catalog/Guides"
  python3 - "$catalog/Guides" ${guides[$target]} <<'PY'
import re, sys, pathlib

out, names = pathlib.Path(sys.argv[1]), sys.argv[2:]
docs = pathlib.Path("Docs")

def headings(name):
    """GitHub's anchor for each heading of a guide → DocC's fragment for it."""
    result = {}
    in_code = False
    for line in (docs / f"{name}.md").read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not re.match(r"#{2,6} ", line):
            continue
        text = line.lstrip("#").strip()
        plain = re.sub(r"[`*_]", "", text)
        github = re.sub(r"[^\w\- ]", "", plain.lower()).replace(" ", "-")
        docc = re.sub(r"[^\w\-]", "", re.sub(r"\s+", "-", plain))
        result[github] = docc
    return result

failures = []
for name in names:
    text = (docs / f"{name}.md").read_text()

    def rewrite(match):
        label, target = match.group(1), match.group(2)
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return match.group(0)  # an external URL, or an anchor on the same page
        guide, _, anchor = target.partition("#")
        guide = guide.removesuffix(".md")
        if "/" in guide or not (docs / f"{guide}.md").exists():
            failures.append(f"Docs/{name}.md: link to {target}: not a guide in Docs/")
            return match.group(0)
        if guide not in names:
            failures.append(f"Docs/{name}.md: link to {target}: that guide is not in this catalog")
            return match.group(0)
        if not anchor:
            return f"[{label}](doc:{guide})"
        fragments = headings(guide)
        if anchor not in fragments:
            failures.append(f"Docs/{name}.md: link to {target}: no such heading in Docs/{guide}.md")
            return match.group(0)
        return f"[{label}](doc:{guide}#{fragments[anchor]})"

    # Links outside code blocks and code spans only.
    parts = re.split(r"(```.*?```|`[^`\n]*`)", text, flags=re.S)
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"\[([^\]]*)\]\(([^)\s]+)\)", rewrite, parts[i])
    text = "".join(parts)
    # The note goes last: DocC takes the paragraph after the title as the article's abstract.
    note = f"<!-- Copied from Docs/{name}.md by scripts/docs.sh; edit that file, not this copy. -->"
    (out / f"{name}.md").write_text(text.rstrip("\n") + f"\n\n{note}\n")

if failures:
    sys.exit("scripts/docs.sh: links DocC could not resolve:\n  " + "\n  ".join(failures))
PY
done
[ "$articles_only" -eq 0 ] || exit 0

# --enable-inherited-docs: a member inherited from a protocol of another module (Swift's
# `SetAlgebra`, `AsyncSequence`) shows that protocol's documentation instead of none.
docc_flags=(--warnings-as-errors --enable-inherited-docs)
if [ "$coverage" -eq 1 ]; then
  docc_flags+=(--experimental-documentation-coverage --coverage-summary-level brief)
fi
target_flags=()
for target in "${targets[@]}"; do target_flags+=(--target "$target"); done

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
swift package generate-documentation "${target_flags[@]}" "${docc_flags[@]}" 2>&1 | tee "$log" \
  || status=$?
# --warnings-as-errors makes docc fail on a warning; the grep also catches one the plugin itself
# prints (e.g. a target without documentable symbols). SwiftPM's notes about the dependencies'
# own files (swift-distributed-tracing's CMakeLists.txt) are not ours to fix.
warnings="$(grep -E '(^|: )warning:' "$log" | grep -vE "^warning: '[^']+': found [0-9]+ file\(s\) which are unhandled" || true)"
if [ -n "$warnings" ]; then
  echo "scripts/docs.sh: $(wc -l <<<"$warnings") warning(s):" >&2
  echo "$warnings" >&2
  status=1
fi

# Every public symbol declared in these targets' sources has a doc comment that starts with a
# summary (DocC's abstract; a comment starting with `- Parameters:` has none). Read from the
# symbol graphs the plugin just extracted. Left out: members a type inherits from another
# module's protocol (`::SYNTHESIZED::`: `OptionSet.union`, `AsyncSequence.map`, a synthesized
# `hash(into:)`), which DocC shows with that protocol's documentation (--enable-inherited-docs),
# and extension blocks, whose members are checked one by one. DocC's own table above counts both.
if [ "$coverage" -eq 1 ] && [ "$status" -eq 0 ]; then
  python3 - "${targets[@]}" <<'PY' || status=1
import glob, json, os, pathlib, sys

missing = []
for target in sys.argv[1:]:
    folders = sorted(glob.glob(f".build/*/extracted-symbols/*/{target}"), key=os.path.getmtime)
    if not folders:
        sys.exit(f"scripts/docs.sh: no symbol graphs for {target} under .build/")
    declared = 0
    for graph in sorted(pathlib.Path(folders[-1]).glob("*.symbols.json")):
        for symbol in json.loads(graph.read_text())["symbols"]:
            if "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
                continue
            if symbol["kind"]["identifier"] == "swift.extension":
                continue
            declared += 1
            lines = [line["text"].strip() for line in (symbol.get("docComment") or {}).get("lines", [])]
            lines = [line for line in lines if line]
            if not lines or lines[0].startswith("- "):
                location = symbol.get("location", {})
                path = "Sources/" + location.get("uri", "?").split("/Sources/")[-1]
                line = location.get("position", {}).get("line", -1) + 1
                name = "/".join(symbol["pathComponents"])
                missing.append(f"{path}:{line}: {name}" + (" (no summary line)" if lines else ""))
    print(f"{target}: {declared} public symbols declared")
if missing:
    sys.exit("scripts/docs.sh: public symbols without documentation:\n  " + "\n  ".join(sorted(missing)))
print("scripts/docs.sh: every public symbol declared in these targets is documented")
PY
fi
exit "$status"

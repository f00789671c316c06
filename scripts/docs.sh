#!/usr/bin/env bash
# Builds the DocC documentation of Courier's library products with swift-docc-plugin and fails
# on any DocC warning (a broken ``Symbol`` or <doc:Article> link, a documentation comment that
# names a parameter the function does not have, ...).
#
#   scripts/docs.sh                    build the archives (.build/plugins/Swift-DocC/outputs/)
#   scripts/docs.sh --check-coverage   also fail when a public symbol has no documentation
#                                      (DocC's experimental documentation coverage)
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
    title, _, body = text.partition("\n")
    note = f"<!-- Copied from Docs/{name}.md by scripts/docs.sh; edit that file, not this copy. -->"
    (out / f"{name}.md").write_text(f"{title}\n\n{note}\n{body}")

if failures:
    sys.exit("scripts/docs.sh: links DocC could not resolve:\n  " + "\n  ".join(failures))
PY
done
[ "$articles_only" -eq 0 ] || exit 0

docc_flags=(--warnings-as-errors)
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
# prints (e.g. a target without documentable symbols).
if grep -qE '(^|: )warning:' "$log"; then
  echo "scripts/docs.sh: DocC printed $(grep -cE '(^|: )warning:' "$log") warning(s)" >&2
  status=1
fi

if [ "$coverage" -eq 1 ] && [ "$status" -eq 0 ]; then
  outputs="$(swift package --show-bin-path >/dev/null 2>&1; echo .build/plugins/Swift-DocC/outputs)"
  python3 - "$outputs" "${targets[@]}" <<'PY' || status=1
import json, sys, pathlib

outputs, targets = pathlib.Path(sys.argv[1]), sys.argv[2:]
missing = []
for target in targets:
    path = outputs / f"{target}.doccarchive" / "documentation-coverage.json"
    entries = json.loads(path.read_text())
    undocumented = [e for e in entries if not e.get("hasAbstract")]
    print(f"{target}: {len(entries) - len(undocumented)} of {len(entries)} symbols documented")
    missing += [f"{target}: {e.get('title')} ({e.get('kind')}) {e.get('referencePath', '')}"
                for e in undocumented]
if missing:
    sys.exit("scripts/docs.sh: public symbols without documentation:\n  " + "\n  ".join(missing))
PY
fi
exit "$status"

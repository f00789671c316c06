#!/usr/bin/env bash
# Regenerates the C (protoc-c) and the Swift models (courier-protobuf-gen) for every folder of
# .proto files, and checks that the committed output is current.
#
#   scripts/generate-protos.sh           write the generated code
#   scripts/generate-protos.sh --check   regenerate into a temporary directory and fail on drift
#   scripts/generate-protos.sh [--check] --package DIR --job 'PROTOS|C TARGET|C MODULE|MODELS[|INCLUDES]' …
#                                        the same for another package (a user's): paths are
#                                        relative to DIR; `swift package generate-protos` (the
#                                        command plugin in Plugins/GenerateProtos) runs this.
#
# Each job is: proto folder | C target folder | C module name | Swift models target folder, and
# optionally | other folders that its .proto files import from, separated by `:` (protoc's -I).
# Without --package, Courier's own:
#   Protos/            → Sources/CourierProtos (C) and Sources/CourierProtoModels (Swift), importing
#                        from Fixtures/protobuf/shared (a stand-in for a folder of shared protos)
#   Benchmarks/Protos/ → Benchmarks/Sources/CBenchProtos and Benchmarks/Sources/BenchProtoModels
#
# Every job can also import Google's well-known types (`import "google/protobuf/timestamp.proto";`):
# Courier's copies in Protos/google/protobuf come last on the import path.
#
# For each job:
# 1. proto3 files (of the folder and of the import folders) are copied to a temporary tree where
#    `optional T x = N;` becomes `oneof _x { T x = N; }`: protoc-c 1.4.1 refuses proto3
#    `optional`; the rewrite is the same wire format with the synthetic oneof name Google's
#    runtime uses, so presence survives.
# 2. protoc-c writes the C (--c_out) and a descriptor set (--descriptor_set_out) of the same copy:
#    the folder's files and every file they import from another folder (found with
#    --include_imports), so the C target and the models are complete. Well-known types get C,
#    but no Swift: the models hold them as Swift types (Docs/Protobuf.md).
# 3. The C target gets the .pb-c.c/.pb-c.h files, an umbrella header, a module map and
#    courier_descriptors.c: one accessor per message returning the descriptor's address (Swift
#    must not take `&global` of an imported C global: in release builds it may get the address
#    of a temporary copy, and protobuf-c keeps the pointer).
# 4. courier-protobuf-gen (this package's executable) reads the descriptor set and writes one
#    `<path>.pb.swift` per .proto file into the Swift target: plain structs and enums with their
#    `ProtobufMessage` and `ProtobufDirectCodable` conformances, formatted by `swift format`
#    with the package's .swift-format, or Courier's when the package has none.
#    Only `*.pb.swift` files are generated there; other files in that target are left alone.
#
# 5. The benchmarks compare against apple/swift-protobuf on the same message, with the code
#    protoc-gen-swift generates for Benchmarks/Protos (Benchmarks/Sources/BenchSupport/bench.pb.swift).
#    protoc-c has no --plugin option, so courier-protobuf-gen runs the plugin on the descriptor
#    set as protoc would. Building protoc-gen-swift takes minutes, so it is not built here: the
#    committed file starts with a stamp (the SHA-256 of the descriptor set it was made from and
#    of its own text), which --check verifies. To regenerate it, build the plugin in a
#    swift-protobuf checkout of the version Benchmarks/Package.swift resolves
#    (`swift build --product protoc-gen-swift`) and run this script with
#    PROTOC_GEN_SWIFT=<path to protoc-gen-swift>; with --check too, the file is regenerated
#    and compared.
#
# The C target is replaced whole. Set COURIER_PROTOBUF_GEN to a built courier-protobuf-gen to
# skip building it; otherwise it is built in Courier's own package (never the user's: the
# targets the user declared may be empty until this script fills them). SWIFT_FORMAT names the
# swift-format executable (default: `swift format`).
set -euo pipefail
courier_root=$(cd "$(dirname "$0")/.." && pwd)

usage() {
    echo "usage: $0 [--check] [--package DIR --job 'PROTOS|C TARGET|C MODULE|SWIFT TARGET' ...]" >&2
    exit 2
}
mode=write
package=$courier_root
jobs=()
while [ $# -gt 0 ]; do
    case "$1" in
    --check) mode=check ;;
    --package)
        [ $# -ge 2 ] || usage
        package=$(cd "$2" && pwd)
        shift
        ;;
    --job)
        [ $# -ge 2 ] || usage
        case "$(echo "$2" | tr -cd '|' | wc -c)" in 3 | 4) ;; *)
            echo "--job '$2': expected 'proto folder|C target folder|C module name|Swift target folder[|import folders]'" >&2
            exit 2
            ;;
        esac
        jobs+=("$2")
        shift
        ;;
    *) usage ;;
    esac
    shift
done
cd "$package"

command -v protoc-c >/dev/null || {
    echo "protoc-c not found (apt-get install protobuf-c-compiler)" >&2
    exit 1
}

if [ ${#jobs[@]} = 0 ]; then
    [ "$package" = "$courier_root" ] || {
        echo "--package needs at least one --job" >&2
        exit 2
    }
    jobs=(
        "Protos|Sources/CourierProtos|CourierProtos|Sources/CourierProtoModels|Fixtures/protobuf/shared"
        "Benchmarks/Protos|Benchmarks/Sources/CBenchProtos|CBenchProtos|Benchmarks/Sources/BenchProtoModels"
    )
fi
for job in "${jobs[@]}"; do
    IFS='|' read -r proto_dir _ _ _ includes <<<"$job"
    IFS=':' read -r -a include_dirs <<<"$includes"
    for dir in "$proto_dir" "${include_dirs[@]}"; do
        [ -d "$dir" ] || {
            echo "$package/$dir: no such folder of .proto files" >&2
            exit 1
        }
    done
done

export LC_ALL=C
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

generator="${COURIER_PROTOBUF_GEN:-}"
if [ -z "$generator" ]; then
    swift build --package-path "$courier_root" --product courier-protobuf-gen >"$work/build.log" 2>&1 || {
        cat "$work/build.log" >&2
        echo "could not build courier-protobuf-gen" >&2
        exit 1
    }
    generator="$(swift build --package-path "$courier_root" --show-bin-path)/courier-protobuf-gen"
fi

# swift-format and its configuration: the package's, else Courier's, else swift-format's defaults.
if [ -n "${SWIFT_FORMAT:-}" ]; then format=("$SWIFT_FORMAT"); else format=(swift format); fi
format_options=()
for config in "$root/.swift-format" "$courier_root/.swift-format"; do
    if [ -f "$config" ]; then
        format_options=(--configuration "$config")
        break
    fi
done

drift=0
generated=0

# The well-known types, alone in a folder that goes last on every job's import path.
mkdir -p "$work/well-known/google/protobuf"
cp "$courier_root"/Protos/google/protobuf/*.proto "$work/well-known/google/protobuf/"

# copy_protos FROM TO: copies the .proto files of FROM into TO, rewriting proto3 `optional`, and
# prints their paths relative to FROM.
copy_protos() {
    local from=$1 to=$2 file
    while IFS= read -r file; do
        echo "$file"
        mkdir -p "$to/$(dirname "$file")"
        if grep -Eq '^[[:space:]]*syntax[[:space:]]*=[[:space:]]*"proto3"' "$from/$file"; then
            # At the start of a line, or after `{` or `;` (`message M { optional string x = 1; }`).
            perl -pe 's/(?:^|(?<=[{;]))(\s*)optional\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*(\[[^\]]*\])?\s*;/$1oneof _$3 { $2 $3 = $4$5; }/g' \
                "$from/$file" >"$to/$file"
        else
            cp "$from/$file" "$to/$file"
        fi
    done < <(cd "$from" && find . -name '*.proto' | sed 's|^\./||' | sort)
}

# generate PROTO_DIR C_TARGET C_MODULE SWIFT_TARGET OUT [INCLUDES]: writes OUT/c and OUT/swift.
generate() {
    local proto_dir=$1 c_module=$3 out=$5 includes=${6:-}
    local protos=() file base dir index=0 import_path=(-I.) include_dirs=()

    # 1. A rewritten copy of the protos, and of the folders they import from.
    mkdir -p "$out/protos" "$out/raw" "$out/c/include" "$out/swift"
    while IFS= read -r file; do protos+=("$file"); done < <(copy_protos "$proto_dir" "$out/protos")
    IFS=':' read -r -a include_dirs <<<"$includes"
    for dir in "${include_dirs[@]}"; do
        copy_protos "$dir" "$out/imports$index" >/dev/null
        import_path+=(-I "$out/imports$index")
        index=$((index + 1))
    done
    import_path+=(-I "$work/well-known")

    # 2. protoc-c, run from the copy so the paths in the output are the same on every machine:
    #    first for the names of every file imported from the other folders, then for the C and
    #    the descriptor set of all of them.
    (cd "$out/protos" && protoc-c --include_imports --descriptor_set_out="$out/all.pb" "${import_path[@]}" "${protos[@]}")
    while IFS= read -r file; do
        [ -e "$out/protos/$file" ] || protos+=("$file")
    done < <("$generator" --descriptor-set "$out/all.pb" --list-files)
    # What the generator refuses (groups, names Swift cannot hold), it refuses here with its
    # message, before protoc-c writes C: protoc-c 1.4.1 crashes on a group.
    "$generator" --descriptor-set "$out/all.pb" --c-module "$c_module" --output "$out/refusals"
    (cd "$out/protos" && protoc-c --c_out="$out/raw" --descriptor_set_out="$out/descriptors.pb" \
        "${import_path[@]}" "${protos[@]}")

    # 3. The C target.
    for file in "${protos[@]}"; do
        base="${file%.proto}"
        mkdir -p "$out/c/include/$(dirname "$file")" "$out/c/$(dirname "$file")"
        cp "$out/raw/$base.pb-c.h" "$out/c/include/$base.pb-c.h"
        cp "$out/raw/$base.pb-c.c" "$out/c/$base.pb-c.c"
    done

    # Descriptor accessors: courier_descriptor_<package>_<Message>[_<Nested>]().
    # Each generated descriptor is `const ProtobufCMessageDescriptor <symbol> = { MAGIC, "<full.name>", …`.
    local accessors="$out/accessors.txt"
    for file in "${protos[@]}"; do
        awk '
            /^const ProtobufCMessageDescriptor [a-z0-9_]+ =$/ { symbol = $3; want = 4; next }
            want > 0 { want--; if (want == 1) { gsub(/[ ",]/, ""); full = $0; name = full; gsub(/\./, "_", name); print name, symbol, full } }
        ' "$out/raw/${file%.proto}.pb-c.c"
    done | sort >"$accessors"

    local guard
    guard="$(echo "$c_module" | perl -pe 's/([a-z])([A-Z])/$1_$2/g; $_ = uc')_H"
    {
        echo "#ifndef $guard"
        echo "#define $guard"
        echo "// Umbrella header for the protoc-c output generated by scripts/generate-protos.sh."
        echo "// Generated; do not edit."
        echo "#include <protobuf-c/protobuf-c.h>"
        echo
        for file in "${protos[@]}"; do echo "#include \"${file%.proto}.pb-c.h\""; done
        echo
        echo "// The address of each message descriptor (never take &descriptor from Swift)."
        local name symbol full
        while read -r name symbol full; do
            echo "const ProtobufCMessageDescriptor *courier_descriptor_${name}(void); // ${full}"
        done <"$accessors"
        echo
        echo "#endif"
    } >"$out/c/include/$c_module.h"

    {
        echo "// Descriptor accessors generated by scripts/generate-protos.sh; do not edit."
        echo "#include \"$c_module.h\""
        local name symbol full
        while read -r name symbol full; do
            echo
            echo "const ProtobufCMessageDescriptor *courier_descriptor_${name}(void) {"
            echo "    return &${symbol};"
            echo "}"
        done <"$accessors"
    } >"$out/c/courier_descriptors.c"

    # SwiftPM refuses an umbrella header with directories next to it, so name the header in a
    # module map; the generated .c files include "x/y.pb-c.h" relative to include/.
    cat >"$out/c/include/module.modulemap" <<MAP
module $c_module {
    header "$c_module.h"
    export *
}
MAP

    # 4. The Swift models, formatted with the repository's swift-format configuration.
    "$generator" --descriptor-set "$out/descriptors.pb" --c-module "$c_module" --output "$out/swift"
    if compgen -G "$out/swift/*.pb.swift" >/dev/null; then
        "${format[@]}" format --in-place "${format_options[@]}" "$out"/swift/*.pb.swift
    fi
    generated=$((generated + $(wc -l <"$accessors")))
}

# compare_swift GENERATED_DIR TARGET: 0 when every *.pb.swift matches (and none is stale).
compare_swift() {
    local from=$1 target=$2 status=0 file
    for file in "$from"/*.pb.swift; do
        [ -e "$file" ] || continue
        if ! diff -u "$target/$(basename "$file")" "$file"; then status=1; fi
    done
    for file in "$target"/*.pb.swift; do
        [ -e "$file" ] || continue
        if [ ! -e "$from/$(basename "$file")" ]; then
            echo "$file: stale (no .proto generates it)"
            status=1
        fi
    done
    return $status
}

index=0
declare -A descriptor_sets
for job in "${jobs[@]}"; do
    IFS='|' read -r proto_dir c_target c_module swift_target includes <<<"$job"
    out="$work/job$index"
    index=$((index + 1))
    generate "$proto_dir" "$c_target" "$c_module" "$swift_target" "$out" "$includes"
    descriptor_sets[$proto_dir]="$out/descriptors.pb"
    if [ "$mode" = check ]; then
        if ! diff -ru "$c_target" "$out/c"; then
            echo "$c_target is out of date: run scripts/generate-protos.sh" >&2
            drift=1
        fi
        if ! compare_swift "$out/swift" "$swift_target"; then
            echo "$swift_target is out of date: run scripts/generate-protos.sh" >&2
            drift=1
        fi
    else
        rm -rf "$c_target"
        mkdir -p "$(dirname "$c_target")"
        cp -R "$out/c" "$c_target"
        mkdir -p "$swift_target"
        rm -f "$swift_target"/*.pb.swift
        if compgen -G "$out/swift/*.pb.swift" >/dev/null; then cp "$out"/swift/*.pb.swift "$swift_target/"; fi
    fi
done

# 5. swift-protobuf's code for the benchmark protos (see the top of this file); a copy of this
#    script in another repository skips it.
spb_target=Benchmarks/Sources/BenchSupport/bench.pb.swift
spb_descriptors="${descriptor_sets[Benchmarks/Protos]:-}"
spb_stamp() { # DESCRIPTOR_SET BODY_FILE: the first line of the committed file
    echo "// scripts/generate-protos.sh: protoc-gen-swift output; descriptors sha256 $(sha256sum <"$1" | cut -c1-64)," \
        "text sha256 $(sha256sum <"$2" | cut -c1-64). Do not edit."
}
if [ "$package" != "$courier_root" ] || [ -z "$spb_descriptors" ] || [ ! -e "$spb_target" ]; then
    : # Not Courier's repository.
elif [ -n "${PROTOC_GEN_SWIFT:-}" ]; then
    mkdir -p "$work/swift-protobuf"
    "$generator" --descriptor-set "$spb_descriptors" --protoc-plugin "$PROTOC_GEN_SWIFT" \
        --parameter Visibility=Public --output "$work/swift-protobuf"
    spb_body="$work/swift-protobuf/bench.pb.swift"
    { spb_stamp "$spb_descriptors" "$spb_body"; cat "$spb_body"; } >"$work/swift-protobuf/stamped.swift"
    if [ "$mode" = check ]; then
        if ! diff -u "$spb_target" "$work/swift-protobuf/stamped.swift"; then
            echo "$spb_target is out of date: run PROTOC_GEN_SWIFT=$PROTOC_GEN_SWIFT scripts/generate-protos.sh" >&2
            drift=1
        fi
    else
        cp "$work/swift-protobuf/stamped.swift" "$spb_target"
    fi
else
    tail -n +2 "$spb_target" >"$work/spb-body.swift"
    if [ "$(head -n 1 "$spb_target")" != "$(spb_stamp "$spb_descriptors" "$work/spb-body.swift")" ]; then
        echo "$spb_target does not match Benchmarks/Protos (or was edited): regenerate it with" \
            "PROTOC_GEN_SWIFT=<protoc-gen-swift> scripts/generate-protos.sh (see the top of the script)" >&2
        drift=1
    fi
fi

if [ "$mode" = check ]; then
    [ "$drift" = 0 ] || exit 1
    echo "Generated protobuf code is up to date (${#jobs[@]} proto folders, $generated messages)."
else
    echo "Generated C and Swift for $generated messages from ${#jobs[@]} proto folders."
    [ "$drift" = 0 ] || exit 1
fi

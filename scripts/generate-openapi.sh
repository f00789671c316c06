#!/usr/bin/env bash
# Regenerates the OpenAPI client that CourierOpenAPI's tests run (Fixtures/openapi/openapi.yaml →
# Tests/CourierOpenAPITests/Generated/: Client.swift and the Types*.swift files), and checks that the committed
# output is current.
#
#   scripts/generate-openapi.sh           write the generated code
#   scripts/generate-openapi.sh --check   regenerate into a temporary directory and fail on drift
#
# apple/swift-openapi-generator is built in its own package (Tools/OpenAPIGen, scratch path
# .build-openapi-gen), never in Courier's: Courier's build does not compile the generator
# (OpenAPIKit, Yams), and its build plugin is not used. The output is formatted by
# `swift format` with the repository's .swift-format, as scripts/generate-protos.sh does.
# Set SWIFT_OPENAPI_GENERATOR to a built swift-openapi-generator to skip building it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

mode=write
case "${1:-}" in
"") ;;
--check) mode=check ;;
*)
    echo "usage: $0 [--check]" >&2
    exit 2
    ;;
esac

spec=Fixtures/openapi/openapi.yaml
config=Fixtures/openapi/openapi-generator-config.yaml
target=Tests/CourierOpenAPITests/Generated

generator=${SWIFT_OPENAPI_GENERATOR:-}
if [ -z "$generator" ]; then
    scratch="$root/.build-openapi-gen"
    swift build --package-path Tools/OpenAPIGen --scratch-path "$scratch" --product swift-openapi-generator >&2
    generator="$(swift build --package-path Tools/OpenAPIGen --scratch-path "$scratch" --show-bin-path)/swift-openapi-generator"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$generator" generate "$spec" --config "$config" --output-directory "$work" >&2
swift format -i --configuration .swift-format "$work"/*.swift

if [ "$mode" = write ]; then
    # The folder is the generator's: files it no longer writes go too.
    mkdir -p "$target"
    rm -f "$target"/*.swift
    cp "$work"/*.swift "$target/"
    echo "generate-openapi: wrote $target ($(ls "$work" | wc -l) files)" >&2
    exit 0
fi
if ! diff -ru "$target" "$work"; then
    echo "generate-openapi: $target is not what scripts/generate-openapi.sh makes from $spec; run it" >&2
    exit 1
fi
echo "generate-openapi: $target is current" >&2

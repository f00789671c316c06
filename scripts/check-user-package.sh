#!/usr/bin/env bash
# A new user's first protobuf run, end to end: a fresh package in a temporary folder that
# depends on this checkout by path, declares the two targets Docs/Protobuf.md tells a user to
# add (still empty) and has no .swift-format; it gets a .proto of its own (importing Google's
# Timestamp and a message from another folder, Shared/) and one copied from Protos/, runs `swift package generate-protos` (the command plugin), builds, and runs a program
# that round-trips a generated model and POSTs a protobuf body through an APIService to the
# loopback TestServer, decoding the protobuf reply (the sample in Docs/Protobuf.md). Then the
# plugin's --check must pass on what it wrote, and fail once a generated file is edited.
#
#   scripts/check-user-package.sh [SCRATCH]   SCRATCH: keep the package there (default: a
#                                             temporary folder, removed afterwards)
#
# It builds Courier and its dependencies from scratch in the new package, several minutes on
# the 2-core machine, so it is a step of .ci/run rather than of scripts/test.sh.
set -euo pipefail
courier_root=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${1:-}" ]; then
    work=$1
    mkdir -p "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi
ln -sfn "$courier_root" "$work/Courier" # the dependency's identity is its folder's name
shop="$work/Shop"
rm -rf "$shop/Sources" "$shop/Protos"
rm -rf "$shop/Shared"
mkdir -p "$shop/Protos/shop" "$shop/Protos/courier/demo" "$shop/Sources/ShopProtos" "$shop/Sources/ShopModels" \
    "$shop/Sources/shop-demo" "$shop/Shared/common"
cp "$courier_root/Protos/courier/demo/profile.proto" "$shop/Protos/courier/demo/"

cat >"$shop/Package.swift" <<'EOF'
// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Shop",
    dependencies: [.package(path: "../Courier")],
    targets: [
        .target(name: "ShopProtos", linkerSettings: [.linkedLibrary("protobuf-c")]),
        .target(
            name: "ShopModels",
            dependencies: ["ShopProtos", .product(name: "CourierProtobuf", package: "Courier")]),
        .executableTarget(
            name: "shop-demo",
            dependencies: [
                "ShopModels",
                .product(name: "Courier", package: "Courier"),
                .product(name: "CourierProtobuf", package: "Courier"),
                .product(name: "CourierTesting", package: "Courier"),
            ]),
    ]
)
EOF

cat >"$shop/Shared/common/money.proto" <<'EOF'
syntax = "proto3";
package common;

message Money {
  string currency = 1;
  int64 units = 2;
}
EOF

cat >"$shop/Protos/shop/order.proto" <<'EOF'
syntax = "proto3";
package shop;

import "common/money.proto";
import "google/protobuf/timestamp.proto";

message OrderRequest {
  string sku = 1;
  int32 quantity = 2;
  optional string note = 3;
}

message OrderReceipt {
  int64 order_id = 1;
  string sku = 2;
  int32 quantity = 3;
  repeated string messages = 4;
  google.protobuf.Timestamp placed_at = 5;
  common.Money total = 6;
}
EOF

cat >"$shop/Sources/shop-demo/main.swift" <<'EOF'
import Courier
import CourierProtobuf
import CourierTesting
import Foundation
import ShopModels

/// The sample of Docs/Protobuf.md: a service whose calls send and receive protobuf.
struct OrderService: APIService {
    let core: ServiceCore

    init(client: HTTPClient) {
        core = ServiceCore(
            client: client, configuration: ServiceConfiguration(requestSerializer: .protobuf, decoding: .protobuf))
    }

    func place(_ order: OrderRequest) async throws(CourierError) -> OrderReceipt {
        try await post("orders", body: order)
    }
}

func check(_ condition: Bool, _ message: String) {
    if !condition {
        print("FAILED: \(message)")
        exit(1)
    }
}

// A generated model round-trips through bytes.
let profile = UserProfile(userId: 42, displayName: "Ada", tier: .pro, interests: ["math"], stats: ["posts": 3], bio: "Hi")
let bytes = try ProtobufEncoder().encode(profile)
check(try ProtobufDecoder().decode(UserProfile.self, from: bytes) == profile, "UserProfile round trip")

// A protobuf POST through an APIService, against the loopback server.
let server = try TestServer()
server.route("POST", "/orders") { request in
    guard request.header("Content-Type") == "application/x-protobuf",
        let order = try? ProtobufDecoder().decode(OrderRequest.self, from: request.body)
    else { return .status(415) }
    let receipt = OrderReceipt(
        orderId: 7, sku: order.sku, quantity: order.quantity, messages: ["note: \(order.note ?? "none")"],
        placedAt: ProtobufTimestamp(seconds: 1_700_000_000, nanos: 5), total: Money(currency: "EUR", units: 30))
    return ScriptedResponse(
        status: 200, headers: [.contentType: "application/x-protobuf"], body: try! ProtobufEncoder().encode(receipt))
}
var configuration = HTTPClient.Configuration()
configuration.baseURL = server.baseURL
let orders = OrderService(client: try HTTPClient(configuration: configuration))
let receipt = try await orders.place(OrderRequest(sku: "A-1", quantity: 3, note: "gift"))
server.stop()
check(
    receipt
        == OrderReceipt(
            orderId: 7, sku: "A-1", quantity: 3, messages: ["note: gift"],
            placedAt: ProtobufTimestamp(seconds: 1_700_000_000, nanos: 5), total: Money(currency: "EUR", units: 30)),
    "receipt \(receipt)")
print("shop-demo: \(bytes.count)-byte UserProfile round-tripped; order \(receipt.orderId) placed over protobuf")
EOF

cd "$shop"
generate() { swift package --allow-writing-to-package-directory generate-protos \
    --c-target ShopProtos --models-target ShopModels --include Shared "$@"; }
start=$(date +%s)
echo "== generate-protos (plugin) in $shop"
generate
ls Sources/ShopProtos Sources/ShopModels
generated=$(date +%s)
echo "== swift build"
swift build --product shop-demo >"$work/build.log" 2>&1 || {
    cat "$work/build.log" >&2
    exit 1
}
grep -E 'warning|error' "$work/build.log" | grep -v '^\[' || true
built=$(date +%s)
echo "== run"
"$(swift build --show-bin-path)/shop-demo"
echo "== generate-protos --check"
generate --check
echo "// edited" >>Sources/ShopModels/shop_order.pb.swift
if generate --check >"$work/check.log" 2>&1; then
    echo "FAILED: --check passed on an edited generated file" >&2
    exit 1
fi
grep -q "Sources/ShopModels is out of date" "$work/check.log" || {
    cat "$work/check.log" >&2
    echo "FAILED: --check did not name the drifted target" >&2
    exit 1
}
echo "User package OK: plugin $((generated - start)) s, build $((built - generated)) s, total $(($(date +%s) - start)) s."

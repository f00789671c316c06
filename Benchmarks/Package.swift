// swift-tools-version: 6.2
import PackageDescription

// Benchmarks for Courier against its peers. A package of its own so that Courier itself never
// depends on package-benchmark, AsyncHTTPClient or swift-protobuf. Run everything with
// `scripts/benchmark.sh` from the repository root.
let package = Package(
    name: "CourierBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Courier", path: ".."),
        .package(
            url: "https://github.com/ordo-one/package-benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
    ],
    targets: [
        // protoc-c output for Protos/bench.proto, and the Swift models generated from it, both made
        // by scripts/generate-protos.sh (which checks them with --check).
        .target(
            name: "CBenchProtos",
            linkerSettings: [.linkedLibrary("protobuf-c")]),
        .target(
            name: "BenchProtoModels",
            dependencies: ["CBenchProtos", .product(name: "CourierProtobuf", package: "Courier")]),
        // Raw protobuf-c unpack + pack, the baseline.
        .target(name: "CBenchRaw", dependencies: ["CBenchProtos"]),
        // The 1 KB JSON body, its models and the protobuf twin shared by every benchmark.
        .target(
            name: "BenchSupport",
            dependencies: [
                "BenchProtoModels", "CBenchProtos",
                .product(name: "Courier", package: "Courier"),
                .product(name: "CourierProtobuf", package: "Courier"),
                // SplitMix64, for payloads that are the same on every run.
                .product(name: "CourierTesting", package: "Courier"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]),
        .executableTarget(
            name: "CourierBenchmarks",
            dependencies: [
                "BenchSupport", "CBenchRaw",
                .product(name: "Benchmark", package: "package-benchmark"),
                .product(name: "Courier", package: "Courier"),
                .product(name: "CourierProtobuf", package: "Courier"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "Benchmarks/CourierBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]),
        // Courier's own HTTP paths (`courier-e2e`, `courier-service`, `courier-transport`) without the
        // peers, for scripts/service-overhead.sh: depends on Courier only, so it builds quickly.
        .executableTarget(
            name: "courier-service-bench",
            dependencies: [.product(name: "Courier", package: "Courier")]),
        // Peak RSS of one 64 MiB / 1 GiB download or upload per process, for scripts/large-bodies.sh.
        .executableTarget(
            name: "courier-large-body-bench",
            dependencies: [.product(name: "Courier", package: "Courier")]),
        // One protobuf path per process, N round trips, for callgrind (see Benchmarks/README.md).
        .executableTarget(
            name: "courier-protobuf-bench",
            dependencies: [
                "BenchSupport", "CBenchRaw",
                .product(name: "CourierProtobuf", package: "Courier"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]),
        // One HTTP client per process: `courier-http-bench CLIENT --url URL --requests N --concurrency C`.
        .executableTarget(
            name: "courier-http-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "Courier", package: "Courier"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]),
    ]
)

// swift-tools-version: 6.2
// Fuzz targets for Courier, kept out of the main package so `swift build` there never
// needs libFuzzer. Build with scripts/fuzz.sh (release, `--sanitize=fuzzer --sanitize=address`).
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .treatAllWarnings(as: .error),
]

let courier: [Target.Dependency] = [
    "FuzzSupport",
    .product(name: "Courier", package: "Courier"),
    .product(name: "HTTPTypes", package: "swift-http-types"),
]

let package = Package(
    name: "CourierFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Courier", path: ".."),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        .target(name: "FuzzSupport", swiftSettings: strict),
        .executableTarget(name: "FuzzFormDecoder", dependencies: courier, swiftSettings: strict),
        .executableTarget(name: "FuzzResponsePipeline", dependencies: courier, swiftSettings: strict),
        .executableTarget(name: "FuzzCacheEntry", dependencies: courier, swiftSettings: strict),
        .executableTarget(name: "FuzzJSONDifferential", dependencies: courier, swiftSettings: strict),
        .executableTarget(name: "FuzzURLComposition", dependencies: courier, swiftSettings: strict),
        .executableTarget(name: "FuzzResponseHead", dependencies: courier, swiftSettings: strict),
        .executableTarget(
            name: "FuzzProtobuf",
            dependencies: [
                "FuzzSupport",
                .product(name: "CourierProtobuf", package: "Courier"),
                .product(name: "CourierProtos", package: "Courier"),
            ],
            swiftSettings: strict),
    ]
)

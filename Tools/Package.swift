// swift-tools-version: 6.2
// Command-line tools that exercise Courier from outside its test suite (scripts/load-test.sh),
// kept out of the main package so the normal build never compiles them.
import PackageDescription

let package = Package(
    name: "CourierTools",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Courier", path: ".."),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        .executableTarget(
            name: "courier-load",
            dependencies: [
                .product(name: "Courier", package: "Courier"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6), .treatAllWarnings(as: .error)])
    ]
)

// swift-tools-version: 6.2
// Builds apple/swift-openapi-generator for scripts/generate-openapi.sh, in its own package so
// Courier's build never compiles the generator (OpenAPIKit, Yams): the generated client is
// committed instead (Tests/CourierOpenAPITests/Generated).
import PackageDescription

let package = Package(
    name: "OpenAPIGen",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator.git", from: "1.14.3")
    ],
    targets: []
)

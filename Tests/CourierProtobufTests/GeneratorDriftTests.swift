import Foundation
import Testing

/// `scripts/generate-protos.sh --check`, run on a copy of the repository's protos and generated
/// code in a temporary folder: it passes on the committed files, keeps hand-written files in a
/// Swift models target, and fails on an edited or stale generated Swift file, an edited C file
/// and an edited copy of protoc-gen-swift's output.
@Suite struct GeneratorDriftTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// What the script reads and compares, relative to the repository root.
    static let inputs = [
        "scripts/generate-protos.sh", ".swift-format", "Protos", "Fixtures/protobuf/shared", "Sources/CourierProtos",
        "Sources/CourierProtoModels",
        "Benchmarks/Protos", "Benchmarks/Sources/CBenchProtos", "Benchmarks/Sources/BenchProtoModels",
        "Benchmarks/Sources/BenchSupport/bench.pb.swift",
    ]

    /// The generator built next to the test binary (`swift build --build-tests` builds it).
    static func generator() -> URL? {
        var folders: [URL] = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            folders.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
        }
        if let executable = Bundle.main.executableURL { folders.append(executable.deletingLastPathComponent()) }
        folders.append(root.appendingPathComponent(".build/debug"))
        for folder in folders {
            var candidate = folder
            for _ in 0..<4 {
                let path = candidate.appendingPathComponent("courier-protobuf-gen").path
                if FileManager.default.isExecutableFile(atPath: path) { return URL(fileURLWithPath: path) }
                candidate = candidate.deletingLastPathComponent()
            }
        }
        return nil
    }

    /// What a Courier checkout gives the script when it runs for a user's package.
    static func copyScript(to courier: URL) throws {
        for input in ["scripts/generate-protos.sh", ".swift-format", "Protos/google/protobuf"] {
            let target = courier.appendingPathComponent(input)
            try FileManager.default.createDirectory(
                at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: Self.root.appendingPathComponent(input), to: target)
        }
    }

    /// Runs the copied script with `--check`; returns its exit status and output.
    private func check(_ copy: URL, generator: URL) async throws -> (Int32, String) {
        try await GeneratorTests.run(
            copy.appendingPathComponent("scripts/generate-protos.sh"), ["--check"], in: copy,
            environment: ["COURIER_PROTOBUF_GEN": generator.path])
    }

    @Test func driftCheckCatchesEditedAndStaleGeneratedFiles() async throws {
        let generator = try #require(Self.generator(), "courier-protobuf-gen is not built (swift build --build-tests)")
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("courier-drift-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: copy) }
        for input in Self.inputs {
            let target = copy.appendingPathComponent(input)
            try FileManager.default.createDirectory(
                at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: Self.root.appendingPathComponent(input), to: target)
        }
        let models = copy.appendingPathComponent("Sources/CourierProtoModels")

        // The committed files are current, and a hand-written file beside them is not drift.
        try Data("// Hand-written.\n".utf8).write(to: models.appendingPathComponent("Extensions.swift"))
        var (status, output) = try await check(copy, generator: generator)
        #expect(status == 0, "\(output)")
        #expect(output.contains("up to date"))

        // An edited generated file.
        let kinds = models.appendingPathComponent("courier_test_kinds.pb.swift")
        let original = try String(contentsOf: kinds, encoding: .utf8)
        try original.replacingOccurrences(of: "case 1: self = .red", with: "case 5: self = .red")
            .write(to: kinds, atomically: true, encoding: .utf8)
        (status, output) = try await check(copy, generator: generator)
        #expect(status == 1)
        #expect(output.contains("case 5: self = .red") && output.contains("Sources/CourierProtoModels is out of date"))

        // A generated file no .proto makes any more.
        try original.write(to: kinds, atomically: true, encoding: .utf8)
        try Data("// Generated once.\n".utf8).write(to: models.appendingPathComponent("courier_old.pb.swift"))
        (status, output) = try await check(copy, generator: generator)
        #expect(status == 1)
        #expect(output.contains("courier_old.pb.swift: stale"))

        // An edited file of a generated C target (the benchmark protos are checked too).
        try FileManager.default.removeItem(at: models.appendingPathComponent("courier_old.pb.swift"))
        let c = copy.appendingPathComponent("Benchmarks/Sources/CBenchProtos/bench.pb-c.c")
        try (String(contentsOf: c, encoding: .utf8) + "// edited\n").write(to: c, atomically: true, encoding: .utf8)
        (status, output) = try await check(copy, generator: generator)
        #expect(status == 1)
        #expect(output.contains("Benchmarks/Sources/CBenchProtos is out of date"))

        // protoc-gen-swift's committed output (checked by its stamp, without the plugin).
        try FileManager.default.removeItem(at: c)
        try FileManager.default.copyItem(
            at: Self.root.appendingPathComponent("Benchmarks/Sources/CBenchProtos/bench.pb-c.c"), to: c)
        let swiftProtobuf = copy.appendingPathComponent("Benchmarks/Sources/BenchSupport/bench.pb.swift")
        try (String(contentsOf: swiftProtobuf, encoding: .utf8).replacingOccurrences(of: "= 0", with: "= 1"))
            .write(to: swiftProtobuf, atomically: true, encoding: .utf8)
        (status, output) = try await check(copy, generator: generator)
        #expect(status == 1)
        #expect(output.contains("bench.pb.swift does not match Benchmarks/Protos (or was edited)"))
    }

    /// A user's package, as the `generate-protos` plugin runs the script: Courier's script
    /// generates into the package named by `--package`, from its `--job`s, with Courier's
    /// `.swift-format` when the package has none (before, the script only knew Courier's own
    /// folders and failed with "Unable to read configuration" in a package without one), and
    /// with the package's own when it has one; `--check` then passes, and fails on an edit.
    @Test func generatesIntoAUserPackageWithOrWithoutItsOwnSwiftFormat() async throws {
        let generator = try #require(Self.generator(), "courier-protobuf-gen is not built (swift build --build-tests)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-user-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let courier = folder.appendingPathComponent("courier")
        let user = folder.appendingPathComponent("user")
        try Self.copyScript(to: courier)
        try FileManager.default.createDirectory(
            at: user.appendingPathComponent("Protos/shop"), withIntermediateDirectories: true)
        try Data(
            """
            syntax = "proto3";
            package shop;
            message OrderRequest { string sku = 1; optional string note = 2; }

            """.utf8
        ).write(to: user.appendingPathComponent("Protos/shop/order.proto"))

        let script = courier.appendingPathComponent("scripts/generate-protos.sh")
        let job = ["--package", user.path, "--job", "Protos|Sources/ShopProtos|ShopProtos|Sources/ShopModels"]
        func run(_ arguments: [String]) async throws -> (Int32, String) {
            try await GeneratorTests.run(
                script, arguments, in: folder, environment: ["COURIER_PROTOBUF_GEN": generator.path])
        }
        var (status, output) = try await run(job)
        #expect(status == 0, "\(output)")
        let model = user.appendingPathComponent("Sources/ShopModels/shop_order.pb.swift")
        let header = user.appendingPathComponent("Sources/ShopProtos/include/ShopProtos.h")
        #expect(FileManager.default.fileExists(atPath: header.path))
        var swift = try String(contentsOf: model, encoding: .utf8)
        #expect(swift.contains("\n    public var note: String?\n"), "Courier's .swift-format: 4 spaces")
        #expect(swift.contains("import ShopProtos"))
        (status, output) = try await run(["--check"] + job)
        #expect(status == 0, "\(output)")

        // The package's own configuration wins; --check compares with what it gives.
        try Data(#"{ "version": 1, "indentation": { "spaces": 2 } }"#.utf8)
            .write(to: user.appendingPathComponent(".swift-format"))
        (status, output) = try await run(["--check"] + job)
        #expect(status == 1 && output.contains("Sources/ShopModels is out of date"), "\(output)")
        (status, output) = try await run(job)
        #expect(status == 0, "\(output)")
        swift = try String(contentsOf: model, encoding: .utf8)
        #expect(swift.contains("\n  public var note: String?\n"))

        // Drift in the user's package; a missing proto folder is named.
        try (swift + "// edited\n").write(to: model, atomically: true, encoding: .utf8)
        (status, output) = try await run(["--check"] + job)
        #expect(status == 1 && output.contains("Sources/ShopModels is out of date"), "\(output)")
        (status, output) = try await run(["--package", user.path, "--job", "Missing|Sources/A|A|Sources/B"])
        #expect(status == 1 && output.contains("Missing: no such folder of .proto files"), "\(output)")
    }

    /// A user's protos that import a folder of shared protos (the job's fifth part, as
    /// `--include` of the plugin) and Google's well-known types (from Courier's copies): the C
    /// target gets the C of every imported file, the models the Swift of the shared file only,
    /// and the well-known types are Swift types.
    @Test func importsFromAnotherFolderAndWellKnownTypes() async throws {
        let generator = try #require(Self.generator(), "courier-protobuf-gen is not built (swift build --build-tests)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "courier-imports-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let courier = folder.appendingPathComponent("courier")
        let user = folder.appendingPathComponent("user")
        try Self.copyScript(to: courier)
        for (path, text) in [
            (
                "Protos/shop/order.proto",
                """
                syntax = "proto3";
                package shop;
                import "common/money.proto";
                import "google/protobuf/timestamp.proto";
                import "google/protobuf/wrappers.proto";
                message Order { common.Money total = 1; google.protobuf.Timestamp placed_at = 2;
                  google.protobuf.StringValue note = 3; optional int32 count = 4; }
                """
            ),
            (
                "Shared/common/money.proto",
                "syntax = \"proto3\";\npackage common;\nmessage Money { int64 units = 1; }\n"
            ),
        ] {
            let file = user.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: file)
        }
        let script = courier.appendingPathComponent("scripts/generate-protos.sh")
        func run(_ job: String, check: Bool = false) async throws -> (Int32, String) {
            try await GeneratorTests.run(
                script, (check ? ["--check"] : []) + ["--package", user.path, "--job", job], in: folder,
                environment: ["COURIER_PROTOBUF_GEN": generator.path])
        }
        // Without the shared folder, protoc names the import it cannot find.
        var (status, output) = try await run("Protos|Sources/ShopProtos|ShopProtos|Sources/ShopModels")
        #expect(status != 0 && output.contains("common/money.proto"), "\(output)")

        let job = "Protos|Sources/ShopProtos|ShopProtos|Sources/ShopModels|Shared"
        (status, output) = try await run(job)
        #expect(status == 0, "\(output)")
        let c = user.appendingPathComponent("Sources/ShopProtos")
        for file in ["shop/order.pb-c.c", "common/money.pb-c.c", "google/protobuf/timestamp.pb-c.c"] {
            #expect(FileManager.default.fileExists(atPath: c.appendingPathComponent(file).path), "\(file)")
        }
        let models = try FileManager.default.contentsOfDirectory(
            atPath: user.appendingPathComponent("Sources/ShopModels").path)
        #expect(models.sorted() == ["common_money.pb.swift", "shop_order.pb.swift"])
        let order = try String(
            contentsOf: user.appendingPathComponent("Sources/ShopModels/shop_order.pb.swift"), encoding: .utf8)
        #expect(order.contains("public var total: Money?"))
        #expect(order.contains("public var placedAt: ProtobufTimestamp?"))
        #expect(order.contains("public var note: String?"))
        (status, output) = try await run(job, check: true)
        #expect(status == 0, "\(output)")
    }
}

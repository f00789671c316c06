import CourierTesting
import Foundation
import Testing

/// courier-protobuf-gen on protos written for the test, in a temporary folder: Swift keywords,
/// enum prefixes and aliases, nested types, shadowed standard types and proto2 defaults give
/// source that parses, and what cannot be a Swift struct fails with a message naming it.
@Suite struct GeneratorTests {
    private struct Run {
        var status: Int32
        var output: String
        var files: [String: String]
    }

    /// Runs protoc-c and the generator on `protos` (file name → text).
    private func generate(_ protos: [String: String]) async throws -> Run {
        let generator = try #require(GeneratorDriftTests.generator(), "courier-protobuf-gen is not built")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-gen-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, text) in protos {
            try Data(text.utf8).write(to: folder.appendingPathComponent(name))
        }
        let descriptors = folder.appendingPathComponent("descriptors.pb").path
        let (protocStatus, protocOutput) = try await Self.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["protoc-c", "--descriptor_set_out=\(descriptors)", "-I\(folder.path)"] + protos.keys.sorted(), in: folder)
        #expect(protocStatus == 0, "\(protocOutput)")
        let out = folder.appendingPathComponent("out")
        let (status, output) = try await Self.run(
            generator, ["--descriptor-set", descriptors, "--c-module", "TestProtos", "--output", out.path], in: folder)
        var files: [String: String] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? [] {
            files[name] = try String(contentsOf: out.appendingPathComponent(name), encoding: .utf8)
        }
        if status == 0 {
            // The output must at least parse (type checking needs the C module: the committed
            // models compile in this package).
            for name in files.keys {
                let (parseStatus, parseOutput) = try await Self.run(
                    URL(fileURLWithPath: "/usr/bin/env"), ["swiftc", "-parse", out.appendingPathComponent(name).path],
                    in: folder)
                #expect(parseStatus == 0 && !parseOutput.contains("warning:"), "\(name): \(parseOutput)")
            }
        }
        return Run(status: status, output: output, files: files)
    }

    /// Runs `executable` in `folder`, with `environment` added to this process's, and waits for
    /// it. Through `ChildProcess` (posix_spawn), not Foundation's `Process`, which crashed the
    /// test binary when suites launched processes at the same time.
    /// - Returns: its exit status and its standard output and error, interleaved.
    static func run(
        _ executable: URL, _ arguments: [String], in folder: URL, environment: [String: String] = [:]
    ) throws -> (Int32, String) {
        // sh changes folder and joins standard error to the output; env adds the variables.
        let script = #"cd "$1" && shift && exec "$@" 2>&1"#
        let assignments = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        // A script the test has just copied is read by bash, not executed: executing a file
        // fails with "Text file busy" while any process still holds it open for writing, and a
        // process forked by another test at the moment of the copy inherits that descriptor
        // until it execs (it failed the suite now and then).
        let command = executable.pathExtension == "sh" ? ["bash", executable.path] : [executable.path]
        let (status, output) = try ChildProcess.run(
            "/bin/sh", ["-c", script, "sh", folder.path, "/usr/bin/env"] + assignments + command + arguments,
            capture: .capture)
        return (status, String(decoding: output, as: UTF8.self))
    }

    /// `run` on a thread of its own (`offPool`), for async tests: the seconds of a child
    /// process do not hold one of the task pool's threads (two on two cores) that the rest of
    /// the suite needs.
    static func run(
        _ executable: URL, _ arguments: [String], in folder: URL, environment: [String: String] = [:]
    ) async throws -> (Int32, String) {
        try await offPool { try run(executable, arguments, in: folder, environment: environment) }
    }

    @Test func awkwardNamesGiveValidSwift() async throws {
        let result = try await generate([
            "awkward.proto": """
            syntax = "proto3";
            package awkward.names;
            enum Coffee {
              option allow_alias = true;
              COFFEE_UNKNOWN = 0;
              COFFEE_FLAT_WHITE = 1;
              COFFEE_LONG_BLACK = 2;
              COFFEE_AMERICANO = 2;
            }
            enum Mode { MODE_1 = 0; MODE_2 = 1; }
            message Data { bytes blob = 1; }
            message Holder {
              string default = 1;
              int32 class = 2;
              Data data = 3;
              bytes raw = 4;
              message Inner { enum Kind { KIND_A = 0; KIND_B = 1; } Kind kind = 1; repeated Inner children = 2; }
              Inner inner = 5;
              map<int64, Inner> by_id = 6;
              oneof choice { string text = 7; Coffee coffee = 8; }
              optional double ratio = 9;
              string _leading = 10;
              int32 inout = 11;
            }
            """
        ])
        #expect(result.status == 0, "\(result.output)")
        let source = try #require(result.files["awkward.pb.swift"])
        #expect(source.contains("public var `default`: String"))
        #expect(source.contains("public var `class`: Int32"))
        #expect(source.contains("public var raw: Foundation.Data"), "a message named Data shadows Foundation's")
        #expect(source.contains("case 1: self = .flatWhite") && source.contains("case 2: self = .longBlack"))
        #expect(source.contains("public static let americano = Coffee.longBlack"))
        #expect(source.contains("case 0: self = .mode1"), "prefix kept when stripping leaves no valid name")
        #expect(
            source.contains("public enum Kind: ProtobufEnum") && source.contains("public var kind: Holder.Inner.Kind"))
        #expect(source.contains("case unrecognized(Int32)"), "proto3 enums are open")
        #expect(source.contains("public var byId: [Int64: Holder.Inner]"))
        #expect(source.contains("/// Member of oneof `choice`: set at most one.\n    public var text: String?"))
        #expect(source.contains("public var ratio: Double?"))
        #expect(source.contains("public var leading: String"))
        #expect(source.contains("`default`: try message.string(1)") == false, "labels need no backticks")
        #expect(source.contains("`inout`: try message.int32(11)"), "but inout does")
        #expect(source.contains("courier_descriptor_awkward_names_Holder_Inner()"))
    }

    @Test func proto2DefaultsAreDocumented() async throws {
        let result = try await generate([
            "old.proto": """
            syntax = "proto2";
            message Old {
              enum Level { LOW = 1; HIGH = 2; }
              required int32 id = 1;
              optional string greeting = 2 [default = "say \\"hi\\""];
              optional Level level = 3 [default = HIGH];
            }
            """
        ])
        #expect(result.status == 0, "\(result.output)")
        let source = try #require(result.files["old.pb.swift"])
        #expect(source.contains("/// Required.\n    public var id: Int32"))
        #expect(source.contains("Unset (nil) means the proto default, `\"say \\\"hi\\\"\"`."))
        #expect(source.contains("Unset (nil) means the proto default, `.high`.\n    public var level: Old.Level?"))
    }

    /// A message that contains itself through singular fields (directly or through another
    /// message) is generated with those fields boxed (`@Indirect`); fields off the cycle, arrays
    /// and maps stay plain. (Before issue 19 the generator refused such a schema.)
    @Test func aMessageThatContainsItselfIsBoxed() async throws {
        let result = try await generate([
            "tree.proto": """
            syntax = "proto3";
            package tree;
            message Node { Leaf leaf = 1; repeated Node children = 2; Node loop = 3; map<string, Node> named = 4; }
            message Leaf { Node parent = 1; Other other = 2; }
            message Other { Leaf leaf = 1; }
            message Holder { Node node = 1; }
            """
        ])
        #expect(result.status == 0, "\(result.output)")
        let source = try #require(result.files["tree.pb.swift"])
        #expect(source.contains("@Indirect public var leaf: Leaf?\n"))
        #expect(source.contains("@Indirect public var loop: Node?\n"))
        #expect(source.contains("@Indirect public var parent: Node?\n"))
        #expect(source.contains("@Indirect public var other: Other?\n"))
        #expect(source.contains("    public var children: [Node]\n"))
        #expect(source.contains("    public var named: [String: Node]\n"))
        #expect(source.contains("    public var node: Node?\n"), "Holder.node is not on a cycle")
        #expect(!source.contains("@Indirect public var node"))
    }

    @Test func sameNameInTwoPackagesFails() async throws {
        let result = try await generate([
            "a.proto": "syntax = \"proto3\";\npackage first;\nmessage Thing { int32 a = 1; }\n",
            "b.proto": "syntax = \"proto3\";\npackage second;\nmessage Thing { int32 b = 1; }\n",
        ])
        #expect(result.status == 1)
        #expect(
            result.output.contains("first.Thing and second.Thing")
                || result.output.contains("second.Thing and first.Thing"))
    }

    /// Fields that cannot be Swift properties of their own fail with a message naming the file
    /// and the fields, rather than giving Swift that does not compile: two names with one
    /// camelCase (proto2 allows `foo_bar` and `fooBar`, or `leading` and `_leading`; proto3 does not),
    /// a field named `self` (every `self.x` of the struct would be the field), and `_`, which has
    /// no camelCase name at all.
    @Test func fieldsWithoutTheirOwnSwiftNameFail() async throws {
        let cases: [(String, [String])] = [
            (
                "syntax = \"proto2\";\npackage p;\nmessage M { optional int32 leading = 1; optional int32 _leading = 2; }\n",
                ["clash.proto", "p.M", "leading and _leading", "Swift property leading"]
            ),
            (
                "syntax = \"proto2\";\npackage p;\nmessage M { optional int32 foo_bar = 1; optional int32 fooBar = 2; }\n",
                ["clash.proto", "p.M", "foo_bar and fooBar", "Swift property fooBar"]
            ),
            ("syntax = \"proto3\";\npackage p;\nmessage M { int32 self = 1; }\n", ["clash.proto", "p.M.self"]),
            ("syntax = \"proto3\";\npackage p;\nmessage M { int32 self_ = 1; }\n", ["clash.proto", "p.M.self_"]),
            ("syntax = \"proto3\";\npackage p;\nmessage M { int32 _ = 1; }\n", ["clash.proto", "p.M._"]),
        ]
        for (proto, expected) in cases {
            let result = try await generate(["clash.proto": proto])
            #expect(result.status == 1, "\(proto)")
            for text in expected { #expect(result.output.contains(text), "\(proto): \(result.output)") }
        }
    }

    /// Enum values whose Swift case would clash with what the generated enum declares, or have
    /// no name at all, fail with a message naming the enum instead of giving Swift that does not
    /// compile.
    @Test func enumValuesWithoutTheirOwnSwiftNameFail() async throws {
        let cases: [(String, [String])] = [
            (
                "syntax = \"proto3\";\npackage p;\nenum Kind { KIND_A = 0; KIND_ALL_CASES = 1; }\n",
                ["kind.proto", "p.Kind", "allCases"]
            ),
            ("syntax = \"proto3\";\npackage p;\nenum E { _ = 0; _A = 1; }\n", ["kind.proto", "p.E", "empty"]),
        ]
        for (proto, expected) in cases {
            let result = try await generate(["kind.proto": proto])
            #expect(result.status == 1, "\(proto)")
            for text in expected { #expect(result.output.contains(text), "\(proto): \(result.output)") }
        }
    }

    /// A field whose type a nested type of its message (or of a message around it) hides: in
    /// Swift, `Tricky` inside `Shadow` is `Shadow.Tricky`, so the field would have the wrong
    /// type (and be written with the wrong descriptor). The generator fails naming both.
    @Test func aTypeHiddenByANestedTypeFails() async throws {
        let header = "syntax = \"proto3\";\npackage p;\nmessage Tricky { int32 x = 1; }\n"
        let cases: [(String, [String])] = [
            (
                "message Shadow { message Tricky { int32 y = 1; } Tricky inner = 1; "
                    + "message Deep { .p.Tricky outer = 1; } }\n",
                ["p.Shadow.Deep.outer", "p.Shadow.Tricky"]
            ),
            (
                "message Other { message Inner { int32 z = 1; } }\n"
                    + "message Shadow { message Other { int32 w = 1; } .p.Other.Inner far = 1; }\n",
                ["p.Shadow.far", "p.Shadow.Other"]
            ),
            ("message Shadow { enum Tricky { A = 0; } repeated .p.Tricky many = 1; }\n", ["p.Shadow.many"]),
            // Inside Nest, `Nest.Nest` would be the nested type's nested type.
            (
                "message Nest { message Nest { int32 x = 1; } Nest inner = 1; }\n",
                ["p.Nest.inner: its type p.Nest.Nest is Nest.Nest in Swift, but there Nest is p.Nest.Nest"]
            ),
        ]
        for (proto, expected) in cases {
            let result = try await generate(["shadow.proto": header + proto])
            #expect(result.status == 1, "\(proto)")
            for text in ["shadow.proto"] + expected {
                #expect(result.output.contains(text), "\(proto): \(result.output)")
            }
        }
    }

    /// protoc-c writes `inf` and `nan` into the C of a float or double `[default = …]` (an
    /// undeclared identifier: the C target does not compile), so the generator fails naming
    /// the field before anything is written.
    @Test func infiniteAndNaNDefaultsFail() async throws {
        for value in ["inf", "-inf", "nan"] {
            let result = try await generate([
                "limits.proto": """
                syntax = "proto2";
                package p;
                message Limits { optional int32 id = 1; optional double ceiling = 2 [default = \(value)]; }
                """
            ])
            #expect(result.status == 1, "\(value)")
            #expect(
                result.output.contains("limits.proto") && result.output.contains("p.Limits.ceiling")
                    && result.output.contains("[default = \(value)]"), "\(result.output)")
        }
    }
}

import CourierTesting
import Foundation
import Testing

/// courier-protobuf-gen's Swift for schemas written for other languages, compiled and run: the
/// generated models, the C protoc-c makes for the same files and a program that round-trips
/// their values, linked with the CourierProtobuf this test runs with. (GeneratorTests only
/// parses the Swift; a name can parse and still not type-check, or type-check as the wrong type.)
@Suite struct GeneratedCodeBuildTests {
    /// The build folder of the test binary (the generator is built next to it).
    private static func binFolder() throws -> URL {
        try #require(GeneratorDriftTests.generator(), "courier-protobuf-gen is not built (swift build --build-tests)")
            .deletingLastPathComponent()
    }

    /// The sanitizer this test binary was built with (`scripts/sanitizers.sh`): the objects it
    /// links in are instrumented, so the program links the same runtime.
    private static let sanitizer: String? = {
        if dlsym(nil, "__tsan_init") != nil { return "thread" }
        if dlsym(nil, "__asan_init") != nil { return "address" }
        return nil
    }()

    /// Generates `protos` (file name → text) into a package in a temporary folder with
    /// scripts/generate-protos.sh, compiles the C and the Swift with `main` (the program's
    /// top-level code, in the models' module) and runs the program. The steps take seconds of
    /// child processes: they run on a thread of their own, not on the task pool the rest of
    /// the suite's tests share (`offPool`).
    /// - Returns: the program's exit status and output, or the failing step's.
    private static func buildAndRun(_ protos: [String: String], main: String) async throws -> (
        status: Int32, output: String
    ) {
        try await offPool { try buildAndRunBlocking(protos, main: main) }
    }

    private static func buildAndRunBlocking(_ protos: [String: String], main: String) throws -> (
        status: Int32, output: String
    ) {
        let bin = try Self.binFolder()
        let generator = bin.appendingPathComponent("courier-protobuf-gen")
        let root = GeneratorDriftTests.root
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-build-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let protoFolder = folder.appendingPathComponent("Protos")
        try FileManager.default.createDirectory(at: protoFolder, withIntermediateDirectories: true)
        for (name, text) in protos { try Data(text.utf8).write(to: protoFolder.appendingPathComponent(name)) }

        var (status, output) = try GeneratorTests.run(
            root.appendingPathComponent("scripts/generate-protos.sh"),
            ["--package", folder.path, "--job", "Protos|Sources/TrickyProtos|TrickyProtos|Sources/TrickyModels"],
            in: folder, environment: ["COURIER_PROTOBUF_GEN": generator.path])
        guard status == 0 else { return (status, "generate-protos.sh: \(output)") }

        // The C target, as SwiftPM would build it.
        let cTarget = folder.appendingPathComponent("Sources/TrickyProtos")
        var objects: [String] = []
        let cFiles = FileManager.default.enumerator(atPath: cTarget.path)?.compactMap { $0 as? String } ?? []
        for (index, file) in cFiles.filter({ $0.hasSuffix(".c") }).sorted().enumerated() {
            let object = folder.appendingPathComponent("c\(index).o").path
            (status, output) = try GeneratorTests.run(
                URL(fileURLWithPath: "/usr/bin/env"),
                ["clang", "-c", "-I", cTarget.appendingPathComponent("include").path, file, "-o", object],
                in: cTarget)
            guard status == 0 else { return (status, "clang \(file): \(output)") }
            objects.append(object)
        }

        // CourierProtobuf and what it links, as the demo links them (without the demo's own
        // objects and without CourierProtos, whose descriptors are not this schema's).
        let linkList = try String(
            contentsOf: bin.appendingPathComponent("courier-demo.product/Objects.LinkFileList"), encoding: .utf8)
        objects += linkList.split(separator: "\n").map(String.init).filter {
            !$0.contains("/courier_demo.build/") && !$0.contains("/CourierProtos.build/")
        }
        let modules = ["CCurlShim", "CPosixShim", "CSanitizerHooks"].flatMap {
            ["-Xcc", "-fmodule-map-file=" + bin.appendingPathComponent("\($0).build/module.modulemap").path]
        }
        let systemLibraries = ["CCurl", "CProtobufC", "CPsl", "CSQLite", "CZlib"].flatMap {
            ["-I", root.appendingPathComponent("Sources/\($0)").path]
        }
        let models = folder.appendingPathComponent("Sources/TrickyModels")
        let swiftFiles = try FileManager.default.contentsOfDirectory(atPath: models.path).filter {
            $0.hasSuffix(".swift")
        }.map { models.appendingPathComponent($0).path }
        let mainFile = folder.appendingPathComponent("main.swift")
        try Data(main.utf8).write(to: mainFile)
        let program = folder.appendingPathComponent("tricky").path
        (status, output) = try GeneratorTests.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["swiftc", "-swift-version", "6", "-warnings-as-errors", "-module-name", "TrickyModels"]
                + [
                    "-I", bin.appendingPathComponent("Modules").path, "-I",
                    cTarget.appendingPathComponent("include").path,
                ]
                + systemLibraries + modules + swiftFiles + [mainFile.path] + objects
                + ["-lcurl", "-lsqlite3", "-lz", "-lpsl", "-lprotobuf-c", "-lstdc++", "-o", program]
                + (sanitizer.map { ["-sanitize=\($0)"] } ?? []),
            in: folder)
        guard status == 0 else { return (status, "swiftc: \(output)") }
        return try GeneratorTests.run(URL(fileURLWithPath: program), [], in: folder)
    }

    /// Builds `protos` with `program` (top-level code after `prelude`) and expects the program to
    /// get to its end.
    private func expectRoundTrips(
        _ protos: [String: String], program: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let (status, output) = try await Self.buildAndRun(
            protos, main: Self.prelude + program + "print(\"round trips: ok\")\n")
        #expect(status == 0 && output.contains("round trips: ok"), "\(output)", sourceLocation: sourceLocation)
    }

    /// The program's helpers: `roundTrip(value)` encodes and decodes `value` and fails the
    /// program when what comes back differs.
    private static let prelude = """
        import CourierProtobuf
        import Foundation

        func roundTrip<M: CourierProtobuf.ProtobufMessage & CourierProtobuf.ProtobufDirectCodable & Equatable>(
            _ value: M
        ) throws {
            let bytes = try ProtobufEncoder().encode(value)
            let back = try ProtobufDecoder().decode(M.self, from: bytes)
            guard back == value else {
                print("\\(M.self) came back as \\(back), not \\(value)")
                exit(1)
            }
        }

        """

    /// Names that are Swift keywords or standard types, as messages, fields, enum values and
    /// nested types, in one proto3 file; and the shapes: empty messages, the largest field
    /// number, packed and unpacked repeated fields, recursion through a map value and a oneof.
    @Test func awkwardProto3SchemaCompilesAndRoundTrips() async throws {
        try await expectRoundTrips(
            [
                "names.proto": """
                syntax = "proto3";
                package tricky.names;

                message Type { int32 value = 1; }
                message Protocol { int32 value = 1; }
                message Self { int32 value = 1; }
                message Error { string message = 1; }
                message Result { Error error = 1; Type type = 2; Protocol protocol = 3; Self me = 4; }
                message String { string value = 1; }
                message Data { bytes value = 1; }
                message Date { int64 seconds = 1; }
                message Optional { int32 value = 1; }
                message Response { int32 code = 1; }
                message Endpoint { string path = 1; }
                message Bool { bool value = 1; }
                message Array { repeated int32 values = 1; }
                message Dictionary { map<string, int32> values = 1; }
                message Names { int32 value = 1; }
                message Indirect { int32 value = 1; }
                // Names the generated code itself uses.
                message Int32 { int32 value = 1; }
                message Sendable { int32 value = 1; }
                message Hashable { int32 value = 1; }
                message Codable { int32 value = 1; }
                message CaseIterable { int32 value = 1; }
                message ProtobufMessage { int32 value = 1; }
                message ProtobufDirectCodable { int32 value = 1; }
                message ProtobufEnum { int32 value = 1; }
                message UnsafePointer { int32 value = 1; }
                // Keywords as the names of types that fields name.
                message Any { int32 value = 1; }
                message Holder {
                  message Type { int32 z = 1; }
                  message Self { int32 q = 1; }
                  message Protocol { int32 r = 1; }
                  message Kinds { enum Type { TYPE_A = 0; TYPE_B = 1; } Type kind = 1; }
                  Type type = 1;
                  Self me = 2;
                  Protocol protocol = 3;
                  .tricky.names.Any any = 4;
                  repeated Type types = 5;
                  map<string, Type> by_name = 6;
                  Kinds kinds = 7;
                }
                message Empty {}

                enum Kind {
                  KIND_UNSPECIFIED = 0;
                  KIND_SELF = 1;
                  KIND_TYPE = 2;
                  KIND_INIT = 3;
                  KIND_DEFAULT = 4;
                  KIND_PROTOCOL = 5;
                  KIND_RAW_VALUE = 6;
                  KIND_HASH_VALUE = 7;
                }
                enum Digits { DIGITS_0 = 0; DIGITS_1 = 1; }

                message Fields {
                  int32 init = 2;
                  int32 deinit = 3;
                  int32 subscript = 4;
                  int32 associatedtype = 5;
                  int32 is_equal = 6;
                  int32 hash_value = 7;
                  string description = 8;
                  int32 Type = 9;
                  int32 Protocol = 10;
                  int32 Self = 11;
                  int32 message = 13;
                  int32 protobuf_descriptor = 14;
                  string debug_description = 15;
                  Kind kind = 16;
                  int32 true = 17;
                  int32 nil = 18;
                  int32 throws = 19;
                  int32 try = 21;
                  int32 await = 22;
                  int32 some = 23;
                  int32 any = 24;
                  int32 new_value = 30;
                  int32 encode = 31;
                  int32 write = 32;
                  int32 __leading = 33;
                  int32 trailing_ = 34;
                  int32 let = 36;
                  int32 var = 37;
                  int32 struct = 39;
                  int32 public = 40;
                  int32 Result = 41;
                  String string = 42;
                  Data data = 43;
                  bytes blob = 44;
                  repeated String strings = 45;
                  map<string, Data> datas = 46;
                  Digits digits = 47;
                  oneof _opt { int32 opt = 50; }
                  int32 in = 72;
                  int32 inout = 73;
                  int32 Optional = 74;
                  int32 unknown = 75;
                  Empty empty = 76;
                }

                // Fields named in PascalCase (as for C#) after the standard types they hold.
                message Pascal {
                  double Double = 1;
                  repeated float Float = 2;
                  bool Bool = 3;
                  int64 Int64 = 4;
                  uint32 UInt32 = 5;
                  map<string, uint64> UInt64 = 6;
                  bytes Data = 7;
                  optional int32 Int32 = 8;
                }
                message OneofLikeField { oneof value { int32 a = 1; string b = 2; } int32 c = 3; }
                message OneofLikeMessage { oneof oneof_like_message { int32 a = 1; string b = 2; } }
                message Parent {
                  message Child { int32 x = 1; }
                  Child child = 1;
                  message Fields { int32 y = 1; }
                  Fields fields = 2;
                  message String { string s = 1; }
                  String s = 3;
                  string plain = 4;
                }
                message Big {
                  int32 last = 536870911;
                  repeated int32 packed = 2;
                  repeated int32 unpacked = 3 [packed = false];
                  repeated Empty empties = 4;
                }
                message MapTree { map<string, MapTree> children = 1; int32 value = 2; }
                message OneofTree { oneof node { OneofTree inner = 1; int32 leaf = 2; } }

                """
            ],
            program: """
                try roundTrip(Result(error: Error(message: "e"), type: Type(value: 1), protocol: `Protocol`(value: 2),
                    me: `Self`(value: 3)))
                try roundTrip(String(value: "s"))
                try roundTrip(Data(value: Foundation.Data([0, 1, 255])))
                try roundTrip(Dictionary(values: ["a": 1]))
                try roundTrip(Array(values: [1, -2]))
                try roundTrip(Empty())
                try roundTrip(Int32(value: 1))
                try roundTrip(Sendable(value: 2))
                try roundTrip(ProtobufMessage(value: 3))
                try roundTrip(UnsafePointer(value: 4))
                // In an expression, `Holder.`Type`` is Holder's metatype: the type goes after `as`.
                try roundTrip(
                    Holder(
                        type: .init(z: 1), me: Holder.`Self`(q: 2), protocol: .init(r: 3), any: `Any`(value: 4),
                        types: [.init(z: 5)], byName: ["t": .init(z: 6) as Holder.`Type`],
                        kinds: Holder.Kinds(kind: .b)))
                try roundTrip(Holder(byName: ["zero": .init() as Holder.`Type`]))
                var fields = Fields(init: 1, deinit: 2, subscript: 3, associatedtype: 4, isEqual: 5, hashValue: 6)
                fields.description = "described"
                fields.`Type` = 7
                fields.`Self` = 8
                fields.message = 9
                fields.kind = .`self`
                fields.`true` = 10
                fields.string = String(value: "x")
                fields.strings = [String(value: "y")]
                fields.datas = ["k": Data(value: Foundation.Data([7]))]
                fields.digits = .digits1
                fields.opt = 0
                fields.`inout` = 11
                fields.leading = 12
                fields.trailing = 13
                fields.empty = Empty()
                try roundTrip(fields)
                for kind in Kind.allCases { try roundTrip(Fields(kind: kind)) }
                try roundTrip(Fields(kind: .`init`))
                try roundTrip(Fields(kind: .rawValue))
                try roundTrip(Fields(kind: .unrecognized(99)))
                try roundTrip(
                    Pascal(
                        Double: 1.5, Float: [2.5], Bool: true, Int64: -4, UInt32: 5, UInt64: ["u": 6],
                        Data: Foundation.Data([7]), Int32: 0))
                try roundTrip(OneofLikeField(a: 1, c: 2))
                try roundTrip(OneofLikeMessage(b: "b"))
                try roundTrip(Parent(child: Parent.Child(x: 1), fields: Parent.Fields(y: 2), s: Parent.String(s: "z")))
                try roundTrip(Big(last: 42, packed: [1, 2, 3], unpacked: [4, 5], empties: [Empty(), Empty()]))
                try roundTrip(MapTree(children: ["a": MapTree(children: ["b": MapTree(value: 2)], value: 1)]))
                try roundTrip(OneofTree(inner: OneofTree(inner: OneofTree(leaf: 3))))
                let last = try ProtobufEncoder().encode(Big(last: 1))
                guard last == Foundation.Data([0xF8, 0xFF, 0xFF, 0xFF, 0x0F, 0x01]) else {
                    print("field 536870911 encoded as \\(Swift.Array(last))")
                    exit(1)
                }

                """)
    }

    /// A schema written for C#: fields in PascalCase, named after their types, and no message
    /// that makes the generator qualify the standard types.
    @Test func pascalCaseFieldsNamedLikeTheirTypes() async throws {
        try await expectRoundTrips(
            [
                "csharp.proto": """
                syntax = "proto3";
                package tricky.csharp;
                message Packet {
                  bytes Data = 1;
                  string String = 2;
                  double Double = 3;
                  repeated bytes Chunks = 4;
                  map<string, bytes> Named = 5;
                }

                """
            ],
            program: """
                try roundTrip(
                    Packet(Data: Data([1, 2]), String: "s", Double: 0.5, Chunks: [Data([3])], Named: ["n": Data([4])]))
                try roundTrip(Packet())

                """)
    }

    /// proto2: `required`, a `[default = …]` of every scalar kind (extremes, negative numbers,
    /// string and bytes escapes, control characters), negative and clashing enum values, packed
    /// and unpacked repeated fields, extensions (ignored).
    @Test func proto2SchemaCompilesAndRoundTrips() async throws {
        try await expectRoundTrips(
            [
                "old.proto": #"""
                syntax = "proto2";
                package tricky.old;

                enum Clash { CLASH_FOO_BAR = 0; FOO_BAR = 1; }
                enum Neg { NEG_MINUS = -1; NEG_ZERO = 0; }

                message Defaults {
                  required int32 id = 1;
                  optional int32 i32 = 2 [default = -2147483648];
                  optional int64 i64 = 3 [default = -9223372036854775807];
                  optional uint32 u32 = 4 [default = 4294967295];
                  optional uint64 u64 = 5 [default = 18446744073709551615];
                  optional sint32 s32 = 6 [default = -5];
                  optional sint64 s64 = 7 [default = -6];
                  optional fixed32 f32 = 8 [default = 7];
                  optional fixed64 f64 = 9 [default = 8];
                  optional sfixed32 sf32 = 10 [default = -9];
                  optional sfixed64 sf64 = 11 [default = -10];
                  optional float fl = 12 [default = -1.5e10];
                  optional double d = 13 [default = 1e300];
                  optional double d2 = 14 [default = -0.0];
                  optional bool b = 15 [default = true];
                  optional string s = 16 [default = "a\"b\\c\n\t\r\x01\u00e9 */ \\u{41} \\(x) `x`"];
                  optional bytes by = 17 [default = "\000\001\377abc\"\\\n"];
                  optional Neg neg = 18 [default = NEG_MINUS];
                  optional Clash clash = 19 [default = FOO_BAR];
                  optional string empty = 20 [default = ""];
                  required string req = 21;
                  optional string comment_end = 22 [default = "*/ /* ` "];
                  repeated int32 packed = 23 [packed = true];
                  repeated int32 unpacked = 24;
                  repeated Neg negs = 25;
                }
                message Extendable {
                  optional int32 a = 1;
                  extensions 100 to 199;
                }
                extend Extendable {
                  optional int32 ext_value = 100;
                }

                """#
            ],
            program: """
                try roundTrip(Defaults(id: 0, req: ""))
                try roundTrip(
                    Defaults(
                        id: -1, i32: -2_147_483_648, i64: .min, u32: .max, u64: .max, s32: 0, s64: 0, f32: 0, f64: 0,
                        sf32: 0, sf64: 0, fl: 0, d: -0.0, d2: 0, b: false, s: "", by: Data(), neg: .zero, clash: .fooBar,
                        empty: "x", req: "r", commentEnd: nil, packed: [1, -1], unpacked: [2, -2], negs: [.minus, .zero]))
                try roundTrip(Extendable(a: 1))

                """)
    }

    /// protoc-c 1.4.1 crashes (a segmentation fault) writing the C of a message with a group;
    /// the script refuses the group with the generator's message before it runs protoc-c for C.
    @Test func aGroupIsRefusedBeforeProtocCCrashes() async throws {
        let (status, output) = try await Self.buildAndRun(
            [
                "group.proto": """
                syntax = "proto2";
                package g;
                message WithGroup { optional group Result = 1 { optional int32 url = 2; } }

                """
            ],
            main: "")
        #expect(status != 0)
        #expect(output.contains("g.WithGroup: groups are not supported"), "\(output)")
        #expect(!output.contains("Segmentation fault"), "\(output)")
    }
}

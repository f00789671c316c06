import CourierProtoModels
import CourierProtobuf
import CourierTesting
import Foundation
import Testing

/// Courier against Google's runtime (python3-protobuf), both ways, on random messages of the
/// test schemas that scripts/protobuf-differential.py writes in every form a parser must accept
/// (two messages concatenated, packed fields unpacked and the reverse, non-minimal varints,
/// explicit defaults, reversed field order; scalars at their bounds, UTF-8 of every length,
/// unknown enum numbers). Courier decodes each to the value Python reads from the same bytes
/// (generated and hand-written models), and Python reads each value Courier encodes as it was.
/// Skipped without python3-protobuf; the goldens (GoldenTests) need no Python.
@Suite(.enabled(if: Python.protobuf != nil, "needs python3 with python3-protobuf (apt-get install python3-protobuf)"))
struct PythonDifferentialTests {
    /// Fixed, so that a failure repeats; `COURIER_DIFFERENTIAL_SEED` tries others.
    static let seed = ProcessInfo.processInfo.environment["COURIER_DIFFERENTIAL_SEED"].flatMap { Int($0) } ?? 17
    static let count = 700

    struct Case: Decodable {
        var message: String
        var variant: String
        var hex: String
        var value: String
        var openEnums: Bool
    }

    struct Reading: Decodable {
        var value: String?
        var error: String?
    }

    static var models: [String: any DifferentialModel.Type] {
        [
            "courier.test.Scalars": Differential<CourierProtoModels.Scalars, Scalars>.self,
            "courier.test.Repeated": Differential<CourierProtoModels.Repeated, Repeated>.self,
            "courier.test.Maps": Differential<CourierProtoModels.Maps, Maps>.self,
            "courier.test.Choice": Differential<CourierProtoModels.Choice, Choice>.self,
            "courier.test.Category": Differential<CourierProtoModels.Category, Category>.self,
            // The hand-written Legacy reads proto2 defaults into non-optional properties, which
            // JSON cannot fill; Record has no hand-written model.
            "courier.test.Legacy": Differential<CourierProtoModels.Legacy, CourierProtoModels.Legacy>.self,
            "courier.test.Record": Differential<CourierProtoModels.Record, CourierProtoModels.Record>.self,
        ]
    }

    static func generated() async throws -> [Case] {
        let output = try await Python.run(["generate", "\(seed)", "\(count)"])
        return try JSONDecoder().decode([Case].self, from: output)
    }

    @Test func courierDecodesWhatPythonWrites() async throws {
        let cases = try await Self.generated()
        #expect(cases.count == Self.count)
        var variants: [String: Int] = [:]
        for (index, item) in cases.enumerated() {
            let model = try #require(Self.models[item.message])
            let bytes = Data(hex: item.hex)
            let mismatch = model.mismatch(decoding: bytes, expected: Data(item.value.utf8), openEnums: item.openEnums)
            #expect(mismatch == nil, "case \(index) (\(item.message), \(item.variant)) \(item.hex): \(mismatch ?? "")")
            variants[item.variant, default: 0] += 1
        }
        #expect(variants.count == 5, "every wire form was tried: \(variants)")
    }

    @Test func pythonReadsWhatCourierWrites() async throws {
        let cases = try await Self.generated()
        let encoded = try cases.map { item in
            let model = try #require(Self.models[item.message])
            return ["message": item.message, "hex": try model.encode(expected: Data(item.value.utf8)).hex]
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-differential-\(UUID()).json")
        try JSONEncoder().encode(encoded).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let readings = try JSONDecoder().decode([Reading].self, from: await Python.run(["read", file.path]))
        try #require(readings.count == cases.count)
        for (index, (item, reading)) in zip(cases, readings).enumerated() {
            let model = try #require(Self.models[item.message])
            let context = "case \(index) (\(item.message)) encoded as \(encoded[index]["hex"] ?? "")"
            guard let value = reading.value else {
                Issue.record("\(context): Python refused it: \(reading.error ?? "")")
                continue
            }
            #expect(try model.same(Data(value.utf8), Data(item.value.utf8)), "\(context): Python read \(value)")
        }
    }
}

/// Decodes and encodes one message type both ways: its generated model and its hand-written
/// Codable model (none when both are the generated one).
protocol DifferentialModel {
    /// What differs between decoding `bytes` and the value Python read (its JSON), or nil.
    static func mismatch(decoding bytes: Data, expected json: Data, openEnums: Bool) -> String?
    /// The bytes Courier encodes for the value of `json`.
    static func encode(expected json: Data) throws -> Data
    /// Whether two JSON texts are the same value of the generated model.
    static func same(_ one: Data, _ other: Data) throws -> Bool
}

struct Differential<
    Generated: ProtobufMessage & ProtobufDirectCodable & Codable & Equatable,
    Handwritten: ProtobufMessage & Codable & Equatable
>: DifferentialModel {
    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return decoder
    }

    static func mismatch(decoding bytes: Data, expected json: Data, openEnums: Bool) -> String? {
        do {
            let expected = try decoder.decode(Generated.self, from: json)
            let decoded = try ProtobufDecoder().decode(Generated.self, from: bytes)
            if decoded != expected { return "generated model: \(decoded), Python: \(expected)" }
            // Hand-written enums without `unrecognized` cases cannot hold an unknown number.
            if openEnums || Handwritten.self == Generated.self { return nil }
            let handwritten = try ProtobufDecoder().decode(Handwritten.self, from: bytes)
            let handwrittenExpected = try decoder.decode(Handwritten.self, from: json)
            if handwritten != handwrittenExpected { return "Codable model: \(handwritten), Python: \(expected)" }
            return nil
        } catch {
            return "\(error)"
        }
    }

    static func encode(expected json: Data) throws -> Data {
        try ProtobufEncoder().encode(decoder.decode(Generated.self, from: json))
    }

    static func same(_ one: Data, _ other: Data) throws -> Bool {
        try decoder.decode(Generated.self, from: one) == decoder.decode(Generated.self, from: other)
    }
}

/// A python3 that has Google's protobuf runtime, and scripts/protobuf-differential.py run with it.
enum Python {
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/protobuf-differential.py").path

    /// The first python3 (on `PATH`, then Debian's) that imports `google.protobuf`, or nil.
    static let protobuf: String? = {
        let candidates = [ChildProcess.find("python3"), "/usr/bin/python3"].compactMap { $0 }
        return candidates.first { python in
            (try? ChildProcess.run(python, ["-c", "import google.protobuf"]).status) == 0
        }
    }()

    /// The script's standard output, run on a thread of its own (`offPool`) so its seconds do
    /// not hold a thread of the task pool; throws when it fails.
    static func run(_ arguments: [String]) async throws -> Data {
        try await offPool { try runBlocking(arguments) }
    }

    private static func runBlocking(_ arguments: [String]) throws -> Data {
        let python = try #require(protobuf)
        let (status, output) = try ChildProcess.run(python, [script] + arguments, capture: .capture)
        try #require(status == 0, "protobuf-differential.py \(arguments.joined(separator: " ")) exited with \(status)")
        return output
    }
}

extension Data {
    init(hex: String) {
        self.init(
            stride(from: 0, to: hex.count, by: 2).map { offset in
                let start = hex.index(hex.startIndex, offsetBy: offset)
                return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
            })
    }
}

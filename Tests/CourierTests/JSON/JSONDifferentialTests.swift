import CourierTesting
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

/// Every corpus document × every model type × several configurations: Courier and
/// Foundation agree (see `JSONDifferential`).
@Suite struct JSONDifferentialTests {
    static let files = JSONFixtures.files(in: "corpus")

    static func configurations() -> [JSONDifferential.Configuration] {
        [
            .standard,
            .make("snake case, ISO 8601") { courier, foundation, courierEncoder, foundationEncoder in
                courier.keyDecodingStrategy = .convertFromSnakeCase
                foundation.keyDecodingStrategy = .convertFromSnakeCase
                courier.dateDecodingStrategy = .iso8601
                foundation.dateDecodingStrategy = .iso8601
                courierEncoder.keyEncodingStrategy = .convertToSnakeCase
                foundationEncoder.keyEncodingStrategy = .convertToSnakeCase
                courierEncoder.dateEncodingStrategy = .iso8601
                foundationEncoder.dateEncodingStrategy = .iso8601
            },
            .make("snake case, seconds, non-conforming floats") {
                courier, foundation, courierEncoder, foundationEncoder in
                courier.keyDecodingStrategy = .convertFromSnakeCase
                foundation.keyDecodingStrategy = .convertFromSnakeCase
                courier.dateDecodingStrategy = .secondsSince1970
                foundation.dateDecodingStrategy = .secondsSince1970
                courier.nonConformingFloatDecodingStrategy = .convertFromString(
                    positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
                foundation.nonConformingFloatDecodingStrategy = .convertFromString(
                    positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
                courierEncoder.keyEncodingStrategy = .convertToSnakeCase
                foundationEncoder.keyEncodingStrategy = .convertToSnakeCase
                courierEncoder.dateEncodingStrategy = .millisecondsSince1970
                foundationEncoder.dateEncodingStrategy = .millisecondsSince1970
                courierEncoder.nonConformingFloatEncodingStrategy = .convertToString(
                    positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
                foundationEncoder.nonConformingFloatEncodingStrategy = .convertToString(
                    positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
            },
            .make("custom keys, base64 as array") { courier, foundation, courierEncoder, foundationEncoder in
                let upper: @Sendable ([any CodingKey]) -> any CodingKey = { path in
                    JSONKey(stringValue: path.last!.stringValue.lowercased())
                }
                courier.keyDecodingStrategy = .custom(upper)
                foundation.keyDecodingStrategy = .custom(upper)
                courier.dataDecodingStrategy = .deferredToData
                foundation.dataDecodingStrategy = .deferredToData
                courierEncoder.keyEncodingStrategy = .custom(upper)
                foundationEncoder.keyEncodingStrategy = .custom(upper)
                courierEncoder.dataEncodingStrategy = .deferredToData
                foundationEncoder.dataEncodingStrategy = .deferredToData
            },
        ]
    }

    @Test func corpusIsPresent() {
        #expect(Self.files.count >= 80)
    }

    /// CPU-bound for about half a second per document in a debug build: run on its own thread
    /// (`offPool`), so the whole suite's network tests keep the two cooperative threads.
    @Test(arguments: files)
    func agreesWithFoundation(_ name: String) async throws {
        let data = try JSONFixtures.data("corpus", name)
        let mismatches = try await offPool {
            var found: [String] = []
            for configuration in Self.configurations() {
                for model in CorpusModel.all {
                    if case .mismatch(let reason) = model.compare(data, configuration) {
                        found.append("\(name) as \(model) [\(configuration.name)]: \(reason)")
                    }
                }
            }
            return found
        }
        for mismatch in mismatches { Issue.record("\(mismatch)") }
    }

    @Test func documentedDifferencesAreRecognised() {
        #expect(JSONDifferential.compare(data: Data("[1,2,]".utf8)) == .documented("trailing comma"))
        #expect(JSONDifferential.compare(data: Data("[0e1]".utf8)) == .documented("0e number"))
        #expect(JSONDifferential.compare(data: Data(#"{"a":[1,{"b":null}]}"#.utf8)) == .agree)
    }
}

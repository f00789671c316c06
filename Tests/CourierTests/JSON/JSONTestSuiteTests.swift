import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

/// Every file of nst/JSONTestSuite: `y_` accepted, `n_` rejected, `i_` either, never a crash.
@Suite struct JSONTestSuiteTests {
    static let folder = "JSONTestSuite/test_parsing"
    static let files = JSONFixtures.files(in: folder)

    @Test func allFilesArePresent() {
        #expect(Self.files.count == 318)
    }

    @Test(arguments: files)
    func verdict(_ name: String) throws {
        let data = try JSONFixtures.data(Self.folder, name)
        let result = Result { try CourierJSONDecoder().decode(AnyJSON.self, from: data) }
        switch name.prefix(2) {
        case "y_":
            if case .failure(let error) = result { Issue.record("\(name) rejected: \(error)") }
        case "n_":
            if case .success(let value) = result { Issue.record("\(name) accepted as \(value)") }
        default:
            break  // implementation-defined: reaching here without crashing is the test
        }
    }

    /// Files on which Courier and Foundation disagree, each a documented difference.
    @Test func differencesFromFoundationAreTheDocumentedOnes() throws {
        var differences: [String] = []
        for name in Self.files where !name.hasPrefix("i_") {
            let data = try JSONFixtures.data(Self.folder, name)
            let ours = (try? CourierJSONDecoder().decode(AnyJSON.self, from: data)) != nil
            let theirs = (try? JSONDecoder().decode(AnyJSON.self, from: data)) != nil
            if ours != theirs { differences.append(name) }
        }
        #expect(differences == Self.knownDifferences, "\(differences)")
    }

    /// Foundation accepts trailing commas (`[1,]`, `{"a":1,}`) and rejects `0e1`; Courier
    /// follows RFC 8259 on both (see ``CourierJSONDecoder``).
    static let knownDifferences = [
        "n_array_extra_comma.json", "n_array_number_and_comma.json", "n_object_trailing_comma.json",
        "y_number_0e1.json",
    ]
}

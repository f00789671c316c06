import Foundation

/// The golden fixtures written by scripts/make-protobuf-fixtures.py with Google's runtime.
enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/protobuf")

    struct Case: Decodable {
        var message: String
        var size: Int
    }

    /// Every case name with its message name, from expected.json.
    static let cases: [String: Case] = {
        let data = try! Data(contentsOf: directory.appendingPathComponent("expected.json"))
        return try! JSONDecoder().decode([String: Case].self, from: data)
    }()

    static var names: [String] { cases.keys.sorted() }

    static func bytes(_ name: String) throws -> Data {
        try Data(contentsOf: directory.appendingPathComponent("\(name).bin"))
    }

    /// The expected value of `name`, decoded from its JSON with the same Codable model
    /// (JSONDecoder keeps 64-bit integers exact, unlike JSONSerialization).
    static func expected<T: Decodable>(_ name: String, as type: T.Type) throws -> T {
        let data = try Data(contentsOf: directory.appendingPathComponent("expected.json"))
        let decoder = JSONDecoder()
        decoder.userInfo[caseKey] = name
        return try decoder.decode(Pick<T>.self, from: data).value
    }

    private static let caseKey = CodingUserInfoKey(rawValue: "case")!

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Decodes only `[case].value` of expected.json.
    private struct Pick<T: Decodable>: Decodable {
        var value: T
        init(from decoder: any Decoder) throws {
            let name = decoder.userInfo[Fixtures.caseKey] as! String
            let entry = try decoder.container(keyedBy: Key.self).nestedContainer(keyedBy: Key.self, forKey: Key(name))
            value = try entry.decode(T.self, forKey: Key("value"))
        }
    }
}

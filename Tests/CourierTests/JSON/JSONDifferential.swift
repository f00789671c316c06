import Foundation

@_spi(Fuzzing) @testable import Courier

/// Decodes and encodes the same input with Courier and with Foundation and says whether
/// they agree. Reusable by the fuzz target (issue 8): `JSONDifferential.compare(data:)`.
enum JSONDifferential {
    /// What one decoder did with a document.
    enum Outcome: CustomStringConvertible {
        case value(Any)
        case failure(any Error)

        var description: String {
            switch self {
            case .value(let value): return "value \(value)"
            case .failure(let error): return "error \(error)"
            }
        }
    }

    /// The verdict of one comparison.
    enum Verdict: Equatable {
        case agree
        /// A difference listed in the doc comments of `CourierJSONDecoder`/`CourierJSONEncoder`.
        case documented(String)
        case mismatch(String)
    }

    /// A pair of decoders (and matching encoders) with the same options.
    struct Configuration: @unchecked Sendable {
        // Foundation's coders are classes; each test builds its own configuration.
        var name: String
        var courier: CourierJSONDecoder
        var foundation: JSONDecoder
        var courierEncoder: CourierJSONEncoder
        var foundationEncoder: JSONEncoder

        static func make(
            _ name: String,
            _ configure: (inout CourierJSONDecoder, JSONDecoder, inout CourierJSONEncoder, JSONEncoder) -> Void
        ) -> Configuration {
            var courier = CourierJSONDecoder()
            let foundation = JSONDecoder()
            var courierEncoder = CourierJSONEncoder()
            let foundationEncoder = JSONEncoder()
            configure(&courier, foundation, &courierEncoder, foundationEncoder)
            return Configuration(
                name: name, courier: courier, foundation: foundation, courierEncoder: courierEncoder,
                foundationEncoder: foundationEncoder)
        }

        static var standard: Configuration { make("default") { _, _, _, _ in } }
    }

    /// Compares both decoders on any document (decoded as `AnyJSON`), and both encoders on
    /// the result. The entry point for fuzzing.
    static func compare(data: Data) -> Verdict {
        compare(AnyJSON.self, data: data, configuration: .standard)
    }

    /// Compares decoding `data` as `T`, then encoding the decoded value with `.sortedKeys`
    /// (plain, pretty-printed, and without escaping slashes).
    static func compare<T: Codable & Equatable>(
        _ type: T.Type, data: Data, configuration: Configuration, comparesPaths: Bool = true
    ) -> Verdict {
        let ours = Result { try configuration.courier.decode(T.self, from: data) }
        let theirs = Result { try configuration.foundation.decode(T.self, from: data) }
        switch (ours, theirs) {
        case (.success(let a), .success(let b)):
            guard a == b || String(describing: a) == String(describing: b) else {  // NaN != NaN
                return .mismatch(
                    "values differ: \(String(describing: a).prefix(300)) vs \(String(describing: b).prefix(300))")
            }
            return compareEncoding(a, configuration: configuration)
        case (.failure(let a), .failure(let b)):
            let verdict = compareErrors(a, b, comparesPaths: comparesPaths)
            if verdict != .agree, let reason = documentedStrictness(a, data: data) { return .documented(reason) }
            return verdict
        case (.failure(let a), .success(let b)):
            if let reason = documentedStrictness(a, data: data) { return .documented(reason) }
            return .mismatch("Courier failed (\(a)), Foundation decoded \(b)")
        case (.success(let a), .failure(let b)):
            if let reason = documentedLeniency(data: data) { return .documented(reason) }
            return .mismatch("Courier decoded \(String(describing: a).prefix(300)), Foundation failed (\(b))")
        }
    }

    /// Byte-for-byte comparison of the two encoders, with sorted keys.
    static func compareEncoding<T: Encodable>(_ value: T, configuration: Configuration) -> Verdict {
        let formats: [JSONEncoder.OutputFormatting] = [
            [.sortedKeys], [.sortedKeys, .prettyPrinted], [.sortedKeys, .withoutEscapingSlashes],
        ]
        for format in formats {
            var courier = configuration.courierEncoder
            courier.outputFormatting = format
            configuration.foundationEncoder.outputFormatting = format
            let ours = Result { try courier.encode(value) }
            let theirs = Result { try configuration.foundationEncoder.encode(value) }
            switch (ours, theirs) {
            case (.success(let a), .success(let b)):
                if a != b {
                    return .mismatch(
                        "encoding \(format.rawValue) differs:\n\(String(decoding: a, as: UTF8.self))\n\(String(decoding: b, as: UTF8.self))"
                    )
                }
            case (.failure(let a), .failure(let b)):
                if caseName(a) != caseName(b) { return .mismatch("encoding errors differ: \(a) vs \(b)") }
            default:
                return .mismatch(
                    "encoding outcomes differ: \(String(describing: ours).prefix(300)) vs \(String(describing: theirs).prefix(300))"
                )
            }
        }
        return .agree
    }

    /// Same `DecodingError` case; same coding path except for `.dataCorrupted`, where
    /// Foundation reports number overflow at an empty path.
    static func compareErrors(_ a: any Error, _ b: any Error, comparesPaths: Bool = true) -> Verdict {
        // Which member of a dictionary fails first follows Foundation's hash order.
        guard comparesPaths else { return .agree }
        guard caseName(a) == caseName(b) else { return .mismatch("errors differ: \(a) vs \(b)") }
        if caseName(a) != "dataCorrupted" && path(a) != path(b) {
            return .mismatch("coding paths differ: \(path(a)) vs \(path(b))")
        }
        return .agree
    }

    static func caseName(_ error: any Error) -> String {
        switch error {
        case DecodingError.typeMismatch: return "typeMismatch"
        case DecodingError.valueNotFound: return "valueNotFound"
        case DecodingError.keyNotFound: return "keyNotFound"
        case DecodingError.dataCorrupted: return "dataCorrupted"
        case EncodingError.invalidValue: return "invalidValue"
        default: return "other: \(type(of: error))"
        }
    }

    static func path(_ error: any Error) -> [String] {
        let keys: [any CodingKey]
        switch error {
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
            DecodingError.dataCorrupted(let context):
            keys = context.codingPath
        case DecodingError.keyNotFound(let key, let context):
            keys = context.codingPath + [key]
        default:
            keys = []
        }
        return keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
    }

    /// Courier rejects what Foundation accepts: UTF-16/32 input, trailing commas (RFC 8259
    /// forbids them), and
    /// malformed numbers or strings that Foundation only notices when it decodes them (it
    /// does notice once every value is read, as `AnyJSON`, or through `JSONSerialization`).
    private static func documentedStrictness(_ error: any Error, data: Data) -> String? {
        guard case DecodingError.dataCorrupted(let context) = error, context.underlyingError is JSONSyntaxError else {
            return nil
        }
        let bytes = [UInt8](data.prefix(4))
        if bytes.count >= 2 && (bytes[0] == 0 || bytes[1] == 0 || bytes[0] == 0xFE || bytes[0] == 0xFF) {
            return "UTF-16 or UTF-32 input"  // Foundation detects and converts these encodings
        }
        let text = String(decoding: data, as: UTF8.self)
        if text.range(of: #",\s*[\]}]"#, options: .regularExpression) != nil { return "trailing comma" }
        if (try? JSONDecoder().decode(AnyJSON.self, from: data)) == nil
            || (try? JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed)) == nil
        {
            return "Foundation validates lazily"
        }
        return nil
    }

    /// Courier accepts what Foundation rejects: `0e1`-style numbers (valid RFC 8259).
    private static func documentedLeniency(data: Data) -> String? {
        let text = String(decoding: data, as: UTF8.self)
        if text.range(of: #"(^|[^0-9.])-?0[eE]"#, options: .regularExpression) != nil { return "0e number" }
        return nil
    }
}

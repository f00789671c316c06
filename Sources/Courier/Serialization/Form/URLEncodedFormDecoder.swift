import Foundation

/// Decodes `application/x-www-form-urlencoded` bytes or a query string into a `Decodable`.
///
/// Reads what ``URLEncodedFormEncoder`` writes in any of its styles: `a[b]` (and `a.b` with
/// dot nesting), `a[]`, `a[0]` and repeated keys, `true/false` and `1/0`, `+` and `%20`.
/// A key that is absent decodes as an empty container, so empty arrays and structs whose
/// fields are all optional round-trip (a form has no way to write them).
public struct URLEncodedFormDecoder: Sendable {
    /// How dates are read.
    public enum DateDecodingStrategy: Sendable {
        /// Seconds since 2001-01-01 (the default, matching `Date`'s `Codable` form).
        case deferredToDate
        /// Seconds since 1970.
        case secondsSince1970
        /// Milliseconds since 1970.
        case millisecondsSince1970
        /// ISO 8601, with or without fractional seconds.
        case iso8601
        /// Your own parsing.
        case custom(@Sendable (String) throws -> Date)
    }

    /// How `Data` is read.
    public enum DataDecodingStrategy: Sendable {
        /// Base64 (the default).
        case base64
        /// Your own parsing.
        case custom(@Sendable (String) throws -> Data)
    }

    /// Whether `.` separates keys too (brackets always do).
    var nesting: URLEncodedForm.NestingStyle
    /// How dates are read.
    var dates: DateDecodingStrategy
    /// How `Data` is read.
    var data: DataDecodingStrategy

    /// A decoder with the given styles.
    /// - Parameters:
    ///   - nesting: whether `.` separates keys too (brackets are always read).
    ///   - dates: how dates are read.
    ///   - data: how `Data` is read.
    public init(
        nesting: URLEncodedForm.NestingStyle = .brackets,
        dates: DateDecodingStrategy = .deferredToDate,
        data: DataDecodingStrategy = .base64
    ) {
        self.nesting = nesting
        self.dates = dates
        self.data = data
    }

    /// Decodes `type` from form bytes.
    /// - Parameters:
    ///   - type: the type, keyed (a struct or a dictionary).
    ///   - bytes: the form body or query (a leading `?` is skipped).
    /// - Returns: the value.
    /// - Throws: `CourierError.decoding` with the coding path.
    public func decode<T: Decodable>(_ type: T.Type, from bytes: Data) throws -> T {
        let root = try bytes.withUnsafeBytes { raw in
            try FormNode.parse(raw.bindMemory(to: UInt8.self), nesting: nesting)
        }
        do {
            return try FormTreeDecoder(options: self, node: root, codingPath: []).unbox(type)
        } catch {
            throw CourierError.decoding(error, type: type)
        }
    }

    /// Decodes `type` from a query string.
    /// - Parameters:
    ///   - type: the type, keyed (a struct or a dictionary).
    ///   - query: `a=1&b=2`, a leading `?` allowed.
    /// - Returns: the value.
    /// - Throws: `CourierError.decoding` with the coding path.
    public func decode<T: Decodable>(_ type: T.Type, fromQuery query: String) throws -> T {
        try decode(type, from: Data(query.utf8))
    }

    func parseDate(_ text: String, path: [any CodingKey]) throws -> Date {
        func number() throws -> Double {
            guard let value = Double(text) else { throw corrupted("'\(text)' is not a number", path) }
            return value
        }
        switch dates {
        case .deferredToDate: return Date(timeIntervalSinceReferenceDate: try number())
        case .secondsSince1970: return Date(timeIntervalSince1970: try number())
        case .millisecondsSince1970: return Date(timeIntervalSince1970: try number() / 1000)
        case .iso8601:
            if let date = try? Date.ISO8601FormatStyle().parse(text) { return date }
            if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
            throw corrupted("'\(text)' is not an ISO 8601 date", path)
        case .custom(let parse): return try parse(text)
        }
    }

    func parseData(_ text: String, path: [any CodingKey]) throws -> Data {
        switch data {
        case .base64:
            guard let bytes = Data(base64Encoded: text) else { throw corrupted("'\(text)' is not base64", path) }
            return bytes
        case .custom(let parse): return try parse(text)
        }
    }
}

func corrupted(_ message: String, _ path: [any CodingKey]) -> DecodingError {
    .dataCorrupted(DecodingError.Context(codingPath: path, debugDescription: message))
}

/// Form bodies as a response format (`.form`).
public struct URLEncodedFormModelDecoding: ModelDecoding {
    /// The decoder.
    let decoder: URLEncodedFormDecoder
    /// `application/x-www-form-urlencoded`.
    public var acceptableContentTypes: [String] { ["application/x-www-form-urlencoded"] }

    /// Form bodies read by `decoder`.
    /// - Parameter decoder: the form decoder configuration.
    public init(decoder: URLEncodedFormDecoder = URLEncodedFormDecoder()) { self.decoder = decoder }

    /// Decodes `type` from a form body.
    /// - Throws: `CourierError.decoding` with the coding path.
    public func decode<T: Decodable>(_ type: T.Type, from body: Data, context: ResponseContext) throws -> T {
        do {
            return try decoder.decode(type, from: body)
        } catch {
            throw CourierError.decoding(error, type: type, context: context)
        }
    }
}

extension ModelDecoding where Self == URLEncodedFormModelDecoding {
    /// URL-encoded form bodies, default options.
    public static var form: URLEncodedFormModelDecoding { URLEncodedFormModelDecoding() }
}

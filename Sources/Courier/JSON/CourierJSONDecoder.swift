import Foundation

/// A fast `Decodable` JSON decoder with Foundation's `JSONDecoder` API and semantics.
///
/// It validates the whole document in one pass into a compact structural index and then
/// decodes straight from the bytes: no intermediate `Any` tree, no `String` per key. The
/// strategies are Foundation's own types, so switching is a one-word change.
///
/// Where it differs from Foundation (each covered by a test in `CourierJSONDecoderTests`,
/// `JSONStrategyDifferentialTests` or `JSONTestSuiteTests`):
/// - It follows RFC 8259 exactly: trailing commas (`[1,]`, `{"a":1,}`) are rejected and
///   `0e1` is a number; Foundation accepts the former and rejects the latter.
/// - The whole document is validated up front: an invalid escape, a lone surrogate, invalid
///   UTF-8 or a malformed number fails even where that value is never decoded (Foundation
///   checks strings and numbers only when it decodes them).
/// - Only UTF-8 input is read (a UTF-8 byte order mark is skipped); Foundation also
///   converts UTF-16 and UTF-32 input.
/// - A number that does not fit its type throws `DecodingError.dataCorrupted` with the
///   coding path of the value; Foundation reports an empty coding path.
/// - A string that the `.iso8601` date strategy cannot parse throws `.dataCorrupted` with the
///   coding path of the date; Foundation reports the path of the container holding it.
///
/// As in Foundation: nesting is limited to 512 arrays or objects, the first of duplicate
/// keys wins, and Date, Data, URL, Decimal and `[String: V]` are decoded specially.
public struct CourierJSONDecoder: Sendable {
    /// How object keys are mapped to coding keys. Defaults to `.useDefaultKeys`.
    public var keyDecodingStrategy: JSONDecoder.KeyDecodingStrategy = .useDefaultKeys {
        didSet { rebuildOptions() }
    }
    /// How dates are decoded. Defaults to `.deferredToDate`.
    public var dateDecodingStrategy: JSONDecoder.DateDecodingStrategy = .deferredToDate {
        didSet { rebuildOptions() }
    }
    /// How `Data` is decoded. Defaults to `.base64`.
    public var dataDecodingStrategy: JSONDecoder.DataDecodingStrategy = .base64 {
        didSet { rebuildOptions() }
    }
    /// How strings stand for infinity and NaN. Defaults to `.throw`.
    public var nonConformingFloatDecodingStrategy: JSONDecoder.NonConformingFloatDecodingStrategy = .throw {
        didSet { rebuildOptions() }
    }
    /// Contextual information handed to `init(from:)` through `Decoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:] {
        didSet { rebuildOptions() }
    }
    /// The properties above, as every decode call reads them.
    private var options = JSONDecodingOptions.default

    /// Creates a decoder with Foundation's default strategies.
    public init() {}

    /// Decodes a value of the given type from JSON.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - data: UTF-8 JSON text (RFC 8259).
    /// - Returns: The decoded value.
    /// - Throws: `DecodingError`: `.dataCorrupted` with an empty coding path and a
    ///   `JSONSyntaxError` as underlying error for malformed JSON, otherwise the same cases
    ///   Foundation throws.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try data.withUnsafeBytes { try decode(type, from: $0) }
    }

    /// Decodes a value of the given type from JSON bytes, without copying them.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - bytes: UTF-8 JSON text; only read during the call.
    /// - Returns: The decoded value.
    /// - Throws: `DecodingError`, as ``decode(_:from:)-(_,Data)``.
    public func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw Self.invalidJSON(JSONSyntaxError(reason: "Unexpected end of input", offset: 0))
        }
        guard bytes.count < Int(UInt32.max) else {
            throw Self.invalidJSON(JSONSyntaxError(reason: "Documents of 4 GiB or more are not supported", offset: 0))
        }
        var impl: JSONDecoderImpl
        do {
            impl = try JSONDecoderImpl.make(
                bytes: base.assumingMemoryBound(to: UInt8.self), count: bytes.count, options: options)
        } catch {
            throw Self.invalidJSON(error)
        }
        defer { JSONDecoderImpl.recycle(&impl) }
        return try impl.decodeValue(type, at: 0, depth: 0, key: nil)
    }

    private mutating func rebuildOptions() {
        options = JSONDecodingOptions(
            keyDecodingStrategy: keyDecodingStrategy, dateDecodingStrategy: dateDecodingStrategy,
            dataDecodingStrategy: dataDecodingStrategy,
            nonConformingFloatDecodingStrategy: nonConformingFloatDecodingStrategy, userInfo: userInfo)
    }

    private static func invalidJSON(_ error: JSONSyntaxError) -> DecodingError {
        .dataCorrupted(
            .init(codingPath: [], debugDescription: "The given data was not valid JSON.", underlyingError: error))
    }
}

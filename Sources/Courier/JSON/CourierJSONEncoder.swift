import Foundation

/// A fast `Encodable` JSON encoder with Foundation's `JSONEncoder` API and output.
///
/// It writes bytes in one pass as `encode(to:)` runs — no intermediate tree. With
/// `.sortedKeys` the output is byte for byte what Foundation's `JSONEncoder` writes on Linux
/// (numbers, escapes, pretty-printing layout included). The strategies are Foundation's own
/// types.
///
/// Where it differs from Foundation (each covered by a test):
/// - Without `.sortedKeys`, members come in the order they were encoded (Foundation's order
///   is a hash order), and a key encoded twice in one container is written twice;
///   with `.sortedKeys` the last value wins, as in Foundation.
/// - Containers must be filled in the nesting order Codable code normally uses: writing
///   to a container after a sibling container or value was started after it throws
///   `EncodingError.invalidValue` (Foundation merges such writes).
public struct CourierJSONEncoder: Sendable {
    /// The output format. Defaults to `[]` (compact, members in encoding order).
    public var outputFormatting: JSONEncoder.OutputFormatting = []
    /// How dates are encoded. Defaults to `.deferredToDate`.
    public var dateEncodingStrategy: JSONEncoder.DateEncodingStrategy = .deferredToDate
    /// How `Data` is encoded. Defaults to `.base64`.
    public var dataEncodingStrategy: JSONEncoder.DataEncodingStrategy = .base64
    /// How infinity and NaN are written. Defaults to `.throw`.
    public var nonConformingFloatEncodingStrategy: JSONEncoder.NonConformingFloatEncodingStrategy = .throw
    /// How coding keys become object keys. Defaults to `.useDefaultKeys`.
    public var keyEncodingStrategy: JSONEncoder.KeyEncodingStrategy = .useDefaultKeys
    /// Contextual information handed to `encode(to:)` through `Encoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// Creates an encoder with Foundation's default strategies.
    public init() {}

    /// Encodes a value as JSON.
    ///
    /// - Parameter value: The value to encode; top-level scalars are allowed.
    /// - Returns: UTF-8 JSON text.
    /// - Throws: `EncodingError.invalidValue` for a non-conforming float under `.throw`, a
    ///   top-level value that encodes nothing, or containers used out of order; any error
    ///   `encode(to:)` throws.
    public func encode<T: Encodable>(_ value: T) throws -> Data {
        let usesDefaultKeys: Bool
        if case .useDefaultKeys = keyEncodingStrategy { usesDefaultKeys = true } else { usesDefaultKeys = false }
        let impl = JSONEncoderImpl(
            options: JSONEncodingOptions(
                outputFormatting: outputFormatting, dateEncodingStrategy: dateEncodingStrategy,
                dataEncodingStrategy: dataEncodingStrategy,
                nonConformingFloatEncodingStrategy: nonConformingFloatEncodingStrategy,
                keyEncodingStrategy: keyEncodingStrategy, userInfo: userInfo, usesDefaultKeys: usesDefaultKeys,
                sortsKeys: outputFormatting.contains(.sortedKeys)))
        do {
            try impl.encodeValue(value, level: 1, depth: 0, suffix: [], key: nil)
        } catch is JSONEncoderImpl.TopLevelEmpty {
            throw EncodingError.invalidValue(
                value, .init(codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
        }
        impl.closeFrames(downTo: 0)
        if let error = impl.deferredError { throw error }
        return Data(bytes: impl.writer.base, count: impl.writer.count)
    }
}

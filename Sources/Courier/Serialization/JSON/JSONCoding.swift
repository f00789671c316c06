import Foundation

/// Something that decodes JSON bytes into `Decodable` values.
///
/// Courier's JSON serializers talk to JSON through this, so a faster decoder can replace
/// Foundation's without changing any call site. Conformers must be safe to use from several
/// threads at once (Foundation's `JSONDecoder` is).
public protocol JSONDecoding: Sendable {
    /// Decodes a value of `type` from `data`.
    /// - Throws: a `DecodingError` (or another error) when the bytes do not decode.
    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T
}

/// Something that encodes `Encodable` values as JSON bytes.
///
/// Conformers must be safe to use from several threads at once (Foundation's `JSONEncoder` is).
public protocol JSONEncoding: Sendable {
    /// Encodes `value` as JSON.
    /// - Throws: an `EncodingError` (or another error) when the value cannot be encoded.
    func encode<T: Encodable>(_ value: T) throws -> Data
}

extension JSONDecoder: JSONDecoding {}
extension JSONEncoder: JSONEncoding {}
extension CourierJSONDecoder: JSONDecoding {}
extension CourierJSONEncoder: JSONEncoding {}

/// The JSON coders Courier uses when a caller configures none. Built once, shared by every call.
///
/// These are Courier's own ``CourierJSONDecoder`` and ``CourierJSONEncoder`` (several times
/// faster than Foundation's on Linux). Foundation's stay one argument away:
/// `JSONModelDecoding(decoder: JSONDecoder())` or ``ModelDecoding/foundationJSON``.
@usableFromInline enum DefaultJSONCoders {
    /// The default decoder (``CourierJSONDecoder``, default strategies).
    @usableFromInline static let decoder: any JSONDecoding = CourierJSONDecoder()
    /// The default encoder (``CourierJSONEncoder``, default strategies).
    @usableFromInline static let encoder: any JSONEncoding = CourierJSONEncoder()
}

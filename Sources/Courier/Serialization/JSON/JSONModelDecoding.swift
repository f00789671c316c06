import Foundation

/// JSON as a response format: decodes models with a ``JSONDecoding`` (Foundation's
/// `JSONDecoder` unless you pass another).
///
/// Build one per configuration and keep it (in the client's configuration, a service, a
/// `static let`): it holds its decoder, so no decoder is built per call.
public struct JSONModelDecoding: ModelDecoding {
    /// The decoder used for every call.
    let decoder: any JSONDecoding
    /// The media types accepted (`application/json`, `text/json` by default).
    public let acceptableContentTypes: [String]

    /// JSON bodies read by `decoder`.
    /// - Parameters:
    ///   - decoder: the JSON decoder; shared between calls, so it must be thread-safe.
    ///   - acceptableContentTypes: the media types to accept.
    public init(
        decoder: any JSONDecoding,
        acceptableContentTypes: [String] = JSONModelDecoding.defaultContentTypes
    ) {
        self.decoder = decoder
        self.acceptableContentTypes = acceptableContentTypes
    }

    /// Courier's fast ``CourierJSONDecoder`` with the given strategies, built once here.
    /// - Parameters:
    ///   - keys: how JSON keys map to property names.
    ///   - dates: how dates are read.
    ///   - data: how `Data` is read.
    ///   - nonConformingFloats: how `NaN`/`Infinity` strings are read.
    ///   - acceptableContentTypes: the media types to accept.
    public init(
        keys: JSONDecoder.KeyDecodingStrategy = .useDefaultKeys,
        dates: JSONDecoder.DateDecodingStrategy = .deferredToDate,
        data: JSONDecoder.DataDecodingStrategy = .base64,
        nonConformingFloats: JSONDecoder.NonConformingFloatDecodingStrategy = .throw,
        acceptableContentTypes: [String] = JSONModelDecoding.defaultContentTypes
    ) {
        var decoder = CourierJSONDecoder()
        decoder.keyDecodingStrategy = keys
        decoder.dateDecodingStrategy = dates
        decoder.dataDecodingStrategy = data
        decoder.nonConformingFloatDecodingStrategy = nonConformingFloats
        self.init(decoder: decoder, acceptableContentTypes: acceptableContentTypes)
    }

    /// `application/json` and `text/json`.
    @usableFromInline static let defaultContentTypes = ["application/json", "text/json"]

    /// The shared default: Courier's default JSON decoder.
    static let shared = JSONModelDecoding(decoder: DefaultJSONCoders.decoder)
    /// Foundation's `JSONDecoder` with default strategies, shared.
    static let foundationShared = JSONModelDecoding(decoder: JSONDecoder())

    /// Decodes `type` from JSON.
    /// - Throws: `CourierError.decoding` with the coding path and the underlying `DecodingError`.
    public func decode<T: Decodable>(_ type: T.Type, from body: Data, context: ResponseContext) throws -> T {
        do {
            return try decoder.decode(type, from: body)
        } catch {
            throw CourierError.decoding(error, type: type, context: context)
        }
    }
}

extension ModelDecoding where Self == JSONModelDecoding {
    /// JSON with default strategies, through one shared decoder.
    public static var json: JSONModelDecoding { .shared }

    /// JSON through Foundation's `JSONDecoder` (default strategies), for code that depends on
    /// one of the documented differences of ``CourierJSONDecoder``.
    public static var foundationJSON: JSONModelDecoding { JSONModelDecoding.foundationShared }

    /// JSON with the given strategies (build it once and keep it).
    /// - Parameters:
    ///   - keys: how JSON keys map to property names.
    ///   - dates: how dates are read.
    ///   - data: how `Data` is read.
    public static func json(
        keys: JSONDecoder.KeyDecodingStrategy = .useDefaultKeys,
        dates: JSONDecoder.DateDecodingStrategy = .deferredToDate,
        data: JSONDecoder.DataDecodingStrategy = .base64
    ) -> JSONModelDecoding {
        JSONModelDecoding(keys: keys, dates: dates, data: data)
    }
}

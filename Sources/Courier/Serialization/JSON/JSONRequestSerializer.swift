import Foundation

/// Encodes parameters as a JSON body (`application/json`), or — for GET, HEAD and DELETE by
/// default — as a query string through the URL-encoded form encoder.
///
/// Keep one value per configuration: it holds its encoders, so none is built per call.
public struct JSONRequestSerializer: RequestSerializer {
    /// The JSON encoder for bodies; shared between calls, so it must be thread-safe.
    let encoder: any JSONEncoding
    /// Where parameters go.
    var destination: ParameterDestination
    /// The encoder for the query string, when parameters go there.
    var queryEncoder: URLEncodedFormEncoder
    /// The `Content-Type` sent with a JSON body.
    var contentType: String

    /// A JSON serializer.
    /// - Parameters:
    ///   - encoder: the JSON encoder; shared between calls, so it must be thread-safe.
    ///   - destination: where parameters go (query for GET/HEAD/DELETE by default).
    ///   - queryEncoder: how parameters are written into a query string.
    ///   - contentType: the `Content-Type` for a JSON body.
    public init(
        encoder: any JSONEncoding = DefaultJSONCoders.encoder,
        destination: ParameterDestination = .methodDependent,
        queryEncoder: URLEncodedFormEncoder = URLEncodedFormEncoder(),
        contentType: String = "application/json"
    ) {
        self.encoder = encoder
        self.destination = destination
        self.queryEncoder = queryEncoder
        self.contentType = contentType
    }

    /// Courier's fast ``CourierJSONEncoder`` with the given strategies, built once here.
    /// - Parameters:
    ///   - keys: how property names become JSON keys.
    ///   - dates: how dates are written.
    ///   - data: how `Data` is written.
    ///   - outputFormatting: sorted keys, pretty printing, …
    ///   - destination: where parameters go.
    public init(
        keys: JSONEncoder.KeyEncodingStrategy = .useDefaultKeys,
        dates: JSONEncoder.DateEncodingStrategy = .deferredToDate,
        data: JSONEncoder.DataEncodingStrategy = .base64,
        outputFormatting: JSONEncoder.OutputFormatting = [],
        destination: ParameterDestination = .methodDependent
    ) {
        var encoder = CourierJSONEncoder()
        encoder.keyEncodingStrategy = keys
        encoder.dateEncodingStrategy = dates
        encoder.dataEncodingStrategy = data
        encoder.outputFormatting = outputFormatting
        self.init(encoder: encoder, destination: destination)
    }

    /// Puts `parameters` into the query string or a JSON body.
    /// - Throws: `CourierError.encoding` with the coding path when the value cannot be encoded.
    public func serialize<Parameters: Encodable>(_ parameters: Parameters, into request: inout PreparedRequest) throws {
        if destination.usesQueryString(for: request.head.method) {
            request.appendQuery(try queryEncoder.encodeQuery(parameters))
            return
        }
        let data: Data
        do {
            data = try encoder.encode(parameters)
        } catch {
            throw CourierError.encoding(error, type: Parameters.self)
        }
        request.setBody(data, contentType: contentType)
    }

    /// Default strategies, query for GET/HEAD/DELETE, one shared encoder.
    static let shared = JSONRequestSerializer()
}

extension RequestSerializer where Self == JSONRequestSerializer {
    /// JSON bodies (query strings for GET, HEAD and DELETE), default strategies.
    public static var json: JSONRequestSerializer { .shared }

    /// JSON with a forced destination.
    /// - Parameter destination: where parameters go.
    public static func json(destination: ParameterDestination) -> JSONRequestSerializer {
        var serializer = JSONRequestSerializer.shared
        serializer.destination = destination
        return serializer
    }
}

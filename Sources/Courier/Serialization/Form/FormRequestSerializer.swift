import Foundation

/// Encodes parameters as `application/x-www-form-urlencoded`: into the query string for GET,
/// HEAD and DELETE by default, into the body for the others.
public struct FormRequestSerializer: RequestSerializer {
    /// The encoder, used for both the query string and the body.
    var encoder: URLEncodedFormEncoder
    /// Where parameters go.
    var destination: ParameterDestination

    /// A form serializer.
    /// - Parameters:
    ///   - encoder: the form encoder configuration.
    ///   - destination: where parameters go (query for GET/HEAD/DELETE by default).
    public init(
        encoder: URLEncodedFormEncoder = URLEncodedFormEncoder(), destination: ParameterDestination = .methodDependent
    ) {
        self.encoder = encoder
        self.destination = destination
    }

    /// Puts `parameters` into the query string or a form body.
    /// - Throws: `CourierError.encoding` with the coding path when the value cannot be encoded.
    public func serialize<Parameters: Encodable>(_ parameters: Parameters, into request: inout PreparedRequest) throws {
        let bytes = try encoder.encodeBytes(parameters)
        if destination.usesQueryString(for: request.head.method) {
            request.appendQuery(String(decoding: bytes, as: UTF8.self))
        } else {
            request.setBody(Data(bytes), contentType: "application/x-www-form-urlencoded")
        }
    }
}

extension RequestSerializer where Self == FormRequestSerializer {
    /// URL-encoded forms, default options.
    public static var form: FormRequestSerializer { FormRequestSerializer() }

    /// URL-encoded forms with the given encoder and destination.
    /// - Parameters:
    ///   - encoder: the form encoder configuration.
    ///   - destination: where parameters go.
    public static func form(
        _ encoder: URLEncodedFormEncoder = URLEncodedFormEncoder(), destination: ParameterDestination = .methodDependent
    ) -> FormRequestSerializer {
        FormRequestSerializer(encoder: encoder, destination: destination)
    }
}

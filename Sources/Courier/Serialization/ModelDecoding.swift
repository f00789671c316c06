import Foundation

/// A body format that decodes `Decodable` models: JSON, URL-encoded forms, protobuf (in
/// `CourierProtobuf`), or one of your own.
///
/// This is the "response type" a client or service uses by default and a call can override.
/// Built-ins read as static members: `.json`, `.form`; other modules add theirs the same way:
///
/// ```swift
/// extension ModelDecoding where Self == MessagePackModelDecoding {
///     static var messagePack: MessagePackModelDecoding { MessagePackModelDecoding() }
/// }
/// ```
public protocol ModelDecoding: Sendable {
    /// The media types this format reads, for the `Accept` header, validation and negotiation.
    var acceptableContentTypes: [String] { get }
    /// Decodes `type` from `body`.
    /// - Parameters:
    ///   - type: the model type.
    ///   - body: the bytes, possibly a slice.
    ///   - context: the whole response, for formats that need a header or the request.
    /// - Returns: the model.
    /// - Throws: `CourierError.decoding`, with the coding path when there is one.
    func decode<T: Decodable>(_ type: T.Type, from body: Data, context: ResponseContext) throws -> T
    /// Whether an empty body (on a response that may have one) is a valid encoding of a model,
    /// as in protobuf, where it is a message with every field at its default. False by
    /// default: an empty body then gives ``Empty``, `nil`, or `CourierError.emptyBody`.
    var decodesEmptyBodies: Bool { get }
}

extension ModelDecoding {
    /// False: an empty body is not a model unless a format says so.
    public var decodesEmptyBodies: Bool { false }
}

/// Decodes the body into a `Decodable` model with a ``ModelDecoding`` (JSON by default).
///
/// Empty bodies: a bodiless response (204, 205, 304, HEAD) or an empty body gives ``Empty`` or
/// `nil` when `Model` is ``Empty`` or an `Optional`, and a `CourierError.emptyBody` otherwise.
/// ``Empty`` ignores any body.
public struct DecodableResponseSerializer<Model: Decodable & Sendable>: ResponseSerializer {
    /// The body format.
    package let decoding: any ModelDecoding

    /// - Parameters:
    ///   - type: the model type.
    ///   - decoding: the body format; keep and reuse one value, it holds its decoder.
    init(_ type: Model.Type = Model.self, decoding: some ModelDecoding = .json) {
        self.decoding = decoding
    }

    /// - Parameters:
    ///   - type: the model type.
    ///   - decoding: the body format, e.g. a client's default response type.
    package init(_ type: Model.Type = Model.self, anyDecoding decoding: any ModelDecoding) {
        self.decoding = decoding
    }

    /// The format's media types.
    public var acceptableContentTypes: [String] { decoding.acceptableContentTypes }

    /// Decodes the model.
    /// - Throws: `CourierError.emptyBody` when there is no body and `Model` needs one;
    ///   `CourierError.decoding` when the body does not decode.
    public func serialize(_ context: ResponseContext) throws -> Model {
        if Model.self == Empty.self { return Empty() as! Model }
        if context.isBodiless || (context.body.isEmpty && !decoding.decodesEmptyBodies) {
            if let empty = Model.self as? any EmptyResponseRepresentable.Type {
                return empty.emptyResponseValue as! Model
            }
            throw CourierError(
                .emptyBody,
                "expected a \(Model.self) but the response (HTTP \(context.response.status.code)) has no body; "
                    + "decode Empty or an Optional for calls without one",
                response: context.response, body: context.body)
        }
        do {
            return try decoding.decode(Model.self, from: context.body, context: context)
        } catch {
            throw CourierError.decoding(error, type: Model.self, context: context)
        }
    }
}

extension ResponseSerializer {
    /// A `Decodable` model in the given format (JSON by default).
    /// - Parameters:
    ///   - type: the model type.
    ///   - decoding: the body format (`.json`, `.form`, `.protobuf`, …).
    public static func decodable<Model>(
        _ type: Model.Type, using decoding: some ModelDecoding = .json
    ) -> Self where Self == DecodableResponseSerializer<Model> {
        DecodableResponseSerializer(type, decoding: decoding)
    }

    /// A `Decodable` model read from JSON.
    /// - Parameters:
    ///   - type: the model type.
    ///   - decoding: the JSON configuration; `.json` is Foundation's decoder with default strategies.
    public static func json<Model>(
        _ type: Model.Type, decoding: JSONModelDecoding = .json
    ) -> Self where Self == DecodableResponseSerializer<Model> {
        DecodableResponseSerializer(type, decoding: decoding)
    }

    /// A `Decodable` model read from an `application/x-www-form-urlencoded` body.
    /// - Parameters:
    ///   - type: the model type.
    ///   - decoding: the form decoder configuration.
    public static func form<Model>(
        _ type: Model.Type, decoding: URLEncodedFormModelDecoding = .form
    ) -> Self where Self == DecodableResponseSerializer<Model> {
        DecodableResponseSerializer(type, decoding: decoding)
    }
}

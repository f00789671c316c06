import Foundation
import HTTPTypes

/// Checks a response's status code and content type before it is decoded.
///
/// Configurable per call. When the status is refused and an error model is named, the
/// server's error body is decoded into it and carried in ``CourierError/errorModel``.
public struct ResponseValidator: Sendable {
    /// The status codes that pass (200..<300 by default).
    var acceptableStatusCodes: [Range<Int>]
    /// The content types that pass, with `*/*` and `type/*` wildcards; nil means "whatever
    /// the response serializer accepts", empty means any.
    var acceptableContentTypes: [String]?
    /// Decodes a refused response's body into the call's error model, if it names one.
    var errorModel: ErrorModelDecoder?
    /// Checks of an accepted answer, in order (see `ResponseValidator+Checks.swift`).
    var checks: [@Sendable (ResponseContext) throws -> ResponseVerdict] = []

    /// A validator accepting `acceptableStatusCodes` and `acceptableContentTypes`.
    /// - Parameters:
    ///   - acceptableStatusCodes: the status codes that pass.
    ///   - acceptableContentTypes: the content types that pass (nil: the serializer's).
    public init(acceptableStatusCodes: [Range<Int>] = [200..<300], acceptableContentTypes: [String]? = nil) {
        self.init(
            acceptableStatusCodes: acceptableStatusCodes, acceptableContentTypes: acceptableContentTypes,
            errorModel: nil)
    }

    init(
        acceptableStatusCodes: [Range<Int>] = [200..<300],
        acceptableContentTypes: [String]? = nil,
        errorModel: ErrorModelDecoder?
    ) {
        self.acceptableStatusCodes = acceptableStatusCodes
        self.acceptableContentTypes = acceptableContentTypes
        self.errorModel = errorModel
    }

    /// 2xx, the serializer's content types, no error model.
    public static let `default` = ResponseValidator()

    /// A copy that decodes refused responses' bodies into `type` (JSON by default).
    /// - Parameters:
    ///   - type: the server's error model, e.g. `struct APIError: Decodable { let code: Int; let message: String }`.
    ///   - decoding: the body format.
    public func decodingErrors<E: Decodable & Sendable>(
        as type: E.Type, using decoding: some ModelDecoding = .json
    ) -> ResponseValidator {
        var copy = self
        copy.errorModel = ErrorModelDecoder(type, decoding: decoding)
        return copy
    }

    /// A copy that accepts these status codes instead.
    /// - Parameter codes: e.g. `[200..<300, 404..<405]`.
    public func accepting(statusCodes codes: [Range<Int>]) -> ResponseValidator {
        var copy = self
        copy.acceptableStatusCodes = codes
        return copy
    }

    /// A copy that accepts these content types instead of the serializer's.
    /// - Parameter types: media types with `*/*` and `type/*` wildcards; empty accepts any.
    public func accepting(contentTypes types: [String]) -> ResponseValidator {
        var copy = self
        copy.acceptableContentTypes = types
        return copy
    }

    /// Checks the status, then the content type, then runs the checks added with `checking(_:)`.
    /// - Parameters:
    ///   - context: the response.
    ///   - serializerContentTypes: what the response serializer reads, used when
    ///     ``acceptableContentTypes`` is nil.
    /// - Throws: `CourierError.httpStatus` or `.unacceptableContentType`, carrying the response
    ///   head and body (and the decoded error model for `.httpStatus`); `.apiError` for an
    ///   answer a check refused.
    func validate(_ context: ResponseContext, serializerContentTypes: [String] = []) throws {
        let code = context.statusCode
        guard acceptableStatusCodes.contains(where: { $0.contains(code) }) else {
            // Server text, quoted: a status line may be 100 KiB long, and apps log the message.
            let reason = Redaction.quoted(context.response.status.reasonPhrase)
            var error = CourierError(
                .httpStatus, "the server answered \(code)" + (reason.isEmpty ? "" : " \(reason)"),
                response: context.response, body: context.body)
            if let errorModel, !context.hasNoContent {
                error.errorModel = errorModel.decode(context)
            }
            throw error
        }
        let patterns = acceptableContentTypes ?? serializerContentTypes
        // Nothing to decode, or anything goes: no content type to check.
        guard !patterns.isEmpty, !context.hasNoContent, !patterns.contains(where: MediaType.isAnyType) else {
            return try runChecks(context)
        }
        guard let header = context.contentTypeField else {
            throw CourierError(
                .unacceptableContentType,
                "the response has no Content-Type; the call accepts \(patterns.joined(separator: ", "))",
                response: context.response, body: context.body)
        }
        guard MediaType.contentType(header, matchesAny: patterns) else {
            throw CourierError(
                .unacceptableContentType,
                "the response is \(Redaction.quoted(header)); the call accepts \(patterns.joined(separator: ", "))",
                response: context.response, body: context.body)
        }
        try runChecks(context)
    }
}

/// Decodes a server's error body (`{"code": 4012, "message": "token expired"}`) into a model.
struct ErrorModelDecoder: Sendable {
    private let decodeBody: @Sendable (ResponseContext) -> (any Sendable)?
    /// The model's type, for messages.
    let modelType: Any.Type

    /// - Parameters:
    ///   - type: the error model type.
    ///   - decoding: the body format (JSON by default).
    init<E: Decodable & Sendable>(_ type: E.Type, decoding: some ModelDecoding = .json) {
        modelType = type
        decodeBody = { context in try? decoding.decode(E.self, from: context.body, context: context) }
    }

    /// The decoded model, or nil when the body does not decode into it.
    func decode(_ context: ResponseContext) -> (any Sendable)? { decodeBody(context) }
}

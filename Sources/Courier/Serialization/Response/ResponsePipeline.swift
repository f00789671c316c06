import Foundation

/// The steps a received response goes through: validate → preprocess → decode.
///
/// A value the client, a service and a call each configure; combine levels with
/// ``adding(preprocessors:)`` (client first, then service, then call).
public struct ResponsePipeline: Sendable {
    /// Status and content type checks.
    public var validator: ResponseValidator
    /// Run in order between validation and decoding; skipped for bodiless responses.
    var preprocessors: [any ResponsePreprocessor]

    /// A pipeline: `validator`, then `preprocessors`, then the serializer.
    /// - Parameters:
    ///   - validator: status and content type checks.
    ///   - preprocessors: rewrites before decoding, in order.
    public init(validator: ResponseValidator = .default, preprocessors: [any ResponsePreprocessor] = []) {
        self.validator = validator
        self.preprocessors = preprocessors
    }

    /// 2xx, the serializer's content types, no preprocessing.
    public static let `default` = ResponsePipeline()

    /// A copy with `more` preprocessors run after this pipeline's own.
    /// - Parameter more: preprocessors of a narrower level (service, call).
    public func adding(preprocessors more: [any ResponsePreprocessor]) -> ResponsePipeline {
        var copy = self
        copy.preprocessors += more
        return copy
    }

    /// Validates, preprocesses and decodes a response.
    /// - Parameters:
    ///   - context: the response.
    ///   - serializer: the decoder for the call's output.
    /// - Returns: the decoded value.
    /// - Throws: `CourierError` from validation (`.httpStatus`, `.unacceptableContentType`),
    ///   preprocessing (`.apiError`, …) or decoding (`.decoding`, `.emptyBody`).
    public func process<Serializer: ResponseSerializer>(
        _ context: ResponseContext, with serializer: Serializer
    ) throws -> Serializer.Output {
        try validator.validate(context, serializerContentTypes: serializer.acceptableContentTypes)
        if preprocessors.isEmpty || context.hasNoContent { return try serializer.serialize(context) }
        var current = context
        for preprocessor in preprocessors {
            current = try preprocessor.preprocess(current)
        }
        return try serializer.serialize(current)
    }
}

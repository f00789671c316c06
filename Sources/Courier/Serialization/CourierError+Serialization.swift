import Foundation

extension CourierError {
    /// Wraps a failure to decode `type`: a `DecodingError` gives its coding path as dotted keys.
    /// Its description is quoted as server text (`Redaction.quoted`): it may hold a value the
    /// server sent (an enum's unknown raw value), which apps' logs would show as sent.
    ///
    /// A `CourierError` passes through unchanged.
    /// - Parameters:
    ///   - error: what the decoder threw.
    ///   - type: the type being decoded, named in the message.
    ///   - context: the response, kept in the error.
    /// - Returns: a `.decoding` error.
    package static func decoding(_ error: any Error, type: Any.Type, context: ResponseContext? = nil) -> CourierError {
        if var error = error as? CourierError {
            if error.response == nil, let context {
                error.response = context.response
                error.body = context.body
            }
            return error
        }
        var result = CourierError(
            .decoding, "cannot decode \(type): \(Redaction.quoted(describe(error)))", underlying: error,
            response: context?.response, body: context?.body)
        switch error as? DecodingError {
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?, .dataCorrupted(let context)?:
            result.codingPath = dotted(context.codingPath)
        case .keyNotFound(let key, let context)?:
            result.codingPath = dotted(context.codingPath + [key])
        default:
            break
        }
        return result
    }

    /// Wraps a failure to encode `type`: an `EncodingError` gives its coding path as dotted keys.
    ///
    /// A `CourierError` passes through unchanged.
    /// - Parameters:
    ///   - error: what the encoder threw.
    ///   - type: the type being encoded, named in the message.
    /// - Returns: an `.encoding` error.
    package static func encoding(_ error: any Error, type: Any.Type) -> CourierError {
        if let error = error as? CourierError { return error }
        var result = CourierError(.encoding, "cannot encode \(type): \(describe(error))", underlying: error)
        if case .invalidValue(_, let context) = error as? EncodingError {
            result.codingPath = dotted(context.codingPath)
        }
        return result
    }

    /// `items.3.price` for a coding path.
    static func dotted(_ path: [any CodingKey]) -> String {
        path.map { key in key.intValue.map(String.init) ?? key.stringValue }.joined(separator: ".")
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.typeMismatch(let type, let context):
            return "type mismatch, expected \(type): \(context.debugDescription)"
        case DecodingError.valueNotFound(let type, let context):
            return "value of type \(type) not found: \(context.debugDescription)"
        case DecodingError.keyNotFound(let key, let context):
            return "key '\(key.stringValue)' not found: \(context.debugDescription)"
        case DecodingError.dataCorrupted(let context):
            return "data corrupted: \(context.debugDescription)"
        case EncodingError.invalidValue(_, let context):
            return "invalid value: \(context.debugDescription)"
        default:
            return String(describing: error)
        }
    }
}

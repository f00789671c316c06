import Foundation

/// Unwraps a JSON envelope such as `{"code":0,"msg":"ok","data":{…}}`.
///
/// On a success code the body becomes the bytes of `data` — a slice of the received buffer,
/// found by scanning, not by parsing and re-serializing. A missing or `null` `data` gives an
/// empty body (so ``Empty`` and optionals decode, and a model gets `.emptyBody`). Any other
/// code throws `CourierError.apiError` whose `errorModel` is an ``EnvelopeFailure``.
public struct EnvelopePreprocessor: ResponsePreprocessor {
    /// The key of the status code (`code`).
    var codeKey: String
    /// The key of the message (`msg`).
    var messageKey: String
    /// The key of the payload (`data`).
    var dataKey: String
    /// The codes meaning success, as text (`"0"` matches both `0` and `"0"`).
    var successCodes: Set<String>

    /// - Parameters:
    ///   - codeKey: the key of the status code.
    ///   - messageKey: the key of the message.
    ///   - dataKey: the key of the payload.
    ///   - successCodes: the codes meaning success.
    public init(
        codeKey: String = "code", messageKey: String = "msg", dataKey: String = "data",
        successCodes: Set<String> = ["0"]
    ) {
        self.codeKey = codeKey
        self.messageKey = messageKey
        self.dataKey = dataKey
        self.successCodes = successCodes
    }

    /// Replaces the body with the envelope's payload.
    /// - Throws: `CourierError.apiError` for a failure code; `.decoding` when the body is not an envelope.
    public func preprocess(_ context: ResponseContext) throws -> ResponseContext {
        let members: [String: Range<Int>]
        do {
            members = try JSONObjectScanner.topLevelMembers(of: context.body)
        } catch {
            throw CourierError(
                .decoding, "the body is not a JSON envelope object", underlying: error, response: context.response,
                body: context.body)
        }
        let body = context.body
        func text(_ key: String) -> String? {
            guard let range = members[key] else { return nil }
            let raw = body[(body.startIndex + range.lowerBound)..<(body.startIndex + range.upperBound)]
            if raw.first == UInt8(ascii: "\"") {
                return try? JSONDecoder.envelopeStrings.decode(String.self, from: raw)
            }
            return raw == Data("null".utf8) ? nil : String(decoding: raw, as: UTF8.self)
        }
        guard let code = text(codeKey) else {
            throw CourierError(
                .decoding, "the envelope has no '\(codeKey)'", response: context.response, body: context.body)
        }
        guard successCodes.contains(code) else {
            let message = text(messageKey)
            var failure = CourierError(
                .apiError, "the server reported code \(code)" + (message.map { ": \($0)" } ?? ""),
                response: context.response, body: context.body)
            failure.errorModel = EnvelopeFailure(code: code, message: message)
            throw failure
        }
        var result = context
        if let range = members[dataKey] {
            let slice = body[(body.startIndex + range.lowerBound)..<(body.startIndex + range.upperBound)]
            result.body = slice == Data("null".utf8) ? Data() : slice
        } else {
            result.body = Data()
        }
        return result
    }
}

/// What an envelope said when its code was not success.
public struct EnvelopeFailure: Sendable, Hashable, Error {
    /// The code, as text.
    public var code: String
    /// The message, if there was one.
    public var message: String?
}

extension JSONDecoder {
    /// Decodes the envelope's string members (rare path: only code and message).
    fileprivate static let envelopeStrings = JSONDecoder()
}

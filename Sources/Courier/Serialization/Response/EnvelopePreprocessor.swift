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
        // The same reading as a service's `EnvelopeRule`, with every other code a failure.
        try EnvelopeRule.json(
            codeKey: codeKey, messageKey: messageKey, payloadKey: dataKey, successCodes: successCodes
        ).unwrap(context)
    }
}

/// What an envelope said when its code was not success.
public struct EnvelopeFailure: Sendable, Hashable, Error {
    /// The code, as text.
    public var code: String
    /// The message, if there was one.
    public var message: String?
    /// What the service's `EnvelopeRule` made of the code (a failure for a preprocessor's).
    var meaning: EnvelopeRule.Meaning = .failure
}

import Foundation
import HTTPTypes

/// A service's rule for body-level outcomes: many APIs answer HTTP 200 with an envelope such as
/// `{"code": 40101, "msg": "token expired", "data": null}`, and the code, not the status, says
/// what happened.
///
/// Declared once, in `ServiceConfiguration.envelope`. Each accepted answer (after status
/// validation) is read and its code decides, as a status would:
/// - a success code: the payload is what the call decodes (a missing or `null` payload is an
///   empty body; see `CallOptions.noData`);
/// - a retry code: the attempt failed; the call's `RetryPolicy` retries it as it retries a
///   retryable status (idempotent methods unless it opts in, back-off, the one attempt cap);
/// - a refresh code: the attempt failed; the authentication interceptor refreshes the
///   credential (once for all the calls rejected together) and the call is sent again with
///   the new one, exactly as after a 401;
/// - any other code: the call ends with `CourierError.apiError`, whose `errorModel` is an
///   ``EnvelopeFailure`` (the domain error to map).
///
/// JSON envelopes with `.json(…)`; a protobuf wrapper message with `.protobuf(…)` from
/// CourierProtobuf; any other format with `init(successCodes:retryCodes:refreshCodes:read:)`.
public struct EnvelopeRule: Sendable {
    /// What one envelope says: its code, message and payload.
    public struct Reading: Sendable {
        /// The code, as text (`0`, `"0"` and `0.0` read the same in a JSON envelope).
        var code: String
        /// The message, if there is one.
        var message: String?
        /// The payload's bytes; nil when missing or null.
        var payload: Data?
        /// What a reader found in one body.
        /// - Parameters:
        ///   - code: the code, as text (`0`, `"0"` and `0` read the same).
        ///   - message: the message, if there is one.
        ///   - payload: the payload's bytes; nil when missing or null.
        public init(code: String, message: String? = nil, payload: Data? = nil) {
            self.code = code
            self.message = message
            self.payload = payload
        }
    }

    /// What a code means.
    enum Meaning: Sendable, Hashable { case success, retry, refreshCredential, failure }

    /// The codes meaning success.
    let successCodes: Set<String>
    /// The codes meaning "send again" (server busy, …).
    let retryCodes: Set<String>
    /// The codes meaning "the credential expired: refresh it, then send again".
    let refreshCodes: Set<String>
    /// Reads an envelope from a body; throws when the body is not one.
    let read: @Sendable (Data) throws -> Reading

    /// A rule for any envelope format.
    /// - Parameters:
    ///   - successCodes: the codes meaning success; every code not listed anywhere is a failure.
    ///   - retryCodes: the codes to retry as a retryable status.
    ///   - refreshCodes: the codes to refresh the credential for, then retry.
    ///   - read: reads an envelope from a response body.
    public init(
        successCodes: Set<String> = ["0"], retryCodes: Set<String> = [], refreshCodes: Set<String> = [],
        read: @escaping @Sendable (Data) throws -> Reading
    ) {
        self.successCodes = successCodes
        self.retryCodes = retryCodes
        self.refreshCodes = refreshCodes
        self.read = read
    }

    /// A JSON envelope: `{"code": 0, "msg": "ok", "data": {…}}` with your key names.
    /// - Parameters:
    ///   - codeKey: the key of the code.
    ///   - messageKey: the key of the message.
    ///   - payloadKey: the key of the payload.
    ///   - successCodes: the codes meaning success.
    ///   - retryCodes: the codes to retry.
    ///   - refreshCodes: the codes to refresh the credential for.
    public static func json(
        codeKey: String = "code", messageKey: String = "msg", payloadKey: String = "data",
        successCodes: Set<String> = ["0"], retryCodes: Set<String> = [], refreshCodes: Set<String> = []
    ) -> EnvelopeRule {
        EnvelopeRule(successCodes: successCodes, retryCodes: retryCodes, refreshCodes: refreshCodes) { body in
            try JSONEnvelope.read(body, codeKey: codeKey, messageKey: messageKey, payloadKey: payloadKey)
        }
    }

    /// What `code` means under this rule.
    func meaning(of code: String) -> Meaning {
        if successCodes.contains(code) { return .success }
        if refreshCodes.contains(code) { return .refreshCredential }
        if retryCodes.contains(code) { return .retry }
        return .failure
    }

    /// The answer the call decodes: the payload on a success code.
    /// - Throws: `CourierError.apiError` (with an ``EnvelopeFailure``) for any other code;
    ///   `.decoding` when the body is not an envelope.
    func unwrap(_ context: ResponseContext) throws(CourierError) -> ResponseContext {
        guard !context.isBodiless else { return context }
        let reading: Reading
        do {
            reading = try read(context.body)
        } catch let error as CourierError {
            var error = error
            if error.response == nil { (error.response, error.body) = (context.response, context.body) }
            throw error
        } catch {
            throw CourierError(
                .decoding, "the body is not the service's envelope", underlying: error, response: context.response,
                body: context.body)
        }
        let meaning = meaning(of: reading.code)
        guard meaning == .success else {
            let asks = [.retry: " (retry)", .refreshCredential: " (refresh the credential)"][meaning] ?? ""
            // Quoted for the message (apps log it); the error model keeps the text as sent.
            var failure = CourierError(
                .apiError,
                "the server reported code \(Redaction.quoted(reading.code))\(asks)"
                    + (reading.message.map { ": \(Redaction.quoted($0))" } ?? ""),
                response: context.response, body: context.body)
            failure.errorModel = EnvelopeFailure(code: reading.code, message: reading.message, meaning: meaning)
            throw failure
        }
        var result = context
        result.body = reading.payload ?? Data()
        return result
    }
}

extension CourierError {
    /// What an envelope's code asked for, when this error is an envelope's.
    var envelopeMeaning: EnvelopeRule.Meaning? { (errorModel as? EnvelopeFailure)?.meaning }

    /// Whether this error is an envelope asking for another attempt (a retry, or a refresh then
    /// a retry): the call loop treats it as a refused status.
    var isEnvelopeRetry: Bool {
        guard code == .apiError, let meaning = envelopeMeaning else { return false }
        return meaning == .retry || meaning == .refreshCredential
    }
}

extension AttemptFailure {
    /// What the envelope of the answer asked for, if the service has an envelope rule.
    var envelopeMeaning: EnvelopeRule.Meaning? { response == nil ? nil : error.envelopeMeaning }
}

/// Reads JSON envelopes by scanning the top-level members: the payload stays a slice of the
/// received buffer (nothing is parsed twice nor re-serialized).
enum JSONEnvelope {
    static func read(_ body: Data, codeKey: String, messageKey: String, payloadKey: String) throws
        -> EnvelopeRule.Reading
    {
        let members: [String: Range<Int>]
        do {
            members = try JSONObjectScanner.topLevelMembers(of: body)
        } catch {
            throw CourierError(.decoding, "the body is not a JSON envelope object", underlying: error)
        }
        func raw(_ key: String) -> Data? {
            guard let range = members[key] else { return nil }
            let slice = body[(body.startIndex + range.lowerBound)..<(body.startIndex + range.upperBound)]
            return slice.elementsEqual("null".utf8) ? nil : slice
        }
        func text(_ key: String) -> String? {
            guard let raw = raw(key) else { return nil }
            if raw.first == UInt8(ascii: "\"") {
                return try? JSONDecoder.envelopeStrings.decode(String.self, from: raw)
            }
            return String(decoding: raw, as: UTF8.self)
        }
        guard let code = text(codeKey) else {
            throw CourierError(.decoding, "the envelope has no '\(codeKey)'")
        }
        let isNumber = raw(codeKey)?.first != UInt8(ascii: "\"")
        return EnvelopeRule.Reading(
            code: isNumber ? numericCode(code) : code, message: text(messageKey), payload: raw(payloadKey))
    }

    /// A number code as its integer value when it has one exactly (`0.0`, `-0`, `4.0101e4` are
    /// `0`, `0`, `40101`), so that it matches the rule's codes; any other number as written.
    static func numericCode(_ written: String) -> String {
        // Only a number's characters: `Double` also reads `0x1e`, `inf` and `nan`, which a
        // lenient scan lets through but JSON has not.
        guard written.utf8.allSatisfy({ Self.numberBytes.contains($0) }),
            written.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) || written.hasPrefix("-0"),
            let value = Double(written), value.isFinite, value == value.rounded(), abs(value) < 0x1p53
        else { return written }
        return String(Int64(value))
    }

    /// The bytes a JSON number is written with.
    private static let numberBytes = Set("0123456789+-.eE".utf8)
}

extension JSONDecoder {
    /// Decodes the envelope's string members (rare path: only code and message).
    fileprivate static let envelopeStrings = JSONDecoder()
}

extension EnvelopeRule: ResponsePreprocessor {
    /// Unwraps the envelope in a `ResponsePipeline` (for `HTTPClient.send` + decode): the
    /// payload on a success code; any other code, retry and refresh codes included (a pipeline
    /// neither retries nor refreshes), throws `CourierError.apiError` with an ``EnvelopeFailure``.
    public func preprocess(_ context: ResponseContext) throws -> ResponseContext { try unwrap(context) }
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

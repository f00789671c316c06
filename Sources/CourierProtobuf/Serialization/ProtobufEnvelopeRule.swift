import Courier
import Foundation

extension EnvelopeRule {
    /// A protobuf envelope: a wrapper message with a code and a `bytes` payload (the message the
    /// call decodes), read as a JSON envelope's code and payload are.
    ///
    /// ```swift
    /// configuration.envelope = .protobuf(Envelope.self, retryCodes: ["503"], refreshCodes: ["40101"]) {
    ///     EnvelopeRule.Reading(code: String($0.code), message: $0.message, payload: $0.payload)
    /// }
    /// ```
    /// - Parameters:
    ///   - type: the generated wrapper message.
    ///   - successCodes: the codes meaning success.
    ///   - retryCodes: the codes to retry as a retryable status.
    ///   - refreshCodes: the codes to refresh the credential for, then retry.
    ///   - decoder: the decoder of the wrapper.
    ///   - read: the code, message and payload of a wrapper.
    public static func protobuf<Envelope: ProtobufMessage & ProtobufDirectCodable & SendableMetatype>(
        _ type: Envelope.Type, successCodes: Set<String> = ["0"], retryCodes: Set<String> = [],
        refreshCodes: Set<String> = [], decoder: ProtobufDecoder = ProtobufDecoder(),
        read: @escaping @Sendable (Envelope) -> EnvelopeRule.Reading
    ) -> EnvelopeRule {
        EnvelopeRule(successCodes: successCodes, retryCodes: retryCodes, refreshCodes: refreshCodes) { body in
            read(try decoder.decode(Envelope.self, from: body))
        }
    }
}

import Foundation

/// Which successful payloads mean "no usable data" for a call: an empty body, `null`, an empty
/// list. Set per call in `CallOptions.noData`; none by default.
///
/// A payload that matches is reported apart from a failure: an optional model gets `nil`
/// (`let posts: [Post]? = try await get("feed", options: …)`), any other model
/// `CourierError.noData` — never `.decoding` nor `.emptyBody`, so a screen shows its empty
/// state without telling parse errors apart. With an `EnvelopeRule` the payload is the
/// envelope's (`{"code": 0, "data": null}` is `null`).
public struct NoDataRule: OptionSet, Sendable, Hashable {
    /// The set's bits.
    public let rawValue: Int
    /// The set whose bits are `rawValue`.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// An empty body (or a missing payload, or a bodiless answer such as 204).
    public static let empty = NoDataRule(rawValue: 1)
    /// The JSON literal `null`.
    public static let null = NoDataRule(rawValue: 2)
    /// An empty JSON array, `[]`.
    public static let emptyList = NoDataRule(rawValue: 4)
    /// All of them.
    public static let all: NoDataRule = [.empty, .null, .emptyList]
}

extension NoDataRule {
    /// Whether `context`'s payload is "no usable data" under this rule.
    func matches(_ context: ResponseContext) -> Bool {
        if context.hasNoContent { return contains(.empty) }
        var bytes = context.body[...]
        // A UTF-8 byte order mark is not data: the JSON decoder skips it too.
        if bytes.starts(with: utf8ByteOrderMark) { bytes = bytes.dropFirst(utf8ByteOrderMark.count) }
        while let first = bytes.first, Self.isWhitespace(first) { bytes = bytes.dropFirst() }
        while let last = bytes.last, Self.isWhitespace(last) { bytes = bytes.dropLast() }
        if bytes.isEmpty { return contains(.empty) }
        if contains(.null), bytes.elementsEqual("null".utf8) { return true }
        if contains(.emptyList), bytes.first == UInt8(ascii: "["), bytes.last == UInt8(ascii: "]") {
            return bytes.dropFirst().dropLast().allSatisfy(Self.isWhitespace)
        }
        return false
    }

    /// The call's value when its payload is "no usable data": `nil` for an optional model.
    /// - Returns: nil when the payload is usable (decode it).
    /// - Throws: `CourierError.noData` for a model that is not optional.
    func value<Model>(for context: ResponseContext) throws(CourierError) -> Model? {
        guard matches(context) else { return nil }
        if let optional = Model.self as? any ExpressibleByNilLiteral.Type,
            let none = optional.init(nilLiteral: ()) as? Model
        {
            return none
        }
        throw CourierError(.noData, "the answer has no usable data", response: context.response, body: context.body)
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}

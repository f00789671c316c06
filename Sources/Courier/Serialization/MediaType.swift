import Foundation

/// A parsed media type (`type/subtype; name=value`), as found in `Content-Type` and `Accept`.
///
/// Type, subtype and parameter names are lowercased; parameter values keep their case
/// (quotes removed).
public struct MediaType: Sendable, Hashable, CustomStringConvertible {
    /// The top-level type, e.g. `application`; `*` for a wildcard.
    public var type: String
    /// The subtype, e.g. `json`; `*` for a wildcard.
    public var subtype: String
    /// The parameters, names lowercased.
    public var parameters: [String: String]

    /// Parses `type/subtype; a=b; c="d"`.
    /// - Parameter text: a header value.
    /// - Returns: nil when there is no `type/subtype` part.
    public init?(parsing text: String) {
        var pieces = text.split(separator: ";", omittingEmptySubsequences: false).makeIterator()
        guard let essence = pieces.next() else { return nil }
        let halves = essence.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let type = halves[0].trimmingCharacters(in: .whitespaces).lowercased()
        let subtype = halves[1].trimmingCharacters(in: .whitespaces).lowercased()
        guard !type.isEmpty, !subtype.isEmpty else { return nil }
        self.type = type
        self.subtype = subtype
        var parameters: [String: String] = [:]
        while let piece = pieces.next() {
            guard let equals = piece.firstIndex(of: "=") else { continue }
            let name = piece[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            var value = piece[piece.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            if !name.isEmpty { parameters[name] = value }
        }
        self.parameters = parameters
    }

    /// `type/subtype`, without parameters.
    public var essence: String { "\(type)/\(subtype)" }

    /// The `charset` parameter, lowercased.
    public var charset: String? { parameters["charset"]?.lowercased() }

    public var description: String {
        parameters.keys.sorted().reduce(essence) { $0 + "; \($1)=\(parameters[$1]!)" }
    }

    /// Whether this (concrete) type is matched by `pattern`, which may be `*/*` or `type/*`.
    /// Parameters are ignored.
    /// - Parameter pattern: an acceptable media type, possibly with wildcards.
    /// - Returns: true when the types match.
    public func matches(_ pattern: MediaType) -> Bool {
        if pattern.type == "*" { return true }
        guard pattern.type == type else { return false }
        return pattern.subtype == "*" || pattern.subtype == subtype
    }

    /// Whether this type is matched by any of `patterns` (strings that do not parse never match).
    /// - Parameter patterns: acceptable media types, possibly with wildcards.
    /// - Returns: true when one matches.
    public func matches(any patterns: [String]) -> Bool {
        patterns.contains { MediaType(parsing: $0).map(matches) ?? false }
    }
}

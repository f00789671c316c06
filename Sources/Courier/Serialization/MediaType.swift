import Foundation

/// A parsed media type (`type/subtype; name=value`), as found in `Content-Type` and `Accept`.
///
/// Type, subtype and parameter names are lowercased; parameter values keep their case
/// (quotes removed).
@_spi(Fuzzing) public struct MediaType: Sendable, Hashable, CustomStringConvertible {
    /// The top-level type, e.g. `application`; `*` for a wildcard.
    package var type: String
    /// The subtype, e.g. `json`; `*` for a wildcard.
    package var subtype: String
    /// The parameters, names lowercased.
    package var parameters: [String: String]

    /// Parses `type/subtype; a=b; c="d"`.
    /// - Parameter text: a header value.
    /// - Returns: nil when there is no `type/subtype` part.
    package init?(parsing text: String) {
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
    package var essence: String { "\(type)/\(subtype)" }

    /// The `charset` parameter, lowercased.
    package var charset: String? { parameters["charset"]?.lowercased() }

    /// `type/subtype` and the parameters in name order, as `type/subtype; name=value`.
    @_spi(Fuzzing) public var description: String {
        parameters.keys.sorted().reduce(essence) { $0 + "; \($1)=\(parameters[$1]!)" }
    }

    /// Whether this (concrete) type is matched by `pattern`, which may be `*/*` or `type/*`.
    /// Parameters are ignored.
    /// - Parameter pattern: an acceptable media type, possibly with wildcards.
    /// - Returns: true when the types match.
    package func matches(_ pattern: MediaType) -> Bool {
        if pattern.type == "*" { return true }
        guard pattern.type == type else { return false }
        return pattern.subtype == "*" || pattern.subtype == subtype
    }

    /// Whether this type is matched by any of `patterns` (strings that do not parse never match).
    /// - Parameter patterns: acceptable media types, possibly with wildcards.
    /// - Returns: true when one matches.
    func matches(any patterns: [String]) -> Bool {
        Self.contentType(essence, matchesAny: patterns)
    }

    /// Whether a `Content-Type` header value is matched by any of `patterns` (`*/*`, `type/*`
    /// or exact, case-insensitive, parameters ignored).
    ///
    /// Runs on every response, so it compares bytes in place instead of parsing into strings.
    /// - Parameters:
    ///   - header: the header value, e.g. `application/json; charset=utf-8`.
    ///   - patterns: acceptable media types.
    /// - Returns: true when one matches; false when `header` is not `type/subtype`.
    static func contentType(_ header: String, matchesAny patterns: [String]) -> Bool {
        var header = header
        return header.withUTF8 { headerBytes in
            guard let concrete = EssenceRanges(headerBytes) else { return false }
            let essence = concrete.type.lowerBound..<concrete.subtype.upperBound
            for pattern in patterns {
                var pattern = pattern
                let matched = pattern.withUTF8 { patternBytes -> Bool in
                    // The usual case first: the pattern is exactly the header's `type/subtype`.
                    if patternBytes.count == essence.count,
                        equalIgnoringCase(headerBytes, essence, patternBytes, 0..<patternBytes.count)
                    {
                        return true
                    }
                    guard let wanted = EssenceRanges(patternBytes) else { return false }
                    if wanted.isWildcard(patternBytes, wanted.type) { return true }
                    guard equalIgnoringCase(headerBytes, concrete.type, patternBytes, wanted.type) else { return false }
                    return wanted.isWildcard(patternBytes, wanted.subtype)
                        || equalIgnoringCase(headerBytes, concrete.subtype, patternBytes, wanted.subtype)
                }
                if matched { return true }
            }
            return false
        }
    }

    /// Whether `pattern` is `*/*` (exactly, as configured), which accepts any response.
    static func isAnyType(_ pattern: String) -> Bool {
        pattern.utf8.count == 3 && pattern == "*/*"
    }

    private static func equalIgnoringCase(
        _ a: UnsafeBufferPointer<UInt8>, _ aRange: Range<Int>, _ b: UnsafeBufferPointer<UInt8>, _ bRange: Range<Int>
    ) -> Bool {
        guard aRange.count == bRange.count else { return false }
        for offset in 0..<aRange.count {
            let x = a[aRange.lowerBound + offset]
            let y = b[bRange.lowerBound + offset]
            if x == y { continue }
            let lowerX = (x >= 0x41 && x <= 0x5A) ? x | 0x20 : x
            let lowerY = (y >= 0x41 && y <= 0x5A) ? y | 0x20 : y
            if lowerX != lowerY { return false }
        }
        return true
    }
}

/// Where `type` and `subtype` sit in a media type's bytes (spaces trimmed, parameters cut).
private struct EssenceRanges {
    let type: Range<Int>
    let subtype: Range<Int>

    init?(_ bytes: UnsafeBufferPointer<UInt8>) {
        var end = 0
        while end < bytes.count && bytes[end] != UInt8(ascii: ";") { end += 1 }
        var start = 0
        while start < end && (bytes[start] == 0x20 || bytes[start] == 0x09) { start += 1 }
        while end > start && (bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09) { end -= 1 }
        var slash = start
        while slash < end && bytes[slash] != UInt8(ascii: "/") { slash += 1 }
        guard slash > start, slash + 1 < end else { return nil }
        type = start..<slash
        subtype = (slash + 1)..<end
    }

    func isWildcard(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool {
        range.count == 1 && bytes[range.lowerBound] == UInt8(ascii: "*")
    }
}

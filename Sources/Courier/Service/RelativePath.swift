import Foundation

/// A validated path relative to a server's base URL: `users/42/avatar`, `search?q=swift`.
///
/// A path that could move the request — and its credential — to another host is refused:
/// absolute URLs (`https://…`, `mailto:…`), network-path references (`//evil.example`),
/// `..` segments (also when percent-encoded as `%2e%2e`), backslashes, fragments and
/// control characters. Each segment is percent-encoded; escapes already present are kept.
/// A first segment containing `:` reads as a URL scheme and is refused; write `./name:verb`.
public struct RelativePath: Sendable, Hashable, CustomStringConvertible {
    /// The decoded segments, in order (`["users", "a b"]`).
    public let segments: [String]
    /// The percent-encoded query, without the `?`, if the path had one.
    public let query: String?
    /// Whether the path ended with `/`.
    public let hasTrailingSlash: Bool

    /// Validates and normalises `path`.
    /// - Parameter path: a relative path, optionally with a query string.
    /// - Throws: `CourierError.invalidRequest` when the path is unsafe or malformed.
    public init(_ path: String) throws {
        if path.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw CourierError(.invalidRequest, "the path contains control characters")
        }
        if path.contains("\\") {
            throw CourierError(.invalidRequest, "the path contains a backslash")
        }
        if path.contains("#") {
            throw CourierError(.invalidRequest, "the path contains a fragment ('#')")
        }
        var pathPart = Substring(path)
        var query: String?
        if let mark = path.firstIndex(of: "?") {
            pathPart = path[..<mark]
            query = Self.encodeQuery(path[path.index(after: mark)...])
        }
        if pathPart.hasPrefix("//") {
            throw CourierError(.invalidRequest, "the path starts with '//', which names another host")
        }
        if Self.hasScheme(pathPart) {
            throw CourierError(.invalidRequest, "the path is an absolute URL; give a path relative to the server")
        }
        // One leading "/" is accepted and means the same as none: the path always
        // extends the base URL's path.
        if pathPart.hasPrefix("/") { pathPart = pathPart.dropFirst() }
        let rawSegments = pathPart.split(separator: "/", omittingEmptySubsequences: false)
        var segments: [String] = []
        for (index, raw) in rawSegments.enumerated() {
            if raw.isEmpty {
                if index == rawSegments.count - 1 { continue }
                throw CourierError(.invalidRequest, "the path contains an empty segment ('//')")
            }
            let decoded = Self.percentDecoded(raw)
            if decoded == ".." {
                throw CourierError(.invalidRequest, "the path contains a '..' segment")
            }
            if decoded == "." { continue }
            segments.append(decoded)
        }
        self.segments = segments
        self.query = query
        self.hasTrailingSlash = pathPart.hasSuffix("/") && !segments.isEmpty
    }

    /// The percent-encoded path, without a leading `/` (`users/a%20b`), plus `?query`: the
    /// normal form that follows the base URL's prefix and a `/` on the wire.
    ///
    /// Dot segments are gone, so `./name:verb` gives `name:verb` (sent as `/v1/name:verb`).
    /// Such a text is not a relative reference on its own (RFC 3986 §4.2: it reads as a
    /// scheme); parse it back with a leading `/`.
    public var encoded: String {
        var text = segments.map(Self.encodeSegment).joined(separator: "/")
        if hasTrailingSlash { text += "/" }
        if let query { text += "?" + query }
        return text
    }

    public var description: String { encoded }

    // MARK: - Encoding

    /// RFC 3986 `pchar` minus the sub-delimiters that some servers treat specially.
    private static let segmentAllowed: Set<UInt8> = {
        var set = Set<UInt8>(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8))
        set.formUnion(Array("!$&'()*+,;=:@".utf8))
        return set
    }()

    private static let queryAllowed: Set<UInt8> = segmentAllowed.union(Array("/?%".utf8))

    static func encodeSegment(_ segment: String) -> String {
        percentEncode(segment.utf8, allowed: segmentAllowed)
    }

    private static func encodeQuery(_ query: Substring) -> String {
        // Keep valid escapes ("%20") and encode the rest; a lone "%" becomes "%25".
        var out = ""
        let bytes = Array(query.utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count, hexValue(bytes[index + 1]) != nil,
                hexValue(bytes[index + 2]) != nil
            {
                out += String(decoding: bytes[index...(index + 2)], as: UTF8.self)
                index += 3
                continue
            }
            if byte != UInt8(ascii: "%"), queryAllowed.contains(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += String(format: "%%%02X", byte)
            }
            index += 1
        }
        return out
    }

    static func percentEncode(_ bytes: some Sequence<UInt8>, allowed: Set<UInt8>) -> String {
        var out = ""
        for byte in bytes {
            if allowed.contains(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// Decodes valid `%XX` escapes; an invalid escape is kept as literal text.
    static func percentDecoded(_ text: Substring) -> String {
        guard text.contains("%") else { return String(text) }
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// RFC 3986 scheme: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"` before any `/`.
    private static func hasScheme(_ path: Substring) -> Bool {
        guard let colon = path.firstIndex(of: ":") else { return false }
        let candidate = path[..<colon]
        guard let first = candidate.unicodeScalars.first, !candidate.contains("/") else { return false }
        func isLetter(_ scalar: Unicode.Scalar) -> Bool { ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) }
        guard isLetter(first) else { return false }
        return candidate.unicodeScalars.allSatisfy {
            isLetter($0) || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0)
        }
    }
}

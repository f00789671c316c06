import Foundation

/// A validated path relative to a server's base URL: `users/42/avatar`, `search?q=swift`.
///
/// A path that could move the request — and its credential — to another host is refused:
/// absolute URLs (`https://…`, `mailto:…`), network-path references (`//evil.example`),
/// `..` segments (also when percent-encoded as `%2e%2e`, or hidden in a segment as `..%2F`,
/// `..%5C` or `..;`), `.` segments but a leading `./`, backslashes, fragments and control
/// characters. Each segment is percent-encoded; escapes already present are kept (escapes of
/// bytes that are not UTF-8, `%E9` or `%C0%AE`, are refused: they cannot be kept as text).
/// A first segment containing `:` reads as a URL scheme and is refused; write `./name:verb`.
@_spi(Fuzzing) public struct RelativePath: Sendable, Hashable, CustomStringConvertible {
    /// The decoded segments, in order (`["users", "a b"]`).
    @_spi(Fuzzing) public let segments: [String]
    /// The percent-encoded query, without the `?`, if the path had one.
    @_spi(Fuzzing) public let query: String?
    /// Whether the path ended with `/`.
    @_spi(Fuzzing) public let hasTrailingSlash: Bool

    /// The percent-encoded path, without a leading `/` (`users/a%20b`), plus `?query`: the
    /// normal form that follows the base URL's prefix and a `/` on the wire.
    ///
    /// Dot segments are gone, so `./name:verb` gives `name:verb` (sent as `/v1/name:verb`).
    /// Such a text is not a relative reference on its own (RFC 3986 §4.2: it reads as a
    /// scheme); parse it back with a leading `/`.
    @_spi(Fuzzing) public let encoded: String

    /// Validates and normalises `path`.
    /// - Parameter path: a relative path, optionally with a query string.
    /// - Throws: `CourierError.invalidRequest` when the path is unsafe or malformed.
    @_spi(Fuzzing) public init(_ path: String) throws {
        // Every call parses its path: the common all-ASCII path is read byte by byte.
        if let parsed = try Self.parseASCII(path) {
            self = parsed
            return
        }
        try self.init(parsingCharacters: path)
    }

    /// `init` for any path, character by character (also what the ASCII parse must agree with).
    init(parsingCharacters path: String) throws {
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
            query = Self.encodeQuery(Array(path[path.index(after: mark)...].utf8))
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
            let decoded = raw.utf8.contains(UInt8(ascii: "%")) ? try Self.decodedSegment(Array(raw.utf8)) : String(raw)
            if Self.stepsUp(decoded) {
                throw CourierError(.invalidRequest, "the path contains a '..' segment")
            }
            if decoded == "." {
                if index == 0 { continue }
                throw Self.dotSegment
            }
            segments.append(decoded)
        }
        self.init(segments: segments, query: query, hasTrailingSlash: pathPart.hasSuffix("/") && !segments.isEmpty)
    }

    private init(segments: [String], query: String?, hasTrailingSlash: Bool) {
        self.segments = segments
        self.query = query
        self.hasTrailingSlash = hasTrailingSlash
        var text: [UInt8] = []
        text.reserveCapacity(segments.reduce(segments.count) { $0 + $1.utf8.count } + (query?.utf8.count ?? 0) + 1)
        for (index, segment) in segments.enumerated() {
            if index > 0 { text.append(UInt8(ascii: "/")) }
            Self.appendPercentEncoded(segment.utf8, allowed: Self.segmentAllowed, to: &text)
        }
        if hasTrailingSlash { text.append(UInt8(ascii: "/")) }
        if let query {
            text.append(UInt8(ascii: "?"))
            text.append(contentsOf: query.utf8)
        }
        encoded = String(decoding: text, as: UTF8.self)
    }

    /// `init` for a path of ASCII characters only, where a byte is a character: the same rules,
    /// without `Character` comparisons. Returns nil for any other path.
    private static func parseASCII(_ path: String) throws -> RelativePath? {
        var path = path
        return try path.withUTF8 { bytes throws -> RelativePath? in
            var control = false
            var backslash = false
            var fragment = false
            var mark = bytes.count
            for (index, byte) in bytes.enumerated() {
                switch byte {
                case 0x80...: return nil
                case ..<0x20, 0x7F: control = true
                case UInt8(ascii: "\\"): backslash = true
                case UInt8(ascii: "#"): fragment = true
                case UInt8(ascii: "?") where mark == bytes.count: mark = index
                default: break
                }
            }
            if control { throw CourierError(.invalidRequest, "the path contains control characters") }
            if backslash { throw CourierError(.invalidRequest, "the path contains a backslash") }
            if fragment { throw CourierError(.invalidRequest, "the path contains a fragment ('#')") }
            let query = mark < bytes.count ? encodeQuery(UnsafeBufferPointer(rebasing: bytes[(mark + 1)...])) : nil
            var part = UnsafeBufferPointer(rebasing: bytes[..<mark])
            if part.count >= 2, part[0] == UInt8(ascii: "/"), part[1] == UInt8(ascii: "/") {
                throw CourierError(.invalidRequest, "the path starts with '//', which names another host")
            }
            if hasScheme(part) {
                throw CourierError(.invalidRequest, "the path is an absolute URL; give a path relative to the server")
            }
            if part.first == UInt8(ascii: "/") { part = UnsafeBufferPointer(rebasing: part[1...]) }
            var segments: [String] = []
            var start = 0
            while start <= part.count {
                let end = part[start...].firstIndex(of: UInt8(ascii: "/")) ?? part.count
                let isLast = end == part.count
                defer { start = end + 1 }
                if start == end {
                    if isLast { continue }
                    throw CourierError(.invalidRequest, "the path contains an empty segment ('//')")
                }
                let decoded = try decodedSegment(UnsafeBufferPointer(rebasing: part[start..<end]))
                if stepsUp(decoded) {
                    throw CourierError(.invalidRequest, "the path contains a '..' segment")
                }
                if decoded == "." {
                    if start == 0 { continue }
                    throw dotSegment
                }
                segments.append(decoded)
            }
            let trailingSlash = part.last == UInt8(ascii: "/") && !segments.isEmpty
            return RelativePath(segments: segments, query: query, hasTrailingSlash: trailingSlash)
        }
    }

    @_spi(Fuzzing) public var description: String { encoded }

    /// A `.` segment after the first: an id of `"."` interpolated into `notes/\(id)` addressed
    /// the collection (`DELETE /notes`), so it is refused like `..` (Retrofit refuses both as
    /// path values). A leading `./` stays, for `./name:verb`.
    static let dotSegment = CourierError(
        .invalidRequest, "the path contains a '.' segment after its start, which would address another resource")

    /// Whether a decoded segment steps up a level: `..` itself, or a `..` between separators a
    /// server may decode before it normalises the path (`..%2F`, `%2F..`, `..%5C`), or before a
    /// path parameter (`..;x`, which Tomcat and Jetty strip to `..`).
    static func stepsUp(_ decoded: String) -> Bool {
        if decoded == ".." { return true }
        let isMark = { (byte: UInt8) in
            byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: ";")
        }
        guard decoded.utf8.contains(where: isMark) else { return false }
        let pieces = decoded.utf8.split(
            omittingEmptySubsequences: false, whereSeparator: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\") })
        return pieces.contains { piece in
            piece.prefix { $0 != UInt8(ascii: ";") }.elementsEqual("..".utf8)
        }
    }

    // MARK: - Encoding

    /// A set of bytes as a 256-bit mask: a lookup without hashing, for the per-byte loops.
    struct ByteSet: Sendable {
        private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

        init(_ bytes: some Sequence<UInt8>) {
            for byte in bytes { insert(byte) }
        }

        mutating func insert(_ byte: UInt8) {
            let bit = UInt64(1) << UInt64(byte & 63)
            switch byte >> 6 {
            case 0: words.0 |= bit
            case 1: words.1 |= bit
            case 2: words.2 |= bit
            default: words.3 |= bit
            }
        }

        func contains(_ byte: UInt8) -> Bool {
            let word: UInt64
            switch byte >> 6 {
            case 0: word = words.0
            case 1: word = words.1
            case 2: word = words.2
            default: word = words.3
            }
            return word & (UInt64(1) << UInt64(byte & 63)) != 0
        }

        func union(_ bytes: some Sequence<UInt8>) -> ByteSet {
            var copy = self
            for byte in bytes { copy.insert(byte) }
            return copy
        }
    }

    /// RFC 3986 unreserved characters.
    static let unreserved = ByteSet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)

    /// RFC 3986 `pchar` minus the sub-delimiters that some servers treat specially.
    private static let segmentAllowed = unreserved.union("!$&'()*+,;=:@".utf8)

    private static let queryAllowed = segmentAllowed.union("/?%".utf8)

    static func encodeSegment(_ segment: String) -> String {
        percentEncode(segment.utf8, allowed: segmentAllowed)
    }

    private static func encodeQuery(_ bytes: some RandomAccessCollection<UInt8>) -> String {
        // Keep valid escapes ("%20") and encode the rest; a lone "%" becomes "%25".
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), bytes.distance(from: index, to: bytes.endIndex) > 2,
                hexValue(bytes[bytes.index(index, offsetBy: 1)]) != nil,
                hexValue(bytes[bytes.index(index, offsetBy: 2)]) != nil
            {
                out.append(contentsOf: bytes[index..<bytes.index(index, offsetBy: 3)])
                index = bytes.index(index, offsetBy: 3)
                continue
            }
            if byte != UInt8(ascii: "%"), queryAllowed.contains(byte) {
                out.append(byte)
            } else {
                appendEscape(byte, to: &out)
            }
            index = bytes.index(after: index)
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func percentEncode(_ bytes: some Sequence<UInt8>, allowed: ByteSet) -> String {
        var out: [UInt8] = []
        appendPercentEncoded(bytes, allowed: allowed, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func appendPercentEncoded(_ bytes: some Sequence<UInt8>, allowed: ByteSet, to out: inout [UInt8]) {
        if bytes.allSatisfy(allowed.contains) {
            out.append(contentsOf: bytes)
            return
        }
        for byte in bytes {
            if allowed.contains(byte) {
                out.append(byte)
            } else {
                appendEscape(byte, to: &out)
            }
        }
    }

    /// Appends `%XX` (upper-case hex) for `byte`.
    private static func appendEscape(_ byte: UInt8, to out: inout [UInt8]) {
        let digits = Array("0123456789ABCDEF".utf8)
        out.append(UInt8(ascii: "%"))
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 15)])
    }

    /// Decodes valid `%XX` escapes; an invalid escape is kept as literal text.
    static func percentDecoded(_ text: Substring) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        return percentDecoded(Array(text.utf8))
    }

    /// Decodes valid `%XX` escapes in UTF-8 bytes; an invalid escape is kept as literal text.
    private static func percentDecoded(_ bytes: some RandomAccessCollection<UInt8>) -> String {
        guard let decoded = decodedBytes(bytes) else { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: decoded, as: UTF8.self)
    }

    /// A path segment's text, its escapes decoded.
    /// - Throws: `CourierError.invalidRequest` when escapes decode to bytes that are not UTF-8
    ///   (`%E9`, `%FF`, the overlong `%C0%AE`): as text they are U+FFFD, sent as `%EF%BF%BD`,
    ///   another path than the caller's (and two such paths one).
    private static func decodedSegment(_ bytes: some RandomAccessCollection<UInt8>) throws(CourierError) -> String {
        guard let decoded = decodedBytes(bytes) else { return String(decoding: bytes, as: UTF8.self) }
        guard let text = String(validating: decoded, as: UTF8.self) else {
            throw CourierError(.invalidRequest, "the path has a percent-escape of bytes that are not UTF-8")
        }
        return text
    }

    /// The bytes with valid `%XX` escapes decoded, or nil when they hold no `%`.
    private static func decodedBytes(_ bytes: some RandomAccessCollection<UInt8>) -> [UInt8]? {
        guard bytes.contains(UInt8(ascii: "%")) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == UInt8(ascii: "%"), bytes.distance(from: index, to: bytes.endIndex) > 2,
                let high = hexValue(bytes[bytes.index(index, offsetBy: 1)]),
                let low = hexValue(bytes[bytes.index(index, offsetBy: 2)])
            {
                out.append(high << 4 | low)
                index = bytes.index(index, offsetBy: 3)
            } else {
                out.append(bytes[index])
                index = bytes.index(after: index)
            }
        }
        return out
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// `hasScheme` for ASCII bytes.
    private static func hasScheme(_ path: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let colon = path.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return false }
        func isLetter(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        }
        guard isLetter(path[0]) else { return false }
        return path[..<colon].allSatisfy {
            isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "+")
                || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
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

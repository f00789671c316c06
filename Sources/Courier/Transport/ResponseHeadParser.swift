import Foundation
import HTTPTypes

/// Builds an `HTTPResponse` from the header lines libcurl hands to its header callback.
///
/// curl passes one complete line per call (status line, field lines, the empty line that
/// ends a head). Interim `1xx` heads are dropped; the head is complete at the empty line
/// after a final status. Lines after that are trailers (a chunked body's last part): they are
/// counted against the bounds but never become header fields.
///
/// A server decides how many lines it sends: the parser stops at `maxHeadBytes` bytes or
/// `maxFieldCount` fields (interim heads and trailers included) with `.tooLarge`, before the
/// fields grow further.
struct ResponseHeadParser {
    enum Event: Equatable {
        case needMore
        case complete
        case invalid
        case tooLarge
    }

    /// The most bytes of header lines taken in one response (curl 7.88 itself stops at 300 KiB).
    static let maxHeadBytes = 256 << 10
    /// The most field lines taken in one response.
    static let maxFieldCount = 1_000

    private(set) var status: Int = 0
    private var reason = ""
    private var fields = HTTPFields()
    private var lastName: HTTPField.Name?
    /// The value of the last field with its obs-fold continuation lines, until the next
    /// line: built up here so a long fold costs linear time, not a new string per line.
    private var foldedValue: [UInt8]?
    /// The `Content-Length` of the final head, when present and valid.
    private(set) var contentLength: Int64?
    /// Whether the final head announced a `Content-Encoding` (then the length is not the decoded size).
    private(set) var isEncoded = false
    /// Whether the final head has a `Transfer-Encoding` field.
    private(set) var hasTransferEncoding = false
    /// Whether the final head is complete (later lines are trailers).
    private(set) var isComplete = false
    /// Bytes and field lines seen so far, over every head of the response and its trailers.
    private var totalBytes = 0
    private var totalFields = 0

    /// The response built so far.
    var response: HTTPResponse {
        HTTPResponse(status: .init(code: status, reasonPhrase: reason), headerFields: fields)
    }

    mutating func consume(_ line: UnsafeBufferPointer<UInt8>) -> Event {
        totalBytes += line.count
        guard totalBytes <= Self.maxHeadBytes else { return .tooLarge }
        var end = line.count
        while end > 0, line[end - 1] == UInt8(ascii: "\n") || line[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        let trimmed = UnsafeBufferPointer(rebasing: line[0..<end])
        if isComplete {
            // A trailer field, or the empty line after them.
            if !trimmed.isEmpty { totalFields += 1 }
            return totalFields <= Self.maxFieldCount ? .needMore : .tooLarge
        }
        if trimmed.isEmpty {
            guard status >= 200 || status == 101 else {
                // End of an interim 1xx head (or of nothing): the real head follows.
                let hadStatus = status != 0
                resetHead()
                return hadStatus ? .needMore : .invalid
            }
            flushFold()
            isComplete = true
            return .complete
        }
        if status == 0 || (trimmed[0] == UInt8(ascii: "H") && trimmed.starts(with: "HTTP/".utf8)) {
            return parseStatusLine(trimmed) ? .needMore : .invalid
        }
        totalFields += 1
        guard totalFields <= Self.maxFieldCount else { return .tooLarge }
        parseField(trimmed)
        return .needMore
    }

    /// Forgets the head so far (an interim head ended, or a new status line started one),
    /// but not the bytes and fields counted against the bounds.
    private mutating func resetHead() {
        let (bytes, count) = (totalBytes, totalFields)
        self = ResponseHeadParser()
        (totalBytes, totalFields) = (bytes, count)
    }

    private mutating func parseStatusLine(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
        resetHead()
        // "HTTP/1.1 200 OK" or "HTTP/2 200"
        guard let firstSpace = line.firstIndex(of: UInt8(ascii: " ")) else { return false }
        var index = firstSpace + 1
        var code = 0
        var digits = 0
        while index < line.count, digits < 3, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(line[index]) {
            code = code * 10 + Int(line[index] - UInt8(ascii: "0"))
            index += 1
            digits += 1
        }
        guard digits == 3, code >= 100 else { return false }
        status = code
        if index < line.count {
            reason = Self.reasonPhrase(UnsafeBufferPointer(rebasing: line[(index + 1)...]), code: code)
        }
        return true
    }

    /// The reason phrase after the status code, trimmed of whitespace.
    private static func reasonPhrase(_ rest: UnsafeBufferPointer<UInt8>, code: Int) -> String {
        var start = 0
        var end = rest.count
        while start < end, rest[start] == UInt8(ascii: " ") || rest[start] == UInt8(ascii: "\t") { start += 1 }
        while end > start, rest[end - 1] == UInt8(ascii: " ") || rest[end - 1] == UInt8(ascii: "\t") { end -= 1 }
        let trimmed = UnsafeBufferPointer(rebasing: rest[start..<end])
        let text: String
        if trimmed.allSatisfy({ $0 < 0x80 }) {
            // Space and tab are the only ASCII characters in `CharacterSet.whitespaces`.
            text = String(decoding: trimmed, as: UTF8.self)
        } else {
            text = String(decoding: rest, as: UTF8.self).trimmingCharacters(in: .whitespaces)
        }
        return HTTPResponse.Status(code: code, reasonPhrase: text).reasonPhrase
    }

    private mutating func parseField(_ line: UnsafeBufferPointer<UInt8>) {
        if line[0] == UInt8(ascii: " ") || line[0] == UInt8(ascii: "\t") {
            // obs-fold: a continuation of the previous field's value (RFC 9112 §5.2: replace
            // the fold by a space).
            guard lastName != nil, let last = fields.last else { return }
            var start = 0
            while start < line.count, line[start] == UInt8(ascii: " ") || line[start] == UInt8(ascii: "\t") {
                start += 1
            }
            if foldedValue == nil { foldedValue = Array(last.value.utf8) }
            foldedValue!.append(UInt8(ascii: " "))
            foldedValue!.append(contentsOf: line[start...])
            return
        }
        flushFold()
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")),
            let (name, kind) = KnownFieldNames.name(UnsafeBufferPointer(rebasing: line[..<colon]))
        else { return }  // Not a valid field; HTTP says ignore it.
        var start = colon + 1
        var end = line.count
        while start < end, line[start] == UInt8(ascii: " ") || line[start] == UInt8(ascii: "\t") { start += 1 }
        while end > start, line[end - 1] == UInt8(ascii: " ") || line[end - 1] == UInt8(ascii: "\t") { end -= 1 }
        let value = UnsafeBufferPointer(rebasing: line[start..<end])
        // One allocation for a typical head instead of growing 1, 2, 4, 8.
        if fields.isEmpty { fields.reserveCapacity(12) }
        fields.append(Self.field(name: name, value: value))
        lastName = name
        switch kind {
        case .contentLength: contentLength = Self.decimal(value)
        case .contentEncoding: isEncoded = true
        case .transferEncoding: hasTransferEncoding = true
        case .other: break
        }
    }

    /// Gives the last field the value its fold lines built.
    private mutating func flushFold() {
        guard let value = foldedValue, let name = lastName, !fields.isEmpty else { return }
        foldedValue = nil
        var end = value.count
        while end > 0, value[end - 1] == UInt8(ascii: " ") || value[end - 1] == UInt8(ascii: "\t") { end -= 1 }
        fields[fields.index(before: fields.endIndex)] = value[..<end].withUnsafeBufferPointer {
            Self.field(name: name, value: $0)
        }
    }

    /// `HTTPField(name:lenientValue:)`, whose generic UTF-8 validation cost ~1k instructions a
    /// field: a value of printable ASCII and tabs that neither starts nor ends with a space or
    /// a tab (the usual one; the parser trims them) is the same field made from a string.
    static func field(name: HTTPField.Name, value: UnsafeBufferPointer<UInt8>) -> HTTPField {
        let edgesAreVisible = value.isEmpty || (value.first! > 0x20 && value.last! > 0x20)
        if edgesAreVisible, value.allSatisfy({ $0 == 0x09 || (0x20...0x7E).contains($0) }) {
            return HTTPField(name: name, value: String(decoding: value, as: UTF8.self))
        }
        // RFC 9110 §5.5: CR, LF and NUL become spaces; so do the other control bytes (an
        // escape sequence in a value would reach logs and terminals).
        return HTTPField(name: name, lenientValue: withoutControlBytes(value))
    }

    /// `value` with every control byte but HTAB as a space, trimmed of spaces and tabs.
    static func withoutControlBytes(_ value: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var cleaned = value.map { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) ? $0 : 0x20 }
        while let last = cleaned.last, last == 0x20 || last == 0x09 { cleaned.removeLast() }
        let start = cleaned.firstIndex { $0 != 0x20 && $0 != 0x09 } ?? cleaned.endIndex
        return Array(cleaned[start...])
    }

    /// `Int64(String(decoding: bytes, as: UTF8.self))` without the string: an optional sign,
    /// then decimal digits; nil when empty, malformed or out of range.
    static func decimal(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var digits = bytes[...]
        var negative = false
        if let sign = digits.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            negative = sign == UInt8(ascii: "-")
            digits = digits.dropFirst()
        }
        guard !digits.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            let digit = Int64(byte - UInt8(ascii: "0"))
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) =
                negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
            guard !overflow1, !overflow2 else { return nil }
            value = next
        }
        return value
    }
}

/// The field names servers send most, made once: a header line whose name has exactly these
/// bytes reuses the made name instead of validating and lower-casing a new one.
enum KnownFieldNames {
    /// What the parser needs to know about a name.
    enum Kind {
        case contentLength
        case contentEncoding
        case transferEncoding
        case other

        init(_ name: HTTPField.Name) {
            switch name {
            case .contentLength: self = .contentLength
            case .contentEncoding: self = .contentEncoding
            case .transferEncoding: self = .transferEncoding
            default: self = .other
            }
        }
    }

    private struct Entry {
        let bytes: [UInt8]
        let name: HTTPField.Name
        let kind: Kind
    }

    /// Names by byte length.
    private static let byLength: [[Entry]] = {
        let titles = [
            "Accept-Ranges", "Access-Control-Allow-Origin", "Age", "Cache-Control", "Connection",
            "Content-Encoding", "Content-Language", "Content-Length", "Content-Type", "Date", "ETag", "Expires",
            "Keep-Alive", "Last-Modified", "Location", "Retry-After", "Server", "Set-Cookie",
            "Strict-Transport-Security", "Transfer-Encoding", "Vary", "WWW-Authenticate", "X-Content-Type-Options",
        ]
        // HTTP/2 and HTTP/3 names are lower-case on the wire.
        let all = titles + titles.map { $0.lowercased() }
        var table = [[Entry]](repeating: [], count: 32)
        for text in all {
            guard let name = HTTPField.Name(text), text.utf8.count < table.count else { continue }
            table[text.utf8.count].append(Entry(bytes: Array(text.utf8), name: name, kind: Kind(name)))
        }
        return table
    }()

    /// The name for `bytes`: a made one when the bytes match exactly, else a new one (nil
    /// when the bytes are not a valid field name).
    static func name(_ bytes: UnsafeBufferPointer<UInt8>) -> (HTTPField.Name, Kind)? {
        if bytes.count < byLength.count, let start = bytes.baseAddress {
            for entry in byLength[bytes.count] {
                let same = entry.bytes.withUnsafeBufferPointer { memcmp($0.baseAddress!, start, bytes.count) == 0 }
                if same { return (entry.name, entry.kind) }
            }
        }
        guard let name = HTTPField.Name(String(decoding: bytes, as: UTF8.self)) else { return nil }
        return (name, Kind(name))
    }
}

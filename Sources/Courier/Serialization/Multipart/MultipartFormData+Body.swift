import Foundation

extension MultipartFormData {
    /// The body: in-memory boundaries and headers with file parts as streamed segments.
    /// - Returns: the body; its ``RequestBody/contentLength()`` reads file sizes from disk.
    /// - Throws: `CourierError.encoding` when the boundary is not one RFC 2046 allows, occurs
    ///   in an in-memory part's content, or a content type holds CR, LF or NUL.
    func makeBody() throws -> RequestBody {
        // A CR or LF in the boundary would write header lines of the caller's making into the body.
        guard Self.isValidBoundary(boundary) else {
            throw CourierError(
                .encoding,
                "the multipart boundary must be 1 to 70 letters, digits, spaces (not last) or '()+_,-./:=?")
        }
        var segments: [RequestBody.Segment] = []
        var pending = Data()
        pending.reserveCapacity(256)
        let dashBoundary = Data("--\(boundary)".utf8)
        for part in parts {
            if case .data(let data) = part.content, Self.contains(delimiter: dashBoundary, in: data) {
                // RFC 2046 §5.1.1: text of a user's in a field would end the part there and
                // add parts of its own (a fixed boundary of the app's is known to anyone).
                throw CourierError(
                    .encoding, "the content of the part '\(part.name)' contains the multipart boundary")
            }
            pending.append(dashBoundary)
            pending.append(contentsOf: [0x0D, 0x0A])
            try appendHeaders(of: part, to: &pending)
            switch part.content {
            case .data(let data) where data.count >= Self.separateSegmentThreshold:
                // Big in-memory parts become their own segment: shared, not copied.
                segments.append(.data(pending))
                segments.append(.data(data))
                pending = Data()
            case .data(let data):
                pending.append(data)
            case .file(let path):
                segments.append(.data(pending))
                segments.append(.file(path: path))
                pending = Data()
            }
            pending.append(contentsOf: [0x0D, 0x0A])
        }
        pending.append(dashBoundary)
        pending.append(contentsOf: Array("--\r\n".utf8))
        segments.append(.data(pending))
        return RequestBody(segments: segments)
    }

    /// Whether `content` holds what a reader takes for a delimiter: `--boundary` at its start
    /// (right after the part's header lines) or after a line break: CR LF, a bare LF (which
    /// lenient readers take for one: PHP's looks for `\n--boundary`) or a bare CR (Python's
    /// email parser splits lines at CR, LF and CR LF).
    static func contains(delimiter dashBoundary: Data, in content: Data) -> Bool {
        guard content.count >= dashBoundary.count else { return false }
        if content.starts(with: dashBoundary) { return true }
        return contains(dashBoundary, after: 0x0A, in: content) || contains(dashBoundary, after: 0x0D, in: content)
    }

    /// Whether `dashBoundary` follows a `lineBreak` byte somewhere in `content`.
    private static func contains(_ dashBoundary: Data, after lineBreak: UInt8, in content: Data) -> Bool {
        let needle = Data([lineBreak]) + dashBoundary
        return content.withUnsafeBytes { haystack in
            needle.withUnsafeBytes { needle in
                guard let base = haystack.baseAddress, haystack.count >= needle.count else { return false }
                // Each line break (found by `memchr`), compared with the line break and the boundary.
                var offset = 0
                let last = haystack.count - needle.count
                while offset <= last, let found = memchr(base + offset, Int32(lineBreak), last - offset + 1) {
                    let at = base.distance(to: UnsafeRawPointer(found))
                    if memcmp(base + at, needle.baseAddress!, needle.count) == 0 { return true }
                    offset = at + 1
                }
                return false
            }
        }
    }

    /// Whether `boundary` is 1 to 70 of RFC 2046's `bchars`, not ending in a space.
    static func isValidBoundary(_ boundary: String) -> Bool {
        let bytes = boundary.utf8
        guard (1...70).contains(bytes.count), bytes.last != UInt8(ascii: " ") else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "A")...UInt8(ascii: "Z"):
                true
            default: "'()+_,-./:=? ".utf8.contains(byte)
            }
        }
    }

    /// In-memory parts at least this big are not copied into the surrounding boundary bytes.
    static let separateSegmentThreshold = 16 * 1024

    /// The total length, reading file sizes from disk.
    /// - Throws: `CourierError.invalidRequest` when a file cannot be read; `.encoding` for a bad content type.
    func contentLength() throws -> Int64 { try makeBody().contentLength() }

    private func appendHeaders(of part: Part, to output: inout Data) throws {
        var header = "Content-Disposition: form-data; name=\"" + escape(part.name) + "\""
        if let fileName = part.fileName { header += "; filename=\"" + escape(fileName) + "\"" }
        header += "\r\n"
        if let contentType = part.contentType {
            guard !contentType.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                throw CourierError(.encoding, "the content type of the part '\(part.name)' contains CR, LF or NUL")
            }
            header += "Content-Type: " + contentType + "\r\n"
        }
        header += "\r\n"
        output.append(contentsOf: header.utf8)
    }

    /// Escapes a name for a quoted `Content-Disposition` parameter: `"`, CR and LF as browsers do,
    /// and `\`, which readers of RFC 2045 quoted strings (Python's email, Go's mime) take for an
    /// escape: a name ending in one escaped the closing quote and swallowed `; filename=`.
    func escape(_ name: String) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(name.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in name.utf8 {
            let escaped: Bool
            switch fileNameEncoding {
            case .utf8:
                escaped = byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0x0D || byte == 0x0A
            case .percentEncoded:
                escaped =
                    byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "%") || byte < 0x20
                    || byte >= 0x7F
            }
            if escaped {
                output.append(contentsOf: [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            } else {
                output.append(byte)
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// A media type for common file extensions; `application/octet-stream` otherwise.
    static func contentType(forPathExtension pathExtension: String) -> String {
        switch pathExtension.lowercased() {
        case "txt": return "text/plain"
        case "csv": return "text/csv"
        case "html", "htm": return "text/html"
        case "json": return "application/json"
        case "xml": return "application/xml"
        case "pdf": return "application/pdf"
        case "zip": return "application/zip"
        case "gz": return "application/gzip"
        case "png": return "image/png"
        case "jpg", "jpeg": return "image/jpeg"
        case "gif": return "image/gif"
        case "webp": return "image/webp"
        case "svg": return "image/svg+xml"
        case "mp3": return "audio/mpeg"
        case "mp4": return "video/mp4"
        default: return "application/octet-stream"
        }
    }
}

import Foundation
import HTTPTypes

/// Builds an `HTTPResponse` from the header lines libcurl hands to its header callback.
///
/// curl passes one complete line per call (status line, field lines, the empty line that
/// ends a head). Interim `1xx` heads are dropped; the head is complete at the empty line
/// after a final status.
struct ResponseHeadParser {
    enum Event: Equatable {
        case needMore
        case complete
        case invalid
    }

    private(set) var status: Int = 0
    private var reason = ""
    private var fields = HTTPFields()
    private var lastName: HTTPField.Name?
    /// The `Content-Length` of the final head, when present and valid.
    private(set) var contentLength: Int64?
    /// Whether the final head announced a `Content-Encoding` (then the length is not the decoded size).
    private(set) var isEncoded = false

    /// The response built so far.
    var response: HTTPResponse {
        HTTPResponse(status: .init(code: status, reasonPhrase: reason), headerFields: fields)
    }

    mutating func consume(_ line: UnsafeBufferPointer<UInt8>) -> Event {
        var end = line.count
        while end > 0, line[end - 1] == UInt8(ascii: "\n") || line[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        let trimmed = UnsafeBufferPointer(rebasing: line[0..<end])
        if trimmed.isEmpty {
            guard status >= 200 || status == 101 else {
                // End of an interim 1xx head (or of nothing): the real head follows.
                let hadStatus = status != 0
                self = ResponseHeadParser()
                return hadStatus ? .needMore : .invalid
            }
            return .complete
        }
        if status == 0 || trimmed.starts(with: "HTTP/".utf8) {
            return parseStatusLine(trimmed) ? .needMore : .invalid
        }
        parseField(trimmed)
        return .needMore
    }

    private mutating func parseStatusLine(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
        self = ResponseHeadParser()
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
            let rest = UnsafeBufferPointer(rebasing: line[(index + 1)...])
            let text = String(decoding: rest, as: UTF8.self).trimmingCharacters(in: .whitespaces)
            reason = HTTPResponse.Status(code: code, reasonPhrase: text).reasonPhrase
        }
        return true
    }

    private mutating func parseField(_ line: UnsafeBufferPointer<UInt8>) {
        if line[0] == UInt8(ascii: " ") || line[0] == UInt8(ascii: "\t") {
            // obs-fold: a continuation of the previous field's value.
            if let lastName, let previous = fields[lastName] {
                let more = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespaces)
                fields[lastName] = previous + " " + more
            }
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")),
            let name = HTTPField.Name(String(decoding: UnsafeBufferPointer(rebasing: line[..<colon]), as: UTF8.self))
        else { return }  // Not a valid field; HTTP says ignore it.
        var start = colon + 1
        var end = line.count
        while start < end, line[start] == UInt8(ascii: " ") || line[start] == UInt8(ascii: "\t") { start += 1 }
        while end > start, line[end - 1] == UInt8(ascii: " ") || line[end - 1] == UInt8(ascii: "\t") { end -= 1 }
        let value = UnsafeBufferPointer(rebasing: line[start..<end])
        fields.append(HTTPField(name: name, lenientValue: value))
        lastName = name
        if name == .contentLength {
            contentLength = Int64(String(decoding: value, as: UTF8.self))
        } else if name == .contentEncoding {
            isEncoded = true
        }
    }
}

import Foundation
import Glibc

/// The parsed start line and header block of one request.
struct RequestHead {
    var method: String
    /// The request target as sent, e.g. `/echo?a=1`.
    var target: String
    var version: String
    var headers: [(name: String, value: String)]

    /// The first value of a header, compared case-insensitively.
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The target up to `?`.
    var path: String {
        target.firstIndex(of: "?").map { String(target[..<$0]) } ?? target
    }

    /// The raw query after `?` (without it), or `nil`.
    var query: String? {
        target.firstIndex(of: "?").map { String(target[target.index(after: $0)...]) }
    }

    /// Whether the connection stays open after the response, per HTTP/1.0 and 1.1 rules.
    var keepAlive: Bool {
        let tokens = (header("Connection") ?? "").lowercased().split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        if version == "HTTP/1.0" { return tokens.contains("keep-alive") }
        return !tokens.contains("close")
    }

    var isChunked: Bool {
        (header("Transfer-Encoding") ?? "").lowercased().contains("chunked")
    }

    var contentLength: Int? {
        header("Content-Length").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    var expectsContinue: Bool {
        header("Expect")?.lowercased() == "100-continue"
    }
}

/// Why a request could not be read.
enum RequestReadError: Error {
    case closed
    case headTooLarge
    case malformed(String)
    case bodyTooLarge
}

/// Reads HTTP/1.1 requests (head, then a Content-Length or chunked body) from one connection.
///
/// Confined to the connection's thread; not shared.
final class RequestReader {
    static let maximumHeadSize = 1 << 20

    private let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var scratch = [UInt8](repeating: 0, count: 256 * 1024)

    init(fd: Int32) {
        self.fd = fd
    }

    /// Reads the next request head.
    /// - Returns: `nil` when the peer closed the connection between requests.
    func readHead() throws(RequestReadError) -> RequestHead? {
        // Tolerate empty lines before a request line (RFC 9112 §2.2).
        while true {
            if buffered >= 2 && buffer[start] == 13 && buffer[start + 1] == 10 {
                start += 2
                continue
            }
            if buffered >= 1 && buffer[start] == 10 {
                start += 1
                continue
            }
            if buffered >= 2 || (buffered == 1 && buffer[start] != 13) { break }
            if !fill() {
                if buffered == 0 { return nil }
                throw .closed
            }
        }
        var scanOffset = 0  // relative to `start`, which `fill` may move
        while true {
            if let end = findHeadEnd(from: start + scanOffset) {
                guard end - start <= Self.maximumHeadSize else { throw .headTooLarge }
                let text = String(decoding: buffer[start..<end], as: UTF8.self)
                start = end + 4
                return try parseHead(text)
            }
            scanOffset = max(0, buffered - 3)
            if buffered > Self.maximumHeadSize { throw .headTooLarge }
            if !fill() { throw .closed }
        }
    }

    /// Reads the body announced by `head`, handing each piece to `sink`.
    /// - Returns: the number of body bytes.
    @discardableResult
    func readBody(
        of head: RequestHead, limit: Int, sink: (UnsafeRawBufferPointer) -> Void
    ) throws(RequestReadError) -> Int {
        if head.isChunked { return try readChunkedBody(limit: limit, sink: sink) }
        guard let length = head.contentLength, length > 0 else { return 0 }
        guard length <= limit else { throw .bodyTooLarge }
        try readExactly(length, sink: sink)
        return length
    }

    // MARK: - Private

    private var buffered: Int { buffer.count - start }

    /// Appends what the socket has; `false` on end of stream.
    private func fill() -> Bool {
        if start > 0 {
            buffer.removeFirst(start)
            start = 0
        }
        let count = scratch.withUnsafeMutableBytes { Socket.read(fd, into: $0) }
        guard count > 0 else { return false }
        buffer.append(contentsOf: scratch[0..<count])
        return true
    }

    private func findHeadEnd(from index: Int) -> Int? {
        var i = index
        while i + 3 < buffer.count {
            if buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }

    private func parseHead(_ text: String) throws(RequestReadError) -> RequestHead {
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: true)
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else {
            throw .malformed("bad request line")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw .malformed("header without colon") }
            let name = String(line[..<colon])
            guard !name.isEmpty, !name.contains(" ") else { throw .malformed("bad header name") }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers.append((name, value))
        }
        return RequestHead(
            method: String(requestLine[0]), target: String(requestLine[1]), version: String(requestLine[2]),
            headers: headers)
    }

    private func readExactly(_ count: Int, sink: (UnsafeRawBufferPointer) -> Void) throws(RequestReadError) {
        var remaining = count
        if buffered > 0 {
            let take = min(buffered, remaining)
            buffer.withUnsafeBytes { sink(UnsafeRawBufferPointer(rebasing: $0[start..<start + take])) }
            start += take
            remaining -= take
        }
        // Large bodies bypass the line buffer and go straight from the socket to the sink.
        while remaining > 0 {
            let got = scratch.withUnsafeMutableBytes { raw in
                let piece = UnsafeMutableRawBufferPointer(rebasing: raw[0..<min(raw.count, remaining)])
                let count = Socket.read(fd, into: piece)
                if count > 0 { sink(UnsafeRawBufferPointer(rebasing: piece[0..<count])) }
                return count
            }
            guard got > 0 else { throw .closed }
            remaining -= got
        }
    }

    private func readLine() throws(RequestReadError) -> String {
        var scanOffset = 0  // relative to `start`, which `fill` may move
        while true {
            var i = start + scanOffset
            while i + 1 < buffer.count {
                if buffer[i] == 13 && buffer[i + 1] == 10 {
                    let line = String(decoding: buffer[start..<i], as: UTF8.self)
                    start = i + 2
                    return line
                }
                i += 1
            }
            if buffered > 64 * 1024 { throw .malformed("line too long") }
            scanOffset = max(0, buffered - 1)
            if !fill() { throw .closed }
        }
    }

    private func readChunkedBody(limit: Int, sink: (UnsafeRawBufferPointer) -> Void) throws(RequestReadError) -> Int {
        var total = 0
        while true {
            let line = try readLine()
            let sizeText = line.split(separator: ";", maxSplits: 1).first.map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard let sizeText, let size = Int(sizeText, radix: 16), size >= 0 else {
                throw .malformed("bad chunk size")
            }
            if size == 0 {
                // Trailer fields, up to the empty line.
                while try !readLine().isEmpty {}
                return total
            }
            total += size
            guard total <= limit else { throw .bodyTooLarge }
            try readExactly(size, sink: sink)
            guard try readLine().isEmpty else { throw .malformed("chunk not followed by CRLF") }
        }
    }
}

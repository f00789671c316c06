import Foundation
import Glibc

@testable import CourierTesting

/// A response as read off the wire by ``RawHTTPConnection``.
struct RawResponse: Sendable {
    var status: Int
    var statusLine: String
    var headers: [(name: String, value: String)]
    var body: Data

    func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
    }
}

enum RawHTTPError: Error, Equatable {
    case connectFailed(Int32)
    case closed
    case reset
    case timedOut
    case malformed(String)
}

/// A blocking HTTP/1.1 client on a raw socket, so the server's tests do not depend on the
/// library's transport. Every read gives up after `timeout` so a broken server cannot hang a test.
final class RawHTTPConnection: @unchecked Sendable {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(host: String = "127.0.0.1", port: UInt16, timeout: Duration = .seconds(10)) throws {
        // `fd` is assigned only once the socket is connected: a class initializer that throws
        // after every stored property is set runs `deinit`, and closing here and there too
        // closed the descriptor twice, the second time someone else's that had been given
        // the same number in the meantime (a curl or server socket of a parallel test).
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw RawHTTPError.connectFailed(code)
        }
        var value = timeval(
            tv_sec: Int(timeout.components.seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        self.fd = fd
    }

    deinit {
        Glibc.close(fd)
    }

    func send(_ text: String) throws {
        try send(Data(text.utf8))
    }

    func send(_ data: Data) throws {
        guard data.withUnsafeBytes({ Socket.writeAll(fd, $0) }) else { throw RawHTTPError.closed }
    }

    /// Sends a request with a Content-Length body.
    func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: Data? = nil
    ) throws -> RawResponse {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if let body { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        try send(Data(text.utf8) + (body ?? Data()))
        return try readResponse(method: method)
    }

    /// Reads the status line and header block.
    func readHead() throws -> RawResponse {
        while true {
            if let end = find([13, 10, 13, 10]) {
                let text = String(decoding: buffer[0..<end], as: UTF8.self)
                buffer.removeFirst(end + 4)
                var lines = text.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst()
                let fields = statusLine.split(separator: " ")
                guard fields.count >= 2, let status = Int(fields[1]) else {
                    throw RawHTTPError.malformed(statusLine)
                }
                let headers = lines.compactMap { line -> (name: String, value: String)? in
                    guard let colon = line.firstIndex(of: ":") else { return nil }
                    return (
                        String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                    )
                }
                return RawResponse(status: status, statusLine: statusLine, headers: headers, body: Data())
            }
            try fill()
        }
    }

    /// Reads a whole response (skipping 1xx), framed by Content-Length, chunked or close.
    func readResponse(method: String = "GET") throws -> RawResponse {
        var response = try readHead()
        while response.status / 100 == 1 { response = try readHead() }
        if method == "HEAD" || response.status == 204 || response.status == 304 { return response }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            response.body = try readChunked()
        } else if let length = response.header("Content-Length").flatMap(Int.init) {
            response.body = try read(count: length)
        } else {
            response.body = readUntilEnd().data
        }
        return response
    }

    func read(count: Int) throws -> Data {
        while buffer.count < count { try fill() }
        defer { buffer.removeFirst(count) }
        return Data(buffer[0..<count])
    }

    /// Reads until the stream ends; also says how it ended.
    func readUntilEnd() -> (data: Data, end: RawHTTPError) {
        var end = RawHTTPError.closed
        while true {
            do { try fill() } catch {
                end = error as? RawHTTPError ?? .closed
                break
            }
        }
        defer { buffer.removeAll() }
        return (Data(buffer), end)
    }

    private func readChunked() throws -> Data {
        var body = Data()
        while true {
            let line = try readLine()
            guard let size = Int(line.split(separator: ";").first ?? "", radix: 16) else {
                throw RawHTTPError.malformed("chunk size \(line)")
            }
            if size == 0 {
                while try !readLine().isEmpty {}
                return body
            }
            body += try read(count: size)
            _ = try readLine()
        }
    }

    private func readLine() throws -> String {
        while true {
            if let end = find([13, 10]) {
                defer { buffer.removeFirst(end + 2) }
                return String(decoding: buffer[0..<end], as: UTF8.self)
            }
            try fill()
        }
    }

    private func find(_ needle: [UInt8]) -> Int? {
        guard buffer.count >= needle.count else { return nil }
        for index in 0...(buffer.count - needle.count) where buffer[index] == needle[0] {
            if Array(buffer[index..<index + needle.count]) == needle { return index }
        }
        return nil
    }

    private func fill() throws {
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        let count = recv(fd, &scratch, scratch.count, 0)
        if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { throw RawHTTPError.timedOut }
        if count < 0 && errno == ECONNRESET { throw RawHTTPError.reset }
        guard count > 0 else { throw RawHTTPError.closed }
        buffer += scratch[0..<count]
    }
}

/// The same calls, awaitable: in async tests these overloads are chosen and run off the pool.
///
/// `@unchecked Sendable` on the class is safe because a connection is used by one test at a
/// time and each call is awaited before the next one starts.
extension RawHTTPConnection {
    func send(_ text: String) async throws {
        try await offPool { try self.send(text) }
    }

    func send(_ data: Data) async throws {
        try await offPool { try self.send(data) }
    }

    func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: Data? = nil
    ) async throws -> RawResponse {
        try await offPool { try self.request(method, target, headers: headers, body: body) }
    }

    func readHead() async throws -> RawResponse {
        try await offPool { try self.readHead() }
    }

    func readResponse(method: String = "GET") async throws -> RawResponse {
        try await offPool { try self.readResponse(method: method) }
    }

    func read(count: Int) async throws -> Data {
        try await offPool { try self.read(count: count) }
    }

    func readUntilEnd() async -> (data: Data, end: RawHTTPError) {
        (try? await offPool { self.readUntilEnd() }) ?? (Data(), .closed)
    }
}

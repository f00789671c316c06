import Foundation
import Glibc
import HTTPTypes

extension ServerCore {
    /// Writes `response` (carrying out its delay and fault).
    /// - Returns: `false` when the connection must close (write failed, fault, server stopping).
    func write(_ response: ScriptedResponse, to fd: Int32, keepAlive: Bool, head request: RequestHead?) -> Bool {
        if response.delay > .zero && !pause(response.delay) { return false }
        if let fault = response.fault {
            switch fault {
            case .hugeHeaders: break  // a valid response with padding, written below
            default: return writeFault(fault, response: response, fd: fd)
            }
        }
        let omitsBody = request?.method == "HEAD" || response.status == 204 || response.status == 304
        let bodyLength = response.patternLength ?? response.body.count
        var framing: [(String, String)] = []
        if response.chunks != nil {
            framing.append(("Transfer-Encoding", "chunked"))
        } else if response.headers[.contentLength] == nil && response.status != 204 && response.status != 304 {
            framing.append(("Content-Length", String(bodyLength)))
        }
        if !keepAlive { framing.append(("Connection", "close")) }
        var headBytes = statusLineAndHeaders(response, extra: framing)
        if case .hugeHeaders(let size) = response.fault { headBytes.append(contentsOf: filler(size: size)) }
        headBytes.append(contentsOf: [13, 10])

        if omitsBody { return Socket.writeAll(fd, headBytes) }
        if let chunks = response.chunks {
            guard Socket.writeAll(fd, headBytes) else { return false }
            for (index, chunk) in chunks.enumerated() where !chunk.isEmpty {
                if index > 0 && response.chunkInterval > .zero && !pause(response.chunkInterval) { return false }
                guard writeChunk(chunk, fd: fd) else { return false }
            }
            return Socket.writeAll(fd, Array("0\r\n\r\n".utf8))
        }
        if let length = response.patternLength {
            if length <= 16 * 1024 {
                headBytes.append(contentsOf: TestServer.patternBlock.prefix(length))
                return Socket.writeAll(fd, headBytes)
            }
            guard Socket.writeAll(fd, headBytes) else { return false }
            return writePattern(length: length, fd: fd)
        }
        if response.body.count <= 64 * 1024 {
            headBytes.append(contentsOf: response.body)
            return Socket.writeAll(fd, headBytes)
        }
        guard Socket.writeAll(fd, headBytes) else { return false }
        return response.body.withUnsafeBytes { Socket.writeAll(fd, $0) }
    }

    /// The status line and header fields (without the final empty line).
    func statusLineAndHeaders(_ response: ScriptedResponse, extra: [(String, String)]) -> [UInt8] {
        let reason = response.reason ?? HTTPResponse.Status(code: response.status).reasonPhrase
        var text = "HTTP/1.1 \(response.status) \(reason)\r\n"
        if response.headers[.date] == nil && state.withLock({ $0.sendsDateHeader }) {
            text += "Date: \(HTTPDate.format(Date()))\r\n"
        }
        for field in response.headers { text += "\(field.name.rawName): \(field.value)\r\n" }
        for (name, value) in extra { text += "\(name): \(value)\r\n" }
        return Array(text.utf8)
    }

    func writeChunk(_ chunk: Data, fd: Int32) -> Bool {
        var bytes = Array((String(chunk.count, radix: 16) + "\r\n").utf8)
        bytes.append(contentsOf: chunk)
        bytes.append(contentsOf: [13, 10])
        return Socket.writeAll(fd, bytes)
    }

    func writePattern(length: Int, fd: Int32) -> Bool {
        let block = TestServer.patternBlock
        var remaining = length
        while remaining > 0 {
            // The pattern repeats every 251 bytes and the block is a multiple of that, so the
            // stream stays equal to `bytePattern(count: length)`.
            let count = min(remaining, block.count)
            guard block.withUnsafeBytes({ Socket.writeAll(fd, UnsafeRawBufferPointer(rebasing: $0[0..<count])) })
            else { return false }
            remaining -= count
        }
        return true
    }

    private func filler(size: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size + 1100)
        var index = 0
        while bytes.count < size {
            let line =
                "X-Filler-\(index): " + String(repeating: "f", count: min(1000, max(1, size - bytes.count))) + "\r\n"
            bytes.append(contentsOf: line.utf8)
            index += 1
        }
        return bytes
    }
}

/// Formats and parses IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) without locale-dependent formatters.
public enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Formats `date` as an HTTP date.
    public static func format(_ date: Date) -> String {
        var time = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    /// Parses an HTTP date in IMF-fixdate form; `nil` when it is not one.
    public static func parse(_ text: String) -> Date? {
        let fields = text.split(separator: " ")
        guard fields.count == 6, fields[5] == "GMT", let day = Int32(fields[1]),
            let month = months.firstIndex(of: String(fields[2])), let year = Int32(fields[3])
        else { return nil }
        let clock = fields[4].split(separator: ":").compactMap { Int32($0) }
        guard clock.count == 3 else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = Int32(month)
        parts.tm_mday = day
        parts.tm_hour = clock[0]
        parts.tm_min = clock[1]
        parts.tm_sec = clock[2]
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }
}

import Foundation
import Glibc

extension ServerCore {
    /// Carries out a fault. Always ends the connection.
    /// - Returns: `false`, so the caller closes the connection.
    func writeFault(_ fault: Fault, response: ScriptedResponse, fd: Int32) -> Bool {
        let body = response.body.isEmpty ? TestServer.bytePattern(count: 10_000) : response.body
        let half = body.prefix(body.count / 2)
        func head(_ extra: [(String, String)]) -> [UInt8] {
            statusLineAndHeaders(response, extra: extra) + [13, 10]
        }
        let lengthHead = head([("Content-Length", String(body.count))])

        switch fault {
        case .resetDuringHeaders:
            _ = Socket.writeAll(fd, Array(lengthHead.prefix(lengthHead.count / 2)))
            Socket.setLingerZero(fd)
        case .resetDuringBody:
            if Socket.writeAll(fd, lengthHead + half) { waitUntilSent(fd) }
            Socket.setLingerZero(fd)
        case .closeDuringBody:
            _ = Socket.writeAll(fd, lengthHead + half)
        case .closeWithoutResponse:
            break
        case .stallAfterHeaders:
            if Socket.writeAll(fd, lengthHead) { waitForPeerClose(fd) }
        case .trickle(let bytes, let interval):
            guard Socket.writeAll(fd, lengthHead) else { return false }
            var offset = 0
            while offset < body.count {
                if offset > 0 && !pause(interval) { return false }
                let end = min(body.count, offset + max(1, bytes))
                guard Socket.writeAll(fd, Array(body[body.startIndex + offset..<body.startIndex + end])) else {
                    return false
                }
                offset = end
            }
        case .truncatedChunked:
            var bytes = head([("Transfer-Encoding", "chunked")])
            bytes += Array((String(half.count, radix: 16) + "\r\n").utf8) + half + [13, 10]
            // Announce a chunk, send a few of its bytes, then end the connection.
            bytes += Array((String(body.count, radix: 16) + "\r\n").utf8) + body.prefix(10)
            _ = Socket.writeAll(fd, bytes)
        case .badStatusLine:
            _ = Socket.writeAll(fd, Array("HTTP/1.1 TWO-HUNDRED Fine\r\nContent-Length: 2\r\n\r\nok".utf8))
        case .badHeaderBytes:
            var bytes = Array("HTTP/1.1 200 OK\r\nX-Nul: a".utf8) + [0] + Array("b\r\n".utf8)
            bytes += Array("Bad Name\u{1}: x\r\nX-Bare-CR: a\rb\r\n".utf8)
            bytes += Array("Content-Length: \(body.count)\r\n\r\n".utf8) + body
            _ = Socket.writeAll(fd, bytes)
        case .contentLengthLarger(let extra):
            _ = Socket.writeAll(fd, head([("Content-Length", String(body.count + max(1, extra)))]) + body)
        case .contentLengthSmaller:
            _ = Socket.writeAll(fd, head([("Content-Length", String(body.count / 2))]) + body)
        case .hugeHeaders:
            break  // handled as a valid response by `write`
        case .raw(let bytes):
            if Socket.writeAll(fd, Array(bytes)) { waitUntilSent(fd) }
        case .drip(let bytes, let piece, let interval):
            var offset = 0
            while offset < bytes.count {
                if offset > 0 && !pause(interval) { return false }
                let end = min(bytes.count, offset + max(1, piece))
                guard Socket.writeAll(fd, Array(bytes[bytes.startIndex + offset..<bytes.startIndex + end])) else {
                    return false
                }
                offset = end
            }
        case .endless:
            guard Socket.writeAll(fd, head([("Transfer-Encoding", "chunked")])) else { return false }
            var chunk = Array((String(16 * 1024, radix: 16) + "\r\n").utf8)
            chunk += Array(TestServer.bytePattern(count: 16 * 1024)) + [13, 10]
            while !isStopped && Socket.writeAll(fd, chunk) {}
        }
        return false
    }

    /// Holds the connection open, discarding input, until the peer closes it or the server stops.
    func waitForPeerClose(_ fd: Int32) {
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let ready = Socket.poll([fd, wakeRead], timeoutMilliseconds: 1000)
            if ready.contains(1) || isStopped { return }
            if ready.contains(0) {
                let count = scratch.withUnsafeMutableBytes { Socket.read(fd, into: $0) }
                if count == 0 { return }
            }
        }
    }

    /// Gives the kernel a moment to hand queued bytes to the peer before an RST discards them.
    private func waitUntilSent(_ fd: Int32) {
        // SIOCOUTQ (== TIOCOUTQ): bytes not yet acknowledged. Polled briefly; loopback drains at once.
        let deadline = ContinuousClock.now + .milliseconds(500)
        var pending: Int32 = 0
        while ContinuousClock.now < deadline {
            guard ioctl(fd, UInt(TIOCOUTQ), &pending) == 0, pending > 0 else { return }
            if !pause(.milliseconds(1)) { return }
        }
    }
}

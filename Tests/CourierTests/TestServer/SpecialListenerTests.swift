import Foundation
import Glibc
import Testing

@testable import CourierTesting

@Suite struct SpecialListenerTests {
    @Test func blackHoleAcceptsButNeverAnswers() async throws {
        let hole = try TestServer.blackHole()
        defer { hole.stop() }
        let connection = try RawHTTPConnection(port: hole.port, timeout: .milliseconds(300))
        try await connection.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let result = await connection.readUntilEnd()
        #expect(result.data.isEmpty)
        #expect(result.end == .timedOut)
        #expect(hole.acceptedConnections == 1)
        #expect(hole.baseURL.port == Int(hole.port))
    }

    @Test func blackHoleStopClosesHeldConnections() async throws {
        let hole = try TestServer.blackHole()
        let connection = try RawHTTPConnection(port: hole.port, timeout: .seconds(5))
        try await connection.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        hole.stop()
        hole.stop()
        // Closed by the server (RST, as the request was never read), not left to time out.
        let result = await connection.readUntilEnd()
        #expect(result.end == .reset || result.end == .closed)
        #expect(result.data.isEmpty)
        // The port no longer reaches the hole: a connect is refused, or, when the parallel
        // suite's next server got the same ephemeral port, that server answers (a black hole
        // never would).
        if let reused = try? RawHTTPConnection(port: hole.port, timeout: .seconds(30)) {
            try await reused.send("GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let answer = await reused.readUntilEnd()
            #expect(!answer.data.isEmpty, "the stopped hole still accepted: \(answer.end)")
        }
    }

    @Test func fullBacklogLeavesConnectsPending() async throws {
        let full = try await offPool { try TestServer.fullBacklog() }
        defer { full.stop() }
        let fd = try Socket.connectNonBlocking(host: "127.0.0.1", port: full.port)
        defer { close(fd) }
        // A connect that completes would make the socket writable; it must stay pending.
        let ready = try await offPool { Socket.poll([fd], events: Int16(POLLOUT), timeoutMilliseconds: 500) }
        #expect(ready.isEmpty)
    }

    @Test func fullBacklogStopReleasesThePort() async throws {
        let full = try await offPool { try TestServer.fullBacklog() }
        let port = full.port
        full.stop()
        #expect(throws: RawHTTPError.self) { try RawHTTPConnection(port: port) }
    }
}

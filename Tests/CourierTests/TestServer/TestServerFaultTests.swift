import Foundation
import Testing

@testable import CourierTesting

@Suite struct TestServerFaultTests {
    private static let headEnd = Data("\r\n\r\n".utf8)

    /// Sends `GET target` and reads whatever comes until the connection ends.
    private func fetchRaw(_ server: TestServer, _ target: String) async throws -> (data: Data, end: RawHTTPError) {
        let connection = try RawHTTPConnection(port: server.port, timeout: .seconds(5))
        try await connection.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
        return await connection.readUntilEnd()
    }

    /// Splits raw bytes into the header block and what follows it.
    private func split(_ data: Data) -> (head: String, body: Data)? {
        guard let range = data.firstRange(of: Self.headEnd) else { return nil }
        return (String(decoding: data[..<range.lowerBound], as: UTF8.self), data[range.upperBound...])
    }

    @Test func resetDuringHeaders() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let result = try await fetchRaw(server, "/fault/reset-headers")
        #expect(result.end == .reset || result.end == .closed)
        #expect(result.data.firstRange(of: Self.headEnd) == nil)
        // The server keeps serving.
        #expect(try await RawHTTPConnection(port: server.port).request("GET", "/echo").status == 200)
    }

    @Test func resetDuringBody() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let result = try await fetchRaw(server, "/fault/reset-body")
        let parts = try #require(split(result.data))
        #expect(parts.head.contains("Content-Length: 100000"))
        #expect(parts.body.count < 100_000)
        #expect(result.end == .reset)
    }

    @Test func dropMidBodyClosesAfterHalf() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let result = try await fetchRaw(server, "/drop-mid-body")
        let parts = try #require(split(result.data))
        #expect(parts.head.contains("Content-Length: 100000"))
        #expect(parts.body.count == 50_000)
        #expect(result.end == .closed)
    }

    @Test func stallAfterHeadersSendsNothingMore() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port, timeout: .milliseconds(300))
        try await connection.send("GET /fault/stall-after-headers HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try await connection.readHead()
        #expect(head.status == 200)
        #expect(await connection.readUntilEnd().end == .timedOut)
    }

    @Test func trickleSendsTheWholeBodySlowly() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let started = ContinuousClock.now
        let response = try await RawHTTPConnection(port: server.port).request(
            "GET", "/fault/trickle?bytes=10&intervalMs=20&total=100")
        #expect(response.body == TestServer.bytePattern(count: 100))
        #expect(ContinuousClock.now - started >= .milliseconds(9 * 20))
    }

    @Test func truncatedChunkedEndsMidChunk() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let result = try await fetchRaw(server, "/fault/truncated-chunked")
        let parts = try #require(split(result.data))
        #expect(parts.head.contains("Transfer-Encoding: chunked"))
        #expect(!parts.body.isEmpty)
        #expect(!parts.body.suffix(5).elementsEqual(Data("0\r\n\r\n".utf8)))
        #expect(result.end == .closed)
    }

    @Test func badStatusLine() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try await connection.send("GET /fault/bad-status-line HTTP/1.1\r\nHost: x\r\n\r\n")
        await #expect(throws: RawHTTPError.self) { try await connection.readHead() }
    }

    @Test func badHeaderBytesContainNul() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let result = try await fetchRaw(server, "/fault/bad-header-bytes")
        let head = try #require(result.data.firstRange(of: Self.headEnd).map { result.data[..<$0.lowerBound] })
        #expect(head.contains(0))
    }

    @Test func contentLengthLargerThanBody() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let result = try await fetchRaw(server, "/fault/content-length-larger")
        let parts = try #require(split(result.data))
        #expect(parts.head.contains("Content-Length: 101000"))
        #expect(parts.body.count == 100_000)
        #expect(result.end == .closed)
    }

    @Test func contentLengthSmallerThanBody() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let result = try await fetchRaw(server, "/fault/content-length-smaller")
        let parts = try #require(split(result.data))
        #expect(parts.head.contains("Content-Length: 50000"))
        #expect(parts.body.count == 100_000)
    }

    @Test func hugeHeadersStillAValidResponse() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let response = try await connection.request("GET", "/fault/huge-headers?size=300000")
        #expect(response.status == 200)
        let headerBytes = response.headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
        #expect(headerBytes >= 300_000)
        #expect(response.json["hugeHeaders"] as? Int == 300_000)
        #expect(try await connection.request("GET", "/echo").status == 200)
    }

    @Test func endlessBodyStopsWhenTheClientLeaves() async throws {
        let server = try TestServer()
        defer { server.stop() }
        do {
            let connection = try RawHTTPConnection(port: server.port)
            try await connection.send("GET /fault/endless HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = try await connection.readHead()
            #expect(try await connection.read(count: 4 * 1024 * 1024).count == 4 * 1024 * 1024)
        }
        // The connection's thread notices the close and ends.
        #expect(await server.waitForOpenConnections(atMost: 0, timeout: .seconds(10)))
        #expect(server.openConnections == 0)
    }

    @Test func noResponseClosesSilently() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let result = try await fetchRaw(server, "/fault/no-response")
        #expect(result.data.isEmpty)
        #expect(result.end == .closed)
    }

    @Test func scriptedResponseCanCarryAFault() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(ScriptedResponse(body: Data(repeating: 7, count: 1000), fault: .closeDuringBody))
        let result = try await fetchRaw(server, "/anything")
        let parts = try #require(split(result.data))
        #expect(parts.head.contains("Content-Length: 1000"))
        #expect(parts.body == Data(repeating: 7, count: 500))
    }

    /// A delay of `.seconds(Int64.max)` (a server that never answers, the usual way to test a
    /// timeout) holds the response until the server stops, and a wait of any length works. On
    /// the old code the server's thread computed the milliseconds left as `seconds * 1000`,
    /// which overflowed and trapped the test process, and a wait past `Int64.max` seconds
    /// trapped in `Duration.components`.
    @Test func aDelayOfInt64MaxSecondsNeverAnswersAndTrapsNothing() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/never") { _ in ScriptedResponse(body: Data("late".utf8), delay: .seconds(Int64.max)) }
        let connection = try RawHTTPConnection(port: server.port, timeout: .milliseconds(300))
        try await connection.send("GET /never HTTP/1.1\r\nHost: x\r\n\r\n")
        let result = await connection.readUntilEnd()
        #expect(result.end == .timedOut)
        #expect(result.data.isEmpty)
        #expect(await server.waitForRequests(atLeast: 1, timeout: .seconds(Int64.max) * 4))
        #expect(try await RawHTTPConnection(port: server.port).request("GET", "/echo").status == 200)
    }
}

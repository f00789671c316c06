import Dispatch
import Foundation
import Testing

@testable import CourierTesting

@Suite struct TestServerTests {
    @Test func echoRoundTripsMethodPathQueryHeadersAndBody() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let body = Data("héllo wörld".utf8)
        let response = try await connection.request(
            "PUT", "/echo?a=1&b=two%20words", headers: [("X-Trace", "one"), ("x-trace", "two")], body: body)

        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        let json = response.json
        #expect(json["method"] as? String == "PUT")
        #expect(json["path"] as? String == "/echo")
        #expect(json["query"] as? String == "a=1&b=two%20words")
        #expect((json["args"] as? [String: String])?["b"] == "two words")
        #expect((json["headers"] as? [String: String])?["x-trace"] == "one, two")
        #expect(json["body"] as? String == "héllo wörld")
        #expect(json["bodyBase64"] as? String == body.base64EncodedString())

        let recorded = try #require(server.recordedRequests.first)
        #expect(recorded.method == "PUT")
        #expect(recorded.body == body)
        #expect(recorded.header("X-TRACE") == "one, two")
        #expect(recorded.queryValue("b") == "two words")
        #expect(recorded.headers.contains { $0.name.rawName == "X-Trace" && $0.value == "one" })
    }

    /// A stopped server keeps its port: connecting is refused, and no other server (another
    /// test's, in the parallel run) can be given the port while this one lives.
    @Test func aStoppedServerRefusesAndKeepsItsPort() throws {
        let server = try TestServer()
        let port = server.port
        server.stop()
        #expect(throws: RawHTTPError.connectFailed(ECONNREFUSED)) { _ = try RawHTTPConnection(port: port) }
        #expect(throws: SocketError.self) { _ = try Socket.listen(host: "127.0.0.1", port: port, backlog: 4) }
    }

    @Test func keepAliveServesSeveralRequestsOnOneConnection() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        for index in 1...3 {
            let response = try await connection.request("GET", "/echo?n=\(index)")
            #expect(response.status == 200)
            #expect(response.header("Connection") == nil)
        }
        #expect(server.acceptedConnections == 1)
        #expect(server.requestCount == 3)
        #expect(server.recordedRequests.map(\.indexOnConnection) == [1, 2, 3])
        #expect(Set(server.recordedRequests.map(\.connectionID)).count == 1)
    }

    @Test func connectionCloseIsHonoured() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let response = try await connection.request("GET", "/echo", headers: [("Connection", "close")])
        #expect(response.header("Connection") == "close")
        let rest = await connection.readUntilEnd()
        #expect(rest.data.isEmpty)
        #expect(rest.end == .closed)
    }

    @Test func chunkedRequestBodyIsReassembled() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try await connection.send(
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n")
        let response = try await connection.readResponse()
        #expect(response.json["body"] as? String == "hello world")
        // The connection is still usable after a chunked body.
        #expect(try await connection.request("GET", "/status/201").status == 201)
        #expect(server.acceptedConnections == 1)
    }

    @Test func expectContinueIsAnsweredBeforeTheBody() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try await connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        let interim = try await connection.readHead()
        #expect(interim.status == 100)
        try await connection.send("ping")
        let response = try await connection.readResponse()
        #expect(response.json["body"] as? String == "ping")
    }

    @Test func scriptedResponsesAreServedInOrderBeforeRoutes() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.json(["first": true], status: 201))
        server.enqueue(.text("second", status: 202).with("X-Scripted", "yes"))
        #expect(server.pendingScriptedResponses == 2)
        let connection = try RawHTTPConnection(port: server.port)

        let first = try await connection.request("GET", "/anything/at/all")
        #expect(first.status == 201)
        #expect(first.json["first"] as? Bool == true)
        let second = try await connection.request("POST", "/echo", body: Data("x".utf8))
        #expect(second.status == 202)
        #expect(second.header("X-Scripted") == "yes")
        #expect(String(decoding: second.body, as: UTF8.self) == "second")
        let third = try await connection.request("GET", "/status/418")
        #expect(third.status == 418)
        #expect(server.recordedRequests.map(\.path) == ["/anything/at/all", "/echo", "/status/418"])
    }

    @Test func customRoutesMatchMethodAndPathAndOverrideBuiltIns() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("POST", "/users") { request in
            .json(["created": request.bodyText], status: 201)
        }
        server.route("/echo") { _ in .text("overridden") }
        let connection = try RawHTTPConnection(port: server.port)

        let created = try await connection.request("POST", "/users", body: Data("ann".utf8))
        #expect(created.status == 201)
        #expect(created.json["created"] as? String == "ann")
        #expect(try await connection.request("GET", "/users").status == 404)
        #expect(String(decoding: try await connection.request("GET", "/echo").body, as: UTF8.self) == "overridden")
    }

    @Test func waitForRequestsWakesWhenASlowRequestArrives() async throws {
        let server = try TestServer()
        defer { server.stop() }
        #expect(await !server.waitForRequests(atLeast: 1, timeout: .milliseconds(50)))
        let connection = try RawHTTPConnection(port: server.port)
        try await connection.send("GET /delay/300 HTTP/1.1\r\nHost: x\r\n\r\n")
        // Recorded on arrival, before the delayed answer.
        #expect(await server.waitForRequests(atLeast: 1, timeout: .seconds(10)))
        // The blocking form, for code on threads of its own.
        #expect(try await offPool { server.waitForRequests(atLeast: 1, timeout: .seconds(1)) })
        #expect(server.recordedRequests.first?.path == "/delay/300")
        #expect(try await connection.readResponse().status == 200)
    }

    @Test func anotherLoopbackAddressIsAnotherOrigin() async throws {
        let server = try TestServer(host: "127.0.0.2")
        defer { server.stop() }
        #expect(server.baseURL.absoluteString == "http://127.0.0.2:\(server.port)")
        #expect(server.url("status/201").path == "/status/201")
        let response = try await RawHTTPConnection(host: "127.0.0.2", port: server.port).request("GET", "/status/201")
        #expect(response.status == 201)
    }

    @Test func resetRecordsClearsCounters() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        _ = try await connection.request("GET", "/echo")
        server.resetRecords()
        #expect(server.requestCount == 0)
        #expect(server.recordedRequests.isEmpty)
        #expect(server.acceptedConnections == 0)
        _ = try await connection.request("GET", "/echo")
        #expect(server.requestCount == 1)
    }

    @Test func malformedRequestLineGets400AndClose() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try await connection.send("NONSENSE\r\n\r\n")
        let response = try await connection.readResponse()
        #expect(response.status == 400)
        #expect(response.header("Connection") == "close")
    }

    @Test func manyConcurrentConnectionsAndRequests() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connections = 64
        let requestsEach = 10
        let failures = Locked(0)
        let group = DispatchGroup()
        for worker in 0..<connections {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    let connection = try RawHTTPConnection(port: server.port)
                    for index in 0..<requestsEach {
                        let response = try connection.request("GET", "/echo?w=\(worker)&i=\(index)")
                        if (response.json["query"] as? String) != "w=\(worker)&i=\(index)" {
                            failures.withLock { $0 += 1 }
                        }
                    }
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }.start()
        }
        let finished = try await offPool { group.wait(timeout: TestTimeBound.deadline(seconds: 60)) == .success }
        #expect(finished)
        #expect(failures.withLock { $0 } == 0)
        #expect(server.requestCount == connections * requestsEach)
        #expect(server.acceptedConnections == connections)
    }

    @Test func stopWithOpenConnectionsReturnsPromptly() async throws {
        let server = try TestServer()
        let idle = try RawHTTPConnection(port: server.port)
        _ = try await idle.request("GET", "/echo")
        let delayed = try RawHTTPConnection(port: server.port)
        try await delayed.send("GET /delay/60000 HTTP/1.1\r\nHost: x\r\n\r\n")
        let stalled = try RawHTTPConnection(port: server.port)
        try await stalled.send("GET /fault/stall-after-headers HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try await stalled.readHead()
        let endless = try RawHTTPConnection(port: server.port)
        try await endless.send("GET /fault/endless HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try await endless.readHead()
        let halfSent = try RawHTTPConnection(port: server.port)
        try await halfSent.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
        #expect(server.openConnections >= 4)

        let started = ContinuousClock.now
        server.stop()
        server.stop()  // idempotent
        #expect(ContinuousClock.now - started < TestTimeBound.scaled(.seconds(3)))
        #expect(server.openConnections == 0)
        #expect(await idle.readUntilEnd().end != .timedOut)
        #expect(throws: RawHTTPError.self) { try RawHTTPConnection(port: server.port) }
    }

    @Test func releasingTheServerStopsIt() async throws {
        var server: TestServer? = try TestServer()
        let idle = try RawHTTPConnection(port: server!.port)
        _ = try await idle.request("GET", "/echo")
        server = nil
        // The released server closed its connection. (Its port is free again, and may already
        // belong to another test's server, so a new connection proves nothing.)
        let end = await idle.readUntilEnd()
        #expect(end.data.isEmpty)
        #expect(end.end != .timedOut)
    }
}

@Suite struct TestServerBodyTests {
    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try await connection.send(
            "GET /echo?n=1 HTTP/1.1\r\nHost: x\r\n\r\nPOST /echo?n=2 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"
                + "GET /status/202 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await connection.readResponse().json["query"] as? String == "n=1")
        #expect(try await connection.readResponse().json["body"] as? String == "hi")
        #expect(try await connection.readResponse().status == 202)
        #expect(server.acceptedConnections == 1)
    }

    @Test func uploadStreamsABodyLargerThan64MiB() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port, timeout: .seconds(60))
        let blockCount = 70
        let block = TestServer.bytePattern(count: 1024 * 1024)
        try await connection.send(
            "PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: \(blockCount * block.count)\r\n"
                + "Expect: 100-continue\r\n\r\n")
        #expect(try await connection.readHead().status == 100)
        // Sent block by block so the test never holds the whole body; the CRC runs along.
        var crc: UInt32 = 0
        for _ in 0..<blockCount {
            try await connection.send(block)
            crc = Compression.crc32(block, seed: crc)
        }
        let response = try await connection.readResponse()
        #expect(response.json["bytes"] as? Int == blockCount * block.count)
        #expect(response.json["crc32"] as? String == String(format: "%08x", crc))
        #expect(server.recordedRequests.last?.body.isEmpty == true)
    }

    @Test func chunkedUploadIsCountedToo() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try await connection.send("POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in 0..<10 {
            try await connection.send(Data("2710\r\n".utf8) + Data(repeating: 65, count: 10_000) + Data("\r\n".utf8))
        }
        try await connection.send("0\r\n\r\n")
        let response = try await connection.readResponse()
        #expect(response.json["bytes"] as? Int == 100_000)
        #expect(
            response.json["crc32"] as? String
                == String(format: "%08x", Compression.crc32(Data(repeating: 65, count: 100_000))))
    }

    @Test func oversizedHeadGets431() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let big = String(repeating: "a", count: RequestReader.maximumHeadSize + 10)
        try? await connection.send("GET /echo HTTP/1.1\r\nX-Big: \(big)\r\n\r\n")
        let response = try await connection.readResponse()
        #expect(response.status == 431)
        #expect(response.header("Connection") == "close")
    }
}

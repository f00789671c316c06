import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct CurlTransportTests {
    @Test func twoThousandRequestsSixtyFourInFlightReuseConnections() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient { $0.maxConnectionsPerHost = 16 }
        let total = 2_000
        let inFlight = 64
        let failures = try await withThrowingTaskGroup(of: Bool.self) { group in
            var issued = 0
            var failures = 0
            func add() {
                let index = issued
                issued += 1
                group.addTask {
                    let response = try await client.send(HTTPRequest(.get, server.url("/echo?n=\(index)")))
                    let echo = try Echo(response.body)
                    return response.status == .ok && echo.args["n"] == "\(index)"
                }
            }
            while issued < inFlight { add() }
            while let ok = try await group.next() {
                if !ok { failures += 1 }
                if issued < total { add() }
            }
            return failures
        }
        #expect(failures == 0)
        #expect(server.requestCount == total)
        // HTTP/1.1 cannot multiplex, so at most one connection per concurrent request, and
        // curl caps them at 16 per host; without reuse this would be 2,000.
        let perConnection = Dictionary(grouping: server.recordedRequests, by: \.connectionID).mapValues(\.count)
        #expect(
            server.acceptedConnections <= 16, "requests per connection: \(perConnection.sorted { $0.key < $1.key })")
    }

    @Test func metricsTellReuse() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let first = try await client.send(HTTPRequest(.get, server.url("/echo")))
        let second = try await client.send(HTTPRequest(.get, server.url("/echo")))
        #expect(!first.metrics.reusedConnection)
        #expect(second.metrics.reusedConnection)
        #expect(first.metrics.total >= first.metrics.timeToFirstByte)
        #expect(first.metrics.timeToFirstByte >= first.metrics.connect)
        #expect(first.metrics.connect > .zero)
        #expect(second.metrics.bytesSent > 0)
        #expect(server.acceptedConnections == 1)
    }

    @Test func streamingDeliversChunksAsTheyCome() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        let request = TransportRequest(head: HTTPRequest(.get, server.url("/stream/20")))
        let response = try await transport.stream(request)
        #expect(response.head.status == .ok)
        let body = try await response.body.collect()
        let lines = String(decoding: body, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 20)
        #expect(lines.last?.contains("\"id\":19") == true)
    }

    @Test func streamingPausesASlowConsumerWithoutLosingBytes() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        let size = 3 << 20
        let response = try await transport.stream(
            TransportRequest(head: HTTPRequest(.get, server.url("/bytes/\(size)"))))
        var received = 0
        var matches = true
        for try await chunk in response.body {
            // Spot checks keep the debug build fast; a lost or repeated chunk shifts them all.
            if chunk.first != UInt8(received % 251) || chunk.last != UInt8((received + chunk.count - 1) % 251) {
                matches = false
            }
            received += chunk.count
            await Task.yield()
        }
        #expect(received == size)
        #expect(matches)
    }

    @Test func cancellationAbortsTheTransferAndClosesTheConnection() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let arrived = Signal()
        server.route("/hang") { _ in
            arrived.fire()
            return ScriptedResponse(body: Data(count: 1000), fault: .stallAfterHeaders)
        }
        let client = try makeClient()
        let task = Task { try await client.send(HTTPRequest(.get, server.url("/hang"))) }
        await arrived.wait()
        // The server counts a connection as open before its handler runs.
        #expect(server.openConnections == 1)
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(await server.waitForOpenConnections(atMost: 0))
        // The transport keeps working after a cancellation.
        #expect(try await client.send(HTTPRequest(.get, server.url("/echo"))).status == .ok)
    }

    @Test func cancellingAStreamAbortsTheTransfer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        // A five-minute stream: a loaded parallel run has held this task for 20 s, and a stream
        // that ends in that time would end the loop without the cancellation under test.
        let response = try await transport.stream(
            TransportRequest(head: HTTPRequest(.get, server.url("/stream/6000?intervalMs=50"))))
        var iterator = response.body.makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first != nil)
        let task = Task { [iterator] in
            var iterator = iterator
            while try await iterator.next() != nil {}
        }
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(await server.waitForOpenConnections(atMost: 0))
    }

    @Test func alreadyCancelledTaskSendsNothing() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await client.send(HTTPRequest(.get, server.url("/echo")))
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(server.requestCount == 0)
    }

    @Test func responseSizeCapFailsCleanly() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient { $0.maxResponseSize = 100_000 }
        let fits = try await client.send(HTTPRequest(.get, server.url("/bytes/100000")))
        #expect(fits.body.count == 100_000)
        let tooLarge = await courierError { _ = try await client.send(HTTPRequest(.get, server.url("/bytes/100001"))) }
        #expect(tooLarge?.code == .responseTooLarge)
        // Chunked: no Content-Length to refuse up front; counted as it arrives.
        let chunked = await courierError {
            _ = try await client.send(
                HTTPRequest(.get, server.url("/stream/10000")), options: CallOptions(maxResponseSize: 10_000))
        }
        #expect(chunked?.code == .responseTooLarge)
        #expect(try await client.send(HTTPRequest(.get, server.url("/echo"))).status == .ok)
    }

    @Test func gzipBodyInflatingPastTheCapFails() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient { $0.maxResponseSize = 1 << 20 }
        let error = await courierError {
            _ = try await client.send(HTTPRequest(.get, server.url("/gzip-bomb?size=\(8 << 20)")))
        }
        #expect(error?.code == .responseTooLarge)
        let small = try await client.send(HTTPRequest(.get, server.url("/gzip-bomb?size=1000")))
        #expect(small.body == Data(count: 1000))
    }

    @Test func brokenResponsesMapToCourierErrors() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let cases: [(Fault, Set<CourierError.Code>)] = [
            (.closeDuringBody, [.invalidResponse, .transport]),
            (.closeWithoutResponse, [.invalidResponse, .transport]),
            (.badStatusLine, [.invalidResponse]),
            (.contentLengthLarger(extra: 10), [.invalidResponse, .transport]),
        ]
        for (fault, codes) in cases {
            server.enqueue(ScriptedResponse(body: Data(count: 1000), fault: fault))
            let error = await courierError { _ = try await client.send(HTTPRequest(.get, server.url("/x"))) }
            #expect(error.map { codes.contains($0.code) } == true, "\(fault) gave \(String(describing: error))")
        }
        let refused = try TestServer.refusingPort()
        defer { refused.stop() }
        let port = refused.port
        let connect = await courierError {
            _ = try await client.send(HTTPRequest(.get, URL(string: "http://127.0.0.1:\(port)/")!))
        }
        #expect(connect?.code == .cannotConnect)
    }
}

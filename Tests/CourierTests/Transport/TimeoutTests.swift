import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

@Suite struct TimeoutTests {
    /// Far above the timeouts under test, far below the 30 s fallbacks (stall, total) that would
    /// end the request if the timeout under test did not work. Loose because a parallel test run
    /// on a loaded two-core machine can delay a resumed task by seconds.
    static let bound: Duration = .seconds(15)

    @Test func totalTimeoutAgainstASilentServer() async throws {
        let server = try TestServer.blackHole()
        defer { server.stop() }
        let client = try makeClient { $0.timeout = .milliseconds(400) }
        let start = ContinuousClock.now
        let error = await courierError { _ = try await client.send(HTTPRequest(.get, server.baseURL)) }
        #expect(error?.code == .timedOut)
        #expect(ContinuousClock.now - start < Self.bound)
        #expect(server.acceptedConnections == 1)
    }

    @Test func perRequestTimeoutOverridesTheClients() async throws {
        let server = try TestServer.blackHole()
        defer { server.stop() }
        let client = try makeClient { $0.timeout = .seconds(60) }
        let error = await courierError {
            _ = try await client.send(
                HTTPRequest(.get, server.baseURL), options: RequestOptions(timeout: .milliseconds(300)))
        }
        #expect(error?.code == .timedOut)
    }

    @Test func stallTimeoutFiresWhenBytesStopFlowing() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(ScriptedResponse(body: Data(count: 10_000), fault: .stallAfterHeaders))
        let client = try makeClient {
            $0.timeout = .seconds(30)
            $0.stallTimeout = .seconds(1)
        }
        let start = ContinuousClock.now
        let error = await courierError { _ = try await client.send(HTTPRequest(.get, server.url("/x"))) }
        #expect(error?.code == .timedOut)
        #expect(error?.message.contains("slow") == true)
        #expect(ContinuousClock.now - start < Self.bound)
    }

    @Test func slowButSteadyTransferIsNotAStall() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(
            ScriptedResponse(body: Data(count: 30), fault: .trickle(bytes: 10, interval: .milliseconds(300))))
        let client = try makeClient { $0.stallTimeout = .seconds(1) }
        let response = try await client.send(HTTPRequest(.get, server.url("/x")))
        #expect(response.body.count == 30)
    }

    @Test func connectTimeoutAgainstAFullBacklog() async throws {
        let server = try TestServer.fullBacklog()
        defer { server.stop() }
        let client = try makeClient {
            $0.connectTimeout = .milliseconds(300)
            $0.timeout = .seconds(30)
        }
        let start = ContinuousClock.now
        let error = await courierError { _ = try await client.send(HTTPRequest(.get, server.baseURL)) }
        #expect(error?.code == .timedOut)
        #expect(ContinuousClock.now - start < Self.bound)
    }
}

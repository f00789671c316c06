import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct TimeoutTests {
    /// What ends a request if the timeout under test is not enforced: each test sets the
    /// client's other timeouts (stall, total) to this.
    static let fallback: Duration = .seconds(120)

    /// Far above the timeouts under test (≤ 1 s), far below ``fallback``. Loose because a full
    /// parallel run on a loaded two-core machine has delayed a resumed task by up to ~20 s.
    static let bound: Duration = fallback / 2

    @Test func totalTimeoutAgainstASilentServer() async throws {
        let server = try TestServer.blackHole()
        defer { server.stop() }
        let client = try makeClient {
            $0.timeout = .milliseconds(400)
            $0.stallTimeout = Self.fallback
        }
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
                HTTPRequest(.get, server.baseURL), options: CallOptions(timeout: .milliseconds(300)))
        }
        #expect(error?.code == .timedOut)
    }

    @Test func stallTimeoutFiresWhenBytesStopFlowing() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(ScriptedResponse(body: Data(count: 10_000), fault: .stallAfterHeaders))
        let client = try makeClient {
            $0.timeout = Self.fallback
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
        let server = try await offPool { try TestServer.fullBacklog() }  // filling the backlog blocks
        defer { server.stop() }
        let client = try makeClient {
            $0.connectTimeout = .milliseconds(300)
            $0.timeout = Self.fallback
            $0.stallTimeout = Self.fallback
        }
        let start = ContinuousClock.now
        let error = await courierError { _ = try await client.send(HTTPRequest(.get, server.baseURL)) }
        #expect(error?.code == .timedOut)
        #expect(ContinuousClock.now - start < Self.bound)
    }
}

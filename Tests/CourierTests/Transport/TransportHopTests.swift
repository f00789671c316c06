import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// `Transport.makeHop` / `send`: the entry point `HTTPClient` uses for a buffered hop.
@Suite struct TransportHopTests {
    /// A transport that only implements `execute` and `stream`: it gets the default hop.
    final class ExecuteOnly: Transport {
        let base: CurlTransport
        let executed = LockedValue(0)
        init() throws { base = try CurlTransport() }
        func execute(_ request: TransportRequest) async throws -> TransportResponse {
            executed.withLock { $0 += 1 }
            return try await base.execute(request)
        }
        func stream(_ request: TransportRequest) async throws -> TransportStreamResponse {
            try await base.stream(request)
        }
    }

    @Test func courierTransportSendsItsOwnHop() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let transport = try CurlTransport()
        let hop = try transport.makeHop(TransportRequest(head: HTTPRequest(.get, server.url("/get"))))
        try await transport.send(hop)
        #expect(try hop.takeResponse().head.status == .ok)
        #expect(server.count("/get") == 1)
    }

    @Test func theDefaultHopGoesThroughExecute() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let transport = try ExecuteOnly()
        let hop = try transport.makeHop(TransportRequest(head: HTTPRequest(.get, server.url("/get"))))
        try await transport.send(hop)
        #expect(try hop.takeResponse().head.status == .ok)
        #expect(transport.executed.withLock { $0 } == 1)
    }

    @Test func aHopFromAnotherTransportIsRefusedWithoutSending() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let curl = try CurlTransport()
        let other = try ExecuteOnly()
        let request = TransportRequest(head: HTTPRequest(.get, server.url("/get")))
        let curlHop = try curl.makeHop(request)
        let otherHop = try other.makeHop(request)
        await #expect(throws: CourierError.self) { try await other.send(curlHop) }
        await #expect(throws: CourierError.self) { try await curl.send(otherHop) }
        #expect(other.executed.withLock { $0 } == 0)
        #expect(server.requestCount == 0)
    }

    @Test func anUnsentDefaultHopHasNoResponse() throws {
        let transport = try ExecuteOnly()
        let hop = try transport.makeHop(TransportRequest(head: HTTPRequest(.get, URL(string: "http://127.0.0.1:1/")!)))
        let error = #expect(throws: CourierError.self) { try hop.takeResponse() }
        #expect(error?.code == .invalidResponse)
    }

    @Test func courierTransportRefusesABadRequestWhenMakingTheHop() throws {
        let transport = try CurlTransport()
        var head = HTTPRequest(method: .get, scheme: "ftp", authority: "127.0.0.1", path: "/")
        head.headerFields = [:]
        let error = #expect(throws: CourierError.self) { _ = try transport.makeHop(TransportRequest(head: head)) }
        #expect(error?.code == .invalidRequest)
    }
}

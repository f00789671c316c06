import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct HTTPClientStreamTests {
    @Test func streamFollowsRedirectsAndYieldsTheFinalBody() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let response = try await client.stream(HTTPRequest(.get, server.url("/redirect-to?url=/stream/5")))
        #expect(response.redirectCount == 1)
        #expect(response.head.status == .ok)
        var lines = 0
        for try await chunk in response.body { lines += chunk.filter { $0 == UInt8(ascii: "\n") }.count }
        #expect(lines == 5)
        #expect(server.acceptedConnections == 1)
    }

    @Test func droppingAnUnreadStreamAbortsTheTransfer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        // A five-minute stream: a loaded parallel run has held this task for 20 s, and a stream
        // that ends in that time leaves its connection open in curl's pool, as if never aborted.
        do {
            let response = try await client.stream(HTTPRequest(.get, server.url("/stream/6000?intervalMs=50")))
            #expect(response.head.status == .ok)
        }
        #expect(await server.waitForOpenConnections(atMost: 0))
    }
}

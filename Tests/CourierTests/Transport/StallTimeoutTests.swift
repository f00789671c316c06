import CourierTesting
import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// The stall timeout fails a transfer when no byte moved for that long, not one that is slow.
@Suite struct StallTimeoutTests {
    /// A body of one byte every 1.5 s (an event stream's keep-alives, a slow export): never
    /// 3 s without a byte, but under 1 byte/s on average.
    @Test func aSlowButSteadyBodyIsNotAStall() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/steady") { _ in
            ScriptedResponse(body: Data("abcde".utf8), fault: .trickle(bytes: 1, interval: .milliseconds(1500)))
        }
        let client = try makeClient {
            $0.stallTimeout = .seconds(3)
            $0.timeout = .seconds(60)
        }
        let response = try await client.send(HTTPRequest(.get, server.url("/steady")))
        #expect(response.body == Data("abcde".utf8))
    }
}

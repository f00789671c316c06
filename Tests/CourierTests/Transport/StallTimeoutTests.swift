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
            $0.timeout = TestTimeBound.scaled(.seconds(60))  // a safety net, not what is tested
        }
        let response = try await client.send(HTTPRequest(.get, server.url("/steady")))
        #expect(response.body == Data("abcde".utf8))
    }
}

extension StallTimeoutTests {
    /// A stream whose reader falls behind pauses its transfer: no byte moves, but the server is
    /// not stalled. The reader waits for another server's answer, 2.5 s late, past the 1 s stall
    /// timeout, then reads the rest.
    @Test func aStreamPausedForASlowReaderIsNotAStall() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: 4 << 20)
        server.route("/big") { _ in ScriptedResponse(body: content) }
        server.route("/late") { _ in
            var late = ScriptedResponse.text("late")
            late.delay = .milliseconds(2500)
            return late
        }
        let client = try makeClient {
            $0.stallTimeout = .seconds(1)
            $0.timeout = TestTimeBound.scaled(.seconds(60))  // a safety net, not what is tested
        }
        let streamed = try await client.stream(HTTPRequest(.get, server.url("/big")))
        var iterator = streamed.body.makeAsyncIterator()
        var received = try await iterator.next() ?? Data()
        // Another client, without a stall timeout: the late answer is not the stream's.
        _ = try await makeClient { $0.stallTimeout = nil }.send(HTTPRequest(.get, server.url("/late")))
        while let chunk = try await iterator.next() { received.append(chunk) }
        #expect(received == content)
    }
}

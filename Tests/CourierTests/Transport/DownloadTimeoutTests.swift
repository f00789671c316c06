import CourierTesting
import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// A download's timeout is the whole download's, resumptions included.
@Suite struct DownloadTimeoutTests {
    /// A server that drips the file (fast enough for the stall timeout) and answers every
    /// resumption the same way. The old code resumed after the total timeout like after a
    /// broken connection, each resumption with the whole timeout again: four requests, the
    /// download four times as long as its timeout.
    @Test func aDownloadIsNotResumedPastItsTimeout() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let destination = LargeBodyTests.Destination()
        let content = TestServer.bytePattern(count: 100_000)
        let drip = Fault.trickle(bytes: 100, interval: .milliseconds(100))
        LargeBodyTests.serve(server, "/slow", content, first: drip) { start, content in
            var response = LargeBodyTests.partial(content, from: start)
            response.fault = drip
            return response
        }
        let client = try makeClient()
        var options = CallOptions(maxResponseSize: 8 << 20)
        options.timeout = .seconds(2)
        let error = await courierError {
            _ = try await client.download(HTTPRequest(.get, server.url("/slow")), to: destination.url, options: options)
                .response
        }
        #expect(error?.code == .timedOut, "got \(String(describing: error))")
        #expect(server.recordedRequests(path: "/slow").count == 1, "the download resumed past its timeout")
        #expect(!destination.exists)
    }
}

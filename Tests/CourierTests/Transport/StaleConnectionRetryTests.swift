import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// A pooled connection left unusable by its last response (bytes past the announced
/// `Content-Length`) fails the next request on it before any response arrives: an idempotent
/// request is sent once more on a new connection, anything else gets the error.
@Suite struct StaleConnectionRetryTests {
    func poisonOneConnection(_ client: HTTPClient, _ server: TestServer) async throws {
        let first = try await client.send(HTTPRequest(.get, server.url("/fault/content-length-smaller")))
        #expect(first.status == .ok)
        #expect(server.acceptedConnections == 1)
    }

    @Test(arguments: [HTTPRequest.Method.get, .put, .delete, .head])
    func anIdempotentRequestIsSentAgainOnANewConnection(_ method: HTTPRequest.Method) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient { $0.maxConnectionsPerHost = 1 }
        try await poisonOneConnection(client, server)
        let response = try await client.send(HTTPRequest(method, server.url("/echo?after=poison")))
        #expect(response.status == .ok)
        #expect(!response.metrics.reusedConnection)
        #expect(server.acceptedConnections == 2)
        #expect(server.recordedRequests(path: "/echo").count == 1, "the server saw the request once")
    }

    @Test func aPostIsNotSentAgain() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient { $0.maxConnectionsPerHost = 1 }
        try await poisonOneConnection(client, server)
        var post = HTTPRequest(.post, server.url("/echo?after=poison"))
        post.headerFields[.contentType] = "text/plain"
        let error = await #expect(throws: CourierError.self) {
            _ = try await client.send(post, body: .data(Data("once".utf8)))
        }
        #expect(error?.code == .invalidResponse || error?.code == .transport)
        #expect(server.recordedRequests(path: "/echo").count <= 1)
        // The broken connection is gone: the next request works.
        let next = try await client.send(HTTPRequest(.get, server.url("/echo?after=post")))
        #expect(next.status == .ok)
    }

    /// A POST (or PATCH) the server read on a pooled connection and then closed without an
    /// answer is the caller's error, sent once. Before, libcurl sent it again by itself on a
    /// new connection (its retry of a request that got nothing back on a reused connection,
    /// which Courier's own retry limits to idempotent methods): the server acted on it twice.
    @Test(arguments: [HTTPRequest.Method.post, .patch])
    func aRequestTheServerReadAndDroppedOnAPooledConnectionIsNotSentAgain(_ method: HTTPRequest.Method)
        async throws
    {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient { $0.maxConnectionsPerHost = 1 }
        #expect(try await client.send(HTTPRequest(.get, server.url("/echo?warm"))).status == .ok)
        var request = HTTPRequest(method: method, url: server.url("/fault/no-response"))
        request.headerFields[.contentType] = "text/plain"
        let error = await #expect(throws: CourierError.self) {
            _ = try await client.send(request, body: .data(Data("once".utf8)))
        }
        #expect(error?.code == .transport)
        #expect(server.recordedRequests(path: "/fault/no-response").count == 1, "the server got the request twice")
        // The connection is gone; the next request works on a new one.
        #expect(try await client.send(HTTPRequest(.get, server.url("/echo?after"))).status == .ok)
    }
}

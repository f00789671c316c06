import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct HTTPClientRedirectTests {
    @Test func followsUpToTheLimitAndReportsTheFinalURL() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let response = try await client.send(HTTPRequest(.get, server.url("/redirect/3")))
        #expect(response.status == .ok)
        #expect(response.redirectCount == 3)
        #expect(response.url == server.url("/get"))
        #expect(server.requestCount == 4)
        // Every hop has its own metrics: three redirects, then the final response.
        #expect(response.redirectMetrics.count == 3)
        for hop in response.redirectMetrics {
            #expect(hop.bytesReceived > 0 && hop.bytesSent > 0 && hop.total > .zero)
        }
        #expect(response.metrics.bytesReceived > 0)
    }

    /// Without a redirect the URL is made from the request when read (not parsed per
    /// response): it is the URL asked for, query included, for `send` and `stream`, and an
    /// assigned URL is kept.
    @Test func theURLOfAnAnswerWithoutRedirectIsTheOneAskedFor() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let asked = server.url("/get?name=a%20b&x=1")
        var response = try await client.send(HTTPRequest(.get, asked))
        #expect(response.redirectCount == 0)
        #expect(response.url == asked)
        #expect(response.url.query == "name=a%20b&x=1")
        let elsewhere = try #require(URL(string: "https://elsewhere.test/x"))
        response.url = elsewhere
        #expect(response.url == elsewhere)
        let streamed = try await client.stream(HTTPRequest(.get, asked))
        #expect(streamed.url == asked)
        _ = try await streamed.body.collect()
        let redirected = try await client.stream(HTTPRequest(.get, server.url("/redirect/1")))
        #expect(redirected.url == server.url("/get"))
        _ = try await redirected.body.collect()
    }

    /// A transport of the app's own gets every hop: the client talks to the `Transport` protocol only.
    @Test func aTransportOfYourOwnSeesEveryHop() async throws {
        final class Recording: Transport {
            let base: CurlTransport
            let paths = LockedValue<[String]>([])
            init() throws { base = try CurlTransport() }
            func execute(_ request: TransportRequest) async throws -> TransportResponse {
                paths.withLock { $0.append(request.head.path ?? "") }
                return try await base.execute(request)
            }
            func stream(_ request: TransportRequest) async throws -> TransportStreamResponse {
                paths.withLock { $0.append(request.head.path ?? "") }
                return try await base.stream(request)
            }
        }
        let server = try TestServer()
        defer { server.stop() }
        let transport = try Recording()
        let client = try HTTPClient(
            configuration: .init(notificationCenter: NotificationCenter()), transport: transport)
        let response = try await client.send(HTTPRequest(.get, server.url("/redirect/2")))
        #expect(response.status == .ok)
        #expect(response.redirectCount == 2)
        #expect(response.url == server.url("/get"))
        let streamed = try await client.stream(HTTPRequest(.get, server.url("/redirect/1")))
        #expect(streamed.redirectCount == 1)
        _ = try await streamed.body.collect()
        #expect(transport.paths.withLock { $0 }.count == 5)
        #expect(transport.paths.withLock { $0 }.last == "/get")
    }

    @Test func tooManyRedirectsFail() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient { $0.maxRedirects = 10 }
        let error = await courierError { _ = try await client.send(HTTPRequest(.get, server.url("/redirect-loop"))) }
        #expect(error?.code == .redirect)
        #expect(server.requestCount == 11)
        let limited = await courierError {
            _ = try await client.send(
                HTTPRequest(.get, server.url("/redirect/3")), options: CallOptions(maxRedirects: 2))
        }
        #expect(limited?.code == .redirect)
    }

    @Test func zeroMeansTheRedirectIsReturned() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient { $0.maxRedirects = 0 }
        let response = try await client.send(HTTPRequest(.get, server.url("/redirect/1")))
        #expect(response.status.code == 302)
        #expect(response.head.headerFields[.location] == "/get")
        #expect(response.redirectCount == 0)
        #expect(server.requestCount == 1)
    }

    @Test(arguments: [(301, "GET"), (302, "GET"), (303, "GET"), (307, "POST"), (308, "POST")])
    func postRedirectsChangeMethodByStatus(status: Int, expectedMethod: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        var request = HTTPRequest(.post, server.url("/redirect-to?url=/echo&status=\(status)"))
        request.headerFields[.contentType] = "text/plain"
        let response = try await client.send(request, body: .data(Data("the body".utf8)))
        let echo = try Echo(response.body)
        #expect(echo.method == expectedMethod)
        #expect(echo.body == (expectedMethod == "POST" ? "the body" : ""))
        #expect((echo.headers["content-type"] != nil) == (expectedMethod == "POST"))
        #expect(response.redirectCount == 1)
    }

    @Test func putKeepsItsMethodOn302ButNotOn303() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let kept = try await client.send(
            HTTPRequest(.put, server.url("/redirect-to?url=/echo&status=302")), body: .data(Data("x".utf8)))
        #expect(try Echo(kept.body).method == "PUT")
        let changed = try await client.send(
            HTTPRequest(.put, server.url("/redirect-to?url=/echo&status=303")), body: .data(Data("x".utf8)))
        #expect(try Echo(changed.body).method == "GET")
    }

    @Test func credentialsFollowSameOriginOnly() async throws {
        let first = try TestServer()
        let second = try TestServer()
        defer {
            first.stop()
            second.stop()
        }
        let apiKey = HTTPField.Name("X-Api-Key")!
        let client = try makeClient { $0.sensitiveHeaderNames = [apiKey, HTTPField.Name("X-Per-Request")!] }
        try client.logIn(credential: "token-1")
        var request = HTTPRequest(.get, first.url("/redirect-to?url=/echo"))
        request.headerFields[.cookie] = "session=1"
        request.headerFields[apiKey] = "k"
        request.headerFields[HTTPField.Name("X-Other")!] = "kept"
        let same = try Echo(try await client.send(request).body)
        #expect(same.headers["authorization"] == "Bearer token-1")
        #expect(same.headers["cookie"] == "session=1")
        #expect(same.headers["x-api-key"] == "k")

        let target = second.url("/echo").absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        request.path = "/redirect-to?url=\(target)&status=307"
        request.headerFields[HTTPField.Name("X-Per-Request")!] = "p"
        let response = try await client.send(request)
        #expect(response.url == second.url("/echo"))
        let cross = try Echo(response.body)
        #expect(cross.headers["authorization"] == nil)
        #expect(cross.headers["cookie"] == nil)
        #expect(cross.headers["x-api-key"] == nil)
        #expect(cross.headers["x-per-request"] == nil)
        #expect(cross.headers["x-other"] == "kept")
        // The first hop still carried them.
        let firstHop = try #require(first.recordedRequests.last)
        #expect(firstHop.header("Authorization") == "Bearer token-1")
    }

    @Test func badLocationsAreRefused() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        for location in ["ftp://127.0.0.1/x", "file:///etc/passwd", "http://user:pw@127.0.0.1/"] {
            server.enqueue(.redirect(to: location))
            let error = await courierError { _ = try await client.send(HTTPRequest(.get, server.url("/a"))) }
            #expect(error?.code == .redirect, "\(location)")
        }
        #expect(server.requestCount == 3)
    }
}

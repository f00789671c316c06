import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Interim (`1xx`) answers and protocol switches from a server that lies.
@Suite struct InterimResponseTests {
    /// Answers `path` on `server` with exactly `text` (heads and body), then closes.
    static func answer(_ path: String, on server: TestServer, with text: String) {
        server.route(path) { _ in ScriptedResponse(fault: .raw(Data(text.utf8))) }
    }

    /// Courier never asks for an upgrade, so a `101 Switching Protocols` is a server switching
    /// to a protocol nobody offered (RFC 9110 §15.2.2). libcurl 7.88 takes such a 101 as the
    /// final head and reads whatever follows as its body: the call answered "101" with the
    /// bytes after it (here a whole second response) as the body, or, when the server then
    /// said nothing, waited for its timeout and failed as a transient `.timedOut` that the
    /// retry policy sends again. It is a malformed answer, at once.
    @Test(arguments: ["/then-response", "/then-silence"])
    func anUnaskedSwitchingProtocolsIsAMalformedAnswer(_ path: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.answer(
            "/then-response", on: server,
            with: "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"
                + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        server.route("/then-silence") { _ in
            ScriptedResponse(
                status: 101, headers: [.upgrade: "h2c", .connection: "Upgrade"], fault: .stallAfterHeaders)
        }
        let client = try makeClient { $0.timeout = .seconds(30) }
        let error = await courierError { _ = try await client.send(HTTPRequest(.get, server.url(path))) }
        #expect(error?.code == .invalidResponse)
        #expect(error?.isTransient == false)
        // The client goes on: the next request is answered on a new connection.
        #expect(try await client.send(HTTPRequest(.get, server.url("/echo"))).status == .ok)
    }

    /// A `103 Early Hints` head is dropped whole: its `Set-Cookie` is not stored (only the
    /// final answer's fields count), and the final head is the answer.
    @Test func earlyHintsFieldsAreNotTheAnswers() async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.answer(
            "/hints", on: server,
            with: "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\nSet-Cookie: sid=early\r\n\r\n"
                + "HTTP/1.1 200 OK\r\nSet-Cookie: final=1\r\nContent-Length: 2\r\n\r\nok")
        let jar = CookieJar()
        let client = try makeClient { $0.cookieJar = jar }
        let response = try await client.send(HTTPRequest(.get, server.url("/hints")))
        #expect(response.status == .ok)
        #expect(response.head.headerFields[HTTPField.Name("Link")!] == nil)
        #expect(jar.all.map(\.name) == ["final"])
    }
}

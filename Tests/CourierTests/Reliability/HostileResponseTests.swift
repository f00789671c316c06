import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// What a hostile server's readable responses turn into (the failing ones are in
/// `FaultMatrixTests`): trailers stay out of the head, folds and control bytes are made safe.
@Suite struct HostileResponseTests {
    @Test func trailerFieldsNeverMergeIntoTheHead() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let response = try await client.send(HTTPRequest(.get, server.url("/fault/trailers")))
        #expect(response.status == .ok)
        #expect(String(decoding: response.body, as: UTF8.self) == "ok")
        let fields = response.head.headerFields
        #expect(fields[HTTPField.Name("X-Trailer")!] == nil)
        #expect(fields[values: .setCookie].isEmpty)
        #expect(fields[values: HTTPField.Name("X-Head")!] == ["head"])
        // The same client goes on working.
        #expect(try await client.send(HTTPRequest(.get, server.url("/echo"))).status == .ok)
    }

    @Test func trailersDoNotSetCookies() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let jar = CookieJar()
        let client = try makeClient { $0.cookieJar = jar }
        _ = try await client.send(HTTPRequest(.get, server.url("/fault/trailers")))
        #expect(jar.all.isEmpty)
    }

    @Test func foldedValuesAreJoinedAndControlBytesNeutralised() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let folded = try await client.send(HTTPRequest(.get, server.url("/fault/folded-header?lines=3")))
        #expect(folded.head.headerFields[HTTPField.Name("X-Folded")!] == "start more more more")
        #expect(folded.head.headerFields[HTTPField.Name("X-After")!] == "after")

        let control = try await client.send(HTTPRequest(.get, server.url("/fault/control-bytes")))
        #expect(control.head.headerFields[HTTPField.Name("X-Tab")!] == "a\tb")
        let value = try #require(control.head.headerFields[HTTPField.Name("X-Control")!])
        #expect(!value.unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" })
    }
}

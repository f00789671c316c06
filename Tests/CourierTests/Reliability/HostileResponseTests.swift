import CourierTesting
import Foundation
import HTTPTypes
import Logging
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

    /// A value the decoder quotes in its error (an enum's unknown raw value: "Cannot initialize
    /// Kind from invalid String value …") reached the error's message as the server sent it,
    /// and through it every log line of the failure: a line break in it forged a log line, and
    /// a megabyte flooded each of them. It is quoted as the envelope's server text is: control
    /// characters as spaces, cut at 256 characters (the underlying error in the description at
    /// 1,024).
    @Test func aValueQuotedInADecodingErrorCannotForgeOrFloodALogLine() async throws {
        struct Kinded: Decodable, Sendable {
            enum Kind: String, Decodable, Sendable { case plain }
            let kind: Kind
        }
        let server = try TestServer()
        defer { server.stop() }
        server.route("/forged") { _ in .json(["kind": "odd\nwarning ✗ FORGED\r\u{2028}"]) }
        server.route("/flood") { _ in .json(["kind": String(repeating: "x", count: 1_000_000)]) }
        let store = ServiceLogCapture.Store()
        var logger = Logger(label: "test") { _ in ServiceLogCapture(store: store) }
        logger.logLevel = .trace
        let service = try ServiceFixture.service(server) { configuration in
            configuration.monitors = [LoggingEventMonitor(logger: logger)]
        }
        for path in ["forged", "flood"] {
            let error = await #expect(throws: CourierError.self) {
                let _: Kinded = try await service.get(path, options: .default.with(\.logger, logger))
            }
            let failure = try #require(error)
            let message = failure.message
            #expect(failure.code == .decoding)
            #expect(message.contains("Cannot initialize"))
            #expect(!message.contains { $0.isNewline }, "\(message)")
            #expect(message.count < 1_000)
            // Its description too (apps print it; a tracer records it), though `underlying`
            // keeps the decoder's error as it was.
            #expect(!failure.description.contains { $0.isNewline })
            #expect(failure.description.count < 3_000)
            #expect("\(failure.underlying.map { "\($0)" } ?? "")".count > 100_000 || path == "forged")
        }
        let lines = store.lines.withLock { $0 }
        #expect(lines.contains { $0.contains("✗") && $0.contains("decoding") })
        for line in lines {
            #expect(!line.contains { $0.isNewline }, "\(line)")
            #expect(line.count < 2_000)
        }
    }

    /// A coding path names the keys of the answer, and the keys of a dictionary are the
    /// server's own text: a line break in one forged a line in the error's description (which
    /// apps print and tracers record), and a megabyte-long one flooded it. The description
    /// quotes it as server text; `codingPath` keeps it as it came.
    @Test func aServerKeyInTheCodingPathCannotForgeOrFloodTheDescription() async throws {
        struct Counted: Decodable, Sendable { let counts: [String: Int] }
        let server = try TestServer()
        defer { server.stop() }
        let forgedKey = "a\nwarning ✗ FORGED\r\u{2028}"
        let longKey = String(repeating: "k", count: 1_000_000)
        server.route("/forged") { _ in .json(["counts": [forgedKey: "not a number"]]) }
        server.route("/flood") { _ in .json(["counts": [longKey: "not a number"]]) }
        let service = try ServiceFixture.service(server)
        for (path, key) in [("forged", forgedKey), ("flood", longKey)] {
            let error = await #expect(throws: CourierError.self) {
                let _: Counted = try await service.get(path)
            }
            let failure = try #require(error)
            #expect(failure.code == .decoding)
            #expect(failure.codingPath == "counts." + key)
            #expect(failure.description.contains(" at counts."))
            #expect(!failure.description.contains { $0.isNewline }, "\(failure.description.prefix(300))")
            #expect(failure.description.count < 3_000)
        }
    }

    /// A status line's reason phrase and a `Content-Type` are server text the validator's
    /// errors quoted whole (and the logging monitor the reason phrase): curl takes header lines
    /// of up to 100 KiB, and each became a line of that size in every log of the failure. They
    /// are quoted as the envelope's text is.
    @Test func aLongReasonPhraseOrContentTypeCannotFloodALogLine() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let long = String(repeating: "y", count: 60_000)
        server.route("/reason") { _ in
            var answer = ScriptedResponse.json(["id": 1], status: 500)
            answer.reason = "Bad " + long
            return answer
        }
        server.route("/type") { _ in
            var answer = ScriptedResponse.json(["id": 1, "name": "x"])
            answer.headers[.contentType] = "text/" + long
            return answer
        }
        let store = ServiceLogCapture.Store()
        // Debug: trace logs every header field as it came (bounded by curl's 100 KiB).
        var logger = Logger(label: "test") { _ in ServiceLogCapture(store: store) }
        logger.logLevel = .debug
        let service = try ServiceFixture.service(server) { configuration in
            configuration.retryPolicy = .none
            configuration.monitors = [LoggingEventMonitor(logger: logger)]
        }
        for (path, code) in [("reason", CourierError.Code.httpStatus), ("type", .unacceptableContentType)] {
            let error = await #expect(throws: CourierError.self) { let _: ServiceUser = try await service.get(path) }
            let failure = try #require(error)
            #expect(failure.code == code)
            #expect(failure.message.count < 1_000, "\(failure.message.prefix(200))")
        }
        #expect(store.lines.withLock { $0 }.allSatisfy { $0.count < 2_000 })
    }
}

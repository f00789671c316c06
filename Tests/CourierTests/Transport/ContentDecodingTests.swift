import Foundation
import HTTPTypes
import Testing

@testable import Courier
@testable import CourierTesting

/// Content codings decoded by Courier (zlib), not by libcurl: libcurl 7.88 reports no error for
/// a compressed body that stops early inside a complete HTTP message, and Courier returned (and
/// cached) such a body as a whole 200. Every damaged body must now end in
/// `CourierError.invalidResponse`, buffered or streamed, and never reach the cache.
@Suite struct ContentDecodingTests {
    struct Damage: CustomTestStringConvertible, Sendable {
        var encoding: String
        var damage: String
        var framing: String

        var path: String { "/fault/bad-encoding?encoding=\(encoding)&damage=\(damage)&framing=\(framing)" }
        var testDescription: String { "\(encoding) \(damage) \(framing)" }
    }

    static let damages: [Damage] = ["length", "chunked"].flatMap { framing in
        ["gzip", "deflate"].flatMap { encoding in
            ["truncated", "no-trailer", "bad-check", "trailing-garbage"].map {
                Damage(encoding: encoding, damage: $0, framing: framing)
            } + (encoding == "gzip" ? [Damage(encoding: encoding, damage: "bad-size", framing: framing)] : [])
        }
    }

    @Test(arguments: damages) func aDamagedCompressedBodyIsAnError(_ damage: Damage) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let error = await courierError {
            let response = try await client.send(HTTPRequest(.get, server.url(damage.path)))
            Issue.record("\(damage.testDescription): a \(response.status.code) with \(response.body.count) bytes")
        }
        #expect(error?.code == .invalidResponse, "\(String(describing: error))")
        // The connection and the client are still good.
        let next = try await client.send(HTTPRequest(.get, server.url("/echo?after=1")))
        #expect(try Echo(next.body).args["after"] == "1")
    }

    /// A transfer coding other than `chunked` (`Transfer-Encoding: gzip, chunked`, or `chunked,
    /// gzip`, which RFC 9112 §6.3 frames by the connection's close) was never asked for (Courier
    /// sends no `TE`) and is decoded by neither libcurl nor Courier: the still-coded bytes were
    /// handed out, and cached, as a whole 200's content. It is a malformed answer.
    @Test(arguments: ["gzip, chunked", "chunked, gzip", "br, chunked", "x-custom"])
    func aTransferCodingNobodyAskedForIsAnError(_ codings: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let coded = Compression.gzip(Data("the content".utf8))
        let chunked = codings.contains("chunked")
        server.route("/coded") { _ in
            let body =
                chunked
                ? Data("\(String(coded.count, radix: 16))\r\n".utf8) + coded + Data("\r\n0\r\n\r\n".utf8) : coded
            return ScriptedResponse(
                fault: .raw(Data("HTTP/1.1 200 OK\r\nTransfer-Encoding: \(codings)\r\n\r\n".utf8) + body))
        }
        let client = try makeClient()
        let error = await courierError {
            let response = try await client.send(HTTPRequest(.get, server.url("/coded")))
            Issue.record("a \(response.status.code) with \(response.body.count) bytes")
        }
        #expect(error?.code == .invalidResponse, "\(String(describing: error))")
        // A caller that sent a `TE` of its own asked for the coding: it gets the bytes as sent.
        var own = HTTPRequest(.get, server.url("/coded"))
        own.headerFields[.te] = "gzip"
        #expect(try await client.send(own).body == coded)
        // A chunked answer stays what it was, and the client goes on.
        server.route("/chunked") { _ in .chunked([Data("a".utf8), Data("b".utf8)]) }
        #expect(try await client.send(HTTPRequest(.get, server.url("/chunked"))).body == Data("ab".utf8))
    }

    @Test(arguments: ["length", "chunked"], ["gzip", "deflate"])
    func anIntactCompressedBodyIsDecodedWhole(framing: String, encoding: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let path = "/fault/bad-encoding?encoding=\(encoding)&damage=none&framing=\(framing)&size=3000000"
        let response = try await client.send(HTTPRequest(.get, server.url(path)))
        #expect(response.body == TestServer.bytePattern(count: 3_000_000))
        // The head describes the body handed out: decoded, so neither the coding nor the
        // length of the bytes on the wire.
        #expect(response.head.headerFields[.contentEncoding] == nil)
        #expect(response.head.headerFields[.contentLength] == nil)
        #expect(response.metrics.bytesReceived < 3_000_000, "metrics count the bytes on the wire")
    }

    @Test(arguments: [("gzip", "members"), ("deflate", "raw")])
    func theOtherValidFormsAreDecodedWhole(encoding: String, form: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        for framing in ["length", "chunked"] {
            let path = "/fault/bad-encoding?encoding=\(encoding)&damage=\(form)&framing=\(framing)&size=300000"
            let response = try await client.send(HTTPRequest(.get, server.url(path)))
            #expect(response.body == TestServer.bytePattern(count: 300_000), "\(framing)")
            #expect(response.head.headerFields[.contentEncoding] == nil)
        }
    }

    /// Servers send `deflate` both ways, zlib-wrapped and raw; Courier tells them apart by the
    /// first two bytes (the zlib header). A raw stream whose first chunk held one byte was taken
    /// for zlib until the second byte arrived, then the header check failed where the raw
    /// fallback was no longer tried: `.invalidResponse` for a good body that Python's urllib3
    /// (and browsers) decode. Every split of the first bytes must decode, for every form.
    @Test(arguments: ["raw", "zlib", "gzip"], [1, 2, 3])
    func aCompressedBodyDecodesHoweverItsFirstBytesAreChunked(form: String, firstChunk: Int) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let content = TestServer.bytePattern(count: 50_000)
        let coded =
            switch form {
            case "raw": Compression.rawDeflate(content)
            case "zlib": Compression.zlib(content)
            default: Compression.gzip(content)
            }
        let chunks = [coded.prefix(firstChunk), coded.dropFirst(firstChunk).prefix(1), coded.dropFirst(firstChunk + 1)]
        server.enqueue(
            .chunked(chunks.map { Data($0) }, headers: [.contentEncoding: form == "gzip" ? "gzip" : "deflate"]))
        let response = try await client.send(HTTPRequest(.get, server.url("/coded")))
        #expect(response.body == content)
        // A body of one byte is a truncated stream, not a raw one waiting for more.
        server.enqueue(.chunked([Data(coded.prefix(1))], headers: [.contentEncoding: "deflate"]))
        let error = await courierError { _ = try await client.send(HTTPRequest(.get, server.url("/one"))) }
        #expect(error?.code == .invalidResponse, "\(String(describing: error))")
    }

    @Test func aTruncatedCompressedBodyIsNeverCached() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let client = try HTTPClient(configuration: .init(baseURL: server.baseURL, cache: cache))
        let path = "/fault/bad-encoding?damage=truncated"
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
        for _ in 0..<2 {
            let error = await courierError { _ = try await client.send(request) }
            #expect(error?.code == .invalidResponse)
        }
        #expect(server.requestCount == 2, "the second call went to the server, not to a cached half body")
        #expect(cache.statistics.stores == 0)
    }

    @Test(arguments: ["gzip", "deflate"]) func aStreamedTruncatedCompressedBodyEndsWithAnError(_ encoding: String)
        async throws
    {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let path = "/fault/bad-encoding?encoding=\(encoding)&damage=truncated&framing=chunked&size=3000000"
        var received = 0
        let error = await courierError {
            let streamed = try await client.stream(HTTPRequest(.get, server.url(path)))
            for try await chunk in streamed.body { received += chunk.count }
        }
        #expect(error?.code == .invalidResponse)
        #expect(received < 3_000_000)
    }

    @Test func aStreamedCompressedBodyIsDecodedWholeForASlowReader() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        // Far more than the stream buffers (1 MiB): the transfer pauses and resumes many times.
        let path = "/fault/bad-encoding?damage=none&framing=chunked&size=12000000"
        let streamed = try await client.stream(HTTPRequest(.get, server.url(path)))
        #expect(streamed.head.headerFields[.contentEncoding] == nil)
        var body = Data()
        for try await chunk in streamed.body {
            // A reader that is behind (not a synchronisation: the body must come whole however
            // long it waits): the transfer fills the stream's buffer and pauses.
            if body.isEmpty { try await Task.sleep(for: .milliseconds(300)) }
            body += chunk
        }
        #expect(body == TestServer.bytePattern(count: 12_000_000))
    }

    @Test func aCallersOwnAcceptEncodingGetsTheBytesAsSent() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        // The caller asked for the coding, so it decodes it: Courier neither decodes nor
        // rewrites the head (before, libcurl inflated the body but left the head as sent).
        for (coding, magic) in [("gzip", [UInt8(0x1F), 0x8B]), ("deflate", [UInt8(0x78)])] {
            var request = HTTPRequest(.get, server.url("/\(coding)"))
            request.headerFields[.acceptEncoding] = coding
            let response = try await client.send(request)
            #expect(server.recordedRequests.last?.header("Accept-Encoding") == coding)
            #expect(Array(response.body.prefix(magic.count)) == magic)
            #expect(response.head.headerFields[.contentEncoding] == coding)
            #expect(response.head.headerFields[.contentLength] == String(response.body.count))
        }
        // A coding Courier does not decode, asked for by the caller: the bytes as sent too.
        server.enqueue(ScriptedResponse(headers: [.contentEncoding: "br"], body: Data([0x0B, 0x01, 0x80])))
        var request = HTTPRequest(.get, server.url("/br"))
        request.headerFields[.acceptEncoding] = "br"
        let response = try await client.send(request)
        #expect(response.body == Data([0x0B, 0x01, 0x80]))
        #expect(response.head.headerFields[.contentEncoding] == "br")
    }

    @Test func aDownloadOfAnAnswerCodedAnywayKeepsTheBytesAsSent() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        // The download asks for `identity`; this server sends gzip all the same. The file holds
        // the bytes as sent, whole (before, libcurl inflated them into the file).
        let destination = LargeBodyTests.Destination()
        defer { try? FileManager.default.removeItem(at: destination.url) }
        let request = HTTPRequest(.get, server.url("/fault/bad-encoding?damage=none"))
        let response = try await client.download(request, to: destination.url).response
        #expect(server.recordedRequests.last?.header("Accept-Encoding") == "identity")
        #expect(response.head.headerFields[.contentEncoding] == "gzip")
        let written = try Data(contentsOf: destination.url)
        #expect(written == Compression.gzip(TestServer.bytePattern(count: 100_000)))
        // Cut mid-body, such a download is not resumed with a range (of coded bytes): it fails,
        // and leaves no file.
        let cut = LargeBodyTests.Destination()
        let coded = Compression.gzip(TestServer.bytePattern(count: 300_000))
        server.enqueue(
            ScriptedResponse(
                headers: [.contentEncoding: "gzip", .eTag: "\"v1\""], body: coded, fault: .closeDuringBody))
        let error = await courierError {
            _ = try await client.download(HTTPRequest(.get, server.url("/cut")), to: cut.url).response
        }
        #expect(error != nil)
        #expect(!cut.exists && !cut.partExists)
        #expect(server.recordedRequests.last?.header("Range") == nil)
    }

    @Test func aCachedDecodedAnswerIsServedAsItWasHandedOut() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let client = try HTTPClient(configuration: .init(baseURL: server.baseURL, cache: cache))
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/fault/bad-encoding?damage=none")
        let first = try await client.send(request)
        let second = try await client.send(request)
        #expect(second.isFromCache)
        #expect(second.body == TestServer.bytePattern(count: 100_000))
        #expect(second.body == first.body)
        // Before, the cache kept the wire's `Content-Encoding: gzip` and compressed length
        // with the decoded body.
        #expect(second.head.headerFields[.contentEncoding] == nil)
        #expect(second.head.headerFields[.contentLength] == nil)
        #expect(server.requestCount == 1)
    }

    @Test func courierOffersOnlyTheCodingsItDecodes() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        _ = try await client.send(HTTPRequest(.get, server.url("/echo")))
        #expect(server.recordedRequests.last?.header("Accept-Encoding") == "gzip, deflate")
        // A server that answers with a coding Courier did not offer gets no body decoded as
        // something else: JSON labelled `br` is refused, not handed out as JSON.
        for coding in ["br", "zstd", "compress", "gzip, br"] {
            server.enqueue(
                ScriptedResponse(
                    headers: [.contentType: "application/json", .contentEncoding: coding], body: Data("{}".utf8)))
            let error = await courierError { _ = try await client.send(HTTPRequest(.get, server.url("/x"))) }
            #expect(error?.code == .invalidResponse, "\(coding): \(String(describing: error))")
        }
    }
}

/// Courier's decoding against Python's gzip and zlib (scripts/serialization-differential.py
/// content-codings) on what servers send, honest and lying: each body, framed by its length and
/// chunked from its first byte, decodes to what Python reads, or is `.invalidResponse` where
/// Python fails too.
@Suite(.enabled(if: PythonStandardLibrary.python != nil, "needs python3"))
struct ContentDecodingDifferentialTests {
    struct Coded: Decodable {
        var name: String
        var contentEncoding: String
        var body: String
        var expected: String?
        var deviation: String?
    }

    @Test func courierDecodesWhatPythonDecodesAndRefusesTheRest() async throws {
        let cases = try JSONDecoder().decode([Coded].self, from: PythonStandardLibrary.run(["content-codings"]))
        #expect(cases.count > 20)
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        for item in cases {
            let body = try #require(Data(base64Encoded: item.body))
            let headers: HTTPFields = [.contentEncoding: item.contentEncoding]
            let chunks =
                [body.prefix(1), body.dropFirst().prefix(1)]
                + stride(from: 2, to: body.count, by: 4096).map {
                    body[$0..<min($0 + 4096, body.count)]
                }
            for (framing, response) in [
                ("length", ScriptedResponse(headers: headers, body: body)),
                ("chunked", .chunked(chunks.map { Data($0) }, headers: headers)),
            ] {
                server.enqueue(response)
                let context = "\(item.name) (\(framing))\(item.deviation.map { "; Courier deviates: \($0)" } ?? "")"
                if let expected = item.expected {
                    let decoded = try await client.send(HTTPRequest(.get, server.url("/coded"))).body
                    #expect(decoded == Data(base64Encoded: expected), "\(context)")
                } else {
                    let error = await courierError {
                        _ = try await client.send(HTTPRequest(.get, server.url("/coded")))
                    }
                    #expect(error?.code == .invalidResponse, "\(context): \(String(describing: error))")
                }
            }
        }
    }

    /// A HEAD answer, a 204 and a 304 have no body, whatever coding their head names (even one
    /// Courier does not decode): nothing to decode, no error, no wait for a body.
    @Test func answersWithoutABodyAreNotDecoded() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let coded = Compression.gzip(Data("the content".utf8))
        for coding in ["gzip", "br"] {
            server.enqueue(ScriptedResponse(headers: [.contentEncoding: coding], body: coded))
            let head = try await client.send(HTTPRequest(.head, server.url("/head")))
            #expect(head.status.code == 200 && head.body.isEmpty, "HEAD, \(coding)")
            for status in [204, 304] {
                server.enqueue(ScriptedResponse(status: status, headers: [.contentEncoding: coding]))
                let response = try await client.send(HTTPRequest(.get, server.url("/\(status)")))
                #expect(response.status.code == status && response.body.isEmpty, "\(status), \(coding)")
            }
        }
        // The connection is still good for a coded answer.
        server.enqueue(ScriptedResponse(headers: [.contentEncoding: "gzip"], body: coded))
        #expect(try await client.send(HTTPRequest(.get, server.url("/after"))).body == Data("the content".utf8))
    }
}

/// nginx's own gzip over HTTP/2 (TLS, ALPN): decoded by Courier, whole, with a head that says so.
@Suite(.enabled(if: NginxServer.isInstalled, "needs nginx (scripts/bootstrap.sh installs it)"))
struct ContentDecodingHTTP2Tests {
    @Test func nginxGzipOverHTTP2IsDecodedWhole() async throws {
        let root = try TLSTests.makeRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let document = Data(
            (0..<40_000).map { "{\"id\":\($0),\"name\":\"item \($0 % 977)\",\"tags\":[\"a\",\"b\"]}" }
                .joined(separator: ",\n").utf8)
        try document.write(to: root.appendingPathComponent("items.json"))
        let nginx = try await offPool {
            try NginxServer.start(
                tls: true, http2: true, root: root,
                extraConfig: "gzip on;\ngzip_types application/json;\ngzip_min_length 0;\n")
        }
        defer { nginx.stop() }
        let client = try makeClient {
            $0.tls = .init(caBundlePath: nginx.caBundlePath)
            $0.stallTimeout = .seconds(3)
        }
        let streamed = try await client.stream(HTTPRequest(.get, nginx.url("/items.json")))
        #expect(streamed.head.headerFields[.contentEncoding] == nil)
        var body = Data()
        for try await chunk in streamed.body { body += chunk }
        #expect(body == document)

        // A buffered answer of unknown length (nginx's gzip sends none) over HTTP/2: libcurl 7.88
        // reads it whole but does not see the stream end with a buffer smaller than a frame, and
        // the transfer waited for the stall timeout. An https origin starts at 16 KiB
        // (`ReceiveBufferSizes.minimumHTTPS`). Not a decoding matter: it did the same with
        // libcurl decoding and with the bytes as sent (a caller's own Accept-Encoding).
        let response = try await client.send(HTTPRequest(.get, nginx.url("/items.json?buffered")))
        #expect(response.metrics.httpVersion == .http2)
        #expect(response.body == document)
        #expect(response.head.headerFields[.contentEncoding] == nil)
        #expect(response.metrics.bytesReceived < Int64(document.count) / 4, "nginx compressed it")
        var request = HTTPRequest(.get, nginx.url("/items.json?raw"))
        request.headerFields[.acceptEncoding] = "gzip"
        let raw = try await client.send(request)
        #expect(raw.head.headerFields[.contentEncoding] == "gzip")
    }
}

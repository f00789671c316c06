import Foundation
import Testing

@testable import CourierTesting

@Suite struct TestServerRoutesTests {
    @Test(arguments: [200, 201, 400, 404, 418, 500, 503])
    func statusRouteAnswersWithThatStatus(code: Int) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let response = try await RawHTTPConnection(port: server.port).request("GET", "/status/\(code)")
        #expect(response.status == code)
        #expect(response.json["status"] as? Int == code)
    }

    @Test(arguments: [204, 304])
    func statusWithoutBody(code: Int) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let response = try await connection.request("GET", "/status/\(code)")
        #expect(response.status == code)
        #expect(response.header("Content-Length") == nil)
        // Nothing stray follows: the next response parses on the same connection.
        #expect(try await connection.request("GET", "/status/200").status == 200)
    }

    @Test func headRequestGetsHeadersOnly() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let head = try await connection.request("HEAD", "/bytes/500")
        #expect(head.header("Content-Length") == "500")
        #expect(try await connection.request("GET", "/bytes/3").body == Data([0, 1, 2]))
    }

    @Test func redirectChainCountsDownToGet() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        var target = "/redirect/3"
        var hops: [String] = []
        while true {
            let response = try await connection.request("GET", target)
            guard response.status == 302, let location = response.header("Location") else {
                #expect(response.status == 200)
                break
            }
            hops.append(location)
            target = location
        }
        #expect(hops == ["/redirect/2", "/redirect/1", "/get"])
    }

    @Test(arguments: [301, 302, 303, 307, 308])
    func redirectToUsesGivenStatusAndLocation(code: Int) async throws {
        let server = try TestServer()
        let other = try TestServer()
        defer {
            server.stop()
            other.stop()
        }
        let destination = other.url("/echo?x=1").absoluteString
        let encoded = destination.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let response = try await RawHTTPConnection(port: server.port).request(
            "POST", "/redirect-to?url=\(encoded)&status=\(code)", body: Data("b".utf8))
        #expect(response.status == code)
        #expect(response.header("Location") == destination)
    }

    @Test func redirectLoopPointsAtItself() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let response = try await RawHTTPConnection(port: server.port).request("GET", "/redirect-loop")
        #expect(response.status == 302)
        #expect(response.header("Location") == "/redirect-loop")
    }

    @Test func bytesAreTheDeterministicPattern() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let response = try await RawHTTPConnection(port: server.port).request("GET", "/bytes/200000")
        #expect(response.header("Content-Length") == "200000")
        #expect(response.body == TestServer.bytePattern(count: 200_000))
        #expect(response.body[251] == 0)
    }

    @Test func streamSendsChunkedJSONLines() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let response = try await RawHTTPConnection(port: server.port).request("GET", "/stream/5")
        #expect(response.header("Transfer-Encoding") == "chunked")
        let lines = String(decoding: response.body, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 5)
        #expect(lines.last == #"{"id":4,"path":"/stream/5"}"#)
    }

    @Test func gzipOnlyWhenAccepted() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let encoded = try await connection.request(
            "GET", "/gzip", headers: [("Accept-Encoding", "deflate, gzip;q=0.5")])
        #expect(encoded.header("Content-Encoding") == "gzip")
        #expect(encoded.body.prefix(2) == Data([0x1f, 0x8b]))
        let decoded = try #require(Compression.inflate(encoded.body))
        let json = try #require(try JSONSerialization.jsonObject(with: decoded) as? [String: Any])
        #expect(json["gzipped"] as? Bool == true)

        let plain = try await connection.request("GET", "/gzip")
        #expect(plain.header("Content-Encoding") == nil)
        #expect(plain.json["gzipped"] as? Bool == false)

        let deflated = try await connection.request("GET", "/deflate", headers: [("Accept-Encoding", "deflate")])
        #expect(deflated.header("Content-Encoding") == "deflate")
        #expect(deflated.body.first == 0x78)  // zlib header
        #expect(Compression.inflate(deflated.body) != nil)
    }

    @Test(arguments: [8 * 1024 * 1024 + 12345, 2 * 1024 * 1024, 0])
    func gzipBombIsSmallAndInflatesToZeros(size: Int) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let response = try await RawHTTPConnection(port: server.port).request("GET", "/gzip-bomb?size=\(size)")
        #expect(response.header("Content-Encoding") == "gzip")
        #expect(response.body.count < 100 * 1024)
        let inflated = try #require(Compression.inflate(response.body))
        #expect(inflated.count == size)
        #expect(inflated == Data(count: size))
    }

    @Test func bearerRequiresAToken() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let missing = try await connection.request("GET", "/bearer")
        #expect(missing.status == 401)
        #expect(missing.header("WWW-Authenticate") == "Bearer")
        let good = try await connection.request("GET", "/bearer", headers: [("Authorization", "Bearer abc")])
        #expect(good.status == 200)
        #expect(good.json["token"] as? String == "abc")

        server.validBearerTokens = ["fresh"]
        #expect(
            try await connection.request("GET", "/bearer", headers: [("Authorization", "Bearer abc")]).status == 401)
        #expect(
            try await connection.request("GET", "/bearer", headers: [("Authorization", "Bearer fresh")]).status == 200)
    }

    @Test func etagRevalidation() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let first = try await connection.request("GET", "/cache/etag?etag=v7&max-age=60")
        #expect(first.status == 200)
        #expect(first.header("ETag") == "\"v7\"")
        #expect(first.header("Cache-Control") == "max-age=60")
        let again = try await connection.request(
            "GET", "/cache/etag?etag=v7&max-age=60", headers: [("If-None-Match", "W/\"v7\"")])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        let changed = try await connection.request("GET", "/cache/etag?etag=v8", headers: [("If-None-Match", "\"v7\"")])
        #expect(changed.status == 200)
        #expect(server.recordedRequests(path: "/cache/etag").count == 3)
    }

    @Test func lastModifiedRevalidation() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let first = try await connection.request("GET", "/cache/last-modified")
        let lastModified = try #require(first.header("Last-Modified"))
        #expect(HTTPDate.parse(lastModified) != nil)
        let fresh = try await connection.request(
            "GET", "/cache/last-modified", headers: [("If-Modified-Since", lastModified)])
        #expect(fresh.status == 304)
        let old = try await connection.request(
            "GET", "/cache/last-modified", headers: [("If-Modified-Since", "Mon, 01 Jan 2001 00:00:00 GMT")])
        #expect(old.status == 200)
    }

    @Test func responseHeadersAreSetFromTheQuery() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let response = try await RawHTTPConnection(port: server.port).request(
            "GET",
            "/response-headers?Cache-Control=max-age%3D30&Vary=Accept&Date=Sun,%2006%20Nov%201994%2008:49:37%20GMT")
        #expect(response.header("Cache-Control") == "max-age=30")
        #expect(response.header("Vary") == "Accept")
        #expect(response.header("Date") == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(response.headers.filter { $0.name == "Date" }.count == 1)
        #expect(response.json["Vary"] as? String == "Accept")
    }

    @Test func uploadCountsAndChecksumsWithoutStoring() async throws {
        let server = try TestServer()
        defer { server.stop() }
        var body = Data(count: 8 * 1024 * 1024)
        body.withUnsafeMutableBytes { raw in
            for index in stride(from: 0, to: raw.count, by: 4096) { raw[index] = UInt8(index / 4096 % 256) }
        }
        let connection = try RawHTTPConnection(port: server.port)
        let response = try await connection.request("POST", "/upload", headers: [("Content-Type", "x/y")], body: body)
        #expect(response.json["bytes"] as? Int == body.count)
        #expect(response.json["crc32"] as? String == String(format: "%08x", Compression.crc32(body)))
        let recorded = try #require(server.recordedRequests.last)
        #expect(recorded.body.isEmpty)
        #expect(recorded.bodyByteCount == body.count)
    }

    @Test func delayWaitsBeforeAnswering() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let started = ContinuousClock.now
        let response = try await RawHTTPConnection(port: server.port).request("GET", "/delay/150")
        #expect(response.status == 200)
        #expect(ContinuousClock.now - started >= .milliseconds(150))
    }

    @Test func dateHeaderCanBeTurnedOff() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let dated = try await connection.request("GET", "/echo")
        #expect(HTTPDate.parse(try #require(dated.header("Date"))) != nil)
        server.sendsDateHeader = false
        #expect(try await connection.request("GET", "/echo").header("Date") == nil)
    }

    @Test func unknownPathIs404() async throws {
        let server = try TestServer()
        defer { server.stop() }
        #expect(try await RawHTTPConnection(port: server.port).request("GET", "/nope").status == 404)
    }

    @Test func httpDateRoundTrips() {
        let date = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDate.format(date) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == date)
        #expect(HTTPDate.parse("yesterday") == nil)
    }
}

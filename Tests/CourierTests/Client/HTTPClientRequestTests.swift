import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct HTTPClientRequestTests {
    static let methods: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options, .init("PURGE")!]

    @Test(arguments: methods)
    func everyMethodArrivesWithItsBody(method: HTTPRequest.Method) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let body = method == .head ? nil : RequestBody.data(Data("payload for \(method)".utf8))
        let response = try await client.send(HTTPRequest(method, server.url("/anything/x")), body: body)
        #expect(response.status == .ok)
        let recorded = try #require(server.recordedRequests.first)
        #expect(recorded.method == method.rawValue)
        #expect(recorded.bodyText == (method == .head ? "" : "payload for \(method)"))
        if method == .head {
            #expect(response.body.isEmpty)
        } else {
            #expect(try Echo(response.body).method == method.rawValue)
            #expect(recorded.header("Content-Length") == "\(("payload for \(method)").utf8.count)")
        }
        #expect(recorded.header("Expect") == nil)
    }

    /// One client, one connection, one pooled handle: a handle keeps its options between
    /// transfers, so nothing of a request may leak into the next one.
    @Test func nothingOfARequestLeaksIntoTheNext() async throws {
        let server = try TestServer()
        defer { server.stop() }
        // No timeout of its own: one a request had must not stay.
        let client = try makeClient {
            $0.maxConnectionsPerHost = 1
            $0.timeout = nil
        }
        let steps: [(HTTPRequest.Method, String?)] = [
            (.post, "first"), (.get, nil), (.head, nil), (.get, nil), (.put, "second"), (.delete, nil),
            (.post, "third"), (.patch, "fourth"), (.options, nil), (.get, nil),
        ]
        for (method, text) in steps {
            let response = try await client.send(
                HTTPRequest(method, server.url("/anything/x")), body: text.map { .data(Data($0.utf8)) })
            #expect(response.status == .ok)
            if method == .head {
                #expect(response.body.isEmpty)
            } else {
                let echo = try Echo(response.body)
                #expect(echo.method == method.rawValue)
                #expect(echo.body == (text ?? ""))
            }
        }
        #expect(server.recordedRequests.map(\.method) == steps.map(\.0.rawValue))
        // A timeout, stall detection and progress callbacks end with their request.
        let progress = LockedValue(0)
        try client.updateSettings { $0.stallTimeout = .seconds(1) }
        _ = try await client.send(
            HTTPRequest(.get, server.url("/bytes/100000")),
            options: CallOptions(
                timeout: .milliseconds(250),
                downloadProgress: { _ in progress.withLock { $0 += 1 } }))
        #expect(progress.withLock { $0 } > 0)
        let reported = progress.withLock { $0 }
        let slow = try await client.send(HTTPRequest(.get, server.url("/delay/600")))
        #expect(slow.status == .ok)
        _ = try await client.send(HTTPRequest(.get, server.url("/bytes/100000")))
        #expect(progress.withLock { $0 } == reported)
        #expect(server.acceptedConnections == 1)
    }

    @Test func bodylessPostSendsAnEmptyBody() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        _ = try await client.send(HTTPRequest(.post, server.url("/echo")))
        _ = try await client.send(HTTPRequest(.get, server.url("/echo")))
        let recorded = server.recordedRequests
        #expect(recorded[0].header("Content-Length") == "0")
        #expect(recorded[1].header("Content-Length") == nil)
        #expect(recorded[1].header("Transfer-Encoding") == nil)
    }

    @Test func headersAndQueryRoundTrip() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient {
            $0.defaultHeaders = [.userAgent: "CourierTests/1", .accept: "text/plain"]
        }
        var request = HTTPRequest(.get, server.url("/echo?q=caf%C3%A9&empty=&list=a&list=b"))
        request.headerFields[.accept] = "application/json"
        request.headerFields[HTTPField.Name("X-Trace")!] = "abc-123"
        request.headerFields[HTTPField.Name("X-Empty")!] = ""
        let response = try await client.send(request)
        let echo = try Echo(response.body)
        #expect(echo.query == "q=caf%C3%A9&empty=&list=a&list=b")
        #expect(echo.args["q"] == "café")
        #expect(echo.headers["x-trace"] == "abc-123")
        #expect(echo.headers["x-empty"] == "")
        #expect(echo.headers["accept"] == "application/json")  // the request's own value wins
        #expect(echo.headers["user-agent"] == "CourierTests/1")
        #expect(response.url == server.url("/echo?q=caf%C3%A9&empty=&list=a&list=b"))
        #expect(response.metrics.httpVersion == .http1_1)
    }

    @Test func responseHeadersAndStatusesComeBackAsSent() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(
            ScriptedResponse.text("teapot", status: 418).with("X-One", "1").with("Set-Cookie", "a=1")
                .with("Set-Cookie", "b=2"))
        let client = try makeClient()
        let response = try await client.send(HTTPRequest(.get, server.url("/any")))
        #expect(response.status.code == 418)
        #expect(response.head.headerFields[HTTPField.Name("X-One")!] == "1")
        #expect(response.head.headerFields[values: .setCookie] == ["a=1", "b=2"])
        #expect(String(decoding: response.body, as: UTF8.self) == "teapot")
    }

    @Test func baseURLAndPlainValueConvenience() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient { $0.baseURL = server.url("/anything/") }
        let relative = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/users/7?x=1")
        let echo = try Echo(try await client.send(relative).body)
        #expect(echo.path == "/anything/users/7")
        let plain = try await client.send(
            method: .post, url: server.url("/echo"), headers: ["X-A": "b"], body: Data("hi".utf8))
        #expect(try Echo(plain.body).headers["x-a"] == "b")
        #expect(try Echo(plain.body).body == "hi")
    }

    @Test func gzipAndDeflateAreDecoded() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        for path in ["/gzip", "/deflate"] {
            let response = try await client.send(HTTPRequest(.get, server.url(path)))
            let object = try JSONSerialization.jsonObject(with: response.body) as? [String: Any]
            #expect(object?["gzipped"] as? Bool == true || object?["deflated"] as? Bool == true)
            #expect(response.metrics.bytesReceived > 0)
        }
    }

    @Test func uploadFromFileWithProgress() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-upload-\(UUID())").path
        let content = TestServer.bytePattern(count: 3_000_000)
        try content.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let uploads = Recorder<TransferProgress>()
        let downloads = Recorder<TransferProgress>()
        let client = try makeClient()
        let options = CallOptions(
            uploadProgress: { uploads.append($0) }, downloadProgress: { downloads.append($0) })
        let body = RequestBody(segments: [.data(Data("<".utf8)), .file(path: path), .data(Data(">".utf8))])
        let response = try await client.send(HTTPRequest(.post, server.url("/upload")), body: body, options: options)
        let summary = try JSONSerialization.jsonObject(with: response.body) as? [String: Any]
        #expect(summary?["bytes"] as? Int == 3_000_002)
        let recorded = try #require(server.recordedRequests.first)
        #expect(recorded.bodyByteCount == 3_000_002)
        #expect(recorded.bodyCRC32 == crc32(Data("<".utf8) + content + Data(">".utf8)))
        let last = try #require(uploads.values.last)
        #expect(last.completed == 3_000_002)
        #expect(last.total == 3_000_002)
        #expect(uploads.values.count >= 2)
        #expect(zip(uploads.values, uploads.values.dropFirst()).allSatisfy { $0.completed <= $1.completed })
        #expect(downloads.values.last?.completed == Int64(response.body.count))
    }

    @Test func putOfAFileUsesContentLength() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-put-\(UUID())").path
        try Data("file body".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let client = try makeClient()
        _ = try await client.send(HTTPRequest(.put, server.url("/echo")), body: .file(path: path))
        let recorded = try #require(server.recordedRequests.first)
        #expect(recorded.method == "PUT")
        #expect(recorded.bodyText == "file body")
        #expect(recorded.header("Content-Length") == "9")
        let missing = await courierError {
            _ = try await client.send(HTTPRequest(.put, server.url("/echo")), body: .file(path: path + ".missing"))
        }
        #expect(missing?.code == .invalidRequest)
        #expect(server.recordedRequests.count == 1)
    }
}

/// Collects values from callbacks on other threads.
final class Recorder<Value: Sendable>: Sendable {
    private let storage = LockedValue<[Value]>([])
    func append(_ value: Value) { storage.withLock { $0.append(value) } }
    var values: [Value] { storage.withLock { $0 } }
}

/// zlib's CRC-32, to compare with what the test server computed.
func crc32(_ data: Data) -> UInt32 {
    var table = [UInt32](repeating: 0, count: 256)
    for index in 0..<256 {
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        table[index] = value
    }
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in data { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
    return crc ^ 0xFFFF_FFFF
}

import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// A retried call sends its body again, byte for byte: a PUT, a POST whose policy opts in, and
/// a multipart body with a file part (read from disk again, whole). A streamed body, which can
/// be read once only, is refused instead (`LargeBodyTests.aStreamedBodyIsNotSentTwice`).
@Suite struct RetryBodyTests {
    /// A route that answers 503 to its first request and 200 to the next.
    private static func failingOnce(_ server: TestServer, _ path: String) {
        let received = ServiceCounter()
        server.route(path) { _ in
            received.increment() == 1 ? .status(503) : .json(["id": 1, "name": "stored"])
        }
    }

    @Test(arguments: [HTTPRequest.Method.put, .post])
    func aRetryAfterA503SendsTheSameBodyAgain(_ method: HTTPRequest.Method) async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.failingOnce(server, "/items/1")
        let service = try ServiceFixture.service(server)
        let options = CallOptions.default.with(\.retryPolicy, RetryPolicy(jitter: 0).allowingNonIdempotent())
        let body = ServiceUser(id: 1, name: String(repeating: "é", count: 20_000))
        let response = try await service.send(Endpoint<ServiceUser>(method, "items/1", body: body, options: options))
        #expect(response.attempts == 2)
        let sent = server.recordedRequests(path: "/items/1")
        #expect(sent.count == 2)
        #expect(sent.allSatisfy { $0.method == method.rawValue })
        #expect(try JSONDecoder().decode(ServiceUser.self, from: sent[0].body) == body)
        #expect(sent[1].body == sent[0].body)
    }

    @Test func aMultipartBodyWithAFileIsSentWholeAgain() async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.failingOnce(server, "/uploads")
        let directory = TemporaryDirectory()
        let path = directory.path + "/photo.bin"
        let file = TestServer.bytePattern(count: 300_001)
        try file.write(to: URL(fileURLWithPath: path))
        var form = MultipartFormData()
        form.append("a caption", name: "caption")
        form.appendFile(at: path, name: "photo")
        let service = try ServiceFixture.service(server)
        let options = CallOptions(requestSerializer: .multipart)
        let response = try await service.send(Endpoint<ServiceUser>(.put, "uploads", body: form, options: options))
        #expect(response.attempts == 2)
        let sent = server.recordedRequests(path: "/uploads")
        #expect(sent.count == 2)
        #expect(sent[0].body.range(of: file) != nil, "the first attempt did not carry the whole file")
        #expect(sent[1].body == sent[0].body)
        #expect(sent[1].bodyCRC32 == sent[0].bodyCRC32)
    }
}

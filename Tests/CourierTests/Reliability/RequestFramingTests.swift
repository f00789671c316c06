import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// A caller's own framing fields (`Content-Length`, `Transfer-Encoding`) must not decide where
/// the body ends on the wire: the transport knows the body, and a field that disagrees with it
/// makes the server read the rest of the body as the next request on the connection
/// (request smuggling), whose answer then goes to the next call on that connection.
@Suite struct RequestFramingTests {
    /// A body that is itself a whole HTTP request.
    static let smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

    @Test(arguments: [
        ["Content-Length": "0"], ["content-length": "3"], ["Transfer-Encoding": "chunked"],
        ["Transfer-Encoding": "identity"],
    ])
    func aCallersFramingFieldNeverCutsTheBody(headers: [String: String]) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        var request = HTTPRequest(.post, server.url("/echo"))
        for (name, value) in headers { request.headerFields[HTTPField.Name(name)!] = value }
        let body = Data(Self.smuggled.utf8)
        do {
            let response = try await client.send(request, body: .data(body))
            // Sent: the whole body reached /echo as its body.
            #expect(try Echo(response.body).body == Self.smuggled)
        } catch let error as CourierError {
            // Or refused before anything was sent.
            #expect(error.code == .invalidRequest)
        }
        // The next call on the same connection gets its own answer.
        let next = try await client.send(HTTPRequest(.get, server.url("/echo?next=1")))
        #expect((try? Echo(next.body))?.query == "next=1")
        #expect(server.recordedRequests(path: "/smuggled").isEmpty)
    }

    /// A streamed body's declared length is a count of bytes: a negative one said nothing curl
    /// could send, and the request went out with an empty body, reported as a success.
    @Test(arguments: [Int64(-1), -5_000, .min])
    func aNegativeStreamLengthIsRefusedBeforeSending(length: Int64) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let chunks = AsyncStream<Data> { continuation in
            continuation.yield(Data("hello".utf8))
            continuation.finish()
        }
        let error = await courierError {
            _ = try await client.send(HTTPRequest(.post, server.url("/echo")), body: .stream(chunks, length: length))
        }
        #expect(error?.code == .invalidRequest)
        #expect(server.requestCount == 0)
    }
}

import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// One label for a request body everywhere: `parameters:` is the query string and `body:` the
/// body, on the verbs and on `Endpoint`, whatever the method and the request serializer.
@Suite struct BodyLabelTests {
    struct Echo: Decodable, Sendable {
        var method: String
        var query: String
        var body: String
        var headers: [String: String]
    }

    struct Report: Codable, Sendable {
        var reason: String
    }

    @Test func anEndpointCarriesQueryParametersAndABodyApart() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server)
        let posted = try await service.send(
            Endpoint<Echo>(.post, "echo", parameters: ["page": "2"], body: Report(reason: "spam"))
        ).value
        #expect(posted.method == "POST")
        #expect(posted.query == "page=2")
        #expect(posted.body == #"{"reason":"spam"}"#)
        #expect(posted.headers["content-type"] == "application/json")
    }

    /// A DELETE with a body: the method alone put its parameters into the query string.
    @Test func aDeleteEndpointSendsItsBodyAsABody() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server)
        let deleted = try await service.send(Endpoint<Echo>(.delete, "echo", body: Report(reason: "dup"))).value
        #expect(deleted.method == "DELETE")
        #expect(deleted.query == "")
        #expect(deleted.body == #"{"reason":"dup"}"#)
        let viaQuery: Echo = try await service.delete("echo", parameters: ["id": "7"])
        #expect(viaQuery.query == "id=7")
        #expect(viaQuery.body == "")
    }

    @Test(arguments: ["form", "multipart"])
    func queryParametersGoToTheQueryWhateverTheSerializer(_ name: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.requestSerializer = name == "form" ? .form : .multipart
        }
        let posted = try await service.send(
            Endpoint<Echo>(.post, "echo", parameters: ["page": "2"], body: Report(reason: "spam"))
        ).value
        #expect(posted.query == "page=2")
        #expect(posted.body.contains("spam"))
        #expect(!posted.body.contains("page"))
    }

    /// The verbs use the same labels, and every verb takes a per-call response serializer.
    @Test func theVerbsUseTheSameLabelsAndTakeASerializer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server)
        let got: Echo = try await service.get("echo", parameters: ["q": "swift"])
        #expect(got.query == "q=swift")
        let put: String = try await service.put("echo", body: Report(reason: "x"), serializer: .string)
        #expect(put.contains(#""method":"PUT""#))
        let deleted: String = try await service.delete("echo", parameters: ["id": "1"], serializer: .string)
        #expect(deleted.contains(#""query":"id=1""#))
    }
}

import Courier
import CourierProtobuf
import CourierTesting
import Foundation
import HTTPTypes
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite struct ProtobufSerializerTests {
    static let profile = UserProfile(
        userId: 42, displayName: "Ada", email: "ada@example.com", tier: .pro, verified: true,
        address: Address(street: "1 Engine Way", city: "London", countryCode: "GB"),
        interests: ["math"], badgeIds: [1, 2], stats: ["posts": 3], bio: "Hi")

    @Test func requestSerializerWritesBodyAndContentType() throws {
        var request = PreparedRequest(head: HTTPRequest(method: .post, scheme: "http", authority: "h", path: "/p"))
        try ProtobufRequestSerializer.protobuf.serialize(Self.profile, into: &request)
        #expect(request.head.headerFields[.contentType] == "application/x-protobuf")
        let body = try #require(request.body?.inMemoryData)
        #expect(try ProtobufDecoder().decode(UserProfile.self, from: body) == Self.profile)
    }

    @Test func requestSerializerKeepsACallersContentType() throws {
        var request = PreparedRequest(head: HTTPRequest(method: .post, scheme: "http", authority: "h", path: "/p"))
        request.head.headerFields[.contentType] = "application/vnd.google.protobuf"
        try ProtobufRequestSerializer().serialize(Self.profile, into: &request)
        #expect(request.head.headerFields[.contentType] == "application/vnd.google.protobuf")
    }

    @Test func requestSerializerRejectsNonMessages() throws {
        struct Plain: Encodable { var a = 1 }
        var request = PreparedRequest(head: HTTPRequest(method: .post, scheme: "http", authority: "h", path: "/p"))
        let error = try #require(throws: CourierError.self) {
            try ProtobufRequestSerializer().serialize(Plain(), into: &request)
        }
        #expect(error.code == .encoding && error.message.contains("Plain"))
    }

    @Test func responseSerializerAcceptsTheProtobufMediaTypes() {
        let serializer: ProtobufResponseSerializer<Feed> = .protobuf(Feed.self)
        #expect(
            serializer.acceptableContentTypes == [
                "application/x-protobuf", "application/protobuf", "application/vnd.google.protobuf",
                "application/octet-stream",
            ])
    }

    @Test func responseSerializerDecodesAndReportsTheResponse() throws {
        let head = HTTPRequest(method: .get, scheme: "http", authority: "h", path: "/feed")
        let feed = try Fixtures.bytes("demo_feed")
        let ok = ResponseContext(request: head, response: HTTPResponse(status: .ok), body: feed)
        #expect(try ProtobufResponseSerializer(Feed.self).serialize(ok).posts.count == 3)
        let empty = ResponseContext(request: head, response: HTTPResponse(status: .ok), body: Data())
        #expect(try ProtobufResponseSerializer(Feed.self).serialize(empty) == Feed(), "empty body = default message")
        let bad = ResponseContext(request: head, response: HTTPResponse(status: .ok), body: Data([0x0A, 0x50]))
        let error = try #require(throws: CourierError.self) { try ProtobufResponseSerializer(Feed.self).serialize(bad) }
        #expect(error.code == .decoding && error.status == .ok && error.body == Data([0x0A, 0x50]))
    }

    /// End to end over a real loopback socket: the request serializer makes the body, the
    /// in-process server decodes it with Courier and echoes a changed message, the response
    /// serializer decodes the answer. (URLSession stands in for Courier's HTTPClient, which is
    /// built on another branch.)
    @Test func postEchoesThroughTheLoopbackServer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("POST", "/profiles/echo") { request in
            guard request.header("Content-Type") == "application/x-protobuf",
                var profile = try? ProtobufDecoder().decode(UserProfile.self, from: request.body)
            else { return .status(415) }
            profile.displayName += " (echoed)"
            let body = try! ProtobufEncoder().encode(profile)
            return ScriptedResponse(status: 200, headers: [.contentType: "application/x-protobuf"], body: body)
        }
        server.route("GET", "/feed") { _ in
            ScriptedResponse(
                status: 200, headers: [.contentType: "application/vnd.google.protobuf"],
                body: try! Fixtures.bytes("demo_feed"))
        }

        var prepared = PreparedRequest(
            head: HTTPRequest(
                method: .post, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/profiles/echo"))
        try ProtobufRequestSerializer.protobuf.serialize(Self.profile, into: &prepared)
        let echoed = try await send(prepared, to: server, as: UserProfile.self)
        var expected = Self.profile
        expected.displayName = "Ada (echoed)"
        #expect(echoed == expected)
        #expect(server.recordedRequests(path: "/profiles/echo").first?.body == prepared.body?.inMemoryData)

        let get = PreparedRequest(
            head: HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/feed"))
        let feed = try await send(get, to: server, as: Feed.self)
        #expect(feed == (try Fixtures.expected("demo_feed", as: Feed.self)))
    }

    private func send<Model: ProtobufMessage & Sendable>(
        _ prepared: PreparedRequest, to server: TestServer, as type: Model.Type
    ) async throws -> Model {
        var request = URLRequest(url: server.url(prepared.head.path ?? "/"))
        request.httpMethod = prepared.head.method.rawValue
        for field in prepared.head.headerFields {
            request.setValue(field.value, forHTTPHeaderField: field.name.rawName)
        }
        request.httpBody = prepared.body?.inMemoryData
        let serializer = ProtobufResponseSerializer(Model.self)
        request.setValue(serializer.acceptableContentTypes.joined(separator: ", "), forHTTPHeaderField: "Accept")
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        #expect(http.statusCode == 200)
        let contentType = http.value(forHTTPHeaderField: "Content-Type") ?? ""
        #expect(serializer.acceptableContentTypes.contains(contentType))
        return try serializer.serialize(
            ResponseContext(
                request: prepared.head, response: HTTPResponse(status: .init(code: http.statusCode)), body: data))
    }
}

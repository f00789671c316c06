import CourierProtobuf
import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

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

    /// End to end through Courier's HTTPClient and a real loopback socket: the request
    /// serializer makes the body, the in-process server decodes it with Courier and echoes a
    /// changed message, the response pipeline validates and decodes the answer.
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
        var configuration = HTTPClient.Configuration()
        configuration.baseURL = server.baseURL
        let client = try HTTPClient(configuration: configuration)

        var prepared = PreparedRequest(
            head: HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/profiles/echo"))
        try ProtobufRequestSerializer.protobuf.serialize(Self.profile, into: &prepared)
        let serializer: ProtobufResponseSerializer<UserProfile> = .protobuf(UserProfile.self)
        prepared.head.headerFields[.accept] = serializer.acceptHeader
        let response = try await client.send(prepared.head, body: prepared.body)
        let context = ResponseContext(request: prepared.head, response: response.head, body: response.body)
        let echoed = try ResponsePipeline().process(context, with: serializer)

        var expected = Self.profile
        expected.displayName = "Ada (echoed)"
        #expect(echoed == expected)
        let recorded = try #require(server.recordedRequests(path: "/profiles/echo").first)
        #expect(recorded.body == prepared.body?.inMemoryData)
        #expect(recorded.header("Accept")?.contains("application/x-protobuf") == true)
    }

    /// An APIService-style GET: the server answers protobuf, the client decodes it with the
    /// `.protobuf` body format (the default-response-type hook), also under content negotiation.
    @Test func getDecodesWithTheProtobufFormatAndNegotiation() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let golden = try Fixtures.bytes("demo_feed")
        server.route("GET", "/feed") { request in
            if request.header("Accept")?.hasPrefix("application/json") == true {
                return .json(text: #"{"nextCursor":"json"}"#)
            }
            return ScriptedResponse(
                status: 200, headers: [.contentType: "application/vnd.google.protobuf"], body: golden)
        }
        server.route("GET", "/empty") { _ in
            ScriptedResponse(status: 200, headers: [.contentType: "application/x-protobuf"], body: Data())
        }
        var configuration = HTTPClient.Configuration()
        configuration.baseURL = server.baseURL
        let client = try HTTPClient(configuration: configuration)

        func get<S: ResponseSerializer>(_ path: String, _ serializer: S) async throws -> S.Output {
            var head = HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
            head.headerFields[.accept] = serializer.acceptHeader
            let response = try await client.send(head)
            return try ResponsePipeline().process(
                ResponseContext(request: head, response: response.head, body: response.body), with: serializer)
        }

        let expected = try Fixtures.expected("demo_feed", as: Feed.self)
        #expect(try await get("/feed", .decodable(Feed.self, using: .protobuf)) == expected)
        let negotiated = try await get(
            "/feed", .negotiating(Feed.self, among: [ProtobufModelDecoding.protobuf, JSONModelDecoding.json]))
        #expect(negotiated == expected)
        #expect(try await get("/empty", .decodable(Feed.self, using: .protobuf)) == Feed())
        #expect(try await get("/empty", .protobuf(Feed.self)) == Feed())
    }
}

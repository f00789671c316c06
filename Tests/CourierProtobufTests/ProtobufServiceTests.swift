import Courier
import CourierProtoModels
import CourierProtobuf
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Protobuf through `APIService`, end to end on a loopback server: a protobuf body with a
/// protobuf reply from a service whose defaults are protobuf, and one generated model read from
/// JSON or protobuf by the response's `Content-Type` on the same endpoint.
@Suite struct ProtobufServiceTests {
    typealias Profile = CourierProtoModels.UserProfile

    static let profile = Profile(
        userId: 42, displayName: "Ada", email: "ada@example.com", tier: .pro, verified: true, rating: 4.5,
        address: CourierProtoModels.Address(street: "1 Engine Way", city: "London", countryCode: "GB"),
        interests: ["math", "engines"], badgeIds: [1, 2], stats: ["posts": 3], bio: "Hi")

    /// A domain service as a user writes it: protobuf is its request and response format, and
    /// one endpoint negotiates between protobuf and JSON.
    struct ProfileService: APIService {
        let core: ServiceCore
        static let answer = HTTPField.Name("X-Answer")!

        init(client: HTTPClient) {
            core = ServiceCore(
                client: client,
                configuration: ServiceConfiguration(requestSerializer: .protobuf, decoding: .protobuf))
        }

        func save(_ profile: Profile) async throws(CourierError) -> Profile {
            try await post("profiles", body: profile)
        }

        /// `answer` asks the test server for a format; the client only negotiates.
        func profile(answeredAs answer: String) async throws(CourierError) -> Profile {
            try await get(
                "profiles/42",
                serializer: .negotiating(
                    Profile.self, among: [ProtobufModelDecoding.protobuf, JSONModelDecoding.json]),
                options: CallOptions.default.with(\.headers, [Self.answer: answer]))
        }
    }

    static func service(_ server: TestServer) throws -> ProfileService {
        var configuration = HTTPClient.Configuration()
        configuration.baseURL = server.baseURL
        return ProfileService(client: try HTTPClient(configuration: configuration))
    }

    @Test func postsAProtobufBodyAndDecodesTheProtobufReply() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("POST", "/profiles") { request in
            guard request.header("Content-Type") == "application/x-protobuf",
                var profile = try? ProtobufDecoder().decode(Profile.self, from: request.body)
            else { return .status(415) }
            profile.userId += 1
            return ScriptedResponse(
                status: 200, headers: [.contentType: "application/x-protobuf"],
                body: try! ProtobufEncoder().encode(profile))
        }
        let saved = try await Self.service(server).save(Self.profile)
        var expected = Self.profile
        expected.userId = 43
        #expect(saved == expected)
        let recorded = try #require(server.recordedRequests(path: "/profiles").first)
        #expect(recorded.body == (try ProtobufEncoder().encode(Self.profile)))
        #expect(recorded.header("Accept")?.hasPrefix("application/x-protobuf") == true)
    }

    @Test func oneEndpointAnswersProtobufOrJSONIntoTheSameGeneratedModel() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let protobuf = try ProtobufEncoder().encode(Self.profile)
        let json = try JSONEncoder().encode(Self.profile)  // Foundation's, not Courier's
        server.route("GET", "/profiles/42") { request in
            switch request.header("X-Answer") {
            case "protobuf":
                ScriptedResponse(
                    status: 200, headers: [.contentType: "application/vnd.google.protobuf"], body: protobuf)
            case "json": ScriptedResponse(status: 200, headers: [.contentType: "application/json"], body: json)
            case "empty": ScriptedResponse(status: 200, headers: [.contentType: "application/x-protobuf"], body: Data())
            default: .text("<html>", contentType: "text/html")
            }
        }
        let service = try Self.service(server)

        #expect(try await service.profile(answeredAs: "protobuf") == Self.profile)
        #expect(try await service.profile(answeredAs: "json") == Self.profile)
        #expect(try await service.profile(answeredAs: "empty") == Profile(), "an empty protobuf body is a message")
        let error = await #expect(throws: CourierError.self) { try await service.profile(answeredAs: "html") }
        #expect(error?.code == .unacceptableContentType)

        // One Accept header for every call: protobuf's types first, then JSON's at a lower q.
        let accept = try #require(server.recordedRequests(path: "/profiles/42").first?.header("Accept"))
        #expect(accept.hasPrefix("application/x-protobuf, application/protobuf"))
        #expect(accept.contains("application/json;q=0.9"))
    }
}

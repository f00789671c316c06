import Courier
import CourierTesting
import Foundation
import Testing

/// The README's quick start, compiled and run against a loopback server (kean/Get's
/// `CodeSamplesTests` idea): if the API changes under the README, this stops compiling.
///
/// Differences from the README, each for isolation: the base URL is the test server's, and
/// the login notification goes to a private center instead of `NotificationCenter.default`
/// (other tests' clients observe the default one).
enum ReadmeQuickStart {
    struct User: Decodable, Sendable {
        var id: Int
        var name: String
    }

    /// One service per business domain; one method per endpoint.
    struct UserService: APIService {
        let core: ServiceCore

        func user(id: Int) async throws(CourierError) -> User {
            try await get("users/\(id)")
        }

        func rename(id: Int, to name: String) async throws(CourierError) -> User {
            try await patch("users/\(id)", body: ["name": name])
        }
    }

    static func run(baseURL: URL, center: NotificationCenter) async throws -> (User, User) {
        let client = try HTTPClient(configuration: .init(baseURL: baseURL, notificationCenter: center))
        let users = UserService(core: ServiceCore(client: client))

        // After login, every request carries `Authorization: Bearer <token>`.
        center.post(name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: "token"])

        let ada = try await users.user(id: 42)
        let renamed = try await users.rename(id: 42, to: "Ada King")
        return (ada, renamed)
    }
}

@Suite struct CodeSamplesTests {
    @Test func readmeQuickStartRunsAgainstALoopbackServer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/v1/users/42") { _ in .json(["id": 42, "name": "Ada Lovelace"]) }
        server.route("PATCH", "/v1/users/42") { request in
            let body = try? JSONSerialization.jsonObject(with: request.body) as? [String: String]
            return .json(["id": 42, "name": body?["name"] ?? "?"])
        }
        let (ada, renamed) = try await ReadmeQuickStart.run(
            baseURL: server.url("/v1"), center: NotificationCenter())
        #expect(ada.name == "Ada Lovelace")
        #expect(renamed.name == "Ada King")
        let sent = server.recordedRequests(path: "/v1/users/42")
        #expect(sent.count == 2)
        #expect(sent.allSatisfy { $0.header("Authorization") == "Bearer token" })
        #expect(sent.last?.header("Content-Type")?.hasPrefix("application/json") == true)
    }
}

import Courier
import CourierTesting
import Foundation
import HTTPTypes
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

    /// Docs/GettingStarted.md "Testing your services", as written there (its `UserService` is
    /// the guide's). The guide's copy made `UserService(client:)`, which no service has, and no
    /// test compiled it.
    @Test func userIsDecoded() async throws {
        typealias UserService = DocSamples.UserService
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/users/42") { _ in .json(["id": 42, "name": "Ada"]) }
        let users = UserService(
            core: ServiceCore(client: try HTTPClient(configuration: .init(baseURL: server.baseURL))))
        #expect(try await users.user(id: 42).name == "Ada")
        #expect(server.recordedRequests(path: "/users/42").count == 1)
    }
}

/// A user's code as it would be written outside the package (this file imports `Courier`
/// without `@testable`): a service, a client and a service configuration, per-call options,
/// a monitor, and `HTTPClient.send` with the same options type. If a declaration a user needs
/// stops being public, this stops compiling.
enum PublicSurfaceSample {
    struct Item: Decodable, Sendable {
        var id: Int
    }

    struct CatalogService: APIService {
        let core: ServiceCore

        func item(_ id: Int, options: CallOptions = .default) async throws(CourierError) -> Item {
            try await get("items/\(id)", options: options)
        }
    }

    struct FinishedCounter: EventMonitor {
        let finished: @Sendable (Int) -> Void
        func handle(_ event: MonitorEvent) {
            switch event {
            case .finished(_, .success(let response), _): finished(response.status.code)
            default: break
            }
        }
    }
}

@Suite struct PublicSurfaceTests {
    @Test func aUserServiceCompilesAndRunsOnThePublicSurfaceOnly() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/api/items/7") { _ in .json(["id": 7]) }
        let statuses = StatusLog()

        var configuration = HTTPClient.Configuration(
            baseURL: server.url("/api"), timeout: .seconds(10), defaultHeaders: [.userAgent: "Catalog/1.0"],
            maxRedirects: 10)
        configuration.decoding = .json
        let client = try HTTPClient(configuration: configuration)
        let service = PublicSurfaceSample.CatalogService(
            core: ServiceCore(
                client: client,
                configuration: ServiceConfiguration(
                    generalParameters: [("os", "linux")], retryPolicy: RetryPolicy(maximumRetries: 1),
                    monitors: [PublicSurfaceSample.FinishedCounter { statuses.append($0) }, LoggingEventMonitor()])))

        var options = CallOptions(headers: [.acceptLanguage: "fr"], timeout: .seconds(30))
        options.userInfo = [.showsActivity: true]
        let item = try await service.item(7, options: options.with(\.maxResponseSize, 1 << 20))
        #expect(item.id == 7)

        let sent = try #require(server.recordedRequests(path: "/api/items/7").first)
        #expect(sent.header("Accept-Language") == "fr")
        #expect(sent.header("User-Agent") == "Catalog/1.0")
        #expect(sent.target.contains("os=linux"))
        #expect(statuses.all == [200])

        // The client on its own takes the same per-call options.
        let raw = try await client.send(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/items/7"),
            options: CallOptions(timeout: .seconds(30), maxResponseSize: 1 << 20))
        #expect(raw.status == .ok)
        #expect(String(decoding: raw.body, as: UTF8.self).contains("7"))
    }
}

/// The statuses a monitor saw, in order.
final class StatusLog: Sendable {
    private let state = LockedValue<[Int]>([])
    func append(_ status: Int) { state.withLock { $0.append(status) } }
    var all: [Int] { state.withLock { $0 } }
}

import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Logging out of a service whose token was refreshed drops the entries the refreshed token
/// fetched, not only those of the token the client logged in with.
@Suite struct APIServiceLogoutCacheTests {
    struct Me: Decodable, Sendable { var name: String }

    enum LogoutPath: CaseIterable, Sendable { case method, notification }

    @Test(arguments: LogoutPath.allCases)
    func logoutAfterARefreshPurgesTheRefreshedTokensEntries(_ path: LogoutPath) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/me") { request in
            guard request.header("Authorization") == "Bearer fresh" else { return .status(401) }
            return ScriptedResponse(
                headers: [.contentType: "application/json", .cacheControl: "private, max-age=600"],
                body: Data(#"{"name":"alice"}"#.utf8))
        }
        let directory = TemporaryDirectory()
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .disk(directory: directory.path)))
        let center = NotificationCenter()
        let client = try HTTPClient(
            configuration: .init(baseURL: server.baseURL, notificationCenter: center, cache: cache))
        let coordinator = AuthRefreshCoordinator<String>(credential: "stale") { _ in "fresh" }
        var configuration = ServiceConfiguration(retryPolicy: RetryPolicy(jitter: 0))
        configuration.authentication = .bearer(coordinator)
        let service = ServiceCore(client: client, configuration: configuration)

        // An anonymous entry, fetched by the client without a credential: it must survive.
        let publicPath = "/response-headers?Cache-Control=max-age%3D600"
        _ = try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: publicPath))

        let first: Me = try await service.get("me")
        let second: Me = try await service.get("me")
        #expect(first.name == "alice" && second.name == "alice")
        #expect(server.count("/me") == 2, "401 with the stale token, 200 with the fresh one, then a cache hit")
        #expect(coordinator.refreshCount == 1)
        let refreshed = CacheRequest(
            HTTPRequest(
                method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: "/me",
                headerFields: [.authorization: "Bearer fresh"]))
        #expect(try cache.lookup(refreshed).isFresh)

        switch path {
        case .method: service.logOut()
        case .notification: center.post(name: .courierUserDidLogOut, object: nil)
        }

        #expect(try cache.lookup(refreshed).isMiss)
        #expect(coordinator.current == nil)
        let anonymous = CacheRequest(
            HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: publicPath))
        #expect(try cache.lookup(anonymous).isFresh)
        withExtendedLifetime(service) {}
    }
}

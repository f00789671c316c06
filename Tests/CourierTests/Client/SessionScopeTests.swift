import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Login and logout notifications bound to a sender (issue 16 item 6): two clients in one
/// process, two accounts on two back ends, each follows only its own. On the old code every
/// client observed with `object: nil` and followed every notification: the logout for A
/// logged B out and purged B's cached answers.
@Suite struct SessionScopeTests {
    /// One account: its back end, its client (with a cache) and a service with an
    /// authentication interceptor.
    struct Account {
        let server: TestServer
        let client: HTTPClient
        let service: ServiceCore
        let coordinator: AuthRefreshCoordinator<String>

        init(_ scope: SessionScope?, center: NotificationCenter) throws {
            server = try TestServer()
            let cache = try HostScopedCache(
                configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
            client = try HTTPClient(
                configuration: .init(
                    baseURL: server.baseURL, notificationCenter: center, cache: cache, sessionScope: scope))
            coordinator = AuthRefreshCoordinator<String>(credential: nil) { _ in throw CancellationError() }
            var configuration = ServiceConfiguration(retryPolicy: .none)
            configuration.authentication = .bearer(coordinator)
            service = ServiceCore(client: client, configuration: configuration)
        }

        /// The `Authorization` header the server saw on a fresh GET through the client.
        func authorization() async throws -> String? {
            server.resetRecords()
            _ = try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/echo"))
            return server.recordedRequests.last?.header("Authorization")
        }

        /// GETs a privately cacheable path through the client.
        func cachedGet() async throws -> HTTPClient.Response {
            try await client.send(
                HTTPRequest(
                    method: .get, scheme: nil, authority: nil,
                    path: "/response-headers?Cache-Control=private,%20max-age%3D600"))
        }
    }

    @Test func aLogoutForOneScopeLeavesTheOtherLoggedInWithItsCache() async throws {
        let center = NotificationCenter()
        let scopeA = SessionScope("account-a")
        let scopeB = SessionScope("account-b")
        let a = try Account(scopeA, center: center)
        let b = try Account(scopeB, center: center)
        defer {
            a.server.stop()
            b.server.stop()
        }

        scopeA.postLogIn(credential: "tok-a", to: center)
        #expect(try await a.authorization() == "Bearer tok-a")
        #expect(try await b.authorization() == nil, "B follows no login of A")
        #expect(a.coordinator.current == "tok-a")
        #expect(b.coordinator.current == nil)

        scopeB.postLogIn(credential: "tok-b", to: center)
        #expect(try await a.authorization() == "Bearer tok-a", "A keeps its own credential")
        #expect(try await b.authorization() == "Bearer tok-b")
        #expect(b.coordinator.current == "tok-b")

        // B caches an answer fetched with its credential.
        #expect(try await b.cachedGet().isFromCache == false)
        #expect(try await b.cachedGet().isFromCache)

        scopeA.postLogOut(to: center)
        #expect(!a.client.isLoggedIn)
        #expect(a.coordinator.current == nil)
        #expect(try await a.authorization() == nil)
        #expect(b.client.isLoggedIn, "a logout for A leaves B logged in")
        #expect(b.coordinator.current == "tok-b")
        #expect(try await b.authorization() == "Bearer tok-b")
        #expect(try await b.cachedGet().isFromCache, "and keeps B's cached answers")

        scopeB.postLogOut(to: center)
        #expect(!b.client.isLoggedIn)
        #expect(try await b.cachedGet().isFromCache == false, "B's own logout purges them")
    }

    /// A sender object instead of a name: compared by identity, so another object of the same
    /// class, or a name, does not reach the client.
    @Test func anObjectScopeFollowsOnlyThatObject() async throws {
        final class Backend: Sendable {}
        let center = NotificationCenter()
        let backend = Backend()
        let scope = SessionScope(backend)
        let account = try Account(scope, center: center)
        defer { account.server.stop() }

        SessionScope(Backend()).postLogIn(credential: "other", to: center)
        SessionScope("backend").postLogIn(credential: "named", to: center)
        center.post(name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: "anyone"])
        #expect(!account.client.isLoggedIn)

        center.post(name: .courierUserDidLogIn, object: backend, userInfo: [CourierNotificationKey.credential: "mine"])
        #expect(try await account.authorization() == "Bearer mine")
        SessionScope(Backend()).postLogOut(to: center)
        #expect(account.client.isLoggedIn)
        scope.postLogOut(to: center)
        #expect(!account.client.isLoggedIn)
    }

    /// Without a scope a client follows every notification, scoped or not (today's behaviour).
    @Test func aClientWithoutAScopeFollowsEveryNotification() async throws {
        let center = NotificationCenter()
        let account = try Account(nil, center: center)
        defer { account.server.stop() }
        SessionScope("account-a").postLogIn(credential: "tok-a", to: center)
        #expect(try await account.authorization() == "Bearer tok-a")
        #expect(account.coordinator.current == "tok-a")
        center.post(name: .courierUserDidLogOut, object: nil)
        #expect(!account.client.isLoggedIn)
        #expect(account.coordinator.current == nil)
    }
}

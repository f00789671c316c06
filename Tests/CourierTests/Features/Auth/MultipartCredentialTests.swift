import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Issue 18 item 6: a credential of several values — user id, token, device id — sent in
/// several header fields and a query item, refreshed as one value, and covered by redaction,
/// credential scope, the request identity and the cache, like a token.
@Suite struct MultipartCredentialTests {
    struct Session: Sendable, Equatable {
        var userID: String
        var token: String
        var deviceID: String
        static func generation(_ n: Int) -> Session {
            Session(userID: "user-secret-\(n)", token: "tok-secret-\(n)", deviceID: "dev-secret-\(n)")
        }
    }

    static let userField = HTTPField.Name("X-User-Id")!

    static func interceptor(_ coordinator: AuthRefreshCoordinator<Session>) -> AuthenticationInterceptor<Session> {
        AuthenticationInterceptor(
            coordinator: coordinator,
            parts: [
                .header(.authorization) { "Bearer \($0.token)" },
                .header(userField) { $0.userID },
                .query("device") { $0.deviceID },
            ])
    }

    /// A service with the credential of generation 1 on a client whose cache follows the
    /// loopback server's caching headers.
    static func cachedService(
        _ server: TestServer, storage: HostScopedCache.Configuration.Storage = .memoryOnly,
        _ configure: (inout ServiceConfiguration) -> Void = { _ in }
    ) throws -> ServiceCore {
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: storage))
        let client = try HTTPClient(configuration: .init(baseURL: server.baseURL, cache: cache))
        let coordinator = AuthRefreshCoordinator<Session>(credential: .generation(1)) { _ in .generation(2) }
        var configuration = ServiceConfiguration(retryPolicy: .none, authentication: interceptor(coordinator))
        configure(&configuration)
        return ServiceCore(client: client, configuration: configuration)
    }

    /// The generation each part of a recorded request belongs to (nil for a missing part).
    static func generations(_ request: RecordedRequest) -> [Int?] {
        [
            request.header("Authorization").flatMap { Int($0.split(separator: "-").last ?? "") },
            request.header("X-User-Id").flatMap { Int($0.split(separator: "-").last ?? "") },
            request.queryValue("device").flatMap { Int($0.split(separator: "-").last ?? "") },
        ]
    }

    @Test func everyAttemptCarriesOneWholeCredentialAndARefreshReplacesAllParts() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/me") { request in
            Self.generations(request) == [2, 2, 2]
                ? .json(["id": 2, "name": "second"]) : .json(["error": "expired"], status: 401)
        }
        let refreshes = ServiceCounter()
        let coordinator = AuthRefreshCoordinator<Session>(credential: .generation(1)) { expired in
            refreshes.increment()
            #expect(expired == .generation(1))
            while server.count("/me") < 20 { await Task.yield() }
            return .generation(2)
        }
        let service = try ServiceFixture.service(server) { $0.authentication = Self.interceptor(coordinator) }
        let options = CallOptions.default.with(\.deduplicates, false)
        let attempts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<20 {
                group.addTask { try await service.send(Endpoint<ServiceUser>.get("me", options: options)).attempts }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(attempts == Array(repeating: 2, count: 20))
        #expect(refreshes.value == 1)
        let sent = server.recordedRequests(path: "/me").map(Self.generations)
        #expect(sent.count == 40)
        #expect(sent.allSatisfy { $0 == [1, 1, 1] || $0 == [2, 2, 2] }, "a request mixed parts: \(sent)")
        #expect(sent.filter { $0 == [2, 2, 2] }.count == 20)
        // The query item is replaced, never repeated, on the retry.
        #expect(server.recordedRequests(path: "/me").allSatisfy { $0.queryItems.count == 1 })
    }

    /// A service adapter that adds a query item after the credential's (a locale, a tenant)
    /// leaves the credential's item before it in the request as sent. The interceptor told the
    /// credential a 401 rejected by writing the current one into that request again, which
    /// moves the credential's item to the end: the request no longer looked the same, the 401
    /// was taken for one of an older credential, and the call was sent again with the same
    /// expired one until its attempts ran out. On the old code nothing was ever refreshed.
    @Test func aRejectedQueryCredentialIsRefreshedWhenAnAdapterAddsAQueryItemAfterIt() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/me") { request in
            Self.generations(request) == [2, 2, 2] && request.queryValue("lang") == "de"
                ? .json(["id": 2, "name": "second"]) : .json(["error": "expired"], status: 401)
        }
        let refreshes = ServiceCounter()
        let coordinator = AuthRefreshCoordinator<Session>(credential: .generation(1)) { _ in
            refreshes.increment()
            return .generation(2)
        }
        let locale = ClosureRequestAdapter { request, _ in
            var request = request
            request.appendQuery("lang=de")
            return request
        }
        let service = try ServiceFixture.service(server) {
            $0.authentication = Self.interceptor(coordinator)
            $0.adapters = [locale]
        }
        let user: ServiceUser = try await service.get("me")
        #expect(user.id == 2)
        #expect(refreshes.value == 1)
        #expect(server.recordedRequests(path: "/me").map(Self.generations) == [[1, 1, 1], [2, 2, 2]])
    }

    @Test func aTokenPairPastItsExpiryIsRefreshedOnceBeforeItIsSent() async throws {
        struct TokenPair: Sendable, Equatable {
            var access: String
            var refresh: String
            var expiry: Date
        }
        let server = try TestServer()
        defer { server.stop() }
        server.route("/me") { request in
            request.header("Authorization") == "Bearer a2" ? .json(["id": 2, "name": "two"]) : .status(401)
        }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let refreshes = ServiceCounter()
        let coordinator = AuthRefreshCoordinator<TokenPair>(
            credential: TokenPair(access: "a1", refresh: "r1", expiry: now - 1)
        ) { expired in
            refreshes.increment()
            #expect(expired.refresh == "r1")
            return TokenPair(access: "a2", refresh: "r2", expiry: now + 3600)
        }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.authentication = AuthenticationInterceptor(
                coordinator: coordinator, isExpired: { $0.expiry <= now },
                parts: [.header(.authorization) { "Bearer \($0.access)" }])
        }
        let options = CallOptions.default.with(\.deduplicates, false)
        let attempts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<5 {
                group.addTask { try await service.send(Endpoint<ServiceUser>.get("me", options: options)).attempts }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(attempts == Array(repeating: 1, count: 5))
        #expect(refreshes.value == 1)
        #expect(server.recordedRequests(path: "/me").allSatisfy { $0.header("Authorization") == "Bearer a2" })
        #expect(coordinator.current?.refresh == "r2")
    }

    @Test func partsStayOffOtherOriginsAndOutOfLogs() async throws {
        let server = try TestServer()
        let other = try TestServer()
        defer {
            server.stop()
            other.stop()
        }
        server.route("/me") { _ in .json(["id": 1, "name": "first"]) }
        other.route("/me") { _ in .json(["id": 9, "name": "elsewhere"]) }
        let logs = LogCapture()
        let coordinator = AuthRefreshCoordinator<Session>(credential: .generation(1)) { _ in .generation(2) }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.authentication = Self.interceptor(coordinator)
            configuration.monitors = [LoggingEventMonitor(logger: logs.logger)]
        }
        let _: ServiceUser = try await service.get("me")
        #expect(Self.generations(try #require(server.recordedRequests(path: "/me").last)) == [1, 1, 1])
        // Another origin named by a call gets no part.
        let elsewhere = try BaseURL(other.baseURL.absoluteString)
        let _: ServiceUser = try await service.get("me", options: .default.with(\.server, elsewhere.url))
        let foreign = try #require(other.recordedRequests(path: "/me").last)
        #expect(Self.generations(foreign) == [nil, nil, nil])
        // A redirect to another origin drops the header parts.
        let target = other.url("/echo").absoluteString
        let _: String = try await service.get(
            "redirect-to", parameters: ["url": target], serializer: .string)
        let hop = try #require(other.recordedRequests(path: "/echo").last)
        #expect(hop.header("Authorization") == nil && hop.header("X-User-Id") == nil)
        let lines = logs.lines
        #expect(lines.count >= 6)
        for line in lines {
            for secret in ["tok-secret-1", "user-secret-1", "dev-secret-1"] {
                #expect(!line.contains(secret), "leaked in: \(line)")
            }
        }
        #expect(lines.contains { $0.contains("X-User-Id: \(Redaction.marker)") })
        #expect(lines.contains { $0.contains("device=\(Redaction.marker)") })
    }

    @Test func everyPartIsInTheRequestIdentityAsADigest() throws {
        let server = try TestServer()
        defer { server.stop() }
        let coordinator = AuthRefreshCoordinator<Session>(credential: .generation(1)) { _ in .generation(2) }
        let service = try ServiceFixture.service(server) { $0.authentication = Self.interceptor(coordinator) }
        func key() throws -> String {
            try service.startCall(
                .get, "me", parameters: nil, body: nil, options: .default, acceptHeader: nil,
                responseType: ServiceUser.self, id: CallID.next(), scope: nil, keepsResponse: false
            ).identity.key
        }
        let first = try key()
        var session = Session.generation(1)
        session.deviceID = "dev-secret-other"
        coordinator.login(session)
        let otherDevice = try key()
        session = .generation(1)
        session.userID = "user-secret-other"
        coordinator.login(session)
        let otherUser = try key()
        #expect(Set([first, otherDevice, otherUser]).count == 3)
        for key in [first, otherDevice, otherUser] {
            #expect(!key.contains("secret"), "a credential value in the identity: \(key)")
        }
    }

    @Test func aQueryPartReachesTheDiskCacheOnlyAsADigest() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/me") { _ in
            ScriptedResponse.json(["id": 1, "name": "cached"]).with(.cacheControl, "max-age=600")
        }
        let directory = TemporaryDirectory()
        do {
            let service = try Self.cachedService(server, storage: .disk(directory: directory.path))
            let first = try await service.send(Endpoint<ServiceUser>.get("me"))
            let second = try await service.send(Endpoint<ServiceUser>.get("me"))
            #expect(!first.isFromCache && second.isFromCache)
            #expect(server.count("/me") == 1)
        }
        var bytes = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            bytes.append(try Data(contentsOf: URL(fileURLWithPath: directory.path + "/" + name)))
        }
        #expect(!bytes.isEmpty)
        for secret in ["tok-secret-1", "user-secret-1", "dev-secret-1"] {
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(secret) reached the disk")
        }
    }

    /// RFC 9111 §4.4: a PUT invalidates its URL. The entry of a URL that carries the query
    /// part is stored with the part's value as a keyed digest; the invalidation looked the URL
    /// up with the value in clear, found nothing, and the next GET served the answer from
    /// before the PUT.
    @Test func anUnsafeCallInvalidatesTheEntryOfAURLWithAQueryPart() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/me") { request in
            ScriptedResponse.json(["id": 1, "name": request.method == "PUT" ? "put" : "got"])
                .with(.cacheControl, "max-age=600")
        }
        let service = try Self.cachedService(server)
        let first = try await service.send(Endpoint<ServiceUser>.get("me"))
        #expect(try await service.send(Endpoint<ServiceUser>.get("me")).isFromCache)
        _ = try await service.send(Endpoint<ServiceUser>(.put, "me", body: ServiceUser(id: 1, name: "new")))
        let afterPut = try await service.send(Endpoint<ServiceUser>.get("me"))
        #expect(!first.isFromCache)
        #expect(!afterPut.isFromCache)
        #expect(server.count("/me") == 3)
    }

    /// A refused answer is dropped from the cache, which stored it before the check ran, so the
    /// next call asks the server. On a URL with the query part the drop looked the value up in
    /// clear, dropped nothing, and the next call got the refused answer from the cache again.
    @Test func aRefusedAnswerToAURLWithAQueryPartIsDroppedFromTheCache() async throws {
        let server = try TestServer()
        defer { server.stop() }
        ServiceHooksTests.answerBusyOnce(server, "/feed")
        let service = try Self.cachedService(server) { $0.pipeline.validator = ServiceHooksTests.statusCheck }
        await #expect(throws: CourierError.self) { try await service.send(Endpoint<ServiceUser>.get("feed")) }
        let response = try await service.send(Endpoint<ServiceUser>.get("feed"))
        #expect(response.value.name == "fresh")
        #expect(!response.isFromCache)
        #expect(server.count("/feed") == 2)
    }

    @Test func theSimpleTokenCaseIsUnchanged() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.validBearerTokens = ["fresh"]
        let coordinator = AuthRefreshCoordinator<String>(credential: "stale") { _ in "fresh" }
        let center = NotificationCenter()
        let service = try ServiceFixture.service(server, center: center) { $0.authentication = .bearer(coordinator) }
        struct Bearer: Decodable, Sendable { var authenticated: Bool }
        let answer = try await service.send(Endpoint<Bearer>.get("bearer"))
        #expect(answer.value.authenticated && answer.attempts == 2)
        // A multi-part credential logs in through the same notification, by its own type.
        let parts = AuthRefreshCoordinator<Session> { _ in .generation(3) }
        let partService = try ServiceFixture.service(server, center: center) {
            $0.authentication = Self.interceptor(parts)
        }
        center.post(
            name: .courierUserDidLogIn, object: nil,
            userInfo: [CourierNotificationKey.credential: Session.generation(5)])
        #expect(parts.current == .generation(5))
        #expect(coordinator.current == "fresh")
        center.post(name: .courierUserDidLogOut, object: nil)
        #expect(parts.current == nil && coordinator.current == nil)
        _ = partService
    }
}

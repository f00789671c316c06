import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// One user's cached answers never reach another, whatever field carries the credential, and
/// logout leaves nothing of the user in the cache: not what was stored before, not an answer
/// that arrives after. Against the loopback server, on both storage kinds.
@Suite struct CacheIsolationTests {
    static let apiKey = HTTPField.Name("X-Api-Key")!
    static let session = HTTPField.Name("X-Session")!

    /// A cache for the loopback host on `storage` (a fresh folder for `.disk`).
    final class Fixture {
        let server: TestServer
        let directory = TemporaryDirectory()
        let cache: HostScopedCache

        init(onDisk: Bool) throws {
            server = try TestServer()
            // The answer says whose it is, by whichever credential the request carried.
            server.route("/me") { request in
                let who =
                    request.header("X-Api-Key") ?? request.header("X-Session") ?? request.header("Authorization")
                    ?? request.header("Cookie") ?? "anonymous"
                return .text("user " + who).with(.cacheControl, "max-age=600")
            }
            cache = try HostScopedCache(
                configuration: .init(
                    rules: [CacheRule("127.0.0.1", .followHTTP)],
                    storage: onDisk ? .disk(directory: directory.path + "/cache") : .memoryOnly))
        }

        func client(_ configure: (inout HTTPClient.Configuration) -> Void = { _ in }) throws -> HTTPClient {
            try makeClient {
                $0.baseURL = server.baseURL
                $0.cache = cache
                configure(&$0)
            }
        }

        deinit { server.stop() }
    }

    static func me(_ headers: HTTPFields = [:]) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/me", headerFields: headers)
    }

    static func body(_ response: HTTPClient.Response) -> String { String(decoding: response.body, as: UTF8.self) }

    /// Whether the cache holds an entry `request` may be answered with (asks it cache-only, so
    /// nothing is sent).
    static func isCached(_ client: HTTPClient, _ request: HTTPRequest = me()) async throws -> Bool {
        var options = CallOptions()
        options.cachePolicy = .returnCacheDataDontLoad
        do {
            return try await client.send(request, options: options).isFromCache
        } catch let error as CourierError where error.code == .notCached {
            return false
        }
    }

    // MARK: - A custom credential header

    /// Broken on the old main: the identity knew only Authorization, Cookie and
    /// Proxy-Authorization, so B was served A's answer.
    @Test(arguments: [false, true])
    func theNextUserOfACustomKeyHeaderNeverGetsThePreviousUsersAnswer(onDisk: Bool) async throws {
        let fixture = try Fixture(onDisk: onDisk)
        let client = try fixture.client {
            $0.authorization = .custom { [HTTPField(name: Self.apiKey, value: $0)] }
        }
        try client.logIn(credential: "key-A")
        #expect(Self.body(try await client.send(Self.me())) == "user key-A")
        #expect(try await client.send(Self.me()).isFromCache)
        client.logOut()
        try client.logIn(credential: "key-B")
        let second = try await client.send(Self.me())
        #expect(!second.isFromCache)
        #expect(Self.body(second) == "user key-B")
        #expect(fixture.server.recordedRequests(path: "/me").count == 2)
    }

    /// Two clients on one cache, each with its own key, at the same time.
    @Test func twoKeysOnOneCacheKeepTheirOwnAnswers() async throws {
        let fixture = try Fixture(onDisk: false)
        let alice = try fixture.client { $0.authorization = .custom { [HTTPField(name: Self.apiKey, value: $0)] } }
        let bob = try fixture.client { $0.authorization = .custom { [HTTPField(name: Self.apiKey, value: $0)] } }
        try alice.logIn(credential: "alice")
        try bob.logIn(credential: "bob")
        #expect(Self.body(try await alice.send(Self.me())) == "user alice")
        let bobs = try await bob.send(Self.me())
        #expect(!bobs.isFromCache)
        #expect(Self.body(bobs) == "user bob")
        #expect(Self.body(try await alice.send(Self.me())) == "user alice")
    }

    /// Broken on the old main: a response that varied on a custom key header stored the key's
    /// value in clear text as its secondary key.
    @Test func aVaryingCustomKeyNeverReachesTheDiskInClearText() async throws {
        let fixture = try Fixture(onDisk: true)
        // The answer does not echo the key: only what the cache itself writes is looked at.
        fixture.server.route("/varies") { request in
            .text(request.header("X-Api-Key") == nil ? "nobody" : "somebody").with(.cacheControl, "max-age=600")
                .with(.vary, "X-Api-Key")
        }
        let secret = "k3y-V4LUE-in-the-clear"
        do {
            let client = try fixture.client { $0.authorization = .custom { [HTTPField(name: Self.apiKey, value: $0)] } }
            try client.logIn(credential: secret)
            let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/varies")
            _ = try await client.send(request)
            #expect(try await client.send(request).isFromCache)
        }
        var bytes = Data()
        let folder = fixture.directory.path + "/cache"
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            bytes.append(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name)))
        }
        #expect(!bytes.isEmpty)
        #expect(bytes.range(of: Data(secret.utf8)) == nil)
    }

    /// Two values of a header the answer varies on that Swift's `==` takes for equal
    /// (canonically equivalent Unicode: `é` composed and decomposed, `K` and KELVIN SIGN) are
    /// two values on the wire, and the server answers each its own way: the second request is
    /// not served the first one's answer, and each keeps its own entry.
    @Test(arguments: [false, true], [("caf\u{E9}", "cafe\u{301}"), ("K", "\u{212A}")])
    func aVaryVariantIsMatchedByBytesNotByUnicodeEquivalence(onDisk: Bool, values: (String, String)) async throws {
        let fixture = try Fixture(onDisk: onDisk)
        let name = HTTPField.Name("X-Name")!
        fixture.server.route("/greet") { request in
            .text("hello " + (request.header("X-Name") ?? "nobody")).with(.cacheControl, "max-age=600")
                .with(.vary, "X-Name")
        }
        let (one, two) = values
        #expect(one == two)
        #expect(Array(one.utf8) != Array(two.utf8))
        let client = try fixture.client()
        func greet(_ value: String) -> HTTPRequest {
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/greet", headerFields: [name: value])
        }
        #expect(Array(Self.body(try await client.send(greet(one))).utf8) == Array(("hello " + one).utf8))
        let second = try await client.send(greet(two))
        #expect(!second.isFromCache)
        #expect(Array(Self.body(second).utf8) == Array(("hello " + two).utf8))
        #expect(fixture.server.recordedRequests(path: "/greet").count == 2)
        // Each value keeps its own entry: neither replaced the other.
        let again = try await client.send(greet(one))
        #expect(again.isFromCache)
        #expect(Array(Self.body(again).utf8) == Array(("hello " + one).utf8))
        #expect(try await client.send(greet(two)).isFromCache)
        #expect(fixture.server.recordedRequests(path: "/greet").count == 2)
    }

    /// A request a client sends directly may carry bytes past ASCII in its target: two targets
    /// Swift's `==` takes for equal (canonically equivalent Unicode) are two URLs on the wire,
    /// and the second is not served the first one's cached answer.
    @Test(arguments: [false, true], [("caf\u{E9}", "cafe\u{301}"), ("K", "\u{212A}")])
    func aTargetIsMatchedByBytesNotByUnicodeEquivalence(onDisk: Bool, values: (String, String)) async throws {
        let fixture = try Fixture(onDisk: onDisk)
        fixture.server.route("/greet") { request in
            .text("hello " + request.target).with(.cacheControl, "max-age=600")
        }
        let (one, two) = values
        let client = try fixture.client()
        func greet(_ value: String) -> HTTPRequest {
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/greet?name=" + value)
        }
        let first = Self.body(try await client.send(greet(one)))
        let second = try await client.send(greet(two))
        #expect(!second.isFromCache)
        #expect(Array(Self.body(second).utf8) != Array(first.utf8))
        #expect(fixture.server.recordedRequests(path: "/greet").count == 2)
        let again = try await client.send(greet(one))
        #expect(again.isFromCache)
        #expect(Array(Self.body(again).utf8) == Array(first.utf8))
    }

    // MARK: - Logout purges every credential kind

    enum Kind: String, CaseIterable, Sendable {
        case bearer, customHeader, cookie, sensitiveHeader
    }

    /// Broken on the old main for all but `bearer`: logout purged only the identity of the
    /// `Authorization` it built, so entries fetched with a custom key, a cookie or a sensitive
    /// header stayed, ready for the next user with a matching (or no) credential.
    @Test(arguments: Kind.allCases, [false, true])
    func logOutPurgesTheSessionsEntries(kind: Kind, onDisk: Bool) async throws {
        let fixture = try Fixture(onDisk: onDisk)
        let client = try fixture.client {
            $0.sensitiveHeaderNames = [Self.session]
            if kind == .customHeader { $0.authorization = .custom { [HTTPField(name: Self.apiKey, value: $0)] } }
        }
        var headers = HTTPFields()
        switch kind {
        case .bearer, .customHeader: try client.logIn(credential: "token-1")
        case .cookie: headers[.cookie] = "sid=cookie-1"
        case .sensitiveHeader: headers[Self.session] = "session-1"
        }
        _ = try await client.send(Self.me(headers))
        #expect(try await Self.isCached(client, Self.me(headers)))
        client.logOut()
        if kind == .bearer || kind == .customHeader { try client.logIn(credential: "token-1") }
        #expect(try await !Self.isCached(client, Self.me(headers)))
        // And with no credential at all, nobody's answer.
        client.logOut()
        #expect(try await !Self.isCached(client, Self.me()))
    }

    /// Logout keeps what is not the user's: anonymous entries, and entries of another client's
    /// user on the same cache.
    @Test func logOutKeepsAnonymousAndOtherUsersEntries() async throws {
        let fixture = try Fixture(onDisk: true)
        let alice = try fixture.client()
        let bob = try fixture.client()
        let anonymous = try fixture.client()
        try alice.logIn(credential: "alice")
        try bob.logIn(credential: "bob")
        _ = try await alice.send(Self.me())
        _ = try await bob.send(Self.me())
        _ = try await anonymous.send(Self.me())
        alice.logOut()
        #expect(try await Self.isCached(bob))
        #expect(try await Self.isCached(anonymous))
        try alice.logIn(credential: "alice")
        #expect(try await !Self.isCached(alice))
    }

    // MARK: - An answer that arrives after logout

    /// Broken on the old main: the response to a request sent before logout was stored when it
    /// arrived, after the purge, so the logged-out user's answer stayed in the cache.
    @Test(arguments: [false, true])
    func anAnswerArrivingAfterLogOutStoresNothing(onDisk: Bool) async throws {
        let fixture = try Fixture(onDisk: onDisk)
        let arrived = Signal()
        let release = DispatchSemaphore(value: 0)
        fixture.server.route("/held") { request in
            arrived.fire()
            release.wait()
            return .text("held for " + (request.header("Authorization") ?? "-")).with(.cacheControl, "max-age=600")
        }
        let client = try fixture.client()
        try client.logIn(credential: "alice")
        let held = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/held")
        let inFlight = Task { try await client.send(held) }
        await arrived.wait()
        client.logOut()
        release.signal()
        let late = try await inFlight.value
        #expect(Self.body(late) == "held for Bearer alice")
        #expect(!late.isFromCache)
        // The same user back: the late answer was not kept.
        try client.logIn(credential: "alice")
        #expect(try await !Self.isCached(client, held))
        // Control: the same exchange without a logout in between is stored.
        release.signal()
        _ = try await client.send(held)
        #expect(try await Self.isCached(client, held))
    }

    /// A 304 that arrives after logout does not bring the purged entry back.
    @Test func aRevalidationArrivingAfterLogOutStoresNothing() async throws {
        let fixture = try Fixture(onDisk: false)
        let arrived = Signal()
        let release = DispatchSemaphore(value: 0)
        let requests = LockedValue(0)
        fixture.server.route("/validated") { request in
            let number = requests.withLock { count in
                count += 1
                return count
            }
            if number == 2 {
                arrived.fire()
                release.wait()
            }
            if request.header("If-None-Match") == "\"v1\"" {
                return ScriptedResponse.status(304).with(.eTag, "\"v1\"").with(.cacheControl, "max-age=600")
            }
            return .text("validated").with(.eTag, "\"v1\"").with(.cacheControl, "no-cache")
        }
        let client = try fixture.client()
        try client.logIn(credential: "alice")
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/validated")
        _ = try await client.send(request)
        let inFlight = Task { try await client.send(request) }
        await arrived.wait()
        client.logOut()
        release.signal()
        let late = try await inFlight.value
        #expect(late.status.code == 200)
        try client.logIn(credential: "alice")
        #expect(try await !Self.isCached(client, request))
    }

    // MARK: - The service paths

    struct Me: Decodable, Sendable {
        var user: String
    }

    /// `APIService.logOut()` and the logout notification (SessionObserver) purge a custom-key
    /// user's entries. Broken on the old main (the custom key was no identity).
    @Test(arguments: [false, true])
    func serviceLogOutAndTheLogoutNotificationPurge(byNotification: Bool) async throws {
        let fixture = try Fixture(onDisk: true)
        fixture.server.route("/me.json") { request in
            .json(["user": request.header("X-Api-Key") ?? "anonymous"]).with(.cacheControl, "max-age=600")
        }
        let center = NotificationCenter()
        let client = try fixture.client {
            $0.authorization = .custom { [HTTPField(name: Self.apiKey, value: $0)] }
            $0.notificationCenter = center
        }
        let service = ServiceCore(client: client, configuration: ServiceConfiguration(cookieJar: CookieJar()))
        try service.logIn(credential: "key-A")
        #expect(try await service.get("me.json", as: Me.self).user == "key-A")
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/me.json")
        #expect(try await Self.isCached(client, request))
        if byNotification {
            center.post(name: .courierUserDidLogOut, object: nil)
        } else {
            service.logOut()
        }
        #expect(!client.isLoggedIn)
        try client.logIn(credential: "key-A")
        #expect(try await !Self.isCached(client, request))
        try service.logIn(credential: "key-B")
        #expect(try await service.get("me.json", as: Me.self).user == "key-B")
    }

    /// A service whose authentication interceptor writes its own header (`X-Session`, as in
    /// Docs/Authentication.md): the header keys the identity, so the next user never gets the
    /// previous user's answer and logout purges it. Broken on the old main (anonymous entry).
    @Test func anInterceptorsCustomHeaderKeysTheIdentity() async throws {
        let fixture = try Fixture(onDisk: false)
        fixture.server.route("/me.json") { request in
            .json(["user": request.header("X-Session") ?? "anonymous"]).with(.cacheControl, "max-age=600")
        }
        let coordinator = AuthRefreshCoordinator<String> { _ in throw CourierError(.authentication, "no refresh") }
        let signed = AuthenticationInterceptor(coordinator: coordinator) { token, request in
            request.headerFields[Self.session] = token
        }
        let client = try fixture.client { $0.sensitiveHeaderNames.insert(Self.session) }
        let service = ServiceCore(client: client, configuration: ServiceConfiguration(authentication: signed))
        // Logged in through the coordinator only: the client adds no header of its own.
        coordinator.login("session-A")
        #expect(try await service.get("me.json", as: Me.self).user == "session-A")
        let request = HTTPRequest(
            method: .get, scheme: nil, authority: nil, path: "/me.json", headerFields: [Self.session: "session-A"])
        var options = CallOptions()
        options.cachePolicy = .returnCacheDataDontLoad
        #expect(try await client.send(request, options: options).isFromCache)
        service.logOut()
        await #expect(throws: CourierError.self) { try await client.send(request, options: options) }
        coordinator.login("session-B")
        #expect(try await service.get("me.json", as: Me.self).user == "session-B")
    }

    /// An answer that sets a cookie, to a request that carried no credential, starts a session
    /// for whoever asked. Stored under the anonymous identity, it went to the next caller
    /// without a credential on the same cache (another client, another user): with the first
    /// caller's session in its body, and no cookie of its own.
    @Test(arguments: [false, true])
    func anAnswerThatStartsASessionIsNotServedToTheNextAnonymousCaller(onDisk: Bool) async throws {
        let fixture = try Fixture(onDisk: onDisk)
        let sessions = LockedValue(0)
        fixture.server.route("/start") { _ in
            let number = sessions.withLock { count -> Int in
                count += 1
                return count
            }
            return .text("session \(number)").with(.cacheControl, "max-age=600").with(.setCookie, "sid=\(number)")
        }
        let alice = try fixture.client { $0.cookieJar = CookieJar() }
        let bob = try fixture.client { $0.cookieJar = CookieJar() }
        let start = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/start")
        #expect(Self.body(try await alice.send(start)) == "session 1")
        let bobs = try await bob.send(start)
        #expect(!bobs.isFromCache)
        #expect(Self.body(bobs) == "session 2")
        #expect(bob.cookieJar?.all.map(\.value) == ["2"])
        #expect(alice.cookieJar?.all.map(\.value) == ["1"])
    }
}

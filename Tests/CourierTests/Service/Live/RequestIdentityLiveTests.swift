import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// One identity per call decides de-duplication, the request interval and the double-tap veto
/// (issue 16 item 4, issue 17 items 1 and 2), against a loopback server.
@Suite struct RequestIdentityLiveTests {
    static let apiKey = HTTPField.Name("X-Api-Key")!

    /// A route that holds each request until released and echoes its credential headers.
    static func heldEcho(_ server: TestServer, _ path: String) -> HeldRoute {
        let held = HeldRoute()
        server.route(path) { request in
            held.hold()
            let who = request.header("X-Api-Key") ?? request.header("Authorization") ?? "nobody"
            return .json(["id": 1, "name": who])
        }
        return held
    }

    @Test(arguments: ["X-Api-Key", "Authorization"])
    func getsThatDifferOnlyInAPerCallCredentialAreNotShared(header: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = Self.heldEcho(server, "/me")
        let client = try HTTPClient(
            configuration: HTTPClient.Configuration(
                baseURL: server.baseURL, timeout: .seconds(600), stallTimeout: .seconds(600),
                authorization: .custom { [HTTPField(name: Self.apiKey, value: $0)] }, notificationCenter: .init()))
        let service = ServiceCore(client: client)
        let name = HTTPField.Name(header)!
        func call(_ credential: String) async throws -> ServiceUser {
            try await service.get("me", options: .default.with(\.headers, [name: credential]))
        }
        async let alice = call("alice-credential")
        async let bob = call("bob-credential")
        let dedup = service.configuration.deduplicator
        while held.arrived.value < 2 && dedup.waiterCount < 2 { await Task.yield() }
        held.release(2)
        let (a, b) = try await (alice, bob)
        #expect(a.name == "alice-credential")
        #expect(b.name == "bob-credential")
        #expect(server.count("/me") == 2)
    }

    /// Two header values Swift's `==` takes for equal (canonically equivalent Unicode) are two
    /// values on the wire, and the server may answer each its own way: the calls are not shared.
    @Test func getsWhoseHeadersDifferOnlyInUnicodeNormalizationAreNotShared() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.route("/names") { request in
            held.hold()
            return .json(["id": 1, "name": request.header("X-Name") ?? "none"])
        }
        let service = try ServiceFixture.service(server)
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed)
        let name = HTTPField.Name("X-Name")!
        func call(_ value: String) async throws -> ServiceUser {
            try await service.get("names", options: .default.with(\.headers, [name: value]))
        }
        async let one = call(composed)
        while held.arrived.value < 1 { await Task.yield() }
        async let two = call(decomposed)
        let dedup = service.configuration.deduplicator
        while held.arrived.value < 2 && dedup.waiterCount < 2 { await Task.yield() }
        held.release(2)
        let (a, b) = try await (one, two)
        #expect(Array(a.name.utf8) == Array(composed.utf8))
        #expect(Array(b.name.utf8) == Array(decomposed.utf8))
        #expect(server.count("/names") == 2)
    }

    /// `Accept-Language: de` then `fr` prefers German, `fr` then `de` French: two GETs that
    /// send the same values in another order are two requests. On the old code the identity
    /// sorted the values, and the second call got the first one's answer.
    @Test func getsWhoseRepeatedFieldsComeInAnotherOrderAreNotShared() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.route("/greeting") { request in
            held.hold()
            return .json(["id": 1, "name": request.header("Accept-Language") ?? "none"])
        }
        let service = try ServiceFixture.service(server)
        func call(_ first: String, _ second: String) async throws -> ServiceUser {
            try await service.get(
                "greeting", options: .default.with(\.headers, [.acceptLanguage: first, .acceptLanguage: second]))
        }
        async let one = call("de", "fr")
        while held.arrived.value < 1 { await Task.yield() }
        async let two = call("fr", "de")
        let dedup = service.configuration.deduplicator
        while held.arrived.value < 2 && dedup.waiterCount < 2 { await Task.yield() }
        held.release(2)
        let (a, b) = try await (one, two)
        #expect(a.name == "de, fr")
        #expect(b.name == "fr, de")
        #expect(server.count("/greeting") == 2)
    }

    /// Two clients (an `Accept-Language` each) share one `ServiceConfiguration`, and so its
    /// de-duplicator: an identical GET from the second client must not join the first's.
    /// (Found by the red-team review: the `de` client received the `fr` client's answer.)
    @Test func getsOfTwoClientsSharingOneConfigurationAreNotShared() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.route("/hello") { request in
            held.hold()
            return .json(["id": 1, "name": "lang " + (request.header("Accept-Language") ?? "none")])
        }
        func client(_ language: String) throws -> HTTPClient {
            try HTTPClient(
                configuration: HTTPClient.Configuration(
                    baseURL: server.baseURL, timeout: .seconds(600), stallTimeout: .seconds(600),
                    defaultHeaders: [.acceptLanguage: language], notificationCenter: .init()))
        }
        let shared = ServiceConfiguration()
        let french = ServiceCore(client: try client("fr"), configuration: shared)
        let german = ServiceCore(client: try client("de"), configuration: shared)
        async let fr: ServiceUser = french.get("hello")
        while held.arrived.value < 1 { await Task.yield() }
        async let de: ServiceUser = german.get("hello")
        // Either the second request reaches the server, or (the bug) it waits on the first.
        while held.arrived.value < 2 && shared.deduplicator.waiterCount < 2 { await Task.yield() }
        held.release(2)
        let (a, b) = try await (fr, de)
        #expect(a.name == "lang fr")
        #expect(b.name == "lang de")
        #expect(server.count("/hello") == 2)
    }

    @Test func getsOfTwoLoggedInUsersAreNotShared() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = Self.heldEcho(server, "/me")
        let service = try ServiceFixture.service(server)
        try service.client.logIn(credential: "alice")
        async let alice: ServiceUser = service.get("me")
        while held.arrived.value < 1 { await Task.yield() }
        // The user changes while the first call is in flight: the second call is another
        // user's and must not join the first.
        try service.client.logIn(credential: "bob")
        async let bob: ServiceUser = service.get("me")
        let dedup = service.configuration.deduplicator
        while held.arrived.value < 2 && dedup.waiterCount < 2 { await Task.yield() }
        held.release(2)
        let (a, b) = try await (alice, bob)
        #expect(a.name == "Bearer alice")
        #expect(b.name == "Bearer bob")
    }

    /// Two overlapping GETs of `path`, which the server holds and answers with the value of
    /// their `header` as the name: the second is made once the first has arrived, and both are
    /// released once the second has arrived too, or joined the first's transfer.
    /// - Returns: the names the first and the second call got.
    private static func overlappingGets(
        on server: TestServer, _ path: String, echoing header: String,
        deduplicator: InFlightDeduplicator<HTTPClient.Response>,
        _ first: @escaping @Sendable () async throws -> ServiceUser,
        _ second: @escaping @Sendable () async throws -> ServiceUser
    ) async throws -> (first: String, second: String) {
        let held = HeldRoute()
        server.route(path) { request in
            held.hold()
            return .json(["id": 1, "name": request.header(header) ?? "none"])
        }
        let one = Task { try await first() }
        while held.arrived.value < 1 { await Task.yield() }
        let two = Task { try await second() }
        while held.arrived.value < 2 && deduplicator.waiterCount < 2 { await Task.yield() }
        held.release(2)
        return (try await one.value.name, try await two.value.name)
    }

    /// Alice's and Bob's services on one client, made from copies of one configuration (and so
    /// sharing its de-duplicator), each copy set up by `configure` for its user.
    private static func servicesOfTwoUsers(
        _ server: TestServer, configure: (inout ServiceConfiguration, String) -> Void
    ) throws -> (alice: ServiceCore, bob: ServiceCore, deduplicator: InFlightDeduplicator<HTTPClient.Response>) {
        let client = try ServiceFixture.client(server)
        let shared = ServiceConfiguration()
        func service(_ user: String) -> ServiceCore {
            var configuration = shared
            configure(&configuration, user)
            return ServiceCore(client: client, configuration: configuration)
        }
        return (service("alice"), service("bob"), shared.deduplicator)
    }

    /// An adapter that sets `header` to `value`.
    private static func adapter(setting header: String, to value: String) -> any RequestAdapter {
        .adapter { request, _ in
            var request = request
            request.head.headerFields[HTTPField.Name(header)!] = value
            return request
        }
    }

    /// Two services on one client and one configuration, each with its user's cookie jar: a
    /// GET whose first URL gets no cookie from either jar was shared, though the redirect it
    /// follows is sent with the first service's jar (a session cookie for `/private` only), so
    /// the second user received the first user's answer.
    @Test func getsOfServicesWithTheirOwnCookieJarsAreNotShared() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/start") { _ in .redirect(to: "/private/me") }
        let login = HTTPRequest(
            method: .post, scheme: "http", authority: "\(server.baseURL.host!):\(server.port)", path: "/private/login")
        let (alice, bob, deduplicator) = try Self.servicesOfTwoUsers(server) { configuration, user in
            let jar = CookieJar()
            var answer = HTTPResponse(status: .ok)
            answer.headerFields[.setCookie] = "sid=\(user); Path=/private"
            jar.store(from: answer, for: login)
            configuration.cookieJar = jar
        }
        let names = try await Self.overlappingGets(
            on: server, "/private/me", echoing: "Cookie", deduplicator: deduplicator, { try await alice.get("start") },
            { try await bob.get("start") })
        #expect(names.first == "sid=alice")
        #expect(names.second == "sid=bob")
        #expect(server.count("/private/me") == 2)
    }

    /// A call's own adapters decorate its request alone: two GETs, each with an adapter adding
    /// its tenant, were shared, and the second got the answer to the first's tenant.
    @Test func getsWithAdaptersOfTheirOwnAreNotShared() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server)
        let one = CallOptions.default.with(\.adapters, [Self.adapter(setting: "X-Tenant", to: "one")])
        let two = CallOptions.default.with(\.adapters, [Self.adapter(setting: "X-Tenant", to: "two")])
        let names = try await Self.overlappingGets(
            on: server, "/tenant", echoing: "X-Tenant", deduplicator: service.configuration.deduplicator,
            { try await service.get("tenant", options: one) }, { try await service.get("tenant", options: two) })
        #expect(names.first == "one")
        #expect(names.second == "two")
    }

    /// Two services on one configuration, each signing with its user's key (`X-Key-Id`) or
    /// with an adapter adding its user's header (`X-User`): a GET of the second joined the
    /// first's transfer, sent with the first user's key or header.
    @Test(arguments: ["X-Key-Id", "X-User"])
    func getsOfServicesSigningOrAdaptingForTheirUserAreNotShared(header: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (alice, bob, deduplicator) = try Self.servicesOfTwoUsers(server) { configuration, user in
            if header == "X-Key-Id" {
                configuration.signer = RequestSigner(key: .init(id: user, secret: Data(user.utf8)))
            } else {
                configuration.adapters = [Self.adapter(setting: header, to: user)]
            }
        }
        let names = try await Self.overlappingGets(
            on: server, "/mine", echoing: header, deduplicator: deduplicator, { try await alice.get("mine") },
            { try await bob.get("mine") })
        #expect(names.first == "alice")
        #expect(names.second == "bob")
    }

    /// A service's adapter that decorates each call from its `userInfo` (a tenant, as
    /// `UserInfo` is documented for): two GETs of one service with other tenants were shared
    /// (the identity cannot see `userInfo`), and the second got the first tenant's answer.
    @Test func getsWhoseServiceAdapterReadsTheirUserInfoAreNotShared() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let tenant: UserInfoKey = "test.tenant"
        let service = try Self.tenantService(server, tenant)
        let one = CallOptions.default.with(\.userInfo, [tenant: "one"])
        let two = CallOptions.default.with(\.userInfo, [tenant: "two"])
        let names = try await Self.overlappingGets(
            on: server, "/tenant", echoing: "X-Tenant", deduplicator: service.configuration.deduplicator,
            { try await service.get("tenant", options: one) }, { try await service.get("tenant", options: two) })
        #expect(names.first == "one")
        #expect(names.second == "two")
    }

    /// A service's own `CredentialAuthentication` (not an `AuthenticationInterceptor`) that
    /// writes each call's tenant's credential from its `userInfo`: an adapter of the call like
    /// the service's adapters, so a call with a tenant sends its own request and its interval
    /// is its tenant's. On the old code only `adapters` counted: the second tenant's GET joined
    /// the first one's transfer and got the first tenant's answer, and the first tenant's
    /// interval refused the second tenant's call.
    struct TenantAuthentication: CredentialAuthentication {
        let tenant: UserInfoKey

        func adapt(_ request: PreparedRequest, context: InterceptorContext) async throws -> PreparedRequest {
            var request = request
            request.head.headerFields[.authorization] = "Bearer " + (context.userInfo[tenant] as? String ?? "none")
            return request
        }

        func retry(_ request: PreparedRequest, failure: AttemptFailure, context: InterceptorContext) async
            -> RetryVerdict
        { .doNotRetry }
    }

    @Test func getsWhoseOwnAuthenticationReadsTheirUserInfoAreNotShared() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let tenant: UserInfoKey = "test.tenant"
        let service = try ServiceFixture.service(server) {
            $0.authentication = TenantAuthentication(tenant: tenant)
        }
        let one = CallOptions.default.with(\.userInfo, [tenant: "one"])
        let two = CallOptions.default.with(\.userInfo, [tenant: "two"])
        let names = try await Self.overlappingGets(
            on: server, "/tenant", echoing: "Authorization", deduplicator: service.configuration.deduplicator,
            { try await service.get("tenant", options: one) }, { try await service.get("tenant", options: two) })
        #expect(names.first == "Bearer one")
        #expect(names.second == "Bearer two")
        // The interval of one tenant does not hold back the other's call.
        server.route("/feed") { request in .json(["id": 1, "name": request.header("Authorization") ?? "none"]) }
        let spaced = { (name: String) in
            CallOptions.default.with(\.userInfo, [tenant: name]).with(\.interval, .drop(.seconds(60)))
        }
        let first: ServiceUser = try await service.get("feed", options: spaced("one"))
        let second: ServiceUser = try await service.get("feed", options: spaced("two"))
        #expect([first.name, second.name] == ["Bearer one", "Bearer two"])
    }

    /// A `CredentialAuthentication` of the app's own that sends its user's token.
    struct UserAuthentication: CredentialAuthentication {
        let user: String

        func adapt(_ request: PreparedRequest, context: InterceptorContext) async throws -> PreparedRequest {
            var request = request
            request.head.headerFields[.authorization] = "Bearer " + user
            return request
        }

        func retry(_ request: PreparedRequest, failure: AttemptFailure, context: InterceptorContext) async
            -> RetryVerdict
        { .doNotRetry }
    }

    /// Two services on one configuration, each with an authentication of the app's own for its
    /// user: the identity cannot see what it writes. On the old code a GET of the second joined
    /// the first's transfer, sent with the first user's token, and got the first user's answer.
    @Test func getsOfServicesWithTheirOwnAuthenticationAreNotShared() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (alice, bob, deduplicator) = try Self.servicesOfTwoUsers(server) { configuration, user in
            configuration.authentication = UserAuthentication(user: user)
        }
        let names = try await Self.overlappingGets(
            on: server, "/mine", echoing: "Authorization", deduplicator: deduplicator,
            { try await alice.get("mine") }, { try await bob.get("mine") })
        #expect(names.first == "Bearer alice")
        #expect(names.second == "Bearer bob")
    }

    /// A `CredentialAuthentication` of the app's own that sends the token of whoever is logged
    /// in now (the app's own session store, which Courier never sees).
    struct CurrentUserAuthentication: CredentialAuthentication {
        let user: CurrentUser

        func adapt(_ request: PreparedRequest, context: InterceptorContext) async throws -> PreparedRequest {
            var request = request
            request.head.headerFields[.authorization] = "Bearer " + user.name
            return request
        }

        func retry(_ request: PreparedRequest, failure: AttemptFailure, context: InterceptorContext) async
            -> RetryVerdict
        { .doNotRetry }
    }

    /// The app's own record of who is logged in.
    final class CurrentUser: Sendable {
        private let current: LockedValue<String>
        init(_ name: String) { current = LockedValue(name) }
        var name: String {
            get { current.withLock { $0 } }
            set { current.withLock { $0 = newValue } }
        }
    }

    /// A service whose own authentication (or, without one, adapter) writes `user`'s token.
    static func currentUserService(_ server: TestServer, _ user: CurrentUser, authenticates: Bool) throws
        -> ServiceCore
    {
        try ServiceFixture.service(server) { configuration in
            if authenticates {
                configuration.authentication = CurrentUserAuthentication(user: user)
            } else {
                configuration.adapters = [
                    .adapter { request, _ in
                        var request = request
                        request.head.headerFields[.authorization] = "Bearer " + user.name
                        return request
                    }
                ]
            }
        }
    }

    /// Two taps (`skipsWhileInFlight`) of `/posts/7/like`: `first` held at the server, then,
    /// after `meanwhile`, `second`, which either reaches the server or is skipped at once.
    /// - Returns: the `Authorization` each sent, as the server echoes it.
    static func overlappingTaps(
        on server: TestServer, first: @escaping @Sendable (CallOptions) async throws -> ServiceUser,
        meanwhile: (CallOptions) async -> Void = { _ in },
        second: @escaping @Sendable (CallOptions) async throws -> ServiceUser
    ) async throws -> (first: String, second: String) {
        let held = HeldRoute()
        server.route("POST", "/posts/7/like") { request in
            held.hold()
            return .json(["id": 7, "name": request.header("Authorization") ?? "none"])
        }
        let guarded = CallOptions.default.with(\.skipsWhileInFlight, true)
        let tap = Task { () async throws -> ServiceUser in try await first(guarded) }
        while held.arrived.value == 0 { await Task.yield() }
        await meanwhile(guarded)
        // The second tap either reaches the server or is skipped at once: wait for one of the two.
        let otherEnded = LockedValue(false)
        let other = Task { () async throws -> ServiceUser in
            defer { otherEnded.withLock { $0 = true } }
            return try await second(guarded)
        }
        while held.arrived.value < 2 && !otherEnded.withLock({ $0 }) { await Task.yield() }
        held.release(2)
        return (try await tap.value.name, try await other.value.name)
    }

    /// One service whose own authentication (or adapter) writes the app's current user: Alice
    /// logs out and Bob logs in while Alice's GET is in flight, and Bob's GET of the same
    /// endpoint is sent with his token. On the old code the sharing key held the service, not
    /// what its adapters wrote: Bob's GET joined Alice's transfer and got Alice's answer.
    @Test(arguments: [true, false])
    func aGetAfterTheAppsOwnLogInDoesNotJoinThePreviousUsersTransfer(authenticates: Bool) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let user = CurrentUser("alice")
        let service = try Self.currentUserService(server, user, authenticates: authenticates)
        let held = Self.heldEcho(server, "/mine")
        let alice = Task { () async throws -> ServiceUser in try await service.get("mine") }
        while held.arrived.value < 1 { await Task.yield() }
        user.name = "bob"
        let bob = Task { () async throws -> ServiceUser in try await service.get("mine") }
        let deduplicator = service.configuration.deduplicator
        while held.arrived.value < 2 && deduplicator.waiterCount < 2 { await Task.yield() }
        held.release(2)
        #expect(try await alice.value.name == "Bearer alice")
        #expect(try await bob.value.name == "Bearer bob")
        #expect(server.count("/mine") == 2)
        // Two GETs of one user while nothing changes are still one transfer.
        let sent = held.arrived.value
        let first = Task { () async throws -> ServiceUser in try await service.get("mine") }
        while held.arrived.value < sent + 1 { await Task.yield() }
        let second = Task { () async throws -> ServiceUser in try await service.get("mine") }
        while deduplicator.waiterCount < 2 && held.arrived.value < sent + 2 { await Task.yield() }
        held.release(2)
        #expect(try await first.value.name == "Bearer bob")
        #expect(try await second.value.name == "Bearer bob")
        #expect(held.arrived.value == sent + 1)
    }

    /// Two services on one configuration (one interval table, one in-flight guard), each with
    /// adapters or an authentication of the app's own for its user: one user's request
    /// interval and tap in flight do not hold back the other's call of the same endpoint. On
    /// the old code their identities were one (what the adapters write comes after it), and
    /// the second user's call was refused with `.throttled` or `.skipped`.
    @Test(arguments: [true, false])
    func theIntervalAndTheTapOfOneUsersServiceDoNotHoldBackAnothers(authenticates: Bool) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/feed") { request in .json(["id": 1, "name": request.header("Authorization") ?? "none"]) }
        let (alice, bob, _) = try Self.servicesOfTwoUsers(server) { configuration, user in
            if authenticates {
                configuration.authentication = UserAuthentication(user: user)
            } else {
                configuration.adapters = [Self.adapter(setting: "Authorization", to: "Bearer " + user)]
            }
        }
        let spaced = CallOptions.default.with(\.interval, .drop(.seconds(60)))
        let first: ServiceUser = try await alice.get("feed", options: spaced)
        let second: ServiceUser = try await bob.get("feed", options: spaced)
        #expect([first.name, second.name] == ["Bearer alice", "Bearer bob"])
        // Alice's own second call is still held back.
        let again = await courierError { let _: ServiceUser = try await alice.get("feed", options: spaced) }
        #expect(again?.code == .throttled)
        // One user's tap in flight does not skip the other's.
        let taps = try await Self.overlappingTaps(
            on: server, first: { try await alice.post("posts/7/like", options: $0) },
            second: { try await bob.post("posts/7/like", options: $0) })
        #expect(taps.first == "Bearer alice")
        #expect(taps.second == "Bearer bob")
    }

    /// One service whose own authentication (or adapter) writes the app's current user, from
    /// the app's own session store: Alice's call of an endpoint with a request interval, the
    /// app logs Bob in, and Bob's call goes out; Bob's tap in flight does not skip Carol's. Two
    /// calls of one user are still throttled (or skipped). On the old code the interval and the
    /// veto were decided on the identity before the adapters wrote the user: Bob's call was
    /// refused with `.throttled` because of Alice's, Carol's with `.skipped` because of Bob's.
    @Test(arguments: [true, false])
    func theIntervalAndTheTapOfOneUserDoNotHoldBackTheNextUserOfTheSameService(authenticates: Bool) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/feed") { request in .json(["id": 1, "name": request.header("Authorization") ?? "none"]) }
        let user = CurrentUser("alice")
        let service = try Self.currentUserService(server, user, authenticates: authenticates)
        let spaced = CallOptions.default.with(\.interval, .drop(.seconds(60)))
        let first: ServiceUser = try await service.get("feed", options: spaced)
        user.name = "bob"
        let second: ServiceUser = try await service.get("feed", options: spaced)
        #expect([first.name, second.name] == ["Bearer alice", "Bearer bob"])
        // Bob's own second call is still held back, and so is Alice's after she logs back in.
        let again = await courierError { let _: ServiceUser = try await service.get("feed", options: spaced) }
        #expect(again?.code == .throttled)
        user.name = "alice"
        let hers = await courierError { let _: ServiceUser = try await service.get("feed", options: spaced) }
        #expect(hers?.code == .throttled)
        #expect(server.count("/feed") == 2)
        // Bob's tap in flight skips his own second tap, not Carol's after the app logs her in.
        user.name = "bob"
        let taps = try await Self.overlappingTaps(
            on: server, first: { try await service.post("posts/7/like", options: $0) },
            meanwhile: { guarded in
                let own = await courierError {
                    let _: ServiceUser = try await service.post("posts/7/like", options: guarded)
                }
                #expect(own?.code == .skipped)
                user.name = "carol"
            }, second: { try await service.post("posts/7/like", options: $0) })
        #expect(taps.first == "Bearer bob")
        #expect(taps.second == "Bearer carol")
        #expect(server.count("/posts/7/like") == 2)
    }

    /// A token of the app's own type.
    struct SessionToken: Sendable, Equatable { var value: String }

    /// Two services on one configuration, each with an `AuthenticationInterceptor` that sends
    /// its user's token as a query item (`?session=`), of a `String` or of a type of the app's
    /// own: the identity holds the token's digest. On the old code the identity saw header
    /// fields only, a GET of the second joined the first's transfer, and the second user got
    /// the first user's answer.
    @Test(arguments: [false, true])
    func getsOfServicesWithAQueryTokenOfTheirOwnAreNotShared(customType: Bool) async throws {
        let server = try TestServer()
        defer { server.stop() }
        @Sendable func write(_ token: String, _ request: inout HTTPRequest) {
            let path = request.path ?? "/"
            request.path = path + (path.contains("?") ? "&" : "?") + "session=" + token
        }
        let (alice, bob, deduplicator) = try Self.servicesOfTwoUsers(server) { configuration, user in
            if customType {
                let coordinator = AuthRefreshCoordinator<SessionToken>(credential: SessionToken(value: user)) { $0 }
                configuration.authentication = AuthenticationInterceptor(coordinator: coordinator) {
                    write($0.value, &$1)
                }
            } else {
                let coordinator = AuthRefreshCoordinator<String>(credential: user) { $0 }
                configuration.authentication = AuthenticationInterceptor(coordinator: coordinator) { write($0, &$1) }
            }
        }
        let held = HeldRoute()
        server.route("/mine") { request in
            held.hold()
            return .json(["id": 1, "name": request.queryValue("session") ?? "none"])
        }
        let one = Task { () async throws -> ServiceUser in try await alice.get("mine") }
        while held.arrived.value < 1 { await Task.yield() }
        let two = Task { () async throws -> ServiceUser in try await bob.get("mine") }
        while held.arrived.value < 2 && deduplicator.waiterCount < 2 { await Task.yield() }
        held.release(2)
        #expect(try await one.value.name == "alice")
        #expect(try await two.value.name == "bob")
    }

    /// A service whose adapter sends each call's tenant (`userInfo`) as `X-Tenant`.
    static func tenantService(_ server: TestServer, _ tenant: UserInfoKey) throws -> ServiceCore {
        try ServiceFixture.service(server) { configuration in
            configuration.adapters = [
                .adapter { request, context in
                    var request = request
                    request.head.headerFields[HTTPField.Name("X-Tenant")!] = context.userInfo[tenant] as? String
                    return request
                }
            ]
        }
    }

    /// One tenant's request interval does not hold back another tenant's call of the same
    /// endpoint; it still holds back the same tenant's. On the old code the identity could not
    /// see `userInfo`, and the second tenant's call was refused with `.throttled`.
    @Test func theIntervalOfOneTenantDoesNotHoldBackAnother() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/feed") { request in .json(["id": 1, "name": request.header("X-Tenant") ?? "none"]) }
        let tenant: UserInfoKey = "test.tenant"
        let service = try Self.tenantService(server, tenant)
        func options(_ name: String) -> CallOptions {
            CallOptions.default.with(\.userInfo, [tenant: name]).with(\.interval, .drop(.seconds(60)))
        }
        let one: ServiceUser = try await service.get("feed", options: options("one"))
        let two: ServiceUser = try await service.get("feed", options: options("two"))
        #expect([one.name, two.name] == ["one", "two"])
        let again = await courierError { let _: ServiceUser = try await service.get("feed", options: options("one")) }
        #expect(again?.code == .throttled)
        #expect(server.count("/feed") == 2)
    }

    /// One tenant's tap in flight does not veto another tenant's; it still vetoes its own.
    @Test func theDoubleTapVetoOfOneTenantDoesNotSkipAnother() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.route("POST", "/posts/7/like") { request in
            held.hold()
            return .json(["id": 7, "name": request.header("X-Tenant") ?? "none"])
        }
        let tenant: UserInfoKey = "test.tenant"
        let service = try Self.tenantService(server, tenant)
        func options(_ name: String) -> CallOptions {
            CallOptions.default.with(\.userInfo, [tenant: name]).with(\.skipsWhileInFlight, true)
        }
        let first = Task { () async throws -> ServiceUser in
            try await service.post("posts/7/like", options: options("one"))
        }
        while held.arrived.value == 0 { await Task.yield() }
        let own = await courierError {
            let _: ServiceUser = try await service.post("posts/7/like", options: options("one"))
        }
        #expect(own?.code == .skipped)
        let ended = Recorder<Int>()
        let other = Task { () async throws -> ServiceUser in
            defer { ended.append(1) }
            return try await service.post("posts/7/like", options: options("two"))
        }
        // Until it reaches the server, or (the bug) is skipped.
        while held.arrived.value < 2 && ended.values.isEmpty { await Task.yield() }
        held.release(2)
        #expect(try await first.value.name == "one")
        #expect(try await other.value.name == "two")
        #expect(server.count("/posts/7/like") == 2)
    }

    /// One service's identical GETs still share one transfer when it has adapters.
    @Test func getsOfOneServiceWithAdaptersAreStillShared() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.adapters = [Self.adapter(setting: "X-User", to: "alice")]
        }
        let names = try await Self.overlappingGets(
            on: server, "/mine", echoing: "X-User", deduplicator: service.configuration.deduplicator,
            { try await service.get("mine") }, { try await service.get("mine") })
        #expect(names.first == "alice")
        #expect(names.second == "alice")
        #expect(server.count("/mine") == 1)
    }

    @Test func getsThatDifferInTheirModelTypeAreNotShared() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = Self.heldEcho(server, "/me")
        let service = try ServiceFixture.service(server)
        struct Other: Decodable, Sendable { var id: Int }
        async let user: ServiceUser = service.get("me")
        async let other: Other = service.get("me")
        let dedup = service.configuration.deduplicator
        while held.arrived.value < 2 && dedup.waiterCount < 2 { await Task.yield() }
        held.release(2)
        _ = try await (user, other)
        #expect(server.count("/me") == 2)
    }

    // MARK: - Real-time parameters

    @Test func aRetryResendsAFreshTimestamp() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.status(503))
        server.enqueue(.json(["id": 1, "name": "a"]))
        let ticks = ServiceCounter()
        let service = try ServiceFixture.service(server) {
            $0.realTimeParameters = { [("ts", "\(ticks.increment())")] }
        }
        let user: ServiceUser = try await service.get("users/1")
        #expect(user.id == 1)
        #expect(server.recordedRequests.map { $0.queryValue("ts") } == ["1", "2"])
    }

    @Test func aRefreshThenRetryResendsAFreshTimestamp() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.validBearerTokens = ["fresh"]
        let ticks = ServiceCounter()
        let coordinator = AuthRefreshCoordinator<String>(credential: "stale") { _ in "fresh" }
        let service = try ServiceFixture.service(server) {
            $0.authentication = .bearer(coordinator)
            $0.realTimeParameters = { [("ts", "\(ticks.increment())")] }
        }
        struct Bearer: Decodable, Sendable { var authenticated: Bool }
        let response = try await service.send(Endpoint<Bearer>.get("bearer"))
        #expect(response.value.authenticated)
        #expect(response.attempts == 2)
        #expect(server.recordedRequests.map { $0.queryValue("ts") } == ["1", "2"])
        #expect(server.recordedRequests.map { $0.header("Authorization") } == ["Bearer stale", "Bearer fresh"])
    }

    @Test func concurrentGetsWithATimestampAreShared() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = Self.heldEcho(server, "/feed")
        let ticks = ServiceCounter()
        let service = try ServiceFixture.service(server) {
            $0.realTimeParameters = { [("ts", "\(ticks.increment())")] }
        }
        async let first: ServiceUser = service.get("feed")
        async let second: ServiceUser = service.get("feed")
        let dedup = service.configuration.deduplicator
        while held.arrived.value < 2 && dedup.waiterCount < 2 { await Task.yield() }
        held.release(2)
        _ = try await (first, second)
        #expect(server.count("/feed") == 1)
    }

    /// A call with its own short timeout joined an identical GET in flight and waited on that
    /// transfer past its own timeout, for as long as the first call's (here until the client's
    /// stall timeout failed both).
    @Test func aCallWithItsOwnTimeoutDoesNotWaitOnAnotherCallsTransfer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.routeHeldFeed(held)
        let service = try ServiceFixture.service(server) { $0.retryPolicy = .none }
        let first = Task { () async throws -> ServiceUser in try await service.get("feed") }
        while held.arrived.value == 0 { await Task.yield() }
        let short = CallOptions.default.with(\.timeout, .seconds(1)).with(\.retryPolicy, RetryPolicy.none)
        let error = await courierError { let _: ServiceUser = try await service.get("feed", options: short) }
        #expect(error?.code == .timedOut)
        // It timed out on a transfer of its own: the first call's is still held.
        #expect(service.configuration.deduplicator.executionCount == 2)
        held.release(2)
        #expect(try await first.value.name == "feed")
    }

    /// The client's own timeout changed (`updateSettings`) while an identical GET was in
    /// flight: the second call, under the new settings, joined the first one's transfer, made
    /// under the old 2-second timeout, and failed with its `.timedOut` although its own
    /// settings allow the answer.
    @Test func aCallUnderNewClientSettingsDoesNotTakeTheTimeoutOfATransferMadeUnderTheOld() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.routeHeldFeed(held)
        defer { held.release(10) }
        let service = try ServiceFixture.service(server) { $0.retryPolicy = .none }
        try service.client.updateSettings { $0.timeout = .seconds(2) }
        let first = Task { () async throws -> ServiceUser in try await service.get("feed") }
        while held.arrived.value == 0 { await Task.yield() }
        try service.client.updateSettings { $0.timeout = nil }
        let second = Task { () async throws -> ServiceUser in try await service.get("feed") }
        let dedup = service.configuration.deduplicator
        while dedup.waiterCount < 2, held.arrived.value < 2 { await Task.yield() }
        let firstError = await courierError { _ = try await first.value }
        #expect(firstError?.code == .timedOut)
        // The second call sends its own request, and gets the answer.
        let deadline = ContinuousClock.now + .seconds(30)
        while held.arrived.value < 2, ContinuousClock.now < deadline, service.calls.count > 0 { await Task.yield() }
        held.release(2)
        do {
            #expect(try await second.value.name == "feed")
        } catch {
            Issue.record("the second call failed: \(error)")
        }
        #expect(server.count("/feed") == 2)
    }

    /// A call with its own size limit joined an identical GET in flight and took its body,
    /// over the limit.
    @Test func aCallWithItsOwnSizeLimitDoesNotTakeAnotherCallsBody() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let small = CallOptions.default.with(\.maxResponseSize, 8).with(\.retryPolicy, RetryPolicy.none)
        let calls = try await Self.aSecondCallWhileTheFirstIsHeld(server, options: small)
        #expect(try await calls.first.value.name == "feed")
        let error = await courierError { _ = try await calls.second.value }
        #expect(error?.code == .responseTooLarge)
    }

    /// A call that asks for a stale copy on error, or sets its own cache lifetime, joined an
    /// identical GET in flight whose transfer the cache ran with the first call's settings:
    /// on an error it got that error instead of its stale copy. Each now has a transfer of its
    /// own (both reach the server).
    @Test(arguments: [
        CallOptions.default.with(\.staleIfError, true),
        CallOptions.default.with(\.cacheLifetime, .seconds(60)),
    ])
    func aCallWithItsOwnCacheSettingsDoesNotJoinAnotherCallsTransfer(_ options: CallOptions) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let calls = try await Self.aSecondCallWhileTheFirstIsHeld(server, options: options)
        #expect(try await calls.first.value.name == "feed")
        #expect(try await calls.second.value.name == "feed")
        #expect(calls.held.arrived.value == 2)
        #expect(calls.deduplicator.executionCount == 2)
    }

    /// A GET of `/feed` (held by the server), then the same GET with `options`, made once the
    /// first has arrived; both are released once the second has arrived too, or joined the
    /// first's transfer.
    private static func aSecondCallWhileTheFirstIsHeld(_ server: TestServer, options: CallOptions) async throws
        -> (
            first: Task<ServiceUser, any Error>, second: Task<ServiceUser, any Error>, held: HeldRoute,
            deduplicator: InFlightDeduplicator<HTTPClient.Response>
        )
    {
        let held = HeldRoute()
        server.routeHeldFeed(held)
        let service = try ServiceFixture.service(server)
        let first = Task { () async throws -> ServiceUser in try await service.get("feed") }
        while held.arrived.value == 0 { await Task.yield() }
        let second = Task { () async throws -> ServiceUser in try await service.get("feed", options: options) }
        let dedup = service.configuration.deduplicator
        while held.arrived.value < 2 && dedup.waiterCount < 2 { await Task.yield() }
        held.release(2)
        return (first, second, held, dedup)
    }

    @Test func theIntervalAppliesToACallWithATimestamp() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/users/1") { _ in .json(["id": 1, "name": "a"]) }
        let ticks = ServiceCounter()
        let clock = ManualServiceClock()
        let service = try ServiceFixture.service(server) {
            $0.clock = clock
            $0.realTimeParameters = { [("ts", "\(ticks.increment())")] }
        }
        let once = CallOptions.default.with(\.interval, .drop(.seconds(2)))
        let _: ServiceUser = try await service.get("users/1", options: once)
        do {
            let _: ServiceUser = try await service.get("users/1", options: once)
            Issue.record("expected throttling")
        } catch {
            #expect(error.code == .throttled)
        }
        #expect(server.count("/users/1") == 1)
    }

    @Test func theDoubleTapVetoAppliesToACallWithATimestamp() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.route("POST", "/posts/7/like") { _ in
            held.hold()
            return .json(["id": 7, "name": "liked"])
        }
        let ticks = ServiceCounter()
        let service = try ServiceFixture.service(server) {
            $0.realTimeParameters = { [("ts", "\(ticks.increment())")] }
        }
        try await ServiceFixture.expectSecondTapSkipped(service, held: held, server: server)
    }
}

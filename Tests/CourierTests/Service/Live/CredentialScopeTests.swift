import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// The credential goes to the API's own origins only (issue 16 item 2), against two loopback
/// servers: two ports are two origins.
@Suite struct CredentialScopeTests {
    static let apiKey = HTTPField.Name("X-Api-Key")!

    static func headers(_ response: HTTPClient.Response) throws -> [String: String] {
        try Echo(response.body).headers
    }

    // MARK: - A per-call server

    @Test func perCallServerOnAnotherOriginGetsNoCredential() async throws {
        let api = try TestServer()
        let other = try TestServer()
        defer {
            api.stop()
            other.stop()
        }
        let service = try ServiceFixture.service(api)
        try service.client.logIn(credential: "api-token")
        let foreign = CallOptions.default.with(\.server, ServiceFixture.base(other).url)
        let echo: EchoModel = try await service.get("echo", options: foreign)
        #expect(echo.headers["authorization"] == nil)
        #expect(other.recordedRequests.first?.header("Authorization") == nil)
        // The API's own server still gets it.
        let own: EchoModel = try await service.get("echo")
        #expect(own.headers["authorization"] == "Bearer api-token")
    }

    @Test func perCallServerOnAnotherOriginGetsNoCredentialFromAClientWithoutBaseURLOrFromTheService() async throws {
        let api = try TestServer()
        let other = try TestServer()
        defer {
            api.stop()
            other.stop()
        }
        // No base URL (the service's pool names the API), a cache on the way, and a credential
        // in the service's own headers: none of it reaches another origin.
        let client = try makeClient {
            $0.sensitiveHeaderNames = [Self.apiKey]
            $0.cache = try? HostScopedCache(
                configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        }
        try client.logIn(credential: "api-token")
        let service = ServiceCore(
            client: client,
            configuration: ServiceConfiguration(
                servers: try ServerPool(servers: [ServiceFixture.base(api)]),
                headers: [Self.apiKey: "service-key", HTTPField.Name("X-Client")!: "tests"]))
        let foreign: EchoModel = try await service.get(
            "echo", options: .default.with(\.server, ServiceFixture.base(other).url))
        #expect(foreign.headers["authorization"] == nil)
        #expect(foreign.headers["x-api-key"] == nil)
        #expect(foreign.headers["x-client"] == "tests")
        let own: EchoModel = try await service.get("echo")
        #expect(own.headers["authorization"] == "Bearer api-token")
        #expect(own.headers["x-api-key"] == "service-key")
        // A call's own header is the caller's choice for that call.
        let explicit: EchoModel = try await service.get(
            "echo",
            options: .default.with(\.server, ServiceFixture.base(other).url).with(\.headers, [Self.apiKey: "mine"]))
        #expect(explicit.headers["x-api-key"] == "mine")
    }

    /// The client's default headers may carry a credential too (a static `Authorization`, an
    /// API key, a `Cookie`): its fields stay on the API's own origins as the service's own
    /// headers' do. The old code added every default field to every request, so a per-call
    /// server, or a `send` to another origin, got the key.
    @Test func theClientsDefaultCredentialFieldsStayOnItsOwnOrigins() async throws {
        let api = try TestServer()
        let other = try TestServer()
        defer {
            api.stop()
            other.stop()
        }
        let client = try makeClient {
            $0.baseURL = api.baseURL
            $0.sensitiveHeaderNames = [Self.apiKey]
            $0.defaultHeaders = [
                .authorization: "Bearer static-token", Self.apiKey: "client-key", .cookie: "sid=client-cookie",
                HTTPField.Name("X-Client")!: "tests",
            ]
        }
        let service = ServiceCore(client: client, configuration: ServiceConfiguration(retryPolicy: .none))
        let foreign: EchoModel = try await service.get(
            "echo", options: .default.with(\.server, ServiceFixture.base(other).url))
        let direct = try Self.headers(try await client.send(HTTPRequest(.get, other.url("/echo"))))
        for headers in [foreign.headers, direct] {
            #expect(headers["authorization"] == nil)
            #expect(headers["x-api-key"] == nil)
            #expect(headers["cookie"] == nil)
            #expect(headers["x-client"] == "tests", "the other default fields stay")
        }
        // The API's own origin gets them all.
        let own: EchoModel = try await service.get("echo")
        #expect(own.headers["authorization"] == "Bearer static-token")
        #expect(own.headers["x-api-key"] == "client-key")
        #expect(own.headers["cookie"] == "sid=client-cookie")
        // And a call that opts in takes them to its server.
        let optIn: EchoModel = try await service.get(
            "echo",
            options: .default.with(\.server, ServiceFixture.base(other).url).with(\.sendsCredentialToServer, true))
        #expect(optIn.headers["x-api-key"] == "client-key")
    }

    @Test func perCallServerGetsTheCredentialWhenTheCallOptsIn() async throws {
        let api = try TestServer()
        let other = try TestServer()
        defer {
            api.stop()
            other.stop()
        }
        let service = try ServiceFixture.service(api)
        try service.client.logIn(credential: "api-token")
        let optIn = CallOptions.default.with(\.server, ServiceFixture.base(other).url).with(
            \.sendsCredentialToServer, true)
        let echo: EchoModel = try await service.get("echo", options: optIn)
        #expect(echo.headers["authorization"] == "Bearer api-token")
    }

    @Test func perCallServerOnAnOwnOriginGetsTheCredential() async throws {
        let api = try TestServer()
        let failover = try TestServer()
        let listed = try TestServer()
        defer {
            api.stop()
            failover.stop()
            listed.stop()
        }
        let client = try HTTPClient(
            configuration: {
                var configuration = HTTPClient.Configuration(baseURL: api.baseURL, notificationCenter: .init())
                configuration.credentialOrigins = [listed.baseURL]
                return configuration
            }())
        try client.logIn(credential: "api-token")
        let pool = try ServerPool(servers: [ServiceFixture.base(api), ServiceFixture.base(failover)])
        let service = ServiceCore(
            client: client, configuration: ServiceConfiguration(servers: pool, retryPolicy: .none))
        // The client's base URL with another path prefix, a failover server of the service,
        // an origin the client lists: each is the API's own.
        for server in [
            try BaseURL(api.baseURL.absoluteString + "/anything"), ServiceFixture.base(failover),
            ServiceFixture.base(listed),
        ] {
            let echo: EchoModel = try await service.get("echo", options: .default.with(\.server, server.url))
            #expect(echo.headers["authorization"] == "Bearer api-token", "\(server)")
        }
    }

    /// A server that leaves the service's pool is no longer the API's own: the next call to it
    /// with the same options gets no credential, though the calls before kept their plan (a
    /// pool made of plain servers; `CallPlanTests` has one made of environments).
    @Test func aServerRemovedFromThePoolGetsNoCredentialOnTheNextCall() async throws {
        let api = try TestServer()
        let retired = try TestServer()
        defer {
            api.stop()
            retired.stop()
        }
        let client = try ServiceFixture.client(api)
        try client.logIn(credential: "api-token")
        let pool = try ServerPool(servers: [ServiceFixture.base(api), ServiceFixture.base(retired)])
        let service = ServiceCore(
            client: client, configuration: ServiceConfiguration(servers: pool, retryPolicy: .none))
        let toRetired = CallOptions.default.with(\.server, ServiceFixture.base(retired).url)
        for _ in 0..<2 {
            let before: EchoModel = try await service.get("echo", options: toRetired)
            #expect(before.headers["authorization"] == "Bearer api-token")
        }
        #expect(service.prepared.plans.count == 1)
        try pool.setServers([api.baseURL], for: ServerEnvironment(rawValue: "production"))
        let after: EchoModel = try await service.get("echo", options: toRetired)
        #expect(after.headers["authorization"] == nil)
        #expect(
            retired.recordedRequests.map { $0.header("Authorization") } == [
                "Bearer api-token", "Bearer api-token", nil,
            ])
    }

    @Test func perCallServerGetsNoInterceptorCredentialAndA401ThereRefreshesNothing() async throws {
        let api = try TestServer()
        let other = try TestServer()
        defer {
            api.stop()
            other.stop()
        }
        other.route("/private") { _ in .status(401) }
        let coordinator = AuthRefreshCoordinator<String>(credential: "interceptor-token") { _ in "refreshed" }
        let service = try ServiceFixture.service(api) { $0.authentication = .bearer(coordinator) }
        let foreign = CallOptions.default.with(\.server, ServiceFixture.base(other).url)
        let echo: EchoModel = try await service.get("echo", options: foreign)
        #expect(echo.headers["authorization"] == nil)
        do {
            let _: EchoModel = try await service.get("private", options: foreign)
            Issue.record("expected a 401")
        } catch {
            #expect(error.status == .unauthorized)
        }
        #expect(coordinator.refreshCount == 0)
        #expect(other.count("/private") == 1)
    }

    @Test func a401FromAnotherOriginAfterARedirectRefreshesNothing() async throws {
        let api = try TestServer()
        let other = try TestServer()
        defer {
            api.stop()
            other.stop()
        }
        let coordinator = AuthRefreshCoordinator<String>(credential: "interceptor-token") { _ in "refreshed" }
        let service = try ServiceFixture.service(api) { $0.authentication = .bearer(coordinator) }
        let target = other.url("/status/401").absoluteString
        do {
            let _: EchoModel = try await service.get("redirect-to", parameters: ["url": target])
            Issue.record("expected a 401")
        } catch {
            #expect(error.status == .unauthorized)
        }
        #expect(coordinator.refreshCount == 0)
        #expect(other.recordedRequests.first?.header("Authorization") == nil)
        // The API's own 401 still refreshes.
        api.route("/mine") { request in
            request.header("Authorization") == "Bearer refreshed" ? .json(["ok": true]) : .status(401)
        }
        let _: [String: Bool] = try await service.get("mine")
        #expect(coordinator.refreshCount == 1)
    }

    // MARK: - Redirects

    @Test func customCredentialHeaderIsDroppedOnACrossOriginRedirect() async throws {
        let api = try TestServer()
        let other = try TestServer()
        defer {
            api.stop()
            other.stop()
        }
        let client = try makeClient {
            $0.baseURL = api.baseURL
            $0.authorization = .custom { [HTTPField(name: Self.apiKey, value: $0)] }
        }
        try client.logIn(credential: "key-777")
        let target = other.url("/echo").absoluteString
        let response = try await client.send(HTTPRequest(.get, api.url("/redirect-to?url=\(target)")))
        #expect(response.redirectCount == 1)
        #expect(api.recordedRequests.first?.header("X-Api-Key") == "key-777")
        let hop = try #require(other.recordedRequests.first)
        #expect(hop.header("X-Api-Key") == nil)
        #expect(try Self.headers(response)["x-api-key"] == nil)
    }

    @Test func anInterceptorsCustomCredentialIsDroppedOnACrossOriginRedirect() async throws {
        try await Self.expectPartnerFieldDroppedOnARedirect(credential: "partner-secret", refreshed: "new") { $0 }
    }

    /// A service whose interceptor writes `credential` (as `value` makes it) into
    /// `X-Partner-Token` follows a redirect to another origin: the API gets the field, the
    /// other origin does not.
    static func expectPartnerFieldDroppedOnARedirect<Credential: Sendable & Equatable>(
        credential: Credential, refreshed: Credential, sourceLocation: SourceLocation = #_sourceLocation,
        value: @escaping @Sendable (Credential) -> String
    ) async throws {
        let api = try TestServer()
        let other = try TestServer()
        defer {
            api.stop()
            other.stop()
        }
        let partner = HTTPField.Name("X-Partner-Token")!
        let coordinator = AuthRefreshCoordinator<Credential>(credential: credential) { _ in refreshed }
        let interceptor = AuthenticationInterceptor(coordinator: coordinator) { token, request in
            request.headerFields[partner] = value(token)
        }
        let service = try ServiceFixture.service(api) { $0.authentication = interceptor }
        let echo: EchoModel = try await service.get(
            "redirect-to", parameters: ["url": other.url("/echo").absoluteString])
        #expect(
            api.recordedRequests.first?.header("X-Partner-Token") == value(credential), sourceLocation: sourceLocation)
        #expect(echo.headers["x-partner-token"] == nil, sourceLocation: sourceLocation)
        #expect(other.recordedRequests.first?.header("X-Partner-Token") == nil, sourceLocation: sourceLocation)
    }

    /// The same with a credential of the app's own type (a token with its expiry, say), which
    /// the one probe (a `String`) cannot stand for: the fields it writes are credentials too,
    /// dropped across origins. On the old code a credential of another type than `String` was
    /// never probed, its field was no credential, and the redirect carried it to the other
    /// origin.
    @Test func aCustomCredentialTypesFieldIsDroppedOnACrossOriginRedirect() async throws {
        struct PartnerToken: Sendable, Equatable {
            var value: String
            var expiry: Int
        }
        try await Self.expectPartnerFieldDroppedOnARedirect(
            credential: PartnerToken(value: "partner-secret", expiry: 1),
            refreshed: PartnerToken(value: "new", expiry: 2)
        ) { $0.value }
    }

    /// The cache keeps the answers of two credentials of the app's own type apart: on the old
    /// code their field was no credential, both users' requests were anonymous to the cache,
    /// and the second user was served the first user's cached answer.
    @Test func aCustomCredentialTypesAnswersAreCachedPerCredential() async throws {
        struct PartnerToken: Sendable, Equatable { var value: String }
        let api = try TestServer()
        defer { api.stop() }
        api.route("/me") { request in
            var response = ScriptedResponse.json(["id": 1, "name": request.header("X-Partner-Token") ?? "none"])
            response.headers[.cacheControl] = "private, max-age=600"
            return response
        }
        let partner = HTTPField.Name("X-Partner-Token")!
        let coordinator = AuthRefreshCoordinator<PartnerToken>(credential: PartnerToken(value: "one")) { $0 }
        let interceptor = AuthenticationInterceptor(coordinator: coordinator) { token, request in
            request.headerFields[partner] = token.value
        }
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let client = try HTTPClient(configuration: .init(baseURL: api.baseURL, cache: cache))
        let service = ServiceCore(client: client, configuration: ServiceConfiguration(authentication: interceptor))
        let first: ServiceUser = try await service.get("me")
        coordinator.login(PartnerToken(value: "two"))
        let second: ServiceUser = try await service.get("me")
        #expect([first.name, second.name] == ["one", "two"])
        #expect(api.count("/me") == 2)
    }

    /// An interceptor that picks its header by the credential's value (`sk_…` → X-Secret-Key)
    /// writes a field its one probe never saw: the field would escape the scope (sent across
    /// origins, left out of the identities). The call is refused before anything is sent.
    /// (Red-team finding 6; on the old code the call went out carrying X-Secret-Key.)
    @Test func anInterceptorFieldChosenByTheCredentialIsRefused() async throws {
        let api = try TestServer()
        defer { api.stop() }
        let secret = HTTPField.Name("X-Secret-Key")!
        let coordinator = AuthRefreshCoordinator<String>(credential: "sk_live_123") { _ in "sk_live_456" }
        let interceptor = AuthenticationInterceptor(coordinator: coordinator) { token, request in
            request.headerFields[token.hasPrefix("sk_") ? secret : .authorization] = token
        }
        let service = try ServiceFixture.service(api) { $0.authentication = interceptor }
        let error = await courierError { let _: EchoModel = try await service.get("echo") }
        #expect(error?.code == .configuration, "got \(String(describing: error))")
        #expect(error.map { !"\($0)".contains("sk_live_123") } == true)
        #expect(api.recordedRequests.isEmpty)
        // An interceptor that writes the same field whatever the value works as before.
        let steady = AuthenticationInterceptor(coordinator: coordinator) { token, request in
            request.headerFields[secret] = token
        }
        let steadyService = try ServiceFixture.service(api) { $0.authentication = steady }
        let _: EchoModel = try await steadyService.get("echo")
        #expect(api.recordedRequests.last?.header("X-Secret-Key") == "sk_live_123")
    }

    @Test func credentialFieldNamesIncludeWhatTheAuthorizationBuilds() throws {
        let custom = try makeClient {
            $0.authorization = .custom {
                [HTTPField(name: Self.apiKey, value: $0), HTTPField(name: .init("X-Api-Secret")!, value: $0)]
            }
            $0.sensitiveHeaderNames = [.init("X-Session")!]
        }
        // The names every log redacts as secrets are credentials too (X-Api-Key, X-Auth-Token).
        let common = Redaction.commonSecretHeaderNames
        #expect(
            custom.credentialFieldNames
                == common.union([
                    .authorization, .cookie, .proxyAuthorization, Self.apiKey, .init("X-Api-Secret")!,
                    .init("X-Session")!,
                ]))
        #expect(try makeClient().credentialFieldNames == common.union([.authorization, .cookie, .proxyAuthorization]))
    }

    // MARK: - The client alone

    @Test(arguments: ["/relative", "ftp://files.example.com", "mailto:a@example.com"])
    func aCredentialOriginMustBeAnHTTPOrigin(_ text: String) throws {
        var configuration = HTTPClient.Configuration(notificationCenter: .init())
        configuration.credentialOrigins = [URL(string: text)!]
        #expect(throws: CourierError.self) { try HTTPClient(configuration: configuration) }
        do {
            _ = try HTTPClient(configuration: configuration)
        } catch {
            #expect(error.code == .configuration)
        }
    }

    @Test func clientSendsItsCredentialOnlyToItsOwnOrigins() async throws {
        let api = try TestServer()
        let listed = try TestServer()
        let other = try TestServer()
        defer {
            api.stop()
            listed.stop()
            other.stop()
        }
        let client = try makeClient {
            $0.baseURL = api.baseURL
            $0.credentialOrigins = [listed.baseURL]
        }
        try client.logIn(credential: "tok")
        let relative = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/echo")
        #expect(try Self.headers(try await client.send(relative))["authorization"] == "Bearer tok")
        #expect(
            try Self.headers(try await client.send(HTTPRequest(.get, listed.url("/echo"))))["authorization"]
                == "Bearer tok")
        #expect(try Self.headers(try await client.send(HTTPRequest(.get, other.url("/echo"))))["authorization"] == nil)
    }
}

/// What the test server's `/echo` answers, as a service model.
struct EchoModel: Decodable, Sendable {
    var headers: [String: String]
    var args: [String: String]
}

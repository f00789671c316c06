import CourierTesting
import Foundation
import HTTPTypes
import Logging
import Testing

@_spi(Fuzzing) @testable import Courier

/// Where a credential could escape, end to end against loopback servers: redirects to another
/// origin or scheme, log output at every level, error descriptions, another user's cache.
@Suite struct CredentialLeakTests {
    static let token = "s3cr3t-T0KEN-4f1c"
    static let cookie = "session=c00kie-V4LUE-91ab"
    static let apiKey = "k3y-V4LUE-77de"
    static let secrets = [token, "c00kie-V4LUE-91ab", apiKey]

    /// A request carrying every kind of credential: bearer token, cookie, a custom key header.
    static func request(_ url: URL) -> HTTPRequest {
        var request = HTTPRequest(.get, url)
        request.headerFields[.authorization] = "Bearer \(token)"
        request.headerFields[.cookie] = cookie
        request.headerFields[HTTPField.Name("X-Api-Key")!] = apiKey
        return request
    }

    static func client(logs: LogCapture? = nil, _ configure: (inout HTTPClient.Configuration) -> Void = { _ in }) throws
        -> HTTPClient
    {
        try makeClient {
            $0.sensitiveHeaderNames = [HTTPField.Name("X-Api-Key")!]
            if let logs { $0.logger = logs.logger }
            configure(&$0)
        }
    }

    static func leaks(_ text: String) -> [String] { secrets.filter { text.contains($0) } }

    static func assertClean(_ request: RecordedRequest, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(request.header("Authorization") == nil, sourceLocation: sourceLocation)
        #expect(request.header("Cookie") == nil, sourceLocation: sourceLocation)
        #expect(request.header("X-Api-Key") == nil, sourceLocation: sourceLocation)
        let everything = request.headerList.map { "\($0.name): \($0.value)" }.joined() + request.target
        #expect(leaks(everything).isEmpty, sourceLocation: sourceLocation)
    }

    // MARK: - Redirects

    @Test(arguments: [301, 302, 303, 307, 308])
    func crossOriginRedirectDropsEveryCredential(status: Int) async throws {
        let origin = try TestServer()
        let other = try TestServer()
        defer {
            origin.stop()
            other.stop()
        }
        let client = try Self.client()
        let target = other.url("/echo").absoluteString
        let response = try await client.send(
            Self.request(origin.url("/redirect-to?url=\(target)&status=\(status)")))
        #expect(response.status == .ok)
        #expect(response.redirectCount == 1)
        #expect(origin.recordedRequests.first?.header("Authorization") == "Bearer \(Self.token)")
        let hop = try #require(other.recordedRequests.first)
        Self.assertClean(hop)
    }

    @Test func sameHostOtherPortAndOtherHostNameAreOtherOrigins() async throws {
        let origin = try TestServer()
        defer { origin.stop() }
        let client = try Self.client()
        // 127.0.0.1 → localhost on the same port: same socket, another origin.
        let target = "http://localhost:\(origin.port)/echo?hop=2"
        _ = try await client.send(Self.request(origin.url("/redirect-to?url=\(target)")))
        let hop = try #require(origin.recordedRequests(path: "/echo").first)
        Self.assertClean(hop)
    }

    @Test func credentialsStayDroppedForTheRestOfAChainThatComesBack() async throws {
        let origin = try TestServer()
        let other = try TestServer()
        defer {
            origin.stop()
            other.stop()
        }
        let client = try Self.client()
        // origin → other → back to origin: once the chain has left, the token is not re-sent
        // (the third hop's URL was chosen by a foreign server).
        let back = origin.url("/echo").absoluteString
        let viaOther = other.url("/redirect-to?url=\(back)").absoluteString
        let escaped = viaOther.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        _ = try await client.send(Self.request(origin.url("/redirect-to?url=\(escaped)")))
        Self.assertClean(try #require(other.recordedRequests.first))
        Self.assertClean(try #require(origin.recordedRequests(path: "/echo").first))
    }

    @Test func httpsToHTTPDowngradeIsRefusedBeforeAnyByteIsSent() async throws {
        guard NginxServer.isInstalled else { return }
        let plain = try TestServer()
        defer { plain.stop() }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cred-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let nginx = try NginxServer.start(
            tls: true, root: root,
            extraConfig: """
                location = /down { return 302 http://127.0.0.1:\(plain.port)/echo; }
                location = /auth { return 200 "[$http_authorization][$http_cookie][$http_x_api_key]"; }
                """)
        defer { nginx.stop() }
        let client = try Self.client { $0.tls = .init(caBundlePath: nginx.caBundlePath) }

        let error = await courierError { _ = try await client.send(Self.request(nginx.url("/down"))) }
        #expect(error?.code == .redirect)
        #expect(plain.requestCount == 0)
        #expect(Self.leaks(String(describing: error)).isEmpty)

        // The other way, http → https on the same host is a new origin too: nothing carried over.
        let upgrade = nginx.url("/auth").absoluteString
        let response = try await client.send(Self.request(plain.url("/redirect-to?url=\(upgrade)")))
        #expect(String(decoding: response.body, as: UTF8.self) == "[][][]")
    }

    // MARK: - Logs

    @Test func logsAtTraceLevelNeverCarryACredential() async throws {
        let server = try TestServer()
        let other = try TestServer()
        defer {
            server.stop()
            other.stop()
        }
        let logs = LogCapture()
        // Every failure here is immediate (no black hole), so the suite's 60 s bound, not 3 s:
        // a ThreadSanitizer run on 2 busy cores must not fail a request that waited for a thread.
        let client = try Self.client(logs: logs)
        try client.logIn(credential: Self.token)
        // Success, a redirect across origins, an HTTP error, a transport error, a protocol error.
        _ = try await client.send(Self.request(server.url("/echo?access_token=\(Self.token)")))
        let target = other.url("/status/401").absoluteString
        _ = try? await client.send(Self.request(server.url("/redirect-to?url=\(target)")))
        _ = try? await client.send(Self.request(server.url("/status/500")))
        _ = try? await client.send(Self.request(server.url("/fault/reset-headers")))
        _ = try? await client.send(Self.request(server.url("/fault/bad-status-line")))
        client.logOut()

        let lines = logs.lines
        #expect(lines.count >= 10, "trace logging produced \(lines.count) lines")
        for line in lines { #expect(Self.leaks(line).isEmpty, "leaked in: \(line)") }
        // The redaction is visible, so a reader knows a header was there.
        #expect(lines.contains { $0.lowercased().contains("authorization") })
    }

    /// A server that keeps the query of a request in its redirect (`Location`) and names the
    /// answer's URL (`Content-Location`) echoes the credential the request carried there: a
    /// `CredentialPart.query` value, an `access_token`. The client's trace log showed both in
    /// the redirect's header fields, and the logging monitor in the answer's.
    @Test func aURLThatEchoesTheCredentialInAHeaderIsNotLogged() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/me") { _ in
            var answer = ScriptedResponse.json(["id": 1, "name": "first"])
            answer.headers[.contentLocation] = "/me?access_token=\(Self.token)"
            return answer
        }
        server.route("/hop") { request in
            .redirect(to: "/me?device=\(request.queryValue("device") ?? "")&access_token=\(Self.token)")
        }
        let logs = LogCapture()
        let client = try HTTPClient(configuration: .init(baseURL: server.baseURL, logger: logs.logger))
        let coordinator = AuthRefreshCoordinator<MultipartCredentialTests.Session>(credential: .generation(1)) {
            _ in .generation(2)
        }
        var configuration = ServiceConfiguration(callbackQueue: DispatchQueue(label: "test.callbacks"))
        configuration.authentication = MultipartCredentialTests.interceptor(coordinator)
        configuration.monitors = [LoggingEventMonitor(logger: logs.logger)]
        let service = ServiceCore(client: client, configuration: configuration)
        let _: ServiceUser = try await service.get("hop")
        #expect(server.recordedRequests(path: "/me").last?.queryValue("device") == "dev-secret-1")
        let lines = logs.lines
        #expect(lines.contains { $0.contains("Location: /me?\(Redaction.marker)") })
        #expect(lines.contains { $0.contains("Content-Location: /me?\(Redaction.marker)") })
        for line in lines {
            #expect(!line.contains("dev-secret") && Self.leaks(line).isEmpty, "leaked in: \(line)")
        }
    }

    // MARK: - Error descriptions

    /// What `print`, `dump` and `debugPrint` show of a call's `Response`, the client's
    /// `HTTPClient.Response` and a `CourierError`: their default reflection showed the request
    /// as sent (the Authorization and `X-User-Id` an `AuthenticationInterceptor` wrote, a
    /// `CredentialPart.query` value, an `access_token` in the URL) and the answer's
    /// `Set-Cookie`. Each mirror still lists every stored property.
    @Test func printAndDumpOfAResponseOrAnErrorShowNoCredential() async throws {
        let server = try TestServer()
        defer { server.stop() }
        for (path, status) in [("/me", 200), ("/denied", 403)] {
            server.route(path) { _ in
                var answer = ScriptedResponse.json(["id": 1, "name": "first"], status: status)
                answer.headers[.setCookie] = "sid=\(Self.cookie); Path=/"
                return answer
            }
        }
        let coordinator = AuthRefreshCoordinator<MultipartCredentialTests.Session>(credential: .generation(1)) {
            _ in .generation(2)
        }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.authentication = MultipartCredentialTests.interceptor(coordinator)
        }
        let response = try await service.send(Endpoint<ServiceUser>.get("me"))
        #expect(response.request.headerFields[MultipartCredentialTests.userField] == "user-secret-1")
        let error = await #expect(throws: CourierError.self) { let _: ServiceUser = try await service.get("denied") }
        let raw = try await service.client.send(Self.request(server.url("/me?access_token=\(Self.token)")))
        let shown = [
            ConfigurationDescriptionTests.shown(response), ConfigurationDescriptionTests.shown(raw),
            ConfigurationDescriptionTests.shown(try #require(error)),
        ]
        for text in shown {
            for secret in Self.secrets + ["tok-secret", "user-secret", "dev-secret"] {
                #expect(!text.contains(secret), "\(secret) shown in: \(text)")
            }
        }
        #expect(shown[0].contains("request: GET http://127.0.0.1:\(server.port)/me?\(Redaction.marker)"))
        #expect(shown[0].contains("Accept: application/json"))
        #expect(shown[1].contains("Set-Cookie: \(Redaction.marker)"))
        #expect(shown[2].contains("403"))
        for (value, type) in [(response, Response<ServiceUser>.self), (raw, HTTPClient.Response.self)]
            as [(Any, Any.Type)]
        {
            let labels = Mirror(reflecting: value).children.compactMap(\.label)
            #expect(Set(ConfigurationDescriptionTests.storedNames(of: type)) == Set(labels))
        }
        let labels = Mirror(reflecting: try #require(error)).children.compactMap(\.label)
        #expect(Set(ConfigurationDescriptionTests.storedNames(of: CourierError.self)) == Set(labels))
    }

    @Test func noErrorDescriptionCarriesACredential() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let blackHole = try TestServer.blackHole()
        defer { blackHole.stop() }
        let closed = try TestServer.refusingPort()
        defer { closed.stop() }
        let closedPort = closed.port
        let client = try Self.client {
            $0.timeout = .seconds(2)
            $0.maxResponseSize = 10_000
        }
        let query = "?access_token=\(Self.token)"
        var errors: [CourierError] = []
        func collect(sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
            if let error = await courierError(body, sourceLocation: sourceLocation) { errors.append(error) }
        }
        /// A status is a response for `send`; validation turns a refused one into `.httpStatus`.
        func validated(_ url: URL) async throws {
            let response = try await client.send(Self.request(url))
            _ = try ResponsePipeline.default.process(
                ResponseContext(request: response.request, response: response.head, body: response.body), with: .data)
        }
        await collect { try await validated(server.url("/status/401\(query)")) }
        await collect { try await validated(server.url("/status/500\(query)")) }
        let silent = URL(string: blackHole.baseURL.absoluteString + "/\(query)")!
        await collect { _ = try await client.send(Self.request(silent)) }
        await collect {
            _ = try await client.send(Self.request(URL(string: "http://127.0.0.1:\(closedPort)/\(query)")!))
        }
        // Its own client, without the 2 s timeout: the loop must end at the redirect limit,
        // and each hop waits for the cooperative pool, which a parallel (or sanitizer) run
        // keeps busy for long enough to lose that race against a short timeout.
        let looping = try Self.client { $0.maxRedirects = 3 }
        await collect { _ = try await looping.send(Self.request(server.url("/redirect-loop\(query)"))) }
        await collect { _ = try await client.send(Self.request(server.url("/bytes/20000\(query)"))) }
        await collect { _ = try await client.send(Self.request(server.url("/fault/bad-status-line\(query)"))) }
        await collect { _ = try await client.send(Self.request(server.url("/fault/reset-body\(query)"))) }
        await collect {
            // Refused before sending (a space in the path); the refusal must not echo the query.
            var request = Self.request(server.url("/echo"))
            request.path = "/echo x\(query)"
            _ = try await client.send(request)
        }
        await collect {
            let response = try await client.send(Self.request(server.url("/echo\(query)")))
            struct Wrong: Decodable { var missing: Int }
            _ = try ResponsePipeline.default.process(
                ResponseContext(request: response.request, response: response.head, body: response.body),
                with: .json(Wrong.self))
        }
        let codes = Set(errors.map(\.code))
        #expect(
            codes.isSuperset(of: [
                .httpStatus, .timedOut, .cannotConnect, .redirect, .responseTooLarge, .invalidResponse, .decoding,
                .invalidRequest,
            ]), "codes seen: \(codes)")
        for error in errors {
            for text in [String(describing: error), String(reflecting: error), error.message, "\(error)"] {
                #expect(Self.leaks(text).isEmpty, "\(error.code) leaked: \(text)")
            }
        }
    }

    // MARK: - Another user's cache

    @Test func anotherUsersCacheEntriesAreNeverServed() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/me") { request in
            let user = request.header("Authorization") ?? "anonymous"
            return ScriptedResponse(
                headers: [.cacheControl: "max-age=600", .contentType: "text/plain"], body: Data(user.utf8))
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cred-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .disk(directory: directory.path)))
        let alice = try Self.client { $0.cache = cache }
        let bob = try Self.client { $0.cache = cache }
        try alice.logIn(credential: "alice-\(Self.token)")
        try bob.logIn(credential: "bob-token")

        let first = try await alice.send(HTTPRequest(.get, server.url("/me")))
        #expect(try await alice.send(HTTPRequest(.get, server.url("/me"))).isFromCache)
        let other = try await bob.send(HTTPRequest(.get, server.url("/me")))
        #expect(!other.isFromCache)
        #expect(String(decoding: other.body, as: UTF8.self) == "Bearer bob-token")
        #expect(String(decoding: first.body, as: UTF8.self) == "Bearer alice-\(Self.token)")
        // Anonymous callers on the same cache do not see either user's copy.
        let anonymous = try Self.client { $0.cache = cache }
        let plain = try await anonymous.send(HTTPRequest(.get, server.url("/me")))
        #expect(!plain.isFromCache)
        #expect(Self.leaks(String(decoding: plain.body, as: UTF8.self)).isEmpty)
        #expect(server.requestCount == 3)
    }
}

/// Collects every log line (message and metadata) a `Logger` writes, at trace level.
final class LogCapture: Sendable {
    private let storage = LockedValue<[String]>([])

    var lines: [String] { storage.withLock { $0 } }

    var logger: Logger {
        var logger = Logger(label: "courier.test") { _ in Handler(capture: self) }
        logger.logLevel = .trace
        return logger
    }

    func append(_ line: String) { storage.withLock { $0.append(line) } }

    struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var all = metadata
            if let extra = event.metadata { all.merge(extra) { $1 } }
            capture.append("\(event.level) \(event.message) \(all)")
        }
    }
}

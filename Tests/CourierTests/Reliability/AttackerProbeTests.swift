import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Probes of the merged isolation work as an attacker and a careless user would try it:
/// several users in one process, a server that lies, a caller who passes extreme values.
/// Each test is a finding that failed on main at 3020cc6, against loopback servers.
@Suite struct AttackerProbeTests {
    static let apiKey = HTTPField.Name("X-Api-Key")!
    static let authToken = HTTPField.Name("X-Auth-Token")!

    /// A client of `server` whose cache keeps 127.0.0.1's answers on disk in `directory`.
    static func diskCachedClient(_ server: TestServer, directory: String) throws -> HTTPClient {
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .disk(directory: directory)))
        return try makeClient {
            $0.baseURL = server.baseURL
            $0.cache = cache
        }
    }

    /// Every byte of the files in `directory`, one after the other.
    static func bytes(in directory: String) throws -> Data {
        var bytes = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            bytes.append(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
        }
        return bytes
    }

    // MARK: - The library's own secret names are credentials everywhere

    /// Broken on main: `X-Api-Key` and `X-Auth-Token` were redacted as secrets but were not
    /// credentials to the cache, so two users passing their key per call (no `authorization`
    /// configured) shared one cached answer.
    @Test(arguments: ["X-Api-Key", "X-Auth-Token"])
    func aKeyPassedPerCallKeepsEachUsersCachedAnswerApart(header: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/me") { request in
            .text("user " + (request.header(header) ?? "anonymous")).with(.cacheControl, "max-age=600")
        }
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let client = try makeClient {
            $0.baseURL = server.baseURL
            $0.cache = cache
        }
        let name = try #require(HTTPField.Name(header))
        func me(_ key: String) -> HTTPRequest {
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/me", headerFields: [name: key])
        }
        let alice = try await client.send(me("alice-key"))
        #expect(String(decoding: alice.body, as: UTF8.self) == "user alice-key")
        #expect(try await client.send(me("alice-key")).isFromCache)
        let bob = try await client.send(me("bob-key"))
        #expect(!bob.isFromCache)
        #expect(String(decoding: bob.body, as: UTF8.self) == "user bob-key")
        #expect(server.recordedRequests(path: "/me").count == 2)
    }

    /// Broken on main: the same per-call key reached the disk in clear text as the secondary
    /// key of a response that varied on it.
    @Test func aKeyPassedPerCallNeverReachesTheDiskInClearText() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/varies") { request in
            .text(request.header("X-Auth-Token") == nil ? "nobody" : "somebody").with(.cacheControl, "max-age=600")
                .with(.vary, "X-Auth-Token")
        }
        let directory = NSTemporaryDirectory() + "courier-probe-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let secret = "t0ken-V4LUE-per-call"
        do {
            let client = try Self.diskCachedClient(server, directory: directory)
            let request = HTTPRequest(
                method: .get, scheme: nil, authority: nil, path: "/varies", headerFields: [Self.authToken: secret])
            _ = try await client.send(request)
            #expect(try await client.send(request).isFromCache)
        }
        let bytes = try Self.bytes(in: directory)
        #expect(!bytes.isEmpty)
        #expect(bytes.range(of: Data(secret.utf8)) == nil)
    }

    /// Broken on main: a token in the query (`?access_token=`) was written to the disk cache
    /// in clear text, in the entry's key and URL. It is kept as a keyed digest: the same URL
    /// still hits, another token's URL misses, an unsafe call still invalidates it.
    /// An `AuthenticationInterceptor` that writes its token as a query item of its own name
    /// (`?session=`, not one of the names every cache digests): the probe that tells its
    /// header fields tells its query items too, and the cache stores their values keyed. On
    /// the old code only header fields were probed, and the token reached the disk in clear
    /// text in the stored URL.
    @Test func anInterceptorsQueryTokenNeverReachesTheDiskInClearText() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let secret = "s3ssion-T0KEN-on-disk"
        server.route("GET", "/feed") { request in
            ScriptedResponse.json(["id": 1, "name": request.queryValue("session") == secret ? "A" : "B"])
                .with(.cacheControl, "max-age=600")
        }
        let directory = NSTemporaryDirectory() + "courier-probe-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let client = try Self.diskCachedClient(server, directory: directory)
            let coordinator = AuthRefreshCoordinator<String>(credential: secret) { $0 }
            let interceptor = AuthenticationInterceptor(coordinator: coordinator) { token, request in
                let path = request.path ?? "/"
                request.path = path + (path.contains("?") ? "&" : "?") + "session=" + token
            }
            let service = ServiceCore(client: client, configuration: ServiceConfiguration(authentication: interceptor))
            let first: ServiceUser = try await service.get("feed", parameters: ["page": 1])
            #expect(first.name == "A")
            let hit = try await service.send(Endpoint<ServiceUser>.get("feed", parameters: ["page": 1]))
            #expect(hit.isFromCache)
        }
        let bytes = try Self.bytes(in: directory)
        #expect(bytes.range(of: Data("page=1".utf8)) != nil)
        #expect(bytes.range(of: Data(secret.utf8)) == nil)
    }

    @Test func aTokenInTheQueryNeverReachesTheDiskInClearText() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let secret = "qu3ry-T0KEN-on-disk"
        // The answer does not echo the token: only what the cache itself writes is looked at.
        server.route("GET", "/feed") { request in
            .text(request.queryValue("access_token") == secret ? "feed for A" : "feed for B")
                .with(.cacheControl, "max-age=600")
        }
        server.route("POST", "/feed") { _ in .text("posted") }
        let directory = NSTemporaryDirectory() + "courier-probe-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func feed(_ token: String, _ method: HTTPRequest.Method = .get) -> HTTPRequest {
            HTTPRequest(method: method, scheme: nil, authority: nil, path: "/feed?page=1&access_token=\(token)")
        }
        do {
            let client = try Self.diskCachedClient(server, directory: directory)
            _ = try await client.send(feed(secret))
            let hit = try await client.send(feed(secret))
            #expect(hit.isFromCache)
            #expect(hit.url.absoluteString.contains(secret))
            let other = try await client.send(feed("another-token"))
            #expect(!other.isFromCache)
            #expect(String(decoding: other.body, as: UTF8.self) == "feed for B")
            _ = try await client.send(feed("another-token", .post))
            #expect(!(try await client.send(feed("another-token"))).isFromCache)
        }
        let bytes = try Self.bytes(in: directory)
        #expect(bytes.range(of: Data("page=1".utf8)) != nil)
        #expect(bytes.range(of: Data(secret.utf8)) == nil)
    }

    /// Broken on main: a per-call `X-Auth-Token` (one of the names the library redacts as a
    /// secret) followed a redirect to another origin.
    @Test(arguments: [302, 307])
    func aKeyPassedPerCallIsDroppedOnACrossOriginRedirect(status: Int) async throws {
        let origin = try TestServer()
        let other = try TestServer()
        defer {
            origin.stop()
            other.stop()
        }
        let client = try makeClient()
        var request = HTTPRequest(
            .get, origin.url("/redirect-to?url=\(other.url("/echo").absoluteString)&status=\(status)"))
        request.headerFields[Self.authToken] = "t0ken-V4LUE"
        request.headerFields[Self.apiKey] = "k3y-V4LUE"
        let response = try await client.send(request)
        #expect(response.redirectCount == 1)
        #expect(origin.recordedRequests.first?.header("X-Auth-Token") == "t0ken-V4LUE")
        let hop = try #require(other.recordedRequests.first)
        #expect(hop.header("X-Auth-Token") == nil)
        #expect(hop.header("X-Api-Key") == nil)
    }

    // MARK: - A careless caller's URL

    /// Broken on main: a URL without a scheme or host was quoted whole in the error, with the
    /// token in its query and the password in its user info.
    @Test(arguments: [
        "api.example.com/feed?access_token=qu3ry-S3CRET", "http://user:qu3ry-S3CRET@/feed",
        "//api.example.com/feed?api_key=qu3ry-S3CRET",
    ])
    func anUnusableURLIsRefusedWithoutQuotingItsSecrets(url: String) async throws {
        let client = try makeClient()
        let target = try #require(URL(string: url))
        let error = await courierError {
            _ = try await client.send(method: .get, url: target)
        }
        #expect(error?.code == .invalidRequest)
        let text = "\(error.map(String.init(describing:)) ?? "")"
        #expect(!text.contains("qu3ry-S3CRET"))
    }

    /// Broken on main: a base URL without a scheme was quoted whole in the error.
    @Test func aBaseURLWithoutASchemeIsRefusedWithoutQuotingItsSecrets() throws {
        #expect {
            _ = try BaseURL("api.example.com/v1?api_key=b4se-S3CRET")
        } throws: { error in
            !"\(error)".contains("b4se-S3CRET") && (error as? CourierError)?.code == .configuration
        }
    }

    // MARK: - An authorization builder whose fields depend on the credential

    /// Broken on main: the client asks the builder once, with a probe value, which fields carry
    /// the credential; a builder that picks its field by the credential's kind made a field
    /// the scope did not know, which then followed a redirect to another origin. Now `logIn`
    /// refuses it, and the field listed in `sensitiveHeaderNames` is dropped across origins.
    @Test func aCredentialFieldTheScopeDoesNotKnowIsRefusedAtLogin() async throws {
        let origin = try TestServer()
        let other = try TestServer()
        defer {
            origin.stop()
            other.stop()
        }
        let secretKey = HTTPField.Name("X-Secret-Key")!
        let build: @Sendable (String) -> [HTTPField] = { credential in
            credential.hasPrefix("sk_")
                ? [HTTPField(name: secretKey, value: credential)]
                : [HTTPField(name: .authorization, value: "Bearer " + credential)]
        }
        let careless = try makeClient {
            $0.baseURL = origin.baseURL
            $0.authorization = .custom(build)
        }
        #expect {
            try careless.logIn(credential: "sk_live_S3CRET")
        } throws: { error in
            (error as? CourierError)?.code == .configuration && !"\(error)".contains("sk_live_S3CRET")
        }
        try careless.logIn(credential: "plain-token")

        let listed = try makeClient {
            $0.baseURL = origin.baseURL
            $0.authorization = .custom(build)
            $0.sensitiveHeaderNames = [secretKey]
        }
        try listed.logIn(credential: "sk_live_S3CRET")
        let target = other.url("/echo").absoluteString
        let response = try await listed.send(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/redirect-to?url=\(target)"))
        #expect(response.redirectCount == 1)
        #expect(origin.recordedRequests.first?.header("X-Secret-Key") == "sk_live_S3CRET")
        #expect(other.recordedRequests.first?.header("X-Secret-Key") == nil)
    }

    // MARK: - Probed and holding (regression guards)

    /// Held on main: `stream` applies the same scope as `send`; the same socket under another
    /// host name, or the API's host on another port, is another origin.
    @Test func streamSendsTheCredentialOnlyToTheAPIsOwnOrigin() async throws {
        let api = try TestServer()
        let other = try TestServer()
        defer {
            api.stop()
            other.stop()
        }
        let client = try makeClient { $0.baseURL = api.baseURL }
        try client.logIn(credential: "str3am-T0KEN")
        let targets: [(HTTPRequest, TestServer, Bool)] = [
            (HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/echo"), api, true),
            (HTTPRequest(.get, other.url("/echo")), other, false),
            (HTTPRequest(.get, URL(string: "http://localhost:\(api.port)/echo")!), api, false),
            (HTTPRequest(.get, URL(string: "http://127.0.0.1:\(other.port)/echo")!), other, false),
        ]
        for (request, server, expected) in targets {
            server.resetRecords()
            let streamed = try await client.stream(request)
            _ = try await streamed.body.collect()
            let sent = try #require(server.recordedRequests.first)
            #expect((sent.header("Authorization") == "Bearer str3am-T0KEN") == expected, "\(request)")
        }
    }
}

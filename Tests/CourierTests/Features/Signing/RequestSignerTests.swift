import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Issue 18 item 5: HMAC-SHA256 over the final method, path, sorted query, body digest,
/// timestamp and nonce, per attempt and per endpoint, pinned by vectors from Python's `hmac`.
@Suite struct RequestSignerTests {
    static let app = RequestSigner.Key(id: "app", secret: Data("app-secret".utf8))
    static let admin = RequestSigner.Key(id: "admin", secret: Data("admin-secret".utf8))

    struct Vector: Decodable {
        var name, method, target, bodyBase64, keyID, secretHex, timestamp, nonce, canonical, signature: String
    }
    struct VectorFile: Decodable { var vectors: [Vector] }

    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/signing")

    static func bytes(hex: String) -> Data {
        var data = Data()
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            data.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return data
    }

    /// What the server checks: the signature recomputed over the request as it arrived.
    static func verifies(_ recorded: RecordedRequest, key: RequestSigner.Key) -> Bool {
        guard recorded.header("X-Key-Id") == key.id, let timestamp = recorded.header("X-Timestamp"),
            let nonce = recorded.header("X-Nonce"), let signature = recorded.header("X-Signature"),
            let method = HTTPRequest.Method(recorded.method)
        else { return false }
        var signer = RequestSigner(key: key)
        signer.now = { Int64(timestamp) ?? -1 }
        signer.nonce = { nonce }
        var request = PreparedRequest(
            head: HTTPRequest(method: method, scheme: "http", authority: "server.test", path: recorded.target),
            body: recorded.body.isEmpty ? nil : .data(recorded.body))
        guard (try? signer.sign(&request, endpointPath: "")) != nil else { return false }
        return request.head.headerFields[RequestSigner.signatureField] == signature
    }

    @Test func signaturesEqualPythonsHMACVectors() throws {
        let file = try JSONDecoder().decode(
            VectorFile.self, from: Data(contentsOf: Self.fixtures.appendingPathComponent("vectors.json")))
        #expect(file.vectors.count == 5)
        for vector in file.vectors {
            let body = try #require(Data(base64Encoded: vector.bodyBase64))
            let digest = try RequestSigner.bodyDigest(body.isEmpty ? nil : .data(body))
            let text = RequestSigner.canonicalText(
                method: vector.method, target: vector.target, bodyDigest: digest, timestamp: vector.timestamp,
                nonce: vector.nonce)
            #expect(text == vector.canonical, "\(vector.name)")
            var signer = RequestSigner(
                key: RequestSigner.Key(id: vector.keyID, secret: Self.bytes(hex: vector.secretHex)))
            signer.now = { Int64(vector.timestamp)! }
            signer.nonce = { vector.nonce }
            var request = PreparedRequest(
                head: HTTPRequest(
                    method: HTTPRequest.Method(vector.method)!, scheme: "https", authority: "api.test",
                    path: vector.target),
                body: body.isEmpty ? nil : .data(body))
            try signer.sign(&request, endpointPath: "v1/x")
            let fields = request.head.headerFields
            #expect(fields[RequestSigner.signatureField] == vector.signature, "\(vector.name)")
            #expect(fields[RequestSigner.keyIDField] == vector.keyID)
            #expect(fields[RequestSigner.timestampField] == vector.timestamp)
            #expect(fields[RequestSigner.nonceField] == vector.nonce)
            // A body streamed from a file is digested the same way.
            if !body.isEmpty {
                let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-sign-\(UUID())").path
                try body.write(to: URL(fileURLWithPath: path))
                defer { try? FileManager.default.removeItem(atPath: path) }
                var fromFile = request
                fromFile.body = RequestBody(segments: [.file(path: path)])
                try signer.sign(&fromFile, endpointPath: "v1/x")
                #expect(fromFile.head.headerFields[RequestSigner.signatureField] == vector.signature)
            }
        }
    }

    /// A body file that opens but cannot be read (here a folder: `read` fails with EISDIR) is
    /// an error, not the digest of what was read before the failure (of nothing, here), which
    /// signed another body than the one sent.
    @Test func aBodyFileThatCannotBeReadIsAnErrorNotAPartialDigest() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-sign-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            let digest = try RequestSigner.bodyDigest(RequestBody(segments: [.file(path: folder.path)]))
            Issue.record("a folder was signed as the body \(digest)")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.message.contains("cannot read the body file"))
        }
    }

    @Test func everyAttemptCarriesAFreshSignatureOverTheFinalRequest() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let seen = ServiceCounter()
        server.route("/items") { request in
            guard Self.verifies(request, key: Self.app) else { return .json(["error": "bad signature"], status: 401) }
            return seen.increment() == 1 ? .status(503) : .json(["id": 1, "name": "signed"])
        }
        let clock = ServiceCounter()
        var signer = RequestSigner(key: Self.app)
        signer.now = { Int64(1_700_000_000 + clock.increment()) }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.signer = signer
            // Real-time parameters are part of the final query the signature covers.
            configuration.realTimeParameters = { [("rt", String(clock.value))] }
        }
        let response = try await service.send(
            Endpoint<ServiceUser>.get("items", parameters: ["b": "2", "a": "1 2"]))
        #expect(response.value.name == "signed")
        #expect(response.attempts == 2)
        let sent = server.recordedRequests(path: "/items")
        #expect(sent.count == 2)
        #expect(sent.allSatisfy { Self.verifies($0, key: Self.app) })
        #expect(Set(sent.compactMap { $0.header("X-Nonce") }).count == 2)
        #expect(Set(sent.compactMap { $0.header("X-Timestamp") }).count == 2)
        #expect(sent[0].header("X-Nonce")?.count == 32)
    }

    @Test func perEndpointRulesLeaveSomeUnsignedAndSignOthersWithAnotherKey() async throws {
        let server = try TestServer()
        defer { server.stop() }
        for path in ["/public/info", "/admin/stats", "/items"] {
            server.route(path) { _ in .json(["id": 1, "name": "x"]) }
        }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.signer = RequestSigner(
                key: Self.app, rules: ["public/": .unsigned, "/admin": .key(Self.admin), "admin/other": .unsigned])
        }
        for path in ["public/info", "admin/stats", "items"] {
            let _: ServiceUser = try await service.get(path)
        }
        let unsigned = try #require(server.recordedRequests(path: "/public/info").first)
        #expect(unsigned.header("X-Signature") == nil && unsigned.header("X-Nonce") == nil)
        let admin = try #require(server.recordedRequests(path: "/admin/stats").first)
        #expect(Self.verifies(admin, key: Self.admin))
        #expect(!Self.verifies(admin, key: Self.app))
        #expect(Self.verifies(try #require(server.recordedRequests(path: "/items").first), key: Self.app))
    }

    /// A rule names whole path segments: `"public"` covers `public`, `public/…` and `public?…`,
    /// not `publications/…`, which the signer's key still signs.
    @Test func aRuleCoversWholePathSegmentsOnly() async throws {
        let server = try TestServer()
        defer { server.stop() }
        for path in ["/public", "/public/info", "/publications/1", "/adminx"] {
            server.route(path) { _ in .json(["id": 1, "name": "x"]) }
        }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.signer = RequestSigner(
                key: Self.app, rules: ["public": .unsigned, "admin": .key(Self.admin)])
        }
        for path in ["public", "public/info", "public?page=2", "publications/1", "adminx"] {
            let _: ServiceUser = try await service.get(path)
        }
        let unsigned = server.recordedRequests(path: "/public") + server.recordedRequests(path: "/public/info")
        #expect(unsigned.count == 3)
        #expect(unsigned.allSatisfy { $0.header("X-Signature") == nil })
        #expect(Self.verifies(try #require(server.recordedRequests(path: "/publications/1").first), key: Self.app))
        #expect(Self.verifies(try #require(server.recordedRequests(path: "/adminx").first), key: Self.app))
    }

    /// A leading `./` (which `RelativePath` allows, for `./name:verb`) is dropped before the
    /// request is sent, so `./admin/stats` is the endpoint `admin/stats`: the rules read it so.
    @Test func aLeadingDotSegmentNamesTheSameEndpointForTheRules() async throws {
        let server = try TestServer()
        defer { server.stop() }
        for path in ["/public/info", "/admin/stats"] {
            server.route(path) { _ in .json(["id": 1, "name": "x"]) }
        }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.signer = RequestSigner(
                key: Self.app, rules: ["public": .unsigned, "admin": .key(Self.admin)])
        }
        for path in ["./public/info", "./admin/stats"] {
            let _: ServiceUser = try await service.get(path)
        }
        let unsigned = try #require(server.recordedRequests(path: "/public/info").first)
        #expect(unsigned.header("X-Signature") == nil && unsigned.header("X-Key-Id") == nil)
        let admin = try #require(server.recordedRequests(path: "/admin/stats").first)
        #expect(Self.verifies(admin, key: Self.admin))
        #expect(!Self.verifies(admin, key: Self.app))
    }

    /// A rule covers the paths that start with its bytes, not with a string Swift's `==` takes
    /// for equal (canonically equivalent Unicode: KELVIN SIGN and `K`): the endpoint `Kiosk/…`
    /// is not the `\u{212A}iosk` one a rule signs with another key (the server sees two paths),
    /// and the other way round.
    @Test(arguments: [
        ("\u{212A}iosk", "Kiosk/stats", "/Kiosk/stats"), ("Kiosk", "\u{212A}iosk/stats", "/%E2%84%AAiosk/stats"),
    ])
    func aRuleCoversPathsByTheirBytes(rule: String, path: String, route: String) async throws {
        #expect(rule == String(path.prefix(5)))
        let sent = try await Self.sent(path, rule: rule, .key(Self.admin), route: route)
        #expect(Self.verifies(sent, key: Self.app))
        #expect(!Self.verifies(sent, key: Self.admin))
    }

    /// A rule and an endpoint are compared as the request sends the path (`RelativePath`'s
    /// percent-encoded form): a rule written `"a b"` covers the endpoint `"a%20b/…"` and the
    /// other way round, and escapes in lower-case hex read as in upper-case. On the old code
    /// they were compared as written: the rule was missed, and the request was signed with
    /// the signer's key instead of the rule's.
    @Test(arguments: [
        ("a b", "a%20b/stats", "/a%20b/stats"), ("a%20b", "a b/stats", "/a%20b/stats"),
        ("caf%c3%a9", "caf\u{E9}/stats", "/caf%C3%A9/stats"),
    ])
    func aRuleAndAnEndpointAreComparedAsSent(rule: String, path: String, route: String) async throws {
        let sent = try await Self.sent(path, rule: rule, .key(Self.admin), route: route)
        #expect(Self.verifies(sent, key: Self.admin))
        #expect(!Self.verifies(sent, key: Self.app))
        // An unsigned rule is not missed either.
        let unsigned = try await Self.sent(path, rule: rule, .unsigned, route: route)
        #expect(unsigned.header("X-Signature") == nil && unsigned.header("X-Key-Id") == nil)
    }

    /// The GET of `path` by a service whose signer has the one rule `rule`, as `route` got it.
    static func sent(_ path: String, rule: String, _ ruled: RequestSigner.Rule, route: String) async throws
        -> RecordedRequest
    {
        let server = try TestServer()
        defer { server.stop() }
        server.route(route) { _ in .json(["id": 1, "name": "x"]) }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.signer = RequestSigner(key: Self.app, rules: [rule: ruled])
        }
        let _: ServiceUser = try await service.get(path)
        return try #require(server.recordedRequests(path: route).first)
    }

    @Test func aServerThatGetsNoCredentialGetsNoSignature() async throws {
        let server = try TestServer()
        let other = try TestServer()
        defer {
            server.stop()
            other.stop()
        }
        other.route("/items") { _ in .json(["id": 1, "name": "x"]) }
        let service = try ServiceFixture.service(server) { $0.signer = RequestSigner(key: Self.app) }
        let _: ServiceUser = try await service.get(
            "items", options: .default.with(\.server, try BaseURL(other.baseURL.absoluteString).url))
        let sent = try #require(other.recordedRequests(path: "/items").first)
        #expect(sent.header("X-Signature") == nil && sent.header("X-Key-Id") == nil)
    }

    /// A signature is good for its request at the API only: a redirect to another origin
    /// drops the signing fields with the credential, or that origin could replay the request
    /// to the API within the timestamp's window. A same-origin redirect keeps them.
    @Test func aRedirectToAnotherOriginGetsNoSignature() async throws {
        let server = try TestServer()
        let other = try TestServer()
        defer {
            server.stop()
            other.stop()
        }
        server.route("/away") { _ in .redirect(to: other.url("/items").absoluteString) }
        server.route("/here") { _ in .redirect(to: "/items") }
        for target in [server, other] { target.route("/items") { _ in .json(["id": 1, "name": "x"]) } }
        let service = try ServiceFixture.service(server) { $0.signer = RequestSigner(key: Self.app) }
        let _: ServiceUser = try await service.get("away")
        let elsewhere = try #require(other.recordedRequests(path: "/items").first)
        for name in ["X-Key-Id", "X-Timestamp", "X-Nonce", "X-Signature"] {
            #expect(elsewhere.header(name) == nil, "\(name) reached another origin")
        }
        let _: ServiceUser = try await service.get("here")
        let same = try #require(server.recordedRequests(path: "/items").first)
        #expect(same.header("X-Signature") != nil && same.header("X-Nonce") != nil)
    }

    @Test func refreshThenRetryIsSignedAfreshOverTheNewCredential() async throws {
        struct Session: Sendable, Equatable {
            var token: String
            var device: String
        }
        let server = try TestServer()
        defer { server.stop() }
        server.route("/me") { request in
            guard Self.verifies(request, key: Self.app) else { return .json(["code": 1, "msg": "bad signature"]) }
            return request.queryValue("token") == "new"
                ? .json(["code": 0, "data": ["id": 5, "name": "fresh"]]) : .json(["code": 40101, "msg": "expired"])
        }
        let coordinator = AuthRefreshCoordinator<Session>(credential: Session(token: "old", device: "d1")) { _ in
            Session(token: "new", device: "d2")
        }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.envelope = .json(refreshCodes: ["40101"])
            configuration.authentication = AuthenticationInterceptor(
                coordinator: coordinator,
                parts: [.query("token") { $0.token }, .header(HTTPField.Name("X-Device")!) { $0.device }])
            configuration.signer = RequestSigner(key: Self.app)
        }
        let response = try await service.send(Endpoint<ServiceUser>.get("me"))
        #expect(response.value.name == "fresh" && response.attempts == 2)
        let sent = server.recordedRequests(path: "/me")
        #expect(sent.map { $0.queryValue("token") } == ["old", "new"])
        #expect(sent.allSatisfy { Self.verifies($0, key: Self.app) })
        #expect(sent[0].header("X-Nonce") != sent[1].header("X-Nonce"))
        #expect(sent[0].header("X-Signature") != sent[1].header("X-Signature"))
    }
}

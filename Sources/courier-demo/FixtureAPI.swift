import Courier
import CourierProtobuf
import CourierTesting
import Foundation
import HTTPTypes

/// The demo's embedded back end: a `TestServer` on loopback with the routes of a small app
/// API (auth, users, feed, media) and a "CDN" answering under a second host name.
///
/// It keeps the state a real server would (issued tokens, refresh count) so each tour step
/// can check what reached the wire, not only what the client says.
final class FixtureAPI: Sendable {
    /// The host name the client maps to 127.0.0.1 for the CDN (`CURLOPT_RESOLVE`).
    static let cdnHost = "cdn.courier.test"
    /// The password `auth/login` accepts.
    static let password = "correct horse"
    /// How many posts the feed has.
    static let feedLength = 12

    let server: TestServer

    private struct State {
        var validTokens: Set<String> = []
        var issued = 0
        var flakyCalls = 0
        var walletCalls = 0
        var verifiedSignatures = 0
    }
    private let state = LockedValue(State())

    /// Starts the server on an ephemeral loopback port with every route installed.
    /// - Throws: when the socket cannot be bound.
    init() throws {
        server = try TestServer()
        installAuthRoutes()
        installUserRoutes()
        installFeedRoutes()
        installMediaRoutes()
        installWalletRoutes()
    }

    /// Stops the server.
    func stop() { server.stop() }

    /// `http://127.0.0.1:PORT`.
    var apiURL: URL { server.baseURL }
    /// `http://cdn.courier.test:PORT`.
    var cdnURL: String { "http://\(Self.cdnHost):\(server.port)" }
    /// The resolve override that sends the CDN host to the server.
    var cdnResolve: HTTPClient.ResolveOverride {
        HTTPClient.ResolveOverride(host: Self.cdnHost, port: Int(server.port), address: "127.0.0.1")
    }

    /// How many requests reached `path`.
    func count(_ path: String) -> Int { server.recordedRequests(path: path).count }

    /// The `Authorization` header of the last request to `path` (nil when it had none).
    func lastAuthorization(_ path: String) -> String?? {
        server.recordedRequests(path: path).last.map { $0.header("Authorization") }
    }

    /// How many wallet requests carried a valid signature.
    var verifiedSignatures: Int { state.withLock { $0.verifiedSignatures } }

    /// Makes every token issued so far invalid, as if they had expired.
    func expireTokens() { state.withLock { $0.validTokens.removeAll() } }

    // MARK: Helpers for routes

    private func issueToken() -> (token: String, refresh: String) {
        state.withLock { state in
            state.issued += 1
            let token = "tok-\(state.issued)"
            state.validTokens.insert(token)
            return (token, "refresh-\(state.issued)")
        }
    }

    private func isAuthorized(_ request: RecordedRequest) -> Bool {
        guard let header = request.header("Authorization"), header.hasPrefix("Bearer ") else { return false }
        let token = String(header.dropFirst("Bearer ".count))
        return state.withLock { $0.validTokens.contains(token) }
    }

    /// Answers `body` when the request carries a valid token, 401 otherwise.
    private func authorized(_ request: RecordedRequest, _ body: () -> ScriptedResponse) -> ScriptedResponse {
        isAuthorized(request)
            ? body() : ScriptedResponse.json(["error": "invalid_token"], status: 401).with(.wwwAuthenticate, "Bearer")
    }

    // MARK: Routes

    private func installAuthRoutes() {
        server.route("POST", "/auth/login") { [self] request in
            let credentials = try? JSONSerialization.jsonObject(with: request.body) as? [String: String]
            guard credentials?["password"] == Self.password else {
                return .json(["error": "invalid_credentials"], status: 401)
            }
            let (token, refresh) = issueToken()
            return .json(["token": token, "refreshToken": refresh, "userId": 42])
        }
        server.route("POST", "/auth/refresh") { [self] request in
            let body = try? JSONSerialization.jsonObject(with: request.body) as? [String: String]
            guard body?["refreshToken"]?.hasPrefix("refresh-") == true else {
                return .json(["error": "invalid_grant"], status: 400)
            }
            let (token, refresh) = issueToken()
            return .json(["token": token, "refreshToken": refresh, "userId": 42])
        }
        server.route("POST", "/auth/logout") { _ in .status(204) }
    }

    private func installUserRoutes() {
        server.route("GET", "/users/me") { [self] request in
            authorized(request) { .json(["id": 42, "name": "Ada Lovelace", "email": "ada@example.com"]) }
        }
        server.route("POST", "/users/me/settings") { [self] request in
            authorized(request) {
                .json([
                    "saved": true, "contentType": request.header("Content-Type") ?? "",
                    "received": request.bodyText,
                ])
            }
        }
        server.route("GET", "/users/42/profile") { [self] request in
            authorized(request) {
                let profile = UserProfile(
                    userId: 42, displayName: "Ada Lovelace", email: "ada@example.com", tier: .pro, verified: true,
                    rating: 4.9, address: Address(street: "12 St James's Sq", city: "London", countryCode: "GB"),
                    interests: ["analytical engines", "poetry"], stats: ["posts": 12, "followers": 1843])
                let bytes = (try? ProtobufEncoder().encode(profile)) ?? Data()
                return ScriptedResponse(headers: [.contentType: "application/x-protobuf"], body: bytes)
            }
        }
        server.route("GET", "/feed/trending") { [self] _ in
            let call = state.withLock { state in
                state.flakyCalls += 1
                return state.flakyCalls
            }
            return call % 3 == 0 ? .json(["count": 5]) : .json(["error": "overloaded"], status: 503)
        }
        server.route("GET", "/search") { request in
            .json(["query": request.queryValue("q") ?? "", "hits": 7])
        }
        server.route("GET", "/feed/unread") { [self] request in authorized(request) { .json(["count": 3]) } }
        server.route("GET", "/media/quota") { [self] request in authorized(request) { .json(["count": 100]) } }
        for id in 1...8 {
            server.route("GET", "/users/\(id)") { _ in
                var response = ScriptedResponse.json(["id": id, "name": "User \(id)", "email": "u\(id)@example.com"])
                response.delay = .milliseconds(20 + 10 * (id % 3))
                return response
            }
        }
    }

    private func installFeedRoutes() {
        server.route("GET", "/feed") { [self] request in
            authorized(request) {
                let total = Self.feedLength
                let limit = max(1, Int(request.queryValue("limit") ?? "") ?? 5)
                let start = min(total, max(0, Int(request.queryValue("cursor") ?? "") ?? 0))
                let end = min(total, start + limit)
                var page: [String: Any] = ["posts": (start..<end).map { ["id": $0 + 1, "title": "Post \($0 + 1)"] }]
                if end < total { page["nextCursor"] = String(end) }
                return .json(page)
            }
        }
    }

    private func installMediaRoutes() {
        server.route("GET", "/avatars/42.png") { _ in
            // No caching headers at all: the client's rule for the CDN host decides.
            ScriptedResponse(headers: [.contentType: "image/png"], body: TestServer.bytePattern(count: 16_384))
        }
        server.route("POST", "/users/me/avatar") { [self] request in
            authorized(request) {
                .json(["bytes": request.bodyByteCount, "url": "\(cdnURL)/avatars/42.png"])
            }
        }
    }

    private func installWalletRoutes() {
        // An envelope API: HTTP 200 always, the outcome in `code`; unsigned requests refused.
        server.route("GET", "/wallet/balance") { [self] request in
            func envelope(_ code: Int, _ message: String, _ data: Any = NSNull()) -> ScriptedResponse {
                .json(["code": code, "msg": message, "data": data])
            }
            let signed = RequestSigner.isValid(
                method: request.method, target: request.target, body: request.body,
                field: { request.header($0.rawName) }, key: WalletService.key)
            guard signed else { return envelope(40003, "bad signature") }
            let call = state.withLock { state in
                state.verifiedSignatures += 1
                state.walletCalls += 1
                return state.walletCalls
            }
            if call == 1 { return envelope(50301, "busy, try again") }
            guard isAuthorized(request) else { return envelope(40101, "token expired") }
            return envelope(0, "ok", ["cents": 12_345, "currency": "EUR"])
        }
    }
}

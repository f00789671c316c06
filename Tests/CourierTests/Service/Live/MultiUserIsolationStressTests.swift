import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Several users of one process at once, on one cache (in memory, or on disk behind a memory
/// tier of four URLs): on one client, bearer users whose tokens expire and are refreshed
/// mid-run, API-key users, cookie users and an anonymous one; on a second client, the user it
/// is logged in as. They call
/// the same URLs in a seeded random order, with de-duplication on, a cache that follows HTTP
/// (private answers with validators), revalidations, reloads, and 503s that are retried. The
/// server answers with the user it saw. Whatever the interleaving, a call gets its own user's
/// answer or an error, never another user's.
@Suite struct MultiUserIsolationStressTests {
    struct LoggedIn: Codable, Sendable { var ok: Bool }

    struct Who: Codable, Sendable, Equatable {
        var user: String
        var r: String
    }

    /// The users, by how the server tells them apart.
    enum Kind: Sendable { case bearer, apiKey, cookie, anonymous }

    struct User: Sendable {
        var name: String
        var kind: Kind
    }

    static let users: [User] = [
        User(name: "ann", kind: .bearer), User(name: "bob", kind: .bearer), User(name: "cat", kind: .bearer),
        User(name: "dan", kind: .apiKey), User(name: "eve", kind: .apiKey),
        User(name: "fay", kind: .cookie), User(name: "gus", kind: .cookie),
        User(name: "anon", kind: .anonymous),
    ]

    /// The server side: which bearer token is current per user, and a request count that
    /// drives the 503s and the token expiries.
    final class Origin: Sendable {
        struct State {
            var generation: [String: Int] = [:]
            var requests = 0
        }
        let state = LockedValue(State())

        func token(_ user: String) -> String {
            "tok-\(user)-\(state.withLock { $0.generation[user, default: 0] })"
        }

        /// The user the request speaks for, or nil for an expired bearer token.
        func user(of request: RecordedRequest) -> String?? {
            if let authorization = request.header("Authorization") {
                let parts = authorization.dropFirst("Bearer tok-".count).split(separator: "-")
                guard parts.count == 2, let generation = Int(parts[1]) else { return .some(nil) }
                let user = String(parts[0])
                let current = state.withLock { $0.generation[user, default: 0] }
                return generation == current ? .some(user) : .some(nil)
            }
            if let key = request.header("X-Api-Key"), key.hasPrefix("key-") { return String(key.dropFirst(4)) }
            if let cookie = request.header("Cookie"), let range = cookie.range(of: "sid=") {
                return String(cookie[range.upperBound...].prefix { $0 != ";" })
            }
            return "anon"
        }

        func respond(_ request: RecordedRequest) -> ScriptedResponse {
            let count = state.withLock { state -> Int in
                state.requests += 1
                // Every 23rd request expires one bearer user's token.
                if state.requests % 23 == 0 {
                    let user = ["ann", "bob", "cat"][(state.requests / 23) % 3]
                    state.generation[user, default: 0] += 1
                }
                return state.requests
            }
            if count % 9 == 0 {
                var busy = ScriptedResponse.json(["error": "busy"], status: 503)
                busy.headers[.retryAfter] = "0"
                return busy
            }
            guard case .some(let seen) = user(of: request), let user = seen else {
                var expired = ScriptedResponse.json(["error": "expired"], status: 401)
                expired.headers[.wwwAuthenticate] = "Bearer"
                return expired
            }
            let r = request.queryValue("r") ?? ""
            let tag = "\"\(user)-\(r)\""
            if request.header("If-None-Match") == tag {
                var notModified = ScriptedResponse.status(304)
                notModified.headers[.eTag] = tag
                notModified.headers[.cacheControl] = "private, max-age=0"
                return notModified
            }
            var answer = ScriptedResponse.json(["user": user, "r": r])
            answer.headers[.eTag] = tag
            // Some resources stay fresh, the others are revalidated on every use.
            answer.headers[.cacheControl] =
                Int(r).map { $0 % 2 == 0 } == true ? "private, max-age=60" : "private, no-cache"
            answer.delay = .milliseconds(count % 4)
            return answer
        }
    }

    @Test(arguments: [UInt64(1), 2], [false, true])
    func everyCallGetsItsOwnUsersAnswer(seed: UInt64, onDisk: Bool) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-isolation-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        // On disk, a memory tier of four URLs: most answers are read back from the database.
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule("127.0.0.1", .followHTTP)],
                storage: onDisk ? .disk(directory: folder.path) : .memoryOnly,
                memoryCapacityEntries: onDisk ? 4 : 1_000))
        func makeClient() throws -> HTTPClient {
            try HTTPClient(
                configuration: HTTPClient.Configuration(
                    baseURL: server.baseURL, timeout: .seconds(600), stallTimeout: .seconds(600),
                    notificationCenter: NotificationCenter(), cache: cache))
        }
        let origin = Origin()
        server.route("/who") { origin.respond($0) }
        server.route("/login") { request in
            var answer = ScriptedResponse.json(["ok": true])
            answer.headers[.setCookie] = "sid=\(request.queryValue("user") ?? ""); Path=/; HttpOnly"
            return answer
        }
        // One client for the services' users; another on the same cache, logged in as its own.
        let client = try makeClient()
        let own = try makeClient()
        try own.logIn(credential: "tok-hal-0")
        var services: [String: ServiceCore] = [:]
        services["hal"] = ServiceCore(
            client: own,
            configuration: ServiceConfiguration(
                retryPolicy: RetryPolicy(jitter: 0), clock: ManualServiceClock(autoAdvance: true),
                callbackQueue: DispatchQueue(label: "test.callbacks")))
        for user in Self.users {
            var configuration = ServiceConfiguration(
                retryPolicy: RetryPolicy(jitter: 0), clock: ManualServiceClock(autoAdvance: true),
                callbackQueue: DispatchQueue(label: "test.callbacks"))
            switch user.kind {
            case .bearer:
                let name = user.name
                let coordinator = AuthRefreshCoordinator<String>(
                    credential: origin.token(name), stormLimit: RefreshStormLimit(maximumRefreshes: 1_000)
                ) { _ in origin.token(name) }
                configuration.authentication = .bearer(coordinator)
            case .apiKey:
                configuration.headers[HTTPField.Name("X-Api-Key")!] = "key-\(user.name)"
            case .cookie:
                configuration.cookieJar = CookieJar()
            case .anonymous:
                break
            }
            let service = ServiceCore(client: client, configuration: configuration)
            if user.kind == .cookie {
                let _: LoggedIn = try await service.get("login", parameters: ["user": user.name])
            }
            services[user.name] = service
        }

        var random = SplitMix64(seed: seed)
        let names = Self.users.map(\.name) + ["hal"]
        let plan: [(user: String, r: Int, policy: CachePolicy)] = (0..<400).map { _ in
            let user = names.randomElement(using: &random)!
            let policies: [CachePolicy] = [
                .useProtocolCachePolicy, .useProtocolCachePolicy, .returnCacheDataElseLoad, .reloadIgnoringCache,
            ]
            return (user, Int.random(in: 0..<4, using: &random), policies.randomElement(using: &random)!)
        }
        // Run through the library's own batch, 24 calls at a time.
        let outcomes = await Batch.run(
            plan.map { step in
                let service = services[step.user]!
                return { @Sendable () async throws -> Response<Who> in
                    let options = CallOptions.default.with(\.cachePolicy, step.policy)
                    return try await service.send(
                        Endpoint<Who>(.get, "who", parameters: ["r": String(step.r)], options: options))
                }
            }, maximumConcurrent: 24)

        var answered = 0
        var fromCache = 0
        for (step, result) in zip(plan, outcomes) {
            switch result {
            case .success(let response):
                #expect(response.value.user == step.user, "\(step.user) got \(response.value.user)'s answer")
                answered += 1
                if response.isFromCache { fromCache += 1 }
            case .failure(let error):
                // A retried 503 may meet another 503, a refreshed token another expiry: an
                // error is allowed, another user's answer is not.
                #expect(error.code == .httpStatus, "\(step.user): \(error)")
            }
        }
        #expect(outcomes.count == plan.count)
        #expect(answered >= plan.count * 3 / 4, "only \(answered) of \(plan.count) calls were answered")
        #expect(fromCache > 0)
    }
}

import CourierLocking
import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier
@testable import CourierRedis

/// Two processes (two fleets, each with its own cache and Redis connections) sharing one Redis,
/// each with a client per user — bearer users, API-key users (a custom `authorization`
/// builder) and an anonymous client — calling the same URLs in a seeded random order: private
/// answers with validators, some fresh for a minute and some revalidated on every use,
/// reloads, and 503s. The server answers with the user it saw. Whatever the interleaving and
/// whichever process stored an answer in Redis, a call gets its own user's answer or an
/// error, never another user's.
@Suite(.serialized) struct FleetIsolationStressTests {
    struct Who: Codable, Equatable {
        var user: String
        var r: String
    }

    static func respond(_ request: RecordedRequest, count: Int) -> ScriptedResponse {
        if count % 11 == 0 { return .json(["error": "busy"], status: 503) }
        let user: String
        if let authorization = request.header("Authorization"), authorization.hasPrefix("Bearer tok-") {
            user = String(authorization.dropFirst("Bearer tok-".count))
        } else if let key = request.header("X-Api-Key"), key.hasPrefix("key-") {
            user = String(key.dropFirst(4))
        } else {
            user = "anon"
        }
        let r = request.queryValue("r") ?? ""
        let tag = "\"\(user)-\(r)\""
        if request.header("If-None-Match") == tag {
            var notModified = ScriptedResponse.status(304)
            notModified.headers[.eTag] = tag
            return notModified
        }
        var answer = ScriptedResponse.json(["user": user, "r": r])
        answer.headers[.eTag] = tag
        answer.headers[.cacheControl] = Int(r).map { $0 % 2 == 0 } == true ? "private, max-age=60" : "private, no-cache"
        answer.delay = .milliseconds(count % 3)
        return answer
    }

    @Test(arguments: [UInt64(7), 8])
    func everyCallGetsItsOwnUsersAnswerAcrossTheFleet(seed: UInt64) async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let requests = LockedValue(0)
        server.route("/who") { request in
            Self.respond(
                request,
                count: requests.withLock {
                    $0 += 1; return $0
                })
        }
        let apiKey = HTTPField.Name("X-Api-Key")!
        // user name → credential (nil: anonymous), and how the client sends it.
        let users: [(name: String, credential: String?, header: HTTPClient.AuthorizationHeader)] = [
            ("ann", "tok-ann", .bearer), ("bob", "tok-bob", .bearer), ("cat", "tok-cat", .bearer),
            ("dan", "key-dan", .custom { [HTTPField(name: apiKey, value: $0)] }),
            ("eve", "key-eve", .custom { [HTTPField(name: apiKey, value: $0)] }),
            ("anon", nil, .bearer),
        ]
        var clients: [(process: Int, user: String, client: HTTPClient)] = []
        for process in 0..<2 {
            // Long command timeouts: this test is about isolation, not about a loaded machine.
            let fleet = try redis.fleet(commandTimeout: .seconds(10))
            let cache = try fleet.cache(.init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
            for user in users {
                let client = try HTTPClient(
                    configuration: .init(
                        baseURL: server.baseURL, timeout: .seconds(600), stallTimeout: .seconds(600),
                        authorization: user.header, notificationCenter: NotificationCenter(), cache: cache))
                if let credential = user.credential { try client.logIn(credential: credential) }
                clients.append((process, user.name, client))
            }
        }

        var random = SplitMix64(seed: seed)
        let plan = (0..<300).map { _ in
            (clients.randomElement(using: &random)!, Int.random(in: 0..<4, using: &random), Bool.random(using: &random))
        }
        // Run through the library's own batch, 16 calls at a time.
        let outcomes = await Batch.run(
            plan.map { (entry, r, reload) in
                { @Sendable () async throws -> (Who, Bool) in
                    var request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/who?r=\(r)")
                    if reload { request.headerFields[.cacheControl] = "max-age=0" }
                    let response = try await entry.client.send(request)
                    guard response.status == .ok else { throw CourierError(.httpStatus, "\(response.status)") }
                    return (try JSONDecoder().decode(Who.self, from: response.body), response.isFromCache)
                }
            }, maximumConcurrent: 16)
        var answered = 0
        var fromCache = 0
        for ((entry, _, _), result) in zip(plan, outcomes) {
            switch result {
            case .success(let (who, cached)):
                #expect(who.user == entry.user, "\(entry.user) got \(who.user)'s answer")
                answered += 1
                if cached { fromCache += 1 }
            case .failure(let error):
                #expect(error.code == .httpStatus, "\(entry.user): \(error)")
            }
        }
        #expect(answered >= plan.count * 3 / 4, "only \(answered) of \(plan.count) calls were answered")
        #expect(fromCache > 0)
    }
}

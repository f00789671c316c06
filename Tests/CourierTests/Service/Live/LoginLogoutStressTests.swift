import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// Three clients on one notification center while one account logs in and out 1,000 times:
/// client A of scope "a" (the account that cycles), client B of scope "b" (logged in once,
/// for good) and client C without a scope (it follows every notification). Calls run on all
/// three at once; the server answers 503 to a seeded share of first attempts (retried), and
/// for some of them ends the session before it answers, so that their retry comes after a
/// logout and the next user's login. Invariants: every attempt of one call carries the same
/// credential (a call never goes on as the next user, nor without its credential), B only ever
/// sends its own, and when it is over no call, observer or waiter is left behind.
@Suite struct LoginLogoutStressTests {
    static let callField = HTTPField.Name("X-Call")!
    struct Who: Decodable, Sendable { var token: String }

    /// One client and its service, of `scope`.
    static func account(_ server: TestServer, center: NotificationCenter, scope: SessionScope?) throws
        -> ServiceCore
    {
        let client = try HTTPClient(
            configuration: HTTPClient.Configuration(
                baseURL: server.baseURL, timeout: TestTimeBound.scaled(.seconds(60)),
                stallTimeout: TestTimeBound.scaled(.seconds(60)), notificationCenter: center, sessionScope: scope))
        return ServiceCore(
            client: client,
            configuration: ServiceConfiguration(
                retryPolicy: RetryPolicy(maximumRetries: 3, jitter: 0), clock: ManualServiceClock(autoAdvance: true)))
    }

    @Test(arguments: [UInt64(0x5EED_0001), 0x5EED_0002])
    func aThousandLoginLogoutCyclesNeverMixTwoUsersInOneCall(seed: UInt64) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let center = NotificationCenter()
        let (a, b) = (SessionScope("a"), SessionScope("b"))
        let cycles = ServiceCounter()
        // Ends the session of scope "a" and starts the next one: what the cycler does, and what
        // the server does before it answers a call it was told to break.
        let cycle: @Sendable () -> Void = {
            let next = cycles.increment()
            a.postLogOut(to: center)
            a.postLogIn(credential: "a-\(next)", to: center)
        }
        // The first attempt of a call answers 503 when its X-Call says so ("503" or "503+cycle").
        let attempts = LockedValue<Set<String>>([])
        server.route("/who") { request in
            let call = request.header("X-Call") ?? ""
            let first = attempts.withLock { $0.insert(call).inserted }
            if first, call.hasSuffix("/503+cycle") { cycle() }
            if first, call.contains("/503") { return .status(503) }
            return .json(["token": request.header("authorization") ?? ""])
        }
        var services: [ServiceCore] = [
            try Self.account(server, center: center, scope: a), try Self.account(server, center: center, scope: b),
            try Self.account(server, center: center, scope: nil),
        ]
        weak let clientA = services[0].client
        b.postLogIn(credential: "b-only", to: center)
        a.postLogIn(credential: "a-0", to: center)

        var random = SplitMix64(seed: seed)
        // The calls' plan, made before anything runs: which client, and what the first attempt gets.
        let plan: [(client: Int, fault: String)] = (0..<300).map { _ in
            let fault =
                switch random.next() % 6 {
                case 0: "503"
                case 1: "503+cycle"
                default: "ok"
                }
            return (Int(random.next() % 3), fault)
        }
        let pauses = (0..<1000).map { _ in random.next() % 4 == 0 }
        let outcomes = await Self.run(plan, on: services, cycling: cycle, pausing: pauses)

        // Once a call sent a credential, each of its later attempts carried that one: none of
        // the next user's, and not none. (A call that started between a logout and the next
        // login went out without one; a retry of it after the login may carry it.)
        var sent: [String: [String]] = [:]
        for request in server.recordedRequests(path: "/who") {
            sent[request.header("X-Call") ?? "", default: []].append(request.header("authorization") ?? "none")
        }
        for (call, credentials) in sent {
            let carried = credentials.drop { $0 == "none" }
            #expect(Set(carried).count <= 1, "call \(call) was sent with \(credentials)")
        }
        for (index, step) in plan.enumerated() {
            let credentials = sent["\(index)/\(step.fault)"] ?? []
            switch outcomes[index] {
            case .success(let token)?:
                #expect(
                    credentials.last == (token.isEmpty ? "none" : token), "call \(index) got the answer to \(token)")
                if step.client == 1 { #expect(token == "Bearer b-only", "B's call got the answer to \(token)") }
            case .failure(let error)?:
                // The only way a call may end: its session ended before one of its attempts.
                #expect(error.code == .authentication, "call \(index): \(error)")
                #expect(step.client != 1, "B's call failed: \(error)")
            case nil:
                Issue.record("call \(index) did not end")
            }
            if step.client == 1 { #expect(Set(credentials) == ["Bearer b-only"], "B sent \(credentials)") }
        }
        #expect(services[1].client.isLoggedIn)
        #expect(cycles.value >= 1000)
        for service in services { #expect(service.calls.count == 0) }

        // Nothing is left behind: the clients go away with their services, and so do their observers.
        services.removeAll()
        #expect(clientA == nil)
        a.postLogOut(to: center)
        b.postLogOut(to: center)
    }

    /// Runs the calls of `plan` on `services` while `cycle` runs 1,000 times (yielding after the
    /// cycles `pauses` marks).
    /// - Returns: each call's answer (the credential the server saw) or error, by its index.
    static func run(
        _ plan: [(client: Int, fault: String)], on services: [ServiceCore],
        cycling cycle: @escaping @Sendable () -> Void,
        pausing pauses: [Bool]
    ) async -> [Int: Result<String, CourierError>] {
        await withTaskGroup(of: (Int, Result<String, CourierError>).self) { group in
            group.addTask {
                for pause in pauses {
                    cycle()
                    if pause { await Task.yield() }
                }
                return (-1, .success(""))
            }
            for (index, step) in plan.enumerated() {
                group.addTask {
                    let options = CallOptions.default.with(\.headers, [Self.callField: "\(index)/\(step.fault)"])
                    do throws(CourierError) {
                        let who: Who = try await services[step.client].get("who", options: options)
                        return (index, .success(who.token))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var outcomes: [Int: Result<String, CourierError>] = [:]
            for await (index, outcome) in group where index >= 0 { outcomes[index] = outcome }
            return outcomes
        }
    }
}

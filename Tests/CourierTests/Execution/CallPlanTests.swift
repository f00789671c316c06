import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// What a call works out before its first attempt, kept for the calls after it with the same
/// inputs (`CallPlan`, `CallPlanCache`): reused only when every input is the same, never across
/// settings changes or other options, and kept for the endpoints called over and over.
@Suite struct CallPlanTests {
    private static func user(_ server: TestServer) {
        server.route("/users/1") { _ in .json(["id": 1, "name": "Ann"]) }
        server.route("/users/2") { _ in .json(["id": 2, "name": "Bob"]) }
    }

    @Test func callsToTheSameEndpointShareOnePlan() async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.user(server)
        let service = try ServiceFixture.service(server)
        for _ in 0..<5 {
            let _: ServiceUser = try await service.get("users/1")
        }
        #expect(service.prepared.plans.count == 1)
        // Options a call used before (and still alive) have their plans kept at once.
        let _: ServiceUser = try await service.get("users/2")
        #expect(service.prepared.plans.count == 2)
        #expect(server.count("/users/1") == 5)
        #expect(server.count("/users/2") == 1)
    }

    /// A plan keeps the identity of its last call: the next call with the same request takes
    /// it instead of building it again; a call with another credential builds its own.
    @Test func aPlanKeepsItsLastCallsIdentityForTheSameRequestOnly() async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.user(server)
        let service = try ServiceFixture.service(server)
        try service.client.logIn(credential: "alice")
        let _: ServiceUser = try await service.get("users/1")
        let plan = try #require(service.prepared.plans.kept.first)
        let first = try #require(plan.identityMemo.withLock { $0 })
        let _: ServiceUser = try await service.get("users/1")
        #expect(service.prepared.plans.kept.first === plan)
        #expect(plan.identityMemo.withLock { $0 } === first)
        try service.client.logIn(credential: "bob")
        let _: ServiceUser = try await service.get("users/1")
        let bob = try #require(plan.identityMemo.withLock { $0 })
        #expect(bob !== first)
        #expect(bob.identity != first.identity)
        #expect(server.count("/users/1") == 3)
    }

    /// The jar's cookies are in the kept identity's values: a session cookie stored between two
    /// calls of one plan makes the second call's identity its own.
    @Test func aCookieStoredBetweenTwoCallsOfAPlanChangesItsIdentity() async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.user(server)
        let jar = CookieJar()
        let service = try ServiceFixture.service(server) { $0.cookieJar = jar }
        let _: ServiceUser = try await service.get("users/1")
        let plan = try #require(service.prepared.plans.kept.first)
        let before = try #require(plan.identityMemo.withLock { $0 })
        #expect(before.varying.cookies == nil)
        var answer = HTTPResponse(status: .ok)
        answer.headerFields[.setCookie] = "sid=alice; Path=/"
        let url = try #require(service.client.configuration.baseURL)
        jar.store(from: answer, for: HTTPRequest(method: .get, url: url))
        let _: ServiceUser = try await service.get("users/1")
        let after = try #require(plan.identityMemo.withLock { $0 })
        #expect(after.varying.cookies == "sid=alice")
        #expect(after.identity != before.identity)
    }

    /// Options made anew for each call have storage of their own each time; a plan holds the
    /// storage it was made with, so a later call's options can never take its address and be
    /// mistaken for it (each call sends its own header).
    /// With a service timeout, the plan's options are a new value (the call's with the
    /// timeout): the plan still holds the call's own.
    @Test(arguments: [false, true])
    func optionsMadeForEachCallAreEachCallsOwn(withServiceTimeout: Bool) async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.user(server)
        let service = try ServiceFixture.service(server)
        if withServiceTimeout { try service.updateSettings { $0.timeout = .seconds(30) } }
        for index in 0..<40 {
            let options = CallOptions(headers: [HTTPField.Name("X-Call")!: "\(index)"])
            let _: ServiceUser = try await service.get("users/1", options: options)
        }
        let sent = server.recordedRequests(path: "/users/1").map { $0.header("X-Call") }
        #expect(sent == (0..<40).map { "\($0)" })
        // No plan of options made for one call is kept.
        #expect(service.prepared.plans.count == 0)
    }

    /// A plan a later call used is passed over once before it is replaced: a stream of calls
    /// whose options are made anew replaces their own plans, not the endpoint's.
    @Test func aPlanCallsUseOutlivesPlansNoCallUses() async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.user(server)
        let service = try ServiceFixture.service(server)
        let _: ServiceUser = try await service.get("users/2")
        let _: ServiceUser = try await service.get("users/2")
        for index in 0..<(3 * CallPlanCache.capacity) {
            let options = CallOptions(headers: [HTTPField.Name("X-Call")!: "\(index)"])
            let _: ServiceUser = try await service.get("users/1", options: options)
        }
        let kept = service.prepared.plans.plan(
            .get, "users/2", service.prepared.acceptHeader, .default, service.client.liveSettings,
            service.live.withLock { $0 })
        #expect(kept != nil)
    }

    @Test func aSettingsChangeMakesANewPlan() async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.user(server)
        let service = try ServiceFixture.service(server)
        let _: ServiceUser = try await service.get("users/1")
        try service.updateSettings { $0.headers[HTTPField.Name("X-Tenant")!] = "blue" }
        let _: ServiceUser = try await service.get("users/1")
        let other = try TestServer()
        defer { other.stop() }
        Self.user(other)
        try service.client.updateSettings { $0.baseURL = other.baseURL }
        let _: ServiceUser = try await service.get("users/1")
        let sent = server.recordedRequests(path: "/users/1").map { $0.header("X-Tenant") }
        #expect(sent == [nil, "blue"])
        #expect(other.recordedRequests(path: "/users/1").map { $0.header("X-Tenant") } == ["blue"])
    }

    /// Calls on many endpoints (more than the cache keeps), each task with options of its own
    /// and half of them made anew per call, while the service's headers change: every request
    /// carries its own call's header and one of the service's values, never another call's.
    @Test func plansReplacedUnderContentionNeverMixCalls() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let endpoints = 2 * CallPlanCache.capacity
        for index in 0..<endpoints {
            server.route("/items/\(index)") { _ in .json(["id": index, "name": "item"]) }
        }
        let service = try ServiceFixture.service(server)
        let tenant = HTTPField.Name("X-Tenant")!
        let caller = HTTPField.Name("X-Caller")!
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<6 {
                group.addTask {
                    let shared = CallOptions(headers: [caller: "task-\(task)"])
                    for round in 0..<60 {
                        let options = round.isMultiple(of: 2) ? shared : CallOptions(headers: [caller: "task-\(task)"])
                        let _: ServiceUser = try await service.get(
                            "items/\((task * 7 + round) % endpoints)", options: options)
                    }
                }
            }
            group.addTask {
                for change in 0..<40 {
                    try service.updateSettings { $0.headers[tenant] = change.isMultiple(of: 2) ? "blue" : "green" }
                    await Task.yield()
                }
            }
            try await group.waitForAll()
        }
        let sent = server.recordedRequests.filter { $0.path.hasPrefix("/items/") }
        #expect(sent.count == 6 * 60)
        for task in 0..<6 {
            #expect(sent.filter { $0.header("X-Caller") == "task-\(task)" }.count == 60)
        }
        #expect(sent.allSatisfy { [nil, "blue", "green"].contains($0.header("X-Tenant")) })
        #expect(service.prepared.plans.count <= CallPlanCache.capacity)
    }

    /// A call's own options, and what their closures capture, end with the call: no plan
    /// keeps them.
    @Test func optionsMadeForACallAreReleasedAfterIt() async throws {
        final class Screen: Sendable {}
        let server = try TestServer()
        defer { server.stop() }
        Self.user(server)
        let service = try ServiceFixture.service(server)
        weak var released: Screen?
        for _ in 0..<3 {
            let screen = Screen()
            released = screen
            let options = CallOptions(downloadProgress: { _ in _ = screen })
            let _: ServiceUser = try await service.get("users/1", options: options)
        }
        #expect(released == nil)
    }

    /// Two calls that miss at once make the same plan twice: the cache keeps one.
    @Test func twoPlansFromTheSameInputsTakeOneEntry() throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server)
        let settings = service.live.withLock { $0 }
        func made() throws -> CallPlan {
            try CallPlan(
                service, method: .get, path: "users/1", parameters: nil, body: nil, options: .default,
                acceptHeader: service.prepared.acceptHeader, clientSettings: service.client.liveSettings,
                serviceSettings: settings, pool: nil)
        }
        let (first, second) = (try made(), try made())
        #expect(first !== second)
        service.prepared.plans.keep(first, options: .default)
        service.prepared.plans.keep(second, options: .default)
        #expect(service.prepared.plans.count == 1)
        let other = try CallPlan(
            service, method: .get, path: "users/2", parameters: nil, body: nil, options: .default,
            acceptHeader: service.prepared.acceptHeader, clientSettings: service.client.liveSettings,
            serviceSettings: settings, pool: nil)
        service.prepared.plans.keep(other, options: .default)
        #expect(service.prepared.plans.count == 2)
    }

    /// The format is part of the plan: the same path read as another model with another
    /// `Accept` is another plan.
    @Test func anotherFormatIsAnotherPlan() async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.user(server)
        let service = try ServiceFixture.service(server)
        for _ in 0..<2 {
            let _: ServiceUser = try await service.get("users/1")
            let text: String = try await service.get("users/1", serializer: StringResponseSerializer())
            #expect(text.contains("Ann"))
        }
        let accepts = server.recordedRequests(path: "/users/1").map { $0.header("Accept") }
        #expect(accepts.count == 4)
        #expect(accepts[0] != accepts[1])
        #expect(accepts[0] == accepts[2] && accepts[1] == accepts[3])
        #expect(service.prepared.plans.count == 2)
    }

    /// A per-call server is the API's own while the service's pool lists it. The plan of a
    /// call to it kept that decision: after `setServers` took the server out of the pool, the
    /// calls with the same options still sent it the credential (the client's and the
    /// authentication's). A change of the pool's servers now makes a new plan.
    @Test func aServerTakenOutOfThePoolGetsNoCredentialFromAKeptPlan() async throws {
        let api = try TestServer()
        let retired = try TestServer()
        defer {
            api.stop()
            retired.stop()
        }
        let client = try HTTPClient(
            configuration: HTTPClient.Configuration(baseURL: api.baseURL, notificationCenter: .init()))
        try client.logIn(credential: "api-token")
        let production = ServerEnvironment(rawValue: "production")
        let pool = try ServerPool(
            environments: [production: [ServiceFixture.base(api), ServiceFixture.base(retired)]],
            current: production)
        let service = ServiceCore(
            client: client, configuration: ServiceConfiguration(servers: pool, retryPolicy: .none))
        // Options made once, as an app keeps them for the calls to one server.
        let toRetired = CallOptions.default.with(\.server, retired.baseURL)

        let before: EchoModel = try await service.get("echo", options: toRetired)
        #expect(before.headers["authorization"] == "Bearer api-token")
        // The server leaves the API (every environment): no credential from now on.
        try pool.setServers([api.baseURL], for: production)
        let after: EchoModel = try await service.get("echo", options: toRetired)
        #expect(after.headers["authorization"] == nil)
        #expect(retired.recordedRequests.map { $0.header("Authorization") } == ["Bearer api-token", nil])
        // And back: a server the pool lists again gets it again.
        try pool.setServers([api.baseURL, retired.baseURL], for: production)
        let again: EchoModel = try await service.get("echo", options: toRetired)
        #expect(again.headers["authorization"] == "Bearer api-token")
    }
}

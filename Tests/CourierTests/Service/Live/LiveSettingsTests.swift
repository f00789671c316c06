import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Settings changed on a live client or service: calls in flight keep the values they started
/// with (every attempt), new calls see the new ones.
@Suite struct LiveSettingsTests {
    private static let env = HTTPField.Name("X-Env")!
    private static let svc = HTTPField.Name("X-Svc")!

    /// `/who` answers `{"id": n, "name": <X-Env or X-Svc header>}`; with `held`, the first
    /// request waits for release and answers 503 (so the call retries).
    private static func whoRoute(_ server: TestServer, held: HeldRoute? = nil, header: HTTPField.Name = env) {
        let count = ServiceCounter()
        server.route("/who") { request in
            let number = count.increment()
            if number == 1, let held {
                held.hold()
                return .status(503)
            }
            return .json(["id": number, "name": request.headers[header] ?? "none"])
        }
    }

    @Test func clientBaseURLAndHeadersChangeForNewCallsOnly() async throws {
        let first = try TestServer()
        let second = try TestServer()
        defer {
            first.stop()
            second.stop()
        }
        let held = HeldRoute()
        Self.whoRoute(first, held: held)
        Self.whoRoute(second)
        let client = try HTTPClient(
            configuration: HTTPClient.Configuration(
                baseURL: first.baseURL, defaultHeaders: [Self.env: "a"], notificationCenter: NotificationCenter()))
        let service = ServiceCore(
            client: client,
            configuration: ServiceConfiguration(
                retryPolicy: RetryPolicy(jitter: 0), clock: ManualServiceClock(autoAdvance: true)))

        let parked = Task { () async throws -> ServiceUser in try await service.get("who") }
        while held.arrived.value == 0 { await Task.yield() }
        try client.updateSettings {
            $0.baseURL = second.baseURL
            $0.defaultHeaders[Self.env] = "b"
        }
        #expect(client.settings.baseURL == second.baseURL)
        let fresh: ServiceUser = try await service.get("who")
        #expect(fresh.name == "b")
        #expect(second.count("/who") == 1)

        held.release(1)
        // The parked call's retry (after the 503) still goes where, and with what, it started.
        #expect(try await parked.value.name == "a")
        #expect(first.count("/who") == 2)
        #expect(first.recordedRequests(path: "/who").map { $0.headers[Self.env] } == ["a", "a"])
        // Plain `send` follows the new base URL too.
        let raw = try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/who"))
        #expect(raw.status == .ok)
        #expect(second.count("/who") == 2)
    }

    @Test func environmentSwitchDoesNotMoveACallInFlight() async throws {
        let staging = try TestServer()
        let production = try TestServer()
        defer {
            staging.stop()
            production.stop()
        }
        let held = HeldRoute()
        Self.whoRoute(staging, held: held)
        Self.whoRoute(production)
        let pool = try ServerPool(
            environments: [.staging: [ServiceFixture.base(staging)], .production: [ServiceFixture.base(production)]],
            current: .staging)
        let service = try ServiceFixture.service(staging) { $0.servers = pool }
        let parked = Task { () async throws -> ServiceUser in try await service.get("who") }
        while held.arrived.value == 0 { await Task.yield() }
        try pool.switchEnvironment(to: .production)
        let fresh: ServiceUser = try await service.get("who")
        #expect(fresh.id == 1)
        held.release(1)
        // The parked call's retry after its 503 stays in the environment it started in.
        #expect(try await parked.value.id == 2)
        #expect(staging.count("/who") == 2)
        #expect(production.count("/who") == 1)
    }

    @Test func clientTimeoutChangesForNewCallsOnly() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.route("/slow") { _ in
            held.hold()
            return .json(["id": 1, "name": "slow"])
        }
        let service = try ServiceFixture.service(server) { $0.retryPolicy = .none }
        let parked = Task { () async throws -> ServiceUser in try await service.get("slow") }
        while held.arrived.value == 0 { await Task.yield() }
        try service.client.updateSettings { $0.timeout = .milliseconds(200) }
        // A new call gets the short timeout while the first is still parked (on its own
        // transfer: an identical GET in flight would otherwise be shared, timeout and all).
        await #expect {
            let _: ServiceUser = try await service.get("slow", options: CallOptions.default.with(\.deduplicates, false))
        } throws: { error in
            (error as? CourierError)?.code == .timedOut
        }
        held.release(2)
        #expect(try await parked.value.name == "slow")
    }

    @Test func serviceHeadersRetryPolicyAndTimeoutChangeForNewCallsOnly() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        Self.whoRoute(server, held: held, header: Self.svc)
        server.route("/down") { _ in .status(503) }
        let service = try ServiceFixture.service(server) { $0.headers = [Self.svc: "1"] }
        #expect(service.settings.headers[Self.svc] == "1")

        let parked = Task { () async throws -> ServiceUser in try await service.get("who") }
        while held.arrived.value == 0 { await Task.yield() }
        try service.updateSettings {
            $0.headers[Self.svc] = "2"
            $0.retryPolicy = .none
        }
        // New calls: the new header, and no retry of the 503.
        await #expect {
            let _: ServiceUser = try await service.get("down")
        } throws: { error in
            (error as? CourierError)?.status?.code == 503
        }
        #expect(server.count("/down") == 1)
        #expect(server.recordedRequests(path: "/down").first?.headers[Self.svc] == "2")

        held.release(1)
        // The parked call keeps its retry policy (it retries the 503) and its header.
        #expect(try await parked.value.name == "1")
        #expect(server.recordedRequests(path: "/who").map { $0.headers[Self.svc] } == ["1", "1"])

        // A service timeout applies to calls that name none.
        server.route("/slow") { _ in
            held.hold()
            return .json(["id": 1, "name": "slow"])
        }
        try service.updateSettings { $0.timeout = .milliseconds(200) }
        await #expect {
            let _: ServiceUser = try await service.get("slow")
        } throws: { error in
            (error as? CourierError)?.code == .timedOut
        }
        held.release(1)
    }

    @Test func theCredentialFollowsTheNewBaseURL() async throws {
        let first = try TestServer()
        let second = try TestServer()
        let elsewhere = try TestServer()
        defer {
            first.stop()
            second.stop()
            elsewhere.stop()
        }
        let client = try HTTPClient(
            configuration: HTTPClient.Configuration(baseURL: first.baseURL, notificationCenter: NotificationCenter()))
        try client.logIn(credential: "token")
        try client.updateSettings { $0.baseURL = second.baseURL }
        _ = try await client.send(method: .get, url: second.url("/echo"))
        _ = try await client.send(method: .get, url: elsewhere.url("/echo"))
        #expect(second.recordedRequests(path: "/echo").first?.header("Authorization") == "Bearer token")
        #expect(elsewhere.recordedRequests(path: "/echo").first?.header("Authorization") == nil)
    }

    /// A client made without a base URL (and without `credentialOrigins`) sends its credential
    /// wherever a request goes, having no origin of its own; once `updateSettings` gives it a
    /// base URL it has one. The old code kept sending the credential to every origin: the
    /// scope read only the origins the client was made with.
    @Test func aBaseURLSetLaterScopesTheCredentialOfAClientMadeWithoutOne() async throws {
        let api = try TestServer()
        let elsewhere = try TestServer()
        defer {
            api.stop()
            elsewhere.stop()
        }
        let client = try HTTPClient(configuration: HTTPClient.Configuration(notificationCenter: NotificationCenter()))
        try client.logIn(credential: "token")
        try client.updateSettings { $0.baseURL = api.baseURL }
        _ = try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/echo"))
        _ = try await client.send(method: .get, url: api.url("/echo"))
        _ = try await client.send(method: .get, url: elsewhere.url("/echo"))
        #expect(
            api.recordedRequests(path: "/echo").map { $0.header("Authorization") } == ["Bearer token", "Bearer token"])
        #expect(elsewhere.recordedRequests(path: "/echo").first?.header("Authorization") == nil)
    }

    @Test func aRefusedChangeLeavesEverySettingAsItWas() throws {
        let client = try HTTPClient(
            configuration: HTTPClient.Configuration(
                baseURL: URL(string: "http://127.0.0.1:1/v1"), notificationCenter: NotificationCenter()))
        #expect {
            try client.updateSettings {
                $0.defaultHeaders[Self.env] = "new"
                $0.timeout = .zero
            }
        } throws: { error in
            (error as? CourierError)?.code == .configuration
        }
        #expect {
            try client.updateSettings {
                $0.defaultHeaders[Self.env] = "new"
                $0.baseURL = URL(string: "ftp://example.com/")
            }
        } throws: { error in
            (error as? CourierError)?.code == .configuration
        }
        #expect(client.settings.defaultHeaders[Self.env] == nil)
        #expect(client.settings.baseURL == URL(string: "http://127.0.0.1:1/v1"))
        #expect(client.settings.timeout == .seconds(60))

        let service = ServiceCore(client: client)
        #expect {
            try service.updateSettings {
                $0.headers[Self.svc] = "x"
                $0.timeout = .seconds(-1)
            }
        } throws: { error in
            (error as? CourierError)?.code == .configuration
        }
        #expect(service.settings.headers[Self.svc] == nil)
    }

    /// The client refuses when it is made a base URL that `updateSettings` refuses and every call
    /// would fail on: the old code made the client and each call then failed with the same
    /// `.configuration` error, far from the line that set it.
    @Test(arguments: ["ftp://example.com/", "https://example.com/v1?key=1", "https://user:pw@example.com/"])
    func aBaseURLThatCannotWorkIsRefusedWhenTheClientIsMade(_ text: String) throws {
        let error = try #require(throws: CourierError.self) {
            try HTTPClient(
                configuration: HTTPClient.Configuration(
                    baseURL: URL(string: text), notificationCenter: NotificationCenter()))
        }
        #expect(error.code == .configuration, "\(error)")
        #expect(error.message.contains("base URL"), "\(error)")
    }
    @Test func concurrentUpdatesAreNeverLost() async throws {
        let client = try HTTPClient(configuration: HTTPClient.Configuration(notificationCenter: NotificationCenter()))
        let service = ServiceCore(client: client)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try? client.updateSettings { settings in
                        let count = Int(settings.defaultHeaders[Self.env] ?? "0") ?? 0
                        settings.defaultHeaders[Self.env] = String(count + 1)
                    }
                    try? service.updateSettings { settings in
                        let count = Int(settings.headers[Self.svc] ?? "0") ?? 0
                        settings.headers[Self.svc] = String(count + 1)
                    }
                }
            }
        }
        #expect(client.settings.defaultHeaders[Self.env] == "50")
        #expect(service.settings.headers[Self.svc] == "50")
    }
}

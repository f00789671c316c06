import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct APIServiceOptionsTests {
    struct Echo: Decodable, Sendable {
        var method: String
        var body: String
        var headers: [String: String]
    }

    @Test func perCallSerializerHeadersAndSeparateServer() async throws {
        let server = try TestServer()
        let other = try TestServer()
        defer {
            server.stop()
            other.stop()
        }
        let service = try ServiceFixture.service(server) { $0.headers = [.init("X-Env")!: "global"] }
        let options = CallOptions(
            requestSerializer: .form, headers: [.init("X-Env")!: "call"], server: ServiceFixture.base(other).url)
        let echo: Echo = try await service.post("echo", body: ["name": "a b", "tag": "x"], options: options)
        #expect(echo.body == "name=a%20b&tag=x" || echo.body == "name=a+b&tag=x")
        #expect(echo.headers["content-type"]?.hasPrefix("application/x-www-form-urlencoded") == true)
        #expect(echo.headers["x-env"] == "call")
        #expect(server.requestCount == 0)
        #expect(other.requestCount == 1)
    }

    @Test func anUnusablePerCallServerIsAConfigurationError() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server)
        let unusable = try #require(URL(string: "ftp://files.example.com/v1"))
        let options = CallOptions(server: unusable)
        let error = await #expect(throws: CourierError.self) {
            let _: Echo = try await service.get("echo", options: options)
        }
        #expect(error?.code == .configuration)
        #expect(server.requestCount == 0)
    }

    @Test func environmentsSwitchAtRuntime() async throws {
        let staging = try TestServer()
        let production = try TestServer()
        defer {
            staging.stop()
            production.stop()
        }
        let pool = try ServerPool(
            environments: [.staging: [ServiceFixture.base(staging)], .production: [ServiceFixture.base(production)]],
            current: .staging)
        let service = try ServiceFixture.service(staging) { $0.servers = pool }
        let _: Echo = try await service.get("echo")
        try pool.switchEnvironment(to: .production)
        let _: Echo = try await service.get("echo")
        #expect(staging.requestCount == 1)
        #expect(production.requestCount == 1)
    }

    @Test func perCallTimeoutEndsTheCall() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server) { $0.retryPolicy = .none }
        do {
            let _: Echo = try await service.get("delay/1500", options: .default.with(\.timeout, .milliseconds(150)))
            Issue.record("expected a timeout")
        } catch {
            #expect(error.code == .timedOut)
        }
    }

    @Test func swiftTaskCancellationCancelsTheCall() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.route("/slow") { _ in
            held.hold()
            return .json(["method": "GET", "body": "", "headers": [String: String]()])
        }
        let service = try ServiceFixture.service(server)
        let task = Task { () async throws(CourierError) -> Echo in try await service.get("slow") }
        while held.arrived.value == 0 { await Task.yield() }
        task.cancel()
        let result = await task.result
        held.release(1)
        guard case .failure(let error) = result else {
            Issue.record("expected cancellation")
            return
        }
        #expect((error as? CourierError)?.code == .cancelled)
    }

    @Test func preprocessingUnwrapsAnEnvelopePerCall() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/wrapped") { _ in .json(["code": 0, "msg": "ok", "data": ["id": 3, "name": "inner"]]) }
        let service = try ServiceFixture.service(server)
        let user: ServiceUser = try await service.get("wrapped", options: CallOptions(preprocessors: [.envelope]))
        #expect(user == ServiceUser(id: 3, name: "inner"))
    }

    @Test func customAdaptersAndRetriersRunInOrder() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.status(418))
        server.enqueue(.json(["method": "GET", "body": "", "headers": [String: String]()]))
        let order = LockedValue<[String]>([])
        let service = try ServiceFixture.service(server) { configuration in
            configuration.adapters = [
                .adapter { request, context in
                    order.withLock { $0.append("service adapter \(context.attempt)") }
                    var request = request
                    request.head.headerFields[.init("X-Signed")!] = "yes"
                    return request
                }
            ]
            configuration.retriers = [
                .retrier { _, _, _ in
                    order.withLock { $0.append("service retrier") }
                    return .doNotRetry
                }
            ]
        }
        let options = CallOptions(
            adapters: [
                .adapter { request, context in
                    order.withLock { $0.append("call adapter \(context.attempt)") }
                    return request
                }
            ],
            retriers: [
                .retrier { _, failure, _ in
                    order.withLock { $0.append("call retrier \(failure.response?.status.code ?? 0)") }
                    return .retry
                }
            ])
        let _: Echo = try await service.get("teapot", options: options)
        #expect(
            order.withLock { $0 } == [
                "service adapter 1", "call adapter 1", "call retrier 418", "service adapter 2", "call adapter 2",
            ])
        #expect(server.recordedRequests.allSatisfy { $0.header("X-Signed") == "yes" })
    }

    @Test func aRetrierThatAlwaysRetriesIsStoppedByTheAttemptCap() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/always-busy") { _ in .status(503) }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.maximumAttempts = 4
            configuration.retriers = [.retrier { _, _, _ in .retry }]
        }
        do {
            let _: ServiceUser = try await service.get("always-busy")
            Issue.record("expected a failure")
        } catch {
            #expect(error.status?.code == 503)
        }
        #expect(server.count("/always-busy") == 4)
    }

    @Test func cachedResponsesSayIsFromCacheAndPerCallPolicyApplies() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/config") { _ in
            ScriptedResponse.json(["id": 1, "name": "cfg"]).with(.cacheControl, "max-age=60")
        }
        let client = try ServiceFixture.cachingClient(server)
        let service = ServiceCore(client: client, configuration: ServiceConfiguration(retryPolicy: .none))
        let first = try await service.send(Endpoint<ServiceUser>.get("config"))
        let second = try await service.send(Endpoint<ServiceUser>.get("config"))
        #expect(!first.isFromCache)
        #expect(second.isFromCache)
        #expect(second.metrics.isFromCache)
        #expect(second.value.name == "cfg")
        #expect(server.count("/config") == 1)
        let reload = try await service.send(
            Endpoint<ServiceUser>.get("config", options: .default.with(\.cachePolicy, .reloadIgnoringCache)))
        #expect(!reload.isFromCache)
        #expect(server.count("/config") == 2)
    }

    @Test func cacheEventsReachTheServicesMonitorsWhileTheServiceLives() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/config") { _ in
            ScriptedResponse.json(["id": 1, "name": "cfg"]).with(.cacheControl, "max-age=60")
        }
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let client = try HTTPClient(
            configuration: HTTPClient.Configuration(
                baseURL: server.baseURL, notificationCenter: NotificationCenter(), cache: cache))
        let seen = LockedValue<[CacheEvent]>([])
        let monitor = ClosureEventMonitor(onCache: { event in seen.withLock { $0.append(event) } })
        var service: ServiceCore? = ServiceCore(
            client: client, configuration: ServiceConfiguration(retryPolicy: .none, monitors: [monitor]))
        _ = try await service?.send(Endpoint<ServiceUser>.get("config?token=secret"))
        _ = try await service?.send(Endpoint<ServiceUser>.get("config?token=secret"))
        let events = seen.withLock { $0 }
        #expect(events.contains { if case .miss = $0 { true } else { false } })
        #expect(events.contains { if case .stored = $0 { true } else { false } })
        #expect(events.contains { if case .hit(_, stale: false) = $0 { true } else { false } })
        #expect(!events.contains { "\($0)".contains("secret") })
        // A released service stops observing the client's cache.
        service = nil
        let countBefore = seen.withLock { $0.count }
        _ = try await client.send(method: .get, url: server.url("/config?token=secret"))
        #expect(seen.withLock { $0.count } == countBefore)
    }
}

@Suite struct RepeatedHeaderFieldTests {
    static let tag = HTTPField.Name("X-Tag")!
    static let env = HTTPField.Name("X-Env")!

    /// A field name given twice keeps both values at every layer: the client's defaults, the
    /// service's headers and a call's own; a call's name replaces every service value of it.
    @Test func repeatedNamesKeepEveryValueAndACallReplacesTheServiceName() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try HTTPClient(
            configuration: .init(
                baseURL: ServiceFixture.base(server).url,
                defaultHeaders: HTTPFields([
                    .init(name: .acceptLanguage, value: "de"), .init(name: .acceptLanguage, value: "fr"),
                ])))
        let service = ServiceCore(
            client: client,
            configuration: ServiceConfiguration(
                headers: HTTPFields([
                    .init(name: Self.env, value: "s1"), .init(name: Self.env, value: "s2"),
                    .init(name: Self.tag, value: "service"),
                ])))
        let options = CallOptions(
            headers: HTTPFields([.init(name: Self.tag, value: "a"), .init(name: Self.tag, value: "b")]))
        _ = try await service.head("anything/x", options: options)
        let sent = try #require(server.recordedRequests.first).headers
        #expect(sent[values: Self.tag] == ["a", "b"])
        #expect(sent[values: Self.env] == ["s1", "s2"])
        #expect(sent[values: .acceptLanguage] == ["de", "fr"])

        // The plain client path keeps repeated default values too.
        _ = try await client.send(HTTPRequest(.get, server.url("/anything/y")))
        let plain = try #require(server.recordedRequests.last).headers
        #expect(plain[values: .acceptLanguage] == ["de", "fr"])
    }
}

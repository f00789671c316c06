import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct APIServiceRetryTests {
    @Test func retriesA503ThenSucceedsWithBackoffOnTheInjectedClock() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.status(503))
        server.enqueue(.status(503))
        server.enqueue(.json(["id": 1, "name": "ok"]))
        let clock = ManualServiceClock(autoAdvance: true)
        let retries = LockedValue<[Duration]>([])
        let service = try ServiceFixture.service(server) { configuration in
            configuration.clock = clock
            configuration.retryPolicy = RetryPolicy(maximumRetries: 3, baseDelay: .milliseconds(300), jitter: 0)
            configuration.monitors = [
                ClosureEventMonitor(onRetry: { _, delay, _ in retries.withLock { $0.append(delay) } })
            ]
        }
        let response = try await service.send(Endpoint<ServiceUser>.get("users/1"))
        #expect(response.value.name == "ok")
        #expect(response.attempts == 3)
        #expect(server.requestCount == 3)
        #expect(clock.sleeps == [.milliseconds(300), .milliseconds(600)])
        #expect(retries.withLock { $0 } == [.milliseconds(300), .milliseconds(600)])
    }

    @Test func retryAfterSecondsAndDateAreHonoured() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let clock = ManualServiceClock(autoAdvance: true)
        let date = HTTPDateFormat.format(clock.wallTime.addingTimeInterval(30))
        server.enqueue(.status(429, headers: [.retryAfter: "7"]))
        server.enqueue(.status(503, headers: [.retryAfter: date]))
        server.enqueue(.json(["id": 2, "name": "after"]))
        let service = try ServiceFixture.service(server) { configuration in
            configuration.clock = clock
            configuration.retryPolicy = RetryPolicy(maximumRetries: 2, jitter: 0)
        }
        let user: ServiceUser = try await service.get("users/2")
        #expect(user.name == "after")
        #expect(clock.sleeps == [.seconds(7), .seconds(23)])
    }

    @Test func postIsRetriedOnlyWhenTheCallOptsIn() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server)
        server.enqueue(.status(503))
        do {
            let _: ServiceUser = try await service.post("users", body: ServiceUser(id: 0, name: "new"))
            Issue.record("expected a failure")
        } catch {
            #expect(error.code == .httpStatus)
            #expect(error.status?.code == 503)
        }
        #expect(server.requestCount == 1)
        server.enqueue(.status(503))
        server.enqueue(.json(["id": 5, "name": "new"]))
        let optIn = CallOptions.default.with(\.retryPolicy, RetryPolicy(jitter: 0).allowingNonIdempotent())
        let created: ServiceUser = try await service.post(
            "users", body: ServiceUser(id: 0, name: "new"), options: optIn)
        #expect(created.id == 5)
        #expect(server.requestCount == 3)
    }

    /// A route whose first request the server reads and drops without an answer; the next ones
    /// get a user named "second".
    /// - Returns: the count of requests the route received.
    private static func droppingFirst(_ server: TestServer, _ path: String) -> ServiceCounter {
        let received = ServiceCounter()
        server.route(path) { _ in
            received.increment() == 1
                ? ScriptedResponse.json(["id": 0]).withFault(.closeWithoutResponse)
                : .json(["id": 1, "name": "second"])
        }
        return received
    }

    /// A retry policy without jitter, allowing non-idempotent methods or not.
    private static func retrying(optsIn: Bool) -> CallOptions {
        let policy = RetryPolicy(jitter: 0)
        return CallOptions.default.with(\.retryPolicy, optsIn ? policy.allowingNonIdempotent() : policy)
    }

    /// A connection the server closes without answering (libcurl's "empty reply",
    /// `CURLE_GOT_NOTHING`, on a new connection) is a transient failure, as a reset is: an
    /// idempotent call is sent again, a POST only when its policy opts in (the server may have
    /// acted on it). Before, the empty reply was `.invalidResponse`, which no policy retries:
    /// a GET failed whenever a server restarted or dropped its connections under load.
    @Test(arguments: [HTTPRequest.Method.get, .put, .delete, .post])
    func aConnectionClosedWithoutAnAnswerIsRetriedWhenTheMethodAllows(_ method: HTTPRequest.Method) async throws {
        for optsIn in [false, true] {
            let server = try TestServer()
            defer { server.stop() }
            let received = Self.droppingFirst(server, "/flaky")
            let options = Self.retrying(optsIn: optsIn)
            let service = try ServiceFixture.service(server)
            let endpoint = Endpoint<ServiceUser>(
                method, "flaky", body: method == .get ? nil : ServiceUser(id: 1, name: "body"), options: options)
            if method.isIdempotent || optsIn {
                let response = try await service.send(endpoint)
                #expect(response.value.name == "second")
                #expect(response.attempts == 2)
                #expect(received.value == 2)
            } else {
                let error = await #expect(throws: CourierError.self) { try await service.send(endpoint) }
                #expect(error?.code == .transport)
                #expect(received.value == 1, "a POST the server may have acted on was sent again")
            }
        }
    }

    /// The same on a pooled connection, the common case (the server closed it as the request
    /// went out): a POST whose policy opts in is sent again by the policy, on a new connection;
    /// one that does not opt in is sent once. Before, the transport's refusal to let libcurl
    /// resend the POST by itself was `.invalidResponse`, so the policy never retried it either.
    @Test(arguments: [false, true])
    func aPostDroppedOnAPooledConnectionIsRetriedOnlyWhenThePolicyOptsIn(_ optsIn: Bool) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let received = Self.droppingFirst(server, "/orders")
        server.route("/warm") { _ in .json(["id": 0, "name": "warm"]) }
        let service = try ServiceFixture.service(server)
        let _: ServiceUser = try await service.get("warm")
        let endpoint = Endpoint<ServiceUser>(
            .post, "orders", body: ServiceUser(id: 1, name: "body"), options: Self.retrying(optsIn: optsIn))
        if optsIn {
            let response = try await service.send(endpoint)
            #expect(response.value.name == "second")
            #expect(received.value == 2)
        } else {
            let error = await #expect(throws: CourierError.self) { try await service.send(endpoint) }
            #expect(error?.code == .transport)
            #expect(received.value == 1, "a POST the server may have acted on was sent again")
        }
        #expect(server.recordedRequests(path: "/orders").first?.connectionID == 1, "not sent on the pooled connection")
    }

    /// A garbage answer (a status line that is not HTTP) is still final: the server answered,
    /// and sending again would get the same.
    @Test func aGarbageAnswerIsNotRetried() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let received = ServiceCounter()
        server.route("/garbage") { _ in
            received.increment() == 1
                ? ScriptedResponse.json(["id": 0]).withFault(.badStatusLine) : .json(["id": 1, "name": "second"])
        }
        let service = try ServiceFixture.service(server)
        let error = await #expect(throws: CourierError.self) {
            let _: ServiceUser = try await service.get("garbage")
        }
        #expect(error?.code == .invalidResponse)
        #expect(received.value == 1)
    }

    @Test func throttledDoubleTapIsDroppedWithoutSending() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("POST", "/posts/1/like") { _ in .json(["id": 1, "name": "liked"]) }
        let clock = ManualServiceClock()
        let service = try ServiceFixture.service(server) { $0.clock = clock }
        let once = CallOptions.default.with(\.interval, .drop(.seconds(2)))
        let _: ServiceUser = try await service.post("posts/1/like", options: once)
        do {
            let _: ServiceUser = try await service.post("posts/1/like", options: once)
            Issue.record("expected throttling")
        } catch {
            #expect(error.code == .throttled)
        }
        #expect(server.count("/posts/1/like") == 1)
        clock.advance(by: .seconds(2))
        let _: ServiceUser = try await service.post("posts/1/like", options: once)
        #expect(server.count("/posts/1/like") == 2)
    }

    @Test func delayedIntervalWaitsOnTheClock() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/users/1") { _ in .json(["id": 1, "name": "a"]) }
        let clock = ManualServiceClock(autoAdvance: true)
        let service = try ServiceFixture.service(server) { $0.clock = clock }
        let spaced = CallOptions.default.with(\.interval, .delay(.seconds(5))).with(\.deduplicates, false)
        let _: ServiceUser = try await service.get("users/1", options: spaced)
        let _: ServiceUser = try await service.get("users/1", options: spaced)
        #expect(clock.sleeps == [.seconds(5)])
        #expect(server.count("/users/1") == 2)
    }

    @Test func failoverSwitchesServerOnErrorRate() async throws {
        let primary = try TestServer()
        let secondary = try TestServer()
        defer {
            primary.stop()
            secondary.stop()
        }
        primary.route("/users/1") { _ in .status(500) }
        secondary.route("/users/1") { _ in .json(["id": 1, "name": "from secondary"]) }
        let clock = ManualServiceClock(autoAdvance: true)
        let pool = try ServerPool(
            servers: [ServiceFixture.base(primary), ServiceFixture.base(secondary)], clock: clock)
        let changes = LockedValue<[ServerChange]>([])
        pool.addObserver { change in changes.withLock { $0.append(change) } }
        let service = try ServiceFixture.service(primary) { configuration in
            configuration.servers = pool
            configuration.clock = clock
            configuration.retryPolicy = .none
        }
        for _ in 0..<20 {
            let result: ServiceUser? = try? await service.get("users/1")
            #expect(result == nil)
        }
        #expect(primary.requestCount == 20)
        #expect(pool.current == ServiceFixture.base(secondary).url)
        let user: ServiceUser = try await service.get("users/1")
        #expect(user.name == "from secondary")
        #expect(secondary.requestCount == 1)
        #expect(changes.withLock { $0.count } == 1)
    }

    /// A stale answer the cache serves because the server failed (stale-if-error) is that
    /// server's failure for the pool, and a fresh hit, which reached no server, is nothing.
    /// On the old code every answer the call got counted as the server's success: a pool whose
    /// server refused every connection, or answered 503 to everything, stayed on it for as long
    /// as the cache had something stale to serve, and fresh hits diluted its error rate.
    @Test(arguments: [true, false])
    func aStaleAnswerServedOnErrorIsTheServersFailureForThePool(refuses: Bool) async throws {
        let primary = try TestServer()
        let secondary = try TestServer()
        defer {
            primary.stop()
            secondary.stop()
        }
        let failing = LockedValue(false)
        primary.route("/users/1") { _ in
            guard !failing.withLock({ $0 }) else { return .status(503) }
            var response = ScriptedResponse.json(["id": 1, "name": "primary"])
            response.headers[.cacheControl] = "max-age=0"
            return response
        }
        primary.route("/users/2") { _ in
            var response = ScriptedResponse.json(["id": 2, "name": "primary"])
            response.headers[.cacheControl] = "max-age=600"
            return response
        }
        secondary.route("/users/1") { _ in .json(["id": 1, "name": "secondary"]) }
        let clock = ManualServiceClock(autoAdvance: true)
        // Three outcomes, one of them a failure, pass the rate; one refused connection switches.
        let policy = FailoverPolicy(errorRateThreshold: 0.3, minimumRequests: 3)
        let pool = try ServerPool(
            servers: [ServiceFixture.base(primary), ServiceFixture.base(secondary)], policy: policy, clock: clock)
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly, staleIfError: true)
        )
        let client = try HTTPClient(configuration: .init(baseURL: primary.baseURL, cache: cache))
        var configuration = ServiceConfiguration(retryPolicy: .none, clock: clock)
        configuration.servers = pool
        let service = ServiceCore(client: client, configuration: configuration)
        let _: ServiceUser = try await service.get("users/1")
        // Fresh hits reach no server: they leave the window as it is.
        let _: ServiceUser = try await service.get("users/2")
        for _ in 0..<3 {
            let hit = try await service.send(Endpoint<ServiceUser>.get("users/2"))
            #expect(hit.isFromCache)
        }
        #expect(pool.errorRate.count == 2)
        if refuses { primary.stop() } else { failing.withLock { $0 = true } }
        let stale = try await service.send(Endpoint<ServiceUser>.get("users/1"))
        #expect(stale.value.name == "primary")
        #expect(stale.isFromCache && stale.isStale)
        #expect(pool.current == ServiceFixture.base(secondary).url)
        let user: ServiceUser = try await service.get("users/1")
        #expect(user.name == "secondary")
    }

    @Test func connectionFailureFailsOverAndTheRetryGoesToTheNextServer() async throws {
        let dead = try TestServer.refusingPort()
        defer { dead.stop() }
        let deadBase = try BaseURL(dead.baseURL.absoluteString)
        let alive = try TestServer()
        defer { alive.stop() }
        alive.route("/users/1") { _ in .json(["id": 1, "name": "alive"]) }
        let clock = ManualServiceClock(autoAdvance: true)
        let pool = try ServerPool(servers: [deadBase, ServiceFixture.base(alive)], clock: clock)
        let service = try ServiceFixture.service(alive) { configuration in
            configuration.servers = pool
            configuration.clock = clock
        }
        let response = try await service.send(Endpoint<ServiceUser>.get("users/1"))
        #expect(response.value.name == "alive")
        #expect(response.attempts == 2)
        #expect(pool.currentIndex == 1)
        // Explicit selection moves calls back.
        try pool.select(index: 0)
        do {
            let _: ServiceUser = try await service.get(
                "users/1", options: .default.with(\.retryPolicy, RetryPolicy.none))
            Issue.record("expected a connection failure")
        } catch {
            #expect(error.code == .cannotConnect)
        }
    }

    /// A failover encodes the call's parameters and body again for the new server: the retry
    /// carries both, as the first attempt did.
    @Test func theRetryOnTheNextServerCarriesTheParametersAndTheBody() async throws {
        let dead = try TestServer.refusingPort()
        defer { dead.stop() }
        let alive = try TestServer()
        defer { alive.stop() }
        alive.route("/users/1") { _ in .json(["id": 1, "name": "alive"]) }
        let clock = ManualServiceClock(autoAdvance: true)
        let pool = try ServerPool(
            servers: [try BaseURL(dead.baseURL.absoluteString), ServiceFixture.base(alive)], clock: clock)
        let service = try ServiceFixture.service(alive) { configuration in
            configuration.servers = pool
            configuration.clock = clock
        }
        let response = try await service.send(
            Endpoint<ServiceUser>(.put, "users/1", parameters: ["q": "kept"], body: ServiceUser(id: 1, name: "B")))
        #expect(response.attempts == 2)
        let sent = try #require(alive.recordedRequests(path: "/users/1").first)
        #expect(sent.target == "/users/1?q=kept")
        let body = try JSONDecoder().decode(ServiceUser.self, from: sent.body)
        #expect(body == ServiceUser(id: 1, name: "B"))
    }
}

/// The one attempt cap (`ServiceConfiguration.maximumAttempts`) holds on every path that asks
/// for another attempt: a retrier's `.retry` or `.retryAfter`, a policy with more retries than
/// the cap, the authentication interceptor's refresh-then-retry with a larger limit of its own,
/// and all of them at once, for GET and for POST.
@Suite struct APIServiceAttemptCapTests {
    enum Path: String, CaseIterable, Sendable {
        case retrierRetries, retrierRetriesAfter, policyWithMoreRetries, refreshWithLargerLimit, everything
    }

    @Test(arguments: Path.allCases, [HTTPRequest.Method.get, .post])
    func aCallIsNeverSentMoreThanTheCap(_ path: Path, _ method: HTTPRequest.Method) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let refreshes = ServiceCounter()
        let status = path == .refreshWithLargerLimit || path == .everything ? 401 : 503
        server.route("/capped") { _ in .status(status) }
        let coordinator = AuthRefreshCoordinator<String>(
            credential: "token-0", stormLimit: RefreshStormLimit(maximumRefreshes: 100)
        ) { _ in
            "token-\(refreshes.increment())"
        }
        let retrySignals = ServiceCounter()
        let service = try ServiceFixture.service(server) { configuration in
            configuration.maximumAttempts = 3
            switch path {
            case .retrierRetries:
                configuration.retriers = [.retrier { _, _, _ in .retry }]
            case .retrierRetriesAfter:
                configuration.retriers = [.retrier { _, _, _ in .retryAfter(.milliseconds(5)) }]
            case .policyWithMoreRetries:
                configuration.retryPolicy = RetryPolicy(maximumRetries: 20, jitter: 0).allowingNonIdempotent()
            case .refreshWithLargerLimit:
                configuration.authentication = AuthenticationInterceptor(coordinator: coordinator, maximumAttempts: 20)
                {
                    token, request in request.headerFields[.authorization] = "Bearer \(token)"
                }
            case .everything:
                configuration.retryPolicy = RetryPolicy(
                    maximumRetries: 20, jitter: 0, retryableStatuses: [401]
                ).allowingNonIdempotent()
                configuration.authentication = AuthenticationInterceptor(coordinator: coordinator, maximumAttempts: 20)
                {
                    token, request in request.headerFields[.authorization] = "Bearer \(token)"
                }
                configuration.retriers = [.retrier { _, _, _ in .retry }]
            }
            configuration.monitors = [ClosureEventMonitor(onRetry: { _, _, _ in _ = retrySignals.increment() })]
        }
        do {
            let _: Response<ServiceUser> = try await service.send(
                Endpoint<ServiceUser>(method, "capped", body: method == .post ? ["a": 1] : nil))
            Issue.record("expected the call to fail")
        } catch {
            #expect(error.status?.code == status)
        }
        #expect(server.count("/capped") == 3)
        #expect(retrySignals.value == 2)
    }
}

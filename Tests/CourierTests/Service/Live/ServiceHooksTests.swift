import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// The service hooks: error mapping, request decoration (adapters), response validation (checks).
@Suite struct ServiceHooksTests {
    /// 401 → `AuthError.sessionExpired`; an error body → `APIError`; anything else left alone.
    static let appMapper: @Sendable (CourierError) -> (any Error & Sendable)? = { error in
        if error.status == .unauthorized { return AuthError.sessionExpired }
        if error.code == .httpStatus, let body = error.body,
            let api = try? JSONDecoder().decode(APIError.self, from: body)
        {
            return api
        }
        return nil
    }

    // MARK: Error mapping

    @Test func mapsA401AndADecodedErrorBodyToTheAppsErrors() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.status(401))
        server.enqueue(.json(["code": 4012, "message": "name taken"], status: 422))
        server.enqueue(.status(404))
        let service = try ServiceFixture.service(server) { $0.errorMapper = Self.appMapper }
        do {
            let _: ServiceUser = try await service.get("me")
            Issue.record("expected a failure")
        } catch {
            #expect(error.domain(as: AuthError.self) == .sessionExpired)
            // The CourierError keeps its category and response.
            #expect(error.code == .httpStatus)
            #expect(error.status?.code == 401)
            #expect(error.description.contains("sessionExpired"))
        }
        do {
            let _: ServiceUser = try await service.post("users", body: ServiceUser(id: 0, name: "taken"))
            Issue.record("expected a failure")
        } catch {
            #expect(error.domain(as: APIError.self) == APIError(code: 4012, message: "name taken"))
            #expect(error.domain(as: AuthError.self) == nil)
        }
        do {
            let _: ServiceUser = try await service.get("users/404")
            Issue.record("expected a failure")
        } catch {
            // The mapper had no opinion: the failure is as it was.
            #expect(error.status?.code == 404)
            #expect(error.domain(as: AuthError.self) == nil)
            #expect(error.domain(as: APIError.self) == nil)
        }
    }

    @Test func mappingRunsOnceAfterTheRetriesAreExhausted() async throws {
        let server = try TestServer()
        defer { server.stop() }
        for _ in 0..<3 { server.enqueue(.status(503)) }
        let seen = LockedValue<[Int]>([])
        let service = try ServiceFixture.service(server) { configuration in
            configuration.retryPolicy = RetryPolicy(maximumRetries: 2, jitter: 0)
            configuration.errorMapper = { error in
                seen.withLock { $0.append(error.status?.code ?? 0) }
                return error.status?.code == 503 ? FeedError.unavailable : nil
            }
        }
        do {
            let _: ServiceUser = try await service.get("users/1")
            Issue.record("expected a failure")
        } catch {
            #expect(error.domain(as: FeedError.self) == .unavailable)
            #expect(error.code == .httpStatus)
        }
        // Three sends, one mapping: the mapper sees the call's final failure only.
        #expect(server.requestCount == 3)
        #expect(seen.withLock { $0 } == [503])
    }

    /// A 401 refreshes the credential and is retried; the 401 after the refresh is what the
    /// mapper sees, once.
    @Test func mappingRunsOnceAfterTheCredentialRefresh() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/me") { _ in .status(401) }
        let coordinator = AuthRefreshCoordinator<String>(credential: "stale") { _ in "still-refused" }
        let mapped = LockedValue<[Int]>([])
        let service = try ServiceFixture.service(server) { configuration in
            configuration.authentication = .bearer(coordinator)
            configuration.errorMapper = { error in
                mapped.withLock { $0.append(error.status?.code ?? 0) }
                return Self.appMapper(error)
            }
        }
        do {
            let _: ServiceUser = try await service.get("me")
            Issue.record("expected a failure")
        } catch {
            #expect(error.domain(as: AuthError.self) == .sessionExpired)
        }
        #expect(coordinator.refreshCount == 1)
        let sent = server.recordedRequests(path: "/me").map { $0.header("Authorization") }
        // Sent with the stale token, then (after the one refresh) with the new one until the
        // interceptor gives up; the mapper sees the last 401 only.
        #expect(sent.first == "Bearer stale")
        #expect(sent.count >= 2)
        #expect(sent.dropFirst().allSatisfy { $0 == "Bearer still-refused" })
        #expect(mapped.withLock { $0 } == [401])
    }

    @Test func aCallsMapperIsAskedFirstAndTheServicesWhenItHasNoOpinion() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.status(401))
        server.enqueue(.status(401))
        let service = try ServiceFixture.service(server) { $0.errorMapper = Self.appMapper }
        let own = CallOptions.default.with(\.errorMapper) { error in
            error.status == .unauthorized ? FeedError.unavailable : nil
        }
        do {
            let _: ServiceUser = try await service.get("feed", options: own)
            Issue.record("expected a failure")
        } catch {
            #expect(error.domain(as: FeedError.self) == .unavailable)
            #expect(error.domain(as: AuthError.self) == nil)
        }
        let silent = CallOptions.default.with(\.errorMapper) { _ in nil }
        do {
            let _: ServiceUser = try await service.get("feed", options: silent)
            Issue.record("expected a failure")
        } catch {
            #expect(error.domain(as: AuthError.self) == .sessionExpired)
        }
    }

    /// Deferred calls and the callback API end through the same loop: mapped the same way.
    @Test func deferredAndCallbackCallsAreMappedToo() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/me") { _ in .status(401) }
        let service = try ServiceFixture.service(server) { $0.errorMapper = Self.appMapper }
        let call = service.call(Endpoint<ServiceUser>.get("me"))
        call.start()
        do {
            _ = try await call.value()
            Issue.record("expected a failure")
        } catch {
            #expect(error.domain(as: AuthError.self) == .sessionExpired)
        }
        let reported = await withCheckedContinuation { (continuation: CheckedContinuation<AuthError?, Never>) in
            service.start(
                Endpoint<ServiceUser>.get("me"), onSuccess: { _ in continuation.resume(returning: nil) },
                onFailure: { error in continuation.resume(returning: error.domain(as: AuthError.self)) })
        }
        #expect(reported == .sessionExpired)
    }

    @Test func aFailureBeforeSendingIsMappedToo() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.errorMapper = { error in error.code == .invalidRequest ? FeedError.unavailable : nil }
        }
        do {
            let _: ServiceUser = try await service.get("../admin")
            Issue.record("expected a failure")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.domain(as: FeedError.self) == .unavailable)
        }
        #expect(server.requestCount == 0)
    }

    // MARK: Request decoration

    @Test func adaptersDecorateEveryAttemptWithFreshValues() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.status(503))
        server.enqueue(.status(503))
        server.enqueue(.json(["id": 1, "name": "ok"]))
        let counter = ServiceCounter()
        let seenQueries = LockedValue<[String]>([])
        let service = try ServiceFixture.service(server) { configuration in
            configuration.retryPolicy = RetryPolicy(maximumRetries: 2, jitter: 0)
            configuration.realTimeParameters = { [("ts", "\(counter.value)")] }
            configuration.adapters = [
                .adapter { request, context in
                    // Async like a real one (a token store, a signer).
                    await Task.yield()
                    counter.increment()
                    seenQueries.withLock { $0.append(request.head.path ?? "") }
                    var request = request
                    request.head.headerFields[HTTPField.Name("X-Request-Token")!] = "token-\(counter.value)"
                    request.head.headerFields[HTTPField.Name("X-Attempt")!] = "\(context.attempt)"
                    return request
                }
            ]
        }
        let user: ServiceUser = try await service.get("users/1")
        #expect(user.name == "ok")
        let sent = server.recordedRequests
        #expect(sent.map { $0.header("X-Request-Token") } == ["token-1", "token-2", "token-3"])
        #expect(sent.map { $0.header("X-Attempt") } == ["1", "2", "3"])
        // The adapter saw each attempt's own real-time parameters.
        #expect(seenQueries.withLock { $0 } == ["/users/1?ts=0", "/users/1?ts=1", "/users/1?ts=2"])
    }

    @Test func anAdapterThatThrowsEndsTheCallUnsentWithItsError() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.adapters = [.adapter { _, _ in throw AuthError.sessionExpired }]
        }
        do {
            let _: ServiceUser = try await service.get("me")
            Issue.record("expected a failure")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.message.contains("adapter"))
            #expect(error.domain(as: AuthError.self) == .sessionExpired)
        }
        #expect(server.requestCount == 0)
    }

    // MARK: Response validation

    /// Refuses `{"status": "busy"}` (retryable) and `{"status": "closed"}` (final).
    static let statusCheck = ResponseValidator.default.checking { context in
        let body = try JSONDecoder().decode(StatusBody.self, from: context.body)
        switch body.status {
        case "busy": return .refuse(FeedError.busy, retryable: true)
        case "closed": return .refuse(FeedError.unavailable)
        default: return .accept
        }
    }

    /// Routes GET `path` to a cacheable answer that `statusCheck` refuses as busy the first time
    /// and accepts (`ServiceUser` 5, "fresh") after.
    static func answerBusyOnce(_ server: TestServer, _ path: String) {
        let answers = ServiceCounter()
        server.route("GET", path) { _ in
            answers.increment()
            let body: [String: Any] =
                answers.value == 1 ? ["status": "busy"] : ["status": "ok", "id": 5, "name": "fresh"]
            return ScriptedResponse.json(body).with(.cacheControl, "max-age=600")
        }
    }

    @Test func aRetryableRefusalIsRetriedAndTheNextAnswerAccepted() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.json(["status": "busy", "id": 0, "name": ""]))
        server.enqueue(.json(["status": "ok", "id": 3, "name": "fine"]))
        let service = try ServiceFixture.service(server) { $0.pipeline.validator = Self.statusCheck }
        let response = try await service.send(Endpoint<ServiceUser>.get("users/3"))
        #expect(response.value.name == "fine")
        #expect(response.attempts == 2)
        #expect(server.requestCount == 2)
    }

    @Test func aRetryableRefusalIsRetriedUnderTheCapAndThenMapped() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/feed") { _ in .json(["status": "busy"]) }
        let clock = ManualServiceClock(autoAdvance: true)
        let mapped = ServiceCounter()
        let service = try ServiceFixture.service(server) { configuration in
            configuration.clock = clock
            configuration.pipeline.validator = Self.statusCheck
            // The policy would retry five times; the service's cap stops at three sends.
            configuration.retryPolicy = RetryPolicy(maximumRetries: 5, baseDelay: .milliseconds(100), jitter: 0)
            configuration.maximumAttempts = 3
            configuration.errorMapper = { error in
                mapped.increment()
                return error.domain(as: FeedError.self) == .busy ? FeedError.unavailable : nil
            }
        }
        do {
            let _: ServiceUser = try await service.get("feed")
            Issue.record("expected a failure")
        } catch {
            #expect(error.code == .apiError)
            #expect(error.status?.code == 200)
            #expect(error.domain(as: FeedError.self) == .unavailable)
        }
        #expect(server.requestCount == 3)
        #expect(clock.sleeps == [.milliseconds(100), .milliseconds(200)])
        #expect(mapped.value == 1)
    }

    /// The cache stores an answer before it is validated: a refused one is dropped, so that the
    /// retry (and the next call) asks the server instead of getting the same answer again.
    @Test func aRefusedAnswerIsNotServedFromTheCache() async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.answerBusyOnce(server, "/feed")
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let client = try HTTPClient(configuration: HTTPClient.Configuration(baseURL: server.baseURL, cache: cache))
        var configuration = ServiceConfiguration(
            retryPolicy: RetryPolicy(jitter: 0), clock: ManualServiceClock(autoAdvance: true))
        configuration.pipeline.validator = Self.statusCheck
        let service = ServiceCore(client: client, configuration: configuration)
        let response = try await service.send(Endpoint<ServiceUser>.get("feed"))
        #expect(response.value.name == "fresh")
        #expect(response.attempts == 2)
        #expect(server.requestCount == 2)
        // The accepted answer is cached as usual.
        let again = try await service.send(Endpoint<ServiceUser>.get("feed"))
        #expect(again.isFromCache)
        #expect(server.requestCount == 2)
    }

    @Test func aFinalRefusalEndsTheCallWithTheChecksError() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/feed") { _ in .json(["status": "closed"]) }
        let service = try ServiceFixture.service(server) { $0.pipeline.validator = Self.statusCheck }
        do {
            let _: ServiceUser = try await service.get("feed")
            Issue.record("expected a failure")
        } catch {
            #expect(error.code == .apiError)
            #expect(error.domain(as: FeedError.self) == .unavailable)
            #expect(error.body.map { String(decoding: $0, as: UTF8.self) }?.contains("closed") == true)
        }
        #expect(server.requestCount == 1)
    }

    @Test func aCheckThatThrowsRefusesTheAnswerAndACallsValidatorReplacesTheServices() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/plain") { _ in .json(["id": 4, "name": "no status"]) }
        let service = try ServiceFixture.service(server) { $0.pipeline.validator = Self.statusCheck }
        do {
            let _: ServiceUser = try await service.get("plain")
            Issue.record("expected a failure")
        } catch {
            // The check could not decode `status`: its DecodingError refuses the answer.
            #expect(error.code == .apiError)
            #expect(error.domain(as: DecodingError.self) != nil)
        }
        #expect(server.requestCount == 1)
        let user: ServiceUser = try await service.get("plain", options: .default.with(\.validator, .default))
        #expect(user.id == 4)
    }
}

extension ServiceHooksTests {
    /// The app's errors the hooks below map to.
    enum AuthError: Error, Equatable {
        case sessionExpired
    }

    /// A server's error body, decoded by the app.
    struct APIError: Error, Equatable, Decodable {
        var code: Int
        var message: String
    }

    /// What a body-level check refuses an answer with.
    enum FeedError: Error, Equatable {
        case busy
        case unavailable
    }

    /// A user's answer with a body-level status, as some APIs send next to HTTP 200.
    struct StatusBody: Decodable {
        var status: String
    }
}

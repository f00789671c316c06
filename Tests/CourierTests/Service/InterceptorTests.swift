import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct InterceptorTests {
    let base = PreparedRequest(head: HTTPRequest(method: .get, scheme: "https", authority: "h.example", path: "/me"))
    let context = InterceptorContext(callID: .next(), attempt: 1)

    @Test func adaptersRunInOrder() async throws {
        let chain = InterceptorChain(
            adapters: [
                .header(.init("X-Order")!, "client"),
                .adapter { request, _ in
                    var request = request
                    let previous = request.head.headerFields[.init("X-Order")!] ?? ""
                    request.head.headerFields[.init("X-Order")!] = previous + ",service"
                    return request
                },
            ])
        let adapted = try await chain.adapt(base, context: context)
        #expect(adapted.head.headerFields[.init("X-Order")!] == "client,service")
    }

    @Test func adapterErrorsBecomeCourierErrors() async {
        struct Broken: Error {}
        let chain = InterceptorChain(adapters: [.adapter { _, _ in throw Broken() }])
        do {
            _ = try await chain.adapt(base, context: context)
            Issue.record("expected a failure")
        } catch {
            #expect(error.code == .invalidRequest)
        }
    }

    @Test func firstRetrierWithAnOpinionWins() async {
        let asked = LockedValue<[String]>([])
        let chain = InterceptorChain(retriers: [
            .retrier { _, _, _ in
                asked.withLock { $0.append("call") }
                return .doNotRetry
            },
            .retrier { _, _, _ in
                asked.withLock { $0.append("service") }
                return .retryAfter(.seconds(3))
            },
            .retrier { _, _, _ in
                asked.withLock { $0.append("client") }
                return .retry
            },
        ])
        let verdict = await chain.retry(
            base, failure: AttemptFailure(error: CourierError(.timedOut, "x")), context: context)
        guard case .retryAfter(let delay) = verdict else {
            Issue.record("expected retryAfter")
            return
        }
        #expect(delay == .seconds(3))
        #expect(asked.withLock { $0 } == ["call", "service"])
    }

    func unauthorized() -> AttemptFailure {
        AttemptFailure(response: HTTPResponse(status: .unauthorized), error: CourierError(.httpStatus, "401"))
    }

    @Test func authInterceptorAttachesRefreshesAndRetries() async throws {
        let refreshes = ServiceCounter()
        let coordinator = AuthRefreshCoordinator<String>(credential: "old") { _ in
            refreshes.increment()
            return "new"
        }
        let auth = AuthenticationInterceptor.bearer(coordinator)
        let sent = try await auth.adapt(base, context: context)
        #expect(sent.head.headerFields[.authorization] == "Bearer old")
        let verdict = await auth.retry(sent, failure: unauthorized(), context: context)
        guard case .retry = verdict else {
            Issue.record("expected a retry")
            return
        }
        #expect(refreshes.value == 1)
        let again = try await auth.adapt(base, context: InterceptorContext(callID: context.callID, attempt: 2))
        #expect(again.head.headerFields[.authorization] == "Bearer new")
        // A request that carried the old token after the refresh: retried without refreshing.
        let late = await auth.retry(sent, failure: unauthorized(), context: context)
        guard case .retry = late else {
            Issue.record("expected a retry")
            return
        }
        #expect(refreshes.value == 1)
    }

    @Test func authInterceptorIgnoresOtherFailuresAndStopsAfterItsAttempts() async throws {
        let coordinator = AuthRefreshCoordinator<String>(credential: "t") { _ in "u" }
        let auth = AuthenticationInterceptor.bearer(coordinator)
        let sent = try await auth.adapt(base, context: context)
        let forbidden = AttemptFailure(
            response: HTTPResponse(status: .forbidden), error: CourierError(.httpStatus, "403"))
        guard case .doNotRetry = await auth.retry(sent, failure: forbidden, context: context) else {
            Issue.record("403 must not refresh")
            return
        }
        guard
            case .doNotRetry = await auth.retry(
                sent, failure: unauthorized(), context: InterceptorContext(callID: .next(), attempt: 3))
        else {
            Issue.record("the third attempt must not be retried")
            return
        }
        #expect(coordinator.refreshCount == 0)
    }

    @Test func authInterceptorFailsClearlyWhenLoggedOutOrRefreshFails() async throws {
        let coordinator = AuthRefreshCoordinator<String>(credential: "t") { _ in
            throw CourierError(.httpStatus, "refresh rejected")
        }
        let auth = AuthenticationInterceptor.bearer(coordinator)
        let sent = try await auth.adapt(base, context: context)
        guard case .fail(let error) = await auth.retry(sent, failure: unauthorized(), context: context) else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .authentication)
        #expect(error.status == .unauthorized)
        #expect(!error.description.contains("Bearer"))
        coordinator.logout()
        let anonymous = try await auth.adapt(base, context: context)
        #expect(anonymous.head.headerFields[.authorization] == nil)
        guard case .fail(let loggedOut) = await auth.retry(anonymous, failure: unauthorized(), context: context) else {
            Issue.record("expected a failure after logout")
            return
        }
        #expect(loggedOut.code == .authentication)
    }
}

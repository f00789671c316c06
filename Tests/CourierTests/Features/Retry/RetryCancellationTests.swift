import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// A call cancelled between its attempts, on the real clock: it ends with `.cancelled` at once,
/// sends nothing more, and leaves nothing behind that the next identical call could join.
@Suite struct RetryCancellationTests {
    /// Cancelling the caller's task during a long back-off ends the call at once; the next
    /// identical GET sends its own request.
    @Test func aCallCancelledInItsBackOffEndsAtOnceAndTheNextCallSendsItsOwn() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let healthy = LockedValue(false)
        server.route("/feed") { _ in
            healthy.withLock { $0 } ? .json(["id": 2, "name": "fresh"]) : .status(503)
        }
        let (retries, retrying) = AsyncStream<Void>.makeStream()
        let service = try ServiceFixture.service(server) { configuration in
            configuration.clock = SystemServiceClock()
            configuration.retryPolicy = RetryPolicy(baseDelay: .seconds(3_600), jitter: 0)
            configuration.monitors = [ClosureEventMonitor(onRetry: { _, _, _ in retrying.yield() })]
        }
        let caller = Task { await ServiceFixture.getFeed(service) }
        var waiting = retries.makeAsyncIterator()
        await waiting.next()
        let cancelled = ContinuousClock.now
        caller.cancel()
        let (result, _) = await caller.value
        // Far below the hour's back-off, far above what a loaded whole-suite run on two cores
        // takes to resume the caller (34 s once at load 8).
        #expect(ContinuousClock.now - cancelled < TestTimeBound.scaled(.seconds(300)))
        Self.expectCancelledAfterOneSend(result, server, service)
        healthy.withLock { $0 = true }
        let (next, _) = await ServiceFixture.getFeed(service)
        #expect(try next.get().name == "fresh")
        #expect(server.count("/feed") == 2)
    }

    /// A call cancelled as it decides to retry at once (`Retry-After: 0`, a wait the clock does
    /// not sleep) sends no further attempt.
    @Test func aCallCancelledBeforeAnImmediateRetrySendsNothingMore() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/feed") { _ in .status(503, headers: [.retryAfter: "0"]) }
        let registry = LockedValue<CallRegistry?>(nil)
        let service = try ServiceFixture.service(server) { configuration in
            configuration.clock = SystemServiceClock()
            configuration.monitors = [
                ClosureEventMonitor(onRetry: { _, _, _ in _ = registry.withLock { $0 }?.cancelAll() })
            ]
        }
        registry.withLock { $0 = service.calls }
        let (result, _) = await ServiceFixture.getFeed(service)
        Self.expectCancelledAfterOneSend(result, server, service)
    }

    /// The call ended `.cancelled`, the server got its first attempt only, and the registry
    /// holds nothing.
    private static func expectCancelledAfterOneSend(
        _ result: Result<ServiceUser, CourierError>, _ server: TestServer, _ service: ServiceCore,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        if case .failure(let error) = result {
            #expect(error.code == .cancelled, sourceLocation: sourceLocation)
        } else {
            Issue.record("expected cancellation", sourceLocation: sourceLocation)
        }
        #expect(server.count("/feed") == 1, sourceLocation: sourceLocation)
        #expect(service.calls.count == 0, sourceLocation: sourceLocation)
    }
}

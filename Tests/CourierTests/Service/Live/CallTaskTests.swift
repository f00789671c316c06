import CourierTesting
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

/// Issue 17, item 3: a service call runs in its caller's task (one task and one resumption on
/// the success path), and the registry still cancels the call, not its caller, whatever it
/// waits for.
@Suite struct CallTaskTests {
    /// The task of the code running now, as a comparable value.
    private static func currentTask() -> Int? {
        withUnsafeCurrentTask { $0?.hashValue }
    }

    @Test func aCallRunsInItsCallersTask() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/users/1") { _ in .json(["id": 1, "name": "Ann"]) }
        let seen = LockedValue<[String: Int]>([:])
        let monitor = ClosureEventMonitor(
            onStart: { _ in seen.withLock { $0["start"] = Self.currentTask() } },
            onSend: { _ in seen.withLock { $0["send"] = Self.currentTask() } },
            onFinish: { _, _, _ in seen.withLock { $0["finish"] = Self.currentTask() } })
        let service = try ServiceFixture.service(server) { $0.monitors = [monitor] }
        let caller = try #require(Self.currentTask())
        let user: ServiceUser = try await service.get("users/1")
        #expect(user.name == "Ann")
        #expect(seen.withLock { $0 } == ["start": caller, "send": caller, "finish": caller])
        #expect(service.calls.count == 0)
    }

    @Test func cancellingACallWaitingToRetryEndsItAndNotItsCaller() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/flaky") { _ in .status(503) }
        // A clock that never advances on its own: the call waits in the retry delay.
        let clock = ManualServiceClock()
        let service = try ServiceFixture.service(server) { $0.clock = clock }
        let caller = Task { () async -> (Result<ServiceUser, CourierError>, Bool) in
            let result: Result<ServiceUser, CourierError>
            do throws(CourierError) {
                result = .success(try await service.get("flaky"))
            } catch {
                result = .failure(error)
            }
            return (result, Task.isCancelled)
        }
        await clock.waitForSleepers(1)
        #expect(server.count("/flaky") == 1)
        let id = try #require(service.calls.identifiers.first)
        #expect(service.calls.cancel(id))
        let (result, callerCancelled) = await caller.value
        #expect(!callerCancelled)
        guard case .failure(let error) = result else {
            Issue.record("expected cancellation")
            return
        }
        #expect(error.code == .cancelled)
        #expect(clock.pendingSleepers == 0)
        #expect(server.count("/flaky") == 1)
        #expect(service.calls.count == 0)
    }

    @Test func cancellingACallBeforeItsTransferStartsNeverSendsIt() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/users/1") { _ in .json(["id": 1, "name": "Ann"]) }
        let registry = LockedValue<CallRegistry?>(nil)
        // The adapter runs after the call is registered and before its transfer: it cancels
        // the call there, so the transfer finds its scope cancelled.
        let adapter = ClosureRequestAdapter { request, context in
            registry.withLock { $0 }?.cancel(context.callID)
            return request
        }
        let service = try ServiceFixture.service(server) { $0.adapters = [adapter] }
        registry.withLock { $0 = service.calls }
        do {
            let _: ServiceUser = try await service.get("users/1")
            Issue.record("expected cancellation")
        } catch {
            #expect(error.code == .cancelled)
        }
        #expect(!Task.isCancelled)
        #expect(server.count("/users/1") == 0)
        #expect(service.calls.count == 0)
    }
}

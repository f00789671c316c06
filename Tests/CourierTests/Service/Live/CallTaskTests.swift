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

    /// The registry keeps running calls in slots that finished calls give back: cancelling by
    /// identifier reaches the right call, also one in a slot used before, and the others run on.
    @Test func cancellingOneOfSeveralCallsByIdentifierEndsThatOneOnly() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/flaky") { _ in .status(503) }
        let clock = ManualServiceClock()
        let service = try ServiceFixture.service(server) { $0.clock = clock }
        @Sendable func call() async -> CourierError? {
            do throws(CourierError) {
                let _: ServiceUser = try await service.get("flaky")
                return nil
            } catch {
                return error
            }
        }
        var calls: [Task<CourierError?, Never>] = []
        for waiting in 1...3 {
            calls.append(Task { await call() })
            await clock.waitForSleepers(waiting)
        }
        let ids = service.calls.identifiers
        #expect(ids.count == 3)
        #expect(service.calls.cancel(ids[1]))
        #expect(await calls[1].value?.code == .cancelled)
        #expect(service.calls.count == 2)
        #expect(service.calls.identifiers == [ids[0], ids[2]])
        // The next call takes the freed slot; its identifier still reaches it.
        let fourth = Task { await call() }
        await clock.waitForSleepers(3)
        let newest = try #require(service.calls.identifiers.last)
        #expect(!ids.contains(newest))
        #expect(service.calls.cancel(newest))
        #expect(await fourth.value?.code == .cancelled)
        #expect(!service.calls.cancel(newest))
        #expect(service.calls.cancelAll() == 2)
        #expect(await calls[0].value?.code == .cancelled)
        #expect(await calls[2].value?.code == .cancelled)
        #expect(service.calls.count == 0)
        #expect(service.calls.identifiers.isEmpty)
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

    /// A GET of `feed` in a task of its own: its result, and whether its task ended cancelled.
    private static func feed(_ service: ServiceCore) -> Task<(Result<ServiceUser, CourierError>, Bool), Never> {
        Task { await ServiceFixture.getFeed(service) }
    }

    /// A call waiting for a transfer it shares with an identical GET waits in its caller's task
    /// (no task of its own): the registry's cancel makes it leave, and the other call still
    /// gets the one transfer's answer.
    @Test func cancellingOneOfTwoCallsSharingATransferEndsItAlone() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.routeHeldFeed(held)
        let service = try ServiceFixture.service(server)
        let dedup = service.configuration.deduplicator
        func call() -> Task<(Result<ServiceUser, CourierError>, Bool), Never> { Self.feed(service) }
        let first = call()
        while dedup.waiterCount < 1 || held.arrived.value < 1 { await Task.yield() }
        let second = call()
        while dedup.waiterCount < 2 { await Task.yield() }
        let ids = service.calls.identifiers
        #expect(ids.count == 2)
        #expect(service.calls.cancel(try #require(ids.last)))
        let (secondResult, secondCallerCancelled) = await second.value
        #expect(!secondCallerCancelled)
        guard case .failure(let error) = secondResult else {
            Issue.record("expected the cancelled call to fail")
            held.release(1)
            return
        }
        #expect(error.code == .cancelled)
        #expect(dedup.waiterCount == 1)
        held.release(1)
        let (firstResult, _) = await first.value
        #expect((try? firstResult.get())?.name == "feed")
        #expect(server.count("/feed") == 1)
        #expect(service.calls.count == 0)
    }

    /// The first of two calls sharing a transfer runs it in its own task: cancelling that call
    /// stops its transfer, and the other call sends its own and gets its answer, never the
    /// first call's cancellation.
    @Test func cancellingTheFirstOfTwoCallsSharingATransferLetsTheOtherSendItsOwn() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.routeHeldFeed(held)
        let service = try ServiceFixture.service(server)
        let dedup = service.configuration.deduplicator
        func call() -> Task<(Result<ServiceUser, CourierError>, Bool), Never> { Self.feed(service) }
        let first = call()
        while dedup.waiterCount < 1 || held.arrived.value < 1 { await Task.yield() }
        let ids = service.calls.identifiers
        let second = call()
        while dedup.waiterCount < 2 { await Task.yield() }
        #expect(ids.count == 1)
        #expect(service.calls.cancel(try #require(ids.first)))
        let (firstResult, firstCallerCancelled) = await first.value
        #expect(!firstCallerCancelled)
        if case .failure(let error) = firstResult {
            #expect(error.code == .cancelled)
        } else {
            Issue.record("expected the cancelled call to fail")
        }
        // The second call's own request reaches the server (bounded: a regression fails here).
        let deadline = ContinuousClock.now + .seconds(30)
        while held.arrived.value < 2, ContinuousClock.now < deadline { await Task.yield() }
        #expect(held.arrived.value == 2)
        held.release(2)
        let (secondResult, secondCallerCancelled) = await second.value
        #expect(!secondCallerCancelled)
        #expect((try? secondResult.get())?.name == "feed")
        #expect(service.calls.count == 0)
    }

    /// An adapter runs in a task of its own (the registry cancels it without the caller), but
    /// that task starts on the call's thread: one that does not suspend has finished before
    /// the call goes on, with no hop to another thread and back.
    @Test func anAdapterThatDoesNotSuspendRunsOnTheCallsThread() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/users/1") { _ in .json(["id": 1, "name": "Ann"]) }
        let threads = LockedValue<[String: UInt]>([:])
        let monitor = ClosureEventMonitor(onStart: { _ in
            threads.withLock { $0["start"] = UInt(pthread_self()) }
        })
        let adapter = ClosureRequestAdapter { request, _ in
            threads.withLock { $0["adapter"] = UInt(pthread_self()) }
            return request
        }
        let service = try ServiceFixture.service(server) {
            $0.monitors = [monitor]
            $0.adapters = [adapter]
        }
        let user: ServiceUser = try await service.get("users/1")
        #expect(user.name == "Ann")
        let seen = threads.withLock { $0 }
        #expect(seen.count == 2)
        #expect(seen["start"] == seen["adapter"])
    }
}

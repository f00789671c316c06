import CourierTesting
import Synchronization
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct AuthRefreshCoordinatorTests {
    /// Counts refreshes and holds each one open until released, so that every caller is
    /// waiting while the refresh runs.
    final class Refresher: Sendable {
        let calls = Atomic<Int>(0)
        let gate = ServiceGate()
        let fails: Bool
        init(fails: Bool = false) { self.fails = fails }
        func refresh(_ old: String) async throws -> String {
            let number = calls.wrappingAdd(1, ordering: .relaxed).newValue
            await gate.wait()
            if fails { throw CourierError(.httpStatus, "refresh endpoint said 400") }
            return "\(old)+\(number)"
        }
    }

    @Test func fiftyConcurrentFailuresCauseOneRefresh() async throws {
        let refresher = Refresher()
        let coordinator = AuthRefreshCoordinator<String>(credential: "t0") { try await refresher.refresh($0) }
        let results = await withTaskGroup(of: Result<String, any Error>.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    do { return .success(try await coordinator.credential(replacing: "t0")) } catch {
                        return .failure(error)
                    }
                }
            }
            // Let the refresh finish only once it has started.
            while refresher.calls.load(ordering: .relaxed) == 0 { await Task.yield() }
            refresher.gate.open()
            var all: [Result<String, any Error>] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(refresher.calls.load(ordering: .relaxed) == 1)
        #expect(results.count == 50)
        #expect(results.allSatisfy { (try? $0.get()) == "t0+1" })
        #expect(coordinator.current == "t0+1")
        #expect(coordinator.refreshCount == 1)
        // A late caller with the old credential gets the new one without a refresh.
        #expect(try await coordinator.credential(replacing: "t0") == "t0+1")
        #expect(refresher.calls.load(ordering: .relaxed) == 1)
    }

    /// A waiter with a timeout armed a timer that held the refresh's waiters, and with them the
    /// renewed credential, until the timeout passed (a day here): long after the wait had ended
    /// and the user had logged out. The timer holds neither.
    @Test func aFinishedWaitLeavesNoTimerHoldingTheCredential() async throws {
        final class Token: Sendable, Equatable {
            let value: String
            init(_ value: String) { self.value = value }
            static func == (one: Token, other: Token) -> Bool { one.value == other.value }
        }
        let gate = ServiceGate()
        weak var renewed: Token?
        do {
            let coordinator = AuthRefreshCoordinator<Token>(credential: Token("stale")) { _ in
                await gate.wait()
                return Token("fresh")
            }
            let stale = coordinator.current
            let waiting = Task { try await coordinator.credential(replacing: stale, within: .seconds(86_400)) }
            while await coordinator.waitingCallers == 0 { await Task.yield() }
            gate.open()
            renewed = try await waiting.value
            #expect(renewed?.value == "fresh")
            coordinator.logout()
        }
        // The refresh's task lets go of its waiters as it ends, just after its waiter resumed.
        let deadline = ContinuousClock.now + TestTimeBound.scaled(.seconds(10))
        while renewed != nil, ContinuousClock.now < deadline { await Task.yield() }
        #expect(renewed == nil, "a timer still holds the renewed credential")
    }

    @Test func failedRefreshFailsEveryWaiterWithOneAuthenticationError() async throws {
        let refresher = Refresher(fails: true)
        let coordinator = AuthRefreshCoordinator<String>(credential: "t0") { try await refresher.refresh($0) }
        let errors = await withTaskGroup(of: CourierError?.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    do {
                        _ = try await coordinator.credential(replacing: "t0")
                        return nil
                    } catch {
                        return error as? CourierError
                    }
                }
            }
            while refresher.calls.load(ordering: .relaxed) == 0 { await Task.yield() }
            refresher.gate.open()
            var all: [CourierError?] = []
            for await error in group { all.append(error) }
            return all
        }
        #expect(refresher.calls.load(ordering: .relaxed) == 1)
        #expect(errors.count == 20)
        #expect(errors.allSatisfy { $0?.code == .authentication })
        #expect(errors.allSatisfy { $0?.message == "the credential could not be refreshed" })
        #expect(coordinator.current == "t0")
    }

    @Test func aFailedRefreshAnswersLateCallersUntilItsMemoryExpires() async throws {
        let clock = ManualServiceClock()
        let attempts = ServiceCounter()
        let coordinator = AuthRefreshCoordinator<String>(credential: "t0", failureMemory: .seconds(10), clock: clock) {
            _ in
            attempts.increment()
            throw CourierError(.httpStatus, "refresh endpoint said 400")
        }
        await #expect(throws: CourierError.self) { try await coordinator.credential(replacing: "t0") }
        await #expect(throws: CourierError.self) { try await coordinator.credential(replacing: "t0") }
        #expect(attempts.value == 1)
        clock.advance(by: .seconds(10))
        await #expect(throws: CourierError.self) { try await coordinator.credential(replacing: "t0") }
        #expect(attempts.value == 2)
        coordinator.login("t1")
        await #expect(throws: CourierError.self) { try await coordinator.credential(replacing: "t1") }
        #expect(attempts.value == 3)
    }

    @Test func stormLimitRefusesTooManyRefreshesInAWindow() async throws {
        let clock = ManualServiceClock()
        let counter = Atomic<Int>(0)
        let coordinator = AuthRefreshCoordinator<String>(
            credential: "t0", stormLimit: RefreshStormLimit(maximumRefreshes: 2, window: .seconds(60)), clock: clock
        ) { _ in "t\(counter.wrappingAdd(1, ordering: .relaxed).newValue)" }
        #expect(try await coordinator.credential(replacing: "t0") == "t1")
        #expect(try await coordinator.credential(replacing: "t1") == "t2")
        await #expect(throws: CourierError.self) { try await coordinator.credential(replacing: "t2") }
        #expect(counter.load(ordering: .relaxed) == 2)
        clock.advance(by: .seconds(60))
        #expect(try await coordinator.credential(replacing: "t2") == "t3")
    }

    /// An extreme window is what its documentation says, not a crash or a refresh refused for
    /// ever: zero or less limits nothing.
    @Test(arguments: [Duration.zero, .seconds(-60), .seconds(Int64.min)])
    func aWindowOfZeroOrLessLimitsNothing(window: Duration) async throws {
        let clock = ManualServiceClock()
        let counter = Atomic<Int>(0)
        let coordinator = AuthRefreshCoordinator<String>(
            credential: "t0", stormLimit: RefreshStormLimit(maximumRefreshes: 1, window: window), clock: clock
        ) { _ in "t\(counter.wrappingAdd(1, ordering: .relaxed).newValue)" }
        for n in 1...5 { #expect(try await coordinator.credential(replacing: "t\(n - 1)") == "t\(n)") }
        #expect(counter.load(ordering: .relaxed) == 5)
    }

    @Test func logoutClearsAndDisablesRefresh() async throws {
        let counter = Atomic<Int>(0)
        let coordinator = AuthRefreshCoordinator<String>(credential: "t0") { _ in
            counter.wrappingAdd(1, ordering: .relaxed)
            return "new"
        }
        coordinator.logout()
        #expect(coordinator.current == nil)
        do {
            _ = try await coordinator.credential(replacing: "t0")
            Issue.record("a refresh after logout must fail")
        } catch let error as CourierError {
            #expect(error.code == .authentication)
        }
        #expect(counter.load(ordering: .relaxed) == 0)
        coordinator.login("fresh")
        #expect(try await coordinator.credential(replacing: "stale") == "fresh")
        #expect(counter.load(ordering: .relaxed) == 0)
    }

    @Test func logoutDuringRefreshFailsTheWaitersAndDiscardsTheResult() async throws {
        let refresher = Refresher()
        let coordinator = AuthRefreshCoordinator<String>(credential: "t0") { try await refresher.refresh($0) }
        let waiter = Task { try await coordinator.credential(replacing: "t0") }
        while refresher.calls.load(ordering: .relaxed) == 0 { await Task.yield() }
        coordinator.logout()
        refresher.gate.open()
        await #expect(throws: CourierError.self) { try await waiter.value }
        #expect(coordinator.current == nil)
    }

    @Test func loginDuringRefreshHandsOutTheLoginCredential() async throws {
        let refresher = Refresher()
        let coordinator = AuthRefreshCoordinator<String>(credential: "t0") { try await refresher.refresh($0) }
        let waiter = Task { try await coordinator.credential(replacing: "t0") }
        while refresher.calls.load(ordering: .relaxed) == 0 { await Task.yield() }
        coordinator.login("login")
        refresher.gate.open()
        #expect(try await waiter.value == "login")
        #expect(coordinator.current == "login")
    }

    /// A caller cancelled while the refresh hangs leaves nothing behind: before, each waiter
    /// started a task that waited for the refresh's end, holding what the caller's task carried
    /// (its task-local values: a trace context, a logger's metadata) until the refresh ended,
    /// and as many tasks as calls gave up on a refresh that never ends.
    @Test func aWaiterCancelledDuringAHangingRefreshLeavesNoTaskBehind() async throws {
        let refresher = Refresher()
        let coordinator = AuthRefreshCoordinator<String>(credential: "t0") { try await refresher.refresh($0) }
        let first = Task { try await coordinator.credential(replacing: "t0") }
        while refresher.calls.load(ordering: .relaxed) == 0 { await Task.yield() }
        let contexts = try await Self.cancelWaiters(20, of: coordinator)
        #expect(await coordinator.waitingCallers == 1)
        #expect(contexts.allSatisfy { $0.context == nil }, "a cancelled waiter's task-local values are still held")
        refresher.gate.open()
        #expect(try await first.value == "t0+1")
        #expect(await coordinator.waitingCallers == 0)
    }

    /// What a caller's task carries in a task-local value.
    final class CallerContext: Sendable {}
    enum CallerScope {
        @TaskLocal static var context: CallerContext?
    }
    final class WeakContext: Sendable {
        private let box = LockedValue<Weak>(Weak())
        private struct Weak { weak var context: CallerContext? }
        init(_ context: CallerContext) { box.withLock { $0.context = context } }
        var context: CallerContext? { box.withLock { $0.context } }
    }

    /// Starts `count` callers of `coordinator` (each with a context of its own in a task-local
    /// value), waits until they all wait for the refresh, cancels them and awaits their end.
    /// - Returns: weak references to their contexts.
    private static func cancelWaiters(
        _ count: Int, of coordinator: AuthRefreshCoordinator<String>
    ) async throws -> [WeakContext] {
        let before = await coordinator.waitingCallers
        var references: [WeakContext] = []
        var waiters: [Task<String, any Error>] = []
        for _ in 0..<count {
            let context = CallerContext()
            references.append(WeakContext(context))
            waiters.append(
                Task {
                    try await CallerScope.$context.withValue(context) {
                        try await coordinator.credential(replacing: "t0")
                    }
                })
        }
        while await coordinator.waitingCallers < before + count { await Task.yield() }
        for waiter in waiters { waiter.cancel() }
        for waiter in waiters {
            await #expect(throws: CourierError.self) { try await waiter.value }
        }
        return references
    }
}

/// A one-shot gate: `wait()` suspends until `open()`.
final class ServiceGate: Sendable {
    private let state = LockedValue<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
}

/// A shared counter for closures that escape.
final class ServiceCounter: Sendable {
    private let atomic = Atomic<Int>(0)
    init() {}
    @discardableResult
    func increment() -> Int { atomic.wrappingAdd(1, ordering: .relaxed).newValue }
    var value: Int { atomic.load(ordering: .relaxed) }
}

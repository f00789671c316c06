import HTTPTypes
import Synchronization
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct InFlightDeduplicatorTests {
    @Test func identicalConcurrentCallsShareOneExecution() async throws {
        let dedup = InFlightDeduplicator<String>()
        let gate = ServiceGate()
        let runs = ServiceCounter()
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    try await dedup.run(key: "GET /a") {
                        runs.increment()
                        await gate.wait()
                        return "body"
                    }
                }
            }
            while runs.value == 0 { await Task.yield() }
            gate.open()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results == Array(repeating: "body", count: 10))
        #expect(runs.value == 1)
        #expect(dedup.inFlightCount == 0)
        // After it finished, the next call runs again.
        _ = try await dedup.run(key: "GET /a") { "again" }
        #expect(dedup.executionCount == 2)
    }

    @Test func differentKeysRunSeparatelyAndErrorsAreShared() async throws {
        let dedup = InFlightDeduplicator<Int>()
        let gate = ServiceGate()
        let one = Task {
            try await dedup.run(key: "a") {
                await gate.wait()
                throw CourierError(.httpStatus, "boom")
            }
        }
        while dedup.inFlightCount != 1 { await Task.yield() }
        let two = Task { try await dedup.run(key: "a") { 2 } }
        while dedup.waiterCount != 2 { await Task.yield() }
        #expect(try await dedup.run(key: "b") { 3 } == 3)
        gate.open()
        let errors = [await one.result, await two.result].map { result -> CourierError? in
            guard case .failure(let error) = result else { return nil }
            return error as? CourierError
        }
        #expect(errors.allSatisfy { $0?.message == "boom" })
        #expect(dedup.executionCount == 2)
    }

    @Test func aCancelledWaiterLeavesWithoutCancellingTheOthers() async throws {
        let dedup = InFlightDeduplicator<String>()
        let gate = ServiceGate()
        let wasCancelled = Atomic<Bool>(false)
        let first = Task {
            try await dedup.run(key: "k") {
                await gate.wait()
                wasCancelled.store(Task.isCancelled, ordering: .relaxed)
                return "ok"
            }
        }
        while dedup.inFlightCount == 0 { await Task.yield() }
        let second = Task { try await dedup.run(key: "k") { "unused" } }
        second.cancel()
        await #expect(throws: CancellationError.self) { try await second.value }
        gate.open()
        #expect(try await first.value == "ok")
        let cancelledInside = wasCancelled.load(ordering: .relaxed)
        #expect(!cancelledInside)
    }

    @Test func theWorkIsCancelledWhenEveryWaiterLeft() async throws {
        let dedup = InFlightDeduplicator<String>()
        let observed = ServiceGate()
        let task = Task {
            try await dedup.run(key: "k") {
                try await withTaskCancellationHandler {
                    try await Task.sleep(for: .seconds(600))
                } onCancel: {
                    observed.open()
                }
                return "never"
            }
        }
        while dedup.inFlightCount == 0 { await Task.yield() }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        await observed.wait()
        #expect(dedup.inFlightCount == 0)
    }

    /// The first caller runs the work in its own task: no task is made for it.
    @Test func theFirstCallerRunsTheWorkInItsOwnTask() async throws {
        let dedup = InFlightDeduplicator<Int>()
        let caller = withUnsafeCurrentTask { $0?.hashValue }
        let worker = try await dedup.run(key: "k") { withUnsafeCurrentTask { $0?.hashValue ?? 0 } }
        #expect(caller != nil)
        #expect(worker == caller)
    }

    /// When the caller running the work is cancelled, its work stops, and a caller that joined
    /// it gets an answer of its own (its own work, run again), not the other's cancellation.
    @Test func whenTheFirstCallerIsCancelledAJoinerRunsTheWorkAgain() async throws {
        let dedup = InFlightDeduplicator<String>()
        let release = ServiceGate()
        let first = Task {
            try await dedup.run(key: "k") {
                // Ends when its task is cancelled, or when the test releases it.
                await withTaskCancellationHandler {
                    await release.wait()
                } onCancel: {
                    release.open()
                }
                try Task.checkCancellation()
                return "first"
            }
        }
        while dedup.inFlightCount == 0 { await Task.yield() }
        let second = Task { try await dedup.run(key: "k") { "second" } }
        while dedup.waiterCount < 2 { await Task.yield() }
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        release.open()
        #expect(try await second.value == "second")
        #expect(dedup.executionCount == 2)
        #expect(dedup.inFlightCount == 0)
    }

    /// A run whose first caller is cancelled through its scope (a service call cancelled by
    /// its identifier) restarts for the joiners too.
    @Test func aFirstCallerCancelledThroughItsScopeRestartsTheJoiners() async throws {
        let dedup = InFlightDeduplicator<String>()
        let scope = CancellationScope(id: .next())
        let release = ServiceGate()
        let first = Task {
            try await dedup.run(key: "k", scope: scope) {
                // Ends when the scope is cancelled (as a transfer does), or when the test releases it.
                if scope.install({ release.open() }) { await release.wait() }
                if scope.isCancelled { throw CancellationError() }
                return "first"
            }
        }
        while dedup.inFlightCount == 0 { await Task.yield() }
        let second = Task { try await dedup.run(key: "k") { "second" } }
        while dedup.waiterCount < 2 { await Task.yield() }
        scope.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        release.open()
        #expect(try await second.value == "second")
        #expect(dedup.executionCount == 2)
    }

    /// A key's hash is worked out once and kept; two keys with the same hash but other text
    /// (a collision) are still two keys.
    @Test func keysWithTheSameHashButOtherTextAreNotShared() async throws {
        typealias Key = InFlightDeduplicator<String>.Key
        #expect(Key("a", hash: 7) != Key("b", hash: 7))
        #expect(Key("a", hash: 7) == Key("a", hash: 7))
        #expect(Key("a") == Key("a", hash: "a".hashValue))
        let dedup = InFlightDeduplicator<String>()
        let gate = ServiceGate()
        let first = Task {
            try await dedup.run(key: Key("a", hash: 7)) {
                await gate.wait()
                return "a"
            }
        }
        while dedup.inFlightCount == 0 { await Task.yield() }
        #expect(try await dedup.run(key: Key("b", hash: 7)) { "b" } == "b")
        gate.open()
        #expect(try await first.value == "a")
        #expect(dedup.executionCount == 2)
    }

    @Test func keyVariesOnRelevantHeadersOnly() {
        var a = HTTPRequest(method: .get, scheme: "https", authority: "x.example", path: "/feed")
        var b = a
        #expect(InFlightDeduplicator<Int>.key(for: a) == InFlightDeduplicator<Int>.key(for: b))
        a.headerFields[.authorization] = "Bearer one"
        b.headerFields[.authorization] = "Bearer two"
        #expect(InFlightDeduplicator<Int>.key(for: a) != InFlightDeduplicator<Int>.key(for: b))
        b.headerFields[.authorization] = "Bearer one"
        b.headerFields[.userAgent] = "other"
        #expect(InFlightDeduplicator<Int>.key(for: a) == InFlightDeduplicator<Int>.key(for: b))
        b.headerFields[.acceptLanguage] = "fr"
        #expect(InFlightDeduplicator<Int>.key(for: a) != InFlightDeduplicator<Int>.key(for: b))
        let c = HTTPRequest(method: .get, scheme: "https", authority: "x.example", path: "/feed?page=2")
        #expect(InFlightDeduplicator<Int>.key(for: c) != InFlightDeduplicator<Int>.key(for: a))
    }
}

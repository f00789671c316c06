import CourierTesting
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct BatchTests {
    @Test func runsAllWithTheConcurrencyLimitAndReportsProgress() async {
        let running = ServiceCounter()
        let peak = LockedValue(0)
        let current = LockedValue(0)
        let progress = LockedValue<[BatchProgress]>([])
        let operations: [@Sendable () async throws -> Int] = (0..<12).map { index in
            {
                running.increment()
                current.withLock { value in
                    value += 1
                    peak.withLock { $0 = max($0, value) }
                }
                await Task.yield()
                current.withLock { $0 -= 1 }
                if index == 5 { throw CourierError(.httpStatus, "item 5 failed") }
                return index * 10
            }
        }
        let results = await Batch.run(operations, maximumConcurrent: 3) { status in
            progress.withLock { $0.append(status) }
        }
        #expect(results.count == 12)
        #expect(running.value == 12)
        #expect(peak.withLock { $0 } <= 3)
        for (index, result) in results.enumerated() {
            if index == 5 {
                #expect((try? result.get()) == nil)
            } else {
                #expect((try? result.get()) == index * 10)
            }
        }
        let reported = progress.withLock { $0 }
        #expect(reported.map(\.completed) == Array(1...12))
        #expect(reported.last?.failed == 1)
        #expect(reported.last?.fractionCompleted == 1)
        #expect(reported.allSatisfy { $0.total == 12 })
    }

    @Test func cancelOnFirstFailureStopsTheRest() async {
        let ran = ServiceCounter()
        let operations: [@Sendable () async throws -> Int] = (0..<10).map { index in
            {
                ran.increment()
                if index == 0 { throw CourierError(.httpStatus, "first fails") }
                return index
            }
        }
        let results = await Batch.run(operations, maximumConcurrent: 1, cancelOnFirstFailure: true)
        #expect(ran.value == 1)
        #expect(results.count == 10)
        let codes = results.map { result -> CourierError.Code? in
            if case .failure(let error) = result { return error.code }
            return nil
        }
        #expect(codes.first == .httpStatus)
        #expect(codes.dropFirst().allSatisfy { $0 == .cancelled })
    }

    @Test func emptyBatch() async {
        let results = await Batch.run([@Sendable () async throws -> Int](), maximumConcurrent: 0)
        #expect(results.isEmpty)
    }

    /// Each result's error code, "ok" for a value.
    private static func codes<Value>(_ results: [Result<Value, CourierError>]) -> [String] {
        results.map { result in
            if case .failure(let error) = result { return "\(error.code)" }
            return "ok"
        }
    }

    /// A service whose calls of `held` wait at the server until `held` releases them.
    private static func heldCalls(_ server: TestServer, _ held: HeldRoute) throws -> ServiceCore {
        server.route("/held") { _ in
            held.hold()
            return .json(["id": 1, "name": "held"])
        }
        return try ServiceFixture.service(server)
    }

    /// Cancelling the batch's task midway: the calls in flight end as cancelled, the others
    /// are never sent, progress reaches the total once, and the service has no call left.
    @Test func cancellingTheBatchsTaskSendsNothingMore() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        let service = try Self.heldCalls(server, held)
        let operations: [@Sendable () async throws -> ServiceUser] = (0..<10).map { index in
            { try await service.get("held", parameters: ["i": String(index)]) }
        }
        let progress = LockedValue<[Int]>([])
        let batch = Task {
            await Batch.run(operations, maximumConcurrent: 2) { status in
                progress.withLock { $0.append(status.completed) }
            }
        }
        while held.arrived.value < 2 { await Task.yield() }
        batch.cancel()
        let results = await batch.value
        held.release(2)
        #expect(Self.codes(results) == Array(repeating: "cancelled", count: 10))
        #expect(progress.withLock { $0 } == Array(1...10))
        #expect(server.count("/held") == 2)
        #expect(service.calls.count == 0)
    }

    /// A service's `calls.cancelAll()` cancels the calls it has: with the batch's calls made up
    /// front (`call(_:)`), those not started yet are among them and are never sent. (Operations
    /// that make their call when they start are not calls yet, and still run: cancel the
    /// batch's task to stop those.)
    @Test func cancellingTheServicesCallsStopsABatchOfDeferredCalls() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        let service = try Self.heldCalls(server, held)
        let calls = (0..<10).map { index in
            service.call(Endpoint<ServiceUser>.get("held", parameters: ["i": String(index)]))
        }
        let operations: [@Sendable () async throws -> ServiceUser] = calls.map { call in
            { try await call.run().value }
        }
        let batch = Task { await Batch.run(operations, maximumConcurrent: 2) }
        while held.arrived.value < 2 { await Task.yield() }
        #expect(service.calls.cancelAll() == 10)
        let results = await batch.value
        held.release(2)
        #expect(Self.codes(results) == Array(repeating: "cancelled", count: 10))
        #expect(server.count("/held") == 2)
        #expect(service.calls.count == 0)
    }

    @Test func chainPassesEachResultOn() async throws {
        let value = try await Chain { "token-1" }
            .then { token in token.count }
            .then { count in "length \(count)" }
            .run()
        #expect(value == "length 7")
    }

    @Test func chainStopsAtTheFirstFailure() async {
        let later = ServiceCounter()
        let chain = Chain<Int> { throw CourierError(.authentication, "refresh failed") }
            .then { value -> Int in
                later.increment()
                return value + 1
            }
        do {
            _ = try await chain.run()
            Issue.record("expected a failure")
        } catch {
            #expect(error.code == .authentication)
        }
        #expect(later.value == 0)
        // As a deferred call, cancelled before it starts, nothing runs.
        let call = Chain { later.increment() }.call()
        call.cancel()
        await #expect(throws: CourierError.self) { try await call.run() }
        #expect(later.value == 0)
    }

    /// A chain run by a task that was cancelled already ran its first step (only the steps
    /// after it checked for cancellation), and as a deferred call it even succeeded: a step that
    /// writes something of the app's own did so for a caller that had gone. Like a batch, whose
    /// calls do not run in a cancelled task, it runs no step now and ends as `.cancelled`.
    @Test func aChainRunByACancelledTaskRunsNoStep() async {
        let ran = ServiceCounter()
        let chain = Chain { ran.increment() }.then { $0 + ran.increment() }
        let direct = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await chain.run()
        }.result
        let deferred = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await Chain { ran.increment() }.call().run()
        }.result
        for result in [direct, deferred] {
            guard case .failure(let error) = result else {
                Issue.record("a chain run by a cancelled task succeeded: \(result)")
                continue
            }
            #expect((error as? CourierError)?.code == .cancelled)
        }
        #expect(ran.value == 0)
    }

    /// Each `then` wrapped the chain so far in a new closure: releasing a chain of 100,000
    /// steps released 100,000 nested closure contexts recursively and overflowed the stack
    /// (the process died with SIGSEGV; from about 60,000 steps in a debug build).
    @Test func aChainOfAHundredThousandStepsRunsAndIsReleased() async throws {
        var chain = Chain { 0 }
        for _ in 0..<100_000 { chain = chain.then { $0 + 1 } }
        #expect(try await chain.run() == 100_000)
        #expect(try await chain.call().run() == 100_000)
        // Two chains that share their first steps: releasing one keeps the other whole.
        let base = Chain { 1 }.then { $0 * 10 }
        var left: Chain<Int>? = base.then { $0 + 1 }
        let right = base.then { $0 + 2 }
        #expect(try await left?.run() == 11)
        left = nil
        #expect(try await right.run() == 12)
        #expect(try await base.run() == 10)
    }
}

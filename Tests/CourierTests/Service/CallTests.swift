import Dispatch
import Synchronization
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct CallTests {
    @Test func identifiersAreUniqueAndIncreasing() {
        let ids = (0..<100).map { _ in CallID.next() }
        #expect(Set(ids).count == 100)
        #expect(ids == ids.sorted())
    }

    @Test func deferredStartRunsOnlyWhenStarted() async throws {
        let runs = Atomic<Int>(0)
        let call = Call<Int> {
            runs.wrappingAdd(1, ordering: .relaxed)
            return 7
        }
        #expect(!call.isStarted)
        #expect(runs.load(ordering: .relaxed) == 0)
        call.start()
        call.start()
        #expect(try await call.value() == 7)
        #expect(runs.load(ordering: .relaxed) == 1)
        #expect(call.isFinished)
    }

    @Test func cancelBeforeStartNeverRuns() async throws {
        let runs = Atomic<Int>(0)
        let call = Call<Int> {
            runs.wrappingAdd(1, ordering: .relaxed)
            return 1
        }
        call.cancel()
        call.start()
        let result = await call.result()
        guard case .failure(let error) = result else {
            Issue.record("expected a failure")
            return
        }
        #expect(error.code == .cancelled)
        #expect(error.message.contains("before it was sent"))
        #expect(runs.load(ordering: .relaxed) == 0)
    }

    @Test func cancelInFlightCancelsTheTask() async throws {
        let started = ServiceGate()
        let call = Call<Int> {
            started.open()
            try await Task.sleep(for: .seconds(600))
            return 1
        }
        call.start()
        await started.wait()
        call.cancel()
        do {
            _ = try await call.value()
            Issue.record("expected cancellation")
        } catch {
            #expect(error.code == .cancelled)
        }
    }

    @Test func cancellingTheAwaitingTaskCancelsTheCall() async throws {
        let started = ServiceGate()
        let call = Call<Int> {
            started.open()
            try await Task.sleep(for: .seconds(600))
            return 1
        }
        let waiter = Task { try await call.run() }
        await started.wait()
        waiter.cancel()
        await #expect(throws: CourierError.self) { try await waiter.value }
        #expect(call.isCancelled)
    }

    @Test func errorsBecomeCourierErrors() async {
        struct Odd: Error {}
        let call = Call<Int> { throw Odd() }
        let result = await Call<Int> { throw CourierError(.decoding, "bad") }.runResult()
        #expect((try? result.get()) == nil)
        do {
            _ = try await call.run()
        } catch {
            #expect(error.code == .transport)
            #expect(error.underlying is Odd)
        }
    }

    @Test func registryCancelsByIdentifierAndAllOfOneServiceOnly() async throws {
        let serviceA = CallRegistry()
        let serviceB = CallRegistry()
        func blocked() -> Call<Int> {
            Call {
                try await Task.sleep(for: .seconds(600)); return 0
            }
        }
        let a1 = blocked()
        let a2 = blocked()
        let b1 = Call<Int> { 42 }
        [a1, a2].forEach(serviceA.register)
        serviceB.register(b1)
        a1.start()
        #expect(serviceA.count == 2)
        #expect(serviceA.identifiers == [a1.id, a2.id])
        #expect(serviceA.cancel(a2.id))
        #expect(!serviceA.cancel(CallID.next()))
        await #expect(throws: CourierError.self) { try await a2.value() }
        #expect(serviceA.cancelAll() >= 1)
        await #expect(throws: CourierError.self) { try await a1.value() }
        #expect(serviceA.count == 0)
        #expect(try await b1.run() == 42)
        #expect(serviceB.count == 0)
    }

    @Test func callbacksOnAQueueAndCallIdentifier() async throws {
        let queue = DispatchQueue(label: "callbacks")
        let events = LockedValue<[String]>([])
        let done = ServiceGate()
        let call = Call<Int> { 5 }
        let id = call.start(
            deliveringOn: queue,
            onSuccess: { value in
                dispatchPrecondition(condition: .onQueue(queue))
                events.withLock { $0.append("success \(value)") }
            },
            onFailure: { _ in events.withLock { $0.append("failure") } },
            onFinished: {
                events.withLock { $0.append("finished") }
                done.open()
            })
        #expect(id == call.id)
        await done.wait()
        #expect(events.withLock { $0 } == ["success 5", "finished"])
    }

    @Test func cancelCallbackForACallCancelledBeforeSending() async throws {
        let queue = DispatchQueue(label: "callbacks")
        let events = LockedValue<[String]>([])
        let done = ServiceGate()
        let sent = Atomic<Bool>(false)
        let call = Call<Int> {
            sent.store(true, ordering: .relaxed)
            return 1
        }
        call.cancel()
        call.start(
            deliveringOn: queue, onSuccess: { _ in events.withLock { $0.append("success") } },
            onFailure: { _ in events.withLock { $0.append("failure") } },
            onCancel: { events.withLock { $0.append("cancel") } },
            onFinished: { done.open() })
        await done.wait()
        #expect(events.withLock { $0 } == ["cancel"])
        let wasSent = sent.load(ordering: .relaxed)
        #expect(!wasSent)
        // Without onCancel, a cancellation is a failure.
        let failed = ServiceGate()
        let other = Call<Int> { 1 }
        other.cancel()
        other.start(
            deliveringOn: queue,
            onFailure: { error in
                #expect(error.code == .cancelled)
                failed.open()
            })
        await failed.wait()
    }
}

extension Call {
    func runResult() async -> Result<Value, CourierError> {
        start()
        return await result()
    }
}

import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Many identical GETs share one transfer while the call running it is cancelled again and
/// again (by its task or through the registry), with calls waiting for it cancelled at the same
/// moment: no call hangs, none gets another call's cancellation, every call that is not
/// cancelled gets the answer, and the de-duplicator's table ends empty.
@Suite struct DeduplicationStressTests {
    /// The index of the test call running in this task, sent as a real-time parameter (not in
    /// the identity, so the calls still share): the request the server holds names the call
    /// that runs the shared transfer.
    @TaskLocal static var caller = -1

    /// The callers whose requests reached the server, in order.
    final class Arrivals: Sendable {
        private let list = LockedValue<[Int]>([])
        func add(_ caller: Int) { list.withLock { $0.append(caller) } }
        var all: [Int] { list.withLock { $0 } }
    }

    /// Waits until `condition` holds, for 30 seconds at most (a regression fails, not hangs).
    static func wait(_ what: String, until condition: () -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() {
            if ContinuousClock.now > deadline {
                Issue.record("timed out waiting: \(what)")
                return
            }
            await Task.yield()
        }
    }

    enum How: CaseIterable, Sendable { case task, registry }

    @Test(arguments: How.allCases)
    func leadersCancelledAgainAndAgainNeverStrandOrMisleadTheOthers(how: How) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        let arrivals = Arrivals()
        server.route("/feed") { request in
            arrivals.add(Int(request.queryValue("who") ?? "") ?? -1)
            held.hold()
            return .json(["id": 1, "name": "feed"])
        }
        defer { held.release(1_000) }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.realTimeParameters = { [("who", String(DeduplicationStressTests.caller))] }
        }
        let dedup = service.configuration.deduplicator
        let count = 12
        var tasks: [Task<(Result<ServiceUser, CourierError>, Bool), Never>] = []
        var ids: [CallID] = []
        for index in 0..<count {
            tasks.append(
                Task {
                    await Self.$caller.withValue(index) { await ServiceFixture.getFeed(service) }
                })
            await Self.wait("call \(index) registered") { service.calls.identifiers.count == index + 1 }
            ids.append(try #require(service.calls.identifiers.last))
            await Self.wait("call \(index) waiting") { dedup.waiterCount == index + 1 }
        }
        var remaining = Set(0..<count)
        func cancel(_ index: Int) {
            switch how {
            case .task: tasks[index].cancel()
            case .registry: #expect(service.calls.cancel(ids[index]))
            }
        }
        // Each round cancels the call running the shared transfer, and in every other round a
        // waiting call at the same moment, until two calls are left.
        var round = 0
        while remaining.count > 2 {
            await Self.wait("a request for the shared transfer") {
                arrivals.all.last.map(remaining.contains) == true && dedup.waiterCount == remaining.count
            }
            let leader = try #require(arrivals.all.last)
            var cancelled = [leader]
            if round % 2 == 1, let other = remaining.subtracting([leader]).min() { cancelled.append(other) }
            for index in cancelled { cancel(index) }
            for index in cancelled {
                let (result, callerCancelled) = await tasks[index].value
                #expect(callerCancelled == (how == .task))
                if case .failure(let error) = result {
                    #expect(error.code == .cancelled)
                } else {
                    Issue.record("call \(index) was cancelled but succeeded")
                }
                remaining.remove(index)
            }
            await Self.wait("the others rejoined") { dedup.waiterCount == remaining.count }
            round += 1
        }
        await Self.wait("a request for the shared transfer") {
            arrivals.all.last.map(remaining.contains) == true && dedup.waiterCount == remaining.count
        }
        held.release(1_000)
        for index in remaining.sorted() {
            let (result, callerCancelled) = await tasks[index].value
            #expect(!callerCancelled)
            #expect((try? result.get())?.name == "feed")
        }
        #expect(dedup.inFlightCount == 0)
        #expect(dedup.waiterCount == 0)
        #expect(service.calls.count == 0)
        // One request per call that ran the shared transfer (a call waiting for it that was
        // cancelled as it restarted may have run it too), and never two from one call.
        #expect(arrivals.all.count >= round + 1)
        #expect(Set(arrivals.all).count == arrivals.all.count)
        #expect(arrivals.all.count <= dedup.executionCount)
    }
}

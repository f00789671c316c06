import Foundation
import Testing

@testable import CourierRedis
@testable import CourierTesting

/// The connection's own bookkeeping, against a real redis-server.
@Suite struct RedisConnectionTests {
    /// Each command armed a deadline timer for its whole timeout and left it pending after the
    /// reply: at 10,000 commands/s with a 30 s timeout, 300,000 timers (and their closures)
    /// waited to fire for nothing. A connection keeps at most one pending.
    @Test func answeredCommandsLeaveNoDeadlineTimersBehind() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let fleet = try redis.fleet(commandTimeout: .seconds(30))
        for _ in 0..<2_000 {
            guard case .success = await fleet.client.run([Data("GET".utf8), Data("k".utf8)]) else {
                Issue.record("a GET failed")
                return
            }
        }
        #expect(fleet.client.pendingDeadlines <= 1, "\(fleet.client.pendingDeadlines) timers pending")
    }

    /// Commands wait on the client's serial queue. A Redis that answers each one slowly but
    /// within the timeout (a large purge script, a loaded server) kept every command behind
    /// them waiting for all of those before it, however many: the cache read of the tenth call
    /// waited nine replies. A command that waited in the queue past the command timeout now
    /// fails without being sent, and its call goes on with its local tiers.
    @Test func aCommandQueuedBehindSlowRepliesEndsWithinItsTimeout() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let fleet = try redis.fleet(commandTimeout: .milliseconds(500))
        // Each BLPOP on an empty list is answered (nil) after 300 ms, within the timeout.
        let slow = ["BLPOP", "courier-test-empty", "0.3"].map { Data($0.utf8) }
        // Each command's own time, from its call to its result: a task that starts late on a
        // busy machine does not count its wait to start.
        let outcomes = await withTaskGroup(of: (Duration, Bool).self) { group in
            for _ in 0..<20 {
                group.addTask {
                    let started = ContinuousClock.now
                    let result = await fleet.client.run(slow)
                    return (ContinuousClock.now - started, result == .failure(.expired))
                }
            }
            return await group.reduce(into: [(Duration, Bool)]()) { $0.append($1) }
        }
        // The queue holds 6 s of replies: most commands must give up unsent (none did on the
        // old code), whatever the machine's load.
        let expired = outcomes.filter(\.1).count
        #expect(expired >= 10, "only \(expired) of 20 commands gave up in the queue")
        // About 0.8 s here; the old code took 6.5 s. The bound leaves room for a loaded machine
        // (2.63 s seen at load 7 against a 2.5 s bound).
        let longest = outcomes.map(\.0).max() ?? .zero
        #expect(longest < TestTimeBound.scaled(.seconds(4)), "a command took \(longest)")
    }
}

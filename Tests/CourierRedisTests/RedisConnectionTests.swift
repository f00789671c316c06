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
        let durations = await withTaskGroup(of: Duration.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    let started = ContinuousClock.now
                    _ = await fleet.client.run(slow)
                    return ContinuousClock.now - started
                }
            }
            return await group.reduce(into: [Duration]()) { $0.append($1) }
        }
        let longest = durations.max() ?? .zero
        #expect(longest < TestTimeBound.scaled(.milliseconds(2_500)), "a command took \(longest)")
    }
}

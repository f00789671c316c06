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
}

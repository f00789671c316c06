import Foundation

extension TestServer {
    /// How long the waits below wait by default. Generous on purpose: a wait returns as soon
    /// as its condition holds, so only a failing test pays it, and under ThreadSanitizer on a
    /// 2-core machine the parallel suite once kept a just-started request from reaching the
    /// server for more than 10 seconds (HTTPClientCacheEdgeTests, 23 Nov 2026), and on 27 Nov
    /// 2026, at load 4–6, it held every test back for about 50 seconds after the start, so a
    /// 30-second wait ran out before the request of CourierTransportTests'
    /// `cancellingTheTaskCancelsTheOperation` was sent.
    public static let defaultWaitTimeout: Duration = .seconds(120)

    /// Waits until at most `limit` connections are open, or `timeout` passes, without blocking
    /// a thread of the cooperative pool (the wait runs on a thread of its own).
    /// - Parameters:
    ///   - limit: The number of connections that may stay open.
    ///   - timeout: How long to wait at most.
    /// - Returns: whether the condition was met in time.
    @discardableResult
    public func waitForOpenConnections(atMost limit: Int, timeout: Duration = TestServer.defaultWaitTimeout) async
        -> Bool
    {
        await Self.onOwnThread { self.core.waitUntil(timeout: timeout) { $0.connections.count <= limit } }
    }

    /// Waits until at least `count` requests were received, or `timeout` passes, without
    /// blocking a thread of the cooperative pool.
    /// - Parameters:
    ///   - count: The number of requests to wait for.
    ///   - timeout: How long to wait at most.
    /// - Returns: whether that many requests arrived in time.
    @discardableResult
    public func waitForRequests(atLeast count: Int, timeout: Duration = TestServer.defaultWaitTimeout) async -> Bool {
        await Self.onOwnThread { self.core.waitUntil(timeout: timeout) { $0.requestCount >= count } }
    }

    /// Runs a blocking wait on a new thread and awaits its result.
    private static func onOwnThread(_ body: @escaping @Sendable () -> Bool) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }
}

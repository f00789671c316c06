import CourierLocking
import Foundation

/// Runs Redis commands on one connection from a serial queue of its own, behind a circuit
/// breaker, so that a slow or dead Redis costs a call a bounded time and then nothing at all.
///
/// hiredis blocks, so it never runs on the curl thread or on a cooperative-pool thread: an
/// `async` caller suspends while the command runs on the queue. The first failure (refused
/// connection, timeout, broken socket) opens the breaker for `retryAfter`: commands fail at
/// once without touching the network, including those already queued, and the callers fall
/// back to their local tiers and gates. After `retryAfter` the next command tries again; its
/// success closes the breaker.
final class RedisClient: Sendable {
    struct Statistics: Sendable, Equatable {
        /// Commands that got a reply.
        var replies = 0
        /// Commands that failed on the network (connect, timeout, broken connection).
        var failures = 0
        /// Commands refused at once because the breaker was open.
        var shortCircuited = 0
    }

    private struct Breaker {
        var openUntil: ContinuousClock.Instant?
        var statistics = Statistics()
    }

    private let queue: DispatchQueue
    private let connection: LockedValue<RedisConnection>
    private let breaker = LockedValue(Breaker())
    let retryAfter: Duration

    init(endpoint: RedisConnection.Endpoint, retryAfter: Duration, label: String) {
        queue = DispatchQueue(label: "courier.redis." + label)
        connection = LockedValue(RedisConnection(endpoint: endpoint))
        self.retryAfter = retryAfter
    }

    var statistics: Statistics { breaker.withLock { $0.statistics } }

    /// False while the breaker is open.
    var isAvailable: Bool {
        breaker.withLock { state in state.openUntil.map { ContinuousClock.now >= $0 } ?? true }
    }

    /// Runs `arguments` and returns the reply, or the failure (never throws past the bound).
    func run(_ arguments: [Data]) async -> Result<RedisReply, RedisFailure> {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.runNow(arguments)) }
        }
    }

    /// Runs a script: `EVAL script numkeys keys… args…`.
    func eval(_ script: String, keys: [String], arguments: [Data]) async -> Result<RedisReply, RedisFailure> {
        await run(Self.evalArguments(script, keys: keys, arguments: arguments))
    }

    /// Queues `arguments` without waiting for the reply; commands queued from one client run
    /// in order, so a later `run` sees the effect.
    func send(_ arguments: [Data]) {
        queue.async { _ = self.runNow(arguments) }
    }

    func sendEval(_ script: String, keys: [String], arguments: [Data]) {
        send(Self.evalArguments(script, keys: keys, arguments: arguments))
    }

    /// Waits until every command queued so far has run.
    func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { continuation.resume() }
        }
    }

    /// Drops the connection (the next command reconnects).
    func disconnect() {
        queue.async { self.connection.withLock { $0.close() } }
    }

    private static func evalArguments(_ script: String, keys: [String], arguments: [Data]) -> [Data] {
        [Data("EVAL".utf8), Data(script.utf8), Data(String(keys.count).utf8)] + keys.map { Data($0.utf8) } + arguments
    }

    /// On the queue only.
    private func runNow(_ arguments: [Data]) -> Result<RedisReply, RedisFailure> {
        let refused = breaker.withLock { state -> Bool in
            guard let until = state.openUntil, ContinuousClock.now < until else { return false }
            state.statistics.shortCircuited += 1
            return true
        }
        if refused { return .failure(.unavailable) }
        let result = connection.withLock { connection -> Result<RedisReply, RedisFailure> in
            do throws(RedisFailure) {
                return .success(try connection.run(arguments))
            } catch {
                return .failure(error)
            }
        }
        let retryAfter = retryAfter
        breaker.withLock { state in
            switch result {
            case .success:
                state.openUntil = nil
                state.statistics.replies += 1
            case .failure:
                state.openUntil = ContinuousClock.now + retryAfter
                state.statistics.failures += 1
            }
        }
        return result
    }
}

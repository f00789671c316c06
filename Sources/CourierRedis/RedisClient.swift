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
/// success closes the breaker. A command that waited in the queue longer than the command
/// timeout (behind replies that each came within it, but slowly) fails without being sent.
final class RedisClient: Sendable {
    struct Statistics: Sendable, Equatable {
        /// Commands that got a reply.
        var replies = 0
        /// Commands that failed on the network (connect, timeout, broken connection).
        var failures = 0
        /// Commands refused at once because the breaker was open.
        var shortCircuited = 0
        /// Removals dropped because too many were waiting for Redis to come back.
        var removalsLost = 0
    }

    private struct Breaker {
        var openUntil: ContinuousClock.Instant?
        var statistics = Statistics()
        /// Removals (invalidations, logout purges) that failed, replayed in order once Redis
        /// answers again, so a purge made while Redis was unreachable still happens.
        var pending: [[Data]] = []
        /// Commands sent so far (answered or failed).
        var sent: UInt64 = 0
    }

    /// When a command was queued, and how many commands had been sent then.
    private struct Queued {
        var instant: ContinuousClock.Instant
        var sent: UInt64
    }

    /// The most removals kept for replay.
    static let maximumPending = 1_000

    private let queue: DispatchQueue
    private let connection: LockedValue<RedisConnection>
    private let breaker = LockedValue(Breaker())
    let retryAfter: Duration
    /// The longest a command waits in the queue before it is sent: the command timeout.
    private let queueTimeout: Duration

    init(endpoint: RedisConnection.Endpoint, retryAfter: Duration, label: String) {
        queue = DispatchQueue(label: "courier.redis." + label)
        connection = LockedValue(RedisConnection(endpoint: endpoint))
        self.retryAfter = retryAfter
        queueTimeout = endpoint.commandTimeout
    }

    var statistics: Statistics { breaker.withLock { $0.statistics } }

    /// False while the breaker is open.
    var isAvailable: Bool {
        breaker.withLock { state in state.openUntil.map { ContinuousClock.now >= $0 } ?? true }
    }

    /// Runs `arguments` and returns the reply, or the failure (never throws past the bound).
    func run(_ arguments: [Data]) async -> Result<RedisReply, RedisFailure> {
        let queued = enqueued()
        return await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.runNow(arguments, queued: queued)) }
        }
    }

    /// Runs a script: `EVAL script numkeys keys… args…`.
    func eval(_ script: String, keys: [String], arguments: [Data]) async -> Result<RedisReply, RedisFailure> {
        await run(Self.evalArguments(script, keys: keys, arguments: arguments))
    }

    /// Queues `arguments` without waiting for the reply; commands queued from one client run
    /// in order, so a later `run` sees the effect.
    /// - Parameter replayed: keep the command when it fails and send it again once Redis
    ///   answers (for removals, which must not be lost).
    func send(_ arguments: [Data], replayed: Bool = false) {
        let queued = enqueued()
        queue.async {
            if case .failure = self.runNow(arguments, queued: queued), replayed { self.keepForReplay(arguments) }
        }
    }

    func sendEval(_ script: String, keys: [String], arguments: [Data], replayed: Bool = false) {
        send(Self.evalArguments(script, keys: keys, arguments: arguments), replayed: replayed)
    }

    /// Waits until every command queued so far has run, and replays the removals kept while
    /// Redis was unavailable when it answers again.
    func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.replayPending()
                continuation.resume()
            }
        }
    }

    /// Command deadline timers of the connection scheduled and not yet fired (tests).
    var pendingDeadlines: Int { connection.withLock { $0.pendingDeadlines } }

    /// Number of removals waiting for Redis.
    var pendingRemovals: Int { breaker.withLock { $0.pending.count } }

    private func keepForReplay(_ arguments: [Data]) {
        breaker.withLock { state in
            if state.pending.count >= Self.maximumPending {
                state.pending.removeFirst()
                state.statistics.removalsLost += 1
            }
            state.pending.append(arguments)
        }
    }

    /// On the queue only: sends the kept removals, oldest first, until one fails.
    private func replayPending() {
        while let next = breaker.withLock({ $0.pending.first }) {
            guard case .success = execute(next) else { return }
            breaker.withLock { state in if !state.pending.isEmpty { state.pending.removeFirst() } }
        }
    }

    /// Drops the connection (the next command reconnects).
    func disconnect() {
        queue.async { self.connection.withLock { $0.close() } }
    }

    private func enqueued() -> Queued {
        Queued(instant: .now, sent: breaker.withLock { $0.sent })
    }

    private static func evalArguments(_ script: String, keys: [String], arguments: [Data]) -> [Data] {
        [Data("EVAL".utf8), Data(script.utf8), Data(String(keys.count).utf8)] + keys.map { Data($0.utf8) } + arguments
    }

    /// On the queue only: replays kept removals first, so they land before newer commands.
    /// A command queued longer than the command timeout ago, behind commands sent meanwhile, is
    /// not sent: each of those was answered within the timeout, but together they used up its
    /// caller's bound. (One that only waited for the queue's thread, on a busy machine, is sent.)
    private func runNow(_ arguments: [Data], queued: Queued) -> Result<RedisReply, RedisFailure> {
        if ContinuousClock.now - queued.instant > queueTimeout, breaker.withLock({ $0.sent }) != queued.sent {
            return .failure(.expired)
        }
        if breaker.withLock({ !$0.pending.isEmpty }) { replayPending() }
        return execute(arguments)
    }

    /// On the queue only.
    private func execute(_ arguments: [Data]) -> Result<RedisReply, RedisFailure> {
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
            state.sent &+= 1
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

import Foundation

/// When a server pool leaves its current server for the next one.
public struct FailoverPolicy: Sendable, Hashable {
    /// Switch when the share of failed requests in the window is above this (0.1 = 10%).
    var errorRateThreshold: Double
    /// The error rate is judged only once the window holds at least this many requests.
    var minimumRequests: Int
    /// How far back the sliding window reaches.
    var window: Duration
    /// Consecutive connection failures (refused, unreachable, timed out connecting) that
    /// switch at once, without waiting for the error rate. 0 turns this off.
    var consecutiveConnectionFailures: Int
    /// The most outcomes the window keeps, whatever their age (memory stays bounded).
    var maximumSamples: Int

    /// A policy; the defaults are ``default``.
    /// - Parameters:
    ///   - errorRateThreshold: Switch when the share of failed requests in the window is above
    ///     this (0.1 = 10%; 1 or more never switches on the rate). NaN or a negative value makes
    ///     the `ServerPool` that gets this policy throw `CourierError.configuration`.
    ///   - minimumRequests: The error rate is judged only once the window holds at least this
    ///     many requests (at least 1).
    ///   - window: How far back the sliding window reaches. Zero or negative makes the
    ///     `ServerPool` that gets this policy throw `CourierError.configuration`.
    ///   - consecutiveConnectionFailures: Consecutive connection failures (refused, unreachable,
    ///     timed out connecting) that switch at once, without waiting for the error rate; 0
    ///     turns this off.
    ///   - maximumSamples: The most outcomes the window keeps, whatever their age (at least
    ///     `minimumRequests`).
    public init(
        errorRateThreshold: Double = 0.10, minimumRequests: Int = 20, window: Duration = .seconds(60),
        consecutiveConnectionFailures: Int = 1, maximumSamples: Int = 1_000
    ) {
        self.errorRateThreshold = errorRateThreshold
        self.minimumRequests = max(1, minimumRequests)
        self.window = window
        self.consecutiveConnectionFailures = max(0, consecutiveConnectionFailures)
        self.maximumSamples = max(self.minimumRequests, maximumSamples)
    }

    /// 10% over at least 20 requests in the last minute, or one connection failure.
    public static let `default` = FailoverPolicy()

    /// Refuses a threshold no error rate can be compared with: NaN never switched a pool, and
    /// a negative one switched it after every `minimumRequests` requests, failed or not. And a
    /// window that holds no outcome (zero or negative): the rate was never judged.
    /// - Throws: `CourierError.configuration`.
    func validated() throws(CourierError) -> FailoverPolicy {
        guard !errorRateThreshold.isNaN, errorRateThreshold >= 0 else {
            throw CourierError(
                .configuration, "a failover policy's error rate threshold must be 0 or more, not \(errorRateThreshold)")
        }
        guard window > .zero else {
            throw CourierError(.configuration, "a failover policy's window must be longer than zero, not \(window)")
        }
        return self
    }
}

/// How one request to a server of the pool ended.
enum ServerOutcome: Sendable, Hashable {
    /// The server answered with a status the pool counts as healthy.
    case success
    /// The server answered with an error (5xx) or the transfer failed after connecting.
    case failure
    /// No connection could be made at all.
    case connectionFailure
}

/// Why the pool changed its current server.
public enum ServerChangeReason: Sendable, Hashable {
    /// The error rate passed the threshold (the measured rate).
    case errorRate(Double)
    /// Connections to the server failed.
    case connectionFailure
    /// The app selected the server explicitly.
    case selected
    /// The app switched environment.
    case environment(ServerEnvironment)
}

/// An event: the pool now sends to another server.
public struct ServerChange: Sendable, Hashable {
    /// The server requests went to before.
    public var previous: URL
    /// The server requests go to from now on.
    public var current: URL
    /// The index of `current` in the pool's server list.
    public var index: Int
    /// Why the pool switched.
    public var reason: ServerChangeReason
}

/// The pure decision part of failover: a sliding window of outcomes for the current server.
/// No locks, no I/O; `ServerPool` wraps it.
struct FailoverState: Sendable {
    private(set) var servers: [BaseURL]
    private(set) var index = 0
    /// Moves on whenever the window starts over (the pool moves, or its list is replaced): a
    /// request sent in an earlier turn of the current server is not counted in this one.
    private(set) var turn: UInt64 = 0
    let policy: FailoverPolicy
    /// Outcomes for the current server, oldest first: (time, failed).
    private var samples: [(at: ContinuousClock.Instant, failed: Bool)] = []
    private var consecutiveConnectionFailures = 0

    init(servers: [BaseURL], policy: FailoverPolicy) {
        precondition(!servers.isEmpty, "validated by ServerPool")
        self.servers = servers
        self.policy = policy
    }

    var current: BaseURL { servers[index] }

    /// The failure share in the window and the number of samples it is based on.
    func errorRate(now: ContinuousClock.Instant) -> (rate: Double, count: Int) {
        let live = samples.filter { now - $0.at <= policy.window }
        guard !live.isEmpty else { return (0, 0) }
        let failures = live.reduce(0) { $0 + ($1.failed ? 1 : 0) }
        return (Double(failures) / Double(live.count), live.count)
    }

    /// Records an outcome of a request sent to `server` in `turn`. Outcomes for a server that
    /// is no longer current, or for a request sent before the pool left it and came back, are
    /// ignored: they describe the past.
    /// - Returns: the change, when this outcome makes the pool switch.
    mutating func record(
        _ outcome: ServerOutcome, server: BaseURL, turn: UInt64, now: ContinuousClock.Instant
    ) -> ServerChange? {
        guard server == current, turn == self.turn else { return nil }
        prune(now: now)
        samples.append((now, outcome != .success))
        if samples.count > policy.maximumSamples { samples.removeFirst(samples.count - policy.maximumSamples) }
        if outcome == .connectionFailure {
            consecutiveConnectionFailures += 1
            if policy.consecutiveConnectionFailures > 0,
                consecutiveConnectionFailures >= policy.consecutiveConnectionFailures, servers.count > 1
            {
                return moveTo((index + 1) % servers.count, reason: .connectionFailure)
            }
        } else {
            consecutiveConnectionFailures = 0
        }
        let (rate, count) = errorRate(now: now)
        if count >= policy.minimumRequests, rate > policy.errorRateThreshold, servers.count > 1 {
            return moveTo((index + 1) % servers.count, reason: .errorRate(rate))
        }
        return nil
    }

    /// Makes the server at `newIndex` current.
    mutating func select(_ newIndex: Int, reason: ServerChangeReason = .selected) throws -> ServerChange? {
        guard servers.indices.contains(newIndex) else {
            throw CourierError(
                .configuration, "there is no server at index \(newIndex) (the pool has \(servers.count))")
        }
        guard newIndex != index else { return nil }
        return moveTo(newIndex, reason: reason)
    }

    /// Replaces the server list (an environment switch) and starts at its first server.
    mutating func replace(servers newServers: [BaseURL], reason: ServerChangeReason) -> ServerChange? {
        let previous = current
        servers = newServers
        index = 0
        resetWindow()
        guard previous != current else { return nil }
        return ServerChange(previous: previous.url, current: current.url, index: 0, reason: reason)
    }

    private mutating func moveTo(_ newIndex: Int, reason: ServerChangeReason) -> ServerChange {
        let previous = current
        index = newIndex
        resetWindow()
        return ServerChange(previous: previous.url, current: current.url, index: newIndex, reason: reason)
    }

    private mutating func resetWindow() {
        turn &+= 1
        samples.removeAll(keepingCapacity: true)
        consecutiveConnectionFailures = 0
    }

    private mutating func prune(now: ContinuousClock.Instant) {
        if let firstLive = samples.firstIndex(where: { now - $0.at <= policy.window }) {
            if firstLive > 0 { samples.removeFirst(firstLive) }
        } else {
            samples.removeAll(keepingCapacity: true)
        }
    }
}

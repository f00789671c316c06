import Foundation
import Synchronization

/// The name of a deployment an app can talk to: development, staging, production, …
public struct ServerEnvironment: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The environment's name.
    public var rawValue: String
    /// An environment named `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }
    init(_ name: String) { self.rawValue = name }
    /// The environment's name.
    public var description: String { rawValue }

    /// Developers' servers.
    public static let development = ServerEnvironment("development")
    /// The pre-release deployment.
    public static let staging = ServerEnvironment("staging")
    /// The servers users reach.
    public static let production = ServerEnvironment("production")
}

/// Several base URLs for one API, with failover between them, optionally grouped into
/// named environments that can be switched at runtime.
///
/// Requests go to `current`. Report how each ended with `record(_:for:turn:)`; when the error
/// rate over the sliding window passes the policy's threshold, or connections fail, the pool
/// moves to the next server and tells its observers.
public final class ServerPool: Sendable {
    private struct State {
        var failover: FailoverState
        var environments: [ServerEnvironment: [BaseURL]]
        var environment: ServerEnvironment?
        /// Moves on whenever `origins` may have changed (`setServers`).
        var originsVersion: UInt64 = 0
        var observers: [UInt64: @Sendable (ServerChange) -> Void] = [:]
        var nextObserver: UInt64 = 0
        /// Each change with the observers there were when it was made.
        var changes = OrderedDelivery<(ServerChange, [@Sendable (ServerChange) -> Void])>()
    }

    private let state: LockedValue<State>
    private let clock: any ServiceClock

    /// A pool of servers for one environment.
    /// - Parameters:
    ///   - servers: the base URLs (`http` or `https`, a host, an optional path prefix), in order
    ///     of preference.
    ///   - policy: when to switch.
    /// - Throws: `CourierError.configuration` when `servers` is empty, one is not a usable base URL,
    ///   or the policy's error rate threshold is NaN or negative, or its window not
    ///   longer than zero.
    public convenience init(servers: [URL], policy: FailoverPolicy = .default) throws {
        try self.init(servers: servers.map(BaseURL.init), policy: policy, clock: .system)
    }

    /// A pool of validated servers (tests and the library).
    convenience init(servers: [BaseURL], policy: FailoverPolicy = .default) throws {
        try self.init(servers: servers, policy: policy, clock: .system)
    }

    init(servers: [BaseURL], policy: FailoverPolicy = .default, clock: any ServiceClock) throws {
        guard !servers.isEmpty else { throw CourierError(.configuration, "a server pool needs at least one server") }
        try Self.checkListedOnce(servers)
        let policy = try policy.validated()
        self.clock = clock
        self.state = LockedValue(
            State(failover: FailoverState(servers: servers, policy: policy), environments: [:], environment: nil))
    }

    /// A pool with named environments, starting in `environment`.
    /// - Parameters:
    ///   - environments: the servers of each environment.
    ///   - environment: the one to start with.
    ///   - policy: when to switch servers within an environment.
    /// - Throws: `CourierError.configuration` when `environment` is unknown or has no servers, a
    ///   server is not a usable base URL, or the policy's error rate threshold is NaN or negative, or its window not
    ///   longer than zero.
    public convenience init(
        environments: [ServerEnvironment: [URL]], current environment: ServerEnvironment,
        policy: FailoverPolicy = .default
    ) throws {
        try self.init(
            environments: environments.mapValues { try $0.map(BaseURL.init) }, current: environment, policy: policy,
            clock: .system)
    }

    /// A pool of validated servers with named environments (tests and the library).
    convenience init(
        environments: [ServerEnvironment: [BaseURL]], current environment: ServerEnvironment,
        policy: FailoverPolicy = .default
    ) throws {
        try self.init(environments: environments, current: environment, policy: policy, clock: .system)
    }

    init(
        environments: [ServerEnvironment: [BaseURL]], current environment: ServerEnvironment,
        policy: FailoverPolicy = .default, clock: any ServiceClock
    ) throws {
        guard let servers = environments[environment], !servers.isEmpty else {
            throw CourierError(.configuration, "the environment '\(environment)' has no servers")
        }
        for servers in environments.values { try Self.checkListedOnce(servers) }
        let policy = try policy.validated()
        self.clock = clock
        self.state = LockedValue(
            State(
                failover: FailoverState(servers: servers, policy: policy), environments: environments,
                environment: environment))
    }

    /// The server requests go to now.
    public var current: URL { currentServer.url }
    /// The server requests go to now, validated.
    var currentServer: BaseURL { state.withLock { $0.failover.current } }
    /// The server requests go to now, and its turn: what `record(_:for:turn:)` is given back
    /// for a request sent there.
    var currentTurn: (server: BaseURL, turn: UInt64) {
        state.withLock { ($0.failover.current, $0.failover.turn) }
    }
    /// The index of `current` in `servers`.
    var currentIndex: Int { state.withLock { $0.failover.index } }
    /// The servers of the current environment.
    public var servers: [URL] { state.withLock { $0.failover.servers.map(\.url) } }
    /// The origins of every server of every environment: the API's own, they get the credential.
    var origins: Set<Origin> {
        state.withLock { state in
            Set((state.failover.servers + state.environments.values.joined()).compactMap(Origin.init))
        }
    }
    /// Whether `server` is one of the pool's, in any environment.
    func lists(_ server: BaseURL) -> Bool {
        state.withLock { state in
            state.failover.servers.contains(server) || state.environments.values.contains { $0.contains(server) }
        }
    }
    /// Moves on whenever `origins` may have changed: a call's plan that decided on a server's
    /// credential by them (`CallPlan`) is not reused past a change.
    var originsVersion: UInt64 { state.withLock { $0.originsVersion } }
    /// The current environment, when the pool was made with environments.
    public var environment: ServerEnvironment? { state.withLock { $0.environment } }
    /// The failure share over the window for the current server, and the sample count.
    var errorRate: (rate: Double, count: Int) {
        let now = clock.now
        return state.withLock { $0.failover.errorRate(now: now) }
    }

    /// Reports how a request to `server` ended; may switch the current server.
    /// - Parameters:
    ///   - outcome: success, failure or connection failure.
    ///   - server: the server the request went to.
    ///   - turn: `currentTurn.turn` when the request was sent there: an answer to a request sent
    ///     before the pool left the server and came back is not counted.
    /// - Returns: the change, if this outcome caused one.
    @discardableResult
    func record(_ outcome: ServerOutcome, for server: BaseURL, turn: UInt64) -> ServerChange? {
        let now = clock.now
        return apply { $0.failover.record(outcome, server: server, turn: turn, now: now) }
    }

    /// Selects a server explicitly (for example when the backend pushes an index).
    /// - Parameter index: the index in `servers`.
    /// - Throws: `CourierError.configuration` when the index is out of range.
    public func select(index: Int) throws {
        try apply { try $0.failover.select(index) }
    }

    /// Switches to another environment and to its first server.
    /// - Parameter environment: a name given at creation or added with `setServers(_:for:)`.
    /// - Throws: `CourierError.configuration` when the environment is unknown.
    public func switchEnvironment(to environment: ServerEnvironment) throws {
        try apply { state in
            guard let servers = state.environments[environment], !servers.isEmpty else {
                throw CourierError(.configuration, "the environment '\(environment)' has no servers")
            }
            state.environment = environment
            return state.failover.replace(servers: servers, reason: .environment(environment))
        }
    }

    /// Adds or replaces the servers of an environment. When it is the current one, the pool
    /// starts over at its first server.
    /// - Throws: `CourierError.configuration` when `servers` is empty or one is not a usable base URL.
    public func setServers(_ servers: [URL], for environment: ServerEnvironment) throws {
        try setServers(servers.map(BaseURL.init), for: environment)
    }

    /// Adds or replaces the validated servers of an environment.
    func setServers(_ servers: [BaseURL], for environment: ServerEnvironment) throws {
        guard !servers.isEmpty else { throw CourierError(.configuration, "an environment needs at least one server") }
        try Self.checkListedOnce(servers)
        apply { state in
            state.environments[environment] = servers
            state.originsVersion &+= 1
            guard state.environment == environment || state.environment == nil && state.environments.count == 1
            else { return nil }
            state.environment = environment
            return state.failover.replace(servers: servers, reason: .environment(environment))
        }
    }

    /// Refuses a list that names one server twice: the same scheme, host, port (a default one
    /// written or not) and path prefix. The pool took them for two, and a failure "moved" it to
    /// the server that had just failed.
    /// - Throws: `CourierError.configuration`.
    private static func checkListedOnce(_ servers: [BaseURL]) throws(CourierError) {
        var seen = Set<String>()
        for server in servers {
            let origin = Origin(server)
            let key = origin.map { "\($0.scheme)://\($0.host):\($0.port)" } ?? server.scheme + "://" + server.authority
            guard seen.insert(key + server.pathPrefix).inserted else {
                throw CourierError(.configuration, "the server \(server.url) is listed twice")
            }
        }
    }

    /// Calls `handler` after every change of the current server, in order, never two at once,
    /// on the thread that caused a change (one that is telling changes tells those made
    /// meanwhile), outside the pool's lock.
    /// - Returns: a token for `removeObserver(_:)`.
    @discardableResult
    func addObserver(_ handler: @escaping @Sendable (ServerChange) -> Void) -> UInt64 {
        state.withLock { state in
            state.nextObserver += 1
            state.observers[state.nextObserver] = handler
            return state.nextObserver
        }
    }

    /// Stops calling an observer.
    func removeObserver(_ token: UInt64) {
        _ = state.withLock { $0.observers.removeValue(forKey: token) }
    }

    /// The changes as an async sequence (ends when the pool is released).
    public var changes: AsyncStream<ServerChange> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: ServerChange.self, bufferingPolicy: .bufferingNewest(64))
        let token = addObserver { continuation.yield($0) }
        continuation.onTermination = { [weak self] _ in self?.removeObserver(token) }
        return stream
    }

    /// Makes a change under the lock, then tells the observers, outside it and in the order the
    /// changes were made (`OrderedDelivery`: two threads that each switched the server would
    /// otherwise race to tell, and an observer could end on the server the pool left).
    @discardableResult
    private func apply(_ body: (inout State) throws -> ServerChange?) rethrows -> ServerChange? {
        let (change, delivers) = try state.withLock { state -> (ServerChange?, Bool) in
            guard let change = try body(&state) else { return (nil, false) }
            return (change, state.changes.queue((change, Array(state.observers.values))))
        }
        guard delivers else { return change }
        while let (next, observers) = state.withLock({ $0.changes.next() }) {
            observers.forEach { $0(next) }
        }
        return change
    }
}

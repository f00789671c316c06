import Synchronization

/// Refreshes a credential once for everyone who needs it.
///
/// When many calls get 401 at the same time, each asks for a fresh credential, naming the
/// one that failed. The first starts a refresh; the others wait for it; all get the same
/// result — the new credential, or one `.authentication` error. A caller whose failed
/// credential was already replaced gets the current one without a refresh. Refreshes are
/// limited per time window (a storm ends in errors, not in a loop), and after `logout()`
/// nothing is refreshed until the next `login(_:)`.
public actor AuthRefreshCoordinator<Credential: Sendable & Equatable> {
    /// Makes a new credential from the one that stopped working (its refresh token, …).
    public typealias Refresher = @Sendable (_ expired: Credential) async throws -> Credential

    /// The session: read and changed synchronously (login and logout come from notification
    /// handlers and must take effect before the next request starts).
    private struct Session {
        var credential: Credential?
        /// Bumped on login and logout, so a refresh that ends after either is discarded.
        var generation: UInt64 = 0
        var refreshTimes: [ContinuousClock.Instant] = []
        var completedRefreshes = 0
        /// The last failed refresh: callers still holding that credential get its error
        /// instead of starting another refresh, for `failureMemory`.
        var lastFailure: (credential: Credential, error: CourierError, at: ContinuousClock.Instant)?
    }
    private nonisolated let session: LockedValue<Session>
    private var inFlight: (id: UInt64, generation: UInt64, task: Task<Credential, any Error>)?
    private var nextRefreshID: UInt64 = 0
    private let refresher: Refresher
    private let stormLimit: RefreshStormLimit
    private let failureMemory: Duration
    private let clock: any ServiceClock

    /// A coordinator holding `credential`, refreshed by `refresh`.
    /// - Parameters:
    ///   - credential: the credential to start with (nil: logged out).
    ///   - stormLimit: how many refreshes a time window allows.
    ///   - failureMemory: how long a failed refresh answers for its credential: calls rejected
    ///     just after it fail with the same error instead of refreshing again.
    ///   - refresh: makes a new credential; runs at most once at a time.
    public init(
        credential: Credential? = nil, stormLimit: RefreshStormLimit = .default,
        failureMemory: Duration = .seconds(10), refresh: @escaping Refresher
    ) {
        self.init(
            credential: credential, stormLimit: stormLimit, failureMemory: failureMemory, clock: .system,
            refresh: refresh)
    }

    /// The same with an injected clock (tests).
    init(
        credential: Credential? = nil, stormLimit: RefreshStormLimit = .default,
        failureMemory: Duration = .seconds(10), clock: any ServiceClock, refresh: @escaping Refresher
    ) {
        self.session = LockedValue(Session(credential: credential))
        self.stormLimit = stormLimit
        self.failureMemory = failureMemory
        self.clock = clock
        self.refresher = refresh
    }

    /// Fleet mode (CourierRedis): run before each attempt; adopts a credential another process
    /// published since (`adopt`), so no process keeps sending one the fleet has replaced.
    package nonisolated let sharedSync = LockedValue<(@Sendable () async -> Void)?>(nil)

    /// Fleet mode: takes `credential`, refreshed by another process, as the current one
    /// (only while logged in: a logout is not undone by the fleet).
    package nonisolated func adopt(_ credential: Credential) {
        session.withLock { session in
            guard let current = session.credential, current != credential else { return }
            session.credential = credential
            session.lastFailure = nil
        }
    }

    /// The credential to attach now; nil when logged out.
    public nonisolated var current: Credential? { session.withLock { $0.credential } }

    /// How many refreshes have succeeded.
    nonisolated var refreshCount: Int { session.withLock { $0.completedRefreshes } }

    /// Sets the credential (a login) and enables refreshing.
    public nonisolated func login(_ credential: Credential) {
        session.withLock { session in
            session.generation &+= 1
            session.credential = credential
            session.refreshTimes.removeAll()
            session.lastFailure = nil
        }
    }

    /// Clears the credential and disables refreshing; a refresh under way is discarded and
    /// its waiters fail.
    public nonisolated func logout() {
        session.withLock { session in
            session.generation &+= 1
            session.credential = nil
            session.lastFailure = nil
        }
    }

    /// Returns a credential that replaces `failed`, refreshing at most once for all callers.
    /// - Parameter failed: the credential the server rejected (nil when none was attached).
    /// - Returns: the new credential.
    /// - Throws: `CourierError.authentication` when logged out, when the refresh fails, or
    ///   when the storm limit is reached.
    package func credential(replacing failed: Credential?) async throws -> Credential {
        let now = clock.now
        let limit = stormLimit
        let (current, generation) = session.withLock { ($0.credential, $0.generation) }
        guard let current else {
            throw CourierError(.authentication, "not logged in: there is no credential to refresh")
        }
        if current != failed { return current }
        if let inFlight, inFlight.generation == generation {
            return try await wait(for: inFlight.task, id: inFlight.id, expired: current, generation: generation)
        }
        let memory = failureMemory
        let remembered = session.withLock { session -> CourierError? in
            guard let failure = session.lastFailure, failure.credential == current, now - failure.at < memory else {
                return nil
            }
            return failure.error
        }
        if let remembered { throw remembered }
        let refused = session.withLock { session -> Int? in
            session.refreshTimes.removeAll { now - $0 >= limit.window }
            guard session.refreshTimes.count < limit.maximumRefreshes else { return session.refreshTimes.count }
            session.refreshTimes.append(now)
            return nil
        }
        if let refused {
            throw CourierError(
                .authentication,
                "the credential was refreshed \(refused) times within \(limit.window); refusing another refresh")
        }
        nextRefreshID &+= 1
        let refresher = self.refresher
        let task = Task<Credential, any Error> { try await refresher(current) }
        inFlight = (nextRefreshID, generation, task)
        return try await wait(for: task, id: nextRefreshID, expired: current, generation: generation)
    }

    private func wait(
        for task: Task<Credential, any Error>, id: UInt64, expired: Credential, generation started: UInt64
    ) async throws -> Credential {
        let result: Result<Credential, any Error>
        do {
            result = .success(try await task.value)
        } catch {
            result = .failure(error)
        }
        if inFlight?.id == id { inFlight = nil }
        let failure: CourierError?
        switch result {
        case .success:
            failure = nil
        case .failure(let error as CourierError) where error.code == .authentication:
            failure = error
        case .failure(let error):
            failure = CourierError(.authentication, "the credential could not be refreshed", underlying: error)
        }
        let now = clock.now
        // The first waiter to resume settles the session, unless it changed meanwhile.
        let (sessionChanged, credential) = session.withLock { session -> (Bool, Credential?) in
            guard session.generation == started else { return (true, session.credential) }
            if case .success(let fresh) = result, session.credential != fresh {
                session.credential = fresh
                session.completedRefreshes += 1
            } else if let failure {
                session.lastFailure = (expired, failure, now)
            }
            return (false, session.credential)
        }
        if sessionChanged {
            if let credential { return credential }
            throw CourierError(.authentication, "logged out while the credential was being refreshed")
        }
        if let failure { throw failure }
        guard case .success(let fresh) = result else { throw CourierError(.authentication, "refresh failed") }
        return fresh
    }
}

/// A limit on credential refreshes: at most `maximumRefreshes` within `window`.
public struct RefreshStormLimit: Sendable, Hashable {
    var maximumRefreshes: Int
    var window: Duration
    /// At most `maximumRefreshes` (at least 1) refreshes within `window`.
    public init(maximumRefreshes: Int = 3, window: Duration = .seconds(60)) {
        self.maximumRefreshes = max(1, maximumRefreshes)
        self.window = window
    }
    /// Three refreshes per minute.
    public static let `default` = RefreshStormLimit()
}

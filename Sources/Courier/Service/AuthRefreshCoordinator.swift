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

    private var credential: Credential?
    /// Bumped on login and logout, so a refresh that ends after either is discarded.
    private var generation: UInt64 = 0
    private var inFlight: (id: UInt64, task: Task<Credential, any Error>)?
    private var nextRefreshID: UInt64 = 0
    private var refreshTimes: [ContinuousClock.Instant] = []
    private var completedRefreshes = 0
    private let refresher: Refresher
    private let stormLimit: RefreshStormLimit
    private let clock: any ServiceClock

    /// - Parameters:
    ///   - credential: the credential to start with (nil: logged out).
    ///   - stormLimit: how many refreshes a time window allows.
    ///   - clock: the time source for the storm limit.
    ///   - refresh: makes a new credential; runs at most once at a time.
    public init(
        credential: Credential? = nil, stormLimit: RefreshStormLimit = .default, clock: any ServiceClock = .system,
        refresh: @escaping Refresher
    ) {
        self.credential = credential
        self.stormLimit = stormLimit
        self.clock = clock
        self.refresher = refresh
    }

    /// The credential to attach now; nil when logged out.
    public var current: Credential? { credential }

    /// How many refreshes have succeeded.
    public var refreshCount: Int { completedRefreshes }

    /// Sets the credential (a login) and enables refreshing.
    public func login(_ credential: Credential) {
        generation &+= 1
        self.credential = credential
        inFlight = nil
        refreshTimes.removeAll()
    }

    /// Clears the credential and disables refreshing; a refresh under way is discarded and
    /// its waiters fail.
    public func logout() {
        generation &+= 1
        credential = nil
        inFlight = nil
    }

    /// Returns a credential that replaces `failed`, refreshing at most once for all callers.
    /// - Parameter failed: the credential the server rejected (nil when none was attached).
    /// - Returns: the new credential.
    /// - Throws: `CourierError.authentication` when logged out, when the refresh fails, or
    ///   when the storm limit is reached.
    public func credential(replacing failed: Credential?) async throws -> Credential {
        guard let current = credential else {
            throw CourierError(.authentication, "not logged in: there is no credential to refresh")
        }
        if current != failed { return current }
        if let inFlight { return try await wait(for: inFlight.task, id: inFlight.id, generation: generation) }

        let now = clock.now
        refreshTimes.removeAll { now - $0 >= stormLimit.window }
        guard refreshTimes.count < stormLimit.maximumRefreshes else {
            throw CourierError(
                .authentication,
                "the credential was refreshed \(refreshTimes.count) times within \(stormLimit.window); refusing another refresh"
            )
        }
        refreshTimes.append(now)
        nextRefreshID &+= 1
        let refresher = self.refresher
        let task = Task<Credential, any Error> { try await refresher(current) }
        inFlight = (nextRefreshID, task)
        return try await wait(for: task, id: nextRefreshID, generation: generation)
    }

    private func wait(for task: Task<Credential, any Error>, id: UInt64, generation started: UInt64) async throws
        -> Credential
    {
        let result: Result<Credential, any Error>
        do {
            result = .success(try await task.value)
        } catch {
            result = .failure(error)
        }
        // Every waiter resumes here, one at a time on the actor; the first one settles state.
        if inFlight?.id == id {
            inFlight = nil
            if generation == started, case .success(let fresh) = result {
                credential = fresh
                completedRefreshes += 1
            }
        }
        guard generation == started else {
            if let credential { return credential }
            throw CourierError(.authentication, "logged out while the credential was being refreshed")
        }
        switch result {
        case .success(let fresh):
            return fresh
        case .failure(let error as CourierError) where error.code == .authentication:
            throw error
        case .failure(let error):
            throw CourierError(.authentication, "the credential could not be refreshed", underlying: error)
        }
    }
}

/// A limit on credential refreshes: at most `maximumRefreshes` within `window`.
public struct RefreshStormLimit: Sendable, Hashable {
    public var maximumRefreshes: Int
    public var window: Duration
    public init(maximumRefreshes: Int = 3, window: Duration = .seconds(60)) {
        self.maximumRefreshes = max(1, maximumRefreshes)
        self.window = window
    }
    /// Three refreshes per minute.
    public static let `default` = RefreshStormLimit()
}

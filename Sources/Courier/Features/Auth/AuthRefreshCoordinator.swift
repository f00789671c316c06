import Dispatch
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
        /// Bumped on logout only: a call, or a refresh, that began before a logout belongs to
        /// the session that ended, whoever logged in since.
        var logouts: UInt64 = 0
        var refreshTimes: [ContinuousClock.Instant] = []
        var completedRefreshes = 0
        /// The last failed refresh: callers still holding that credential get its error
        /// instead of starting another refresh, for `failureMemory`.
        var lastFailure: (credential: Credential, error: CourierError, at: ContinuousClock.Instant)?
    }
    private nonisolated let session: LockedValue<Session>
    /// The refresh under way and the callers waiting for it.
    private var inFlight: (id: UInt64, generation: UInt64, waiters: RefreshWaiters<Credential>)?
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

    /// Changes at each logout: what a call compares, before each attempt, with what it found at
    /// its start, so that it never goes on with the credential of a session logged in since.
    nonisolated var sessionEpoch: UInt64 { session.withLock { $0.logouts } }

    /// How many refreshes have succeeded.
    nonisolated var refreshCount: Int { session.withLock { $0.completedRefreshes } }

    /// How many callers wait for the refresh under way.
    var waitingCallers: Int { inFlight?.waiters.count ?? 0 }

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
            session.logouts &+= 1
            session.credential = nil
            session.lastFailure = nil
        }
    }

    /// Returns a credential that replaces `failed`, refreshing at most once for all callers.
    /// - Parameters:
    ///   - failed: the credential the server rejected (nil when none was attached).
    ///   - timeout: how long the caller waits for the refresh (its call's timeout; nil: as long
    ///     as it lasts). A refresh that takes longer goes on for the others.
    /// - Returns: the new credential.
    /// - Throws: `CourierError.authentication` when logged out, when the refresh fails, or
    ///   when the storm limit is reached; `.timedOut` past `timeout`.
    package func credential(replacing failed: Credential?, within timeout: Duration? = nil) async throws
        -> Credential
    {
        let now = clock.now
        let limit = stormLimit
        let (current, generation, logouts) = session.withLock { ($0.credential, $0.generation, $0.logouts) }
        guard let current else {
            throw CourierError(.authentication, "not logged in: there is no credential to refresh")
        }
        if current != failed { return current }
        // A call the refresher made, rejected too (the refresh endpoint behind the same
        // interceptor): waiting for the refresh would wait for itself, for ever.
        if RefreshScope.coordinators.contains(ObjectIdentifier(self)) {
            throw CourierError(
                .authentication,
                "a call made by the credential's refresh was rejected too; make the refresh call without this "
                    + "coordinator's authentication")
        }
        if let inFlight, inFlight.generation == generation { return try await inFlight.waiters.wait(within: timeout) }
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
        let id = nextRefreshID
        let (refresher, clock) = (self.refresher, self.clock)
        // The refresh settles the session itself, not its first waiter: a waiter may leave
        // (its call cancelled), and a refreshed credential is kept though every waiter left.
        // It hands its result to the callers still waiting.
        let waiters = RefreshWaiters<Credential>()
        Task {
            let result: Result<Credential, any Error>
            do {
                let inside = RefreshScope.coordinators + [ObjectIdentifier(self)]
                result = .success(
                    try await RefreshScope.$coordinators.withValue(inside) { try await refresher(current) })
            } catch {
                result = .failure(error)
            }
            let settled = self.settle(
                result, expired: current, generation: generation, logouts: logouts, now: clock.now)
            self.endRefresh(id)
            waiters.finish(settled)
        }
        inFlight = (id, generation, waiters)
        return try await waiters.wait(within: timeout)
    }

    private func endRefresh(_ id: UInt64) {
        if inFlight?.id == id { inFlight = nil }
    }

    /// Records a refresh's result in the session, unless a login or logout changed it meanwhile.
    /// - Returns: what every waiter of the refresh gets.
    private nonisolated func settle(
        _ result: Result<Credential, any Error>, expired: Credential, generation started: UInt64, logouts: UInt64,
        now: ContinuousClock.Instant
    ) -> Result<Credential, CourierError> {
        let failure: CourierError?
        switch result {
        case .success:
            failure = nil
        case .failure(let error as CourierError) where error.code == .authentication:
            failure = error
        case .failure(let error):
            failure = CourierError(.authentication, "the credential could not be refreshed", underlying: error)
        }
        let (sessionChanged, credential) = session.withLock { session -> (Bool, Credential?) in
            // A login since hands out its credential; a logout since (even if someone logged
            // in after it) ends the old session's refresh in an error.
            guard session.generation == started else {
                return (true, session.logouts == logouts ? session.credential : nil)
            }
            if case .success(let fresh) = result, session.credential != fresh {
                session.credential = fresh
                session.completedRefreshes += 1
            } else if let failure {
                session.lastFailure = (expired, failure, now)
            }
            return (false, session.credential)
        }
        if sessionChanged {
            if let credential { return .success(credential) }
            return .failure(CourierError(.authentication, "logged out while the credential was being refreshed"))
        }
        if let failure { return .failure(failure) }
        guard case .success(let fresh) = result else {
            return .failure(CourierError(.authentication, "refresh failed"))
        }
        return .success(fresh)
    }
}

/// The coordinators whose refresher the current task runs in (calls the refresher makes inherit it).
private enum RefreshScope {
    @TaskLocal static var coordinators: [ObjectIdentifier] = []
}

/// The callers waiting for one refresh. Each leaves as soon as its task is cancelled (a refresh
/// that hangs holds its waiters only until their calls are cancelled; it goes on for the
/// others, and settles the session when it ends); the refresh resumes the rest. No task per
/// waiter: one waiting for the refresh's end outlived its cancelled caller, with whatever the
/// caller's task-local values held, for as long as the refresh hung.
private final class RefreshWaiters<Credential: Sendable>: Sendable {
    private struct State {
        var result: Result<Credential, CourierError>?
        var waiting: [UInt64: CheckedContinuation<Credential, any Error>] = [:]
        var nextID: UInt64 = 0
    }
    private let state = LockedValue(State())

    /// What a waiter cancelled before the refresh ended gets.
    static var cancelled: CourierError {
        CourierError(.cancelled, "the call was cancelled while its credential was being refreshed")
    }

    /// The callers waiting.
    var count: Int { state.withLock { $0.waiting.count } }

    /// The refresh's result, or `.cancelled` as soon as the waiting task is cancelled, or
    /// `.timedOut` once `timeout` has passed (the refresh goes on for the others).
    func wait(within timeout: Duration? = nil) async throws -> Credential {
        let id = state.withLock { state -> UInt64 in
            state.nextID &+= 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Credential, any Error>) in
                let ready = state.withLock { state -> Result<Credential, CourierError>? in
                    if let result = state.result { return result }
                    // Cancelled before this caller was added: the handler found nothing to resume.
                    if Task.isCancelled { return .failure(Self.cancelled) }
                    state.waiting[id] = continuation
                    return nil
                }
                if let ready {
                    continuation.resume(with: ready)
                } else if let timeout, let delay = DispatchTimeInterval(waiting: timeout) {
                    // Only a waiter that waits arms a timer: one per waiting call, gone when it fires.
                    // It does not hold the waiters: a wait that ended keeps neither them nor the
                    // credential they hand out in memory until the timeout passes (up to 24 days).
                    DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
                        self?.leave(id, with: Self.timedOut(timeout))
                    }
                }
            }
        } onCancel: {
            leave(id, with: Self.cancelled)
        }
    }

    /// Ends the wait of `id` with `error`, if it still waits.
    private func leave(_ id: UInt64, with error: CourierError) {
        let continuation = state.withLock { $0.waiting.removeValue(forKey: id) }
        continuation?.resume(throwing: error)
    }

    /// What a waiter gets once its call's timeout has passed.
    static func timedOut(_ timeout: Duration) -> CourierError {
        CourierError(
            .timedOut,
            "the credential refresh took longer than the request's timeout (\(timeout)); "
                + "it goes on for the other calls")
    }

    /// Hands `result` to the callers waiting, and to those who come later.
    func finish(_ result: Result<Credential, CourierError>) {
        let waiting = state.withLock { state -> [CheckedContinuation<Credential, any Error>] in
            state.result = result
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for continuation in waiting { continuation.resume(with: result) }
    }
}

/// A limit on credential refreshes: at most `maximumRefreshes` within `window`.
public struct RefreshStormLimit: Sendable, Hashable {
    var maximumRefreshes: Int
    var window: Duration
    /// At most `maximumRefreshes` (at least 1) refreshes within `window`. A `window` of zero or
    /// less limits nothing: no two refreshes fall within it.
    public init(maximumRefreshes: Int = 3, window: Duration = .seconds(60)) {
        self.maximumRefreshes = max(1, maximumRefreshes)
        self.window = window
    }
    /// Three refreshes per minute.
    public static let `default` = RefreshStormLimit()
}

extension DispatchTimeInterval {
    /// `duration` for a timer, when one is worth arming: nil for zero or less (the caller's
    /// wait is bounded already) and past about 290 years (`Int` nanoseconds), which never ends.
    fileprivate init?(waiting duration: Duration) {
        let (seconds, attoseconds) = duration.components
        guard duration > .zero, seconds < Int64.max / 1_000_000_000 - 1 else { return nil }
        self = .nanoseconds(Int(seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
    }
}

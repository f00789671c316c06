import Synchronization

/// The calls of one service that have not finished, so they can be cancelled by identifier
/// or all at once. Each service has its own registry: `cancelAll()` on one service leaves
/// the calls of the others alone.
///
/// A deferred call (`Call`) that no one holds any more leaves the registry: it can never
/// start. Held here, it kept what its operation holds (the service, its client and the
/// client's transport thread) alive for good.
public final class CallRegistry: Sendable {
    /// A registered call: a deferred `Call` weakly (a started one holds itself until it ends),
    /// the scope of a call running in its caller's task strongly (the call removes it).
    private enum Entry: Sendable {
        /// The scope of a call running in its caller's task: one reference, not an existential
        /// (a registry entry is written and removed for every call).
        case held(CancellationScope)
        case deferred(WeakCall)

        var call: (any CancellableCall)? {
            switch self {
            case .held(let scope): scope
            case .deferred(let reference): reference.call
            }
        }
    }

    private struct WeakCall: Sendable {
        weak var call: (any CancellableCall)?
    }

    private let calls = LockedValue<[CallID: Entry]>([:])

    init() {}

    /// The number of calls registered and not finished.
    public var count: Int { calls.withLock { $0.count } }

    /// The identifiers of the calls not finished, oldest first.
    var identifiers: [CallID] { calls.withLock { $0.keys.sorted() } }

    /// Tracks `call` until it finishes, or until no one holds it.
    /// - Parameter call: the call; it is removed from the registry when it finishes (or is
    ///   released unfinished).
    func register<Value>(_ call: Call<Value>) {
        calls.withLock { $0[call.id] = .deferred(WeakCall(call: call)) }
        // The call removes itself when it finishes (no handler to allocate per call); one that
        // has finished already is not kept.
        switch call.attach(to: self) {
        case .attached: break
        case .finished: remove(call.id)
        case .elsewhere:
            // The identifier only: a handler holding the call would keep it alive until it ends.
            let id = call.id
            call.whenFinished { [weak self] _ in self?.remove(id) }
        }
    }

    /// Tracks the scope of a call that removes itself (with `remove(_:)`) when it finishes.
    func track(_ scope: CancellationScope) {
        calls.withLock { $0[scope.id] = .held(scope) }
    }

    /// Cancels the call with identifier `id`.
    /// - Returns: false when no such call is registered (unknown or already finished).
    @discardableResult
    public func cancel(_ id: CallID) -> Bool {
        guard let call = calls.withLock({ $0[id]?.call }) else { return false }
        call.cancel()
        return true
    }

    /// Cancels every registered call.
    /// - Returns: how many calls were cancelled.
    @discardableResult
    public func cancelAll() -> Int {
        let all = calls.withLock { $0.values.compactMap(\.call) }
        all.forEach { $0.cancel() }
        return all.count
    }

    func remove(_ id: CallID) {
        // Returned, so that a scope the entry held is released after the lock.
        _ = calls.withLock { $0.removeValue(forKey: id) }
    }
}

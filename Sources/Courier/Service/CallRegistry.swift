import Synchronization

/// The calls of one service that have not finished, so they can be cancelled by identifier
/// or all at once. Each service has its own registry: `cancelAll()` on one service leaves
/// the calls of the others alone.
///
/// A deferred call (`Call`) that no one holds any more leaves the registry: it can never
/// start. Held here, it kept what its operation holds (the service, its client and the
/// client's transport thread) alive for good.
public final class CallRegistry: Sendable {
    private struct WeakCall: Sendable {
        weak var call: (any CancellableCall)?
    }

    private struct Calls {
        /// Deferred calls (`Call`), weakly: a started one holds itself until it ends.
        var deferred: [CallID: WeakCall] = [:]
        /// The scopes of calls running in their caller's task, strongly (the call gives its
        /// slot back): a call takes a free slot and returns it, with no hashing and no
        /// dictionary write, the cost every service call pays.
        var running: [CancellationScope?] = []
        /// The slots of `running` that are free.
        var free: [Int] = []
        var runningCount = 0
    }

    private let calls = LockedValue(Calls())

    init() {}

    /// The number of calls registered and not finished.
    public var count: Int { calls.withLock { $0.deferred.count + $0.runningCount } }

    /// The identifiers of the calls not finished, oldest first.
    var identifiers: [CallID] {
        calls.withLock { Array($0.deferred.keys) + $0.running.compactMap { $0?.id } }.sorted()
    }

    /// Tracks `call` until it finishes, or until no one holds it.
    /// - Parameter call: the call; it is removed from the registry when it finishes (or is
    ///   released unfinished).
    func register<Value>(_ call: Call<Value>) {
        calls.withLock { $0.deferred[call.id] = WeakCall(call: call) }
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

    /// Tracks the scope of a call running in its caller's task until the call gives its slot
    /// back (`untrack(_:)`).
    /// - Returns: the call's slot.
    func track(_ scope: CancellationScope) -> Int {
        calls.withLock { calls in
            calls.runningCount += 1
            if let slot = calls.free.popLast() {
                calls.running[slot] = scope
                return slot
            }
            calls.running.append(scope)
            return calls.running.count - 1
        }
    }

    /// Ends the tracking of the call in `slot` (from `track(_:)`).
    func untrack(_ slot: Int) {
        // Returned, so that the scope is released after the lock.
        _ = calls.withLock { calls -> CancellationScope? in
            let scope = calls.running[slot].take()
            calls.runningCount -= 1
            calls.free.append(slot)
            return scope
        }
    }

    /// Cancels the call with identifier `id`.
    /// - Returns: false when no such call is registered (unknown or already finished).
    @discardableResult
    public func cancel(_ id: CallID) -> Bool {
        let found = calls.withLock { calls -> (any CancellableCall)? in
            if let deferred = calls.deferred[id] { return deferred.call }
            return calls.running.first { $0?.id == id } ?? nil
        }
        guard let call = found else { return false }
        call.cancel()
        return true
    }

    /// Cancels every registered call.
    /// - Returns: how many calls were cancelled.
    @discardableResult
    public func cancelAll() -> Int {
        let all = calls.withLock { calls -> [any CancellableCall] in
            calls.deferred.values.compactMap(\.call) + calls.running.compactMap { $0 }
        }
        all.forEach { $0.cancel() }
        return all.count
    }

    /// Removes the deferred call with identifier `id`.
    func remove(_ id: CallID) {
        // Returned, so that the entry is released after the lock.
        _ = calls.withLock { $0.deferred.removeValue(forKey: id) }
    }
}

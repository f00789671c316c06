import Synchronization

/// The calls of one service that have not finished, so they can be cancelled by identifier
/// or all at once. Each service has its own registry: `cancelAll()` on one service leaves
/// the calls of the others alone.
public final class CallRegistry: Sendable {
    private let calls = LockedValue<[CallID: any CancellableCall]>([:])

    init() {}

    /// The number of calls registered and not finished.
    public var count: Int { calls.withLock { $0.count } }

    /// The identifiers of the calls not finished, oldest first.
    var identifiers: [CallID] { calls.withLock { $0.keys.sorted() } }

    /// Tracks `call` until it finishes.
    /// - Parameter call: the call; it is removed from the registry when it finishes.
    func register<Value>(_ call: Call<Value>) {
        calls.withLock { $0[call.id] = call }
        // The call removes itself when it finishes (no handler to allocate per call); one that
        // has finished already is not kept.
        switch call.attach(to: self) {
        case .attached: break
        case .finished: remove(call.id)
        case .elsewhere: call.whenFinished { [weak self] _ in self?.remove(call.id) }
        }
    }

    /// Tracks a call that removes itself (with `remove(_:)`) when it finishes.
    func track(_ call: some CancellableCall) {
        calls.withLock { $0[call.id] = call }
    }

    /// Cancels the call with identifier `id`.
    /// - Returns: false when no such call is registered (unknown or already finished).
    @discardableResult
    public func cancel(_ id: CallID) -> Bool {
        guard let call = calls.withLock({ $0[id] }) else { return false }
        call.cancel()
        return true
    }

    /// Cancels every registered call.
    /// - Returns: how many calls were cancelled.
    @discardableResult
    public func cancelAll() -> Int {
        let all = calls.withLock { Array($0.values) }
        all.forEach { $0.cancel() }
        return all.count
    }

    func remove(_ id: CallID) {
        _ = calls.withLock { $0.removeValue(forKey: id) }
    }
}

import HTTPTypes
import Synchronization

/// Shares one execution among identical concurrent calls: while a GET for a key is under
/// way, later calls for the same key wait for its result instead of sending their own.
///
/// The first caller runs the work in its own task (no task of its own for the work, no second
/// resumption); the callers that join wait for its result. A joiner that is cancelled leaves
/// alone. When the first caller is cancelled, its work stops with it, and the callers still
/// waiting start again: one of them runs its own work, the others join it. So no caller ever
/// gets another's cancellation, at the cost of a second request in that case.
///
/// A service keys its calls by their `RequestIdentity`; `key(for:varyingOn:)` builds a key for
/// other uses.
final class InFlightDeduplicator<Value: Sendable>: Sendable {
    private typealias Entry = InFlightEntry

    /// A key with its hash worked out once (a request identity's is kept with it).
    struct Key: Hashable, Sendable {
        let text: String
        private let hashed: Int

        init(_ text: String) {
            self.init(text, hash: text.hashValue)
        }

        /// - Parameter hash: `text.hashValue`, worked out before.
        init(_ text: String, hash: Int) {
            self.text = text
            hashed = hash
        }

        func hash(into hasher: inout Hasher) { hasher.combine(hashed) }

        static func == (lhs: Key, rhs: Key) -> Bool { lhs.hashed == rhs.hashed && lhs.text == rhs.text }
    }

    /// A key's run in the table, and whether another caller has found it there (then it may
    /// join, and the run's result must be kept for it).
    private struct Slot {
        let entry: Entry
        var isFound = false
    }

    private struct Table {
        var entries: [Key: Slot] = [:]
        var nextWaiter: UInt64 = 0
        var executions = 0

        /// Removes `key`'s entry if it is still `entry` (a later run may have replaced it),
        /// hashing the key once.
        /// - Returns: whether another caller found the entry (true when it was not there).
        mutating func remove(_ key: Key, ifIs entry: Entry) -> Bool {
            guard let index = entries.index(forKey: key), entries.values[index].entry === entry else { return true }
            return entries.remove(at: index).value.isFound
        }
    }

    private static func newSlot(_ isNew: inout Bool) -> Slot {
        isNew = true
        return Slot(entry: Entry())
    }

    /// The slot's entry, marked found unless the caller just made it.
    private static func find(_ slot: inout Slot, isNew: Bool) -> Entry {
        if !isNew { slot.isFound = true }
        return slot.entry
    }

    private let table = LockedValue(Table())

    init() {}

    /// The number of keys with work under way.
    var inFlightCount: Int { table.withLock { $0.entries.count } }

    /// The number of callers waiting, over all keys: the one running each key's work, and those
    /// who joined it.
    var waiterCount: Int {
        let entries = table.withLock { $0.entries.values.map(\.entry) }
        return entries.reduce(0) { count, entry in count + 1 + entry.state.withLock { $0.count } }
    }

    /// How many times an operation was really started (not joined).
    var executionCount: Int { table.withLock { $0.executions } }

    /// Headers that change the response of a GET and so belong to its key.
    static var defaultVaryingHeaders: [HTTPField.Name] {
        [.authorization, .accept, .acceptLanguage, .acceptEncoding, .cookie]
    }

    /// The key of a request: method, URL and the values of the headers that vary the response.
    /// - Parameters:
    ///   - request: the request head.
    ///   - varyingOn: the header names that distinguish otherwise equal requests.
    /// - Returns: the key (kept in memory only: it can contain credentials).
    static func key(for request: HTTPRequest, varyingOn: [HTTPField.Name] = defaultVaryingHeaders) -> String {
        var key =
            "\(request.method.rawValue) \(request.scheme ?? "")://\(request.authority ?? "")\(request.path ?? "/")"
        for name in varyingOn {
            let values = request.headerFields[values: name]
            guard !values.isEmpty else { continue }
            key += "\n\(name.canonicalName): \(values.joined(separator: ", "))"
        }
        return key
    }

    /// Runs `operation` for `key`, or joins the run already under way for it.
    /// - Parameters:
    ///   - key: what makes two calls identical.
    ///   - scope: the caller's service call, when it runs in a task it does not own: cancelling
    ///     the scope makes this caller leave a run it joined, as cancelling its task does (a
    ///     run this caller started stops through `operation`, which the scope cancels too).
    ///   - operation: the work; runs at most once at a time per key, in this caller's task.
    /// - Returns: the shared result.
    /// - Throws: the shared error, or `CancellationError` when this caller is cancelled.
    func run(
        key: String, scope: CancellationScope? = nil, operation: () async throws -> Value
    ) async throws -> Value {
        try await run(key: Key(key), scope: scope, operation: operation)
    }

    /// `run(key:scope:operation:)` with a key whose hash was worked out before.
    func run(
        key: Key, scope: CancellationScope? = nil, operation: () async throws -> Value
    ) async throws -> Value {
        while true {
            if Task.isCancelled || scope?.isCancelled == true { throw CancellationError() }
            let (entry, isNew, waiterID) = table.withLock { table -> (Entry, Bool, UInt64) in
                table.nextWaiter += 1
                // One lookup of the key (hashed once), which inserts a new entry when missing.
                var isNew = false
                let entry = Self.find(&table.entries[key, default: Self.newSlot(&isNew)], isNew: isNew)
                if isNew { table.executions += 1 }
                return (entry, isNew, table.nextWaiter)
            }
            if isNew { return try await lead(key: key, entry: entry, scope: scope, operation: operation) }
            do {
                return try await join(key: key, entry: entry, waiterID: waiterID, scope: scope)
            } catch is Restart {
                // The caller that ran the work was cancelled: start again (lead or join anew).
                continue
            }
        }
    }

    /// The first caller's part: the work, in this task; then its result to those who joined.
    private func lead(
        key: Key, entry: Entry, scope: CancellationScope?, operation: () async throws -> Value
    ) async throws -> Value {
        let value: Value
        do {
            value = try await operation()
        } catch {
            // Stopped because this caller was cancelled: not the joiners' answer. They start again.
            let restarts = Task.isCancelled || scope?.isCancelled == true
            finish(key: key, entry: entry) { restarts ? .failure(Restart()) : .failure(error) }
            throw error
        }
        finish(key: key, entry: entry) { .success(value) }
        return value
    }

    /// A joiner's part: wait for the first caller's result, or leave when cancelled.
    private func join(key: Key, entry: Entry, waiterID: UInt64, scope: CancellationScope?) async throws -> Value {
        defer { scope?.removeHandler() }
        return try await withTaskCancellationHandler {
            defer { ThreadSanitizer.continuationReturned() }
            let value = try await withUnsafeThrowingContinuation {
                (continuation: UnsafeContinuation<any Sendable, any Error>) in
                let finished = entry.state.withLock { state -> Result<any Sendable, any Error>? in
                    if let result = state.result { return result }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.add(waiterID, continuation)
                    return nil
                }
                if let finished {
                    continuation.resume(with: finished)
                } else if let scope, !scope.install({ self.leave(entry: entry, waiterID: waiterID) }) {
                    // Cancelled already: leave now (the result may have come since: then a no-op).
                    leave(entry: entry, waiterID: waiterID)
                }
            }
            // The first caller's `Value`, kept as `any Sendable` by the non-generic entry.
            return value as! Value
        } onCancel: {
            self.leave(entry: entry, waiterID: waiterID)
        }
    }

    /// The result joiners get when the caller that ran the work was cancelled: start again.
    private struct Restart: Error {}

    /// A joiner leaves; the work goes on for the first caller (and the other joiners).
    private func leave(entry: Entry, waiterID: UInt64) {
        let continuation = entry.state.withLock { $0.remove(waiterID) }
        continuation?.resume(throwing: CancellationError())
    }

    /// Ends the run: takes it out of the table and, when another caller found it, gives them
    /// `result` (made only then: a run nobody joined keeps no result and wakes nobody).
    private func finish(key: Key, entry: Entry, result: () -> Result<Value, any Error>) {
        guard table.withLock({ $0.remove(key, ifIs: entry) }) else { return }
        let shared: Result<any Sendable, any Error> = result().map { $0 }
        let (first, others) = entry.state.withLock {
            state -> (UnsafeContinuation<any Sendable, any Error>?, [UnsafeContinuation<any Sendable, any Error>]) in
            state.result = shared
            let first = state.first?.continuation
            state.first = nil
            guard !state.others.isEmpty else { return (first, []) }
            defer { state.others = [:] }
            return (first, Array(state.others.values))
        }
        first?.resume(with: shared)
        others.forEach { $0.resume(with: shared) }
    }
}

/// One key's run of an `InFlightDeduplicator`: the callers who joined it and, once it ended,
/// its result for those who join late. Not generic: a generic class's deinit runs
/// unspecialised and looks the types of its fields up on every run (three generic metadata
/// lookups per de-duplicated GET, ~850 instructions); the value travels as `any Sendable`,
/// boxed only for a run someone joined.
private final class InFlightEntry: Sendable {
    struct State {
        /// The waiters: most runs have one, kept without a dictionary (no allocation, no
        /// hashing); the rest join `others`.
        var first: (id: UInt64, continuation: UnsafeContinuation<any Sendable, any Error>)?
        var others: [UInt64: UnsafeContinuation<any Sendable, any Error>] = [:]
        var result: Result<any Sendable, any Error>?

        var count: Int { (first == nil ? 0 : 1) + others.count }

        mutating func add(_ id: UInt64, _ continuation: UnsafeContinuation<any Sendable, any Error>) {
            if first == nil { first = (id, continuation) } else { others[id] = continuation }
        }

        mutating func remove(_ id: UInt64) -> UnsafeContinuation<any Sendable, any Error>? {
            if let first, first.id == id {
                self.first = nil
                return first.continuation
            }
            return others.removeValue(forKey: id)
        }
    }
    let state = LockedValue(State())
}

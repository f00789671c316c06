import Synchronization

/// The identifier of one call, unique in the process.
public struct CallID: Hashable, Sendable, Comparable, CustomStringConvertible {
    let rawValue: UInt64
    private static let counter = Atomic<UInt64>(0)

    /// A new identifier, greater than every one made before.
    @usableFromInline static func next() -> CallID {
        CallID(rawValue: counter.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    init(rawValue: UInt64) { self.rawValue = rawValue }
    /// `call#N`, as logs and monitors print it.
    public var description: String { "call#\(rawValue)" }
    /// Whether `lhs` was made before `rhs`.
    public static func < (lhs: CallID, rhs: CallID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Anything a registry can cancel.
protocol CancellableCall: AnyObject, Sendable {
    var id: CallID { get }
    /// Cancels the call: before it starts it will never run; while running its task is cancelled.
    func cancel()
}

/// A call built now and started later (deferred start): `start()` runs it, `value()` waits
/// for its result.
///
/// Cancelling before `start()` means the operation never runs and `value()` throws
/// `CourierError.cancelled`; cancelling while it runs cancels its task, and a
/// `CancellationError` from the operation also ends as `CourierError.cancelled`.
public final class Call<Value: Sendable>: CancellableCall {
    private enum Phase {
        case idle
        /// `start()` is making the task (outside the lock: an immediate task runs at once).
        case starting
        case running(Task<Result<Value, CourierError>, Never>)
        case finished(Result<Value, CourierError>)
    }
    private struct State {
        var phase: Phase = .idle
        /// Held until the call runs (or is cancelled before), then dropped: whatever it
        /// captured, often the service, must not outlive the call's result.
        var operation: (@Sendable () async throws -> Value)?
        var cancelRequested = false
        /// Callers waiting before the task exists (deferred start).
        var waiters: [UnsafeContinuation<Result<Value, CourierError>, Never>] = []
        var finishHandlers: [@Sendable (Result<Value, CourierError>) -> Void] = []
        /// The registry to leave when the call finishes.
        weak var registry: CallRegistry?

        mutating func takeWaiters() -> [UnsafeContinuation<Result<Value, CourierError>, Never>] {
            defer { waiters.removeAll() }
            return waiters
        }

        mutating func takeHandlers() -> [@Sendable (Result<Value, CourierError>) -> Void] {
            defer { finishHandlers.removeAll() }
            return finishHandlers
        }
    }

    /// Identifies this call in monitor events, logs and the ``CallRegistry``.
    public let id: CallID
    private let state: LockedValue<State>

    /// Wraps `operation` in a call that has not started.
    /// - Parameters:
    ///   - id: its identifier.
    ///   - operation: the work; should honour task cancellation.
    init(id: CallID = .next(), operation: @escaping @Sendable () async throws -> Value) {
        self.id = id
        self.state = LockedValue(State(operation: operation))
    }

    deinit {
        // Released unfinished (never started): the registry holds it weakly; its entry goes.
        if let registry = state.withLock({ $0.registry }) { registry.remove(id) }
    }

    /// Whether `start()` has been called (or the call was cancelled before).
    public var isStarted: Bool {
        state.withLock { if case .idle = $0.phase { false } else { true } }
    }

    /// Whether the call has a result.
    public var isFinished: Bool {
        state.withLock { if case .finished = $0.phase { true } else { false } }
    }

    /// Whether `cancel()` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelRequested } }

    /// Starts the call; later calls do nothing.
    public func start() {
        _ = begin(immediately: false)
    }

    /// Starts the call's task unless it was started (or cancelled) before.
    ///
    /// An immediate task runs on the caller's thread until its first suspension (for
    /// `run()`, whose caller waits anyway): the operation starts without waiting for a thread
    /// of the pool. It is made outside the lock, since it may finish before `Task.immediate`
    /// returns.
    /// - Returns: the task, when this call started it.
    private func begin(immediately: Bool) -> Task<Result<Value, CourierError>, Never>? {
        let starts = state.withLock { state -> Bool in
            guard case .idle = state.phase else { return false }
            state.phase = .starting
            return true
        }
        guard starts else { return nil }
        let body: @Sendable () async -> Result<Value, CourierError> = { [self] in finish(await perform()) }
        let task = immediately ? Task.immediate(operation: body) : Task(operation: body)
        let cancelled = state.withLock { state -> Bool in
            // Still starting unless the operation already finished.
            if case .starting = state.phase { state.phase = .running(task) }
            return state.cancelRequested
        }
        if cancelled { task.cancel() }
        return task
    }

    /// Runs the operation and lets go of it before returning, so that a waiter resumed by
    /// `finish` never finds the operation's captures (the service) still alive.
    private func perform() async -> Result<Value, CourierError> {
        guard let operation = state.withLock({ $0.operation.take() }) else {
            return .failure(Self.cancelledBeforeStart)
        }
        do {
            return .success(try await operation())
        } catch {
            return .failure(Self.courierError(error))
        }
    }

    /// Cancels the call (see the type's description).
    public func cancel() {
        let action = state.withLock { state -> CancelAction in
            state.cancelRequested = true
            switch state.phase {
            case .idle:
                let result = Result<Value, CourierError>.failure(Self.cancelledBeforeStart)
                state.phase = .finished(result)
                let registry = state.registry
                state.registry = nil
                // Released after the lock: its captures' deinits may call back into the call.
                return .finish(
                    result, state.takeWaiters(), state.takeHandlers(), registry, dropped: state.operation.take())
            case .starting:
                // `begin` sees the request once the task exists and cancels it.
                return .none
            case .running(let task):
                return .cancelTask(task)
            case .finished:
                return .none
            }
        }
        switch action {
        case .finish(let result, let waiters, let handlers, let registry, _):
            registry?.remove(id)
            waiters.forEach { $0.resume(returning: result) }
            handlers.forEach { $0(result) }
        case .cancelTask(let task):
            task.cancel()
        case .none:
            break
        }
    }

    /// Calls `handler` once with the result, right away if there is one already.
    public func whenFinished(_ handler: @escaping @Sendable (Result<Value, CourierError>) -> Void) {
        let done = state.withLock { state -> Result<Value, CourierError>? in
            if case .finished(let result) = state.phase { return result }
            state.finishHandlers.append(handler)
            return nil
        }
        if let done { handler(done) }
    }

    /// Waits for the result without starting the call. Cancelling the waiting task cancels the call.
    public func result() async -> Result<Value, CourierError> {
        let task = state.withLock { state -> Task<Result<Value, CourierError>, Never>? in
            if case .running(let task) = state.phase { return task }
            return nil
        }
        if let task { return await wait(for: task) }
        return await withTaskCancellationHandler {
            defer { ThreadSanitizer.continuationReturned() }
            return await withUnsafeContinuation {
                (continuation: UnsafeContinuation<Result<Value, CourierError>, Never>) in
                let done = state.withLock { state -> Result<Value, CourierError>? in
                    if case .finished(let result) = state.phase { return result }
                    state.waiters.append(continuation)
                    return nil
                }
                if let done { continuation.resume(returning: done) }
            }
        } onCancel: {
            self.cancel()
        }
    }

    /// Waits for the value without starting the call.
    /// - Throws: the call's `CourierError`.
    public func value() async throws(CourierError) -> Value { try await result().get() }

    /// Starts the call and waits for its value.
    /// - Throws: the call's `CourierError`.
    public func run() async throws(CourierError) -> Value {
        // A caller cancelled already gets a task that is cancelled before it runs, as with
        // `start()`; otherwise the operation starts on this thread.
        if let task = begin(immediately: !Task.isCancelled) {
            return try await wait(for: task).get()
        }
        return try await value()
    }

    /// Waits for the call's task; cancelling the waiting task cancels the call.
    private func wait(for task: Task<Result<Value, CourierError>, Never>) async -> Result<Value, CourierError> {
        await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            self.cancel()
        }
    }

    /// Records the result, wakes the waiters and leaves the registry.
    /// - Returns: the final result (a call cancelled while running ends as cancelled).
    private func finish(_ result: Result<Value, CourierError>) -> Result<Value, CourierError> {
        let (final, waiters, handlers, registry) = state.withLock { state in
            var final = result
            // A call cancelled while running ends as cancelled even if the operation
            // turned the cancellation into another error.
            if state.cancelRequested, case .failure(let error) = result, error.code != .cancelled {
                final = .failure(CourierError(.cancelled, "the call was cancelled", underlying: error))
            }
            state.phase = .finished(final)
            let registry = state.registry
            state.registry = nil
            return (final, state.takeWaiters(), state.takeHandlers(), registry)
        }
        registry?.remove(id)
        waiters.forEach { $0.resume(returning: final) }
        handlers.forEach { $0(final) }
        return final
    }

    /// How `attach(to:)` went.
    enum Attachment {
        /// The call leaves the registry when it finishes.
        case attached
        /// The call has finished: do not keep it.
        case finished
        /// The call is in another registry already: watch it with `whenFinished`.
        case elsewhere
    }

    /// Links the call to the registry it leaves when it finishes.
    func attach(to registry: CallRegistry) -> Attachment {
        state.withLock { state in
            if case .finished = state.phase { return .finished }
            if let current = state.registry, current !== registry { return .elsewhere }
            state.registry = registry
            return .attached
        }
    }

    private enum CancelAction {
        case finish(
            Result<Value, CourierError>, [UnsafeContinuation<Result<Value, CourierError>, Never>],
            [@Sendable (Result<Value, CourierError>) -> Void], CallRegistry?,
            dropped: (@Sendable () async throws -> Value)?)
        case cancelTask(Task<Result<Value, CourierError>, Never>)
        case none
    }

    private static var cancelledBeforeStart: CourierError {
        CourierError(.cancelled, "the call was cancelled before it was sent")
    }

    /// Maps any error to a `CourierError`; task cancellation becomes `.cancelled`.
    static func courierError(_ error: any Error) -> CourierError { CourierError.fromCall(error) }
}

extension CourierError {
    /// Maps any error a call's operation threw to a `CourierError`; task cancellation becomes
    /// `.cancelled`.
    static func fromCall(_ error: any Error) -> CourierError {
        if let courier = error as? CourierError { return courier }
        if error is CancellationError { return CourierError(.cancelled, "the call was cancelled", underlying: error) }
        return CourierError(.transport, "the call failed: \(error)", underlying: error)
    }
}

import Synchronization

/// The identifier of one call, unique in the process.
public struct CallID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64
    private static let counter = Atomic<UInt64>(0)

    /// A new identifier, greater than every one made before.
    public static func next() -> CallID {
        CallID(rawValue: counter.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "call#\(rawValue)" }
    public static func < (lhs: CallID, rhs: CallID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Anything a registry can cancel.
public protocol CancellableCall: AnyObject, Sendable {
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
        case running(Task<Void, Never>)
        case finished(Result<Value, CourierError>)
    }
    private struct State {
        var phase: Phase = .idle
        /// Held until the call runs (or is cancelled before), then dropped: whatever it
        /// captured, often the service, must not outlive the call's result.
        var operation: (@Sendable () async throws -> Value)?
        var cancelRequested = false
        var waiters: [CheckedContinuation<Result<Value, CourierError>, Never>] = []
        var finishHandlers: [@Sendable (Result<Value, CourierError>) -> Void] = []

        mutating func takeWaiters() -> [CheckedContinuation<Result<Value, CourierError>, Never>] {
            defer { waiters.removeAll() }
            return waiters
        }

        mutating func takeHandlers() -> [@Sendable (Result<Value, CourierError>) -> Void] {
            defer { finishHandlers.removeAll() }
            return finishHandlers
        }
    }

    public let id: CallID
    private let state: LockedValue<State>

    /// Wraps `operation` in a call that has not started.
    /// - Parameters:
    ///   - id: its identifier.
    ///   - operation: the work; should honour task cancellation.
    public init(id: CallID = .next(), operation: @escaping @Sendable () async throws -> Value) {
        self.id = id
        self.state = LockedValue(State(operation: operation))
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
        state.withLock { state in
            guard case .idle = state.phase else { return }
            let task = Task { [self] in finish(await perform()) }
            state.phase = .running(task)
        }
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
                // Released after the lock: its captures' deinits may call back into the call.
                return .finish(result, state.takeWaiters(), state.takeHandlers(), dropped: state.operation.take())
            case .running(let task):
                return .cancelTask(task)
            case .finished:
                return .none
            }
        }
        switch action {
        case .finish(let result, let waiters, let handlers, _):
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
        await withTaskCancellationHandler {
            defer { ThreadSanitizer.continuationReturned() }
            return await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<Value, CourierError>, Never>) in
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
        start()
        return try await value()
    }

    private func finish(_ result: Result<Value, CourierError>) {
        let (final, waiters, handlers) = state.withLock { state in
            var final = result
            // A call cancelled while running ends as cancelled even if the operation
            // turned the cancellation into another error.
            if state.cancelRequested, case .failure(let error) = result, error.code != .cancelled {
                final = .failure(CourierError(.cancelled, "the call was cancelled", underlying: error))
            }
            state.phase = .finished(final)
            return (final, state.takeWaiters(), state.takeHandlers())
        }
        waiters.forEach { $0.resume(returning: final) }
        handlers.forEach { $0(final) }
    }

    private enum CancelAction {
        case finish(
            Result<Value, CourierError>, [CheckedContinuation<Result<Value, CourierError>, Never>],
            [@Sendable (Result<Value, CourierError>) -> Void], dropped: (@Sendable () async throws -> Value)?)
        case cancelTask(Task<Void, Never>)
        case none
    }

    private static var cancelledBeforeStart: CourierError {
        CourierError(.cancelled, "the call was cancelled before it was sent")
    }

    /// Maps any error to a `CourierError`; task cancellation becomes `.cancelled`.
    static func courierError(_ error: any Error) -> CourierError {
        if let courier = error as? CourierError { return courier }
        if error is CancellationError { return CourierError(.cancelled, "the call was cancelled", underlying: error) }
        return CourierError(.transport, "the call failed: \(error)", underlying: error)
    }
}

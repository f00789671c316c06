/// Cancels what one call waits for without cancelling the task that waits.
///
/// `APIService` runs a call in its caller's task (one task and one resumption per call), and
/// `core.calls.cancel(id)` must end that call, not its caller. The scope is the registry's
/// handle on such a call (the part of `Call` it needs: cancel while it runs, end as
/// cancelled), one object per call: the call hands it to the transport with each transfer
/// (`TransportOptions.cancellationScope`); a transfer in flight, or any other wait the call
/// runs in a task of its own, installs what cancels it here.
final class CancellationScope: CancellableCall {
    private struct State {
        var isCancelled = false
        /// Set once the call has its result: cancelling does nothing from then on.
        var isFinished = false
        var handler: (@Sendable () -> Void)?
    }

    /// The call's identifier in its service's registry.
    let id: CallID
    private let state = LockedValue(State())

    init(id: CallID) { self.id = id }

    /// Whether `cancel()` was called.
    var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// Marks the scope cancelled and runs the installed handler, once; does nothing once the
    /// call has its result.
    func cancel() {
        let handler = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.isCancelled, !state.isFinished else { return nil }
            state.isCancelled = true
            return state.handler.take()
        }
        handler?()
    }

    /// Installs what `cancel()` runs while the current wait lasts (one wait at a time).
    /// - Returns: false, without keeping the handler, when the scope is cancelled already:
    ///   the caller cancels its wait itself.
    func install(_ handler: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state -> Bool in
            guard !state.isCancelled else { return false }
            state.handler = handler
            return true
        }
    }

    /// Drops the handler once the wait is over.
    func removeHandler() {
        _ = state.withLock { $0.handler.take() }
    }

    /// Records that the call has its result: cancelling it does nothing from now on.
    /// - Returns: whether the call was cancelled before.
    @discardableResult
    func finish() -> Bool {
        state.withLock { state -> Bool in
            state.isFinished = true
            return state.isCancelled
        }
    }

    /// The call's final error: one cancelled while running ends as cancelled even if the
    /// operation turned the cancellation into another error.
    func finish(_ error: CourierError) -> CourierError {
        guard finish(), error.code != .cancelled else { return error }
        return CourierError(.cancelled, "the call was cancelled", underlying: error)
    }

    /// Runs `operation` in a task of its own that cancelling the scope, or the waiting task,
    /// cancels; without a scope, right here (the waiting task is the call's own).
    /// - Throws: what `operation` throws; `CancellationError` when cancelled.
    static func run<T: Sendable>(
        in scope: CancellationScope?, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        guard let scope else { return try await operation() }
        let task = Task { try await operation() }
        if !scope.install({ task.cancel() }) { task.cancel() }
        defer { scope.removeHandler() }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }
}

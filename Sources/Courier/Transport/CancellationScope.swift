/// Cancels what one call waits for without cancelling the task that waits.
///
/// `APIService` runs a call in its caller's task (one task and one resumption per call), and
/// `core.calls.cancel(id)` must end that call, not its caller. The call hands its scope to the
/// transport with each transfer (`TransportOptions.cancellationScope`); a transfer in flight,
/// or any other wait the call runs in a task of its own, installs what cancels it here.
final class CancellationScope: Sendable {
    private struct State {
        var isCancelled = false
        var handler: (@Sendable () -> Void)?
    }

    private let state = LockedValue(State())

    init() {}

    /// Whether `cancel()` was called.
    var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// Marks the scope cancelled and runs the installed handler, once.
    func cancel() {
        let handler = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.isCancelled else { return nil }
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

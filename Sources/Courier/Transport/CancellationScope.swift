/// Cancels what one call waits for without cancelling the task that waits.
///
/// `APIService` runs a call in its caller's task (one task and one resumption per call), and
/// `core.calls.cancel(id)` must end that call, not its caller. The scope is the registry's
/// handle on such a call (the part of `Call` it needs: cancel while it runs, end as
/// cancelled), one object per call: the call hands it to the transport with each transfer
/// (`TransportOptions.cancellationScope`); a transfer in flight, or any other wait the call
/// runs in a task of its own, installs what cancels it here.
final class CancellationScope: CancellableCall {
    /// What cancels the current wait.
    private enum Handler: Sendable {
        case closure(@Sendable () -> Void)
        /// A curl transfer in flight, the wait of every call: installed without a closure
        /// context to allocate.
        case transfer(CurlTransfer, CurlLoop)

        func run() {
            switch self {
            case .closure(let cancel): cancel()
            case .transfer(let transfer, let loop): loop.requestCancel(transfer)
            }
        }
    }

    private struct State {
        var isCancelled = false
        /// Set once the call has its result: cancelling does nothing from then on.
        var isFinished = false
        var handler: Handler?
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
        let handler = state.withLock { state -> Handler? in
            guard !state.isCancelled, !state.isFinished else { return nil }
            state.isCancelled = true
            return state.handler.take()
        }
        handler?.run()
    }

    /// Installs what `cancel()` runs while the current wait lasts (one wait at a time).
    /// - Returns: false, without keeping the handler, when the scope is cancelled already:
    ///   the caller cancels its wait itself.
    func install(_ handler: @escaping @Sendable () -> Void) -> Bool {
        install(.closure(handler))
    }

    /// Installs the cancelling of `transfer` on `loop` while it is in flight, as
    /// `install(_:)` does.
    func install(_ transfer: CurlTransfer, on loop: CurlLoop) -> Bool {
        install(.transfer(transfer, loop))
    }

    private func install(_ handler: Handler) -> Bool {
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

    /// The call's final error: one cancelled while running (through the scope, or its
    /// caller's task: `taskIsCancelled`) ends as cancelled even if the operation turned the
    /// cancellation into another error.
    func finish(_ error: CourierError, taskIsCancelled: Bool) -> CourierError {
        guard finish() || taskIsCancelled, error.code != .cancelled else { return error }
        return CourierError(.cancelled, "the call was cancelled", underlying: error)
    }

    /// `finish(_:taskIsCancelled:)` for what a call threw, read as a `CourierError`; out of
    /// line, so that its temporaries are not kept in the async frame of the caller, which
    /// lives as long as the call.
    @inline(never)
    func failed(_ error: any Error) -> CourierError {
        finish(CourierError.fromCall(error), taskIsCancelled: Task.isCancelled)
    }

    /// Runs `operation` in a task of its own that cancelling the scope, or the waiting task,
    /// cancels; without a scope, right here (the waiting task is the call's own).
    ///
    /// The task starts on this thread (`Task.immediate`): an operation that does not suspend
    /// (an adapter that sets a header, a gate that admits at once) has finished when the task
    /// is made, and the wait for its value returns without a thread hop. A scope cancelled
    /// already gets a task that starts cancelled, as before.
    /// - Throws: what `operation` throws; `CancellationError` when cancelled.
    static func run<T: Sendable>(
        in scope: CancellationScope?, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        guard let scope else { return try await operation() }
        let task: Task<T, any Error>
        if scope.isCancelled || Task.isCancelled {
            task = Task { try await operation() }
        } else {
            task = Task.immediate { try await operation() }
        }
        if !scope.install({ task.cancel() }) { task.cancel() }
        defer { scope.removeHandler() }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }
}

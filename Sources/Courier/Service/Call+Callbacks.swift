import Dispatch

/// Handlers for the callback API, any subset of them.
struct CallCallbacks<Value: Sendable>: Sendable {
    /// The call produced a value.
    var onSuccess: (@Sendable (Value) -> Void)?
    /// The call failed. A cancelled call reports here only when there is no `onCancel`.
    var onFailure: (@Sendable (CourierError) -> Void)?
    /// The call was cancelled (before it was sent or in flight).
    var onCancel: (@Sendable () -> Void)?
    /// The call ended, whatever the outcome; after the other handler.
    var onFinished: (@Sendable () -> Void)?

    init(
        onSuccess: (@Sendable (Value) -> Void)? = nil, onFailure: (@Sendable (CourierError) -> Void)? = nil,
        onCancel: (@Sendable () -> Void)? = nil, onFinished: (@Sendable () -> Void)? = nil
    ) {
        self.onSuccess = onSuccess
        self.onFailure = onFailure
        self.onCancel = onCancel
        self.onFinished = onFinished
    }

    func deliver(_ result: Result<Value, CourierError>) {
        switch result {
        case .success(let value):
            onSuccess?(value)
        case .failure(let error) where error.code == .cancelled && onCancel != nil:
            onCancel?()
        case .failure(let error):
            onFailure?(error)
        }
        onFinished?()
    }
}

extension Call {
    /// Starts the call and reports its outcome through callbacks, for code that is not async.
    /// - Parameters:
    ///   - queue: where the handlers run.
    ///   - callbacks: the handlers.
    /// - Returns: the call's identifier, for `CallRegistry.cancel(_:)`.
    @discardableResult
    func start(deliveringOn queue: DispatchQueue, _ callbacks: CallCallbacks<Value>) -> CallID {
        whenFinished { result in
            queue.async { callbacks.deliver(result) }
        }
        start()
        return id
    }

    /// Starts the call and reports its outcome through callbacks, for code that is not async.
    /// - Parameters:
    ///   - queue: where the handlers run.
    ///   - onSuccess: the call produced a value.
    ///   - onFailure: the call failed (or was cancelled, when there is no `onCancel`).
    ///   - onCancel: the call was cancelled.
    ///   - onFinished: the call ended, after the other handler.
    /// - Returns: the call's identifier.
    @discardableResult
    public func start(
        deliveringOn queue: DispatchQueue, onSuccess: (@Sendable (Value) -> Void)? = nil,
        onFailure: (@Sendable (CourierError) -> Void)? = nil, onCancel: (@Sendable () -> Void)? = nil,
        onFinished: (@Sendable () -> Void)? = nil
    ) -> CallID {
        start(
            deliveringOn: queue,
            CallCallbacks(onSuccess: onSuccess, onFailure: onFailure, onCancel: onCancel, onFinished: onFinished))
    }
}

import Dispatch

extension APIService {
    /// Starts an endpoint's call and reports through callbacks, for code that is not async.
    /// - Parameters:
    ///   - endpoint: the call to make.
    ///   - queue: where the handlers run; the configuration's `callbackQueue` when nil.
    ///   - onSuccess: the decoded value.
    ///   - onFailure: the error (a cancellation too, when there is no `onCancel`).
    ///   - onCancel: the call was cancelled, before it was sent or in flight.
    ///   - onFinished: after the other handler, whatever the outcome.
    /// - Returns: the call's identifier, for `core.calls.cancel(_:)`.
    @discardableResult
    public func start<Model: Decodable & Sendable>(
        _ endpoint: Endpoint<Model>, on queue: DispatchQueue? = nil, onSuccess: (@Sendable (Model) -> Void)? = nil,
        onFailure: (@Sendable (CourierError) -> Void)? = nil, onCancel: (@Sendable () -> Void)? = nil,
        onFinished: (@Sendable () -> Void)? = nil
    ) -> CallID {
        var success: (@Sendable (Response<Model>) -> Void)?
        if let onSuccess { success = { response in onSuccess(response.value) } }
        return call(endpoint).start(
            deliveringOn: queue ?? core.configuration.callbackQueue,
            CallCallbacks(onSuccess: success, onFailure: onFailure, onCancel: onCancel, onFinished: onFinished))
    }
}

extension Endpoint where Model: Decodable {
    /// A `PUT` of `body` (encoded by the request serializer) to `path`, decoded as `Model`.
    public static func put(
        _ path: String, body: (any Encodable & Sendable)? = nil, as type: Model.Type = Model.self,
        options: CallOptions = .default
    ) -> Endpoint {
        Endpoint(.put, path, body: body, options: options)
    }

    /// A `PATCH` of `body` (encoded by the request serializer) to `path`, decoded as `Model`.
    public static func patch(
        _ path: String, body: (any Encodable & Sendable)? = nil, as type: Model.Type = Model.self,
        options: CallOptions = .default
    ) -> Endpoint {
        Endpoint(.patch, path, body: body, options: options)
    }

    /// A `DELETE` of `path` with `parameters` in the query string, decoded as `Model`.
    public static func delete(
        _ path: String, parameters: (any Encodable & Sendable)? = nil, as type: Model.Type = Model.self,
        options: CallOptions = .default
    ) -> Endpoint {
        Endpoint(.delete, path, parameters: parameters, options: options)
    }
}

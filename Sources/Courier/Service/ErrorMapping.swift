import Foundation

// Error mapping: a service turns Courier's failures into its app's own errors, once per call.
//
// The verbs throw `CourierError` (typed throws), so a domain error cannot replace it; it rides
// inside instead. The `CourierError` keeps its category, response and body — retry logic,
// logging and `switch error.code` keep working — and `error.domain(as: AuthError.self)` gives
// the app's error typed, the way `errorModel(as:)` gives a decoded error body.

extension CourierError {
    /// The app's own error for this failure, if it is a `T`.
    ///
    /// It is, in order: what the call's or the service's `errorMapper` returned, what a response
    /// check refused the answer with (`ResponseValidator.checking(_:)`), or the error a hook of
    /// yours threw (an adapter, a serializer), kept as ``underlying``.
    /// - Parameter type: the app's error type (`AuthError.self`).
    /// - Returns: the error, or nil when this failure carries none of that type.
    public func domain<T: Error>(as type: T.Type) -> T? {
        (domainError as? T) ?? (underlying as? T)
    }
}

extension ServiceCore {
    /// The call's failure as the caller gets it: the call's `errorMapper` asked first, the
    /// service's when the call's has none or returns nil. Applied once, when the call has failed for good (after retries, refresh and failover).
    /// - Parameters:
    ///   - error: the failure that ends the call.
    ///   - options: the call's options.
    /// - Returns: the same error, carrying the domain error a mapper returned.
    func mapped(_ error: CourierError, options: CallOptions) -> CourierError {
        let domain = options.errorMapper?(error) ?? configuration.errorMapper?(error)
        guard let domain else { return error }
        var mapped = error
        mapped.domainError = domain
        return mapped
    }
}

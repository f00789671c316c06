import Foundation

/// The bounds every configuration value is checked against or clamped to, so that no value a
/// user can write traps the process.
///
/// A `Duration` holds far more than libcurl's millisecond timeouts (a C `long`, stored by
/// libcurl in 32 bits) or the runtime's sleep deadlines (nanoseconds since boot in 64 bits):
/// `.seconds(Int64.max / 2)` overflowed both. The rule, per value:
/// - a timeout of zero or less is refused with `CourierError(.configuration, …)` when the
///   client is made or the call starts (zero would read as "no limit" to libcurl, which is
///   what `nil` says); a longer one than ``maximumTimeout`` is treated as ``maximumTimeout``;
/// - a size or a connection limit below 1 is refused;
/// - counts (retries, attempts, redirects) below their minimum are raised to it;
/// - waits (back-off, `Retry-After`, request-interval delays) are cut to ``maximumWait``.
package enum ConfigurationBounds {
    /// The longest timeout honoured: 24 days, under libcurl's 2³¹ milliseconds.
    package static let maximumTimeout: Duration = .seconds(24 * 86_400)
    /// The longest a service sleeps in one wait: about 31 years, far from the runtime's limit.
    package static let maximumWait: Duration = .seconds(1_000_000_000)

    /// A timeout checked and clamped.
    /// - Parameters:
    ///   - value: the timeout; `nil` means "no limit" and stays `nil`.
    ///   - name: what the error message calls it.
    /// - Returns: `value`, at most ``maximumTimeout``.
    /// - Throws: `CourierError.configuration` when `value` is zero or negative.
    package static func timeout(_ value: Duration?, _ name: String) throws(CourierError) -> Duration? {
        guard let value else { return nil }
        guard value > .zero else {
            throw CourierError(.configuration, "the \(name) must be positive (got \(value))")
        }
        return min(value, maximumTimeout)
    }

    /// A size limit checked.
    /// - Throws: `CourierError.configuration` when `value` is below 1.
    static func size<Value: BinaryInteger>(_ value: Value, _ name: String) throws(CourierError) -> Value {
        guard value >= 1 else { throw CourierError(.configuration, "the \(name) must be at least 1 (got \(value))") }
        return value
    }
}

extension Duration {
    /// The duration between zero and `limit`.
    package func clamped(to limit: Duration) -> Duration { Swift.min(Swift.max(self, .zero), limit) }
}

import Foundation

/// A value behind a lock, with `Mutex`'s `withLock` shape.
///
/// Why not `Synchronization.Mutex`: on Linux (Swift 6.3) ThreadSanitizer does not see the
/// futex-based `Mutex` as synchronisation and reports every guarded access as a race, while it
/// understands the pthread mutex inside `NSLock`. The test servers run under `--sanitize=thread`
/// with the whole suite, so they must not produce such reports.
final class Locked<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable is safe: `value` is only read or written inside `withLock`, under `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

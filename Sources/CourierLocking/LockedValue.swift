import CSanitizerHooks
import Synchronization

/// A value behind a `Synchronization.Mutex` that ThreadSanitizer understands.
///
/// `Mutex` on Linux is correct, but TSan cannot see it hand a contended lock over: the spin
/// loop of its slow path runs in the uninstrumented `libswiftSynchronization.so`, and a
/// blocked thread gets the lock from the kernel (`FUTEX_LOCK_PI` / `FUTEX_UNLOCK_PI`). TSan
/// then sees no release/acquire pair between two critical sections and reports every value a
/// contended `Mutex` guards as a data race. `LockedValue` keeps the same `Mutex`, stored
/// inline, and tells TSan what the lock does: acquire right after locking, release right
/// before unlocking, on the mutex's address (see `CSanitizerHooks.h`). Outside TSan the hooks
/// are a pointer test and no call; the lock itself is untouched.
///
/// `public`, not `package`: the Swift 6.3 compiler does not inline or specialize a `package`
/// `@inlinable` function in another module, so every lock of Courier went through the
/// unspecialized generic `withLock` and a runtime lookup of `Mutex<Value>`'s metadata (about
/// 700 instructions instead of a few dozen; callgrind, scripts/service-overhead.sh).
@frozen
public struct LockedValue<Value: ~Copyable>: ~Copyable {
    @usableFromInline
    package let mutex: Mutex<Value>

    /// Creates a lock guarding `initialValue`.
    @inlinable
    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with exclusive access to the value, as `Mutex.withLock` does.
    @inlinable
    @inline(__always)
    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            // The mutex's own address: stable (its storage is address-only) and one per lock.
            let address = withUnsafePointer(to: mutex) { UnsafeRawPointer($0) }
            courier_tsan_acquire(address)
            defer { courier_tsan_release(address) }
            return try body(&value)
        }
    }
}

extension LockedValue: Sendable where Value: ~Copyable {}

import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Large response-body buffers, kept after their `Data` is dropped for the next large body of
/// the same transport (buffered bodies with a large `Content-Length`, see `ResponseBuffer`).
///
/// A new 1 MB block from malloc is fresh memory: the kernel faults and zeroes each of its 256
/// pages as the body is copied in, and glibc hands it back (unmaps or trims it) when the `Data`
/// is freed. With 32 bodies of 1 MB in flight that was about a quarter of the CPU of a request
/// (perf: `clear_page`, `exc_page_fault`, `unmap_page_range`). A buffer taken from here has
/// its pages already.
///
/// Bounded three ways: only sizes from `smallest` to `largest` are kept, in size classes a
/// quarter of a power of two apart (so a kept buffer fits the next body of about the same
/// size, and wastes at most a fifth of itself); at most `maxIdleBytes` wait here at once (a
/// buffer given back beyond that is freed); and a buffer idle for `idleLifetime` is freed by
/// `trim` (the transport's loop calls it at least once a second), so a burst of large bodies
/// leaves nothing behind a second or two after it ended.
///
/// Buffers in use belong to their `Data` (or to the transfer still filling them), not to the
/// pool: the pool holds only idle ones. Thread-safe: buffers come back from whichever thread
/// drops the `Data`.
final class BodyBufferPool: Sendable {
    /// Smaller blocks come from malloc's arenas, whose pages stay mapped.
    static let smallest = 256 << 10
    /// The largest reservation a `Content-Length` may cause (`CurlTransfer.maxReservation`).
    static let largest = 4 << 20
    /// The most bytes kept idle at once: 16 buffers of 1 MB.
    static let maxIdleBytes = 16 << 20
    /// How long an idle buffer is kept.
    static let idleLifetime: Duration = .seconds(1)

    /// An idle block, by address: a raw pointer cannot cross into the lock's region.
    private struct Idle {
        let address: UInt
        let capacity: Int
        let since: ContinuousClock.Instant

        var buffer: UnsafeMutableRawPointer? { UnsafeMutableRawPointer(bitPattern: address) }
    }

    private struct State {
        var idle: [Idle] = []
        var idleBytes = 0
        var isClosed = false
    }

    private let state = LockedValue(State())

    deinit {
        state.withLock { state in
            for idle in state.idle { free(idle.buffer) }
        }
    }

    /// The capacity kept for a body of `bytes`: the size class at or above it, or nil when
    /// bodies of that size are not pooled.
    static func sizeClass(for bytes: Int) -> Int? {
        guard bytes >= smallest, bytes <= largest else { return nil }
        // The power of two at or below `bytes`, then quarter steps above it.
        let step = (1 << (Int.bitWidth - 1 - bytes.leadingZeroBitCount)) / 4
        return (bytes + step - 1) / step * step
    }

    /// An idle buffer of exactly `capacity` bytes (a size class), or nil.
    func take(capacity: Int) -> UnsafeMutableRawPointer? {
        let address = state.withLock { state -> UInt? in
            // Newest first: its pages are the likeliest to be in the caches.
            guard let index = state.idle.lastIndex(where: { $0.capacity == capacity }) else { return nil }
            state.idleBytes -= capacity
            return state.idle.remove(at: index).address
        }
        return address.flatMap { UnsafeMutableRawPointer(bitPattern: $0) }
    }

    /// Takes back a malloc'd block of `capacity` bytes that nothing uses any more, or frees it
    /// when it is not of a size class, the pool is full, or it was closed.
    func giveBack(_ buffer: UnsafeMutableRawPointer, capacity: Int) {
        let address = UInt(bitPattern: buffer)
        let kept =
            Self.sizeClass(for: capacity) == capacity
            && state.withLock { state -> Bool in
                guard !state.isClosed, state.idleBytes + capacity <= Self.maxIdleBytes else { return false }
                state.idle.append(Idle(address: address, capacity: capacity, since: .now))
                state.idleBytes += capacity
                return true
            }
        if !kept { free(buffer) }
    }

    /// Frees the buffers idle for `idleLifetime` or longer at `now` (the clock's, unless given).
    func trim(now: ContinuousClock.Instant? = nil) {
        let expired = state.withLock { state -> [Idle] in
            // Oldest first: they were appended in the order they came back.
            guard let oldest = state.idle.first else { return [] }
            let now = now ?? .now
            guard now - oldest.since >= Self.idleLifetime else { return [] }
            let kept = state.idle.firstIndex { now - $0.since < Self.idleLifetime } ?? state.idle.count
            let expired = Array(state.idle[..<kept])
            state.idle.removeFirst(kept)
            for buffer in expired { state.idleBytes -= buffer.capacity }
            return expired
        }
        for idle in expired { free(idle.buffer) }
    }

    /// Frees every idle buffer and every buffer given back from now on (the transport shut down).
    func close() {
        let idle = state.withLock { state -> [Idle] in
            state.isClosed = true
            state.idleBytes = 0
            defer { state.idle.removeAll() }
            return state.idle
        }
        for buffer in idle { free(buffer.buffer) }
    }

    /// The buffers and bytes waiting here (for tests).
    var idle: (count: Int, bytes: Int) { state.withLock { ($0.idle.count, $0.idleBytes) } }
}

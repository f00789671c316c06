import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A growable byte buffer for a response body that becomes `Data` without a copy.
///
/// Capacity doubles (amortised O(1) appends); `take()` hands the malloc'd block to `Data`,
/// which frees it, or gives it back to `pool` when it is a pooled size. A `Content-Length` of
/// `BodyBufferPool.smallest` or more reserves a block of its size class, from the pool when one
/// is idle there. Not thread-safe: used by one transfer on the transport's thread.
struct ResponseBuffer: ~Copyable {
    private var storage: UnsafeMutableRawPointer?
    private(set) var count = 0
    private var capacity = 0
    /// Where a large block comes from and goes back to; nil: plain malloc and free.
    var pool: BodyBufferPool?

    init() {}

    deinit {
        guard let storage else { return }
        if let pool { pool.giveBack(storage, capacity: capacity) } else { free(storage) }
    }

    /// Makes room for `expected` bytes in total (a `Content-Length` hint).
    mutating func reserve(_ expected: Int) {
        guard expected > capacity else { return }
        if storage == nil, let pool, let size = BodyBufferPool.sizeClass(for: expected) {
            if let pooled = pool.take(capacity: size) {
                storage = pooled
                capacity = size
                return
            }
            // A new block of the class's size, so that it can go back to the pool.
            grow(to: size)
            return
        }
        grow(to: expected)
    }

    /// Appends `length` bytes. Returns false when memory ran out.
    mutating func append(_ bytes: UnsafeRawPointer, length: Int) -> Bool {
        guard length > 0 else { return true }
        let needed = count + length
        if needed > capacity {
            guard grow(to: Swift.max(needed, capacity * 2, 4096)) else { return false }
        }
        (storage! + count).copyMemory(from: bytes, byteCount: length)
        count = needed
        return true
    }

    /// Moves the bytes into a `Data` and leaves the buffer empty.
    mutating func take() -> Data {
        guard let storage, count > 0 else { return Data() }
        let data: Data
        if let pool, BodyBufferPool.sizeClass(for: capacity) == capacity {
            let capacity = self.capacity
            data = Data(
                bytesNoCopy: storage, count: count,
                deallocator: .custom { block, _ in pool.giveBack(block, capacity: capacity) })
        } else {
            data = Data(bytesNoCopy: storage, count: count, deallocator: .free)
        }
        self.storage = nil
        count = 0
        capacity = 0
        return data
    }

    @discardableResult
    private mutating func grow(to newCapacity: Int) -> Bool {
        guard let grown = realloc(storage, newCapacity) else { return false }
        storage = grown
        capacity = newCapacity
        return true
    }
}

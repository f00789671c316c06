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
/// which frees it. Not thread-safe: used by one transfer on the transport's thread.
struct ResponseBuffer: ~Copyable {
    private var storage: UnsafeMutableRawPointer?
    private(set) var count = 0
    private var capacity = 0

    init() {}

    deinit { free(storage) }

    /// Makes room for `expected` bytes in total (a `Content-Length` hint).
    mutating func reserve(_ expected: Int) {
        guard expected > capacity else { return }
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
        let data = Data(bytesNoCopy: storage, count: count, deallocator: .free)
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

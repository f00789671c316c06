import Foundation

/// A fast 64-bit checksum (xxHash64) of cached rows, checked on every disk read so a mangled
/// row is detected and dropped instead of served.
enum CacheChecksum {
    private static let p1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let p2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let p3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let p4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let p5: UInt64 = 0x27D4_EB2F_1656_67C5

    /// xxHash64 of `data` with `seed`.
    static func xxh64(_ data: Data, seed: UInt64 = 0) -> UInt64 {
        data.withUnsafeBytes { xxh64(UnsafeRawBufferPointer($0), seed: seed) }
    }

    static func xxh64(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        let count = bytes.count
        var index = 0
        var hash: UInt64
        @inline(__always) func word64(_ at: Int) -> UInt64 {
            UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self))
        }
        @inline(__always) func round(_ acc: UInt64, _ input: UInt64) -> UInt64 {
            var acc = acc &+ input &* p2
            acc = (acc << 31) | (acc >> 33)
            return acc &* p1
        }
        @inline(__always) func merge(_ acc: UInt64, _ value: UInt64) -> UInt64 {
            (acc ^ round(0, value)) &* p1 &+ p4
        }
        if count >= 32 {
            var v1 = seed &+ p1 &+ p2
            var v2 = seed &+ p2
            var v3 = seed
            var v4 = seed &- p1
            while index + 32 <= count {
                v1 = round(v1, word64(index))
                v2 = round(v2, word64(index + 8))
                v3 = round(v3, word64(index + 16))
                v4 = round(v4, word64(index + 24))
                index += 32
            }
            hash =
                ((v1 << 1) | (v1 >> 63)) &+ ((v2 << 7) | (v2 >> 57)) &+ ((v3 << 12) | (v3 >> 52))
                &+ ((v4 << 18) | (v4 >> 46))
            hash = merge(hash, v1)
            hash = merge(hash, v2)
            hash = merge(hash, v3)
            hash = merge(hash, v4)
        } else {
            hash = seed &+ p5
        }
        hash &+= UInt64(count)
        while index + 8 <= count {
            hash ^= round(0, word64(index))
            hash = ((hash << 27) | (hash >> 37)) &* p1 &+ p4
            index += 8
        }
        if index + 4 <= count {
            let word = UInt64(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self)))
            hash ^= word &* p1
            hash = ((hash << 23) | (hash >> 41)) &* p2 &+ p3
            index += 4
        }
        while index < count {
            hash ^= UInt64(bytes[index]) &* p5
            hash = ((hash << 11) | (hash >> 53)) &* p1
            index += 1
        }
        hash ^= hash >> 33
        hash &*= p2
        hash ^= hash >> 29
        hash &*= p3
        hash ^= hash >> 32
        return hash
    }
}

import Foundation

/// Kept identical to CrashWriterFixture in Tests/CourierTests/Cache/CacheCrashSafetyTests.swift.
/// The entries `courier-cache-crash-writer` writes and the crash-safety test checks: each
/// body is derived from its round and index, so a reader can tell a whole entry from a
/// partial or mixed one.
enum CrashWriterFixture {
    static let host = "crash.test"
    static let maxIndex = 100_000
    /// Small enough that eviction runs while the writer is being killed.
    static let diskCapacityBytes = 6 << 20

    static func path(_ round: Int, _ index: Int) -> String { "/crash/\(round)/\(index)" }

    /// 1–96 KiB of bytes that depend on every position, the round and the index.
    /// 128 KiB of pseudo-random bytes, made once; bodies are slices of it, so the writer
    /// spends its time storing rather than generating.
    static let pool: Data = {
        var bytes = [UInt8](repeating: 0, count: 128 * 1_024)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for position in bytes.indices {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            bytes[position] = UInt8(truncatingIfNeeded: state)
        }
        return Data(bytes)
    }()

    /// 1–96 KiB: a "round index" stamp, then a slice of the pool chosen by round and index.
    static func body(_ round: Int, _ index: Int) -> Data {
        let count = 1_024 + (index &* 7_919 &+ round &* 104_729) % (95 * 1_024)
        let offset = (index &* 4_099 &+ round &* 65_537) % (pool.count - count)
        var body = Data("\(round) \(index)|".utf8)
        body.append(pool[pool.startIndex + offset..<pool.startIndex + offset + count])
        return body
    }
}

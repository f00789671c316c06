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
    static func body(_ round: Int, _ index: Int) -> Data {
        let count = 1_024 + (index &* 7_919 &+ round &* 104_729) % (95 * 1_024)
        var bytes = [UInt8](repeating: 0, count: count)
        var state = UInt64(truncatingIfNeeded: round &* 1_000_003 &+ index) | 1
        for position in 0..<count {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            bytes[position] = UInt8(truncatingIfNeeded: state)
        }
        return Data(bytes)
    }
}

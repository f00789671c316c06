import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process writing to the disk tier is killed with SIGKILL at arbitrary moments;
/// afterwards every entry the cache serves must be whole and exactly what was written.
@Suite struct CacheCrashSafetyTests {
    static let writerName = "courier-cache-crash-writer"
    /// Each round is one kill (about 0.2 s each on a debug build, verification included).
    static let rounds = 60

    @Test func killedWritersNeverLeavePartialOrCorruptEntries() async throws {
        let writer = try #require(Self.locateWriter(), "build \(Self.writerName) first (swift build --build-tests)")
        let directory = TemporaryDirectory()
        var killedMidStore = 0
        for round in 0..<Self.rounds {
            // Reading the writer's pipe and reaping it block: done on a thread of its own (see
            // `offPool`) so the run's other async tests keep the cooperative pool.
            let path = directory.path
            let outcome = try await offPool { try Self.runAndKill(writer, directory: path, round: round) }
            #expect(outcome.killed, "round \(round): the writer exited on its own")
            #expect(outcome.committed >= 0, "round \(round): the writer committed nothing")
            if outcome.midStore { killedMidStore += 1 }
            // Check right away, before later rounds' eviction can hide a torn entry.
            try verify(directory: directory.path, round: round, lastCommitted: outcome.committed)
        }
        // The kills must land inside stores, or the test proves little. Stores fill about 98% of
        // the writer's loop, so nearly every kill does (seen: 57 to 59 of 60 at load average 6-7).
        #expect(killedMidStore >= Self.rounds / 2, "only \(killedMidStore) of \(Self.rounds) kills landed mid-store")
    }

    /// How one round ended.
    struct Outcome: Sendable {
        /// The last index the writer reported committed (-1 if none).
        var committed: Int
        /// Whether SIGKILL ended the writer.
        var killed: Bool
        /// Whether the writer had begun a store it never finished: the kill landed inside it.
        var midStore: Bool
    }

    /// Starts the writer for `round` and SIGKILLs it after a random number of committed stores.
    static func runAndKill(_ writer: URL, directory: String, round: Int) throws -> Outcome {
        // posix_spawn rather than Foundation's `Process`, which crashed the test binary when
        // another suite launched a process at the same time.
        let child = try ChildProcess.spawn(writer.path, [directory, String(round)], stdout: .capture)
        defer { close(child.output) }
        // Kill after a random number of committed stores; the writer keeps going while we
        // read, so SIGKILL lands at an arbitrary point of a later store.
        let target = Int.random(in: 1...60)
        var committed = -1
        var lastLineBegan = false
        var pending = Data()
        func consume(_ chunk: Data) {
            pending.append(chunk)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending = Data(pending[pending.index(after: newline)...])
                let parts = line.split(separator: " ")
                guard parts.count == 3, Int(parts[1]) == round, let index = Int(parts[2]) else { continue }
                lastLineBegan = parts[0] == "begin"
                if parts[0] == "stored" { committed = index }
            }
        }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        /// The next bytes the writer wrote; empty at the end of its output.
        func read() -> Data {
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(child.output, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                return count > 0 ? Data(buffer[0..<count]) : Data()
            }
        }
        while committed + 1 < target {
            let chunk = read()
            if chunk.isEmpty { break }
            consume(chunk)
        }
        // We react to a line within microseconds, while a store takes milliseconds: without
        // jitter every kill would land at the start of the next store. A random pause of up
        // to a few stores spreads the kills over all its phases (checksum, transaction,
        // commit, eviction). Nothing waits on it; it only picks the moment.
        usleep(UInt32.random(in: 0...8_000))
        kill(child.pid, SIGKILL)
        let status = ChildProcess.wait(child.pid)
        // What the writer wrote before it died: the stores it finished, and whether it was in one.
        while true {
            let chunk = read()
            if chunk.isEmpty { break }
            consume(chunk)
        }
        return Outcome(committed: committed, killed: status == 128 + SIGKILL, midStore: lastLineBegan)
    }

    /// Reopens the cache and checks every entry of `round` it serves, plus the newest committed one.
    func verify(directory: String, round: Int, lastCommitted: Int) throws {
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule(CrashWriterFixture.host, .forceLifetime(.seconds(86_400)))],
                storage: .disk(directory: directory), diskCapacityBytes: CrashWriterFixture.diskCapacityBytes))
        #expect(try cache.disk.withLock { tier throws(CourierError) in try tier!.integrityCheck() } == "ok")
        var served = 0
        // Look past the last index we saw committed: later stores may have committed too.
        for index in 0...(lastCommitted + 200) {
            let request = HTTPRequest(
                method: .get, scheme: "https", authority: CrashWriterFixture.host,
                path: CrashWriterFixture.path(round, index))
            guard case .fresh(let response) = try cache.lookup(CacheRequest(request)) else { continue }
            served += 1
            #expect(response.body == CrashWriterFixture.body(round, index), "round \(round) index \(index)")
            #expect(response.response.headerFields[HTTPField.Name("X-Round-Index")!] == "\(round) \(index)")
        }
        #expect(cache.statistics.corruptEntriesDropped == 0, "round \(round): torn or corrupt rows on disk")
        #expect(served >= 1, "round \(round): nothing committed survived")
        // The newest entry we saw committed cannot have been evicted: later writes of this round
        // evict the oldest rows first.
        let newest = HTTPRequest(
            method: .get, scheme: "https", authority: CrashWriterFixture.host,
            path: CrashWriterFixture.path(round, max(0, lastCommitted)))
        #expect(try cache.lookup(CacheRequest(newest)).isFresh, "round \(round): a committed entry is missing")
        #expect(cache.disk.withLock { $0!.totalBytes } <= CrashWriterFixture.diskCapacityBytes)
    }

    /// The writer binary sits next to the test product in the build folder.
    static func locateWriter() -> URL? {
        var folders: [URL] = []
        if let executable = Bundle.main.executableURL { folders.append(executable.deletingLastPathComponent()) }
        folders.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            folders.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
        }
        folders.append(Bundle.main.bundleURL)
        // Fallback: <package>/.build/debug, from this file's path (Tests/CourierTests/Cache/…).
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        folders.append(packageRoot.appendingPathComponent(".build/debug"))
        for folder in folders {
            var candidate = folder
            // Walk up a few levels: on macOS the test binary is inside CourierPackageTests.xctest/Contents/MacOS.
            for _ in 0..<4 {
                let path = candidate.appendingPathComponent(writerName).path
                if FileManager.default.isExecutableFile(atPath: path) { return URL(fileURLWithPath: path) }
                candidate = candidate.deletingLastPathComponent()
            }
        }
        return nil
    }
}

/// Kept identical to Sources/courier-cache-crash-writer/CrashWriterFixture.swift.
enum CrashWriterFixture {
    static let host = "crash.test"
    static let diskCapacityBytes = 6 << 20

    static func path(_ round: Int, _ index: Int) -> String { "/crash/\(round)/\(index)" }

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

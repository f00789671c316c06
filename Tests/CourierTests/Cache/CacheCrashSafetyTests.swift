import Foundation
import HTTPTypes
import Testing

@testable import Courier

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process writing to the disk tier is killed with SIGKILL at arbitrary moments;
/// afterwards every entry the cache serves must be whole and exactly what was written.
@Suite struct CacheCrashSafetyTests {
    static let writerName = "courier-cache-crash-writer"

    @Test func killedWritersNeverLeavePartialOrCorruptEntries() throws {
        let writer = try #require(Self.locateWriter(), "build \(Self.writerName) first (swift build --build-tests)")
        let directory = TemporaryDirectory()
        var lastCommitted: [Int: Int] = [:]
        let rounds = 20
        for round in 0..<rounds {
            let process = Process()
            process.executableURL = writer
            process.arguments = [directory.path, String(round)]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            // Kill after a random number of committed stores; the writer keeps going while we
            // read, so SIGKILL lands at an arbitrary point of a later store.
            let target = Int.random(in: 1...60)
            var committed = -1
            var pending = Data()
            let reader = output.fileHandleForReading
            while committed + 1 < target {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending = Data(pending[pending.index(after: newline)...])
                    let parts = line.split(separator: " ")
                    if parts.count == 3, Int(parts[1]) == round, let index = Int(parts[2]) { committed = index }
                }
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? reader.close()
            #expect(process.terminationReason == .uncaughtSignal, "round \(round): the writer exited on its own")
            #expect(committed >= 0, "round \(round): the writer committed nothing")
            lastCommitted[round] = committed
        }

        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule(CrashWriterFixture.host, .forceLifetime(.seconds(86_400)))],
                storage: .disk(directory: directory.path), diskCapacityBytes: CrashWriterFixture.diskCapacityBytes))
        #expect(try cache.disk.withLock { tier throws(CourierError) in try tier!.integrityCheck() } == "ok")
        var served = 0
        for round in 0..<rounds {
            // Look past the last index we saw committed: later stores may have committed too.
            for index in 0...(lastCommitted[round, default: 0] + 200) {
                let request = HTTPRequest(
                    method: .get, scheme: "https", authority: CrashWriterFixture.host,
                    path: CrashWriterFixture.path(round, index))
                guard case .fresh(let response) = try cache.lookup(CacheRequest(request)) else { continue }
                served += 1
                #expect(response.body == CrashWriterFixture.body(round, index), "round \(round) index \(index)")
                #expect(response.response.headerFields[HTTPField.Name("X-Round-Index")!] == "\(round) \(index)")
            }
        }
        #expect(cache.statistics.corruptEntriesDropped == 0)
        #expect(served > 20)
        // The newest committed entry of the last round cannot have been evicted yet.
        let last = rounds - 1
        let newest = HTTPRequest(
            method: .get, scheme: "https", authority: CrashWriterFixture.host,
            path: CrashWriterFixture.path(last, lastCommitted[last, default: 0]))
        #expect(try cache.lookup(CacheRequest(newest)).isFresh)
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

import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// The disk tier when its file is damaged or its disk is full: whatever is served is exactly
/// what was stored, the cache keeps working, and monitors hear about it.
@Suite struct CacheDiskFailureTests {
    let clock = ManualClock()
    let maxAge = CacheFixtures.response(200, ["Cache-Control": "max-age=3600"])

    func path(_ index: Int) -> HTTPRequest { CacheFixtures.request("/item/\(index)") }

    func body(_ index: Int) -> String { String(repeating: "\(index)-", count: 1_000 + index * 37) }

    /// How a test damages the closed database file.
    enum Damage: String, CaseIterable, Sendable {
        /// Pages 2-5 (schema roots and the first table pages) overwritten.
        case firstPages
        /// A run of pages in the middle (row and body overflow pages).
        case middlePages
        /// The last pages.
        case lastPages
        /// The file cut to half its length.
        case truncated
    }

    /// Fills a cache folder, closes it (so the WAL is checkpointed into the file), damages the
    /// file, then reopens it: every lookup is a miss or the exact body, and the cache stores and
    /// serves again, across another reopen.
    @Test(arguments: Damage.allCases)
    func aDamagedFileIsNeverServedAndTheCacheRecovers(damage: Damage) throws {
        let directory = TemporaryDirectory()
        let file = directory.path + "/cache.sqlite3"
        do {
            let cache = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
            for index in 0..<40 { #expect(cache.store(path(index), maxAge, body: body(index))) }
        }
        #expect(!FileManager.default.fileExists(atPath: file + "-wal"), "the last close checkpoints the WAL")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        let pageSize = 4_096
        let pages = bytes.count / pageSize
        #expect(pages > 20)
        func scramble(pages range: Range<Int>) {
            var state: UInt64 = 0x2545_F491_4F6C_DD1D
            for offset in (range.lowerBound * pageSize)..<min(bytes.count, range.upperBound * pageSize) {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                bytes[offset] = UInt8(truncatingIfNeeded: state)
            }
        }
        switch damage {
        case .firstPages: scramble(pages: 1..<5)
        case .middlePages: scramble(pages: (pages / 2)..<(pages / 2 + 4))
        case .lastPages: scramble(pages: (pages - 4)..<pages)
        case .truncated: bytes = bytes.prefix(bytes.count / 2)
        }
        try bytes.write(to: URL(fileURLWithPath: file))

        let events = EventLog()
        let reopened = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule(CacheFixtures.host, .followHTTP)], storage: .disk(directory: directory.path),
                clock: clock.cacheClock, onEvent: events.handler))
        var served = 0
        for index in 0..<40 {
            guard let found = try reopened.lookup(path(index)).bodyString else { continue }
            served += 1
            #expect(found == body(index), "entry \(index) came back altered")
        }
        #expect(served < 40, "the damage was not noticed at all")
        // Found when opening (the file is recreated empty) or when a read hits it (the tier is
        // reset, or a row failing its checksum is dropped): either way monitors hear of it.
        #expect(
            events.all.contains {
                switch $0 {
                case .diskUnavailable, .corruptEntryDropped: true
                default: false
                }
            })
        #expect(reopened.store(path(100), maxAge, body: "after the damage"))
        #expect(try reopened.lookup(path(100)).bodyString == "after the damage")
        #expect(try reopened.disk.withLock { tier throws(CourierError) in try tier!.integrityCheck() } == "ok")
        let again = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
        #expect(try again.lookup(path(100)).bodyString == "after the damage")
    }

    /// Tables of another shape than this version's, as another version or tool may leave in the
    /// folder.
    enum ForeignSchema: String, CaseIterable, Sendable {
        /// An `entries` table without most of the columns (no `url`: an index on it fails).
        case otherColumns
        /// Every column but one (`has_query`): the indexes build, but every insert fails.
        case oneColumnMissing

        var sql: String {
            switch self {
            case .otherColumns:
                return "CREATE TABLE entries(id INTEGER PRIMARY KEY, key TEXT, value BLOB);"
                    + " INSERT INTO entries(key, value) VALUES ('k', x'00');"
            case .oneColumnMissing:
                return """
                    CREATE TABLE entries(
                      id INTEGER PRIMARY KEY, key TEXT NOT NULL, variant TEXT NOT NULL, url TEXT NOT NULL,
                      identity TEXT NOT NULL, head BLOB NOT NULL, body BLOB NOT NULL, request_time REAL NOT NULL,
                      response_time REAL NOT NULL, lifetime REAL, checksum INTEGER NOT NULL, size INTEGER NOT NULL,
                      last_access INTEGER NOT NULL, UNIQUE(key, variant));
                    """
            }
        }
    }

    /// Broken before: a database whose `entries` table had another shape made every
    /// `HostScopedCache` on the folder fail to open ("no such column: url"), or open and fail
    /// every write, until someone deleted the file by hand. The cache is disposable: such a
    /// table is replaced by an empty one of this version's shape, monitors are told, and the
    /// cache stores and serves across a reopen.
    @Test(arguments: ForeignSchema.allCases)
    func aDatabaseOfAnotherSchemaIsRecreated(schema: ForeignSchema) throws {
        let directory = TemporaryDirectory()
        do {
            let foreign = try SQLiteConnection(path: directory.path + "/cache.sqlite3")
            try foreign.execute(schema.sql)
        }
        let events = EventLog()
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule(CacheFixtures.host, .followHTTP)], storage: .disk(directory: directory.path),
                clock: clock.cacheClock, onEvent: events.handler))
        func reasons() -> [String] {
            events.all.compactMap { event -> String? in
                if case .diskUnavailable(let reason) = event { return reason }
                return nil
            }
        }
        #expect(reasons().count == 1)
        #expect(reasons().first?.contains("schema") == true)
        #expect(cache.store(path(1), maxAge, body: "stored"))
        #expect(reasons().count == 1, "the write failed: \(reasons())")
        let again = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
        #expect(try again.lookup(path(1)).bodyString == "stored")
    }

    /// A full disk refuses the write: the response is kept in memory, monitors are told, and
    /// nothing half-written is left for the next process.
    @Test func aFullDiskKeepsTheEntryInMemoryAndSaysSo() throws {
        let directory = TemporaryDirectory()
        let events = EventLog()
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule(CacheFixtures.host, .followHTTP)], storage: .disk(directory: directory.path),
                clock: clock.cacheClock, onEvent: events.handler))
        #expect(cache.store(path(1), maxAge, body: "older"))
        let pageCount = try cache.disk.withLock { tier throws(CourierError) in try tier!.pageCount() }
        try cache.disk.withLock { tier throws(CourierError) in
            try tier!.executeForTesting("PRAGMA max_page_count = \(pageCount)")
        }
        let big = String(repeating: "b", count: 200_000)
        let stored = cache.store(path(1), maxAge, body: big)
        #expect(stored)
        let served = try cache.lookup(path(1)).bodyString
        #expect(served?.count == big.count && served == big)
        let reasons = events.all.compactMap { event -> String? in
            if case .diskUnavailable(let reason) = event { return reason }
            return nil
        }
        #expect(reasons.count == 1)
        #expect(reasons.first?.contains("full") == true)
        // Another process sees neither the new body nor the older one it replaced.
        let other = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
        #expect(try other.lookup(path(1)).isMiss)
    }
}

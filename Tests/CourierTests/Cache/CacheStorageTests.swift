import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// The memory and disk tiers: bounds, LRU eviction, persistence and corruption handling.
@Suite struct CacheStorageTests {
    let clock = ManualClock()
    let maxAge = CacheFixtures.response(200, ["Cache-Control": "max-age=3600", "ETag": "\"e\""])

    func path(_ index: Int) -> HTTPRequest { CacheFixtures.request("/item/\(index)") }

    /// A disk cache in `directory` bounded to 45,000 bytes: four 10,000-byte bodies fill it.
    func boundedCache(_ directory: TemporaryDirectory) throws -> HostScopedCache {
        try CacheFixtures.diskCache(clock: clock, directory: directory.path, diskCapacityBytes: 45_000)
    }

    @Test func memoryTierEvictsLeastRecentlyUsedByCount() {
        var tier = MemoryCacheTier(maxBytes: 1 << 20, maxEntries: 3)
        func entry(_ key: String) -> CacheEntry {
            CacheEntry(
                key: key, url: key, identity: "", variant: "", response: HTTPResponse(status: .ok),
                body: Data("x".utf8),
                requestTime: .now, responseTime: .now, forcedLifetime: nil, hasQuery: false)
        }
        for key in ["a", "b", "c"] { tier.set([entry(key)], for: key) }
        #expect(tier.variants(for: "a") != nil)  // a is now most recent
        #expect(tier.set([entry("d")], for: "d") == 1)
        #expect(tier.variants(for: "b") == nil)
        #expect(tier.keysByRecency == ["d", "a", "c"])
        tier.remove("a")
        #expect(tier.keysByRecency == ["d", "c"])
        #expect(tier.count == 2)
    }

    @Test func memoryTierEvictsByBytes() {
        var tier = MemoryCacheTier(maxBytes: 3_000, maxEntries: 100)
        func entry(_ key: String) -> CacheEntry {
            CacheEntry(
                key: key, url: key, identity: "", variant: "", response: HTTPResponse(status: .ok),
                body: Data(repeating: 1, count: 1_000), requestTime: .now, responseTime: .now, forcedLifetime: nil,
                hasQuery: false)
        }
        for key in ["a", "b", "c", "d"] { tier.set([entry(key)], for: key) }
        #expect(tier.totalCost <= 3_000)
        #expect(tier.keysByRecency.first == "d")
        #expect(!tier.contains("a"))
        // An entry larger than the whole tier is not kept.
        tier.set(
            [
                CacheEntry(
                    key: "huge", url: "huge", identity: "", variant: "", response: HTTPResponse(status: .ok),
                    body: Data(count: 5_000), requestTime: .now, responseTime: .now, forcedLifetime: nil,
                    hasQuery: false)
            ], for: "huge")
        #expect(!tier.contains("huge"))
        #expect(tier.contains("d"))
    }

    @Test func memoryOnlyCacheEvictsAndCounts() throws {
        let events = EventLog()
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule(CacheFixtures.host, .followHTTP)], storage: .memoryOnly, memoryCapacityEntries: 2,
                clock: clock.cacheClock, onEvent: events.handler))
        for index in 0..<3 { cache.store(path(index), maxAge) }
        #expect(try cache.lookup(path(0)).isMiss)
        #expect(try cache.lookup(path(2)).isFresh)
        #expect(cache.statistics.evictions == 1)
        #expect(
            events.all.filter { if case .evicted = $0 { true } else { false } } == [.evicted(count: 1, fromDisk: false)]
        )
    }

    @Test func diskEvictionsAreCountedAndReported() throws {
        let directory = TemporaryDirectory()
        let events = EventLog()
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule(CacheFixtures.host, .followHTTP)], storage: .disk(directory: directory.path),
                diskCapacityBytes: 25_000, clock: clock.cacheClock, onEvent: events.handler))
        let body = String(repeating: "x", count: 10_000)
        for index in 0..<3 { #expect(cache.store(path(index), maxAge, body: body)) }
        #expect(events.all.contains(.evicted(count: 1, fromDisk: true)))
        #expect(cache.statistics.evictions == 1)
        // Evicted from disk means gone from memory too.
        #expect(try cache.lookup(path(0)).isMiss)
        #expect(try cache.lookup(path(2)).bodyString == body)
    }

    @Test func entriesSurviveARestart() throws {
        let directory = TemporaryDirectory()
        do {
            let cache = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
            #expect(cache.store(path(1), maxAge, body: "persisted body"))
            cache.store(
                CacheFixtures.request("/v", headers: CacheFixtures.headers(["Accept": "a"])),
                CacheFixtures.response(200, ["Cache-Control": "max-age=60", "Vary": "Accept"]), body: "variant a")
        }
        clock.advance(10)
        let reopened = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
        let result = try reopened.lookup(path(1))
        #expect(result.isFresh)
        #expect(result.bodyString == "persisted body")
        #expect(result.cached?.response.headerFields[.eTag] == "\"e\"")
        #expect(result.cached?.response.headerFields[CacheFieldName.age] == "10")
        #expect(
            try reopened.lookup(CacheFixtures.request("/v", headers: CacheFixtures.headers(["Accept": "a"]))).bodyString
                == "variant a")
        #expect(
            try reopened.lookup(CacheFixtures.request("/v", headers: CacheFixtures.headers(["Accept": "b"]))).isMiss)
        clock.advance(3600)
        #expect(try reopened.lookup(path(1)).isStale)
    }

    @Test func diskTierIsBoundedWithLRUEviction() throws {
        let directory = TemporaryDirectory()
        let body = String(repeating: "x", count: 10_000)
        do {
            let cache = try boundedCache(directory)
            for index in 0..<4 { #expect(cache.store(path(index), maxAge, body: body)) }
            // A memory hit on 0 makes it recent on disk too (written with the next store).
            #expect(try cache.lookup(path(0)).isFresh)
            cache.store(path(4), maxAge, body: body)
            cache.store(path(5), maxAge, body: body)
            #expect(cache.statistics.evictions >= 2)
            let total = cache.disk.withLock { $0!.totalBytes }
            #expect(total <= 45_000)
        }
        let reopened = try boundedCache(directory)
        #expect(try reopened.lookup(path(0)).bodyString == body)
        #expect(try reopened.lookup(path(1)).isMiss)
        #expect(try reopened.lookup(path(2)).isMiss)
        #expect(try reopened.lookup(path(5)).bodyString == body)
        #expect(reopened.disk.withLock { $0!.totalBytes } <= 45_000)
    }

    /// An entry larger than the whole disk tier is not written there: before, storing it
    /// evicted every other entry (least recently used first), then itself.
    @Test func anEntryLargerThanTheDiskBoundLeavesTheOthersOnDisk() throws {
        let directory = TemporaryDirectory()
        let body = String(repeating: "x", count: 10_000)
        do {
            let cache = try boundedCache(directory)
            for index in 0..<3 { #expect(cache.store(path(index), maxAge, body: body)) }
            cache.store(path(9), maxAge, body: String(repeating: "y", count: 50_000))
            #expect(cache.disk.withLock { $0!.totalBytes } <= 45_000)
        }
        let reopened = try boundedCache(directory)
        for index in 0..<3 { #expect(try reopened.lookup(path(index)).bodyString == body) }
        #expect(try reopened.lookup(path(9)).isMiss)
    }

    /// Two caches on one folder (two clients of a process, or two processes) keep its byte
    /// bound together: each counted only the rows it wrote itself, so the folder grew to the
    /// bound times the number of caches.
    @Test func twoCachesOnOneFolderKeepItsBound() throws {
        let directory = TemporaryDirectory()
        let body = String(repeating: "x", count: 10_000)
        do {
            let first = try boundedCache(directory)
            let second = try boundedCache(directory)
            for index in 0..<4 { #expect(first.store(path(index), maxAge, body: body)) }
            for index in 4..<8 { #expect(second.store(path(index), maxAge, body: body)) }
            #expect(second.disk.withLock { $0!.totalBytes } <= 45_000)
        }
        let reopened = try boundedCache(directory)
        #expect(reopened.disk.withLock { $0!.totalBytes } <= 45_000)
        #expect(try reopened.lookup(path(7)).bodyString == body)
        #expect(try reopened.lookup(path(0)).isMiss)
    }

    @Test(arguments: ["body = X'00'", "head = X'0102'", "request_time = request_time + 1", "checksum = checksum + 1"])
    func aMangledRowIsAMissAndIsDeleted(mangle: String) throws {
        let directory = TemporaryDirectory()
        do {
            let cache = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
            cache.store(path(1), maxAge, body: "good")
            cache.store(path(2), maxAge, body: "other")
            try cache.disk.withLock { tier throws(CourierError) in
                try tier!.executeForTesting("UPDATE entries SET \(mangle) WHERE url LIKE '%/item/1'")
            }
        }
        let reopened = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
        #expect(try reopened.lookup(path(1)).isMiss)
        #expect(try reopened.lookup(path(2)).bodyString == "other")
        #expect(reopened.statistics.corruptEntriesDropped == 1)
        #expect(try reopened.disk.withLock { tier throws(CourierError) in try tier!.rowCount() } == 1)
    }

    @Test func aDatabaseFileThatIsNotSQLiteIsRecreated() throws {
        let directory = TemporaryDirectory()
        try Data(repeating: 0x5a, count: 8192).write(to: URL(fileURLWithPath: directory.path + "/cache.sqlite3"))
        let cache = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
        #expect(cache.store(path(1), maxAge, body: "fresh start"))
        #expect(try cache.lookup(path(1)).bodyString == "fresh start")
    }

    /// Switching a database to WAL takes a RESERVED lock, which SQLite tries once, without its
    /// busy handler: while another connection holds RESERVED (as a second opener of a new folder
    /// does while it switches the same database to WAL) the open is refused at once. Seen in the
    /// parallel suite; about 1 open in 500 with 8 at once. Opening waits for the lock instead.
    @Test func openingWaitsForAnotherOpenersLock() throws {
        let directory = TemporaryDirectory()
        let other = try SQLiteConnection(path: directory.path + "/cache.sqlite3")
        try other.execute("PRAGMA journal_mode=DELETE; CREATE TABLE unrelated(x); BEGIN IMMEDIATE;")
        var retries = 0
        let tier = try DiskCacheTier(directory: directory.path, maxBytes: 1 << 20) {
            retries += 1
            if retries == 1 { try? other.execute("COMMIT") }
        }
        #expect(retries == 1)
        #expect(try tier.integrityCheck() == "ok")
        let cache = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
        #expect(cache.store(path(1), maxAge, body: "after the wait"))
        #expect(try cache.lookup(path(1)).bodyString == "after the wait")
    }

    /// A lock that is never released ends the open with a clear error, not a hang.
    @Test func aLockHeldPastTheWaitIsAConfigurationError() throws {
        let directory = TemporaryDirectory()
        let other = try SQLiteConnection(path: directory.path + "/cache.sqlite3")
        try other.execute("PRAGMA journal_mode=DELETE; CREATE TABLE unrelated(x); BEGIN IMMEDIATE;")
        var retries = 0
        let error = #expect(throws: CourierError.self) {
            _ = try DiskCacheTier(directory: directory.path, maxBytes: 1 << 20, busyWait: .milliseconds(30)) {
                retries += 1
            }
        }
        #expect(error?.code == .configuration)
        #expect(error?.message.contains("locked by another connection") == true)
        #expect(retries >= 1)
        try other.execute("COMMIT")
    }

    @Test func aMemoryHitDoesNotReadTheDisk() throws {
        let directory = TemporaryDirectory()
        let cache = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
        cache.store(path(1), maxAge, body: "in memory")
        // Remove the row behind the cache's back: only a memory hit can still answer.
        try cache.disk.withLock { tier throws(CourierError) in try tier!.executeForTesting("DELETE FROM entries") }
        #expect(try cache.lookup(path(1)).bodyString == "in memory")
    }

    @Test func removeAllEmptiesBothTiers() throws {
        let directory = TemporaryDirectory()
        let cache = try CacheFixtures.diskCache(clock: clock, directory: directory.path)
        cache.store(path(1), maxAge)
        cache.removeAll()
        #expect(try cache.lookup(path(1)).isMiss)
        #expect(try CacheFixtures.diskCache(clock: clock, directory: directory.path).lookup(path(1)).isMiss)
    }

    @Test func defaultDirectoryFollowsXDG() {
        #expect(
            HostScopedCache.Configuration.defaultDirectory(environment: [
                "XDG_CACHE_HOME": "/x/cache", "HOME": "/home/u",
            ])
                == "/x/cache/courier")
        #expect(
            HostScopedCache.Configuration.defaultDirectory(environment: ["HOME": "/home/u"]) == "/home/u/.cache/courier"
        )
        #expect(
            HostScopedCache.Configuration.defaultDirectory(environment: [
                "XDG_CACHE_HOME": "relative", "HOME": "/home/u",
            ])
                == "/home/u/.cache/courier")
    }

    @Test func anUnusableFolderIsAConfigurationError() throws {
        let directory = TemporaryDirectory()
        let file = directory.path + "/file"
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        let error = #expect(throws: CourierError.self) {
            try CacheFixtures.diskCache(clock: clock, directory: file + "/sub")
        }
        #expect(error?.code == .configuration)
    }
}

/// The keyed credential digests (HMAC-SHA256, RFC 4231 vectors) and the xxHash64 row checksum.
@Suite struct CacheHashTests {
    @Test(arguments: [
        (
            [UInt8](repeating: 0x0b, count: 20), "Hi There",
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        ),
        (
            Array("Jefe".utf8), "what do ya want for nothing?",
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ),
        (
            [UInt8](repeating: 0xaa, count: 131), "Test Using Larger Than Block-Size Key - Hash Key First",
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        ),
        (
            [UInt8](repeating: 0xaa, count: 131),
            "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.",
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
        ),
    ])
    func hmacKnownVectors(key: [UInt8], input: String, expected: String) {
        #expect(CacheSecret(bytes: key).hex(input) == expected)
    }

    @Test func storedIdentitiesAreKeyedPerCache() throws {
        let clock = ManualClock()
        let first = try CacheFixtures.memoryCache(clock: clock)
        let second = try CacheFixtures.memoryCache(clock: clock)
        let identity = CacheIdentity(credentialsIn: [.authorization: "Bearer short"])
        // One cache always gives one credential the same stored digest; another cache's
        // random key gives it another, so digests cannot be compared or tested across caches.
        #expect(first.stored(identity) == first.stored(identity))
        #expect(first.stored(identity) != second.stored(identity))
        #expect(first.stored(identity).digest.hasPrefix("a:"))
        #expect(first.stored(CacheIdentity(credentialsIn: [:])).isAnonymous)
    }

    @Test func storedDigestIsNotThePlainHashOfTheCredential() throws {
        let cache = try CacheFixtures.memoryCache(clock: ManualClock())
        let identity = CacheIdentity(credentialsIn: [.authorization: "Bearer short"])
        let stored = cache.stored(identity).digest
        // Neither the in-memory one-way digest nor any plain SHA-256 of the value is stored.
        #expect(!identity.components.contains { stored.contains($0.dropFirst(2)) })
        // SHA-256("Bearer short"):
        #expect(!stored.contains("eafeb4eab387a22d9b18911e456b6a657b386da27b27616825819f6585e77b5f"))
        #expect(stored.utf8.count == 2 + 64)
    }

    @Test func xxh64() {
        #expect(CacheChecksum.xxh64(Data()) == 0xEF46_DB37_51D8_E999)
        var data = Data((0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let original = CacheChecksum.xxh64(data)
        #expect(CacheChecksum.xxh64(data) == original)
        for position in [0, 31, 32, 500, 996, 999] {
            data[position] ^= 1
            #expect(CacheChecksum.xxh64(data) != original)
            data[position] ^= 1
        }
        #expect(CacheChecksum.xxh64(data, seed: 1) != original)
    }

    @Test func headCodecRoundTripsAndRejectsGarbage() {
        var fields = HTTPFields()
        fields.append(HTTPField(name: .contentType, value: "text/plain; charset=utf-8"))
        fields.append(HTTPField(name: HTTPField.Name("X-Multi")!, value: "1"))
        fields.append(HTTPField(name: HTTPField.Name("X-Multi")!, value: "2"))
        let response = HTTPResponse(status: .init(code: 203, reasonPhrase: "Non-Authoritative"), headerFields: fields)
        let decoded = CacheHeadCodec.decode(CacheHeadCodec.encode(response))
        #expect(decoded == response)
        #expect(decoded?.status.reasonPhrase == "Non-Authoritative")
        let encoded = CacheHeadCodec.encode(response)
        #expect(CacheHeadCodec.decode(encoded.dropLast()) == nil)
        #expect(CacheHeadCodec.decode(Data([1, 0xff, 0xff])) == nil)
        #expect(CacheHeadCodec.decode(Data()) == nil)
    }
}

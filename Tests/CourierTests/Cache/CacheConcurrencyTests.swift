import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Many tasks storing, looking up, invalidating and purging at once on one disk-backed cache.
@Suite struct CacheConcurrencyTests {
    @Test func concurrentUseKeepsEntriesWhole() async throws {
        let clock = ManualClock()
        let directory = TemporaryDirectory()
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule(CacheFixtures.host, .followHTTP)], storage: .disk(directory: directory.path),
                memoryCapacityEntries: 16, diskCapacityBytes: 400_000, clock: clock.cacheClock))
        let response = CacheFixtures.response(200, ["Cache-Control": "max-age=600"])
        func body(_ key: Int) -> String { String(repeating: "\(key)-", count: 200 + key * 10) }
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var bad = 0
                    for step in 0..<150 {
                        let key = (worker * 31 + step * 7) % 40
                        let request = CacheFixtures.request("/k/\(key)")
                        switch step % 5 {
                        case 0, 1: cache.store(request, response, body: body(key))
                        case 4 where step % 15 == 4: cache.invalidate(url: "https://api.example.com/k/\(key)")
                        default:
                            if let served = try cache.lookup(request).bodyString, served != body(key) { bad += 1 }
                        }
                    }
                    return bad
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        #expect(cache.disk.withLock { $0!.totalBytes } <= 400_000)
        #expect(try cache.disk.withLock { tier throws(CourierError) in try tier!.integrityCheck() } == "ok")
        let stats = cache.statistics
        #expect(stats.stores > 0)
        #expect(stats.hits > 0)
        #expect(stats.evictions > 0)
    }
}

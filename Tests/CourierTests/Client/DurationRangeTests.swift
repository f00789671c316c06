import CourierTesting
import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// A `Duration` holds about ±1.7 × 10²⁰ seconds, but its `components` trap past `Int64.max`
/// seconds: `.seconds(Int64.max) * 4` (or `.seconds(1e20)`) is a value a caller can pass, and
/// it must be clamped like `.seconds(Int64.max)`. On the old code each case below trapped the
/// process: the retry back-off read its base and maximum delays, and the cache its per-call and
/// host-rule lifetimes, through `components`. The values are made inside the test, not passed
/// as arguments (the test library describes arguments).
@Suite struct DurationRangeTests {
    static let huge = Duration.seconds(Int64.max) * 4

    enum Case: String, CaseIterable, Sendable {
        case retryBackOff, callCacheLifetime, forcedLifetime, negativeForcedLifetime
    }

    @Test(arguments: Case.allCases)
    func aDurationPastInt64SecondsIsClamped(_ value: Case) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let echo = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/echo")
        func cachingClient(_ policy: CacheRule.Policy) throws -> HTTPClient {
            let cache = try HostScopedCache(
                configuration: .init(rules: [CacheRule("127.0.0.1", policy)], storage: .memoryOnly))
            return try HTTPClient(configuration: .init(baseURL: server.baseURL, cache: cache))
        }
        switch value {
        case .retryBackOff:
            let policy = RetryPolicy(baseDelay: Self.huge, maximumDelay: Self.huge, jitter: 0, random: { 0 })
            #expect(policy.delay(forRetry: 1) == ConfigurationBounds.maximumWait)
            let capped = RetryPolicy(baseDelay: .seconds(1), maximumDelay: Self.huge, jitter: 0, random: { 0 })
            #expect(capped.delay(forRetry: 3) == .seconds(4))
        case .callCacheLifetime:
            let service = ServiceCore(client: try cachingClient(.followHTTP), configuration: ServiceConfiguration())
            for _ in 0..<2 {
                let _: Echo = try await service.get("anything", options: .default.with(\.cacheLifetime, Self.huge))
            }
            #expect(server.count("/anything") == 1)
        case .forcedLifetime:
            let client = try cachingClient(.forceLifetime(Self.huge))
            #expect(try await client.send(echo).isFromCache == false)
            #expect(try await client.send(echo).isFromCache)
            #expect(server.count("/echo") == 1)
        case .negativeForcedLifetime:
            // Already stale: stored, never served without asking the server.
            let client = try cachingClient(.forceLifetime(.seconds(Int64.min) * 4))
            for _ in 0..<2 { #expect(try await client.send(echo).isFromCache == false) }
            #expect(server.count("/echo") == 2)
        }
    }
}

import CourierTesting
import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// A revalidation the server redirects: the cache's validators belong to the first URL, so a
/// 304 from the redirect's target says nothing about the stored entry.
@Suite struct CacheRedirectRevalidationTests {
    /// The API stores an entry that is always revalidated, then redirects its revalidation to
    /// another origin, which answers every conditional request 304 with a year of freshness.
    /// The old code merged that 304 into the API's entry: the call got the stored body as if
    /// the API had confirmed it, and the other origin made the entry fresh for a year.
    @Test func a304FromARedirectTargetIsNotMergedIntoTheFirstURLsEntry() async throws {
        let api = try TestServer()
        defer { api.stop() }
        let other = try TestServer()
        defer { other.stop() }
        let served = LockedValue(0)
        let moved = other.url("/moved").absoluteString
        api.route("/doc") { _ in
            let count = served.withLock { count in
                count += 1
                return count
            }
            guard count == 1 else { return .redirect(to: moved) }
            return ScriptedResponse.text("stored body").with(.eTag, "\"v1\"").with(.cacheControl, "no-cache")
        }
        other.route("/moved") { request in
            guard request.header("If-None-Match") == nil else {
                return ScriptedResponse.status(304).with(.cacheControl, "max-age=31536000")
            }
            return ScriptedResponse.text("moved body").with(.cacheControl, "no-store")
        }
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let client = try HTTPClient(configuration: .init(baseURL: api.baseURL, cache: cache))
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/doc")

        let first = try await client.send(request)
        #expect(first.body == Data("stored body".utf8))
        let second = try await client.send(request)
        #expect(second.redirectCount == 1)
        #expect(!second.isFromCache, "the stored body was served on another origin's 304")
        #expect(second.status == .ok)
        #expect(second.body == Data("moved body".utf8))
        // The entry is still one to revalidate at the API, not fresh for a year.
        let before = served.withLock { $0 }
        _ = try await client.send(request)
        #expect(served.withLock { $0 } > before, "the third call was answered from the cache")
    }
}

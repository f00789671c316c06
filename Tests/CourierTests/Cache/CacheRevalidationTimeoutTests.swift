import CourierTesting
import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// The request's timeout covers everything the cache sends for one call.
@Suite struct CacheRevalidationTimeoutTests {
    /// A revalidation answered by a slow 304 that names another representation, then a slow
    /// answer to the unconditional request the cache sends next: each took most of the 2 s
    /// timeout, and together more. The old code gave each send the whole timeout, so the call
    /// succeeded after about 3 s.
    @Test func theTimeoutCoversTheUnconditionalRequestAfterA304() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let served = LockedValue(0)
        server.route("/doc") { _ in
            let count = served.withLock { count in
                count += 1
                return count
            }
            switch count {
            case 1:
                return ScriptedResponse.text("first").with(.eTag, "\"v1\"").with(.cacheControl, "no-cache")
            case 2:
                var notModified = ScriptedResponse.status(304).with(.eTag, "\"v2\"")
                notModified.delay = .milliseconds(1500)
                return notModified
            default:
                var late = ScriptedResponse.text("late").with(.eTag, "\"v2\"")
                late.delay = .milliseconds(1500)
                return late
            }
        }
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let client = try HTTPClient(configuration: .init(baseURL: server.baseURL, timeout: .seconds(2), cache: cache))
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/doc")
        _ = try await client.send(request)
        let error = await courierError { _ = try await client.send(request) }
        #expect(error?.code == .timedOut, "got \(String(describing: error))")
    }
}

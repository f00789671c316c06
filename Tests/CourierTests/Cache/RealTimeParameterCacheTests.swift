import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// A service's real-time parameters (a timestamp added to each attempt) are sent but left out
/// of the cache's key (issue 17 item 1), against a loopback server.
@Suite struct RealTimeParameterCacheTests {
    /// A service on `server` whose client caches 127.0.0.1 and whose calls carry `ts`, a new
    /// value on every attempt.
    private static func service(_ server: TestServer) throws -> ServiceCore {
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let client = try HTTPClient(
            configuration: HTTPClient.Configuration(
                baseURL: server.baseURL, notificationCenter: NotificationCenter(), cache: cache))
        let ticks = ServiceCounter()
        var configuration = ServiceConfiguration(
            retryPolicy: .none, callbackQueue: DispatchQueue(label: "test.real-time-cache"))
        configuration.realTimeParameters = { [("ts", "\(ticks.increment())")] }
        return ServiceCore(client: client, configuration: configuration)
    }

    private static func cacheable(_ server: TestServer, _ path: String) {
        server.route(path) { request in
            ScriptedResponse.json(["id": 1, "name": request.queryValue("q") ?? "none"])
                .with(.cacheControl, "max-age=86400")  // fresh however slow the run
        }
    }

    @Test func aGetWithATimestampIsServedFromTheCache() async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.cacheable(server, "/feed")
        let service = try Self.service(server)
        let first = try await service.send(Endpoint<ServiceUser>.get("feed"))
        let second = try await service.send(Endpoint<ServiceUser>.get("feed"))
        #expect(!first.isFromCache)
        #expect(second.isFromCache)
        #expect(second.value.id == 1)
        #expect(server.count("/feed") == 1)
        // The request on the wire carried the timestamp.
        #expect(server.recordedRequests.map { $0.queryValue("ts") } == ["1"])
    }

    @Test func aTimestampMergesNeitherEndpointsNorOtherQueryValues() async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.cacheable(server, "/feed")
        Self.cacheable(server, "/other")
        let service = try Self.service(server)
        let a = try await service.send(Endpoint<ServiceUser>.get("feed", parameters: ["q": "a"]))
        let b = try await service.send(Endpoint<ServiceUser>.get("feed", parameters: ["q": "b"]))
        let other = try await service.send(Endpoint<ServiceUser>.get("other", parameters: ["q": "a"]))
        let again = try await service.send(Endpoint<ServiceUser>.get("feed", parameters: ["q": "a"]))
        #expect([a.isFromCache, b.isFromCache, other.isFromCache] == [false, false, false])
        #expect(b.value.name == "b")
        #expect(again.isFromCache)
        #expect(again.value.name == "a")
        #expect(server.count("/feed") == 2)
        #expect(server.count("/other") == 1)
    }

    @Test func removingQueryItemsDropsOnlyTheNamedOnes() {
        let names: Set<String> = ["ts", "nonce"]
        #expect(CacheRequest.removingQueryItems(named: names, from: "http://h/a?ts=1") == "http://h/a")
        #expect(
            CacheRequest.removingQueryItems(named: names, from: "http://h/a?q=1&ts=2&n%6Fnce=3") == "http://h/a?q=1")
        #expect(CacheRequest.removingQueryItems(named: names, from: "http://h/a?tsx=1&q") == "http://h/a?tsx=1&q")
        #expect(CacheRequest.removingQueryItems(named: [], from: "http://h/a?ts=1") == "http://h/a?ts=1")
    }
}

import Foundation
import HTTPTypes

@_spi(Fuzzing) @testable import Courier

/// A clock tests move by hand, so freshness is tested without sleeping.
final class ManualClock: Sendable {
    private let current: LockedValue<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) { current = LockedValue(start) }

    var now: Date { current.withLock { $0 } }

    func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }

    var cacheClock: CacheClock { CacheClock(now: { self.now }) }
}

/// Collects cache events for assertions.
final class EventLog: Sendable {
    private let events = LockedValue<[CacheEvent]>([])

    var handler: @Sendable (CacheEvent) -> Void { { event in self.events.withLock { $0.append(event) } } }

    var all: [CacheEvent] { events.withLock { $0 } }
}

/// A temporary folder removed when the test is done with it.
final class TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "courier-cache-tests-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

enum CacheFixtures {
    static let host = "api.example.com"

    static func request(
        _ path: String = "/items", host: String = CacheFixtures.host, method: HTTPRequest.Method = .get,
        headers: HTTPFields = [:]
    ) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "https", authority: host, path: path, headerFields: headers)
    }

    static func response(_ status: Int = 200, _ headers: [String: String] = [:]) -> HTTPResponse {
        var fields = HTTPFields()
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            fields.append(HTTPField(name: HTTPField.Name(name)!, value: value))
        }
        return HTTPResponse(status: .init(code: status), headerFields: fields)
    }

    static func headers(_ pairs: [String: String]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs.sorted(by: { $0.key < $1.key }) {
            fields.append(HTTPField(name: HTTPField.Name(name)!, value: value))
        }
        return fields
    }

    static func memoryCache(
        clock: ManualClock, rules: [CacheRule] = [CacheRule(CacheFixtures.host, .followHTTP)],
        defaultPolicy: CacheRule.Policy = .never, staleIfError: Bool = false, events: EventLog? = nil
    ) throws -> HostScopedCache {
        try HostScopedCache(
            configuration: .init(
                rules: rules, defaultPolicy: defaultPolicy, storage: .memoryOnly, staleIfError: staleIfError,
                clock: clock.cacheClock, onEvent: events?.handler))
    }

    static func diskCache(
        clock: ManualClock, directory: String, diskCapacityBytes: Int = 64 << 20, memoryCapacityEntries: Int = 1_000,
        rules: [CacheRule] = [CacheRule(CacheFixtures.host, .followHTTP)]
    ) throws -> HostScopedCache {
        try HostScopedCache(
            configuration: .init(
                rules: rules, storage: .disk(directory: directory), memoryCapacityEntries: memoryCapacityEntries,
                diskCapacityBytes: diskCapacityBytes, clock: clock.cacheClock))
    }
}

extension HostScopedCache {
    /// Stores `response` as if it had just arrived (request and response time = the clock's now).
    @discardableResult
    func store(
        _ request: HTTPRequest, _ response: HTTPResponse, body: String = "body",
        policy: CachePolicy = .useProtocolCachePolicy,
        lifetime: Duration? = nil, whole: Bool = true
    ) -> Bool {
        let now = configuration.clock.now()
        return store(
            CacheRequest(request, policy: policy, lifetime: lifetime), response: response, body: Data(body.utf8),
            receivedWhole: whole, requestTime: now, responseTime: now)
    }

    /// Looks `request` up with the clock's now.
    func lookup(
        _ request: HTTPRequest, policy: CachePolicy = .useProtocolCachePolicy, lifetime: Duration? = nil
    ) throws -> CacheLookupResult {
        try lookup(CacheRequest(request, policy: policy, lifetime: lifetime))
    }
}

extension CacheLookupResult {
    var isFresh: Bool {
        if case .fresh = self { return true }
        return false
    }

    var isStale: Bool {
        if case .stale = self { return true }
        return false
    }

    var isMiss: Bool {
        if case .miss = self { return true }
        return false
    }

    /// The served response, for `.fresh` and `.stale`.
    var cached: CachedResponse? {
        switch self {
        case .fresh(let response): response
        case .stale(let response, _): response
        case .miss: nil
        }
    }

    var bodyString: String? { cached.map { String(decoding: $0.body, as: UTF8.self) } }

    var conditionalHeaders: HTTPFields? {
        if case .stale(_, let headers) = self { return headers }
        return nil
    }
}

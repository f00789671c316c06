import Foundation
import HTTPTypes

extension HostScopedCache {
    /// Decides whether `request` can be answered from the cache.
    /// - Parameters:
    ///   - request: The request head and per-call cache options.
    ///   - now: The current time; nil reads the configured clock.
    /// - Returns: `.fresh` to serve without the network, `.stale` to send a conditional
    ///   request, `.miss` to send the request as is.
    /// - Throws: `CourierError.notCached` when the call allows only cached data
    ///   (`returnCacheDataDontLoad`, or `Cache-Control: only-if-cached`) and none is usable.
    func lookup(_ request: CacheRequest, now: Date? = nil) throws(CourierError) -> CacheLookupResult {
        let now = now ?? configuration.clock.now()
        let requestControl = CacheControl(request.request.headerFields)
        let cacheOnly = request.isCacheOnly(requestControl)
        guard let plan = plan(for: request) else {
            if cacheOnly { throw notCached(request) }
            return .miss
        }
        let url = storedURL(of: request)
        if request.policy == .reloadIgnoringCache
            || (request.policy == .useProtocolCachePolicy && requestControl.noCache && !cacheOnly)
        {
            recordMiss(url)
            // `only-if-cached` with `.reloadIgnoringCache`: no stored answer is wanted, and the
            // network is not allowed.
            if cacheOnly { throw notCached(request) }
            return .miss
        }
        let key = Self.key(identity: identity(of: request), url: url)
        let candidates = variants(for: key).filter {
            $0.variant == variant(names: $0.varyNames, request: request)
        }
        guard let entry = candidates.max(by: { $0.responseTime < $1.responseTime }) else {
            recordMiss(url)
            if cacheOnly { throw notCached(request) }
            return .miss
        }
        let lifetime = entry.freshnessLifetime(override: plan.forcedLifetime)
        let age = entry.currentAge(now: now)
        let isFresh = lifetime > age

        switch request.policy {
        case .returnCacheDataElseLoad, .returnCacheDataDontLoad:
            return recordHit(entry.served(now: now, isStale: !isFresh))
        case .reloadRevalidatingCache:
            // It wants the server's word, which `only-if-cached` does not allow.
            if cacheOnly { throw notCached(request) }
            return recordRevalidation(entry.served(now: now, isStale: !isFresh), entry.conditionalHeaders)
        case .useProtocolCachePolicy, .reloadIgnoringCache:
            break
        }

        var acceptable = true
        if let maxAge = requestControl.maxAge, age > TimeInterval(maxAge) { acceptable = false }
        if acceptable, isFresh {
            if let minFresh = requestControl.minFresh, lifetime - age < TimeInterval(minFresh) {
                acceptable = false
            } else {
                return recordHit(entry.served(now: now, isStale: false))
            }
        }
        if acceptable, !isFresh, !entry.requiresRevalidation {
            let staleness = age - lifetime
            if requestControl.maxStaleUnbounded
                || requestControl.maxStale.map({ staleness <= TimeInterval($0) }) == true
            {
                return recordHit(entry.served(now: now, isStale: true))
            }
        }
        if cacheOnly { throw notCached(request) }
        return recordRevalidation(entry.served(now: now, isStale: !isFresh), entry.conditionalHeaders)
    }

    /// The stored response to serve instead of a failure, when stale-if-error applies.
    ///
    /// Applies when the call or the configuration opted in, the failure is a transport error
    /// (`status` nil) or a 5xx, and the entry does not forbid serving it stale: `must-revalidate`
    /// and `no-cache` do (RFC 9111 §4.2.4), unless a host rule or the call forced a lifetime.
    /// - Parameters:
    ///   - request: The call's cache request.
    ///   - cached: The entry a `.stale` lookup returned.
    ///   - status: The failing response's status, or nil when the network failed.
    /// - Returns: The entry marked stale, or nil when the failure must surface.
    func staleFallback(_ request: CacheRequest, cached: CachedResponse, status: HTTPResponse.Status?)
        -> CachedResponse?
    {
        guard request.staleIfError ?? configuration.staleIfError else { return nil }
        if let status, status.kind != .serverError { return nil }
        guard !cached.entry.requiresRevalidation else { return nil }
        var response = cached
        response.isStale = true
        let url = cached.entry.url
        memory.withLock { $0.statistics.staleServedOnError += 1 }
        emit([.staleServedOnError(url: url)])
        return response
    }

    private func notCached(_ request: CacheRequest) -> CourierError {
        CourierError(.notCached, "no usable cached response for GET \(CacheEvent.redact(request.normalizedURL))")
    }

    private func recordMiss(_ url: String) {
        memory.withLock { $0.statistics.misses += 1 }
        emit([.miss(url: url)])
    }

    private func recordHit(_ response: CachedResponse) -> CacheLookupResult {
        memory.withLock { $0.statistics.hits += 1 }
        emit([.hit(url: response.entry.url, stale: response.isStale)])
        return .fresh(response)
    }

    private func recordRevalidation(_ response: CachedResponse, _ headers: HTTPFields) -> CacheLookupResult {
        memory.withLock { $0.statistics.revalidations += 1 }
        emit([.revalidate(url: response.entry.url)])
        return .stale(response, conditionalHeaders: headers)
    }
}

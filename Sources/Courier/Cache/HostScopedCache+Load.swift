import Foundation
import HTTPTypes

/// A response as a transport delivered it, for `HostScopedCache.load(_:send:)`.
struct CacheTransportResponse: Sendable {
    /// The response head.
    var response: HTTPResponse
    /// The body as received.
    var body: Data
    /// False when the transfer ended early (the body is then never stored).
    var receivedWhole: Bool
    /// False when the response must not be stored under the request's URL, e.g. because it
    /// answered a redirect target rather than the URL asked for.
    var mayStore: Bool
    /// When the request was sent; nil: `load` reads the cache's clock before calling `send`.
    var requestTime: Date?
    /// When the response head arrived; nil: `load` reads the cache's clock after `send` returns.
    var responseTime: Date?
    /// The URL that answered when redirects were followed to it (nil otherwise): an unsafe
    /// request invalidates it too, as the `Location` of the redirect the cache never saw.
    var redirectedURL: String?

    /// Creates a transport response.
    init(
        response: HTTPResponse, body: Data, receivedWhole: Bool = true, mayStore: Bool = true,
        requestTime: Date? = nil, responseTime: Date? = nil, redirectedURL: String? = nil
    ) {
        self.response = response
        self.body = body
        self.receivedWhole = receivedWhole
        self.mayStore = mayStore
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.redirectedURL = redirectedURL
    }
}

/// The outcome of `HostScopedCache.load(_:send:)`.
struct CacheLoadResult: Sendable {
    /// How the response was obtained.
    enum Source: Sendable, Hashable {
        /// From the network (and offered to the cache).
        case network
        /// From the cache, without touching the network.
        case cache
        /// From the cache after the server answered 304 Not Modified.
        case revalidated
        /// From the cache, stale, because the network failed or answered 5xx.
        case staleOnError
    }

    /// The response head (for cached responses, with `Age`).
    var response: HTTPResponse
    /// The body.
    var body: Data
    /// How it was obtained.
    var source: Source
    /// True when the body came from the cache (`.cache`, `.revalidated`, `.staleOnError`).
    var isFromCache: Bool { source != .network }
    /// True when a cached response was served past its freshness.
    var isStale: Bool
    /// For cached responses, the URL the entry was stored for.
    var url: URL? = nil
    /// For `.staleOnError`, how the network failed (a server pool's outcome).
    var failure: ServerOutcome? = nil
}

extension HostScopedCache {
    /// Runs one call through the cache: pipeline steps 6 and 8 around a transport.
    ///
    /// Looks the request up; a fresh hit returns without calling `send`. A request with
    /// conditions of its caller's own is sent as it is. A stale entry is
    /// revalidated with a conditional request and a 304 is merged into it (a 304 that names
    /// another representation, by its ETag or Last-Modified, is followed by an unconditional
    /// request). Other responses are offered to `store`. Unsafe methods invalidate the URL, even
    /// when sending failed. With stale-if-error, a transport failure or a 5xx falls back to the
    /// stale entry (cancellation never does).
    /// - Parameters:
    ///   - request: The request as it will be sent, with the per-call cache options.
    ///   - send: Sends a request (possibly with conditional fields added) on the transport.
    /// - Returns: The response to hand on, and where it came from.
    /// - Throws: `CourierError.notCached` for cache-only calls without a usable entry, or
    ///   whatever `send` throws when no stale fallback applies.
    func load(
        _ request: CacheRequest, send: (HTTPRequest) async throws -> CacheTransportResponse
    ) async throws -> CacheLoadResult {
        let clock = configuration.clock
        guard request.request.method == .get else {
            let result: CacheTransportResponse
            do {
                result = try await timed(send, request.request)
            } catch {
                // The server may have carried out the request before the failure: drop the URL anyway.
                invalidate(
                    after: request.request, response: nil, realTimeQueryNames: request.realTimeQueryNames,
                    secretQueryNames: request.secretQueryNames)
                throw error
            }
            invalidate(
                after: request.request, response: result.response, redirectedTo: result.redirectedURL,
                realTimeQueryNames: request.realTimeQueryNames, secretQueryNames: request.secretQueryNames)
            return CacheLoadResult(response: result.response, body: result.body, source: .network, isStale: false)
        }
        // Conditions of the caller's own (`If-None-Match: "v2"`) ask about the version the
        // caller holds: the stored entry is not the answer, and a 304 answers the caller's
        // validator, not the entry's (merged, it served the entry's older body as confirmed).
        // Sent as it is, as OkHttp does; a whole answer is still offered for storage. Not when
        // the call may be answered from the cache only (`only-if-cached` in its own
        // `Cache-Control` too): it gets a stored answer or `.notCached`, never the server's.
        if request.hasOwnConditions, !request.isCacheOnly(CacheControl(request.request.headerFields)) {
            let result = try await timed(send, request.request)
            await offer(request, result)
            return CacheLoadResult(response: result.response, body: result.body, source: .network, isStale: false)
        }
        let shared = configuration.sharedTier
        // Fleet mode: the shared tier's copy into memory first (or this process fetches it).
        let claim = if let shared { await prepareShared(request, shared) } else { (key: String, token: String)?.none }
        defer { if let claim { shared?.releaseFill(key: claim.key, token: claim.token) } }
        switch try lookup(request) {
        case .fresh(let cached):
            return CacheLoadResult(
                response: cached.response, body: cached.body, source: .cache, isStale: cached.isStale)
        case .miss:
            let result = try await timed(send, request.request)
            await offer(request, result)
            return CacheLoadResult(response: result.response, body: result.body, source: .network, isStale: false)
        case .stale(let cached, let conditionalHeaders):
            var conditional = request.request
            for field in conditionalHeaders where !conditional.headerFields.contains(field.name) {
                conditional.headerFields.append(field)
            }
            var result: CacheTransportResponse
            do {
                result = try await timed(send, conditional)
                // A 304 from a redirect's target (`mayStore` false) answers validators that name
                // the first URL's entry to another resource, maybe on another origin: merged, it
                // served the stored body as confirmed and let that target set its freshness.
                if result.response.status.code == 304 {
                    if result.mayStore,
                        let merged = merge304(
                            request, cached: cached, notModified: result.response,
                            requestTime: result.requestTime ?? clock.now(),
                            responseTime: result.responseTime ?? clock.now())
                    {
                        if let shared, merged.entry.key == sharedKey(request), isStored(merged.entry) {
                            await pushShared(merged.entry, request: request, shared)
                        }
                        return CacheLoadResult(
                            response: merged.response, body: merged.body, source: .revalidated, isStale: false)
                    }
                    // The 304 names another representation than the stored one, or came from a
                    // redirect's target: the stored body is not the answer, so ask again without
                    // validators.
                    result = try await timed(send, request.request)
                }
            } catch {
                if Self.isNetworkFailure(error), let stale = staleFallback(request, cached: cached, status: nil) {
                    let refused = (error as? CourierError)?.isConnectionFailure == true
                    return CacheLoadResult(
                        response: stale.response, body: stale.body, source: .staleOnError, isStale: true,
                        failure: refused ? .connectionFailure : .failure)
                }
                throw error
            }
            if result.response.status.kind == .serverError,
                let stale = staleFallback(request, cached: cached, status: result.response.status)
            {
                return CacheLoadResult(
                    response: stale.response, body: stale.body, source: .staleOnError, isStale: true, url: stale.url,
                    failure: .failure)
            }
            await offer(request, result)
            return CacheLoadResult(response: result.response, body: result.body, source: .network, isStale: false)
        }
    }

    /// Whether `error` is the network failing (stale-if-error applies), not the caller
    /// cancelling or the request being refused before it was sent.
    static func isNetworkFailure(_ error: any Error) -> Bool {
        if error is CancellationError { return false }
        if let error = error as? CourierError {
            return ![.cancelled, .invalidRequest, .configuration, .skipped, .throttled].contains(error.code)
        }
        return true
    }

    /// Calls `send`, filling in the times it left out from the cache's clock.
    private func timed(
        _ send: (HTTPRequest) async throws -> CacheTransportResponse, _ request: HTTPRequest
    ) async throws -> CacheTransportResponse {
        let sentAt = configuration.clock.now()
        var result = try await send(request)
        if result.requestTime == nil { result.requestTime = sentAt }
        if result.responseTime == nil { result.responseTime = configuration.clock.now() }
        return result
    }

    private func offer(_ request: CacheRequest, _ result: CacheTransportResponse) async {
        guard result.mayStore else { return }
        let entry = storeEntry(
            request, response: result.response, body: result.body, receivedWhole: result.receivedWhole,
            requestTime: result.requestTime ?? configuration.clock.now(),
            responseTime: result.responseTime ?? configuration.clock.now())
        if let entry, let shared = configuration.sharedTier { await pushShared(entry, request: request, shared) }
    }

    /// Whether `entry` is the one memory holds for its variant (a 304 merge that was not
    /// stored, after a logout, is not shared either).
    private func isStored(_ entry: CacheEntry) -> Bool {
        memory.withLock { state in state.tier.variants(for: entry.key)?.contains { $0 === entry } ?? false }
    }
}

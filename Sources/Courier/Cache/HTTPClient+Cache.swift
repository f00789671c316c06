import Foundation
import HTTPTypes

extension HTTPClient {
    /// Pipeline steps 6 and 8: runs a call through the configured `HostScopedCache`.
    ///
    /// A fresh hit returns without touching the transport; a stale entry is revalidated and a
    /// 304 merged; other responses are offered to the cache; unsafe methods invalidate. A
    /// response that followed redirects is not stored under the original URL.
    func sendThroughCache(
        _ cache: HostScopedCache, _ request: HTTPRequest, body: RequestBody?, options: RequestOptions,
        context: TransferContext
    ) async throws -> Response {
        // Read before `prepare` reads the credential: a logout in between must count.
        let generation = state.withLock { $0.sessionGeneration }
        // Checked here too: a stored answer does not go through the transfer that checks them.
        let timeout = try ConfigurationBounds.timeout(options.timeout, "request timeout")
        let limit =
            try options.maxResponseSize.map { (size) throws(CourierError) in
                try ConfigurationBounds.size(size, "request maximum response size")
            } ?? configuration.maxResponseSize
        // One snapshot of the live settings for the lookup and the network alike.
        var options = options
        if options.clientSettings == nil { options.clientSettings = liveSettings }
        let prepared = try prepare(
            request, cookieJar: options.cookieJar, sendsCredential: options.sendsCredential,
            settings: options.clientSettings ?? liveSettings, session: context.session)
        var call = CacheRequest(
            prepared, policy: options.cachePolicy, lifetime: options.cacheLifetime, staleIfError: options.staleIfError)
        if !options.sensitiveHeaderNames.isEmpty {
            call.credentialNames = credentialFieldNames.union(options.sensitiveHeaderNames)
        } else {
            call.credentialNames = credentialFieldNames
        }
        call.secretQueryNames = options.credentialQueryNames
        call.realTimeQueryNames = options.realTimeQueryNames
        call.onlyIfCached = options.onlyIfCached
        // The identity is also what the session's logout purges; the cache checks `isCurrent`
        // before it stores, so an answer that arrives after logout stores nothing.
        let identity = cache.identity(of: call)
        call.storedIdentity = identity
        if !identity.isAnonymous {
            call.isCurrent = joinSession(identity, generation: generation)
        }
        var network: Response?
        // One deadline for every request the cache sends for the call (a revalidation, then
        // the request without validators): each had the whole timeout.
        let deadline = (timeout ?? options.clientSettings?.settings.timeout).map(RequestDeadline.init)
        var sends = 0
        let result = try await cache.load(call) { outgoing in
            sends += 1
            let response: Response
            if sends > 1, let deadline {
                var later = options
                later.timeout = try deadline.remaining()
                response = try await sendToNetwork(outgoing, body: body, options: later, context: context)
            } else {
                response = try await sendToNetwork(outgoing, body: body, options: options, context: context)
            }
            network = response
            return CacheTransportResponse(
                response: response.head, body: response.body, mayStore: response.redirectCount == 0,
                redirectedURL: response.redirectCount > 0 ? response.url.absoluteString : nil)
        }
        if result.source == .network, let network { return network }
        // Stored under another call's limit (or another client's, sharing the cache): this
        // call's holds as it would for the network.
        guard Int64(result.body.count) <= limit else { throw CourierError.tooLarge(limit) }
        // The request's own URL before the entry's: the cache keeps secret query values only
        // as digests (an entry is never stored for a redirected response, so they agree).
        guard let url = network?.url ?? prepared.absoluteURL ?? result.url else {
            throw CourierError(.invalidRequest, "the request has no valid URL")
        }
        var response = Response(
            head: result.response, body: result.body, metrics: network?.metrics ?? TransferMetrics(),
            request: network?.request ?? prepared, url: url, redirectCount: 0)
        response.isFromCache = result.isFromCache
        response.isStale = result.isStale
        switch result.source {
        case .cache: response.serverOutcome = .notAsked
        case .staleOnError: response.serverOutcome = .failed(result.failure ?? .failure)
        case .network, .revalidated: break
        }
        return response
    }

    /// Notes that a request of session `generation` goes out with `identity`, so logout purges
    /// what it stores.
    /// - Returns: Whether the session is still the same, asked by the cache before it stores.
    private func joinSession(_ identity: StoredIdentity, generation: UInt64) -> @Sendable () -> Bool {
        let joined = state.withLock { state in
            // The session ended after the request read its credential: never store its answer.
            guard state.sessionGeneration == generation else { return false }
            if !state.sessionIdentities.contains(identity) {
                if state.sessionIdentities.count < Self.maxSessionIdentities {
                    state.sessionIdentities.insert(identity)
                } else {
                    state.sessionIdentitiesOverflowed = true
                }
            }
            return true
        }
        guard joined else { return { false } }
        return { [weak self] in self?.state.withLock { $0.sessionGeneration } == generation }
    }

    /// The most identities a session remembers for its logout purge; past it, logout purges
    /// every credentialed entry.
    static let maxSessionIdentities = 256

    /// On logout (after the session's generation moved on): drops the cached responses that
    /// belong to the credential being cleared and those of every identity the session used.
    func purgeCache(for fields: [HTTPField], session: State) {
        guard let cache = configuration.cache else { return }
        if session.sessionIdentitiesOverflowed {
            cache.purgeAllIdentities()
            return
        }
        var identities = Array(session.sessionIdentities)
        if !fields.isEmpty {
            identities.append(
                cache.stored(CacheIdentity(credentialsIn: HTTPFields(fields), names: credentialFieldNames)))
        }
        cache.purge(stored: identities)
    }
}

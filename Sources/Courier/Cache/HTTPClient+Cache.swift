import Foundation
import HTTPTypes

extension HTTPClient {
    /// Pipeline steps 6 and 8: runs a call through the configured `HostScopedCache`.
    ///
    /// A fresh hit returns without touching the transport; a stale entry is revalidated and a
    /// 304 merged; other responses are offered to the cache; unsafe methods invalidate. A
    /// response that followed redirects is not stored under the original URL.
    func sendThroughCache(
        _ cache: HostScopedCache, _ request: HTTPRequest, body: RequestBody?, options: RequestOptions
    ) async throws -> Response {
        let prepared = try prepare(request, cookieJar: options.cookieJar, sendsCredential: options.sendsCredential)
        let call = CacheRequest(
            prepared, policy: options.cachePolicy, lifetime: options.cacheLifetime, staleIfError: options.staleIfError)
        var network: Response?
        let result = try await cache.load(call) { outgoing in
            let response = try await sendToNetwork(outgoing, body: body, options: options)
            network = response
            return CacheTransportResponse(
                response: response.head, body: response.body, mayStore: response.redirectCount == 0)
        }
        if result.source == .network, let network { return network }
        guard let url = network?.url ?? result.url ?? prepared.absoluteURL else {
            throw CourierError(.invalidRequest, "the request has no valid URL")
        }
        var response = Response(
            head: result.response, body: result.body, metrics: network?.metrics ?? TransferMetrics(),
            request: network?.request ?? prepared, url: url, redirectCount: 0)
        response.isFromCache = result.isFromCache
        response.isStale = result.isStale
        return response
    }

    /// On logout: drops the cached responses that belong to the credential being cleared.
    func purgeCache(for fields: [HTTPField]) {
        guard let cache = configuration.cache, !fields.isEmpty else { return }
        cache.purge(identity: CacheIdentity(credentialsIn: HTTPFields(fields)))
    }
}

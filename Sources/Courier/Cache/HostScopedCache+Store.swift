import Foundation
import HTTPTypes

extension HostScopedCache {
    /// Status codes stored without explicit freshness (RFC 9110 §15.1 "heuristically cacheable").
    static let defaultStorableStatuses: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// Offers a network response for storage; stores it when the rules allow.
    ///
    /// Not stored: non-GET requests, hosts never cached, `no-store` on the request or (unless a
    /// lifetime is forced) the response, `Vary: *`, statuses other than the default storable
    /// ones (302 and 307 need explicit freshness), bodies not received whole or over the size
    /// limit, answers that set a cookie to a request without a credential (unless a lifetime is
    /// forced). `Set-Cookie` and hop-by-hop fields are not kept. A whole response of a storable
    /// status that cannot replace the stored one (`no-store`, over the size limit, `Vary: *`, a
    /// cookie set for an anonymous request) drops it, so the older answer is not served after
    /// the newer one.
    /// - Parameters:
    ///   - request: The call's cache request (the request as sent, without conditional fields).
    ///   - response: The response head.
    ///   - body: The whole body.
    ///   - receivedWhole: False when the transfer was cut short; such bodies are never stored.
    ///   - requestTime: When the request was sent.
    ///   - responseTime: When the response head arrived.
    /// - Returns: Whether the response was stored.
    @discardableResult
    package func store(
        _ request: CacheRequest, response: HTTPResponse, body: Data, receivedWhole: Bool, requestTime: Date,
        responseTime: Date
    ) -> Bool {
        storeEntry(
            request, response: response, body: body, receivedWhole: receivedWhole, requestTime: requestTime,
            responseTime: responseTime) != nil
    }

    /// `store`, returning the entry it stored.
    func storeEntry(
        _ request: CacheRequest, response: HTTPResponse, body: Data, receivedWhole: Bool, requestTime: Date,
        responseTime: Date
    ) -> CacheEntry? {
        guard let plan = plan(for: request), receivedWhole else { return nil }
        guard !CacheControl(request.request.headerFields).noStore else { return nil }
        let fields = response.headerFields
        let control = CacheControl(fields)
        let forced = plan.forcedLifetime
        let code = response.status.code
        if !Self.defaultStorableStatuses.contains(code) {
            let explicit =
                forced != nil || control.maxAge != nil || fields[.expires] != nil || control.isPublic
                || control.isPrivate
            guard code == 302 || code == 307, explicit else { return nil }
        }
        // `Vary: *`: no later request can match this answer (RFC 9111 §4.1).
        let varyStar = fields[values: .vary].contains(where: { $0.contains("*") })
        if body.count > configuration.maxEntryBytes || (forced == nil && control.noStore) || varyStar {
            // A newer answer of a storable kind: the older one must not outlive it. (A 5xx is
            // not one, so it never drops what stale-if-error may still serve.)
            invalidateKey(Self.key(identity: identity(of: request), url: storedURL(of: request)))
            return nil
        }
        let varyNames = CacheEntry.varyNames(fields)
        let identity = identity(of: request)
        // A cookie set in answer to a request without a credential starts a session for whoever
        // asked; the anonymous entry would go to every other caller without one (other clients
        // of the cache, other users), with that session in its body and no cookie of theirs.
        // It is a newer answer all the same: the older entry goes, as above.
        if forced == nil, identity.isAnonymous, fields[.setCookie] != nil {
            invalidateKey(Self.key(identity: identity, url: storedURL(of: request)))
            return nil
        }

        var head = response
        let dropped = CacheEntry.hopByHop(fields).union([.setCookie])
        head.headerFields = HTTPFields(fields.filter { !dropped.contains($0.name) })
        let url = storedURL(of: request)
        let entry = CacheEntry(
            key: Self.key(identity: identity, url: url), url: url, identity: identity.digest,
            variant: variant(names: varyNames, request: request), response: head,
            body: body, requestTime: requestTime, responseTime: responseTime, forcedLifetime: forced,
            hasQuery: request.hasQuery)
        guard write(entry, if: request.isCurrent) else { return nil }
        memory.withLock { $0.statistics.stores += 1 }
        emit([.stored(url: url, bytes: body.count)])
        return entry
    }

    /// Refreshes a stored entry with a 304 response and returns the response to serve.
    ///
    /// The stored body is kept; the 304's end-to-end fields replace the stored ones, except
    /// Content-Length, Content-Encoding, Content-Type, Content-Range and hop-by-hop fields.
    /// - Parameters:
    ///   - request: The call's cache request.
    ///   - cached: The entry the `.stale` lookup returned.
    ///   - notModified: The 304 response head.
    ///   - requestTime: When the conditional request was sent.
    ///   - responseTime: When the 304 arrived.
    /// - Returns: The merged response, fresh per the new headers; nil when the 304 names another
    ///   representation than the stored one (a different ETag or Last-Modified, RFC 9111 §4.3.4):
    ///   the entry is left as it is, and the request should be sent again without validators.
    func merge304(
        _ request: CacheRequest, cached: CachedResponse, notModified: HTTPResponse, requestTime: Date,
        responseTime: Date
    ) -> CachedResponse? {
        guard cached.entry.isUpdated(by: notModified) else { return nil }
        let merged = cached.entry.merging(
            notModified: notModified, requestTime: requestTime, responseTime: responseTime)
        let noStore = CacheControl(notModified.headerFields).noStore && merged.forcedLifetime == nil
        if noStore {
            invalidateKey(merged.key)
        } else {
            // After a logout the purged entry must not come back.
            write(merged, if: request.isCurrent)
        }
        memory.withLock { $0.statistics.notModified += 1 }
        emit([.notModified(url: merged.url)])
        return merged.served(now: responseTime, isStale: false)
    }

    /// Drops the entries an unsafe request may have changed (RFC 9111 §4.4): the target URL
    /// and the same-host `Location` / `Content-Location` of the response, for every identity.
    /// Every method but GET, HEAD, OPTIONS and TRACE counts as unsafe (so do unknown ones).
    /// - Parameters:
    ///   - request: The request that was sent.
    ///   - response: Its response, when there was one.
    ///   - redirectedTo: The URL that gave `response`, when redirects led there (a POST answered
    ///     `303 See Other`): invalidated like a `Location` (same origin only), since the
    ///     redirect's own `Location` never reaches the cache.
    ///   - realTimeQueryNames: The real-time parameters the request carries (not in the key).
    ///   - secretQueryNames: The credential's query items the request carries (digested in the key).
    /// - Returns: How many URLs' entries were dropped.
    @discardableResult
    func invalidate(
        after request: HTTPRequest, response: HTTPResponse?, redirectedTo: String? = nil,
        realTimeQueryNames: Set<String> = [], secretQueryNames: Set<String> = []
    ) -> Int {
        guard ![.get, .head, .options, .trace].contains(request.method) else { return 0 }
        var target = CacheRequest(request)
        target.realTimeQueryNames = realTimeQueryNames
        var urls = [target.normalizedURL]
        let origin = "\((request.scheme ?? "https").lowercased())://\((request.authority ?? "").lowercased())"
        let references = [HTTPField.Name.location, .contentLocation].compactMap { response?.headerFields[$0] }
        for value in references + (redirectedTo.map { [$0] } ?? []) {
            if value.hasPrefix("/"), !value.hasPrefix("//") {
                urls.append(origin + value)
            } else if value.lowercased().hasPrefix(origin + "/") {
                urls.append(origin + value.dropFirst(origin.count))
            } else if let pathAndQuery = Self.sameOriginPathAndQuery(of: value, resolvedAgainst: urls[0]) {
                urls.append(origin + pathAndQuery)
            }
        }
        var dropped = 0
        for url in urls { dropped += invalidate(url: url, secretQueryNames: secretQueryNames) }
        return dropped
    }

    /// The path and query `reference` (a `Location` or `Content-Location`) names once resolved
    /// against `target` (RFC 3986 §5), when it names `target`'s origin; nil for another origin.
    /// A relative path (`8`), a network-path reference (`//host/…`) and the default port written
    /// out (`:443`) name the origin too; only `/path` and the request's exact authority did.
    static func sameOriginPathAndQuery(of reference: String, resolvedAgainst target: String) -> String? {
        guard let base = URL(string: target), let origin = Origin(base),
            let resolved = URL(string: percentEncodingNonASCII(reference), relativeTo: base)?.absoluteURL,
            Origin(resolved) == origin, let parts = URLComponents(url: resolved, resolvingAgainstBaseURL: false)
        else { return nil }
        let path = parts.percentEncodedPath.isEmpty ? "/" : parts.percentEncodedPath
        return path + (parts.percentEncodedQuery.map { "?" + $0 } ?? "")
    }

    /// Drops every identity's entries for `url` (`scheme://host[:port]/path?query`).
    /// - Parameter secretQueryNames: Query items of a credential's in `url`, keyed as they were
    ///   stored (see `storedURL(_:secretNames:)`): looked up in clear, they matched no entry.
    /// - Returns: How many entries (URL × identity) were dropped.
    @discardableResult
    func invalidate(url: String, secretQueryNames: Set<String> = []) -> Int {
        let url = storedURL(Self.normalize(url), secretNames: secretQueryNames)
        let suffix = " " + url
        // Disk first, then memory, under the disk lock all along (see `invalidateKey`).
        let (diskDropped, memoryDropped) = disk.withLock { tier in
            let onDisk = Set((try? tier?.deleteAll(where: "url", equals: url)) ?? []).count
            let inMemory = memory.withLock { state in
                state.tier.removeAll {
                    $0.hasSuffix(suffix) && $0.firstIndex(of: " ") == $0.index($0.endIndex, offsetBy: -suffix.count)
                }
            }
            return (onDisk, inMemory)
        }
        configuration.sharedTier?.invalidate(url: url)
        let dropped = max(memoryDropped, diskDropped)
        if dropped > 0 { emit([.invalidated(url: url)]) }
        return dropped
    }

    /// Drops every entry fetched with the credentials of `identity` (call on logout, before
    /// clearing them). An entry fetched with more credentials (an `Authorization` plus cookies)
    /// is dropped too.
    /// - Returns: How many entries were dropped.
    @discardableResult
    func purge(identity: CacheIdentity) -> Int {
        purge(stored: [stored(identity)])
    }

    /// Drops every entry owned by one of `identities` (as this cache stores them), in one pass.
    /// - Returns: How many entries were dropped.
    @discardableResult
    func purge(stored identities: [StoredIdentity]) -> Int {
        let identities = identities.filter { !$0.isAnonymous }
        guard !identities.isEmpty else { return 0 }
        let (diskDropped, memoryDropped) = disk.withLock { tier in
            let onDisk = Set((try? tier?.deleteAll(ownedBy: identities)) ?? []).count
            let inMemory = memory.withLock { state in
                state.tier.removeAll { key in
                    guard let space = key.firstIndex(of: " ") else { return false }
                    let stored = key[..<space]
                    return identities.contains { $0.owns(stored) }
                }
            }
            return (onDisk, inMemory)
        }
        configuration.sharedTier?.purge(owners: identities.map { $0.digest.split(separator: ";").map(String.init) })
        let dropped = max(memoryDropped, diskDropped)
        // Only a purge that dropped something is reported: a handler that logs out when told
        // of one (which purges again) was told of the empty purge, and so on without end.
        if dropped > 0 { emit([.purged(count: dropped)]) }
        return dropped
    }

    /// Drops every entry that belongs to some identity (logout when the identity is unknown).
    /// - Returns: How many entries were dropped.
    @discardableResult
    public func purgeAllIdentities() -> Int {
        let (diskDropped, memoryDropped) = disk.withLock { tier in
            let onDisk = (try? tier?.deleteAllIdentified()) ?? 0
            return (onDisk, memory.withLock { state in state.tier.removeAll { !$0.hasPrefix(" ") } })
        }
        configuration.sharedTier?.purgeAllIdentified()
        let dropped = max(memoryDropped, diskDropped)
        // As above: an empty purge is not reported.
        if dropped > 0 { emit([.purged(count: dropped)]) }
        return dropped
    }

    /// Drops everything, in memory and on disk.
    public func removeAll() {
        disk.withLock { tier in
            try? tier?.deleteEverything()
            memory.withLock { $0.tier.removeAll() }
        }
        configuration.sharedTier?.removeAll()
    }

    /// Drops the entries of one primary key.
    ///
    /// Every removal runs on disk first, then in memory, under the disk lock all along (the
    /// lock order of `write` and `variants`). Dropping memory first and disk after would let a
    /// concurrent lookup that misses memory reload the doomed row from disk in between, and
    /// keep it in memory after the row is gone.
    func invalidateKey(_ key: String) {
        disk.withLock { tier in
            _ = try? tier?.deleteAll(where: "key", equals: key)
            memory.withLock { $0.tier.remove(key) }
        }
        configuration.sharedTier?.remove(key: key)
    }

    /// `scheme://authority/path?query` with scheme and authority lowercased, fragment dropped,
    /// bytes past ASCII percent-encoded (as `CacheRequest.normalizedURL` keys a request).
    static func normalize(_ url: String) -> String {
        var text = Substring(percentEncodingNonASCII(url))
        if let hash = text.firstIndex(of: "#") { text = text[..<hash] }
        guard let schemeEnd = text.range(of: "://") else { return String(text) }
        let afterScheme = text[schemeEnd.upperBound...]
        let pathStart = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? afterScheme.endIndex
        var path = String(afterScheme[pathStart...])
        if path.isEmpty || path.hasPrefix("?") { path = "/" + path }
        return text[..<schemeEnd.lowerBound].lowercased() + "://" + afterScheme[..<pathStart].lowercased() + path
    }

    /// The URL `request` is keyed and stored under: its normalized URL without its real-time
    /// parameters, secret query values digested.
    func storedURL(of request: CacheRequest) -> String {
        storedURL(request.normalizedURL, secretNames: request.secretQueryNames)
    }

    /// A normalized URL as this cache keys and stores it: the values of query parameters whose
    /// names say they hold a secret (`Redaction.defaultQueryNames`: `access_token`, `api_key`,
    /// …) replaced by a keyed digest, so the same URL still finds its entry but a token in a
    /// query never reaches the disk in clear text; `secretNames` adds a credential's own query
    /// items (a multi-part credential's, see `CredentialPart`).
    func storedURL(_ url: String, secretNames: Set<String> = []) -> String {
        guard let mark = url.firstIndex(of: "?") else { return url }
        var changed = false
        let pairs = url[url.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false).map {
            pair -> Substring in
            guard let equals = pair.firstIndex(of: "=") else { return pair }
            let name = RelativePath.percentDecoded(pair[..<equals])
            guard Redaction.defaultQueryNames.contains(name.lowercased()) || secretNames.contains(name) else {
                return pair
            }
            changed = true
            let value = pair[pair.index(after: equals)...]
            return pair[...equals] + "hmac:" + secret.hex("q\u{0}" + value)
        }
        return changed ? url[...mark] + pairs.joined(separator: "&") : url
    }
}

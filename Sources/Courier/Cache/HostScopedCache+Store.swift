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
    /// limit. `Set-Cookie` and hop-by-hop fields are not kept.
    /// - Parameters:
    ///   - request: The call's cache request (the request as sent, without conditional fields).
    ///   - response: The response head.
    ///   - body: The whole body.
    ///   - receivedWhole: False when the transfer was cut short; such bodies are never stored.
    ///   - requestTime: When the request was sent.
    ///   - responseTime: When the response head arrived.
    /// - Returns: Whether the response was stored.
    @discardableResult
    public func store(
        _ request: CacheRequest, response: HTTPResponse, body: Data, receivedWhole: Bool, requestTime: Date,
        responseTime: Date
    ) -> Bool {
        guard let plan = plan(for: request), receivedWhole, body.count <= configuration.maxEntryBytes else {
            return false
        }
        guard !CacheControl(request.request.headerFields).noStore else { return false }
        let fields = response.headerFields
        let control = CacheControl(fields)
        let forced = plan.forcedLifetime
        if forced == nil, control.noStore { return false }
        let code = response.status.code
        if !Self.defaultStorableStatuses.contains(code) {
            let explicit =
                forced != nil || control.maxAge != nil || fields[.expires] != nil || control.isPublic
                || control.isPrivate
            guard code == 302 || code == 307, explicit else { return false }
        }
        let varyNames = CacheEntry.varyNames(fields)
        if fields[values: .vary].contains(where: { $0.contains("*") }) { return false }

        var head = response
        let dropped = CacheEntry.hopByHop(fields).union([.setCookie])
        head.headerFields = HTTPFields(fields.filter { !dropped.contains($0.name) })
        let identity = identity(of: request)
        let url = request.normalizedURL
        let entry = CacheEntry(
            key: Self.key(identity: identity, url: url), url: url, identity: identity.digest,
            variant: CacheVariant.make(names: varyNames, request: request.request.headerFields), response: head,
            body: body, requestTime: requestTime, responseTime: responseTime, forcedLifetime: forced,
            hasQuery: request.hasQuery)
        guard write(entry) else { return false }
        memory.withLock { $0.statistics.stores += 1 }
        emit([.stored(url: url, bytes: body.count)])
        return true
    }

    /// Refreshes a stored entry with a 304 response and returns the response to serve.
    ///
    /// The stored body is kept; the 304's end-to-end fields replace the stored ones, except
    /// Content-Length, Content-Encoding, Content-Type and hop-by-hop fields.
    /// - Parameters:
    ///   - request: The call's cache request.
    ///   - cached: The entry the `.stale` lookup returned.
    ///   - notModified: The 304 response head.
    ///   - requestTime: When the conditional request was sent.
    ///   - responseTime: When the 304 arrived.
    /// - Returns: The merged response, fresh per the new headers.
    public func merge304(
        _ request: CacheRequest, cached: CachedResponse, notModified: HTTPResponse, requestTime: Date,
        responseTime: Date
    ) -> CachedResponse {
        let merged = cached.entry.merging(
            notModified: notModified, requestTime: requestTime, responseTime: responseTime)
        let noStore = CacheControl(notModified.headerFields).noStore && merged.forcedLifetime == nil
        if noStore {
            invalidateKey(merged.key)
        } else {
            write(merged)
        }
        memory.withLock { $0.statistics.notModified += 1 }
        emit([.notModified(url: merged.url)])
        return merged.served(now: responseTime, isStale: false)
    }

    /// Drops the entries an unsafe request may have changed (RFC 9111 §4.4): the target URL
    /// and the same-host `Location` / `Content-Location` of the response, for every identity.
    /// - Parameters:
    ///   - request: The request that was sent.
    ///   - response: Its response, when there was one.
    /// - Returns: How many URLs' entries were dropped.
    @discardableResult
    public func invalidate(after request: HTTPRequest, response: HTTPResponse?) -> Int {
        guard [.post, .put, .patch, .delete].contains(request.method) else { return 0 }
        let target = CacheRequest(request)
        var urls = [target.normalizedURL]
        let origin = "\((request.scheme ?? "https").lowercased())://\((request.authority ?? "").lowercased())"
        for name in [HTTPField.Name.location, .contentLocation] {
            guard let value = response?.headerFields[name] else { continue }
            if value.hasPrefix("/"), !value.hasPrefix("//") {
                urls.append(origin + value)
            } else if value.lowercased().hasPrefix(origin + "/") {
                urls.append(origin + value.dropFirst(origin.count))
            }
        }
        var dropped = 0
        for url in urls { dropped += invalidate(url: url) }
        return dropped
    }

    /// Drops every identity's entries for `url` (`scheme://host[:port]/path?query`).
    /// - Returns: How many entries (URL × identity) were dropped.
    @discardableResult
    public func invalidate(url: String) -> Int {
        let url = Self.normalize(url)
        let suffix = " " + url
        let memoryDropped = memory.withLock { state in
            state.tier.removeAll {
                $0.hasSuffix(suffix) && $0.firstIndex(of: " ") == $0.index($0.endIndex, offsetBy: -suffix.count)
            }
        }
        let diskDropped = disk.withLock { tier in
            Set((try? tier?.deleteAll(where: "url", equals: url)) ?? []).count
        }
        let dropped = max(memoryDropped, diskDropped)
        if dropped > 0 { emit([.invalidated(url: url)]) }
        return dropped
    }

    /// Drops every entry fetched with the credentials of `identity` (call on logout, before
    /// clearing them). An entry fetched with more credentials (an `Authorization` plus cookies)
    /// is dropped too.
    /// - Returns: How many entries were dropped.
    @discardableResult
    public func purge(identity: CacheIdentity) -> Int {
        guard !identity.isAnonymous else { return 0 }
        let memoryDropped = memory.withLock { state in
            state.tier.removeAll { key in
                guard let space = key.firstIndex(of: " ") else { return false }
                return identity.owns(key[..<space])
            }
        }
        let diskDropped = disk.withLock { tier in
            Set((try? tier?.deleteAll(ownedBy: identity)) ?? []).count
        }
        let dropped = max(memoryDropped, diskDropped)
        emit([.purged(count: dropped)])
        return dropped
    }

    /// Drops every entry that belongs to some identity (logout when the identity is unknown).
    /// - Returns: How many entries were dropped.
    @discardableResult
    public func purgeAllIdentities() -> Int {
        let memoryDropped = memory.withLock { state in state.tier.removeAll { !$0.hasPrefix(" ") } }
        let diskDropped = disk.withLock { tier in (try? tier?.deleteAllIdentified()) ?? 0 }
        let dropped = max(memoryDropped, diskDropped)
        emit([.purged(count: dropped)])
        return dropped
    }

    /// Drops everything, in memory and on disk.
    public func removeAll() {
        memory.withLock { $0.tier.removeAll() }
        disk.withLock { tier in try? tier?.deleteEverything() }
    }

    func invalidateKey(_ key: String) {
        memory.withLock { $0.tier.remove(key) }
        disk.withLock { tier in _ = try? tier?.deleteAll(where: "key", equals: key) }
    }

    /// `scheme://authority/path?query` with scheme and authority lowercased, fragment dropped.
    static func normalize(_ url: String) -> String {
        var text = Substring(url)
        if let hash = text.firstIndex(of: "#") { text = text[..<hash] }
        guard let schemeEnd = text.range(of: "://") else { return String(text) }
        let afterScheme = text[schemeEnd.upperBound...]
        let pathStart = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? afterScheme.endIndex
        var path = String(afterScheme[pathStart...])
        if path.isEmpty || path.hasPrefix("?") { path = "/" + path }
        return text[..<schemeEnd.lowerBound].lowercased() + "://" + afterScheme[..<pathStart].lowercased() + path
    }
}

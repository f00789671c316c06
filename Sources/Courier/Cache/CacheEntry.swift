import Foundation
import HTTPTypes

/// One stored response (one variant of one URL for one identity), with the values freshness
/// needs parsed once when the entry is made rather than on every lookup.
///
/// An immutable class, so handing an entry around (memory tier, lookup results) is one
/// retain rather than a copy of a dozen fields.
final class CacheEntry: Sendable {
    /// identity digest + " " + normalized URL: the primary key.
    let key: String
    let url: String
    let identity: String
    /// The request's values of the fields the response's `Vary` names (the secondary key).
    let variant: String
    let response: HTTPResponse
    let body: Data
    let requestTime: Date
    let responseTime: Date
    /// A lifetime forced by the host rule or the call when it was stored.
    let forcedLifetime: TimeInterval?
    /// Whether the request URL had a query (no heuristic freshness then).
    let hasQuery: Bool
    /// `url` parsed once, so serving a hit does not parse it.
    let parsedURL: URL?

    let control: CacheControl
    let varyNames: [HTTPField.Name]
    let dateValue: Date?
    let ageValue: TimeInterval
    let headerLifetime: TimeInterval

    init(
        key: String, url: String, identity: String, variant: String, response: HTTPResponse, body: Data,
        requestTime: Date, responseTime: Date, forcedLifetime: TimeInterval?, hasQuery: Bool
    ) {
        self.key = key
        self.url = url
        self.identity = identity
        self.variant = variant
        self.response = response
        self.body = body
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.forcedLifetime = forcedLifetime
        self.hasQuery = hasQuery
        parsedURL = URL(string: url)
        let fields = response.headerFields
        control = CacheControl(fields)
        varyNames = Self.varyNames(fields)
        dateValue = fields[.date].flatMap(HTTPDateFormat.parse)
        ageValue = Self.firstMember(fields[values: CacheFieldName.age]).flatMap(Self.deltaSeconds) ?? 0
        headerLifetime = Self.lifetime(
            fields: fields, control: control, date: dateValue ?? responseTime, hasQuery: hasQuery,
            status: response.status.code)
    }

    /// A delta-seconds value (RFC 9111 §1.2.2): digits only, capped at 2^31; nil when invalid.
    /// `Double(_:)` would also take `1e400`, `inf` and `nan`, which make the age unusable.
    static func deltaSeconds(_ text: String) -> TimeInterval? {
        let digits = text.trimmingCharacters(in: .whitespaces)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return nil
        }
        let cap: TimeInterval = 2_147_483_648
        guard digits.utf8.count <= 10, let value = TimeInterval(digits) else { return cap }
        return min(value, cap)
    }

    /// The first member of a singleton field sent as a list or on several lines (`Age: 3600,
    /// 3600` from a chain of caches): RFC 9111 §5.1 says to use it and discard the rest.
    /// The combined value was no delta-seconds at all, and an hour-old answer was taken as new.
    static func firstMember(_ values: [String]) -> String? {
        values.first.map { value in value.firstIndex(of: ",").map { String(value[..<$0]) } ?? value }
    }

    /// Approximate bytes held, for the memory bound.
    var cost: Int { body.count + key.utf8.count + variant.utf8.count + response.headerFields.count * 48 + 128 }

    /// The freshness lifetime from the headers (RFC 9111 §4.2.1): max-age, else Expires − Date,
    /// else 10% of Date − Last-Modified for URLs without a query.
    ///
    /// The heuristic only for a heuristically cacheable `status` or an answer marked `public`
    /// (RFC 9111 §4.2.2): a 302 or 307 kept for its `private` directive alone got one, and a
    /// temporary redirect was served for a tenth of its `Last-Modified` age.
    static func lifetime(
        fields: HTTPFields, control: CacheControl, date: Date, hasQuery: Bool, status: Int
    ) -> TimeInterval {
        if let maxAge = control.maxAge { return TimeInterval(maxAge) }
        let expires = fields[values: .expires]
        if let first = expires.first {
            // An invalid Expires (e.g. "0") means already expired, and so do several that
            // disagree (RFC 9111 §4.2.1).
            guard expires.allSatisfy({ $0 == first }), let expiry = HTTPDateFormat.parse(first) else { return 0 }
            return max(0, expiry.timeIntervalSince(date))
        }
        let heuristicallyCacheable = HostScopedCache.defaultStorableStatuses.contains(status) || control.isPublic
        if !hasQuery, heuristicallyCacheable, let lastModified = fields[.lastModified].flatMap(HTTPDateFormat.parse) {
            return max(0, date.timeIntervalSince(lastModified) / 10)
        }
        return 0
    }

    static func varyNames(_ fields: HTTPFields) -> [HTTPField.Name] {
        fields[values: .vary].flatMap { $0.split(separator: ",") }.compactMap {
            HTTPField.Name(String($0.trimmingCharacters(in: .whitespaces)))
        }
    }

    /// The freshness lifetime to use, given a per-call override.
    func freshnessLifetime(override: TimeInterval?) -> TimeInterval {
        if let override { return override }
        if let forcedLifetime { return forcedLifetime }
        return control.noCache ? 0 : headerLifetime
    }

    /// The current age (RFC 9111 §4.2.3).
    func currentAge(now: Date) -> TimeInterval {
        let apparentAge = max(0, responseTime.timeIntervalSince(dateValue ?? responseTime))
        let responseDelay = max(0, responseTime.timeIntervalSince(requestTime))
        let correctedAgeValue = ageValue + responseDelay
        let correctedInitialAge = max(apparentAge, correctedAgeValue)
        let residentTime = max(0, now.timeIntervalSince(responseTime))
        return correctedInitialAge + residentTime
    }

    /// Whether revalidation is mandatory once stale (must-revalidate, or no-cache without a
    /// forced lifetime).
    var requiresRevalidation: Bool { forcedLifetime == nil && (control.mustRevalidate || control.noCache) }

    /// `If-None-Match` from the ETag, else `If-Modified-Since` from Last-Modified.
    var conditionalHeaders: HTTPFields {
        var fields = HTTPFields()
        if let etag = response.headerFields[.eTag] {
            fields[.ifNoneMatch] = etag
        } else if let lastModified = response.headerFields[.lastModified] {
            fields[.ifModifiedSince] = lastModified
        }
        return fields
    }

    /// Whether a 304 answers for this entry's representation (RFC 9111 §4.3.4): its ETag, when
    /// it has one, must be the stored one, else its Last-Modified, when both have one, must be the
    /// stored one. ETags are compared weakly (`W/"a"` matches `"a"`): servers that weaken the
    /// ETag of compressed 200s often send the strong one on their 304s.
    func isUpdated(by notModified: HTTPResponse) -> Bool {
        let fields = notModified.headerFields
        let stored = response.headerFields
        if let etag = fields[.eTag] {
            guard let storedETag = stored[.eTag] else { return false }
            return Self.opaqueTag(etag) == Self.opaqueTag(storedETag)
        }
        if let modified = fields[.lastModified], let storedModified = stored[.lastModified] {
            guard let date = HTTPDateFormat.parse(modified), let storedDate = HTTPDateFormat.parse(storedModified)
            else { return modified == storedModified }
            return date == storedDate
        }
        return true
    }

    private static func opaqueTag(_ etag: String) -> Substring {
        let trimmed = Substring(etag.trimmingCharacters(in: .whitespaces))
        return trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : trimmed
    }

    /// This entry refreshed by a 304: its end-to-end fields replace the stored ones, except
    /// Content-Length, Content-Encoding, Content-Type, Content-Range and hop-by-hop fields
    /// (RFC 9111 §3.2): those describe the stored bytes, and a `Content-Range` a 304 carried
    /// made the whole stored answer read as a part of one.
    ///
    /// `Date` and `Age` describe a message, not the representation: a 304 without them gets
    /// the time it arrived as its `Date` (RFC 9110 §6.6.1) and no `Age`, so the old response's
    /// values do not make the refreshed entry look older than it is.
    func merging(notModified: HTTPResponse, requestTime: Date, responseTime: Date) -> CacheEntry {
        let excluded = Self.hopByHop(notModified.headerFields).union([
            HTTPField.Name.contentLength, .contentEncoding, .contentType, .contentRange, .setCookie,
        ])
        var fields = response.headerFields
        var replaced = Set<HTTPField.Name>()
        for field in notModified.headerFields where !excluded.contains(field.name) {
            if replaced.insert(field.name).inserted { fields[values: field.name] = [] }
            fields.append(field)
        }
        if !replaced.contains(.date) { fields[.date] = HTTPDateFormat.format(responseTime) }
        if !replaced.contains(CacheFieldName.age) { fields[CacheFieldName.age] = nil }
        var head = response
        head.headerFields = fields
        return CacheEntry(
            key: key, url: url, identity: identity, variant: variant, response: head, body: body,
            requestTime: requestTime, responseTime: responseTime, forcedLifetime: forcedLifetime, hasQuery: hasQuery)
    }

    /// Hop-by-hop fields: the fixed set plus any named by `Connection`.
    static func hopByHop(_ fields: HTTPFields) -> Set<HTTPField.Name> {
        var names: Set<HTTPField.Name> = [
            .connection, CacheFieldName.keepAlive, CacheFieldName.proxyConnection, .te, .transferEncoding, .upgrade,
            .trailer, CacheFieldName.proxyAuthenticate,
        ]
        for value in fields[values: .connection] {
            for token in value.split(separator: ",") {
                if let name = HTTPField.Name(token.trimmingCharacters(in: .whitespaces)) { names.insert(name) }
            }
        }
        return names
    }

    /// The response served to a caller: the stored head with `Age` set.
    func served(now: Date, isStale: Bool) -> CachedResponse {
        var head = response
        // An age that is not finite (times read back from a damaged row) is reported as the
        // delta-seconds maximum rather than trapping in the conversion.
        let age = currentAge(now: now)
        head.headerFields[CacheFieldName.age] = String(
            age.isFinite ? Int(min(max(age, 0), 2_147_483_648)) : 2_147_483_648)
        return CachedResponse(response: head, body: body, isStale: isStale, responseTime: responseTime, entry: self)
    }
}

/// The secondary key: a request's values for the fields a response's `Vary` names.
/// Credential fields are reduced to a keyed digest so they never reach the disk in clear text
/// (see `HostScopedCache.variant(names:request:)`).
enum CacheVariant {
    /// The field names a variant string was made from, in order.
    static func names(of variant: String) -> [Substring] {
        guard !variant.isEmpty else { return [] }
        return variant.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.firstIndex(of: "=").map { line[..<$0] } ?? line
        }
    }

    /// - Parameter credential: The digest to store instead of a credential field's value, or nil
    ///   for a field that is not a credential.
    static func make(
        names: [HTTPField.Name], request: HTTPFields, credential: (HTTPField.Name, String) -> String?
    ) -> String {
        guard !names.isEmpty else { return "" }
        var lines: [String] = []
        for name in names {
            let values = request[values: name]
            guard !values.isEmpty else {
                lines.append(name.canonicalName)
                continue
            }
            var value = values.map { $0.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
                .joined(separator: ", ")
            value = credential(name, value) ?? percentEncodingNonASCII(value, andPercent: true)
            lines.append(name.canonicalName + "=" + value)
        }
        return lines.joined(separator: "\n")
    }
}

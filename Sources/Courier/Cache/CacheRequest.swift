import Crypto
import Foundation
import HTTPTypes

/// Whose cached responses these are: the credentials a request carried, or an app-chosen
/// user id. Entries stored under one identity are never served to another.
///
/// Each credential field is a component of its own (`a:` Authorization, `c:` Cookie, `p:`
/// Proxy-Authorization, `h:` any other credential field, `u:` user id), so purging the identity
/// of an `Authorization` value also drops entries fetched with that value plus cookies.
///
/// A value of this type holds one-way digests of the credentials, in memory only. What a
/// cache stores is a keyed digest of each component (HMAC-SHA256 under the cache's own random
/// key, kept outside the database), so a stolen cache file does not let anyone test guesses
/// of a short API key or token.
package struct CacheIdentity: Sendable, Hashable, CustomStringConvertible {
    /// `tag:digest` per credential, in a fixed order; empty for anonymous requests.
    let components: [String]

    private init(components: [String]) { self.components = components }

    /// Requests without credentials.
    static let anonymous = CacheIdentity(components: [])

    /// The fields that are credentials whatever the client says: Authorization, Cookie and
    /// Proxy-Authorization.
    static let standardNames: Set<HTTPField.Name> = [.authorization, .cookie, .proxyAuthorization]

    /// The identity of a request's `Authorization`, `Cookie` and `Proxy-Authorization` values
    /// (anonymous when it has none). Only one-way digests of them are kept.
    /// - Parameter headers: The request's header fields.
    init(credentialsIn headers: HTTPFields) {
        self.init(credentialsIn: headers, names: Self.standardNames)
    }

    /// The identity of the values of the credential fields `names` (plus the standard three)
    /// in `headers`: a client passes its custom auth header and sensitive header names.
    init(credentialsIn headers: HTTPFields, names: Set<HTTPField.Name>) {
        var parts: [String] = []
        for (tag, name) in [("a", HTTPField.Name.authorization), ("c", .cookie), ("p", .proxyAuthorization)] {
            guard let value = headers[name] else { continue }
            parts.append(tag + ":" + Self.digest(tag + "\u{0}" + value))
        }
        if names.count > Self.standardNames.count || !names.isSubset(of: Self.standardNames) {
            let others = names.subtracting(Self.standardNames).sorted { $0.canonicalName < $1.canonicalName }
            for name in others {
                guard let value = headers[name] else { continue }
                parts.append("h:" + Self.digest("h\u{0}" + name.canonicalName + "\u{0}" + value))
            }
        }
        components = parts
    }

    /// An identity chosen by the app (a user id), for clients whose credentials rotate.
    /// - Parameter user: A stable user identifier; only its digest is kept.
    init(user: String) {
        components = ["u:" + Self.digest("u\u{0}" + user)]
    }

    /// True for requests without credentials.
    var isAnonymous: Bool { components.isEmpty }

    private static func digest(_ text: String) -> String {
        RequestIdentity.digest(("courier-cache-identity\u{0}" + text).utf8)
    }

    /// The identity as a cache stores it: each component keyed with `secret`.
    func stored(with secret: CacheSecret) -> StoredIdentity {
        guard !isAnonymous else { return .anonymous }
        return StoredIdentity(
            digest: components.map { component in
                let tag = component.prefix(while: { $0 != ":" })
                return tag + ":" + secret.hex(component)
            }.joined(separator: ";"))
    }

    package var description: String {
        isAnonymous ? "anonymous" : "identity(\(components.map { $0.prefix(1) + ":…" }.joined(separator: ";")))"
    }
}

/// An identity as one cache stores it: keyed digests joined by `;` ("" for anonymous).
struct StoredIdentity: Sendable, Hashable {
    let digest: String

    static let anonymous = StoredIdentity(digest: "")

    var isAnonymous: Bool { digest.isEmpty }

    /// Whether an entry stored under `stored` belongs to this identity: it was fetched with
    /// every credential this identity names (and possibly more).
    func owns(_ stored: Substring) -> Bool {
        guard !isAnonymous else { return false }
        let storedParts = stored.split(separator: ";")
        return digest.split(separator: ";").allSatisfy { storedParts.contains($0) }
    }
}

/// A request as the cache sees it: the HTTP request plus the per-call cache options.
package struct CacheRequest: Sendable {
    /// The request head (method, scheme, authority, path, headers).
    var request: HTTPRequest
    /// The per-call policy.
    var policy: CachePolicy
    /// A per-call lifetime ("cache this endpoint for 180 s") that overrides the caching
    /// headers; it does not override a host rule of `.never`.
    var lifetime: Duration?
    /// Serve a stale entry when the network fails or answers 5xx; nil uses the configuration.
    var staleIfError: Bool?
    /// Whose entry this is; nil derives it from the request's credentials.
    var identity: CacheIdentity?
    /// The fields whose values are credentials (the identity, and digested in `Vary` variants):
    /// the standard three, plus what the client adds (its auth header, its sensitive names).
    var credentialNames: Set<HTTPField.Name> = CacheIdentity.standardNames
    /// Query items whose values are credentials (a multi-part credential's): stored as digests.
    var secretQueryNames: Set<String> = []
    /// Query items a service adds afresh to each attempt (its real-time parameters: a
    /// timestamp, a nonce): left out of the key, so the same call finds its entry again.
    var realTimeQueryNames: Set<String> = []
    /// Asked at store time, under the cache's lock: false when the session that sent the
    /// request has ended since (the user logged out), and the response must not be stored.
    var isCurrent: (@Sendable () -> Bool)?
    /// Answered from the cache only, as `Cache-Control: only-if-cached` asks (`RequestOptions.onlyIfCached`).
    var onlyIfCached = false
    /// The identity as the cache stores it, when the caller computed it already (the client
    /// does, for its session): lookup and store then skip deriving it again.
    var storedIdentity: StoredIdentity?

    /// The conditional fields a caller may set itself (RFC 9110 §13.1).
    static let conditionNames: [HTTPField.Name] = [
        .ifNoneMatch, .ifModifiedSince, .ifMatch, .ifUnmodifiedSince, .ifRange,
    ]

    /// Whether the request carries conditions of its caller's own: they ask about the
    /// version the caller holds, and the answer (a 304 included) is the caller's.
    var hasOwnConditions: Bool { Self.hasOwnConditions(request.headerFields) }

    /// Whether only a stored answer may answer the call, never the network: the policy is
    /// `.returnCacheDataDontLoad`, or the call (`onlyIfCached`) or the request's `Cache-Control`
    /// (`control`, parsed) says `only-if-cached` (RFC 9111 §5.2.1.7).
    func isCacheOnly(_ control: CacheControl) -> Bool {
        policy == .returnCacheDataDontLoad || onlyIfCached || control.onlyIfCached
    }

    /// Whether `fields` hold a conditional field (`conditionNames`) of the caller's own.
    static func hasOwnConditions(_ fields: HTTPFields) -> Bool { conditionNames.contains { fields[$0] != nil } }

    /// Creates a cache request.
    /// - Parameters:
    ///   - request: The request head as it will be sent (after interceptors added auth).
    ///   - policy: The per-call cache policy.
    ///   - lifetime: A per-call forced lifetime.
    ///   - staleIfError: Per-call stale-if-error; nil uses the configuration.
    ///   - identity: An explicit identity; nil derives it from the credentials in `request`.
    package init(
        _ request: HTTPRequest, policy: CachePolicy = .useProtocolCachePolicy, lifetime: Duration? = nil,
        staleIfError: Bool? = nil, identity: CacheIdentity? = nil
    ) {
        self.request = request
        self.policy = policy
        self.lifetime = lifetime
        self.staleIfError = staleIfError
        self.identity = identity
    }

    /// `scheme://authority/path?query`, lowercased scheme and authority, fragment dropped.
    var normalizedURL: String {
        var path = request.path ?? "/"
        if let hash = path.utf8.firstIndex(of: UInt8(ascii: "#")) { path = String(path[..<hash]) }
        if !realTimeQueryNames.isEmpty { path = Self.removingQueryItems(named: realTimeQueryNames, from: path) }
        return asciiLowercased(request.scheme ?? "https") + "://"
            + asciiLowercased(percentEncodingNonASCII(request.authority ?? "")) + percentEncodingNonASCII(path)
    }

    /// `url` without the query items named in `names` (compared percent-decoded); without its
    /// `?` when no item is left.
    static func removingQueryItems(named names: Set<String>, from url: String) -> String {
        guard !names.isEmpty, let mark = url.firstIndex(of: "?") else { return url }
        let pairs = url[url.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false)
        let kept = pairs.filter { pair in
            let name = pair.firstIndex(of: "=").map { pair[..<$0] } ?? pair
            return !names.contains(RelativePath.percentDecoded(name))
        }
        guard kept.count != pairs.count else { return url }
        return kept.isEmpty ? String(url[..<mark]) : url[...mark] + kept.joined(separator: "&")
    }

    /// The host without port or user info, lowercased, for rule matching.
    var host: String { Self.host(ofAuthority: request.authority ?? "") }

    static func host(ofAuthority authority: String) -> String {
        let bytes = authority.utf8
        var start = bytes.startIndex
        if let at = bytes.lastIndex(of: UInt8(ascii: "@")) { start = bytes.index(after: at) }
        var end = bytes.endIndex
        if bytes[start...].first == UInt8(ascii: "[") {
            if let close = bytes[start...].firstIndex(of: UInt8(ascii: "]")) { end = bytes.index(after: close) }
        } else if let colon = bytes[start...].lastIndex(of: UInt8(ascii: ":")) {
            end = colon
        }
        return asciiLowercased(String(authority[start..<end]))
    }

    /// Whether the URL has a query (heuristic freshness is not used for those).
    var hasQuery: Bool { request.path?.utf8.contains(UInt8(ascii: "?")) ?? false }
}

/// A response served from the cache.
struct CachedResponse: Sendable {
    /// The stored response head, with an `Age` field giving its current age.
    var response: HTTPResponse
    /// The stored body, received whole when it was stored.
    var body: Data
    /// True when it was served past its freshness (max-stale, cache-only policies, stale-if-error).
    var isStale: Bool
    /// Always true: the response did not come from the network.
    var isFromCache: Bool { true }
    /// When the response this entry holds was received.
    var responseTime: Date
    /// The URL the entry was stored for (`scheme://authority/path?query`).
    var url: URL? { entry.parsedURL }
    /// The entry in the store, so a 304 or a failure can refer back to it.
    let entry: CacheEntry
}

/// What a lookup decided.
enum CacheLookupResult: Sendable {
    /// Serve this response; do not touch the network.
    case fresh(CachedResponse)
    /// Send the request with `conditionalHeaders` added (empty when the entry has no
    /// validators); merge a 304 with `HostScopedCache.merge304`, or fall back to the entry on
    /// failure with `HostScopedCache.staleFallback`.
    case stale(CachedResponse, conditionalHeaders: HTTPFields)
    /// Nothing usable: go to the network, then offer the response to `store`.
    case miss
}

/// `text` with each byte past ASCII (and `%` too, `andPercent`) as `%` and two uppercase
/// hexadecimal digits, as a URL carries it (RFC 3987 §3.1); `text` itself when it has none.
/// Keys are compared and hashed as `String`s, whose `==` takes canonically equivalent Unicode
/// strings for equal (`café` composed and decomposed, `K` and KELVIN SIGN): two values a server
/// sees as two must make two keys. A URL keeps its `%` (its own escapes); a header value in a
/// key escapes it too (the request identity, `Vary` variants), so no value reads as another's.
func percentEncodingNonASCII(_ text: String, andPercent: Bool = false) -> String {
    func escapes(_ byte: UInt8) -> Bool { byte >= 0x80 || (andPercent && byte == UInt8(ascii: "%")) }
    var text = text
    let needsEscaping = text.withUTF8 { bytes in bytes.contains(where: escapes) }
    guard needsEscaping else { return text }
    let digits = Array("0123456789ABCDEF".utf8)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(text.utf8.count * 3)
    for byte in text.utf8 {
        guard escapes(byte) else {
            bytes.append(byte)
            continue
        }
        bytes.append(UInt8(ascii: "%"))
        bytes.append(digits[Int(byte >> 4)])
        bytes.append(digits[Int(byte & 0xf)])
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// `text` with ASCII letters lowercased; returns `text` itself (no allocation) when it has none.
func asciiLowercased(_ text: String) -> String {
    var text = text
    let hasUppercase = text.withUTF8 { bytes in bytes.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") } }
    guard hasUppercase else { return text }
    return String(
        decoding: text.utf8.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 + 32 : $0 }, as: UTF8.self)
}

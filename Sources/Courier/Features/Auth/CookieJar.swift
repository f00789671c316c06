import CPsl
import Foundation
import HTTPTypes

/// One stored cookie (RFC 6265 §5.3).
public struct Cookie: Sendable, Hashable {
    /// The cookie's name.
    public var name: String
    /// The cookie's value, as the server sent it.
    public var value: String
    /// The host (host-only) or the domain it was set for, lowercased, without a leading dot.
    public var domain: String
    /// Sent only to exactly `domain`, not its subdomains.
    public var hostOnly: Bool
    /// Sent only to request paths under this one (RFC 6265 §5.1.4).
    public var path: String
    /// Sent only over https.
    public var secure: Bool
    /// Set with `HttpOnly`: kept from scripts in a browser; Courier sends it like any other.
    public var httpOnly: Bool
    /// When it stops being sent; nil for a session cookie.
    public var expires: Date?
}

/// A cookie jar for one client: stores `Set-Cookie` answers and adds the `Cookie` header
/// to requests, following the domain, path, secure and expiry rules of RFC 6265.
///
/// Bounded (`maximumCookies` in total, `maximumCookiesPerDomain` per site: a registrable domain
/// and its subdomains together), cleared with
/// `removeAll()` — which the client and the service do on logout unless `clearsOnLogout` is
/// off. A cookie whose `Domain` does not match the answering host, or names a public suffix
/// (`com`, `co.uk`, `github.io`: the Public Suffix List, through libpsl), is refused, so one
/// site cannot set cookies for another; a `Domain` naming the host itself when it is a public
/// suffix, an IP address or `localhost` sets a host-only cookie. A `Secure` cookie is taken only from an https answer
/// and sent only over https; an http answer cannot replace it, and names starting `__Secure-`
/// or `__Host-` need what their prefix promises (RFC 6265bis). `Expires` is read as RFC 6265
/// §5.1.1 reads cookie dates. `SameSite` is ignored: a client sends no cross-site requests
/// (no page of one site calling another), so, like curl, it sends a cookie wherever its
/// domain, path, `Secure` and expiry allow.
///
/// The jar belongs to whoever made it: one per client (`HTTPClient.Configuration.cookieJar`)
/// or per service. Nothing is kept on connections or transfer handles, so a client sharing a
/// transport with another never sees its cookies.
public final class CookieJar: Sendable {
    private let contents = LockedValue(Contents())
    private struct Contents {
        /// In the order they were last set: the front is dropped first when over a bound.
        var cookies: [Stored] = []
        /// The next cookie's creation number.
        var created: UInt64 = 0
        /// Moves on at every `removeAll()`: an answer to a request sent before is not stored.
        var clearings: UInt64 = 0
    }
    private let clock: any ServiceClock
    let maximumCookies: Int
    let maximumCookiesPerDomain: Int
    /// Whether logging out (of the client or the service that holds the jar) forgets every cookie.
    let clearsOnLogout: Bool
    /// A number no other jar of the process has had: part of a service call's identity, as its
    /// jar's cookies follow the call's redirects (an address could be a released jar's).
    let identityNumber = IdentityNumber.next()

    /// An empty jar with the given limits.
    /// - Parameters:
    ///   - maximumCookies: the most cookies kept; the oldest are dropped first.
    ///   - maximumCookiesPerDomain: the most cookies kept per site (`example.co.uk` and its
    ///     subdomains together).
    ///   - clearsOnLogout: whether logout forgets every cookie (the default); off for cookies
    ///     that belong to the device rather than the user (a consent choice, a device id).
    public convenience init(
        maximumCookies: Int = 3_000, maximumCookiesPerDomain: Int = 50, clearsOnLogout: Bool = true
    ) {
        self.init(
            clock: .system, maximumCookies: maximumCookies, maximumCookiesPerDomain: maximumCookiesPerDomain,
            clearsOnLogout: clearsOnLogout)
    }

    /// The same with an injected clock (tests).
    init(
        clock: any ServiceClock, maximumCookies: Int = 3_000, maximumCookiesPerDomain: Int = 50,
        clearsOnLogout: Bool = true
    ) {
        self.clock = clock
        self.maximumCookies = max(1, maximumCookies)
        self.maximumCookiesPerDomain = max(1, maximumCookiesPerDomain)
        self.clearsOnLogout = clearsOnLogout
    }

    /// What logout does to the jar: forgets every cookie when `clearsOnLogout`.
    func logOut() {
        if clearsOnLogout { removeAll() }
    }

    /// Every cookie not expired.
    public var all: [Cookie] {
        let now = clock.wallTime
        return contents.withLock { $0.cookies.lazy.map(\.cookie).filter { !$0.isExpired(at: now) } }
    }

    /// Forgets every cookie, and those of the answers still on their way.
    public func removeAll() {
        contents.withLock { contents in
            contents.cookies.removeAll()
            contents.clearings &+= 1
        }
    }

    /// How many times the jar was emptied: read when a request starts, handed back to
    /// `store(from:for:session:)` with its answers.
    var session: UInt64 { contents.withLock { $0.clearings } }

    /// Stores the cookies a response sets.
    /// - Parameters:
    ///   - response: the response, with its `Set-Cookie` fields.
    ///   - request: the request it answers (for the host and default path).
    ///   - session: `session` when the request started; when the jar was emptied since (a
    ///     logout), the answer is the ended session's and nothing is stored.
    func store(from response: HTTPResponse, for request: HTTPRequest, session: UInt64? = nil) {
        let lines = response.headerFields[values: .setCookie]
        guard !lines.isEmpty, let host = Self.host(of: request) else { return }
        let now = clock.wallTime
        let secure = request.scheme?.lowercased() == "https"
        let parsed = lines.compactMap {
            Self.parse($0, host: host, requestPath: request.path ?? "/", now: now, secureOrigin: secure)
        }
        guard !parsed.isEmpty else { return }
        contents.withLock { contents in
            guard session.map({ $0 == contents.clearings }) ?? true else { return }
            insert(parsed, into: &contents, secure: secure, now: now)
        }
    }

    /// A cookie and its creation number (RFC 6265 §5.3's creation-time, which orders the
    /// `Cookie` line and which a replacement keeps).
    private struct Stored {
        var cookie: Cookie
        var created: UInt64
    }

    /// Adds `parsed` to the jar, dropping the expired and what is over the bounds.
    private func insert(_ parsed: [Cookie], into contents: inout Contents, secure: Bool, now: Date) {
        for cookie in parsed {
            // RFC 6265bis §5.7 step 16: an http answer neither replaces nor shadows (nor
            // deletes) a `Secure` cookie, which only an https answer could have set.
            if !secure, contents.cookies.contains(where: { $0.cookie.secure && Self.shadows(cookie, $0.cookie) }) {
                continue
            }
            // RFC 6265bis §5.7 step 22: the same name, domain, path and host-only flag (a host-only
            // cookie and a `Domain` one for the same host are two cookies, as in browsers). The
            // new one keeps the old one's creation-time (step 22.3), so its place in the line.
            var created: UInt64?
            contents.cookies.removeAll {
                let same =
                    $0.cookie.name == cookie.name && $0.cookie.domain == cookie.domain
                    && $0.cookie.path == cookie.path && $0.cookie.hostOnly == cookie.hostOnly
                if same { created = $0.created }
                return same
            }
            // An already-expired cookie is how a server deletes one.
            guard !cookie.isExpired(at: now) else { continue }
            let creation = created ?? contents.created
            if created == nil { contents.created &+= 1 }
            contents.cookies.append(Stored(cookie: cookie, created: creation))
        }
        contents.cookies.removeAll { $0.cookie.isExpired(at: now) }
        // Bounded per site, not per domain name: a host with many labels sets cookies for
        // each of its parents, and could push every other site's cookies out of the jar.
        for site in Set(parsed.map { Self.site(of: $0.domain) }) {
            let subdomains = "." + site
            let inSite = { (stored: Stored) in
                stored.cookie.domain == site || stored.cookie.domain.hasSuffix(subdomains)
            }
            let count = contents.cookies.lazy.filter(inSite).count
            if count > maximumCookiesPerDomain {
                var excess = count - maximumCookiesPerDomain
                contents.cookies.removeAll { cookie in
                    guard excess > 0, inSite(cookie) else { return false }
                    excess -= 1
                    return true
                }
            }
        }
        if contents.cookies.count > maximumCookies {
            contents.cookies.removeFirst(contents.cookies.count - maximumCookies)
        }
    }

    /// The `Cookie` header value for a request, or nil when no cookie applies.
    /// - Parameter request: the request about to be sent.
    func cookieHeader(for request: HTTPRequest) -> String? {
        guard let host = Self.host(of: request) else { return nil }
        let secure = request.scheme?.lowercased() == "https"
        let path = Self.pathOnly(request.path ?? "/")
        let now = clock.wallTime
        let matching = contents.withLock { contents in
            contents.cookies.filter { stored in
                let cookie = stored.cookie
                return !cookie.isExpired(at: now) && (!cookie.secure || secure)
                    && (cookie.hostOnly ? host == cookie.domain : Self.domainMatches(host, cookie.domain))
                    && Self.pathMatches(path, cookie.path)
            }
        }
        guard !matching.isEmpty else { return nil }
        // Longer paths first, then earlier creation-time (RFC 6265 §5.4 step 2).
        let ordered = matching.sorted {
            $0.cookie.path.count != $1.cookie.path.count
                ? $0.cookie.path.count > $1.cookie.path.count : $0.created < $1.created
        }
        return ordered.map { "\($0.cookie.name)=\($0.cookie.value)" }.joined(separator: "; ")
    }

    /// Adds the `Cookie` field to `request` when cookies apply and it has none.
    func apply(to request: inout HTTPRequest) {
        guard request.headerFields[.cookie] == nil, let header = cookieHeader(for: request) else { return }
        request.headerFields[.cookie] = header
    }

    // MARK: - Parsing and matching

    static func host(of request: HTTPRequest) -> String? {
        guard var authority = request.authority?.lowercased(), !authority.isEmpty else { return nil }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            return String(authority[...close])
        }
        if let colon = authority.lastIndex(of: ":") { authority = String(authority[..<colon]) }
        return authority
    }

    /// The cookie a `Set-Cookie` line sets, or nil when it is malformed or refused (RFC 6265 §5.3).
    /// - Parameters:
    ///   - secureOrigin: whether the answer came over https; a `Secure` cookie from anywhere
    ///     else is refused (RFC 6265bis §5.6 step 8).
    static func parse(_ line: String, host: String, requestPath: String, now: Date, secureOrigin: Bool = true)
        -> Cookie?
    {
        let parts = line.split(separator: ";", omittingEmptySubsequences: false)
        guard let pair = parts.first, let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
        let value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, Self.isSafe(name), Self.isSafe(value) else { return nil }
        // RFC 6265bis §5.6 step 4: a name and value over 4,096 bytes are ignored, or a server's
        // few answers could fill the jar with megabytes sent back on every request.
        guard name.utf8.count + value.utf8.count <= Self.maximumNameAndValueBytes else { return nil }
        var cookie = Cookie(
            name: name, value: value, domain: host, hostOnly: true, path: defaultPath(requestPath), secure: false,
            httpOnly: false, expires: nil)
        var maxAge: Int?
        var hasPathAttribute = false
        var domainAttribute: String?
        for attribute in parts.dropFirst() {
            let pieces = attribute.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = pieces[0].trimmingCharacters(in: .whitespaces).lowercased()
            let argument = pieces.count > 1 ? pieces[1].trimmingCharacters(in: .whitespaces) : ""
            // RFC 6265bis §5.6: a longer value is ignored (a `Path` of 100 KiB per cookie, fifty
            // per site, kept megabytes in the jar).
            guard argument.utf8.count <= Self.maximumAttributeValueBytes else { continue }
            switch key {
            case "expires":
                if let date = cookieDate(argument) { cookie.expires = date }
            case "max-age":
                if let seconds = maxAgeSeconds(argument) { maxAge = seconds }
            case "domain":
                // RFC 6265 §5.3 step 4: the last `Domain` counts (an empty one is ignored).
                var domain = argument.lowercased()
                if domain.hasPrefix(".") { domain.removeFirst() }
                if !domain.isEmpty { domainAttribute = domain }
            case "path":
                // RFC 6265bis §5.6.4 and §5.7 step 7: the last `Path` counts, and one that does
                // not start with `/` (or is empty) is the default path, not a reason to keep an
                // earlier one. `__Host-` needs the last one to be `/` itself.
                let valid = argument.hasPrefix("/")
                cookie.path = valid ? argument : defaultPath(requestPath)
                hasPathAttribute = valid
            case "secure":
                cookie.secure = true
            case "httponly":
                cookie.httpOnly = true
            default:
                continue
            }
        }
        if let domain = domainAttribute {
            // Not for another site.
            guard domainMatches(host, domain) else { return nil }
            if isIPAddress(host) || !domain.contains(".") || isPublicSuffix(domain) {
                // RFC 6265 §5.3 step 5: an IP address, a bare top-level name (`localhost`)
                // or a public suffix is only the host's own name, as a host-only cookie; for
                // any other host it would reach every site under it.
                guard domain == host else { return nil }
            } else {
                cookie.domain = domain
                cookie.hostOnly = false
            }
        }
        if let maxAge { cookie.expires = now.addingTimeInterval(TimeInterval(maxAge)) }
        if cookie.secure && !secureOrigin { return nil }
        // RFC 6265bis §4.1.3: the name prefixes (in any case) promise how the cookie was set;
        // an http answer or another subdomain must not plant one a server then trusts.
        let lowercasedName = name.lowercased()
        if lowercasedName.hasPrefix("__secure-"), !cookie.secure { return nil }
        if lowercasedName.hasPrefix("__host-"),
            !cookie.secure || !cookie.hostOnly || !hasPathAttribute || cookie.path != "/"
        {
            return nil
        }
        return cookie
    }

    /// A `Max-Age` value (RFC 6265 §5.2.2: digits after an optional `-`; anything else is
    /// ignored), a number past `Int` read as the nearest bound: a server's "for ever" outlives
    /// the session and its huge negative value deletes the cookie, as the RFC reads them.
    static func maxAgeSeconds(_ text: String) -> Int? {
        var digits = Substring(text)
        let negative = digits.hasPrefix("-")
        if negative { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        guard let value = Int(digits) else { return negative ? Int.min : Int.max }
        return negative ? -value : value
    }

    /// Whether `new` would replace or shadow `old` (same name, either domain within the other,
    /// `new`'s path within `old`'s): what an insecure answer may not do to a `Secure` cookie.
    private static func shadows(_ new: Cookie, _ old: Cookie) -> Bool {
        new.name == old.name && (domainMatches(new.domain, old.domain) || domainMatches(old.domain, new.domain))
            && pathMatches(new.path, old.path)
    }

    /// The most bytes of a cookie's name and value together (RFC 6265bis, as browsers keep).
    static let maximumNameAndValueBytes = 4_096

    /// The most bytes of an attribute's value (RFC 6265bis, as browsers keep).
    static let maximumAttributeValueBytes = 1_024

    private static func isSafe(_ text: String) -> Bool {
        !text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0 == ";" }
    }

    static func defaultPath(_ requestPath: String) -> String {
        let path = pathOnly(requestPath)
        guard path.hasPrefix("/"), let lastSlash = path.lastIndex(of: "/"), lastSlash != path.startIndex else {
            return "/"
        }
        return String(path[..<lastSlash])
    }

    static func pathOnly(_ target: String) -> String {
        String(target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "/")
    }

    static func domainMatches(_ host: String, _ domain: String) -> Bool {
        host == domain || (host.hasSuffix("." + domain) && !isIPAddress(host))
    }

    static func pathMatches(_ path: String, _ cookiePath: String) -> Bool {
        if path == cookiePath { return true }
        guard path.hasPrefix(cookiePath) else { return false }
        return cookiePath.hasSuffix("/") || path.dropFirst(cookiePath.count).hasPrefix("/")
    }

    /// Whether `domain` (lower-case) is on the Public Suffix List, or an unlisted top-level name
    /// (libpsl's `*` rule). The list is libpsl's built-in copy: no file is read.
    ///
    /// Read without the root's dot: a host written fully qualified (`evil.co.uk.`) sets
    /// `Domain=co.uk.`, which libpsl does not list, and its cookie reached every `.co.uk.` site.
    static func isPublicSuffix(_ domain: String) -> Bool {
        let name = withoutRootDot(domain)
        guard !name.isEmpty else { return true }
        guard let list = psl_builtin() else { return !name.contains(".") }
        return psl_is_public_suffix(list, name) != 0
    }

    /// `name` without the trailing dots of a fully qualified name (`example.com.`).
    static func withoutRootDot(_ name: String) -> String {
        var name = Substring(name)
        while name.hasSuffix(".") { name = name.dropLast() }
        return String(name)
    }

    /// The site a cookie's domain belongs to: its registrable domain (`example.co.uk` for
    /// `a.b.example.co.uk`), or the domain itself (an IP address, a public suffix host).
    static func site(of domain: String) -> String {
        guard !isIPAddress(domain), let list = psl_builtin() else { return domain }
        // Without the root's dot, as `isPublicSuffix` reads it (`a.example.co.uk.` and
        // `example.co.uk.` are one site); the dot is kept on the answer.
        let bare = withoutRootDot(domain)
        let dots = domain.utf8.count - bare.utf8.count
        // The answer points into the argument: read it while the C string lives.
        return bare.withCString { name in
            psl_registrable_domain(list, name).map { String(cString: $0) + String(repeating: ".", count: dots) }
                ?? domain
        }
    }

    /// Whether `host` is an IP address: an IPv6 literal, or a name whose last label is a
    /// number (WHATWG's "ends in a number": libcurl reads `127.1`, `0x7f.0.1` or `2130706433`
    /// as an IPv4 address, 127.0.0.1). No top-level domain is a number.
    static func isIPAddress(_ host: String) -> Bool {
        if host.hasPrefix("[") { return true }
        guard let last = withoutRootDot(host).split(separator: ".", omittingEmptySubsequences: false).last,
            !last.isEmpty
        else { return false }
        let digits = last.utf8
        if digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) { return true }
        // `0x` and hex digits (none is a zero too).
        guard digits.count >= 2, last.hasPrefix("0x") || last.hasPrefix("0X") else { return false }
        return digits.dropFirst(2).allSatisfy { byte in
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
        }
    }
}

extension Cookie {
    func isExpired(at now: Date) -> Bool { expires.map { $0 <= now } ?? false }
}

/// A cookie's value is the user's session: a description or a dump (a log line, `print(jar.all)`,
/// a test failure) shows it as `Redaction.marker`, as it does the `Cookie` field.
extension Cookie: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The cookie with its value redacted.
    public var description: String {
        "Cookie(\(name)=\(Redaction.marker); domain: \(domain)\(hostOnly ? " (host only)" : ""), path: \(path)"
            + "\(secure ? ", secure" : "")\(httpOnly ? ", httpOnly" : "")"
            + "\(expires.map { ", expires: \(HTTPDateFormat.format($0))" } ?? ""))"
    }

    /// The same as `description`.
    public var debugDescription: String { description }

    /// The attributes, with the value redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "name": name, "value": Redaction.marker, "domain": domain, "hostOnly": hostOnly, "path": path,
                "secure": secure, "httpOnly": httpOnly, "expires": expires as Any,
            ], displayStyle: .struct)
    }
}

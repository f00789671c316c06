import Foundation

extension HTTPClient.Configuration {
    /// Which proxy requests go through: none (the default), the one the environment names, or
    /// one of your own.
    ///
    /// ```swift
    /// configuration.proxy = .url(URL(string: "http://proxy.internal:3128")!, bypass: ["localhost", ".internal"])
    /// configuration.proxy = .url(URL(string: "socks5h://127.0.0.1:1080")!, username: "alice", password: secret)
    /// configuration.proxy = .environment  // http_proxy, https_proxy, all_proxy, no_proxy
    /// ```
    ///
    /// The default is `.none`: a library that reads `http_proxy` by itself sends an app's
    /// traffic (and its credentials) wherever the environment of the process says, which a CGI
    /// request header can set (httpoxy). Opt in with `.environment`.
    ///
    /// Proxy credentials are never logged: `description` and reflection show them redacted.
    public struct Proxy: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
        enum Mode: Sendable, Hashable {
            case none
            /// The variables to read; nil: the process's, when the client is made.
            case environment([String: String]?)
            case fixed(ProxyRoute, bypass: [String])
        }

        let mode: Mode

        /// No proxy, whatever `http_proxy` and friends say (the default).
        public static let none = Proxy(mode: .none)

        /// The proxy the environment names, read when the client is made, the way curl reads it:
        /// `http_proxy` for http (lower case only: `HTTP_PROXY` can be set by a CGI request
        /// header), `https_proxy` or `HTTPS_PROXY` for https, else `all_proxy` or `ALL_PROXY`;
        /// hosts in `no_proxy` or `NO_PROXY` are reached directly.
        public static let environment = Proxy(mode: .environment(nil))

        /// `.environment` reading `variables` instead of the process's (tests).
        static func environment(_ variables: [String: String]) -> Proxy { Proxy(mode: .environment(variables)) }

        /// Every request through the proxy at `url`, except to the hosts in `bypass`.
        /// - Parameters:
        ///   - url: `http://` (https goes through a CONNECT tunnel), `https://`, `socks4://`,
        ///     `socks4a://`, `socks5://` or `socks5h://` (the proxy resolves host names); the
        ///     credentials may be in the URL (`http://user:password@host:3128`).
        ///   - username: the proxy user (Basic for an HTTP proxy, RFC 1929 for SOCKS5).
        ///   - password: the proxy password.
        ///   - bypass: hosts reached directly, as in `no_proxy`: a name matches itself and its
        ///     subdomains, an address or CIDR range matches addresses (an IPv6 one bare or in
        ///     brackets), `*` matches every host; no ports.
        public static func url(
            _ url: URL, username: String? = nil, password: String? = nil, bypass: [String] = []
        ) -> Proxy {
            var route = ProxyRoute(url.absoluteString)
            if let username { route.username = username }
            if let password { route.password = password }
            return Proxy(mode: .fixed(route, bypass: bypass))
        }

        /// The proxy, with its password redacted.
        public var description: String {
            switch mode {
            case .none: "none"
            case .environment: "environment"
            case .fixed(let route, let bypass):
                bypass.isEmpty ? route.description : "\(route.description) (bypass: \(bypass.joined(separator: ",")))"
            }
        }

        /// The description only: a dump of a configuration must not show the password.
        public var customMirror: Mirror { Mirror(self, children: ["proxy": description]) }

        /// The routes for each scheme; `.environment` reads the variables now.
        func resolved() -> ResolvedProxy {
            switch mode {
            case .none:
                return ResolvedProxy()
            case .fixed(let route, let bypass):
                return ResolvedProxy(
                    http: route, https: route,
                    noProxy: bypass.isEmpty ? nil : Self.curlNoProxy(bypass.joined(separator: ",")))
            case .environment(let variables):
                let environment = variables ?? ProcessInfo.processInfo.environment
                func value(_ names: String...) -> String? {
                    names.lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
                }
                let all = value("all_proxy", "ALL_PROXY")
                return ResolvedProxy(
                    http: (value("http_proxy") ?? all).map(ProxyRoute.init),
                    https: (value("https_proxy", "HTTPS_PROXY") ?? all).map(ProxyRoute.init),
                    noProxy: value("no_proxy", "NO_PROXY").map(Self.curlNoProxy))
            }
        }

        /// curl's `NOPROXY` list for a `no_proxy` list: an IPv6 address written as in a URL
        /// (`[::1]`, `[fd00::]/8`) loses its brackets. curl matches the bare form only, so the
        /// requests such an entry names went through the proxy, credentials and all.
        static func curlNoProxy(_ list: String) -> String {
            list.split(separator: ",", omittingEmptySubsequences: false).map { item in
                let entry = item.trimmingCharacters(in: .whitespaces)
                guard entry.hasPrefix("["), let close = entry.firstIndex(of: "]") else { return String(item) }
                let rest = entry[entry.index(after: close)...]
                guard rest.isEmpty || rest.hasPrefix("/") else { return String(item) }
                return String(entry[entry.index(after: entry.startIndex)..<close] + rest)
            }.joined(separator: ",")
        }

        /// Whether a bypass entry is `host:port` or `[address]:port` (an IPv6 address alone has
        /// two colons or more).
        static func hasPort(_ entry: String) -> Bool {
            if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") {
                return entry[entry.index(after: close)...].hasPrefix(":")
            }
            return entry.utf8.lazy.filter { $0 == UInt8(ascii: ":") }.count == 1
        }

        /// What makes every request fail.
        /// - Throws: `CourierError.configuration`, without the credentials.
        func validate() throws(CourierError) {
            if case .fixed(_, let bypass) = mode {
                let forbidden: (Character) -> Bool = { $0.isNewline || $0 == "\0" || $0 == "," || $0 == " " }
                if bypass.contains(where: { $0.isEmpty || $0.contains(where: forbidden) }) {
                    throw CourierError(.configuration, "invalid proxy bypass entry")
                }
                // curl matches no_proxy entries by host alone: `host:port` would never match,
                // and the requests it names would go through the proxy.
                if bypass.contains(where: Self.hasPort) {
                    throw CourierError(.configuration, "a proxy bypass entry names a port; give the host alone")
                }
            }
            let routes = resolved()
            try routes.http?.validate()
            try routes.https?.validate()
            if routes.noProxy?.contains(where: { $0.isNewline || $0 == "\0" }) == true {
                throw CourierError(.configuration, "invalid no_proxy list")
            }
        }
    }
}

/// One proxy: its URL without credentials, and the credentials apart (curl's `PROXYUSERNAME`
/// and `PROXYPASSWORD`), so that no URL Courier keeps or shows carries the password.
struct ProxyRoute: Sendable, Hashable, CustomStringConvertible {
    static let schemes: Set<String> = ["http", "https", "socks4", "socks4a", "socks5", "socks5h"]

    var url: String
    var username: String?
    var password: String?

    /// A proxy URL as users write it (`host:3128` means `http://host:3128`); the credentials in
    /// it are taken out.
    init(_ text: String) {
        let full = text.contains("://") ? text : "http://" + text
        guard var components = URLComponents(string: full) else {
            // Unreadable (a CR or LF, a space in the host): `validate()` refuses it with
            // `description` in its message, so the credentials come out by hand all the same.
            (url, username, password) = Self.splitCredentials(full)
            return
        }
        username = components.user
        password = components.password
        components.user = nil
        components.password = nil
        url = components.string ?? full
    }

    /// The URL without its `user:password@`, and the two apart, for a URL `URLComponents`
    /// cannot read: the user information ends at the last `@`, even past a `/`, `?` or `#`.
    /// A password written without percent-encoding (as environment variables often have it)
    /// holds those too, and ending the authority at the first of them kept the password in the
    /// URL that `description` and the configuration error show; a proxy URL has no use for an
    /// `@` in a path.
    private static func splitCredentials(_ text: String) -> (String, String?, String?) {
        guard let separator = text.range(of: "://") else { return (text, nil, nil) }
        let rest = text[separator.upperBound...]
        guard let at = rest.lastIndex(of: "@") else { return (text, nil, nil) }
        let userInfo = rest[..<at]
        let colon = userInfo.firstIndex(of: ":")
        let decoded = { (part: Substring) -> String in part.removingPercentEncoding ?? String(part) }
        let url = String(text[..<separator.upperBound]) + String(rest[rest.index(after: at)...])
        let username = decoded(userInfo[..<(colon ?? userInfo.endIndex)])
        let password = colon.map { decoded(userInfo[userInfo.index(after: $0)...]) }
        return (url, username, password)
    }

    var scheme: String? { URLComponents(string: url)?.scheme?.lowercased() }

    var description: String {
        guard let username else { return url }
        guard let range = url.range(of: "://") else { return url }
        let user = username + (password == nil ? "" : ":" + Redaction.marker)
        return url[..<range.upperBound] + user + "@" + url[range.upperBound...]
    }

    func validate() throws(CourierError) {
        let forbidden: (Character) -> Bool = { $0.isNewline || $0 == "\0" }
        guard let scheme, Self.schemes.contains(scheme), URLComponents(string: url)?.host?.isEmpty == false,
            !url.contains(where: forbidden)
        else {
            throw CourierError(.configuration, "invalid proxy URL \(description)")
        }
        if username?.contains(where: forbidden) == true || password?.contains(where: forbidden) == true {
            throw CourierError(.configuration, "invalid proxy credentials for \(description)")
        }
    }
}

/// The proxy of each scheme, as the transport applies it to a transfer.
struct ResolvedProxy: Sendable, Hashable {
    var http: ProxyRoute?
    var https: ProxyRoute?
    /// curl's `NOPROXY` list (comma-separated).
    var noProxy: String?

    func route(isHTTPS: Bool) -> ProxyRoute? { isHTTPS ? https : http }
}

import Foundation
import HTTPTypes

#if canImport(Glibc)
    import Glibc
#endif

/// A server's base URL: `https://api.example.com/v1`. Only `http` and `https`, a host,
/// an optional path prefix; no credentials, query or fragment.
@_spi(Fuzzing) public struct BaseURL: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`, lowercased.
    @_spi(Fuzzing) public let scheme: String
    /// `host[:port]`, host lowercased (IPv6 hosts in brackets).
    @_spi(Fuzzing) public let authority: String
    /// The path prefix without a trailing slash: `""` or `/v1`.
    @_spi(Fuzzing) public let pathPrefix: String
    /// The same base URL as a Foundation `URL` (normalised: lowercased host, no trailing
    /// slash), for APIs that take one, such as `HTTPClient.Configuration.baseURL`.
    let url: URL

    /// Parses and validates a base URL.
    /// - Parameter string: the URL, such as `https://api.example.com/v1/`.
    /// - Throws: `CourierError.configuration` when it is not a usable base URL.
    @_spi(Fuzzing) public init(_ string: String) throws {
        guard let separator = string.range(of: "://") else {
            // Not quoted: it may carry a key in its query.
            throw CourierError(.configuration, "the base URL has no scheme (such as https://)")
        }
        let scheme = string[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw CourierError(.configuration, "the base URL scheme '\(scheme)' is not http or https")
        }
        let rest = string[separator.upperBound...]
        if rest.contains("?") || rest.contains("#") {
            throw CourierError(.configuration, "the base URL must not have a query or fragment")
        }
        if rest.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || $0 == "\\" }) {
            throw CourierError(.configuration, "the base URL contains spaces, control characters or backslashes")
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        guard !authority.isEmpty else { throw CourierError(.configuration, "the base URL has no host") }
        if authority.contains("@") {
            throw CourierError(.configuration, "the base URL must not carry credentials")
        }
        // libcurl decodes a percent-encoded host name (`good.example%2eevil.example` connects to
        // good.example.evil.example) while the authority compared for caching and credentials
        // stays encoded: refuse it. Only an IPv6 literal may hold a `%` (its zone, `%25eth0`).
        if !authority.hasPrefix("["), authority.contains("%") {
            throw CourierError(.configuration, "the base URL host must not be percent-encoded")
        }
        if authority.hasPrefix("["), !Self.isIPv6Literal(authority) {
            throw CourierError(.configuration, "the base URL host is not a valid IPv6 address")
        }
        // A host name in ASCII only: libcurl converts a Unicode name with IDNA (UTS #46 maps
        // fullwidth `ｅｘａｍｐｌｅ.com` to `example.com`), so the host it connects to would not be
        // the authority compared for caching and credentials. Punycode (`xn--…`) is the form.
        if !authority.hasPrefix("[") {
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let isNameByte: (UInt8) -> Bool = {
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                    || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_")
            }
            guard !parts[0].isEmpty, parts[0].utf8.allSatisfy(isNameByte) else {
                throw CourierError(
                    .configuration,
                    "the base URL host must be an ASCII host name (a Unicode name in its punycode form, xn--…) or an IP address"
                )
            }
            if parts.count == 2, !parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
                throw CourierError(.configuration, "the base URL port must be a number")
            }
        }
        guard let components = URLComponents(string: "\(scheme)://\(authority)/"), let host = components.host,
            !host.isEmpty
        else {
            throw CourierError(.configuration, "the base URL has an invalid host")
        }
        var prefix = String(rest[slash...])
        while prefix.hasSuffix("/") { prefix.removeLast() }
        if !prefix.isEmpty {
            // The prefix goes through the same checks as a call's path; a refusal is a
            // configuration error here, not a bad request.
            let validated: RelativePath
            do {
                validated = try RelativePath(prefix)
            } catch let error as CourierError {
                throw CourierError(.configuration, "the base URL path: \(error.message)", underlying: error)
            }
            prefix = validated.segments.isEmpty ? "" : "/" + validated.encoded
        }
        self.scheme = scheme
        self.authority = authority.lowercased()
        self.pathPrefix = prefix
        guard let url = URL(string: "\(scheme)://\(self.authority)\(prefix)") else {
            throw CourierError(.configuration, "the base URL is not a URL Foundation can read")
        }
        self.url = url
    }

    /// Validates a Foundation `URL` as a base URL.
    /// - Throws: `CourierError.configuration` when it is not a usable base URL.
    init(_ url: URL) throws {
        try self.init(url.absoluteString)
    }

    /// Whether `authority` starts with a bracketed IPv6 address (an optional `%25` zone after
    /// it) followed by nothing or a port: `[]` and `[::g]` are not hosts.
    private static func isIPv6Literal(_ authority: Substring) -> Bool {
        guard let close = authority.firstIndex(of: "]") else { return false }
        var literal = authority[authority.index(after: authority.startIndex)..<close]
        if let zone = literal.range(of: "%25") {
            guard zone.upperBound < literal.endIndex else { return false }
            literal = literal[..<zone.lowerBound]
        }
        var address = in6_addr()
        guard inet_pton(AF_INET6, String(literal), &address) == 1 else { return false }
        let after = authority[authority.index(after: close)...]
        let port = after.dropFirst()
        return after.isEmpty || (after.hasPrefix(":") && !port.isEmpty && port.allSatisfy { $0.isASCII && $0.isNumber })
    }

    /// The URL as text, without a trailing slash.
    @_spi(Fuzzing) public var description: String { "\(scheme)://\(authority)\(pathPrefix)" }

    /// The request target (`/v1/users/42?x=1`) for a relative path.
    /// - Parameter path: a validated relative path.
    /// - Returns: the absolute path and query to send.
    @_spi(Fuzzing) public func target(for path: RelativePath) -> String {
        let relative = path.encoded
        if relative.isEmpty || relative.hasPrefix("?") {
            return (pathPrefix.isEmpty ? "/" : pathPrefix) + relative
        }
        return pathPrefix + "/" + relative
    }

    /// The full URL as text for a relative path (`https://api.example.com/v1/users/42`).
    /// - Parameter path: a validated relative path.
    /// - Returns: the URL string.
    @_spi(Fuzzing) public func urlString(for path: RelativePath) -> String {
        "\(scheme)://\(authority)\(target(for: path))"
    }

    /// A request head for `method` and `path` on this server.
    /// - Parameters:
    ///   - method: the HTTP method.
    ///   - path: a validated relative path.
    ///   - headerFields: headers to start with.
    /// - Returns: the request head.
    @_spi(Fuzzing) public func request(
        _ method: HTTPRequest.Method, _ path: RelativePath, headerFields: HTTPFields = [:]
    ) -> HTTPRequest {
        HTTPRequest(
            method: method, scheme: scheme, authority: authority, path: target(for: path), headerFields: headerFields)
    }
}

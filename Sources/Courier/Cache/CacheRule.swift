import Foundation

/// Which hosts a `HostScopedCache` caches, and how.
///
/// A pattern starting with a dot matches that domain and every subdomain
/// (`.cdn.example.com` matches `cdn.example.com` and `img.cdn.example.com`); any other
/// pattern matches one host exactly. Matching ignores case, the port and a final dot (the
/// fully qualified `cdn.example.com.` is the host `cdn.example.com`). A pattern in Unicode
/// (`bücher.example`) matches its punycode host (`xn--bcher-kva.example`), the only form a
/// `BaseURL` takes.
public struct CacheRule: Sendable, Hashable {
    /// What the cache does with a matching host's responses.
    public enum Policy: Sendable, Hashable {
        /// Follow HTTP caching headers (RFC 9111, private-cache rules).
        case followHTTP
        /// Keep every storable GET response for this long, whatever its caching headers say.
        case forceLifetime(Duration)
        /// Never store or serve cached responses.
        case never
    }

    /// The host, or a `.suffix` pattern.
    var pattern: String
    /// The policy for matching hosts.
    var policy: Policy

    /// Creates a rule.
    /// - Parameters:
    ///   - pattern: A host (`api.example.com`) or a suffix starting with a dot (`.cdn.example.com`),
    ///     without a scheme, port or path: `HostScopedCache` refuses any other pattern.
    ///   - policy: What to do with matching hosts' responses.
    public init(_ pattern: String, _ policy: Policy) {
        self.pattern = Self.bracketingIPv6(Self.withoutFinalDot(Self.punycode(pattern.lowercased())))
        self.policy = policy
    }

    /// Whether the rule matches `host` (lowercased, without port).
    ///
    /// A final dot is dropped first: `pay.example.com.` is `pay.example.com` (curl connects to
    /// the same server), and must meet its rules. Before, the dot made it match none, so the
    /// default policy cached a host whose rule said `.never`.
    func matches(_ host: String) -> Bool {
        var host = Self.withoutFinalDot(host)
        guard pattern.utf8.first == UInt8(ascii: ".") else { return host == pattern }
        var pattern = pattern
        return host.withUTF8 { hostBytes in
            pattern.withUTF8 { patternBytes in
                if hostBytes.count == patternBytes.count - 1 {
                    return hostBytes.elementsEqual(patternBytes.dropFirst())
                }
                return hostBytes.count > patternBytes.count
                    && hostBytes[(hostBytes.count - patternBytes.count)...].elementsEqual(patternBytes)
            }
        }
    }
}

extension CacheRule {
    /// Refuses a pattern that is no host name: one of those matched no host, silently, so a
    /// `.never` rule written as a URL (`https://pay.example.com`) or with a port was ignored and
    /// the default policy cached the host.
    /// - Throws: `CourierError.configuration` naming the pattern.
    func validate() throws(CourierError) {
        let name = pattern.utf8.first == UInt8(ascii: ".") ? pattern.utf8.dropFirst() : pattern.utf8[...]
        let isNameByte: (UInt8) -> Bool = {
            (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) || $0 == UInt8(ascii: "-")
                || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_")
        }
        let isIPv6Byte: (UInt8) -> Bool = {
            (0x30...0x39).contains($0) || (0x61...0x66).contains($0) || $0 == UInt8(ascii: ":")
                || $0 == UInt8(ascii: ".")
        }
        let isHost: Bool
        if name.first == UInt8(ascii: "["), pattern.utf8.first != UInt8(ascii: ".") {
            isHost =
                name.count > 2 && name.last == UInt8(ascii: "]") && name.dropFirst().dropLast().allSatisfy(isIPv6Byte)
        } else {
            isHost = !name.isEmpty && name.first != UInt8(ascii: ".") && name.allSatisfy(isNameByte)
        }
        guard isHost else {
            throw CourierError(
                .configuration,
                "the cache rule pattern '\(pattern)' is not a host name: write a host (api.example.com) or a "
                    + "suffix (.example.com), without a scheme, port, path or wildcard (a rule matches every port)")
        }
    }

    /// An IPv6 address as a URL's authority writes it, in brackets: `URL.host` gives `::1`, and
    /// the request's host is `[::1]`.
    static func bracketingIPv6(_ pattern: String) -> String {
        let bytes = pattern.utf8
        guard bytes.filter({ $0 == UInt8(ascii: ":") }).count >= 2,
            bytes.allSatisfy({
                (0x30...0x39).contains($0) || (0x61...0x66).contains($0) || $0 == UInt8(ascii: ":")
                    || $0 == UInt8(ascii: ".")
            })
        else { return pattern }
        return "[" + pattern + "]"
    }

    /// `name` without one final dot (a name of a dot alone is left as it is).
    static func withoutFinalDot(_ name: String) -> String {
        guard name.utf8.count > 1, name.utf8.last == UInt8(ascii: ".") else { return name }
        return String(name.dropLast())
    }

    /// `pattern` with a Unicode host name in punycode (IDNA, as Foundation's `URL` writes it):
    /// hosts are compared in the form URLs name them, and `BaseURL` takes ASCII names only, so a
    /// rule kept in Unicode matched no host at all (a `.never` rule was silently ignored). A
    /// pattern that is ASCII already, or that is no host name, is left as it is.
    static func punycode(_ pattern: String) -> String {
        guard pattern.utf8.contains(where: { $0 >= 0x80 }) else { return pattern }
        let suffix = pattern.utf8.first == UInt8(ascii: ".")
        let name = suffix ? pattern.dropFirst() : pattern[...]
        guard !name.isEmpty,
            !name.unicodeScalars.contains(where: { $0.value <= 0x20 || "/?#@:[]\\%".unicodeScalars.contains($0) }),
            let url = URL(string: "http://" + name + "/")
        else { return pattern }
        let written = url.absoluteString.utf8
        guard written.starts(with: "http://".utf8), written.last == UInt8(ascii: "/") else { return pattern }
        let host = written.dropFirst(7).dropLast()
        guard !host.isEmpty, host.allSatisfy({ $0 < 0x80 && $0 != UInt8(ascii: "/") }) else { return pattern }
        return (suffix ? "." : "") + String(decoding: host, as: UTF8.self).lowercased()
    }
}

extension CacheRule.Policy {
    var forcedLifetime: TimeInterval? {
        guard case .forceLifetime(let duration) = self else { return nil }
        return duration.timeInterval
    }
}

extension Duration {
    /// The duration in seconds. A division, not `components`: those trap past `Int64.max`
    /// seconds, and a `Duration` holds about ±1.7 × 10²⁰ (`.seconds(Int64.max) * 4`).
    var timeInterval: TimeInterval { self / .seconds(1) }
}

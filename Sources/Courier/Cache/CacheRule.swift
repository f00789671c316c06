import Foundation

/// Which hosts a `HostScopedCache` caches, and how.
///
/// A pattern starting with a dot matches that domain and every subdomain
/// (`.cdn.example.com` matches `cdn.example.com` and `img.cdn.example.com`); any other
/// pattern matches one host exactly. Matching ignores case, the port and a final dot (the
/// fully qualified `cdn.example.com.` is the host `cdn.example.com`).
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
    ///   - pattern: A host (`api.example.com`) or a suffix starting with a dot (`.cdn.example.com`).
    ///   - policy: What to do with matching hosts' responses.
    public init(_ pattern: String, _ policy: Policy) {
        self.pattern = Self.withoutFinalDot(pattern.lowercased())
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
    /// `name` without one final dot (a name of a dot alone is left as it is).
    static func withoutFinalDot(_ name: String) -> String {
        guard name.utf8.count > 1, name.utf8.last == UInt8(ascii: ".") else { return name }
        return String(name.dropLast())
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

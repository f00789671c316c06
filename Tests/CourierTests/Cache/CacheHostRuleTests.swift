import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Host rules against the spellings of one host, through a client and a loopback server that
/// answers every name (`resolve`).
@Suite struct CacheHostRuleTests {
    let clock = ManualClock(Date())

    func client(_ server: TestServer, hosts: [String], rules: [CacheRule], defaultPolicy: CacheRule.Policy) throws
        -> HTTPClient
    {
        let cache = try HostScopedCache(
            configuration: .init(
                rules: rules, defaultPolicy: defaultPolicy, storage: .memoryOnly, clock: clock.cacheClock))
        return try HTTPClient(
            configuration: .init(
                resolve: hosts.map { HTTPClient.ResolveOverride(host: $0, port: Int(server.port)) }, cache: cache))
    }

    func get(_ host: String, _ server: TestServer) -> HTTPRequest {
        HTTPRequest(
            method: .get, scheme: "http", authority: "\(host):\(server.port)", path: "/cache/etag?etag=a&max-age=60")
    }

    /// `pay.courier.test.` (fully qualified) is `pay.courier.test`: its `.never` rule applies,
    /// whichever of the two the rule or the URL spells with the final dot. Before, the dot made
    /// the host match no rule, and the default policy (here: follow HTTP) cached the answers of
    /// a host the app said never to cache.
    @Test(arguments: [
        ("pay.courier.test", "pay.courier.test."), ("pay.courier.test.", "pay.courier.test"),
        (".courier.test", "pay.courier.test."), (".courier.test.", "pay.courier.test"),
    ])
    func aNeverRuleAppliesToTheFullyQualifiedSpellingOfItsHost(pattern: String, host: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try client(
            server, hosts: [host], rules: [CacheRule(pattern, .never)], defaultPolicy: .followHTTP)
        let first = try await client.send(get(host, server))
        let second = try await client.send(get(host, server))
        #expect(!first.isFromCache)
        #expect(!second.isFromCache, "\(host) was cached against the rule \(pattern) (.never)")
        #expect(server.requestCount == 2)
    }

    /// The other way round, a year-long rule for `cdn.courier.test` applies to
    /// `CDN.courier.test.` (the same host), and to no look-alike: `cdn.courier.test.evil.test`,
    /// `evilcdn.courier.test`, `cdn.courier.testx`, the parent `courier.test`.
    @Test func aYearLongRuleAppliesToItsHostOnly() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let year = CacheRule.Policy.forceLifetime(.seconds(365 * 86_400))
        let named = ["CDN.courier.test.", "cdn.courier.test"]
        let others = ["cdn.courier.test.evil.test", "evilcdn.courier.test", "cdn.courier.testx", "courier.test"]
        let client = try client(
            server, hosts: named + others, rules: [CacheRule("cdn.courier.test", year)], defaultPolicy: .never)
        for host in named {
            _ = try await client.send(get(host, server))
            #expect(try await client.send(get(host, server)).isFromCache, "\(host) is the rule's host")
        }
        for host in others {
            _ = try await client.send(get(host, server))
            #expect(try await !client.send(get(host, server)).isFromCache, "\(host) is not the rule's host")
        }
        #expect(server.requestCount == 2 + 2 * others.count)
    }

    /// A rule written in Unicode applies to its host, which a URL names in punycode (the only
    /// form `BaseURL` takes, and the one libcurl connects to): `bücher.courier.test` is
    /// `xn--bcher-kva.courier.test`. Before, the pattern matched no host, so a `.never` rule
    /// written that way was ignored and the default policy cached the host.
    @Test(arguments: [
        ("bücher.courier.test", "xn--bcher-kva.courier.test"), ("BÜCHER.courier.test", "xn--bcher-kva.courier.test"),
        (".bücher.courier.test", "shop.xn--bcher-kva.courier.test"),
        (".bücher.courier.test.", "xn--bcher-kva.courier.test"),
    ])
    func aNeverRuleWrittenInUnicodeAppliesToItsPunycodeHost(pattern: String, host: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try client(
            server, hosts: [host], rules: [CacheRule(pattern, .never)], defaultPolicy: .followHTTP)
        _ = try await client.send(get(host, server))
        let second = try await client.send(get(host, server))
        #expect(!second.isFromCache, "\(host) was cached against the rule \(pattern) (.never)")
        #expect(server.requestCount == 2)
    }

    /// A pattern that is no host name (a URL, a host with a port, a wildcard) is refused when
    /// the cache is made. Before, it matched no host, silently: a `.never` rule written as
    /// `https://pay.example.com` or `pay.example.com:443` was ignored and the default policy
    /// cached the host.
    @Test(arguments: [
        "https://pay.courier.test", "pay.courier.test:443", "pay.courier.test/", "*.courier.test",
        "user@pay.courier.test", "", ".", "pay courier.test", "pay.courier.test/*",
    ])
    func aPatternThatIsNoHostNameIsRefused(pattern: String) throws {
        let error = #expect(throws: CourierError.self) {
            try HostScopedCache(configuration: .init(rules: [CacheRule(pattern, .never)], storage: .memoryOnly))
        }
        #expect(error?.code == .configuration)
    }

    @Test(arguments: [
        "127.0.0.1", "[::1]", ".example.com", "api.example.com.", "bücher.example", "xn--bcher-kva.example",
        "_srv.example.com", "LOCALHOST",
    ])
    func aHostOrSuffixPatternIsAccepted(pattern: String) throws {
        _ = try HostScopedCache(configuration: .init(rules: [CacheRule(pattern, .never)], storage: .memoryOnly))
    }

    /// An IPv6 address as `URL.host` gives it (`::1`) names the request's host `[::1]`.
    @Test func anIPv6AddressWithoutBracketsIsAccepted() throws {
        let rule = CacheRule("::1", .never)
        _ = try HostScopedCache(configuration: .init(rules: [rule], storage: .memoryOnly))
        #expect(rule.matches(CacheRequest.host(ofAuthority: "[::1]:8080")))
        #expect(!rule.matches(CacheRequest.host(ofAuthority: "[::2]:8080")))
    }
}

import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier
@testable import CourierTesting

/// The jar against libcurl's own cookie engine (`curl -c jar -b jar`, the CLI, one process a
/// request): the same `Set-Cookie` answers from the same loopback servers, then the `Cookie`
/// line each side sends on the next requests (other paths, hosts and ports). Where curl and
/// RFC 6265bis disagree the RFC decides, and the scenario says so (`rfc`, `why`).
@Suite struct CookieCurlDifferentialTests {
    /// One request of a scenario. URLs name the servers' ports `{1}` and `{2}`; the host names
    /// resolve to 127.0.0.1 on both sides.
    enum Step: Sendable {
        /// A request whose answer sets `lines`.
        case set(String, [String])
        /// A request whose `Cookie` line is compared.
        case check(String)
    }

    struct Scenario: Sendable, CustomTestStringConvertible {
        var name: String
        var steps: [Step]
        /// The `Cookie` line RFC 6265bis sends at each check (nil: none), when curl sends otherwise.
        var rfc: [String?]? = nil
        /// Why curl's answer is not the RFC's.
        var why: String = ""
        var testDescription: String { name }
    }

    static let hosts = ["www.example.com", "example.com", "a.www.example.com", "other.com", "localhost"]

    static func set(_ url: String, _ lines: String...) -> Step { .set(url, lines) }
    static func check(_ urls: String...) -> [Step] { urls.map { .check($0) } }

    static let scenarios: [Scenario] = parsing + sending

    static let home = "http://www.example.com:{1}/"

    /// `a=1`, then its deletion by an `Expires` in the past written as `date`.
    static func deletion(_ name: String, _ date: String, rfc: [String?]? = nil, why: String = "") -> Scenario {
        Scenario(
            name: name, steps: [set(home, "a=1"), set(home, "a=gone; Expires=\(date)")] + check(home), rfc: rfc,
            why: why)
    }

    /// `lines` set and then checked at `home`.
    static func atHome(_ name: String, _ lines: String...) -> Scenario {
        Scenario(name: name, steps: [.set(home, lines), .check(home)])
    }

    static let parsing: [Scenario] = [
        deletion("Expires in the past, RFC 1123, deletes", "Thu, 01 Jan 1970 00:00:00 GMT"),
        deletion(
            "Expires in the past, RFC 850, deletes", "Thursday, 01-Jan-70 00:00:00 GMT", rfc: [nil],
            why: "curl reads the two-digit year 70 as 2070; RFC 6265 §5.1.1 step 3: 70 to 99 are 19xx"),
        atHome(
            "Expires in the future, every form", "a=1; Expires=Wed, 09 Jun 2038 10:18:14 GMT",
            "b=2; Expires=Wednesday, 09-Jun-38 10:18:14 GMT", "c=3; Expires=Wed Jun  9 10:18:14 2038",
            "d=4; Expires=Wed, 09-Jun-2038 10:18:14 GMT", "e=5; expires=wed, 09 jun 2038 10:18:14 gmt"),
        atHome("Expires in asctime with a two-digit year is 20xx", "a=1; Expires=Wed Jun  9 10:18:14 38"),
        deletion("Expires without a weekday, in the past, deletes", "01 Jan 1970 00:00:00 GMT"),
        deletion(
            "Expires as JavaScript writes it, in the past, deletes",
            "Thu Jan 01 1970 00:00:00 GMT+0000 (Coordinated Universal Time)"),
        atHome(
            "Expires that is no date is ignored", "a=1; Expires=garbage", "b=2; Expires=",
            "c=3; Expires=Wed, 32 Jun 2038 10:18:14 GMT", "d=4; Expires=Wed, 09 Jun 2038 25:18:14 GMT"),
        atHome("Expires before 1601 is ignored, not a deletion", "a=1; Expires=Wed, 09 Jun 1500 10:18:14 GMT"),
        Scenario(
            name: "Expires on a day the month lacks is ignored",
            steps: [
                set("http://www.example.com:{1}/", "a=1"),
                set("http://www.example.com:{1}/", "a=2; Expires=Fri, 31 Feb 1970 10:18:14 GMT"),
            ] + check("http://www.example.com:{1}/"),
            rfc: ["a=2"],
            why: "curl reads 31 Feb 1970 as 3 March 1970 and deletes; RFC 6265 §5.1.1 step 5: no such date, ignored"),
        Scenario(
            name: "Max-Age: zero and negative delete, non-digits are ignored, Max-Age wins over Expires",
            steps: [
                set("http://www.example.com:{1}/", "z=1", "n=1", "w=1"),
                set(
                    "http://www.example.com:{1}/", "z=0; Max-Age=0", "n=0; Max-Age=-5", "x=1; Max-Age=abc",
                    "y=1; Max-Age=+5", "w=0; Max-Age=0; Expires=Wed, 09 Jun 2038 10:18:14 GMT",
                    "v=1; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=3600", "h=1; Max-Age=99999999999999999999"),
            ] + check("http://www.example.com:{1}/"),
            rfc: ["x=1; y=1; v=1; h=1"],
            why: "curl deletes a cookie whose Max-Age is not a number; RFC 6265 §5.2.2 ignores the attribute"),
        Scenario(
            name: "Domain: leading dot, upper case, the host itself",
            steps: [
                set(
                    "http://www.example.com:{1}/", "a=1; Domain=.example.com", "b=2; Domain=EXAMPLE.COM",
                    "c=3; Domain=www.example.com")
            ] + check("http://example.com:{1}/", "http://a.www.example.com:{1}/", "http://other.com:{1}/"),
            rfc: ["a=1; b=2", "a=1; b=2; c=3", nil],
            why: """
                curl puts longer domains first, and a jar file read back loses the order of creation; \
                RFC 6265 §5.4 step 2: longer paths first, then earlier creation
                """),
        Scenario(
            name: "Domain: another site, a subdomain, a trailing dot, a public suffix are refused",
            steps: [
                set(
                    "http://www.example.com:{1}/", "a=1; Domain=other.com", "b=2; Domain=a.www.example.com",
                    "c=3; Domain=example.com.", "d=4; Domain=com", "ok=5")
            ] + check("http://www.example.com:{1}/", "http://a.www.example.com:{1}/", "http://other.com:{1}/")),
        Scenario(
            name: "Domain: localhost and an IP address are host-only",
            steps: [
                set("http://localhost:{1}/", "a=1; Domain=localhost"),
                set("http://127.0.0.1:{1}/", "b=2; Domain=127.0.0.1", "c=3; Domain=0.0.1"),
            ] + check("http://localhost:{1}/", "http://127.0.0.1:{1}/")),
        Scenario(
            name: "Path: missing is the request's directory, not starting with / is too",
            steps: [
                set("http://www.example.com:{1}/dir/page", "a=1", "b=2; Path=", "c=3; Path=elsewhere")
            ]
                + check(
                    "http://www.example.com:{1}/dir", "http://www.example.com:{1}/dir/x", "http://www.example.com:{1}/"),
            rfc: ["a=1; b=2; c=3", "a=1; b=2; c=3", nil],
            why: "curl keeps `elsewhere` as the path and sends it everywhere; RFC 6265bis §5.6.4: the default path"),
        Scenario(
            name: "Path: %2F is not a slash",
            steps: [set("http://www.example.com:{1}/", "a=1; Path=/a%2Fb")]
                + check("http://www.example.com:{1}/a/b", "http://www.example.com:{1}/a%2Fb/c")),
        Scenario(
            name: "Attribute names in any case",
            steps: [
                set("http://www.example.com:{1}/x/y", "a=1; PATH=/; DOMAIN=example.com; MAX-AGE=86400", "b=2; pAtH=/x")
            ] + check("http://example.com:{1}/", "http://www.example.com:{1}/x/z")),
        Scenario(
            name: "Quoted values are kept as sent",
            steps: [set("http://www.example.com:{1}/", "a=\"quoted value\"", "b=\"x\"")]
                + check("http://www.example.com:{1}/")),
        Scenario(
            name: "Duplicate attributes: the last counts",
            steps: [
                set(
                    "http://www.example.com:{1}/p/q", "a=1; Path=/x; Path=/p", "b=2; Max-Age=0; Max-Age=86400",
                    "c=3; Domain=other.com; Domain=example.com", "d=4; Path=/; Path=x")
            ] + check("http://www.example.com:{1}/p/x", "http://www.example.com:{1}/x", "http://example.com:{1}/p/"),
            rfc: ["a=1; b=2; c=3; d=4", nil, "c=3"],
            why: """
                curl refuses a cookie whose first Domain is another site, and keeps `x` as a path; \
                RFC 6265 §5.3 steps 4 and 7 read the last Domain and Path, and 6265bis §5.6.4 makes `x` the default path
                """),
        Scenario(
            name: "Whitespace, = in a value, an empty value, Domain's case, a path's trailing slash",
            steps: [
                set(
                    "http://www.example.com:{1}/dir/", " a = 1 ; Path = /x ", "b=1;Path=/;Domain=example.com", "c=b=c",
                    "d=", "f=1; Domain=WWW.Example.COM", "g=1", "h=1; Max-Age=86400; Max-Age=abc", "i=1; Secure",
                    "j=1; HttpOnly; Path=/dir/")
            ]
                + check(
                    "http://www.example.com:{1}/dir", "http://www.example.com:{1}/dir/", "http://www.example.com:{1}/x",
                    "http://example.com:{1}/"),
            rfc: ["c=b=c; d=; f=1; g=1; h=1; b=1", "j=1; c=b=c; d=; f=1; g=1; h=1; b=1", "a=1; b=1", "b=1"],
            why: """
                curl deletes a cookie whose last Max-Age is no number (RFC 6265 §5.2.2 ignores that attribute), \
                sends `/dir/`'s cookie to /dir (§5.1.4: no path-match) and orders by more than path length and creation
                """),
        Scenario(
            name: "Domain: .localhost from localhost, a trailing dot, two leading dots",
            steps: [
                set("http://localhost:{1}/", "a=1", "b=1; Domain=.localhost"),
                set("http://www.example.com:{1}/", "c=1; Domain=www.example.com.", "d=1; Domain=..example.com"),
            ] + check("http://localhost:{1}/", "http://www.example.com:{1}/", "http://a.www.example.com:{1}/"),
            rfc: ["a=1; b=1", nil, nil],
            why: "curl orders by more than path length and creation; RFC 6265 §5.4 step 2: then earlier creation"),
        Scenario(
            name: "Expires quoted, year 69 as 2069, an invalid or empty Max-Age beside Expires",
            steps: [
                set(
                    "http://www.example.com:{1}/", "a=1; Expires=\"Wed, 09 Jun 2038 10:18:14 GMT\"",
                    "b=1; Expires=Wed, 09 Jun 2038 10:18:14 GMT; Max-Age=abc", "c=1; Max-Age=",
                    "d=1; Expires=Wed, 09 Jun 69 10:18:14 GMT",
                    "e=1; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=abc")
            ] + check("http://www.example.com:{1}/"),
            rfc: ["a=1; b=1; c=1; d=1"],
            why: "curl deletes a cookie whose Max-Age is no number or empty; RFC 6265 §5.2.2 ignores the attribute"),
    ]

    static let sending: [Scenario] = [
        Scenario(
            name: "Path-match: /foo is not /foobar, /foo/ needs the slash",
            steps: [set("http://www.example.com:{1}/", "a=1; Path=/foo", "b=2; Path=/foo/")]
                + check(
                    "http://www.example.com:{1}/foo", "http://www.example.com:{1}/foobar",
                    "http://www.example.com:{1}/foo/", "http://www.example.com:{1}/foo/bar?q=/x",
                    "http://www.example.com:{1}/FOO"),
            rfc: ["a=1", nil, "b=2; a=1", "b=2; a=1", nil],
            why:
                "curl strips the trailing / of a cookie's path and sends `/foo/`'s cookie to /foo; RFC 6265 §5.1.4: it does not path-match"
        ),
        Scenario(
            name: "Domain-match: host-only stays on its host, a Domain cookie reaches subdomains",
            steps: [set("http://www.example.com:{1}/", "host=1", "dom=2; Domain=www.example.com")]
                + check("http://www.example.com:{1}/", "http://a.www.example.com:{1}/", "http://example.com:{1}/")),
        Scenario(
            name: "Ports do not isolate cookies",
            steps: [set("http://www.example.com:{1}/", "a=1")] + check("http://www.example.com:{2}/")),
        Scenario(
            name: "Order: longer paths first, then earlier creation",
            steps: [
                set("http://www.example.com:{1}/", "z=1; Path=/", "y=2; Path=/a/b", "x=3; Path=/a", "w=4; Path=/")
            ] + check("http://www.example.com:{1}/a/b/c")),
        Scenario(
            name: "Replacement by name, domain and path; others stay",
            steps: [
                set("http://www.example.com:{1}/", "a=1; Path=/", "a=2; Path=/x", "a=3; Domain=example.com; Path=/yy"),
                set("http://www.example.com:{1}/", "a=4; Path=/", "a=5; Domain=example.com; Path=/yy"),
            ] + check("http://www.example.com:{1}/x", "http://www.example.com:{1}/", "http://example.com:{1}/yy")),
        Scenario(
            name: "A host-only cookie and a Domain cookie of one name, domain and path are two",
            steps: [
                set("http://www.example.com:{1}/", "a=1"),
                set("http://www.example.com:{1}/", "a=2; Domain=www.example.com"),
                set("http://www.example.com:{1}/", "b=1; Domain=www.example.com"),
                set("http://www.example.com:{1}/", "b=; Max-Age=0"),
            ] + check("http://www.example.com:{1}/", "http://a.www.example.com:{1}/"),
            rfc: ["a=1; a=2; b=1", "a=2; b=1"],
            why: """
                curl orders by more than path length and creation, and a jar file read back loses the order of creation; \
                RFC 6265 §5.4 step 2: longer paths first, then earlier creation
                """),
        Scenario(
            name: "Deletion by Max-Age=0 names its path and domain",
            steps: [
                set("http://www.example.com:{1}/", "a=1; Path=/", "a=2; Path=/x"),
                set("http://www.example.com:{1}/", "a=; Max-Age=0; Path=/x"),
            ] + check("http://www.example.com:{1}/x")),
        Scenario(
            name: "SameSite is not a reason to withhold a cookie from a client",
            steps: [
                set(
                    "http://www.example.com:{1}/", "a=1; SameSite=Strict", "b=2; SameSite=Lax", "c=3; SameSite=None",
                    "d=4; SameSite=bogus")
            ] + check("http://www.example.com:{1}/")),
    ]

    /// What one side sent at each check.
    typealias Sent = [String?]

    @Test(arguments: scenarios)
    func courierSendsWhatCurlOrTheRFCSends(_ scenario: Scenario) async throws {
        let first = try Self.server()
        defer { first.stop() }
        let second = try Self.server()
        defer { second.stop() }
        let ports = [first.port, second.port].map { String($0) }
        let urls = scenario.steps.map { step in
            switch step {
            case .set(let url, _), .check(let url):
                url.replacingOccurrences(of: "{1}", with: ports[0]).replacingOccurrences(of: "{2}", with: ports[1])
            }
        }
        let byCourier = try await Self.courierRun(scenario, urls: urls, ports: [first.port, second.port])
        let byCurl = try await Self.curlRun(scenario, urls: urls, ports: ports)
        if let rfc = scenario.rfc {
            #expect(byCourier == rfc, "RFC 6265bis: \(scenario.why)")
            #expect(byCurl != rfc, "curl now agrees with the RFC: drop `rfc` from the scenario")
        } else {
            #expect(byCourier == byCurl)
        }
    }

    /// A server whose every scenario path answers `?set=N` with the step's lines (sent in the
    /// query, one `c` each) and any other request with its `Cookie` line as `[…]`.
    static func server() throws -> TestServer {
        let server = try TestServer()
        let paths = scenarios.flatMap { scenario in
            scenario.steps.map { step -> String in
                switch step {
                case .set(let url, _), .check(let url):
                    URLComponents(string: url.replacingOccurrences(of: "{1}", with: "1"))?.percentEncodedPath ?? "/"
                }
            }
        }
        for path in Set(paths) {
            server.route(path) { request in
                let components = URLComponents(string: request.target)
                let lines = (components?.queryItems ?? []).filter { $0.name == "c" }.compactMap(\.value)
                guard lines.isEmpty else {
                    var response = ScriptedResponse.text("set")
                    for line in lines { response.headers.append(HTTPField(name: .setCookie, value: line)) }
                    return response
                }
                let cookie = request.headerList.first { $0.name.lowercased() == "cookie" }?.value
                return .text(cookie.map { "[\($0)]" } ?? "none")
            }
        }
        return server
    }

    /// `url` with the step's lines in its query.
    static func target(_ url: String, _ step: Step) -> String {
        guard case .set(_, let lines) = step else { return url }
        let query = lines.map { "c=" + $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }
        return url + "?" + query.joined(separator: "&")
    }

    static func cookie(inAnswer body: String) -> String? {
        body.hasPrefix("[") ? String(body.dropFirst().dropLast()) : nil
    }

    static func courierRun(_ scenario: Scenario, urls: [String], ports: [UInt16]) async throws -> Sent {
        let client = try makeClient { configuration in
            configuration.cookieJar = CookieJar()
            configuration.resolve = hosts.flatMap { host in ports.map { .init(host: host, port: Int($0)) } }
        }
        var sent: Sent = []
        for (step, url) in zip(scenario.steps, urls) {
            let answer = try await client.send(HTTPRequest(.get, URL(string: target(url, step))!))
            if case .check = step { sent.append(cookie(inAnswer: String(decoding: answer.body, as: UTF8.self))) }
        }
        return sent
    }

    static func curlRun(_ scenario: Scenario, urls: [String], ports: [String]) async throws -> Sent {
        let jar = FileManager.default.temporaryDirectory.appendingPathComponent("courier-curl-jar-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: jar) }
        let resolve = hosts.flatMap { host in ports.flatMap { ["--resolve", "\(host):\($0):127.0.0.1"] } }
        var sent: Sent = []
        for (step, url) in zip(scenario.steps, urls) {
            let arguments =
                ["-sS", "--max-time", "10", "--noproxy", "*", "-b", jar.path, "-c", jar.path] + resolve + [
                    target(url, step)
                ]
            let result = try await offPool { try ChildProcess.run("/usr/bin/curl", arguments, capture: .capture) }
            #expect(result.status == 0, "curl \(arguments)")
            if case .check = step { sent.append(cookie(inAnswer: String(decoding: result.output, as: UTF8.self))) }
        }
        return sent
    }
}

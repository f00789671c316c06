import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// A login that answers with a redirect sets its session cookie on the 3xx: the jar keeps it,
/// and sends it on the redirect's target and on later calls.
@Suite struct CookieRedirectTests {
    struct Echo: Decodable, Sendable {
        var headers: [String: String]
        var cookie: String? { headers.first { $0.key.lowercased() == "cookie" }?.value }
    }

    func serverWithRedirectingLogin() throws -> TestServer {
        let server = try TestServer()
        server.route("POST", "/login") { _ in
            .redirect(to: "/echo?step=home", status: 303).with(.setCookie, "session=abc123; Path=/; HttpOnly")
        }
        return server
    }

    @Test func aServiceKeepsTheCookieSetOnARedirect() async throws {
        let server = try serverWithRedirectingLogin()
        defer { server.stop() }
        let jar = CookieJar()
        let service = try ServiceFixture.service(server) { $0.cookieJar = jar }
        let home: Echo = try await service.post("login")
        #expect(home.cookie == "session=abc123", "the 303's cookie reaches its target")
        let later: Echo = try await service.get("echo")
        #expect(later.cookie == "session=abc123")
        service.logOut()
        let afterLogout: Echo = try await service.get("echo")
        #expect(afterLogout.cookie == nil)
    }

    @Test func aClientCallWithAJarStoresEveryHopsCookies() async throws {
        let server = try serverWithRedirectingLogin()
        defer { server.stop() }
        let jar = CookieJar()
        var configuration = HTTPClient.Configuration(baseURL: server.baseURL, notificationCenter: NotificationCenter())
        configuration.cookieJar = jar
        let client = try HTTPClient(configuration: configuration)
        let login = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/login")
        let home = try await client.send(login)
        #expect(try JSONDecoder().decode(Echo.self, from: home.body).cookie == "session=abc123")
        #expect(home.redirectCount == 1)
        let next = try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/echo"))
        #expect(try JSONDecoder().decode(Echo.self, from: next.body).cookie == "session=abc123")
        // A client without the jar sends nothing.
        let bare = try await ServiceFixture.client(server).send(
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/echo"))
        #expect(try JSONDecoder().decode(Echo.self, from: bare.body).cookie == nil)
    }

    @Test func aRedirectToAnotherHostGetsNoneOfTheJarsCookies() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let other = "http://elsewhere.test:\(server.port)/echo?step=other"
        server.route("POST", "/login") { _ in
            .redirect(to: other, status: 303).with(.setCookie, "session=abc123; Path=/")
        }
        let jar = CookieJar()
        var configuration = HTTPClient.Configuration(baseURL: server.baseURL, notificationCenter: NotificationCenter())
        configuration.resolve = [.init(host: "elsewhere.test", port: Int(server.port))]
        configuration.cookieJar = jar
        let client = try HTTPClient(configuration: configuration)
        let login = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/login")
        let answer = try await client.send(login)
        #expect(answer.url.host == "elsewhere.test")
        #expect(try JSONDecoder().decode(Echo.self, from: answer.body).cookie == nil)
        // The cookie was kept for its own host.
        let back = try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/echo"))
        #expect(try JSONDecoder().decode(Echo.self, from: back.body).cookie == "session=abc123")
    }
}

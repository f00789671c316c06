import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct HTTPClientAuthTests {
    func authorization(_ client: HTTPClient, _ server: TestServer) async throws -> String? {
        try Echo(try await client.send(HTTPRequest(.get, server.url("/echo"))).body).headers["authorization"]
    }

    @Test func loginAndLogoutNotificationsChangeTheNextRequest() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let center = NotificationCenter()
        let client = try makeClient { $0.notificationCenter = center }
        #expect(try await authorization(client, server) == nil)

        center.post(name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: "tok-1"])
        #expect(client.isLoggedIn)
        #expect(try await authorization(client, server) == "Bearer tok-1")
        let bearer = try await client.send(HTTPRequest(.get, server.url("/bearer")))
        #expect(bearer.status == .ok)

        center.post(name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: "tok-2"])
        #expect(try await authorization(client, server) == "Bearer tok-2")

        center.post(name: .courierUserDidLogOut, object: nil)
        #expect(!client.isLoggedIn)
        #expect(try await authorization(client, server) == nil)
        #expect(try await client.send(HTTPRequest(.get, server.url("/bearer"))).status.code == 401)
    }

    @Test func malformedLoginNotificationIsIgnored() async throws {
        let center = NotificationCenter()
        let client = try makeClient { $0.notificationCenter = center }
        center.post(name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: 42])
        center.post(name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: "a\nb"])
        #expect(!client.isLoggedIn)
    }

    @Test func methodsWorkWithoutNotificationsAndExplicitHeadersWin() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        try client.logIn(credential: "m-1")
        #expect(try await authorization(client, server) == "Bearer m-1")
        var request = HTTPRequest(.get, server.url("/echo"))
        request.headerFields[.authorization] = "Basic eHl6"
        #expect(try Echo(try await client.send(request).body).headers["authorization"] == "Basic eHl6")
        client.logOut()
        #expect(try await authorization(client, server) == nil)
    }

    /// A refresher's renewed token replaces only the credential it renews
    /// (`logIn(credential:replacing:)`): after a logout, or another user's login, it is too late
    /// and changes nothing. With `logIn(credential:)`, which the docs told refreshers to call, a
    /// refresh of alice's token that ended after bob logged in made every later request of the
    /// client carry alice's token.
    @Test func aRenewedTokenReplacesOnlyTheCredentialItRenews() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        try client.logIn(credential: "alice-1")
        #expect(try client.logIn(credential: "alice-2", replacing: "alice-1"))
        #expect(try await authorization(client, server) == "Bearer alice-2")
        // Alice's next refresh ends after she logged out and bob logged in.
        client.logOut()
        try client.logIn(credential: "bob")
        #expect(try !client.logIn(credential: "alice-3", replacing: "alice-2"))
        #expect(try await authorization(client, server) == "Bearer bob")
        // After a logout alone, nobody is logged in again by a late renewal.
        client.logOut()
        #expect(try !client.logIn(credential: "bob-2", replacing: "bob"))
        #expect(!client.isLoggedIn)
        #expect(try await authorization(client, server) == nil)
        // The same bytes only: a canonically equivalent credential is another one.
        try client.logIn(credential: "caf\u{E9}")
        #expect(try !client.logIn(credential: "x", replacing: "cafe\u{301}"))
        // A renewed credential is checked as a login's is.
        let refused = #expect(throws: CourierError.self) {
            try client.logIn(credential: "a\nb", replacing: "caf\u{E9}")
        }
        #expect(refused?.code == .invalidRequest)
        #expect(try await authorization(client, server) == "Bearer caf\u{E9}")
    }

    @Test func customHeaderBuilder() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient {
            $0.authorization = .custom { [HTTPField(name: HTTPField.Name("X-Api-Key")!, value: $0)] }
        }
        try client.logIn(credential: "key-9")
        let echo = try Echo(try await client.send(HTTPRequest(.get, server.url("/echo"))).body)
        #expect(echo.headers["x-api-key"] == "key-9")
        #expect(echo.headers["authorization"] == nil)
    }

    @Test func requestInFlightKeepsTheHeaderItStartedWith() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let arrived = Signal()
        let release = DispatchSemaphore(value: 0)
        // The first hop is held until the test logs out, then redirects (same origin): the
        // second hop belongs to the same request and must still carry the old credential.
        server.route("/hold") { _ in
            arrived.fire()
            release.wait()
            return .redirect(to: "/echo", status: 307)
        }
        let center = NotificationCenter()
        let client = try makeClient { $0.notificationCenter = center }
        center.post(name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: "old"])
        let inFlight = Task { try await client.send(HTTPRequest(.get, server.url("/hold"))) }
        await arrived.wait()
        center.post(name: .courierUserDidLogOut, object: nil)
        center.post(name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: "new"])
        #expect(try await authorization(client, server) == "Bearer new")
        release.signal()
        let held = try await inFlight.value
        #expect(held.redirectCount == 1)
        #expect(try Echo(held.body).headers["authorization"] == "Bearer old")
    }

    @Test func clientGoesAwayAndStopsObserving() async throws {
        let center = NotificationCenter()
        weak var weakClient: HTTPClient?
        do {
            let client = try makeClient { $0.notificationCenter = center }
            weakClient = client
        }
        #expect(weakClient == nil)
        // Posting after the client is gone must not crash.
        center.post(name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: "x"])
    }

    @Test func concurrentLoginsAndRequestsStayConsistent() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let valid = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<200 {
                group.addTask {
                    if index % 10 == 0 {
                        try client.logIn(credential: "t\(index)")
                        return true
                    }
                    if index % 10 == 5 {
                        client.logOut()
                        return true
                    }
                    let header = try await authorization(client, server)
                    return header == nil || header?.hasPrefix("Bearer t") == true
                }
            }
            return try await group.allSatisfy { $0 }
        }
        #expect(valid)
    }
}

import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct RedirectHandlerTests {
    let handler = RedirectHandler(sensitiveHeaderNames: [HTTPField.Name("X-Api-Key")!])
    let origin = URL(string: "https://api.example.com/v1/items?page=2")!

    func request(_ method: HTTPRequest.Method) -> HTTPRequest {
        var request = HTTPRequest(
            method: method, scheme: "https", authority: "api.example.com", path: "/v1/items?page=2")
        request.headerFields[.authorization] = "Bearer secret"
        request.headerFields[.cookie] = "session=1"
        request.headerFields[.proxyAuthorization] = "Basic eA=="
        request.headerFields[HTTPField.Name("X-Api-Key")!] = "key"
        request.headerFields[.contentType] = "application/json"
        request.headerFields[.accept] = "application/json"
        return request
    }

    func response(_ status: Int, location: String?) -> HTTPResponse {
        var response = HTTPResponse(status: .init(code: status))
        if let location { response.headerFields[.location] = location }
        return response
    }

    func hop(
        _ method: HTTPRequest.Method, _ status: Int, to location: String?, body: RequestBody? = .data(Data("x".utf8))
    ) throws -> RedirectHandler.Hop? {
        try handler.nextHop(
            after: request(method), body: body, url: origin, response: response(status, location: location))
    }

    @Test func relativeLocationResolvesAgainstTheCurrentURL() throws {
        let next = try #require(try hop(.get, 302, to: "../other?q=1"))
        #expect(next.url.absoluteString == "https://api.example.com/other?q=1")
        #expect(next.request.path == "/other?q=1")
        #expect(next.request.authority == "api.example.com")
        let absolutePath = try #require(try hop(.get, 301, to: "/root"))
        #expect(absolutePath.request.path == "/root")
    }

    @Test(arguments: [303, 301, 302])
    func postBecomesGetWithoutBody(status: Int) throws {
        let next = try #require(try hop(.post, status, to: "/done"))
        #expect(next.request.method == .get)
        #expect(next.body == nil)
        #expect(next.request.headerFields[.contentType] == nil)
        #expect(next.request.headerFields[.accept] == "application/json")
    }

    @Test func see303TurnsPutIntoGetButKeepsHead() throws {
        #expect(try hop(.put, 303, to: "/x")?.request.method == .get)
        #expect(try hop(.head, 303, to: "/x")?.request.method == .head)
        // 301/302 change only POST.
        let put = try #require(try hop(.put, 302, to: "/x"))
        #expect(put.request.method == .put)
        #expect(put.body != nil)
    }

    @Test(arguments: [307, 308])
    func temporaryAndPermanentRedirectsKeepMethodAndBody(status: Int) throws {
        let next = try #require(try hop(.post, status, to: "/again"))
        #expect(next.request.method == .post)
        #expect(next.body?.inMemoryData == Data("x".utf8))
        #expect(next.request.headerFields[.contentType] == "application/json")
    }

    @Test func sameOriginKeepsCredentials() throws {
        let next = try #require(try hop(.get, 302, to: "https://API.example.com:443/elsewhere"))
        #expect(next.request.headerFields[.authorization] == "Bearer secret")
        #expect(next.request.headerFields[.cookie] == "session=1")
    }

    @Test(arguments: [
        "https://other.example.com/", "https://api.example.com:8443/", "http://api.example.com.evil/",
    ])
    func crossOriginDropsCredentialsAndSensitiveHeaders(location: String) throws {
        guard let next = try? hop(.get, 307, to: location) else {
            // https → http is refused outright; covered below.
            return
        }
        #expect(next.request.headerFields[.authorization] == nil)
        #expect(next.request.headerFields[.cookie] == nil)
        #expect(next.request.headerFields[.proxyAuthorization] == nil)
        #expect(next.request.headerFields[HTTPField.Name("X-Api-Key")!] == nil)
        #expect(next.request.headerFields[.accept] == "application/json")
    }

    @Test func downgradeToHTTPIsRefused() {
        #expect(throws: CourierError.self) { try hop(.get, 302, to: "http://api.example.com/") }
        do {
            _ = try hop(.get, 302, to: "http://api.example.com/")
        } catch {
            #expect((error as? CourierError)?.code == .redirect)
        }
    }

    @Test(arguments: ["ftp://api.example.com/file", "file:///etc/passwd", "https://user:pw@api.example.com/"])
    func nonHTTPOrCredentialLocationsAreRefused(location: String) {
        do {
            _ = try hop(.get, 302, to: location)
            Issue.record("followed \(location)")
        } catch {
            #expect((error as? CourierError)?.code == .redirect)
        }
    }

    @Test func nonRedirectsAndMissingLocationAreNotFollowed() throws {
        #expect(try hop(.get, 200, to: "/x") == nil)
        #expect(try hop(.get, 304, to: "/x") == nil)
        #expect(try hop(.get, 300, to: "/x") == nil)
        #expect(try hop(.get, 302, to: nil) == nil)
    }
}

import CourierTesting
import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// A server that lies when a download resumes. The resumed bytes must come from the version
/// of the file the first response named, and be exactly the rest its `Content-Range`
/// announces; otherwise the download fails and leaves no file. On the old code both cases
/// renamed a mixed or wrongly sized `.part` file as if it were the whole download.
@Suite struct DownloadResumeHostileTests {
    static let options = CallOptions(maxResponseSize: 8 << 20)

    /// The download's error, after a first response cut mid-body and a resumption `ranged` answers.
    static func resumedDownloadError(
        _ server: TestServer, _ destination: LargeBodyTests.Destination,
        ranged: @escaping @Sendable (Int, Data) -> ScriptedResponse
    ) async throws -> CourierError? {
        let content = TestServer.bytePattern(count: LargeBodyTests.size)
        LargeBodyTests.serve(server, "/file", content, first: .closeDuringBody, ranged: ranged)
        let client = try makeClient()
        return await courierError {
            _ = try await client.download(
                HTTPRequest(.get, server.url("/file")), to: destination.url, options: Self.options
            ).response
        }
    }

    /// Serves `content` at `/file`: the first request's body cut, after alice logged out and bob
    /// in (as it arrived); then the ranges asked for.
    static func serveSwitchingUser(_ server: TestServer, _ client: HTTPClient, _ content: Data) {
        let requests = ServiceCounter()
        server.route("/file") { request in
            guard requests.increment() > 1 else {
                client.logOut()
                try? client.logIn(credential: "bob")
                var headers: HTTPFields = [:]
                headers[.eTag] = LargeBodyTests.etag
                return ScriptedResponse(headers: headers, body: content, fault: .closeDuringBody)
            }
            let start = Int(request.header("Range")?.dropFirst(6).dropLast() ?? "") ?? 0
            return LargeBodyTests.partial(content, from: start)
        }
    }

    /// A download of alice's that resumes after she logged out and bob logged in: each request
    /// asked the client for its credential of the moment, so the resumption went out as bob,
    /// and the rest of bob's file (the same URL and ETag: `/me/export`) was joined to the start
    /// of alice's. A download ends with `.authentication` once the session it began in ended,
    /// as a service call does.
    @Test func aDownloadResumedAfterALogoutIsNotSentAsTheNextUser() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let destination = LargeBodyTests.Destination()
        let client = try makeClient()
        try client.logIn(credential: "alice")
        let content = TestServer.bytePattern(count: LargeBodyTests.size)
        Self.serveSwitchingUser(server, client, content)
        let error = await courierError {
            _ = try await client.download(
                HTTPRequest(.get, server.url("/file")), to: destination.url, options: Self.options
            ).response
        }
        #expect(error?.code == .authentication, "\(String(describing: error))")
        #expect(server.recordedRequests(path: "/file").map { $0.header("authorization") } == ["Bearer alice"])
        #expect(!destination.exists)
        #expect(!destination.partExists)
    }

    /// The same download from another origin than the API's (a CDN) carries no credential: it
    /// is no session's, and resumes across the logout.
    @Test func aDownloadFromAnotherOriginResumesAfterALogout() async throws {
        let api = try TestServer()
        defer { api.stop() }
        let cdn = try TestServer()
        defer { cdn.stop() }
        let destination = LargeBodyTests.Destination()
        let client = try makeClient { $0.baseURL = api.baseURL }
        try client.logIn(credential: "alice")
        let content = TestServer.bytePattern(count: LargeBodyTests.size)
        Self.serveSwitchingUser(cdn, client, content)
        _ = try await client.download(
            HTTPRequest(.get, cdn.url("/file")), to: destination.url, options: Self.options
        ).response
        #expect(try Data(contentsOf: destination.url) == content)
        #expect(cdn.recordedRequests(path: "/file").count == 2)
        #expect(cdn.recordedRequests(path: "/file").allSatisfy { $0.header("authorization") == nil })
    }

    @Test func aResumptionFromAnotherVersionOfTheFileIsRefused() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let destination = LargeBodyTests.Destination()
        // The server ignores If-Range and answers the range from a new version, with its new ETag.
        let error = try await Self.resumedDownloadError(server, destination) { start, content in
            var response = LargeBodyTests.partial(Data(content.reversed()), from: start)
            response.headers[.eTag] = "\"v2\""
            return response
        }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.contains("another version") == true, "\(String(describing: error))")
        #expect(server.recordedRequests(path: "/file").last?.header("If-Range") == LargeBodyTests.etag)
        #expect(!destination.exists)
        #expect(!destination.partExists)
    }

    @Test(arguments: [-1_000, 1_000])
    func aResumedBodyOfAnotherLengthThanItsRangeIsRefused(_ difference: Int) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let destination = LargeBodyTests.Destination()
        // Content-Range says "the rest of the file"; the body (and its Content-Length) says otherwise.
        let error = try await Self.resumedDownloadError(server, destination) { start, content in
            var response = LargeBodyTests.partial(content, from: start)
            response.body =
                difference < 0
                ? response.body.dropLast(-difference) : response.body + Data(repeating: 0, count: difference)
            return response
        }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.contains("Content-Range") == true, "\(String(describing: error))")
        #expect(server.recordedRequests(path: "/file").count == 2)
        #expect(!destination.exists)
        #expect(!destination.partExists)
    }

    /// A resumption whose `Content-Range` names another length than the first response's
    /// `Content-Length` (a longer total, or an unknown one that stops short), under the same
    /// ETag: the file it would make is neither version. On the old code both were renamed as
    /// the whole download (3,001,000 and 2,999,000 bytes of a 3,000,000-byte file).
    @Test(arguments: [1_000, -1_000])
    func aResumptionThatChangesTheFilesLengthIsRefused(_ difference: Int) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let destination = LargeBodyTests.Destination()
        let error = try await Self.resumedDownloadError(server, destination) { start, content in
            let end = content.count + difference
            var headers: HTTPFields = [:]
            headers[.eTag] = LargeBodyTests.etag
            headers[.contentRange] = "bytes \(start)-\(end - 1)/\(difference > 0 ? String(end) : "*")"
            let body = TestServer.bytePattern(count: end).subdata(in: start..<end)
            return ScriptedResponse(status: 206, headers: headers, body: body)
        }
        #expect(error?.code == .invalidResponse, "\(String(describing: error))")
        #expect(server.recordedRequests(path: "/file").count == 2)
        #expect(!destination.exists)
        #expect(!destination.partExists)
    }

    /// A `206` to a request without `Range` whose range reaches past its body: on the old code the
    /// ten bytes were renamed as the whole file; a range ending at `Int64.max` must not trap.
    @Test(arguments: ["bytes 0-99/*", "bytes 0-9223372036854775806/*", "bytes 0-9223372036854775807/*"])
    func anUnaskedPartialWhoseRangeOutrunsItsBodyIsRefused(_ contentRange: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/file") { _ in
            ScriptedResponse(status: 206, headers: [.contentRange: contentRange], body: Data(count: 10))
        }
        let destination = LargeBodyTests.Destination()
        let client = try makeClient()
        let error = await courierError {
            _ = try await client.download(
                HTTPRequest(.get, server.url("/file")), to: destination.url, options: Self.options
            ).response
        }
        #expect(error?.code == .invalidResponse)
        #expect(!destination.exists)
        #expect(!destination.partExists)
    }
}

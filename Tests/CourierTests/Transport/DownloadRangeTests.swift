import CourierTesting
import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// A download with the caller's own `Range` field writes those bytes of the resource to the
/// file, and a failure mid-body resumes with the rest of that range. On the old code every
/// caller's range failed: the `206` was checked as the rest of a download from byte 0.
@Suite struct DownloadRangeTests {
    static let size = 3_000_000
    static let options = CallOptions(maxResponseSize: 8 << 20)

    /// Serves `content` at `path` as RFC 9110 says: a `206` for one satisfiable byte range
    /// (`first-last`, `first-`, `-suffix`), the whole body otherwise. The first ranged answer
    /// is cut mid-body when `cutFirst`; `answer` may rewrite the range a `206` holds.
    static func serve(
        _ server: TestServer, _ path: String, _ content: Data, cutFirst: Bool = false,
        answer: @escaping @Sendable (ClosedRange<Int>) -> ClosedRange<Int> = { $0 }
    ) {
        let ranged = Recorder<Int>()
        server.route(path) { request in
            var headers: HTTPFields = [.eTag: LargeBodyTests.etag]
            guard let range = request.header("Range").flatMap({ Self.bytes($0, of: content.count) }) else {
                return ScriptedResponse(headers: headers, body: content)
            }
            ranged.append(1)
            let sent = answer(range)
            headers[.contentRange] = "bytes \(sent.lowerBound)-\(sent.upperBound)/\(content.count)"
            return ScriptedResponse(
                status: 206, headers: headers, body: content.subdata(in: sent.lowerBound..<sent.upperBound + 1),
                fault: cutFirst && ranged.values.count == 1 ? .closeDuringBody : nil)
        }
    }

    /// The bytes a `Range` value names in a resource of `count` bytes.
    static func bytes(_ value: String, of count: Int) -> ClosedRange<Int>? {
        guard value.hasPrefix("bytes=") else { return nil }
        let bounds = value.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2 else { return nil }
        if bounds[0].isEmpty, let suffix = Int(bounds[1]), suffix > 0 { return max(0, count - suffix)...(count - 1) }
        guard let first = Int(bounds[0]), first < count else { return nil }
        let last = bounds[1].isEmpty ? count - 1 : min(Int(bounds[1]) ?? -1, count - 1)
        return first <= last ? first...last : nil
    }

    func download(
        _ server: TestServer, range: String, ifRange: String? = nil, to destination: LargeBodyTests.Destination
    ) async throws
        -> (HTTPClient.Response, [TransferProgress])
    {
        let client = try makeClient()
        var request = HTTPRequest(.get, server.url("/file"))
        request.headerFields[.range] = range
        request.headerFields[.ifRange] = ifRange
        let transfer = client.download(request, to: destination.url, options: Self.options)
        let progress = LargeBodyTests.collect(transfer.progress)
        let response = try await transfer.response
        return (response, await progress.value)
    }

    @Test(arguments: [
        ("bytes=1000-1999", 1000..<2000),
        ("bytes=2999000-", 2_999_000..<3_000_000),
        ("bytes=-500", 2_999_500..<3_000_000),
        // A last byte past the end means the end (RFC 9110 §14.1.2).
        ("bytes=2999900-9999999", 2_999_900..<3_000_000),
    ])
    func aCallersRangeIsDownloadedAsThoseBytes(range: String, expected: Range<Int>) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: Self.size)
        Self.serve(server, "/file", content)
        let destination = LargeBodyTests.Destination()
        let (response, progress) = try await download(server, range: range, to: destination)
        #expect(response.status == .partialContent)
        #expect(try Data(contentsOf: destination.url) == content.subdata(in: expected))
        #expect(server.recordedRequests(path: "/file").map { $0.header("Range") } == [range])
        LargeBodyTests.expectMonotonic(progress, endingAt: Int64(expected.count))
        #expect(!destination.partExists)
    }

    @Test func aCallersRangeCutMidBodyResumesWithTheRestOfIt() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: Self.size)
        Self.serve(server, "/file", content, cutFirst: true)
        let destination = LargeBodyTests.Destination()
        let (response, progress) = try await download(server, range: "bytes=1000-1999999", to: destination)
        #expect(response.status == .partialContent)
        #expect(try Data(contentsOf: destination.url) == content.subdata(in: 1000..<2_000_000))
        let requests = server.recordedRequests(path: "/file")
        #expect(requests.count == 2)
        let resumed = try #require(requests.last?.header("Range"))
        let bounds = resumed.dropFirst("bytes=".count).split(separator: "-").compactMap { Int($0) }
        #expect(bounds.count == 2 && bounds[0] > 1000 && bounds[0] < 2_000_000 && bounds[1] == 1_999_999, "\(resumed)")
        #expect(requests.last?.header("If-Range") == LargeBodyTests.etag)
        LargeBodyTests.expectMonotonic(progress, endingAt: 1_999_000)
    }

    /// A server that answers another range than the one asked for (here the start of the
    /// file, or a range that stops short) would leave other bytes under the caller's name.
    @Test(arguments: [0, 1])
    func anotherRangeThanTheOneAskedForIsRefused(_ lie: Int) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: Self.size)
        Self.serve(server, "/file", content) { asked in
            lie == 0 ? 0...(asked.count - 1) : asked.lowerBound...(asked.upperBound - 10)
        }
        let destination = LargeBodyTests.Destination()
        let error = await courierError { _ = try await download(server, range: "bytes=1000-1999", to: destination) }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.contains("not the range asked for") == true, "\(String(describing: error))")
        #expect(!destination.exists)
        #expect(!destination.partExists)
    }

    /// A caller's `If-Range` asks for its range of that version only: the caller holds the
    /// bytes before it and appends these. A server that ignores `If-Range` and sends the range
    /// of another version must not have its bytes handed over as the rest of the caller's
    /// (RFC 9110 §13.1.5), as Courier's own resumptions already refuse. On the old code the
    /// other version's bytes were written and the download succeeded with a `206`.
    @Test(arguments: ["\"v0\"", "Sat, 01 Jan 2000 00:00:00 GMT"])
    func aRangeOfAnotherVersionThanTheCallersIfRangeIsRefused(ifRange: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: 100_000)
        server.route("/file") { _ in
            ScriptedResponse(
                status: 206,
                headers: [
                    .eTag: LargeBodyTests.etag, .lastModified: "Sun, 02 Jan 2000 00:00:00 GMT",
                    .contentRange: "bytes 1000-1999/100000",
                ],
                body: content.subdata(in: 1000..<2000))
        }
        let destination = LargeBodyTests.Destination()
        let error = await courierError {
            _ = try await download(server, range: "bytes=1000-1999", ifRange: ifRange, to: destination)
        }
        #expect(error?.code == .invalidResponse, "\(String(describing: error))")
        #expect(!destination.exists)
        #expect(!destination.partExists)
        #expect(server.recordedRequests(path: "/file").map { $0.header("If-Range") } == [ifRange])
        // The version the caller named is the one it gets.
        let (response, _) = try await download(
            server, range: "bytes=1000-1999", ifRange: LargeBodyTests.etag, to: destination)
        #expect(response.status == .partialContent)
        #expect(try Data(contentsOf: destination.url) == content.subdata(in: 1000..<2000))
    }

    /// A server may ignore `Range` and send the whole resource with a `200`: the file holds
    /// it, and the status says so (as curl and URLSession do).
    @Test func aServerThatIgnoresTheCallersRangeGivesTheWholeFile() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: 100_000)
        server.route("/file") { _ in ScriptedResponse(body: content) }
        let destination = LargeBodyTests.Destination()
        let (response, _) = try await download(server, range: "bytes=10-19", to: destination)
        #expect(response.status == .ok)
        #expect(try Data(contentsOf: destination.url) == content)
    }

    /// A `206` whose body is longer than its `Content-Range`, for a range that ends at the
    /// last byte a 64-bit offset can name: the bytes past the range are refused as they come,
    /// never counted on past `Int64.max`. On the old code the byte after the range overflowed
    /// the resource offset (`first + written`) and trapped the process, for a caller who only
    /// asked for the last ten bytes.
    @Test(arguments: ["bytes=-10", "bytes=9223372036854775797-"])
    func aBodyLongerThanItsRangeNearTheLargestOffsetIsRefused(range: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/file") { _ in
            ScriptedResponse(
                status: 206,
                headers: [
                    .eTag: LargeBodyTests.etag,
                    .contentRange: "bytes 9223372036854775797-9223372036854775806/9223372036854775807",
                ],
                body: TestServer.bytePattern(count: 64))
        }
        let destination = LargeBodyTests.Destination()
        let error = await courierError { _ = try await download(server, range: range, to: destination) }
        #expect(error?.code == .invalidResponse, "\(String(describing: error))")
        #expect(!destination.exists)
        #expect(!destination.partExists)
    }

    /// A `206` answers a range only: to a download that asked for none it may be any part of
    /// the file, and with an unknown length (`bytes 0-99/*`) it looked like all of it. On the
    /// old code the part was renamed as the whole download.
    @Test func aPartialAnswerToADownloadThatAskedForNoRangeIsRefused() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: 100)
        server.route("/file") { _ in
            ScriptedResponse(status: 206, headers: [.contentRange: "bytes 0-99/*"], body: content)
        }
        let destination = LargeBodyTests.Destination()
        let client = try makeClient()
        let error = await courierError {
            _ = try await client.download(HTTPRequest(.get, server.url("/file")), to: destination.url).response
        }
        #expect(error?.code == .invalidResponse)
        #expect(!destination.exists)
        #expect(!destination.partExists)
    }

    @Test(arguments: ["bytes=0-1,5-6", "items=0-9", "bytes=9-1", "bytes=-0", "bytes=a-b", "bytes="])
    func aRangeTheFileCannotHoldIsRefusedBeforeSending(range: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.serve(server, "/file", TestServer.bytePattern(count: 1000))
        let destination = LargeBodyTests.Destination()
        let error = await courierError { _ = try await download(server, range: range, to: destination) }
        #expect(error?.code == .invalidRequest)
        #expect(server.recordedRequests(path: "/file").isEmpty)
        #expect(!destination.exists)
        #expect(!destination.partExists)
    }
}

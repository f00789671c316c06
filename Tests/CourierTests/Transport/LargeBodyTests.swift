import CourierTesting
import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// Issue 21 item 7: downloads straight to a file (resumed with `Range`), uploads streamed from
/// a file or an `AsyncSequence`, progress as an `AsyncSequence`.
@Suite struct LargeBodyTests {
    static let size = 3_000_000
    static let etag = "\"v1\""

    /// A temporary destination; removed (with its part files) at the end.
    final class Destination {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-download-\(UUID()).bin")
        var exists: Bool { FileManager.default.fileExists(atPath: url.path) }
        /// The part files of downloads to it: `name.XXXXXXXX.part` beside it.
        var parts: [String] {
            let folder = url.deletingLastPathComponent().path
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            return names.filter { $0.hasPrefix(url.lastPathComponent + ".") && $0.hasSuffix(".part") }
                .map { folder + "/" + $0 }
        }
        var partExists: Bool { !parts.isEmpty }
        deinit {
            try? FileManager.default.removeItem(at: url)
            for part in parts { try? FileManager.default.removeItem(atPath: part) }
        }
    }

    /// Serves `content` at `path` with an ETag; `Range` requests are answered by `ranged`.
    static func serve(
        _ server: TestServer, _ path: String, _ content: Data, first: Fault? = nil,
        ranged: @escaping @Sendable (Int, Data) -> ScriptedResponse = { start, content in
            LargeBodyTests.partial(content, from: start)
        }
    ) {
        let requests = Recorder<Int>()
        server.route(path) { request in
            requests.append(1)
            let index = requests.values.count
            if let range = request.header("Range"), range.hasPrefix("bytes="),
                let start = Int(range.dropFirst(6).dropLast())
            {
                return ranged(start, content)
            }
            var headers: HTTPFields = [:]
            headers[.eTag] = etag
            return ScriptedResponse(headers: headers, body: content, fault: index == 1 ? first : nil)
        }
    }

    static func partial(_ content: Data, from start: Int, claimedStart: Int? = nil) -> ScriptedResponse {
        var headers: HTTPFields = [:]
        headers[.eTag] = etag
        headers[.contentRange] = "bytes \(claimedStart ?? start)-\(content.count - 1)/\(content.count)"
        return ScriptedResponse(status: 206, headers: headers, body: content.subdata(in: start..<content.count))
    }

    /// Every progress value, read on the test's task.
    static func collect(_ progress: AsyncStream<TransferProgress>) -> Task<[TransferProgress], Never> {
        Task {
            var values: [TransferProgress] = []
            for await value in progress { values.append(value) }
            return values
        }
    }

    static func expectMonotonic(_ values: [TransferProgress], endingAt total: Int64) {
        #expect(!values.isEmpty)
        #expect(zip(values, values.dropFirst()).allSatisfy { $0.completed <= $1.completed })
        #expect(values.last == TransferProgress(completed: total, total: total))
    }

    // MARK: Download

    @Test func downloadWritesTheServedBytesToTheFile() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: Self.size)
        Self.serve(server, "/file", content)
        let destination = Destination()
        let client = try makeClient()
        let transfer = client.download(
            HTTPRequest(.get, server.url("/file")), to: destination.url, options: CallOptions(maxResponseSize: 8 << 20))
        let progress = Self.collect(transfer.progress)
        let response = try await transfer.response
        #expect(response.status == .ok)
        #expect(response.body.isEmpty)
        #expect(crc32(try Data(contentsOf: destination.url)) == crc32(content))
        #expect(!destination.partExists)
        Self.expectMonotonic(await progress.value, endingAt: Int64(Self.size))
        #expect(server.recordedRequests.first?.header("Range") == nil)
    }

    @Test func aFailureMidBodyIsResumedWithRangeAndIfRange() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: Self.size)
        Self.serve(server, "/file", content, first: .closeDuringBody)
        let destination = Destination()
        let client = try makeClient()
        let transfer = client.download(
            HTTPRequest(.get, server.url("/file")), to: destination.url, options: CallOptions(maxResponseSize: 8 << 20))
        let progress = Self.collect(transfer.progress)
        let response = try await transfer.response
        #expect(response.status == .partialContent)
        #expect(try Data(contentsOf: destination.url) == content)
        let requests = server.recordedRequests(path: "/file")
        #expect(requests.count == 2)
        let range = try #require(requests.last?.header("Range"))
        let start = try #require(Int(range.dropFirst("bytes=".count).dropLast()))
        #expect(start > 0 && start < Self.size)
        #expect(requests.last?.header("If-Range") == Self.etag)
        Self.expectMonotonic(await progress.value, endingAt: Int64(Self.size))
    }

    @Test func aServerThatIgnoresTheRangeStartsTheFileOver() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: Self.size)
        Self.serve(server, "/file", content, first: .closeDuringBody) { _, content in
            ScriptedResponse(body: content)
        }
        let destination = Destination()
        let client = try makeClient()
        let response = try await client.download(
            HTTPRequest(.get, server.url("/file")), to: destination.url, options: CallOptions(maxResponseSize: 8 << 20)
        ).response
        #expect(response.status == .ok)
        #expect(server.recordedRequests(path: "/file").last?.header("Range") != nil)
        #expect(try Data(contentsOf: destination.url) == content)
    }

    /// A download by POST (an export endpoint) that breaks mid-body is not sent again: a
    /// non-idempotent request is retried only when the caller opts in
    /// (`RetryPolicy.allowingNonIdempotent()`). On the old code the POST was re-sent, with
    /// `Range`, and the download succeeded after two POSTs.
    @Test(arguments: [false, true])
    func aPostDownloadIsResumedOnlyWhenTheCallerOptsIn(_ optsIn: Bool) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: Self.size)
        Self.serve(server, "/export", content, first: .closeDuringBody)
        let destination = Destination()
        let client = try makeClient()
        var options = CallOptions(maxResponseSize: 8 << 20)
        if optsIn { options.retryPolicy = RetryPolicy.default.allowingNonIdempotent() }
        let download = client.download(HTTPRequest(.post, server.url("/export")), to: destination.url, options: options)
        let response = try? await download.response
        let requests = server.recordedRequests(path: "/export")
        #expect(requests.allSatisfy { $0.method == "POST" })
        if optsIn {
            #expect(response?.status == .partialContent)
            #expect(requests.count == 2)
            #expect(try Data(contentsOf: destination.url) == content)
        } else {
            #expect(response == nil)
            #expect(requests.count == 1)
            #expect(!destination.exists)
            #expect(!destination.partExists)
        }
    }

    /// A download that replaces a private file (mode 0600) keeps it private, and so does its
    /// part file while the bytes arrive (looked at when the download resumes): the bytes go to
    /// a new file renamed over the old one. On the old code both were 0644 (readable by every
    /// user of the machine).
    @Test func aReplacedFileKeepsItsModeWhileAndAfterTheDownload() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: Self.size)
        let destination = Destination()
        let url = destination.url
        let partModes = Recorder<Int>()
        Self.serve(server, "/file", content, first: .closeDuringBody) { start, content in
            let folder = url.deletingLastPathComponent().path
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            for name in names where name.hasPrefix(url.lastPathComponent + ".") && name.hasSuffix(".part") {
                let attributes = try? FileManager.default.attributesOfItem(atPath: folder + "/" + name)
                partModes.append(attributes?[.posixPermissions] as? Int ?? -1)
            }
            return LargeBodyTests.partial(content, from: start)
        }
        try Data("old private content".utf8).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        let client = try makeClient()
        _ = try await client.download(
            HTTPRequest(.get, server.url("/file")), to: url, options: CallOptions(maxResponseSize: 8 << 20)
        ).response
        #expect(try Data(contentsOf: url) == content)
        #expect(partModes.values == [0o600])
        let mode = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func aContentRangeThatDoesNotContinueTheFileIsRefused() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: Self.size)
        Self.serve(server, "/file", content, first: .closeDuringBody) { start, content in
            Self.partial(content, from: start, claimedStart: 0)
        }
        let destination = Destination()
        let client = try makeClient()
        let error = await courierError {
            _ = try await client.download(
                HTTPRequest(.get, server.url("/file")), to: destination.url,
                options: CallOptions(maxResponseSize: 8 << 20)
            ).response
        }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message.contains("not at byte") == true)
        #expect(!destination.exists)
        #expect(!destination.partExists)
    }

    @Test func anErrorStatusWritesNoFile() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let destination = Destination()
        let client = try makeClient()
        let error = await courierError {
            _ = try await client.download(HTTPRequest(.get, server.url("/status/404")), to: destination.url).response
        }
        #expect(error?.code == .httpStatus)
        #expect(error?.status == .notFound)
        #expect(!destination.exists)
        #expect(!destination.partExists)
    }

    @Test func theResponseSizeLimitStillApplies() async throws {
        let server = try TestServer()
        defer { server.stop() }
        Self.serve(server, "/file", TestServer.bytePattern(count: Self.size))
        let destination = Destination()
        let client = try makeClient()
        let error = await courierError {
            _ = try await client.download(
                HTTPRequest(.get, server.url("/file")), to: destination.url,
                options: CallOptions(maxResponseSize: 1 << 20)
            ).response
        }
        #expect(error?.code == .responseTooLarge)
        #expect(!destination.exists)
        #expect(!destination.partExists)
    }

    /// The part file has a name of its own, made with `O_EXCL | O_NOFOLLOW`: a link planted at
    /// the name it used to have (`file.part`, known in advance) is not followed, and the file
    /// it points at is not overwritten; two downloads to one file write two part files.
    @Test func aLinkAtTheOldPartNameIsNotFollowed() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: 100_000)
        Self.serve(server, "/file", content)
        let destination = Destination()
        let victim = destination.url.path + ".victim"
        let planted = destination.url.path + ".part"
        try Data("precious".utf8).write(to: URL(fileURLWithPath: victim))
        try FileManager.default.createSymbolicLink(atPath: planted, withDestinationPath: victim)
        defer {
            try? FileManager.default.removeItem(atPath: victim)
            try? FileManager.default.removeItem(atPath: planted)
        }
        let client = try makeClient()
        _ = try await client.download(HTTPRequest(.get, server.url("/file")), to: destination.url).response
        #expect(try Data(contentsOf: URL(fileURLWithPath: victim)) == Data("precious".utf8))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: planted) == victim)
        #expect(
            try FileManager.default.attributesOfItem(atPath: destination.url.path)[.type] as? FileAttributeType
                == .typeRegular)
        #expect(crc32(try Data(contentsOf: destination.url)) == crc32(content))
        #expect(destination.parts == [planted], "no part file is left but the planted link")
    }

    @Test func cancellingLeavesNoFile() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: Self.size)
        // The first piece at once, the next only after the test is over: the download cannot
        // end before it is cancelled, however slowly the machine runs.
        server.route("/slow") { _ in
            ScriptedResponse(body: content, fault: .trickle(bytes: 64 << 10, interval: .seconds(120)))
        }
        let destination = Destination()
        let client = try makeClient()
        let transfer = client.download(
            HTTPRequest(.get, server.url("/slow")), to: destination.url, options: CallOptions(maxResponseSize: 8 << 20))
        var iterator = transfer.progress.makeAsyncIterator()
        let first = await iterator.next()
        #expect((first?.completed ?? 0) > 0)
        #expect(destination.partExists)
        transfer.cancel()
        await #expect(throws: CancellationError.self) { _ = try await transfer.response }
        #expect(!destination.exists)
        #expect(!destination.partExists)
    }

    // MARK: Upload

    @Test func aFileUploadArrivesByteExactWithContentLength() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: Self.size)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("courier-upload-\(UUID())").path
        try content.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let client = try makeClient()
        let transfer = client.upload(HTTPRequest(.put, server.url("/upload")), body: .file(path: path))
        let progress = Self.collect(transfer.progress)
        #expect(try await transfer.response.status == .ok)
        let recorded = try #require(server.recordedRequests.first)
        #expect(recorded.bodyByteCount == Self.size)
        #expect(recorded.bodyCRC32 == crc32(content))
        #expect(recorded.header("Content-Length") == "\(Self.size)")
        Self.expectMonotonic(await progress.value, endingAt: Int64(Self.size))
    }

    /// `content` in chunks, each pulled after a suspension (`Task.yield`), so the transfer
    /// sometimes finds nothing buffered and pauses until the next chunk wakes it. Pulled, not
    /// pushed: nothing spins while the upload is behind.
    struct Chunks: AsyncSequence, Sendable {
        let content: Data
        let size: Int

        struct AsyncIterator: AsyncIteratorProtocol {
            let content: Data
            let size: Int
            var offset = 0

            mutating func next() async -> Data? {
                guard offset < content.count else { return nil }
                await Task.yield()
                let end = Swift.min(content.count, offset + size)
                defer { offset = end }
                return content.subdata(in: offset..<end)
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(content: content, size: size) }
    }

    static func chunks(of content: Data, size: Int = 50_000) -> Chunks { Chunks(content: content, size: size) }

    /// A client for the streamed uploads: each chunk of an `AsyncSequence` body is produced by a
    /// task of the cooperative pool, which the whole suite shares; under ThreadSanitizer (two
    /// cores, every suite at once) a producer waited past the 30 s stall timeout, and the
    /// upload ended `.timedOut` instead of what the test checks. A stall is not what these
    /// tests are about: no stall timeout, and a total bound far past the suite's slowest test.
    static func streamingClient() throws -> HTTPClient {
        try makeClient {
            $0.stallTimeout = nil
            $0.timeout = .seconds(300)
        }
    }

    @Test(arguments: [false, true])
    func anAsyncSequenceUploadArrivesByteExact(lengthKnown: Bool) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let content = TestServer.bytePattern(count: Self.size)
        let client = try Self.streamingClient()
        let body = RequestBody.stream(Self.chunks(of: content), length: lengthKnown ? Int64(Self.size) : nil)
        let transfer = client.upload(HTTPRequest(.post, server.url("/upload")), body: body)
        let progress = Self.collect(transfer.progress)
        #expect(try await transfer.response.status == .ok)
        let recorded = try #require(server.recordedRequests.first)
        #expect(recorded.bodyByteCount == Self.size)
        #expect(recorded.bodyCRC32 == crc32(content))
        if lengthKnown {
            #expect(recorded.header("Content-Length") == "\(Self.size)")
        } else {
            #expect(recorded.header("Transfer-Encoding") == "chunked")
        }
        Self.expectMonotonic(await progress.value, endingAt: Int64(Self.size))
    }

    /// The read callback's side: no bytes yet pauses (nil), a chunk wakes the transfer, the
    /// end of the sequence ends the body, and a second reader of the same body is refused.
    @Test func aStreamedSegmentPausesUntilItsSequenceHasBytes() async throws {
        let (chunks, producer) = AsyncStream.makeStream(of: Data.self)
        let (wakes, waker) = AsyncStream.makeStream(of: Void.self)
        let body = RequestBody.stream(chunks)
        #expect(try body.knownLength() == nil)
        let reader = BodyReader(body: body, length: nil) { waker.yield() }
        var buffer = [UInt8](repeating: 0, count: 100)
        func read() throws -> Int? {
            try buffer.withUnsafeMutableBytes { try reader.read(into: $0.baseAddress!, capacity: 100) }
        }
        var woken = wakes.makeAsyncIterator()
        #expect(try read() == nil)
        producer.yield(Data("abc".utf8))
        _ = await woken.next()
        #expect(try read() == 3)
        #expect(Array(buffer[0..<3]) == Array("abc".utf8))
        #expect(try read() == nil)
        producer.finish()
        _ = await woken.next()
        #expect(try read() == 0)
        let again = BodyReader(body: body, length: nil) {}
        #expect(throws: CourierError.self) {
            try buffer.withUnsafeMutableBytes { try again.read(into: $0.baseAddress!, capacity: 100) }
        }
    }

    /// A declared length is held to: the last byte waits for the end of the sequence, and a
    /// sequence with more bytes fails the read before the body is complete (its extra bytes
    /// were dropped and the call reported success, with a body the caller never meant).
    @Test func aStreamWithADeclaredLengthMustEndThere() async throws {
        var buffer = [UInt8](repeating: 0, count: 100)
        func read(_ reader: BodyReader) throws -> Int? {
            try buffer.withUnsafeMutableBytes { try reader.read(into: $0.baseAddress!, capacity: 100) }
        }
        /// A reader of a body declared 3 bytes long whose sequence has yielded "abc": all but the
        /// last byte go at once. Then `next` (finish, or yield one byte more) and, if the reader
        /// paused, the wake-up it waits for (a reader that did not pause is never woken).
        func afterTheDeclaredBytes(then next: (AsyncStream<Data>.Continuation) -> Void) async throws -> BodyReader {
            let (chunks, producer) = AsyncStream.makeStream(of: Data.self)
            let (wakes, waker) = AsyncStream.makeStream(of: Void.self)
            var woken = wakes.makeAsyncIterator()
            let reader = BodyReader(body: .stream(chunks, length: 3), length: 3) { waker.yield() }
            #expect(try read(reader) == nil)
            producer.yield(Data("abc".utf8))
            _ = await woken.next()
            #expect(try read(reader) == 2)
            let paused = try read(reader)
            #expect(paused == nil, "the last declared byte went before the sequence ended")
            next(producer)
            if paused == nil { _ = await woken.next() }
            return reader
        }
        // Exactly the declared bytes: the last one goes once the sequence has ended.
        let whole = try await afterTheDeclaredBytes { $0.finish() }
        #expect(try read(whole) == 1)
        #expect(buffer[0] == UInt8(ascii: "c"))
        // One byte more: refused before the last declared byte is handed over.
        let overlong = try await afterTheDeclaredBytes { $0.yield(Data("d".utf8)) }
        let error = #expect(throws: CourierError.self) { try read(overlong) }
        #expect(error?.code == .invalidRequest)
    }

    @Test(arguments: [[10, 10], [20], [5, 5, 1]])
    func aStreamLongerThanItsLengthFailsAndTheServerGetsNoRequest(chunkSizes: [Int]) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try Self.streamingClient()
        let chunks = AsyncStream<Data> { continuation in
            for size in chunkSizes { continuation.yield(Data(repeating: 7, count: size)) }
            continuation.finish()
        }
        let error = await courierError {
            _ = try await client.send(HTTPRequest(.post, server.url("/upload")), body: .stream(chunks, length: 10))
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains("more bytes than its declared length") == true)
        #expect(server.recordedRequests(path: "/upload").isEmpty)
    }

    /// A streamed body a 307 would send again is not: the error names the redirect that asked
    /// for it (on the old code it said only that the body can be sent once).
    @Test func aStreamedBodyIsNotSentTwice() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/moved") { _ in .redirect(to: "/upload", status: 307) }
        let client = try Self.streamingClient()
        let body = RequestBody.stream(Self.chunks(of: Data(repeating: 7, count: 1000)), length: 1000)
        let error = await courierError {
            _ = try await client.send(HTTPRequest(.post, server.url("/moved")), body: body)
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains("only once") == true)
        #expect(error?.message.contains("307") == true, "\(String(describing: error))")
    }

    /// Writes a streamed body, as a compressing or a file-slicing serializer of the app's own may.
    struct StreamingSerializer: RequestSerializer {
        func serialize<Parameters: Encodable>(_ parameters: Parameters, into request: inout PreparedRequest) throws {
            request.setBody(
                .stream(LargeBodyTests.chunks(of: Data(repeating: 7, count: 1000)), length: 1000),
                contentType: "application/octet-stream")
        }
    }

    /// A streamed body of a service call answered 401: the credential is refreshed and the call
    /// sent again, which the body cannot be. The error names the 401 and keeps it as its
    /// underlying error. On the old code it said only that the body can be sent once.
    @Test func aStreamedBodyResentAfterARefreshNamesThe401() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("POST", "/upload") { request in
            request.header("Authorization") == "Bearer fresh"
                ? .json(["id": 1, "name": "up"]) : ScriptedResponse(status: 401)
        }
        let coordinator = AuthRefreshCoordinator<String>(credential: "stale") { _ in "fresh" }
        let service = try ServiceFixture.service(server) {
            $0.authentication = .bearer(coordinator)
            $0.requestSerializer = StreamingSerializer()
        }
        let error = await courierError {
            let _: ServiceUser = try await service.post("upload", body: ["file": "x"])
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains("only once") == true)
        #expect(error?.message.contains("401") == true, "\(String(describing: error))")
        #expect((error?.underlying as? CourierError)?.status == .unauthorized)
        #expect(server.count("/upload") == 1)
    }

    @Test func aFailingSequenceFailsTheUpload() async throws {
        struct Broken: Error {}
        let server = try TestServer()
        defer { server.stop() }
        let client = try Self.streamingClient()
        let chunks = AsyncThrowingStream<Data, any Error> { continuation in
            continuation.yield(Data(repeating: 1, count: 10_000))
            continuation.finish(throwing: Broken())
        }
        let error = await courierError {
            _ = try await client.send(HTTPRequest(.post, server.url("/upload")), body: .stream(chunks))
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.underlying is Broken)
    }
}

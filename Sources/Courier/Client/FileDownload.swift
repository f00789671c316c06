import CCurl
import Foundation
import HTTPTypes

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One `HTTPClient.download(_:to:options:)`: streams the body into a part file of its own
/// beside `file` (`file.XXXXXXXX.part`), resumes it
/// with `Range` after a failure mid-body, renames it to `file` when complete.
///
/// The bytes are written by the task reading the body stream, not on the transport's thread:
/// a slow disk pauses this transfer (the stream's back-pressure), never the others.
struct FileDownload {
    /// Resumes after failures mid-body, each after some bytes arrived (none for a method that
    /// is not idempotent, unless the call's `RetryPolicy` allows retrying those).
    static let maxResumes = 3

    let client: HTTPClient
    let request: HTTPRequest
    let file: URL
    let options: CallOptions
    let progress: ProgressChannel

    init(client: HTTPClient, request: HTTPRequest, file: URL, options: CallOptions, progress: ProgressChannel) {
        self.client = client
        self.request = request
        self.file = file
        self.options = options
        self.progress = progress
    }

    /// What a resumed request must match: the first response's validator, and where it stopped.
    private struct Resumption {
        /// Bytes written to the file.
        var offset: Int64 = 0
        /// A strong `ETag` or a `Last-Modified` date (`If-Range`); nil: the download cannot resume.
        var validator: String?
        /// The length of the whole resource (the first response's `Content-Length`, or its
        /// `Content-Range` total), when known.
        var total: Int64?
        /// The range the caller asked for (its own `Range` field), until an answer fixes it;
        /// nil for the whole resource, and from a `200` on (the server sent it all).
        var requested: RequestedRange?
        /// The resource's bytes the file holds, from the first `206` to a caller's range on:
        /// the file's first byte is the resource's byte `range.first`.
        var range: (first: Int64, last: Int64)?

        /// The resource byte the next body byte must be.
        var next: Int64 { (range?.first ?? 0) + offset }
        /// The bytes the file will hold when complete, when known (progress's total).
        var expected: Int64? { range.map { $0.last - $0.first + 1 } ?? total }
    }

    /// A caller's own `Range` field: one byte range (`bytes=first-last`, `bytes=first-` or
    /// `bytes=-suffix`). The file holds those bytes of the resource, and a resumption asks for
    /// the rest of them.
    enum RequestedRange: Equatable {
        case from(first: Int64, last: Int64?)
        case suffix(Int64)

        /// - Throws: `CourierError.invalidRequest` for anything else (several ranges, another
        ///   unit): the file could not hold the answer as the caller's bytes.
        init(_ value: String) throws(CourierError) {
            let refused = CourierError(
                .invalidRequest,
                "a download takes one byte range (bytes=first-last, first- or -suffix), not: \(value.prefix(80))")
            let text = value.trimmingCharacters(in: .whitespaces)
            guard text.lowercased().hasPrefix("bytes="), !text.contains(",") else { throw refused }
            let bounds = text.dropFirst("bytes=".count).split(
                separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard bounds.count == 2 else { throw refused }
            let first = bounds[0].trimmingCharacters(in: .whitespaces)
            let last = bounds[1].trimmingCharacters(in: .whitespaces)
            let digits = { (text: String) in !text.isEmpty && text.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }
            if first.isEmpty {
                guard digits(last), let length = Int64(last), length > 0 else { throw refused }
                self = .suffix(length)
            } else {
                guard digits(first), let start = Int64(first), last.isEmpty || digits(last) else { throw refused }
                let end = last.isEmpty ? nil : Int64(last)
                guard last.isEmpty || end.map({ $0 >= start }) == true else { throw refused }
                self = .from(first: start, last: end)
            }
        }

        /// Whether `range` (of a resource of `total` bytes, when known) is the answer to this
        /// range (RFC 9110 §14.1.2: a last byte past the end means the end).
        func isAnsweredBy(_ range: ContentRange) -> Bool {
            switch self {
            case .from(let first, let last):
                guard range.first == first else { return false }
                let end = [last, range.total.map { $0 - 1 }].compactMap { $0 }.min()
                return end.map { range.last == $0 } ?? true
            case .suffix(let length):
                guard let total = range.total else { return range.last - range.first + 1 <= length }
                return range.last == total - 1 && range.last - range.first + 1 == min(length, total)
            }
        }
    }

    func run() async throws -> HTTPClient.Response {
        guard file.isFileURL else {
            throw CourierError(.invalidRequest, "the download destination \(file) is not a file URL")
        }
        // One deadline for the whole download: a resumption gets what is left of the timeout,
        // and none starts once it has passed (the total timeout is not a broken connection;
        // resumed, each request had the whole timeout again).
        let settings = client.liveSettings
        let timeout = try ConfigurationBounds.timeout(options.timeout, "request timeout") ?? settings.settings.timeout
        let deadline = timeout.map { ContinuousClock.now + $0 }
        // A resumption after a logout is refused, not sent with the next user's credential (the
        // rest of that user's file joined to this one's start). One that gets no credential (from
        // another origin: a CDN) is no session's, and resumes.
        let sendsCredential = client.credentialScope.admits(request, decision: nil, baseOrigin: settings.origin)
        let context = sendsCredential ? TransferContext(session: client.sessionGeneration) : .none
        let output = try PartFile(beside: file.path)
        let partPath = output.path
        var done = false
        defer {
            output.close()
            if !done { unlink(partPath) }
        }
        let limit = options.maxResponseSize ?? client.configuration.maxResponseSize
        var state = Resumption()
        if let range = request.headerFields[.range] { state.requested = try RequestedRange(range) }
        var resumes = 0
        // Resuming sends the request again: a POST only when the caller opts in, as for any retry.
        let maxResumes =
            request.method.isIdempotent || options.retryPolicy?.retriesNonIdempotent == true ? Self.maxResumes : 0
        while true {
            let startOffset = state.offset
            do {
                let remaining = resumes > 0 ? deadline.map { $0 - .now } : nil
                let response = try await attempt(
                    &state, output: output, limit: limit, timeout: remaining, context: context)
                try output.sync()
                try output.takeMode(of: file.path)
                guard rename(partPath, file.path) == 0 else {
                    throw CourierError(.invalidRequest, "cannot move the download to \(file.path): \(errnoText())")
                }
                done = true
                progress.report(TransferProgress(completed: state.offset, total: state.offset))
                return response
            } catch let error as CourierError
                where state.offset > startOffset && state.validator != nil && resumes < maxResumes
                && error.allowsResume && deadline.map({ $0 - .now > .zero }) ?? true
            {
                resumes += 1
                client.configuration.logger.debug(
                    "download resumes at byte \(state.offset) after: \(error.message)",
                    metadata: ["path": "\(request.path ?? "/")"])
            }
        }
    }

    /// One request: from byte `state.offset` when resuming.
    /// - Parameters:
    ///   - timeout: what is left of the download's timeout for a resumption (nil: the options'
    ///     own).
    ///   - context: the client's session the download began in.
    private func attempt(
        _ state: inout Resumption, output: PartFile, limit: Int64, timeout: Duration?, context: TransferContext
    ) async throws -> HTTPClient.Response {
        var head = request
        // Ranges count bytes as sent: a decoded (gzip) body could not be resumed.
        if head.headerFields[.acceptEncoding] == nil { head.headerFields[.acceptEncoding] = "identity" }
        // The caller's own range goes as it is until an answer fixes it; a resumption asks for
        // the rest of it, or of the whole resource.
        if state.offset > 0, let validator = state.validator {
            head.headerFields[.range] = "bytes=\(state.next)-" + (state.range.map { "\($0.last)" } ?? "")
            head.headerFields[.ifRange] = validator
        }
        var options = self.options
        if let timeout {
            guard timeout > .zero else { throw CourierError(.timedOut, "the download took longer than its timeout") }
            options.timeout = timeout
        }
        let streamed = try await client.stream(head, body: nil, options: options, context: context)
        let answer = streamed.head
        // The byte a `206` body must end at: its length is framed apart from its Content-Range.
        var rangeEnd: Int64?
        switch answer.status.code {
        case 206:
            // Only an answer to a range (RFC 9110 §15.3.7): one to a request for the whole
            // resource may be any part of it (`bytes 0-99/*` looked like all of it).
            guard head.headerFields[.range] != nil else {
                throw CourierError(.invalidResponse, "a 206 response to a download that asked for no range")
            }
            let requested = state.offset == 0 ? state.requested : nil
            let range = try ContentRange(
                answer.headerFields[.contentRange], expectedStart: requested == nil ? state.next : nil)
            if let requested {
                // The first answer to the caller's range: it must be that range, and fixes it.
                guard requested.isAnsweredBy(range) else {
                    throw CourierError(
                        .invalidResponse,
                        "the server sent bytes \(range.first)-\(range.last) of \(range.total.map { "\($0)" } ?? "*"), "
                            + "not the range asked for (\(request.headerFields[.range] ?? ""))")
                }
                // The caller's own `If-Range` asked for its range of that version only (it holds
                // the bytes before): a server that ignores it must not hand another version's.
                if let asked = request.headerFields[.ifRange], !Self.matches(answer, asked) {
                    throw CourierError(
                        .invalidResponse, "the server sent the range of another version than the request's If-Range")
                }
                state.range = (range.first, range.last)
                state.requested = nil
                state.validator = Self.validator(of: answer)
            } else if let fixed = state.range {
                // The rest of the caller's range, no more and no less.
                if range.last != fixed.last {
                    throw CourierError(
                        .invalidResponse,
                        "the server sent bytes \(range.first)-\(range.last), not the rest of bytes \(fixed.first)-\(fixed.last)"
                    )
                }
            } else if let total = range.total, range.last + 1 != total {
                // A range that stops short would be renamed as if it were the whole file.
                throw CourierError(
                    .invalidResponse, "the server sent bytes \(range.first)-\(range.last) of \(total), not the rest")
            }
            // The rest of the file the first response announced: a resumption that names
            // another length, or an unknown one (`*`) and stops short, is not of that file.
            if let known = state.total,
                range.total.map({ $0 != known }) ?? (state.range == nil && range.last + 1 != known)
            {
                throw CourierError(
                    .invalidResponse,
                    "the server resumed the download with bytes \(range.first)-\(range.last) of "
                        + "\(range.total.map { "\($0)" } ?? "*"), not the rest of the \(known) bytes it announced")
            }
            // If-Range asked for the rest of this version only: a server that ignores it must not
            // append another version's bytes to the file (RFC 9110 §15.3.7.3).
            if let validator = state.validator, !Self.matches(answer, validator) {
                throw CourierError(
                    .invalidResponse, "the server resumed the download from another version of the file")
            }
            state.total = range.total ?? state.total
            rangeEnd = range.last + 1
        case 200...299:
            // A full body: the server ignored the range (or none was asked for): start over,
            // with the whole resource (a caller's range included: the status says so).
            if state.offset > 0 { try output.truncate() }
            state.offset = 0
            state.range = nil
            state.requested = nil
            state.total = answer.headerFields[.contentLength].flatMap { Int64($0) }
            state.validator = Self.validator(of: answer)
        default:
            let body = try? await streamed.body.collect()
            throw CourierError(
                .httpStatus, "the download got HTTP \(answer.status.code), not a body", response: answer,
                body: body)
        }
        if let expected = state.expected, expected > limit { throw CourierError.tooLarge(limit) }
        for try await chunk in streamed.body {
            guard state.offset + Int64(chunk.count) <= limit else { throw CourierError.tooLarge(limit) }
            // Bytes past the `206`'s range are not the range's: refused before they are written
            // (and before `next` counts them, which near `Int64.max` would overflow).
            if let rangeEnd, Int64(chunk.count) > rangeEnd - state.next {
                throw CourierError(
                    .invalidResponse,
                    "the server's Content-Range ends at byte \(rangeEnd), its body goes on past it")
            }
            try output.write(chunk)
            state.offset += Int64(chunk.count)
            progress.report(TransferProgress(completed: state.offset, total: state.expected))
        }
        if let rangeEnd, state.next != rangeEnd {
            throw CourierError(
                .invalidResponse,
                "the server's Content-Range ends at byte \(rangeEnd), its body at byte \(state.next)")
        }
        return HTTPClient.Response(
            head: answer, body: Data(), metrics: TransferMetrics(), request: streamed.request, url: streamed.url,
            redirectCount: streamed.redirectCount)
    }

    /// Whether a `206` is of the version `validator` names: the same strong `ETag`, or the same
    /// `Last-Modified` when that was the validator; a response that names neither is taken at
    /// its word (it answered the `If-Range`).
    static func matches(_ response: HTTPResponse, _ validator: String) -> Bool {
        let named = validator.hasPrefix("\"") ? response.headerFields[.eTag] : response.headerFields[.lastModified]
        return named.map { $0 == validator } ?? true
    }

    /// The `If-Range` value a resumed request may carry: a strong `ETag`, else `Last-Modified`;
    /// none for a content-encoded body (its ranges would not match the bytes written).
    static func validator(of response: HTTPResponse) -> String? {
        guard response.headerFields[.contentEncoding].map({ $0 == "identity" }) ?? true else { return nil }
        if let etag = response.headerFields[.eTag], etag.hasPrefix("\"") { return etag }
        return response.headerFields[.lastModified]
    }
}

/// A `Content-Range: bytes first-last/total` header of a `206` that must continue the file.
struct ContentRange: Equatable {
    var first: Int64
    var last: Int64
    /// nil for `*` (unknown).
    var total: Int64?

    /// - Throws: `CourierError.invalidResponse` when the header is missing, malformed, or does
    ///   not start at `expectedStart` (nil: the first answer to a caller's range, checked by it).
    init(_ header: String?, expectedStart: Int64?) throws(CourierError) {
        guard let header else {
            throw CourierError(.invalidResponse, "a 206 response without Content-Range")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        let span = parts.count == 2 ? parts[1].split(separator: "/", maxSplits: 1) : []
        let bounds = span.first?.split(separator: "-", maxSplits: 1) ?? []
        guard parts.first == "bytes", span.count == 2, bounds.count == 2,
            let first = Int64(bounds[0]), let last = Int64(bounds[1]), first <= last, last < Int64.max,
            span[1] == "*" || Int64(span[1]).map({ $0 > last }) == true
        else {
            throw CourierError(.invalidResponse, "a 206 response with a malformed Content-Range: \(header.prefix(80))")
        }
        if let expectedStart, first != expectedStart {
            throw CourierError(
                .invalidResponse,
                "the server resumed the download at byte \(first), not at byte \(expectedStart) "
                    + "(Content-Range: \(header.prefix(80)))"
            )
        }
        self.first = first
        self.last = last
        total = Int64(span[1])
    }
}

extension CourierError {
    /// A failure mid-body that resuming may cure: a broken connection, a stall, a body
    /// shorter than announced. Not curl's timeout, the download's total one (the stall timeout
    /// is Courier's own, `CurlTransfer.hasStalled`): resumed, it had the whole timeout again.
    fileprivate var allowsResume: Bool {
        let code = (underlying as? CurlFailure)?.code
        guard code != Int(CURLE_OPERATION_TIMEDOUT.rawValue) else { return false }
        return isTransient || code == Int(CURLE_PARTIAL_FILE.rawValue)
    }
}

/// The part file a download writes, through a file descriptor; used by one task.
///
/// Its name is new for each download (`file.XXXXXXXX.part`, random) and it is created with
/// `O_EXCL | O_NOFOLLOW`: a name known in advance let a link planted there redirect the bytes
/// into another file (emptied first), and two downloads to one file wrote into one part file.
/// Beside `file`, so that the final rename stays on its file system.
final class PartFile {
    let path: String
    private var descriptor: Int32

    /// Creates a part file for `file`.
    /// - Throws: `CourierError.invalidRequest` when it cannot.
    init(beside file: String) throws(CourierError) {
        var attempt = 0
        while true {
            let path = file + "." + String(UInt32.random(in: .min ... .max), radix: 16) + ".part"
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            if fd >= 0 {
                self.path = path
                descriptor = fd
                // From the first byte: a private file's new bytes are private while they arrive.
                do {
                    try takeMode(of: file)
                } catch {
                    close()
                    unlink(path)
                    throw error
                }
                return
            }
            attempt += 1
            // Taken (by a file or a link): another name; any other failure is final.
            guard errno == EEXIST, attempt < 16 else {
                throw CourierError(.invalidRequest, "cannot create the download file \(path): \(errnoText())")
            }
        }
    }

    deinit { close() }

    func write(_ chunk: Data) throws(CourierError) {
        let fd = descriptor
        let failed = chunk.withUnsafeBytes { bytes -> Bool in
            var done = 0
            while done < bytes.count {
                let count = writeDescriptor(fd, bytes.baseAddress! + done, bytes.count - done)
                if count < 0 {
                    if errno == EINTR { continue }
                    return true
                }
                done += count
            }
            return false
        }
        if failed { throw CourierError(.invalidRequest, "cannot write the download file \(path): \(errnoText())") }
    }

    /// Gives the part file the permission bits of the regular file at `path`, when there is
    /// one (not through a link): when it is made and again before it is renamed over it. A
    /// private (0600) file replaced by a download would otherwise come out with the part
    /// file's mode (0644 less the umask), readable by every user of the machine, and so would
    /// its new bytes while they arrive. Setuid, setgid and sticky bits are not copied.
    /// - Throws: `CourierError.invalidRequest` when the mode cannot be set.
    func takeMode(of path: String) throws(CourierError) {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return }
        guard fchmod(descriptor, info.st_mode & 0o777) == 0 else {
            throw CourierError(.invalidRequest, "cannot set the mode of the download file \(self.path): \(errnoText())")
        }
    }

    /// Empties the file, for a download that starts over.
    func truncate() throws(CourierError) {
        let fd = descriptor
        guard ftruncate(fd, 0) == 0, lseek(fd, 0, SEEK_SET) == 0 else {
            throw CourierError(.invalidRequest, "cannot empty the download file \(path): \(errnoText())")
        }
    }

    func sync() throws(CourierError) {
        let fd = descriptor
        guard fsync(fd) == 0 else {
            throw CourierError(.invalidRequest, "cannot write the download file \(path): \(errnoText())")
        }
    }

    func close() {
        if descriptor >= 0 { _ = closeDescriptor(descriptor) }
        descriptor = -1
    }
}

private func errnoText() -> String { String(cString: strerror(errno)) }

/// `write(2)` and `close(2)`, named apart from `PartFile`'s methods.
private func writeDescriptor(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}

private func closeDescriptor(_ descriptor: Int32) -> Int32 { close(descriptor) }

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
        var offset: Int64 = 0
        /// A strong `ETag` or a `Last-Modified` date (`If-Range`); nil: the download cannot resume.
        var validator: String?
        var total: Int64?
    }

    func run() async throws -> HTTPClient.Response {
        guard file.isFileURL else {
            throw CourierError(.invalidRequest, "the download destination \(file) is not a file URL")
        }
        // One deadline for the whole download: a resumption gets what is left of the timeout,
        // and none starts once it has passed (the total timeout is not a broken connection;
        // resumed, each request had the whole timeout again).
        let timeout =
            try ConfigurationBounds.timeout(options.timeout, "request timeout") ?? client.liveSettings.settings.timeout
        let deadline = timeout.map { ContinuousClock.now + $0 }
        let output = try PartFile(beside: file.path)
        let partPath = output.path
        var done = false
        defer {
            output.close()
            if !done { unlink(partPath) }
        }
        let limit = options.maxResponseSize ?? client.configuration.maxResponseSize
        var state = Resumption()
        var resumes = 0
        // Resuming sends the request again: a POST only when the caller opts in, as for any retry.
        let maxResumes =
            request.method.isIdempotent || options.retryPolicy?.retriesNonIdempotent == true ? Self.maxResumes : 0
        while true {
            let startOffset = state.offset
            do {
                let remaining = resumes > 0 ? deadline.map { $0 - .now } : nil
                let response = try await attempt(&state, output: output, limit: limit, timeout: remaining)
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
    /// - Parameter timeout: what is left of the download's timeout for a resumption (nil: the
    ///   options' own).
    private func attempt(_ state: inout Resumption, output: PartFile, limit: Int64, timeout: Duration?) async throws
        -> HTTPClient.Response
    {
        var head = request
        // Ranges count bytes as sent: a decoded (gzip) body could not be resumed.
        if head.headerFields[.acceptEncoding] == nil { head.headerFields[.acceptEncoding] = "identity" }
        if state.offset > 0, let validator = state.validator {
            head.headerFields[.range] = "bytes=\(state.offset)-"
            head.headerFields[.ifRange] = validator
        }
        var options = self.options
        if let timeout {
            guard timeout > .zero else { throw CourierError(.timedOut, "the download took longer than its timeout") }
            options.timeout = timeout
        }
        let streamed = try await client.stream(head, options: options)
        let answer = streamed.head
        // The byte a `206` body must end at: its length is framed apart from its Content-Range.
        var rangeEnd: Int64?
        switch answer.status.code {
        case 206:
            let range = try ContentRange(answer.headerFields[.contentRange], expectedStart: state.offset)
            // A range that stops short would be renamed as if it were the whole file.
            if let total = range.total, range.last + 1 != total {
                throw CourierError(
                    .invalidResponse, "the server sent bytes \(range.first)-\(range.last) of \(total), not the rest")
            }
            // The rest of the file the first response announced: a resumption that names
            // another length, or an unknown one (`*`) and stops short, is not of that file.
            if let known = state.total, range.total.map({ $0 != known }) ?? (range.last + 1 != known) {
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
            // A full body: the server ignored the range (or none was asked for): start over.
            if state.offset > 0 { try output.truncate() }
            state.offset = 0
            state.total = answer.headerFields[.contentLength].flatMap { Int64($0) }
            state.validator = Self.validator(of: answer)
        default:
            let body = try? await streamed.body.collect()
            throw CourierError(
                .httpStatus, "the download got HTTP \(answer.status.code), not a body", response: answer,
                body: body)
        }
        if let total = state.total, total > limit { throw CourierError.tooLarge(limit) }
        for try await chunk in streamed.body {
            guard state.offset + Int64(chunk.count) <= limit else { throw CourierError.tooLarge(limit) }
            try output.write(chunk)
            state.offset += Int64(chunk.count)
            progress.report(TransferProgress(completed: state.offset, total: state.total))
        }
        if let rangeEnd, state.offset != rangeEnd {
            throw CourierError(
                .invalidResponse,
                "the server's Content-Range ends at byte \(rangeEnd), its body at byte \(state.offset)")
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
    ///   not start at `expectedStart`.
    init(_ header: String?, expectedStart: Int64) throws(CourierError) {
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
        guard first == expectedStart else {
            throw CourierError(
                .invalidResponse,
                "the server resumed the download at byte \(first), not at byte \(expectedStart) (Content-Range: \(header.prefix(80)))"
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

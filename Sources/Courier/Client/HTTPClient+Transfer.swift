import Foundation
import HTTPTypes

extension HTTPClient {
    /// A download or upload under way: its progress as it happens, and its response.
    ///
    /// The transfer runs whether or not `response` is awaited; `cancel()` stops it.
    public struct Transfer: Sendable {
        /// How far the body has come, delivered off the transport's thread. A slow reader gets
        /// the latest value (older ones are dropped); values never go back; the sequence ends
        /// when the transfer does, after a last value equal to the total when it succeeded.
        public let progress: AsyncStream<TransferProgress>
        private let task: Task<Response, any Error>

        init(progress: ProgressChannel, _ work: @escaping @Sendable (ProgressChannel) async throws -> Response) {
            self.progress = progress.stream
            task = Task {
                do {
                    let response = try await work(progress)
                    progress.finish()
                    return response
                } catch {
                    progress.finish()
                    throw error
                }
            }
        }

        /// The final response once the transfer ended (a download's body is empty: the
        /// bytes are in the file). Cancelling the awaiting task cancels the transfer.
        /// - Throws: as `send(_:body:options:)`, and as `download(_:to:options:)` says.
        public var response: Response {
            get async throws {
                let task = self.task
                return try await withTaskCancellationHandler {
                    try await task.value
                } onCancel: {
                    task.cancel()
                }
            }
        }

        /// Stops the transfer: `response` throws `CancellationError`; a download leaves no file.
        public func cancel() { task.cancel() }
    }

    /// Downloads the response body straight into a file, never holding it in memory.
    ///
    /// Bytes go to a part file of the download's own beside `file` (`file.XXXXXXXX.part`, a
    /// random name created exclusively, never through a link), renamed to `file` (replacing
    /// it) once the body is
    /// complete, so an interrupted download never looks complete. A transfer that fails after
    /// some bytes arrived is resumed (up to 3 times) with `Range` and `If-Range` when the
    /// response had a strong `ETag` or a `Last-Modified` date; a `200` answer starts over, a
    /// `206` whose `Content-Range` does not continue the file fails. `maxResponseSize` still
    /// caps the body (64 MiB unless raised): raise it in `options` for a large file.
    /// - Parameters:
    ///   - request: The request (a GET, usually); its scheme and authority may be left to the base URL.
    ///   - file: A file URL; its folder must exist.
    ///   - options: Per-request settings, as for `send(_:body:options:)`.
    /// - Returns: The transfer; its `response` throws `CourierError.httpStatus` for a status
    ///   other than 2xx (no file is written), `.invalidResponse` for a bad `Content-Range`,
    ///   `.invalidRequest` when the file cannot be written, else as `stream(_:body:options:)`.
    public func download(_ request: HTTPRequest, to file: URL, options: CallOptions = .default) -> Transfer {
        Transfer(progress: ProgressChannel()) { progress in
            try await FileDownload(client: self, request: request, file: file, options: options, progress: progress)
                .run()
        }
    }

    /// Sends a request body, a file or an `AsyncSequence` of any size (see `RequestBody`),
    /// reporting its progress.
    /// - Parameters:
    ///   - request: Method (POST, PUT…), URL parts and fields.
    ///   - body: The body; `.file(path:)` and `.stream(_:length:)` are never loaded whole.
    ///   - options: Per-request settings, as for `send(_:body:options:)`.
    /// - Returns: The transfer; its `response` is `send(_:body:options:)`'s.
    public func upload(_ request: HTTPRequest, body: RequestBody, options: CallOptions = .default) -> Transfer {
        Transfer(progress: ProgressChannel()) { progress in
            var options = options
            let callback = options.uploadProgress
            options.uploadProgress = { value in
                progress.report(value)
                callback?(value)
            }
            let response = try await self.send(request, body: body, options: options)
            progress.report(progress.latest.map { TransferProgress(completed: $0.completed, total: $0.completed) })
            return response
        }
    }
}

/// The `AsyncStream` behind `Transfer.progress`: keeps the newest value only, drops values
/// that would go back (a resend, a download that starts over).
final class ProgressChannel: Sendable {
    let stream: AsyncStream<TransferProgress>
    private let continuation: AsyncStream<TransferProgress>.Continuation
    private let last = LockedValue<TransferProgress?>(nil)

    init() {
        let (stream, continuation) = AsyncStream.makeStream(
            of: TransferProgress.self, bufferingPolicy: .bufferingNewest(1))
        self.stream = stream
        self.continuation = continuation
    }

    /// The newest value reported.
    var latest: TransferProgress? { last.withLock { $0 } }

    /// Passes `value` on unless it goes back or repeats the last one. Cheap: safe on the
    /// transport's thread (the stream's reader runs elsewhere).
    func report(_ value: TransferProgress?) {
        guard let value else { return }
        let fresh = last.withLock { last -> Bool in
            if let previous = last,
                value.completed < previous.completed || (value.completed == previous.completed && value == previous)
            {
                return false
            }
            last = value
            return true
        }
        if fresh { continuation.yield(value) }
    }

    func finish() { continuation.finish() }
}

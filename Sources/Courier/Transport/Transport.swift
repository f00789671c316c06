import Foundation
import HTTPTypes

/// Moves one HTTP exchange over the wire: no redirects, no retries, no decoding.
///
/// `HTTPClient` builds everything else (redirects, auth headers, validation) on top of a
/// transport. `CurlTransport` is the implementation Courier ships.
package protocol Transport: Sendable {
    /// Sends a request and buffers the whole response body.
    /// - Parameter request: What to send and how.
    /// - Returns: The response head, its body and the transfer's metrics.
    /// - Throws: `CourierError` for transport failures, `CancellationError` when the task is cancelled.
    func execute(_ request: TransportRequest) async throws -> TransportResponse

    /// Sends a request and returns as soon as the response head arrived; the body follows as
    /// a sequence of chunks.
    /// - Parameter request: What to send and how.
    /// - Returns: The response head and the body stream.
    /// - Throws: `CourierError` for failures before the head arrived, `CancellationError` when
    ///   the task is cancelled.
    func stream(_ request: TransportRequest) async throws -> TransportStreamResponse

    /// Makes one buffered request ready to send, without sending it: `HTTPClient`'s entry
    /// point, with `send(_:)`. The default wraps `execute(_:)`; see `TransportHop`.
    /// - Throws: `CourierError.invalidRequest` for a request the transport cannot send.
    func makeHop(_ request: TransportRequest) throws -> any TransportHop

    /// Sends a hop from this transport's `makeHop(_:)`; the response is then
    /// `hop.takeResponse()`.
    /// - Throws: as `execute(_:)`.
    func send(_ hop: any TransportHop) async throws

    /// The connections the transport holds open and the requests waiting for one, for the
    /// pool-size and queue-depth metrics; nil when the transport does not know.
    var load: TransportLoad? { get }
}

/// A transport's load at one moment.
package struct TransportLoad: Sendable, Hashable {
    /// Connections open (in use, being set up, or idle in the pool): the pool's size.
    package var connections: Int
    /// Requests handed to the transport that wait for a connection (the connection limits
    /// are reached): the queue's depth.
    package var queued: Int
}

extension Transport {
    package var load: TransportLoad? { nil }
}

/// One request as a transport sees it.
package struct TransportRequest: Sendable {
    /// Method, scheme, authority, path and header fields.
    package var head: HTTPRequest
    /// The body, if any.
    package var body: RequestBody?
    /// Timeouts, size limit and progress callbacks for this request.
    package var options: TransportOptions

    package init(head: HTTPRequest, body: RequestBody? = nil, options: TransportOptions = .init()) {
        self.head = head
        self.body = body
        self.options = options
    }
}

/// Limits and callbacks for one transfer.
package struct TransportOptions: Sendable {
    /// The whole transfer must end within this time (`nil`: no limit).
    package var timeout: Duration?
    /// The connection must be made within this time (`nil`: the transport's default).
    package var connectTimeout: Duration?
    /// Fail when no byte moved for this long (`nil`: no stall detection).
    package var stallTimeout: Duration?
    /// The largest body accepted, counted after content decoding.
    package var maxResponseSize: Int64
    /// Called on the transport's thread as bytes go out; keep it cheap.
    package var uploadProgress: (@Sendable (TransferProgress) -> Void)?
    /// Called on the transport's thread as bytes come in; keep it cheap.
    package var downloadProgress: (@Sendable (TransferProgress) -> Void)?
    /// The call's scope: cancelling it cancels the transfer, not the task that awaits it.
    var cancellationScope: CancellationScope?

    package init(
        timeout: Duration? = nil, connectTimeout: Duration? = nil, stallTimeout: Duration? = nil,
        maxResponseSize: Int64 = 64 << 20,
        uploadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
        downloadProgress: (@Sendable (TransferProgress) -> Void)? = nil
    ) {
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.stallTimeout = stallTimeout
        self.maxResponseSize = maxResponseSize
        self.uploadProgress = uploadProgress
        self.downloadProgress = downloadProgress
    }
}

/// How far an upload or download has come.
public struct TransferProgress: Sendable, Hashable {
    /// Bytes moved so far.
    public var completed: Int64
    /// Bytes expected in total, when known.
    public var total: Int64?

    init(completed: Int64, total: Int64?) {
        self.completed = completed
        self.total = total
    }

    /// `completed / total`, or `nil` when the total is unknown.
    public var fraction: Double? {
        guard let total, total > 0 else { return nil }
        return Double(completed) / Double(total)
    }
}

/// A buffered response.
package struct TransportResponse: Sendable {
    /// Status and header fields.
    package var head: HTTPResponse
    /// The body: decoded when the request had no `Accept-Encoding` (Courier offered and decodes
    /// gzip and deflate), as sent otherwise.
    package var body: Data
    /// Timings and sizes of the transfer.
    package var metrics: TransferMetrics

    package init(head: HTTPResponse, body: Data, metrics: TransferMetrics) {
        self.head = head
        self.body = body
        self.metrics = metrics
    }
}

/// A response whose body is still arriving.
package struct TransportStreamResponse: Sendable {
    /// Status and header fields.
    package var head: HTTPResponse
    /// The body, chunk by chunk. Dropping it (or cancelling the consuming task) aborts the transfer.
    package var body: ResponseBodyStream

    package init(head: HTTPResponse, body: ResponseBodyStream) {
        self.head = head
        self.body = body
    }
}

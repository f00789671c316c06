import CCurl
import Foundation
import HTTPTypes
import Synchronization

/// One request on its way through `CurlLoop`: what to send, what came back, and the
/// continuation waiting for it.
///
/// `@unchecked Sendable` because its parts have three owners, each safe on its own:
/// - the `let`s are set by the caller before the transfer is handed to the loop (the loop's
///   locked queue orders that before any use on the curl thread);
/// - the `var`s below "curl thread only" are touched only on the loop's thread (by the loop
///   and by curl callbacks it drives);
/// - `outcome` (the continuation) is guarded by a `LockedValue`, since both the curl thread and a
///   cancelling task resume it.
final class CurlTransfer: @unchecked Sendable {
    enum Delivery {
        /// Resume with the whole body once the transfer ended.
        case buffered
        /// Resume with the head as soon as it arrived; the body goes to the stream.
        case streaming(StreamBuffer)
    }

    /// The caller's side. The continuation carries no value: the response waits in the
    /// state (`.delivered`) and the caller takes it after resuming, so the async frames
    /// between the caller and the continuation hold no `TransportResponse` of their own.
    private enum Outcome {
        case idle
        case waiting(UnsafeContinuation<Void, any Error>)
        case cancelled
        case delivered(TransportResponse)
        case resumed
    }

    let url: String
    let isHTTPS: Bool
    /// Where the transfer goes, for the receive buffer size learned per origin.
    let origin: ReceiveBufferSizes.Origin
    let method: HTTPRequest.Method
    /// The header list curl reads while sending; freed in `deinit`.
    let headerList: UnsafeMutablePointer<curl_slist>?
    let body: RequestBody?
    /// The body's length; `nil` for a streamed body of unknown length (sent chunked).
    let bodyLength: Int64?
    /// The size of each file segment of the body when its length was measured: no more is
    /// read of each (see `BodyReader`).
    let bodyFileSizes: [Int64]
    let options: TransportOptions
    /// Whether the caller asked for upload or download progress: the progress callback,
    /// which runs for every transfer with a stall timeout, reports only then.
    let reportsProgress: Bool
    let delivery: Delivery
    /// Whether Courier offered its codings (the caller set no `Accept-Encoding`) and decodes
    /// them; a caller that set its own gets the bytes as sent, with the head as sent.
    let decodesContent: Bool
    /// Whether the caller set a `TE` of its own: then a transfer coding it asked for is its to
    /// decode, as with its own `Accept-Encoding`.
    let acceptsTransferCodings: Bool
    private let outcome = LockedValue(Outcome.idle)

    // MARK: curl thread only
    // Without dynamic exclusivity checks: only the curl thread touches these, and it never
    // holds one across a call that could reach it again; the checks cost about 3,500
    // instructions per request (11 accesses to `parser` alone for a ten-line head).
    @exclusivity(unchecked) var handle: EasyHandle?
    @exclusivity(unchecked) var parser = ResponseHeadParser()
    @exclusivity(unchecked) var head: HTTPResponse?
    @exclusivity(unchecked) var buffer = ResponseBuffer()
    @exclusivity(unchecked) var receivedBytes: Int64 = 0
    /// The `CURLOPT_BUFFERSIZE` the transfer was started with.
    @exclusivity(unchecked) var receiveBufferSize = ReceiveBufferSizes.maximum
    /// A failure a callback decided on (size cap, unreadable body file); wins over curl's code.
    @exclusivity(unchecked) var callbackFailure: CourierError?
    @exclusivity(unchecked) var bodyReader: BodyReader?
    /// Inflates the body when the final head named codings Courier offered.
    @exclusivity(unchecked) var decoder: ContentDecoder?
    /// Where a streamed body asks the loop to hand its bytes over after the pass.
    @exclusivity(unchecked) var streamsToFlush: StreamsToFlush?
    /// Where an HTTP/2 transfer tells the loop it took bytes in the pass (see `CurlLoop.run()`).
    @exclusivity(unchecked) var passProgress: PassProgress?
    /// Whether the answer comes over HTTP/2 (read from its status line).
    @exclusivity(unchecked) var isMultiplexed = false
    /// The load counters the transfer counts in as waiting for a connection (nil: it is not).
    @exclusivity(unchecked) var queuedIn: OpaquePointer?
    @exclusivity(unchecked) var lastUpload = TransferProgress(completed: -1, total: nil)
    @exclusivity(unchecked) var lastDownload = TransferProgress(completed: -1, total: nil)
    /// The connections known to speak HTTP/2 (the loop's).
    @exclusivity(unchecked) var multiplexedConnections: MultiplexedConnections?
    /// The connection of the current send, by remote address and port and local port (0 before
    /// the first).
    @exclusivity(unchecked) var connectionKey: Int64 = 0
    /// Whether the transfer has its connection (`CURLOPT_PREREQFUNCTION` ran): the stall
    /// timeout counts from then; connecting has its own timeout.
    @exclusivity(unchecked) var isConnected = false
    /// Whether the write callback paused the transfer for a stream reader that is behind.
    @exclusivity(unchecked) var isReceivePaused = false
    /// The bytes moved when the stall clock last restarted (-1: not yet), and when (the
    /// coarse monotonic clock, nanoseconds).
    @exclusivity(unchecked) var stallMoved: Int64 = -1
    @exclusivity(unchecked) var stallSinceNanoseconds: Int64 = 0
    /// The stall timeout in nanoseconds, as curl had it (whole seconds within 1 s and
    /// `ConfigurationBounds.maximumTimeout`); 0 until the first check works it out.
    @exclusivity(unchecked) var stallLimitNanoseconds: Int64 = 0
    /// Set once the transfer was started again on a new connection (at most once).
    @exclusivity(unchecked) var retriedOnFreshConnection = false
    /// How long the attempt on the broken pooled connection took; the retry gets the rest.
    @exclusivity(unchecked) var timeSpentBeforeRetry: Duration = .zero

    /// Not inlined into the async caller, whose frame would keep its temporaries for the
    /// whole transfer.
    @inline(never)
    init(request: TransportRequest, delivery: Delivery) throws(CourierError) {
        let head = request.head
        guard let scheme = head.scheme, let authority = head.authority else {
            throw CourierError(.invalidRequest, "the request has no scheme or authority")
        }
        guard RequestValidation.isHTTPScheme(scheme) else {
            throw CourierError(.invalidRequest, "only http and https URLs are allowed, not \(scheme)")
        }
        isHTTPS = scheme.utf8.count == 5
        origin = ReceiveBufferSizes.Origin(authority: authority, isHTTPS: isHTTPS)
        let path = head.path ?? "/"
        var url = isHTTPS ? "https://" : "http://"
        url.reserveCapacity(url.utf8.count + authority.utf8.count + path.utf8.count)
        url += authority
        url += path
        self.url = url
        method = head.method
        body = request.body
        do {
            (bodyLength, bodyFileSizes) = try request.body.map { try $0.measured() } ?? (0, [])
        } catch {
            throw error as? CourierError ?? CourierError(.invalidRequest, "cannot measure the request body")
        }
        options = request.options
        reportsProgress = request.options.uploadProgress != nil || request.options.downloadProgress != nil
        self.delivery = delivery
        let sendsBody = request.body != nil || head.method == .post || head.method == .put || head.method == .patch
        decodesContent = head.headerFields[.acceptEncoding] == nil
        acceptsTransferCodings = head.headerFields[.te] != nil
        headerList = try Self.makeHeaderList(
            head.headerFields, suppressExpect: sendsBody, offerCodings: decodesContent)
    }

    deinit {
        curl_slist_free_all(headerList)
    }

    /// True for methods that send an (empty) body even when none was given, so the
    /// server sees `Content-Length: 0`.
    var sendsBody: Bool {
        body != nil || method == .post || method == .put || method == .patch
    }

    // MARK: The continuation

    /// Stores the continuation; resumes it at once when the task was already cancelled.
    /// - Returns: false when cancelled before it could start (do not enqueue).
    func install(_ continuation: UnsafeContinuation<Void, any Error>) -> Bool {
        let installed = outcome.withLock { state -> Bool in
            guard case .idle = state else { return false }
            state = .waiting(continuation)
            return true
        }
        if !installed { continuation.resume(throwing: CancellationError()) }
        return installed
    }

    /// Whether the caller cancelled before the transfer ended.
    var isCancelled: Bool {
        outcome.withLock { state in
            if case .cancelled = state { return true }
            return false
        }
    }

    /// Resumes the waiting caller with `result`, exactly once; later calls do nothing.
    func resume(with result: Result<TransportResponse, any Error>) {
        let continuation = outcome.withLock { state -> UnsafeContinuation<Void, any Error>? in
            guard case .waiting(let continuation) = state else { return nil }
            switch result {
            case .success(let response): state = .delivered(response)
            case .failure: state = .resumed
            }
            return continuation
        }
        switch result {
        case .success: continuation?.resume()
        case .failure(let error): continuation?.resume(throwing: error)
        }
    }

    /// The response the caller was resumed for; call once, after the continuation returned.
    func takeResponse() -> TransportResponse {
        outcome.withLock { state in
            guard case .delivered(let response) = state else {
                preconditionFailure("the transfer resumed its caller without a response")
            }
            state = .resumed
            return response
        }
    }

    /// Marks the transfer cancelled and resumes a waiting caller with `CancellationError`.
    /// - Returns: true when the transfer had been handed to the loop and must be removed there.
    func cancel() -> Bool {
        let (continuation, wasStarted) = outcome.withLock {
            state -> (UnsafeContinuation<Void, any Error>?, Bool) in
            switch state {
            case .idle:
                state = .cancelled
                return (nil, false)
            case .waiting(let continuation):
                state = .cancelled
                return (continuation, true)
            case .cancelled:
                return (nil, false)
            case .delivered, .resumed:
                return (nil, true)
            }
        }
        continuation?.resume(throwing: CancellationError())
        return wasStarted
    }

    // MARK: Building

    private static let acceptEncodingLine = "Accept-Encoding: \(ContentDecoder.offered)"

    /// CR and LF end a header line, NUL a C string: a value holding one is refused, not sent.
    private static func endsTheLine(_ byte: UInt8) -> Bool { byte == 0 || byte == 10 || byte == 13 }

    private static func makeHeaderList(
        _ fields: HTTPFields, suppressExpect: Bool, offerCodings: Bool
    ) throws(CourierError) -> UnsafeMutablePointer<curl_slist>? {
        var list: UnsafeMutablePointer<curl_slist>?
        var hasExpect = false
        var hasCookie = false
        var line = [UInt8]()
        for var field in fields {
            // The body's framing is the transport's: curl writes Content-Length or chunked
            // coding from the body it sends. A caller's own field that disagreed with the body
            // made the server end the body elsewhere and read the rest as the next request on
            // the connection (request smuggling), whose answer went to the next call sent on it.
            if field.name == .contentLength || field.name == .transferEncoding { continue }
            if field.name == .expect { hasExpect = true }
            if field.name == .cookie {
                // HTTPTypes keeps `a=1; b=2` as one field per cookie (HTTP/2's crumbs); RFC 6265
                // §5.4 allows one Cookie line, and servers that join repeated fields with ", "
                // or read the first only got other cookies than the ones sent.
                if hasCookie { continue }
                hasCookie = true
                let values = fields[values: .cookie]
                if values.count > 1 {
                    if values.contains(where: { $0.utf8.contains(where: Self.endsTheLine) }) {
                        curl_slist_free_all(list)
                        throw CourierError(.invalidRequest, "the value of header \(field.name) contains CR, LF or NUL")
                    }
                    field = HTTPField(name: .cookie, value: values.joined(separator: "; "))
                }
            }
            line.removeAll(keepingCapacity: true)
            line.append(contentsOf: field.name.rawName.utf8)
            let isEmpty = field.withUnsafeBytesOfValue { value in
                if value.contains(where: Self.endsTheLine) { return Optional<Bool>.none }
                if value.isEmpty { return true }
                line.append(contentsOf: ": ".utf8)
                line.append(contentsOf: value)
                return false
            }
            guard let isEmpty else {
                curl_slist_free_all(list)
                throw CourierError(.invalidRequest, "the value of header \(field.name) contains CR, LF or NUL")
            }
            // "Name;" is how curl is told to send a header with an empty value.
            if isEmpty { line.append(UInt8(ascii: ";")) }
            line.append(0)
            let appended = line.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { curl_slist_append(list, $0.baseAddress) }
            }
            guard let appended else {
                curl_slist_free_all(list)
                throw CourierError(.transport, "out of memory building the header list")
            }
            list = appended
        }
        if offerCodings {
            guard let appended = curl_slist_append(list, Self.acceptEncodingLine) else {
                curl_slist_free_all(list)
                throw CourierError(.transport, "out of memory building the header list")
            }
            list = appended
        }
        // curl would otherwise wait for "100 Continue" before larger uploads: a round trip lost.
        if suppressExpect, !hasExpect {
            guard let appended = curl_slist_append(list, "Expect:") else {
                curl_slist_free_all(list)
                throw CourierError(.transport, "out of memory building the header list")
            }
            list = appended
        }
        return list
    }
}

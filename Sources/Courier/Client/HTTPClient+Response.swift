import Foundation
import HTTPTypes

extension HTTPClient {
    /// A response with its whole body.
    public struct Response: Sendable {
        /// Status and header fields of the final response.
        public var head: HTTPResponse
        /// The body, content-decoded.
        public var body: Data
        /// Timings and sizes of the final hop.
        public var metrics: TransferMetrics
        /// The request that produced this response (after redirects).
        public var request: HTTPRequest
        /// The URL that answered, after redirects.
        ///
        /// Made from ``request`` when first read, unless a redirect or an assignment set it:
        /// most callers never read it, and a Foundation `URL` parse per response is measurable.
        /// A request target Foundation's parser refuses (libcurl accepted it) reads as
        /// `about:blank`.
        public var url: URL {
            get { answeredURL ?? request.responseURL }
            set { answeredURL = newValue }
        }
        /// The URL a redirect (or the caller) set; nil when it is the request's own.
        private var answeredURL: URL?
        /// How many redirects were followed.
        public var redirectCount: Int
        /// Timings and sizes of each redirect hop before the final one, in order (empty
        /// without redirects); with ``metrics``, the whole call.
        public var redirectMetrics: [TransferMetrics] = []
        /// True when the body came from the cache (a hit, a 304 revalidation, or stale-if-error).
        public var isFromCache = false
        /// True when a cached response was served past its freshness.
        public var isStale = false
        /// What a server pool counts of this answer (`ServerPool.record`).
        var serverOutcome = ServerAnswer.answered

        init(
            head: HTTPResponse, body: Data, metrics: TransferMetrics, request: HTTPRequest, url: URL?,
            redirectCount: Int
        ) {
            self.head = head
            self.body = body
            self.metrics = metrics
            self.request = request
            answeredURL = url
            self.redirectCount = redirectCount
        }

        /// The status code of the final response.
        public var status: HTTPResponse.Status { head.status }
    }

    /// Whether the server answered a response, for a server pool: a fresh cache hit asked it
    /// nothing, and a stale answer served because it failed (stale-if-error) is that failure.
    enum ServerAnswer: Sendable, Hashable {
        /// It answered (a 304 the cache merged included): its status says how.
        case answered
        /// The cache answered without asking it.
        case notAsked
        /// It failed, and the cache served a stale answer instead.
        case failed(ServerOutcome)
    }

    /// A response whose body is still arriving.
    public struct StreamedResponse: Sendable {
        /// Status and header fields of the final response.
        public var head: HTTPResponse
        /// The body in chunks; read it once.
        public var body: ResponseBodyStream
        /// The request that produced this response (after redirects).
        public var request: HTTPRequest
        /// The URL that answered, after redirects; made as ``Response/url`` is.
        public var url: URL {
            get { answeredURL ?? request.responseURL }
            set { answeredURL = newValue }
        }
        private var answeredURL: URL?
        /// How many redirects were followed.
        public var redirectCount: Int

        init(head: HTTPResponse, body: ResponseBodyStream, request: HTTPRequest, url: URL?, redirectCount: Int) {
            self.head = head
            self.body = body
            self.request = request
            answeredURL = url
            self.redirectCount = redirectCount
        }
    }
}

extension HTTPRequest {
    /// The URL a response to this request reports when no redirect set another: its own, or
    /// `about:blank` for a target Foundation's parser refuses (libcurl accepted it).
    fileprivate var responseURL: URL { absoluteURL ?? unparsable }
}

private let unparsable = URL(string: "about:blank")!

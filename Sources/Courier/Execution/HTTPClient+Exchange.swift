import Foundation
import HTTPTypes
import Logging

extension HTTPClient {
    /// One `send` or `stream` from the first hop to the final response: preparation, the
    /// redirects followed by Courier's rules, the timeout over all hops, cookies and logging.
    ///
    /// The client's send loop keeps one of these across each transfer and does the rest of
    /// the work in its synchronous methods: an async function keeps every value it holds
    /// across an `await` in its frame, allocated for as long as the request is in flight.
    /// They are not inlined, so their temporaries stay on the thread's stack instead of
    /// growing that frame.
    struct Exchange {
        private let client: HTTPClient
        /// The request of the current hop.
        private(set) var current: HTTPRequest
        private var body: RequestBody?
        /// The URL of the current hop when a redirect set it: the first hop's is made from
        /// `current` only when asked (a redirect to resolve, a streamed response), not parsed
        /// for every request.
        private(set) var redirectedURL: URL?
        private(set) var redirectCount = 0
        /// The metrics of the redirect hops before the current one.
        private var redirectMetrics: [TransferMetrics] = []
        /// The status of the last redirect followed, for the error of a body it cannot resend.
        private var redirectStatus = 0
        private let limit: Int
        private let cookieJar: CookieJar?
        /// The jar's session when the exchange started: its answers after a logout store nothing.
        private let cookieSession: UInt64?
        /// The credential fields (the client's and the request's): dropped across origins.
        private let sensitive: Set<HTTPField.Name>
        /// The request's sensitive names, redacted on top of the client's list.
        private let extraSensitive: Set<HTTPField.Name>
        /// When the request's whole timeout (kept for the error that says it ran out) ends.
        private let deadline: RequestDeadline?
        /// The call's logger (its id in the metadata), or the client's.
        private let logger: Logger
        /// The options of every hop; the timeout is what is left of the deadline.
        private var transportOptions: TransportOptions

        @inline(never)
        init(
            client: HTTPClient, request: HTTPRequest, body: RequestBody?, options: RequestOptions,
            context: TransferContext
        ) throws {
            // Checked here, the one place every send and stream passes (ConfigurationBounds);
            // the values, not a checked copy of the whole options (a reference count per field).
            let timeout = try ConfigurationBounds.timeout(options.timeout, "request timeout")
            let maxResponseSize = try options.maxResponseSize.map { (size) throws(CourierError) in
                try ConfigurationBounds.size(size, "request maximum response size")
            }
            // One snapshot of the live settings for every hop of the request.
            let settings = options.clientSettings ?? client.liveSettings
            self.client = client
            cookieJar = options.cookieJar ?? client.cookieJar
            // Read before the request takes the jar's cookies: a logout after it is seen.
            cookieSession = cookieJar?.session
            current = try client.prepare(
                request, cookieJar: options.cookieJar, sendsCredential: options.sendsCredential, settings: settings,
                session: context.session)
            self.body = body
            limit = options.maxRedirects.map { max(0, $0) } ?? client.configuration.maxRedirects
            extraSensitive = options.sensitiveHeaderNames
            sensitive =
                extraSensitive.isEmpty
                ? client.credentialFieldNames : client.credentialFieldNames.union(extraSensitive)
            deadline = (timeout ?? settings.settings.timeout).map(RequestDeadline.init)
            logger = context.logger ?? client.configuration.logger
            transportOptions = TransportOptions(
                timeout: nil, connectTimeout: settings.settings.connectTimeout,
                stallTimeout: settings.settings.stallTimeout,
                maxResponseSize: maxResponseSize ?? client.configuration.maxResponseSize,
                uploadProgress: options.uploadProgress, downloadProgress: options.downloadProgress)
            transportOptions.cancellationScope = context.scope
        }

        /// The URL of the current hop.
        /// - Throws: `CourierError.invalidRequest` when Foundation cannot parse the target.
        func url() throws(CourierError) -> URL {
            guard let url = redirectedURL ?? current.absoluteURL else {
                throw CourierError(.invalidRequest, "the request has no valid URL")
            }
            return url
        }

        /// The client's one redaction list, with the request's own sensitive names.
        private var redaction: Redaction { client.credentialScope.redaction.adding(extraSensitive) }

        /// The request target for logs, built only when something is logged: this runs for
        /// every request.
        private var target: String {
            logger.logLevel <= .debug
                ? Redaction.target(scheme: current.scheme, authority: current.authority, path: current.path) : ""
        }

        /// The transport request of the current hop, with what is left of the timeout.
        /// - Throws: `CourierError.timedOut` when the deadline has passed.
        @inline(never)
        mutating func nextTransportRequest() throws -> TransportRequest {
            if let deadline { transportOptions.timeout = try deadline.remaining() }
            let logger = self.logger
            logger.debug(
                "courier: → \(current.method) \(target)",
                metadata: logger.logLevel <= .trace
                    ? ["headers": .string(redaction.describe(current.headerFields))] : nil)
            return TransportRequest(head: current, body: body, options: transportOptions)
        }

        /// The buffered hop of the current hop's request, made by the transport.
        /// - Throws: `CourierError.timedOut` when the deadline has passed, `.invalidRequest`
        ///   for a request the transport refuses.
        @inline(never)
        mutating func nextHop(on transport: any Transport) throws -> any TransportHop {
            let request = try nextTransportRequest()
            do {
                return try transport.makeHop(request)
            } catch {
                throw logged(error)
            }
        }

        /// Takes the response of a hop from `nextHop(on:)`.
        /// - Returns: the final response, or nil when a redirect was followed.
        /// - Throws: as `followsRedirect(after:metrics:)`.
        @inline(never)
        mutating func finish(_ hop: any TransportHop) throws -> Response? {
            let response = try hop.takeResponse()
            return try followsRedirect(after: response.head, metrics: response.metrics) ? nil : self.response(response)
        }

        /// Logs a hop that failed with a `CourierError`; a streamed body a redirect would send
        /// again names the redirect.
        /// - Returns: the error.
        @inline(never)
        func logged(_ error: any Error) -> any Error {
            guard var error = error as? CourierError else { return error }
            if redirectCount > 0, error.isStreamedBodyResent {
                error.message += "; the server answered \(redirectStatus) (a redirect that keeps the body)"
            }
            logger.debug("courier: ✗ \(current.method) \(target): \(error.code): \(error.message)")
            return error
        }

        /// Takes the head of the current hop's response: stores its cookies and, when it is a
        /// redirect to follow, moves to the next hop.
        /// - Returns: true when the exchange goes on with another hop.
        /// - Throws: `CourierError.redirect` for a refused redirect or one past the limit.
        @inline(never)
        mutating func followsRedirect(after head: HTTPResponse, metrics: TransferMetrics) throws -> Bool {
            // Asked before the answer's cookies change the jar, and only for a redirect to follow.
            let ownsCookie = limit > 0 && RedirectHandler.isRedirect(head) && sendsOwnCookie()
            cookieJar?.store(from: head, for: current, session: cookieSession)
            let logger = self.logger
            logger.debug(
                "courier: ← \(head.status.code) \(current.method) \(target)",
                metadata: logger.logLevel <= .trace
                    ? ["headers": .string(redaction.describe(head.headerFields))] : nil)
            guard limit > 0, RedirectHandler.isRedirect(head),
                let next = try RedirectHandler(sensitiveHeaderNames: sensitive).nextHop(
                    after: current, body: body, url: url(), response: head)
            else { return false }
            guard redirectCount < limit else {
                throw CourierError(.redirect, "more than \(limit) redirects", response: head)
            }
            redirectCount += 1
            redirectStatus = head.status.code
            redirectMetrics.append(metrics)
            current = next.request
            // A field of the caller's own holds on every hop to the same origin, as on the first;
            // across origins the redirect dropped it with every credential field.
            if let cookieJar, !ownsCookie || current.headerFields[.cookie] == nil {
                // The jar's cookies for the new target, the redirect's own included.
                current.headerFields[.cookie] = nil
                cookieJar.apply(to: &current)
            }
            body = next.body
            redirectedURL = next.url
            return true
        }

        /// Whether the current hop's `Cookie` field is the caller's own rather than the jar's:
        /// the jar adds its field only to a request without one (`CookieJar.apply`), so a field
        /// that is not what the jar makes for the hop is the caller's.
        private func sendsOwnCookie() -> Bool {
            guard let cookieJar, let cookie = current.headerFields[.cookie] else { return false }
            return cookie != cookieJar.cookieHeader(for: current)
        }

        /// The final response with everything known about the exchange.
        @inline(never)
        func response(_ final: TransportResponse) -> Response {
            var answer = Response(
                head: final.head, body: final.body, metrics: final.metrics, request: current,
                url: redirectedURL, redirectCount: redirectCount)
            answer.redirectMetrics = redirectMetrics
            return answer
        }
    }
}

/// A request's whole timeout, for the requests it sends one after another (redirect hops, the
/// cache's request after a revalidation): each gets what is left of it.
struct RequestDeadline: Sendable {
    /// When the timeout runs out.
    let at: ContinuousClock.Instant
    /// The whole timeout, for the error that says it ran out.
    let timeout: Duration

    init(_ timeout: Duration) {
        at = .now + timeout
        self.timeout = timeout
    }

    /// What is left of the timeout.
    /// - Throws: `CourierError.timedOut`, naming the timeout, once it has run out.
    func remaining() throws(CourierError) -> Duration {
        let remaining = at - .now
        guard remaining > .zero else {
            throw CourierError(.timedOut, "the request took longer than its timeout (\(timeout))")
        }
        return remaining
    }
}

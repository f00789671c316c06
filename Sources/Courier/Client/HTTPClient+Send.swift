import Foundation
import HTTPTypes
import Logging

extension HTTPClient {
    /// Sends a request and returns the final response with its whole body.
    ///
    /// The request gets the default headers it lacks and the auth header (when logged in and
    /// it sets none). Redirects are followed by Courier's rules (see `RedirectHandler`). Any
    /// status is a response, not an error; validation is the caller's (or `APIService`'s) job.
    /// - Parameters:
    ///   - request: Method, URL parts (scheme and authority may be left to the base URL) and fields.
    ///   - body: The body, from memory or streamed from files.
    ///   - options: Per-request settings: timeouts, size cap, redirects, progress, cache and
    ///     cookies (the settings of `CallOptions` that are steps of a service call are ignored).
    /// - Returns: The final response, its body, the metrics of its hop, the URL that answered.
    /// - Throws: `CourierError` (`.invalidRequest` before sending, `.timedOut`, `.cannotConnect`,
    ///   `.tls`, `.redirect`, `.responseTooLarge`, …), or `CancellationError`.
    public func send(
        _ request: HTTPRequest, body: RequestBody? = nil, options: CallOptions = .default
    ) async throws -> Response {
        guard telemetry.isActive else {
            return try await send(request, body: body, options: options.requestOptions)
        }
        return try await sendReported(request, body: body, options: options)
    }

    /// `send` with a span and metrics, as a service call gets (`CallTelemetry`): the request is
    /// its one attempt; service `nil`, so its label is the server's host.
    @inline(never)
    private func sendReported(_ request: HTTPRequest, body: RequestBody?, options: CallOptions) async throws
        -> Response
    {
        var (telemetry, reported, sent, requestOptions) = try startReport(request, body: body, options: options)
        do {
            let response = try await send(sent, body: body, options: requestOptions)
            telemetry.finished(
                status: Int(response.head.status.code), attempts: 1, request: reported,
                responseBytes: response.body.count, isFromCache: response.isFromCache, cache: configuration.cache)
            return response
        } catch {
            telemetry.failed(Self.reported(error, "the request was cancelled"), attempts: 1)
            throw error
        }
    }

    /// `send` with the client-level options.
    @inline(__always)
    func send(
        _ request: HTTPRequest, body: RequestBody?, options: RequestOptions, context: TransferContext = .none
    ) async throws -> Response {
        guard configuration.cache == nil else {
            return try await sendCached(request, body: body, options: options, context: context)
        }
        // The common case inline: this async frame is allocated for as long as the request is
        // in flight and holds the `Exchange`; going through `sendToNetwork` would add a frame.
        var exchange = try Exchange(client: self, request: request, body: body, options: options, context: context)
        return try await followRedirects(&exchange, BufferedHop.self)
    }

    /// `send` through the cache, out of line so that its frame is not `send`'s.
    @inline(never)
    private func sendCached(
        _ request: HTTPRequest, body: RequestBody?, options: RequestOptions, context: TransferContext
    ) async throws -> Response {
        guard let cache = configuration.cache else {
            return try await sendToNetwork(request, body: body, options: options, context: context)
        }
        return try await sendThroughCache(cache, request, body: body, options: options, context: context)
    }

    /// `send` without the cache: the redirect loop over the transport, buffered.
    @inline(never)
    func sendToNetwork(
        _ request: HTTPRequest, body: RequestBody?, options: RequestOptions, context: TransferContext
    ) async throws -> Response {
        var exchange = try Exchange(client: self, request: request, body: body, options: options, context: context)
        return try await followRedirects(&exchange, BufferedHop.self)
    }

    /// Sends a request and returns once the final response head arrived; the body streams.
    /// - Parameters:
    ///   - request: Method, URL parts and fields.
    ///   - body: The body, from memory or streamed from files.
    ///   - options: Per-request settings: timeouts, size cap, redirects, progress, cache and
    ///     cookies (the settings of `CallOptions` that are steps of a service call are ignored).
    /// - Returns: The final response head and its body as an `AsyncSequence` of chunks.
    /// - Throws: As `send`, for failures before the head arrived.
    public func stream(
        _ request: HTTPRequest, body: RequestBody? = nil, options: CallOptions = .default
    ) async throws -> StreamedResponse {
        try await stream(request, body: body, options: options, context: .none)
    }

    /// `stream` for a request of a transfer of several requests (a download that resumes):
    /// `context.session` refuses one made after the session the transfer began in ended.
    func stream(_ request: HTTPRequest, body: RequestBody?, options: CallOptions, context: TransferContext)
        async throws -> StreamedResponse
    {
        guard telemetry.isActive else {
            var exchange = try Exchange(
                client: self, request: request, body: body, options: options.requestOptions, context: context)
            return try await followRedirects(&exchange, StreamedHop.self)
        }
        return try await streamReported(request, body: body, options: options, context: context)
    }

    /// What `sendReported` and `streamReported` start with: the call's telemetry, started with
    /// its one attempt; the request as reported (resolved against the base URL: a relative one
    /// is reported with it and sent as it is); the request to send, with the fields the attempt
    /// added (`traceparent`); and the options with the settings snapshot.
    private func startReport(_ request: HTTPRequest, body: RequestBody?, options: CallOptions) throws
        -> (CallTelemetry, PreparedRequest, HTTPRequest, RequestOptions)
    {
        let settings = liveSettings
        var shown = request
        if shown.scheme == nil || shown.authority == nil, let baseURL = settings.settings.baseURL {
            try Self.resolve(&shown, against: baseURL)
        }
        var telemetry = CallTelemetry.start(
            client: self, service: nil, server: shown.authority ?? "", options: options, id: CallID.next(),
            request: shown, credentialFieldNames: credentialFieldNames)
        var reported = PreparedRequest(head: shown, body: body)
        telemetry.willSend(&reported, attempt: 1)
        var sent = request
        sent.headerFields = reported.head.headerFields
        var requestOptions = options.requestOptions
        requestOptions.clientSettings = settings
        return (telemetry, reported, sent, requestOptions)
    }

    /// A failure as the telemetry records it: a `CourierError` as it is, anything else (a
    /// `CancellationError`) as `.cancelled` with `message`.
    private static func reported(_ error: any Error, _ message: String) -> CourierError {
        error as? CourierError ?? CourierError(.cancelled, message, underlying: error)
    }

    /// `stream` with a span and metrics, as `send` gets: they end when the body ends (read to
    /// its end, failed, or dropped unread), not when the head arrives.
    @inline(never)
    private func streamReported(
        _ request: HTTPRequest, body: RequestBody?, options: CallOptions, context: TransferContext
    ) async throws -> StreamedResponse {
        var (telemetry, reported, sent, requestOptions) = try startReport(request, body: body, options: options)
        var response: StreamedResponse
        do {
            var exchange = try Exchange(
                client: self, request: sent, body: body, options: requestOptions, context: context)
            response = try await followRedirects(&exchange, StreamedHop.self)
        } catch {
            telemetry.failed(Self.reported(error, "the request was cancelled"), attempts: 1)
            throw error
        }
        let status = Int(response.head.status.code)
        let ongoing = LockedValue<CallTelemetry?>(telemetry)
        let request = reported
        response.body = response.body.observed { end in
            ongoing.withLock { telemetry in
                switch end {
                case .success(let bytes):
                    telemetry?.finished(
                        status: status, attempts: 1, request: request, responseBytes: Int(bytes), isFromCache: false,
                        cache: nil)
                case .failure(let error):
                    telemetry?.failed(Self.reported(error, "the body was not read to its end"), attempts: 1)
                }
                telemetry = nil
            }
        }
        return response
    }

    /// The one redirect loop, for `send` and `stream`: one hop over the transport per turn,
    /// until an answer that is not a redirect to follow (`Exchange.followsRedirect`).
    ///
    /// Inlined into its callers (and specialised for the kind of hop): an async function keeps
    /// every value it holds across an `await` in a frame allocated for as long as the request
    /// is in flight, so a separate function would add a frame per request. The per-hop work
    /// is in `Exchange`'s synchronous methods, whose temporaries stay on the thread's stack.
    /// - Returns: the final response.
    @inline(__always)
    private func followRedirects<Hop: ExchangeHop>(_ exchange: inout Exchange, _: Hop.Type) async throws
        -> Hop.Final
    {
        let transport = self.transport
        while true {
            if let final = try await Hop.next(&exchange, over: transport) { return final }
        }
    }

    /// Sends a request given as plain values; header names and values are checked, not repaired.
    /// - Parameters:
    ///   - method: The method.
    ///   - url: An absolute http or https URL.
    ///   - headers: Header fields; a name or value with CR, LF or NUL is refused.
    ///   - body: The body bytes, if any.
    ///   - options: Per-request settings, as for `send(_:body:options:)`.
    /// - Returns: The final response.
    /// - Throws: `CourierError.invalidRequest` for a bad URL or header, else as `send(_:body:options:)`.
    public func send(
        method: HTTPRequest.Method, url: URL, headers: [String: String] = [:], body: Data? = nil,
        options: CallOptions = .default
    ) async throws -> Response {
        var request = HTTPRequest(method: method, scheme: nil, authority: nil, path: nil)
        try request.setURL(url)
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            request.headerFields.append(try RequestValidation.field(name: name, value: value))
        }
        return try await send(request, body: body.map(RequestBody.data), options: options)
    }

    // MARK: The pipeline

    /// Base URL, default headers, auth header (to the API's own origins), the jar's cookies,
    /// then validation.
    /// - Parameter session: the client's session the request's call began in (nil: of no call).
    /// - Throws: `CourierError.authentication` when that session ended; `.invalidRequest`.
    func prepare(
        _ request: HTTPRequest, cookieJar: CookieJar? = nil, sendsCredential: Bool? = nil, settings: LiveSettings,
        session: UInt64? = nil
    ) throws(CourierError) -> HTTPRequest {
        var prepared = request
        if prepared.scheme == nil || prepared.authority == nil {
            guard let baseURL = settings.settings.baseURL else {
                throw CourierError(.invalidRequest, "the request has no host and the client no base URL")
            }
            try Self.resolve(&prepared, against: baseURL)
        }
        // Another origin gets neither the credential nor the default fields that carry one (a
        // static Authorization, an API key), as a service leaves out its headers' own.
        var admitted: Bool?
        if let withoutCredential = settings.defaultHeadersWithoutCredential {
            let admits = credentialScope.admits(request, decision: sendsCredential, baseOrigin: settings.origin)
            admitted = admits
            prepared.headerFields.appendAbsent(admits ? settings.settings.defaultHeaders : withoutCredential)
        } else {
            prepared.headerFields.appendAbsent(settings.settings.defaultHeaders)
        }
        let auth = try authorizationFields(session: session)
        if !auth.isEmpty,
            admitted ?? credentialScope.admits(request, decision: sendsCredential, baseOrigin: settings.origin)
        {
            prepared.headerFields.appendAbsent(auth)
        }
        (cookieJar ?? self.cookieJar)?.apply(to: &prepared)
        try RequestValidation.validate(prepared)
        return prepared
    }
}

extension HTTPClient {
    /// Puts a request without scheme or authority on `baseURL`: its path follows the base's.
    static func resolve(_ request: inout HTTPRequest, against baseURL: URL) throws(CourierError) {
        let relative = request.path ?? "/"
        try request.setURL(baseURL)
        var basePath = request.path ?? "/"
        if let query = basePath.firstIndex(of: "?") { basePath = String(basePath[..<query]) }
        if basePath.hasSuffix("/") { basePath.removeLast() }
        request.path = basePath + (relative.hasPrefix("/") ? relative : "/" + relative)
    }
}

/// One turn of the redirect loop: buffered (`Transport.makeHop` and `send`) or streamed
/// (`Transport.stream`).
protocol ExchangeHop {
    associatedtype Final
    /// Sends the exchange's current hop.
    /// - Returns: the final response, or nil when a redirect was followed.
    static func next(_ exchange: inout HTTPClient.Exchange, over transport: any Transport) async throws -> Final?
}

/// A buffered hop: the client's frame holds the transport's hop object only; the request is
/// made and the response read by `Exchange`'s synchronous methods.
enum BufferedHop: ExchangeHop {
    @inline(__always)
    static func next(_ exchange: inout HTTPClient.Exchange, over transport: any Transport) async throws
        -> HTTPClient.Response?
    {
        let hop = try exchange.nextHop(on: transport)
        do {
            try await transport.send(hop)
        } catch {
            throw exchange.logged(error)
        }
        return try exchange.finish(hop)
    }
}

/// A streamed hop: returns once the head arrived; a redirect's (small) body is read so that
/// its connection can be reused.
enum StreamedHop: ExchangeHop {
    @inline(__always)
    static func next(_ exchange: inout HTTPClient.Exchange, over transport: any Transport) async throws
        -> HTTPClient.StreamedResponse?
    {
        let response: TransportStreamResponse
        do {
            response = try await transport.stream(exchange.nextTransportRequest())
        } catch {
            throw exchange.logged(error)
        }
        guard try exchange.followsRedirect(after: response.head, metrics: TransferMetrics()) else {
            return HTTPClient.StreamedResponse(
                head: response.head, body: response.body, request: exchange.current, url: exchange.redirectedURL,
                redirectCount: exchange.redirectCount)
        }
        _ = try? await response.body.collect()
        return nil
    }
}

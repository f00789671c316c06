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
    ///   - options: Per-request overrides and progress callbacks.
    /// - Returns: The final response, its body, the metrics of its hop, the URL that answered.
    /// - Throws: `CourierError` (`.invalidRequest` before sending, `.timedOut`, `.cannotConnect`,
    ///   `.tls`, `.redirect`, `.responseTooLarge`, …), or `CancellationError`.
    public func send(
        _ request: HTTPRequest, body: RequestBody? = nil, options: RequestOptions = .init()
    ) async throws -> Response {
        if let cache = configuration.cache {
            return try await sendThroughCache(cache, request, body: body, options: options)
        }
        return try await sendToNetwork(request, body: body, options: options)
    }

    /// `send` without the cache: redirects, transport.
    func sendToNetwork(_ request: HTTPRequest, body: RequestBody?, options: RequestOptions) async throws -> Response {
        let transport = self.transport
        let (response, final) = try await followRedirects(request, body: body, options: options) { request in
            let response = try await transport.execute(request)
            return (response.head, response.metrics, response.body)
        } discard: { _ in
        }
        var answer = Response(
            head: response.head, body: response.payload, metrics: response.metrics, request: final.request,
            url: final.url, redirectCount: final.redirectCount)
        answer.redirectMetrics = final.redirectMetrics
        return answer
    }

    /// Sends a request and returns once the final response head arrived; the body streams.
    /// - Parameters:
    ///   - request: Method, URL parts and fields.
    ///   - body: The body, from memory or streamed from files.
    ///   - options: Per-request overrides and progress callbacks.
    /// - Returns: The final response head and its body as an `AsyncSequence` of chunks.
    /// - Throws: As `send`, for failures before the head arrived.
    public func stream(
        _ request: HTTPRequest, body: RequestBody? = nil, options: RequestOptions = .init()
    ) async throws -> StreamedResponse {
        let transport = self.transport
        let (response, final) = try await followRedirects(request, body: body, options: options) { request in
            let response = try await transport.stream(request)
            return (response.head, TransferMetrics(), response.body)
        } discard: { body in
            // Read a redirect's (small) body so its connection can be reused.
            _ = try? await body.collect()
        }
        return StreamedResponse(
            head: response.head, body: response.payload, request: final.request, url: final.url,
            redirectCount: final.redirectCount)
    }

    /// Sends a request given as plain values; header names and values are checked, not repaired.
    /// - Parameters:
    ///   - method: The method.
    ///   - url: An absolute http or https URL.
    ///   - headers: Header fields; a name or value with CR, LF or NUL is refused.
    ///   - body: The body bytes, if any.
    ///   - options: Per-request overrides.
    /// - Returns: The final response.
    /// - Throws: `CourierError.invalidRequest` for a bad URL or header, else as `send(_:body:options:)`.
    public func send(
        method: HTTPRequest.Method, url: URL, headers: [String: String] = [:], body: Data? = nil,
        options: RequestOptions = .init()
    ) async throws -> Response {
        var request = HTTPRequest(method: method, scheme: nil, authority: nil, path: nil)
        try request.setURL(url)
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            request.headerFields.append(try RequestValidation.field(name: name, value: value))
        }
        return try await send(request, body: body.map(RequestBody.data), options: options)
    }

    // MARK: The pipeline

    struct Hop<Payload> {
        var head: HTTPResponse
        var metrics: TransferMetrics
        var payload: Payload
    }

    struct FinalRequest {
        var request: HTTPRequest
        var url: URL
        var redirectCount: Int
        /// The metrics of the redirect hops before the final one.
        var redirectMetrics: [TransferMetrics]
    }

    private func followRedirects<Payload>(
        _ request: HTTPRequest, body: RequestBody?, options: RequestOptions,
        perform: (TransportRequest) async throws -> (HTTPResponse, TransferMetrics, Payload),
        discard: (Payload) async -> Void
    ) async throws -> (Hop<Payload>, FinalRequest) {
        var current = try prepare(request, cookieJar: options.cookieJar)
        guard var url = current.absoluteURL else {
            throw CourierError(.invalidRequest, "the request has no valid URL")
        }
        var currentBody = body
        let limit = (options.redirects ?? configuration.redirects).maxRedirects
        let sensitive =
            options.sensitiveHeaderNames.isEmpty
            ? configuration.sensitiveHeaderNames
            : configuration.sensitiveHeaderNames.union(options.sensitiveHeaderNames)
        let handler = RedirectHandler(sensitiveHeaderNames: sensitive)
        let redaction = Redaction(extraNames: sensitive)
        let clock = ContinuousClock()
        let deadline = (options.timeout ?? configuration.timeout).map { clock.now + $0 }
        var redirectCount = 0
        var redirectMetrics: [TransferMetrics] = []
        let logger = configuration.logger
        while true {
            var transportOptions = TransportOptions(
                timeout: nil, connectTimeout: options.connectTimeout ?? configuration.connectTimeout,
                stallTimeout: options.stallTimeout ?? configuration.stallTimeout,
                maxResponseSize: options.maxResponseSize ?? configuration.maxResponseSize,
                uploadProgress: options.uploadProgress, downloadProgress: options.downloadProgress)
            if let deadline {
                let remaining = deadline - clock.now
                guard remaining > .zero else {
                    throw CourierError(.timedOut, "the request took longer than its timeout")
                }
                transportOptions.timeout = remaining
            }
            // Built only when something is logged: this runs for every request.
            let logs = logger.logLevel <= .debug
            let target =
                logs ? Redaction.target(scheme: current.scheme, authority: current.authority, path: current.path) : ""
            logger.debug(
                "courier: → \(current.method) \(target)",
                metadata: logger.logLevel <= .trace
                    ? ["headers": .string(redaction.describe(current.headerFields))] : nil)
            let head: HTTPResponse
            let metrics: TransferMetrics
            let payload: Payload
            do {
                (head, metrics, payload) = try await perform(
                    TransportRequest(head: current, body: currentBody, options: transportOptions))
            } catch let error as CourierError {
                logger.debug("courier: ✗ \(current.method) \(target): \(error.code): \(error.message)")
                throw error
            }
            options.cookieJar?.store(from: head, for: current)
            logger.debug(
                "courier: ← \(head.status.code) \(current.method) \(target)",
                metadata: logger.logLevel <= .trace ? ["headers": .string(redaction.describe(head.headerFields))] : nil)
            if limit > 0,
                let next = try handler.nextHop(after: current, body: currentBody, url: url, response: head)
            {
                guard redirectCount < limit else {
                    throw CourierError(.redirect, "more than \(limit) redirects", response: head)
                }
                await discard(payload)
                redirectCount += 1
                redirectMetrics.append(metrics)
                current = next.request
                if let jar = options.cookieJar {
                    // The jar's cookies for the new target, the redirect's own included.
                    current.headerFields[.cookie] = nil
                    jar.apply(to: &current)
                }
                currentBody = next.body
                url = next.url
                continue
            }
            return (
                Hop(head: head, metrics: metrics, payload: payload),
                FinalRequest(
                    request: current, url: url, redirectCount: redirectCount, redirectMetrics: redirectMetrics)
            )
        }
    }

    /// Base URL, default headers, auth header, the jar's cookies, then validation.
    func prepare(_ request: HTTPRequest, cookieJar: CookieJar? = nil) throws(CourierError) -> HTTPRequest {
        var prepared = request
        if prepared.scheme == nil || prepared.authority == nil {
            guard let baseURL = configuration.baseURL else {
                throw CourierError(.invalidRequest, "the request has no host and the client no base URL")
            }
            try prepared.setURL(baseURL)
            var basePath = prepared.path ?? "/"
            if let query = basePath.firstIndex(of: "?") { basePath = String(basePath[..<query]) }
            if basePath.hasSuffix("/") { basePath.removeLast() }
            let relative = request.path ?? "/"
            prepared.path = basePath + (relative.hasPrefix("/") ? relative : "/" + relative)
        }
        for field in configuration.defaultHeaders where prepared.headerFields[field.name] == nil {
            prepared.headerFields.append(field)
        }
        let auth = authorizationFields()
        for field in auth where prepared.headerFields[field.name] == nil {
            prepared.headerFields.append(field)
        }
        cookieJar?.apply(to: &prepared)
        try RequestValidation.validate(prepared)
        return prepared
    }
}

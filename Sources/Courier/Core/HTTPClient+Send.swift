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
        guard configuration.cache == nil, let curl = curlTransport else {
            return try await sendThroughCacheOrTransport(request, body: body, options: options)
        }
        // Courier's own transport without a cache, the common case, kept lean: this async frame
        // is allocated for as long as the request is in flight, and holds the `Exchange` and
        // the transfer. The transfer object carries the request in and the response out, and
        // the per-hop work is synchronous, so its temporaries stay on the thread's stack.
        // The loop repeats `sendToNetwork`'s on purpose: calling that (or a shared helper) would
        // add an async frame per request in flight, which the memory benchmark counts.
        var exchange = try Exchange(client: self, request: request, body: body, options: options)
        while true {
            let transfer = try exchange.nextTransfer()
            do {
                try await curl.run(transfer)
            } catch {
                throw exchange.logged(error)
            }
            if let response = try exchange.finish(transfer) { return response }
        }
    }

    /// `send` through the cache, or through a transport other than Courier's.
    @inline(never)
    private func sendThroughCacheOrTransport(
        _ request: HTTPRequest, body: RequestBody?, options: RequestOptions
    ) async throws -> Response {
        if let cache = configuration.cache {
            return try await sendThroughCache(cache, request, body: body, options: options)
        }
        return try await sendToNetwork(request, body: body, options: options)
    }

    /// `send` without the cache: redirects, transport.
    @inline(never)
    func sendToNetwork(_ request: HTTPRequest, body: RequestBody?, options: RequestOptions) async throws -> Response {
        var exchange = try Exchange(client: self, request: request, body: body, options: options)
        if let curl = curlTransport {
            while true {
                let transfer = try exchange.nextTransfer()
                do {
                    try await curl.run(transfer)
                } catch {
                    throw exchange.logged(error)
                }
                if let response = try exchange.finish(transfer) { return response }
            }
        }
        let transport = self.transport
        while true {
            let request = try exchange.nextTransportRequest()
            let response: TransportResponse
            do {
                response = try await transport.execute(request)
            } catch {
                throw exchange.logged(error)
            }
            if try exchange.followsRedirect(after: response) { continue }
            return exchange.response(response)
        }
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
        var exchange = try Exchange(client: self, request: request, body: body, options: options)
        while true {
            let request = try exchange.nextTransportRequest()
            let response: TransportStreamResponse
            do {
                response = try await transport.stream(request)
            } catch {
                throw exchange.logged(error)
            }
            if try exchange.followsRedirect(after: response.head, metrics: TransferMetrics()) {
                // Read a redirect's (small) body so its connection can be reused.
                _ = try? await response.body.collect()
                continue
            }
            return StreamedResponse(
                head: response.head, body: response.body, request: exchange.current, url: exchange.url,
                redirectCount: exchange.redirectCount)
        }
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

    /// Base URL, default headers, auth header (to the API's own origins), the jar's cookies,
    /// then validation.
    func prepare(
        _ request: HTTPRequest, cookieJar: CookieJar? = nil, sendsCredential: Bool? = nil
    ) throws(CourierError) -> HTTPRequest {
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
        if !auth.isEmpty, credentialScope.admits(request, decision: sendsCredential) {
            for field in auth where prepared.headerFields[field.name] == nil {
                prepared.headerFields.append(field)
            }
        }
        (cookieJar ?? self.cookieJar)?.apply(to: &prepared)
        try RequestValidation.validate(prepared)
        return prepared
    }
}

import Foundation
import HTTPTypes

extension ServiceCore {
    /// One call, start to end:
    /// 1. compose the URL (call's server, else the pool's current one, else the client's base URL);
    /// 2. headers, general and real-time parameters, request serializer;
    /// 3. the call's `RequestIdentity`; veto (`skipIf`, in-flight guard), then the request
    ///    interval, both on the identity (for a service with adapters of its own, the guard and
    ///    the interval come after the first attempt's adapters, with the user they wrote);
    /// 4. per attempt: the network status (fail or wait while offline), the pool's current
    ///    server (failover), real-time parameters, adapters (authentication first — only for the
    ///    API's own servers —, then the service's, then the call's), the `RequestSigner` (API's
    ///    own servers), cookies, de-duplication of GETs on the identity, send (the client adds
    ///    its credential for the API's own servers);
    /// 5. cookies stored, failover outcome recorded, validation (statuses, content types, the
    ///    validator's checks — a refusal is an attempt to retry, like a refused status), the
    ///    `EnvelopeRule` (a retry or refresh code fails the attempt as a refused status does);
    /// 6. on failure: retriers (the call's, authentication — which refreshes the credential —,
    ///    the service's), then `RetryDecision`, the one place that decides (retry policy,
    ///    the one attempt cap); wait on the service clock, and go back to 4;
    /// 7. preprocess, "no data" (`CallOptions.noData`), decode; the result veto. A call that
    ///    fails for good goes through the error mappers once (`ErrorMapping.swift`).
    ///
    /// The call's state lives in one object, `call` (made by `startCall`): this async frame,
    /// allocated while the call is in flight, holds the reference and the values of the
    /// attempt under way only. Its `scope`, for a call that runs in its caller's task
    /// (`APIService.send`), is what the registry cancels: the transfer and the wait for a
    /// shared (de-duplicated) transfer honour it, and every other wait (interval, adapters,
    /// retriers, the retry delay) runs in a task of its own that it cancels
    /// (`CancellationScope.run`, started on this thread: no hop when it does not suspend). Nil
    /// for a call with a task of its own (`Call`), which the registry cancels directly.
    /// - Returns: the decoded value; `call.response(_:)` adds the rest when the call keeps it.
    func perform<Serializer: ResponseSerializer>(_ call: CallRun, serializer: Serializer) async throws
        -> Serializer.Output
    {
        do {
            try call.checkVetoAndEnter()
            defer { call.leave() }
            if call.options.interval != nil, !call.gatesAfterAdapters { try await admitInterval(for: call) }
            while true {
                let context = try call.beginAttempt()
                if configuration.networkStatus != nil { try await awaitNetwork(for: call) }
                // The server the pool is on now: the call may have waited since it chose one.
                try call.failOver()
                var request = call.attemptRequest()
                if !call.chain.adapters.isEmpty {
                    request = try await adapt(request, context: context, for: call)
                    // The adapters may have waited (a refresh, fleet mode's shared sync) across a
                    // logout: what they wrote is then the next session's credential.
                    try call.checkSession()
                    if prepared.hasOwnAdapters, call.options.deduplicates, request.isShareable {
                        call.noteAdapted(request)
                    }
                }
                // The adapters of a service's own wrote the call's user: the gates read it.
                if call.isFirstAttempt, call.gatesAfterAdapters { try await admitAfterAdapters(request, for: call) }
                if prepared.readsCredentialFieldsPerAttempt, call.sendsCredential { call.readCredentialFields() }
                // Signed last, per attempt, as sent: a retry carries a fresh signature.
                if call.sendsCredential, let signer = configuration.signer {
                    try signer.sign(&request, endpointPath: call.path)
                }
                call.willSend(&request)
                do {
                    let answer = try await transfer(request, for: call)
                    // Throws `AnswerRefused` when the call refused the answer and holds the
                    // attempt's failure.
                    return try call.conclude(answer, request: request, serializer: serializer)
                } catch {
                    try call.fail(error)
                }
                try await call.prepareRetry(sent: request, context: context)
            }
        } catch {
            throw call.ending(error)
        }
    }

    /// Steps 1 and 2 and the monitors' `didStart`: the call's state, which every options
    /// value of the call reads in place from now on (one copy of `options` per call).
    /// - Parameter keepsResponse: whether the call will want `call.response(_:)`.
    /// - Throws: a bad server or path, or a request serializer's error, mapped (an error of a
    ///   call that fails before its first attempt is mapped too).
    func startCall(
        _ method: HTTPRequest.Method, _ path: String, parameters: (any Encodable & Sendable)?,
        body: (any Encodable & Sendable)?, options: CallOptions, acceptHeader: String?, responseType: Any.Type,
        id: CallID, scope: CancellationScope?, keepsResponse: Bool
    ) throws -> CallRun {
        do {
            let plan = try plan(
                method: method, path: path, parameters: parameters, body: body, options: options,
                acceptHeader: acceptHeader)
            // Kept for a failover, which encodes them again for its new server.
            let inputs =
                plan.pool != nil && (parameters != nil || body != nil)
                ? Inputs(parameters, body) : nil
            return CallRun(
                self, plan: plan, inputs: inputs, responseType: ObjectIdentifier(responseType), id: id, scope: scope,
                keepsResponse: keepsResponse)
        } catch {
            throw mapped(CourierError.fromCall(error), options: options)
        }
    }

    /// A call with a task of its own (`Call`), which the registry cancels directly: its
    /// response, with everything known about it.
    func perform<Model: Sendable>(
        _ endpoint: Endpoint<Model>, serializer: any ResponseSerializer<Model>, acceptHeader: String?, id: CallID
    ) async throws -> Response<Model> {
        let call = try startCall(
            endpoint.method, endpoint.path, parameters: endpoint.parameters, body: endpoint.body,
            options: endpoint.options, acceptHeader: acceptHeader, responseType: type(of: serializer), id: id,
            scope: nil, keepsResponse: true)
        return call.response(try await perform(call, serializer: serializer))
    }

    /// Step 3 for a service with adapters of its own (`CallRun.gatesAfterAdapters`), after the
    /// first attempt's adapters: the in-flight guard, then the request interval, keyed by the
    /// user the adapters wrote.
    /// - Throws: `CourierError.skipped` or `.throttled`.
    @inline(never)
    private func admitAfterAdapters(_ request: PreparedRequest, for call: CallRun) async throws {
        call.noteAdaptedUser(request)
        try call.enter()
        if call.options.interval != nil { try await admitInterval(for: call) }
    }

    /// Step 3: the request interval.
    @inline(never)
    private func admitInterval(for call: CallRun) async throws {
        guard let interval = call.options.interval else { return }
        let (gate, key, clock) = (configuration.intervalGate, call.gateKey, call.clock)
        try await CancellationScope.run(in: call.scope) {
            try await gate.admit(key: key, rule: interval, clock: clock)
        }
    }

    /// Step 4: the adapters.
    @inline(never)
    private func adapt(_ request: PreparedRequest, context: InterceptorContext, for call: CallRun) async throws
        -> PreparedRequest
    {
        let chain = call.chain
        return try await CancellationScope.run(in: call.scope) { try await chain.adapt(request, context: context) }
    }

    /// Steps 1 and 2: the request as the serializer leaves it, before real-time parameters
    /// and adapters.
    /// - Parameters:
    ///   - sendsCredential: false for a server that gets no credential: the service's
    ///     own credential fields are left out (a call's own headers stay).
    ///   - headers: the service's headers as the call found them (nil: the current ones).
    ///   - headersWithAccept: the same with the service format's `Accept` field
    ///     (`LiveServiceSettings`), the fields of a call that adds none with that format.
    func prepare(
        method: HTTPRequest.Method, path: String, parameters: (any Encodable & Sendable)?,
        body: (any Encodable & Sendable)?, options: CallOptions,
        on server: BaseURL, acceptHeader: String?, sendsCredential: Bool = true, headers: HTTPFields? = nil,
        headersWithAccept: HTTPFields? = nil
    ) throws -> PreparedRequest {
        var head = try prepared.heads.head(method, path, on: server)
        if sendsCredential, options.headers.isEmpty, let headersWithAccept, acceptHeader == prepared.acceptHeader {
            head.headerFields = headersWithAccept
        } else {
            head.headerFields = Self.fields(
                headers ?? settings.headers, options: options, acceptHeader: acceptHeader,
                sendsCredential: sendsCredential, prepared: prepared)
        }
        var request = PreparedRequest(head: head)
        // Real-time parameters are added per attempt (`CallRun.attemptRequest()`).
        if options.includesGeneralParameters, !configuration.generalParameters.isEmpty {
            request.appendQuery(Self.encodeQuery(configuration.generalParameters))
        }
        if parameters != nil || body != nil {
            // The label decides where a value goes (`RequestSerializer+Placement.swift`).
            let requestSerializer = options.requestSerializer ?? configuration.requestSerializer
            if let parameters { try Self.encode(parameters, at: .query, with: requestSerializer, into: &request) }
            if let body { try Self.encode(body, at: .body, with: requestSerializer, into: &request) }
        }
        return request
    }

    /// A call's header fields: the service's (without its credential fields for a server
    /// that gets no credential), the call's, and the `Accept` field of its format.
    private static func fields(
        _ service: HTTPFields, options: CallOptions, acceptHeader: String?, sendsCredential: Bool,
        prepared: PreparedService
    ) -> HTTPFields {
        var fields = service
        if !sendsCredential {
            for name in prepared.credentialFieldNames { fields[name] = nil }
        }
        if !options.headers.isEmpty {
            // A call's field replaces every service field of its name; a name the call repeats
            // keeps all its values.
            for field in options.headers { fields[field.name] = nil }
            fields.append(contentsOf: options.headers)
        }
        if let acceptHeader, fields[.accept] == nil {
            // The service format's field is made (and its value checked) once.
            if let made = prepared.acceptField, made.value == acceptHeader {
                fields.append(made)
            } else {
                fields[.accept] = acceptHeader
            }
        }
        return fields
    }

    /// The call's adapters and retriers; without authentication for a server that gets no
    /// credential.
    func interceptors(for options: CallOptions, sendsCredential: Bool) -> InterceptorChain {
        guard options.adapters.isEmpty, options.retriers.isEmpty else {
            return InterceptorChain(configuration: configuration, options: options, authentication: sendsCredential)
        }
        return sendsCredential ? prepared.chain : prepared.chainWithoutCredential
    }

    /// Whether `server` is one of the API's own origins: the client's (base URL, credential
    /// origins) or one of the service's servers.
    func isOwn(_ server: BaseURL, clientOrigin: Origin? = nil) -> Bool {
        guard let origin = Origin(server) else { return false }
        return client.credentialScope.origins.contains(origin) || origin == clientOrigin
            || configuration.servers?.origins.contains(origin) == true
    }

    /// Step 4: one transfer, shared with identical GETs in flight unless the call opts out.
    ///
    /// Inlined into `perform`: one async frame fewer per attempt (the frame of `perform` then
    /// holds the client's `Exchange` while the transfer is in flight, as this one did).
    @inline(__always)
    private func transfer(_ request: PreparedRequest, for call: CallRun) async throws -> HTTPClient.Response {
        // Offline, a GET the cache may answer asks it first (`awaitNetwork`).
        if call.answersFromCacheWhileOffline, let cached = try await cachedWhileOffline(request, for: call) {
            return cached
        }
        // A call's own adapters decorate its request alone (a tenant, a scope): the identity
        // cannot tell what they added, and a call joining another's transfer never sends it.
        // A shared transfer reports its progress to the handlers of the call that started it
        // only: a call with handlers of its own sends its own request. The service's adapters
        // see each call's `userInfo` and may decorate it from there (its tenant): a call with
        // values of the app's own in it sends its own request too.
        guard call.options.deduplicates, request.isShareable, call.options.adapters.isEmpty,
            call.options.downloadProgress == nil, call.options.uploadProgress == nil,
            !prepared.hasOwnAdapters || !call.options.userInfo.hasAppValues
        else {
            do {
                // The call's options as they are (borrowed, not copied) when the attempt changes none.
                guard call.changesTransferOptions else {
                    return try await client.send(
                        request.head, body: request.body, options: call.transferOptions, context: call.transferContext()
                    )
                }
                return try await client.send(
                    request.head, body: request.body, options: call.requestOptions(), context: call.transferContext())
            } catch is CancellationError {
                throw CourierError(.cancelled, "the call was cancelled in flight")
            }
        }
        return try await deduplicatedTransfer(request, for: call)
    }

    /// The key identical calls share one transfer under: the identity, and the limits and
    /// cache settings the call sets on its transfer when it sets any. A call that joined a
    /// transfer made with other limits waited past its own timeout (as long as the first
    /// call's), or took a body over its own size limit or a redirect it refused; one that asked
    /// for a stale copy on error got the first call's error, and one with its own cache
    /// lifetime had the answer stored for the first call's.
    ///
    /// The client's own time limits too, once `updateSettings` has changed its settings: a call
    /// that started under other ones joined a transfer made under the old limits, and failed
    /// with its `.timedOut` (or waited past its own). Settings never changed cost nothing here.
    static func sharingKey(_ identity: String, _ options: RequestOptions) -> String {
        let client = options.clientSettings.flatMap { $0.version == 0 ? nil : $0.settings }
        guard
            options.timeout != nil || options.maxResponseSize != nil || options.maxRedirects != nil
                || options.staleIfError != nil || options.cacheLifetime != nil || client != nil
        else {
            return identity
        }
        var limits = [
            options.timeout.map { "\($0)" }, options.maxResponseSize.map(String.init),
            options.maxRedirects.map(String.init), options.staleIfError.map { "\($0)" },
            options.cacheLifetime.map { "\($0)" },
        ]
        if let client {
            limits += [client.timeout.map { "\($0)" }, "\(client.connectTimeout)", client.stallTimeout.map { "\($0)" }]
        }
        return identity + "\nlimits:" + limits.map { " " + ($0 ?? "-") }.joined()
    }

    /// The shared transfer, in the call's task: the first of identical calls runs it (its scope
    /// cancels it, as its own transfer), the others wait for its answer (their scope makes them
    /// leave). Out of line: its values are not kept in `perform`'s frame by the calls that opt out.
    @inline(never)
    private func deduplicatedTransfer(_ request: PreparedRequest, for call: CallRun) async throws
        -> HTTPClient.Response
    {
        // A call cancelled before it gets here starts no shared transfer at all.
        let scope = call.scope
        if scope?.isCancelled == true || Task.isCancelled {
            throw CourierError(.cancelled, "the call was cancelled before it was sent")
        }
        let options = call.requestOptions()
        let identity = call.identity
        var text = Self.sharingKey(identity.key, options)
        // What the service's adapters (its own authentication included) add is not in the
        // identity, and a service made from a copy of this configuration may add something else
        // (its user's): no sharing across. Nor within one service when they wrote something
        // else (another user logged in since the transfer started).
        if prepared.hasOwnAdapters {
            text += "\nservice: \(identityNumber)"
            if let adapted = call.adaptedDigest { text += "\nadapted: " + adapted }
        }
        // Nothing appended (the same length): the identity's key, hashed once already.
        typealias Key = InFlightDeduplicator<HTTPClient.Response>.Key
        let key = text.utf8.count == identity.key.utf8.count ? Key(text, hash: identity.keyHash) : Key(text)
        do {
            return try await configuration.deduplicator.run(key: key, scope: scope) {
                try await client.send(
                    request.head, body: request.body, options: options, context: call.transferContext())
            }
        } catch is CancellationError {
            throw CourierError(.cancelled, "the call was cancelled in flight")
        }
    }

    /// Step 7: the service's preprocessors, then the call's; "no data"; decoding; the result
    /// veto, which sees the answer as it came.
    func decode<Serializer: ResponseSerializer>(
        _ context: ResponseContext, serializer: Serializer, options: CallOptions
    ) throws -> Serializer.Output {
        let service = options.keepsAnswerAsItCame ? [] : configuration.pipeline.preprocessors
        let call = options.preprocessors
        // The answer as it is, not a copy, when nothing preprocesses it.
        guard !context.hasNoContent, !service.isEmpty || !call.isEmpty else {
            return try decodeProcessed(context, as: context, serializer: serializer, options: options)
        }
        var current = context
        for preprocessor in service { current = try preprocessor.preprocess(current) }
        for preprocessor in call { current = try preprocessor.preprocess(current) }
        return try decodeProcessed(current, as: context, serializer: serializer, options: options)
    }

    /// Step 7 after preprocessing: "no data", decoding, the result veto on the answer as it
    /// came (`original`).
    private func decodeProcessed<Serializer: ResponseSerializer>(
        _ current: ResponseContext, as original: ResponseContext, serializer: Serializer, options: CallOptions
    ) throws -> Serializer.Output {
        // Asked first, so that the value's optional type is looked up only for a call with a
        // "no data" rule whose answer has none (a lookup of generic metadata per call).
        if !options.noData.isEmpty, options.noData.matches(current) {
            return try Self.noDataValue(current, as: Serializer.Output.self, rule: options.noData)
        }
        let value = try serializer.serialize(current)
        if let accepts = options.acceptsResult, !accepts(original) {
            throw CourierError(.skipped, "the result was vetoed", response: original.response, body: original.body)
        }
        return value
    }

    /// The value of a call whose answer has no usable data (`NoDataRule`).
    /// - Throws: `CourierError.noData` when the model is not optional.
    @inline(never)
    private static func noDataValue<Model>(_ context: ResponseContext, as model: Model.Type, rule: NoDataRule)
        throws -> Model
    {
        guard let none: Model = try rule.value(for: context) else {
            preconditionFailure("a \"no data\" rule matched an answer it then did not match")
        }
        return none
    }

    static func encodeQuery(_ items: [(name: String, value: String)]) -> String {
        items.map {
            RelativePath.percentEncode($0.name.utf8, allowed: RelativePath.unreserved) + "="
                + RelativePath.percentEncode($0.value.utf8, allowed: RelativePath.unreserved)
        }.joined(separator: "&")
    }
}

extension PreparedRequest {
    /// Whether identical calls in flight may share this request's transfer: GET and HEAD
    /// without a body.
    var isShareable: Bool { (head.method == .get || head.method == .head) && body == nil }
}

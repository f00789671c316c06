import HTTPTypes

extension ServiceCore {
    /// The verbs' one body (`get`, `post`, …): the call, with the call's serializer or the
    /// service's format, and its value only. No `Endpoint` is made (one copy of `options` per
    /// call, in its `CallRun`) and no `Response` is built.
    @inline(__always)  // one async frame fewer per call
    func value<Model: Decodable & Sendable>(
        _ method: HTTPRequest.Method, _ path: String, query: (any Encodable & Sendable)?,
        body: (any Encodable & Sendable)?, _ serializer: (any ResponseSerializer<Model>)?, _ options: CallOptions
    ) async throws(CourierError) -> Model {
        guard let serializer else {
            return try await run(
                method, path, parameters: query, body: body, options: options,
                serializer: DecodableResponseSerializer(Model.self, anyDecoding: prepared.decoding),
                acceptHeader: prepared.acceptHeader, keepsResponse: false
            ).value
        }
        return try await run(
            method, path, parameters: query, body: body, options: options, serializer: serializer,
            acceptHeader: serializer.acceptHeader, keepsResponse: false
        ).value
    }

    /// An endpoint's call whose caller waits for it: its value with everything known about it.
    func run<Model: Sendable>(
        _ endpoint: Endpoint<Model>, serializer: any ResponseSerializer<Model>, acceptHeader: String?
    ) async throws(CourierError) -> Response<Model> {
        let (value, call) = try await run(
            endpoint.method, endpoint.path, parameters: endpoint.parameters, body: endpoint.body,
            options: endpoint.options, serializer: serializer, acceptHeader: acceptHeader, keepsResponse: true)
        return call.response(value)
    }

    /// An endpoint's call whose endpoint takes time to make (CourierOpenAPI reads the
    /// operation's request body first): the call is registered from the start, so that
    /// `calls.cancel(id)` and `cancelAll()` stop `prepare` too, and then nothing is sent.
    /// - Parameter prepare: makes the endpoint; it runs in a task that cancelling the call cancels.
    /// - Throws: what `prepare` throws (`.cancelled` once the call is cancelled), or the call's error.
    package func send<Model: Sendable>(
        preparing prepare: @escaping @Sendable () async throws(CourierError) -> Endpoint<Model>
    ) async throws(CourierError) -> Response<Model> {
        let id = CallID.next()
        let scope = CancellationScope(id: id)
        let slot = calls.track(scope)
        defer { calls.untrack(slot) }
        do {
            let endpoint = try await CancellationScope.run(in: scope) { try await prepare() }
            guard let serializer = endpoint.serializer else {
                throw CourierError(.configuration, "the endpoint for \(Model.self) names no response serializer")
            }
            let call = try startCall(
                endpoint.method, endpoint.path, parameters: endpoint.parameters, body: endpoint.body,
                options: endpoint.options, acceptHeader: serializer.acceptHeader, responseType: type(of: serializer),
                id: id, scope: scope, keepsResponse: true)
            let value = try await perform(call, serializer: serializer)
            scope.finish()
            return call.response(value)
        } catch {
            throw scope.failed(error)
        }
    }

    /// Runs a call whose caller waits for it: what `call(_:).run()` does, without a `Call`.
    ///
    /// The call is registered (cancellable by identifier and by `cancelAll()`) and runs in the
    /// caller's task: one task and one resumption per call (issue 17). Its `CancellationScope`
    /// is the registry's handle: cancelling it through the registry cancels the scope, not the
    /// caller's task; cancelling the caller cancels the call.
    ///
    /// No cancellation handler of its own on the caller's task: every wait the call installs
    /// on its scope (the transfer, `CancellationScope.run`, the de-duplicated wait) has one
    /// that cancels it when the caller is cancelled, and a caller cancelled before the end is
    /// read from the task (`finish(_:taskIsCancelled:)`). A handler here cost an async closure
    /// frame and a status record per call.
    /// - Returns: the value, and the call's state for `CallRun.response(_:)`.
    ///
    /// Generic over the serializer, not over an `any ResponseSerializer`: the service's format
    /// (`DecodableResponseSerializer`, larger than an existential's inline buffer) is not boxed
    /// on the heap for every call. Inlined into the verbs: one async frame fewer per call.
    @inline(__always)
    private func run<Serializer: ResponseSerializer>(
        _ method: HTTPRequest.Method, _ path: String, parameters: (any Encodable & Sendable)?,
        body: (any Encodable & Sendable)?, options: CallOptions, serializer: Serializer,
        acceptHeader: String?, keepsResponse: Bool
    ) async throws(CourierError) -> (value: Serializer.Output, call: CallRun) {
        let id = CallID.next()
        let scope = CancellationScope(id: id)
        let slot = calls.track(scope)
        defer { calls.untrack(slot) }
        do {
            let call = try startCall(
                method, path, parameters: parameters, body: body, options: options, acceptHeader: acceptHeader,
                responseType: Serializer.self, id: id, scope: scope, keepsResponse: keepsResponse)
            let value = try await perform(call, serializer: serializer)
            scope.finish()
            return (value, call)
        } catch {
            throw scope.failed(error)
        }
    }
}

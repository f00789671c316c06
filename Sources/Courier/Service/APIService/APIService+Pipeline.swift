import Foundation
import HTTPTypes

extension APIService {
    /// One call, start to end:
    /// 1. compose the URL (call's server, else the pool's current one, else the client's base URL);
    /// 2. headers, general and real-time parameters, request serializer;
    /// 3. veto (`skipIf`), then the request interval;
    /// 4. per attempt: adapters (authentication first, then the service's, then the call's),
    ///    cookies, de-duplication of GETs, send;
    /// 5. cookies stored, failover outcome recorded, validation;
    /// 6. on failure: retriers (the call's, authentication, the service's), then the retry
    ///    policy; wait on the service clock and go back to 4;
    /// 7. preprocess and decode; the result veto.
    func perform<Model: Sendable>(
        _ endpoint: Endpoint<Model>, serializer: any ResponseSerializer<Model>, acceptHeader: String?, id: CallID
    ) async throws -> Response<Model> {
        let options = endpoint.options
        let clock = configuration.clock
        let started = clock.now
        let monitor = CompositeEventMonitor(configuration.monitors)
        let pool = options.server == nil ? configuration.servers : nil
        var server = try options.server ?? pool?.current ?? prepared.clientServer.get()
        var base = try prepare(endpoint, on: server, acceptHeader: acceptHeader)
        var event = CallEvent(id: id, request: base.head, attempt: 0, userInfo: options.userInfo)
        monitor.didStart(event)
        var attempts = 0
        do {
            if let skipIf = options.skipIf, skipIf() {
                throw CourierError(.skipped, "the call was vetoed before sending")
            }
            let guardKey = options.skipsWhileInFlight ? RequestIntervalGate.key(for: base.head) : nil
            if let guardKey, !configuration.inFlightGuard.enter(guardKey) {
                throw CourierError(.skipped, "the same call is already in flight")
            }
            defer { if let guardKey { configuration.inFlightGuard.leave(guardKey) } }
            if let interval = options.interval {
                try await configuration.intervalGate.admit(
                    key: RequestIntervalGate.key(for: base.head), rule: interval, clock: clock)
            }
            let chain = interceptors(for: options)
            let policy = options.retryPolicy ?? configuration.retryPolicy
            let validator = options.validator ?? configuration.pipeline.validator
            while true {
                attempts += 1
                try Task.checkCancellation()
                let context = InterceptorContext(callID: id, attempt: attempts, userInfo: options.userInfo)
                var request = try await chain.adapt(base, context: context)
                configuration.cookieJar?.apply(to: &request.head)
                event.request = request.head
                event.attempt = attempts
                monitor.willSend(event)
                let failure: AttemptFailure
                do {
                    let answer = try await transfer(request, options: options)
                    pool?.record(answer.head.status.code >= 500 ? .failure : .success, for: server)
                    monitor.didReceive(event, response: answer.head)
                    let context = ResponseContext(request: request.head, response: answer.head, body: answer.body)
                    do {
                        try validator.validate(context, serializerContentTypes: serializer.acceptableContentTypes)
                        let value = try decode(context, serializer: serializer, options: options)
                        let metrics = CallMetrics(
                            attempts: attempts, duration: clock.now - started, isFromCache: answer.isFromCache,
                            responseBytes: answer.body.count, transfer: answer.metrics)
                        monitor.didFinish(event, result: .success(answer.head), metrics: metrics)
                        return Response(
                            value: value, response: answer.head, body: answer.body, request: request.head,
                            isFromCache: answer.isFromCache, transferMetrics: answer.metrics, metrics: metrics,
                            callID: id)
                    } catch let error as CourierError where error.code == .httpStatus {
                        failure = AttemptFailure(response: answer.head, body: answer.body, error: error)
                    }
                } catch let error as CourierError where error.code != .cancelled {
                    guard error.response == nil else { throw error }
                    if error.code == .cannotConnect {
                        pool?.record(.connectionFailure, for: server)
                    } else if error.isTransient {
                        pool?.record(.failure, for: server)
                    }
                    failure = AttemptFailure(error: error)
                }
                let delay = try await retryDelay(
                    after: failure, request: request, context: context, chain: chain, policy: policy)
                // Whatever retriers say, a call ends after this many sends.
                guard attempts < configuration.maximumAttempts else { throw failure.error }
                monitor.willRetry(event, after: delay, because: failure.error)
                try await clock.sleep(for: delay)
                // A failover during the attempt moves the retry to the new server.
                if let pool, pool.current != server {
                    server = pool.current
                    base = try prepare(endpoint, on: server, acceptHeader: acceptHeader)
                }
            }
        } catch {
            let courier = Call<Model>.courierError(error)
            let metrics = CallMetrics(attempts: attempts, duration: clock.now - started)
            monitor.didFinish(event, result: .failure(courier), metrics: metrics)
            throw courier
        }
    }

    /// Steps 1 and 2: the request as the serializer leaves it, before adapters.
    private func prepare<Model>(
        _ endpoint: Endpoint<Model>, on server: BaseURL, acceptHeader: String?
    ) throws -> PreparedRequest {
        let options = endpoint.options
        let path = try RelativePath(endpoint.path)
        var fields = configuration.headers
        for field in options.headers { fields[field.name] = field.value }
        if let acceptHeader, fields[.accept] == nil { fields[.accept] = acceptHeader }
        var request = PreparedRequest(head: server.request(endpoint.method, path, headerFields: fields))
        if options.includesGeneralParameters {
            var items = configuration.generalParameters
            if let realTime = configuration.realTimeParameters { items += realTime() }
            if !items.isEmpty { request.appendQuery(Self.encodeQuery(items)) }
        }
        if let parameters = endpoint.parameters {
            let requestSerializer = options.requestSerializer ?? configuration.requestSerializer
            try requestSerializer.serialize(parameters, into: &request)
        }
        return request
    }

    private func interceptors(for options: CallOptions) -> InterceptorChain {
        guard options.adapters.isEmpty, options.retriers.isEmpty else {
            return InterceptorChain(configuration: configuration, options: options)
        }
        return prepared.chain
    }

    /// Step 4: one transfer, shared with identical GETs in flight unless the call opts out.
    private func transfer(_ request: PreparedRequest, options: CallOptions) async throws -> HTTPClient.Response {
        var transportOptions = options.transport
        if let timeout = options.timeout { transportOptions.timeout = timeout }
        // The client stores every hop's cookies (a redirect's too) and sends the jar's on each.
        if transportOptions.cookieJar == nil { transportOptions.cookieJar = configuration.cookieJar }
        let shareable = (request.head.method == .get || request.head.method == .head) && request.body == nil
        guard options.deduplicates, shareable else {
            return try await Self.send(request, options: transportOptions, through: client)
        }
        let client = self.client
        let sendOptions = transportOptions
        let key = InFlightDeduplicator<HTTPClient.Response>.key(for: request.head)
        do {
            return try await configuration.deduplicator.run(key: key) {
                try await Self.send(request, options: sendOptions, through: client)
            }
        } catch is CancellationError {
            throw CourierError(.cancelled, "the call was cancelled in flight")
        }
    }

    private static func send(
        _ request: PreparedRequest, options: RequestOptions, through client: HTTPClient
    ) async throws -> HTTPClient.Response {
        do {
            return try await client.send(request.head, body: request.body, options: options)
        } catch is CancellationError {
            throw CourierError(.cancelled, "the call was cancelled in flight")
        }
    }

    /// Step 6: how long to wait before the next attempt, or the error that ends the call.
    private func retryDelay(
        after failure: AttemptFailure, request: PreparedRequest, context: InterceptorContext, chain: InterceptorChain,
        policy: RetryPolicy
    ) async throws -> Duration {
        switch await chain.retry(request, failure: failure, context: context) {
        case .fail(let error):
            throw error
        case .retry:
            return .zero
        case .retryAfter(let delay):
            return delay
        case .doNotRetry:
            let outcome: RetryPolicy.Outcome = failure.response.map { .response($0) } ?? .error(failure.error)
            let decision = policy.decision(
                afterAttempt: context.attempt, method: request.head.method, outcome: outcome,
                now: configuration.clock.wallTime)
            guard case .retry(let delay) = decision else { throw failure.error }
            return delay
        }
    }

    /// Step 7.
    private func decode<Model>(
        _ context: ResponseContext, serializer: any ResponseSerializer<Model>, options: CallOptions
    ) throws -> Model {
        var current = context
        if !current.hasNoContent {
            for preprocessor in configuration.pipeline.preprocessors + options.preprocessors {
                current = try preprocessor.preprocess(current)
            }
        }
        let value = try serializer.serialize(current)
        if let accepts = options.acceptsResult, !accepts(context) {
            throw CourierError(.skipped, "the result was vetoed", response: context.response, body: context.body)
        }
        return value
    }

    static func encodeQuery(_ items: [(name: String, value: String)]) -> String {
        items.map {
            RelativePath.percentEncode($0.name.utf8, allowed: RelativePath.unreserved) + "="
                + RelativePath.percentEncode($0.value.utf8, allowed: RelativePath.unreserved)
        }.joined(separator: "&")
    }
}

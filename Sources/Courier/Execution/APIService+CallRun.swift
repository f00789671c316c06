import Foundation
import HTTPTypes

extension ServiceCore {
    /// The state of one call across its attempts, and the synchronous steps of `perform`.
    ///
    /// `perform` keeps one of these and little else: an async function holds every value it
    /// keeps across an `await` in its frame, allocated for as long as the call is in flight
    /// (its frame was 6 KB when all of this lived there). The steps are not inlined, so their
    /// temporaries stay on the thread's stack. Used by the call's task only.
    final class CallRun {
        private let service: ServiceCore
        let options: CallOptions
        let id: CallID
        let clock: any ServiceClock
        private let started: ContinuousClock.Instant
        private let monitor: CompositeEventMonitor
        private let pool: ServerPool?
        private var server: BaseURL
        /// The request as the serializer leaves it, before adapters.
        private(set) var base: PreparedRequest
        private var event: CallEvent
        private var attempts = 0
        let chain: InterceptorChain
        let policy: RetryPolicy
        private let validator: ResponseValidator
        /// The endpoint key held in the in-flight guard, if the call holds one.
        private var guardKey: String?
        private let method: HTTPRequest.Method
        private let path: String
        private let parameters: (any Encodable & Sendable)?
        private let acceptHeader: String?
        /// Whether the call's server gets the credential: the API's own servers do, a per-call
        /// server on another origin only when the call opts in.
        let sendsCredential: Bool
        /// The response serializer's type, part of the identity.
        private let responseType: ObjectIdentifier
        private var computedIdentity: RequestIdentity?

        /// Steps 1 and 2, and the monitors' `didStart`.
        /// - Throws: a bad server or path, or a request serializer's error (before `didStart`).
        @inline(never)
        init(
            _ service: ServiceCore, method: HTTPRequest.Method, path: String, parameters: (any Encodable & Sendable)?,
            options: CallOptions, acceptHeader: String?, responseType: Any.Type, id: CallID
        ) throws {
            let configuration = service.configuration
            self.service = service
            self.options = options
            self.id = id
            self.method = method
            self.path = path
            self.parameters = parameters
            self.acceptHeader = acceptHeader
            self.responseType = ObjectIdentifier(responseType)
            clock = configuration.clock
            started = clock.now
            monitor = CompositeEventMonitor(configuration.monitors)
            pool = options.server == nil ? configuration.servers : nil
            server = try options.server ?? pool?.current ?? service.prepared.clientServer.get()
            sendsCredential = options.server.map { options.sendsCredentialToServer || service.isOwn($0) } ?? true
            base = try service.prepare(
                method: method, path: path, parameters: parameters, options: options, on: server,
                acceptHeader: acceptHeader, sendsCredential: sendsCredential)
            event = CallEvent(id: id, request: base.head, attempt: 0, userInfo: options.userInfo)
            event.credentialFieldNames = service.prepared.credentialFieldNames
            chain = service.interceptors(for: options, sendsCredential: sendsCredential)
            policy = options.retryPolicy ?? configuration.retryPolicy
            validator = options.validator ?? configuration.pipeline.validator
            monitor.didStart(event)
        }

        /// Step 3 without the interval: the veto, then the in-flight guard.
        /// - Throws: `CourierError.skipped`.
        @inline(never)
        func checkVetoAndEnter() throws {
            if let skipIf = options.skipIf, skipIf() {
                throw CourierError(.skipped, "the call was vetoed before sending")
            }
            let key = options.skipsWhileInFlight ? identity.key : nil
            if let key, !service.configuration.inFlightGuard.enter(key) {
                throw CourierError(.skipped, "the same call is already in flight")
            }
            guardKey = key
        }

        /// Releases the in-flight guard, if the call holds it.
        func leave() {
            if let guardKey { service.configuration.inFlightGuard.leave(guardKey) }
            guardKey = nil
        }

        /// What makes this call the same request as another: computed once, on first use (a
        /// call that is neither de-duplicated nor gated never needs it).
        var identity: RequestIdentity {
            if let computedIdentity { return computedIdentity }
            let made = makeIdentity()
            computedIdentity = made
            return made
        }

        /// The identity of the base request with the credential its attempts will carry.
        @inline(never)
        private func makeIdentity() -> RequestIdentity {
            var request = base
            let client = service.client
            // What the client adds to every hop belongs to the identity too: its default
            // headers (one client's Accept-Language is not another's) and its jar's cookies
            // (one user's session is not the next one's).
            for field in client.configuration.defaultHeaders where request.head.headerFields[field.name] == nil {
                request.head.headerFields.append(field)
            }
            let jar = options.cookieJar ?? service.configuration.cookieJar ?? client.cookieJar
            if request.head.headerFields[.cookie] == nil, let cookies = jar?.cookieHeader(for: request.head) {
                request.head.headerFields[.cookie] = cookies
            }
            if sendsCredential {
                for field in client.authorizationFields() where request.head.headerFields[field.name] == nil {
                    request.head.headerFields.append(field)
                }
                if let authentication = service.configuration.authentication {
                    // Its fields only: a credential it writes into the query stays out of the key.
                    var applied = request.head
                    authentication.applyCurrent(to: &applied)
                    request.head.headerFields = applied.headerFields
                }
            }
            return RequestIdentity(
                request: request, credentialFieldNames: service.prepared.credentialFieldNames,
                responseType: responseType, cachePolicy: options.cachePolicy, client: ObjectIdentifier(client))
        }

        /// The request of the next attempt: the base request on the current server, with
        /// real-time parameters made now (a retry sends fresh ones).
        @inline(never)
        func attemptRequest() -> PreparedRequest {
            guard options.includesGeneralParameters, let realTime = service.configuration.realTimeParameters else {
                return base
            }
            let items = realTime()
            guard !items.isEmpty else { return base }
            var request = base
            request.appendQuery(ServiceCore.encodeQuery(items))
            return request
        }

        /// Counts an attempt.
        /// - Returns: what adapters and retriers see of it.
        /// - Throws: `CancellationError` when the task is cancelled.
        @inline(never)
        func beginAttempt() throws -> InterceptorContext {
            attempts += 1
            try Task.checkCancellation()
            return InterceptorContext(callID: id, attempt: attempts, userInfo: options.userInfo)
        }

        /// The client's options for this call's transfers.
        @inline(never)
        func requestOptions() -> RequestOptions {
            var transportOptions = options.requestOptions
            // The client stores every hop's cookies (a redirect's too) and sends the jar's on each.
            if transportOptions.cookieJar == nil { transportOptions.cookieJar = service.configuration.cookieJar }
            // The service knows its servers: it decides whether the client adds its credential,
            // and which fields besides the client's carry one (dropped across origins).
            transportOptions.sendsCredential = sendsCredential
            let extra = service.prepared.extraCredentialNames
            if !extra.isEmpty { transportOptions.sensitiveHeaderNames.formUnion(extra) }
            return transportOptions
        }

        /// The jar's cookies, then the monitors' `willSend`.
        @inline(never)
        func willSend(_ request: inout PreparedRequest) {
            service.configuration.cookieJar?.apply(to: &request.head)
            event.request = request.head
            event.attempt = attempts
            monitor.willSend(event)
        }

        /// Steps 5 and 7 for an answer: failover outcome, `didReceive`, validation, decoding,
        /// `didFinish`.
        /// - Throws: `CourierError.httpStatus` for a refused status (an attempt to retry), or
        ///   what validation, preprocessing or decoding threw.
        @inline(never)
        func finish<Model>(
            _ answer: HTTPClient.Response, request: PreparedRequest, serializer: any ResponseSerializer<Model>
        ) throws -> Response<Model> {
            pool?.record(answer.head.status.code >= 500 ? .failure : .success, for: server)
            monitor.didReceive(event, response: answer.head)
            let context = ResponseContext(request: request.head, response: answer.head, body: answer.body)
            try validator.validate(context, serializerContentTypes: serializer.acceptableContentTypes)
            let value = try service.decode(context, serializer: serializer, options: options)
            let metrics = CallMetrics(
                attempts: attempts, duration: clock.now - started, isFromCache: answer.isFromCache,
                responseBytes: answer.body.count, transfer: answer.metrics)
            monitor.didFinish(event, result: .success(answer.head), metrics: metrics)
            return Response(
                value: value, response: answer.head, body: answer.body, request: request.head,
                isFromCache: answer.isFromCache, transferMetrics: answer.metrics, metrics: metrics, callID: id)
        }

        /// An answer whose status the call refuses, as retriers see it.
        @inline(never)
        func refused(_ answer: HTTPClient.Response, sent request: PreparedRequest, error: CourierError)
            -> AttemptFailure
        {
            var failure = AttemptFailure(response: answer.head, body: answer.body, error: error)
            if answer.redirectCount > 0, let scheme = request.head.scheme, let authority = request.head.authority {
                failure.isFromAnotherOrigin = Origin(answer.url) != Origin(scheme: scheme, authority: authority)
            }
            return failure
        }

        /// An attempt that ended without an answer to validate: its failover outcome.
        /// - Returns: what retriers and `RetryDecision` see of it.
        @inline(never)
        func failed(_ error: CourierError) -> AttemptFailure {
            // An error that carries a response (validation, preprocessing, decoding) came from
            // an answer: the server was reached, and `RetryDecision` ends the call with it.
            if error.response == nil {
                if error.code == .cannotConnect {
                    pool?.record(.connectionFailure, for: server)
                } else if error.isTransient {
                    pool?.record(.failure, for: server)
                }
            }
            return AttemptFailure(error: error)
        }

        /// Step 6: the retriers' verdict, then `RetryDecision`, then `willRetry`.
        ///
        /// Refresh is this step: the authentication interceptor refreshes the credential (once
        /// for all the calls rejected together) before it answers `.retry`. Its own async frame,
        /// so that the verdict does not grow `perform`'s, which lives as long as the call.
        /// - Returns: how long to wait before the next attempt.
        /// - Throws: the error that ends the call.
        @inline(never)
        func retryDelay(after failure: AttemptFailure, sent request: PreparedRequest, context: InterceptorContext)
            async throws -> Duration
        {
            let verdict: RetryVerdict =
                RetryDecision.asksRetriers(after: failure)
                ? await chain.retry(request, failure: failure, context: context) : .doNotRetry
            return try decide(after: failure, sent: request, verdict: verdict)
        }

        /// `RetryDecision` on the failed attempt, then `willRetry`.
        /// - Returns: how long to wait before the next attempt.
        /// - Throws: the error that ends the call.
        @inline(never)
        private func decide(after failure: AttemptFailure, sent request: PreparedRequest, verdict: RetryVerdict) throws
            -> Duration
        {
            let decision = RetryDecision(
                afterAttempt: attempts, of: service.configuration.maximumAttempts, method: request.head.method,
                failure: failure, verdict: verdict, policy: policy, now: service.configuration.clock.wallTime)
            switch decision {
            case .giveUp(let error):
                throw error
            case .retry(let delay):
                monitor.willRetry(event, after: delay, because: failure.error)
                return delay
            }
        }

        /// A failover during the attempt moves the retry to the new server.
        @inline(never)
        func failOver() throws {
            guard let pool, pool.current != server else { return }
            server = pool.current
            base = try service.prepare(
                method: method, path: path, parameters: parameters, options: options, on: server,
                acceptHeader: acceptHeader, sendsCredential: sendsCredential)
        }

        /// The call's error, after telling the monitors.
        @inline(never)
        func end(_ error: any Error) -> CourierError {
            let courier = CourierError.fromCall(error)
            let metrics = CallMetrics(attempts: attempts, duration: clock.now - started)
            monitor.didFinish(event, result: .failure(courier), metrics: metrics)
            return courier
        }
    }
}

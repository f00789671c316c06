import Foundation
import HTTPTypes

extension APIService {
    /// The state of one call across its attempts, and the synchronous steps of `perform`.
    ///
    /// `perform` keeps one of these and little else: an async function holds every value it
    /// keeps across an `await` in its frame, allocated for as long as the call is in flight
    /// (its frame was 6 KB when all of this lived there). The steps are not inlined, so their
    /// temporaries stay on the thread's stack. Used by the call's task only.
    final class CallRun {
        private let service: APIService
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

        /// Steps 1 and 2, and the monitors' `didStart`.
        /// - Throws: a bad server or path, or a request serializer's error (before `didStart`).
        @inline(never)
        init(
            _ service: APIService, method: HTTPRequest.Method, path: String, parameters: (any Encodable & Sendable)?,
            options: CallOptions, acceptHeader: String?, id: CallID
        ) throws {
            let configuration = service.configuration
            self.service = service
            self.options = options
            self.id = id
            self.method = method
            self.path = path
            self.parameters = parameters
            self.acceptHeader = acceptHeader
            clock = configuration.clock
            started = clock.now
            monitor = CompositeEventMonitor(configuration.monitors)
            pool = options.server == nil ? configuration.servers : nil
            server = try options.server ?? pool?.current ?? service.prepared.clientServer.get()
            base = try service.prepare(
                method: method, path: path, parameters: parameters, options: options, on: server,
                acceptHeader: acceptHeader)
            event = CallEvent(id: id, request: base.head, attempt: 0, userInfo: options.userInfo)
            chain = service.interceptors(for: options)
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
            let key = options.skipsWhileInFlight ? RequestIntervalGate.key(for: base.head) : nil
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
            var transportOptions = options.transport
            if let timeout = options.timeout { transportOptions.timeout = timeout }
            // The client stores every hop's cookies (a redirect's too) and sends the jar's on each.
            if transportOptions.cookieJar == nil { transportOptions.cookieJar = service.configuration.cookieJar }
            let credentialNames = service.prepared.credentialNames
            if !credentialNames.isEmpty { transportOptions.sensitiveHeaderNames.formUnion(credentialNames) }
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

        /// An attempt that ended without an answer to validate: its failover outcome.
        /// - Returns: what retriers see of it.
        /// - Throws: `error` when it carries a response (validation, preprocessing, decoding).
        @inline(never)
        func failed(_ error: CourierError) throws -> AttemptFailure {
            guard error.response == nil else { throw error }
            if error.code == .cannotConnect {
                pool?.record(.connectionFailure, for: server)
            } else if error.isTransient {
                pool?.record(.failure, for: server)
            }
            return AttemptFailure(error: error)
        }

        /// Before waiting for the next attempt: the attempt limit, then `willRetry`.
        /// - Throws: `error` when the call has had its last attempt.
        @inline(never)
        func willRetry(after delay: Duration, because error: CourierError) throws {
            // Whatever retriers say, a call ends after this many sends.
            guard attempts < service.configuration.maximumAttempts else { throw error }
            monitor.willRetry(event, after: delay, because: error)
        }

        /// A failover during the attempt moves the retry to the new server.
        @inline(never)
        func failOver() throws {
            guard let pool, pool.current != server else { return }
            server = pool.current
            base = try service.prepare(
                method: method, path: path, parameters: parameters, options: options, on: server,
                acceptHeader: acceptHeader)
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

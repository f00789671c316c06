import Foundation
import HTTPTypes
import Logging

extension ServiceCore {
    /// The state of one call across its attempts, and the synchronous steps of `perform`.
    ///
    /// `perform` keeps one of these and little else: an async function holds every value it
    /// keeps across an `await` in its frame, allocated for as long as the call is in flight
    /// (its frame was 6 KB when all of this lived there). The steps are not inlined, so their
    /// temporaries stay on the thread's stack. Used by the call's task only.
    final class CallRun {
        private let service: ServiceCore
        /// What the call worked out before its first attempt, shared with the calls after it
        /// that have the same inputs (`CallPlan`).
        private let plan: CallPlan
        let id: CallID
        /// When the call started, for its `CallMetrics`: read only when someone gets them (the
        /// monitors, or a call that keeps its response).
        private let started: ContinuousClock.Instant?
        /// The service's monitors; nil without any, and then no event is made.
        private let monitor: CompositeEventMonitor?
        /// The server and request after a failover moved the call (nil: the plan's).
        private var failedOver: FailedOver?
        /// What the monitors see of the call (nil without monitors).
        private var event: CallEvent?
        private var attempts = 0
        /// The authentication's session as the call found it (nil: no credential of the
        /// service's own): an attempt after a logout is refused, not sent with the credential
        /// of whoever logged in since.
        private let sessionEpoch: UInt64?
        /// The same for the client's own credential (`HTTPClient.logIn`): the client's session
        /// at the start (nil: a server that gets no credential), checked again when the client
        /// writes the credential into a transfer (`HTTPClient.prepare`).
        private let clientSession: UInt64?
        /// The endpoint key held in the in-flight guard, if the call holds one.
        private var guardKey: String?
        /// The call's parameters and body, kept for a failover, which encodes them again for
        /// its new server: nil without a server pool, or without either (two existential
        /// copies and releases a call fewer).
        private let inputs: Inputs?
        /// The response serializer's type, part of the identity.
        private let responseType: ObjectIdentifier
        private var computedIdentity: RequestIdentity?
        /// The names of the real-time parameters the current attempt carries: the cache's key
        /// leaves them out, as the identity does.
        private var realTimeNames: Set<String> = []
        /// What the service's own adapters wrote into the current attempt, digested
        /// (`RequestIdentity.adaptedHeadDigest`), for a GET that may share its transfer.
        private(set) var adaptedDigest: String?
        /// The credentials the service's own adapters wrote into the first attempt, digested
        /// (`RequestIdentity.adaptedCredentialDigest`): the user of the interval and the veto.
        private var adaptedUser: String?
        /// The failure of the attempt that just ended, for `prepareRetry`: kept here rather
        /// than in `perform`'s async frame, which lives as long as the call; boxed, made only
        /// when an attempt fails, to keep this object within malloc's per-thread cache sizes
        /// (see `outcome`).
        private var failure: FailedAttempt?
        /// The failure the call retries after, for the error of a streamed body it cannot send
        /// again (`fail(_:)`).
        private var retriedFailure: FailedAttempt?
        /// Set after an envelope asked for another attempt: the answer may have been cached
        /// (its headers allowed it), and the next attempt must not get it again.
        private var bypassesCache = false
        /// Set while offline for an attempt the cache may answer (`ServiceCore.cachedWhileOffline`).
        var answersFromCacheWhileOffline = false
        /// The fields the authentication wrote into the current attempt, when the service could
        /// not know them beforehand (`PreparedService.readsCredentialFieldsPerAttempt`): its
        /// transfers treat them as credential fields (dropped across origins, redacted, part of
        /// the cache identity).
        private var attemptCredentialNames: Set<HTTPField.Name> = []
        /// The same for its query items.
        private var attemptCredentialQueryNames: Set<String> = []
        /// The pool's environment at the start: a switch during the call does not move it while
        /// its server is listed (`failOver`).
        private let environment: ServerEnvironment?
        /// The pool's turn on the current attempt's server as the attempt started (`failOver`):
        /// the attempt's outcome counts only in that turn.
        private var poolTurn: UInt64 = 0
        /// The call's logger, spans and metrics (see `CallTelemetry`).
        private var telemetry: CallTelemetry
        /// Whether `telemetry` reports anything: a quiet call does not call it at all.
        private let reports: Bool
        /// What the registry cancels when the call runs in its caller's task (see `perform`).
        let scope: CancellationScope?
        /// Whether `finish` keeps what `response(_:)` needs: a verb wants the value only.
        private let keepsResponse: Bool
        /// The final answer, the request as last sent and the call's figures, when kept: in a
        /// box of its own, made only then. Inline, its 346 bytes took the call object past
        /// 1,032 bytes, malloc's per-thread cache limit, into its slower general path.
        private var outcome: KeptOutcome?

        /// The call's options, with the service's timeout when they name none.
        var options: CallOptions { plan.options }
        /// The endpoint's path, as the call was given it.
        var path: String { plan.path }
        var chain: InterceptorChain { plan.chain }
        /// Whether the call's server gets the credential: the API's own servers do, a per-call
        /// server on another origin only when the call opts in.
        var sendsCredential: Bool { plan.sendsCredential }
        var clock: any ServiceClock { service.configuration.clock }
        /// The request as the serializer leaves it, before adapters.
        var base: PreparedRequest { failedOver?.base ?? plan.base }
        private var server: BaseURL { failedOver?.server ?? plan.server }
        /// The client's and the service's live settings as the call found them at its start:
        /// every attempt uses these (`HTTPClient+Settings.swift`, `ServiceCore+Settings.swift`).
        private var clientSettings: HTTPClient.LiveSettings { plan.clientSettings }
        private var serviceSettings: LiveServiceSettings { plan.serviceSettings }

        /// The call's state, and the monitors' `didStart`.
        /// - Parameters:
        ///   - plan: the call's plan (`ServiceCore.plan`), made before: an initializer's
        ///     arguments are copied by its caller, and a plan is one reference.
        ///   - inputs: the call's parameters and body when a failover may encode them again.
        @inline(never)
        init(
            _ service: ServiceCore, plan: CallPlan, inputs: Inputs?, responseType: ObjectIdentifier, id: CallID,
            scope: CancellationScope?, keepsResponse: Bool
        ) {
            self.scope = scope
            self.keepsResponse = keepsResponse
            self.service = service
            self.plan = plan
            self.id = id
            self.responseType = responseType
            self.inputs = inputs
            monitor =
                service.configuration.monitors.isEmpty ? nil : CompositeEventMonitor(service.configuration.monitors)
            started = monitor != nil || keepsResponse ? service.configuration.clock.now : nil
            environment = plan.pool?.environment
            if monitor != nil {
                var event = CallEvent(id: id, request: plan.base.head, attempt: 0, userInfo: plan.options.userInfo)
                event.credentialFieldNames = service.prepared.credentialFieldNames
                event.credentialQueryNames = service.prepared.credentialQueryNames
                self.event = event
            } else {
                event = nil
            }
            let sendsCredential = plan.sendsCredential
            sessionEpoch = sendsCredential ? service.prepared.credentials?.sessionEpoch : nil
            clientSession = sendsCredential ? service.client.sessionGeneration : nil
            telemetry = CallTelemetry.start(
                client: service.client, service: service.configuration.name, server: plan.server.authority,
                options: plan.options, id: id,
                request: plan.base.head, credentialFieldNames: service.prepared.credentialFieldNames,
                credentialQueryNames: sendsCredential ? service.prepared.credentialQueryNames : [])
            reports = !telemetry.isQuiet
            if let monitor, let event { monitor.didStart(event) }
        }

        /// Step 3 without the interval: the veto, then the in-flight guard (after the first
        /// attempt's adapters when `gatesAfterAdapters`).
        /// - Throws: `CourierError.skipped`.
        @inline(never)
        func checkVetoAndEnter() throws {
            if let skipIf = options.skipIf, skipIf() {
                throw CourierError(.skipped, "the call was vetoed before sending")
            }
            guard !gatesAfterAdapters else { return }
            try enter()
        }

        /// Whether the request interval and the in-flight guard wait for the first attempt's
        /// adapters: a service whose own adapters write the app's current user (from a session
        /// store Courier cannot see) writes it after the identity, and one user's call held back
        /// the next user's. Never for a service without adapters of its own.
        var gatesAfterAdapters: Bool {
            service.prepared.hasOwnAdapters && (options.interval != nil || options.skipsWhileInFlight)
        }

        /// Whether the attempt under way is the call's first.
        var isFirstAttempt: Bool { attempts == 1 }

        /// The key of the request interval and the in-flight guard: the identity, with the
        /// credentials the service's own adapters wrote when they wrote any.
        var gateKey: String {
            guard let adaptedUser else { return identity.key }
            return identity.key + "\nadapted user: " + adaptedUser
        }

        /// Notes the credentials the service's own adapters wrote into the first attempt, for
        /// `gateKey`. The service's credential fields hold `Redaction.commonSecretHeaderNames`
        /// already (`CredentialScope.fieldNames(of:)`).
        @inline(never)
        func noteAdaptedUser(_ request: PreparedRequest) {
            adaptedUser = RequestIdentity.adaptedCredentialDigest(
                request.head, names: service.prepared.credentialFieldNames,
                queryNames: service.prepared.credentialQueryNames, leavingOut: realTimeNames)
        }

        /// The in-flight guard.
        /// - Throws: `CourierError.skipped` when the same call is in flight.
        @inline(never)
        func enter() throws {
            // The call's state is written only when the call holds the guard (each access to
            // it is checked for exclusivity at run time).
            guard options.skipsWhileInFlight else { return }
            let key = gateKey
            if !service.configuration.inFlightGuard.enter(key) {
                throw CourierError(.skipped, "the same call is already in flight")
            }
            guardKey = key
        }

        /// Releases the in-flight guard, if the call holds it.
        func leave() {
            guard let guardKey else { return }
            service.configuration.inFlightGuard.leave(guardKey)
            self.guardKey = nil
        }

        /// What makes this call the same request as another: computed once per server, on first
        /// use (a call that is neither de-duplicated nor gated never needs it). A failover makes
        /// it again: its URL names the server.
        var identity: RequestIdentity {
            if let computedIdentity { return computedIdentity }
            let made = makeIdentity()
            computedIdentity = made
            return made
        }

        /// The identity of the base request with the credential its attempts will carry.
        ///
        /// The plan keeps the identity of its last call with what changes from one of its calls
        /// to the next (the model type, the jar's cookies, the client's credential fields, the
        /// signing key): the next call that has the same takes it instead of building it again.
        /// The rest is the plan's (the base request, the client's default headers and the
        /// options of its settings snapshots) or the service's own (credential field names,
        /// client, jar). Never kept: a call moved to another server (failover: a request the
        /// plan did not make) or one with a `CredentialAuthentication` (which may write any field).
        @inline(never)
        private func makeIdentity() -> RequestIdentity {
            let client = service.client
            let defaults = clientSettings.settings.defaultHeaders
            // What the client adds to every hop belongs to the identity too: its default
            // headers (one client's Accept-Language is not another's) and its jar's cookies
            // (one user's session is not the next one's), unless the request or the default
            // headers carry a Cookie field of their own.
            var varying = RequestIdentity.Varying(responseType: responseType)
            if base.head.headerFields[.cookie] == nil, defaults[.cookie] == nil,
                let jar = service.configuration.cookieJar ?? client.cookieJar
            {
                varying.cookies = jar.cookieHeader(for: base.head)
            }
            let authentication = sendsCredential ? service.prepared.credentials : nil
            if sendsCredential {
                varying.authorization = client.authorizationFields()
                varying.signingKey = service.configuration.signer?.key(forEndpoint: path)
            }
            let keeps = failedOver == nil && authentication == nil
            if keeps, let kept = plan.identityMemo.withLock({ $0 }), kept.varying.isSame(as: varying) {
                return kept.identity
            }
            var request = base
            var credentialQuery: [(name: String, value: String)] = []
            request.head.headerFields.appendAbsent(defaults)
            if let cookies = varying.cookies { request.head.headerFields[.cookie] = cookies }
            if sendsCredential {
                request.head.headerFields.appendAbsent(varying.authorization)
                if let authentication {
                    // Its fields, and its query items as credential values (digested, never kept).
                    var applied = request.head
                    authentication.applyCurrent(to: &applied)
                    request.head.headerFields = applied.headerFields
                    // Those of a credential whose names are read per attempt, as its transfers read them.
                    let queryNames =
                        authentication.knowsItsFields
                        ? authentication.credentialQueryNames : authentication.currentNames().queryItems
                    credentialQuery = applied.queryItems(named: queryNames)
                }
            }
            // Adapters may decorate a call from its `userInfo` (its tenant), after the identity:
            // then its values are part of it (they are the plan's, as its options are).
            let decorated = service.prepared.hasOwnAdapters || !options.adapters.isEmpty
            // What the service's own adapters write is its user's: a service made from a copy of
            // its configuration (one interval table, one in-flight guard) may write another's.
            let identity = RequestIdentity(
                request: request, credentialQuery: credentialQuery,
                credentialFieldNames: service.prepared.credentialFieldNames,
                responseType: responseType, cachePolicy: options.cachePolicy, client: client.identityNumber,
                cookieJar: service.configuration.cookieJar?.identityNumber, signingKey: varying.signingKey,
                service: service.prepared.hasOwnAdapters ? service.identityNumber : nil,
                userInfo: decorated ? options.userInfo.appValuesText : nil)
            if keeps {
                let memo = RequestIdentity.Memo(varying: varying, identity: identity)
                plan.identityMemo.withLock { $0 = memo }
            }
            return identity
        }

        /// The request of the next attempt: the base request on the current server, with
        /// real-time parameters made now (a retry sends fresh ones).
        @inline(never)
        func attemptRequest() -> PreparedRequest {
            if !realTimeNames.isEmpty { realTimeNames = [] }
            guard options.includesGeneralParameters, let realTime = service.configuration.realTimeParameters else {
                return base
            }
            let items = realTime()
            guard !items.isEmpty else { return base }
            realTimeNames = Set(items.map(\.name))
            var request = base
            request.appendQuery(ServiceCore.encodeQuery(items))
            return request
        }

        /// Notes what the service's own adapters wrote into the current attempt: they write
        /// after the identity, and what they write may change while a GET is in flight (the app
        /// logged another user in); a GET that joined a transfer sent with the previous user's
        /// token got that user's answer.
        @inline(never)
        func noteAdapted(_ request: PreparedRequest) {
            adaptedDigest = RequestIdentity.adaptedHeadDigest(request.head, leavingOut: realTimeNames)
        }

        /// Counts an attempt.
        /// - Returns: what adapters and retriers see of it.
        /// - Throws: `CancellationError` when the task is cancelled; `CourierError.configuration`
        ///   for a call's timeout of zero or less.
        @inline(never)
        func beginAttempt() throws -> InterceptorContext {
            attempts += 1
            try Task.checkCancellation()
            if scope?.isCancelled == true { throw CancellationError() }
            try checkSession()
            // Checked and clamped as the transfer's (`ConfigurationBounds`): a wait for a refresh
            // bounded by a timeout of zero or less was not bounded at all.
            let timeout = try ConfigurationBounds.timeout(options.timeout, "request timeout")
            return InterceptorContext(
                callID: id, attempt: attempts, userInfo: options.userInfo,
                timeout: timeout ?? clientSettings.settings.timeout)
        }

        /// - Throws: `CourierError.authentication` when the session the call started in ended.
        func checkSession() throws(CourierError) {
            if let sessionEpoch, service.prepared.credentials?.sessionEpoch != sessionEpoch { throw .sessionEnded }
            if let clientSession, service.client.sessionGeneration != clientSession { throw .sessionEnded }
        }

        /// Whether the cache may answer the call's attempt without the network: a GET that
        /// reads the cache's fresh answers (`.useProtocolCachePolicy`, `.returnCacheDataElseLoad`).
        var mayBeAnsweredFromCache: Bool {
            base.head.method == .get && !bypassesCache
                && (options.cachePolicy == .useProtocolCachePolicy || options.cachePolicy == .returnCacheDataElseLoad)
        }

        /// The client's options for this call's transfers: the ones made at the start, with
        /// what the current attempt changes (real-time parameters, a cache to bypass).
        @inline(never)
        func requestOptions() -> RequestOptions {
            guard changesTransferOptions else { return transferOptions }
            var transportOptions = plan.transferOptions
            if bypassesCache, transportOptions.cachePolicy != .returnCacheDataDontLoad {
                transportOptions.cachePolicy = .reloadIgnoringCache
            }
            if !realTimeNames.isEmpty { transportOptions.realTimeQueryNames = realTimeNames }
            if !attemptCredentialNames.isEmpty {
                transportOptions.sensitiveHeaderNames.formUnion(attemptCredentialNames)
            }
            if !attemptCredentialQueryNames.isEmpty {
                transportOptions.credentialQueryNames.formUnion(attemptCredentialQueryNames)
            }
            return transportOptions
        }

        /// Whether the current attempt's transfer options differ from `transferOptions`: a
        /// call without these sends `transferOptions` as they are, not a copy of them.
        var changesTransferOptions: Bool {
            bypassesCache || !realTimeNames.isEmpty || !attemptCredentialNames.isEmpty
                || !attemptCredentialQueryNames.isEmpty
        }

        /// Reads the fields the authentication writes for its current credential, for a service
        /// that could not know them beforehand (a credential of another type than `String`):
        /// before, they were no credential fields, and a redirect carried them to another origin.
        @inline(never)
        func readCredentialFields() {
            guard let credentials = service.prepared.credentials else { return }
            // Those the client and the service know already need nothing more.
            let names = credentials.currentNames()
            attemptCredentialNames = names.fields.subtracting(service.prepared.credentialFieldNames)
            attemptCredentialQueryNames = names.queryItems.subtracting(service.prepared.credentialQueryNames)
        }

        /// The client's options for this call's transfers, as the call's plan made them.
        var transferOptions: RequestOptions { plan.transferOptions }

        /// What the call gives its transfers besides their options: its logger unless it is the
        /// client's unchanged (the transfers fall back to it), and its scope. A transfer this
        /// call shares with identical calls (de-duplication) is still this call's own: it runs
        /// in this call's task, and when this call is cancelled, the others start again.
        func transferContext() -> TransferContext {
            TransferContext(scope: scope, logger: telemetry.logger, session: clientSession)
        }

        /// The jar's cookies, then the monitors' `willSend`.
        @inline(never)
        func willSend(_ request: inout PreparedRequest) {
            service.configuration.cookieJar?.apply(to: &request.head)
            if reports {
                telemetry.willSend(&request, attempt: attempts, credentialQueryNames: attemptCredentialQueryNames)
            }
            guard let monitor, var event else { return }
            // Released from the property while it changes: one copy of the request, not two.
            self.event = nil
            event.request = request.head
            event.attempt = attempts
            if !attemptCredentialNames.isEmpty { event.credentialFieldNames.formUnion(attemptCredentialNames) }
            if !attemptCredentialQueryNames.isEmpty {
                event.credentialQueryNames.formUnion(attemptCredentialQueryNames)
            }
            event.networkStatus = service.configuration.networkStatus?.current
            monitor.willSend(event)
            self.event = event
        }

        /// Steps 5 and 7 for an answer: failover outcome, `didReceive`, validation, decoding,
        /// `didFinish`.
        /// - Throws: `CourierError.httpStatus` for a refused status, `.apiError` for an envelope
        ///   asking for a retry or a refresh (attempts to retry), or what validation, the
        ///   envelope, preprocessing or decoding threw.
        /// - Returns: the value; what `response(_:)` adds to it is kept when the call wants it.
        @inline(never)
        func finish<Serializer: ResponseSerializer>(
            _ answer: HTTPClient.Response, request: PreparedRequest, serializer: Serializer
        ) throws -> Serializer.Output {
            if let pool = plan.pool {
                // What the server did: a fresh hit asked it nothing, and a stale answer served
                // on its failure is that failure (it counted as a success, and hid it).
                switch answer.serverOutcome {
                case .answered:
                    pool.record(answer.head.status.code >= 500 ? .failure : .success, for: server, turn: poolTurn)
                case .failed(let outcome): pool.record(outcome, for: server, turn: poolTurn)
                case .notAsked: break
                }
            }
            if let monitor, let event { monitor.didReceive(event, response: answer.head) }
            var context = ResponseContext(request: request.head, response: answer.head, body: answer.body)
            try plan.validator.validate(context, serializerContentTypes: serializer.acceptableContentTypes)
            // The body-level outcome: a retry or refresh code fails the attempt as a status would.
            if !options.keepsAnswerAsItCame, let envelope = service.configuration.envelope {
                do {
                    context = try envelope.unwrap(
                        context.strippingXSSIPrefixes(service.configuration.pipeline.preprocessors)
                            .strippingXSSIPrefixes(options.preprocessors))
                } catch {
                    // A failure the body reports is an error, not an answer to keep: the cache
                    // stored it before it was read (`refused` does the same for a retry code).
                    if !error.isEnvelopeRetry { forgetCached(answer, sent: request) }
                    throw error
                }
            }
            let value = try service.decode(context, serializer: serializer, options: options)
            let metrics = started.map {
                CallMetrics(
                    attempts: attempts, duration: clock.now - $0, isFromCache: answer.isFromCache,
                    responseBytes: answer.body.count, transfer: answer.metrics)
            }
            if let monitor, let event, let metrics {
                monitor.didFinish(event, result: .success(answer.head), metrics: metrics)
            }
            if reports {
                telemetry.finished(
                    status: Int(answer.head.status.code), attempts: attempts, request: request,
                    responseBytes: answer.body.count, isFromCache: answer.isFromCache,
                    cache: service.client.configuration.cache)
            }
            if keepsResponse, let metrics {
                outcome = KeptOutcome(answer: answer, request: request.head, metrics: metrics)
            }
            return value
        }

        /// An answer's outcome: `finish`, or `AnswerRefused` when the call refuses the answer (a
        /// status, a response check, an envelope asking for a retry or a refresh), with the
        /// attempt's failure kept for `prepareRetry`. Apart from `perform`, so that the errors
        /// it catches are not kept in that async frame, which lives as long as the call. A
        /// thrown marker rather than an optional value: the value's optional type would be
        /// looked up (generic metadata) on every call, where the marker costs only a refusal.
        /// - Throws: `AnswerRefused`, or what fails the attempt otherwise (decoding, a check
        ///   that is not retryable, …).
        @inline(never)
        func conclude<Serializer: ResponseSerializer>(
            _ answer: HTTPClient.Response, request: PreparedRequest, serializer: Serializer
        ) throws -> Serializer.Output {
            do {
                return try finish(answer, request: request, serializer: serializer)
            } catch let error as CourierError
                where error.code == .httpStatus || error.refusalIsRetryable != nil || error.isEnvelopeRetry
            {
                failure = FailedAttempt(refused(answer, sent: request, error: error))
                throw AnswerRefused()
            }
        }

        /// The call's value with the response, metrics and attempts of its end; for a call
        /// made with `keepsResponse` that finished.
        func response<Model>(_ value: Model) -> Response<Model> {
            guard let outcome else {
                preconditionFailure("a call's response is asked before it finished, or was not kept")
            }
            let (answer, request, metrics) = (outcome.answer, outcome.request, outcome.metrics)
            var response = Response(
                value: value, response: answer.head, body: answer.body, request: request,
                isFromCache: answer.isFromCache, transferMetrics: answer.metrics, metrics: metrics, callID: id)
            response.isStale = answer.isStale
            return response
        }

        /// An answer whose status the call refuses, or that a response check refused, as
        /// retriers see it.
        @inline(never)
        func refused(_ answer: HTTPClient.Response, sent request: PreparedRequest, error: CourierError)
            -> AttemptFailure
        {
            if reports { telemetry.endAttempt(status: Int(answer.head.status.code), error: error) }
            var failure = AttemptFailure(response: answer.head, body: answer.body, error: error)
            failure.isRetryableRefusal = error.refusalIsRetryable == true
            // The cache stored this answer before it was refused (a check, or an envelope asking
            // for a retry or a refresh): neither the retry nor the next call may be served it.
            if error.refusalIsRetryable != nil || error.isEnvelopeRetry {
                forgetCached(answer, sent: request)
                bypassesCache = true
            }
            if answer.redirectCount > 0, let scheme = request.head.scheme, let authority = request.head.authority {
                failure.isFromAnotherOrigin = Origin(answer.url) != Origin(scheme: scheme, authority: authority)
            }
            return failure
        }

        /// Drops an answer a response check refused from the client's cache, which stored it
        /// before validation: the retry, and the next call, ask the server again.
        @inline(never)
        private func forgetCached(_ answer: HTTPClient.Response, sent request: PreparedRequest) {
            guard let cache = service.client.configuration.cache, request.head.method == .get else { return }
            // Under the URL the cache keyed it: without this attempt's real-time parameters, and
            // with its credential's query items as digests.
            let names = realTimeNames
            let secretNames = requestOptions().credentialQueryNames
            if let scheme = request.head.scheme, let authority = request.head.authority, let path = request.head.path {
                cache.invalidate(
                    url: CacheRequest.removingQueryItems(named: names, from: scheme + "://" + authority + path),
                    secretQueryNames: secretNames)
            }
            cache.invalidate(
                url: CacheRequest.removingQueryItems(named: names, from: answer.url.absoluteString),
                secretQueryNames: secretNames)
        }

        /// What an attempt threw: a `CourierError` fails the attempt (`failed(_:)`, kept for
        /// `prepareRetry`), any other error (a cancellation) ends the call. Out of line, so
        /// that the error read from the existential is not kept in `perform`'s async frame.
        /// - Throws: `error` when it is not a `CourierError`.
        @inline(never)
        func fail(_ error: any Error) throws {
            // Refused by `conclude`, which kept the attempt's failure.
            if error is AnswerRefused { return }
            // The call's rule while offline ended it (`ServiceCore.cachedWhileOffline`).
            if let refusal = error as? OfflineRefusal { throw refusal.error }
            guard var courier = error as? CourierError else { throw error }
            // A streamed body the retry could not send again: the error names why it was retried.
            if courier.isStreamedBodyResent, let cause = retriedFailure?.failure.error {
                courier = courier.resent(after: cause)
            }
            failure = FailedAttempt(failed(courier))
        }

        /// An attempt that ended without an answer to validate: its failover outcome.
        /// - Returns: what retriers and `RetryDecision` see of it.
        @inline(never)
        func failed(_ error: CourierError) -> AttemptFailure {
            if reports { telemetry.endAttempt(status: error.response.map { Int($0.status.code) }, error: error) }
            // An error that carries a response (validation, preprocessing, decoding) came from
            // an answer: the server was reached, and `RetryDecision` ends the call with it.
            if error.response == nil {
                if error.isConnectionFailure {
                    plan.pool?.record(.connectionFailure, for: server, turn: poolTurn)
                } else if error.isTransient {
                    plan.pool?.record(.failure, for: server, turn: poolTurn)
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
            let chain = self.chain
            let verdict: RetryVerdict =
                RetryDecision.asksRetriers(after: failure)
                ? try await CancellationScope.run(in: scope) {
                    await chain.retry(request, failure: failure, context: context)
                } : .doNotRetry
            return try decide(after: failure, sent: request, verdict: verdict)
        }

        /// Step 6 whole, for the attempt that failed (`failure`): the verdict and the decision
        /// (`retryDelay`), then the wait on the service clock. The next attempt goes to the
        /// server the pool is on when it starts (`failOver`).
        ///
        /// Its own async frame: the values of a retry are not kept in `perform`'s, which every
        /// call in flight holds for as long as it waits for its answer.
        /// - Throws: the error that ends the call.
        @inline(never)
        func prepareRetry(sent request: PreparedRequest, context: InterceptorContext) async throws {
            guard let kept = self.failure else {
                preconditionFailure("a retry is prepared for an attempt that did not fail")
            }
            let failure = kept.failure
            self.failure = nil
            retriedFailure = kept
            let delay = try await retryDelay(after: failure, sent: request, context: context)
            let clock = self.clock
            try await CancellationScope.run(in: scope) { try await clock.sleep(for: delay) }
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
                failure: failure, verdict: verdict, policy: options.retryPolicy ?? serviceSettings.settings.retryPolicy,
                now: service.configuration.clock.wallTime)
            switch decision {
            case .giveUp(let error):
                throw error
            case .retry(let delay):
                if let monitor, let event { monitor.willRetry(event, after: delay, because: failure.error) }
                if reports { telemetry.willRetry(after: delay, because: failure.error) }
                return delay
            }
        }

        /// Each attempt, the first included, goes to the server the pool is on as it starts: a
        /// failover (or the app's `select`) while the call waited — for its interval, the network,
        /// a retry's back-off — moves it.
        @inline(never)
        func failOver() throws {
            guard let pool = plan.pool else { return }
            let (server, turn) = pool.currentTurn
            poolTurn = turn
            guard server != self.server else { return }
            // An environment switch does not move the call while its server is listed. A call
            // that started with none (the first `setServers` names the pool's environment) has
            // none to keep, and a server listed nowhere any more is not the API's own: it would
            // get the credential still.
            guard pool.environment == environment || environment == nil || !pool.lists(self.server) else { return }
            let base = try service.prepare(
                method: plan.method, path: plan.path, parameters: inputs?.parameters, body: inputs?.body,
                options: plan.options, on: server, acceptHeader: plan.acceptHeader,
                sendsCredential: plan.sendsCredential, headers: serviceSettings.settings.headers)
            failedOver = FailedOver(server: server, base: base)
            // The identity named the server left: a retry that kept it shared the transfer of a
            // call still in flight there. The gates keep the key they admitted (`guardKey`).
            computedIdentity = nil
        }

        /// `end(_:)`, boxed here: the `CourierError` is not kept in `perform`'s async frame.
        @inline(never)
        func ending(_ error: any Error) -> any Error { end(error) }

        /// The call's error, mapped (`ErrorMapping.swift`), after telling the monitors.
        @inline(never)
        func end(_ error: any Error) -> CourierError {
            let courier = service.mapped(CourierError.fromCall(error), options: options)
            if let monitor, let event, let started {
                monitor.didFinish(
                    event, result: .failure(courier),
                    metrics: CallMetrics(attempts: attempts, duration: clock.now - started))
            }
            if reports { telemetry.failed(courier, attempts: attempts) }
            return courier
        }
    }

    /// What `CallRun.conclude` throws for an answer the call refused: the attempt's failure
    /// is kept by the call, for `prepareRetry`.
    struct AnswerRefused: Error {}

    /// The server and request of a call that a failover moved.
    struct FailedOver {
        let server: BaseURL
        let base: PreparedRequest
    }

    /// A call's parameters and body, kept by its `CallRun` for a failover (see `inputs`).
    final class Inputs {
        let parameters: (any Encodable & Sendable)?
        let body: (any Encodable & Sendable)?

        init(_ parameters: (any Encodable & Sendable)?, _ body: (any Encodable & Sendable)?) {
            self.parameters = parameters
            self.body = body
        }
    }

    /// An attempt's failure, kept by its `CallRun` until the retry is prepared.
    final class FailedAttempt {
        let failure: AttemptFailure

        init(_ failure: AttemptFailure) { self.failure = failure }
    }

    /// What a call that keeps its response keeps of its end (see `CallRun.outcome`).
    final class KeptOutcome {
        let answer: HTTPClient.Response
        let request: HTTPRequest
        let metrics: CallMetrics

        init(answer: HTTPClient.Response, request: HTTPRequest, metrics: CallMetrics) {
            self.answer = answer
            self.request = request
            self.metrics = metrics
        }
    }
}

import HTTPTypes

/// What a call works out before its first attempt from its method, path, format and options
/// and from the client's and the service's settings (and, for a call with a server of its
/// own, the servers of the service's pool), and nothing else: its options with the
/// service's timeout, its server, whether that server gets the credential, the request as
/// the serializer leaves it, its interceptors, its validator and the options of its transfers.
///
/// Made once and reused by the calls after it with the same inputs (`CallPlanCache`): a call
/// to an endpoint an app calls over and over looks its plan up instead of making it again,
/// and keeps one reference to it instead of a copy of each value. A call with parameters or a
/// body (the request depends on them), or on a server pool (its server moves), makes a plan of
/// its own, which no other call uses.
///
/// Immutable but for its identity memo. A plan holds what its inputs are compared by (the options' storage, the two
/// settings snapshots), so none of them can be freed and its address reused while it is kept.
final class CallPlan: Sendable {
    let method: HTTPRequest.Method
    let path: String
    let acceptHeader: String?
    /// The options as the call gave them: compared by their storage's identity.
    private let given: CallOptions
    let clientSettings: HTTPClient.LiveSettings
    let serviceSettings: LiveServiceSettings
    /// The call's options, with the service's timeout when they name none.
    let options: CallOptions
    /// The service's pool, for a call without a server of its own.
    let pool: ServerPool?
    /// For a call with a server of its own on a service with a pool: the pool's
    /// `originsVersion` before `sendsCredential` read its origins. A server the pool no longer
    /// lists is not the API's own any more, and one it lists since is.
    let poolOriginsVersion: UInt64?
    /// The server the request is made for: the call's, else the pool's current one when the
    /// plan was made, else the client's base URL.
    let server: BaseURL
    /// Whether the call's server gets the credential: the API's own servers do, a per-call
    /// server on another origin only when the call opts in.
    let sendsCredential: Bool
    /// The request as the serializer leaves it, before real-time parameters and adapters.
    let base: PreparedRequest
    let chain: InterceptorChain
    let validator: ResponseValidator
    /// The client's options for the call's transfers, without the call's cancellation scope
    /// and logger (each call sets its own).
    let transferOptions: RequestOptions
    /// The identity of the plan's last call that needed one, with what it was made from
    /// (`CallRun.makeIdentity`): the only thing in a plan that changes.
    let identityMemo = LockedValue<RequestIdentity.Memo?>(nil)

    /// Steps 1 and 2 of a call (`ServiceCore.perform`).
    /// - Throws: a bad server or path, or a request serializer's error.
    @inline(never)
    init(
        _ service: ServiceCore, method: HTTPRequest.Method, path: String, parameters: (any Encodable & Sendable)?,
        body: (any Encodable & Sendable)?, options given: CallOptions, acceptHeader: String?,
        clientSettings: HTTPClient.LiveSettings, serviceSettings: LiveServiceSettings, pool: ServerPool?,
        poolOriginsVersion: UInt64? = nil
    ) throws {
        self.method = method
        self.path = path
        self.acceptHeader = acceptHeader
        self.given = given
        self.clientSettings = clientSettings
        self.serviceSettings = serviceSettings
        var options = given
        if options.timeout == nil, let timeout = serviceSettings.settings.timeout { options.timeout = timeout }
        self.options = options
        let callServer = try options.validatedServer()
        self.pool = pool
        self.poolOriginsVersion = poolOriginsVersion
        let server = try callServer ?? pool?.currentServer ?? clientSettings.server.get()
        self.server = server
        let sendsCredential =
            callServer.map {
                options.sendsCredentialToServer || service.isOwn($0, clientOrigin: clientSettings.origin)
            } ?? true
        self.sendsCredential = sendsCredential
        base = try service.prepare(
            method: method, path: path, parameters: parameters, body: body, options: options, on: server,
            acceptHeader: acceptHeader, sendsCredential: sendsCredential, headers: serviceSettings.settings.headers,
            headersWithAccept: serviceSettings.headersWithAccept)
        chain = service.interceptors(for: options, sendsCredential: sendsCredential)
        validator = options.validator ?? service.configuration.pipeline.validator
        var transferOptions = options.requestOptions
        // The client stores every hop's cookies (a redirect's too) and sends the jar's on each.
        if transferOptions.cookieJar == nil { transferOptions.cookieJar = service.configuration.cookieJar }
        // The service knows its servers: it decides whether the client adds its credential,
        // and which fields besides the client's carry one (dropped across origins).
        transferOptions.sendsCredential = sendsCredential
        transferOptions.clientSettings = clientSettings
        let extra = service.prepared.extraCredentialNames
        if !extra.isEmpty { transferOptions.sensitiveHeaderNames.formUnion(extra) }
        let queryNames = service.prepared.credentialQueryNames
        if sendsCredential, !queryNames.isEmpty { transferOptions.credentialQueryNames = queryNames }
        self.transferOptions = transferOptions
    }

    /// Whether `other` was made from the same inputs (two calls that missed at once).
    func hasInputs(of other: CallPlan) -> Bool {
        fits(
            other.method, other.path, other.acceptHeader, other.given, other.clientSettings, other.serviceSettings,
            other.poolOriginsVersion)
    }

    /// Whether a call with these inputs can use this plan.
    func fits(
        _ method: HTTPRequest.Method, _ path: String, _ acceptHeader: String?, _ options: CallOptions,
        _ clientSettings: HTTPClient.LiveSettings, _ serviceSettings: LiveServiceSettings,
        _ poolOriginsVersion: UInt64?
    ) -> Bool {
        self.clientSettings === clientSettings && self.serviceSettings === serviceSettings
            && given.storageIdentity == options.storageIdentity && self.poolOriginsVersion == poolOriginsVersion
            && self.method == method
            && RequestHeadCache.same(self.path, path) && Self.same(self.acceptHeader, acceptHeader)
    }

    /// The same bytes, or both absent.
    private static func same(_ one: String?, _ other: String?) -> Bool {
        switch (one, other) {
        case (nil, nil): true
        case (let one?, let other?): RequestHeadCache.same(one, other)
        default: false
        }
    }
}

/// The plans a service made last, for the calls after them (see `CallPlan`).
///
/// A few entries. A plan is kept only for options a call used before and that are still
/// alive (a weak reference to their storage, kept from that call): options made anew for each
/// call never are, so a plan never keeps their closures and the objects those capture alive
/// after the call, and they do not push out the plans of the endpoints called over and over.
/// A new plan replaces one that no call used after it was made; when every plan was used, they
/// all count as unused again.
final class CallPlanCache: Sendable {
    /// The most plans kept, and the most options remembered as seen.
    static let capacity = 16

    private struct Seen {
        weak var storage: (any AnyObject & Sendable)?
    }

    private struct Entries {
        var plans: [CallPlan] = []
        /// Whether a call used the plan at the same index since the hand last passed it.
        var used: [Bool] = []
        var hand = 0
        /// The options of the last calls that made a plan and did not keep it, weakly.
        var seen: [Seen] = []
        var nextSeen = 0
    }

    private let entries = LockedValue(Entries())

    init() {}

    /// The plan for these inputs, if one is kept.
    func plan(
        _ method: HTTPRequest.Method, _ path: String, _ acceptHeader: String?, _ options: CallOptions,
        _ clientSettings: HTTPClient.LiveSettings, _ serviceSettings: LiveServiceSettings,
        poolOriginsVersion: UInt64? = nil
    ) -> CallPlan? {
        entries.withLock { entries in
            for index in entries.plans.indices
            where entries.plans[index].fits(
                method, path, acceptHeader, options, clientSettings, serviceSettings, poolOriginsVersion)
            {
                entries.used[index] = true
                return entries.plans[index]
            }
            return nil
        }
    }

    /// Keeps `plan` when a call used its options before and they are still alive, in place of
    /// one not used lately when every entry is taken; otherwise remembers the options, weakly.
    func keep(_ plan: CallPlan, options: CallOptions) {
        let storage = options.storageObject
        // The default options live as long as the process: kept at once, and never referred
        // to weakly (a weak reference gives its object a side table for good).
        let isDefault = options.isDefault
        // Returned, so that a replaced plan is released after the lock.
        _ = entries.withLock { entries -> CallPlan? in
            guard isDefault || entries.seen.contains(where: { $0.storage === storage }) else {
                if entries.seen.count < Self.capacity {
                    entries.seen.append(Seen(storage: storage))
                } else {
                    entries.seen[entries.nextSeen] = Seen(storage: storage)
                    entries.nextSeen = (entries.nextSeen + 1) % Self.capacity
                }
                return nil
            }
            // Two calls that missed at once made the same plan: one is enough.
            guard !entries.plans.contains(where: { $0.hasInputs(of: plan) }) else { return nil }
            guard entries.plans.count == Self.capacity else {
                entries.plans.append(plan)
                entries.used.append(false)
                return nil
            }
            // The first plan no call used, from the hand on; when every plan was used, every
            // one starts over as unused and the hand's is replaced.
            let start = entries.hand
            var index = start
            while entries.used[index] {
                index = (index + 1) % Self.capacity
                if index == start {
                    entries.used = Array(repeating: false, count: Self.capacity)
                    break
                }
            }
            let replaced = entries.plans[index]
            entries.plans[index] = plan
            entries.used[index] = false
            entries.hand = (index + 1) % Self.capacity
            return replaced
        }
    }

    /// The number of plans kept (for tests).
    var count: Int { entries.withLock { $0.plans.count } }

    /// The plans kept (for tests).
    var kept: [CallPlan] { entries.withLock { $0.plans } }
}

extension ServiceCore {
    /// The plan of a call: a kept one when a call with the same inputs made it, else a new one
    /// (kept when later calls can use it).
    /// - Throws: a bad server or path, or a request serializer's error.
    func plan(
        method: HTTPRequest.Method, path: String, parameters: (any Encodable & Sendable)?,
        body: (any Encodable & Sendable)?, options: CallOptions, acceptHeader: String?
    ) throws -> CallPlan {
        let clientSettings = client.liveSettings
        let serviceSettings = live.withLock { $0 }
        // `if case`, not `== nil`: the optional's `==` copies and compares two URLs.
        let pool: ServerPool?
        if case .none = options.server { pool = configuration.servers } else { pool = nil }
        // A request made from parameters or a body, or for a pool's current server, is the
        // call's own.
        guard parameters == nil, body == nil, pool == nil else {
            return try CallPlan(
                self, method: method, path: path, parameters: parameters, body: body, options: options,
                acceptHeader: acceptHeader, clientSettings: clientSettings, serviceSettings: serviceSettings,
                pool: pool)
        }
        // A call with a server of its own on a service with a pool: whether that server gets the
        // credential depends on the pool's servers, which `setServers` can change.
        let poolOriginsVersion = configuration.servers?.originsVersion
        if let kept = prepared.plans.plan(
            method, path, acceptHeader, options, clientSettings, serviceSettings,
            poolOriginsVersion: poolOriginsVersion)
        {
            return kept
        }
        let plan = try CallPlan(
            self, method: method, path: path, parameters: nil, body: nil, options: options,
            acceptHeader: acceptHeader, clientSettings: clientSettings, serviceSettings: serviceSettings, pool: nil,
            poolOriginsVersion: poolOriginsVersion)
        prepared.plans.keep(plan, options: options)
        return plan
    }
}

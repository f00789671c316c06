extension ServiceCore {
    /// Before an attempt: while the service's status source says offline, fail at once, wait
    /// for the network (up to a limit, on the service's clock), or go on, as the call or the
    /// service says; a call that reads the cache only always goes on, and a GET the cache may
    /// answer asks it first (`cachedWhileOffline`).
    /// - Throws: `CourierError.offline`, `.authentication` when the call's session ended during
    ///   the wait, or `CancellationError`.
    @inline(never)
    func awaitNetwork(for call: CallRun) async throws {
        guard let source = configuration.networkStatus else { return }
        let status = source.current
        guard !status.isOnline else { return }
        // A call that reads the client's cache only sends nothing: it is answered (or is
        // `.notCached`) whatever the network.
        guard client.configuration.cache == nil || call.options.cachePolicy != .returnCacheDataDontLoad else { return }
        if case .proceed = call.options.whenOffline ?? configuration.whenOffline { return }
        // A fresh cached answer sends nothing either: the attempt asks the cache first, once
        // its adapters have written the credential its entry is kept under.
        if client.configuration.cache != nil, call.mayBeAnsweredFromCache {
            call.answersFromCacheWhileOffline = true
            return
        }
        try await holdWhileOffline(for: call)
        // The adapters write the credential after the wait: not that of a session logged in
        // during it.
        try call.checkSession()
    }

    /// The attempt of a GET whose cache may hold a fresh answer, while offline: the cache's
    /// fresh answer (nothing is sent), or nil once the call's rule let it go on (the network
    /// came back); a stale or missing entry follows the rule, as a call without one does.
    /// - Throws: `OfflineRefusal` when the rule ends the call (it ends it, never an attempt to
    ///   retry), or what the cache threw.
    @inline(never)
    func cachedWhileOffline(_ request: PreparedRequest, for call: CallRun) async throws -> HTTPClient.Response? {
        call.answersFromCacheWhileOffline = false
        // Conditions of the caller's own ask the server about the version the caller holds.
        if !CacheRequest.hasOwnConditions(request.head.headerFields) {
            var options = call.requestOptions()
            options.onlyIfCached = true
            do {
                return try await client.send(
                    request.head, body: request.body, options: options, context: call.transferContext())
            } catch let error as CourierError where error.code == .notCached {
                // Nothing fresh: the rule decides.
            } catch is CancellationError {
                throw CourierError(.cancelled, "the call was cancelled in flight")
            }
        }
        do {
            try await holdWhileOffline(for: call)
            // The request was made before the wait: not sent with the credential of a session
            // that ended during it.
            try call.checkSession()
        } catch let error as CourierError {
            throw OfflineRefusal(error: error)
        }
        return nil
    }

    /// The call's rule while offline, `.proceed` aside: fail at once, or wait for the network.
    /// - Throws: `CourierError.offline`, or `CancellationError`.
    private func holdWhileOffline(for call: CallRun) async throws {
        guard let source = configuration.networkStatus, !source.current.isOnline else { return }
        switch call.options.whenOffline ?? configuration.whenOffline {
        case .proceed:
            return
        case .fail:
            throw CourierError(.offline, "the network is offline; the call was not sent")
        case .wait(let limit):
            // In a task the registry's cancel reaches (`CancellationScope.run`), as every other
            // wait of a call that runs in its caller's task.
            let clock = call.clock
            let online = try await CancellationScope.run(in: call.scope) {
                try await Self.waitForOnline(source, upTo: limit, clock: clock)
            }
            // A source whose sequence never told (nor the status now, as it should) may say
            // online now: the status at the limit decides, not the silence before it.
            guard online || source.current.isOnline else {
                throw CourierError(.offline, "the network stayed offline for \(limit); the call was not sent")
            }
        }
    }

    /// What ends a call while offline from within an attempt (`cachedWhileOffline`): the
    /// call's error, not an attempt's failure for the retriers.
    struct OfflineRefusal: Error {
        let error: CourierError
    }

    /// Waits until `source` reports online, or until `limit` passed on `clock`.
    /// - Returns: whether the network came back in time.
    /// - Throws: `CancellationError` when the caller is cancelled.
    static func waitForOnline(_ source: any NetworkStatusSource, upTo limit: Duration, clock: any ServiceClock)
        async throws -> Bool
    {
        let online = await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                // The sequence starts with the status now: a change since the caller looked is not lost.
                for await status in source.statuses() where status.isOnline { return true }
                return nil
            }
            group.addTask {
                do {
                    try await clock.sleep(for: limit)
                    return false
                } catch {
                    return nil
                }
            }
            // The first definite answer; a source that ends without one leaves the deadline to decide.
            var answer: Bool?
            while answer == nil, let next = await group.next() {
                answer = next
            }
            group.cancelAll()
            return answer ?? false
        }
        try Task.checkCancellation()
        return online
    }
}

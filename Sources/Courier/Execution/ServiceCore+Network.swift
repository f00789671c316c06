extension ServiceCore {
    /// Before an attempt: while the service's status source says offline, fail at once, wait
    /// for the network (up to a limit, on the service's clock), or go on, as the call or the
    /// service says; a call that reads the cache only always goes on.
    /// - Throws: `CourierError.offline`, or `CancellationError`.
    @inline(never)
    func awaitNetwork(for call: CallRun) async throws {
        guard let source = configuration.networkStatus else { return }
        let status = source.current
        guard !status.isOnline else { return }
        // A call that reads the client's cache only sends nothing: it is answered (or is
        // `.notCached`) whatever the network.
        if call.options.cachePolicy == .returnCacheDataDontLoad, client.configuration.cache != nil { return }
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

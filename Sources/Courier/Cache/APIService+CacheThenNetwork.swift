import Dispatch

extension APIService {
    /// The cached answer at once, then the server's: for a screen that shows what it had
    /// while it asks for what is new.
    ///
    /// The sequence has at most two values. First, when the client's cache holds an entry for
    /// the request (its host has a rule, the entry belongs to this user), that entry, decoded,
    /// with `isFromCache` set, stale or not (`isStale` tells; pass `allowingStale: false` to
    /// skip a stale one); it is read without the network, so it comes even while offline.
    /// Then the network's answer (revalidated when the entry has validators: a 304 gives the
    /// entry again, with `isFromCache` set), which the cache stores as usual. When the network
    /// fails, the sequence throws that `CourierError` after the cached value, which the caller
    /// keeps; stale-if-error does not apply to the second value (the first one is the stale
    /// answer).
    ///
    /// ```swift
    /// for try await feed in service.cacheThenNetwork(.get("feed", as: Feed.self)) {
    ///     show(feed.value, cached: feed.isFromCache)
    /// }
    /// ```
    /// Only GET reads the cache; another method yields the network's answer alone. Gates
    /// (interval, veto, in-flight guard) and the offline rule apply to the network call only.
    /// Cancelling the consuming task cancels both calls.
    /// - Parameters:
    ///   - endpoint: the request; its cache policy is replaced for each of the two calls.
    ///   - allowingStale: whether a cached entry past its freshness is yielded.
    /// - Returns: the cached response (if any), then the network's.
    public func cacheThenNetwork<Model: Decodable & Sendable>(
        _ endpoint: Endpoint<Model>, allowingStale: Bool = true
    ) -> AsyncThrowingStream<Response<Model>, any Error> {
        let core = self.core
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Response<Model>.self)
        let task = Task {
            if let cached = await core.cachedAnswer(endpoint, allowingStale: allowingStale) {
                continuation.yield(cached)
            }
            do {
                continuation.yield(try await core.send(core.networkCall(endpoint)))
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// `cacheThenNetwork(_:allowingStale:)` for code that is not async: `handler` runs once
    /// with the cached response (if any), then once with the network's response or error.
    /// - Parameters:
    ///   - endpoint: the request.
    ///   - allowingStale: whether a cached entry past its freshness is delivered.
    ///   - queue: where `handler` runs (nil: the service's `callbackQueue`); on a concurrent
    ///     queue too, the second result waits until the handler has returned from the first.
    ///   - handler: gets each result in order.
    /// - Returns: the task running both calls; cancel it to stop them (the handler then gets
    ///   `CourierError.cancelled` as the network's result, unless that result came first).
    @discardableResult
    public func cacheThenNetwork<Model: Decodable & Sendable>(
        _ endpoint: Endpoint<Model>, allowingStale: Bool = true, deliveringOn queue: DispatchQueue? = nil,
        _ handler: @escaping @Sendable (Result<Response<Model>, CourierError>) -> Void
    ) -> Task<Void, Never> {
        // One after the other, in order, on a concurrent queue too: a queue of its own that
        // targets it runs one block at a time (the network's result after the cached one).
        let queue = DispatchQueue(
            label: "courier.cacheThenNetwork", target: queue ?? core.configuration.callbackQueue)
        let core = self.core
        // The calls run in the task itself, not through the sequence: a cancelled sequence
        // just ends, which left the handler without its last result.
        return Task {
            if let cached = await core.cachedAnswer(endpoint, allowingStale: allowingStale), !Task.isCancelled {
                queue.async { handler(.success(cached)) }
            }
            let result: Result<Response<Model>, CourierError>
            do {
                result = .success(try await core.send(core.networkCall(endpoint)))
            } catch {
                result = .failure(CourierError.fromCall(error))
            }
            queue.async { handler(result) }
        }
    }
}

extension ServiceCore {
    /// The second call of `cacheThenNetwork`: the network's answer (revalidating the entry),
    /// without stale-if-error (the first value is the stale answer).
    func networkCall<Model: Decodable & Sendable>(_ endpoint: Endpoint<Model>) -> Endpoint<Model> {
        var fresh = endpoint
        fresh.options.cachePolicy = .reloadRevalidatingCache
        fresh.options.staleIfError = false
        return fresh
    }

    /// The cache's entry for `endpoint`, decoded, read without the network; nil when there is
    /// none (or it cannot be decoded), or when it is stale and `allowingStale` is false.
    func cachedAnswer<Model: Decodable & Sendable>(_ endpoint: Endpoint<Model>, allowingStale: Bool) async
        -> Response<Model>?
    {
        guard endpoint.method == .get, client.configuration.cache != nil else { return nil }
        var cached = endpoint
        cached.options.cachePolicy = .returnCacheDataDontLoad
        // Reading the cache sends nothing: no gate, no retry, and no wait for the network.
        cached.options.interval = nil
        cached.options.skipIf = nil
        cached.options.skipsWhileInFlight = false
        cached.options.retryPolicy = RetryPolicy.none
        cached.options.whenOffline = .proceed
        guard let response = try? await send(cached), response.isFromCache, allowingStale || !response.isStale
        else { return nil }
        return response
    }
}

import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// User code that re-enters the library from inside a hook.
@Suite struct ReentrantHooksTests {
    /// Runs `body` in a task of its own; false when it has not ended after `seconds`.
    ///
    /// The wait runs on a thread of its own, not on the task pool: the pool has one thread per
    /// core (two here), and a test that blocked one of them for the whole run left the body and
    /// every other test of the suite one thread (`ReentrantHooksTests` failed this bound in a
    /// whole-suite run at load 7, and a redirect test beside it ran past its 60 s timeout).
    static func finishes(within seconds: Double, _ body: @escaping @Sendable () async -> Void) async -> Bool {
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await body()
            done.signal()
        }
        let deadline = DispatchTime.now() + seconds * Double(TestTimeBound.scale)
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: done.wait(timeout: deadline) == .success) }
        }
    }

    /// Every hook re-enters the service it serves, on every event, while 330 calls run at once:
    /// monitors read the settings, change them, log out and in, cancel their own call or every
    /// call, switch the server; the cache's handler purges it and logs out; an adapter cancels
    /// its own call; the refresher calls the service and logs out; the error mapper cancels
    /// every call. Nothing may trap (a lock taken twice), hang, or leave the service unusable.
    /// (A guard: it passes on the code it was written against.)
    @Test func everyHookMayReenterTheService() async throws {
        let server = try TestServer()
        defer { server.stop() }
        for id in [1, 2] { server.route("/users/\(id)") { _ in .json(["id": id, "name": "user"]) } }
        let holder = LockedValue<ServiceCore?>(nil)
        let cacheHolder = LockedValue<HostScopedCache?>(nil)
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly,
                onEvent: { event in
                    // Not on a purge: purging again from there would recurse for ever.
                    if case .purged = event { return }
                    guard let cache = cacheHolder.withLock({ $0 }) else { return }
                    _ = cache.statistics
                    _ = cache.purgeAllIdentities()
                    holder.withLock { $0 }?.logOut()
                }))
        cacheHolder.withLock { $0 = cache }
        let client = try HTTPClient(
            configuration: .init(baseURL: server.baseURL, enablesCookieEngine: true, cache: cache))
        let coordinator = AuthRefreshCoordinator<String>(credential: "a") { expired in
            if let core = holder.withLock({ $0 }) {
                let _: ServiceUser? = try? await core.get("users/1")
                core.logOut()
            }
            return expired + "x"
        }
        let monitor = ClosureEventMonitor { event in
            guard let core = holder.withLock({ $0 }) else { return }
            _ = core.settings
            _ = core.calls.count
            _ = core.client.isLoggedIn
            try? core.updateSettings { $0.headers[HTTPField.Name("X-Seen")!] = "1" }
            switch event {
            case .started(let call):
                if call.request.path?.contains("cancel-at-start") == true { core.calls.cancel(call.id) }
            case .sending(let call):
                core.logOut()
                try? core.logIn(credential: "b")
                if call.request.path?.contains("cancel-at-send") == true { core.calls.cancel(call.id) }
            case .received(let call, _):
                if call.request.path?.contains("cancel-at-receive") == true { core.calls.cancel(call.id) }
            case .finished(let call, _, _):
                if call.request.path?.contains("cancel-all") == true { core.calls.cancelAll() }
                try? core.configuration.servers?.select(index: call.attempt % 2)
            case .cache(let event):
                if case .purged = event { return }
                _ = cache.purgeAllIdentities()
            case .retrying:
                core.logOut()
            }
        }
        let adapter = ClosureRequestAdapter { request, context in
            if let core = holder.withLock({ $0 }) {
                core.logOut()
                if request.head.path?.contains("cancel-in-adapter") == true { core.calls.cancel(context.callID) }
            }
            return request
        }
        var configuration = ServiceConfiguration(
            retryPolicy: RetryPolicy(jitter: 0), clock: ManualServiceClock(autoAdvance: true),
            callbackQueue: DispatchQueue(label: "test.callbacks"))
        configuration.servers = try ServerPool(servers: [
            server.baseURL, URL(string: "http://localhost:\(server.port)")!,
        ])
        configuration.monitors = [monitor]
        configuration.adapters = [adapter]
        configuration.authentication = AuthenticationInterceptor.makeBearer(coordinator)
        configuration.errorMapper = { _ in
            holder.withLock { $0 }?.calls.cancelAll()
            holder.withLock { $0 }?.logOut()
            return nil
        }
        let service = ServiceCore(client: client, configuration: configuration)
        holder.withLock { $0 = service }
        let paths = [
            "cache/etag?etag=a&max-age=60", "users/1", "cancel-at-start/users/1", "cancel-at-send", "cancel-at-receive",
            "cancel-in-adapter", "status/401", "status/500", "cache/etag?etag=b", "cancel-all", "users/2",
        ]
        let ended = await Self.finishes(within: 60) {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<330 {
                    group.addTask {
                        let path = paths[index % paths.count]
                        let _: ServiceUser? = try? await service.get(path)
                    }
                }
            }
        }
        #expect(ended, "a hook that re-entered the service deadlocked it")
        holder.withLock { $0 = nil }
        cacheHolder.withLock { $0 = nil }
        // The hooks are quiet now: the service works as before.
        try service.logIn(credential: "c")
        let user: ServiceUser = try await service.get("users/2")
        #expect(user == ServiceUser(id: 2, name: "user"))
    }

    /// A cache handler that logs the service out when the cache is purged (to end the session
    /// elsewhere too) is told once. Before, every logout of a service with a cookie jar or an
    /// authentication purged the cache again and reported `.purged(count: 0)` though nothing
    /// was dropped: the handler's logout purged, which called the handler, which logged out, …
    /// until the stack overflowed (here cut at 50 rounds).
    @Test func aHandlerThatLogsOutOnAPurgeIsToldOnce() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let holder = LockedValue<ServiceCore?>(nil)
        let rounds = LockedValue<[Int]>([])
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly,
                onEvent: { event in
                    guard case .purged(let count) = event else { return }
                    let round = rounds.withLock { rounds in
                        rounds.append(count)
                        return rounds.count
                    }
                    if round < 50 { holder.withLock { $0 }?.logOut() }
                }))
        let client = try HTTPClient(configuration: .init(baseURL: server.baseURL, cache: cache))
        var configuration = ServiceConfiguration()
        configuration.cookieJar = CookieJar()
        let service = ServiceCore(client: client, configuration: configuration)
        holder.withLock { $0 = service }
        defer { holder.withLock { $0 = nil } }
        try service.logIn(credential: "t")
        let _: [String: String] = try await service.get("cache/etag?etag=a&max-age=60")
        service.logOut()
        #expect(rounds.withLock { $0 } == [1], "the purge was reported \(rounds.withLock { $0.count }) times")
    }
}

import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// `cacheThenNetwork`: the cached answer at once, then the network's, against a loopback server.
@Suite struct CacheThenNetworkTests {
    /// A server whose `/feed` answers the current name, cacheable for 60 s, and a service
    /// whose client caches 127.0.0.1 on a clock the test moves.
    private final class Knobs: Sendable {
        let name = LockedValue("first")
        let status = LockedValue(200)
        // Now: the server's Date header counts in the entry's age.
        let now = LockedValue(Date())
    }

    private final class Fixture: Sendable {
        let server: TestServer
        let service: ServiceCore
        let knobs = Knobs()

        /// Caches `/feed`, then holds every later request for it on the server until released.
        func cacheFeedThenHoldIt() async throws -> HeldRoute {
            let _: ServiceUser = try await service.get("feed")
            let held = HeldRoute()
            server.route("/feed") { _ in
                held.hold()
                return .json(["id": 1, "name": "late"])
            }
            return held
        }

        init(network: (any NetworkStatusSource)? = nil) throws {
            server = try TestServer()
            let knobs = self.knobs
            server.route("/feed") { _ in
                let code = knobs.status.withLock { $0 }
                guard code == 200 else { return .status(code) }
                return ScriptedResponse.json(["id": 1, "name": knobs.name.withLock { $0 }])
                    .with(.cacheControl, "max-age=60")
            }
            let cache = try HostScopedCache(
                configuration: .init(
                    rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly,
                    clock: CacheClock { knobs.now.withLock { $0 } }))
            // Long timeouts: tests hold the feed at the server (`ServiceFixture.client`).
            let client = try HTTPClient(
                configuration: HTTPClient.Configuration(
                    baseURL: server.baseURL, timeout: .seconds(600), stallTimeout: .seconds(600),
                    notificationCenter: NotificationCenter(), cache: cache))
            var configuration = ServiceConfiguration(
                retryPolicy: .none, callbackQueue: DispatchQueue(label: "test.cache-then-network"))
            configuration.networkStatus = network
            configuration.whenOffline = .fail
            service = ServiceCore(client: client, configuration: configuration)
        }

        func collect(allowingStale: Bool = true) async -> (values: [Response<ServiceUser>], error: CourierError?) {
            var values: [Response<ServiceUser>] = []
            do {
                for try await value in service.cacheThenNetwork(
                    Endpoint<ServiceUser>.get("feed"), allowingStale: allowingStale)
                {
                    values.append(value)
                }
                return (values, nil)
            } catch {
                return (values, error as? CourierError)
            }
        }
    }

    @Test func coldCacheYieldsTheNetworkAnswerAlone() async throws {
        let fixture = try Fixture()
        defer { fixture.server.stop() }
        let (values, error) = await fixture.collect()
        #expect(error == nil)
        #expect(values.map(\.value.name) == ["first"])
        #expect(values.map(\.isFromCache) == [false])
        #expect(fixture.server.count("/feed") == 1)
    }

    @Test func warmCacheYieldsCachedThenFresh() async throws {
        let fixture = try Fixture()
        defer { fixture.server.stop() }
        let _: ServiceUser = try await fixture.service.get("feed")
        fixture.knobs.name.withLock { $0 = "second" }
        let (values, error) = await fixture.collect()
        #expect(error == nil)
        #expect(values.map(\.value.name) == ["first", "second"])
        #expect(values.map(\.isFromCache) == [true, false])
        #expect(values.map(\.isStale) == [false, false])
        // The cached answer cost no request; the fresh one did, and it replaced the entry.
        #expect(fixture.server.count("/feed") == 2)
        let again: ServiceUser = try await fixture.service.get("feed")
        #expect(again.name == "second")
        #expect(fixture.server.count("/feed") == 2)
    }

    @Test func staleEntryIsYieldedMarkedUnlessRefused() async throws {
        let fixture = try Fixture()
        defer { fixture.server.stop() }
        let _: ServiceUser = try await fixture.service.get("feed")
        fixture.knobs.now.withLock { $0 += 120 }  // past max-age=60
        fixture.knobs.name.withLock { $0 = "second" }
        let (values, _) = await fixture.collect()
        #expect(values.map(\.value.name) == ["first", "second"])
        #expect(values.map(\.isStale) == [true, false])
        fixture.knobs.now.withLock { $0 += 120 }
        let (fresh, _) = await fixture.collect(allowingStale: false)
        #expect(fresh.map(\.value.name) == ["second"])
        #expect(fresh.map(\.isFromCache) == [false])
    }

    @Test func networkErrorComesAfterTheCachedValue() async throws {
        let fixture = try Fixture()
        defer { fixture.server.stop() }
        let _: ServiceUser = try await fixture.service.get("feed")
        fixture.knobs.now.withLock { $0 += 120 }
        fixture.knobs.status.withLock { $0 = 503 }
        let (values, error) = await fixture.collect()
        #expect(values.map(\.value.name) == ["first"])
        #expect(values.first?.isFromCache == true)
        #expect(error?.code == .httpStatus)
        #expect(error?.status?.code == 503)
    }

    @Test func offlineStillYieldsTheCacheThenFailsFast() async throws {
        let network = ManualNetworkStatus(NetworkStatus(isOnline: true, interface: .ethernet))
        let fixture = try Fixture(network: network)
        defer { fixture.server.stop() }
        let _: ServiceUser = try await fixture.service.get("feed")
        network.set(.offline)
        let (values, error) = await fixture.collect()
        #expect(values.map(\.value.name) == ["first"])
        #expect(error?.code == .offline)
        #expect(fixture.server.count("/feed") == 1)
    }

    @Test func callbackFormDeliversBothInOrder() async throws {
        let fixture = try Fixture()
        defer { fixture.server.stop() }
        let _: ServiceUser = try await fixture.service.get("feed")
        fixture.knobs.name.withLock { $0 = "second" }
        let delivered = LockedValue<[String]>([])
        let task = fixture.service.cacheThenNetwork(Endpoint<ServiceUser>.get("feed")) { result in
            let text = (try? result.get()).map { "\($0.value.name) cached=\($0.isFromCache)" } ?? "error"
            delivered.withLock { $0.append(text) }
        }
        await task.value
        // Handlers run on the service's serial callback queue: one more block there runs after them.
        await withCheckedContinuation { continuation in
            fixture.service.configuration.callbackQueue.async { continuation.resume() }
        }
        #expect(delivered.withLock { $0 } == ["first cached=true", "second cached=false"])
    }

    @Test func cancellingTheConsumerCancelsTheNetworkCall() async throws {
        let fixture = try Fixture()
        defer { fixture.server.stop() }
        let held = try await fixture.cacheFeedThenHoldIt()
        let firstValue = LockedValue<String?>(nil)
        let consumer = Task {
            for try await value in fixture.service.cacheThenNetwork(Endpoint<ServiceUser>.get("feed")) {
                firstValue.withLock { $0 = $0 ?? value.value.name }
            }
        }
        while held.arrived.value == 0 || firstValue.withLock({ $0 }) == nil { await Task.yield() }
        #expect(firstValue.withLock { $0 } == "first")
        consumer.cancel()
        _ = await consumer.result
        // The network call parked on the server is cancelled, not left running (the limit
        // only turns a regression into a failure instead of a hang).
        let limit = ContinuousClock.now + .seconds(10)
        while fixture.service.calls.count > 0, ContinuousClock.now < limit { await Task.yield() }
        #expect(fixture.service.calls.count == 0)
        held.release(1)
    }

    /// Cancelling the callback form's task ended both calls without a word to the handler:
    /// code waiting for "then once with the network's response or error" (to hide a spinner)
    /// waited for ever. The handler now gets `.cancelled`, once, after the cached value.
    @Test func cancellingTheCallbackFormsTaskTellsTheHandlerOnce() async throws {
        let fixture = try Fixture()
        defer { fixture.server.stop() }
        let held = try await fixture.cacheFeedThenHoldIt()
        let delivered = LockedValue<[String]>([])
        let task = fixture.service.cacheThenNetwork(Endpoint<ServiceUser>.get("feed")) { result in
            let text: String
            switch result {
            case .success(let response): text = "\(response.value.name) cached=\(response.isFromCache)"
            case .failure(let error): text = "\(error.code)"
            }
            delivered.withLock { $0.append(text) }
        }
        while held.arrived.value == 0 || delivered.withLock({ $0.isEmpty }) { await Task.yield() }
        task.cancel()
        await task.value
        await withCheckedContinuation { continuation in
            fixture.service.configuration.callbackQueue.async { continuation.resume() }
        }
        #expect(delivered.withLock { $0 } == ["first cached=true", "\(CourierError.Code.cancelled)"])
        held.release(1)

        // A task cancelled before it ran tells the handler too.
        let early = LockedValue<[CourierError.Code]>([])
        let cancelledAtOnce = fixture.service.cacheThenNetwork(Endpoint<ServiceUser>.get("feed")) { result in
            if case .failure(let error) = result { early.withLock { $0.append(error.code) } }
        }
        cancelledAtOnce.cancel()
        await cancelledAtOnce.value
        await withCheckedContinuation { continuation in
            fixture.service.configuration.callbackQueue.async { continuation.resume() }
        }
        #expect(early.withLock { $0 } == [.cancelled])
    }

    /// On a concurrent queue the two results still come one after the other, the cached one
    /// first: a screen must not show the cached answer over the network's. On the old code each
    /// was handed to the queue on its own, and the network's ran beside the cached one still
    /// running (here it opened the gate the cached one waits at; now the cached one waits its
    /// whole bound and returns before the network's starts).
    @Test func onAConcurrentQueueTheNetworksResultWaitsForTheCachedOne() async throws {
        let fixture = try Fixture()
        defer { fixture.server.stop() }
        let _: ServiceUser = try await fixture.service.get("feed")
        fixture.knobs.name.withLock { $0 = "second" }
        let delivered = LockedValue<[String]>([])
        let gate = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let concurrent = DispatchQueue(label: "test.concurrent", attributes: .concurrent)
        let task = fixture.service.cacheThenNetwork(Endpoint<ServiceUser>.get("feed"), deliveringOn: concurrent) {
            result in
            let response = try? result.get()
            if response?.isFromCache == true {
                delivered.withLock { $0.append("cached started") }
                _ = gate.wait(timeout: TestTimeBound.deadline(seconds: 1))
                delivered.withLock { $0.append("cached ended") }
            } else {
                delivered.withLock { $0.append("network \(response?.value.name ?? "error")") }
                gate.signal()
                done.signal()
            }
        }
        await task.value
        try await offPool { done.wait() }
        #expect(delivered.withLock { $0 } == ["cached started", "cached ended", "network second"])
    }

    @Test func otherMethodsSkipTheCache() async throws {
        let fixture = try Fixture()
        defer { fixture.server.stop() }
        fixture.server.route("POST", "/feed") { _ in .json(["id": 2, "name": "posted"]) }
        var values: [String] = []
        for try await value in fixture.service.cacheThenNetwork(Endpoint<ServiceUser>(.post, "feed")) {
            values.append("\(value.value.name) \(value.isFromCache)")
        }
        #expect(values == ["posted false"])
    }
}

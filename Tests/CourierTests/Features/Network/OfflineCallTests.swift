import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Calls against a loopback server while an injected status source says offline or online.
@Suite struct OfflineCallTests {
    private static let wired = NetworkStatus(isOnline: true, interface: .ethernet, interfaceName: "eth0")

    private func fixture(
        _ network: ManualNetworkStatus, whenOffline: OfflineBehavior, clock: any ServiceClock = ManualServiceClock(),
        monitors: [any EventMonitor] = []
    ) throws -> (TestServer, ServiceCore) {
        let server = try TestServer()
        server.route("/status") { _ in .json(["id": 1, "name": "up"]) }
        let service = try ServiceFixture.service(server) {
            $0.networkStatus = network
            $0.whenOffline = whenOffline
            $0.clock = clock
            $0.monitors = monitors
            $0.realTimeParameters = { [("net", network.current.description)] }
        }
        return (server, service)
    }

    @Test func failFastWhileOfflineSendsNothing() async throws {
        let network = ManualNetworkStatus(.offline)
        let (server, service) = try fixture(network, whenOffline: .fail)
        defer { server.stop() }
        await #expect {
            let _: ServiceUser = try await service.get("status")
        } throws: { error in
            (error as? CourierError)?.code == .offline
        }
        #expect(server.count("/status") == 0)
        network.set(Self.wired)
        let user: ServiceUser = try await service.get("status")
        #expect(user.name == "up")
        // The real-time parameter carries the status of the attempt.
        #expect(server.recordedRequests(path: "/status").last?.queryValue("net") == "ethernet")
    }

    @Test func proceedSendsAnywayAndCallOptionsOverrideTheService() async throws {
        let network = ManualNetworkStatus(.offline)
        let (server, service) = try fixture(network, whenOffline: .proceed)
        defer { server.stop() }
        let user: ServiceUser = try await service.get("status")
        #expect(user.id == 1)
        #expect(server.recordedRequests(path: "/status").last?.queryValue("net") == "offline")
        await #expect {
            let _: ServiceUser = try await service.get(
                "status", options: CallOptions.default.with(\.whenOffline, .fail))
        } throws: { error in
            (error as? CourierError)?.code == .offline
        }
        #expect(server.count("/status") == 1)
    }

    @Test func waitingCallGoesOutWhenTheNetworkComesBack() async throws {
        let network = ManualNetworkStatus(.offline)
        let clock = ManualServiceClock()
        let (server, service) = try fixture(network, whenOffline: .wait(upTo: .seconds(30)), clock: clock)
        defer { server.stop() }
        let call = Task { () async throws -> ServiceUser in try await service.get("status") }
        await network.waitForSubscribers(1)
        await clock.waitForSleepers(1)
        #expect(server.count("/status") == 0)
        network.set(NetworkStatus(isOnline: true, interface: .wifi, interfaceName: "wlan0"))
        #expect(try await call.value.name == "up")
        #expect(server.count("/status") == 1)
        #expect(server.recordedRequests(path: "/status").first?.queryValue("net") == "wifi")
        // The wait ended: its subscription and its deadline are gone.
        #expect(network.subscribers == 0)
        #expect(clock.pendingSleepers == 0)
    }

    @Test func waitingCallFailsAtItsDeadline() async throws {
        let network = ManualNetworkStatus(.offline)
        let clock = ManualServiceClock()
        let (server, service) = try fixture(network, whenOffline: .wait(upTo: .seconds(5)), clock: clock)
        defer { server.stop() }
        let call = Task { () async throws -> ServiceUser in try await service.get("status") }
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(4))
        #expect(server.count("/status") == 0)
        clock.advance(by: .seconds(1))
        await #expect {
            _ = try await call.value
        } throws: { error in
            (error as? CourierError)?.code == .offline && "\(error)".contains("offline")
        }
        #expect(server.count("/status") == 0)
        #expect(clock.sleeps == [.seconds(5)])
    }

    @Test func cancellingAWaitingCallEndsIt() async throws {
        let network = ManualNetworkStatus(.offline)
        let (server, service) = try fixture(network, whenOffline: .wait(upTo: .seconds(30)))
        defer { server.stop() }
        let call = Task { () async throws -> ServiceUser in try await service.get("status") }
        await network.waitForSubscribers(1)
        call.cancel()
        await #expect {
            _ = try await call.value
        } throws: { error in
            (error as? CourierError)?.code == .cancelled
        }
        #expect(server.count("/status") == 0)
        #expect(service.calls.count == 0)
    }

    @Test func cancellingAllCallsEndsOneWaitingForTheNetwork() async throws {
        let network = ManualNetworkStatus(.offline)
        let (server, service) = try fixture(network, whenOffline: .wait(upTo: .seconds(600)))
        defer { server.stop() }
        let call = Task { () -> CourierError? in
            do {
                let _: ServiceUser = try await service.get("status")
                return nil
            } catch {
                return error as? CourierError
            }
        }
        await network.waitForSubscribers(1)
        #expect(service.calls.cancelAll() == 1)
        // Only a bound for the old code, whose wait the registry could not cancel: the call
        // went on once the network came back.
        let (error, rescued) = await awaitWithRescue(call) { network.set(Self.wired) }
        #expect(!rescued, "the cancelled call kept waiting for the network")
        #expect(error?.code == .cancelled)
        #expect(server.count("/status") == 0)
        #expect(service.calls.count == 0)
    }

    /// A service of a caching client whose `/status` answer is fresh for 600 s.
    private func cachingFixture(
        _ network: ManualNetworkStatus, whenOffline: OfflineBehavior, clock: ManualServiceClock = ManualServiceClock()
    ) throws -> (TestServer, ServiceCore) {
        let server = try TestServer()
        server.route("/status") { _ in
            ScriptedResponse.json(["id": 1, "name": "up"]).with(.cacheControl, "max-age=600")
        }
        let client = try ServiceFixture.cachingClient(server)
        var configuration = ServiceConfiguration(retryPolicy: .none)
        configuration.networkStatus = network
        configuration.whenOffline = whenOffline
        configuration.clock = clock
        return (server, ServiceCore(client: client, configuration: configuration))
    }

    /// The `status` call with `options`, its value and `isFromCache`, or its error; the network
    /// comes back only past the bound, and then `rescued` is true.
    ///
    /// Only a bound for the old code, whose `.wait` held the call until the network came back
    /// (600 s on a clock that never moves): the suite's default bound (60 s), as 20 s was
    /// passed once by a whole-suite run on a loaded machine.
    private func status(of service: ServiceCore, options: CallOptions, rescuedBy network: ManualNetworkStatus) async
        -> (Result<(ServiceUser, Bool), CourierError>, rescued: Bool)
    {
        let call = Task { () -> Result<(ServiceUser, Bool), CourierError> in
            do throws(CourierError) {
                let response: Response<ServiceUser> = try await service.send(
                    Endpoint<ServiceUser>.get("status", options: options))
                return .success((response.value, response.isFromCache))
            } catch {
                return .failure(error)
            }
        }
        return await awaitWithRescue(call) { network.set(Self.wired) }
    }

    /// Expects `status`'s cached answer: "up", from the cache.
    private static func expectCachedStatus(
        _ result: Result<(ServiceUser, Bool), CourierError>, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        switch result {
        case .success(let (user, isFromCache)):
            #expect(user.name == "up", sourceLocation: sourceLocation)
            #expect(isFromCache, sourceLocation: sourceLocation)
        case .failure(let error):
            Issue.record("the cached answer was not served while offline: \(error)", sourceLocation: sourceLocation)
        }
    }

    /// A call that reads the cache only (`.returnCacheDataDontLoad`) sends nothing, whatever the
    /// network. On the old code, while offline, `.fail` failed it with `.offline` though its
    /// answer was in the cache, and `.wait(upTo:)` held it until the network came back (or the
    /// limit passed) for a request it never sends (`cacheThenNetwork` set `.proceed` on its own
    /// cache read to get around it). It is answered from the cache at once, or is `.notCached`.
    @Test(arguments: [OfflineBehavior.fail, .wait(upTo: .seconds(600))])
    func aCacheOnlyCallIsAnsweredWhileOffline(whenOffline: OfflineBehavior) async throws {
        let network = ManualNetworkStatus(Self.wired)
        let (server, service) = try cachingFixture(network, whenOffline: whenOffline)
        defer { server.stop() }
        let _: ServiceUser = try await service.get("status")
        network.set(.offline)
        let cacheOnly = CallOptions.default.with(\.cachePolicy, .returnCacheDataDontLoad)
        let (result, rescued) = await status(of: service, options: cacheOnly, rescuedBy: network)
        #expect(!rescued, "the cache-only call waited for the network")
        Self.expectCachedStatus(result)
        // Nothing cached: the cache's own answer, not the network's status.
        let missing = Task { () -> CourierError? in
            do throws(CourierError) {
                let _: Response<ServiceUser> = try await service.send(
                    Endpoint<ServiceUser>.get("other", options: cacheOnly))
                return nil
            } catch {
                return error
            }
        }
        let (error, rescuedAgain) = await awaitWithRescue(missing) {
            network.set(Self.wired)
        }
        #expect(!rescuedAgain, "the cache-only call waited for the network")
        #expect(error?.code == .notCached)
        #expect(server.count("/status") == 1)
    }

    /// A GET whose cache holds a fresh answer sends nothing, whatever the network: it is
    /// answered from the cache while offline, as a cache-only call is. On the old code `.fail`
    /// failed it with `.offline`, and `.wait(upTo:)` held it until the network came back (or the
    /// limit passed). A stale entry (one the server must confirm) still follows the policy.
    @Test(arguments: [OfflineBehavior.fail, .wait(upTo: .seconds(600))])
    func aFreshCachedAnswerIsServedWhileOffline(whenOffline: OfflineBehavior) async throws {
        let network = ManualNetworkStatus(Self.wired)
        let clock = ManualServiceClock()
        let (server, service) = try cachingFixture(network, whenOffline: whenOffline, clock: clock)
        defer { server.stop() }
        server.route("/stale") { _ in
            ScriptedResponse.json(["id": 2, "name": "stale"]).with(.cacheControl, "max-age=0")
        }
        let _: ServiceUser = try await service.get("status")
        let _: ServiceUser = try await service.get("stale")
        network.set(.offline)
        let (result, rescued) = await status(of: service, options: .default, rescuedBy: network)
        #expect(!rescued, "the call with a fresh cached answer waited for the network")
        Self.expectCachedStatus(result)
        #expect(server.count("/status") == 1)
        // A stale entry needs the server: the policy holds.
        if case .wait = whenOffline {
            let stale = Task { () async throws -> ServiceUser in try await service.get("stale") }
            await clock.waitForSleepers(1)
            #expect(server.count("/stale") == 1)
            network.set(Self.wired)
            #expect(try await stale.value.name == "stale")
            #expect(server.count("/stale") == 2)
        } else {
            let error = await courierError { let _: ServiceUser = try await service.get("stale") }
            #expect(error?.code == .offline)
            #expect(server.count("/stale") == 1)
        }
    }

    /// A source whose `statuses()` never reports (an app setting whose changes nobody wired to
    /// the sequence): its `current` turned online during the wait, but on the old code the call
    /// failed at the limit with "the network stayed offline", unsent. At the limit, the status
    /// now decides.
    @Test func aSourceThatNeverReportsIsAskedAgainAtTheLimit() async throws {
        let network = SilentNetworkStatus()
        let clock = ManualServiceClock()
        let server = try TestServer()
        defer { server.stop() }
        server.route("/status") { _ in .json(["id": 1, "name": "up"]) }
        let service = try ServiceFixture.service(server) {
            $0.networkStatus = network
            $0.whenOffline = .wait(upTo: .seconds(5))
            $0.clock = clock
        }
        let call = Task { () async throws -> ServiceUser in try await service.get("status") }
        await clock.waitForSleepers(1)
        network.current = Self.wired
        clock.advance(by: .seconds(5))
        #expect(try await call.value.name == "up")
        #expect(server.count("/status") == 1)
    }

    @Test func eventMonitorsSeeTheStatusOfEachAttempt() async throws {
        let network = ManualNetworkStatus(Self.wired)
        let seen = LockedValue<[NetworkStatus?]>([])
        let monitor = ClosureEventMonitor(onSend: { event in seen.withLock { $0.append(event.networkStatus) } })
        let (server, service) = try fixture(network, whenOffline: .proceed, monitors: [monitor])
        defer { server.stop() }
        let _: ServiceUser = try await service.get("status")
        network.set(.offline)
        let _: ServiceUser = try await service.get("status")
        #expect(seen.withLock { $0 } == [Self.wired, .offline])
    }

    @Test func broadcastDeliversChangesInOrderAndSkipsRepeats() async {
        let network = ManualNetworkStatus(.offline)
        var iterator = network.statuses().makeAsyncIterator()
        #expect(await iterator.next() == .offline)
        network.set(.offline)
        network.set(Self.wired)
        network.set(.offline)
        #expect(await iterator.next() == Self.wired)
        #expect(await iterator.next() == .offline)
    }
}

/// A status source whose `statuses()` says nothing at all, not even the status now: its
/// `current` alone tells.
private final class SilentNetworkStatus: NetworkStatusSource {
    private let status = LockedValue(NetworkStatus.offline)

    var current: NetworkStatus {
        get { status.withLock { $0 } }
        set { status.withLock { $0 = newValue } }
    }

    func statuses() -> AsyncStream<NetworkStatus> { AsyncStream { _ in } }
}

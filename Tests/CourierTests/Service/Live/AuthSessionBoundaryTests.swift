import CourierTesting
import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// Token refresh against a hostile schedule: a refresh that hangs, a logout (and the next
/// user's login) while a call of the old session is in flight.
@Suite struct AuthSessionBoundaryTests {
    typealias Bearer = APIServiceAuthTests.Bearer

    /// `GET /bearer` in a task of its own: its error, nil when it succeeds.
    static func bearerCall(_ service: ServiceCore, options: CallOptions = .default) -> Task<CourierError?, Never> {
        Task {
            do {
                let _: Bearer = try await service.get("bearer", options: options)
                return nil
            } catch {
                return error as? CourierError
            }
        }
    }

    /// `/flaky` answers alice's first attempt 503 after switching to bob's session: alice's call
    /// ends with `.authentication` after that one attempt (sent as alice), and a call of bob's
    /// session then goes through as bob (the route echoes the `Authorization` it got).
    static func expectAlicesRetryRefusedAndBobsCallSent(
        _ service: ServiceCore, _ server: TestServer, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        struct Token: Decodable { var token: String }
        do {
            let answer: Token = try await service.get("flaky")
            Issue.record("alice's call got the answer to \(answer.token)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == .authentication, sourceLocation: sourceLocation)
        }
        #expect(
            server.recordedRequests(path: "/flaky").map { $0.header("authorization") } == ["Bearer alice"],
            sourceLocation: sourceLocation)
        // A call of bob's session goes through.
        let bobs: Token = try await service.get("flaky")
        #expect(bobs.token == "Bearer bob", sourceLocation: sourceLocation)
    }

    /// A service whose `/bearer` accepts only "fresh", with the credential "stale" and a refresh
    /// to "fresh" that waits at `gate` until the test opens it; `refreshes` counts refreshes.
    static func serviceWithAHeldRefresh() throws -> (
        server: TestServer, gate: ServiceGate, refreshes: ServiceCounter, service: ServiceCore
    ) {
        let server = try TestServer()
        server.validBearerTokens = ["fresh"]
        let gate = ServiceGate()
        let refreshes = ServiceCounter()
        let coordinator = AuthRefreshCoordinator<String>(credential: "stale") { _ in
            refreshes.increment()
            await gate.wait()
            return "fresh"
        }
        do {
            return (
                server, gate, refreshes, try ServiceFixture.service(server) { $0.authentication = .bearer(coordinator) }
            )
        } catch {
            server.stop()
            throw error
        }
    }

    @Test func aCallCancelledWhileItsRefreshHangsEndsAtOnceAndTheRefreshIsKept() async throws {
        let (server, gate, refreshes, service) = try Self.serviceWithAHeldRefresh()
        defer { server.stop() }
        let call = Self.bearerCall(service)
        while refreshes.value == 0 { await Task.yield() }
        call.cancel()
        // Only a bound for the old code, whose call waited for the refresh whatever happened
        // to it: it returned once this opened the gate.
        let (error, rescued) = await awaitWithRescue(call) { gate.open() }
        #expect(!rescued, "the cancelled call waited for the refresh")
        #expect(error?.code == .cancelled)
        // The refresh goes on for the others and is kept when it ends, though its one waiter left.
        gate.open()
        let bearer: Bearer = try await service.get("bearer")
        #expect(bearer.token == "fresh")
        #expect(refreshes.value == 1)
    }

    /// The service a refresher calls, set once the service exists.
    final class ServiceHolder: Sendable {
        let service = LockedValue<ServiceCore?>(nil)
    }

    @Test func aRefreshWhoseOwnCallIsRejectedFailsInsteadOfWaitingForItself() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.validBearerTokens = ["fresh"]
        server.route("/oauth/refresh") { _ in .json(["error": "expired"], status: 401) }
        let holder = ServiceHolder()
        // The mistake the guide warns about: the refresh endpoint called through the service
        // whose credential it refreshes. Its 401 asked that very refresh for a credential.
        let coordinator = AuthRefreshCoordinator<String>(credential: "stale") { _ in
            struct Token: Decodable { var token: String }
            let service = try #require(holder.service.withLock { $0 })
            let token: Token = try await service.get("oauth/refresh")
            return token.token
        }
        let service = try ServiceFixture.service(server) { $0.authentication = .bearer(coordinator) }
        holder.service.withLock { $0 = service }
        // The holder, the service and its refresher's closure make a cycle: broken at the end
        // (AddressSanitizer reports the service leaked otherwise).
        defer { holder.service.withLock { $0 = nil } }
        let call = Self.bearerCall(service)
        // Only a bound for the old code, where the refresh waited for itself: cancelling the
        // call let it go (the refresh stayed stuck).
        let (error, rescued) = await awaitWithRescue(call) { call.cancel() }
        #expect(!rescued, "the refresh waited for itself")
        #expect(error?.code == .authentication)
        #expect(server.count("/oauth/refresh") == 1)
        #expect(server.count("/bearer") == 1)
    }

    @Test func aCallOfASessionLoggedOutDuringItsRefreshIsNotSentAgainAsTheNextUser() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.validBearerTokens = ["alice-2", "bob"]
        let gate = ServiceGate()
        let refreshes = ServiceCounter()
        let coordinator = AuthRefreshCoordinator<String>(credential: "alice") { old in
            refreshes.increment()
            await gate.wait()
            return old + "-2"
        }
        let service = try ServiceFixture.service(server) { $0.authentication = .bearer(coordinator) }
        let call = Task { () -> Result<String?, CourierError> in
            do {
                let bearer: Bearer = try await service.get("bearer")
                return .success(bearer.token)
            } catch {
                return .failure(error as! CourierError)
            }
        }
        while refreshes.value == 0 { await Task.yield() }
        coordinator.logout()
        coordinator.login("bob")
        gate.open()
        let result = await call.value
        #expect(throws: CourierError.self) { try result.get() }
        #expect((try? result.get()) == nil, "alice's call got bob's answer")
        if case .failure(let error) = result { #expect(error.code == .authentication) }
        #expect(server.recordedRequests(path: "/bearer").map { $0.header("authorization") } == ["Bearer alice"])
        #expect(coordinator.current == "bob")
    }

    @Test func aCallRetriedAfterALogoutAndTheNextLoginIsNotSentAsTheNextUser() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let coordinator = AuthRefreshCoordinator<String>(credential: "alice") { _ in "never" }
        // The first answer is a 503, sent after alice logged out and bob logged in.
        let answered = ServiceCounter()
        server.route("/flaky") { request in
            if answered.increment() == 1 {
                coordinator.logout()
                coordinator.login("bob")
                return .status(503)
            }
            return .json(["token": request.header("authorization") ?? ""])
        }
        let service = try ServiceFixture.service(server) { $0.authentication = .bearer(coordinator) }
        try await Self.expectAlicesRetryRefusedAndBobsCallSent(service, server)
    }

    /// A call that waits for the network (`whenOffline: .wait`) while its user logs out and the
    /// next one logs in: the old code wrote the credential of the moment into the request when
    /// the network came back, and alice's call went out as bob (with bob's answer).
    @Test func aCallWaitingForTheNetworkAcrossALogoutIsNotSentAsTheNextUser() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.validBearerTokens = ["alice", "bob"]
        let network = ManualNetworkStatus(.offline)
        let clock = ManualServiceClock()
        let coordinator = AuthRefreshCoordinator<String>(credential: "alice") { _ in "never" }
        let service = try ServiceFixture.service(server) {
            $0.authentication = .bearer(coordinator)
            $0.networkStatus = network
            $0.whenOffline = .wait(upTo: .seconds(600))
            $0.clock = clock
        }
        let call = Self.bearerCall(service)
        await network.waitForSubscribers(1)
        await clock.waitForSleepers(1)
        coordinator.logout()
        coordinator.login("bob")
        network.set(NetworkStatus(isOnline: true, interface: .ethernet, interfaceName: "eth0"))
        let error = await call.value
        #expect(error?.code == .authentication, "alice's call ended with \(String(describing: error))")
        #expect(server.count("/bearer") == 0, "sent as \(server.recordedRequests.map { $0.header("authorization") })")
        // A call of bob's session goes through.
        let bearer: Bearer = try await service.get("bearer")
        #expect(bearer.token == "bob")
    }

    /// The same with the client's own credential (`logIn(credential:)`, no interceptor): each
    /// attempt asks the client for its credential, and the retry of alice's call went out as
    /// bob's, so alice's call got bob's answer.
    @Test func aCallRetriedAfterTheClientLoggedOutAndInAgainIsNotSentAsTheNextUser() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server)
        let client = service.client
        try client.logIn(credential: "alice")
        let answered = ServiceCounter()
        server.route("/flaky") { request in
            if answered.increment() == 1 {
                client.logOut()
                try? client.logIn(credential: "bob")
                return .status(503)
            }
            return .json(["token": request.header("authorization") ?? ""])
        }
        try await Self.expectAlicesRetryRefusedAndBobsCallSent(service, server)
    }
}

/// Waits for `task`; if it has not ended after `bound`, runs `rescue` (which makes it end) and
/// says so. A bound for code that would hang, not a synchronisation.
func awaitWithRescue<T: Sendable>(
    _ task: Task<T, Never>, within bound: Duration = TestTimeBound.scaled(.seconds(60)),
    rescue: @escaping @Sendable () -> Void
) async -> (T, rescued: Bool) {
    let watchdog = Task { () -> Bool in
        try await Task.sleep(for: bound)
        rescue()
        return true
    }
    let value = await task.value
    watchdog.cancel()
    return (value, (try? await watchdog.value) == true)
}

extension AuthSessionBoundaryTests {
    /// A login notification whose credential the client refuses (here a token read with its
    /// line end) still ends the session before it: the client and the service's interceptor
    /// drop alice's credential, and the next requests carry none. On the old code the client
    /// ignored the notification and went on sending alice's token for bob's session, while the
    /// interceptor took bob's token with its line end (sent with the CR/LF made spaces).
    @Test func aRefusedLoginNotificationStillEndsThePreviousSession() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let center = NotificationCenter()
        let coordinator = AuthRefreshCoordinator<String> { _ in "never" }
        let service = try ServiceFixture.service(server, center: center) { $0.authentication = .bearer(coordinator) }
        let client = service.client
        center.post(name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: "alice"])
        #expect(client.isLoggedIn)
        #expect(coordinator.current == "alice")
        center.post(
            name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: "bob\r\n"])
        #expect(!client.isLoggedIn)
        #expect(coordinator.current == nil)
        let direct = try Echo(try await client.send(HTTPRequest(.get, server.url("/echo"))).body)
        #expect(direct.headers["authorization"] == nil)
        // The service's call has no credential to send: it fails without sending one.
        _ = try? await service.get("echo") as Echo
        #expect(server.recordedRequests(path: "/echo").allSatisfy { $0.header("Authorization") == nil })
    }
}

extension AuthSessionBoundaryTests {
    /// A call waiting for a refresh that hangs ends with `.timedOut` after its timeout, as a
    /// transfer would: no call hangs past its timeout. The refresh goes on for the others and
    /// is kept when it ends. On the old code the call waited for the refresh for as long as it
    /// hung (here until the test's rescue opened the gate).
    @Test func aCallWaitingForARefreshThatHangsEndsAtItsTimeout() async throws {
        let (server, gate, refreshes, service) = try Self.serviceWithAHeldRefresh()
        defer { server.stop() }
        let timeout = TestTimeBound.scaled(.seconds(1))
        let call = Self.bearerCall(service, options: CallOptions.default.with(\.timeout, timeout))
        let (error, rescued) = await awaitWithRescue(call, within: TestTimeBound.scaled(.seconds(30))) { gate.open() }
        #expect(!rescued, "the call waited for the refresh past its timeout")
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(error?.message.contains("refresh") == true)
        gate.open()
        let bearer: Bearer = try await service.get("bearer")
        #expect(bearer.token == "fresh")
        #expect(refreshes.value == 1)
    }
}

extension AuthSessionBoundaryTests {
    /// A call whose timeout is zero or less, refused with `.configuration` once it sends,
    /// first waited for the refresh of its expired credential with no bound at all (a wait of
    /// zero or less armed no timer): a refresher that hung held it for as long as it hung. It
    /// is refused before it waits.
    @Test(arguments: [Duration.zero, .seconds(-1)])
    func aCallWhoseTimeoutIsNotPositiveDoesNotWaitForAHungRefresh(timeout: Duration) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.validBearerTokens = ["fresh"]
        let gate = ServiceGate()
        let coordinator = AuthRefreshCoordinator<String>(credential: "stale") { _ in
            await gate.wait()
            return "fresh"
        }
        let service = try ServiceFixture.service(server) {
            $0.authentication = AuthenticationInterceptor(
                coordinator: coordinator, isExpired: { $0 == "stale" },
                parts: [.header(.authorization) { "Bearer \($0)" }])
        }
        let call = Self.bearerCall(service, options: CallOptions.default.with(\.timeout, timeout))
        let (error, rescued) = await awaitWithRescue(call, within: TestTimeBound.scaled(.seconds(30))) { gate.open() }
        #expect(!rescued, "the call waited for the hung refresh")
        #expect(error?.code == .configuration, "\(String(describing: error))")
        gate.open()
        #expect(server.count("/bearer") == 0)
    }
}

extension AuthSessionBoundaryTests {
    /// A logout, then another user's login, while a call's adapters wait (fleet mode's shared
    /// credential sync, here held by the test): the call ends with `.authentication` and is
    /// never sent. On the old code the session was checked before the adapters only, and the
    /// interceptor, once the wait was over, wrote bob's token into alice's call.
    @Test func aLogoutWhileTheAdaptersWaitEndsTheCallUnsent() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let gate = ServiceGate()
        let syncing = ServiceCounter()
        let coordinator = AuthRefreshCoordinator<String>(credential: "alice") { _ in "never" }
        coordinator.sharedSync.withLock { sync in
            sync = {
                // The first call's sync waits; later ones (bob's) pass.
                if syncing.increment() == 1 { await gate.wait() }
            }
        }
        let service = try ServiceFixture.service(server) { $0.authentication = .bearer(coordinator) }
        let call = Self.bearerCall(service)
        while syncing.value == 0 { await Task.yield() }
        coordinator.logout()
        coordinator.login("bob")
        gate.open()
        let error = await call.value
        #expect(error?.code == .authentication, "\(String(describing: error))")
        #expect(server.recordedRequests(path: "/bearer").isEmpty, "alice's call was sent")
    }
}

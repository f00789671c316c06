import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Calls that a server pool moves from one server to another, against loopback servers.
@Suite struct FailoverCallTests {
    /// A retry moved to the next server is a request to that server: it shares no transfer with
    /// a call still in flight to the server it left. On the old code the call kept the identity
    /// of its first attempt (the primary's URL) for de-duplication, joined the transfer of a
    /// later call of the same GET that was still held by the primary, never reached the backup,
    /// and got the primary's answer when it came (here, only when the test released it).
    @Test func aRetryMovedToTheNextServerSharesNoTransferWithTheServerItLeft() async throws {
        let primary = try TestServer()
        let backup = try TestServer()
        defer {
            primary.stop()
            backup.stop()
        }
        let held = HeldRoute()
        let served = ServiceCounter()
        primary.route("/users/1") { _ in
            if served.increment() == 1 { return .status(503) }
            held.hold()
            return .json(["id": 1, "name": "primary"])
        }
        backup.route("/users/1") { _ in .json(["id": 1, "name": "backup"]) }
        // The pool moves only when the app selects a server; retries wait for the test's clock.
        let clock = ManualServiceClock()
        let policy = FailoverPolicy(errorRateThreshold: 1, consecutiveConnectionFailures: 0)
        let pool = try ServerPool(
            servers: [ServiceFixture.base(primary), ServiceFixture.base(backup)], policy: policy, clock: clock)
        let service = try ServiceFixture.service(primary) { configuration in
            configuration.servers = pool
            configuration.clock = clock
        }
        let moved = Task { () async throws -> ServiceUser in try await service.get("users/1") }
        // Its first attempt was answered 503: it waits for its retry.
        await clock.waitForSleepers(1)
        // The same GET, made while the pool is still on the primary: held there.
        let stayed = Task { () async throws -> ServiceUser in try await service.get("users/1") }
        while held.arrived.value == 0 { await Task.yield() }
        try pool.select(index: 1)
        clock.advance(by: .seconds(60))
        let reachedBackup = await backup.waitForRequests(atLeast: 1, timeout: TestTimeBound.scaled(.seconds(5)))
        #expect(reachedBackup, "the retry joined the transfer held by the primary")
        held.release(1)
        #expect(try await moved.value.name == "backup")
        #expect(try await stayed.value.name == "primary")
        #expect(primary.count("/users/1") == 2)
        #expect(backup.count("/users/1") == 1)
    }

    /// A retry whose server the app took out of the pool goes to the pool's server, not to the
    /// one taken out, which is no longer the API's own and gets no credential
    /// (`CredentialScopeTests.aServerRemovedFromThePoolGetsNoCredentialOnTheNextCall`). On the
    /// old code the call of a pool made without environments stayed on its server: the first
    /// `setServers` names the pool's environment, and a call that started with none counted it
    /// as a switch of environment, which does not move a call; its retries carried the user's
    /// `Authorization` to the removed server.
    @Test func aRetryAfterItsServerLeftThePoolGoesToThePoolsServerWithoutTheCredentialLeaking() async throws {
        let retired = try TestServer()
        let api = try TestServer()
        defer {
            retired.stop()
            api.stop()
        }
        retired.route("/users/1") { _ in .status(503) }
        api.route("/users/1") { _ in .json(["id": 1, "name": "api"]) }
        let clock = ManualServiceClock()
        let pool = try ServerPool(servers: [ServiceFixture.base(retired), ServiceFixture.base(api)], clock: clock)
        let client = try ServiceFixture.client(api)
        try client.logIn(credential: "api-token")
        let service = ServiceCore(
            client: client,
            configuration: ServiceConfiguration(
                servers: pool, retryPolicy: RetryPolicy(maximumRetries: 1, jitter: 0), clock: clock))
        let call = Task { () async throws -> ServiceUser in try await service.get("users/1") }
        await clock.waitForSleepers(1)
        try pool.setServers([api.baseURL], for: .production)
        clock.advance(by: .seconds(60))
        let user = try await call.value
        #expect(user.name == "api")
        #expect(retired.recordedRequests.map { $0.header("Authorization") } == ["Bearer api-token"])
        #expect(api.recordedRequests.map { $0.header("Authorization") } == ["Bearer api-token"])
    }

    /// The same when the app also switched environment: a retry stays in its call's environment
    /// while its server is listed there, and goes to the pool's current server once it is not
    /// listed anywhere any more.
    @Test func aRetryWhoseServerIsListedNowhereFollowsThePoolAcrossEnvironments() async throws {
        let retired = try TestServer()
        let staging = try TestServer()
        defer {
            retired.stop()
            staging.stop()
        }
        retired.route("/users/1") { _ in .status(503) }
        staging.route("/users/1") { _ in .json(["id": 1, "name": "staging"]) }
        let clock = ManualServiceClock()
        let pool = try ServerPool(
            environments: [.production: [ServiceFixture.base(retired)], .staging: [ServiceFixture.base(staging)]],
            current: .production, clock: clock)
        let client = try ServiceFixture.client(staging)
        try client.logIn(credential: "api-token")
        let service = ServiceCore(
            client: client,
            configuration: ServiceConfiguration(
                servers: pool, retryPolicy: RetryPolicy(maximumRetries: 1, jitter: 0), clock: clock))
        let call = Task { () async throws -> ServiceUser in try await service.get("users/1") }
        await clock.waitForSleepers(1)
        try pool.switchEnvironment(to: .staging)
        try pool.setServers([staging.baseURL], for: .production)
        clock.advance(by: .seconds(60))
        #expect(try await call.value.name == "staging")
        #expect(retired.recordedRequests.map { $0.header("Authorization") } == ["Bearer api-token"])
    }

    /// The server is chosen for each attempt as it is sent, the first one included: a call that
    /// waited before its first attempt (here for its request interval; the network or adapters
    /// are the same) goes to the server the pool is on when it is sent. On the old code the first
    /// attempt went to the server the pool was on when the call started, which the pool may have
    /// left meanwhile because it failed (or, as here, because the app selected another).
    @Test func theFirstAttemptGoesToTheServerThePoolIsOnWhenItIsSent() async throws {
        let primary = try TestServer()
        let backup = try TestServer()
        defer {
            primary.stop()
            backup.stop()
        }
        primary.route("/users/1") { _ in .json(["id": 1, "name": "primary"]) }
        backup.route("/users/1") { _ in .json(["id": 1, "name": "backup"]) }
        let clock = ManualServiceClock()
        let pool = try ServerPool(
            servers: [ServiceFixture.base(primary), ServiceFixture.base(backup)], clock: clock)
        let service = try ServiceFixture.service(primary) { configuration in
            configuration.servers = pool
            configuration.clock = clock
        }
        let spaced = CallOptions.default.with(\.interval, .delay(.seconds(5)))
        let first: ServiceUser = try await service.get("users/1", options: spaced)
        #expect(first.name == "primary")
        // The same call again waits 5 s for its interval; meanwhile the app selects the backup.
        let waiting = Task { () async throws -> ServiceUser in try await service.get("users/1", options: spaced) }
        await clock.waitForSleepers(1)
        try pool.select(index: 1)
        clock.advance(by: .seconds(5))
        #expect(try await waiting.value.name == "backup")
        #expect(primary.count("/users/1") == 1)
        #expect(backup.count("/users/1") == 1)
    }
}

import CourierTesting
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

/// Bugs the sanitizer runs (`scripts/sanitizers.sh`) brought to light, as ordinary tests.
@Suite struct SanitizerRegressionTests {
    final class Captured: Sendable {}

    /// The TSan run's serial pass failed `cacheEventsReachTheServicesMonitorsWhileTheServiceLives`
    /// (and the plain debug build did too, 3 runs in 30): a `Call` kept its operation, and with
    /// it the service the operation captured, until the call's task had wound down, which is
    /// after the waiter was resumed. A service released right after `send` returned could
    /// still observe the next request. The call now lets go of the operation before it
    /// resumes anyone.
    @Test func aFinishedCallNoLongerHoldsWhatItsOperationCaptured() async throws {
        var captured: Captured? = Captured()
        weak let watcher = captured
        let call = Call<Int> { [captured] in
            withExtendedLifetime(captured) { 7 }
        }
        captured = nil
        #expect(watcher != nil, "the call holds the operation until it runs")
        #expect(try await call.run() == 7)
        #expect(watcher == nil, "released before the result was delivered")
        withExtendedLifetime(call) {}
    }

    /// The demo under LeakSanitizer reported the fixture server's recorded bodies at exit: its
    /// routes captured the object owning the server (FixtureAPI -> TestServer -> routes ->
    /// FixtureAPI), so nothing was ever freed. A stopped server now lets go of its routes.
    @Test func aStoppedTestServerLetsGoOfItsRoutes() async throws {
        final class Owner: Sendable {
            let server: TestServer
            init() throws {
                server = try TestServer()
                server.route("/owner") { [self] _ in .text("owned by \(ObjectIdentifier(self))") }
            }
        }
        var owner: Owner? = try Owner()
        weak let watcher = owner
        let server = try #require(owner?.server)
        let response = try await RawHTTPConnection(port: server.port).request("GET", "/owner")
        #expect(response.status == 200)
        owner = nil
        #expect(watcher != nil, "the route keeps its owner while the server runs")
        server.stop()
        #expect(watcher == nil, "released with the routes")
        #expect(server.requestCount == 1, "what was recorded stays")
    }

    /// Cancelling before the start drops the operation as well.
    @Test func aCallCancelledBeforeItsStartLetsGoOfItsOperation() async {
        var captured: Captured? = Captured()
        weak let watcher = captured
        let call = Call<Int> { [captured] in
            withExtendedLifetime(captured) { 7 }
        }
        captured = nil
        call.cancel()
        #expect(watcher == nil)
        await #expect(throws: CourierError.self) { try await call.result().get() }
        withExtendedLifetime(call) {}
    }
}

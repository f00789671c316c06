import CourierTesting
import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// Token refresh against a hostile schedule: a refresh that hangs, a logout (and the next
/// user's login) while a call of the old session is in flight.
@Suite struct AuthSessionBoundaryTests {
    struct Bearer: Decodable, Sendable {
        var authenticated: Bool
        var token: String?
    }

    @Test func aCallCancelledWhileItsRefreshHangsEndsAtOnceAndTheRefreshIsKept() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.validBearerTokens = ["fresh"]
        let gate = ServiceGate()
        let refreshes = ServiceCounter()
        let coordinator = AuthRefreshCoordinator<String>(credential: "stale") { _ in
            refreshes.increment()
            await gate.wait()
            return "fresh"
        }
        let service = try ServiceFixture.service(server) { $0.authentication = .bearer(coordinator) }
        let call = Task { () -> CourierError? in
            do {
                let _: Bearer = try await service.get("bearer")
                return nil
            } catch {
                return error as? CourierError
            }
        }
        while refreshes.value == 0 { await Task.yield() }
        call.cancel()
        // Only a bound for the old code, whose call waited for the refresh whatever happened
        // to it: it returned once this opened the gate.
        let watchdog = Task { () -> Bool in
            try await Task.sleep(for: .seconds(30))
            gate.open()
            return true
        }
        let error = await call.value
        watchdog.cancel()
        #expect((try? await watchdog.value) != true, "the cancelled call waited for the refresh")
        #expect(error?.code == .cancelled)
        // The refresh goes on for the others and is kept when it ends, though its one waiter left.
        gate.open()
        let bearer: Bearer = try await service.get("bearer")
        #expect(bearer.token == "fresh")
        #expect(refreshes.value == 1)
    }
}

import CourierTesting
import Foundation
import HTTPTypes
import Synchronization
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct APIServiceAuthTests {
    struct Bearer: Decodable, Sendable {
        var authenticated: Bool
        var token: String?
    }

    @Test func fiftyConcurrent401sCauseOneRefreshAndAllAreRetried() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.validBearerTokens = ["fresh"]
        server.route("POST", "/oauth/refresh") { _ in .json(["token": "fresh"]) }
        let refreshClient = try ServiceFixture.client(server)
        let coordinator = AuthRefreshCoordinator<String>(credential: "stale") { _ in
            // Hold the refresh until all 50 rejected requests have reached the server, so
            // every call is waiting on this one refresh.
            while server.count("/bearer") < 50 { await Task.yield() }
            let request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/oauth/refresh")
            let answer = try await refreshClient.send(request)
            struct Token: Decodable { var token: String }
            return try JSONDecoder().decode(Token.self, from: answer.body).token
        }
        let service = try ServiceFixture.service(server) { $0.authentication = .bearer(coordinator) }
        let options = CallOptions.default.with(\.deduplicates, false)
        let results = await withTaskGroup(of: Result<Response<Bearer>, CourierError>.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    do {
                        return .success(try await service.send(Endpoint<Bearer>.get("bearer", options: options)))
                    } catch {
                        return .failure(error as! CourierError)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let values = results.compactMap { try? $0.get() }
        #expect(values.count == 50)
        #expect(values.allSatisfy { $0.value.token == "fresh" && $0.attempts == 2 })
        #expect(server.count("/oauth/refresh") == 1)
        #expect(server.count("/bearer") == 100)
        #expect(coordinator.refreshCount == 1)
    }

    @Test func failedRefreshFailsEveryCallWithOneAuthenticationError() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.validBearerTokens = ["never"]
        let refreshes = ServiceCounter()
        let coordinator = AuthRefreshCoordinator<String>(credential: "stale") { _ in
            refreshes.increment()
            while server.count("/bearer") < 10 { await Task.yield() }
            throw CourierError(.httpStatus, "refresh token revoked")
        }
        let service = try ServiceFixture.service(server) { $0.authentication = .bearer(coordinator) }
        let options = CallOptions.default.with(\.deduplicates, false)
        let errors = await withTaskGroup(of: CourierError?.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    do {
                        let _: Bearer = try await service.get("bearer", options: options)
                        return nil
                    } catch {
                        return error as? CourierError
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(errors.allSatisfy { $0?.code == .authentication && $0?.status == .unauthorized })
        #expect(refreshes.value == 1)
        #expect(server.count("/bearer") == 10)
    }

    @Test func logoutNotificationClearsCredentialAndCookiesAndStopsRefreshing() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let center = NotificationCenter()
        server.route("/login") { _ in ScriptedResponse.json(["ok": true]).with(.setCookie, "sid=s1; Path=/") }
        let refreshes = ServiceCounter()
        let coordinator = AuthRefreshCoordinator<String> { _ in
            refreshes.increment()
            return "refreshed"
        }
        let jar = CookieJar()
        let service = try ServiceFixture.service(server, center: center) { configuration in
            configuration.authentication = .bearer(coordinator)
            configuration.cookieJar = jar
        }
        center.post(name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: "tok"])
        struct OK: Decodable, Sendable { var ok: Bool }
        let _: OK = try await service.get("login")
        let echoed: Bearer = try await service.get("bearer")
        #expect(echoed.token == "tok")
        #expect(server.recordedRequests.last?.header("Cookie") == "sid=s1")
        center.post(name: .courierUserDidLogOut, object: nil)
        #expect(coordinator.current == nil)
        #expect(jar.all.isEmpty)
        do {
            let _: Bearer = try await service.get("bearer")
            Issue.record("expected 401 after logout")
        } catch {
            #expect(error.code == .authentication)
        }
        #expect(refreshes.value == 0)
        #expect(server.recordedRequests.last?.header("Authorization") == nil)
        #expect(server.recordedRequests.last?.header("Cookie") == nil)
    }
}

import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// A domain service with its own error type, as an app would write it.
struct UserService: APIService {
    let core: ServiceCore

    enum Failure: Error, Equatable {
        case notFound
        case signedOut
        case rejected(code: Int, message: String)
        case offline
        case other(String)
    }

    struct ServerError: Decodable, Sendable {
        var code: Int
        var message: String
    }

    func user(id: Int) async throws(Failure) -> ServiceUser {
        do {
            return try await get(
                "users/\(id)", options: CallOptions(validator: .default.decodingErrors(as: ServerError.self)))
        } catch {
            throw Self.map(error)
        }
    }

    static func map(_ error: CourierError) -> Failure {
        switch error.code {
        case .httpStatus where error.status == .notFound: return .notFound
        case .httpStatus where error.status == .unauthorized, .authentication: return .signedOut
        case .httpStatus:
            if let model = error.errorModel(as: ServerError.self) {
                return .rejected(code: model.code, message: model.message)
            }
            return .other(error.message)
        case .cannotConnect, .timedOut: return .offline
        default: return .other(error.message)
        }
    }
}

@Suite struct APIServiceFlowTests {
    @Test func domainServiceMapsCourierErrors() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/users/1") { _ in .json(["id": 1, "name": "Ann"]) }
        server.route("/users/2") { _ in .json(["code": 4012, "message": "token expired"], status: 422) }
        server.route("/users/3") { _ in .status(401) }
        let client = try ServiceFixture.client(server)
        let users = UserService(
            core: ServiceCore(client: client, configuration: ServiceConfiguration(retryPolicy: .none)))
        #expect(try await users.user(id: 1).name == "Ann")
        await #expect(throws: UserService.Failure.notFound) { try await users.user(id: 404) }
        await #expect(throws: UserService.Failure.rejected(code: 4012, message: "token expired")) {
            try await users.user(id: 2)
        }
        await #expect(throws: UserService.Failure.signedOut) { try await users.user(id: 3) }
        server.stop()
        await #expect(throws: UserService.Failure.offline) { try await users.user(id: 1) }
    }

    @Test func batchRunsWithALimitReportsProgressAndReturnsEveryResult() async throws {
        let server = try TestServer()
        defer { server.stop() }
        for id in 1...8 { server.route("/users/\(id)") { _ in .json(["id": id, "name": "u\(id)"]) } }
        server.route("/users/5") { _ in .status(500) }
        let service = try ServiceFixture.service(server) { $0.retryPolicy = .none }
        let progress = LockedValue<[BatchProgress]>([])
        let operations: [@Sendable () async throws -> ServiceUser] = (1...8).map { id in
            { try await service.get("users/\(id)") }
        }
        let results = await Batch.run(operations, maximumConcurrent: 3) { step in
            progress.withLock { $0.append(step) }
        }
        #expect(results.count == 8)
        #expect(
            results.enumerated().allSatisfy { index, result in
                index == 4 ? (try? result.get()) == nil : (try? result.get())?.id == index + 1
            })
        #expect(progress.withLock { $0.map(\.completed) } == Array(1...8))
        #expect(progress.withLock { $0.last?.failed } == 1)
        #expect(server.requestCount == 8)
    }

    @Test func chainUsesThePreviousResult() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/users/me") { _ in .json(["id": 12, "name": "me"]) }
        server.route("/users/12") { _ in .json(["id": 12, "name": "full profile"]) }
        let service = try ServiceFixture.service(server)
        let profile = try await Chain { () async throws -> ServiceUser in try await service.get("users/me") }
            .then { me -> ServiceUser in try await service.get("users/\(me.id)") }
            .run()
        #expect(profile.name == "full profile")
    }

    struct ItemsPage: Decodable, Sendable {
        var items: [Int]
        var next: String?
    }

    @Test func paginatesToTheEnd() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/items") { request in
            let page = Int(request.queryValue("page") ?? "1") ?? 1
            let size = Int(request.queryValue("per_page") ?? "10") ?? 10
            let items = Array(((page - 1) * size)..<min(25, page * size))
            return .json(["items": items])
        }
        server.route("/feed") { request in
            switch request.queryValue("cursor") {
            case nil: return .json(["items": [1, 2], "next": "c2"])
            case "c2": return .json(["items": [3], "next": "c3"])
            default: return .json(["items": [4]])
            }
        }
        let service = try ServiceFixture.service(server)
        let pages = service.paginator("items", style: .page(size: 10), as: ItemsPage.self) { Page(items: $0.items) }
        #expect(try await pages.first() == Array(0..<10))
        var all = try await pages.first()
        while await pages.hasMore { all += try await pages.next() }
        #expect(all == Array(0..<25))
        #expect(server.count("/items") == 4)
        let cursor = service.paginator("feed", style: .cursor(limit: 2), as: ItemsPage.self) {
            Page(items: $0.items, nextCursor: $0.next)
        }
        #expect(try await cursor.all() == [1, 2, 3, 4])
        #expect(server.recordedRequests(path: "/feed").map { $0.queryValue("cursor") } == [nil, "c2", "c3"])
    }

    @Test func monitorsSeeEveryStepAndActivityGoesUpAndDown() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.status(503))
        server.enqueue(.json(["id": 1, "name": "x"]))
        let steps = LockedValue<[String]>([])
        let activity = LockedValue<[Bool]>([])
        let service = try ServiceFixture.service(server) { configuration in
            configuration.monitors = [
                ClosureEventMonitor(
                    onStart: { _ in steps.withLock { $0.append("start") } },
                    onSend: { event in steps.withLock { $0.append("send \(event.attempt)") } },
                    onReceive: { _, response in steps.withLock { $0.append("receive \(response.status.code)") } },
                    onRetry: { _, _, _ in steps.withLock { $0.append("retry") } },
                    onFinish: { _, result, metrics in
                        steps.withLock {
                            $0.append("finish \((try? result.get())?.status.code ?? 0) \(metrics.attempts)")
                        }
                    }),
                ActivityMonitor { active in activity.withLock { $0.append(active) } },
                LoggingEventMonitor(),
            ]
        }
        let _: ServiceUser = try await service.get(
            "users/1", options: .default.with(\.userInfo, [.showsActivity: true]))
        #expect(
            steps.withLock { $0 } == [
                "start", "send 1", "receive 503", "retry", "send 2", "receive 200", "finish 200 2",
            ])
        #expect(activity.withLock { $0 } == [true, false])
    }
}

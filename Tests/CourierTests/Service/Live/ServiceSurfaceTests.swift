import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Services without `@unchecked Sendable` (issue 17 item 5) and a surface that cannot be
/// shadowed by accident (item 6).
///
/// This file is itself the compile-level test: the services below are written as an app
/// writes them, with no `@unchecked`, and are used from `@MainActor` code and from detached
/// tasks at the same time; Swift 6's data-race checking accepts that only for `Sendable`
/// types. (A final class with a mutable `var` would not compile here: "stored property … of
/// 'Sendable'-conforming class … is mutable". On the old code every service had to be
/// `@unchecked Sendable`, and a subclass's `var` compiled silently.)
@Suite struct ServiceSurfaceTests {
    /// An app's auth service with an endpoint of its own named `logOut()`. On the old code
    /// `try await auth.logOut()` called the base class's synchronous `logOut()` (the server's
    /// endpoint was never called), with only a "no async operations occur within 'await'"
    /// warning — an error in this package, so this file did not compile there.
    struct AuthService: APIService {
        let core: ServiceCore

        func logIn(user: String) async throws(CourierError) {
            let session: [String: String] = try await post("auth/login", body: ["user": user])
            try core.logIn(credential: session["token"] ?? "")
        }

        func logOut() async throws(CourierError) {
            let _: Empty = try await post("auth/logout")
            core.logOut()
        }
    }

    /// A final class with state of its own: the state must be `Sendable` and immutable (here a
    /// lock), which the compiler checks.
    final class CountingService: APIService {
        let core: ServiceCore
        private let count = LockedValue(0)

        init(core: ServiceCore) { self.core = core }

        func echo(_ text: String) async throws(CourierError) -> String {
            count.withLock { $0 += 1 }
            let echo: Echo = try await get("anything", parameters: ["text": text])
            return echo.args["text"] ?? ""
        }

        var calls: Int { count.withLock { $0 } }
    }

    /// A struct may hold a mutable `var`: it is a value, copied into each task.
    struct LabelledService: APIService {
        let core: ServiceCore
        var label = "first"

        func echo() async throws(CourierError) -> String {
            let echo: Echo = try await get("anything", parameters: ["text": label])
            return echo.args["text"] ?? ""
        }
    }

    /// Main-actor state holding services, as a view model does.
    @MainActor final class ViewModel {
        let counting: CountingService
        var labelled: LabelledService
        var shown: [String] = []

        init(counting: CountingService, labelled: LabelledService) {
            self.counting = counting
            self.labelled = labelled
        }

        func load() async throws {
            shown.append(try await counting.echo("main"))
            labelled.label = "second"
            shown.append(try await labelled.echo())
        }
    }

    @Test func anEndpointNamedLogOutCallsTheServer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("POST", "/auth/login") { _ in .json(["token": "tok-1"]) }
        server.route("POST", "/auth/logout") { request in
            .status(request.header("Authorization") == "Bearer tok-1" ? 204 : 401)
        }
        let auth = AuthService(core: ServiceCore(client: try ServiceFixture.client(server)))
        try await auth.logIn(user: "ann")
        #expect(auth.core.client.isLoggedIn)

        try await auth.logOut()

        #expect(server.count("/auth/logout") == 1, "the app's own logOut() reached the server")
        #expect(!auth.core.client.isLoggedIn, "and ended the session through the core")
    }

    @Test @MainActor func servicesAreUsableFromTheMainActorAndDetachedTasks() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let core = ServiceCore(client: try ServiceFixture.client(server))
        let model = ViewModel(counting: CountingService(core: core), labelled: LabelledService(core: core))

        // The same service objects, from detached tasks while the main actor uses them.
        let counting = model.counting
        let labelled = model.labelled
        let detached = (0..<4).map { index in
            Task.detached {
                [try await counting.echo("task-\(index)"), try await labelled.echo()]
            }
        }
        try await model.load()
        var fromTasks: [[String]] = []
        for task in detached { fromTasks.append(try await task.value) }

        #expect(model.shown == ["main", "second"])
        #expect(fromTasks.map(\.first) == ["task-0", "task-1", "task-2", "task-3"])
        #expect(fromTasks.allSatisfy { $0.last == "first" }, "each task has its own copy of the struct")
        #expect(counting.calls == 5)
        // Identical GETs in flight may share one request (de-duplication): compare the set.
        let sent = Set(server.recordedRequests(path: "/anything").compactMap { $0.queryValue("text") })
        #expect(sent == ["main", "second", "first", "task-0", "task-1", "task-2", "task-3"])
    }

    /// DELETE infers its model from the context as GET does (on the old code its default
    /// `Empty.self` won: `let deleted: Echo = try await delete(…)` did not compile), and the
    /// verbs take a per-call response serializer.
    @Test func deleteInfersItsModelAndVerbsTakeASerializer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/greeting") { _ in .text("hello") }
        let service = try ServiceFixture.service(server)

        let deleted: Echo = try await service.delete("echo")
        #expect(deleted.method == "DELETE")
        let _: Empty = try await service.delete("status/204")

        let text: String = try await service.get("greeting", serializer: .string)
        #expect(text == "hello")
        let posted: String = try await service.post("echo", body: ["a": 1], serializer: .string)
        #expect(posted.contains(#""method":"POST""#))
        let raw: Data = try await service.get("greeting", serializer: .data)
        #expect(raw == Data("hello".utf8))
        #expect(server.recordedRequests.map(\.method) == ["DELETE", "DELETE", "GET", "POST", "GET"])
    }

    /// The base keeps no member of its own beside `core`: `ServiceCore` carries housekeeping,
    /// and is a service itself for calls without a domain type.
    @Test func housekeepingLivesOnTheCore() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let core = ServiceCore(client: try ServiceFixture.client(server))
        let service = LabelledService(core: core)
        #expect(service.core === core)
        #expect(core.core === core)
        let echo: Echo = try await core.get("anything")
        #expect(echo.method == "GET")
        try service.core.logIn(credential: "tok")
        #expect(core.client.isLoggedIn)
        service.core.logOut()
        #expect(!core.client.isLoggedIn)
        #expect(service.core.calls.cancelAll() == 0)
    }
}

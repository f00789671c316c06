import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct APIServiceTests {
    @Test func getComposesThePathAddsParametersAndDecodes() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/v1/users/a%20b") { _ in .json(["id": 7, "name": "Ann"]) }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.servers = try ServerPool(servers: [BaseURL(server.baseURL.absoluteString + "/v1")])
            configuration.headers = [.init("X-Client")!: "tests"]
            configuration.generalParameters = [("device", "linux"), ("channel", "a&b")]
            configuration.realTimeParameters = { [("ts", "1700000000")] }
        }
        let response = try await service.send(
            Endpoint<ServiceUser>.get(
                "users/a b", parameters: ["q": "x y"], options: .default.with(\.userInfo, ["k": 1])))
        #expect(response.value == ServiceUser(id: 7, name: "Ann"))
        #expect(response.attempts == 1)
        #expect(response.status == .ok)
        #expect(!response.isFromCache)
        let recorded = try #require(server.recordedRequests.first)
        #expect(recorded.path == "/v1/users/a%20b")
        #expect(recorded.queryValue("device") == "linux")
        #expect(recorded.queryValue("channel") == "a&b")
        #expect(recorded.queryValue("ts") == "1700000000")
        #expect(recorded.queryValue("q") == "x y")
        #expect(recorded.header("X-Client") == "tests")
        #expect(recorded.header("Accept")?.contains("application/json") == true)
    }

    @Test func verbsSendTheirMethodAndBody() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server)
        struct Echo: Decodable, Sendable {
            var method: String
            var body: String
        }
        let posted: Echo = try await service.post("echo", body: ServiceUser(id: 1, name: "B"))
        #expect(posted.method == "POST")
        #expect(posted.body.contains("\"name\":\"B\""))
        let put: Echo = try await service.put("echo", body: ["a": 1])
        #expect(put.method == "PUT")
        let patched: Echo = try await service.patch("echo", body: ["a": 2])
        #expect(patched.method == "PATCH")
        let deleted: Echo = try await service.delete("echo", as: Echo.self)
        #expect(deleted.method == "DELETE")
        let head = try await service.head("echo")
        #expect(head.status == .ok)
        #expect(server.recordedRequests.map(\.method) == ["POST", "PUT", "PATCH", "DELETE", "HEAD"])
    }

    /// `call` fails with `.invalidRequest` and `server` gets no request.
    static func expectRefusedBeforeSending(
        _ server: TestServer, _ call: () async throws -> Void,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            try await call()
            Issue.record("expected a rejection", sourceLocation: sourceLocation)
        } catch {
            #expect((error as? CourierError)?.code == .invalidRequest, sourceLocation: sourceLocation)
        }
        #expect(server.requestCount == 0, sourceLocation: sourceLocation)
    }

    @Test(arguments: ["//evil.example/x", "https://evil.example/steal", "../admin", "a/%2e%2e/b"])
    func unsafePathsNeverReachTheNetwork(_ path: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server)
        await Self.expectRefusedBeforeSending(server) { let _: ServiceUser = try await service.get(path) }
    }

    /// An id of `"."` interpolated into a path addressed the collection: `DELETE notes/.` went
    /// out as `DELETE /notes`. Refused before sending, as Retrofit refuses `.` path values.
    @Test(arguments: [".", "%2e", "%2E"])
    func aDotIdNeverAddressesTheCollection(_ id: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server)
        await Self.expectRefusedBeforeSending(server) { let _: Empty = try await service.delete("notes/\(id)") }
    }

    /// A `..` step hidden in one segment, behind an encoded separator (`..%2F`, `%2F..`,
    /// `..%5C`) or before a path parameter (`..;`, which Tomcat and Jetty read as `..`), leaves
    /// the base path at a server that decodes or strips before it normalises the path (nginx
    /// matches its locations on the decoded path): refused like `../` and `%2e%2e`.
    @Test(arguments: [
        "users/..%2Fadmin", "users/%2F..", "users/..%5Cadmin", "users/%2e%2e%2fadmin", "users/..;/admin",
        "users/..;jsessionid=1/admin", "..%2F..%2Fadmin", "users/%2E%2E%5C",
    ])
    func aParentStepHiddenInASegmentNeverReachesTheNetwork(_ path: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.servers = try ServerPool(servers: [BaseURL(server.baseURL.absoluteString + "/v1")])
        }
        await Self.expectRefusedBeforeSending(server) { let _: ServiceUser = try await service.get(path) }
    }

    @Test func cancelBeforeSendNeverReachesTheServer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server)
        let call = service.call(Endpoint<ServiceUser>.get("users/1"))
        #expect(service.calls.count == 1)
        #expect(service.calls.cancel(call.id))
        call.start()
        let result = await call.result()
        guard case .failure(let error) = result else {
            Issue.record("expected cancellation")
            return
        }
        #expect(error.code == .cancelled)
        // Deferred calls cancelled by cancelAll(), and the callback API's onCancel.
        let queue = DispatchQueue(label: "callbacks")
        let cancelled = ServiceGate()
        let deferred = (0..<3).map { _ in service.call(Endpoint<ServiceUser>.get("users/2")) }
        #expect(service.calls.cancelAll() == 3)
        deferred[0].start(deliveringOn: queue, onSuccess: { _ in }, onCancel: { cancelled.open() })
        await cancelled.wait()
        for call in deferred.dropFirst() { await #expect(throws: CourierError.self) { try await call.run() } }
        #expect(server.requestCount == 0)
        #expect(service.calls.count == 0)
    }

    /// The registry held every deferred call until it finished, and a call's operation holds
    /// its service: a call built and never started (nor cancelled) kept the service, its client
    /// and the client's transport thread alive for good after the app let go of all of them.
    @Test func aDeferredCallNeverStartedDoesNotKeepItsServiceAndClientAlive() async throws {
        let server = try TestServer()
        defer { server.stop() }
        weak var released: ServiceCore?
        weak var releasedClient: HTTPClient?
        do {
            let service = try ServiceFixture.service(server)
            _ = service.call(Endpoint<ServiceUser>.get("users/1"))
            released = service
            releasedClient = service.client
        }
        #expect(released == nil)
        #expect(releasedClient == nil)
        // A call still held stays registered, and cancellable, until it is let go of.
        let service = try ServiceFixture.service(server)
        var call: Call<Response<ServiceUser>>? = service.call(Endpoint<ServiceUser>.get("users/1"))
        #expect(service.calls.count == 1)
        call = nil
        #expect(service.calls.count == 0)
        call = service.call(Endpoint<ServiceUser>.get("users/1"))
        #expect(service.calls.cancelAll() == 1)
        await #expect(throws: CourierError.self) { try await call?.run() }
        #expect(service.calls.count == 0)
        #expect(server.requestCount == 0)
    }

    @Test func cancelInFlightAbortsTheTransfer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.route("/slow") { _ in
            held.hold()
            return .json(["id": 1, "name": "late"])
        }
        let service = try ServiceFixture.service(server)
        let call = service.call(Endpoint<ServiceUser>.get("slow"))
        call.start()
        while held.arrived.value == 0 { await Task.yield() }
        call.cancel()
        do {
            _ = try await call.value()
            Issue.record("expected cancellation")
        } catch {
            #expect(error.code == .cancelled)
        }
        held.release(1)
        // Another service's calls are not affected by this one's cancelAll().
        let other = try ServiceFixture.service(server)
        let otherCall = other.call(Endpoint<ServiceUser>.get("users/9"))
        server.route("/users/9") { _ in .json(["id": 9, "name": "other"]) }
        service.calls.cancelAll()
        #expect(try await otherCall.run().value.id == 9)
    }

    @Test func cancellingAGetInFlightByIdentifierOrAllEndsItAndNotItsCaller() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.route("/slow") { _ in
            held.hold()
            return .json(["id": 1, "name": "late"])
        }
        server.route("/users/1") { _ in .json(["id": 1, "name": "Ann"]) }
        let service = try ServiceFixture.service(server)
        for byIdentifier in [true, false] {
            let arrivals = held.arrived.value
            let caller = Task { () async -> (Result<ServiceUser, CourierError>, Bool) in
                let result: Result<ServiceUser, CourierError>
                do throws(CourierError) {
                    result = .success(try await service.get("slow"))
                } catch {
                    result = .failure(error)
                }
                // The call was cancelled, not the task that made it.
                return (result, Task.isCancelled)
            }
            while held.arrived.value == arrivals { await Task.yield() }
            #expect(service.calls.count == 1)
            if byIdentifier {
                let id = try #require(service.calls.identifiers.first)
                #expect(service.calls.cancel(id))
            } else {
                #expect(service.calls.cancelAll() == 1)
            }
            let (result, callerCancelled) = await caller.value
            #expect(!callerCancelled)
            guard case .failure(let error) = result else {
                Issue.record("expected cancellation")
                continue
            }
            #expect(error.code == .cancelled)
            #expect(service.calls.count == 0)
        }
        held.release(2)
        let user: ServiceUser = try await service.get("users/1")
        #expect(user.name == "Ann")
        // A call that returned has left the registry.
        #expect(service.calls.count == 0)
        #expect(!service.calls.cancel(CallID.next()))
    }

    @Test func identicalGETsShareOneTransfer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.routeHeldFeed(held)
        let service = try ServiceFixture.service(server)
        let dedup = service.configuration.deduplicator
        let results = try await withThrowingTaskGroup(of: ServiceUser.self) { group in
            for _ in 0..<10 { group.addTask { try await service.get("feed") } }
            while dedup.waiterCount < 10 { await Task.yield() }
            held.release(1)
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 10)
        #expect(results.allSatisfy { $0.name == "feed" })
        #expect(server.count("/feed") == 1)
        // Opting out: each call sends its own request.
        server.resetRecords()
        let optOut = CallOptions.default.with(\.deduplicates, false)
        try await withThrowingTaskGroup(of: ServiceUser.self) { group in
            for _ in 0..<4 { group.addTask { try await service.get("feed", options: optOut) } }
            while held.arrived.value < 5 { await Task.yield() }
            held.release(4)
            for try await _ in group {}
        }
        #expect(server.count("/feed") == 4)
    }

    /// A call with a progress handler joined an identical GET in flight: the shared transfer
    /// reported to the first call's handlers only, and the joining call's progress bar never
    /// moved. Such a call now sends its own request, as a call with its own limits does.
    @Test func aGETWithAProgressHandlerGetsItsProgress() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.routeHeldFeed(held)
        let service = try ServiceFixture.service(server)
        let dedup = service.configuration.deduplicator
        let reports = ServiceCounter()
        let withProgress = CallOptions(downloadProgress: { _ in reports.increment() })
        let first = Task { () throws(CourierError) -> ServiceUser in try await service.get("feed") }
        while held.arrived.value < 1 { await Task.yield() }
        let second = Task { () throws(CourierError) -> ServiceUser in
            try await service.get("feed", options: withProgress)
        }
        // Sent (a request of its own), or joined the first call's transfer.
        while held.arrived.value < 2 && dedup.waiterCount < 2 { await Task.yield() }
        held.release(2)
        #expect(try await first.value.name == "feed")
        #expect(try await second.value.name == "feed")
        #expect(reports.value > 0, "the second call's handler was never called")
        #expect(server.count("/feed") == 2)
    }

    @Test func callbackAPIDeliversOnTheQueue() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/users/3") { _ in .json(["id": 3, "name": "C"]) }
        let service = try ServiceFixture.service(server)
        let queue = DispatchQueue(label: "ui")
        let seen = LockedValue<[String]>([])
        let done = ServiceGate()
        let id = service.call(Endpoint<ServiceUser>.get("users/3")).start(
            deliveringOn: queue,
            onSuccess: { user in
                dispatchPrecondition(condition: .onQueue(queue))
                seen.withLock { $0.append("success \(user.value.name)") }
            },
            onFinished: {
                seen.withLock { $0.append("finished") }
                done.open()
            })
        await done.wait()
        #expect(seen.withLock { $0 } == ["success C", "finished"])
        #expect(id.rawValue > 0)
        // The service-level form, on the configured queue.
        let failed = ServiceGate()
        let failure = LockedValue<CourierError?>(nil)
        service.start(
            Endpoint<ServiceUser>.get("users/404"),
            onFailure: { error in
                dispatchPrecondition(condition: .onQueue(service.configuration.callbackQueue))
                failure.withLock { $0 = error }
            }, onFinished: { failed.open() })
        await failed.wait()
        #expect(failure.withLock { $0?.status } == .notFound)
    }

    @Test func vetoesSkipWithoutSendingAndDropResults() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/users/4") { _ in .json(["id": 4, "name": "D"]) }
        let service = try ServiceFixture.service(server)
        do {
            let _: ServiceUser = try await service.get("users/4", options: .default.with(\.skipIf, { true }))
            Issue.record("expected a skip")
        } catch {
            #expect(error.code == .skipped)
        }
        #expect(server.requestCount == 0)
        do {
            let _: ServiceUser = try await service.get(
                "users/4", options: .default.with(\.acceptsResult, { _ in false }))
            Issue.record("expected the result to be dropped")
        } catch {
            #expect(error.code == .skipped)
        }
        #expect(server.requestCount == 1)
    }

    @Test func secondTapWhileTheFirstIsInFlightIsSkipped() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let held = HeldRoute()
        server.route("POST", "/posts/7/like") { _ in
            held.hold()
            return .json(["id": 7, "name": "liked"])
        }
        let service = try ServiceFixture.service(server)
        try await ServiceFixture.expectSecondTapSkipped(service, held: held, server: server)
        #expect(service.configuration.inFlightGuard.count == 0)
        // After the first finished, the endpoint is free again.
        held.release(1)
        let guarded = CallOptions.default.with(\.skipsWhileInFlight, true)
        let _: ServiceUser = try await service.post("posts/7/like", options: guarded)
        #expect(server.count("/posts/7/like") == 2)
    }
}

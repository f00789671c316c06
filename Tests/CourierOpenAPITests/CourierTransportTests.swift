import CourierOpenAPI
import CourierTesting
import Foundation
import HTTPTypes
import InMemoryTracing
import MetricsTestKit
import OpenAPIRuntime
import Testing
import Tracing

@testable import Courier

/// The client generated from Fixtures/openapi/openapi.yaml (Generated/, by
/// scripts/generate-openapi.sh) against the loopback server, through `CourierTransport`.
@Suite struct CourierTransportTests {
    // MARK: - Encoding and decoding

    @Test func aGETCarriesItsPathQueryAndHeaderParametersAndDecodesTheAnswer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.json(["message": "hello, Ada"]).with("X-Served-By", "loopback"))
        let api = try Self.api(server)
        let output = try await api.client.getGreeting(
            path: .init(name: "Ada Lovelace/1"), query: .init(greeting: "hi & bye", tags: ["a", "b"]),
            headers: .init(xRequestTag: "t-1"))

        let ok = try output.ok
        #expect(try ok.body.json.message == "hello, Ada")
        #expect(ok.headers.xServedBy == "loopback")
        let sent = try #require(server.recordedRequests.first)
        #expect(sent.method == "GET")
        // The path parameter is one segment: its space and slash are escaped.
        #expect(sent.path == "/greetings/Ada%20Lovelace%2F1")
        #expect(sent.queryValue("greeting") == "hi & bye")
        #expect(sent.queryItems.filter { $0.name == "tags" }.map(\.value) == ["a", "b"])
        #expect(sent.header("X-Request-Tag") == "t-1")
        #expect(sent.header("Accept") == "application/json")
    }

    @Test func aPOSTSendsItsJSONBody() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.json(["id": 7, "title": "groceries", "body": "milk"], status: 201))
        let api = try Self.api(server)
        let output = try await api.client.createNote(body: .json(.init(title: "groceries", body: "milk")))

        let note = try output.created.body.json
        #expect(note.id == 7)
        #expect(note.title == "groceries")
        let sent = try #require(server.recordedRequests.first)
        #expect(sent.method == "POST")
        #expect(sent.path == "/notes")
        #expect(sent.header("Content-Type")?.hasPrefix("application/json") == true)
        let body = try JSONSerialization.jsonObject(with: sent.body) as? [String: String]
        #expect(body == ["title": "groceries", "body": "milk"])
    }

    @Test func aBinaryBodyGoesOutAndComesBackAsBytes() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("PUT", "/notes/3/attachment") { request in
            ScriptedResponse(
                status: 200, headers: [.contentType: "application/octet-stream"], body: request.body)
        }
        let api = try Self.api(server)
        let bytes = TestServer.bytePattern(count: 100_000)
        let output = try await api.client.putAttachment(path: .init(id: 3), body: .binary(HTTPBody(bytes)))

        let echoed = try await Data(collecting: try output.ok.body.binary, upTo: 1 << 20)
        #expect(echoed == bytes)
        #expect(server.recordedRequests.first?.header("Content-Type") == "application/octet-stream")
    }

    @Test func aStreamedBodyOfUnknownLengthIsSentWhole() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(ScriptedResponse(status: 200, headers: [.contentType: "application/octet-stream"]))
        let api = try Self.api(server)
        let chunks: [HTTPBody.ByteChunk] = [[1, 2, 3], [4, 5], [6]]
        let stream = AsyncStream<HTTPBody.ByteChunk> { continuation in
            for chunk in chunks { continuation.yield(chunk) }
            continuation.finish()
        }
        _ = try await api.client.putAttachment(path: .init(id: 4), body: .binary(HTTPBody(stream, length: .unknown)))
        #expect(server.recordedRequests.first?.body == Data([1, 2, 3, 4, 5, 6]))
    }

    @Test func aBodyOverTheLimitFailsBeforeAnythingIsSent() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let api = try Self.api(server) { $0.maxRequestBodySize = 1_000 }
        let error = await Self.courierError {
            _ = try await api.client.putAttachment(
                path: .init(id: 3), body: .binary(HTTPBody(TestServer.bytePattern(count: 1_001))))
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains("maxRequestBodySize") == true)
        #expect(server.requestCount == 0)
    }

    /// A negative limit refused every body (even an empty one) with `.invalidRequest`, as if the
    /// body were at fault, and let every operation without a body through: a configuration
    /// that cannot work showed up only on some operations, and not as one.
    @Test(arguments: [-1, Int.min])
    func aNegativeBodyLimitIsAConfigurationErrorForEveryOperation(_ limit: Int) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let api = try Self.api(server) { $0.maxRequestBodySize = limit }
        let withoutBody = await Self.courierError { _ = try await api.client.getGreeting(path: .init(name: "Ada")) }
        #expect(withoutBody?.code == .configuration)
        let withBody = await Self.courierError {
            _ = try await api.client.putAttachment(path: .init(id: 3), body: .binary(HTTPBody()))
        }
        #expect(withBody?.code == .configuration)
        #expect(withBody?.message.contains("maxRequestBodySize") == true)
        #expect(server.requestCount == 0)
    }

    /// The body's declared length was reserved up front: with a limit of `Int.max`, a body
    /// declaring `Int64.max` bytes trapped the process (any large declared length allocated
    /// that much before a byte was read). The buffer now grows with the bytes that arrive.
    @Test func aDeclaredLengthIsNotReservedUpFront() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(ScriptedResponse(status: 200, headers: [.contentType: "application/octet-stream"]))
        let api = try Self.api(server) { $0.maxRequestBodySize = .max }
        let stream = AsyncStream<HTTPBody.ByteChunk> { continuation in
            continuation.yield([1, 2, 3])
            continuation.finish()
        }
        _ = try await api.client.putAttachment(
            path: .init(id: 5), body: .binary(HTTPBody(stream, length: .known(.max))))
        #expect(server.recordedRequests.first?.body == Data([1, 2, 3]))
    }

    /// A limit of zero takes empty bodies only.
    @Test func aZeroBodyLimitTakesAnEmptyBodyOnly() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(ScriptedResponse(status: 200, headers: [.contentType: "application/octet-stream"]))
        let api = try Self.api(server) { $0.maxRequestBodySize = 0 }
        _ = try await api.client.putAttachment(path: .init(id: 3), body: .binary(HTTPBody()))
        let error = await Self.courierError {
            _ = try await api.client.putAttachment(path: .init(id: 3), body: .binary(HTTPBody(Data([1]))))
        }
        #expect(error?.code == .invalidRequest)
        #expect(server.requestCount == 1)
    }

    // MARK: - Error statuses

    @Test func refusedStatusesAreTheSpecsDocumentedCases() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.json(["reason": "nobody called Zed"], status: 404))
        server.enqueue(.json(["reason": "a title is required"], status: 422))
        server.enqueue(.status(204))
        server.enqueue(.json(["reason": "locked"], status: 409))
        let api = try Self.api(server)

        let missing = try await api.client.getGreeting(path: .init(name: "Zed"))
        #expect(try missing.notFound.body.json.reason == "nobody called Zed")
        let refused = try await api.client.createNote(body: .json(.init(title: "")))
        #expect(try refused.unprocessableContent.body.json.reason == "a title is required")
        let deleted = try await api.client.deleteNote(path: .init(id: 1))
        _ = try deleted.noContent
        let locked = try await api.client.deleteNote(path: .init(id: 2))
        guard case .default(let statusCode, let payload) = locked else {
            Issue.record("expected the default case, got \(locked)")
            return
        }
        #expect(statusCode == 409)
        #expect(try payload.body.json.reason == "locked")
        #expect(server.requestCount == 4)
    }

    @Test func anUndocumentedStatusIsUndocumented() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.text("teapot", status: 418))
        let api = try Self.api(server)
        let output = try await api.client.getGreeting(path: .init(name: "Ada"))
        guard case .undocumented(let statusCode, _) = output else {
            Issue.record("expected undocumented, got \(output)")
            return
        }
        #expect(statusCode == 418)
    }

    // MARK: - The service's execution applies

    @Test func theServicesRetryPolicyRetriesAnOperation() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.status(503))
        server.enqueue(.status(503))
        server.enqueue(.json(["message": "third time"]))
        let api = try Self.api(server)
        let output = try await api.client.getGreeting(path: .init(name: "Ada"))
        #expect(try output.ok.body.json.message == "third time")
        #expect(server.requestCount == 3)
    }

    @Test func aStatusStillRefusedAfterTheRetriesReachesTheGeneratedCode() async throws {
        let server = try TestServer()
        defer { server.stop() }
        for _ in 0..<3 { server.enqueue(.text("down", status: 503)) }
        let api = try Self.api(server)
        let output = try await api.client.getGreeting(path: .init(name: "Ada"))
        guard case .undocumented(let statusCode, _) = output else {
            Issue.record("expected undocumented, got \(output)")
            return
        }
        #expect(statusCode == 503)
        // The policy's two retries, then the answer.
        #expect(server.requestCount == 3)
    }

    @Test func theCredentialGoesToTheAPIAndNotToAnotherServer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let other = try TestServer()
        defer { other.stop() }
        server.enqueue(.json(["message": "hi"]))
        other.enqueue(.json(["message": "hi"]))
        let api = try Self.api(server)
        try api.service.logIn(credential: "token-123")
        _ = try await api.client.getGreeting(path: .init(name: "Ada"))
        let elsewhere = Client(serverURL: other.baseURL, transport: CourierTransport(api.service))
        _ = try await elsewhere.getGreeting(path: .init(name: "Ada"))

        #expect(server.recordedRequests.first?.header("Authorization") == "Bearer token-123")
        #expect(other.recordedRequests.count == 1)
        #expect(other.recordedRequests.first?.header("Authorization") == nil)
    }

    /// Several users on one client and one cache, each through a transport of their own: a
    /// service's bearer authentication (two users), a service's API key, the transport's own
    /// Authorization header on an anonymous service, and the anonymous service itself. One
    /// batch mixes their operations; the server answers with the user it saw, privately
    /// cacheable, and de-duplication is on. Every answer is the asker's own.
    @Test func usersOnOneClientEachGetTheirOwnAnswers() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/greetings/Ada") { request in
            let user = request.header("Authorization") ?? request.header("X-Api-Key") ?? "anonymous"
            var answer = ScriptedResponse.json(["message": user]).with(.cacheControl, "private, max-age=60")
            answer.delay = .milliseconds(2)
            return answer
        }
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let client = try HTTPClient(
            configuration: HTTPClient.Configuration(
                baseURL: server.baseURL, timeout: .seconds(60), notificationCenter: NotificationCenter(), cache: cache))
        func service(_ configure: (inout ServiceConfiguration) -> Void = { _ in }) -> ServiceCore {
            var configuration = ServiceConfiguration(
                retryPolicy: RetryPolicy(jitter: 0), clock: ManualServiceClock(autoAdvance: true))
            configure(&configuration)
            return ServiceCore(client: client, configuration: configuration)
        }
        func bearer(_ token: String) -> ServiceCore {
            service { $0.authentication = .bearer(AuthRefreshCoordinator<String>(credential: token) { _ in token }) }
        }
        let anonymous = service()
        var own = CallOptions.default
        own.headers[.authorization] = "Bearer dan"
        let users: [(expected: String, client: Client)] = [
            ("Bearer ann", CourierTransport(bearer("ann"))), ("Bearer bob", CourierTransport(bearer("bob"))),
            ("key-cat", CourierTransport(service { $0.headers[HTTPField.Name("X-Api-Key")!] = "key-cat" })),
            ("Bearer dan", CourierTransport(anonymous, options: own)), ("anonymous", CourierTransport(anonymous)),
        ].map { ($0.0, Client(serverURL: server.baseURL, transport: $0.1)) }
        let plan = (0..<100).map { users[$0 * 7 % users.count] }
        let results = await Batch.run(
            plan.map { user in
                { @Sendable () async throws -> String in
                    try await user.client.getGreeting(path: .init(name: "Ada")).ok.body.json.message
                }
            }, maximumConcurrent: 16)
        for (user, result) in zip(plan, results) {
            #expect((try? result.get()) == user.expected, "\(user.expected) got \(result)")
        }
        // The cache (and de-duplication) answered most of them, each user from their own entry.
        #expect(server.requestCount < plan.count / 2)
    }

    @Test func theServerURLsPathPrefixComesBeforeTheOperationsPath() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.json(["message": "hi"]))
        let api = try Self.api(server)
        let client = Client(serverURL: server.url("/v1"), transport: CourierTransport(api.service))
        _ = try await client.getGreeting(path: .init(name: "Ada"), query: .init(greeting: "hi"))
        #expect(server.recordedRequests.first?.target == "/v1/greetings/Ada?greeting=hi")
    }

    @Test func theServersModeUsesTheServicesServerWhateverTheClientsURL() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.json(["message": "hi"]))
        let api = try Self.api(server)
        let client = Client(
            serverURL: URL(string: "https://notes.example.com/v1")!,
            transport: CourierTransport(api.service, server: .service))
        _ = try await client.getGreeting(path: .init(name: "Ada"))
        #expect(server.recordedRequests.first?.path == "/greetings/Ada")
    }

    /// The generated code reads the answer its spec describes: the service's envelope rule and
    /// preprocessors, made for the service's own model calls, leave an operation's answer as
    /// it came (Docs/Ecosystem.md). The envelope unwrapped it (the generated code got the
    /// payload), or failed the operation with `.decoding` for an answer without an envelope.
    @Test func theServicesEnvelopeAndPreprocessorsLeaveAnOperationsAnswerAsItCame() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/greetings/Ada") { _ in ScriptedResponse.json(["message": "as sent"]) }
        server.route("GET", "/greetings/Env") { _ in
            ScriptedResponse.json(["code": "0", "msg": "fine", "data": ["message": "payload"]])
        }
        let api = try Self.api(
            server,
            service: { service in
                service.envelope = .json()
                service.pipeline = service.pipeline.adding(preprocessors: [
                    .custom { context in
                        var changed = context
                        changed.body = Data(#"{"message":"preprocessed"}"#.utf8)
                        return changed
                    }
                ])
            })
        let plain = try await api.client.getGreeting(path: .init(name: "Ada"))
        #expect(try plain.ok.body.json.message == "as sent")
        // The rule and the preprocessor still apply to the service's own calls.
        struct Payload: Decodable, Sendable { var message: String }
        let own = try await api.service.send(Endpoint<Payload>.get("greetings/Env"))
        #expect(own.value.message == "preprocessed")
    }

    @Test func theClientsCacheAnswersARepeatedOperation() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/greetings/Ada") { _ in
            ScriptedResponse.json(["message": "cached"]).with(.cacheControl, "max-age=86400")
        }
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let api = try Self.api(server, cache: cache)
        let first = try await api.client.getGreeting(path: .init(name: "Ada"))
        let second = try await api.client.getGreeting(path: .init(name: "Ada"))
        #expect(try first.ok.body.json.message == "cached")
        #expect(try second.ok.body.json.message == "cached")
        #expect(server.requestCount == 1)
    }

    @Test func cancellingTheTaskCancelsTheOperation() async throws {
        let server = try TestServer()
        defer { server.stop() }
        var late = ScriptedResponse.json(["message": "late"])
        late.delay = TestTimeBound.scaled(.seconds(30))
        server.enqueue(late)
        let api = try Self.api(server)
        let task = Task { try await api.client.getGreeting(path: .init(name: "Ada")) }
        #expect(await server.waitForRequests(atLeast: 1))
        let started = ContinuousClock.now
        task.cancel()
        let result = await task.result
        #expect(ContinuousClock.now - started < TestTimeBound.scaled(.seconds(10)))
        guard case .failure(let error) = result else {
            Issue.record("the operation finished despite the cancellation")
            return
        }
        #expect(((error as? ClientError)?.underlyingError as? CourierError)?.code == .cancelled)
    }

    /// An operation whose request body was still being read was in no registry: the service's
    /// `calls.cancelAll()` (at logout, say) did not see it, and once the body was read it was
    /// sent all the same. It is one of the service's calls from its start now.
    @Test func cancellingTheServicesCallsWhileTheBodyIsReadSendsNothing() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(ScriptedResponse(status: 200, headers: [.contentType: "application/octet-stream"]))
        let api = try Self.api(server)
        let (chunks, producer) = AsyncStream<HTTPBody.ByteChunk>.makeStream()
        let (reads, reader) = AsyncStream<Void>.makeStream()
        let body = HTTPBody(
            chunks.map { chunk in
                reader.yield()
                return chunk
            }, length: .unknown, iterationBehavior: .single)
        let task = Task { try await api.client.putAttachment(path: .init(id: 6), body: .binary(body)) }
        producer.yield([1, 2, 3])
        var read = reads.makeAsyncIterator()
        _ = await read.next()
        #expect(api.service.calls.count == 1)
        #expect(api.service.calls.cancelAll() == 1)
        // The rest of the body comes after all.
        producer.yield([4, 5])
        producer.finish()
        let result = await task.result
        guard case .failure(let error) = result else {
            Issue.record("the operation was sent after its service's calls were cancelled")
            return
        }
        #expect(((error as? ClientError)?.underlyingError as? CourierError)?.code == .cancelled)
        #expect(server.requestCount == 0)
        #expect(api.service.calls.count == 0)
    }

    // MARK: - Telemetry

    @Test func eachOperationIsASpanNamedByItsOperationIDWithMetricsLabelled() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.status(503))
        server.enqueue(.json(["message": "hi"]))
        server.enqueue(.json(["id": 1, "title": "t"], status: 201))
        let tracer = InMemoryTracer()
        let metrics = TestMetrics()
        let api = try Self.api(server, tracer: tracer, metrics: metrics)
        _ = try await api.client.getGreeting(path: .init(name: "Ada"))
        _ = try await api.client.createNote(body: .json(.init(title: "t")))

        let spans = tracer.finishedSpans
        let calls = spans.filter { $0.kind == .internal }
        #expect(calls.map(\.operationName).sorted() == ["createNote", "getGreeting"])
        let greeting = try #require(calls.first { $0.operationName == "getGreeting" })
        #expect(greeting.attributes["courier.operation"]?.toSpanAttribute() == "getGreeting")
        #expect(greeting.attributes["http.response.status_code"]?.toSpanAttribute() == 200)
        let attempts = spans.filter { $0.kind == .client && $0.parentSpanID == greeting.spanID }
        #expect(attempts.count == 2)

        let get = [("service", "notes"), ("method", "GET"), ("operation", "getGreeting")]
        #expect(try metrics.expectCounter("courier_retries", get).totalValue == 1)
        let post = [("service", "notes"), ("method", "POST"), ("operation", "createNote"), ("status", "2xx")]
        #expect(try metrics.expectTimer("courier_request_duration", post).values.count == 1)
    }

    // MARK: - Support

    struct API {
        let service: ServiceCore
        let client: Client
    }

    private static func api(
        _ server: TestServer, cache: HostScopedCache? = nil, tracer: (any Tracer)? = nil, metrics: TestMetrics? = nil,
        transport configure: (inout CourierTransport) -> Void = { _ in },
        service configureService: (inout ServiceConfiguration) -> Void = { _ in }
    ) throws -> API {
        var configuration = HTTPClient.Configuration(
            baseURL: server.baseURL, timeout: .seconds(60), notificationCenter: NotificationCenter(), cache: cache)
        configuration.tracer = tracer
        configuration.metricsFactory = metrics
        var service = ServiceConfiguration(
            retryPolicy: RetryPolicy(jitter: 0), clock: ManualServiceClock(autoAdvance: true))
        service.name = "notes"
        configureService(&service)
        let core = ServiceCore(client: try HTTPClient(configuration: configuration), configuration: service)
        var transport = CourierTransport(core)
        configure(&transport)
        return API(service: core, client: Client(serverURL: server.baseURL, transport: transport))
    }

    /// The `CourierError` under the generated client's `ClientError`.
    private static func courierError(_ body: () async throws -> Void) async -> CourierError? {
        do {
            try await body()
            return nil
        } catch {
            return (error as? ClientError)?.underlyingError as? CourierError
        }
    }
}

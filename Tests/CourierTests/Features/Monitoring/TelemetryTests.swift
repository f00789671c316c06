import CourierTesting
import Foundation
import HTTPTypes
import InMemoryTracing
import Logging
import MetricsTestKit
import Testing
import Tracing

@_spi(Fuzzing) @testable import Courier

/// Logging, tracing and metrics of calls, against the loopback server, with swift-log's
/// handler API, swift-distributed-tracing's `InMemoryTracer` and swift-metrics' `TestMetrics`.
@Suite struct TelemetryTests {
    // MARK: - Logging

    @Test func aCallLogsWithItsIDAndNoSecret() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.status(503))
        server.enqueue(.json(["id": 1, "name": "x"]))
        let lines = Recorder<String>()
        var logger = Logger(label: "test") { _ in MetadataLogHandler(lines: lines) }
        logger.logLevel = .trace
        let service = try Self.service(server.baseURL, logger: logger)
        try service.client.logIn(credential: "bearer-secret-1")
        let user: ServiceUser = try await service.get("users/1", parameters: ["token": "query-secret-2", "page": "3"])
        #expect(user.id == 1)

        let logged = lines.values
        // Every line of the call, the client's hop lines included, carries its id.
        let callLines = logged.filter { $0.contains("courier:") }
        #expect(callLines.count >= 5, "\(logged)")
        let ids = Set(
            callLines.compactMap { line in
                line.split(separator: " ").first { $0.hasPrefix("courier.call_id=") }
            })
        #expect(ids.count == 1, "\(callLines)")
        #expect(logged.contains { $0.contains("courier: retry after") })
        #expect(logged.contains { $0.contains("courier: call ended 200 after 2 attempt(s)") })
        let text = logged.joined(separator: "\n")
        #expect(text.contains("page=3"))
        #expect(!text.contains("bearer-secret-1"))
        #expect(!text.contains("query-secret-2"))
    }

    /// Both ways a call sends: its own transfer, and one shared with identical calls.
    @Test(arguments: [true, false])
    func aCallsOwnLoggerIsUsed(deduplicates: Bool) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.json(["id": 1, "name": "x"]))
        let lines = Recorder<String>()
        var logger = Logger(label: "request") { _ in MetadataLogHandler(lines: lines) }
        logger.logLevel = .debug
        logger[metadataKey: "request-id"] = "incoming-42"
        let service = try Self.service(server.baseURL)
        let options = CallOptions.default.with(\.logger, logger).with(\.deduplicates, deduplicates)
        let _: ServiceUser = try await service.get("users/1", options: options)
        let callLines = lines.values.filter { $0.contains("courier:") }
        #expect(!callLines.isEmpty)
        #expect(callLines.allSatisfy { $0.contains("request-id=incoming-42") && $0.contains("courier.call_id=") })
        // The transfer logs through the call's logger too: what it sent, and what came back.
        #expect(callLines.contains { $0.contains("courier: → GET") })
        #expect(callLines.contains { $0.contains("courier: ← 200 GET") })
    }

    // MARK: - Tracing

    @Test func spansFollowTheCallAndItsAttemptsAndTheServerGetsTraceparent() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.status(503))
        server.enqueue(.json(["id": 1, "name": "x"]))
        let tracer = W3CTestTracer()
        let service = try Self.service(server.baseURL, tracer: tracer)
        let _: ServiceUser = try await service.get("users/1", parameters: ["token": "query-secret", "page": "3"])

        let spans = tracer.memory.finishedSpans
        let call = try #require(spans.first { $0.kind == .internal })
        let attempts = spans.filter { $0.kind == .client }
        #expect(spans.count == 3)
        #expect(call.operationName == "GET 127.0.0.1")  // the service has no name: its host
        #expect(attempts.map(\.operationName) == ["GET", "GET"])
        #expect(attempts.allSatisfy { $0.parentSpanID == call.spanID && $0.traceID == call.traceID })

        let first = attempts[0].attributes
        let second = attempts[1].attributes
        #expect(first["http.request.method"]?.toSpanAttribute() == "GET")
        #expect(first["http.response.status_code"]?.toSpanAttribute() == 503)
        #expect(first["error.type"]?.toSpanAttribute() == "503")
        #expect(first["http.request.resend_count"] == nil)
        #expect(attempts[0].status?.code == .error)
        #expect(second["http.response.status_code"]?.toSpanAttribute() == 200)
        #expect(second["http.request.resend_count"]?.toSpanAttribute() == 1)
        #expect(second["server.address"]?.toSpanAttribute() == "127.0.0.1")
        #expect(second["server.port"]?.toSpanAttribute() == .int64(Int64(server.port)))
        let url = "\(second["url.full"]?.toSpanAttribute() ?? "")"
        #expect(url.contains("/users/1?"))
        #expect(url.contains("page=3"))
        #expect(!url.contains("query-secret"))
        #expect(url.contains(Redaction.marker))
        #expect(call.attributes["http.response.status_code"]?.toSpanAttribute() == 200)
        #expect(call.status == nil)

        // Each attempt carried its own span's context.
        let sent = server.recordedRequests(path: "/users/1").map { $0.header("traceparent") }
        #expect(sent == attempts.map { "00-\($0.traceID)-\($0.spanID)-01" })
    }

    @Test func aFailedCallRecordsItsError() async throws {
        let server = try TestServer.blackHole()
        defer { server.stop() }
        let tracer = W3CTestTracer()
        let service = try Self.service(server.baseURL, tracer: tracer, timeout: .milliseconds(300)) {
            $0.retryPolicy = RetryPolicy.none
        }
        let error = await courierError { let _: ServiceUser = try await service.get("users/1") }
        #expect(error?.code == .timedOut)
        let spans = tracer.memory.finishedSpans
        #expect(spans.count == 2)
        for span in spans {
            #expect(span.status?.code == .error)
            #expect(span.attributes["error.type"]?.toSpanAttribute() == "timedOut")
            #expect(span.errors.count == 1)
        }
    }

    @Test func aCredentialSentInTheQueryIsRedactedInTheAttemptSpans() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.status(503))
        server.enqueue(.json(["id": 1, "name": "x"]))
        let tracer = W3CTestTracer()
        let coordinator = AuthRefreshCoordinator<String>(credential: "session-secret-1") { _ in "session-secret-2" }
        let service = try Self.service(server.baseURL, tracer: tracer) {
            $0.authentication = AuthenticationInterceptor(
                coordinator: coordinator,
                parts: [.header(.authorization) { "Bearer \($0)" }, .query("session") { $0 }])
        }
        let _: ServiceUser = try await service.get("users/1", parameters: ["page": "3"])
        Self.expectTwoAttemptsRedacting("session", secret: "session-secret", server: server, tracer: tracer)
    }

    /// Both attempts of `users/1?page=3` sent the query item `name` with the value
    /// `secret`-1, and their spans show it redacted.
    private static func expectTwoAttemptsRedacting(
        _ name: String, secret: String, server: TestServer, tracer: W3CTestTracer,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            server.recordedRequests(path: "/users/1").map { $0.queryValue(name) } == ["\(secret)-1", "\(secret)-1"],
            sourceLocation: sourceLocation)
        let attempts = tracer.memory.finishedSpans.filter { $0.kind == .client }
        #expect(attempts.count == 2, sourceLocation: sourceLocation)
        for span in attempts {
            let url = "\(span.attributes["url.full"]?.toSpanAttribute() ?? "")"
            #expect(url.contains("page=3"), sourceLocation: sourceLocation)
            #expect(url.contains("\(name)=\(Redaction.marker)"), sourceLocation: sourceLocation)
            #expect(!url.contains(secret), "the credential reached a span: \(url)", sourceLocation: sourceLocation)
        }
    }

    /// A credential of a type of the app's own, written into the query by the interceptor's
    /// `apply`: its names are read per attempt (nothing probes them), and the attempt spans,
    /// whose redaction was fixed at the call's start, showed its value in `url.full`. The
    /// logging monitor redacted it already.
    @Test func aCredentialWhoseQueryNamesAreReadPerAttemptIsRedactedInTheAttemptSpans() async throws {
        struct Ticket: Sendable, Equatable { var value: String }
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.status(503))
        server.enqueue(.json(["id": 1, "name": "x"]))
        let tracer = W3CTestTracer()
        let logs = LogCapture()
        let coordinator = AuthRefreshCoordinator<Ticket>(credential: Ticket(value: "ticket-secret-1")) { _ in
            Ticket(value: "ticket-secret-2")
        }
        let service = try Self.service(server.baseURL, tracer: tracer) {
            $0.authentication = AuthenticationInterceptor(coordinator: coordinator) { ticket, request in
                let path = request.path ?? "/"
                request.path = path + (path.contains("?") ? "&" : "?") + "ticket=\(ticket.value)"
            }
            $0.monitors = [LoggingEventMonitor(logger: logs.logger)]
        }
        let _: ServiceUser = try await service.get("users/1", parameters: ["page": "3"])
        Self.expectTwoAttemptsRedacting("ticket", secret: "ticket-secret", server: server, tracer: tracer)
        #expect(logs.lines.contains { $0.contains("ticket=\(Redaction.marker)") })
        #expect(!logs.lines.contains { $0.contains("ticket-secret") })
    }

    @Test func aPlainSendIsTracedAndCountedLikeAServiceCall() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.json(["id": 1, "name": "x"]))
        server.enqueue(.status(404))
        let tracer = W3CTestTracer()
        let metrics = TestMetrics()
        var configuration = HTTPClient.Configuration(baseURL: server.baseURL, notificationCenter: NotificationCenter())
        configuration.tracer = tracer
        configuration.metricsFactory = metrics
        let client = try HTTPClient(configuration: configuration)
        // Relative to the base URL: the spans still name the server.
        let ok = try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/users/1?page=2"))
        let missing = try await client.send(method: .delete, url: server.url("/users/2"))
        #expect(ok.head.status.code == 200)
        #expect(missing.head.status.code == 404)

        let spans = tracer.memory.finishedSpans
        #expect(spans.count == 4)
        let attempts = spans.filter { $0.kind == .client }
        let calls = spans.filter { $0.kind == .internal }
        #expect(calls.map(\.operationName) == ["GET 127.0.0.1", "DELETE 127.0.0.1"])
        #expect(attempts.map(\.operationName) == ["GET", "DELETE"])
        #expect(zip(attempts, calls).allSatisfy { $0.parentSpanID == $1.spanID })
        let get = attempts[0].attributes
        #expect(get["http.response.status_code"]?.toSpanAttribute() == 200)
        #expect(get["server.address"]?.toSpanAttribute() == "127.0.0.1")
        #expect(get["server.port"]?.toSpanAttribute() == .int64(Int64(server.port)))
        let url = "\(get["url.full"]?.toSpanAttribute() ?? "")"
        #expect(url.contains("http://127.0.0.1:\(server.port)/users/1?page=2"), "\(url)")
        #expect(attempts[1].attributes["error.type"]?.toSpanAttribute() == "404")
        #expect(attempts[1].status?.code == .error)
        // The request carried its span's context.
        let sent = server.recordedRequests.map { $0.header("traceparent") }
        #expect(sent == attempts.map { "00-\($0.traceID)-\($0.spanID)-01" })

        let getLabels = [("service", "127.0.0.1"), ("method", "GET")]
        #expect(try metrics.expectTimer("courier_request_duration", getLabels + [("status", "2xx")]).values.count == 1)
        #expect(try metrics.expectCounter("courier_response_bytes", getLabels).totalValue > 10)
        let deleteLabels = [("service", "127.0.0.1"), ("method", "DELETE"), ("status", "4xx")]
        #expect(try metrics.expectTimer("courier_request_duration", deleteLabels).values.count == 1)
    }

    @Test func aStreamIsTracedUntilItsBodyEnds() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let tracer = W3CTestTracer()
        let metrics = TestMetrics()
        var configuration = HTTPClient.Configuration(baseURL: server.baseURL, notificationCenter: NotificationCenter())
        configuration.tracer = tracer
        configuration.metricsFactory = metrics
        let client = try HTTPClient(configuration: configuration)
        let streamed = try await client.stream(HTTPRequest(.get, server.url("/bytes/100000")))
        #expect(streamed.head.status.code == 200)
        // The head is in, the body is not: the call is still going.
        #expect(tracer.memory.finishedSpans.isEmpty)
        #expect(try await streamed.body.collect().count == 100_000)
        let spans = tracer.memory.finishedSpans
        #expect(spans.map(\.kind) == [.client, .internal])
        #expect(spans[0].attributes["http.response.status_code"]?.toSpanAttribute() == 200)
        #expect(server.recordedRequests.first?.header("traceparent") == "00-\(spans[0].traceID)-\(spans[0].spanID)-01")
        let labels = [("service", "127.0.0.1"), ("method", "GET")]
        #expect(try metrics.expectCounter("courier_response_bytes", labels).totalValue == 100_000)
        #expect(try metrics.expectTimer("courier_request_duration", labels + [("status", "2xx")]).values.count == 1)

        // A body dropped unread ends its call as cancelled.
        do {
            let dropped = try await client.stream(HTTPRequest(.get, server.url("/bytes/100000")))
            #expect(dropped.head.status.code == 200)
        }
        let after = tracer.memory.finishedSpans
        #expect(after.count == 4)
        #expect(after.last?.status?.code == .error)
        #expect(
            try metrics.expectTimer("courier_request_duration", labels + [("status", "cancelled")]).values.count == 1)
    }

    // MARK: - Metrics

    @Test func metricsCountCallsRetriesBytesAndCache() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(.status(503))
        server.route("/config") { _ in
            ScriptedResponse.json(["id": 1, "name": "cfg"]).with(.cacheControl, "max-age=60")
        }
        let metrics = TestMetrics()
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let service = try Self.service(server.baseURL, metrics: metrics, cache: cache) { $0.name = "settings" }
        let first: ServiceUser = try await service.get("config")
        let second: ServiceUser = try await service.get("config")
        #expect(first == second)
        let _: ServiceUser = try await service.post("config", body: ServiceUser(id: 2, name: "new"))

        let get = [("service", "settings"), ("method", "GET")]
        let post = [("service", "settings"), ("method", "POST")]
        #expect(try metrics.expectCounter("courier_retries", get).totalValue == 1)
        #expect(try metrics.expectCounter("courier_cache_hits", get).totalValue == 1)
        #expect(try metrics.expectCounter("courier_cache_misses", get).totalValue == 1)
        #expect(try metrics.expectTimer("courier_request_duration", get + [("status", "2xx")]).values.count == 2)
        #expect(try metrics.expectTimer("courier_request_duration", post + [("status", "2xx")]).values.count == 1)
        #expect(try metrics.expectCounter("courier_request_bytes", post).totalValue > 10)
        #expect(try metrics.expectCounter("courier_response_bytes", get).totalValue > 10)
        let inFlight = try metrics.expectMeter("courier_requests_in_flight", get)
        #expect(inFlight.values == [1, 0, 1, 0])
        // No label names a path.
        #expect(metrics.counters.allSatisfy { !$0.dimensions.contains { $0.1.contains("config") } })
    }

    /// The pool meters: connections open and requests waiting for one, per client.
    @Test func poolSizeAndQueueDepthAreMeasured() async throws {
        let server = try TestServer()
        // Each request is answered only once the test has seen the queue.
        let release = DispatchSemaphore(value: 0)
        server.route("/held") { request in
            release.wait()
            return .json(["headers": [String: String](), "args": ["method": request.method]])
        }
        let other = try TestServer()
        defer {
            for _ in 0..<3 { release.signal() }
            server.stop()
            other.stop()
        }
        let metrics = TestMetrics()
        // Long timeouts: the requests are held at the server (`ServiceFixture.client`).
        var configuration = HTTPClient.Configuration(
            baseURL: server.baseURL, timeout: .seconds(600), stallTimeout: .seconds(600), maxConnectionsPerHost: 1,
            notificationCenter: NotificationCenter())
        configuration.metricsFactory = metrics
        let client = try HTTPClient(configuration: configuration)
        var feed = ServiceConfiguration()
        feed.name = "feed"
        let service = ServiceCore(client: client, configuration: feed)
        // The same client and label, another host: not held behind the first host's limit.
        var probeConfiguration = ServiceConfiguration(servers: try ServerPool(servers: [other.baseURL]))
        probeConfiguration.name = "feed"
        let probe = ServiceCore(client: client, configuration: probeConfiguration)
        #expect(client.transport.load == TransportLoad(connections: 0, queued: 0))
        let options = CallOptions(deduplicates: false)
        try await withThrowingTaskGroup { group in
            for _ in 0..<3 {
                group.addTask { let _: EchoModel = try await service.get("held", options: options) }
            }
            // One request on the one connection allowed (held by the server), two waiting for it.
            #expect(await server.waitForRequests(atLeast: 1))
            #expect(try await Self.waitUntil(timeout: .seconds(60)) { client.transport.load?.queued == 2 })
            #expect(client.transport.load == TransportLoad(connections: 1, queued: 2))
            // A call meanwhile reports the queue in the meters (at its start and its end).
            let _: EchoModel = try await probe.get("anything")
            for _ in 0..<3 { release.signal() }
            try await group.waitForAll()
        }
        // Both connections stay open in the pool; nothing waits.
        #expect(client.transport.load == TransportLoad(connections: 2, queued: 0))
        let queued = try metrics.expectMeter("courier_requests_queued", [("service", "feed")])
        let connections = try metrics.expectMeter("courier_connections_open", [("service", "feed")])
        // Set at each call's start and end: the probe saw the queue of two, the last call none.
        #expect(queued.values.contains(2))
        #expect(queued.lastValue == 0)
        #expect(connections.values.contains(2))
        #expect(connections.lastValue == 2)
    }

    @Test func oneHostPerTenantDoesNotGrowTheSeriesWithoutLimit() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let metrics = TestMetrics()
        var configuration = HTTPClient.Configuration(
            timeout: .seconds(60), notificationCenter: NotificationCenter())
        configuration.metricsFactory = metrics
        let client = try HTTPClient(configuration: configuration)
        // Calls without a service name are labelled with their host: here one loopback address
        // per "tenant" (nothing listens on them, so each call fails at once; it is still counted).
        let limit = MetricHandles.maximumServiceLabels
        for tenant in 2...(limit + 41) {
            let host = "127.0.\(tenant / 250).\(tenant % 250 + 1)"
            _ = try? await client.send(method: .get, url: URL(string: "http://\(host):\(server.port)/")!)
        }
        let services = Set(
            metrics.meters.filter { $0.label == "courier_requests_in_flight" }
                .compactMap { $0.dimensions.first { $0.0 == "service" }?.1 })
        #expect(services.count == limit + 1)
        #expect(services.contains(MetricHandles.overflowLabel))
        // The calls past the limit are still counted, under the overflow label.
        let other = try metrics.expectMeter(
            "courier_requests_in_flight", [("service", MetricHandles.overflowLabel), ("method", "GET")])
        #expect(other.values.count == 2 * 40)
    }

    @Test func nothingIsMadeWithoutABackend() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        #expect(client.telemetry.tracer == nil)
        #expect(client.telemetry.metrics == nil)
    }

    // MARK: - Support

    /// Checks `condition` until it holds or `timeout` passes.
    private static func waitUntil(
        timeout: Duration = .seconds(10), _ condition: () -> Bool
    ) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    private static func service(
        _ baseURL: URL, logger: Logger? = nil, tracer: (any Tracer)? = nil, metrics: TestMetrics? = nil,
        cache: HostScopedCache? = nil, timeout: Duration = .seconds(60),
        configure: (inout ServiceConfiguration) -> Void = { _ in }
    ) throws -> ServiceCore {
        var client = HTTPClient.Configuration(
            baseURL: baseURL, timeout: timeout, notificationCenter: NotificationCenter(), cache: cache)
        if let logger { client.logger = logger }
        client.tracer = tracer
        client.metricsFactory = metrics
        var configuration = ServiceConfiguration(
            retryPolicy: RetryPolicy(jitter: 0), clock: ManualServiceClock(autoAdvance: true))
        configure(&configuration)
        return ServiceCore(client: try HTTPClient(configuration: client), configuration: configuration)
    }
}

/// Records each line with the logger's metadata and the line's.
struct MetadataLogHandler: LogHandler {
    let lines: Recorder<String>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let extra = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        lines.append("\(event.level) \(event.message) \(extra)")
    }
}

/// `InMemoryTracer`'s spans, with W3C trace context (`traceparent`) as an OpenTelemetry tracer
/// injects it: what a test can compare with what the server received.
struct W3CTestTracer: Tracer {
    let memory = InMemoryTracer(
        idGenerator: .init(
            nextTraceID: { hex(UInt64.random(in: 1...UInt64.max)) + hex(UInt64.random(in: 1...UInt64.max)) },
            nextSpanID: { hex(UInt64.random(in: 1...UInt64.max)) }))

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        memory.startSpan(
            operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID,
            line: line)
    }

    func forceFlush() {}

    func inject<Carrier, Inject: Injector>(
        _ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject
    ) where Inject.Carrier == Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
    }

    func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract
    ) where Extract.Carrier == Carrier {}
}

private func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
}

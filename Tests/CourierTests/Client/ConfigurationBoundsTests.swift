import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Every configuration value is clamped or refused with `CourierError(.configuration, …)`,
/// never trapped on (issue 16 item 7). On the old code `.seconds(Int64.max / 2)` as a timeout
/// overflowed converting to libcurl's milliseconds and trapped the test process at its first
/// call; a huge wait trapped inside `Task.sleep`.
@Suite struct ConfigurationBoundsTests {
    /// Extreme durations: every one either works (clamped) or is refused with a typed error.
    static let extremes: [Duration] = [
        .seconds(Int64.min), .seconds(-1), .nanoseconds(-1), .zero, .nanoseconds(1),
        .seconds(Int64.max / 2), .seconds(Int64.max),
        Duration(secondsComponent: Int64.max, attosecondsComponent: 999_999_999_999_999_999),
    ]

    enum TimeoutField: String, CaseIterable, Sendable {
        case timeout, connectTimeout, stallTimeout
    }

    /// The outcome the bounds promise for `value`: refused when not positive, else a call that
    /// succeeds (or, for a 1 ns timeout, times out with a typed error).
    private static func check(
        _ value: Duration, outcome: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            try await outcome()
            #expect(value > .zero, "a non-positive value was accepted", sourceLocation: sourceLocation)
        } catch let error as CourierError {
            if value <= .zero {
                #expect(error.code == .configuration, "\(error)", sourceLocation: sourceLocation)
                #expect(error.message.contains("must be positive"), sourceLocation: sourceLocation)
            } else {
                // Only a timeout too short to answer in may fail, and then with a typed error.
                #expect(value < .milliseconds(1), "\(value): \(error)", sourceLocation: sourceLocation)
                #expect(error.code == .timedOut, "\(error)", sourceLocation: sourceLocation)
            }
        } catch {
            Issue.record("\(value): not a CourierError: \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: TimeoutField.allCases, extremes)
    func clientTimeoutsAreClampedOrRefused(_ field: TimeoutField, _ value: Duration) async throws {
        let server = try TestServer()
        defer { server.stop() }
        await Self.check(value) {
            let client = try makeClient { configuration in
                configuration.baseURL = server.baseURL
                switch field {
                case .timeout: configuration.timeout = value
                case .connectTimeout: configuration.connectTimeout = value
                case .stallTimeout: configuration.stallTimeout = value
                }
            }
            let configured: Duration? =
                switch field {
                case .timeout: client.configuration.timeout
                case .connectTimeout: client.configuration.connectTimeout
                case .stallTimeout: client.configuration.stallTimeout
                }
            #expect(configured == min(value, ConfigurationBounds.maximumTimeout))
            let response = try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/echo"))
            #expect(response.status == .ok)
        }
    }

    @Test(arguments: TimeoutField.allCases, extremes)
    func requestTimeoutsAreClampedOrRefused(_ field: TimeoutField, _ value: Duration) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient { $0.baseURL = server.baseURL }
        // The call's own timeout; the connect and stall timeouts are the client's, changed live.
        let options = field == .timeout ? CallOptions.default.with(\.timeout, value) : .default
        await Self.check(value) {
            switch field {
            case .timeout: break
            case .connectTimeout: try client.updateSettings { $0.connectTimeout = value }
            case .stallTimeout: try client.updateSettings { $0.stallTimeout = value }
            }
            let response = try await client.send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/echo"), options: options)
            #expect(response.status == .ok)
        }
        // The client works afterwards.
        let after = try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/echo"))
        #expect(after.status == .ok)
    }

    @Test(arguments: extremes)
    func callTimeoutsAreClampedOrRefused(_ value: Duration) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server)
        await Self.check(value) {
            let _: Echo = try await service.get(
                "anything", options: .default.with(\.timeout, value).with(\.retryPolicy, RetryPolicy.none))
        }
        await Self.check(value) {
            try service.core.client.updateSettings { $0.stallTimeout = value }
            let _: Echo = try await service.get("anything", options: .default.with(\.retryPolicy, RetryPolicy.none))
        }
    }

    @Test func theTransportClampsWhatBypassesTheClient() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let transport = try CurlTransport(configuration: .init(connectTimeout: .seconds(Int64.max)))
        for value in Self.extremes {
            let request = TransportRequest(
                head: HTTPRequest(.get, server.url("/echo")),
                options: TransportOptions(timeout: max(value, .milliseconds(500)), stallTimeout: value))
            let response = try await transport.execute(request)
            #expect(response.head.status == .ok)
        }
        #expect(Duration.seconds(Int64.max).wholeMilliseconds == 24 * 86_400 * 1000)
        #expect(Duration.seconds(Int64.min).wholeMilliseconds == 1)
        #expect(Duration.seconds(Int64.max).wholeSecondsRoundedUp == 24 * 86_400)
    }

    @Test(arguments: [Int64.min, -1, 0, 1, Int64.max])
    func sizesAreRefusedBelowOne(_ size: Int64) async throws {
        let server = try TestServer()
        defer { server.stop() }
        do {
            let client = try makeClient {
                $0.baseURL = server.baseURL
                $0.maxResponseSize = size
            }
            #expect(size >= 1)
            let result = await outcome {
                try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/bytes/10"))
            }
            if size >= 10 {
                #expect(try result.get().body.count == 10)
            } else {
                #expect((result.error as? CourierError)?.code == .responseTooLarge)
            }
        } catch let error as CourierError {
            #expect(size < 1)
            #expect(error.code == .configuration)
        }
        let client = try makeClient { $0.baseURL = server.baseURL }
        let result = await outcome {
            try await client.send(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/bytes/10"),
                options: CallOptions(maxResponseSize: size))
        }
        switch result {
        case .success(let response): #expect(size >= 10 && response.body.count == 10)
        case .failure(let error as CourierError):
            #expect(error.code == (size < 1 ? .configuration : .responseTooLarge), "\(error)")
        case .failure(let error): Issue.record("not a CourierError: \(error)")
        }
    }

    @Test(arguments: [Int.min, -1, 0, 1, Int.max])
    func connectionLimitsAreRefusedBelowOne(_ limit: Int) async throws {
        let server = try TestServer()
        defer { server.stop() }
        for perHost in [true, false] {
            do {
                let client = try makeClient {
                    $0.baseURL = server.baseURL
                    if perHost { $0.maxConnectionsPerHost = limit } else { $0.maxConnections = limit }
                }
                #expect(limit >= 1)
                let response = try await client.send(
                    HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/echo"))
                #expect(response.status == .ok)
            } catch let error as CourierError {
                #expect(limit < 1)
                #expect(error.code == .configuration, "\(error)")
            }
        }
    }

    @Test(arguments: [Int.min, -1, 0, 1, Int.max])
    func redirectCountsAreClamped(_ count: Int) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/hop") { _ in ScriptedResponse(status: 302, headers: [.location: "/echo"]) }
        let client = try makeClient {
            $0.baseURL = server.baseURL
            $0.maxRedirects = count
        }
        #expect(client.configuration.maxRedirects == max(0, count))
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/hop")
        for response in [
            try await client.send(request),
            try await client.send(request, options: CallOptions(maxRedirects: count)),
        ] {
            #expect(response.status == (count >= 1 ? .ok : .found))
        }
    }

    @Test func retryCountsBackOffAndAttemptsAreClamped() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("GET", "/busy") { _ in
            ScriptedResponse(status: 503, headers: [.retryAfter: "9223372036854775807"])
        }
        let clock = ManualServiceClock(autoAdvance: true)
        func attempts(retries: Int, maximumAttempts: Int) async throws -> Int {
            var policy = RetryPolicy(
                maximumRetries: retries, baseDelay: .seconds(Int64.max), multiplier: .infinity,
                maximumDelay: .seconds(Int64.max), jitter: .nan, maximumRetryAfter: .seconds(Int64.max))
            #expect(policy.delay(forRetry: Int.max) >= .zero)
            #expect(policy.delay(forRetry: Int.max) <= ConfigurationBounds.maximumWait)
            policy.baseDelay = .seconds(Int64.min)
            policy.multiplier = .nan
            #expect(policy.delay(forRetry: 2) == .zero)
            let service = try ServiceFixture.service(server) {
                $0.clock = clock
                $0.maximumAttempts = maximumAttempts
            }
            server.resetRecords()
            let error = await courierError {
                let _: Echo = try await service.get("busy", options: .default.with(\.retryPolicy, policy))
            }
            #expect(error?.status == .serviceUnavailable)
            return server.count("/busy")
        }
        // At least one attempt; at most the attempt cap.
        #expect(try await attempts(retries: Int.min, maximumAttempts: 4) == 1)
        #expect(try await attempts(retries: 0, maximumAttempts: 4) == 1)
        #expect(try await attempts(retries: 3, maximumAttempts: 4) == 4)
        #expect(try await attempts(retries: Int.max, maximumAttempts: 4) == 4)
        #expect(try await attempts(retries: 3, maximumAttempts: Int.min) == 1)
        #expect(try await attempts(retries: 3, maximumAttempts: 0) == 1)
        #expect(ServiceConfiguration(maximumAttempts: Int.min).maximumAttempts == 1)
        // The server's Retry-After of Int64.max seconds was waited for, cut to the bound.
        #expect(clock.sleeps.contains(.seconds(Int64.max)))
        #expect(clock.sleeps.allSatisfy { $0 >= .zero })
    }

    @Test(arguments: extremes)
    func requestIntervalsAreClamped(_ value: Duration) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let service = try ServiceFixture.service(server)
        let options = CallOptions.default.with(\.interval, .drop(value))
        let _: Echo = try await service.get("anything", options: options)
        let error = await outcome { let _: Echo = try await service.get("anything", options: options) }
        if value > .zero {
            #expect((error.error as? CourierError)?.code == .throttled)
        } else {
            #expect(error.error == nil)
        }
    }

    /// On the old code `Task.sleep` computed a deadline past 64-bit nanoseconds and trapped.
    /// `Task.immediate` runs up to the sleep's suspension before it returns, so the deadline is
    /// computed before the cancel.
    @Test(arguments: extremes)
    func theSystemClockSleepsForAnyDuration(_ value: Duration) async throws {
        let task = Task.immediate { try await SystemServiceClock().sleep(for: value) }
        task.cancel()
        let result = await task.result
        if value > .nanoseconds(1) {
            #expect(result.error is CancellationError)
        }
    }
}

extension Result {
    fileprivate var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// What `body` returned or threw.
private func outcome<Value>(_ body: () async throws -> Value) async -> Result<Value, any Error> {
    do {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}

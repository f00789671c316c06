import CourierTesting
import Foundation
import Glibc
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// One misbehaviour of the fault-injecting server and what the client must make of it.
struct FaultCase: Sendable, CustomTestStringConvertible {
    /// The route on `TestServer` that misbehaves.
    var path: String
    /// The codes a `CourierError` may carry; empty when the response is indistinguishable
    /// from a valid one and must succeed instead.
    var codes: Set<CourierError.Code>
    /// Whether the fault could grow memory without a bound if the cap did not hold.
    var unboundedWithoutCap = false
    /// The excess bytes stay in a connection libcurl 7.88 pools, and the next request on it
    /// reads them as its response (curl 8 refuses to reuse a connection with pending input);
    /// that request must be sent again on a new connection.
    var poisonsPooledConnection = false
    /// A lower redirect limit than the client's 10 (each hop waits for a thread of the
    /// cooperative pool, which the whole parallel suite shares).
    var maxRedirects: Int?
    /// A total timeout of its own, for a fault that must end by something else (the redirect
    /// limit) and would otherwise race the matrix's short timeout on a busy pool.
    var timeout: Duration?
    /// A stall timeout of its own, for a fault that must end by the head bound: a server that
    /// builds a large head on a starved pool (ThreadSanitizer, the whole suite at once) sends
    /// nothing for seconds, and the matrix's 2 s stall timeout would end it first.
    var stallTimeout: Duration?
    /// The body a fault that must succeed reads.
    var successBody = 50_000

    var testDescription: String { path }
}

/// Every fault of issue 8 against one client: each ends in a typed `CourierError` within the
/// configured timeout, the response cap bounds memory, and the same client's next request
/// succeeds (no poisoned connection, no stuck transfer on the curl thread).
@Suite struct FaultMatrixTests {
    /// The client's limits: a timeout far below the 100,000-byte trickle's duration, a stall
    /// timeout the stall trips, a 1 MiB cap the endless body and the gzip bomb run into.
    static let timeout = Duration.seconds(8)
    /// Scheduling slack: the whole suite runs at once on a 2-thread cooperative pool, where
    /// CPU-heavy suites (and a CI machine at load 12 and more) hold a finished transfer's task
    /// back for tens of seconds. The bound stays far below the faults' own length (the slow
    /// trickle ends after 300 s, the others never end), so an unenforced timeout still fails.
    static let slack = Duration.seconds(60)
    static let cap: Int64 = 1 << 20

    static let cases: [FaultCase] = [
        FaultCase(path: "/fault/reset-headers", codes: [.transport, .invalidResponse]),
        FaultCase(path: "/fault/reset-body", codes: [.transport, .invalidResponse]),
        FaultCase(path: "/fault/no-response", codes: [.transport, .invalidResponse]),
        FaultCase(path: "/fault/stall-after-headers", codes: [.timedOut]),
        // Bytes keep flowing (1 every 200 ms, well within the 2 s stall timeout), so only the
        // total timeout can end it.
        FaultCase(path: "/fault/trickle?bytes=1&intervalMs=200&total=100000", codes: [.timedOut]),
        // 3 s between bytes, past the 2 s stall timeout: it ends before the total timeout.
        FaultCase(path: "/fault/trickle?bytes=1&intervalMs=3000&total=100", codes: [.timedOut]),
        FaultCase(path: "/fault/truncated-chunked", codes: [.transport, .invalidResponse]),
        FaultCase(path: "/fault/bad-status-line", codes: [.invalidResponse]),
        FaultCase(path: "/fault/bad-header-bytes", codes: [.invalidResponse]),
        FaultCase(path: "/fault/content-length-larger", codes: [.transport, .invalidResponse]),
        // The excess after Content-Length cannot be told from the next response's bytes: curl
        // stops at the announced length, and the request that reuses the connection is sent
        // again on a new one.
        FaultCase(path: "/fault/content-length-smaller", codes: [], poisonsPooledConnection: true),
        // Observed with libcurl 7.88: past its header-size limit curl stops reading without
        // failing the transfer, and the stall timeout ends it.
        FaultCase(
            path: "/fault/huge-headers?size=\(4 << 20)",
            codes: [.invalidResponse, .responseTooLarge, .transport, .timedOut], unboundedWithoutCap: true),
        FaultCase(path: "/fault/endless", codes: [.responseTooLarge], unboundedWithoutCap: true),
        FaultCase(path: "/redirect-loop", codes: [.redirect], maxRedirects: 3, timeout: .seconds(60)),
        FaultCase(path: "/gzip-bomb?size=\(1 << 30)", codes: [.responseTooLarge], unboundedWithoutCap: true),
        // Hostile heads (issue 16 item 9), written byte for byte by `BuiltInRoutes+Hostile`.
        // Tens of thousands of field lines: Courier's head bound stops them, not a timeout.
        FaultCase(
            path: "/fault/header-flood?lines=50000", codes: [.responseTooLarge], unboundedWithoutCap: true,
            timeout: .seconds(60), stallTimeout: .seconds(30)),
        // One 200 kB field line, above curl's 100 KiB limit for one line.
        FaultCase(
            path: "/fault/long-header?size=200000", codes: [.responseTooLarge, .transport], timeout: .seconds(60),
            stallTimeout: .seconds(30)),
        // A value folded over three lines reads as one value; over 100,000 lines it hits the
        // bound in linear time.
        FaultCase(path: "/fault/folded-header?lines=3", codes: [], successBody: 2),
        FaultCase(
            path: "/fault/folded-header?lines=100000", codes: [.responseTooLarge], timeout: .seconds(60),
            stallTimeout: .seconds(30)),
        FaultCase(path: "/fault/control-bytes", codes: [], successBody: 2),
        FaultCase(path: "/fault/bad-chunk-size?size=zz", codes: [.invalidResponse, .transport]),
        FaultCase(path: "/fault/bad-chunk-size?size=1ffffffffffffffffffff", codes: [.invalidResponse, .transport]),
        FaultCase(path: "/fault/chunk-without-crlf", codes: [.invalidResponse, .transport]),
        FaultCase(path: "/fault/conflicting-content-length", codes: [.invalidResponse, .transport]),
        FaultCase(path: "/fault/negative-content-length", codes: [.invalidResponse, .transport]),
        FaultCase(path: "/fault/content-length-and-chunked", codes: [], successBody: 2),
        FaultCase(path: "/fault/trailers", codes: [], successBody: 2),
        FaultCase(path: "/fault/encoding-chain?layers=6", codes: [.invalidResponse]),
        FaultCase(
            path: "/fault/nested-gzip-bomb?size=\(1 << 30)", codes: [.responseTooLarge], unboundedWithoutCap: true),
        // The head itself drips in within the stall timeout: the total timeout ends it.
        FaultCase(path: "/fault/head-drip?intervalMs=200", codes: [.timedOut]),
    ]

    @Test(arguments: cases) func faultEndsInATypedErrorAndTheClientRecovers(_ fault: FaultCase) async throws {
        let server = try TestServer()
        defer { server.stop() }
        // A fault's own bounds are safety nets for what must end otherwise: they grow with the
        // sanitizers' slowdown (the redirect loop hit an unscaled 60 s under ThreadSanitizer at load 10).
        let timeout = fault.timeout.map(TestTimeBound.scaled) ?? Self.timeout
        let client = try makeClient {
            $0.timeout = timeout
            $0.stallTimeout = fault.stallTimeout.map(TestTimeBound.scaled) ?? .seconds(2)
            $0.maxResponseSize = Self.cap
            if let limit = fault.maxRedirects { $0.maxRedirects = limit }
        }
        let peakBefore = peakResidentBytes()
        let start = ContinuousClock.now
        if fault.codes.isEmpty {
            let response = try await client.send(HTTPRequest(.get, server.url(fault.path)))
            #expect(response.status == .ok)
            #expect(response.body.count == fault.successBody, "read exactly the announced body")
        } else {
            let error = await courierError { _ = try await client.send(HTTPRequest(.get, server.url(fault.path))) }
            #expect(error.map { fault.codes.contains($0.code) } == true, "got \(String(describing: error))")
        }
        let elapsed = ContinuousClock.now - start
        // The configured timeout plus scheduling slack on a loaded machine.
        #expect(elapsed < timeout + Self.slack, "took \(elapsed)")
        // Under a sanitizer the process's peak RSS holds shadow memory for every test running
        // in parallel; the error code above still shows the cap held.
        if fault.unboundedWithoutCap, !SanitizerRuntime.isLoaded {
            // Without the cap these would take everything the server can send before the timeout (GiBs on
            // loopback; the bombs inflate to 1 GiB); with it, the client holds little more than the cap.
            // The peak is the whole process's: the suites running in parallel grow it too (a whole
            // run peaks near 450 MiB; a bound of 256 MiB was passed by 6-14 MiB in one run of 28
            // Nov 2026 with the 1 MiB cap holding), so the bound sits between the two.
            let growth = peakResidentBytes() - peakBefore
            #expect(growth < 512 << 20, "peak RSS grew by \(growth >> 20) MiB")
        }

        if fault.poisonsPooledConnection {
            // libcurl 7.88 pools the connection with the excess bytes unread; the next GET
            // reads them as its response, fails on that reused connection, and is sent again
            // on a new one.
            let retried = try await client.send(HTTPRequest(.get, server.url("/echo?after=0")))
            #expect(retried.status == .ok)
            #expect(try Echo(retried.body).args["after"] == "0")
        }
        let next = try await client.send(HTTPRequest(.get, server.url("/echo?after=1")))
        #expect(next.status == .ok)
        #expect(try Echo(next.body).args["after"] == "1")
    }

    @Test func oneClientSurvivesEveryFaultInARow() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient {
            $0.timeout = Self.timeout
            $0.stallTimeout = .seconds(2)
            $0.maxResponseSize = Self.cap
        }
        for fault in Self.cases where fault.codes.contains(where: { $0 != .timedOut }) {
            _ = try? await client.send(HTTPRequest(.get, server.url(fault.path)))
        }
        // Many requests at once after the faults: no connection in the pool is left broken.
        try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
            for index in 0..<32 {
                group.addTask { try await client.send(HTTPRequest(.get, server.url("/echo?n=\(index)"))).status }
            }
            for try await status in group { #expect(status == .ok) }
        }
    }
}

/// The process's peak resident set so far, in bytes (Linux reports `ru_maxrss` in KiB).
func peakResidentBytes() -> Int {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return usage.ru_maxrss * 1024
}

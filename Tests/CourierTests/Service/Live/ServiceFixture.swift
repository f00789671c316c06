import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import Synchronization
import Testing

@_spi(Fuzzing) @testable import Courier

/// A user as the test routes send it.
struct ServiceUser: Codable, Sendable, Equatable {
    var id: Int
    var name: String
}

/// Builds services pointed at a loopback `TestServer`.
enum ServiceFixture {
    /// The double-tap check on `POST /posts/7/like` (a route that holds each request on
    /// `held` and answers id 7): a second guarded call while the first is in flight is skipped
    /// unsent, and the first goes through alone.
    static func expectSecondTapSkipped(
        _ service: ServiceCore, held: HeldRoute, server: TestServer, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let guarded = CallOptions.default.with(\.skipsWhileInFlight, true)
        let first = Task { () async throws -> ServiceUser in try await service.post("posts/7/like", options: guarded) }
        while held.arrived.value == 0 { await Task.yield() }
        do {
            let _: ServiceUser = try await service.post("posts/7/like", options: guarded)
            Issue.record("expected the second tap to be skipped", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == .skipped, sourceLocation: sourceLocation)
        }
        held.release(1)
        #expect(try await first.value.id == 7, sourceLocation: sourceLocation)
        #expect(server.count("/posts/7/like") == 1, sourceLocation: sourceLocation)
    }

    /// A GET of `feed`: its result, and whether the task it ran in was cancelled when it ended.
    static func getFeed(_ service: ServiceCore) async -> (Result<ServiceUser, CourierError>, Bool) {
        let result: Result<ServiceUser, CourierError>
        do throws(CourierError) {
            result = .success(try await service.get("feed"))
        } catch {
            result = .failure(error)
        }
        return (result, Task.isCancelled)
    }

    /// A client of `server` whose cache keeps 127.0.0.1's answers in memory, by HTTP's rules;
    /// long timeouts as `client(_:center:)`'s.
    static func cachingClient(_ server: TestServer) throws -> HTTPClient {
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        return try HTTPClient(
            configuration: HTTPClient.Configuration(
                baseURL: server.baseURL, timeout: .seconds(600), stallTimeout: .seconds(600),
                notificationCenter: NotificationCenter(), cache: cache))
    }

    /// A client of `server`. Its timeout and stall timeout are long: many tests hold a request
    /// at the server (`HeldRoute`) while they make their next step, and with the whole suite
    /// running in parallel on a loaded machine a step can wait its turn for longer than the
    /// defaults (30 s without a byte): the held request then failed and was sent again, and
    /// the test failed for the machine's load, not for the code. Tests of timeouts set their own.
    static func client(_ server: TestServer, center: NotificationCenter = NotificationCenter()) throws -> HTTPClient {
        try HTTPClient(
            configuration: HTTPClient.Configuration(
                baseURL: server.baseURL, timeout: .seconds(600), stallTimeout: .seconds(600), notificationCenter: center
            ))
    }

    static func service(
        _ server: TestServer, center: NotificationCenter = NotificationCenter(),
        configure: (inout ServiceConfiguration) throws -> Void = { _ in }
    ) throws -> ServiceCore {
        var configuration = ServiceConfiguration(
            retryPolicy: RetryPolicy(jitter: 0), clock: ManualServiceClock(autoAdvance: true),
            callbackQueue: DispatchQueue(label: "test.callbacks"))
        try configure(&configuration)
        return ServiceCore(client: try client(server, center: center), configuration: configuration)
    }

    static func base(_ server: TestServer) -> BaseURL { try! BaseURL(server.baseURL.absoluteString) }
}

/// A route handler that holds requests until released (to make calls overlap on purpose).
final class HeldRoute: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    let arrived = ServiceCounter()

    func hold() {
        arrived.increment()
        semaphore.wait()
    }

    func release(_ count: Int) {
        for _ in 0..<count { semaphore.signal() }
    }
}

extension TestServer {
    /// The number of recorded requests for `path`.
    func count(_ path: String) -> Int { recordedRequests(path: path).count }

    /// A `/feed` route whose answer (a `ServiceUser` named "feed") waits for `held` to release it.
    func routeHeldFeed(_ held: HeldRoute) {
        route("/feed") { _ in
            held.hold()
            return .json(["id": 1, "name": "feed"])
        }
    }
}

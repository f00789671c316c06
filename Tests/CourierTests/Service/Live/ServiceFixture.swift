import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import Synchronization

@testable import Courier

/// A user as the test routes send it.
struct ServiceUser: Codable, Sendable, Equatable {
    var id: Int
    var name: String
}

/// Builds services pointed at a loopback `TestServer`.
enum ServiceFixture {
    static func client(_ server: TestServer, center: NotificationCenter = NotificationCenter()) throws -> HTTPClient {
        try HTTPClient(configuration: HTTPClient.Configuration(baseURL: server.baseURL, notificationCenter: center))
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
}

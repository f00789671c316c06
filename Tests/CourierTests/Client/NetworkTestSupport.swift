import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// What the test server's `/echo`, `/anything` and `/delay/{ms}` routes answer.
struct Echo: Decodable {
    var method: String
    var path: String
    var query: String
    var args: [String: String]
    var headers: [String: String]
    var body: String
    var connectionID: Int

    init(_ data: Data) throws { self = try JSONDecoder().decode(Echo.self, from: data) }
}

extension HTTPRequest {
    /// A request for `path` on `url`'s server.
    init(_ method: Method, _ url: URL) {
        self.init(method: method, scheme: nil, authority: nil, path: nil)
        var components = URLComponents(url: url, resolvingAgainstBaseURL: true)!
        scheme = components.scheme
        authority = "\(components.host!):\(components.port!)"
        components.scheme = nil
        components.host = nil
        components.port = nil
        let rest = components.percentEncodedPath + (components.percentEncodedQuery.map { "?\($0)" } ?? "")
        path = rest.isEmpty ? "/" : rest
    }
}

/// A client that logs nothing, for tests. Its timeouts are only a safety net against a hang
/// (tests of timeouts set their own): loose, as a full parallel run on a loaded two-core
/// machine has kept a three-request redirect chain waiting for a thread for 20 s, and scaled
/// under the sanitizers. The stall timeout too: a test that holds an answer mid-way (a held
/// route, a trickle) until its own task has done something else waits for the cooperative
/// pool, and under ThreadSanitizer at load 10 three such tests saw the default 30 s pass
/// (`.timedOut`, "no byte moved for 30.0 seconds") before their task ran again.
func makeClient(_ configure: (inout HTTPClient.Configuration) -> Void = { _ in }) throws -> HTTPClient {
    let safetyNet = TestTimeBound.scaled(.seconds(60))
    var configuration = HTTPClient.Configuration(
        timeout: safetyNet, connectTimeout: TestTimeBound.scaled(.seconds(15)), stallTimeout: safetyNet)
    configuration.notificationCenter = NotificationCenter()
    configure(&configuration)
    return try HTTPClient(configuration: configuration)
}

/// Runs `body` and returns the `CourierError` it threw (records an issue if it threw none or another).
func courierError(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async
    -> CourierError?
{
    do {
        try await body()
        Issue.record("expected a CourierError, got success", sourceLocation: sourceLocation)
    } catch let error as CourierError {
        return error
    } catch {
        Issue.record("expected a CourierError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// A one-shot signal a server thread gives and a test awaits.
final class Signal: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() { (stream, continuation) = AsyncStream.makeStream() }

    func fire() { continuation.yield() }

    func wait() async {
        for await _ in stream { return }
    }
}

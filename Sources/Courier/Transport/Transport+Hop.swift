import Foundation

/// One buffered request between `Transport.makeHop(_:)` and `Transport.send(_:)`, holding the
/// request on the way in and the response on the way out.
///
/// Why not just `execute(_:)`: an async function keeps every value it holds across an `await`
/// in a frame allocated for as long as the request is in flight, and a caller of `execute`
/// holds the `TransportRequest` it passes and the `TransportResponse` it gets back, with
/// `execute`'s own frame below it. A hop is an object the transport allocates per request
/// anyway (Courier's is its curl transfer), made and read by synchronous code, so the client's
/// frame holds one reference. A transport of your own needs none of this: the default hop
/// calls `execute(_:)`.
package protocol TransportHop: AnyObject, Sendable {
    /// The response, once `Transport.send(_:)` returned; called once.
    /// - Throws: `CourierError.invalidResponse` for a hop that was not sent.
    func takeResponse() throws -> TransportResponse
}

extension Transport {
    package func makeHop(_ request: TransportRequest) throws -> any TransportHop {
        ExecutedHop(request)
    }

    package func send(_ hop: any TransportHop) async throws {
        guard let hop = hop as? ExecutedHop else {
            throw CourierError(.invalidRequest, "the hop was made by another transport")
        }
        let request = hop.request
        // A service call's scope cancels the execution, not the task that awaits it.
        hop.response = try await CancellationScope.run(in: request.options.cancellationScope) {
            try await self.execute(request)
        }
    }
}

/// The default hop: the request for `execute(_:)`, then its response.
private final class ExecutedHop: TransportHop {
    let request: TransportRequest
    private let storage = LockedValue<TransportResponse?>(nil)

    init(_ request: TransportRequest) { self.request = request }

    var response: TransportResponse? {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }

    func takeResponse() throws -> TransportResponse {
        let taken = storage.withLock { stored in
            defer { stored = nil }
            return stored
        }
        guard let taken else { throw CourierError(.invalidResponse, "the hop was not sent") }
        return taken
    }
}

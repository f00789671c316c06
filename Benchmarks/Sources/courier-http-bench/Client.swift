import BenchSupport
import Courier
import Foundation

/// The clients the executable can measure; `-transport` reads the body as bytes, `-e2e`
/// decodes it into ``BenchSupport/Catalog``.
enum Client: String, CaseIterable {
    case courierTransport = "courier-transport"
    case courierE2E = "courier-e2e"
    case courierService = "courier-service"
    case ahcTransport = "ahc-transport"
    case ahcE2E = "ahc-e2e"
    case urlSessionTransport = "urlsession-transport"
    case urlSessionE2E = "urlsession-e2e"
    /// No client: the harness's tasks parked in groups of `--connections` (the memory baseline).
    case callerOnly = "caller-only"

    /// - Parameters:
    ///   - url: what every request gets.
    ///   - connections: the connection limit per host.
    ///   - bodyBytes: the body size every response must have (bytes clients only; the decoding
    ///     clients expect the catalog).
    ///   - caBundlePath: the CA to trust for https URLs (Courier clients only).
    func makeRunner(url: URL, connections: Int, bodyBytes: Int, caBundlePath: String?) async throws -> Runner {
        if caBundlePath != nil, ![.courierTransport, .courierE2E, .courierService].contains(self) {
            throw UnexpectedResponse(description: "--ca is supported by the Courier clients only")
        }
        let tls = HTTPClient.TLSConfiguration(caBundlePath: caBundlePath)
        return switch self {
        case .courierTransport:
            try CourierRunner.make(url: url, connections: connections, decode: false, bodyBytes: bodyBytes, tls: tls)
        case .courierE2E:
            try CourierRunner.make(
                url: url, connections: connections, decode: true, bodyBytes: Catalog.body.count, tls: tls)
        case .courierService: try CourierRunner.makeService(url: url, connections: connections, tls: tls)
        case .ahcTransport: AHCRunner.make(url: url, connections: connections, decode: false, bodyBytes: bodyBytes)
        case .ahcE2E: AHCRunner.make(url: url, connections: connections, decode: true, bodyBytes: Catalog.body.count)
        case .urlSessionTransport:
            URLSessionRunner.make(url: url, connections: connections, decode: false, bodyBytes: bodyBytes)
        case .urlSessionE2E:
            URLSessionRunner.make(url: url, connections: connections, decode: true, bodyBytes: Catalog.body.count)
        case .callerOnly: CallerOnlyRunner.make(connections: connections)
        }
    }
}

/// One request, and the clean-up after the run.
struct Runner: Sendable {
    var request: @Sendable () async throws -> Void
    var shutdown: @Sendable () async throws -> Void
}

struct UnexpectedResponse: Error, CustomStringConvertible {
    var description: String
}

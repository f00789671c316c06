import BenchSupport
import Courier
import Foundation
import HTTPTypes

enum CourierRunner {
    static func make(
        url: URL, connections: Int, decode: Bool, bodyBytes: Int, tls: HTTPClient.TLSConfiguration
    ) throws -> Runner {
        let configuration = HTTPClient.Configuration(
            maxConnectionsPerHost: connections, maxConnections: max(connections, 64), tls: tls)
        let client = try HTTPClient(configuration: configuration)
        let authority = "\(url.host ?? "127.0.0.1")\(url.port.map { ":\($0)" } ?? "")"
        let request = HTTPRequest(method: .get, scheme: url.scheme ?? "http", authority: authority, path: url.path)
        let expected = bodyBytes
        if decode {
            let serializer: DecodableResponseSerializer<Catalog> = .decodable(Catalog.self)
            let pipeline = ResponsePipeline.default
            // The request `APIService.get` makes for this model: its format's `Accept` header
            // (libcurl's own `Accept: */*` otherwise), so that the two paths do the same work.
            let jsonRequest = HTTPRequest(
                method: .get, scheme: request.scheme, authority: request.authority, path: request.path,
                headerFields: [.accept: serializer.acceptHeader ?? "*/*"])
            return Runner(
                request: {
                    let response = try await client.send(jsonRequest)
                    let context = ResponseContext(
                        request: response.request, response: response.head, body: response.body)
                    let catalog = try pipeline.process(context, with: serializer)
                    guard catalog.count == 10 else {
                        throw UnexpectedResponse(description: "decoded \(catalog.count) items")
                    }
                }, shutdown: {})
        }
        return Runner(
            request: {
                let response = try await client.send(request)
                guard response.head.status == .ok, response.body.count == expected else {
                    throw UnexpectedResponse(description: "\(response.head.status), \(response.body.count) bytes")
                }
            }, shutdown: {})
    }

    /// End to end through `APIService.get`, the path an app's domain services take.
    ///
    /// The calls opt out of the de-duplication of identical GETs in flight (on by default):
    /// with it, concurrent calls of the same URL would share transfers, and the run would make
    /// fewer HTTP requests than the peers it is compared with.
    static func makeService(url: URL, connections: Int, tls: HTTPClient.TLSConfiguration) throws -> Runner {
        let base = url.deletingLastPathComponent()
        let configuration = HTTPClient.Configuration(
            baseURL: base, maxConnectionsPerHost: connections, maxConnections: max(connections, 64), tls: tls)
        let service = CatalogService(core: ServiceCore(client: try HTTPClient(configuration: configuration)))
        let path = url.lastPathComponent
        return Runner(
            request: {
                let catalog = try await service.catalog(path: path)
                guard catalog.count == 10 else {
                    throw UnexpectedResponse(description: "decoded \(catalog.count) items")
                }
            }, shutdown: {})
    }
}

/// A domain service with one endpoint, as an app would write it.
struct CatalogService: APIService {
    let core: ServiceCore
    private static let everyCallSent = CallOptions(deduplicates: false)

    func catalog(path: String) async throws(CourierError) -> Catalog {
        try await get(path, options: Self.everyCallSent)
    }
}

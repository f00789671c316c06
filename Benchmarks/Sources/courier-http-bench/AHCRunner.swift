import AsyncHTTPClient
import BenchSupport
import Foundation

enum AHCRunner {
    static func make(url: URL, connections: Int, decode: Bool, bodyBytes: Int) -> Runner {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let target = url.absoluteString
        let expected = bodyBytes
        let decoder = JSONDecoder()
        return Runner(
            request: {
                let response = try await client.execute(HTTPClientRequest(url: target), timeout: .seconds(30))
                let body = try await response.body.collect(upTo: 1 << 20)
                guard response.status == .ok, body.readableBytes == expected else {
                    throw UnexpectedResponse(description: "\(response.status), \(body.readableBytes) bytes")
                }
                if decode {
                    let catalog = try decoder.decode(Catalog.self, from: Data(body.readableBytesView))
                    guard catalog.count == 10 else { throw UnexpectedResponse(description: "decoded \(catalog.count)") }
                }
            },
            shutdown: { try await client.shutdown() })
    }
}

import BenchSupport
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

enum URLSessionRunner {
    static func make(url: URL, connections: Int, decode: Bool, bodyBytes: Int) -> Runner {
        let configuration = URLSessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = connections
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        let session = URLSession(configuration: configuration)
        let expected = bodyBytes
        let decoder = JSONDecoder()
        return Runner(
            request: {
                let (data, response) = try await session.data(from: url)
                guard (response as? HTTPURLResponse)?.statusCode == 200, data.count == expected else {
                    throw UnexpectedResponse(description: "\(response), \(data.count) bytes")
                }
                if decode {
                    let catalog = try decoder.decode(Catalog.self, from: data)
                    guard catalog.count == 10 else { throw UnexpectedResponse(description: "decoded \(catalog.count)") }
                }
            },
            shutdown: { session.invalidateAndCancel() })
    }
}

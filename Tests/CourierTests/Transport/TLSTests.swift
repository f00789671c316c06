import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// TLS and HTTP/2 against nginx with a throw-away CA.
@Suite(.enabled(if: NginxServer.isInstalled, "needs nginx (scripts/bootstrap.sh installs it)"))
struct TLSTests {
    /// A folder with a small file for nginx to serve.
    static func makeRoot() throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("courier-www-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data("hello over tls\n".utf8).write(to: root.appendingPathComponent("hello.txt"))
        try TestServer.bytePattern(count: 1 << 20).write(to: root.appendingPathComponent("big.bin"))
        return root
    }

    /// Starts nginx on a thread of its own (`offPool`): making certificates and waiting for
    /// nginx blocks, and must not hold one of the few threads every other test's tasks run on.
    func startNginx(tls: Bool, http2: Bool, root: URL, extraConfig: String = "") async throws -> NginxServer {
        try await offPool { try NginxServer.start(tls: tls, http2: http2, root: root, extraConfig: extraConfig) }
    }

    @Test func untrustedCertificateFailsAndTheCAFixesIt() async throws {
        let root = try Self.makeRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let nginx = try await startNginx(tls: true, http2: true, root: root)
        defer { nginx.stop() }

        let untrusting = try makeClient()
        let error = await courierError { _ = try await untrusting.send(HTTPRequest(.get, nginx.url("/hello.txt"))) }
        #expect(error?.code == .tls)

        let trusting = try makeClient { $0.tls = .init(caBundlePath: nginx.caBundlePath) }
        let response = try await trusting.send(HTTPRequest(.get, nginx.url("/hello.txt")))
        #expect(response.status == .ok)
        #expect(String(decoding: response.body, as: UTF8.self) == "hello over tls\n")
        #expect(response.metrics.httpVersion == .http2)
        #expect(response.metrics.tlsHandshake > .zero)
    }

    /// A custom bundle replaces the whole system store. libcurl starts each handle with a
    /// compiled-in CA file and CA directory; setting only the file still trusted every CA in the
    /// directory. The test stands a directory of its own in for the system's (so it does not
    /// depend on what this machine trusts): it trusts `system`'s CA only.
    @Test func customBundleReplacesTheSystemCADirectory() async throws {
        let root = try Self.makeRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let system = try await startNginx(tls: true, http2: true, root: root)
        defer { system.stop() }
        let other = try await startNginx(tls: true, http2: true, root: root)
        defer { other.stop() }
        let store = CurlTransport.SystemTrustStore(file: nil, directory: try system.makeHashedCADirectory().path)
        func client(caBundlePath: String?) throws -> HTTPClient {
            var transport = CurlTransport.Configuration(caBundlePath: caBundlePath)
            transport.systemTrustStore = store
            return try HTTPClient(
                configuration: .init(timeout: .seconds(60), connectTimeout: .seconds(15)),
                transport: CurlTransport(configuration: transport))
        }

        // Without a bundle the stand-in system store is what decides: `system` is trusted.
        let systemOnly = try client(caBundlePath: nil)
        #expect(try await systemOnly.send(HTTPRequest(.get, system.url("/hello.txt"))).status == .ok)
        let otherError = await courierError {
            _ = try await systemOnly.send(HTTPRequest(.get, other.url("/hello.txt")))
        }
        #expect(otherError?.code == .tls)

        // With another CA's bundle, the system store's CA no longer counts.
        let custom = try client(caBundlePath: other.caBundlePath)
        #expect(try await custom.send(HTTPRequest(.get, other.url("/hello.txt"))).status == .ok)
        let error = await courierError { _ = try await custom.send(HTTPRequest(.get, system.url("/hello.txt"))) }
        #expect(error?.code == .tls)
    }

    /// libcurl 7.88 keeps a transfer's receive buffer when the transfer ends while other
    /// streams still use its HTTP/2 connection, and then refuses a new CURLOPT_BUFFERSIZE on
    /// that handle. Small multiplexed answers leave such handles in the pool; a large body then
    /// raises the origin's buffer size, so the next transfers change it on those handles.
    @Test func pooledHandlesTakeANewReceiveBufferSizeAfterMultiplexedTransfers() async throws {
        let root = try Self.makeRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let nginx = try await startNginx(tls: true, http2: true, root: root)
        defer { nginx.stop() }
        let client = try makeClient { $0.tls = .init(caBundlePath: nginx.caBundlePath) }
        func concurrentSmallRequests() async throws -> [Int] {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<40 {
                    group.addTask { try await client.send(HTTPRequest(.get, nginx.url("/hello.txt"))).body.count }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(try await concurrentSmallRequests().allSatisfy { $0 == 15 })
        #expect(try await client.send(HTTPRequest(.get, nginx.url("/big.bin"))).body.count == 1 << 20)
        #expect(try await concurrentSmallRequests().allSatisfy { $0 == 15 })
    }

    @Test func http2MultiplexesConcurrentRequestsOnOneConnection() async throws {
        let root = try Self.makeRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let nginx = try await startNginx(tls: true, http2: true, root: root)
        defer { nginx.stop() }
        let client = try makeClient { $0.tls = .init(caBundlePath: nginx.caBundlePath) }
        let results = try await withThrowingTaskGroup(of: (TransferMetrics, Int).self) { group in
            for _ in 0..<40 {
                group.addTask {
                    let response = try await client.send(HTTPRequest(.get, nginx.url("/big.bin")))
                    return (response.metrics, response.body.count)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0.0.httpVersion == .http2 && $0.1 == 1 << 20 })
        // PIPEWAIT: the requests wait for the first connection's ALPN answer and then share it.
        #expect(results.filter { !$0.0.reusedConnection }.count == 1)
    }

    @Test func httpsToHTTPRedirectIsRefused() async throws {
        let root = try Self.makeRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let plain = try TestServer()
        defer { plain.stop() }
        let nginx = try await startNginx(
            tls: true, http2: true, root: root,
            extraConfig: "location = /downgrade { return 302 \(plain.url("/echo").absoluteString); }")
        defer { nginx.stop() }
        let client = try makeClient { $0.tls = .init(caBundlePath: nginx.caBundlePath) }
        let error = await courierError { _ = try await client.send(HTTPRequest(.get, nginx.url("/downgrade"))) }
        #expect(error?.code == .redirect)
        #expect(error?.status?.code == 302)
        #expect(plain.requestCount == 0)
    }

    @Test func plainHTTPNginxUsesHTTP11() async throws {
        let root = try Self.makeRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let nginx = try await startNginx(tls: false, http2: false, root: root)
        defer { nginx.stop() }
        let client = try makeClient()
        let response = try await client.send(HTTPRequest(.get, nginx.url("/hello.txt")))
        #expect(response.metrics.httpVersion == .http1_1)
        #expect(response.metrics.tlsHandshake == .zero)
    }
}

import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct HTTPClientSecurityTests {
    @Test(arguments: [("X-Test", "a\r\nInjected: 1"), ("X-Test", "a\nb"), ("X-Test", "a\0b"), ("X\r\nTest", "v")])
    func headerBytesAreRefusedBeforeSending(name: String, value: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient()
        let error = await courierError {
            _ = try await client.send(method: .get, url: server.url("/echo"), headers: [name: value])
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.description.contains("Injected") == false)
        #expect(server.acceptedConnections == 0)
        #expect(server.requestCount == 0)
    }

    @Test func decodedFieldsWithLineBreaksAreRefused() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let json = Data(#"{"name":"X-Test","value":"a\r\nInjected: 1"}"#.utf8)
        guard let field = try? JSONDecoder().decode(HTTPField.self, from: json) else { return }
        var request = HTTPRequest(.get, server.url("/echo"))
        request.headerFields.append(field)
        let error = await courierError { _ = try await makeClient().send(request) }
        #expect(error?.code == .invalidRequest)
        #expect(server.requestCount == 0)
    }

    @Test func credentialWithLineBreaksIsRefused() throws {
        let client = try makeClient()
        #expect(throws: CourierError.self) { try client.logIn(credential: "abc\r\nX-Evil: 1") }
        #expect(!client.isLoggedIn)
    }

    @Test func proxyEnvironmentIsIgnored() async throws {
        let server = try TestServer()
        let proxy = try TestServer()
        defer {
            server.stop()
            proxy.stop()
        }
        setenv("http_proxy", proxy.baseURL.absoluteString, 1)
        setenv("HTTP_PROXY", proxy.baseURL.absoluteString, 1)
        setenv("ALL_PROXY", proxy.baseURL.absoluteString, 1)
        defer {
            unsetenv("http_proxy")
            unsetenv("HTTP_PROXY")
            unsetenv("ALL_PROXY")
        }
        let client = try makeClient()
        let response = try await client.send(HTTPRequest(.get, server.url("/echo")))
        #expect(response.status == .ok)
        #expect(proxy.requestCount == 0)
        #expect(server.requestCount == 1)
    }

    @Test func configuredProxyIsUsed() async throws {
        let proxy = try TestServer()
        defer { proxy.stop() }
        let client = try makeClient { $0.proxy = .url(proxy.baseURL) }
        // The test server answers 404 to an absolute-form target; what matters is where it went.
        _ = try await client.send(method: .get, url: URL(string: "http://origin.invalid:9/echo")!)
        #expect(proxy.recordedRequests.first?.target == "http://origin.invalid:9/echo")
    }

    @Test func resolveOverridesMapHostNamesToLoopback() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient {
            $0.resolve = [.init(host: "cdn.courier.test", port: Int(server.port))]
        }
        let response = try await client.send(
            method: .get, url: URL(string: "http://cdn.courier.test:\(server.port)/echo")!)
        #expect(try Echo(response.body).headers["host"] == "cdn.courier.test:\(server.port)")
    }

    @Test func onlyHTTPAndHTTPSAreAccepted() async throws {
        let client = try makeClient()
        for url in ["ftp://127.0.0.1/", "file:///etc/passwd", "gopher://127.0.0.1/"] {
            let error = await courierError { _ = try await client.send(method: .get, url: URL(string: url)!) }
            #expect(error?.code == .invalidRequest, "\(url)")
        }
    }

    @Test func invalidConfigurationIsReported() {
        #expect(throws: CourierError.self) { try makeClient { $0.tls.caBundlePath = "/nonexistent/ca.pem" } }
        #expect(throws: CourierError.self) { try makeClient { $0.maxConnectionsPerHost = 0 } }
        #expect(throws: CourierError.self) { try makeClient { $0.maxResponseSize = 0 } }
    }

    /// Only a missing file was refused when the client was made: an empty file, a folder or a
    /// file with no PEM certificate made a client whose every https call failed with `.tls`,
    /// which reads as the server's fault (and, for a folder, libcurl said "error setting
    /// certificate file").
    @Test(arguments: ["empty", "folder", "text"])
    func aCABundleWithoutACertificateIsAConfigurationError(_ kind: String) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-ca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("ca.pem")
        switch kind {
        case "empty": try Data().write(to: path)
        case "folder": try FileManager.default.createDirectory(at: path, withIntermediateDirectories: true)
        default: try Data("not a certificate\n".utf8).write(to: path)
        }
        let error = #expect(throws: CourierError.self) { try makeClient { $0.tls.caBundlePath = path.path } }
        #expect(error?.code == .configuration)
        // A bundle with a certificate is taken.
        let system = "/etc/ssl/certs/ca-certificates.crt"
        if FileManager.default.isReadableFile(atPath: system) {
            _ = try makeClient { $0.tls.caBundlePath = system }
        }
    }
}

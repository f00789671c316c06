import CourierTesting
import Foundation
import HTTPTypes
import Logging
import Testing

@_spi(Fuzzing) @testable import Courier

/// A credential in a header of the user's choosing is redacted like `Authorization`: in the
/// client's logs, in error descriptions and in what the logging event monitor writes
/// (issue 16 items 2 and 11), with no `sensitiveHeaderNames` set by hand.
@Suite struct CustomCredentialRedactionTests {
    static let secret = "pArTnEr-S3CRET-5150"
    static let partnerToken = HTTPField.Name("X-Partner-Token")!

    static func client(_ server: TestServer, logs: LogCapture? = nil) throws -> HTTPClient {
        try makeClient {
            $0.baseURL = server.baseURL
            $0.authorization = .custom { [HTTPField(name: Self.partnerToken, value: $0)] }
            // No request here should time out; the suite's 60 s bound (not 5 s) keeps a
            // ThreadSanitizer run on 2 busy cores from failing one that waited for a thread.
            if let logs { $0.logger = logs.logger }
        }
    }

    @Test func clientLogsNeverCarryACustomCredential() async throws {
        let server = try TestServer()
        let other = try TestServer()
        defer {
            server.stop()
            other.stop()
        }
        let logs = LogCapture()
        let client = try Self.client(server, logs: logs)
        try client.logIn(credential: Self.secret)
        let relative = { (path: String) in HTTPRequest(method: .get, scheme: nil, authority: nil, path: path) }
        let echoed = try await client.send(relative("/echo"))
        #expect(try Echo(echoed.body).headers["x-partner-token"] == Self.secret)
        let target = other.url("/echo").absoluteString
        _ = try await client.send(relative("/redirect-to?url=\(target)"))
        _ = try await client.send(relative("/status/500"))
        _ = try? await client.send(relative("/fault/bad-status-line"))
        let lines = logs.lines
        #expect(lines.count >= 6, "trace logging produced \(lines.count) lines")
        for line in lines { #expect(!line.contains(Self.secret), "leaked in: \(line)") }
        #expect(lines.contains { $0.contains("X-Partner-Token: \(Redaction.marker)") })
    }

    @Test func errorDescriptionsNeverCarryACustomCredential() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let closed = try TestServer.refusingPort()
        defer { closed.stop() }
        let client = try Self.client(server)
        try client.logIn(credential: Self.secret)
        let service = ServiceCore(
            client: client, configuration: ServiceConfiguration(retryPolicy: .none, clock: ManualServiceClock()))
        var errors: [CourierError] = []
        for path in ["status/401", "status/500", "fault/bad-status-line", "bytes/10", "echo"] {
            do {
                let _: ServiceUser = try await service.get(path)
            } catch {
                errors.append(error)
            }
        }
        let refusing = try BaseURL("http://127.0.0.1:\(closed.port)")
        do {
            let _: ServiceUser = try await service.get(
                "x", options: .default.with(\.server, refusing.url).with(\.sendsCredentialToServer, true))
        } catch {
            errors.append(error)
        }
        #expect(
            Set(errors.map(\.code)).isSuperset(of: [
                .httpStatus, .invalidResponse, .unacceptableContentType, .decoding, .cannotConnect,
            ]))
        for error in errors {
            for text in [String(describing: error), String(reflecting: error), error.message] {
                #expect(!text.contains(Self.secret), "\(error.code) leaked: \(text)")
            }
        }
    }

    @Test func loggingEventMonitorNeverCarriesACustomCredential() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let store = ServiceLogCapture.Store()
        let logger = Logger(label: "test") { _ in ServiceLogCapture(store: store) }
        let coordinator = AuthRefreshCoordinator<String>(credential: Self.secret) { _ in Self.secret + "-2" }
        let interceptor = AuthenticationInterceptor(coordinator: coordinator) { token, request in
            request.headerFields[Self.partnerToken] = token
        }
        let service = try ServiceFixture.service(server) {
            $0.authentication = interceptor
            $0.monitors = [LoggingEventMonitor(logger: logger)]
        }
        let first: EchoModel = try await service.get("echo")
        #expect(first.headers["x-partner-token"] == Self.secret)
        // A 401 is refreshed and retried: the new credential is redacted too.
        _ = try? await service.get("status/401", as: EchoModel.self)
        let lines = store.lines.withLock { $0 }
        #expect(lines.contains { $0.contains("X-Partner-Token: \(Redaction.marker)") })
        for line in lines { #expect(!line.contains(Self.secret), "leaked in: \(line)") }
        #expect(service.core.prepared.credentialFieldNames.contains(Self.partnerToken))
    }
}

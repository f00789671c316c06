import CourierTesting
import Foundation
import HTTPTypes
import Logging
import Synchronization
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct HTTPClientLoggingTests {
    @Test func logsNeverContainCredentials() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.enqueue(ScriptedResponse.text("ok").with("Set-Cookie", "session=server-secret"))
        let lines = Recorder<String>()
        var logger = Logger(label: "test") { _ in CapturingLogHandler(lines: lines) }
        logger.logLevel = .trace
        let client = try makeClient {
            $0.logger = logger
            $0.sensitiveHeaderNames = [HTTPField.Name("X-Api-Key")!]
        }
        try client.logIn(credential: "bearer-secret")
        var request = HTTPRequest(.get, server.url("/echo?token=query-secret"))
        request.headerFields[.cookie] = "id=cookie-secret"
        request.headerFields[HTTPField.Name("X-Api-Key")!] = "key-secret"
        request.headerFields[.proxyAuthorization] = "Basic proxy-secret"
        _ = try await client.send(request)
        let text = lines.values.joined(separator: "\n")
        #expect(text.contains("GET"))
        #expect(text.contains("200"))
        for secret in ["bearer-secret", "cookie-secret", "key-secret", "proxy-secret", "server-secret", "query-secret"]
        {
            #expect(!text.contains(secret), "\(secret) leaked into the log")
        }
        #expect(text.contains(Redaction.marker))
    }

    @Test func errorDescriptionsCarryNoCredentials() async throws {
        let server = try TestServer.blackHole()
        defer { server.stop() }
        let client = try makeClient { $0.timeout = .milliseconds(200) }
        try client.logIn(credential: "bearer-secret")
        let error = await courierError { _ = try await client.send(HTTPRequest(.get, server.baseURL)) }
        #expect(error?.description.contains("bearer-secret") == false)
    }

    /// A login notification the client cannot use says in the log where the credential goes: the
    /// old warning ("without a String credential") did not name the key, and an app posting
    /// `["token": …]` had to read the source to find `CourierNotificationKey.credential`.
    @Test func anUnusableLoginNotificationNamesTheKeyItNeeds() throws {
        let lines = Recorder<String>()
        let center = NotificationCenter()
        let client = try makeClient {
            $0.logger = Logger(label: "test") { _ in CapturingLogHandler(lines: lines) }
            $0.notificationCenter = center
        }
        center.post(name: .courierUserDidLogIn, object: nil, userInfo: ["token": "token-secret"])
        center.post(name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: 42])
        #expect(!client.isLoggedIn)
        let warnings = lines.values
        #expect(warnings.count == 2, "\(warnings)")
        for line in warnings {
            #expect(line.contains("CourierNotificationKey.credential"), "\(line)")
            #expect(!line.contains("token-secret"), "\(line)")
        }
    }
}

struct CapturingLogHandler: LogHandler {
    let lines: Recorder<String>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let extra = (event.metadata ?? [:]).map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        lines.append("\(event.level) \(event.message) \(extra)")
    }
}

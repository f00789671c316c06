import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Issue 18 item 1: a body-level code decides as a status would — retry, refresh then retry,
/// fail with a domain error — through the one `RetryDecision` and the refresh coordinator.
@Suite struct EnvelopeRuleTests {
    static let rule = EnvelopeRule.json(retryCodes: ["50301"], refreshCodes: ["40101"])

    static func envelope(_ code: Int, _ message: String = "", data: Any = NSNull()) -> ScriptedResponse {
        .json(["code": code, "msg": message, "data": data])
    }

    @Test func retryCodeIsRetriedLikeARetryableStatus() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let hits = ServiceCounter()
        server.route("/feed") { _ in
            hits.increment() < 3 ? Self.envelope(50301, "busy") : Self.envelope(0, data: ["id": 1, "name": "Ada"])
        }
        let service = try ServiceFixture.service(server) { $0.envelope = Self.rule }
        let response = try await service.send(Endpoint<ServiceUser>.get("feed"))
        #expect(response.value == ServiceUser(id: 1, name: "Ada"))
        #expect(response.attempts == 3)
        #expect(server.count("/feed") == 3)
    }

    @Test func retryCodeKeepsTheOneAttemptCapAndTheIdempotentSet() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/feed") { _ in Self.envelope(50301, "busy") }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.envelope = Self.rule
            configuration.retryPolicy = RetryPolicy(maximumRetries: 9, jitter: 0)
            configuration.maximumAttempts = 4
        }
        do {
            let _: ServiceUser = try await service.get("feed")
            Issue.record("expected the retry code to end the call at the cap")
        } catch {
            #expect(error.code == .apiError)
            #expect(error.errorModel(as: EnvelopeFailure.self)?.code == "50301")
            #expect(error.status == .ok)
        }
        #expect(server.count("/feed") == 4)
        // A POST is not retried unless the policy opts in, as after a 503.
        do {
            let _: ServiceUser = try await service.post("feed")
            Issue.record("expected the POST to fail")
        } catch {
            #expect(error.code == .apiError)
        }
        #expect(server.count("/feed") == 5)
    }

    @Test func refreshCodeRefreshesOnceForConcurrentCallsThenRetriesWithTheNewToken() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/me") { request in
            request.header("Authorization") == "Bearer fresh"
                ? Self.envelope(0, data: ["id": 7, "name": "Ada"]) : Self.envelope(40101, "token expired")
        }
        let refreshes = ServiceCounter()
        let coordinator = AuthRefreshCoordinator<String>(credential: "stale") { _ in
            refreshes.increment()
            // Hold the refresh until all ten calls were rejected: one refresh serves them all.
            while server.count("/me") < 10 { await Task.yield() }
            return "fresh"
        }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.envelope = Self.rule
            configuration.authentication = .bearer(coordinator)
        }
        let options = CallOptions.default.with(\.deduplicates, false)
        let attempts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<10 {
                group.addTask { try await service.send(Endpoint<ServiceUser>.get("me", options: options)).attempts }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(attempts == Array(repeating: 2, count: 10))
        #expect(refreshes.value == 1)
        #expect(coordinator.refreshCount == 1)
        let sent = server.recordedRequests(path: "/me").map { $0.header("Authorization") ?? "" }
        #expect(sent.filter { $0 == "Bearer stale" }.count == 10)
        #expect(sent.filter { $0 == "Bearer fresh" }.count == 10)
    }

    @Test func aCachedRetryEnvelopeIsNotServedToTheRetry() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let hits = ServiceCounter()
        server.route("/feed") { _ in
            let answer =
                hits.increment() == 1 ? Self.envelope(50301, "busy") : Self.envelope(0, data: ["id": 2, "name": "B"])
            return answer.with(.cacheControl, "max-age=600")
        }
        let cache = try HostScopedCache(
            configuration: .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let client = try HTTPClient(configuration: .init(baseURL: server.baseURL, cache: cache))
        var configuration = ServiceConfiguration(
            retryPolicy: RetryPolicy(jitter: 0), clock: ManualServiceClock(autoAdvance: true))
        configuration.envelope = Self.rule
        let service = ServiceCore(client: client, configuration: configuration)
        let response = try await service.send(Endpoint<ServiceUser>.get("feed"))
        #expect(response.value.id == 2 && response.attempts == 2 && !response.isFromCache)
        #expect(server.count("/feed") == 2)
        // The success replaced the cached retry envelope.
        let again = try await service.send(Endpoint<ServiceUser>.get("feed"))
        #expect(again.value.id == 2 && again.isFromCache)
        #expect(server.count("/feed") == 2)
    }

    /// A failure envelope in an answer whose headers allow caching is an error, not an answer
    /// to keep: the next call asks the server again (as after a refused status), on the
    /// memory and on the disk tier.
    @Test(arguments: [false, true])
    func aCachedFailureEnvelopeIsNotServedToTheNextCall(onDisk: Bool) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let hits = ServiceCounter()
        server.route("/feed") { _ in
            let answer =
                hits.increment() == 1
                ? Self.envelope(40400, "no such feed") : Self.envelope(0, data: ["id": 2, "name": "B"])
            return answer.with(.cacheControl, "max-age=600")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("envelope-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule("127.0.0.1", .followHTTP)],
                storage: onDisk ? .disk(directory: folder.path) : .memoryOnly))
        let client = try HTTPClient(configuration: .init(baseURL: server.baseURL, cache: cache))
        var configuration = ServiceConfiguration(
            retryPolicy: RetryPolicy(jitter: 0), clock: ManualServiceClock(autoAdvance: true))
        configuration.envelope = Self.rule
        let service = ServiceCore(client: client, configuration: configuration)
        do {
            _ = try await service.send(Endpoint<ServiceUser>.get("feed"))
            Issue.record("expected the failure envelope's error")
        } catch {
            #expect(error.code == .apiError)
        }
        let next = try await service.send(Endpoint<ServiceUser>.get("feed"))
        #expect(next.value.id == 2 && !next.isFromCache)
        #expect(server.count("/feed") == 2)
    }

    @Test func refreshCodeWithoutAuthenticationEndsTheCall() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/me") { _ in Self.envelope(40101, "token expired") }
        let service = try ServiceFixture.service(server) { $0.envelope = Self.rule }
        do {
            let _: ServiceUser = try await service.get("me")
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .apiError)
            #expect(error.message.contains("token expired"))
        }
        #expect(server.count("/me") == 1)
    }

    @Test func otherCodeIsADomainErrorWithoutRetry() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/user") { _ in .json(text: #"{"code":"40400","msg":"no such user","data":null}"#) }
        let service = try ServiceFixture.service(server) { $0.envelope = Self.rule }
        do {
            let _: ServiceUser = try await service.get("user")
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .apiError)
            let failure = error.errorModel(as: EnvelopeFailure.self)
            #expect(failure?.code == "40400")
            #expect(failure?.message == "no such user")
        }
        #expect(server.count("/user") == 1)
    }

    /// The server's message goes into the error's description, which apps log: its line
    /// breaks and other control characters are replaced, and it is cut at 256 characters, so
    /// that a server cannot forge log lines or flood them. The error model keeps it as sent.
    @Test func anEnvelopeMessageCannotForgeOrFloodLogLines() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let forged = "no such user\n2026-11-28 INFO login ok user=admin\r\u{1B}[2J\u{2028}"
        let long = String(repeating: "x", count: 100_000)
        for (path, message) in [("/forged", forged), ("/long", long)] {
            server.route(path) { _ in .json(["code": "40400", "msg": message, "data": NSNull()]) }
        }
        let service = try ServiceFixture.service(server) { $0.envelope = Self.rule }
        for (path, message) in [("forged", forged), ("long", long)] {
            let error = await courierError { let _: ServiceUser = try await service.get(path) }
            let description = try #require(error).description
            #expect(!description.unicodeScalars.contains { $0.properties.generalCategory == .control })
            #expect(!description.contains("\u{2028}"))
            #expect(description.count < 600, "\(description.count) characters")
            #expect(error?.errorModel(as: EnvelopeFailure.self)?.message == message)
        }
    }

    @Test func bodyThatIsNotAnEnvelopeIsADecodingError() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/user") { _ in .json(["id": 1, "name": "Ada"]) }
        server.route("/list") { _ in .json(text: "[1, 2]") }
        let service = try ServiceFixture.service(server) { $0.envelope = Self.rule }
        for path in ["user", "list"] {
            do {
                let _: ServiceUser = try await service.get(path)
                Issue.record("expected an error for \(path)")
            } catch {
                #expect(error.code == .decoding)
                #expect(error.status == .ok)
            }
        }
        #expect(server.requestCount == 2)
    }

    /// A UTF-8 byte order mark before the envelope (some Windows-hosted APIs send one): the
    /// JSON decoder skips it for a plain answer, so the envelope reader must too, and a `null`
    /// answer after one is still "no data".
    @Test func envelopeAfterAByteOrderMarkIsRead() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/me") { _ in .json(text: "\u{FEFF}" + #"{"code":0,"msg":"ok","data":{"id":1,"name":"Ada"}}"#) }
        server.route("/plain") { _ in .json(text: "\u{FEFF}" + #"{"id":2,"name":"Bo"}"#) }
        server.route("/none") { _ in .json(text: "\u{FEFF}null") }
        let plainService = try ServiceFixture.service(server)
        let plain: ServiceUser = try await plainService.get("plain")
        #expect(plain == ServiceUser(id: 2, name: "Bo"))
        do {
            let _: ServiceUser = try await plainService.get("none", options: .default.with(\.noData, .null))
            Issue.record("expected .noData")
        } catch {
            #expect(error.code == .noData)
        }
        let service = try ServiceFixture.service(server) { $0.envelope = Self.rule }
        let user: ServiceUser = try await service.get("me")
        #expect(user == ServiceUser(id: 1, name: "Ada"))
    }

    /// A JSON number is its value, however it is written: a server (or a gateway re-encoding
    /// numbers as doubles) that sends `0.0` or `-0` means code 0. A number too large for its
    /// value to be exact stays as written, and is a failure like any unknown code.
    @Test func numericCodesReadAsTheirValue() throws {
        func code(_ json: String) throws -> String {
            try JSONEnvelope.read(Data(json.utf8), codeKey: "code", messageKey: "msg", payloadKey: "data").code
        }
        for zero in ["0", "0.0", "-0", "0e0", "0E+2", "-0.000"] {
            #expect(try code(#"{"code":\#(zero)}"#) == "0", "\(zero)")
        }
        #expect(try code(#"{"code":4.0101e4}"#) == "40101")
        #expect(try code(#"{"code":"0.0"}"#) == "0.0")
        #expect(try code(#"{"code":0.5}"#) == "0.5")
        #expect(try code(#"{"code":123456789012345678901234567890}"#) == "123456789012345678901234567890")
        #expect(try code(#"{"code":1e400}"#) == "1e400")
        // Not JSON numbers (a lenient scan lets them through): as written, never a value.
        #expect(try code(#"{"code":0x1e}"#) == "0x1e")
        #expect(try code(#"{"code":-0x1p3}"#) == "-0x1p3")
        #expect(Self.rule.meaning(of: try code(#"{"code":5.0301e4}"#)) == .retry)
    }

    /// A truncated or misspelt literal (`tru`, `fals`, `nul`, `truex`, `nan`) is not JSON: the
    /// body is not an envelope, and the call fails with `.decoding`. On the old code the scan
    /// took any run of letters for a literal, read the code as written, and the call failed
    /// with `.apiError`, as if the server had reported a failure code.
    @Test func aTruncatedLiteralIsNotAnEnvelope() async throws {
        for literal in ["tru", "fals", "nul", "truex", "nan", "t"] {
            #expect(throws: (any Error).self, "\(literal)") {
                try JSONEnvelope.read(
                    Data(#"{"code":\#(literal),"msg":"x"}"#.utf8), codeKey: "code", messageKey: "msg",
                    payloadKey: "data")
            }
        }
        for literal in ["true", "false", "null"] {
            #expect(throws: Never.self, "\(literal)") {
                try JSONEnvelope.read(
                    Data(#"{"code":0,"msg":"x","data":\#(literal)}"#.utf8), codeKey: "code", messageKey: "msg",
                    payloadKey: "data")
            }
        }
        let server = try TestServer()
        defer { server.stop() }
        server.route("/me") { _ in .json(text: #"{"code":tru,"msg":"ok","data":{"id":1,"name":"Ada"}}"#) }
        let service = try ServiceFixture.service(server) { $0.envelope = Self.rule }
        let error = await courierError { let _: ServiceUser = try await service.get("me") }
        #expect(error?.code == .decoding)
        #expect(error?.status == .ok)
    }

    /// An anti-XSSI prefix guards the whole body, envelope included: a service that strips it
    /// (`.stripXSSIPrefix` in its pipeline) and reads codes with `envelope` gets the envelope,
    /// and its retry code still retries.
    @Test func anXSSIPrefixIsStrippedBeforeTheEnvelopeIsRead() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let hits = ServiceCounter()
        server.route("/me") { _ in
            let envelope =
                hits.increment() == 1
                ? #"{"code":50301,"msg":"busy"}"# : #"{"code":0,"msg":"ok","data":{"id":1,"name":"Ada"}}"#
            return .json(text: ")]}',\n" + envelope)
        }
        let service = try ServiceFixture.service(server) { configuration in
            configuration.envelope = Self.rule
            configuration.pipeline = ResponsePipeline(preprocessors: [.stripXSSIPrefix])
        }
        let response = try await service.send(Endpoint<ServiceUser>.get("me"))
        #expect(response.value == ServiceUser(id: 1, name: "Ada"))
        #expect(response.attempts == 2)
    }

    @Test func meaningOfCodes() {
        let rule = EnvelopeRule.json(successCodes: ["0", "200"], retryCodes: ["1"], refreshCodes: ["2", "1"])
        #expect(rule.meaning(of: "0") == .success)
        #expect(rule.meaning(of: "200") == .success)
        #expect(rule.meaning(of: "1") == .refreshCredential)
        #expect(rule.meaning(of: "2") == .refreshCredential)
        #expect(rule.meaning(of: "3") == .failure)
    }

    @Test func retryDecisionTreatsAnEnvelopeRetryAsARetryableStatus() throws {
        let context = ResponseContext(
            request: HTTPRequest(method: .get, scheme: "https", authority: "a.test", path: "/"),
            response: HTTPResponse(status: .ok), body: Data(#"{"code":50301}"#.utf8))
        var error: CourierError?
        do { _ = try Self.rule.unwrap(context) } catch let thrown { error = thrown }
        let failure = AttemptFailure(response: context.response, body: context.body, error: try #require(error))
        let policy = RetryPolicy(maximumRetries: 2, baseDelay: .milliseconds(100), jitter: 0)
        func decide(_ attempt: Int, _ method: HTTPRequest.Method) -> RetryDecision {
            RetryDecision(
                afterAttempt: attempt, of: 10, method: method, failure: failure, verdict: .doNotRetry, policy: policy,
                now: Date())
        }
        guard case .retry(let first) = decide(1, .get) else { return #expect(Bool(false), "no retry after 1") }
        #expect(first == .milliseconds(100))
        guard case .retry(let second) = decide(2, .get) else { return #expect(Bool(false), "no retry after 2") }
        #expect(second == .milliseconds(200))
        guard case .giveUp(let capped) = decide(3, .get) else { return #expect(Bool(false), "retried past the policy") }
        #expect(capped.code == .apiError)
        guard case .giveUp = decide(1, .post) else { return #expect(Bool(false), "retried a POST") }
    }
}

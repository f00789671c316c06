import CourierProtoModels
import CourierProtobuf
import CourierTesting
import Foundation
import HTTPTypes
import Synchronization
import Testing

@_spi(Fuzzing) @testable import Courier

/// Issue 18 item 1 with a protobuf envelope: a wrapper message (code, message, bytes payload)
/// decides retry, refresh-then-retry and failure as a JSON envelope does.
@Suite struct ProtobufEnvelopeTests {
    static let profile = UserProfile(userId: 42, displayName: "Ada", tier: .pro)

    static func answer(_ envelope: Envelope) -> ScriptedResponse {
        let bytes = (try? ProtobufEncoder().encode(envelope)) ?? Data()
        return ScriptedResponse(headers: [.contentType: "application/x-protobuf"], body: bytes)
    }

    static let rule = EnvelopeRule.protobuf(Envelope.self, retryCodes: ["503"], refreshCodes: ["40101"]) {
        EnvelopeRule.Reading(code: String($0.code), message: $0.message, payload: $0.payload)
    }

    @Test func refreshCodeRefreshesThenRetryCodeRetriesThenThePayloadDecodes() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let busy = Atomic<Int>(0)
        server.route("/profile") { request in
            guard request.header("Authorization") == "Bearer fresh" else {
                return Self.answer(Envelope(code: 40101, message: "token expired"))
            }
            if busy.wrappingAdd(1, ordering: .relaxed).newValue == 1 {
                return Self.answer(Envelope(code: 503, message: "busy"))
            }
            let payload = (try? ProtobufEncoder().encode(Self.profile)) ?? Data()
            return Self.answer(Envelope(code: 0, payload: payload))
        }
        let refreshes = Atomic<Int>(0)
        let coordinator = AuthRefreshCoordinator<String>(credential: "stale") { _ in
            refreshes.wrappingAdd(1, ordering: .relaxed)
            return "fresh"
        }
        let client = try HTTPClient(configuration: .init(baseURL: server.baseURL))
        var configuration = ServiceConfiguration(
            retryPolicy: RetryPolicy(jitter: 0), authentication: .bearer(coordinator),
            clock: ManualServiceClock(autoAdvance: true))
        configuration.envelope = Self.rule
        let service = ServiceCore(client: client, configuration: configuration)
        var endpoint = Endpoint<UserProfile>.get("profile")
        endpoint.serializer = .protobuf(UserProfile.self)
        let response = try await service.send(endpoint)
        #expect(response.value == Self.profile)
        #expect(response.attempts == 3)
        #expect(refreshes.load(ordering: .relaxed) == 1)
        #expect(server.recordedRequests(path: "/profile").count == 3)

        server.route("/missing") { _ in Self.answer(Envelope(code: 404, message: "no such profile")) }
        do {
            let _: UserProfile = try await service.get("missing", serializer: .protobuf(UserProfile.self))
            Issue.record("expected a domain error")
        } catch {
            #expect(error.code == .apiError)
            let failure = error.errorModel(as: EnvelopeFailure.self)
            #expect(failure?.code == "404" && failure?.message == "no such profile")
        }
        #expect(server.recordedRequests(path: "/missing").count == 1)
    }
}

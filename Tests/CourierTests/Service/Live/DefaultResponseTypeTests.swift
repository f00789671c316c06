import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// The default response type belongs to the client (issue 17 item 4): a service that names
/// none reads models the client's way; a service or a call may override it.
@Suite struct DefaultResponseTypeTests {
    struct Pair: Decodable, Sendable, Equatable {
        var a: Int
        var b: String
    }

    struct PairService: APIService {
        let core: ServiceCore
        func pair() async throws(CourierError) -> Pair { try await get("pair") }
        func pairAsText() async throws(CourierError) -> String { try await get("pair", serializer: .string) }
    }

    private func server() -> TestServer {
        let server = try! TestServer()
        server.route("/pair") { request in
            // Answers in the format the request asks for, so the Accept header is checked too.
            if request.headers[.accept]?.contains("application/x-www-form-urlencoded") == true {
                return .text("a=1&b=form", contentType: "application/x-www-form-urlencoded")
            }
            return .json(["a": 2, "b": "json"])
        }
        return server
    }

    @Test func aServiceWithoutItsOwnTypeUsesTheClients() async throws {
        let server = server()
        defer { server.stop() }
        var configuration = HTTPClient.Configuration(baseURL: server.baseURL)
        configuration.decoding = .form
        let client = try HTTPClient(configuration: configuration)
        let service = PairService(core: ServiceCore(client: client))
        #expect(try await service.pair() == Pair(a: 1, b: "form"))
        #expect(server.recordedRequests.last?.headers[.accept]?.contains("application/x-www-form-urlencoded") == true)
    }

    @Test func theServiceOverridesTheClientAndTheCallOverridesBoth() async throws {
        let server = server()
        defer { server.stop() }
        var configuration = HTTPClient.Configuration(baseURL: server.baseURL)
        configuration.decoding = .form
        let client = try HTTPClient(configuration: configuration)
        let service = PairService(
            core: ServiceCore(client: client, configuration: ServiceConfiguration(decoding: .json)))
        #expect(try await service.pair() == Pair(a: 2, b: "json"))
        #expect(try await service.pairAsText().contains("json"))
    }

    @Test func theClientsDefaultIsJSON() async throws {
        let server = server()
        defer { server.stop() }
        let client = try HTTPClient(configuration: .init(baseURL: server.baseURL))
        #expect(try await PairService(core: ServiceCore(client: client)).pair() == Pair(a: 2, b: "json"))
    }
}

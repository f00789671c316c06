import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Issue 18 item 2: a success without usable data (empty, `null`, `[]`, as the call says) is
/// reported apart from failures: `nil` for an optional model, `CourierError.noData` otherwise.
@Suite struct NoDataTests {
    @Test func nullPayloadOfAnEnvelopeIsNoDataNotADecodingError() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/me") { _ in .json(text: #"{"code":0,"msg":"ok","data":null}"#) }
        let service = try ServiceFixture.service(server) { $0.envelope = .json() }
        // Without the option: the model needs a body, as before.
        do {
            let _: ServiceUser = try await service.get("me")
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .emptyBody)
        }
        let options = CallOptions.default.with(\.noData, .all)
        do {
            let _: ServiceUser = try await service.get("me", options: options)
            Issue.record("expected .noData")
        } catch {
            #expect(error.code == .noData)
            #expect(error.status == .ok)
        }
        let optional: ServiceUser? = try await service.get("me", options: options)
        #expect(optional == nil)
    }

    @Test func emptyListIsNoDataOnlyWhenTheCallSaysSo() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/posts") { _ in .json(text: " [ ] ") }
        let service = try ServiceFixture.service(server)
        let plain: [ServiceUser] = try await service.get("posts")
        #expect(plain.isEmpty)
        let none: [ServiceUser]? = try await service.get("posts", options: .default.with(\.noData, .emptyList))
        #expect(none == nil)
        let nullOnly: [ServiceUser]? = try await service.get("posts", options: .default.with(\.noData, .null))
        #expect(nullOnly == [])
        do {
            let _: [ServiceUser] = try await service.get("posts", options: .default.with(\.noData, .emptyList))
            Issue.record("expected .noData")
        } catch {
            #expect(error.code == .noData)
        }
    }

    @Test func emptyBodyAndNoContentAreNoData() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/gone") { _ in .status(204) }
        server.route("/blank") { _ in .json(text: "") }
        let service = try ServiceFixture.service(server)
        for path in ["gone", "blank"] {
            do {
                let _: ServiceUser = try await service.get(path, options: .default.with(\.noData, .empty))
                Issue.record("expected .noData for \(path)")
            } catch {
                #expect(error.code == .noData)
            }
        }
        // A usable payload decodes as ever with the option set.
        server.route("/user") { _ in .json(["id": 3, "name": "Cy"]) }
        let user: ServiceUser? = try await service.get("user", options: .default.with(\.noData, .all))
        #expect(user == ServiceUser(id: 3, name: "Cy"))
    }

    @Test(arguments: [
        ("", NoDataRule.empty, true), ("  \n", .empty, true), ("null", .null, true), (" null ", .null, true),
        ("[]", .emptyList, true), ("[ \n ]", .emptyList, true), ("[0]", .emptyList, false), ("{}", .all, false),
        ("null", .emptyList, false), ("[]", .null, false), ("nul", .null, false), ("\"\"", .all, false),
    ])
    func matching(body: String, rule: NoDataRule, matches: Bool) {
        let context = ResponseContext(
            request: HTTPRequest(method: .get, scheme: "https", authority: "a.test", path: "/"),
            response: HTTPResponse(status: .ok), body: Data(body.utf8))
        #expect(rule.matches(context) == matches)
    }
}

import Courier
import Foundation
import HTTPTypes

// The code samples of Docs/AppFeatures-Envelope-Signing.md, compiled so the guide cannot
// drift from the API. Not run (the behaviour is tested in Features/Envelope, Signing and
// Auth/MultipartCredentialTests).

enum AppFeatureSamples {
    struct User: Decodable, Sendable { var id: Int }
    struct Post: Decodable, Sendable { var id: Int }
    struct UserService: APIService { let core: ServiceCore }

    static func envelope(client: HTTPClient, coordinator: AuthRefreshCoordinator<String>) async throws {
        var configuration = ServiceConfiguration(authentication: .bearer(coordinator))
        configuration.envelope = .json(
            codeKey: "code", messageKey: "msg", payloadKey: "data",
            successCodes: ["0"], retryCodes: ["50301"], refreshCodes: ["40101"])
        let users = UserService(core: ServiceCore(client: client, configuration: configuration))
        let me: User = try await users.get("users/me")  // decodes `data`
        _ = me
        do {
            let _: User = try await users.get("users/1")
        } catch {
            _ = error.errorModel(as: EnvelopeFailure.self)?.code
        }
        configuration.envelope = EnvelopeRule(successCodes: ["ok"]) { body in
            EnvelopeRule.Reading(code: String(decoding: body.prefix(2), as: UTF8.self), payload: body.dropFirst(2))
        }
    }

    static func noData(feed: UserService) async throws {
        let options = CallOptions.default.with(\.noData, [.null, .emptyList])  // or .all, .empty
        if let posts: [Post] = try await feed.get("feed", options: options) {
            _ = posts
        } else {
            // show the empty state
        }
        do {
            let _: [Post] = try await feed.get("feed", options: options)
        } catch let error where error.code == .noData {
            // show the empty state
        }
    }

    static func signing(appSecret: Data, adminSecret: Data) {
        var configuration = ServiceConfiguration()
        configuration.signer = RequestSigner(
            key: .init(id: "app", secret: appSecret),
            rules: ["public/": .unsigned, "admin/": .key(.init(id: "admin", secret: adminSecret))])
    }

    struct Session: Sendable, Equatable {
        var userID, token, deviceID: String
        var expiry: Date
    }

    static func multipart(saved: Session, refresh: @escaping @Sendable (Session) async throws -> Session) {
        let sessions = AuthRefreshCoordinator<Session>(credential: saved) { expired in
            try await refresh(expired)  // returns the whole new Session
        }
        var configuration = ServiceConfiguration()
        configuration.authentication = AuthenticationInterceptor(
            coordinator: sessions, isExpired: { $0.expiry <= Date() },
            parts: [
                .header(.authorization) { "Bearer \($0.token)" },
                .header(HTTPField.Name("X-User-Id")!) { $0.userID },
                .query("device") { $0.deviceID },
            ])
    }
}

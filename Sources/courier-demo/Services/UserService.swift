import Courier
import CourierProtobuf
import Foundation

/// The user's account: who they are, their settings, their profile.
struct UserService: APIService {
    let core: ServiceCore

    enum Failure: Error, Equatable {
        case signedOut
        case notFound
        case offline
        case unexpected(String)
    }

    /// The signed-in user (JSON).
    func me() async throws(Failure) -> User {
        do { return try await get("users/me") } catch { throw Self.map(error) }
    }

    /// Any user by id (JSON).
    func user(id: Int) async throws(Failure) -> User {
        do { return try await get("users/\(id)") } catch { throw Self.map(error) }
    }

    /// Saves settings, sent as an `application/x-www-form-urlencoded` body.
    func updateSettings(_ settings: Settings) async throws(Failure) -> SavedSettings {
        do {
            return try await post("users/me/settings", body: settings, options: CallOptions(requestSerializer: .form))
        } catch {
            throw Self.map(error)
        }
    }

    /// The public profile, read from an `application/x-protobuf` body.
    func profile(id: Int) async throws(Failure) -> Response<UserProfile> {
        do {
            return try await send(Endpoint(.get, "users/\(id)/profile", serializer: .protobuf(UserProfile.self)))
        } catch {
            throw Self.map(error)
        }
    }

    static func map(_ error: CourierError) -> Failure {
        switch error.code {
        case .httpStatus where error.status == .unauthorized, .authentication: .signedOut
        case .httpStatus where error.status == .notFound: .notFound
        case .cannotConnect, .timedOut: .offline
        default: .unexpected(error.description)
        }
    }
}

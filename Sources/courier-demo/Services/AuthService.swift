import Courier
import Foundation
import Synchronization

/// Logs the user in and out, and refreshes the token when the API rejects it.
///
/// Login and logout are announced with Courier's notifications, so the client and every
/// service follow without being told one by one.
///
/// A final class, not a struct, for the refresh token it keeps: the compiler checks that
/// this state is `Sendable` (a `LockedValue`; a plain `var` would not compile).
final class AuthService: APIService {
    let core: ServiceCore
    /// What can go wrong, in the app's words.
    enum Failure: Error, Equatable {
        case invalidCredentials
        case sessionExpired
        case offline
        case unexpected(String)
    }

    private let refreshToken = LockedValue<String?>(nil)

    init(core: ServiceCore) { self.core = core }

    /// Logs in and posts `courierUserDidLogIn` with the new token.
    /// - Returns: the session the API opened.
    func signIn(username: String, password: String) async throws(Failure) -> Session {
        let session: Session
        do {
            session = try await post("auth/login", body: Credentials(username: username, password: password))
        } catch {
            throw Self.map(error)
        }
        refreshToken.withLock { $0 = session.refreshToken }
        core.client.configuration.notificationCenter.post(
            name: .courierUserDidLogIn, object: self, userInfo: [CourierNotificationKey.credential: session.token])
        return session
    }

    /// Trades the refresh token for a new access token. Called by the services'
    /// `AuthRefreshCoordinator`, once for every call the API rejected at the same time.
    ///
    /// A refresh that ends after a sign-out, or after another user signed in, changes nothing:
    /// the new tokens are the previous user's.
    /// - Parameter expired: the access token the refresh replaces.
    /// - Returns: the new access token.
    func refresh(expired: String) async throws(Failure) -> String {
        guard let token = refreshToken.withLock({ $0 }) else { throw .sessionExpired }
        let session: Session
        do {
            session = try await post("auth/refresh", body: ["refreshToken": token])
        } catch {
            throw error.code == .httpStatus ? .sessionExpired : Self.map(error)
        }
        // Kept only while the stored refresh token is still the one this refresh used.
        let current = refreshToken.withLock { stored in
            guard stored == token else { return false }
            stored = session.refreshToken
            return true
        }
        guard current else { throw .sessionExpired }
        // Calls made straight through the client carry the new token too (while it still
        // holds the expired one).
        do { try core.client.logIn(credential: session.token, replacing: expired) } catch {
            throw .unexpected(error.message)
        }
        return session.token
    }

    /// Tells the API, then posts `courierUserDidLogOut`: the client drops its token, and every
    /// service with an authentication interceptor forgets its credential and purges every
    /// cached response fetched with one of this user's tokens (those refreshed away too).
    func signOut() async {
        _ = try? await post("auth/logout", as: Empty.self)
        refreshToken.withLock { $0 = nil }
        core.client.configuration.notificationCenter.post(name: .courierUserDidLogOut, object: self)
    }

    static func map(_ error: CourierError) -> Failure {
        switch error.code {
        case .httpStatus where error.status == .unauthorized: .invalidCredentials
        case .authentication: .sessionExpired
        case .cannotConnect, .timedOut: .offline
        default: .unexpected(error.description)
        }
    }
}

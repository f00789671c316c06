import Foundation

/// Binds a client (and its services) to the login and logout notifications of one account or
/// back end, so that two clients in one process follow only their own.
///
/// A notification belongs to a scope when its `object` (the sender) is the scope's name or,
/// for an object scope, that very object. A client whose `sessionScope` is `nil` follows every
/// login and logout notification, scoped or not.
///
/// ```swift
/// let work = SessionScope("work")
/// var configuration = HTTPClient.Configuration(baseURL: workAPI)
/// configuration.sessionScope = work
/// // …
/// work.postLogIn(credential: token)  // only the clients of scope "work" log in
/// ```
public struct SessionScope: Sendable {
    private enum Sender: Sendable, Hashable {
        case name(String)
        case object(ObjectIdentifier)
    }

    private let sender: Sender
    /// What notifications of this scope carry as their `object`; held so that an object
    /// scope's identifier is never reused while the scope exists.
    private let object: any Sendable

    /// The scope of notifications posted with `name` as their object.
    public init(_ name: String) {
        sender = .name(name)
        object = name
    }

    /// The scope of notifications posted with `sender` (compared by identity) as their object.
    public init(_ sender: some AnyObject & Sendable) {
        self.sender = .object(ObjectIdentifier(sender))
        object = sender
    }

    /// Whether a notification posted with `object` belongs to this scope.
    func contains(_ object: Any?) -> Bool {
        switch sender {
        case .name(let name): (object as? String) == name
        case .object(let identifier): object.map { ObjectIdentifier($0 as AnyObject) } == identifier
        }
    }

    /// Posts `courierUserDidLogIn` for this scope: its clients send `credential` from now on.
    /// - Parameters:
    ///   - credential: the token.
    ///   - center: the clients' `notificationCenter`.
    public func postLogIn(credential: String, to center: NotificationCenter = .default) {
        center.post(
            name: .courierUserDidLogIn, object: object, userInfo: [CourierNotificationKey.credential: credential])
    }

    /// Posts `courierUserDidLogOut` for this scope: its clients and services end the session.
    /// - Parameter center: the clients' `notificationCenter`.
    public func postLogOut(to center: NotificationCenter = .default) {
        center.post(name: .courierUserDidLogOut, object: object)
    }
}

extension Optional where Wrapped == SessionScope {
    /// Whether a client with this scope follows a notification posted with `object` (every
    /// one without a scope).
    func follows(_ object: Any?) -> Bool { self?.contains(object) ?? true }
}

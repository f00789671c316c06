/// The key of a `UserInfo` entry.
public struct UserInfoKey: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    /// `true` makes the call count for `ActivityMonitor` (a loading indicator).
    public static let showsActivity: UserInfoKey = "courier.showsActivity"
}

/// Free-form values a call carries for hooks: monitors, adapters, retriers.
public struct UserInfo: Sendable {
    private var values: [UserInfoKey: any Sendable]

    public init(_ values: [UserInfoKey: any Sendable] = [:]) { self.values = values }

    public subscript(key: UserInfoKey) -> (any Sendable)? {
        get { values[key] }
        set { values[key] = newValue }
    }

    /// The value for `key` cast to `T`.
    func value<T>(_ key: UserInfoKey, as type: T.Type = T.self) -> T? { values[key] as? T }

    /// Whether the call asks for the activity indicator.
    public var showsActivity: Bool { value(.showsActivity, as: Bool.self) ?? false }

    /// These values with `other`'s on top.
    func merging(_ other: UserInfo) -> UserInfo {
        UserInfo(values.merging(other.values) { _, new in new })
    }

    var isEmpty: Bool { values.isEmpty }
    var keys: [UserInfoKey] { Array(values.keys) }
}

extension UserInfo: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (UserInfoKey, any Sendable)...) {
        self.init(Dictionary(elements) { _, new in new })
    }
}

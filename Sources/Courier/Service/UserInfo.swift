import Foundation

/// The key of a `UserInfo` entry.
public struct UserInfoKey: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
    /// The key's name; namespace your own (`"myapp.screen"`).
    public var rawValue: String
    /// A key named `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A key named by a string literal: `let screen: UserInfoKey = "myapp.screen"`.
    public init(stringLiteral value: String) { self.rawValue = value }

    /// `true` makes the call count for `ActivityMonitor` (a loading indicator).
    public static let showsActivity: UserInfoKey = "courier.showsActivity"
}

/// Free-form values a call carries for hooks: monitors, adapters, retriers.
public struct UserInfo: Sendable {
    private var values: [UserInfoKey: any Sendable]

    /// Values from a dictionary.
    public init(_ values: [UserInfoKey: any Sendable] = [:]) { self.values = values }

    /// The value for `key`, or nil; setting nil removes it.
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

    /// Whether it holds a value under a key other than Courier's own (`showsActivity`): what
    /// an adapter may read to decorate one call's request and not another's.
    var hasAppValues: Bool {
        guard !values.isEmpty else { return false }
        return values.keys.contains { $0 != .showsActivity }
    }
    var keys: [UserInfoKey] { Array(values.keys) }

    /// The app's values as text, for the identity of a call whose adapters may decorate its
    /// request from them (a tenant): sorted by key, each key and value (`String(reflecting:)`;
    /// a `Data`'s bytes digested, as it reads as its length) prefixed by its length so that no
    /// two sets of values read alike; nil without app values. Longer than
    /// `largestAppValuesText`, the text is digested: the identity is kept in the gates' tables.
    /// A class instance without a description of its own reads as its type: such values are
    /// not told apart.
    var appValuesText: String? {
        guard hasAppValues else { return nil }
        var text = ""
        for (key, value) in values.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where key != .showsActivity {
            let value = (value as? Data).map { "Data " + RequestIdentity.digest($0) } ?? String(reflecting: value)
            text += "\(key.rawValue.utf8.count):\(key.rawValue)=\(value.utf8.count):\(value);"
        }
        return text.utf8.count > Self.largestAppValuesText ? "digest " + RequestIdentity.digest(text.utf8) : text
    }

    /// The longest `appValuesText` kept as text.
    static let largestAppValuesText = 128
}

extension UserInfo: ExpressibleByDictionaryLiteral {
    /// Values from a dictionary literal: `[.showsActivity: true]`; the last of repeated keys wins.
    public init(dictionaryLiteral elements: (UserInfoKey, any Sendable)...) {
        self.init(Dictionary(elements) { _, new in new })
    }
}

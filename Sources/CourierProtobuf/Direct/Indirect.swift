/// Holds an optional message out of line, so that a message can contain itself.
///
/// A Swift struct cannot contain itself (`struct Category { var parent: Category? }` has no
/// finite size). `courier-protobuf-gen` puts this wrapper on the singular message fields that
/// lead back to their own message (`Category parent = 2;`, or `Expr` → `Binary` → `Expr`):
///
/// ```swift
/// public struct Category: Sendable, Hashable, Codable {
///     public var name: String
///     @Indirect public var parent: Category?
///     public var children: [Category]   // arrays need no wrapper
/// }
/// ```
///
/// The field still reads and writes as a plain Optional and the model keeps value semantics:
/// the value lives in an immutable box that is shared by copies and replaced on assignment, so
/// `Sendable`, `==` and `hash(into:)` are those of the value. `nil` allocates nothing.
/// In `Codable` (JSON) the wrapper is invisible: the field is its value, left out when `nil`.
@propertyWrapper
public struct Indirect<Value: Sendable>: Sendable {
    private final class Box: Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    private var box: Box?

    /// A boxed field holding `wrappedValue`.
    /// - Parameter wrappedValue: the field's value, nil when absent.
    public init(wrappedValue: Value?) {
        box = wrappedValue.map(Box.init)
    }

    /// The field's value, nil when absent.
    public var wrappedValue: Value? {
        get { box?.value }
        set { box = newValue.map(Box.init) }
    }
}

extension Indirect: Equatable where Value: Equatable {
    /// Whether both hold equal values (or are both absent).
    public static func == (lhs: Self, rhs: Self) -> Bool {
        if lhs.box === rhs.box { return true }
        return lhs.wrappedValue == rhs.wrappedValue
    }
}

extension Indirect: Hashable where Value: Hashable {
    /// Hashes the value (or its absence).
    public func hash(into hasher: inout Hasher) { hasher.combine(wrappedValue) }
}

extension Indirect: Encodable where Value: Encodable {
    /// Encodes the value itself (or nil).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrappedValue)
    }
}

extension Indirect: Decodable where Value: Decodable {
    /// Decodes the value itself (or nil).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self.init(wrappedValue: container.decodeNil() ? nil : try container.decode(Value.self))
    }
}

// Synthesized `Codable` asks for a wrapped property with `decode(_:forKey:)` and
// `encode(_:forKey:)`; these make an `@Indirect` field behave like a plain Optional there:
// absent when the key is missing, left out when nil.
extension KeyedDecodingContainer {
    /// The field's value, or nil when `key` is absent or null.
    public func decode<Value: Decodable>(_ type: Indirect<Value>.Type, forKey key: Key) throws -> Indirect<Value> {
        Indirect(wrappedValue: try decodeIfPresent(Value.self, forKey: key))
    }
}

extension KeyedEncodingContainer {
    /// Encodes the field's value, or nothing when it is nil.
    public mutating func encode<Value: Encodable>(_ value: Indirect<Value>, forKey key: Key) throws {
        try encodeIfPresent(value.wrappedValue, forKey: key)
    }
}

import CProtobufC

/// A plain Swift model that is read from and written to one protobuf message type.
///
/// Conform a `Codable` struct and name the protoc-c descriptor through the C accessor that
/// `scripts/generate-protos.sh` generates (never `&descriptor`: in release builds Swift may
/// hand protobuf-c the address of a temporary copy of an imported global):
///
/// ```swift
/// struct Address: Codable { var street = "", city = "" }
/// struct UserProfile: ProtobufMessage {
///     static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
///         courier_descriptor_courier_demo_UserProfile()
///     }
///     var userId: Int64
///     var displayName: String
///     var address: Address?
/// }
/// ```
///
/// Properties are matched to fields by name: the proto's `snake_case` (`user_id`) or its
/// `camelCase` (`userId`). Nested message types only need `Codable`; their descriptors come
/// from the parent's fields.
public protocol ProtobufMessage: Codable {
    /// The protobuf-c descriptor of the message this type represents.
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> { get }
}

/// A Swift enum with `Int32` raw values that stands for a protobuf enum, with a choice of what
/// happens to numbers it does not know.
///
/// protobuf enums are open: a newer server may send a number an older app has no case for.
/// A plain `enum Color: Int32, Codable` makes such a message fail to decode (a
/// `CourierError.decoding` naming the field). Conform to `ProtobufEnum` and return a case
/// from `unrecognized` to decode unknown numbers as that case instead; the number itself is
/// then lost, and encoding writes the fallback case's own raw value.
public protocol ProtobufEnum: RawRepresentable, Codable where RawValue == Int32 {
    /// The case used for numbers the enum does not know, or nil to reject them.
    static var unrecognized: Self? { get }
}

extension ProtobufEnum {
    /// Nil: a number the enum does not know is rejected.
    public static var unrecognized: Self? { nil }
}

extension ProtobufEnum {
    /// The case for `rawValue`, the fallback, or nil.
    static func protobufCase(_ rawValue: Int32) -> Self? {
        Self(rawValue: rawValue) ?? unrecognized
    }
}

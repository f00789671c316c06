import Foundation

// The wrapper messages of google/protobuf/wrappers.proto (`StringValue`, `Int64Value`, …) hold
// one field, `value = 1`. Generated models declare a wrapper field as an Optional of the
// wrapped Swift type (`google.protobuf.StringValue note = 5;` → `var note: String?`): nil when
// the message is absent, the value (zero included) when it is there. These conformances read
// and write that one field; as with any proto3 field without presence, `-0.0` is refused.

extension String: ProtobufDirectCodable {
    /// `google.protobuf.StringValue`.
    public init(protobuf message: ProtobufMessageReader) throws { self = try message.string(1) }
    public func write(protobuf message: inout ProtobufMessageWriter) throws { try message.setString(1, self) }
}

extension Data: ProtobufDirectCodable {
    /// `google.protobuf.BytesValue`.
    public init(protobuf message: ProtobufMessageReader) throws { self = try message.bytes(1) }
    public func write(protobuf message: inout ProtobufMessageWriter) throws { try message.setBytes(1, self) }
}

extension Bool: ProtobufDirectCodable {
    /// `google.protobuf.BoolValue`.
    public init(protobuf message: ProtobufMessageReader) throws { self = try message.bool(1) }
    public func write(protobuf message: inout ProtobufMessageWriter) throws { try message.setBool(1, self) }
}

extension Int32: ProtobufDirectCodable {
    /// `google.protobuf.Int32Value`.
    public init(protobuf message: ProtobufMessageReader) throws { self = try message.int32(1) }
    public func write(protobuf message: inout ProtobufMessageWriter) throws { try message.setInt32(1, self) }
}

extension Int64: ProtobufDirectCodable {
    /// `google.protobuf.Int64Value`.
    public init(protobuf message: ProtobufMessageReader) throws { self = try message.int64(1) }
    public func write(protobuf message: inout ProtobufMessageWriter) throws { try message.setInt64(1, self) }
}

extension UInt32: ProtobufDirectCodable {
    /// `google.protobuf.UInt32Value`.
    public init(protobuf message: ProtobufMessageReader) throws { self = try message.uint32(1) }
    public func write(protobuf message: inout ProtobufMessageWriter) throws { try message.setUInt32(1, self) }
}

extension UInt64: ProtobufDirectCodable {
    /// `google.protobuf.UInt64Value`.
    public init(protobuf message: ProtobufMessageReader) throws { self = try message.uint64(1) }
    public func write(protobuf message: inout ProtobufMessageWriter) throws { try message.setUInt64(1, self) }
}

extension Float: ProtobufDirectCodable {
    /// `google.protobuf.FloatValue`.
    public init(protobuf message: ProtobufMessageReader) throws { self = try message.float(1) }
    public func write(protobuf message: inout ProtobufMessageWriter) throws { try message.setFloat(1, self) }
}

extension Double: ProtobufDirectCodable {
    /// `google.protobuf.DoubleValue`.
    public init(protobuf message: ProtobufMessageReader) throws { self = try message.double(1) }
    public func write(protobuf message: inout ProtobufMessageWriter) throws { try message.setDouble(1, self) }
}

/// `google.protobuf.Empty`: a message with no fields (a field of this type is there or not).
public struct ProtobufEmpty: Sendable, Hashable, Codable, ProtobufDirectCodable {
    /// The empty message.
    public init() {}
    public init(protobuf message: ProtobufMessageReader) throws {}
    public func write(protobuf message: inout ProtobufMessageWriter) throws {}
}

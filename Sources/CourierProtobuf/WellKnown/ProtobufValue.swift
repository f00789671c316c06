import Foundation

/// A JSON-like value: `google.protobuf.Value`. Generated models declare `Value` fields as
/// `ProtobufValue?`, `Struct` fields as `[String: ProtobufValue]?` and `ListValue` fields as
/// `[ProtobufValue]?`.
///
/// In Swift's JSON (`Codable`) it is the plain JSON value (`null`, a number, a string, `true`,
/// an object, an array), as in the proto3 JSON mapping. On the wire, a `Value` with no kind set
/// (which has no JSON form) and a `null_value` other than 0 are `.decoding` errors rather than
/// values that would be sent back differently.
public enum ProtobufValue: Sendable, Hashable {
    /// `null_value`.
    case null
    /// `number_value`.
    case number(Double)
    /// `string_value`.
    case string(String)
    /// `bool_value`.
    case bool(Bool)
    /// `google.protobuf.Struct`.
    case object([String: ProtobufValue])
    /// `google.protobuf.ListValue`.
    case array([ProtobufValue])
}

extension ProtobufValue: ProtobufDirectCodable {
    /// Reads the member of the `kind` oneof that was sent.
    public init(protobuf message: ProtobufMessageReader) throws {
        if try message.has(1) {
            let number = try message.int32(1)
            guard number == 0 else {
                throw ProtobufBridgeError(message: "google.protobuf.Value null_value \(number) is not NULL_VALUE (0)")
            }
            self = .null
        } else if try message.has(2) {
            self = .number(try message.double(2))
        } else if try message.has(3) {
            self = .string(try message.string(3))
        } else if try message.has(4) {
            self = .bool(try message.bool(4))
        } else if let object = try message.message(5, as: [String: ProtobufValue].self) {
            self = .object(object)
        } else if let array = try message.message(6, as: [ProtobufValue].self) {
            self = .array(array)
        } else {
            throw Self.noKind
        }
    }

    /// Writes the matching member of the `kind` oneof.
    public func write(protobuf message: inout ProtobufMessageWriter) throws {
        switch self {
        case .null: try message.setInt32(1, 0)
        case .number(let number): try message.setDouble(2, number)
        case .string(let string): try message.setString(3, string)
        case .bool(let bool): try message.setBool(4, bool)
        case .object(let object): try message.setMessage(5, object)
        case .array(let array): try message.setMessage(6, array)
        }
    }

    static var noKind: ProtobufBridgeError {
        ProtobufBridgeError(
            message: "google.protobuf.Value has no kind set (no null, number, string, bool, struct or list)")
    }
}

/// `google.protobuf.Struct`: field 1 is `map<string, Value>`.
extension Dictionary: ProtobufDirectCodable where Key == String, Value == ProtobufValue {
    public init(protobuf message: ProtobufMessageReader) throws {
        self = try message.map(
            1, key: { try $0.string(1) },
            value: { entry in
                guard let value = try entry.message(2, as: ProtobufValue.self) else { throw ProtobufValue.noKind }
                return value
            })
    }

    public func write(protobuf message: inout ProtobufMessageWriter) throws {
        try message.setMap(1, self) { entry, key, value in
            try entry.setString(1, key)
            try entry.setMessage(2, value)
        }
    }
}

/// `google.protobuf.ListValue`: field 1 is `repeated Value`.
extension Array: ProtobufDirectCodable where Element == ProtobufValue {
    public init(protobuf message: ProtobufMessageReader) throws { self = try message.messages(1) }
    public func write(protobuf message: inout ProtobufMessageWriter) throws { try message.setMessages(1, self) }
}

extension ProtobufValue: Codable {
    /// Reads any JSON value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([ProtobufValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: ProtobufValue].self))
        }
    }

    /// Writes the plain JSON value.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .number(let number): try container.encode(number)
        case .string(let string): try container.encode(string)
        case .bool(let bool): try container.encode(bool)
        case .object(let object): try container.encode(object)
        case .array(let array): try container.encode(array)
        }
    }
}

import CProtobufC
import Courier
import Foundation

/// `google.protobuf.Any`: a message of any type, as its type URL and its encoded bytes.
///
/// ```swift
/// let detail = try ProtobufAny(Money(currency: "EUR", units: 12))   // type.googleapis.com/courier.shared.Money
/// let money = try detail.unpack(Money.self)
/// // Or, for one of several types: a registry from type URL to decoder.
/// let registry = ProtobufTypeRegistry([Money.self, Address.self])
/// switch try registry.unpack(detail) { case let money as Money: …; default: … }
/// ```
public struct ProtobufAny: Sendable, Hashable, Codable {
    /// `type.googleapis.com/<full message name>` (any prefix up to the last `/`).
    public var typeURL: String
    /// The message's wire bytes.
    public var value: Data

    /// A packed message.
    /// - Parameters:
    ///   - typeURL: the type URL (`type.googleapis.com/courier.shared.Money`).
    ///   - value: the message's wire bytes.
    public init(typeURL: String = "", value: Data = Data()) {
        self.typeURL = typeURL
        self.value = value
    }

    /// Packs `message`: its bytes, and the type URL of its descriptor's full name.
    /// - Parameters:
    ///   - message: the message to pack.
    ///   - typeURLPrefix: what precedes the full name (`type.googleapis.com`, as Google's runtimes).
    /// - Throws: `CourierError` `.encoding` when the message cannot be encoded.
    public init<M: ProtobufMessage>(_ message: M, typeURLPrefix: String = "type.googleapis.com") throws {
        self.init(
            typeURL: typeURLPrefix + "/" + protobufFullName(M.protobufDescriptor),
            value: try ProtobufEncoder().encode(message))
    }

    /// The full message name: the type URL after its last `/`.
    public var typeName: String {
        guard let slash = typeURL.lastIndex(of: "/") else { return typeURL }
        return String(typeURL[typeURL.index(after: slash)...])
    }

    /// The packed message as `type`.
    /// - Parameters:
    ///   - type: the model type, whose descriptor's full name must be ``typeName``.
    ///   - decoder: the decoder (and its limits) to use.
    /// - Throws: `CourierError` `.decoding` when the Any holds another type or its bytes do not decode.
    public func unpack<M: ProtobufMessage>(_ type: M.Type, decoder: ProtobufDecoder = ProtobufDecoder()) throws -> M {
        let expected = protobufFullName(M.protobufDescriptor)
        guard typeName == expected else {
            throw CourierError(.decoding, "the google.protobuf.Any holds \(typeURL), not \(expected)")
        }
        return try decoder.decode(M.self, from: value)
    }
}

extension ProtobufAny: ProtobufDirectCodable {
    /// Reads fields 1 (`type_url`) and 2 (`value`).
    public init(protobuf message: ProtobufMessageReader) throws {
        self.init(typeURL: try message.string(1), value: try message.bytes(2))
    }

    /// Writes fields 1 and 2.
    public func write(protobuf message: inout ProtobufMessageWriter) throws {
        try message.setString(1, typeURL)
        try message.setBytes(2, value)
    }
}

/// The message types an app expects inside `google.protobuf.Any` fields, by type URL.
public struct ProtobufTypeRegistry: Sendable {
    private typealias Unpack = @Sendable (Data, ProtobufDecoder) throws -> any ProtobufMessage & Sendable
    private var decoders: [String: Unpack] = [:]

    /// A registry that unpacks the given message types.
    /// - Parameter types: the message types (generated models, or hand-written `ProtobufMessage`s).
    public init(_ types: [any (ProtobufMessage & Sendable & SendableMetatype).Type]) {
        for type in types { register(type) }
    }

    private mutating func register<M: ProtobufMessage & Sendable & SendableMetatype>(_ type: M.Type) {
        decoders[protobufFullName(M.protobufDescriptor)] = { data, decoder in try decoder.decode(M.self, from: data) }
    }

    /// The message an Any holds, decoded as the registered type of its type URL.
    /// - Throws: `CourierError` `.decoding` for a type URL no registered type has, or bytes that do not decode.
    public func unpack(_ any: ProtobufAny, decoder: ProtobufDecoder = ProtobufDecoder()) throws
        -> any ProtobufMessage & Sendable
    {
        guard let unpack = decoders[any.typeName] else {
            throw CourierError(.decoding, "no type is registered for the google.protobuf.Any type URL \(any.typeURL)")
        }
        return try unpack(any.value, decoder)
    }
}

/// The full name of a message (`courier.shared.Money`).
private func protobufFullName(_ descriptor: UnsafePointer<ProtobufCMessageDescriptor>) -> String {
    String(cString: descriptor.pointee.name)
}

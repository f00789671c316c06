import CProtobufC
import Foundation

/// The fields of a message that its schema does not know, kept as wire bytes so that they are
/// sent again unchanged.
///
/// A newer server may add fields; an app built with the older schema that reads a message and
/// writes it back must not delete them. Generated models carry them in `unknownFields`: decoding
/// fills it with what protobuf-c did not recognise (in wire order), encoding writes it after the
/// known fields, as Google's runtimes do. Two models that differ only in unknown fields are not
/// equal. In `Codable` (JSON) the property is invisible: never written, empty when decoded.
public struct ProtobufUnknownFields: Sendable, Hashable {
    /// The fields as they were on the wire: each its tag, then its value.
    public var bytes: Data { storage }
    @usableFromInline var storage: Data

    /// No fields.
    @inlinable public init() { storage = Data() }

    /// Whether there are no unknown fields.
    @inlinable public var isEmpty: Bool { storage.isEmpty }

    /// protobuf-c's unknown fields of the message at `message`.
    @usableFromInline init(_ message: UnsafeRawPointer) {
        let header = message.assumingMemoryBound(to: ProtobufCMessage.self).pointee
        storage = Data()
        guard header.n_unknown_fields > 0, let fields = header.unknown_fields else { return }
        for i in 0..<Int(header.n_unknown_fields) {
            let field = fields[i]
            WireCursor.appendVarint(UInt64(field.tag) << 3 | UInt64(field.wire_type.rawValue), to: &storage)
            if field.len > 0, let data = field.data { storage.append(data, count: field.len) }
        }
    }

    /// Stores the fields as protobuf-c's unknown fields of the message at `message`, in `session`.
    func store(in message: UnsafeMutableRawPointer, session: EncodingSession) throws {
        var entries: [(tag: UInt32, wireType: UInt32, start: Int, count: Int)] = []
        try bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws in
            var index = 0
            func varint() throws(ProtobufBridgeError) -> UInt64 {
                guard let start = raw.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    let value = WireCursor.varint(start, raw.count, &index)
                else { throw ProtobufBridgeError(message: "unknown fields: malformed varint") }
                return value
            }
            while index < raw.count {
                let key = try varint()
                let start = index
                switch key & 7 {
                case 0: _ = try varint()
                case 1: index += 8
                case 5: index += 4
                case 2:
                    let length = try varint()
                    guard length <= UInt64(raw.count - index) else {
                        throw ProtobufBridgeError(message: "unknown fields: truncated")
                    }
                    index += Int(length)
                default: throw ProtobufBridgeError(message: "unknown fields: wire type \(key & 7) is not supported")
                }
                guard index <= raw.count, key >> 3 > 0, key >> 3 <= UInt64(UInt32.max) else {
                    throw ProtobufBridgeError(message: "unknown fields: truncated or invalid field")
                }
                entries.append((UInt32(key >> 3), UInt32(key & 7), start, index - start))
            }
        }
        guard !entries.isEmpty else { return }
        let array = session.allocate(entries.count * MemoryLayout<ProtobufCMessageUnknownField>.stride)
            .bindMemory(to: ProtobufCMessageUnknownField.self, capacity: entries.count)
        bytes.withUnsafeBytes { raw in
            for (i, entry) in entries.enumerated() {
                let data = session.allocate(max(entry.count, 1))
                if entry.count > 0 {
                    data.copyMemory(from: raw.baseAddress! + entry.start, byteCount: entry.count)
                }
                (array + i).initialize(
                    to: ProtobufCMessageUnknownField(
                        tag: entry.tag, wire_type: ProtobufCWireType(rawValue: entry.wireType), len: entry.count,
                        data: data.assumingMemoryBound(to: UInt8.self)))
            }
        }
        let header = message.assumingMemoryBound(to: ProtobufCMessage.self)
        header.pointee.n_unknown_fields = UInt32(entries.count)
        header.pointee.unknown_fields = array
    }
}

extension ProtobufMessageReader {
    /// The fields of this message that its schema does not know.
    @inlinable public func unknownFields() -> ProtobufUnknownFields {
        // `ProtobufCMessage.n_unknown_fields` follows the descriptor pointer.
        if base.load(fromByteOffset: MemoryLayout<UnsafeRawPointer>.size, as: UInt32.self) == 0 {
            return ProtobufUnknownFields()
        }
        return ProtobufUnknownFields(base)
    }
}

extension ProtobufMessageWriter {
    /// Writes `fields` after the known fields of this message.
    @inlinable public mutating func setUnknownFields(_ fields: ProtobufUnknownFields) throws {
        if fields.isEmpty { return }
        try storeUnknownFields(fields)
    }

    @usableFromInline func storeUnknownFields(_ fields: ProtobufUnknownFields) throws {
        try fields.store(in: base, session: session)
    }
}

// Synthesized `Codable` leaves the unknown fields out of JSON.
extension KeyedDecodingContainer {
    /// No unknown fields: JSON does not carry them.
    public func decode(_ type: ProtobufUnknownFields.Type, forKey key: Key) throws -> ProtobufUnknownFields {
        ProtobufUnknownFields()
    }
}

extension KeyedEncodingContainer {
    /// Writes nothing: JSON does not carry unknown protobuf fields.
    public mutating func encode(_ value: ProtobufUnknownFields, forKey key: Key) throws {}
}

extension ProtobufUnknownFields: Codable {
    /// Empty (unknown protobuf fields have no JSON form).
    public init(from decoder: any Decoder) throws { self.init() }
    /// Writes nothing.
    public func encode(to encoder: any Encoder) throws {}
}

import Foundation

// The part of google/protobuf/descriptor.proto the generator needs, read from the
// FileDescriptorSet that `protoc-c --descriptor_set_out` writes. Field numbers are those of
// descriptor.proto, which never change.

/// A `.proto` file.
struct FileDescriptor {
    var name = ""
    var package = ""
    var syntax = ""
    var messages: [MessageDescriptor] = []
    var enums: [EnumDescriptor] = []
}

/// A message, with its nested messages and enums.
struct MessageDescriptor {
    var name = ""
    var fields: [FieldDescriptor] = []
    var nested: [MessageDescriptor] = []
    var enums: [EnumDescriptor] = []
    var oneofs: [String] = []
    var isMapEntry = false
    var hasExtensionRanges = false
}

/// A field of a message.
struct FieldDescriptor {
    enum Label: Int { case optional = 1, required, repeated }
    enum Kind: Int {
        case double = 1, float, int64, uint64, int32, fixed64, fixed32, bool, string, group, message, bytes
        case uint32, enumeration, sfixed32, sfixed64, sint32, sint64
    }
    var name = ""
    var number: Int32 = 0
    var label = Label.optional
    var kind = Kind.int32
    /// The fully qualified type name of a message or enum field (`.courier.demo.Address`).
    var typeName = ""
    var defaultValue: String?
    var oneofIndex: Int?
    var proto3Optional = false
}

/// An enum.
struct EnumDescriptor {
    var name = ""
    var values: [(name: String, number: Int32)] = []
}

/// A malformed descriptor set.
struct DescriptorError: Error, CustomStringConvertible {
    var description: String
}

/// Reads protobuf wire format: just what descriptor sets use.
private struct WireReader {
    let bytes: [UInt8]
    var index: Int
    let end: Int

    init(_ bytes: [UInt8], _ range: Range<Int>) {
        self.bytes = bytes
        self.index = range.lowerBound
        self.end = range.upperBound
    }

    var isAtEnd: Bool { index >= end }

    mutating func varint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while index < end {
            let byte = bytes[index]
            index += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
            if shift >= 64 { break }
        }
        throw DescriptorError(description: "malformed varint in the descriptor set")
    }

    /// The next field's number and wire type, or nil at the end.
    mutating func tag() throws -> (number: Int, wireType: Int)? {
        if isAtEnd { return nil }
        let key = try varint()
        return (Int(key >> 3), Int(key & 7))
    }

    /// A length-delimited field's byte range.
    mutating func delimited() throws -> Range<Int> {
        let length = Int(try varint())
        guard length >= 0, length <= end - index else {
            throw DescriptorError(description: "truncated field in the descriptor set")
        }
        defer { index += length }
        return index..<(index + length)
    }

    mutating func string() throws -> String {
        String(decoding: bytes[try delimited()], as: UTF8.self)
    }

    mutating func skip(_ wireType: Int) throws {
        switch wireType {
        case 0: _ = try varint()
        case 1: index += 8
        case 2: _ = try delimited()
        case 5: index += 4
        default: throw DescriptorError(description: "unsupported wire type \(wireType) in the descriptor set")
        }
        guard index <= end else { throw DescriptorError(description: "truncated descriptor set") }
    }

    /// Calls `body` for each field of the message in `range`.
    static func fields(
        _ bytes: [UInt8], _ range: Range<Int>, _ body: (Int, Int, inout WireReader) throws -> Bool
    ) throws {
        var reader = WireReader(bytes, range)
        while let (number, wireType) = try reader.tag() {
            if try !body(number, wireType, &reader) { try reader.skip(wireType) }
        }
    }
}

/// Reads a `FileDescriptorSet`.
func readDescriptorSet(_ data: [UInt8]) throws -> [FileDescriptor] {
    var files: [FileDescriptor] = []
    try WireReader.fields(data, 0..<data.count) { number, wireType, reader in
        guard number == 1, wireType == 2 else { return false }
        files.append(try readFile(data, try reader.delimited()))
        return true
    }
    return files
}

private func readFile(_ bytes: [UInt8], _ range: Range<Int>) throws -> FileDescriptor {
    var file = FileDescriptor()
    try WireReader.fields(bytes, range) { number, wireType, reader in
        switch (number, wireType) {
        case (1, 2): file.name = try reader.string()
        case (2, 2): file.package = try reader.string()
        case (4, 2): file.messages.append(try readMessage(bytes, try reader.delimited()))
        case (5, 2): file.enums.append(try readEnum(bytes, try reader.delimited()))
        case (12, 2): file.syntax = try reader.string()
        default: return false
        }
        return true
    }
    return file
}

private func readMessage(_ bytes: [UInt8], _ range: Range<Int>) throws -> MessageDescriptor {
    var message = MessageDescriptor()
    try WireReader.fields(bytes, range) { number, wireType, reader in
        switch (number, wireType) {
        case (1, 2): message.name = try reader.string()
        case (2, 2): message.fields.append(try readField(bytes, try reader.delimited()))
        case (3, 2): message.nested.append(try readMessage(bytes, try reader.delimited()))
        case (4, 2): message.enums.append(try readEnum(bytes, try reader.delimited()))
        case (5, 2):
            message.hasExtensionRanges = true
            return false
        case (7, 2):
            // MessageOptions.map_entry = 7.
            try WireReader.fields(bytes, try reader.delimited()) { option, type, value in
                guard option == 7, type == 0 else { return false }
                message.isMapEntry = try value.varint() != 0
                return true
            }
        case (8, 2):
            // OneofDescriptorProto.name = 1.
            var name = ""
            try WireReader.fields(bytes, try reader.delimited()) { field, type, value in
                guard field == 1, type == 2 else { return false }
                name = try value.string()
                return true
            }
            message.oneofs.append(name)
        default: return false
        }
        return true
    }
    return message
}

private func readField(_ bytes: [UInt8], _ range: Range<Int>) throws -> FieldDescriptor {
    var field = FieldDescriptor()
    try WireReader.fields(bytes, range) { number, wireType, reader in
        switch (number, wireType) {
        case (1, 2): field.name = try reader.string()
        case (3, 0): field.number = Int32(truncatingIfNeeded: try reader.varint())
        case (4, 0):
            let raw = Int(try reader.varint())
            guard let label = FieldDescriptor.Label(rawValue: raw) else {
                throw DescriptorError(description: "field \(field.name): unknown label \(raw)")
            }
            field.label = label
        case (5, 0):
            let raw = Int(try reader.varint())
            guard let kind = FieldDescriptor.Kind(rawValue: raw) else {
                throw DescriptorError(description: "field \(field.name): unknown type \(raw)")
            }
            field.kind = kind
        case (6, 2): field.typeName = try reader.string()
        case (7, 2): field.defaultValue = try reader.string()
        case (9, 0): field.oneofIndex = Int(try reader.varint())
        case (17, 0): field.proto3Optional = try reader.varint() != 0
        default: return false
        }
        return true
    }
    return field
}

private func readEnum(_ bytes: [UInt8], _ range: Range<Int>) throws -> EnumDescriptor {
    var descriptor = EnumDescriptor()
    try WireReader.fields(bytes, range) { number, wireType, reader in
        switch (number, wireType) {
        case (1, 2): descriptor.name = try reader.string()
        case (2, 2):
            var name = ""
            var value: Int32 = 0
            try WireReader.fields(bytes, try reader.delimited()) { field, type, reader in
                switch (field, type) {
                case (1, 2): name = try reader.string()
                case (2, 0): value = Int32(truncatingIfNeeded: try reader.varint())
                default: return false
                }
                return true
            }
            descriptor.values.append((name, value))
        default: return false
        }
        return true
    }
    return descriptor
}

// MARK: - Running a protoc plugin

/// The files of a `FileDescriptorSet`, each as its serialized `FileDescriptorProto`.
func rawFiles(_ data: [UInt8]) throws -> [ArraySlice<UInt8>] {
    var files: [ArraySlice<UInt8>] = []
    try WireReader.fields(data, 0..<data.count) { number, wireType, reader in
        guard number == 1, wireType == 2 else { return false }
        files.append(data[try reader.delimited()])
        return true
    }
    return files
}

/// A `google.protobuf.compiler.CodeGeneratorRequest` asking for every file of the set, with
/// protoc-c's libprotoc version as the compiler version.
func pluginRequest(descriptorSet data: [UInt8], parameter: String) throws -> [UInt8] {
    let files = try readDescriptorSet(data)
    var request: [UInt8] = []
    for file in files { appendField(1, Array(file.name.utf8), to: &request) }
    if !parameter.isEmpty { appendField(2, Array(parameter.utf8), to: &request) }
    var version: [UInt8] = []
    for (number, value) in [(1, 3), (2, 21), (3, 12)] {
        appendVarint(UInt64(number << 3), to: &version)
        appendVarint(UInt64(value), to: &version)
    }
    appendField(3, version, to: &request)
    for file in try rawFiles(data) { appendField(15, Array(file), to: &request) }
    return request
}

/// The files of a `CodeGeneratorResponse` as (name, content).
/// - Throws: the plugin's error message.
func pluginResponseFiles(_ data: [UInt8]) throws -> [(String, [UInt8])] {
    var files: [(String, [UInt8])] = []
    var failure: String?
    try WireReader.fields(data, 0..<data.count) { number, wireType, reader in
        switch (number, wireType) {
        case (1, 2): failure = try reader.string()
        case (15, 2):
            var name = ""
            var content: [UInt8] = []
            try WireReader.fields(data, try reader.delimited()) { field, type, value in
                switch (field, type) {
                case (1, 2): name = try value.string()
                case (15, 2): content = Array(data[try value.delimited()])
                default: return false
                }
                return true
            }
            files.append((name, content))
        default: return false
        }
        return true
    }
    if let failure { throw DescriptorError(description: "the plugin failed: \(failure)") }
    return files
}

private func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
    var value = value
    while value >= 0x80 {
        bytes.append(UInt8(value & 0x7F) | 0x80)
        value >>= 7
    }
    bytes.append(UInt8(value))
}

private func appendField(_ number: Int, _ payload: [UInt8], to bytes: inout [UInt8]) {
    appendVarint(UInt64(number << 3 | 2), to: &bytes)
    appendVarint(UInt64(payload.count), to: &bytes)
    bytes.append(contentsOf: payload)
}

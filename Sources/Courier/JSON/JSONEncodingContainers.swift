import Foundation

/// A keyed container writing the members of one object frame.
struct JSONKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let impl: JSONEncoderImpl
    let frame: Int
    let id: Int
    let depth: Int
    let suffix: [any CodingKey]
    /// False for `[String: V]`, whose keys Foundation writes unconverted.
    var convertsKeys = true

    init(impl: JSONEncoderImpl, frame: Int, id: Int, depth: Int, suffix: [any CodingKey]) {
        self.impl = impl
        self.frame = frame
        self.id = id
        self.depth = depth
        self.suffix = suffix
    }

    var codingPath: [any CodingKey] { impl.path(depth: depth, suffix: suffix) }

    @inline(__always)
    private func begin(_ key: Key) throws {
        let name = convertsKeys ? impl.encodedKey(key, depth: depth, suffix: suffix) : key.stringValue
        guard impl.beginElement(frame, id, key: name) else { throw stale(key) }
    }

    private func stale(_ key: any CodingKey) -> EncodingError {
        impl.misuse("a keyed container was used after a later container was opened", path: codingPath + [key])
    }

    private func valuePath(_ key: Key) -> [any CodingKey] { impl.path(depth: depth, suffix: suffix, appending: key) }

    mutating func encodeNil(forKey key: Key) throws {
        try begin(key)
        impl.writer.write(ascii: "null")
    }

    mutating func encode(_ value: Bool, forKey key: Key) throws {
        try begin(key)
        if value { impl.writer.write(ascii: "true") } else { impl.writer.write(ascii: "false") }
    }

    mutating func encode(_ value: String, forKey key: Key) throws {
        try begin(key)
        impl.writer.write(value)
    }

    mutating func encode(_ value: Double, forKey key: Key) throws {
        try begin(key)
        try impl.writeDouble(value, path: valuePath(key))
    }

    mutating func encode(_ value: Float, forKey key: Key) throws {
        try begin(key)
        try impl.writeFloat(value, path: valuePath(key))
    }

    @inline(__always)
    private mutating func integer<T: FixedWidthInteger>(_ value: T, _ key: Key) throws {
        try begin(key)
        impl.writer.write(integer: value)
    }

    mutating func encode(_ value: Int, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try integer(value, key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try begin(key)
        try impl.encodeValue(value, level: impl.frames[frame].level + 1, depth: depth, suffix: suffix, key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        guard (try? begin(key)) != nil else {
            return KeyedEncodingContainer(
                JSONKeyedEncodingContainer<NestedKey>(
                    impl: impl, frame: -1, id: 0, depth: depth, suffix: suffix + [key]))
        }
        let (nested, nestedID) = impl.openNested(.object, parent: frame)
        return KeyedEncodingContainer(
            JSONKeyedEncodingContainer<NestedKey>(
                impl: impl, frame: nested, id: nestedID, depth: depth, suffix: suffix + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        guard (try? begin(key)) != nil else {
            return JSONUnkeyedEncodingContainer(impl: impl, frame: -1, id: 0, depth: depth, suffix: suffix + [key])
        }
        let (nested, nestedID) = impl.openNested(.array, parent: frame)
        return JSONUnkeyedEncodingContainer(
            impl: impl, frame: nested, id: nestedID, depth: depth, suffix: suffix + [key])
    }

    mutating func superEncoder() -> any Encoder {
        superEncoder(name: "super", key: JSONKey.super)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(
            name: convertsKeys ? impl.encodedKey(key, depth: depth, suffix: suffix) : key.stringValue, key: key)
    }

    private func superEncoder(name: String, key: any CodingKey) -> any Encoder {
        let path = impl.path(depth: depth, suffix: suffix, appending: key)
        guard impl.beginElement(frame, id, key: name) else {
            _ = stale(key)
            return JSONSuperEncoder(impl: impl, slot: -1, id: 0, codingPath: path)
        }
        let slot = impl.pushFrame(.slot, level: impl.frames[frame].level + 1)
        return JSONSuperEncoder(impl: impl, slot: slot, id: impl.frames[slot].id, codingPath: path)
    }
}

/// An unkeyed container writing the elements of one array frame.
struct JSONUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    let impl: JSONEncoderImpl
    let frame: Int
    let id: Int
    let depth: Int
    let suffix: [any CodingKey]

    var codingPath: [any CodingKey] { impl.path(depth: depth, suffix: suffix) }
    var count: Int { impl.isOpen(frame, id) ? impl.frames[frame].count : 0 }

    @inline(__always)
    private func begin() throws {
        guard impl.beginElement(frame, id, key: nil) else {
            throw impl.misuse("an unkeyed container was used after a later container was opened", path: codingPath)
        }
    }

    private func elementPath(_ index: Int) -> [any CodingKey] {
        impl.path(depth: depth, suffix: suffix, appending: JSONKey(index: index))
    }

    mutating func encodeNil() throws {
        try begin()
        impl.writer.write(ascii: "null")
    }

    mutating func encode(_ value: Bool) throws {
        try begin()
        if value { impl.writer.write(ascii: "true") } else { impl.writer.write(ascii: "false") }
    }

    mutating func encode(_ value: String) throws {
        try begin()
        impl.writer.write(value)
    }

    mutating func encode(_ value: Double) throws {
        let index = count
        try begin()
        try impl.writeDouble(value, path: elementPath(index))
    }

    mutating func encode(_ value: Float) throws {
        let index = count
        try begin()
        try impl.writeFloat(value, path: elementPath(index))
    }

    @inline(__always)
    private mutating func integer<T: FixedWidthInteger>(_ value: T) throws {
        try begin()
        impl.writer.write(integer: value)
    }

    mutating func encode(_ value: Int) throws { try integer(value) }
    mutating func encode(_ value: Int8) throws { try integer(value) }
    mutating func encode(_ value: Int16) throws { try integer(value) }
    mutating func encode(_ value: Int32) throws { try integer(value) }
    mutating func encode(_ value: Int64) throws { try integer(value) }
    mutating func encode(_ value: UInt) throws { try integer(value) }
    mutating func encode(_ value: UInt8) throws { try integer(value) }
    mutating func encode(_ value: UInt16) throws { try integer(value) }
    mutating func encode(_ value: UInt32) throws { try integer(value) }
    mutating func encode(_ value: UInt64) throws { try integer(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let index = count
        try begin()
        try impl.encodeValue(
            value, level: impl.frames[frame].level + 1, depth: depth, suffix: suffix, key: JSONKey(index: index))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let key = JSONKey(index: count)
        guard (try? begin()) != nil else {
            return KeyedEncodingContainer(
                JSONKeyedEncodingContainer<NestedKey>(
                    impl: impl, frame: -1, id: 0, depth: depth, suffix: suffix + [key]))
        }
        let (nested, nestedID) = impl.openNested(.object, parent: frame)
        return KeyedEncodingContainer(
            JSONKeyedEncodingContainer<NestedKey>(
                impl: impl, frame: nested, id: nestedID, depth: depth, suffix: suffix + [key]))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let key = JSONKey(index: count)
        guard (try? begin()) != nil else {
            return JSONUnkeyedEncodingContainer(impl: impl, frame: -1, id: 0, depth: depth, suffix: suffix + [key])
        }
        let (nested, nestedID) = impl.openNested(.array, parent: frame)
        return JSONUnkeyedEncodingContainer(
            impl: impl, frame: nested, id: nestedID, depth: depth, suffix: suffix + [key])
    }

    mutating func superEncoder() -> any Encoder {
        let path = elementPath(count)
        guard (try? begin()) != nil else { return JSONSuperEncoder(impl: impl, slot: -1, id: 0, codingPath: path) }
        let slot = impl.pushFrame(.slot, level: impl.frames[frame].level + 1)
        return JSONSuperEncoder(impl: impl, slot: slot, id: impl.frames[slot].id, codingPath: path)
    }
}

/// The single-value container: fills the slot of the value being encoded.
struct JSONSingleValueEncodingContainer: SingleValueEncodingContainer {
    let impl: JSONEncoderImpl
    let frame: Int
    let id: Int
    let depth: Int
    let suffix: [any CodingKey]

    var codingPath: [any CodingKey] { impl.path(depth: depth, suffix: suffix) }

    @inline(__always)
    private func begin() throws {
        guard impl.isOpen(frame, id) else {
            throw impl.misuse("a single value container was used after its value was finished", path: codingPath)
        }
        guard impl.frames[frame].kind == .slot else {
            throw EncodingError.invalidValue(
                (),
                .init(
                    codingPath: codingPath,
                    debugDescription:
                        "Attempt to encode value through single value container when previously value already encoded.")
            )
        }
        impl.closeFrames(downTo: frame + 1)
        impl.frames[frame].kind = .done
    }

    mutating func encodeNil() throws {
        try begin()
        impl.writer.write(ascii: "null")
    }

    mutating func encode(_ value: Bool) throws {
        try begin()
        if value { impl.writer.write(ascii: "true") } else { impl.writer.write(ascii: "false") }
    }

    mutating func encode(_ value: String) throws {
        try begin()
        impl.writer.write(value)
    }

    mutating func encode(_ value: Double) throws {
        try begin()
        try impl.writeDouble(value, path: codingPath)
    }

    mutating func encode(_ value: Float) throws {
        try begin()
        try impl.writeFloat(value, path: codingPath)
    }

    @inline(__always)
    private mutating func integer<T: FixedWidthInteger>(_ value: T) throws {
        try begin()
        impl.writer.write(integer: value)
    }

    mutating func encode(_ value: Int) throws { try integer(value) }
    mutating func encode(_ value: Int8) throws { try integer(value) }
    mutating func encode(_ value: Int16) throws { try integer(value) }
    mutating func encode(_ value: Int32) throws { try integer(value) }
    mutating func encode(_ value: Int64) throws { try integer(value) }
    mutating func encode(_ value: UInt) throws { try integer(value) }
    mutating func encode(_ value: UInt8) throws { try integer(value) }
    mutating func encode(_ value: UInt16) throws { try integer(value) }
    mutating func encode(_ value: UInt32) throws { try integer(value) }
    mutating func encode(_ value: UInt64) throws { try integer(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try begin()
        try impl.encodeValue(value, level: impl.frames[frame].level, depth: depth, suffix: suffix, key: nil)
    }
}

/// The encoder `superEncoder()` returns: it fills one slot of the shared output.
final class JSONSuperEncoder: Encoder {
    let impl: JSONEncoderImpl
    let slot: Int
    let id: Int
    let codingPath: [any CodingKey]

    init(impl: JSONEncoderImpl, slot: Int, id: Int, codingPath: [any CodingKey]) {
        self.impl = impl
        self.slot = slot
        self.id = id
        self.codingPath = codingPath
    }

    var userInfo: [CodingUserInfoKey: Any] { impl.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(impl.keyedContainer(slot: slot, id: id, depth: 0, suffix: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        impl.unkeyedContainer(slot: slot, id: id, depth: 0, suffix: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        JSONSingleValueEncodingContainer(impl: impl, frame: slot, id: id, depth: 0, suffix: codingPath)
    }
}

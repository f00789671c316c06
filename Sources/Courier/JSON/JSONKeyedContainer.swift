import Foundation

/// A keyed container over one object of the tape.
///
/// Keys are found by comparing the raw key bytes with `CodingKey.stringValue`'s UTF-8; no
/// `String` is made for a key with the default strategy. Members are usually read in the
/// order they are written, so the lookup first tries the key after the last match (kept on
/// the decoder) and only then scans from the start. The first of duplicate keys wins, as in
/// Foundation: the shortcut is only taken on objects without duplicate keys.
struct JSONKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    /// Not retained, so that copying a container costs no reference counting: decoders are
    /// never deallocated (see `JSONDecoderImpl.make`), and `generation` says whether the
    /// decode call this container belongs to is still running.
    let unmanaged: Unmanaged<JSONDecoderImpl>
    let object: Int
    let depth: Int
    let generation: Int
    /// Index in the decoder's `extras`, or -1 in the common case (no suffix, default keys).
    let extrasIndex: Int

    /// `impl` is borrowed: an initializer otherwise takes its arguments owned, which costs a
    /// retain and a release (two atomic operations) of the decoder per container.
    init(impl: borrowing JSONDecoderImpl, object: Int, depth: Int, suffix: [any CodingKey]) throws {
        let token = impl.tokens[object]
        guard token.kind == .object else {
            if token.kind == .null {
                throw DecodingError.valueNotFound(
                    [String: Any].self,
                    .init(
                        codingPath: impl.path(depth: depth, suffix: suffix),
                        debugDescription: "Cannot get keyed decoding container -- found null value instead"))
            }
            throw impl.error(
                for: .mismatch, type: [String: Any].self, at: object, path: impl.path(depth: depth, suffix: suffix))
        }
        self.unmanaged = Unmanaged.passUnretained(impl)
        self.object = object
        self.depth = depth
        self.generation = impl.generation
        let extras: JSONContainerExtras?
        if impl.options.usesDefaultKeys {
            extras = suffix.isEmpty ? nil : JSONContainerExtras(suffix: suffix, convertedKeys: nil)
            if token.flags & JSONToken.keysChecked == 0 { impl.checkDuplicateKeys(object) }
        } else {
            extras = JSONContainerExtras(
                suffix: suffix, convertedKeys: impl.convertedKeys(object, path: impl.path(depth: depth, suffix: suffix))
            )
        }
        if let extras {
            extrasIndex = impl.state.pointee.extras.count
            impl.state.pointee.extras.append(extras)
        } else {
            extrasIndex = -1
        }
    }

    /// The decoder, retained for the caller (for the less frequent operations).
    var impl: JSONDecoderImpl { unmanaged.takeUnretainedValue() }

    /// Runs `body` with the decoder, without retaining it.
    @inline(__always)
    func withImpl<R>(_ body: (JSONDecoderImpl) throws -> R) rethrows -> R {
        try unmanaged._withUnsafeGuaranteedRef(body)
    }

    /// Whether the decode call that made this container is still running.
    var isCurrent: Bool { @inline(__always) get { withImpl { $0.generation == generation } } }

    /// Keys after the first `depth` keys of the decoder's path (for nested containers).
    var suffix: [any CodingKey] {
        extrasIndex < 0 || !isCurrent ? [] : impl.state.pointee.extras[extrasIndex].suffix
    }
    /// For the snake-case and custom key strategies: each member's converted key.
    var convertedKeys: [String]? {
        extrasIndex < 0 || !isCurrent ? nil : impl.state.pointee.extras[extrasIndex].convertedKeys
    }

    var codingPath: [any CodingKey] { isCurrent ? impl.path(depth: depth, suffix: suffix) : [] }

    var allKeys: [Key] {
        guard isCurrent else { return [] }
        var result: [Key] = []
        var seen = Set<String>()
        var keyIndex = object + 1
        var member = 0
        let end = Int(impl.tokens[object].next)
        let convertedKeys = convertedKeys
        while keyIndex < end {
            let name = convertedKeys?[member] ?? impl.string(at: keyIndex)
            if seen.insert(name).inserted, let key = Key(stringValue: name) { result.append(key) }
            keyIndex = Int(impl.tokens[keyIndex + 1].next)
            member += 1
        }
        return result
    }

    /// The token index of the value for `key`, or `nil` (also once the decode call returned).
    @inline(__always)
    func find(_ key: Key) -> Int? {
        guard isCurrent else { return nil }
        if extrasIndex >= 0, let convertedKeys { return findConverted(key.stringValue, convertedKeys) }
        var name = key.stringValue
        return withImpl { impl in name.withUTF8 { impl.findMember(object, $0) } }
    }

    private func findConverted(_ name: String, _ keys: [String]) -> Int? {
        var keyIndex = object + 1
        for converted in keys {
            if converted == name { return keyIndex + 1 }
            keyIndex = Int(impl.tokens[keyIndex + 1].next)
        }
        return nil
    }

    func checkCurrent() throws {
        guard isCurrent else { throw JSONDecoderImpl.usedAfterReturn }
    }

    @inline(__always)
    func require(_ key: Key) throws -> Int {
        if let value = find(key) { return value }
        try checkCurrent()
        throw DecodingError.keyNotFound(
            key,
            .init(
                codingPath: codingPath,
                debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
    }

    func contains(_ key: Key) -> Bool { find(key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool {
        let value = try require(key)
        return withImpl { $0.tokens[value].kind == .null }
    }

    @inline(__always)
    private func scalar<T: JSONScalar>(_ type: T.Type, _ key: Key) throws -> T {
        let value = try require(key)
        return try withImpl { impl in
            do throws(JSONValueFailure) {
                return try T.read(impl, at: value)
            } catch {
                throw impl.error(
                    for: error, type: type, at: value, path: impl.path(depth: depth, suffix: suffix, appending: key))
            }
        }
    }

    @inline(__always)
    private func optionalScalar<T: JSONScalar>(_ type: T.Type, _ key: Key) throws -> T? {
        guard let value = find(key) else { return nil }
        return try withImpl { impl -> T? in
            guard impl.tokens[value].kind != .null else { return nil }
            do throws(JSONValueFailure) {
                return try T.read(impl, at: value)
            } catch {
                throw impl.error(
                    for: error, type: type, at: value, path: impl.path(depth: depth, suffix: suffix, appending: key))
            }
        }
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try scalar(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try scalar(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try scalar(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try scalar(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try scalar(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try scalar(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try scalar(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try scalar(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try scalar(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try scalar(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try scalar(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try scalar(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try scalar(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try scalar(type, key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let value = try require(key)
        return try withImpl { try $0.decodeValue(type, at: value, depth: depth, suffix: suffix, key: key) }
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try optionalScalar(type, key)
    }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try optionalScalar(type, key)
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try optionalScalar(type, key)
    }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        try optionalScalar(type, key)
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optionalScalar(type, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try optionalScalar(type, key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try optionalScalar(type, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try optionalScalar(type, key) }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let value = find(key) else { return nil }
        return try withImpl { impl -> T? in
            guard impl.tokens[value].kind != .null else { return nil }
            return try impl.decodeValue(type, at: value, depth: depth, suffix: suffix, key: key)
        }
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        KeyedDecodingContainer(
            try JSONKeyedContainer<NestedKey>(
                impl: impl, object: try require(key), depth: depth, suffix: suffix + [key]))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try JSONUnkeyedContainer(impl: impl, array: try require(key), depth: depth, suffix: suffix + [key])
    }

    func superDecoder() throws -> any Decoder {
        try checkCurrent()
        return impl.subDecoder(
            at: find(JSONKey.super) ?? impl.nullIndex,
            path: impl.path(depth: depth, suffix: suffix, appending: JSONKey.super))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        try checkCurrent()
        return impl.subDecoder(
            at: find(key) ?? impl.nullIndex, path: impl.path(depth: depth, suffix: suffix, appending: key))
    }

    private func find(_ key: JSONKey) -> Int? {
        guard isCurrent else { return nil }
        if extrasIndex >= 0, let convertedKeys { return findConverted(key.stringValue, convertedKeys) }
        var name = key.stringValue
        return withImpl { impl in name.withUTF8 { impl.findMember(object, $0) } }
    }
}

/// What a container rarely needs: a path suffix (nested containers) and converted keys.
struct JSONContainerExtras {
    var suffix: [any CodingKey]
    var convertedKeys: [String]?
}

/// The scalar types containers read directly from a token.
protocol JSONScalar {
    static func read(_ impl: JSONDecoderImpl, at value: Int) throws(JSONValueFailure) -> Self
}

extension Bool: JSONScalar {
    @inline(__always)
    static func read(_ impl: JSONDecoderImpl, at value: Int) throws(JSONValueFailure) -> Bool {
        try impl.boolValue(at: value)
    }
}

extension String: JSONScalar {
    @inline(__always)
    static func read(_ impl: JSONDecoderImpl, at value: Int) throws(JSONValueFailure) -> String {
        try impl.stringValue(at: value)
    }
}

extension Double: JSONScalar {
    @inline(__always)
    static func read(_ impl: JSONDecoderImpl, at value: Int) throws(JSONValueFailure) -> Double {
        try impl.doubleValue(at: value)
    }
}

extension Float: JSONScalar {
    @inline(__always)
    static func read(_ impl: JSONDecoderImpl, at value: Int) throws(JSONValueFailure) -> Float {
        try impl.floatValue(at: value)
    }
}

extension JSONScalar where Self: FixedWidthInteger {
    @inline(__always)
    static func read(_ impl: JSONDecoderImpl, at value: Int) throws(JSONValueFailure) -> Self {
        try impl.integerValue(at: value, as: Self.self)
    }
}

extension Int: JSONScalar {}
extension Int8: JSONScalar {}
extension Int16: JSONScalar {}
extension Int32: JSONScalar {}
extension Int64: JSONScalar {}
extension UInt: JSONScalar {}
extension UInt8: JSONScalar {}
extension UInt16: JSONScalar {}
extension UInt32: JSONScalar {}
extension UInt64: JSONScalar {}

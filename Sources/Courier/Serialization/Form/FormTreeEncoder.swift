import Foundation

/// A value the form and multipart encoders write: text, bytes, or a file on disk.
enum FormLeaf {
    case text(String)
    case data(Data)
    case file(MultipartFormData.File)
}

/// The tree `FormTreeEncoder` builds before it is flattened into `key=value` pairs.
enum FormValue {
    case leaf(FormLeaf)
    case object(FormObject)
    case array(FormArray)
}

final class FormObject {
    var entries: [(key: String, value: FormValue)] = []
}

final class FormArray {
    var items: [FormValue] = []
}

/// The `Encoder` behind ``URLEncodedFormEncoder``: builds a `FormValue` tree.
final class FormTreeEncoder: Encoder, SingleValueEncodingContainer {
    let options: URLEncodedFormEncoder
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    private(set) var value: FormValue?
    /// Called once when the value is first set (for `superEncoder`).
    private var attach: ((FormValue) -> Void)?

    init(options: URLEncodedFormEncoder, codingPath: [any CodingKey], attach: ((FormValue) -> Void)? = nil) {
        self.options = options
        self.codingPath = codingPath
        self.attach = attach
    }

    private func store(_ value: FormValue) {
        self.value = value
        if let attach {
            self.attach = nil
            attach(value)
        }
    }

    /// Encodes `value` (the top level, or a child at `codingPath`) into a tree node.
    /// Returns nil for nil and for values that wrote nothing.
    func box<T: Encodable>(_ value: T) throws -> FormValue? {
        // Metatype comparisons: much cheaper than `as?` casts on every nested value.
        if T.self == String.self { return .leaf(.text(value as! String)) }
        if T.self == Date.self { return .leaf(.text(try options.format(value as! Date))) }
        if T.self == Data.self { return .leaf(.data(value as! Data)) }
        if T.self == URL.self { return .leaf(.text((value as! URL).absoluteString)) }
        if T.self == Decimal.self { return .leaf(.text((value as! Decimal).description)) }
        if T.self == MultipartFormData.File.self { return .leaf(.file(value as! MultipartFormData.File)) }
        let encoder = FormTreeEncoder(options: options, codingPath: codingPath)
        try value.encode(to: encoder)
        return encoder.value
    }

    func child(_ key: any CodingKey) -> FormTreeEncoder {
        FormTreeEncoder(options: options, codingPath: codingPath + [key])
    }

    func text(_ value: Bool) -> FormValue {
        switch options.bools {
        case .literal: return .leaf(.text(value ? "true" : "false"))
        case .numeric: return .leaf(.text(value ? "1" : "0"))
        }
    }

    func text<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F, path: [any CodingKey]) throws -> FormValue
    {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value, EncodingError.Context(codingPath: path, debugDescription: "\(value) cannot be written in a form")
            )
        }
        return .leaf(.text(value.description))
    }

    // MARK: Encoder

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: FormObject
        if case .object(let existing)? = value {
            object = existing
        } else {
            object = FormObject()
            store(.object(object))
        }
        return KeyedEncodingContainer(FormKeyedEncodingContainer<Key>(encoder: self, object: object))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: FormArray
        if case .array(let existing)? = value {
            array = existing
        } else {
            array = FormArray()
            store(.array(array))
        }
        return FormUnkeyedEncodingContainer(encoder: self, array: array)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    // MARK: SingleValueEncodingContainer

    func encodeNil() throws {}
    func encode(_ value: Bool) throws { store(text(value)) }
    func encode(_ value: String) throws { store(.leaf(.text(value))) }
    func encode(_ value: Double) throws { store(try text(value, path: codingPath)) }
    func encode(_ value: Float) throws { store(try text(value, path: codingPath)) }
    func encode(_ value: Int) throws { store(.leaf(.text(String(value)))) }
    func encode(_ value: Int8) throws { store(.leaf(.text(String(value)))) }
    func encode(_ value: Int16) throws { store(.leaf(.text(String(value)))) }
    func encode(_ value: Int32) throws { store(.leaf(.text(String(value)))) }
    func encode(_ value: Int64) throws { store(.leaf(.text(String(value)))) }
    func encode(_ value: UInt) throws { store(.leaf(.text(String(value)))) }
    func encode(_ value: UInt8) throws { store(.leaf(.text(String(value)))) }
    func encode(_ value: UInt16) throws { store(.leaf(.text(String(value)))) }
    func encode(_ value: UInt32) throws { store(.leaf(.text(String(value)))) }
    func encode(_ value: UInt64) throws { store(.leaf(.text(String(value)))) }
    func encode<T: Encodable>(_ value: T) throws {
        if let boxed = try box(value) { store(boxed) }
    }

    // MARK: superEncoder support

    func superEncoder(attachingTo sink: @escaping (FormValue) -> Void, key: any CodingKey) -> FormTreeEncoder {
        FormTreeEncoder(options: options, codingPath: codingPath + [key], attach: sink)
    }
}

struct FormKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: FormTreeEncoder
    let object: FormObject
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func add(_ value: FormValue, _ key: Key) { object.entries.append((key.stringValue, value)) }
    private func leaf(_ text: String, _ key: Key) { add(.leaf(.text(text)), key) }

    mutating func encodeNil(forKey key: Key) throws {}
    mutating func encode(_ value: Bool, forKey key: Key) throws { add(encoder.text(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { leaf(value, key) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        add(try encoder.text(value, path: codingPath + [key]), key)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        add(try encoder.text(value, path: codingPath + [key]), key)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { leaf(String(value), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { leaf(String(value), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { leaf(String(value), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { leaf(String(value), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { leaf(String(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { leaf(String(value), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { leaf(String(value), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { leaf(String(value), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { leaf(String(value), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { leaf(String(value), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        if let boxed = try encoder.child(key).box(value) { add(boxed, key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = FormObject()
        add(.object(nested), key)
        return KeyedEncodingContainer(
            FormKeyedEncodingContainer<NestedKey>(encoder: encoder.child(key), object: nested))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = FormArray()
        add(.array(nested), key)
        return FormUnkeyedEncodingContainer(encoder: encoder.child(key), array: nested)
    }

    // `Key(stringValue: "super")` may not exist (most CodingKeys enums lack it): use a plain key.
    mutating func superEncoder() -> any Encoder { superEncoder(named: FormNameKey.super) }

    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key) }

    private func superEncoder(named key: any CodingKey) -> any Encoder {
        let object = self.object
        return encoder.superEncoder(attachingTo: { object.entries.append((key.stringValue, $0)) }, key: key)
    }
}

struct FormUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    let encoder: FormTreeEncoder
    let array: FormArray
    var codingPath: [any CodingKey] { encoder.codingPath }
    var count: Int { array.items.count }

    private var nextKey: any CodingKey { FormIndexKey(array.items.count) }

    mutating func encodeNil() throws {}
    mutating func encode(_ value: Bool) throws { array.items.append(encoder.text(value)) }
    mutating func encode(_ value: String) throws { array.items.append(.leaf(.text(value))) }
    mutating func encode(_ value: Double) throws {
        array.items.append(try encoder.text(value, path: codingPath + [nextKey]))
    }
    mutating func encode(_ value: Float) throws {
        array.items.append(try encoder.text(value, path: codingPath + [nextKey]))
    }
    mutating func encode(_ value: Int) throws { array.items.append(.leaf(.text(String(value)))) }
    mutating func encode(_ value: Int64) throws { array.items.append(.leaf(.text(String(value)))) }
    mutating func encode(_ value: UInt64) throws { array.items.append(.leaf(.text(String(value)))) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        if let boxed = try encoder.child(nextKey).box(value) { array.items.append(boxed) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<
        NestedKey
    > {
        let nested = FormObject()
        let key = nextKey
        array.items.append(.object(nested))
        return KeyedEncodingContainer(
            FormKeyedEncodingContainer<NestedKey>(encoder: encoder.child(key), object: nested))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = FormArray()
        let key = nextKey
        array.items.append(.array(nested))
        return FormUnkeyedEncodingContainer(encoder: encoder.child(key), array: nested)
    }

    mutating func superEncoder() -> any Encoder {
        let array = self.array
        return encoder.superEncoder(attachingTo: { array.items.append($0) }, key: nextKey)
    }
}

/// A name as a coding key (for `super`).
struct FormNameKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
    static let `super` = FormNameKey(stringValue: "super")
}

/// An array index as a coding key.
struct FormIndexKey: CodingKey {
    let intValue: Int?
    let stringValue: String
    init(_ index: Int) {
        intValue = index
        stringValue = String(index)
    }
    init?(stringValue: String) {
        guard let index = Int(stringValue) else { return nil }
        self.init(index)
    }
    init?(intValue: Int) { self.init(intValue) }
}

/// Returned where `Encoder`'s non-throwing container methods meet a shape protobuf cannot hold
/// (a list where the descriptor has a singular field, …): every write throws `error`.
struct FailingWriteContainer<Key: CodingKey>: KeyedEncodingContainerProtocol, UnkeyedEncodingContainer,
    SingleValueEncodingContainer
{
    let error: ProtobufBridgeError

    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }

    // Keyed.
    mutating func encodeNil(forKey key: Key) throws { throw error }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { throw error }
    mutating func encode(_ value: Bool, forKey key: Key) throws { throw error }
    mutating func encode(_ value: String, forKey key: Key) throws { throw error }
    mutating func encode(_ value: Double, forKey key: Key) throws { throw error }
    mutating func encode(_ value: Float, forKey key: Key) throws { throw error }
    mutating func encode(_ value: Int, forKey key: Key) throws { throw error }
    mutating func encode(_ value: Int8, forKey key: Key) throws { throw error }
    mutating func encode(_ value: Int16, forKey key: Key) throws { throw error }
    mutating func encode(_ value: Int32, forKey key: Key) throws { throw error }
    mutating func encode(_ value: Int64, forKey key: Key) throws { throw error }
    mutating func encode(_ value: UInt, forKey key: Key) throws { throw error }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { throw error }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { throw error }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { throw error }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { throw error }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    { KeyedEncodingContainer(FailingWriteContainer<NestedKey>(error: error)) }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { self }
    mutating func superEncoder(forKey key: Key) -> any Encoder { FailingEncoder(error: error) }

    // Unkeyed and single value.
    mutating func encodeNil() throws { throw error }
    mutating func encode<T: Encodable>(_ value: T) throws { throw error }
    mutating func encode(_ value: Bool) throws { throw error }
    mutating func encode(_ value: String) throws { throw error }
    mutating func encode(_ value: Double) throws { throw error }
    mutating func encode(_ value: Float) throws { throw error }
    mutating func encode(_ value: Int) throws { throw error }
    mutating func encode(_ value: Int8) throws { throw error }
    mutating func encode(_ value: Int16) throws { throw error }
    mutating func encode(_ value: Int32) throws { throw error }
    mutating func encode(_ value: Int64) throws { throw error }
    mutating func encode(_ value: UInt) throws { throw error }
    mutating func encode(_ value: UInt8) throws { throw error }
    mutating func encode(_ value: UInt16) throws { throw error }
    mutating func encode(_ value: UInt32) throws { throw error }
    mutating func encode(_ value: UInt64) throws { throw error }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    { KeyedEncodingContainer(FailingWriteContainer<NestedKey>(error: error)) }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
    mutating func superEncoder() -> any Encoder { FailingEncoder(error: error) }
}

/// An encoder whose every container fails with `error`.
struct FailingEncoder: Encoder {
    let error: ProtobufBridgeError
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(FailingWriteContainer<Key>(error: error))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { FailingWriteContainer<EmptyKey>(error: error) }
    func singleValueContainer() -> any SingleValueEncodingContainer { FailingWriteContainer<EmptyKey>(error: error) }
}

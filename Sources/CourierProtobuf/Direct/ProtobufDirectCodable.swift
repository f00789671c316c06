/// A model that reads and writes its fields straight from protobuf-c's C struct, skipping the
/// `Codable` container machinery: Courier's fast path.
///
/// The model stays a plain Swift struct; the conformance is a few lines per field, by field
/// number, written by hand or emitted by a generator. ``ProtobufDecoder`` and
/// ``ProtobufEncoder`` use it whenever a type conforms; other types go through `Codable`.
///
/// ```swift
/// extension Address: ProtobufDirectCodable {
///     init(protobuf message: ProtobufMessageReader) throws {
///         street = try message.string(1)
///         city = try message.string(2)
///     }
///     func write(protobuf message: inout ProtobufMessageWriter) throws {
///         try message.setString(1, street)
///         try message.setString(2, city)
///     }
/// }
/// ```
///
/// Nested message types conform too (their descriptor comes from the parent's field).
public protocol ProtobufDirectCodable {
    /// Reads the model from a decoded message.
    /// - Throws: `CourierError.decoding`-bound errors for a field the message lacks, a type that
    ///   does not match, invalid UTF-8 or an unknown enum number.
    init(protobuf message: ProtobufMessageReader) throws

    /// Writes the model's fields into a message being built.
    /// - Throws: errors for values protobuf-c cannot hold, out-of-range numbers, mismatched fields.
    func write(protobuf message: inout ProtobufMessageWriter) throws
}

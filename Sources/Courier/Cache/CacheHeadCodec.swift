import Foundation
import HTTPTypes

/// The binary form of a stored response head: a version byte, the status code, the reason
/// phrase and the fields, each string length-prefixed.
enum CacheHeadCodec {
    private static let version: UInt8 = 1

    static func encode(_ response: HTTPResponse) -> Data {
        var out = Data()
        out.append(version)
        append16(&out, UInt16(clamping: response.status.code))
        appendString(&out, response.status.reasonPhrase)
        append32(&out, UInt32(response.headerFields.count))
        for field in response.headerFields {
            appendString(&out, field.name.rawName)
            appendString(&out, field.value)
        }
        return out
    }

    /// The head in `data`, or nil when the bytes are not a valid head.
    static func decode(_ data: Data) -> HTTPResponse? {
        var reader = Reader(bytes: [UInt8](data))
        guard reader.byte() == version, let code = reader.u16(), (100...999).contains(Int(code)),
            let reason = reader.string(), let count = reader.u32(), count <= 10_000
        else { return nil }
        var fields = HTTPFields()
        for _ in 0..<count {
            guard let rawName = reader.string(), let name = HTTPField.Name(rawName), let value = reader.string() else {
                return nil
            }
            fields.append(HTTPField(name: name, value: value))
        }
        guard reader.isAtEnd else { return nil }
        return HTTPResponse(status: .init(code: Int(code), reasonPhrase: reason), headerFields: fields)
    }

    private static func append16(_ out: inout Data, _ value: UInt16) {
        out.append(UInt8(value >> 8))
        out.append(UInt8(value & 0xff))
    }

    private static func append32(_ out: inout Data, _ value: UInt32) {
        for shift in [24, 16, 8, 0] { out.append(UInt8((value >> UInt32(shift)) & 0xff)) }
    }

    private static func appendString(_ out: inout Data, _ string: String) {
        let bytes = Array(string.utf8)
        append32(&out, UInt32(bytes.count))
        out.append(contentsOf: bytes)
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        var isAtEnd: Bool { offset == bytes.count }

        mutating func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func u16() -> UInt16? {
            guard let high = byte(), let low = byte() else { return nil }
            return UInt16(high) << 8 | UInt16(low)
        }

        mutating func u32() -> UInt32? {
            guard let a = u16(), let b = u16() else { return nil }
            return UInt32(a) << 16 | UInt32(b)
        }

        mutating func string() -> String? {
            guard let length = u32(), Int(length) <= bytes.count - offset else { return nil }
            defer { offset += Int(length) }
            return String(decoding: bytes[offset..<offset + Int(length)], as: UTF8.self)
        }
    }
}

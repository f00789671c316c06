import CourierProtoModels
import CourierProtobuf
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

// Nothing silently changed (issue 19 items 4 and 5): a string with a NUL is refused, never cut;
// -0.0 and NaN payloads keep their bits where protobuf-c sends them and are refused where it
// would not; fields come out in field-number order; map output is the same for equal maps;
// proto3 `optional` keeps a sent zero. Generated models unless the test says otherwise.

@Suite struct RoundTripFidelityTests {
    typealias GScalars = CourierProtoModels.Scalars
    typealias GRepeated = CourierProtoModels.Repeated
    typealias GChoice = CourierProtoModels.Choice
    typealias GMaps = CourierProtoModels.Maps
    typealias GLegacy = CourierProtoModels.Legacy

    static func varint(_ value: UInt64) -> [UInt8] {
        var value = value
        var bytes: [UInt8] = []
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        return bytes + [UInt8(value)]
    }

    static func field(_ number: UInt64, _ payload: [UInt8]) -> [UInt8] {
        varint(number << 3 | 2) + varint(UInt64(payload.count)) + payload
    }

    static let withNUL: [UInt8] = [UInt8(ascii: "a"), 0, UInt8(ascii: "b")]

    static func refuses<T: ProtobufMessage>(_ type: T.Type, _ bytes: [UInt8], naming name: String) -> Bool {
        do {
            _ = try ProtobufDecoder().decode(T.self, from: Data(bytes))
            return false
        } catch let error as CourierError {
            return error.code == .decoding && error.message.contains("NUL") && error.message.contains(name)
        } catch {
            return false
        }
    }

    /// Every way a string is read: the inlined proto3 path, a oneof member, proto3 `optional`, a
    /// proto2 field with a default, repeated strings, map keys and values; generated and Codable
    /// models. Before issue 19 each decoded to "a".
    @Test func aStringWithANulIsRefusedWhereverItIs() throws {
        let nulOnly: [UInt8] = [0]
        #expect(Self.refuses(GScalars.self, Self.field(14, Self.withNUL), naming: "string_value"))
        #expect(Self.refuses(GScalars.self, Self.field(14, nulOnly), naming: "string_value"))
        #expect(Self.refuses(Scalars.self, Self.field(14, Self.withNUL), naming: "string_value"))
        #expect(Self.refuses(GChoice.self, Self.field(2, Self.withNUL), naming: "text"))
        #expect(Self.refuses(GChoice.self, Self.field(7, Self.withNUL), naming: "maybe_name"))
        #expect(Self.refuses(Choice.self, Self.field(7, Self.withNUL), naming: "maybe_name"))
        let legacy = [0x08, 0x01] + Self.field(2, Array("n".utf8)) + Self.field(4, Self.withNUL)
        #expect(Self.refuses(GLegacy.self, legacy, naming: "greeting"))
        #expect(Self.refuses(Legacy.self, legacy, naming: "greeting"))
        let strings = Self.field(10, Array("ok".utf8)) + Self.field(10, Self.withNUL)
        #expect(Self.refuses(GRepeated.self, strings, naming: "strings"))
        #expect(Self.refuses(Repeated.self, strings, naming: "strings"))
        let key = Self.field(1, Self.field(1, Self.withNUL) + [0x10, 0x01])
        #expect(Self.refuses(GMaps.self, key, naming: "key"))
        #expect(Self.refuses(Maps.self, key, naming: "key"))
        let value = Self.field(3, [0x08, 0x01] + Self.field(2, Self.withNUL))
        #expect(Self.refuses(GMaps.self, value, naming: "value"))
        #expect(Self.refuses(Maps.self, value, naming: "value"))

        // No false alarms: empty strings sent on the wire, defaults that were not sent.
        let empty = try ProtobufDecoder().decode(GRepeated.self, from: Data(Self.field(10, []) + Self.field(10, [])))
        #expect(empty.strings == ["", ""])
        let minimal = try ProtobufDecoder().decode(Legacy.self, from: Data([0x08, 0x01] + Self.field(2, [])))
        #expect(minimal.greeting == nil && minimal.name == "")
        #expect(try ProtobufDecoder().decode(GChoice.self, from: Data(Self.field(7, []))).maybeName == "")
        // Encoding one is refused as before.
        #expect(throws: CourierError.self) { try ProtobufEncoder().encode(GScalars(stringValue: "a\u{0}b")) }
    }

    static let nanPayloads: [UInt64] = [0x7FF8_0000_DEAD_BEEF, 0xFFF8_0000_0000_0001, 0x7FF0_0000_0000_0001]
    static let floatNaNPayloads: [UInt32] = [0x7FC0_BEEF, 0xFFC0_0001, 0x7F80_0001]

    /// NaN payloads (quiet, negative, signalling) keep their bits through decode and encode, in
    /// singular and repeated fields; -0.0 keeps its sign where the field has presence or is
    /// repeated.
    @Test func negativeZeroAndNaNPayloadsKeepTheirBits() throws {
        for bits in Self.nanPayloads {
            let bytes = try ProtobufEncoder().encode(GScalars(doubleValue: Double(bitPattern: bits)))
            #expect(bytes == Data([0x61] + withUnsafeBytes(of: bits.littleEndian, Array.init)))
            let decoded = try ProtobufDecoder().decode(GScalars.self, from: bytes)
            #expect(decoded.doubleValue.bitPattern == bits)
            #expect(try ProtobufEncoder().encode(decoded) == bytes)
        }
        for bits in Self.floatNaNPayloads {
            let bytes = try ProtobufEncoder().encode(GScalars(floatValue: Float(bitPattern: bits)))
            #expect(bytes == Data([0x5D] + withUnsafeBytes(of: bits.littleEndian, Array.init)))
            let decoded = try ProtobufDecoder().decode(GScalars.self, from: bytes)
            #expect(decoded.floatValue.bitPattern == bits)
            #expect(try ProtobufEncoder().encode(decoded) == bytes)
        }
        let doubles = [-0.0] + Self.nanPayloads.map(Double.init(bitPattern:))
        let repeated = try ProtobufEncoder().encode(GRepeated(packedDouble: doubles))
        let decoded = try ProtobufDecoder().decode(GRepeated.self, from: repeated)
        #expect(decoded.packedDouble.map(\.bitPattern) == doubles.map(\.bitPattern))
        #expect(try ProtobufEncoder().encode(decoded) == repeated)

        let ratio = try ProtobufEncoder().encode(GChoice(maybeRatio: -0.0))
        let choice = try ProtobufDecoder().decode(GChoice.self, from: ratio)
        #expect(choice.maybeRatio?.bitPattern == (-0.0 as Double).bitPattern)
        #expect(try ProtobufEncoder().encode(choice) == ratio)
    }

    /// -0.0 in a field without presence: Google's runtimes send it, protobuf-c would not (0 ==
    /// -0.0), so it decodes with its sign and re-encoding it is an `.encoding` error naming the
    /// field, never a silent +0.0.
    @Test func negativeZeroWithoutPresenceIsDecodedAndRefusedOnEncode() throws {
        let wire = Data([0x61] + withUnsafeBytes(of: (-0.0 as Double).bitPattern.littleEndian, Array.init))
        let decoded = try ProtobufDecoder().decode(GScalars.self, from: wire)
        #expect(decoded.doubleValue == 0 && decoded.doubleValue.sign == .minus)
        let error = #expect(throws: CourierError.self) { try ProtobufEncoder().encode(decoded) }
        #expect(error?.code == .encoding && error?.message.contains("double_value") == true)
    }

    /// Known fields come out in field-number order (what Google's runtimes write, so the
    /// goldens round-trip byte for byte); bytes in another order re-encode in that order with
    /// the same values.
    @Test func knownFieldsComeOutInFieldNumberOrder() throws {
        let forward = Data([0x08, 0x01] + Self.field(14, Array("s".utf8)) + [0x80, 0x01, 0x02])
        let backward = Data([0x80, 0x01, 0x02] + Self.field(14, Array("s".utf8)) + [0x08, 0x01])
        let value = try ProtobufDecoder().decode(GScalars.self, from: backward)
        #expect(value == GScalars(int32Value: 1, stringValue: "s", color: .green))
        #expect(try ProtobufEncoder().encode(value) == forward)
        #expect(try ProtobufEncoder().encode(ProtobufDecoder().decode(Scalars.self, from: backward)) == forward)
    }

    /// Keys of map entries, in the order they are on the wire (map field `number`).
    static func mapKeys(_ bytes: Data, field number: UInt64) -> [String] {
        var keys: [String] = []
        var index = bytes.startIndex
        func varint() -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
        }
        while index < bytes.endIndex {
            let tag = varint()
            let length = Int(varint())
            let entry = bytes[index..<(index + length)]
            index += length
            guard tag >> 3 == number, entry.first == 0x0A else { continue }
            let keyLength = Int(entry[entry.startIndex + 1])
            keys.append(String(decoding: entry.dropFirst(2).prefix(keyLength), as: UTF8.self))
        }
        return keys
    }

    /// Equal maps give equal bytes, however the dictionaries were built (insertion order,
    /// capacity), entries sorted by key; on the generated and the Codable path alike.
    @Test func mapOutputIsDeterministic() throws {
        let keys = (0..<40).map { "key \($0 * 7919 % 97)" }
        var outputs: Set<Data> = []
        for round in 0..<12 {
            var counts: [String: Int32] = [:]
            var colors: [String: CourierProtoModels.Color] = [:]
            if round.isMultiple(of: 3) {
                counts.reserveCapacity(1000)
                colors.reserveCapacity(1000)
            }
            let order = round.isMultiple(of: 2) ? keys : keys.reversed()
            for key in order.shuffled() {
                counts[key] = Int32(key.count)
                colors[key] = key.count.isMultiple(of: 2) ? .red : .blue
            }
            let maps = GMaps(counts: counts, colors: colors)
            let bytes = try ProtobufEncoder().encode(maps)
            outputs.insert(bytes)
            let codable = try JSONDecoder().decode(Maps.self, from: JSONEncoder().encode(maps))
            #expect(try ProtobufEncoder().encode(codable) == bytes)
        }
        #expect(outputs.count == 1)
        let bytes = try #require(outputs.first)
        #expect(Self.mapKeys(bytes, field: 1) == keys.sorted())
        #expect(Self.mapKeys(bytes, field: 4) == keys.sorted())
    }

    /// proto3 `optional`: a sent zero or empty string stays set and is sent again; unset is nil
    /// and not sent.
    @Test func proto3OptionalKeepsPresence() throws {
        let zeros = GChoice(maybeCount: 0, maybeName: "", maybeRatio: 0, maybeColor: .unspecified)
        let bytes = try ProtobufEncoder().encode(zeros)
        #expect(bytes == Data([0x30, 0x00, 0x3A, 0x00, 0x41, 0, 0, 0, 0, 0, 0, 0, 0, 0x48, 0x00]))
        #expect(try ProtobufDecoder().decode(GChoice.self, from: bytes) == zeros)
        #expect(try ProtobufEncoder().encode(GChoice()) == Data())
        let unset = try ProtobufDecoder().decode(GChoice.self, from: Data())
        #expect(unset.maybeCount == nil && unset.maybeName == nil && unset.maybeRatio == nil && unset.maybeColor == nil)
    }

    /// Short strings (up to 15 UTF-8 bytes) are read and written word by word (`SmallString`),
    /// longer ones the general way: at every length around that boundary, with a NUL, an invalid
    /// UTF-8 byte or a non-ASCII character at every position, a singular and a repeated string
    /// decode to exactly their bytes or are refused, and encode to exactly their bytes or are
    /// refused (a NUL), on the generated and the Codable path.
    @Test func stringsOfEveryShortLengthAreCarriedOrRefusedExactly() throws {
        let decoder = ProtobufDecoder()
        let encoder = ProtobufEncoder()
        for length in 0...20 {
            let ascii = (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            var cases: [(bytes: [UInt8], valid: Bool, nul: Bool)] = [(ascii, true, false)]
            for position in 0..<length {
                var nul = ascii
                nul[position] = 0
                var invalid = ascii
                invalid[position] = 0xFF
                var accented = ascii
                accented.replaceSubrange(position..<position + 1, with: Array("\u{E9}".utf8))
                cases += [(nul, true, true), (invalid, false, false), (accented, true, false)]
            }
            for (bytes, valid, nul) in cases {
                let text = String(decoding: bytes, as: UTF8.self)
                let singular = Self.field(14, bytes)
                let repeated = Self.field(10, Array("x".utf8)) + Self.field(10, bytes)
                if nul {
                    #expect(Self.refuses(GScalars.self, singular, naming: "string_value"))
                    #expect(Self.refuses(Scalars.self, singular, naming: "string_value"))
                    #expect(Self.refuses(GRepeated.self, repeated, naming: "strings"))
                    #expect(throws: CourierError.self) { try encoder.encode(GScalars(stringValue: text)) }
                    #expect(throws: CourierError.self) { try encoder.encode(GRepeated(strings: ["x", text])) }
                } else if !valid {
                    #expect(throws: CourierError.self) { try decoder.decode(GScalars.self, from: Data(singular)) }
                    #expect(throws: CourierError.self) { try decoder.decode(Scalars.self, from: Data(singular)) }
                    #expect(throws: CourierError.self) { try decoder.decode(GRepeated.self, from: Data(repeated)) }
                } else {
                    let model = try decoder.decode(GScalars.self, from: Data(singular))
                    #expect(Array(model.stringValue.utf8) == bytes)
                    #expect(Array(try decoder.decode(Scalars.self, from: Data(singular)).stringValue.utf8) == bytes)
                    let list = try decoder.decode(GRepeated.self, from: Data(repeated))
                    #expect(list.strings.map { Array($0.utf8) } == [Array("x".utf8), bytes])
                    #expect(try encoder.encode(model) == Data(bytes.isEmpty ? [] : singular))
                    #expect(try encoder.encode(GScalars(stringValue: text)) == Data(bytes.isEmpty ? [] : singular))
                    #expect(try encoder.encode(list) == Data(repeated))
                }
            }
        }
    }
}

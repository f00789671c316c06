import Courier
import CourierProtoModels
import CourierProtobuf
import Foundation
import Testing

/// Wire bytes no honest sender writes, beyond RobustnessTests' truncations and flips and
/// ProtobufLimitsTests' lying lengths: each is a `.decoding` error (or, where noted, a value),
/// never a crash, whatever path the decoder takes (including the merge of a repeated message
/// field, which walks the bytes itself).
@Suite struct HostileWireTests {
    static func varint(_ value: UInt64) -> [UInt8] { RoundTripFidelityTests.varint(value) }
    static func field(_ number: UInt64, _ payload: [UInt8]) -> [UInt8] { RoundTripFidelityTests.field(number, payload) }

    /// origin {x: 3} twice: the decoder merges them (RepeatedMessageFieldTests).
    static let repeatedOrigin = field(5, [0x08, 0x06]) + field(5, [0x08, 0x06])

    static func refuses<T: ProtobufMessage>(_ type: T.Type, _ bytes: [UInt8]) -> Bool {
        do {
            _ = try ProtobufDecoder().decode(T.self, from: Data(bytes))
            return false
        } catch let error as CourierError {
            return error.code == .decoding
        } catch {
            return false
        }
    }

    /// A length prefix whose low 32 bits are the 3 bytes that follow: a parser that truncates it
    /// would read them.
    @Test(arguments: [UInt64(1) << 32 | 3, UInt64(1) << 63 | 3, UInt64(0xFFFF_FFFF) << 32 | 3])
    func aLengthPastThirtyTwoBitsIsRefused(_ length: UInt64) {
        let abc: [UInt8] = Array("abc".utf8)
        for number: UInt64 in [14, 15] {  // Scalars.string_value, bytes_value
            #expect(
                Self.refuses(CourierProtoModels.Scalars.self, Self.varint(number << 3 | 2) + Self.varint(length) + abc))
        }
        #expect(Self.refuses(CourierProtoModels.Repeated.self, Self.varint(1 << 3 | 2) + Self.varint(length) + abc))
        for prefix in [[], Self.repeatedOrigin] {  // Choice.origin, alone and after a merge
            let bytes = prefix + Self.varint(5 << 3 | 2) + Self.varint(length) + abc
            #expect(Self.refuses(CourierProtoModels.Choice.self, bytes))
            #expect(Self.refuses(Choice.self, bytes))
        }
    }

    /// protobuf-c has no groups: a group field (wire types 3 and 4) is refused even when unknown,
    /// at the top and inside a message that is merged. (Google's runtimes skip an unknown group;
    /// Docs/Protobuf.md lists groups as unsupported.)
    @Test func groupWireTypesAreRefused() {
        let group = Self.varint(100 << 3 | 3) + [0x08, 0x05] + Self.varint(100 << 3 | 4)
        let strayEnd = Self.varint(100 << 3 | 4)
        for bytes in [group, strayEnd, group + [0x08, 0x09]] {
            #expect(Self.refuses(CourierProtoModels.Scalars.self, bytes))
            #expect(Self.refuses(CourierProtoModels.Choice.self, Self.repeatedOrigin + Self.field(5, bytes)))
        }
    }

    /// A packed fixed-width field whose length is not a multiple of the width.
    @Test(arguments: [(5 as UInt64, 4), (3, 8)])  // Repeated.packed_fixed32, packed_double
    func aPackedFieldOfAPartialElementIsRefused(_ number: UInt64, _ width: Int) {
        for count in [1, width - 1, width + 1, 2 * width + 3] {
            let bytes = Self.field(number, Array(repeating: 0x01, count: count))
            #expect(Self.refuses(CourierProtoModels.Repeated.self, bytes), "\(count) bytes")
        }
    }

    /// Nesting through map values (Category.related): refused past the depth limit like any other.
    @Test func nestingPastTheLimitThroughAMapValueIsRefused() throws {
        func chain(_ depth: Int) -> CourierProtoModels.Category {
            var category = CourierProtoModels.Category(name: "leaf")
            // Each level is a Category and a map entry: 2 levels per step.
            for _ in 1..<((depth + 1) / 2) { category = .init(name: "n", related: ["k": category]) }
            return category
        }
        let within = try ProtobufEncoder().encode(chain(99))
        #expect(try ProtobufDecoder().decode(CourierProtoModels.Category.self, from: within) == chain(99))
        let deeper = try ProtobufEncoder().encode(chain(103))
        let error = #expect(throws: CourierError.self) {
            try ProtobufDecoder().decode(CourierProtoModels.Category.self, from: deeper)
        }
        #expect(error?.message.contains("deeper than 100 levels") == true)
        // The same past the limit with a repeated parent at the top (the merge path).
        let parent = Self.field(2, Array(deeper))
        #expect(Self.refuses(CourierProtoModels.Category.self, parent + parent))
    }

    /// Invalid UTF-8 in every kind of proto3 string field (map keys and values, oneof members,
    /// proto3 `optional`, repeated, nested): refused, as by Google's runtimes.
    @Test func invalidUTF8IsRefusedInEveryStringField() {
        let invalid: [[UInt8]] = [
            [0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0xF8, 0x88, 0x80, 0x80, 0x80],
        ]
        for bad in invalid {
            let entry = Self.field(1, bad) + [0x10, 0x01]
            #expect(Self.refuses(CourierProtoModels.Maps.self, Self.field(1, entry)), "map key \(bad)")
            let nameEntry = [0x08, 0x01] + Self.field(2, bad)
            #expect(Self.refuses(CourierProtoModels.Maps.self, Self.field(3, nameEntry)), "map value \(bad)")
            #expect(Self.refuses(CourierProtoModels.Choice.self, Self.field(2, bad)), "oneof \(bad)")
            #expect(Self.refuses(CourierProtoModels.Choice.self, Self.field(7, bad)), "optional \(bad)")
            #expect(Self.refuses(CourierProtoModels.Repeated.self, Self.field(10, bad)), "repeated \(bad)")
            let origin = Self.field(5, Self.field(3, bad))
            #expect(Self.refuses(CourierProtoModels.Choice.self, Self.repeatedOrigin + origin), "merged \(bad)")
        }
    }
}

import CourierProtoModels
import CourierProtobuf
import Foundation
import Testing

@testable import Courier

// Issue 19's "done when": one schema with every feature (Protos/courier/test/catalog.proto:
// Google's well-known types, a message imported from another folder, recursion, proto3
// `optional`, maps) generates, and the bytes Google's Python runtime wrote for it
// (scripts/make-protobuf-fixtures.py: catalog_*.bin, catalog.json) decode to the values written
// out below and encode back to the same bytes, unknown fields from a newer schema included.

@Suite struct CatalogGoldenTests {
    typealias Entry = CourierProtoModels.CatalogEntry
    typealias Money = CourierProtoModels.Money

    struct Case: Decodable {
        var size: Int
        var newerSchema: Bool
        var sameBytes: Bool
        enum CodingKeys: String, CodingKey {
            case size
            case newerSchema = "newer_schema"
            case sameBytes = "same_bytes"
        }
    }

    static let cases: [String: Case] = {
        let data = try! Data(contentsOf: Fixtures.directory.appendingPathComponent("catalog.json"))
        return try! JSONDecoder().decode([String: Case].self, from: data)
    }()

    /// What Google's runtime wrote as catalog_full, written out in Swift.
    static var full: Entry {
        Entry(
            sku: "A-1",
            price: Money(currency: "EUR", units: 12, nanos: 500_000_000),
            createdAt: ProtobufTimestamp(seconds: 1_700_000_000, nanos: 123_456_789),
            shelfLife: .seconds(-3) - .milliseconds(250),
            note: "", stock: -9_000_000_000, featured: false, rank: -1, aisle: .max, views: .max, weight: 0.5,
            score: -1e300, thumbnail: Data([0, 0xFF]) + Data("png".utf8), discontinued: ProtobufEmpty(),
            attributes: [
                "color": .string("red"), "size": .number(42), "flags": .array([.bool(true), .null]),
                "nested": .object(["deep": .number(-0.5)]),
            ],
            extra: .null,
            history: [.number(1), .string("two"), .object([:])],
            detail: ProtobufAny(
                typeURL: "type.googleapis.com/courier.shared.Money",
                value: try! ProtobufEncoder().encode(Money(currency: "GBP", units: -7))),
            restocks: [
                ProtobufTimestamp(seconds: -62_135_596_800),
                ProtobufTimestamp(seconds: 253_402_300_799, nanos: 999_999_999),
                ProtobufTimestamp(),
            ],
            leadTimes: ["sea": .seconds(2_592_000), "air": .nanoseconds(1)],
            subtitle: "",
            replacement: Entry(
                sku: "A-2", replacement: Entry(sku: "A-3", createdAt: ProtobufTimestamp(seconds: 1))),
            variants: [Entry(sku: "A-1-S", stock: 0), Entry(sku: "A-1-L", variants: [Entry(sku: "A-1-XL")])],
            pricesByRegion: [
                "eu": Money(currency: "EUR", units: 10), "us": Money(currency: "USD", units: 11, nanos: 990_000_000),
            ],
            tags: [.string("new"), .bool(true)])
    }

    static func bytes(_ name: String) throws -> Data {
        try Data(contentsOf: Fixtures.directory.appendingPathComponent(name))
    }

    @Test func everyFeatureDecodesToGooglesValuesAndEncodesToItsBytes() throws {
        let golden = try Self.bytes("catalog_full.bin")
        #expect(golden.count == Self.cases["catalog_full"]?.size)
        let decoded = try ProtobufDecoder().decode(Entry.self, from: golden)
        #expect(decoded == Self.full)
        #expect(decoded.unknownFields.isEmpty)
        // Presence: wrappers and proto3 `optional` hold zeros that were sent.
        #expect(decoded.note == "" && decoded.featured == false && decoded.subtitle == "")
        #expect(decoded.variants[0].stock == 0 && decoded.variants[1].stock == nil)
        let encoded = try ProtobufEncoder().encode(decoded)
        #expect(encoded == golden, "\(encoded.hex) vs Google's \(golden.hex)")
        #expect(try ProtobufEncoder().encode(Self.full) == golden, "built in Swift")
    }

    @Test func emptyEntryRoundTrips() throws {
        let golden = try Self.bytes("catalog_empty.bin")
        let decoded = try ProtobufDecoder().decode(Entry.self, from: golden)
        #expect(decoded == Entry())
        #expect(decoded.createdAt == nil && decoded.attributes == nil && decoded.extra == nil)
        #expect(try ProtobufEncoder().encode(decoded) == golden)
    }

    /// Bytes of the newer schema (Fixtures/protobuf/v2/courier/test/catalog.proto: a string, a
    /// packed sint64, a Timestamp and a recursive message v1 does not know, at the top and in a
    /// variant) come back exactly as Google's runtime writes them after reading them with v1.
    @Test func newerFieldsSurviveARoundTrip() throws {
        let v2 = try Self.bytes("catalog_evolved.v2.bin")
        let google = try Self.bytes("catalog_evolved.v1.bin")
        let entry = try #require(Self.cases["catalog_evolved"])
        #expect(entry.newerSchema && (v2 == google) == entry.sameBytes)
        let decoded = try ProtobufDecoder().decode(Entry.self, from: v2)
        #expect(!decoded.unknownFields.isEmpty && !decoded.variants[0].unknownFields.isEmpty)
        #expect(decoded.sku == "B-9" && decoded.note == "kept" && decoded.leadTimes == ["road": .seconds(86_400)])
        #expect(decoded.createdAt == ProtobufTimestamp(seconds: 1))
        let encoded = try ProtobufEncoder().encode(decoded)
        #expect(encoded == google, "\(encoded.hex) vs Google's \(google.hex)")
        var known = decoded
        known.unknownFields = ProtobufUnknownFields()
        known.variants[0].unknownFields = ProtobufUnknownFields()
        #expect(try ProtobufEncoder().encode(known) != google, "the unknown fields are what makes them equal")
    }

    @Test func anyUnpacksThroughTheTypeOrARegistry() throws {
        let detail = try #require(Self.full.detail)
        #expect(detail.typeName == "courier.shared.Money")
        #expect(try detail.unpack(Money.self) == Money(currency: "GBP", units: -7))
        #expect(try ProtobufAny(Money(currency: "GBP", units: -7)) == detail)

        let registry = ProtobufTypeRegistry([Entry.self, Money.self])
        let unpacked = try registry.unpack(detail)
        #expect(unpacked as? Money == Money(currency: "GBP", units: -7))

        let error = #expect(throws: CourierError.self) { try detail.unpack(Entry.self) }
        #expect(error?.code == .decoding && error?.message.contains("courier.test.CatalogEntry") == true)
        let unregistered = #expect(throws: CourierError.self) {
            try ProtobufTypeRegistry([Entry.self]).unpack(detail)
        }
        #expect(unregistered?.message.contains("type.googleapis.com/courier.shared.Money") == true)
    }

    /// `Value`, `Struct` and `ListValue` are plain JSON in Swift's JSON.
    @Test func valuesAreJSONInCodable() throws {
        let value = ProtobufValue.object(["a": .array([.number(1.5), .null, .bool(false)]), "b": .string("x")])
        let json = try JSONEncoder().encode(value)
        let plain = try JSONSerialization.jsonObject(with: json) as? [String: Any]
        #expect(plain?["b"] as? String == "x")
        #expect(try JSONDecoder().decode(ProtobufValue.self, from: json) == value)
        // JSON cannot tell a `Value` field holding null from an absent one: it reads back as nil.
        var full = Self.full
        let decoded = try JSONDecoder().decode(Entry.self, from: JSONEncoder().encode(full))
        #expect(decoded.extra == nil)
        full.extra = nil
        #expect(decoded == full)
    }
}

/// The protobuf spec's rules for `Timestamp` and `Duration`: values outside them are refused
/// with a clear error both ways, never a crash or a silently different value.
@Suite struct WellKnownTypeRuleTests {
    typealias Entry = CourierProtoModels.CatalogEntry

    /// A `CatalogEntry` whose field `number` is a message holding `seconds` (1) and `nanos` (2).
    static func entry(field number: UInt8, seconds: Int64, nanos: Int32) -> Data {
        var inner = Data()
        if seconds != 0 { inner += [0x08] + varint(UInt64(bitPattern: seconds)) }
        if nanos != 0 { inner += [0x10] + varint(UInt64(bitPattern: Int64(nanos))) }
        return Data([number << 3 | 2]) + varint(UInt64(inner.count)) + inner
    }

    static func varint(_ value: UInt64) -> Data {
        var value = value
        var bytes = Data()
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
        return bytes
    }

    @Test(arguments: [
        (Int64(253_402_300_800), Int32(0), "seconds 253402300800"), (-62_135_596_801, 0, "seconds -62135596801"),
        (0, -1, "nanos -1"), (0, 1_000_000_000, "nanos 1000000000"),
    ])
    func timestampsOutsideTheSpecAreRefused(_ seconds: Int64, _ nanos: Int32, _ named: String) throws {
        let bytes = Self.entry(field: 3, seconds: seconds, nanos: nanos)
        let decoding = #expect(throws: CourierError.self) { try ProtobufDecoder().decode(Entry.self, from: bytes) }
        #expect(decoding?.code == .decoding && decoding?.message.contains("Timestamp \(named)") == true)
        #expect(decoding?.codingPath == "createdAt")
        let encoding = #expect(throws: CourierError.self) {
            try ProtobufEncoder().encode(Entry(createdAt: ProtobufTimestamp(seconds: seconds, nanos: nanos)))
        }
        #expect(encoding?.code == .encoding && encoding?.message.contains("Timestamp \(named)") == true)
    }

    @Test func timestampsConvertToAndFromDate() throws {
        let stamp = ProtobufTimestamp(seconds: -1, nanos: 500_000_000)
        #expect(stamp.date == Date(timeIntervalSince1970: -0.5))
        #expect(ProtobufTimestamp(Date(timeIntervalSince1970: -0.5)) == stamp)
        #expect(
            ProtobufTimestamp(Date(timeIntervalSince1970: 1_700_000_000.25))
                == ProtobufTimestamp(
                    seconds: 1_700_000_000, nanos: 250_000_000))
        #expect(ProtobufTimestamp(seconds: 1) < ProtobufTimestamp(seconds: 1, nanos: 1))
        // A Date too far away for the spec becomes a timestamp that is refused when sent.
        let far = ProtobufTimestamp(Date.distantFuture.addingTimeInterval(1e300))
        #expect(throws: CourierError.self) { try ProtobufEncoder().encode(Entry(createdAt: far)) }
    }

    @Test(arguments: [
        (Int64(1), Int32(-1), "different signs"), (-1, 1, "different signs"),
        (315_576_000_001, 0, "outside ±315576000000"), (0, 1_000_000_000, "outside ±999999999"),
    ])
    func durationsBreakingTheSignAndRangeRulesAreRefused(_ seconds: Int64, _ nanos: Int32, _ reason: String) throws {
        let bytes = Self.entry(field: 4, seconds: seconds, nanos: nanos)
        let error = #expect(throws: CourierError.self) { try ProtobufDecoder().decode(Entry.self, from: bytes) }
        #expect(error?.code == .decoding && error?.message.contains(reason) == true)
        #expect(error?.codingPath == "shelfLife")
    }

    @Test(arguments: [
        (Duration.seconds(-3) - .milliseconds(250), Int64(-3), Int32(-250_000_000)),
        (.nanoseconds(-1), 0, -1), (.seconds(315_576_000_000), 315_576_000_000, 0),
        (.seconds(-2) + .nanoseconds(999_999_999), -1, -1),
    ])
    func durationsKeepTheirSign(_ duration: Duration, _ seconds: Int64, _ nanos: Int32) throws {
        let encoded = try ProtobufEncoder().encode(Entry(shelfLife: duration))
        #expect(encoded == Self.entry(field: 4, seconds: seconds, nanos: nanos))
        #expect(try ProtobufDecoder().decode(Entry.self, from: encoded).shelfLife == duration)
    }

    @Test func durationsThatProtobufCannotHoldAreRefused() throws {
        let fraction = #expect(throws: CourierError.self) {
            try ProtobufEncoder().encode(Entry(shelfLife: .nanoseconds(1) / 2))
        }
        #expect(fraction?.code == .encoding && fraction?.message.contains("fraction") == true)
        #expect(throws: CourierError.self) { try ProtobufEncoder().encode(Entry(shelfLife: .seconds(315_576_000_001))) }
    }

    /// A `Duration` holds about ±1.7 × 10²⁰ seconds; past `Int64.max` seconds its `components`
    /// trap. Such a value is refused like any other past 10,000 years: on the old code encoding
    /// it trapped the process.
    @Test func durationsPastInt64SecondsAreRefusedNotTrapped() throws {
        for duration in [Duration.seconds(Int64.max) * 4, .seconds(Int64.min) * 4] {
            let error = #expect(throws: CourierError.self) { try ProtobufEncoder().encode(Entry(shelfLife: duration)) }
            #expect(error?.code == .encoding && error?.message.contains("10,000 years") == true)
        }
    }

    /// A `Value` with no kind has no JSON form and would be sent back as something else.
    @Test func aValueWithNoKindIsRefused() throws {
        let bytes = Data([0x82, 0x01, 0])  // extra (16, length-delimited) = Value {}
        let error = #expect(throws: CourierError.self) { try ProtobufDecoder().decode(Entry.self, from: bytes) }
        #expect(
            error?.message.contains("no kind") == true && error?.codingPath == "extra", "\(String(describing: error))")
    }
}

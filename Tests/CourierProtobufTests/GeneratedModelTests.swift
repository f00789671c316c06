import CourierProtoModels
import CourierProtobuf
import CourierTesting
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

// The models scripts/generate-protos.sh generates from Protos/ (Sources/CourierProtoModels):
// every golden decodes to the same values as the hand-written Codable models and encodes to the
// same bytes; hostile bytes decode or fail cleanly. The test module's own hand-written models
// shadow the generated names, so generated types are spelled with their module.

@Suite struct GeneratedModelTests {
    /// Each golden with its generated model and the hand-written Codable model of GoldenTests.
    static var cases: [(String, any GeneratedCase.Type)] {
        [
            ("scalars_typical", Pair<CourierProtoModels.Scalars, Scalars>.self),
            ("scalars_extremes", Pair<CourierProtoModels.Scalars, Scalars>.self),
            ("scalars_empty", Pair<CourierProtoModels.Scalars, Scalars>.self),
            ("repeated_all", Pair<CourierProtoModels.Repeated, Repeated>.self),
            ("repeated_empty", Pair<CourierProtoModels.Repeated, Repeated>.self),
            ("maps_all", Pair<CourierProtoModels.Maps, Maps>.self),
            ("choice_number", Pair<CourierProtoModels.Choice, Choice>.self),
            ("choice_text", Pair<CourierProtoModels.Choice, Choice>.self),
            ("choice_point", Pair<CourierProtoModels.Choice, Choice>.self),
            ("choice_color", Pair<CourierProtoModels.Choice, Choice>.self),
            ("choice_none", Pair<CourierProtoModels.Choice, Choice>.self),
            ("legacy_minimal", Pair<CourierProtoModels.Legacy, Legacy>.self),
            ("legacy_full", Pair<CourierProtoModels.Legacy, Legacy>.self),
            ("demo_profile", Pair<CourierProtoModels.UserProfile, UserProfile>.self),
            ("demo_feed", Pair<CourierProtoModels.Feed, Feed>.self),
            ("category_tree", Pair<CourierProtoModels.Category, Category>.self),
            ("expr_nested", Pair<CourierProtoModels.Expr, Expr>.self),
        ]
    }

    @Test func everyFixtureHasAGeneratedModel() {
        #expect(Set(Self.cases.map(\.0)) == Set(Fixtures.names))
    }

    @Test(arguments: cases.map(\.0))
    func roundTripsGolden(_ name: String) throws {
        try Self.cases.first { $0.0 == name }!.1.check(name)
    }

    @Test(arguments: cases.map(\.0))
    func hostileBytesDecodeOrFail(_ name: String) throws {
        #expect(try Self.cases.first { $0.0 == name }!.1.hostileFailures(name) == 0)
    }

    /// proto2 `optional` fields are Optionals: nil when unset, whatever their `[default = …]`;
    /// a value equal to the default that was sent stays set (and is sent again).
    @Test func proto2PresenceIsExact() throws {
        let minimal = try ProtobufDecoder().decode(
            CourierProtoModels.Legacy.self, from: Fixtures.bytes("legacy_minimal"))
        #expect(minimal.id == 1 && minimal.name == "min")
        #expect(minimal.retries == nil && minimal.ratio == nil && minimal.enabled == nil && minimal.big == nil)
        #expect(minimal.greeting == nil && minimal.level == nil && minimal.token == nil && minimal.child == nil)
        let full = try ProtobufDecoder().decode(CourierProtoModels.Legacy.self, from: Fixtures.bytes("legacy_full"))
        #expect(full.greeting == "hello", "equal to its default, but sent")
        #expect(full.retries == 0 && full.enabled == false && full.level == .high)
        #expect(full.child == CourierProtoModels.Legacy.Child(serial: -99, note: "kid"))
    }

    /// The generated models are plain Codable structs: JSON uses the same camelCase names as the
    /// hand-written models, so one model serves a JSON and a protobuf endpoint.
    @Test func generatedModelsAreCodableForJSON() throws {
        let profile = try ProtobufDecoder().decode(
            CourierProtoModels.UserProfile.self, from: Fixtures.bytes("demo_profile"))
        let json = try JSONEncoder().encode(profile)
        #expect(try JSONDecoder().decode(CourierProtoModels.UserProfile.self, from: json) == profile)
        #expect(
            try JSONDecoder().decode(UserProfile.self, from: json)
                == Fixtures.expected("demo_profile", as: UserProfile.self))
    }

    /// Setting two members of one oneof is an encoding error naming both, as on the other paths.
    @Test func twoMembersOfAOneofFailToEncode() throws {
        let choice = CourierProtoModels.Choice(number: 1, text: "two")
        #expect {
            try ProtobufEncoder().encode(choice)
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.code == .encoding && error.message.contains("number") && error.message.contains("text")
        }
    }

    /// Messages spanning several arena chunks and blocks, packed into memory of the bound
    /// `ProtobufEncoder` proves (debug builds assert it against protobuf-c's exact size) or,
    /// past 64 KiB of bound, sized exactly: each round-trips and matches the Codable path's bytes.
    /// Negative numbers in unpacked fields are the densest encoding (11 bytes per 4-byte value).
    @Test(arguments: [0, 10, 150, 700, 3000])
    func largeMessagesPackWithinTheBound(_ count: Int) throws {
        var profile = CourierProtoModels.UserProfile(
            userId: -1, displayName: String(repeating: "d", count: count), tier: .pro, rating: -0.5)
        profile.interests = (0..<count).map { "interest number \($0)" }
        profile.badgeIds = (0..<count).map { -Int32($0) - 1 }
        profile.stats = Dictionary(uniqueKeysWithValues: (0..<count).map { ("key \($0)", Int32.min + Int32($0)) })
        let bytes = try ProtobufEncoder().encode(profile)
        #expect(try ProtobufDecoder().decode(CourierProtoModels.UserProfile.self, from: bytes) == profile)
        let handwritten = try JSONDecoder().decode(UserProfile.self, from: JSONEncoder().encode(profile))
        #expect(try ProtobufEncoder().encode(handwritten) == bytes)

        let repeated = CourierProtoModels.Repeated(
            packedInt32: (0..<count).map { Int32.min + Int32($0) }, packedColors: Array(repeating: .blue, count: count),
            unpackedInt32: (0..<count).map { -Int32($0) - 1 }, unpackedUint64: Array(repeating: .max, count: count))
        let packed = try ProtobufEncoder().encode(repeated)
        #expect(packed.count >= 31 * count)
        #expect(try ProtobufDecoder().decode(CourierProtoModels.Repeated.self, from: packed) == repeated)
    }

    /// A required proto2 field left at its Swift default is still sent (it is set explicitly).
    @Test func requiredFieldsAreAlwaysSent() throws {
        let bytes = try ProtobufEncoder().encode(CourierProtoModels.Legacy())
        #expect(bytes == Data([0x08, 0x00, 0x12, 0x00]))
        #expect(
            try ProtobufDecoder().decode(CourierProtoModels.Legacy.self, from: bytes) == CourierProtoModels.Legacy())
    }
}

/// A generated model and the hand-written Codable model of the same message.
protocol GeneratedCase {
    static func check(_ name: String) throws
    static func hostileFailures(_ name: String) throws -> Int
}

struct Pair<Generated: ProtobufMessage & ProtobufDirectCodable & Equatable, Handwritten: ProtobufMessage & Equatable>:
    GeneratedCase
{
    static func check(_ name: String) throws {
        let bytes = try Fixtures.bytes(name)
        let decoded = try ProtobufDecoder().decode(Generated.self, from: bytes)

        // Same values as the hand-written Codable model (compared through their JSON: the two
        // share property names and types; Swift writes dictionaries with non-string keys as
        // arrays in hash order, so maps_all is compared only with expected.json), and as
        // expected.json where the shapes agree.
        let handwritten = try ProtobufDecoder().decode(Handwritten.self, from: bytes)
        if name != "maps_all" {
            #expect(try json(decoded) == json(handwritten), "\(name): generated vs Codable model")
        }
        if !name.hasPrefix("legacy") {
            #expect(try decoded == Fixtures.expected(name, as: Generated.self), "\(name) decoded")
        }

        // The same bytes as the golden and as the Codable model (maps: Courier's sorted order).
        let encoded = try ProtobufEncoder().encode(decoded)
        #expect(try ProtobufDecoder().decode(Generated.self, from: encoded) == decoded, "\(name) round trip")
        #expect(try encoded == ProtobufEncoder().encode(handwritten), "\(name): same bytes as the Codable model")
        if name != "maps_all" {
            #expect(encoded == bytes, "\(name) encoded: \(encoded.hex) vs golden \(bytes.hex)")
        }
    }

    /// JSON of a model with sorted keys. Legacy's proto2 fields that the hand-written model reads
    /// as their defaults (retries, ratio, enabled, big) are filled in the generated one the same way.
    static func json<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        if var legacy = value as? CourierProtoModels.Legacy {
            legacy.retries = legacy.retries ?? 3
            legacy.ratio = legacy.ratio ?? 0.5
            legacy.enabled = legacy.enabled ?? true
            legacy.big = legacy.big ?? .max
            return String(decoding: try encoder.encode(legacy), as: UTF8.self)
        }
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Every truncation and 200 seeded byte flips: how many did not give a value or a
    /// `CourierError` with code `.decoding`.
    static func hostileFailures(_ name: String) throws -> Int {
        let bytes = try Fixtures.bytes(name)
        var failures = 0
        func attempt(_ bytes: Data) {
            do {
                _ = try ProtobufDecoder().decode(Generated.self, from: bytes)
            } catch let error as CourierError where error.code == .decoding {
            } catch {
                failures += 1
            }
        }
        for length in 0..<bytes.count { attempt(bytes.prefix(length)) }
        var generator = SplitMix64(seed: UInt64(name.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) }))
        for _ in 0..<(bytes.isEmpty ? 0 : 200) {
            var flipped = bytes
            let index = Int(generator.next() % UInt64(bytes.count))
            flipped[index] ^= UInt8(truncatingIfNeeded: generator.next() | 1)
            attempt(flipped)
        }
        return failures
    }
}

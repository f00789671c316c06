import CourierProtobuf
import Foundation
import Testing

/// Decodes every golden made by Google's runtime to the expected values, and encodes those
/// values back to the same bytes. Both runtimes write fields in field-number order. Maps are
/// the exception, compared semantically: Courier sorts entries by key, Google's runtime (upb)
/// uses its own order and also writes default keys and values inside entries, which
/// protobuf-c omits, so `maps_all` re-decodes to the same value from different bytes.
@Suite struct GoldenTests {
    static var cases: [(String, any (ProtobufMessage & Equatable).Type)] {
        [
            ("scalars_typical", Scalars.self), ("scalars_extremes", Scalars.self), ("scalars_empty", Scalars.self),
            ("repeated_all", Repeated.self), ("repeated_empty", Repeated.self), ("maps_all", Maps.self),
            ("choice_number", Choice.self), ("choice_text", Choice.self), ("choice_point", Choice.self),
            ("choice_color", Choice.self), ("choice_none", Choice.self), ("legacy_minimal", Legacy.self),
            ("legacy_full", Legacy.self), ("demo_profile", UserProfile.self), ("demo_feed", Feed.self),
            ("category_tree", Category.self), ("expr_nested", Expr.self),
        ]
    }

    @Test func everyFixtureHasAModel() {
        #expect(Set(Self.cases.map(\.0)) == Set(Fixtures.names))
    }

    @Test(arguments: cases.map(\.0))
    func decodesAndEncodesGolden(_ name: String) throws {
        let type = Self.cases.first { $0.0 == name }!.1
        try check(type, name)
    }

    private func check<T: ProtobufMessage & Equatable>(_ type: T.Type, _ name: String) throws {
        let bytes = try Fixtures.bytes(name)
        #expect(bytes.count == Fixtures.cases[name]?.size)
        let expected = try Fixtures.expected(name, as: T.self)
        let decoded = try ProtobufDecoder().decode(T.self, from: bytes)
        #expect(decoded == expected, "\(name) decoded")
        let encoded = try ProtobufEncoder().encode(expected)
        if name == "maps_all" {
            #expect(try ProtobufDecoder().decode(T.self, from: encoded) == expected)
            #expect(try ProtobufEncoder().encode(decoded) == encoded, "deterministic map order")
            return
        }
        #expect(encoded == bytes, "\(name) encoded: \(encoded.hex) vs golden \(bytes.hex)")
        #expect(try ProtobufDecoder().decode(T.self, from: encoded) == expected, "\(name) round trip")
    }

    @Test func defaultsAndPresence() throws {
        let minimal = try ProtobufDecoder().decode(Legacy.self, from: Fixtures.bytes("legacy_minimal"))
        #expect(minimal.retries == 3)
        #expect(minimal.ratio == 0.5)
        #expect(minimal.enabled)
        #expect(minimal.big == .max)
        #expect(minimal.greeting == nil)
        #expect(minimal.level == nil)

        let text = try ProtobufDecoder().decode(Choice.self, from: Fixtures.bytes("choice_text"))
        #expect(text.text == "chosen" && text.number == nil && text.point == nil)
        #expect(text.maybeCount == 0, "proto3 optional keeps presence of a zero")
        #expect(text.maybeName == "")
        #expect(text.maybeRatio == nil)
        let none = try ProtobufDecoder().decode(Choice.self, from: Fixtures.bytes("choice_none"))
        #expect(none == Choice())
    }
}

extension Data {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}

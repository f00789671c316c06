import CProtobufC
import CourierProtoModels
import CourierProtobuf
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

// Unknown fields preserved (issue 19 item 3): bytes Google's Python runtime wrote with a newer
// ("v2") schema (Fixtures/protobuf/v2) decode into the generated "v1" model
// (Protos/courier/test/evolution.proto), which re-encodes them to exactly what Google's runtime
// writes after reading them with v1: known fields in number order, then the unknown ones, in
// nested messages too. Goldens: <case>.v2.bin, <case>.v1.bin, evolution.json.

@Suite struct UnknownFieldsTests {
    typealias Record = CourierProtoModels.Record

    struct Case: Decodable {
        var v1Value: Record
        var sameBytes: Bool
        enum CodingKeys: String, CodingKey {
            case v1Value = "v1_value"
            case sameBytes = "same_bytes"
        }
    }

    static let cases: [String: Case] = {
        let data = try! Data(contentsOf: Fixtures.directory.appendingPathComponent("evolution.json"))
        return try! JSONDecoder().decode([String: Case].self, from: data)
    }()

    static func bytes(_ name: String, _ version: String) throws -> Data {
        try Data(contentsOf: Fixtures.directory.appendingPathComponent("\(name).\(version).bin"))
    }

    /// Before issue 19 the model dropped every field v1 does not know.
    @Test(arguments: ["evolution_interleaved", "evolution_appended"])
    func newerFieldsSurviveARoundTrip(_ name: String) throws {
        let v2 = try Self.bytes(name, "v2")
        let google = try Self.bytes(name, "v1")
        let entry = try #require(Self.cases[name])
        #expect((v2 == google) == entry.sameBytes)

        let decoded = try ProtobufDecoder().decode(Record.self, from: v2)
        #expect(!decoded.unknownFields.isEmpty)
        if name == "evolution_interleaved" {
            // STATUS_ARCHIVED = 2 is v2's: kept as the number, in place.
            #expect(decoded.status == .unrecognized(2))
            #expect(decoded.statuses == [.active, .unrecognized(2), .unspecified, .unrecognized(2)])
        }
        var known = decoded
        known.unknownFields = ProtobufUnknownFields()
        known.inner?.unknownFields = ProtobufUnknownFields()
        known.history = known.history.map { Record.Inner(note: $0.note) }
        #expect(known == entry.v1Value, "the known fields")

        let encoded = try ProtobufEncoder().encode(decoded)
        #expect(encoded == google, "\(name): \(encoded.hex) vs Google's v1 re-encoding \(google.hex)")
        if entry.sameBytes { #expect(encoded == v2) }
        #expect(try ProtobufDecoder().decode(Record.self, from: encoded) == decoded)
    }

    /// Unknown fields of nested and repeated messages are kept with their message; changing a
    /// known field keeps them; they take part in `==`; JSON leaves them out.
    @Test func unknownFieldsStayWithTheirMessage() throws {
        let v2 = try Self.bytes("evolution_interleaved", "v2")
        var record = try ProtobufDecoder().decode(Record.self, from: v2)
        #expect(record.inner?.unknownFields.isEmpty == false, "Inner.score and Inner.labels")
        #expect(record.history.map(\.unknownFields.isEmpty) == [false, true, false])

        record.title = "changed"
        let again = try ProtobufDecoder().decode(Record.self, from: ProtobufEncoder().encode(record))
        #expect(again.title == "changed")
        #expect(again.unknownFields == record.unknownFields)
        #expect(again.inner?.unknownFields == record.inner?.unknownFields)

        var stripped = record
        stripped.unknownFields = ProtobufUnknownFields()
        #expect(stripped != record)

        let json = try JSONEncoder().encode(record)
        #expect(!String(decoding: json, as: UTF8.self).contains("unknownFields"))
        let fromJSON = try JSONDecoder().decode(Record.self, from: json)
        #expect(fromJSON.unknownFields.isEmpty && fromJSON.title == "changed")
    }

    /// A field the schema knows is never an unknown field, so bytes of the model's own schema
    /// round-trip with none.
    @Test func ownSchemaHasNoUnknownFields() throws {
        let record = Record(id: 5, title: "t", inner: .init(note: "n"), tags: ["a"], history: [.init(note: "h")])
        let decoded = try ProtobufDecoder().decode(Record.self, from: ProtobufEncoder().encode(record))
        #expect(decoded == record && decoded.unknownFields.isEmpty)
    }
}

extension UnknownFieldsTests {
    /// proto3 enums are open: a number the generated enum has no case for is
    /// `.unrecognized(number)`, which encodes as that number (in protobuf and JSON); `allCases`
    /// lists the schema's cases. Before issue 19 such a number failed the whole decode.
    @Test func openEnumsKeepUnknownNumbers() throws {
        typealias Status = CourierProtoModels.Status
        #expect(Status(rawValue: 7) == .unrecognized(7) && Status.unrecognized(7).rawValue == 7)
        #expect(Status(rawValue: 1) == .active && Status.allCases == [.unspecified, .active])
        let record = Record(status: .unrecognized(-3), statuses: [.unrecognized(99), .active])
        let bytes = try ProtobufEncoder().encode(record)
        #expect(try ProtobufDecoder().decode(Record.self, from: bytes) == record)
        #expect(try JSONDecoder().decode(Record.self, from: JSONEncoder().encode(record)) == record)
        let color = try ProtobufDecoder().decode(CourierProtoModels.Scalars.self, from: Data([0x80, 0x01, 99]))
        #expect(color.color == .unrecognized(99))
        #expect(try ProtobufEncoder().encode(color) == Data([0x80, 0x01, 99]))
    }

    /// The inlined reader loads `n_unknown_fields` at a fixed offset.
    @Test func unknownFieldCountFollowsTheDescriptorPointer() {
        #expect(MemoryLayout<ProtobufCMessage>.offset(of: \.n_unknown_fields) == MemoryLayout<UnsafeRawPointer>.size)
    }
}

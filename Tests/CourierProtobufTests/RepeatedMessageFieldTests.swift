import Courier
import CourierProtoModels
import CourierProtobuf
import Foundation
import Testing

/// A singular message field that appears more than once on the wire is merged, as every Google
/// runtime does (and as a sender may split a message on purpose: concatenating two encodings
/// merges them). protobuf-c merges only partly: it drops the earlier occurrence's proto3 fields
/// without presence, and replaces (does not merge) a oneof member message sent twice. The
/// expected values are what Google's Python runtime (python3-protobuf) reports for the same bytes.
@Suite struct RepeatedMessageFieldTests {
    @Test func aSingularMessageFieldSentTwiceIsMerged() throws {
        // origin {x: 3}, then origin {y: 4, label: "b"}: Python reads origin {x: 3 y: 4 label: "b"}.
        let data = Data(hex: "2a0208062a0510081a0162")
        let generated = try ProtobufDecoder().decode(CourierProtoModels.Choice.self, from: data)
        #expect(generated.origin == CourierProtoModels.Point(x: 3, y: 4, label: "b"))
        let handWritten = try ProtobufDecoder().decode(Choice.self, from: data)
        #expect(handWritten.origin == Point(x: 3, y: 4, label: "b"))
        // origin {x: 3, label: "a"}, then origin {label: ""}: an explicit empty string wins, x stays.
        let reset = try ProtobufDecoder().decode(
            CourierProtoModels.Choice.self, from: Data(hex: "2a0508061a01612a021a00"))
        #expect(reset.origin == CourierProtoModels.Point(x: 3))
    }

    @Test func aOneofMessageMemberSentTwiceIsMerged() throws {
        // point {x: 3}, then point {y: 4}: Python reads point {x: 3 y: 4}.
        let twice = try ProtobufDecoder().decode(CourierProtoModels.Choice.self, from: Data(hex: "1a0208061a021008"))
        #expect(twice.point == CourierProtoModels.Point(x: 3, y: 4))
        #expect(
            try ProtobufDecoder().decode(Choice.self, from: Data(hex: "1a0208061a021008")).point == Point(x: 3, y: 4))
        // point {x: 3}, number 5, point {y: 4}: another member in between clears the first point.
        let cleared = try ProtobufDecoder().decode(
            CourierProtoModels.Choice.self, from: Data(hex: "1a02080608051a021008"))
        #expect(cleared.point == CourierProtoModels.Point(y: 4) && cleared.number == nil)
    }

    @Test func mergingReachesNestedAndWellKnownMessages() throws {
        // parent {name: "a" parent {name: "p"}}, then parent {parent {children [{name: "c"}]}}.
        let category = try ProtobufDecoder().decode(
            CourierProtoModels.Category.self, from: Data(hex: "12080a016112030a0170120712051a030a0163"))
        #expect(category.parent?.name == "a")
        #expect(category.parent?.parent?.name == "p")
        #expect(category.parent?.parent?.children.map(\.name) == ["c"])
        // created_at {seconds: 1}, then created_at {nanos: 5}.
        let entry = try ProtobufDecoder().decode(
            CourierProtoModels.CatalogEntry.self, from: Data(hex: "1a0208011a021005"))
        #expect(entry.createdAt == ProtobufTimestamp(seconds: 1, nanos: 5))
    }
    @Test func aMapValueSentTwiceInOneEntryIsMerged() throws {
        // points_by_id {key: 1, value {x: 1}, value {y: 2}}: Python reads {1: {x: 1 y: 2}}.
        let entry: [UInt8] = [0x12, 0x0a, 0x08, 0x01, 0x12, 0x02, 0x08, 0x02, 0x12, 0x02, 0x10, 0x04]
        let maps = try ProtobufDecoder().decode(CourierProtoModels.Maps.self, from: Data(entry))
        #expect(maps.pointsById == [1: CourierProtoModels.Point(x: 1, y: 2)])
    }

    @Test func theRewriteCountsAgainstTheAllocationLimit() throws {
        // origin {label: 1,500 bytes} twice: unpacked, they fit in 4 KiB; merging them does not.
        let label = Array(repeating: UInt8(ascii: "x"), count: 1500)
        let point: [UInt8] = [0x1a, 0xdc, 0x0b] + label
        let field: [UInt8] = [0x2a, 0xdf, 0x0b] + point
        let limits = ProtobufDecoder.Limits(maxAllocationBytes: 4096)
        let error = #expect(throws: CourierError.self) {
            try ProtobufDecoder(limits: limits).decode(CourierProtoModels.Choice.self, from: Data(field + field))
        }
        #expect(error?.code == .decoding)
        #expect("\(error.map { String(describing: $0) } ?? "")".contains("merging the repeated message fields"))
        let merged = try ProtobufDecoder().decode(CourierProtoModels.Choice.self, from: Data(field + field))
        #expect(merged.origin?.label.utf8.count == 1500)
    }
}

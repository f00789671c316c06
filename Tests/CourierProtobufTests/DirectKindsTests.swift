import CourierProtobuf
import CourierProtos
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

// Direct models of the test messages: every scalar kind (the inlined fast paths), oneofs and
// proto3 `optional` (the general path), proto2 presence, defaults and required fields.

private struct DirectScalars: ProtobufMessage, ProtobufDirectCodable, Equatable {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_test_Scalars()
    }
    var plain = Scalars()

    init() {}
    init(protobuf m: ProtobufMessageReader) throws {
        plain = Scalars(
            int32Value: try m.int32(1), int64Value: try m.int64(2), uint32Value: try m.uint32(3),
            uint64Value: try m.uint64(4), sint32Value: try m.int32(5), sint64Value: try m.int64(6),
            fixed32Value: try m.uint32(7), fixed64Value: try m.uint64(8), sfixed32Value: try m.int32(9),
            sfixed64Value: try m.int64(10), floatValue: try m.float(11), doubleValue: try m.double(12),
            boolValue: try m.bool(13), stringValue: try m.string(14), bytesValue: try m.bytes(15),
            color: try m.enumeration(16))
    }
    func write(protobuf m: inout ProtobufMessageWriter) throws {
        try m.setInt32(1, plain.int32Value)
        try m.setInt64(2, plain.int64Value)
        try m.setUInt32(3, plain.uint32Value)
        try m.setUInt64(4, plain.uint64Value)
        try m.setInt32(5, plain.sint32Value)
        try m.setInt64(6, plain.sint64Value)
        try m.setUInt32(7, plain.fixed32Value)
        try m.setUInt64(8, plain.fixed64Value)
        try m.setInt32(9, plain.sfixed32Value)
        try m.setInt64(10, plain.sfixed64Value)
        try m.setFloat(11, plain.floatValue)
        try m.setDouble(12, plain.doubleValue)
        try m.setBool(13, plain.boolValue)
        try m.setString(14, plain.stringValue)
        try m.setBytes(15, plain.bytesValue)
        try m.setEnumeration(16, plain.color)
    }
}

private struct DirectPoint: ProtobufDirectCodable, Equatable {
    var x: Int32 = 0, y: Int32 = 0, label = ""
    init(_ point: Point) { (x, y, label) = (point.x, point.y, point.label) }
    init(protobuf m: ProtobufMessageReader) throws {
        (x, y, label) = (try m.int32(1), try m.int32(2), try m.string(3))
    }
    func write(protobuf m: inout ProtobufMessageWriter) throws {
        try m.setInt32(1, x)
        try m.setInt32(2, y)
        try m.setString(3, label)
    }
    var point: Point { Point(x: x, y: y, label: label) }
}

private struct DirectChoice: ProtobufMessage, ProtobufDirectCodable {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_test_Choice()
    }
    var plain: Choice

    init(protobuf m: ProtobufMessageReader) throws {
        plain = Choice(
            number: try m.has(1) ? m.int32(1) : nil, text: try m.has(2) ? m.string(2) : nil,
            point: try m.message(3, as: DirectPoint.self)?.point, color: try m.has(4) ? m.enumeration(4) : nil,
            origin: try m.message(5, as: DirectPoint.self)?.point, maybeCount: try m.has(6) ? m.int32(6) : nil,
            maybeName: try m.has(7) ? m.string(7) : nil, maybeRatio: try m.has(8) ? m.double(8) : nil,
            maybeColor: try m.has(9) ? m.enumeration(9) : nil, tail: try m.int64(10))
    }
    func write(protobuf m: inout ProtobufMessageWriter) throws {
        if let number = plain.number { try m.setInt32(1, number) }
        if let text = plain.text { try m.setString(2, text) }
        if let point = plain.point { try m.setMessage(3, DirectPoint(point)) }
        if let color = plain.color { try m.setEnumeration(4, color) }
        if let origin = plain.origin { try m.setMessage(5, DirectPoint(origin)) }
        if let count = plain.maybeCount { try m.setInt32(6, count) }
        if let name = plain.maybeName { try m.setString(7, name) }
        if let ratio = plain.maybeRatio { try m.setDouble(8, ratio) }
        if let color = plain.maybeColor { try m.setEnumeration(9, color) }
        try m.setInt64(10, plain.tail)
    }
}

private struct DirectLegacy: ProtobufMessage, ProtobufDirectCodable {
    static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
        courier_descriptor_courier_test_Legacy()
    }
    var id: Int32 = 0
    var name: String?
    var retries: Int32?
    var greeting: String?
    var ratio: Double?
    var enabled: Bool?

    init() {}
    init(protobuf m: ProtobufMessageReader) throws {
        id = try m.int32(1)
        name = try m.string(2)
        retries = try m.has(3) ? m.int32(3) : nil
        greeting = try m.has(4) ? m.string(4) : nil
        ratio = try m.has(5) ? m.double(5) : nil
        enabled = try m.has(6) ? m.bool(6) : nil
    }
    func write(protobuf m: inout ProtobufMessageWriter) throws {
        try m.setInt32(1, id)
        if let name { try m.setString(2, name) }
        if let retries { try m.setInt32(3, retries) }
        if let greeting { try m.setString(4, greeting) }
        if let ratio { try m.setDouble(5, ratio) }
        if let enabled { try m.setBool(6, enabled) }
    }
}

@Suite struct DirectKindsTests {
    @Test(arguments: ["scalars_empty", "scalars_typical", "scalars_extremes"])
    func scalarsMatchTheCodablePath(_ name: String) throws {
        let bytes = try Fixtures.bytes(name)
        let direct = try ProtobufDecoder().decode(DirectScalars.self, from: bytes)
        #expect(direct.plain == (try ProtobufDecoder().decode(Scalars.self, from: bytes)))
        #expect(try ProtobufEncoder().encode(direct) == bytes)
    }

    @Test(arguments: ["choice_color", "choice_none", "choice_number", "choice_point", "choice_text"])
    func oneofsAndOptionalsMatchTheCodablePath(_ name: String) throws {
        let bytes = try Fixtures.bytes(name)
        let direct = try ProtobufDecoder().decode(DirectChoice.self, from: bytes)
        #expect(direct.plain == (try ProtobufDecoder().decode(Choice.self, from: bytes)))
        #expect(try ProtobufEncoder().encode(direct) == bytes)
    }

    @Test func proto2PresenceDefaultsAndRequiredFields() throws {
        let minimal = try ProtobufDecoder().decode(DirectLegacy.self, from: Fixtures.bytes("legacy_minimal"))
        #expect(minimal.retries == nil && minimal.greeting == nil && minimal.enabled == nil)
        var legacy = DirectLegacy()
        legacy.id = 7
        legacy.name = "n"
        legacy.retries = 3  // Equal to the default, but set: sent.
        legacy.ratio = -0.0  // Presence keeps -0.0.
        let again = try ProtobufDecoder().decode(DirectLegacy.self, from: ProtobufEncoder().encode(legacy))
        #expect(again.retries == 3 && again.ratio == 0 && again.ratio?.sign == .minus && again.name == "n")
        legacy.name = nil
        let error = try #require(throws: CourierError.self) { try ProtobufEncoder().encode(legacy) }
        #expect(error.code == .encoding && error.message.contains("courier.test.Legacy.name is required"))
    }

    @Test func fastPathSettersStillRejectWhatProtobufCWouldChange() throws {
        var scalars = DirectScalars()
        scalars.plain.doubleValue = -0.0
        let zero = try #require(throws: CourierError.self) { try ProtobufEncoder().encode(scalars) }
        #expect(zero.code == .encoding && zero.message.contains("double_value: -0.0"))
        scalars.plain.doubleValue = 0
        scalars.plain.floatValue = -0.0
        #expect(throws: CourierError.self) { try ProtobufEncoder().encode(scalars) }
        scalars.plain.floatValue = 0
        scalars.plain.stringValue = "a\u{0}b"
        let nul = try #require(throws: CourierError.self) { try ProtobufEncoder().encode(scalars) }
        #expect(nul.code == .encoding && nul.message.contains("string_value: protobuf-c cannot hold"))
    }

    @Test func twoOneofMembersAndWrongKindsAreErrors() throws {
        var choice = try ProtobufDecoder().decode(DirectChoice.self, from: Fixtures.bytes("choice_text"))
        choice.plain.number = 1
        let both = try #require(throws: CourierError.self) { try ProtobufEncoder().encode(choice) }
        #expect(both.code == .encoding && both.message.contains("same oneof"))

        struct Wrong: ProtobufMessage, ProtobufDirectCodable {
            static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
                courier_descriptor_courier_test_Scalars()
            }
            init() {}
            init(protobuf m: ProtobufMessageReader) throws { _ = try m.string(1) }
            func write(protobuf m: inout ProtobufMessageWriter) throws { try m.setInt64(3, -1) }
        }
        let read = try #require(throws: CourierError.self) { try ProtobufDecoder().decode(Wrong.self, from: Data()) }
        #expect(read.code == .decoding && read.message.contains("int32_value is int32"))
        let write = try #require(throws: CourierError.self) { try ProtobufEncoder().encode(Wrong()) }
        #expect(write.code == .encoding && write.message.contains("uint32_value: -1 is out of range"))
    }

    @Test func messagesLargerThanAnArenaChunk() throws {
        var feed = try ProtobufDecoder().decode(DirectFeed.self, from: Fixtures.bytes("demo_feed"))
        let post = feed.posts[0]
        feed.posts = (0..<300).map { i in
            var copy = post
            copy.postId = Int64(i)
            copy.body = String(repeating: "b", count: i)
            return copy
        }
        feed.nextCursor = String(repeating: "c", count: 5000)  // Larger than a quarter chunk: a block of its own.
        let bytes = try ProtobufEncoder().encode(feed)
        #expect(bytes.count > 50_000)
        #expect(try ProtobufDecoder().decode(DirectFeed.self, from: bytes) == feed)
        let codable = try ProtobufDecoder().decode(Feed.self, from: bytes)
        #expect(codable.posts.count == 300 && codable.nextCursor == feed.nextCursor)
        #expect(try ProtobufEncoder().encode(codable) == bytes)
    }
}

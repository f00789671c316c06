import CourierProtobuf
import CourierProtos
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

/// The `ProtobufDirectCodable` fast path gives the same values and bytes as the Codable path.
@Suite struct DirectPathTests {
    private func json<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test func directFeedMatchesGolden() throws {
        let bytes = try Fixtures.bytes("demo_feed")
        let direct = try ProtobufDecoder().decode(DirectFeed.self, from: bytes)
        let codable = try ProtobufDecoder().decode(Feed.self, from: bytes)
        #expect(try json(direct) == json(codable))
        #expect(try ProtobufEncoder().encode(direct) == bytes)
    }

    @Test func directProfileMatchesGolden() throws {
        let bytes = try Fixtures.bytes("demo_profile")
        let direct = try ProtobufDecoder().decode(DirectUserProfile.self, from: bytes)
        #expect(direct.bio == "First programmer." && direct.address?.city == "London")
        #expect(try json(direct) == json(ProtobufDecoder().decode(UserProfile.self, from: bytes)))
        #expect(try ProtobufEncoder().encode(direct) == bytes)
        var empty = DirectUserProfile()
        empty.bio = ""
        #expect(try ProtobufDecoder().decode(DirectUserProfile.self, from: ProtobufEncoder().encode(empty)).bio == "")
    }

    @Test func directErrorsNameTheField() throws {
        struct WrongNumber: ProtobufMessage, ProtobufDirectCodable {
            static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
                courier_descriptor_courier_test_Point()
            }
            var x: Int32 = 0
            init() {}
            init(protobuf message: ProtobufMessageReader) throws { x = try message.int32(9) }
            func write(protobuf message: inout ProtobufMessageWriter) throws { try message.setString(1, "x") }
        }
        let decodeError = try #require(throws: CourierError.self) {
            try ProtobufDecoder().decode(WrongNumber.self, from: Data())
        }
        #expect(decodeError.code == .decoding && decodeError.message.contains("no field number 9"))
        let encodeError = try #require(throws: CourierError.self) { try ProtobufEncoder().encode(WrongNumber()) }
        #expect(encodeError.code == .encoding && encodeError.message.contains("courier.test.Point.x"))
    }

    @Test func directRobustness() throws {
        let bytes = try Fixtures.bytes("demo_feed")
        for length in 0..<bytes.count {
            do {
                _ = try ProtobufDecoder().decode(DirectFeed.self, from: bytes.prefix(length))
            } catch let error as CourierError {
                #expect(error.code == .decoding)
            }
        }
    }
}

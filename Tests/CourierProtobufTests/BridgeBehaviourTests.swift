import CourierProtobuf
import CourierProtos
import Foundation
import Testing

@_spi(Fuzzing) @testable import Courier

/// The documented edges of the bridge: unknown enum numbers, values protobuf-c cannot hold,
/// invalid UTF-8, oneofs, required fields and models that do not match their descriptor.
@Suite struct BridgeBehaviourTests {
    let decoder = ProtobufDecoder()
    let encoder = ProtobufEncoder()

    /// Scalars { color = 99 } — field 16, varint.
    let unknownColor = Data([0x80, 0x01, 99])

    @Test func unknownEnumNumberFallsBackWithProtobufEnum() throws {
        let value = try decoder.decode(Scalars.self, from: unknownColor)
        #expect(value.color == .unspecified)
    }

    @Test func unknownEnumNumberIsAnErrorWithoutFallback() throws {
        let error = try #require(throws: CourierError.self) {
            try decoder.decode(StrictScalars.self, from: unknownColor)
        }
        #expect(error.code == .decoding)
        #expect(error.description.contains("color"))
    }

    @Test func embeddedNulIsAnEncodingError() throws {
        let error = try #require(throws: CourierError.self) {
            try encoder.encode(Scalars(stringValue: "a\u{0}b"))
        }
        #expect(error.code == .encoding)
        #expect(error.message.contains("string_value") && error.message.contains("NUL"))
    }

    @Test func embeddedNulInWireStringIsADecodingError() throws {
        // protobuf-c stores C strings, so it would cut a decoded string at its first NUL ("a"
        // here, before issue 19); Courier sees the cut and refuses the message instead.
        let bytes = Data([0x72, 3, UInt8(ascii: "a"), 0, UInt8(ascii: "b")])
        let error = try #require(throws: CourierError.self) { try decoder.decode(Scalars.self, from: bytes) }
        #expect(error.code == .decoding)
        #expect(error.message.contains("string_value") && error.message.contains("NUL"))
    }

    @Test func negativeZeroInImplicitFieldIsAnEncodingError() throws {
        let error = try #require(throws: CourierError.self) { try encoder.encode(Scalars(doubleValue: -0.0)) }
        #expect(error.code == .encoding && error.message.contains("double_value"))
        #expect(throws: CourierError.self) { try encoder.encode(Scalars(floatValue: -0.0)) }
    }

    @Test func negativeZeroWithPresenceSurvives() throws {
        let bytes = try encoder.encode(Choice(maybeRatio: -0.0))
        let ratio = try #require(try decoder.decode(Choice.self, from: bytes).maybeRatio)
        #expect(ratio == 0 && ratio.sign == .minus)
    }

    @Test func invalidUTF8IsADecodingError() throws {
        let error = try #require(throws: CourierError.self) {
            try decoder.decode(Scalars.self, from: Data([0x72, 2, 0xFF, 0xFE]))
        }
        #expect(error.code == .decoding && error.message.contains("UTF-8"))
    }

    @Test func malformedBytesAreADecodingError() throws {
        let error = try #require(throws: CourierError.self) {
            try decoder.decode(Scalars.self, from: Data([0x72, 50, 1]))
        }
        #expect(error.code == .decoding)
        #expect(error.message.contains("courier.test.Scalars"))
    }

    @Test func missingRequiredFieldFailsBothWays() throws {
        // Legacy { id = 1 } without the required name.
        #expect(throws: CourierError.self) { try decoder.decode(Legacy.self, from: Data([0x08, 0x01])) }
        struct NoName: ProtobufMessage {
            static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
                courier_descriptor_courier_test_Legacy()
            }
            var id: Int32
        }
        let error = try #require(throws: CourierError.self) { try encoder.encode(NoName(id: 1)) }
        #expect(error.code == .encoding && error.message.contains("name"))
    }

    @Test func twoMembersOfAOneofAreAnEncodingError() throws {
        let error = try #require(throws: CourierError.self) { try encoder.encode(Choice(number: 1, text: "x")) }
        #expect(error.code == .encoding && error.message.contains("number") && error.message.contains("text"))
    }

    @Test func oneofMemberRoundTrips() throws {
        for choice in [Choice(number: 0), Choice(text: ""), Choice(point: Point()), Choice(color: .unspecified)] {
            #expect(try decoder.decode(Choice.self, from: encoder.encode(choice)) == choice)
        }
    }

    @Test func unknownPropertyNamesTheField() throws {
        struct Extra: ProtobufMessage {
            static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
                courier_descriptor_courier_test_Point()
            }
            var x: Int32 = 0
            var nickname = ""
        }
        let error = try #require(throws: CourierError.self) { try decoder.decode(Extra.self, from: Data()) }
        #expect(error.code == .decoding && error.message.contains("nickname") && error.message.contains("Point"))
        #expect(throws: CourierError.self) { try encoder.encode(Extra()) }
    }

    @Test func wrongTypeNamesTheField() throws {
        struct Wrong: ProtobufMessage {
            static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
                courier_descriptor_courier_test_Point()
            }
            var x: String = ""
        }
        let error = try #require(throws: CourierError.self) { try decoder.decode(Wrong.self, from: Data()) }
        #expect(error.message.contains("courier.test.Point.x") && error.message.contains("sint32"))
        let encodeError = try #require(throws: CourierError.self) { try encoder.encode(Wrong()) }
        #expect(encodeError.code == .encoding && encodeError.message.contains("courier.test.Point.x"))
    }

    @Test func nestedErrorsCarryTheirPath() throws {
        let bad = Repeated(points: [Point(), Point(label: "a\u{0}")])
        let error = try #require(throws: CourierError.self) { try encoder.encode(bad) }
        #expect(error.codingPath == "points.1")
    }

    @Test func outOfRangeIntIsAnEncodingError() throws {
        struct Wide: ProtobufMessage {
            static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
                courier_descriptor_courier_test_Point()
            }
            var x: Int = 0
        }
        #expect(try decoder.decode(Wide.self, from: encoder.encode(Wide(x: -5))).x == -5)
        let error = try #require(throws: CourierError.self) { try encoder.encode(Wide(x: Int(Int32.max) + 1)) }
        #expect(error.message.contains("out of range"))
    }

    @Test func snakeCasePropertyNamesWorkToo() throws {
        struct Snake: ProtobufMessage, Equatable {
            static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
                courier_descriptor_courier_test_Scalars()
            }
            var int32_value: Int32 = 0
            var string_value = ""
        }
        let value = Snake(int32_value: 7, string_value: "s")
        #expect(try decoder.decode(Snake.self, from: encoder.encode(value)) == value)
    }

    @Test func absentMessageReadsAsDefaultForNonOptionalProperty() throws {
        struct Holder: ProtobufMessage {
            static var protobufDescriptor: UnsafePointer<ProtobufCMessageDescriptor> {
                courier_descriptor_courier_test_Choice()
            }
            var origin: Point
        }
        #expect(try decoder.decode(Holder.self, from: Data()).origin == Point())
    }

    @Test func descriptorAccessorsReturnStableAddresses() {
        #expect(courier_descriptor_courier_test_Scalars() == courier_descriptor_courier_test_Scalars())
        #expect(String(cString: courier_descriptor_courier_demo_Feed().pointee.name) == "courier.demo.Feed")
    }

    @Test func concurrentUseSharesPlansSafely() async throws {
        let bytes = try Fixtures.bytes("demo_feed")
        let expected = try ProtobufDecoder().decode(Feed.self, from: bytes)
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<50 {
                        let value = try ProtobufDecoder().decode(Feed.self, from: bytes)
                        guard value == expected, try ProtobufEncoder().encode(value) == bytes else { return false }
                    }
                    return true
                }
            }
            for try await ok in group { #expect(ok) }
        }
    }
}
